// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Forwarding decisions, one function per mode.  Every frame that reaches
 * fwd_frame() has already been counted in rx and captured; here it is either
 * sent to one or more egress ports or dropped with a counted reason on the
 * ingress port.  The rules are written out in docs/switch.md and mirrored by
 * harness/models/switch.ts.
 */
#include <stdlib.h>
#include <string.h>

#include "ibwire.h"
#include "sm.h"
#include "switch.h"

/* Drops are counted on the ingress port (queue_full, on egress, is port.c's). */
static void drop(struct sw *sw, unsigned int port, enum drop_reason why)
{
	sw->ports[port].c.drops[why]++;
}

/* Every connected port except @in, in ascending order. */
static void flood(struct sw *sw, unsigned int in, const uint8_t *data, size_t len)
{
	for (unsigned int p = 1; p <= sw->max_ports; p++)
		if (p != in && sw->ports[p].state == PORT_UP)
			port_output(sw, p, data, len);
}

/*
 * A MAC as a table key, first byte most significant (the order `table` prints).
 *
 * The 48 bits fit the fdb's 64-bit key; MACs and gpu_ids live in separate
 * tables, so their keys never meet.
 */
static uint64_t mac48(const uint8_t *m)
{
	return (uint64_t)m[0] << 40 | (uint64_t)m[1] << 32 | (uint64_t)m[2] << 24 |
	       (uint64_t)m[3] << 16 | (uint64_t)m[4] << 8 | m[5];
}

/*
 * Learn, purging aged entries first when the table is full.
 *
 * When the table is full and nothing has aged (or aging is off), nothing is
 * learned (docs/switch.md, "Forwarding"): frames to that source keep flooding
 * until an entry frees up.  Existing entries are never evicted.
 */
static void learn(struct sw *sw, struct fdb *t, uint64_t key, unsigned int port)
{
	uint64_t now = sw_now(sw);

	if (fdb_learn(t, key, port, now))
		return;
	if (sw->aging_ns) {
		fdb_expire(t, now, sw->aging_ns);
		fdb_learn(t, key, port, now);
	}
}

/*
 * A learning bridge: learn the source, flood group and unknown destinations,
 * filter a destination that lives on the ingress port.  Aging is checked at
 * lookup rather than by a timer, so the switch needs no periodic work and
 * advance_time takes effect at once.
 */
static void fwd_eth(struct sw *sw, unsigned int in, const uint8_t *data, size_t len)
{
	const uint8_t *dst = data, *src = data + 6;
	struct fdb_entry *e;

	/*
	 * Group source addresses are invalid as sources: never learned.
	 *
	 * Bit 0 of the first byte is the IEEE 802 individual/group bit.
	 */
	if (!(src[0] & 1))
		learn(sw, &sw->macs, mac48(src), in);
	if (dst[0] & 1) {
		flood(sw, in, data, len);
		return;
	}
	/*
	 * An entry older than aging-sec is removed when it is looked up, and
	 * the frame floods as for an unknown destination.
	 */
	e = fdb_find(&sw->macs, mac48(dst));
	if (e && sw->aging_ns && sw_now(sw) - e->seen_ns >= sw->aging_ns) {
		fdb_remove(&sw->macs, mac48(dst));
		e = NULL;
	}
	if (!e)
		flood(sw, in, data, len);
	else if (e->port == in)
		drop(sw, in, DROP_FILTERED);
	else
		port_output(sw, e->port, data, len);
}

/*
 * Multicast groups are a bitmap of ports per MLID, allocated on first join
 * and freed when the last member leaves, so the 16 K possible MLIDs cost a
 * pointer each until used.
 */
bool mcast_member(const struct sw *sw, unsigned int mlid, unsigned int port)
{
	const uint8_t *bm;

	if (mlid < IB_LID_MCAST_FIRST || mlid > IB_LID_MCAST_LAST || !port || port > sw->max_ports)
		return false;
	bm = sw->mcast[mlid - IB_LID_MCAST_FIRST];
	return bm && (bm[port / 8] >> (port % 8) & 1);
}

