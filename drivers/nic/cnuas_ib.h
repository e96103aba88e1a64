/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * cnuas_ib: an RDMA device (RoCEv2 reliable connected transport in
 * software) on the PCI function that cnuas_net owns.  Objects, limits and
 * the functions the files of the module share.
 *
 * Files by role (as rxe splits them):
 *   cnuas_ib_main.c    auxiliary driver, ib_device registration, attributes
 *   cnuas_ib_verbs.c   the ib_device_ops table and the thin verbs
 *   cnuas_ib_qp.c      QP objects, state machine, post_send/post_recv, the
 *                      per-QP engine that runs the three roles below
 *   cnuas_ib_req.c     requester: work requests -> request packets
 *   cnuas_ib_resp.c    responder: request packets -> data, ACKs, responses
 *   cnuas_ib_comp.c    completer: ACKs/responses -> completions, retries
 *   cnuas_ib_cq.c      completion queues (a ring user space maps)
 *   cnuas_ib_srq.c     shared receive queues
 *   cnuas_ib_mr.c      memory regions, key lookup, checked copies
 *   cnuas_ib_net.c     frames: building, ICRC, transmit, loopback,
 *                      receive dispatch
 *   cnuas_ib_mcast.c   multicast groups and delivery to their QPs
 *   cnuas_ib_icrc.c    the invariant CRC
 *   cnuas_ib_cc.c      RoCEv2 congestion control: ECN, CNPs, DCQCN
 *   cnuas_ib_opcode.c  the opcode table (cnuas_ib_hdr.h: header layouts)
 *
 * Concurrency: everything a QP's transport does (sending, receiving,
 * completing, retrying) runs in that QP's engine with qp->lock held, so
 * the transport state has one writer.  post_send/post_recv append to the
 * queues under their own locks; the receive path (softirq) queues frames.
 * Both then run the engine inline when they can (cnuas_ib_qp_run), else
 * kick the QP's work item, which timers and transmit wake-ups use too.
 */
#ifndef CNUAS_IB_H
#define CNUAS_IB_H

#include <linux/auxiliary_bus.h>
#include <linux/hrtimer.h>
#include <linux/in6.h>
#include <linux/iosys-map.h>
#include <linux/netdevice.h>
#include <linux/prandom.h>
#include <linux/refcount.h>
#include <linux/skbuff.h>
#include <linux/spinlock.h>
#include <linux/timer.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>

#include "cnuas_net.h"
#include "cnuas_ib_hdr.h"
#include "uapi/cnuas_ib_abi.h"

#define CNUAS_IB_DRV_NAME	"cnuas_ib"
#define CNUAS_IB_DRV_VERSION	"0.2.0"

/* Datasheet table 4.1: the attributes the device reports. */
#define CNUAS_IB_FW_VER			0x000100ULL	/* shown as 0.1.0 */
#define CNUAS_IB_HW_VER			1
#define CNUAS_IB_VENDOR_ID		0x1af4
#define CNUAS_IB_VENDOR_PART_ID		0x10f0
#define CNUAS_IB_MAX_QP			256
#define CNUAS_IB_MAX_QP_WR		4096
#define CNUAS_IB_MAX_CQ			256
#define CNUAS_IB_MAX_CQE		4096
#define CNUAS_IB_MAX_MR			256
#define CNUAS_IB_MAX_PD			64
#define CNUAS_IB_MAX_SGE		16
#define CNUAS_IB_MAX_RD_ATOM		16
#define CNUAS_IB_MAX_PKEYS		1
#define CNUAS_IB_MAX_MCAST_GRP		256
#define CNUAS_IB_MAX_MCAST_QP_ATTACH	256
#define CNUAS_IB_GID_TBL_ROCE		1024
#define CNUAS_IB_GID_TBL_IB		1
/* Native IB: the GID prefix until the SM sets one (IBA: link-local). */
#define CNUAS_IB_DEFAULT_SUBNET_PREFIX	0xfe80000000000000ULL
#define CNUAS_IB_MAX_MTU		IB_MTU_4096
#define CNUAS_IB_MAX_MSG_SZ		0x7fffffffU	/* 2 GiB - 1 */
#define CNUAS_IB_ACTIVE_SPEED		IB_SPEED_EDR
#define CNUAS_IB_ACTIVE_WIDTH		IB_WIDTH_4X

/* Not in the table; our own choices. */
#define CNUAS_IB_MAX_AH			4096
/*
 * Shared receive queues: table 4.1 is silent on them (it names neither a
 * count nor a depth nor an SGE limit); these match the QP's limits.
 */
#define CNUAS_IB_MAX_SRQ		256
#define CNUAS_IB_MAX_SRQ_WR		4096
#define CNUAS_IB_MAX_SRQ_SGE		16
#define CNUAS_IB_MAX_INLINE		256
#define CNUAS_IB_ACK_DELAY		15
/* Request packets in flight (unacknowledged) per QP. */
#define CNUAS_IB_WINDOW			256
/* Ask for an ACK at least every this many packets of a long message. */
#define CNUAS_IB_ACKREQ_EVERY		32
/* Packets one run of a QP's engine handles before it yields the CPU. */
#define CNUAS_IB_BUDGET			64
/* Frames waiting in one QP queue before the receive path drops. */
#define CNUAS_IB_RXQ_MAX	4096
/* Frames waiting for local (loopback) delivery before they are dropped. */
#define CNUAS_IB_LOOPQ_MAX	4096
/* BTH destination QP of a multicast UD packet (IBTA 9.2.5). */
#define CNUAS_IB_MCAST_QPN	0xffffffU
/* Shortest retransmit timeout we arm, whatever the QP asks for. */
#define CNUAS_IB_MIN_RETX_MS		10

