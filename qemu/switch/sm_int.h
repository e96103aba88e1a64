/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The SM's state, shared by sm.c (discovery, LIDs, timer) and sm_sa.c (the
 * subnet administrator).  Not used outside the SM.
 */
#ifndef CNUAS_SM_INT_H
#define CNUAS_SM_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "ibwire.h"

/* MAD common header (IBA vol. 1 §13.4.2), offsets in the 256-byte MAD. */
#define MAD_BASE_VERSION	0
#define MAD_CLASS		1
#define MAD_CLASS_VERSION	2
#define MAD_METHOD		3
#define MAD_STATUS		4
#define MAD_CLASS_SPECIFIC	6	/* DR SMP: hop pointer, hop count */
#define MAD_TID			8
#define MAD_ATTR_ID		16
#define MAD_ATTR_MOD		20

#define MGMT_CLASS_SUBN_LID	0x01
#define MGMT_CLASS_SUBN_ADM	0x03
#define MGMT_CLASS_SUBN_DR	0x81

#define METHOD_GET		0x01
#define METHOD_SET		0x02
#define METHOD_TRAP		0x05
#define METHOD_TRAP_REPRESS	0x07
#define METHOD_DELETE		0x15
#define METHOD_RESP		0x80
#define METHOD_GET_RESP		0x81
#define METHOD_DELETE_RESP	0x95

/* SMP layout (§14.2.1): DR fields and the 64-byte attribute. */
#define SMP_MKEY		24
#define SMP_DR_SLID		32
#define SMP_DR_DLID		34
#define SMP_DATA		64
#define SMP_INITIAL_PATH	128
#define SMP_RETURN_PATH		192

#define ATTR_NODE_DESC		0x0010
#define ATTR_NODE_INFO		0x0011
#define ATTR_PORT_INFO		0x0015

#define PS_INIT			2
#define PS_ARMED		3
#define PS_ACTIVE		4

/* The SM's own transaction IDs: "CNUS" then a counter. */
#define SM_TID_TAG		0x434e5553ull
#define SM_SMP_TIMEOUT_NS	200000000ull
#define SM_SMP_RETRIES		3
#define SM_SUBNET_TIMEOUT	18
#define SM_MTU_4096		5

enum sm_pstate {
	SP_NONE,		/* never seen a device */
	SP_DOWN,
	SP_PROBING,
	SP_INIT,
	SP_ARMED,
	SP_ACTIVE,
	SP_UNRESPONSIVE,
};

/* The SMP outstanding on a port. */
enum sm_step {
	ST_IDLE,
	ST_NODE_INFO,
	ST_NODE_DESC,
	ST_PI_GET,
	ST_PI_SET_CFG,
	ST_PI_SET_ARMED,
	ST_PI_SET_ACTIVE,
	ST_LIGHT,		/* light sweep: PortInfo Get of an active port */
};

struct sm_port {
	enum sm_pstate state;
	enum sm_step step;
	uint64_t tid;
	uint64_t deadline_ns;
	unsigned int tries;		/* sends of the outstanding SMP */
	bool known;			/* guid/lid/desc valid */
	uint64_t guid;
	uint16_t lid;
	char desc[65];
	uint8_t smp[IB_MAD_BYTES];	/* the outstanding SMP, resent as is */
};

struct sm_lid {
	uint64_t guid;
	uint16_t lid;
};

/* An SA multicast group.  join[p] is switch port p's JoinState (0 = not a member). */
struct sm_group {
	uint8_t mgid[16];
	uint16_t mlid;
	uint32_t qkey;
	uint16_t pkey;
	uint8_t mtu, rate, sl, tclass, hop_limit, plt;
	uint32_t flow_label;
	bool permanent;			/* the IPoIB broadcast group */
	uint8_t *join;			/* [max_ports + 1] */
	uint64_t *member_guid;		/* [max_ports + 1]: the PortGID's GUID of each member */
};

struct sm_counters {
	uint64_t sent, received, timeouts, retries, bad, sa_requests, sa_errors;
};

struct sm {
	uint16_t lid;
	uint64_t prefix;
	uint64_t sweep_ns;
	int tfd;
	uint64_t next_sweep_ns;
	uint64_t sweeps;
	uint32_t tid_seq, psn;
	struct sm_port *ports;		/* [max_ports + 1], 0 unused */
	struct sm_lid *lids;
	unsigned int n_lids, cap_lids;
	uint16_t next_lid;		/* next LID of the plan, 0xc000 = none left */
	struct sm_group **groups;
	unsigned int n_groups, cap_groups;
	struct sm_counters c;
};

struct sw;

struct jbuf;

/* Build the frame around @mad and send it out of @port (captured outbound). */
void sm_send(struct sw *sw, unsigned int port, const struct ib_ud *a, const uint8_t *mad);
/* The switch port whose active end node has port GID prefix:@guid / LID @lid; 0 if none. */
unsigned int sm_port_by_guid(struct sw *sw, uint64_t guid, bool active_only);
unsigned int sm_port_by_lid(struct sw *sw, uint16_t lid, bool active_only);

/* sm_sa.c */
bool sa_init(struct sw *sw);
void sa_fini(struct sw *sw);
void sa_request(struct sw *sw, unsigned int in, const struct ib_ud *a, const uint8_t *mad);
void sa_port_gone(struct sw *sw, unsigned int port);
void sa_report_groups(struct sw *sw, struct jbuf *b);

#endif