/*
 * Join (@member) or leave MLID @mlid for @port.  Returns false for an MLID or
 * port out of range, or when the bitmap cannot be allocated.  The bitmap has
 * max_ports / 8 + 1 bytes so the port number is the bit index.
 */
bool mcast_set(struct sw *sw, unsigned int mlid, unsigned int port, bool member)
{
	uint8_t **slot, *bm;
	size_t bytes = sw->max_ports / 8 + 1;

	if (mlid < IB_LID_MCAST_FIRST || mlid > IB_LID_MCAST_LAST || !port || port > sw->max_ports)
		return false;
	slot = &sw->mcast[mlid - IB_LID_MCAST_FIRST];
	if (!*slot) {
		if (!member)
			return true;
		*slot = calloc(1, bytes);
		if (!*slot)
			return false;
	}
	bm = *slot;
	if (member)
		bm[port / 8] |= (uint8_t)(1u << (port % 8));
	else
		bm[port / 8] &= (uint8_t)~(1u << (port % 8));
	for (size_t i = 0; i < bytes; i++)
		if (bm[i])
			return true;
	free(bm);	/* an empty group is no group: its MLID is invalid again */
	*slot = NULL;
	return true;
}

/* A frame for the switch itself goes to the subnet manager (sm.h); none with --no-sm. */
static void to_switch(struct sw *sw, unsigned int in, const uint8_t *data, size_t len)
{
	if (!sw->sm || !sm_receive(sw, in, data, len))
		drop(sw, in, DROP_NO_SM);
}

/*
 * InfiniBand: the LRH's DLID (bytes 2-3, big-endian) picks the route from the
 * LFT or a multicast group; nothing is learned (a subnet manager, or the
 * control socket today, programs the tables).
 */
static void fwd_ib(struct sw *sw, unsigned int in, const uint8_t *data, size_t len)
{
	/*
	 * fwd_frame() has checked len >= SW_IB_MIN (the 8-byte LRH), so bytes
	 * 2..3 are there.
	 */
	unsigned int dlid = (unsigned int)data[2] << 8 | data[3];
	unsigned int out;

	/* docs/switch.md ("Forwarding", ib): the LRH, then the VCRC, then the DLID. */
	if (!ib_lrh_ok(data, len)) {
		drop(sw, in, DROP_BAD_LRH);
		return;
	}
	if (!ib_vcrc_ok(data, len)) {
		drop(sw, in, DROP_BAD_VCRC);
		return;
	}
	if (dlid == 0) {
		drop(sw, in, DROP_BAD_DLID);
		return;
	}
	if (dlid == IB_LID_PERMISSIVE) {
		to_switch(sw, in, data, len);
		return;
	}
	/*
	 * 0xC000..0xFFFE (0xFFFF was handled above).  Members with no device
	 * connected are skipped without a drop: the frame goes to every
	 * connected member (docs/switch.md).
	 */
	if (dlid >= IB_LID_MCAST_FIRST) {
		const uint8_t *bm = sw->mcast[dlid - IB_LID_MCAST_FIRST];

		if (!bm) {
			drop(sw, in, DROP_BAD_DLID);
			return;
		}
		for (unsigned int p = 1; p <= sw->max_ports; p++)
			if (p != in && (bm[p / 8] >> (p % 8) & 1) && sw->ports[p].state == PORT_UP)
				port_output(sw, p, data, len);
		return;
	}
	out = sw->lft[dlid];
	if (out == LFT_NONE)
		drop(sw, in, DROP_BAD_DLID);
	else if (out == 0)
		to_switch(sw, in, data, len);
	else if (out == in)
		drop(sw, in, DROP_LOOPBACK);
	/*
	 * set_lft only stores ports up to max_ports; the bound check is
	 * defence, the state check is the documented no_port.
	 */
	else if (out > sw->max_ports || sw->ports[out].state != PORT_UP)
		drop(sw, in, DROP_NO_PORT);
	else
		port_output(sw, out, data, len);
}