/* Counters of the port, shown in ports/1/hw_counters. */
enum cnuas_ib_stat {
	CNUAS_STAT_SENT_PKTS,
	CNUAS_STAT_RCVD_PKTS,
	CNUAS_STAT_RCVD_ICRC_ERR,
	CNUAS_STAT_RCVD_DROP,
	CNUAS_STAT_RETRANSMITS,
	CNUAS_STAT_RETRY_EXCEEDED,
	CNUAS_STAT_RNR_RETRY_EXCEEDED,
	CNUAS_STAT_RNR_NAK_SENT,
	CNUAS_STAT_RNR_NAK_RCVD,
	CNUAS_STAT_SEQ_NAK_SENT,
	CNUAS_STAT_SEQ_NAK_RCVD,
	CNUAS_STAT_DUP_REQ,
	CNUAS_STAT_REM_ACCESS_ERR,
	CNUAS_STAT_REM_INV_REQ,
	CNUAS_STAT_ACKS_SENT,
	CNUAS_STAT_TX_BUSY,
	CNUAS_STAT_RX_DROP_INJECTED,
	CNUAS_STAT_RCVD_QKEY_ERR,
	CNUAS_STAT_LOOPBACK_PKTS,
	CNUAS_STAT_RCVD_MCAST_PKTS,
	/* native IB data path (names are ABI: only ever appended) */
	CNUAS_STAT_RCVD_VCRC_ERR,
	CNUAS_STAT_TX_PORT_NOT_ACTIVE,
	CNUAS_STAT_SENT_KERNEL_PKTS,	/* of sent_pkts, kernel QPs' */
	/* RoCEv2 congestion control, mlx5's names (cnuas_ib_cc.c) */
	CNUAS_STAT_NP_ECN_MARKED,
	CNUAS_STAT_NP_CNP_SENT,
	CNUAS_STAT_RP_CNP_HANDLED,
	CNUAS_STAT_RP_CNP_IGNORED,
	/*
	 * Why a received frame was dropped, one counter per reason
	 * (docs/devices.md, "cnuas_ib: receive drop reasons"); the first
	 * four are also in rcvd_drop, as before they existed.
	 */
	CNUAS_STAT_RCVD_HDR_ERR,
	CNUAS_STAT_RCVD_PKEY_ERR,
	CNUAS_STAT_RCVD_QPN_ERR,
	CNUAS_STAT_RCVD_RXQ_FULL,
	CNUAS_STAT_RCVD_STATE_ERR,
	CNUAS_STAT_RCVD_SRC_ERR,
	CNUAS_STAT_RCVD_PSN_ERR,
	CNUAS_STAT_RCVD_GHOST_RESP,
	CNUAS_STAT_RCVD_ADDR_ERR,
	CNUAS_STAT_RCVD_MCAST_NO_MEMBER,
	CNUAS_STAT_RCVD_NO_RECV,
	CNUAS_STAT_NUM,
};

/**
 * struct cnuas_ib_port - the port's native-InfiniBand state (link_layer=ib)
 *
 * What the subnet manager sets through the SMA (cnuas_ib_mad.c, PortInfo
 * Set) and the link reports; docs/devices.md, "cnuas_ib in native
 * InfiniBand mode".  Unused in RoCE mode.  Readers in the data path take
 * @lock or use cnuas_ib_port_lid()/cnuas_ib_port_active().
 * @lock: protects everything below
 * @lid: the port's LID, 0 until the SM assigns one
 * @sm_lid, @sm_sl: where the master SM is
 * @lmc: LID mask control (we take only 0)
 * @state: enum ib_port_state (DOWN, INIT, ARMED, ACTIVE)
 * @phys_state: IB_PORT_PHYS_STATE_* (POLLING while the link is down)
 * @subnet_prefix: GID prefix, big-endian as on the wire
 * @subnet_timeout, @neighbor_mtu, @init_type_reply: PortInfo fields kept
 * @mkey, @mkey_lease, @mkey_prot: the management key and its protection
 * @cap_mask: PortInfo CapabilityMask (IB_PORT_* bits), modify_port edits it
 * @mkey_violations, @pkey_violations, @qkey_violations: PortInfo counters
 */
struct cnuas_ib_port {
	spinlock_t lock;	/* see above */
	u16 lid;
	u16 sm_lid;
	u8 sm_sl;
	u8 lmc;
	u8 state;
	u8 phys_state;
	__be64 subnet_prefix;
	u8 subnet_timeout;
	u8 neighbor_mtu;
	u8 init_type_reply;
	u64 mkey;
	u16 mkey_lease;
	u8 mkey_prot;
	u32 cap_mask;
	u16 mkey_violations;
	u16 pkey_violations;
	u16 qkey_violations;
};

