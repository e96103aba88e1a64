// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Egress QoS (docs/switch.md, "QoS: priorities, PFC, ECN"): classification,
 * the eight egress queues of a port and their scheduler (round robin, an
 * optional drain rate), PFC sent and honoured, ECN marking.  Only eth
 * mode classifies; in ib and link mode every frame is priority 0 and the
 * queues behave as the single per-port queue they replace.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "switch.h"

/* The switch's own MAC, source of its PFC frames: locally administered "CNUS". */
static const uint8_t sw_mac[6] = { 0x02, 0x43, 0x4e, 0x55, 0x53, 0x00 };
static const uint8_t pfc_dst[6] = { 0x01, 0x80, 0xc2, 0x00, 0x00, 0x01 };

/* A late timer may send a little burst to catch up, at most this much. */
#define DRAIN_SLACK_NS	100000ull

/* 512 bit times per quantum at the nominal link speed, in ns. */
uint64_t qos_pause_ns(const struct sw *sw, unsigned int quanta)
{
	return (uint64_t)quanta * 512ull * 1000ull / sw->link_mbps;
}

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/*
 * Where the IPv4 header starts (untagged or one 802.1Q/802.1ad tag), or 0
 * when the frame carries no whole IPv4 header.
 */
static size_t ipv4_offset(const uint8_t *f, size_t len)
{
	size_t off = 14;
	uint16_t et = be16(f + 12);

	if (et == 0x8100 || et == 0x88a8) {
		if (len < 18)
			return 0;
		et = be16(f + 16);
		off = 18;
	}
	if (et != 0x0800 || len < off + 20 || f[off] >> 4 != 4 || (f[off] & 0xf) < 5 ||
	    len < off + (size_t)(f[off] & 0xf) * 4)
		return 0;
	return off;
}

unsigned int qos_classify(const struct sw *sw, const uint8_t *f, size_t len)
{
	uint16_t et;
	size_t ip;

	if (sw->mode != MODE_ETH || len < 14)
		return 0;
	et = be16(f + 12);
	if (et == 0x8100 || et == 0x88a8)
		return len >= 16 ? f[14] >> 5 : 0;
	ip = ipv4_offset(f, len);
	return ip ? sw->dscp_map[f[ip + 1] >> 2] : 0;
}

/* xorshift64, the RED draw (docs/switch.md gives the same steps to the model). */
static unsigned int red_draw(struct sw *sw)
{
	uint64_t s = sw->ecn_rng;

	s ^= s << 13;
	s ^= s >> 7;
	s ^= s << 17;
	sw->ecn_rng = s;
	return (unsigned int)(s % 100);
}

/* Does a packet that finds @q frames queued get CE? */
static bool ecn_due(struct sw *sw, const struct qos_prio_cfg *c, unsigned int q)
{
	switch (c->ecn) {
	case ECN_STEP:
		return q >= c->ecn_min;
	case ECN_RED:
		if (q < c->ecn_min)
			return false;
		if (q >= c->ecn_max)
			return true;
		return (uint64_t)red_draw(sw) * (c->ecn_max - c->ecn_min) <
		       (uint64_t)c->ecn_prob * (q - c->ecn_min);
	default:
		return false;
	}
}

/*
 * Set CE on an ECT(0)/ECT(1) IPv4 packet, updating the header checksum
 * incrementally (RFC 1624, eqn. 3) so a header that was wrong stays wrong.
 * The RoCEv2 ICRC masks the TOS byte and the checksum (docs/wire.md), so it
 * stays valid.  False when there is nothing to mark.
 */
static bool ecn_mark(uint8_t *f, size_t len)
{
	size_t ip = ipv4_offset(f, len);
	uint32_t sum;
	uint16_t old, new;

	if (!ip || (f[ip + 1] & 3) == 0 || (f[ip + 1] & 3) == 3)
		return false;
	old = be16(f + ip);
	f[ip + 1] |= 3;
	new = be16(f + ip);
	sum = (uint16_t)~be16(f + ip + 10);
	sum += (uint16_t)~old;
	sum += new;
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	f[ip + 10] = (uint8_t)(~sum >> 8);
	f[ip + 11] = (uint8_t)~sum;
	return true;
}

