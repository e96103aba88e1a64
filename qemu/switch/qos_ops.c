// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The QoS control ops (docs/switch.md, "QoS: priorities, PFC, ECN"), eth
 * mode only.  As in control_ops.c, a request is checked whole before
 * anything changes.
 *
 *   qos_set   {port?, drain_mbps?, hold?, pfc?: [prio], prios?: [{prio, xoff?,
 *              xon?, ecn?, ecn_min?, ecn_max?, ecn_prob?}], dscp?: [{dscp, prio}],
 *              pfc_quanta?, link_mbps?, ecn_seed?}              -> {ports}
 *   qos_get   {port?}  -> {link_mbps, pfc_quanta, pause_ns, ecn_seed, dscp_map[64],
 *                          ports[{port, drain_mbps, hold, pfc[], prios[8]}]}
 *   qos_stats {port?}  -> {ports[{port, queue_len, prios[8]{...counters}}]}
 */
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "switch.h"

static const char *const ecn_names[] = {
	[ECN_OFF] = "off", [ECN_STEP] = "step", [ECN_RED] = "red",
};

static bool need_eth(struct req *r, const char *op)
{
	if (r->sw->mode == MODE_ETH)
		return true;
	return fail(r, "%s needs a switch in eth mode (this one runs %s)", op,
		    sw_mode_name(r->sw->mode));
}

/* Optional integer @key of @o in [min, max]: false through fail() if bad. */
static bool opt_int(struct req *r, const struct jval *o, const char *key, int64_t min,
		    int64_t max, int64_t *out, bool *given)
{
	const struct jval *v = json_get(o, key);

	*given = v != NULL;
	if (v && !json_int(v, min, max, out))
		return fail(r, "\"%s\" must be an integer %lld..%lld", key, (long long)min,
			    (long long)max);
	return true;
}

/* The target ports: "port" 1..max_ports, or every port when absent. */
static bool target(struct req *r, unsigned int *first, unsigned int *last)
{
	int64_t v;
	bool given;

	if (!opt_int(r, r->j, "port", 1, r->sw->max_ports, &v, &given))
		return false;
	*first = given ? (unsigned int)v : 1;
	*last = given ? (unsigned int)v : r->sw->max_ports;
	return true;
}

/* Apply one "prios" entry to @cfg (a staged copy); checks its own fields. */
static bool prio_entry(struct req *r, const struct jval *e, struct qos_prio_cfg *cfg)
{
	static const char *const keys[] = { "xoff", "xon", "ecn_min", "ecn_max", "ecn_prob" };
	const struct jval *ecn = json_get(e, "ecn");
	struct qos_prio_cfg *c;
	int64_t prio, v;
	bool given;

	if (e->t != J_OBJ || !json_int(json_get(e, "prio"), 0, QOS_PRIOS - 1, &prio))
		return fail(r, "\"prios\" entries are objects with \"prio\" 0..7");
	c = &cfg[prio];
	for (unsigned int k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		int64_t max = k == 4 ? 100 : r->sw->queue_depth;

		if (!opt_int(r, e, keys[k], k == 4 ? 1 : 0, max, &v, &given))
			return false;
		if (!given)
			continue;
		*(k == 0 ? &c->xoff : k == 1 ? &c->xon : k == 2 ? &c->ecn_min :
		  k == 3 ? &c->ecn_max : &c->ecn_prob) = (unsigned int)v;
	}
	if (ecn) {
		unsigned int m;

		for (m = 0; m < 3; m++)
			if (ecn->t == J_STR && !strcmp(ecn->s, ecn_names[m]))
				break;
		if (m == 3)
			return fail(r, "\"ecn\" must be \"off\", \"step\" or \"red\"");
		c->ecn = (enum ecn_mode)m;
	}
	return true;
}

/* The rules a port's thresholds must keep (docs/switch.md). */
static bool cfg_ok(struct req *r, unsigned int port, const struct qos_prio_cfg *cfg)
{
	for (unsigned int p = 0; p < QOS_PRIOS; p++) {
		const struct qos_prio_cfg *c = &cfg[p];

		if (c->xon > c->xoff || c->xoff >= r->sw->queue_depth)
			return fail(r, "port %u prio %u: need xon <= xoff < queue depth %u", port, p,
				    r->sw->queue_depth);
		if (c->ecn_min > c->ecn_max)
			return fail(r, "port %u prio %u: need ecn_min <= ecn_max", port, p);
	}
	return true;
}

