// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The control ops: each reads its fields from the request, checks them all
 * before it changes anything, and writes its reply fields (control.h).
 * docs/switch.md ("Control protocol") is the reference, with examples.
 *
 * Ops:
 *   ping                          {mode}
 *   stats                         totals, drops by reason, capture state
 *   ports                         [{port, state, queue_len, gpu_id?, rx_frames,
 *                                   rx_bytes, tx_frames, tx_bytes, drops{}}]
 *   table                         eth: macs[{mac, port, age_ms}]
 *                                 ib: lft[{lid, port}], mcast[{mlid, ports[]}]
 *                                 link: gpu_ids[{gpu_id, port}]
 *   set_lft   {entries:[{lid, port|null}]} or {lid, port|null}   (ib)
 *   mcast_join / mcast_leave {mlid, port}                          (ib)
 *   link_down {port}              cable pull: close the connection, reserve the slot
 *   link_up   {port}              free the slot for the next connection
 *   inject    {port, direction: "ingress"|"egress", hex|base64|frames[hex]}
 *                                 {bytes, frames, queue_len}
 *   capture_start {path} / capture_stop
 *   advance_time {seconds}        move the switch clock (MAC aging) forward
 *   sm                            (ib) the subnet manager: LIDs, port states, groups, MADs
 *   qos_set / qos_get / qos_stats (eth) priorities, drain, PFC, ECN: qos_ops.c
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "sm.h"
#include "switch.h"

/*
 * Drop counter names as the protocol spells them, indexed by enum drop_reason.
 *
 * The designated initializers keep each name on its reason even if the enum in
 * switch.h is reordered.  These strings are the "drops" keys of the stats and
 * ports replies (docs/switch.md, "Control protocol"): renaming one breaks every
 * client that reads it.
 */
const char *const drop_names[DROP__COUNT] = {
	[DROP_RUNT] = "runt",
	[DROP_OVERSIZE] = "oversize",
	[DROP_FILTERED] = "filtered",
	[DROP_BAD_DLID] = "bad_dlid",
	[DROP_BAD_VCRC] = "bad_vcrc",
	[DROP_BAD_LRH] = "bad_lrh",
	[DROP_NO_PORT] = "no_port",
	[DROP_LOOPBACK] = "loopback",
	[DROP_NO_SM] = "no_sm",
	[DROP_UNKNOWN_GPU] = "unknown_gpu",
	[DROP_QUEUE_FULL] = "queue_full",
	[DROP_PFC_VIOLATION] = "pfc_violation",
	[DROP_MAC_CONTROL] = "mac_control",
};

/*
 * The integer field @key of the request, in [min, max]; the error names it.
 *
 * Returns true with *out set, or false through fail().  A missing field and a
 * wrong one get different messages, so the reply says what to fix.
 */
static bool get_int(struct req *r, const char *key, int64_t min, int64_t max, int64_t *out)
{
	const struct jval *v = json_get(r->j, key);

	if (!v)
		return fail(r, "missing \"%s\" (an integer %lld..%lld)", key, (long long)min,
			    (long long)max);
	if (!json_int(v, min, max, out))
		return fail(r, "\"%s\" must be an integer %lld..%lld", key, (long long)min,
			    (long long)max);
	return true;
}

/* Ops that only make sense in one mode (set_lft, mcast_*) say which. */
static bool need_mode(struct req *r, enum sw_mode m, const char *op)
{
	if (r->sw->mode == m)
		return true;
	return fail(r, "%s needs a switch in %s mode (this one runs %s)", op, sw_mode_name(m),
		    sw_mode_name(r->sw->mode));
}

/*
 * The "state" of ports and the "was" of link_down/link_up.  "free" only appears
 * in "was": the ports reply leaves free slots out.
 */
static const char *state_name(enum port_state s)
{
	return s == PORT_UP ? "up" : s == PORT_DOWN ? "down" : "free";
}

/*
 * The counter fields shared by stats (totals) and ports (per connection).
 *
 * Every drop reason is written, zeros included, so a client can read any key
 * without checking that it exists.
 */