/**
 * struct cnuas_ib_dev - one RDMA device on one cnuas-vnic function
 * @ibdev: the ib_core device (first: ib_alloc_device)
 * @nadev: the auxiliary device of cnuas_net
 * @net: cnuas_net's handle
 * @netdev: the Ethernet net_device the GIDs come from
 * @layer: link layer the port runs
 * @qps: QP number -> QP (RCU-safe lookups from the receive path)
 * @mrs: key index -> MR
 * @next_qpn: cyclic allocation hint for QP numbers
 * @key_gen: the variant byte of the next MR key
 * @n_*: objects in use, against the table 4.1 limits
 * @atomic_lock: makes atomics atomic with respect to each other
 * @txwait_lock: protects @txwait
 * @txwait: QPs waiting for room in cnuas_net's transmit queue
 * @tx_gen: counts tx_wake calls (under @txwait_lock), closes the race
 *	    between a full queue and a wake-up that came just before
 * @wq: runs the QP engines
 * @stats: port counters
 * @node_guid: EUI-64 from the MAC
 * @drop_lock: protects @drop_state, @drop_gen and @drop_drawn
 * @drop_state: the injected receive loss's generator (cnuas_ib_net.c)
 * @drop_gen: the parameter generation @drop_state was seeded for
 * @drop_drawn: frames drawn for since that seeding (rx_drop_frames)
 * @loop_q: frames to our own addresses, delivered by @loop_work
 * @loop_work: feeds @loop_q to the receive path (not inline: the sender
 *	       holds its QP's lock, and the receiver may be the same QP);
 *	       a BH work item on system_bh_wq
 * @mcast_lock: protects changes to @mcast_groups and @n_mcast_grp
 * @mcast_groups: struct cnuas_ib_mcg list (cnuas_ib_mcast.c), RCU readers
 * @n_mcast_grp: groups in @mcast_groups
 * @port: native-InfiniBand port state (link_layer=ib only)
 * @pma_base: the counters' values when a PMA Set last cleared them
 * @trap_agent: IB mode: the QP0 MAD agent traps are sent through
 * @trap_tid: low half of the next trap's transaction ID
 */
struct cnuas_ib_dev {
	struct ib_device ibdev;
	struct cnuas_net_adev *nadev;
	struct cnuas_net *net;
	struct net_device *netdev;
	enum cnuas_link_layer layer;
	struct xarray qps;
	u32 next_qpn;
	struct xarray mrs;
	u32 next_mr;
	u8 key_gen;
	atomic_t n_qp, n_cq, n_mr, n_pd, n_ah, n_srq;
	spinlock_t atomic_lock;	/* see above */
	spinlock_t txwait_lock;	/* see above */
	struct list_head txwait;
	u32 tx_gen;
	struct workqueue_struct *wq;
	atomic64_t stats[CNUAS_STAT_NUM];
	__be64 node_guid;
	spinlock_t drop_lock;	/* see above */
	struct rnd_state drop_state;
	u32 drop_gen;
	u32 drop_drawn;
	struct sk_buff_head loop_q;
	struct work_struct loop_work;
	spinlock_t mcast_lock;	/* see above */
	struct list_head mcast_groups;
	u32 n_mcast_grp;
	struct cnuas_ib_port port;
	struct cnuas_net_rdma_counters pma_base;
	struct ib_mad_agent *trap_agent;
	atomic_t trap_tid;
};

static inline struct cnuas_ib_dev *to_cdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct cnuas_ib_dev, ibdev);
}

/* Is the port native InfiniBand (link_layer=ib) rather than RoCEv2? */
static inline bool cnuas_ib_is_ib(const struct cnuas_ib_dev *dev)
{
	return dev->layer == CNUAS_LL_IB;
}

/* IB mode: the port's LID now (0: none assigned yet). */
static inline u16 cnuas_ib_port_lid(struct cnuas_ib_dev *dev)
{
	return READ_ONCE(dev->port.lid);
}

/* IB mode: may data (anything but QP0) go out?  IBA: only when ACTIVE. */
static inline bool cnuas_ib_port_active(struct cnuas_ib_dev *dev)
{
	return READ_ONCE(dev->port.state) == IB_PORT_ACTIVE;
}

static inline void cnuas_stat_inc(struct cnuas_ib_dev *dev,
				  enum cnuas_ib_stat s)
{
	atomic64_inc(&dev->stats[s]);
}

struct cnuas_ib_ucontext {
	struct ib_ucontext ibuc;
};

struct cnuas_ib_pd {
	struct ib_pd ibpd;
};

static inline struct cnuas_ib_pd *to_cpd(struct ib_pd *pd)
{
	return container_of(pd, struct cnuas_ib_pd, ibpd);
}

/**
 * struct cnuas_ib_av - where a packet goes (from an AH or a QP's path)
 * @family: AF_INET or AF_INET6 (RoCE); 0 in native IB mode
 * @saddr, @daddr: IPv4 addresses are IPv4-mapped; in native IB mode the
 *		   SGID and DGID of the GRH (when @grh)
 * @dmac: next hop's MAC, resolved by ib_core (RoCE)
 * @tclass, @hop_limit, @flow_label: from the GRH attributes
 * @dlid, @sl, @path_bits: native IB: the LRH's DLID and SL, the source
 *			   path bits (LMC 0: none take effect)
 * @grh: native IB: send a GRH (LNH 0b11)
 */
struct cnuas_ib_av {
	int family;
	struct in6_addr saddr;
	struct in6_addr daddr;
	u8 dmac[ETH_ALEN];
	u8 tclass;
	u8 hop_limit;
	u32 flow_label;
	u16 dlid;
	u8 sl;
	u8 path_bits;
	bool grh;
};

struct cnuas_ib_ah {
	struct ib_ah ibah;
	struct cnuas_ib_av av;
};

