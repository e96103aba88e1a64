// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The subnet manager: directed-route discovery and configuration of every
 * end port, the LID plan, timeouts and sweeps (docs/switch.md, "Subnet
 * manager and SA").  The SA is sm_sa.c; frames and CRCs are ibwire.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "json.h"
#include "sm.h"
#include "sm_int.h"
#include "switch.h"

void sm_send(struct sw *sw, unsigned int port, const struct ib_ud *a, const uint8_t *mad)
{
	uint8_t frame[IB_MAD_FRAME_BYTES];

	if (port == 0 || port > sw->max_ports || sw->ports[port].state != PORT_UP)
		return;
	ib_build_mad_frame(frame, a, sw->sm->psn++, mad);
	sw->sm->c.sent++;
	if (cap_active(&sw->cap))
		cap_packet(&sw->cap, port, sw_realtime(), frame, sizeof(frame), sizeof(frame),
			   CAP_OUTBOUND);
	port_output_now(sw, port, frame, sizeof(frame));
}

/* The LID of @guid, assigning the next one of the plan to a new GUID; 0 when none is left. */
static uint16_t lid_for(struct sm *sm, uint64_t guid)
{
	struct sm_lid *n;

	for (unsigned int i = 0; i < sm->n_lids; i++)
		if (sm->lids[i].guid == guid)
			return sm->lids[i].lid;
	if (sm->next_lid >= IB_LID_UNICAST_END)
		return 0;
	if (sm->n_lids == sm->cap_lids) {
		unsigned int cap = sm->cap_lids ? sm->cap_lids * 2 : 16;

		n = realloc(sm->lids, cap * sizeof(*n));
		if (!n)
			return 0;
		sm->lids = n;
		sm->cap_lids = cap;
	}
	sm->lids[sm->n_lids].guid = guid;
	sm->lids[sm->n_lids].lid = sm->next_lid++;
	return sm->lids[sm->n_lids++].lid;
}

unsigned int sm_port_by_guid(struct sw *sw, uint64_t guid, bool active_only)
{
	for (unsigned int p = 1; p <= sw->max_ports; p++) {
		const struct sm_port *sp = &sw->sm->ports[p];

		if (sp->known && sp->guid == guid && sw->ports[p].state == PORT_UP &&
		    (!active_only || sp->state == SP_ACTIVE))
			return p;
	}
	return 0;
}

unsigned int sm_port_by_lid(struct sw *sw, uint16_t lid, bool active_only)
{
	for (unsigned int p = 1; p <= sw->max_ports; p++) {
		const struct sm_port *sp = &sw->sm->ports[p];

		if (sp->known && sp->lid == lid && sw->ports[p].state == PORT_UP &&
		    (!active_only || sp->state == SP_ACTIVE))
			return p;
	}
	return 0;
}

/* The one timerfd: the earliest SMP deadline or the next sweep, whichever comes first. */
static void rearm(struct sw *sw)
{
	struct sm *sm = sw->sm;
	uint64_t t = sm->next_sweep_ns;
	struct itimerspec its = { 0 };

	for (unsigned int p = 1; p <= sw->max_ports; p++)
		if (sm->ports[p].step != ST_IDLE && sm->ports[p].deadline_ns < t)
			t = sm->ports[p].deadline_ns;
	its.it_value.tv_sec = (time_t)(t / 1000000000ull);
	its.it_value.tv_nsec = (long)(t % 1000000000ull);
	if (!its.it_value.tv_sec && !its.it_value.tv_nsec)
		its.it_value.tv_nsec = 1;	/* 0 would disarm it */
	timerfd_settime(sm->tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void smp_transmit(struct sw *sw, unsigned int port)
{
	struct sm_port *sp = &sw->sm->ports[port];
	struct ib_ud a = {
		.vl = IB_VL_MGMT, .dlid = IB_LID_PERMISSIVE, .slid = IB_LID_PERMISSIVE,
		.dqp = 0, .sqp = 0, .qkey = 0,
	};

	sp->tries++;
	sp->deadline_ns = sw_mono_ns() + SM_SMP_TIMEOUT_NS;
	sm_send(sw, port, &a, sp->smp);
}

/*
 * Send a directed-route SMP to the node on @port: one hop, initial path
 * [_, port], hop pointer already advanced to 1 by the switch's own SMI.
 * @data is the 64-byte attribute for a Set, NULL for a Get.
 */
static void smp_start(struct sw *sw, unsigned int port, enum sm_step step, uint8_t method,
		      uint16_t attr, uint32_t mod, const uint8_t *data)
{
	struct sm *sm = sw->sm;
	struct sm_port *sp = &sm->ports[port];
	uint8_t *m = sp->smp;

	memset(m, 0, IB_MAD_BYTES);
	m[MAD_BASE_VERSION] = 1;
	m[MAD_CLASS] = MGMT_CLASS_SUBN_DR;
	m[MAD_CLASS_VERSION] = 1;
	m[MAD_METHOD] = method;
	/* D = 0, status 0 */
	m[MAD_CLASS_SPECIFIC] = 1;	/* hop pointer */
	m[MAD_CLASS_SPECIFIC + 1] = 1;	/* hop count */
	sp->tid = SM_TID_TAG << 32 | ++sm->tid_seq;
	wr64(m + MAD_TID, sp->tid);
	wr16(m + MAD_ATTR_ID, attr);
	wr32(m + MAD_ATTR_MOD, mod);
	/* M_Key 0 */
	wr16(m + SMP_DR_SLID, IB_LID_PERMISSIVE);
	wr16(m + SMP_DR_DLID, IB_LID_PERMISSIVE);
	if (data)
		memcpy(m + SMP_DATA, data, 64);
	m[SMP_INITIAL_PATH + 1] = (uint8_t)port;
	sp->step = step;
	sp->tries = 0;
	smp_transmit(sw, port);
}

static void probe(struct sw *sw, unsigned int port)
{
	smp_start(sw, port, ST_NODE_INFO, METHOD_GET, ATTR_NODE_INFO, 0, NULL);
}

/* PortInfo fields (IBA vol. 1 table 146), offsets in the 64-byte attribute. */
#define PI_MKEY		0
#define PI_GID_PREFIX	8
#define PI_LID		16
#define PI_SM_LID	18
#define PI_LWE		29	/* LinkWidthEnabled */
#define PI_STATE	32	/* LinkSpeedSupported (7..4), PortState (3..0) */
#define PI_PHYS		33	/* PortPhysicalState (7..4), LinkDownDefaultState (3..0) */
#define PI_LMC		34	/* M_KeyProtectBits (7..6), LMC (2..0) */
#define PI_LSE		35	/* LinkSpeedActive (7..4), LinkSpeedEnabled (3..0) */
#define PI_MTU		36	/* NeighborMTU (7..4), MasterSMSL (3..0) */
#define PI_OPVLS	43	/* OperationalVLs (7..4) */
#define PI_TIMEOUT	51	/* ClientReregister (7), SubnetTimeOut (4..0) */

static unsigned int pi_state(const uint8_t *pi)
{
	return pi[PI_STATE] & 0xf;
}

/* The port carries the configuration this SM gives it. */
static bool pi_configured(struct sm *sm, const struct sm_port *sp, const uint8_t *pi)
{
	return rd16(pi + PI_LID) == sp->lid && rd16(pi + PI_SM_LID) == sm->lid &&
	       rd64(pi + PI_GID_PREFIX) == sm->prefix && (pi[PI_LMC] & 7) == 0;
}

/* A Set(PortInfo) from @pi with every state field "no change" except PortState = @state. */
static void pi_set(struct sw *sw, unsigned int port, enum sm_step step, const uint8_t *pi,
		   unsigned int state, bool config)
{
	struct sm *sm = sw->sm;
	struct sm_port *sp = &sm->ports[port];
	uint8_t d[64];

	memcpy(d, pi, 64);
	if (config) {
		wr64(d + PI_MKEY, 0);
		wr64(d + PI_GID_PREFIX, sm->prefix);
		wr16(d + PI_LID, sp->lid);
		wr16(d + PI_SM_LID, sm->lid);
		d[PI_LMC] &= (uint8_t)~7;
		d[PI_MTU] = (uint8_t)(SM_MTU_4096 << 4 | (d[PI_MTU] & 0xf));
		d[PI_TIMEOUT] = (uint8_t)((d[PI_TIMEOUT] & 0xe0) | SM_SUBNET_TIMEOUT);
	}
	d[PI_LWE] = 0;
	d[PI_STATE] = (uint8_t)((d[PI_STATE] & 0xf0) | state);
	d[PI_PHYS] = 0;
	d[PI_LSE] &= 0xf0;
	d[PI_OPVLS] &= 0x0f;
	smp_start(sw, port, step, METHOD_SET, ATTR_PORT_INFO, 1, d);
}

static void done(struct sw *sw, unsigned int port, enum sm_pstate st)
{
	struct sm_port *sp = &sw->sm->ports[port];

	sp->step = ST_IDLE;
	sp->state = st;
	if (st == SP_ACTIVE)
		sw_log(sw, "sm: port %u active, lid %u", port, sp->lid);
}

/* After a PortInfo answer that carries our configuration: take the port the rest of the way. */
static void advance(struct sw *sw, unsigned int port, const uint8_t *pi)
{
	switch (pi_state(pi)) {
	case PS_INIT:
		sw->sm->ports[port].state = SP_INIT;
		pi_set(sw, port, ST_PI_SET_ARMED, pi, PS_ARMED, false);
		break;
	case PS_ARMED:
		sw->sm->ports[port].state = SP_ARMED;
		pi_set(sw, port, ST_PI_SET_ACTIVE, pi, PS_ACTIVE, false);
		break;
	default:
		done(sw, port, SP_ACTIVE);
		break;
	}
}

/*
 * An answer to the SMP outstanding on @port.  Returns false when it does not
 * pass its step's check (counted bad; the timeout then resends).
 */
static bool smp_answer(struct sw *sw, unsigned int port, const uint8_t *mad)
{
	struct sm *sm = sw->sm;
	struct sm_port *sp = &sm->ports[port];
	const uint8_t *d = mad + SMP_DATA;
	uint16_t lid;

	switch (sp->step) {
	case ST_NODE_INFO:
		lid = lid_for(sm, rd64(d + 20));	/* NodeInfo.PortGUID */
		if (!lid) {
			sw_log(sw, "sm: port %u: no unicast LID left", port);
			sp->step = ST_IDLE;
			return true;
		}
		sp->guid = rd64(d + 20);
		sp->lid = lid;
		sp->known = true;
		sw->lft[lid] = (uint16_t)port;
		smp_start(sw, port, ST_NODE_DESC, METHOD_GET, ATTR_NODE_DESC, 0, NULL);
		return true;
	case ST_NODE_DESC:
		memcpy(sp->desc, d, 64);
		sp->desc[64] = 0;
		smp_start(sw, port, ST_PI_GET, METHOD_GET, ATTR_PORT_INFO, 1, NULL);
		return true;
	case ST_PI_GET:
		if (pi_state(d) == PS_ACTIVE && pi_configured(sm, sp, d))
			done(sw, port, SP_ACTIVE);
		else
			pi_set(sw, port, ST_PI_SET_CFG, d, 0, true);
		return true;
	case ST_PI_SET_CFG:
		if (!pi_configured(sm, sp, d) || pi_state(d) < PS_INIT || pi_state(d) > PS_ACTIVE)
			return false;
		advance(sw, port, d);
		return true;
	case ST_PI_SET_ARMED:
		if (!pi_configured(sm, sp, d) ||
		    (pi_state(d) != PS_ARMED && pi_state(d) != PS_ACTIVE))
			return false;
		advance(sw, port, d);
		return true;
	case ST_PI_SET_ACTIVE:
		if (!pi_configured(sm, sp, d) || pi_state(d) != PS_ACTIVE)
			return false;
		done(sw, port, SP_ACTIVE);
		return true;
	case ST_LIGHT:
		if (pi_state(d) == PS_ACTIVE && pi_configured(sm, sp, d)) {
			sp->step = ST_IDLE;
		} else {
			sw_log(sw, "sm: port %u lost its configuration: re-probing", port);
			sp->state = SP_PROBING;
			probe(sw, port);
		}
		return true;
	case ST_IDLE:
		break;
	}
	return false;
}

/* A directed-route GetResp: is it the answer the port's outstanding SMP waits for? */
static bool smp_matches(const struct sm_port *sp, const uint8_t *mad)
{
	const uint8_t *s = sp->smp;

	return sp->step != ST_IDLE && mad[MAD_METHOD] == METHOD_GET_RESP &&
	       (mad[MAD_STATUS] & 0x80) &&				/* D = 1 */
	       (rd16(mad + MAD_STATUS) & 0x7fff) == 0 &&
	       mad[MAD_CLASS_SPECIFIC] == 1 && mad[MAD_CLASS_SPECIFIC + 1] == 1 &&
	       rd64(mad + MAD_TID) == sp->tid &&
	       rd16(mad + MAD_ATTR_ID) == rd16(s + MAD_ATTR_ID) &&
	       rd32(mad + MAD_ATTR_MOD) == rd32(s + MAD_ATTR_MOD);
}

/* A LID-routed Trap: repress it and look at the port again. */
static void trap(struct sw *sw, unsigned int in, const struct ib_ud *a, const uint8_t *mad)
{
	struct sm *sm = sw->sm;
	uint8_t r[IB_MAD_BYTES];
	struct ib_ud out = {
		.vl = IB_VL_MGMT, .dlid = a->slid, .slid = sm->lid, .dqp = 0, .sqp = 0, .qkey = 0,
	};

	memcpy(r, mad, IB_MAD_BYTES);
	r[MAD_METHOD] = METHOD_TRAP_REPRESS;
	wr16(r + MAD_STATUS, 0);
	sm_send(sw, in, &out, r);
	if (sm->ports[in].step == ST_IDLE) {
		if (sm->ports[in].state != SP_UNRESPONSIVE)
			sm->ports[in].state = SP_PROBING;
		probe(sw, in);
	}
}

bool sm_receive(struct sw *sw, unsigned int in, const uint8_t *frame, size_t len)
{
	struct sm *sm = sw->sm;
	struct ib_ud a;
	const uint8_t *mad;
	bool ok = false;

	if (!sm)
		return false;
	sm->c.received++;
	if (!ib_parse_mad_frame(frame, len, &a, &mad) || mad[MAD_BASE_VERSION] != 1)
		goto out;
	if (a.dqp == 0 && a.vl == IB_VL_MGMT) {
		if (mad[MAD_CLASS] == MGMT_CLASS_SUBN_DR && smp_matches(&sm->ports[in], mad)) {
			ok = smp_answer(sw, in, mad);
		} else if (mad[MAD_CLASS] == MGMT_CLASS_SUBN_LID && mad[MAD_METHOD] == METHOD_TRAP) {
			trap(sw, in, &a, mad);
			ok = true;
		}
	} else if (a.dqp == 1 && a.vl != IB_VL_MGMT && a.qkey == IB_GSI_QKEY &&
		   mad[MAD_CLASS] == MGMT_CLASS_SUBN_ADM && !(mad[MAD_METHOD] & METHOD_RESP)) {
		sa_request(sw, in, &a, mad);
		ok = true;
	}
out:
	if (!ok)
		sm->c.bad++;
	rearm(sw);
	return true;
}

void sm_port_change(struct sw *sw, unsigned int port, bool up)
{
	struct sm *sm = sw->sm;
	struct sm_port *sp;

	if (!sm || port == 0 || port > sw->max_ports)
		return;
	sp = &sm->ports[port];
	sp->step = ST_IDLE;
	if (up) {
		sp->state = SP_PROBING;
		probe(sw, port);
	} else {
		sp->state = SP_DOWN;
		sa_port_gone(sw, port);
	}
	rearm(sw);
}

/* Timeouts first, then (when due) the sweep: re-probe what is not active, light-sweep the rest. */
void sm_timer(struct sw *sw)
{
	struct sm *sm = sw->sm;
	uint64_t exp, now = sw_mono_ns();

	if (!sm)
		return;
	if (read(sm->tfd, &exp, sizeof(exp)) < 0 && errno != EAGAIN)
		sw_log(sw, "sm: timerfd: %s", strerror(errno));
	for (unsigned int p = 1; p <= sw->max_ports; p++) {
		struct sm_port *sp = &sm->ports[p];

		if (sp->step == ST_IDLE || sp->deadline_ns > now)
			continue;
		sm->c.timeouts++;
		if (sp->tries <= SM_SMP_RETRIES) {
			sm->c.retries++;
			smp_transmit(sw, p);
			continue;
		}
		if (sp->state != SP_UNRESPONSIVE)
			sw_log(sw, "sm: port %u unresponsive", p);
		sp->step = ST_IDLE;
		sp->state = SP_UNRESPONSIVE;
	}
	if (now >= sm->next_sweep_ns) {
		sm->sweeps++;
		sm->next_sweep_ns = now + sm->sweep_ns;
		for (unsigned int p = 1; p <= sw->max_ports; p++) {
			struct sm_port *sp = &sm->ports[p];

			if (sw->ports[p].state != PORT_UP || sp->step != ST_IDLE)
				continue;
			if (sp->state == SP_ACTIVE)
				smp_start(sw, p, ST_LIGHT, METHOD_GET, ATTR_PORT_INFO, 1, NULL);
			else
				probe(sw, p);
		}
	}
	rearm(sw);
}

bool sm_init(struct sw *sw)
{
	struct sm *sm;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = EV_TAG(EV_TIMER, 0, 0) };

	if (sw->mode != MODE_IB || sw->no_sm)
		return true;
	sm = calloc(1, sizeof(*sm));
	if (!sm)
		return false;
	sw->sm = sm;
	sm->lid = (uint16_t)sw->sm_lid_start;
	sm->next_lid = (uint16_t)(sw->sm_lid_start + 1);
	sm->prefix = sw->subnet_prefix;
	sm->sweep_ns = (uint64_t)sw->sm_sweep_ms * 1000000ull;
	sm->next_sweep_ns = sw_mono_ns() + sm->sweep_ns;
	sm->ports = calloc(sw->max_ports + 1, sizeof(*sm->ports));
	sm->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (!sm->ports || sm->tfd < 0 || epoll_ctl(sw->epfd, EPOLL_CTL_ADD, sm->tfd, &ev) ||
	    !sa_init(sw))
		return false;
	sw->lft[sm->lid] = 0;
	rearm(sw);
	sw_log(sw, "sm: lid %u, sweep %u ms", sm->lid, sw->sm_sweep_ms);
	return true;
}

void sm_fini(struct sw *sw)
{
	struct sm *sm = sw->sm;

	if (!sm)
		return;
	sa_fini(sw);
	if (sm->tfd >= 0)
		close(sm->tfd);
	free(sm->ports);
	free(sm->lids);
	free(sm);
	sw->sm = NULL;
}

static const char *pstate_name(enum sm_pstate s)
{
	switch (s) {
	case SP_PROBING:
		return "probing";
	case SP_INIT:
		return "init";
	case SP_ARMED:
		return "armed";
	case SP_ACTIVE:
		return "active";
	case SP_UNRESPONSIVE:
		return "unresponsive";
	default:
		return "down";
	}
}

void sm_report(struct sw *sw, struct jbuf *b)
{
	struct sm *sm = sw->sm;
	char text[48];

	jb_key(b, "enabled");
	jb_bool(b, sm != NULL);
	if (!sm)
		return;
	jb_key(b, "lid");
	jb_u64(b, sm->lid);
	snprintf(text, sizeof(text), "%04x:%04x:%04x:%04x", (unsigned int)(sm->prefix >> 48),
		 (unsigned int)(sm->prefix >> 32 & 0xffff), (unsigned int)(sm->prefix >> 16 & 0xffff),
		 (unsigned int)(sm->prefix & 0xffff));
	jb_key(b, "subnet_prefix");
	jb_str(b, text);
	jb_key(b, "sweeps");
	jb_u64(b, sm->sweeps);
	jb_key(b, "ports");
	jb_arr(b);
	for (unsigned int p = 1; p <= sw->max_ports; p++) {
		const struct sm_port *sp = &sm->ports[p];

		if (sp->state == SP_NONE || (sp->state == SP_DOWN && !sp->known))
			continue;
		jb_obj(b);
		jb_key(b, "port");
		jb_u64(b, p);
		jb_key(b, "state");
		jb_str(b, pstate_name(sw->ports[p].state == PORT_UP ? sp->state : SP_DOWN));
		if (sp->known) {
			snprintf(text, sizeof(text), "%016llx", (unsigned long long)sp->guid);
			jb_key(b, "guid");
			jb_str(b, text);
			jb_key(b, "lid");
			jb_u64(b, sp->lid);
			jb_key(b, "node_desc");
			jb_strn(b, sp->desc, strnlen(sp->desc, 64));
		}
		jb_end_obj(b);
	}
	jb_end_arr(b);
	sa_report_groups(sw, b);
	jb_key(b, "mads");
	jb_obj(b);
	jb_key(b, "sent");
	jb_u64(b, sm->c.sent);
	jb_key(b, "received");
	jb_u64(b, sm->c.received);
	jb_key(b, "timeouts");
	jb_u64(b, sm->c.timeouts);
	jb_key(b, "retries");
	jb_u64(b, sm->c.retries);
	jb_key(b, "bad");
	jb_u64(b, sm->c.bad);
	jb_key(b, "sa_requests");
	jb_u64(b, sm->c.sa_requests);
	jb_key(b, "sa_errors");
	jb_u64(b, sm->c.sa_errors);
	jb_end_obj(b);
}