static void emit_counters(struct jbuf *b, const struct counters *c)
{
	jb_key(b, "rx_frames");
	jb_u64(b, c->rx_frames);
	jb_key(b, "rx_bytes");
	jb_u64(b, c->rx_bytes);
	jb_key(b, "tx_frames");
	jb_u64(b, c->tx_frames);
	jb_key(b, "tx_bytes");
	jb_u64(b, c->tx_bytes);
	jb_key(b, "drops");
	jb_obj(b);
	for (int i = 0; i < DROP__COUNT; i++) {
		jb_key(b, drop_names[i]);
		jb_u64(b, c->drops[i]);
	}
	jb_end_obj(b);
}

/*
 * The cheapest op: proves the control loop answers and says which mode the
 * fabric runs.
 */
bool op_ping(struct req *r)
{
	jb_key(r->body, "mode");
	jb_str(r->body, sw_mode_name(r->sw->mode));
	return true;
}

/* Totals over every connection, past and present (sw_totals), and the capture state. */
bool op_stats(struct req *r)
{
	struct sw *sw = r->sw;
	struct jbuf *b = r->body;
	struct counters t;
	unsigned int up = 0;

	for (unsigned int id = 1; id <= sw->max_ports; id++)
		up += sw->ports[id].state == PORT_UP;
	sw_totals(sw, &t);
	jb_key(b, "mode");
	jb_str(b, sw_mode_name(sw->mode));
	/* The switch clock, advance_time included: uptime jumps with it. */
	jb_key(b, "uptime_ms");
	jb_u64(b, (sw_now(sw) - sw->started_ns) / 1000000);
	jb_key(b, "max_ports");
	jb_u64(b, sw->max_ports);
	jb_key(b, "queue_depth");
	jb_u64(b, sw->queue_depth);
	jb_key(b, "aging_sec");
	jb_u64(b, sw->aging_ns / 1000000000ull);
	/* Connected slots only; a down slot is reserved, not up. */
	jb_key(b, "ports_up");
	jb_u64(b, up);
	jb_key(b, "connections");
	jb_u64(b, sw->connections);
	jb_key(b, "refused");
	jb_u64(b, sw->refused);
	emit_counters(b, &t);
	/*
	 * Frames the switch made itself and captured outbound without
	 * receiving them (the SM's are in the sm op): with rx_frames and the
	 * capture's packets in one reply, a capture's accounting is exact.
	 */
	jb_key(b, "pfc_sent");
	jb_u64(b, t.pfc_sent);
	jb_key(b, "capture");
	jb_obj(b);
	jb_key(b, "active");
	jb_bool(b, cap_active(&sw->cap));
	if (cap_active(&sw->cap)) {
		jb_key(b, "path");
		jb_str(b, sw->cap.path);
		jb_key(b, "packets");
		jb_u64(b, sw->cap.packets);
		jb_key(b, "files");
		jb_u64(b, sw->cap.n_files);
	}
	/*
	 * The error of the last capture stays visible after capture_stop, until
	 * the next capture_start clears it.
	 */
	if (sw->cap.error[0]) {
		jb_key(b, "error");
		jb_str(b, sw->cap.error);
	}
	jb_end_obj(b);
	return true;
}

/* Every slot that is not free; counters only for a connected one (they are its own). */
static void emit_ports(struct req *r)
{
	struct sw *sw = r->sw;
	struct jbuf *b = r->body;

	jb_key(b, "ports");
	jb_arr(b);
	for (unsigned int id = 1; id <= sw->max_ports; id++) {
		const struct port *p = &sw->ports[id];

		if (p->state == PORT_FREE)
			continue;
		jb_obj(b);
		jb_key(b, "port");
		jb_u64(b, id);
		jb_key(b, "state");
		jb_str(b, state_name(p->state));
		jb_key(b, "queue_len");
		jb_u64(b, p->qos.q_total);
		/*
		 * A down slot has no connection, so neither a gpu_id nor
		 * counters of its own (docs/switch.md, "Ports": counters belong
		 * to a connection).  Its queue_len is 0: port_close() emptied
		 * the queue.
		 */
		if (p->state == PORT_UP && p->has_gpu) {
			jb_key(b, "gpu_id");
			jb_u64(b, p->gpu_id);
		}
		if (p->state == PORT_UP) {
			emit_counters(b, &p->c);
		}
		jb_end_obj(b);
	}
	jb_end_arr(b);
}