static inline struct cnuas_ib_ah *to_cah(struct ib_ah *ah)
{
	return container_of(ah, struct cnuas_ib_ah, ibah);
}

/* An mmap entry that owns a vmalloc_user() buffer until the last unmap. */
struct cnuas_ib_mmap {
	struct rdma_user_mmap_entry rdma;
	void *buf;
};

/**
 * struct cnuas_ib_cq - a completion queue
 * @ring: header + entries; vmalloc_user(), mapped by user CQs
 * @cqe: the entries, after the ring header
 * @kqp: kernel CQs: the QP of each slot, for ib_wc.qp
 * @entries: power of two
 * @lock: protects producing, kernel polling and @notify
 * @notify: armed IB_CQ_SOLICITED / IB_CQ_NEXT_COMP, 0 when not
 * @overflow: the ring was full once; the CQ is in error
 * @mmap: the user mapping's entry (user CQs), owns @ring
 */
struct cnuas_ib_cq {
	struct ib_cq ibcq;
	struct cnuas_ib_cq_ring_hdr *ring;
	struct cnuas_ib_cqe *cqe;
	struct ib_qp **kqp;
	u32 entries;
	spinlock_t lock;	/* see above */
	u8 notify;
	bool overflow;
	struct cnuas_ib_mmap *mmap;
};

static inline struct cnuas_ib_cq *to_ccq(struct ib_cq *cq)
{
	return container_of(cq, struct cnuas_ib_cq, ibcq);
}

enum cnuas_mr_type {
	CNUAS_MR_USER,		/* pinned user pages (ib_umem) */
	CNUAS_MR_DMA,		/* kernel DMA MR: addresses are kernel VAs */
	CNUAS_MR_DMABUF,	/* a DMA-BUF (e.g. accelerator memory), vmapped */
};

/**
 * struct cnuas_ib_mr - a memory region
 * @type: what backs it
 * @access: IB_ACCESS_* it was registered with
 * @iova, @length: the range keys give access to (user and DMA-BUF MRs)
 * @umem: pinned pages (user MRs), the pinned DMA-BUF umem (DMA-BUF MRs)
 * @map: kernel mapping of the DMA-BUF's registered range (DMA-BUF MRs)
 * @pages: page of each PAGE_SIZE step from the start of @umem
 * @npages: entries in @pages
 * @page_off: offset of @iova in pages[0] (user MRs), in the DMA-BUF (DMA-BUF MRs)
 * @ref: lookups in progress + 1; dereg waits for it to drop
 * @done: completed when @ref drops to zero
 * @rcu: freed after a grace period: lookups run under RCU
 */
struct cnuas_ib_mr {
	struct ib_mr ibmr;
	enum cnuas_mr_type type;
	int access;
	u64 iova;
	u64 length;
	struct ib_umem *umem;
	struct iosys_map map;
	struct page **pages;
	unsigned long npages;
	u64 page_off;
	refcount_t ref;
	struct completion done;
	struct rcu_head rcu;
};

static inline struct cnuas_ib_mr *to_cmr(struct ib_mr *mr)
{
	return container_of(mr, struct cnuas_ib_mr, ibmr);
}

/* A scatter/gather element as the queues keep it. */
struct cnuas_ib_sge {
	u64 addr;
	u32 length;
	u32 lkey;
};

enum cnuas_swqe_state {
	CNUAS_SWQE_POSTED,	/* not started */
	CNUAS_SWQE_SENDING,	/* some packets out */
	CNUAS_SWQE_WAIT,	/* all out; waiting for an ACK or response */
	CNUAS_SWQE_DONE,	/* completed (status says how) */
};

/**
 * struct cnuas_ib_swqe - a send work request and its progress
 * @wr_id, @opcode, @send_flags, @imm: from the work request
 * @remote_addr, @rkey, @compare_add, @swap: RDMA / atomic operands
 * @av, @remote_qpn, @remote_qkey: UD destination (copied from the AH)
 * @num_sge, @sge: local buffers (@sge points into the QP's array)
 * @inline_data: the bytes of an IB_SEND_INLINE request
 * @length: total bytes
 * @state: progress
 * @status: how it completed
 * @first_psn, @last_psn: PSNs the request occupies (reads: the responses)
 * @sent: bytes packetised so far
 * @resp_psn, @resp_off: next read response expected and where it lands
 */
struct cnuas_ib_swqe {
	u64 wr_id;
	enum ib_wr_opcode opcode;
	int send_flags;
	__be32 imm;
	u64 remote_addr;
	u32 rkey;
	u64 compare_add;
	u64 swap;
	struct cnuas_ib_av av;
	u32 remote_qpn;
	u32 remote_qkey;
	u32 num_sge;
	struct cnuas_ib_sge *sge;
	u8 *inline_data;
	u32 length;
	enum cnuas_swqe_state state;
	enum ib_wc_status status;
	u32 first_psn;
	u32 last_psn;
	u32 sent;
	u32 resp_psn;
	u32 resp_off;
};

/* A receive work request. */
struct cnuas_ib_rwqe {
	u64 wr_id;
	u32 num_sge;
	u32 length;
	struct cnuas_ib_sge *sge;
};