bool op_qos_set(struct req *r)
{
	struct sw *sw = r->sw;
	const struct jval *pfc = json_get(r->j, "pfc"), *prios = json_get(r->j, "prios");
	const struct jval *dscp = json_get(r->j, "dscp"), *hold = json_get(r->j, "hold");
	struct qos_prio_cfg *staged;
	uint8_t map[QOS_DSCPS], pfc_mask = 0;
	int64_t drain, quanta, seed, link;
	bool has_drain, has_quanta, has_seed, has_link;
	unsigned int first, last;

	if (!need_eth(r, "qos_set") || !target(r, &first, &last) ||
	    !opt_int(r, r->j, "drain_mbps", 0, QOS_DRAIN_MBPS_MAX, &drain, &has_drain) ||
	    !opt_int(r, r->j, "pfc_quanta", 1, 0xffff, &quanta, &has_quanta) ||
	    !opt_int(r, r->j, "ecn_seed", 0, INT64_MAX, &seed, &has_seed) ||
	    !opt_int(r, r->j, "link_mbps", 1, QOS_LINK_MBPS_MAX, &link, &has_link))
		return false;
	if (hold && hold->t != J_BOOL)
		return fail(r, "\"hold\" must be true or false");
	if (pfc) {
		if (pfc->t != J_ARR)
			return fail(r, "\"pfc\" must be an array of priorities 0..7");
		for (const struct jval *e = pfc->child; e; e = e->next) {
			int64_t p;

			if (!json_int(e, 0, QOS_PRIOS - 1, &p))
				return fail(r, "\"pfc\" must be an array of priorities 0..7");
			pfc_mask |= (uint8_t)(1u << p);
		}
	}
	memcpy(map, sw->dscp_map, sizeof(map));
	if (dscp) {
		if (dscp->t != J_ARR)
			return fail(r, "\"dscp\" must be an array of {dscp, prio}");
		for (const struct jval *e = dscp->child; e; e = e->next) {
			int64_t d, p;

			if (e->t != J_OBJ || !json_int(json_get(e, "dscp"), 0, QOS_DSCPS - 1, &d) ||
			    !json_int(json_get(e, "prio"), 0, QOS_PRIOS - 1, &p))
				return fail(r, "\"dscp\" entries are {dscp 0..63, prio 0..7}");
			map[d] = (uint8_t)p;
		}
	}
	if (prios && prios->t != J_ARR)
		return fail(r, "\"prios\" must be an array");
	/* Stage every target port's thresholds, check them all, then apply. */
	staged = calloc(last - first + 1, sizeof(struct qos_prio_cfg) * QOS_PRIOS);
	if (!staged)
		return fail(r, "out of memory");
	for (unsigned int id = first; id <= last; id++) {
		struct qos_prio_cfg *cfg = staged + (size_t)(id - first) * QOS_PRIOS;

		memcpy(cfg, sw->ports[id].qos.cfg, sizeof(struct qos_prio_cfg) * QOS_PRIOS);
		for (const struct jval *e = prios ? prios->child : NULL; e; e = e->next)
			if (!prio_entry(r, e, cfg)) {
				free(staged);
				return false;
			}
		if (!cfg_ok(r, id, cfg)) {
			free(staged);
			return false;
		}
	}
	for (unsigned int id = first; id <= last; id++) {
		struct qos_port *q = &sw->ports[id].qos;

		memcpy(q->cfg, staged + (size_t)(id - first) * QOS_PRIOS, sizeof(q->cfg));
		if (has_drain)
			q->drain_bps = (uint64_t)drain * 1000000ull;
		if (hold)
			q->hold = hold->b;
		if (pfc)
			q->pfc_enable = pfc_mask;
	}
	free(staged);
	memcpy(sw->dscp_map, map, sizeof(map));
	if (has_quanta)
		sw->pfc_quanta = (unsigned int)quanta;
	if (has_link)
		sw->link_mbps = (unsigned int)link;
	if (has_seed)
		sw->ecn_seed = sw->ecn_rng = seed ? (uint64_t)seed : 1;
	/* A released hold or a faster rate may let frames go at once. */
	for (unsigned int id = first; id <= last; id++)
		if (sw->ports[id].state == PORT_UP && sw->ports[id].qos.q_total &&
		    !sw->ports[id].want_out)
			qos_service(sw, id);
	sw->qos_dirty = true;
	jb_key(r->body, "ports");
	jb_u64(r->body, last - first + 1);
	return true;
}