bool op_ports(struct req *r)
{
	emit_ports(r);
	return true;
}

/*
 * List a learned table: MACs (eth) with their age, or gpu_ids (link).  Aged
 * MACs are purged first, so the list shows what forwarding would use now.
 */
static void emit_fdb(struct req *r, struct fdb *t, const char *list, bool mac)
{
	struct jbuf *b = r->body;
	uint64_t now = sw_now(r->sw);
	char text[24];

	if (mac && r->sw->aging_ns)
		fdb_expire(t, now, r->sw->aging_ns);
	jb_key(b, list);
	jb_arr(b);
	/*
	 * Slots are walked in hash order, so the list is unordered; clients
	 * sort it.
	 */
	for (uint32_t i = 0; i <= t->mask; i++) {
		const struct fdb_entry *e = &t->slots[i];

		if (!e->port)
			continue;
		jb_obj(b);
		if (mac) {
			/*
			 * The key is mac48()'s (fwd.c): first byte of the MAC
			 * most significant.
			 */
			uint64_t k = e->key;

			snprintf(text, sizeof(text), "%02x:%02x:%02x:%02x:%02x:%02x",
				 (unsigned int)(k >> 40 & 0xff), (unsigned int)(k >> 32 & 0xff),
				 (unsigned int)(k >> 24 & 0xff), (unsigned int)(k >> 16 & 0xff),
				 (unsigned int)(k >> 8 & 0xff), (unsigned int)(k & 0xff));
			jb_key(b, "mac");
			jb_str(b, text);
		} else {
			jb_key(b, "gpu_id");
			jb_u64(b, e->key);
		}
		jb_key(b, "port");
		jb_u64(b, e->port);
		if (mac) {
			jb_key(b, "age_ms");
			jb_u64(b, (now - e->seen_ns) / 1000000);
		}
		jb_end_obj(b);
	}
	jb_end_arr(b);
}

/* The mode's forwarding state: what decides where the next frame goes. */
bool op_table(struct req *r)
{
	struct sw *sw = r->sw;
	struct jbuf *b = r->body;

	switch (sw->mode) {
	case MODE_ETH:
		emit_fdb(r, &sw->macs, "macs", true);
		break;
	case MODE_LINK:
		emit_fdb(r, &sw->gpus, "gpu_ids", false);
		break;
	case MODE_IB:
		/*
		 * LID 0 is reserved and never routed (bad_dlid), so the scan
		 * starts at 1.  Walking all 48 K entries is cheap for a control
		 * op.
		 */
		jb_key(b, "lft");
		jb_arr(b);
		for (unsigned int lid = 1; lid < IB_LID_UNICAST_END; lid++) {
			if (sw->lft[lid] == LFT_NONE)
				continue;
			jb_obj(b);
			jb_key(b, "lid");
			jb_u64(b, lid);
			jb_key(b, "port");
			jb_u64(b, sw->lft[lid]);
			jb_end_obj(b);
		}
		jb_end_arr(b);
		/*
		 * mcast_set() frees an empty group, so every MLID listed has at
		 * least one member.  Members need not be connected: a
		 * subscription is configured state.
		 */
		jb_key(b, "mcast");
		jb_arr(b);
		for (unsigned int mlid = IB_LID_MCAST_FIRST; mlid <= IB_LID_MCAST_LAST; mlid++) {
			if (!sw->mcast[mlid - IB_LID_MCAST_FIRST])
				continue;
			jb_obj(b);
			jb_key(b, "mlid");
			jb_u64(b, mlid);
			jb_key(b, "ports");
			jb_arr(b);
			for (unsigned int p = 1; p <= sw->max_ports; p++)
				if (mcast_member(sw, mlid, p))
					jb_u64(b, p);
			jb_end_arr(b);
			jb_end_obj(b);
		}
		jb_end_arr(b);
		break;
	}
	return true;
}

/*
 * One LFT entry from @e: {lid, port} with port null to clear.
 *
 * Returns true with *lid and *port (LFT_NONE to clear), or false through
 * fail().  Port 0 routes to the switch itself (the subnet-manager seam).  A
 * port with no device connected is accepted: the LFT is configuration and may
 * point at a slot before its device arrives (no_port until then).
 */