/**
 * struct cnuas_ib_srq - a shared receive queue
 * @dev: the device
 * @lock: protects the ring and @limit; taken by post_srq_recv, modify and
 *	  query, and by the engine of every QP that receives from the SRQ
 *	  (with that QP's lock held: qp->lock, then srq->lock)
 * @rq: @size slots (power of two), the kernel's ring (@ring NULL)
 * @sge: the SGE lists of the slots, @max_sge each
 * @ring: a user SRQ's ring in user memory instead (@rq NULL): the
 *	  provider posts into slots of @slot_size bytes and the producer
 *	  index (uapi/cnuas_ib_abi.h)
 * @mmap: owns @ring once it is mapped
 * @slot_size: bytes per slot of @ring
 * @ring_bad: @ring's producer index was nonsense once: the SRQ is in
 *	      error (IB_EVENT_SRQ_ERR raised) and gives no more receives
 * @max_sge: SGEs a receive may have
 * @head: next slot to post (free-running; kernel ring only)
 * @tail: next slot to take (free-running)
 * @limit: the armed SRQ limit, 0 when not armed
 */
struct cnuas_ib_srq {
	struct ib_srq ibsrq;
	struct cnuas_ib_dev *dev;
	spinlock_t lock;	/* see above */
	struct cnuas_ib_rwqe *rq;
	struct cnuas_ib_sge *sge;
	struct cnuas_ib_rq_ring_hdr *ring;
	struct cnuas_ib_mmap *mmap;
	u32 slot_size;
	bool ring_bad;
	u32 size;
	u32 max_sge;
	u32 head;
	u32 tail;
	u32 limit;
};

static inline struct cnuas_ib_srq *to_csrq(struct ib_srq *srq)
{
	return container_of(srq, struct cnuas_ib_srq, ibsrq);
}

/* What the responder remembers of a read or atomic, for duplicates. */
struct cnuas_ib_rd_hist {
	bool valid;
	bool atomic;
	u32 psn;		/* first PSN */
	u32 npkts;		/* PSNs it occupies */
	u64 va;
	u32 rkey;
	u32 len;
	u64 orig;		/* atomic: the value returned */
};

/* A read response being generated. */
struct cnuas_ib_rd_gen {
	bool active;
	u32 first_psn;		/* PSN of the read request */
	u32 psn;		/* PSN of the next response packet */
	u32 last_psn;
	u64 va;			/* where the next packet's data starts */
	u32 rkey;
	u32 left;		/* bytes still to send */
	u32 total;
};

/**
 * struct cnuas_ib_cc - a QP's congestion control state (cnuas_ib_cc.c)
 * @lock: protects the reaction point's fields (taken by the engine and by
 *	  the receive path, both with bottom halves off)
 * @limited: the QP is paced (its rate is below line rate); read without
 *	     @lock on the fast path
 * @rate, @target: DCQCN's current and target rates Rc, Rt in Mb/s
 * @alpha: DCQCN's congestion estimate in 1/1024 units
 * @t_stage, @bc_stage: increase events of the timer and the byte counter
 *			since the last cut
 * @bytes: bytes sent since the byte counter's last event
 * @tokens: the pacing bucket in bytes (negative: in debt)
 * @refill_ns, @cut_ns, @alpha_ns, @timer_ns: when the bucket was last
 *	filled, the rate last cut, alpha last updated, the increase timer
 *	last fired (ktime_get_ns())
 * @pace_timer: kicks the engine when the bucket is out of debt
 * @cnp_sent, @cnp_ns: notification point: when this QP last sent a CNP
 *		       (under qp->lock)
 */
struct cnuas_ib_cc {
	spinlock_t lock;	/* see above */
	bool limited;
	u32 rate;
	u32 target;
	u32 alpha;
	u32 t_stage;
	u32 bc_stage;
	u64 bytes;
	s64 tokens;
	u64 refill_ns;
	u64 cut_ns;
	u64 alpha_ns;
	u64 timer_ns;
	struct hrtimer pace_timer;
	bool cnp_sent;
	u64 cnp_ns;
};

/* Frames kept for retransmission: skb->cb holds this. */
struct cnuas_txcb {
	u32 psn;		/* PSN of the frame */
	u32 end_psn;		/* last PSN it stands for (reads: responses) */
	u32 wqe;		/* sq index of its work request */
};

static inline struct cnuas_txcb *cnuas_txcb(struct sk_buff *skb)
{
	BUILD_BUG_ON(sizeof(struct cnuas_txcb) > sizeof(skb->cb));
	return (struct cnuas_txcb *)skb->cb;
}

/**
 * struct cnuas_ib_qp - a queue pair and the state of its transport
 *
 * The send queue is a ring of @sq_size (power of two) slots with three
 * free-running indices: @sq_head (next to post), @sq_req (next the
 * requester starts), @sq_comp (oldest not yet completed).  The receive
 * queue has @rq_head (next to post) and @rq_tail (next to consume).
 *
 * The last @rq_max_sge entries of @rq_sge (after the ring's) hold the SGE
 * list of the one receive the QP has taken, copied out of its slot: a slot
 * is free for post_recv (or, in an SRQ, for other QPs' receives) as soon
 * as it is taken.  A QP created with an SRQ (@srq) has no receive queue of
 * its own (@rq NULL, @rq_size 0): it takes its receives from the SRQ.
 *
 * A user RC or UD QP without an SRQ whose provider asks for it has its
 * receive queue in @rq_ring instead (uapi/cnuas_ib_abi.h; @rq NULL): the
 * provider posts by writing slots of @rq_slot_size bytes and the ring's
 * producer index, @rq_tail is what the kernel has consumed, and @rq_sge
 * holds only the taken receive's SGEs.  @rq_mmap owns the ring once the
 * ring is mapped.
 */
