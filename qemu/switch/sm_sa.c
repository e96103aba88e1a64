// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The subnet administrator on the SM's QP1 (docs/switch.md, "SA"; IBA vol. 1
 * ch. 15): ClassPortInfo, PathRecord Get, MCMemberRecord Set/Delete/Get, and
 * the multicast groups, which program the switch's multicast table.
 */
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "sm.h"
#include "sm_int.h"
#include "switch.h"

/* SA MAD layout (§15.2.1): RMPP header at 24, SM_Key at 36, then these. */
#define SA_ATTR_OFFSET		44
#define SA_COMP_MASK		48
#define SA_DATA			56
#define SA_DATA_BYTES		200

#define SA_CLASS_VERSION	2
#define SA_ATTR_CLASS_PORT_INFO	0x0001
#define SA_ATTR_PATH_RECORD	0x0035
#define SA_ATTR_MCMEMBER	0x0038

/* MAD status values (§13.4.7) and SA class-specific ones (§15.2.1.1) in bits 15..8. */
#define ST_BAD_VERSION		0x0004
#define ST_BAD_METHOD		0x0008
#define ST_BAD_ATTR		0x000c
#define ST_NO_RESOURCES		(1 << 8)
#define ST_REQ_INVALID		(2 << 8)
#define ST_NO_RECORDS		(3 << 8)
#define ST_INVALID_GID		(5 << 8)
#define ST_INSUFFICIENT		(6 << 8)

/* PathRecord component mask bits and offsets (§15.2.5.16). */
#define PR_DGID_BIT	2
#define PR_SGID_BIT	3
#define PR_DLID_BIT	4
#define PR_SLID_BIT	5
#define PR_BYTES	64

/* MCMemberRecord component mask bits and offsets (§15.2.5.17). */
#define MC_MGID_BIT	0
#define MC_PGID_BIT	1
#define MC_QKEY_BIT	2
#define MC_MLID_BIT	3
#define MC_MTU_BIT	5
#define MC_TCLASS_BIT	6
#define MC_PKEY_BIT	7
#define MC_RATE_BIT	9
#define MC_SL_BIT	12
#define MC_FLOW_BIT	13
#define MC_JOIN_BIT	16
#define MC_BYTES	52

#define MC_MGID		0
#define MC_PGID		16
#define MC_QKEY		32
#define MC_MLID		36
#define MC_MTU		38
#define MC_TCLASS	39
#define MC_PKEY		40
#define MC_RATE		42
#define MC_PLT		43
#define MC_SL_FLOW_HOP	44
#define MC_SCOPE_JOIN	48

#define SEL_EXACTLY	2
#define RATE_100G	16
#define RATE_10G	3
#define MTU_2048	4
#define PLT_DEFAULT	18

static const uint8_t ipoib_bcast_mgid[16] = {
	0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
};

static bool has(uint64_t mask, unsigned int bit)
{
	return mask >> bit & 1;
}

static struct sm_group *group_new(struct sw *sw, const uint8_t *mgid)
{
	struct sm *sm = sw->sm;
	struct sm_group *g, **n;
	unsigned int mlid;

	for (mlid = IB_LID_MCAST_FIRST; mlid <= IB_LID_MCAST_LAST; mlid++) {
		bool used = false;

		for (unsigned int i = 0; i < sm->n_groups && !used; i++)
			used = sm->groups[i]->mlid == mlid;
		if (!used)
			break;
	}
	if (mlid > IB_LID_MCAST_LAST)
		return NULL;
	if (sm->n_groups == sm->cap_groups) {
		unsigned int cap = sm->cap_groups ? sm->cap_groups * 2 : 8;

		n = realloc(sm->groups, cap * sizeof(*n));
		if (!n)
			return NULL;
		sm->groups = n;
		sm->cap_groups = cap;
	}
	g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->join = calloc(sw->max_ports + 1, 1);
	g->member_guid = calloc(sw->max_ports + 1, sizeof(*g->member_guid));
	if (!g->join || !g->member_guid) {
		free(g->join);
		free(g->member_guid);
		free(g);
		return NULL;
	}
	g->mlid = (uint16_t)mlid;
	if (mgid) {
		memcpy(g->mgid, mgid, 16);
	} else {
		/* ff12:601b:ffff:0000:0000:0001:0000:MLID */
		static const uint8_t base[14] = { 0xff, 0x12, 0x60, 0x1b, 0xff, 0xff, 0, 0,
						  0, 0, 0, 1, 0, 0 };

		memcpy(g->mgid, base, sizeof(base));
		wr16(g->mgid + 14, mlid);
	}
	g->plt = PLT_DEFAULT;
	sm->groups[sm->n_groups++] = g;
	return g;
}

