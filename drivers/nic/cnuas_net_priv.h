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
#include <linux/io.h>
#include <linux/netdevice.h>
#include <linux/pci.h>
#include <linux/spinlock.h>
#include <linux/u64_stats_sync.h>

#include "cnuas_net.h"

#define CNUAS_NUM_PRIO		IEEE_8021QAZ_MAX_TCS

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
	CNUAS_RX_PRIO0_PAUSE,	/* PFC frames naming priority 0..7 (consumed) */
	CNUAS_RX_STAT_COUNT = CNUAS_RX_PRIO0_PAUSE + CNUAS_NUM_PRIO,
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
	CNUAS_TX_PRIO0_PAUSE,	/* PFC frames sent per priority: never (see dcb) */
	CNUAS_TX_STAT_COUNT = CNUAS_TX_PRIO0_PAUSE + CNUAS_NUM_PRIO,
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
 * covers the transmit slot, the pending stack frame, the consumer queue and
 * the tx counters.  The rx counters, link_up and the receive path belong to
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
	bool tx_busy;			/* the device's slot holds a frame */
	bool tx_rdma_turn;		/* round-robin between the two sources */
	bool tx_rdma_stopped;		/* -ENOBUFS returned, tx_wake owed */
	struct sk_buff *tx_stack_pending; /* the stack's frame, waiting */
	struct sk_buff_head rdma_txq;

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
void cnuas_tx_timeout(struct net_device *dev, unsigned int txqueue);
void cnuas_tx_complete(struct cnuas_net *net);

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