static bool lft_entry(struct req *r, const struct jval *e, unsigned int *lid, unsigned int *port)
{
	const struct jval *l = json_get(e, "lid"), *p = json_get(e, "port");
	int64_t v;

	if (!json_int(l, 1, IB_LID_UNICAST_END - 1, &v))
		return fail(r, "\"lid\" must be a unicast LID 1..%u", IB_LID_UNICAST_END - 1);
	*lid = (unsigned int)v;
	if (p && p->t == J_NULL) {
		*port = LFT_NONE;
		return true;
	}
	if (!json_int(p, 0, r->sw->max_ports, &v))
		return fail(r, "\"port\" must be 0 (the switch) .. %u, or null to clear",
			    r->sw->max_ports);
	*port = (unsigned int)v;
	return true;
}

/*
 * Two request forms: {"entries": [{lid, port}, ...]} or a single {lid, port}.
 * "set" counts the entries written, duplicates included; for a LID given twice
 * the last one wins.
 */
bool op_set_lft(struct req *r)
{
	const struct jval *entries = json_get(r->j, "entries");
	unsigned int lid, port, n = 0;

	if (!need_mode(r, MODE_IB, "set_lft"))
		return false;
	if (!entries) {
		if (!lft_entry(r, r->j, &lid, &port))
			return false;
		r->sw->lft[lid] = (uint16_t)port;
		n = 1;
	} else {
		if (entries->t != J_ARR)
			return fail(r, "\"entries\" must be an array of {lid, port}");
		/* Validate all before applying any, so a bad entry changes nothing. */
		for (const struct jval *e = entries->child; e; e = e->next)
			if (e->t != J_OBJ || !lft_entry(r, e, &lid, &port))
				return r->err[0] ? false :
				       fail(r, "\"entries\" must hold {lid, port} objects");
		/*
		 * The second pass cannot fail: it reads the same entries the
		 * first pass has just checked, so lft_entry()'s result is not
		 * looked at.
		 */
		for (const struct jval *e = entries->child; e; e = e->next) {
			lft_entry(r, e, &lid, &port);
			r->sw->lft[lid] = (uint16_t)port;
			n++;
		}
	}
	jb_key(r->body, "set");
	jb_u64(r->body, n);
	return true;
}

/*
 * mcast_join and mcast_leave: set or clear one port's bit in an MLID's bitmap.
 *
 * Members are device ports 1..max_ports, with or without a device connected;
 * mcast_set() refuses port 0 too.  Leaving a group a port is not in succeeds,
 * so a test can clean up without knowing the state.  With the arguments checked
 * here, mcast_set() fails only when the bitmap cannot be allocated.
 */
static bool op_mcast(struct req *r, bool join)
{
	int64_t mlid, port;

	if (!need_mode(r, MODE_IB, join ? "mcast_join" : "mcast_leave") ||
	    !get_int(r, "mlid", IB_LID_MCAST_FIRST, IB_LID_MCAST_LAST, &mlid) ||
	    !get_int(r, "port", 1, r->sw->max_ports, &port))
		return false;
	if (!mcast_set(r->sw, (unsigned int)mlid, (unsigned int)port, join))
		return fail(r, "out of memory");
	return true;
}

bool op_mcast_join(struct req *r)
{
	return op_mcast(r, true);
}

bool op_mcast_leave(struct req *r)
{
	return op_mcast(r, false);
}

/*
 * link_down pulls the cable (closes the connection, reserves the slot);
 * link_up frees a down slot for the next connection.  "was" is the state
 * before, so a test can tell a pull of a connected port from one of a free
 * slot.
 *
 * link_up on a slot that is up or free changes nothing and still answers, with
 * "was", so a test may call it without checking first; link_down on a free slot
 * reserves it (docs/switch.md, "Link down / up").
 */
static bool op_link(struct req *r, bool up)
{
	int64_t id;
	struct port *p;

	if (!get_int(r, "port", 1, r->sw->max_ports, &id))
		return false;
	p = &r->sw->ports[id];
	jb_key(r->body, "was");
	jb_str(r->body, state_name(p->state));
	if (!up)
		port_link_down(r->sw, (unsigned int)id);
	else if (p->state == PORT_DOWN)
		p->state = PORT_FREE;
	return true;
}

