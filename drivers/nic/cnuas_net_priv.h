/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * cnuas_net internals shared by the files of the module (not by cnuas_ib:
 * that one uses cnuas_net.h only).
 */
#ifndef CNUAS_NET_PRIV_H
#define CNUAS_NET_PRIV_H

#include <linux/auxiliary_bus.h>
#include <net/dcbnl.h>
#include <linux/ethtool.h>
#include <linux/hrtimer.h>
#include <linux/io.h>
#include <linux/netdevice.h>
#include <linux/pci.h>
#include <linux/spinlock.h>
#include <linux/u64_stats_sync.h>

#include "cnuas_net.h"

#define CNUAS_NUM_PRIO		IEEE_8021QAZ_MAX_TCS
/* One netdev transmit queue per traffic class: queue index == TC. */
#define CNUAS_NUM_TC		IEEE_8021QAZ_MAX_TCS
/* Stack frames a TC's queue holds before the netdev queue is stopped. */
#define CNUAS_TX_TC_DEPTH	64

/*
 * The nominal port speed (what get_link_ksettings reports) and the PFC
 * pause quantum: 512 bit times at that speed, 5.12 ns at 100 Gb/s, so the
 * longest pause (quanta 0xffff) is 335.5 us.  The pfc_link_mbps parameter
 * (default this speed) counts quanta at another speed, as the switch's
 * link_mbps does, to make pauses long enough to watch.
 */
#define CNUAS_NET_SPEED_MBPS	SPEED_100000
#define CNUAS_PFC_QUANTUM_BITS	512

/*
 * Receive-side counters: written only by the NAPI poll, so one writer.
 * The order is the order of `ethtool -S` (see cnuas_net_ethtool.c).
 */
enum cnuas_rx_stat {
	CNUAS_RX_PACKETS,	/* frames accepted (stack + consumer) */
	CNUAS_RX_BYTES,
	CNUAS_RX_RDMA_PACKETS,	/* of those, handed to the RDMA consumer */
	CNUAS_RX_RDMA_BYTES,
	CNUAS_RX_DROP_RUNT,	/* shorter than the link layer's header */
	CNUAS_RX_DROP_OVERSIZE,	/* longer than the MTU allows */
	CNUAS_RX_DROP_BAD_LEN,	/* RX_LEN of 0 or above the buffer */
	CNUAS_RX_DROP_BAD_SRC,	/* multicast source address */
	CNUAS_RX_DROP_BAD_MAC_CTRL, /* MAC control frame we do not know */
	CNUAS_RX_DROP_NOMEM,	/* no skb */
	CNUAS_RX_DROP_DOWN,	/* interface down, frame meant for the stack */
	CNUAS_RX_PAUSE,		/* 802.3x PAUSE frames (consumed) */
	CNUAS_RX_PFC_PRIO0,	/* PFC frames naming priority 0..7 (consumed) */
	CNUAS_RX_STAT_COUNT = CNUAS_RX_PFC_PRIO0 + CNUAS_NUM_PRIO,
};

/* Transmit-side counters: written under tx_lock. */
enum cnuas_tx_stat {
	CNUAS_TX_PACKETS,	/* frames handed to the device with link up */
	CNUAS_TX_BYTES,
	CNUAS_TX_RDMA_PACKETS,	/* of those, from the RDMA consumer */
	CNUAS_TX_RDMA_BYTES,
	CNUAS_TX_DROP_LINK_DOWN, /* handed over while the link was down */
	CNUAS_TX_DROP_OVERSIZE,	/* longer than the device takes */
	CNUAS_TX_DROP_IB_MODE,	/* stack frame while the port runs IB */
	CNUAS_TX_DROP_RDMA_FULL, /* consumer queue full */
	CNUAS_TX_TIMEOUTS,	/* watchdog fired: completion never came */
	CNUAS_TX_PFC_PRIO0,	/* PFC frames sent naming priority 0..7 */
	/* microseconds priority 0..7 was paused by received PFC */
	CNUAS_TX_PFC_PAUSE_USEC0 = CNUAS_TX_PFC_PRIO0 + CNUAS_NUM_PRIO,
	/* frames and bytes sent per traffic class */
	CNUAS_TX_TC0_PACKETS = CNUAS_TX_PFC_PAUSE_USEC0 + CNUAS_NUM_PRIO,
	CNUAS_TX_TC0_BYTES = CNUAS_TX_TC0_PACKETS + CNUAS_NUM_TC,
	CNUAS_TX_STAT_COUNT = CNUAS_TX_TC0_BYTES + CNUAS_NUM_TC,
};

