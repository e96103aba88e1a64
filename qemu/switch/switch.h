/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cnuas-switch: shared state of one fabric.
 *
 * One process is one fabric.  Devices connect to an AF_UNIX SOCK_SEQPACKET
 * socket; each accepted connection occupies a port slot (1..max_ports, the
 * lowest free one).  Port 0 is the switch's own management port: frames routed
 * there go to the subnet manager seam (sm.c).  One datagram is one frame.
 */
#ifndef CNUAS_SWITCH_H
#define CNUAS_SWITCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/uio.h>

#include "capture.h"
#include "fdb.h"
#include "qos.h"
#include "util.h"

/*
 * Limits and defaults of the command line (docs/switch.md).  Everything per
 * port is allocated at startup, queue rings included, so the two limits bound
 * the memory a switch takes before its first frame.
 */
#define SW_DEFAULT_PORTS	64
#define SW_PORTS_LIMIT		1024
#define SW_DEFAULT_QDEPTH	256
#define SW_QDEPTH_LIMIT		65536
#define SW_DEFAULT_AGING_SEC	300

/*
 * Frame size rules, docs/switch.md ("Forwarding"): 14 is the Ethernet header
 * (destination, source, EtherType), 9216 the usual jumbo-frame ceiling of
 * switches, 65536 the CnuasLink maximum.
 */
#define SW_ETH_MIN		14
#define SW_ETH_MAX		9216
#define SW_IB_MIN		8	/* the LRH */
#define SW_IB_MAX		9216
#define SW_LINK_MIN		8	/* destination + source gpu_id */
#define SW_LINK_MAX		65536

/*
 * Fixed so a flood of random source addresses cannot grow memory
 * (docs/switch.md: "The table holds 4096 entries").  SW_BATCH frames move
 * per recvmmsg/sendmmsg call, one syscall for many frames; the receive
 * buffer holds SW_BATCH frames of the mode's maximum.
 */
#define SW_FDB_CAPACITY		4096	/* learned MACs / gpu_ids */
#define SW_BATCH		32	/* frames per recvmmsg / sendmmsg */
/* Frames one inject request may carry (docs/switch.md, "Control protocol"). */
#define SW_INJECT_MAX_FRAMES	1024

/*
 * InfiniBand LID ranges: 0 reserved, 0x0001..0xBFFF unicast, 0xC000..0xFFFE
 * multicast, 0xFFFF permissive (addresses the switch itself).  LFT_NONE is
 * never a port number, since ports stop at SW_PORTS_LIMIT.
 */
#define IB_LID_UNICAST_END	0xc000	/* 0x0001..0xbfff unicast */
#define IB_LID_MCAST_FIRST	0xc000
#define IB_LID_MCAST_LAST	0xfffe
#define IB_LID_PERMISSIVE	0xffff
#define IB_MCAST_COUNT		(IB_LID_MCAST_LAST - IB_LID_MCAST_FIRST + 1)
#define LFT_NONE		0xffff

/* The CnuasLink broadcast gpu_id: floods, and is never learned as a source. */
#define GPU_ID_ALL		0xffffffffu

enum sw_mode { MODE_ETH, MODE_IB, MODE_LINK };

/* Why a frame was dropped; names are the counter names in the control protocol. */
enum drop_reason {
	DROP_RUNT,		/* shorter than the mode's minimum */
	DROP_OVERSIZE,		/* longer than the mode's maximum */
	DROP_FILTERED,		/* eth: destination learned on the ingress port */
	DROP_BAD_DLID,		/* ib: LID 0, no LFT entry, MLID without members */
	DROP_BAD_VCRC,		/* ib: VCRC does not match */
	DROP_BAD_LRH,		/* ib: LVer, LNH, PktLen, VL15 with GRH, SLID */
	DROP_NO_PORT,		/* ib: LFT points at a port nothing is connected to */
	DROP_LOOPBACK,		/* ib/link: destination is the ingress port itself */
	DROP_NO_SM,		/* ib: frame for the switch itself, no SM yet */
	DROP_UNKNOWN_GPU,	/* link: destination gpu_id not learned */
	DROP_QUEUE_FULL,	/* egress queue full (counted on the egress port) */
	DROP_PFC_VIOLATION,	/* sent into a full PFC queue (counted on the ingress port) */
	DROP_MAC_CONTROL,	/* eth: MAC Control (0x8808) other than PFC: link-local */
	DROP__COUNT
};