bool op_link_down(struct req *r)
{
	return op_link(r, false);
}

bool op_link_up(struct req *r)
{
	return op_link(r, true);
}

/*
 * Decode one frame of an inject request, the string @v as hex or base64,
 * into a malloc'd buffer.  @what names the string in an error ("\"hex\"",
 * "frames[3]").
 *
 * Returns a buffer the caller frees, with the frame's length in *len, or NULL
 * through fail().  65536 bytes (SW_LINK_MAX) is the largest frame of any mode
 * and the documented inject limit; the mode's own maximum is applied later
 * (egress: op_inject; ingress: fwd_frame() counts it as oversize).
 */
static uint8_t *frame_decode(struct req *r, const struct jval *v, bool hex, const char *what,
			     size_t *len)
{
	uint8_t *out;
	ssize_t n;
	size_t bad;

	if (v->t != J_STR) {
		fail(r, "%s must be a string", what);
		return NULL;
	}
	/* Sizes are checked on the text, before anything is allocated for it. */
	if (hex && (v->slen % 2 || v->slen / 2 > SW_LINK_MAX)) {
		fail(r, "%s must have an even number of hex digits, at most %u bytes", what,
		     SW_LINK_MAX);
		return NULL;
	}
	if (!hex && (v->slen % 4 || v->slen / 4 * 3 > SW_LINK_MAX + 2)) {
		fail(r, "%s must be padded standard base64, at most %u bytes", what, SW_LINK_MAX);
		return NULL;
	}
	/*
	 * One byte more than the frame can need: an empty frame ("hex": "") is
	 * a valid request (the frame is a runt), and malloc(0) may return
	 * NULL, which would read as out of memory.
	 */
	out = malloc(hex ? v->slen / 2 + 1 : v->slen / 4 * 3 + 1);
	if (!out) {
		fail(r, "out of memory");
		return NULL;
	}
	n = hex ? json_unhex(v->s, v->slen, out, &bad) : json_unbase64(v->s, v->slen, out, &bad);
	if (n < 0) {
		free(out);
		fail(r, hex ? "%s holds a non-hex character at %zu" :
			      "%s holds an invalid base64 character at %zu", what, bad);
		return NULL;
	}
	/* Base64's text bound allows 2 bytes more than a frame may have. */
	if ((size_t)n > SW_LINK_MAX) {
		free(out);
		fail(r, "%s: frame longer than %u bytes", what, SW_LINK_MAX);
		return NULL;
	}
	*len = (size_t)n;
	return out;
}

/* The decoded frames of one inject request; inject_free() releases them. */
struct inject_frames {
	uint8_t *buf[SW_INJECT_MAX_FRAMES];
	size_t len[SW_INJECT_MAX_FRAMES];
	unsigned int n;
};

static void inject_free(struct inject_frames *f)
{
	for (unsigned int i = 0; i < f->n; i++)
		free(f->buf[i]);
	f->n = 0;
}

/*
 * The frames of an inject request: exactly one of "hex" or "base64" (one
 * frame) or "frames" (an array of 1..SW_INJECT_MAX_FRAMES hex strings),
 * each at most @max bytes.  All are decoded and checked before the caller
 * sends any, so a bad one anywhere leaves the fabric untouched.
 */
static bool inject_frames_arg(struct req *r, size_t max, struct inject_frames *f)
{
	const struct jval *hex = json_get(r->j, "hex"), *b64 = json_get(r->j, "base64");
	const struct jval *arr = json_get(r->j, "frames"), *v;
	char what[32];

	f->n = 0;
	if ((hex != NULL) + (b64 != NULL) + (arr != NULL) != 1)
		return fail(r, "give exactly one of \"hex\" or \"base64\" (a frame) or "
			    "\"frames\" (an array of hex strings)");
	if (!arr) {
		v = hex ? hex : b64;
		f->buf[0] = frame_decode(r, v, hex != NULL, hex ? "\"hex\"" : "\"base64\"",
					 &f->len[0]);
		if (!f->buf[0])
			return false;
		f->n = 1;
	} else {
		if (arr->t != J_ARR || !arr->child)
			return fail(r, "\"frames\" must be a non-empty array of hex strings");
		for (v = arr->child; v; v = v->next) {
			if (f->n == SW_INJECT_MAX_FRAMES) {
				inject_free(f);
				return fail(r, "\"frames\" holds more than %u frames",
					    SW_INJECT_MAX_FRAMES);
			}
			snprintf(what, sizeof(what), "frames[%u]", f->n);
			f->buf[f->n] = frame_decode(r, v, true, what, &f->len[f->n]);
			if (!f->buf[f->n]) {
				inject_free(f);
				return false;
			}
			f->n++;
		}
	}
	for (unsigned int i = 0; i < f->n; i++) {
		if (f->len[i] > max) {
			inject_free(f);
			return fail(r, "frame %u: an egress frame in %s mode is at most %zu bytes",
				    i, sw_mode_name(r->sw->mode), max);
		}
	}
	return true;
}