static void group_free(struct sm_group *g)
{
	free(g->join);
	free(g->member_guid);
	free(g);
}

static void group_delete(struct sw *sw, unsigned int idx)
{
	struct sm *sm = sw->sm;

	group_free(sm->groups[idx]);
	memmove(&sm->groups[idx], &sm->groups[idx + 1],
		(sm->n_groups - idx - 1) * sizeof(*sm->groups));
	sm->n_groups--;
}

static bool group_empty(const struct sw *sw, const struct sm_group *g)
{
	for (unsigned int p = 1; p <= sw->max_ports; p++)
		if (g->join[p])
			return false;
	return true;
}

static int group_by_mgid(struct sm *sm, const uint8_t *mgid)
{
	for (unsigned int i = 0; i < sm->n_groups; i++)
		if (!memcmp(sm->groups[i]->mgid, mgid, 16))
			return (int)i;
	return -1;
}

static int group_by_mlid(struct sm *sm, unsigned int mlid)
{
	for (unsigned int i = 0; i < sm->n_groups; i++)
		if (sm->groups[i]->mlid == mlid)
			return (int)i;
	return -1;
}

bool sa_init(struct sw *sw)
{
	struct sm_group *g = group_new(sw, ipoib_bcast_mgid);

	if (!g)
		return false;
	g->qkey = 0x00000b1b;
	g->pkey = IB_PKEY_DEFAULT;
	g->mtu = MTU_2048;
	g->rate = RATE_10G;
	g->permanent = true;
	return true;
}

void sa_fini(struct sw *sw)
{
	struct sm *sm = sw->sm;

	for (unsigned int i = 0; i < sm->n_groups; i++)
		group_free(sm->groups[i]);
	free(sm->groups);
	sm->groups = NULL;
	sm->n_groups = 0;
}

void sa_port_gone(struct sw *sw, unsigned int port)
{
	struct sm *sm = sw->sm;

	for (unsigned int i = 0; i < sm->n_groups;) {
		struct sm_group *g = sm->groups[i];

		if (g->join[port]) {
			g->join[port] = 0;
			mcast_set(sw, g->mlid, port, false);
		}
		if (!g->permanent && group_empty(sw, g))
			group_delete(sw, i);
		else
			i++;
	}
}

/* The switch port of a GID (subnet prefix : port GUID); 0 when unknown. */
static unsigned int gid_port(struct sw *sw, const uint8_t *gid, bool active_only)
{
	if (rd64(gid) != sw->sm->prefix)
		return 0;
	return sm_port_by_guid(sw, rd64(gid + 8), active_only);
}

static void put_gid(struct sw *sw, uint8_t *out, unsigned int port)
{
	wr64(out, sw->sm->prefix);
	wr64(out + 8, sw->sm->ports[port].guid);
}

static uint16_t class_port_info(uint8_t *rec)
{
	rec[0] = 1;			/* BaseVersion */
	rec[1] = SA_CLASS_VERSION;
	wr32(rec + 4, PLT_DEFAULT);	/* CapabilityMask2 0, RespTimeValue 18 */
	return 0;
}

static uint16_t path_record(struct sw *sw, uint64_t mask, const uint8_t *req, uint8_t *rec)
{
	unsigned int src, dst;

	if (!(has(mask, PR_SGID_BIT) || has(mask, PR_SLID_BIT)) ||
	    !(has(mask, PR_DGID_BIT) || has(mask, PR_DLID_BIT)))
		return ST_INSUFFICIENT;
	src = has(mask, PR_SGID_BIT) ? gid_port(sw, req + 24, true) :
	      sm_port_by_lid(sw, rd16(req + 42), true);
	dst = has(mask, PR_DGID_BIT) ? gid_port(sw, req + 8, true) :
	      sm_port_by_lid(sw, rd16(req + 40), true);
	if (!src || !dst)
		return ST_NO_RECORDS;
	put_gid(sw, rec + 8, dst);
	put_gid(sw, rec + 24, src);
	wr16(rec + 40, sw->sm->ports[dst].lid);
	wr16(rec + 42, sw->sm->ports[src].lid);
	rec[49] = 0x80 | 1;			/* Reversible, NumbPath 1 */
	wr16(rec + 50, IB_PKEY_DEFAULT);
	rec[54] = SEL_EXACTLY << 6 | SM_MTU_4096;
	rec[55] = SEL_EXACTLY << 6 | RATE_100G;
	rec[56] = SEL_EXACTLY << 6 | PLT_DEFAULT;
	return 0;
}