struct cnuas_ib_qp {
	struct ib_qp ibqp;
	struct cnuas_ib_dev *dev;
	enum ib_qp_type type;
	bool user;
	bool sig_all;

	/* the engine: all below is under @lock */
	spinlock_t lock;	/* the transport state */
	struct work_struct work;
	bool dying;
	enum ib_qp_state state;
	struct ib_qp_attr attr;
	struct cnuas_ib_av av;
	u16 sport;
	u32 pmtu;
	struct cnuas_ib_cq *scq;
	struct cnuas_ib_cq *rcq;

	/* send queue */
	spinlock_t sq_lock;	/* posting */
	struct cnuas_ib_swqe *sq;
	struct cnuas_ib_sge *sq_sge;
	u8 *sq_inline;
	u32 sq_size;
	u32 sq_max_sge;
	u32 max_inline;
	u32 sq_head;
	u32 sq_req;
	u32 sq_comp;

	/* requester / completer */
	struct {
		u32 psn;		/* next PSN to use */
		u32 una;		/* oldest PSN not acknowledged */
		u32 rd_out;		/* reads/atomics outstanding */
		int retry_left;
		int rnr_left;
		bool rewind;		/* resend stored frames from rewind_psn */
		u32 rewind_psn;
		bool timeout;		/* the retransmit timer fired */
		unsigned long progress_at; /* jiffies of the last ACK progress */
		bool rnr_wait;		/* waiting for the RNR timer */
		bool rd_retried;	/* asked again for rd_retry_psn ... */
		u32 rd_retry_psn;	/* ... and wait for it, not again */
		u32 pkts_since_ack;
	} req;
	struct sk_buff_head retx_q;
	struct timer_list retx_timer;
	struct timer_list rnr_timer;

	/* receive queue */
	struct cnuas_ib_srq *srq;
	bool last_wqe_sent;	/* IB_EVENT_QP_LAST_WQE_REACHED raised */
	spinlock_t rq_lock;	/* posting and consuming */
	struct cnuas_ib_rwqe *rq;
	struct cnuas_ib_sge *rq_sge;
	struct cnuas_ib_sge *rq_held;	/* the taken receive's SGEs */
	u32 rq_size;
	u32 rq_max_sge;
	u32 rq_head;
	u32 rq_tail;
	struct cnuas_ib_rq_ring_hdr *rq_ring;
	struct cnuas_ib_mmap *rq_mmap;
	u32 rq_slot_size;

	/* responder */
	struct {
		u32 epsn;		/* next PSN expected */
		u32 msn;
		bool nak_sent;		/* sequence NAK sent for @epsn */
		u32 in_op;		/* CNUAS_OP_SEND/WRITE mid-message, or 0 */
		bool have_wqe;		/* @wqe holds a consumed receive */
		struct cnuas_ib_rwqe wqe;
		u32 recv_off;		/* bytes of the current send so far */
		u64 wr_va;		/* the current RDMA write */
		u32 wr_rkey;
		u32 wr_left;
		u32 wr_len;
		bool ack_pending;
		struct cnuas_ib_rd_hist hist[CNUAS_IB_MAX_RD_ATOM];
		u32 hist_next;
		struct cnuas_ib_rd_gen rd;
	} resp;

	/* frames from the wire, waiting for the engine */
	struct sk_buff_head req_q;	/* requests (we are the responder) */
	struct sk_buff_head resp_q;	/* ACKs and responses (requester) */

	bool tx_blocked;		/* on dev->txwait */
	struct list_head txwait;

	struct cnuas_ib_cc cc;		/* congestion control */
};

static inline struct cnuas_ib_qp *to_cqp(struct ib_qp *qp)
{
	return container_of(qp, struct cnuas_ib_qp, ibqp);
}

static inline struct cnuas_ib_swqe *cnuas_swqe(struct cnuas_ib_qp *qp,
					       u32 idx)
{
	return &qp->sq[idx & (qp->sq_size - 1)];
}

static inline bool cnuas_qp_is_rc(struct cnuas_ib_qp *qp)
{
	return qp->type == IB_QPT_RC;
}

/* cnuas_ib_main.c */
int cnuas_ib_query_device(struct ib_device *ibdev, struct ib_device_attr *a,
			  struct ib_udata *udata);
int cnuas_ib_query_port(struct ib_device *ibdev, u32 port,
			struct ib_port_attr *a);
int cnuas_ib_get_port_immutable(struct ib_device *ibdev, u32 port,
				struct ib_port_immutable *im);
enum rdma_link_layer cnuas_ib_get_link_layer(struct ib_device *ibdev,
					     u32 port);
void cnuas_ib_get_fw_str(struct ib_device *ibdev, char *str);
extern const struct attribute_group cnuas_ib_attr_group;

/* cnuas_ib_verbs.c */
extern const struct ib_device_ops cnuas_ib_dev_ops;
int cnuas_ib_av_from_attr(struct cnuas_ib_dev *dev, struct cnuas_ib_av *av,
			  const struct rdma_ah_attr *attr);