/*
 * Put frames on the fabric as if a device sent them (ingress: counted,
 * captured, forwarded) or as if the switch sent them out of a port (egress:
 * no forwarding rules, only the mode's maximum size), in the order given.
 * Tests use it to reach states a well-behaved device would never produce.
 * The reply's queue_len (the port's egress queues after the last frame) lets
 * an injector keep the queue short without asking `ports` in between.
 */
bool op_inject(struct req *r)
{
	struct sw *sw = r->sw;
	const struct jval *dir = json_get(r->j, "direction");
	struct inject_frames *f;
	bool egress = false;
	uint64_t bytes = 0;
	unsigned int n;
	int64_t id;

	/*
	 * The cheap checks come first, so the frames are decoded (and
	 * allocated) only for a request that can otherwise succeed.
	 */
	if (!get_int(r, "port", 1, sw->max_ports, &id))
		return false;
	if (dir) {
		if (dir->t != J_STR || (strcmp(dir->s, "ingress") && strcmp(dir->s, "egress")))
			return fail(r, "\"direction\" must be \"ingress\" or \"egress\"");
		egress = !strcmp(dir->s, "egress");
	}
	if (sw->ports[id].state != PORT_UP)
		return fail(r, "port %lld has no device connected (state %s)", (long long)id,
			    state_name(sw->ports[id].state));
	f = malloc(sizeof(*f));
	if (!f)
		return fail(r, "out of memory");
	/* ingress: SW_LINK_MAX; fwd_frame() decides runt or oversize */
	if (!inject_frames_arg(r, egress ? sw_max_frame(sw) : SW_LINK_MAX, f)) {
		free(f);
		return false;
	}
	/*
	 * port_output() never keeps a frame: outside a read batch (sw->batching
	 * is false while a control request runs) it sends at once or copies the
	 * frame into the port's queue, so the buffers are freed right after.
	 * An egress frame is captured before it is output, so the file shows it
	 * even if the queue then drops it as queue_full.  Ingress passes the
	 * length twice: nothing was truncated.  A frame can take the port down
	 * (its peer gone on send): the rest are then not sent, as a cable pull
	 * would lose them.
	 */
	for (n = 0; n < f->n && sw->ports[id].state == PORT_UP; n++) {
		if (egress) {
			if (cap_active(&sw->cap))
				cap_packet(&sw->cap, (uint32_t)id, sw_realtime(), f->buf[n],
					   (uint32_t)f->len[n], (uint32_t)f->len[n], CAP_OUTBOUND);
			port_output(sw, (unsigned int)id, f->buf[n], f->len[n]);
		} else {
			port_ingress(sw, (unsigned int)id, f->buf[n], f->len[n], f->len[n]);
		}
		bytes += f->len[n];
	}
	inject_free(f);
	free(f);
	jb_key(r->body, "bytes");
	jb_u64(r->body, bytes);
	jb_key(r->body, "frames");
	jb_u64(r->body, n);
	jb_key(r->body, "queue_len");
	jb_u64(r->body, sw->ports[id].qos.q_total);
	return true;
}

/*
 * Start a pcapng file.  Connected ports get their interface block now, the
 * others when they connect, so every packet's interface precedes it.
 */