/* The group's fields into an MCMemberRecord; PortGID and JoinState are the caller's. */
static void mc_fill(const struct sm_group *g, uint8_t *rec)
{
	memcpy(rec + MC_MGID, g->mgid, 16);
	wr32(rec + MC_QKEY, g->qkey);
	wr16(rec + MC_MLID, g->mlid);
	rec[MC_MTU] = (uint8_t)(SEL_EXACTLY << 6 | g->mtu);
	rec[MC_TCLASS] = g->tclass;
	wr16(rec + MC_PKEY, g->pkey);
	rec[MC_RATE] = (uint8_t)(SEL_EXACTLY << 6 | g->rate);
	rec[MC_PLT] = (uint8_t)(SEL_EXACTLY << 6 | g->plt);
	wr32(rec + MC_SL_FLOW_HOP, (uint32_t)g->sl << 28 | (g->flow_label & 0xfffff) << 8 |
		g->hop_limit);
}

static uint16_t mc_join(struct sw *sw, uint64_t mask, const uint8_t *req, uint8_t *rec)
{
	struct sm *sm = sw->sm;
	static const uint8_t zero[16];
	unsigned int port, join = req[MC_SCOPE_JOIN] & 0xf;
	struct sm_group *g;
	int idx;

	if (!has(mask, MC_PGID_BIT) || !has(mask, MC_JOIN_BIT))
		return ST_INSUFFICIENT;
	port = gid_port(sw, req + MC_PGID, false);
	if (!port)
		return ST_INVALID_GID;
	if (!join)
		return ST_REQ_INVALID;
	idx = has(mask, MC_MGID_BIT) ? group_by_mgid(sm, req + MC_MGID) : -1;
	if (idx >= 0) {
		g = sm->groups[idx];
	} else {
		bool auto_mgid = !has(mask, MC_MGID_BIT) || !memcmp(req + MC_MGID, zero, 16);

		if (!has(mask, MC_QKEY_BIT) || !has(mask, MC_PKEY_BIT) || !has(mask, MC_SL_BIT) ||
		    !has(mask, MC_FLOW_BIT) || !has(mask, MC_TCLASS_BIT))
			return ST_INSUFFICIENT;
		if (!auto_mgid && req[MC_MGID] != 0xff)
			return ST_INVALID_GID;
		g = group_new(sw, auto_mgid ? NULL : req + MC_MGID);
		if (!g)
			return ST_NO_RESOURCES;
		g->qkey = rd32(req + MC_QKEY);
		g->pkey = rd16(req + MC_PKEY);
		g->sl = (uint8_t)(rd32(req + MC_SL_FLOW_HOP) >> 28);
		g->flow_label = rd32(req + MC_SL_FLOW_HOP) >> 8 & 0xfffff;
		g->hop_limit = req[MC_SL_FLOW_HOP + 3];
		g->tclass = req[MC_TCLASS];
		g->mtu = has(mask, MC_MTU_BIT) ? (req[MC_MTU] & 0x3f) : MTU_2048;
		g->rate = has(mask, MC_RATE_BIT) ? (req[MC_RATE] & 0x3f) : RATE_10G;
	}
	if (!mcast_set(sw, g->mlid, port, true))
		return ST_NO_RESOURCES;
	g->join[port] |= (uint8_t)join;
	g->member_guid[port] = sm->ports[port].guid;
	mc_fill(g, rec);
	memcpy(rec + MC_PGID, req + MC_PGID, 16);
	rec[MC_SCOPE_JOIN] = (uint8_t)((req[MC_SCOPE_JOIN] & 0xf0) | g->join[port]);
	return 0;
}

static uint16_t mc_leave(struct sw *sw, uint64_t mask, const uint8_t *req, uint8_t *rec)
{
	struct sm *sm = sw->sm;
	unsigned int port;
	struct sm_group *g;
	int idx;

	if (!has(mask, MC_MGID_BIT) || !has(mask, MC_PGID_BIT))
		return ST_INSUFFICIENT;
	idx = group_by_mgid(sm, req + MC_MGID);
	if (idx < 0)
		return ST_NO_RECORDS;
	g = sm->groups[idx];
	port = gid_port(sw, req + MC_PGID, false);
	if (!port)
		return ST_INVALID_GID;
	if (!g->join[port])
		return ST_REQ_INVALID;
	mc_fill(g, rec);
	memcpy(rec + MC_PGID, req + MC_PGID, 16);
	g->join[port] &= (uint8_t)~(has(mask, MC_JOIN_BIT) ? req[MC_SCOPE_JOIN] & 0xf : 0xf);
	rec[MC_SCOPE_JOIN] = (uint8_t)((req[MC_SCOPE_JOIN] & 0xf0) | g->join[port]);
	if (!g->join[port])
		mcast_set(sw, g->mlid, port, false);
	if (!g->permanent && group_empty(sw, g))
		group_delete(sw, (unsigned int)idx);
	return 0;
}