static void emit_prio_list(struct jbuf *b, uint8_t mask)
{
	jb_arr(b);
	for (unsigned int p = 0; p < QOS_PRIOS; p++)
		if (mask >> p & 1)
			jb_u64(b, p);
	jb_end_arr(b);
}

static void kv(struct jbuf *b, const char *k, uint64_t v)
{
	jb_key(b, k);
	jb_u64(b, v);
}

bool op_qos_get(struct req *r)
{
	struct sw *sw = r->sw;
	struct jbuf *b = r->body;
	unsigned int first, last;

	if (!need_eth(r, "qos_get") || !target(r, &first, &last))
		return false;
	kv(b, "link_mbps", sw->link_mbps);
	kv(b, "pfc_quanta", sw->pfc_quanta);
	kv(b, "pause_ns", qos_pause_ns(sw, sw->pfc_quanta));
	kv(b, "ecn_seed", sw->ecn_seed);
	jb_key(b, "dscp_map");
	jb_arr(b);
	for (unsigned int d = 0; d < QOS_DSCPS; d++)
		jb_u64(b, sw->dscp_map[d]);
	jb_end_arr(b);
	jb_key(b, "ports");
	jb_arr(b);
	for (unsigned int id = first; id <= last; id++) {
		const struct qos_port *q = &sw->ports[id].qos;

		jb_obj(b);
		kv(b, "port", id);
		kv(b, "drain_mbps", q->drain_bps / 1000000ull);
		jb_key(b, "hold");
		jb_bool(b, q->hold);
		jb_key(b, "pfc");
		emit_prio_list(b, q->pfc_enable);
		jb_key(b, "prios");
		jb_arr(b);
		for (unsigned int p = 0; p < QOS_PRIOS; p++) {
			const struct qos_prio_cfg *c = &q->cfg[p];

			jb_obj(b);
			kv(b, "prio", p);
			kv(b, "xoff", c->xoff);
			kv(b, "xon", c->xon);
			jb_key(b, "ecn");
			jb_str(b, ecn_names[c->ecn]);
			kv(b, "ecn_min", c->ecn_min);
			kv(b, "ecn_max", c->ecn_max);
			kv(b, "ecn_prob", c->ecn_prob);
			jb_end_obj(b);
		}
		jb_end_arr(b);
		jb_end_obj(b);
	}
	jb_end_arr(b);
	return true;
}

/* Connected ports only: counters belong to a connection. */
bool op_qos_stats(struct req *r)
{
	struct sw *sw = r->sw;
	struct jbuf *b = r->body;
	uint64_t now = sw_mono_ns();
	unsigned int first, last;

	if (!need_eth(r, "qos_stats") || !target(r, &first, &last))
		return false;
	jb_key(b, "ports");
	jb_arr(b);
	for (unsigned int id = first; id <= last; id++) {
		const struct qos_port *q = &sw->ports[id].qos;

		if (sw->ports[id].state != PORT_UP)
			continue;
		jb_obj(b);
		kv(b, "port", id);
		kv(b, "queue_len", q->q_total);
		jb_key(b, "prios");
		jb_arr(b);
		for (unsigned int p = 0; p < QOS_PRIOS; p++) {
			const struct qos_prio_ctr *c = &q->c[p];
			bool paused = q->paused_until[p] > now;
			uint64_t pns = c->pause_ns;

			/* A pause still running, or ended but not yet settled, counts so far. */
			if (q->pause_start[p])
				pns += (paused ? now : q->paused_until[p]) - q->pause_start[p];
			jb_obj(b);
			kv(b, "prio", p);
			kv(b, "queue_len", q->ring[p].len);
			jb_key(b, "xoff");
			jb_bool(b, q->ring[p].xoff);
			jb_key(b, "paused");
			jb_bool(b, paused);
			kv(b, "paused_by", q->pause_refs[p]);
			kv(b, "rx_frames", c->rx_frames);
			kv(b, "rx_bytes", c->rx_bytes);
			kv(b, "tx_frames", c->tx_frames);
			kv(b, "tx_bytes", c->tx_bytes);
			kv(b, "pause_sent", c->pause_sent);
			kv(b, "resume_sent", c->resume_sent);
			kv(b, "pause_received", c->pause_received);
			kv(b, "resume_received", c->resume_received);
			kv(b, "pause_us", pns / 1000);
			kv(b, "ecn_marked", c->ecn_marked);
			kv(b, "queue_full", c->queue_full);
			kv(b, "pfc_violation", c->pfc_violation);
			jb_end_obj(b);
		}
		jb_end_arr(b);
		jb_end_obj(b);
	}
	jb_end_arr(b);
	return true;
}