extern const char *const drop_names[DROP__COUNT];

/*
 * One connection's counters, or totals.  64-bit: they never wrap in practice.
 */
struct counters {
	uint64_t rx_frames, rx_bytes;
	uint64_t tx_frames, tx_bytes;
	uint64_t drops[DROP__COUNT];
	uint64_t pfc_sent;	/* PFC frames the switch made for this port (in tx too) */
};

enum port_state {
	PORT_FREE,	/* no connection, slot available */
	PORT_UP,	/* a device is connected */
	PORT_DOWN,	/* cable pulled: slot reserved, no connection accepted into it */
};

/*
 * A frame waiting in a port's egress queue: one malloc per frame, freed when it
 * is sent or the port closes.
 */
struct qframe {
	uint32_t len;
	uint16_t in;		/* ingress port, 0 when the switch made it */
	uint8_t data[];
};

struct port {
	enum port_state state;
	int fd;			/* -1 unless PORT_UP */
	uint64_t generation;	/* bumped on every new connection */
	struct counters c;
	struct qos_port qos;	/* egress queues, QoS config and counters (qos.h) */
	bool want_out;		/* EPOLLOUT armed */
	bool has_gpu;		/* link: gpu_id learned */
	uint32_t gpu_id;
	struct iovec *pend;	/* SW_BATCH outputs of the current read batch */
	unsigned int pend_n;
	bool touched;		/* listed in sw->touched */
};

struct ctl_client;

/*
 * The whole fabric; main() owns the one instance and every module gets a
 * pointer.  Single-threaded: only the epoll loop touches it.
 */
struct sw {
	enum sw_mode mode;
	unsigned int max_ports;
	unsigned int queue_depth;
	uint64_t aging_ns;
	int64_t clock_offset_ns;	/* advance_time test hook */
	uint64_t started_ns;

	int epfd, listen_fd, ctl_fd, sig_fd, parent_fd;
	const char *socket_path, *control_path;

	struct port *ports;		/* [0..max_ports]; slot 0 unused (the switch) */
	uint8_t *rxbuf;			/* SW_BATCH buffers of rxbuf_size */
	size_t rxbuf_size;		/* one frame + 1 byte to notice truncation */
	bool batching;			/* outputs collect in port->pend until flushed */
	unsigned int *touched;		/* ports with pending outputs */
	unsigned int n_touched;

	struct fdb macs;		/* eth: MAC -> port */
	struct fdb gpus;		/* link: gpu_id -> port */
	uint16_t *lft;			/* ib: LID -> port, LFT_NONE when unset */
	uint8_t **mcast;		/* ib: MLID index -> port bitmap, NULL when empty */

	/* eth QoS (qos.c): switch-wide settings, the timer, the frame's ingress */
	uint8_t dscp_map[QOS_DSCPS];
	unsigned int pfc_quanta;
	unsigned int link_mbps;		/* PFC quanta are 512 bit times at it */
	uint64_t ecn_seed, ecn_rng;
	int qos_tfd;
	bool qos_dirty;
	unsigned int cur_in;		/* ingress port of the frame being forwarded */

	struct capture cap;
	struct counters retired;	/* counters of connections that ended */
	uint64_t refused;		/* connections refused (no free slot) */
	uint64_t connections;		/* connections accepted */

	struct ctl_client **clients;
	unsigned int n_clients;