static uint16_t mc_get(struct sw *sw, uint64_t mask, const uint8_t *req, uint8_t *rec)
{
	struct sm *sm = sw->sm;
	struct sm_group *g;
	unsigned int port;
	int idx;

	if (has(mask, MC_MGID_BIT))
		idx = group_by_mgid(sm, req + MC_MGID);
	else if (has(mask, MC_MLID_BIT))
		idx = group_by_mlid(sm, rd16(req + MC_MLID));
	else
		return ST_INSUFFICIENT;
	if (idx < 0)
		return ST_NO_RECORDS;
	g = sm->groups[idx];
	mc_fill(g, rec);
	if (has(mask, MC_PGID_BIT)) {
		port = gid_port(sw, req + MC_PGID, false);
		if (!port || !g->join[port])
			return ST_NO_RECORDS;
		memcpy(rec + MC_PGID, req + MC_PGID, 16);
		rec[MC_SCOPE_JOIN] = g->join[port];
	}
	return 0;
}

void sa_request(struct sw *sw, unsigned int in, const struct ib_ud *a, const uint8_t *mad)
{
	struct sm *sm = sw->sm;
	uint8_t r[IB_MAD_BYTES];
	uint8_t *rec = r + SA_DATA;
	const uint8_t *req = mad + SA_DATA;
	uint64_t mask = rd64(mad + SA_COMP_MASK);
	uint16_t attr = rd16(mad + MAD_ATTR_ID), status = 0, bytes = 0;
	uint8_t method = mad[MAD_METHOD];
	struct ib_ud out = {
		.vl = 0, .dlid = a->slid, .slid = sm->lid, .dqp = a->sqp, .sqp = 1,
		.qkey = IB_GSI_QKEY,
	};

	memset(r, 0, sizeof(r));
	memcpy(r, mad, MAD_ATTR_MOD + 4);	/* common header: TID, attribute, modifier */
	r[MAD_METHOD] = method == METHOD_DELETE ? METHOD_DELETE_RESP : METHOD_GET_RESP;
	wr16(r + MAD_CLASS_SPECIFIC, 0);
	if (mad[MAD_CLASS_VERSION] != SA_CLASS_VERSION) {
		status = ST_BAD_VERSION;
	} else if (method == METHOD_GET) {
		if (attr == SA_ATTR_CLASS_PORT_INFO) {
			status = class_port_info(rec);
			bytes = 72;
		} else if (attr == SA_ATTR_PATH_RECORD) {
			status = path_record(sw, mask, req, rec);
			bytes = PR_BYTES;
		} else if (attr == SA_ATTR_MCMEMBER) {
			status = mc_get(sw, mask, req, rec);
			bytes = MC_BYTES;
		} else {
			status = ST_BAD_ATTR;
		}
	} else if (method == METHOD_SET || method == METHOD_DELETE) {
		if (attr != SA_ATTR_MCMEMBER)
			status = ST_BAD_ATTR;
		else if (method == METHOD_SET)
			status = mc_join(sw, mask, req, rec);
		else
			status = mc_leave(sw, mask, req, rec);
		bytes = MC_BYTES;
	} else {
		status = ST_BAD_METHOD;
	}
	if (status) {
		memset(rec, 0, SA_DATA_BYTES);
		bytes = 0;
		sm->c.sa_errors++;
	}
	wr16(r + MAD_STATUS, status);
	wr16(r + SA_ATTR_OFFSET, (bytes + 7u) / 8u);
	wr64(r + SA_COMP_MASK, mask);
	sm->c.sa_requests++;
	sm_send(sw, in, &out, r);
}

void sa_report_groups(struct sw *sw, struct jbuf *b)
{
	struct sm *sm = sw->sm;
	char text[48];

	jb_key(b, "groups");
	jb_arr(b);
	for (unsigned int i = 0; i < sm->n_groups; i++) {
		const struct sm_group *g = sm->groups[i];
		const uint8_t *m = g->mgid;

		snprintf(text, sizeof(text), "%04x:%04x:%04x:%04x:%04x:%04x:%04x:%04x",
			 rd16(m), rd16(m + 2), rd16(m + 4), rd16(m + 6), rd16(m + 8), rd16(m + 10),
			 rd16(m + 12), rd16(m + 14));
		jb_obj(b);
		jb_key(b, "mgid");
		jb_str(b, text);
		jb_key(b, "mlid");
		jb_u64(b, g->mlid);
		jb_key(b, "qkey");
		jb_u64(b, g->qkey);
		jb_key(b, "ports");
		jb_arr(b);
		for (unsigned int p = 1; p <= sw->max_ports; p++)
			if (g->join[p])
				jb_u64(b, p);
		jb_end_arr(b);
		jb_end_obj(b);
	}
	jb_end_arr(b);
}