/*
 * CnuasLink gpu_ids are little-endian on the wire.
 *
 * Byte by byte rather than a cast: frames in sw->rxbuf start at multiples of
 * the mode's maximum + 1 (an odd number), so they are not aligned, and the
 * result must not depend on the host's byte order.
 */
static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A port has at most one gpu_id and a gpu_id lives on at most one port. */
static void link_learn(struct sw *sw, unsigned int in, uint32_t src)
{
	struct port *p = &sw->ports[in];
	struct fdb_entry *e;

	if (src == GPU_ID_ALL || (p->has_gpu && p->gpu_id == src))
		return;
	/* The port's previous gpu_id goes, unless another port took it since. */
	if (p->has_gpu) {
		e = fdb_find(&sw->gpus, p->gpu_id);
		if (e && e->port == in)
			fdb_remove(&sw->gpus, p->gpu_id);
		p->has_gpu = false;
	}
	/* The latest sender wins: the port that had @src loses it. */
	e = fdb_find(&sw->gpus, src);
	if (e && e->port != in)
		sw->ports[e->port].has_gpu = false;
	if (fdb_learn(&sw->gpus, src, in, sw_now(sw))) {
		p->has_gpu = true;
		p->gpu_id = src;
	}
}

/*
 * CnuasLink: learn the source, flood the broadcast gpu_id, otherwise unicast to
 * the learned port.  fwd_frame() has checked len >= SW_LINK_MIN, so both ids
 * are there.
 */
static void fwd_link(struct sw *sw, unsigned int in, const uint8_t *data, size_t len)
{
	uint32_t dst = le32(data);
	struct fdb_entry *e;

	link_learn(sw, in, le32(data + 4));
	if (dst == GPU_ID_ALL) {
		flood(sw, in, data, len);
		return;
	}
	e = fdb_find(&sw->gpus, dst);
	if (!e)
		drop(sw, in, DROP_UNKNOWN_GPU);
	else if (e->port == in)
		drop(sw, in, DROP_LOOPBACK);
	else
		port_output(sw, e->port, data, len);
}

/* Size rules first, the same for every destination, then the mode's rules. */
void fwd_frame(struct sw *sw, unsigned int in, const uint8_t *data, size_t len)
{
	if (len < sw_min_frame(sw)) {
		drop(sw, in, DROP_RUNT);
		return;
	}
	if (len > sw_max_frame(sw)) {
		drop(sw, in, DROP_OVERSIZE);
		return;
	}
	switch (sw->mode) {
	case MODE_ETH:
		/* MAC Control (PFC) is link-local: taken here, never forwarded. */
		if (!qos_rx(sw, in, data, len))
			fwd_eth(sw, in, data, len);
		break;
	case MODE_IB:
		fwd_ib(sw, in, data, len);
		break;
	case MODE_LINK:
		fwd_link(sw, in, data, len);
		break;
	}
}

/* Learned state dies with the connection; configured state (LFT, MLIDs) stays. */
void fwd_port_gone(struct sw *sw, unsigned int id)
{
	struct port *p = &sw->ports[id];

	/*
	 * Both tables, whatever the mode: only the mode's own table ever has
	 * entries.
	 */
	fdb_remove_port(&sw->macs, id);
	fdb_remove_port(&sw->gpus, id);
	p->has_gpu = false;
}

/* Tables for every mode are allocated whatever the mode: a few hundred KiB. */
bool fwd_init(struct sw *sw)
{
	if (!fdb_init(&sw->macs, SW_FDB_CAPACITY) || !fdb_init(&sw->gpus, SW_FDB_CAPACITY))
		return false;
	sw->lft = malloc(sizeof(*sw->lft) * IB_LID_UNICAST_END);
	sw->mcast = calloc(IB_MCAST_COUNT, sizeof(*sw->mcast));
	if (!sw->lft || !sw->mcast)
		return false;
	for (unsigned int i = 0; i < IB_LID_UNICAST_END; i++)
		sw->lft[i] = LFT_NONE;
	return true;
}
