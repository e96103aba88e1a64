/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Egress QoS of an eth fabric (docs/switch.md, "QoS: priorities, PFC, ECN"):
 * eight egress queues per port, served round robin, an optional
 * drain rate, 802.1Qbb PFC sent above XOFF and honoured when a host sends
 * it, and ECN marking of ECT IPv4 packets above a threshold.  One timerfd
 * in the epoll loop drives drain, pause expiry and XOFF refresh.
 */
#ifndef CNUAS_QOS_H
#define CNUAS_QOS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QOS_PRIOS		8
#define QOS_DSCPS		64
/*
 * The nominal link speed of every port, by default the one cnuas_net reports
 * to ethtool (100000 Mb/s): one PFC quantum is 512 bit times at it, 5.12 ns.
 * qos_set's link_mbps changes it (tests slow it down so pauses last long
 * enough to observe).
 */
#define QOS_DEFAULT_LINK_MBPS	100000
#define QOS_LINK_MBPS_MAX	400000
#define QOS_DEFAULT_QUANTA	0xffff	/* 335.5 us at 100 Gb/s */
#define QOS_DRAIN_MBPS_MAX	400000

/* The PFC frame (802.1Qbb / 802.3 annex 31D), padded to 60 bytes. */
#define PFC_FRAME_LEN		60
#define PFC_MIN_LEN		34	/* header, opcode, vector, 8 quanta */
#define ETH_P_MAC_CONTROL	0x8808
#define MAC_CTRL_OP_PFC		0x0101

enum ecn_mode { ECN_OFF, ECN_STEP, ECN_RED };

/* Thresholds of one egress queue, in frames queued (docs/switch.md). */
struct qos_prio_cfg {
	unsigned int xoff, xon;
	enum ecn_mode ecn;
	unsigned int ecn_min, ecn_max;	/* step marks at >= ecn_min */
	unsigned int ecn_prob;		/* red: percent at ecn_max, 1..100 */
};

/* Counters of one port and priority; they belong to the connection. */
struct qos_prio_ctr {
	uint64_t rx_frames, rx_bytes;
	uint64_t tx_frames, tx_bytes;
	uint64_t pause_sent, resume_sent;	/* PFC frames sent to this port */
	uint64_t pause_received, resume_received;
	uint64_t pause_ns;		/* egress to this port held by its PFC */
	uint64_t ecn_marked;
	uint64_t queue_full;		/* egress: this queue was full */
	uint64_t pfc_violation;		/* ingress: sent into a full PFC queue */
};

struct qframe;

/* One egress queue: a ring of queue_depth frames, allocated on first use. */
struct qos_ring {
	struct qframe **q;
	unsigned int head, len;
	bool xoff;		/* above XOFF, not yet back to XON */
	uint8_t *paused_in;	/* ingress ports this queue holds paused */
};

struct qos_port {
	/* configuration: stays with the slot, like the LFT */
	uint64_t drain_bps;	/* 0 = as fast as the socket takes */
	bool hold;		/* test hook: egress stopped */
	uint8_t pfc_enable;	/* bit N: PFC on priority N */
	struct qos_prio_cfg cfg[QOS_PRIOS];
	/* state */
	struct qos_ring ring[QOS_PRIOS];
	unsigned int q_total;
	unsigned int rr;		/* round robin: the priority looked at first */
	uint64_t next_tx_ns;		/* drain: earliest next departure */
	uint64_t paused_until[QOS_PRIOS];	/* egress held by the host's PFC */
	uint64_t pause_start[QOS_PRIOS];	/* 0 = not paused */
	unsigned int pause_refs[QOS_PRIOS];	/* queues holding this port paused */
	uint64_t refresh_at[QOS_PRIOS];		/* next XOFF refresh */
	struct qos_prio_ctr c[QOS_PRIOS];
};

struct sw;
struct jbuf;
struct req;

bool qos_init(struct sw *sw);
/* The pause time of @quanta at the nominal link speed, ns. */
uint64_t qos_pause_ns(const struct sw *sw, unsigned int quanta);
void qos_fini(struct sw *sw);
/* The frame's priority: VLAN PCP, else DSCP through the map, else 0. */
unsigned int qos_classify(const struct sw *sw, const uint8_t *f, size_t len);
/*
 * eth ingress past the size rules: true when the frame was MAC Control
 * (consumed: a PFC frame is honoured), else its priority's rx is counted.
 */
bool qos_rx(struct sw *sw, unsigned int in, const uint8_t *f, size_t len);
/* Frames for port @id must go through its queues (rate, pause, backlog). */
bool qos_holds(const struct sw *sw, unsigned int id);
/* Copy a frame into its priority queue: drops, ECN mark, XOFF. */
void qos_enqueue(struct sw *sw, unsigned int id, const uint8_t *data, size_t len);
/* Send what may leave now; arms EPOLLOUT only when the socket is full. */
void qos_service(struct sw *sw, unsigned int id);
/* A frame left port @id by a direct send. */
void qos_count_tx(struct sw *sw, unsigned int id, const uint8_t *data, size_t len);
void qos_port_up(struct sw *sw, unsigned int id);
void qos_port_gone(struct sw *sw, unsigned int id);
void qos_timer(struct sw *sw);
/* Re-arm the timer if anything changed since (main loop, once per wakeup). */
void qos_arm(struct sw *sw);

/* control ops (control_ops.c's table) */
bool op_qos_set(struct req *r);
bool op_qos_get(struct req *r);
bool op_qos_stats(struct req *r);

#endif