/* cnuas_ib_cq.c */
int cnuas_ib_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		       struct uverbs_attr_bundle *attrs);
int cnuas_ib_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int cnuas_ib_poll_cq(struct ib_cq *ibcq, int n, struct ib_wc *wc);
int cnuas_ib_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
void cnuas_ib_cq_post(struct cnuas_ib_cq *cq, const struct cnuas_ib_cqe *cqe,
		      struct ib_qp *ibqp, bool solicited);
void cnuas_ib_mmap_free(struct rdma_user_mmap_entry *entry);
int cnuas_ib_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma);
struct cnuas_ib_mmap *cnuas_ib_user_map(struct ib_udata *udata, void *buf,
					size_t bytes);

/* What taking a receive from a ring found (cnuas_ib_ring_take()). */
enum cnuas_ring_take {
	CNUAS_RING_GOT,		/* the receive is taken */
	CNUAS_RING_EMPTY,
	CNUAS_RING_BAD_SLOT,	/* consumed; it has its wr_id, no SGEs */
	CNUAS_RING_BAD_PRODUCER, /* nothing consumed */
};

/* cnuas_ib_srq.c */
int cnuas_ib_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
			struct ib_udata *udata);
int cnuas_ib_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
			enum ib_srq_attr_mask mask, struct ib_udata *udata);
int cnuas_ib_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int cnuas_ib_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int cnuas_ib_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			   const struct ib_recv_wr **bad);
enum cnuas_ring_take cnuas_ib_srq_take(struct cnuas_ib_srq *srq,
				       struct cnuas_ib_rwqe *out,
				       struct cnuas_ib_sge *sge);

/* cnuas_ib_mr.c */
struct ib_mr *cnuas_ib_get_dma_mr(struct ib_pd *pd, int access);
struct ib_mr *cnuas_ib_reg_user_mr(struct ib_pd *pd, u64 start, u64 length,
				   u64 iova, int access,
				   struct ib_udata *udata);
struct ib_mr *cnuas_ib_reg_user_mr_dmabuf(struct ib_pd *pd, u64 offset,
					  u64 length, u64 iova, int fd,
					  int access,
					  struct uverbs_attr_bundle *attrs);
int cnuas_ib_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
struct cnuas_ib_mr *cnuas_ib_mr_get(struct cnuas_ib_dev *dev, u32 key,
				    struct ib_pd *pd, int access, u64 va,
				    u64 len);
void cnuas_ib_mr_put(struct cnuas_ib_mr *mr);
void cnuas_ib_mr_copy(struct cnuas_ib_mr *mr, u64 va, void *buf, u32 len,
		      bool to_mr);
int cnuas_ib_sge_copy(struct cnuas_ib_qp *qp, const struct cnuas_ib_sge *sge,
		      u32 num_sge, u32 off, void *buf, u32 len, bool to_mr);
void *cnuas_ib_mr_atomic_ptr(struct cnuas_ib_mr *mr, u64 va,
			     struct page **page);

/* cnuas_ib_qp.c */
int cnuas_ib_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		       struct ib_udata *udata);
int cnuas_ib_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		       struct ib_udata *udata);
int cnuas_ib_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		      struct ib_qp_init_attr *init);
int cnuas_ib_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int cnuas_ib_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		       const struct ib_send_wr **bad);
int cnuas_ib_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad);
int cnuas_ib_recv_wr_len(const struct ib_recv_wr *wr, u32 max_sge, u32 *total);
void cnuas_ib_rwqe_fill(struct cnuas_ib_rwqe *rwqe,
			const struct ib_recv_wr *wr, u32 total);
void cnuas_ib_qp_kick(struct cnuas_ib_qp *qp);
void cnuas_ib_qp_run(struct cnuas_ib_qp *qp);
void cnuas_ib_qp_error(struct cnuas_ib_qp *qp);
void cnuas_ib_qp_event(struct cnuas_ib_qp *qp, enum ib_event_type type);
void cnuas_ib_complete_swqe(struct cnuas_ib_qp *qp, struct cnuas_ib_swqe *wqe);
void cnuas_ib_complete_rwqe(struct cnuas_ib_qp *qp,
			    const struct cnuas_ib_rwqe *wqe,
			    struct cnuas_ib_cqe *cqe, bool solicited);
bool cnuas_ib_rq_take(struct cnuas_ib_qp *qp, struct cnuas_ib_rwqe *out);
enum cnuas_ring_take cnuas_ib_ring_take(struct cnuas_ib_rq_ring_hdr *hdr,
					u32 entries, u32 slot_size,
					u32 max_sge, u32 *tail,
					struct cnuas_ib_rwqe *out,
					struct cnuas_ib_sge *held, u32 *posted);

/* cnuas_ib_req.c */
bool cnuas_ib_requester(struct cnuas_ib_qp *qp, int *budget);
void cnuas_ib_req_rewind(struct cnuas_ib_qp *qp, u32 psn);
void cnuas_ib_retx_arm(struct cnuas_ib_qp *qp);
unsigned long cnuas_ib_retx_jiffies(struct cnuas_ib_qp *qp);
void cnuas_ib_retx_timer_fn(struct timer_list *t);
void cnuas_ib_rnr_timer_fn(struct timer_list *t);

/* cnuas_ib_comp.c */
void cnuas_ib_completer(struct cnuas_ib_qp *qp, struct sk_buff *skb);
void cnuas_ib_comp_timeout(struct cnuas_ib_qp *qp);
void cnuas_ib_comp_retire(struct cnuas_ib_qp *qp);