/*
 * Send a PFC frame with @quanta for priority @prio to port @id, at once and
 * ahead of its queues (MAC Control is not queued behind data).  Counted in
 * the port's tx and its priority's pause_sent/resume_sent, captured as
 * outbound.  A full socket loses it: a lost XOFF is refreshed, a lost XON
 * expires.
 */
static void pfc_send(struct sw *sw, unsigned int id, unsigned int prio, unsigned int quanta)
{
	struct port *p = &sw->ports[id];
	uint8_t f[PFC_FRAME_LEN] = { 0 };

	if (p->state != PORT_UP)
		return;
	memcpy(f, pfc_dst, 6);
	memcpy(f + 6, sw_mac, 6);
	f[12] = ETH_P_MAC_CONTROL >> 8;
	f[13] = ETH_P_MAC_CONTROL & 0xff;
	f[14] = MAC_CTRL_OP_PFC >> 8;
	f[15] = MAC_CTRL_OP_PFC & 0xff;
	f[17] = (uint8_t)(1u << prio);
	f[18 + 2 * prio] = (uint8_t)(quanta >> 8);
	f[19 + 2 * prio] = (uint8_t)quanta;
	if (cap_active(&sw->cap))
		cap_packet(&sw->cap, id, sw_realtime(), f, sizeof(f), sizeof(f), CAP_OUTBOUND);
	if (send(p->fd, f, sizeof(f), MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		sw_log(sw, "port %u: PFC frame lost: %s", id, strerror(errno));
		return;
	}
	p->c.tx_frames++;
	p->c.tx_bytes += sizeof(f);
	p->c.pfc_sent++;
	if (quanta)
		p->qos.c[prio].pause_sent++;
	else
		p->qos.c[prio].resume_sent++;
}

/* Half the pause time: an XOFF is refreshed before it expires. */
static uint64_t refresh_ns(const struct sw *sw)
{
	uint64_t t = qos_pause_ns(sw, sw->pfc_quanta) / 2;

	return t ? t : 1;
}

/* One more queue holds ingress port @in paused on @prio: XOFF on the first. */
static void pause_ref(struct sw *sw, unsigned int in, unsigned int prio)
{
	struct qos_port *q = &sw->ports[in].qos;

	if (q->pause_refs[prio]++)
		return;
	pfc_send(sw, in, prio, sw->pfc_quanta);
	q->refresh_at[prio] = sw_mono_ns() + refresh_ns(sw);
	sw->qos_dirty = true;
}

/* One queue fewer: XON (quanta 0) when none is left. */
static void pause_unref(struct sw *sw, unsigned int in, unsigned int prio)
{
	struct qos_port *q = &sw->ports[in].qos;

	if (!q->pause_refs[prio] || --q->pause_refs[prio])
		return;
	pfc_send(sw, in, prio, 0);
}

static bool bit(const uint8_t *bm, unsigned int i)
{
	return bm[i / 8] >> (i % 8) & 1;
}

/* Pause @in from egress queue @r (once per queue); ports 0 (the switch) never. */
static void ring_pause(struct sw *sw, struct qos_ring *r, unsigned int in, unsigned int prio)
{
	if (!in || bit(r->paused_in, in))
		return;
	r->paused_in[in / 8] |= (uint8_t)(1u << (in % 8));
	pause_ref(sw, in, prio);
}

/* Back at XON (or the port gone): release every ingress port the queue paused. */
static void ring_release(struct sw *sw, struct qos_ring *r, unsigned int prio)
{
	r->xoff = false;
	for (unsigned int in = 1; in <= sw->max_ports; in++) {
		if (!bit(r->paused_in, in))
			continue;
		r->paused_in[in / 8] &= (uint8_t)~(1u << (in % 8));
		pause_unref(sw, in, prio);
	}
}

/* Close a finished host pause into pause_ns. */
static void pause_settle(struct qos_port *q, unsigned int prio, uint64_t now)
{
	if (q->pause_start[prio] && q->paused_until[prio] <= now) {
		q->c[prio].pause_ns += q->paused_until[prio] - q->pause_start[prio];
		q->pause_start[prio] = 0;
	}
}

static bool prio_paused(const struct qos_port *q, unsigned int prio, uint64_t now)
{
	return q->paused_until[prio] > now;
}

/*
 * A PFC frame from the host on port @in: for each priority in the vector,
 * egress to it stops for the quanta given (0 resumes at once).
 */
static void pfc_receive(struct sw *sw, unsigned int in, const uint8_t *f)
{
	struct qos_port *q = &sw->ports[in].qos;
	uint64_t now = sw_mono_ns();

	for (unsigned int prio = 0; prio < QOS_PRIOS; prio++) {
		unsigned int quanta = be16(f + 18 + 2 * prio);

		if (!(f[17] >> prio & 1))
			continue;
		pause_settle(q, prio, now);
		if (quanta) {
			q->c[prio].pause_received++;
			if (!q->pause_start[prio])
				q->pause_start[prio] = now;
			q->paused_until[prio] = now + qos_pause_ns(sw, quanta);
		} else {
			q->c[prio].resume_received++;
			if (q->pause_start[prio] && q->paused_until[prio] > now) {
				q->c[prio].pause_ns += now - q->pause_start[prio];
				q->pause_start[prio] = 0;
			}
			q->paused_until[prio] = 0;
		}
	}
	sw->qos_dirty = true;
	qos_service(sw, in);
}

bool qos_rx(struct sw *sw, unsigned int in, const uint8_t *f, size_t len)
{
	struct qos_port *q = &sw->ports[in].qos;
	unsigned int prio;

	if (be16(f + 12) == ETH_P_MAC_CONTROL) {
		if (len >= PFC_MIN_LEN && be16(f + 14) == MAC_CTRL_OP_PFC)
			pfc_receive(sw, in, f);
		else
			sw->ports[in].c.drops[DROP_MAC_CONTROL]++;
		return true;
	}
	prio = qos_classify(sw, f, len);
	q->c[prio].rx_frames++;
	q->c[prio].rx_bytes += len;
	return false;
}

bool qos_holds(const struct sw *sw, unsigned int id)
{
	const struct qos_port *q = &sw->ports[id].qos;
	uint64_t now;

	if (q->q_total || q->drain_bps || q->hold)
		return true;
	now = 0;
	for (unsigned int prio = 0; prio < QOS_PRIOS; prio++) {
		if (!q->paused_until[prio])
			continue;
		if (!now)
			now = sw_mono_ns();
		if (prio_paused(q, prio, now))
			return true;
	}
	return false;
}

void qos_count_tx(struct sw *sw, unsigned int id, const uint8_t *data, size_t len)
{
	struct qos_prio_ctr *c = &sw->ports[id].qos.c[qos_classify(sw, data, len)];

	c->tx_frames++;
	c->tx_bytes += len;
}

void qos_enqueue(struct sw *sw, unsigned int id, const uint8_t *data, size_t len)
{
	struct port *p = &sw->ports[id];
	struct qos_port *q = &p->qos;
	unsigned int prio = qos_classify(sw, data, len), in = sw->cur_in;
	struct qos_ring *r = &q->ring[prio];
	const struct qos_prio_cfg *c = &q->cfg[prio];
	bool pfc = q->pfc_enable >> prio & 1;
	struct qframe *f;

	/*
	 * A full PFC queue means its sender ignored the pause: the drop is
	 * the sender's (pfc_violation on the ingress port).  Anything else
	 * that finds its queue full, or no memory, is queue_full here.
	 */
	if (r->len >= sw->queue_depth && pfc && in) {
		sw->ports[in].c.drops[DROP_PFC_VIOLATION]++;
		sw->ports[in].qos.c[prio].pfc_violation++;
		return;
	}
	if (!r->q)
		r->q = calloc(sw->queue_depth, sizeof(*r->q));
	f = r->q && r->len < sw->queue_depth ? malloc(sizeof(*f) + len) : NULL;
	if (!f) {
		p->c.drops[DROP_QUEUE_FULL]++;
		q->c[prio].queue_full++;
		return;
	}
	f->len = (uint32_t)len;
	f->in = (uint16_t)in;
	memcpy(f->data, data, len);
	if (ecn_due(sw, c, r->len) && ecn_mark(f->data, len))
		q->c[prio].ecn_marked++;
	r->q[(r->head + r->len) % sw->queue_depth] = f;
	r->len++;
	q->q_total++;
	/*
	 * Above XOFF the queue pauses every ingress port that has a frame in
	 * it; until it is back at XON, every port that adds one is paused too.
	 */
	if (pfc && !r->xoff && r->len > c->xoff) {
		r->xoff = true;
		for (unsigned int i = 0; i < r->len; i++)
			ring_pause(sw, r, r->q[(r->head + i) % sw->queue_depth]->in, prio);
	} else if (pfc && r->xoff) {
		ring_pause(sw, r, in, prio);
	}
	sw->qos_dirty = true;
}

/*
 * Round robin, one frame a turn: the first priority from q->rr downward (7
 * after 0) with a frame that may leave now, or -1.  No priority starves
 * another, so a congested or paused one leaves the rest their turns.
 */
static int pick(struct qos_port *q, uint64_t now)
{
	for (unsigned int k = 0; k < QOS_PRIOS; k++) {
		unsigned int prio = (q->rr + QOS_PRIOS - k) % QOS_PRIOS;

		pause_settle(q, prio, now);
		if (q->ring[prio].len && !prio_paused(q, prio, now))
			return (int)prio;
	}
	return -1;
}

void qos_service(struct sw *sw, unsigned int id)
{
	struct port *p = &sw->ports[id];
	struct qos_port *q = &p->qos;
	uint64_t now = sw_mono_ns();
	bool full = false;

	while (p->state == PORT_UP && q->q_total && !q->hold) {
		struct qos_ring *r;
		struct qframe *f;
		int prio;

		if (q->drain_bps && q->next_tx_ns > now)
			break;
		prio = pick(q, now);
		if (prio < 0)
			break;
		r = &q->ring[prio];
		f = r->q[r->head];
		if (send(p->fd, f->data, f->len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) {
				full = true;
				break;
			}
			port_close(sw, id, strerror(errno));
			return;
		}
		p->c.tx_frames++;
		p->c.tx_bytes += f->len;
		q->c[prio].tx_frames++;
		q->c[prio].tx_bytes += f->len;
		if (q->drain_bps) {
			uint64_t base = q->next_tx_ns + DRAIN_SLACK_NS < now ? now - DRAIN_SLACK_NS :
					q->next_tx_ns;

			q->next_tx_ns = base + (uint64_t)f->len * 8 * 1000000000ull / q->drain_bps;
		}
		free(f);
		r->head = (r->head + 1) % sw->queue_depth;
		r->len--;
		q->q_total--;
		q->rr = ((unsigned int)prio + QOS_PRIOS - 1) % QOS_PRIOS;
		if (r->xoff && r->len <= q->cfg[prio].xon)
			ring_release(sw, r, (unsigned int)prio);
	}
	/* EPOLLOUT only for a full socket; drain and pauses wait for the timer. */
	if (p->state == PORT_UP)
		port_want_out(sw, id, full);
	sw->qos_dirty = true;
}

void qos_port_up(struct sw *sw, unsigned int id)
{
	struct qos_port *q = &sw->ports[id].qos;

	memset(q->c, 0, sizeof(q->c));
	memset(q->paused_until, 0, sizeof(q->paused_until));
	memset(q->pause_start, 0, sizeof(q->pause_start));
	memset(q->pause_refs, 0, sizeof(q->pause_refs));
	q->next_tx_ns = 0;
	q->rr = QOS_PRIOS - 1;
	(void)sw;
}

/*
 * The device on @id went away: its queued frames are freed (not counted as
 * drops), the ports its queues paused are released, and it leaves every
 * other queue's paused set.
 */
void qos_port_gone(struct sw *sw, unsigned int id)
{
	struct qos_port *q = &sw->ports[id].qos;

	for (unsigned int prio = 0; prio < QOS_PRIOS; prio++) {
		struct qos_ring *r = &q->ring[prio];

		while (r->len) {
			free(r->q[r->head]);
			r->head = (r->head + 1) % sw->queue_depth;
			r->len--;
		}
		r->head = 0;
		ring_release(sw, r, prio);
		q->pause_refs[prio] = 0;
		q->paused_until[prio] = 0;
		q->pause_start[prio] = 0;
	}
	q->q_total = 0;
	for (unsigned int e = 1; e <= sw->max_ports; e++)
		for (unsigned int prio = 0; prio < QOS_PRIOS; prio++) {
			uint8_t *bm = sw->ports[e].qos.ring[prio].paused_in;

			bm[id / 8] &= (uint8_t)~(1u << (id % 8));
		}
}

static void earliest(uint64_t *t, uint64_t v)
{
	if (v && v < *t)
		*t = v;
}

void qos_arm(struct sw *sw)
{
	struct itimerspec its = { 0 };
	uint64_t t = UINT64_MAX, now = sw_mono_ns();

	if (!sw->qos_dirty || sw->qos_tfd < 0)
		return;
	sw->qos_dirty = false;
	for (unsigned int id = 1; id <= sw->max_ports; id++) {
		const struct qos_port *q = &sw->ports[id].qos;

		if (sw->ports[id].state != PORT_UP)
			continue;
		if (q->q_total && !q->hold && q->drain_bps)
			earliest(&t, q->next_tx_ns);
		for (unsigned int prio = 0; prio < QOS_PRIOS; prio++) {
			if (q->ring[prio].len && q->paused_until[prio] > now)
				earliest(&t, q->paused_until[prio]);
			if (q->pause_refs[prio])
				earliest(&t, q->refresh_at[prio]);
		}
	}
	if (t != UINT64_MAX) {
		its.it_value.tv_sec = (time_t)(t / 1000000000ull);
		its.it_value.tv_nsec = (long)(t % 1000000000ull);
		if (!its.it_value.tv_sec && !its.it_value.tv_nsec)
			its.it_value.tv_nsec = 1;
	}
	timerfd_settime(sw->qos_tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* Drain and pause expiry: serve every port with a backlog; refresh XOFFs due. */
void qos_timer(struct sw *sw)
{
	uint64_t ticks, now;

	if (read(sw->qos_tfd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
		sw_log(sw, "qos: timerfd: %s", strerror(errno));
	now = sw_mono_ns();
	for (unsigned int id = 1; id <= sw->max_ports; id++) {
		struct qos_port *q = &sw->ports[id].qos;

		if (sw->ports[id].state != PORT_UP)
			continue;
		for (unsigned int prio = 0; prio < QOS_PRIOS; prio++) {
			if (!q->pause_refs[prio] || q->refresh_at[prio] > now)
				continue;
			pfc_send(sw, id, prio, sw->pfc_quanta);
			q->refresh_at[prio] = now + refresh_ns(sw);
		}
		if (q->q_total && !sw->ports[id].want_out)
			qos_service(sw, id);
	}
	sw->qos_dirty = true;
}

bool qos_init(struct sw *sw)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = EV_TAG(EV_QOS_TIMER, 0, 0) };
	size_t bytes = sw->max_ports / 8 + 1;

	/* docs/switch.md: the default map is DSCP / 8, the class selector. */
	for (unsigned int d = 0; d < QOS_DSCPS; d++)
		sw->dscp_map[d] = (uint8_t)(d >> 3);
	sw->pfc_quanta = QOS_DEFAULT_QUANTA;
	sw->link_mbps = QOS_DEFAULT_LINK_MBPS;
	sw->ecn_seed = sw->ecn_rng = 1;
	for (unsigned int id = 0; id <= sw->max_ports; id++) {
		struct qos_port *q = &sw->ports[id].qos;

		q->rr = QOS_PRIOS - 1;
		for (unsigned int prio = 0; prio < QOS_PRIOS; prio++) {
			q->ring[prio].paused_in = calloc(1, bytes);
			if (!q->ring[prio].paused_in)
				return false;
			q->cfg[prio] = (struct qos_prio_cfg){
				.xoff = sw->queue_depth / 2,
				.xon = sw->queue_depth / 4,
				.ecn = ECN_OFF,
				.ecn_min = sw->queue_depth / 4,
				.ecn_max = sw->queue_depth / 2,
				.ecn_prob = 100,
			};
		}
	}
	sw->qos_tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	return sw->qos_tfd >= 0 && !epoll_ctl(sw->epfd, EPOLL_CTL_ADD, sw->qos_tfd, &ev);
}

void qos_fini(struct sw *sw)
{
	for (unsigned int id = 0; id <= sw->max_ports; id++)
		for (unsigned int prio = 0; prio < QOS_PRIOS; prio++) {
			free(sw->ports[id].qos.ring[prio].q);
			free(sw->ports[id].qos.ring[prio].paused_in);
		}
	if (sw->qos_tfd >= 0)
		close(sw->qos_tfd);
}