bool op_capture_start(struct req *r)
{
	struct sw *sw = r->sw;
	const struct jval *path = json_get(r->j, "path");
	int64_t file_bytes = 0;
	int err;

	/*
	 * A path holding \u0000 is refused: fopen() would silently use the part
	 * before the NUL.
	 */
	if (!path || path->t != J_STR || !path->slen || strlen(path->s) != path->slen)
		return fail(r, "\"path\" must be a non-empty file path");
	/* Optional: roll over to a next file before one passes this many bytes. */
	if (json_get(r->j, "file_bytes") &&
	    !get_int(r, "file_bytes", CAP_MIN_FILE_BYTES, INT64_MAX, &file_bytes))
		return false;
	if (cap_active(&sw->cap))
		return fail(r, "a capture to %s is running; capture_stop it first", sw->cap.path);
	/*
	 * CnuasLink has no pcap link type of its own; docs/switch.md
	 * ("Capture") records link mode as Ethernet.  One slot per port number,
	 * 0 included, so the port number indexes the capture's interface map
	 * directly.
	 */
	err = cap_start(&sw->cap, path->s,
			sw->mode == MODE_IB ? LINKTYPE_INFINIBAND : LINKTYPE_ETHERNET,
			sw->max_ports + 1, (uint64_t)file_bytes);
	if (err)
		return fail(r, "cannot write %s: %s", path->s, strerror(-err));
	for (unsigned int id = 1; id <= sw->max_ports; id++)
		if (sw->ports[id].state == PORT_UP)
			cap_add_port(&sw->cap, id);
	/*
	 * The header blocks go to disk now, so a reader opening the file at
	 * once already sees a valid pcapng file.
	 */
	cap_flush(&sw->cap);
	jb_key(r->body, "path");
	jb_str(r->body, path->s);
	/*
	 * The port counters at the instant the capture starts (and, in
	 * capture_stop, ends): with the frames in between they account for
	 * every counter move, however busy the fabric (docs/switch.md).
	 */
	emit_ports(r);
	return true;
}

/*
 * The path is copied first: cap_stop frees it, and the reply still names it;
 * the file list is taken over from cap_stop for the same reason.
 */
bool op_capture_stop(struct req *r)
{
	struct capture *c = &r->sw->cap;
	uint64_t packets = c->packets;
	struct cap_file *files = NULL;
	uint32_t n_files = 0;
	char *path;
	int err;

	if (!cap_active(c))
		return fail(r, "no capture is running");
	path = strdup(c->path);
	err = cap_stop(c, &files, &n_files);
	if (err) {
		fail(r, "capture to %s failed: %s", path ? path : "?",
		     c->error[0] ? c->error : strerror(-err));
		free(path);
		cap_free_files(files, n_files);
		return false;
	}
	jb_key(r->body, "path");
	jb_str(r->body, path ? path : "");
	jb_key(r->body, "packets");
	jb_u64(r->body, packets);
	jb_key(r->body, "files");
	jb_arr(r->body);
	for (uint32_t i = 0; i < n_files; i++) {
		jb_obj(r->body);
		jb_key(r->body, "path");
		jb_str(r->body, files[i].path);
		jb_key(r->body, "packets");
		jb_u64(r->body, files[i].packets);
		jb_key(r->body, "bytes");
		jb_u64(r->body, files[i].bytes);
		jb_end_obj(r->body);
	}
	jb_end_arr(r->body);
	emit_ports(r);
	free(path);
	cap_free_files(files, n_files);
	return true;
}

/*
 * A test hook: ages MAC entries without waiting; capture timestamps stay
 * wall-clock.
 *
 * At most 1e9 s (about 31 years) per call, so s * 1e9 ns fits in an int64.
 * Only MAC aging and uptime read this clock (util.h).
 */
bool op_advance_time(struct req *r)
{
	int64_t s;

	if (!get_int(r, "seconds", 0, 1000000000, &s))
		return false;
	r->sw->clock_offset_ns += s * 1000000000ll;
	jb_key(r->body, "uptime_ms");
	jb_u64(r->body, (sw_now(r->sw) - r->sw->started_ns) / 1000000);
	return true;
}

/* The subnet manager's view (docs/switch.md, "The `sm` op"); ib mode only. */
bool op_sm(struct req *r)
{
	if (!need_mode(r, MODE_IB, "sm"))
		return false;
	sm_report(r->sw, r->body);
	return true;
}