	/* ib: the subnet manager (sm.h); NULL with --no-sm or in other modes */
	bool no_sm;
	unsigned int sm_lid_start;
	unsigned int sm_sweep_ms;
	uint64_t subnet_prefix;
	struct sm *sm;

	FILE *log;
	bool stop;
};

/* The mode's size bounds (inclusive): shorter is a runt, longer oversize. */
static inline size_t sw_min_frame(const struct sw *sw)
{
	return sw->mode == MODE_ETH ? SW_ETH_MIN : sw->mode == MODE_IB ? SW_IB_MIN : SW_LINK_MIN;
}

static inline size_t sw_max_frame(const struct sw *sw)
{
	return sw->mode == MODE_ETH ? SW_ETH_MAX : sw->mode == MODE_IB ? SW_IB_MAX : SW_LINK_MAX;
}

/* The --mode spelling, also used in replies and errors. */
static inline const char *sw_mode_name(enum sw_mode m)
{
	return m == MODE_ETH ? "eth" : m == MODE_IB ? "ib" : "link";
}

/* port.c */
int port_accept(struct sw *sw);
void port_readable(struct sw *sw, unsigned int id, uint32_t events);
/* Take port @id down: close its connection, reserve the slot. */
void port_link_down(struct sw *sw, unsigned int id);
/* Counters of every connection, past and present. */
void sw_totals(const struct sw *sw, struct counters *out);
void port_writable(struct sw *sw, unsigned int id);
/* Arm or disarm EPOLLOUT (a full socket holds queued frames back). */
void port_want_out(struct sw *sw, unsigned int id, bool on);
void port_close(struct sw *sw, unsigned int id, const char *why);
/* Queue or send one frame out of port @id; counts tx or queue_full. */
void port_output(struct sw *sw, unsigned int id, const uint8_t *data, size_t len);
/*
 * Send a frame the caller built (the SM): never keeps @data, even inside a
 * read batch, where the port's collected outputs are flushed first so the
 * order holds.
 */
void port_output_now(struct sw *sw, unsigned int id, const uint8_t *data, size_t len);
/* Process a frame as if it arrived on port @id (capture, counters, forwarding). */
void port_ingress(struct sw *sw, unsigned int id, const uint8_t *data, size_t len,
		  size_t orig_len);

/* fwd.c: forwarding decisions and state updates for one ingress frame. */
void fwd_frame(struct sw *sw, unsigned int in, const uint8_t *data, size_t len);
void fwd_port_gone(struct sw *sw, unsigned int id);
bool fwd_init(struct sw *sw);
bool mcast_member(const struct sw *sw, unsigned int mlid, unsigned int port);
bool mcast_set(struct sw *sw, unsigned int mlid, unsigned int port, bool member);

/* control.c */
int ctl_accept(struct sw *sw);
void ctl_readable(struct sw *sw, unsigned int idx);
void ctl_writable(struct sw *sw, unsigned int idx);
void ctl_close_all(struct sw *sw);

/*
 * epoll tags: type in the top byte, the low 24 bits of the port's connection
 * generation next (so an event queued for a closed connection is not applied
 * to the next device that takes the same slot), the index below.
 */
enum ev_type { EV_LISTEN = 1, EV_CTL_LISTEN, EV_CTL, EV_PORT, EV_SIGNAL, EV_PARENT,
	       EV_TIMER, EV_QOS_TIMER };
#define EV_TAG(type, gen, idx)	(((uint64_t)(type) << 56) | (((uint64_t)(gen) & 0xffffff) << 32) | \
				 (uint64_t)(idx))
#define EV_TYPE(tag)		((unsigned int)((tag) >> 56))
#define EV_GEN(tag)		((uint32_t)(((tag) >> 32) & 0xffffff))
#define EV_IDX(tag)		((unsigned int)((tag) & 0xffffffffu))

#endif