/* One timer per priority: when the pause a received XOFF asked for ends. */
struct cnuas_pfc_timer {
	struct hrtimer timer;
	struct cnuas_net *net;
	u8 prio;
};

/* Counters that change in slow paths (atomic). */
enum cnuas_misc_stat {
	CNUAS_LINK_CHANGES,
	CNUAS_MISC_STAT_COUNT,
};

#define CNUAS_STAT_COUNT \
	(CNUAS_RX_STAT_COUNT + CNUAS_TX_STAT_COUNT + CNUAS_MISC_STAT_COUNT)

/**
 * struct cnuas_net - one cnuas-vnic function
 *
 * Locking: tx_lock (irqsave; the consumer transmits from any context)
 * covers the transmit slot, the per-TC queues, the scheduler and PFC pause
 * state and the tx counters.  The rx counters, link_up and the receive path belong to
 * the NAPI poll.  The consumer pointer is RCU-protected and written under
 * rdma_mutex.
 */
struct cnuas_net {
	struct pci_dev *pdev;
	struct net_device *netdev;
	void __iomem *regs;
	struct napi_struct napi;
	int irq;
	bool msi;
	u32 msg_enable;			/* netif_msg_* bits (ethtool -s msglvl) */
	u32 irq_enabled;		/* shadow of IRQ_MASK */
	bool link_up;

	void *tx_buf;
	dma_addr_t tx_dma;
	void *rx_buf;
	dma_addr_t rx_dma;

	spinlock_t tx_lock;		/* see above */
	/* written under tx_lock; the NAPI poll peeks at it (READ_ONCE) */
	bool tx_busy;			/* the device's slot holds a frame */
	bool tx_shaped;			/* the shaper holds the slot */
	ktime_t tx_shape_at;		/* when the shaper frees the slot */
	struct hrtimer shape_timer;
	bool tx_rdma_stopped;		/* -ENOBUFS returned, tx_wake owed */
	u8 tx_rdma_turn;		/* per TC: the consumer goes next */
	/* Per traffic class: the stack's frames and the consumer's. */
	struct sk_buff_head stack_txq[CNUAS_NUM_TC];
	struct sk_buff_head rdma_txq[CNUAS_NUM_TC];
	unsigned int rdma_txq_len;	/* over every TC */
	/* A PFC frame of our own waiting for the slot (it goes first). */
	struct sk_buff *tx_ctrl;

	/* Scheduler, under tx_lock: copies of the DCB settings it applies */
	u8 prio_tc[CNUAS_NUM_PRIO];
	u8 tc_tsa[CNUAS_NUM_TC];
	u8 tc_bw[CNUAS_NUM_TC];
	int drr_deficit[CNUAS_NUM_TC];	/* bytes; ETS deficit round robin */
	u8 drr_tc;			/* the TC being visited */
	bool drr_fresh;			/* its quantum is not added yet */
	u8 rr_zero_tc;			/* round robin of 0% ETS TCs */

	/* Received PFC, under tx_lock: paused priorities and until when */
	u8 pfc_en;			/* copy of pfc.pfc_en (READ_ONCE) */
	u8 paused;			/* bit per priority */
	ktime_t pause_start[CNUAS_NUM_PRIO];
	ktime_t pause_until[CNUAS_NUM_PRIO];
	struct cnuas_pfc_timer pfc_timer[CNUAS_NUM_PRIO];