/* cnuas_ib_resp.c */
void cnuas_ib_responder(struct cnuas_ib_qp *qp, struct sk_buff *skb);
bool cnuas_ib_resp_pending(struct cnuas_ib_qp *qp, int *budget);
void cnuas_ib_resp_flush_ack(struct cnuas_ib_qp *qp);

/* cnuas_ib_net.c */
struct sk_buff *cnuas_ib_frame_alloc(struct cnuas_ib_qp *qp,
				     const struct cnuas_ib_av *av,
				     u8 opcode, u32 paylen,
				     struct cnuas_bth **bth);
void cnuas_ib_frame_finish(struct cnuas_ib_qp *qp, struct sk_buff *skb);
int cnuas_ib_xmit(struct cnuas_ib_qp *qp, struct sk_buff *skb);
void cnuas_ib_rx(void *ctx, struct sk_buff *skb);
void cnuas_ib_tx_wake(void *ctx);
void cnuas_ib_txwait_del(struct cnuas_ib_qp *qp);
void cnuas_ib_rx_drop_init(struct cnuas_ib_dev *dev);
bool cnuas_ib_pkt_from_peer(struct cnuas_ib_qp *qp, struct sk_buff *skb);
void cnuas_ib_loop_work(struct work_struct *work);

/* cnuas_ib_mad.c: the SMA and PMA of native-IB mode, the port state */
void cnuas_ib_port_init(struct cnuas_ib_dev *dev);
void cnuas_ib_port_link_change(struct cnuas_ib_dev *dev, bool up);
int cnuas_ib_process_mad(struct ib_device *ibdev, int mad_flags, u32 port,
			 const struct ib_wc *in_wc, const struct ib_grh *in_grh,
			 const struct ib_mad *in, struct ib_mad *out,
			 size_t *out_mad_size, u16 *out_mad_pkey_index);
int cnuas_ib_modify_port(struct ib_device *ibdev, u32 port, int mask,
			 struct ib_port_modify *props);
extern const struct ib_device_ops cnuas_ib_ib_mode_ops;
int cnuas_ib_trap_init(struct cnuas_ib_dev *dev);
void cnuas_ib_trap_exit(struct cnuas_ib_dev *dev);
void cnuas_ib_trap_cap_change(struct cnuas_ib_dev *dev, u32 caps);
int cnuas_ib_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr);

/* cnuas_ib_mcast.c */
int cnuas_ib_attach_mcast(struct ib_qp *ibqp, union ib_gid *mgid, u16 mlid);
int cnuas_ib_detach_mcast(struct ib_qp *ibqp, union ib_gid *mgid, u16 mlid);
u32 cnuas_ib_mcast_rx(struct cnuas_ib_dev *dev, struct sk_buff *skb,
		      const union ib_gid *mgid);
bool cnuas_ib_mcast_has_members(struct cnuas_ib_dev *dev,
				const union ib_gid *mgid);
void cnuas_ib_mcast_qp_gone(struct cnuas_ib_dev *dev, u32 qpn);
void cnuas_ib_mcast_cleanup(struct cnuas_ib_dev *dev);

/* cnuas_ib_cc.c: ECN, notification point, reaction point (DCQCN) */
u8 cnuas_ib_tos(u8 tclass, u8 opcode);
bool cnuas_ib_pkt_ce(const struct sk_buff *skb);
void cnuas_ib_cc_init(struct cnuas_ib_qp *qp);
void cnuas_ib_cc_reset(struct cnuas_ib_qp *qp);
void cnuas_ib_cc_destroy(struct cnuas_ib_qp *qp);
bool cnuas_ib_cc_may_send(struct cnuas_ib_qp *qp);
void cnuas_ib_cc_sent(struct cnuas_ib_qp *qp, u32 len);
void cnuas_ib_rx_cnp(struct cnuas_ib_dev *dev, struct sk_buff *skb);
void cnuas_ib_np_ce(struct cnuas_ib_qp *qp, struct sk_buff *skb);

/* cnuas_ib_icrc.c */
u32 cnuas_ib_icrc(const struct sk_buff *skb, unsigned int net_off,
		  int family, unsigned int end);

/*
 * Native-InfiniBand data path (link_layer=ib; ib-datapath work, kept
 * together here): docs/wire.md, "LRH"; docs/devices.md, "cnuas_ib in
 * native InfiniBand mode", "Data path".
 */
/* cnuas_ib_icrc.c: ICRC of an LRH-first frame, VCRC */
u32 cnuas_ib_icrc_ib(const u8 *frame, unsigned int end);
u16 cnuas_ib_vcrc(const u8 *buf, unsigned int len);
void cnuas_ib_vcrc_init(void);
/* cnuas_ib_verbs.c: a native-IB address (LID, optional GRH) */
int cnuas_ib_av_from_attr_ib(struct cnuas_ib_dev *dev, struct cnuas_ib_av *av,
			     const struct rdma_ah_attr *attr);
/* cnuas_ib_net.c */
enum ib_mtu cnuas_ib_port_mtu(struct cnuas_ib_dev *dev);
u32 cnuas_ib_ud_mtu(struct cnuas_ib_dev *dev);
void cnuas_ib_local_gid(struct cnuas_ib_dev *dev, union ib_gid *gid);

static inline bool cnuas_ib_lid_is_mcast(u16 lid)
{
	return lid >= CNUAS_LID_MCAST_FIRST && lid != CNUAS_LID_PERMISSIVE;
}

#endif /* CNUAS_IB_H */