	/* PFC we send when the receive path falls behind (NAPI only) */
	bool rx_xoff;			/* XOFF sent, XON owed */
	ktime_t rx_xoff_at;

	/* DSCP -> priority from the dcb app table; 0xff: no entry */
	u8 dscp_prio[64];

	struct u64_stats_sync rx_syncp;
	u64_stats_t rx_stats[CNUAS_RX_STAT_COUNT];
	struct u64_stats_sync tx_syncp;
	u64_stats_t tx_stats[CNUAS_TX_STAT_COUNT];
	atomic64_t misc_stats[CNUAS_MISC_STAT_COUNT];

	/* RDMA consumer */
	struct mutex rdma_mutex;	/* serialises register/unregister */
	struct cnuas_rdma_consumer __rcu *rdma;
	enum cnuas_link_layer layer;	/* read locklessly (READ_ONCE) */
	struct cnuas_net_adev *adev;
	int adev_id;

	/* DCB, under RTNL (dcbnl calls hold it) */
	struct ieee_pfc pfc;
	struct ieee_ets ets;
};

/* A registered consumer; freed after an RCU grace period. */
struct cnuas_rdma_consumer {
	const struct cnuas_net_rdma_ops *ops;
	void *ctx;
};

static inline void cnuas_rx_stat_add(struct cnuas_net *net,
				     enum cnuas_rx_stat s, u64 v)
{
	u64_stats_update_begin(&net->rx_syncp);
	u64_stats_add(&net->rx_stats[s], v);
	u64_stats_update_end(&net->rx_syncp);
}

/* Caller holds tx_lock. */
static inline void cnuas_tx_stat_add(struct cnuas_net *net,
				     enum cnuas_tx_stat s, u64 v)
{
	u64_stats_update_begin(&net->tx_syncp);
	u64_stats_add(&net->tx_stats[s], v);
	u64_stats_update_end(&net->tx_syncp);
}

static inline u32 cnuas_rd(struct cnuas_net *net, unsigned int reg)
{
	return ioread32(net->regs + reg);
}

static inline void cnuas_wr(struct cnuas_net *net, unsigned int reg, u32 val)
{
	iowrite32(val, net->regs + reg);
}

/* cnuas_net_main.c */
void cnuas_net_read_stats(struct cnuas_net *net, u64 *rx, u64 *tx, u64 *misc);

/* cnuas_net_tx.c */
netdev_tx_t cnuas_start_xmit(struct sk_buff *skb, struct net_device *dev);
u16 cnuas_select_queue(struct net_device *dev, struct sk_buff *skb,
		       struct net_device *sb_dev);
void cnuas_tx_timeout(struct net_device *dev, unsigned int txqueue);
void cnuas_tx_complete(struct cnuas_net *net);
void cnuas_tx_init(struct cnuas_net *net);
void cnuas_tx_purge(struct cnuas_net *net);
void cnuas_tx_sched_update(struct cnuas_net *net);
void cnuas_pfc_rx(struct cnuas_net *net, u16 cev, const u8 *quanta);
void cnuas_pfc_rx_pressure(struct cnuas_net *net, bool behind);
void cnuas_pfc_poll_done(struct cnuas_net *net);

/* cnuas_net_rx.c */
bool cnuas_rx_one(struct cnuas_net *net);

/* cnuas_net_rdma.c */
int cnuas_adev_create(struct cnuas_net *net);
void cnuas_adev_destroy(struct cnuas_net *net);

/* cnuas_net_ethtool.c, cnuas_net_dcb.c */
extern const struct ethtool_ops cnuas_ethtool_ops;
extern const struct dcbnl_rtnl_ops cnuas_dcbnl_ops;
void cnuas_dcb_init(struct cnuas_net *net);

#endif /* CNUAS_NET_PRIV_H */
