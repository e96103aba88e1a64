// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * cnuas_net: PCI network driver for the cnuas-vnic function (1af4:10f0).
 *
 * The device has one transmit slot and one receive landing buffer, both
 * DMA-coherent and 9216 bytes.  Transmit: copy the frame into the slot,
 * ring the doorbell, wait for the TX-complete cause.  Receive: the NAPI
 * poll copies the landed frame into an skb and writes 0 to RX_STATUS, which
 * lets the device land the next queued frame at once.  The hard interrupt
 * only masks the device and schedules NAPI; every cause is handled in the
 * poll.  The RDMA consumer (cnuas_ib) attaches through the auxiliary bus and
 * the functions at the end of this file; cnuas_net.h is its contract.
 */
#include <linux/etherdevice.h>
#include <linux/idr.h>
#include <linux/if_vlan.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/iopoll.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/udp.h>
#include <linux/unaligned.h>
#include <net/ip.h>

#include "cnuas_net_priv.h"
#include "cnuas_regs.h"

#define CNUAS_TX_TIMEOUT	(5 * HZ)
/* How long remove waits for a frame the device is still sending. */
#define CNUAS_TX_DRAIN_US	100000
#define CNUAS_MAC_CTRL_PAUSE	0x0001
#define CNUAS_MAC_CTRL_PFC	0x0101
#define CNUAS_PFC_FRAME_LEN	(ETH_HLEN + 2 + 2 + 2 * CNUAS_NUM_PRIO)
#define CNUAS_IB_LRH_LEN	8

static DEFINE_IDA(cnuas_ida);

static u32 cnuas_rd(struct cnuas_net *net, unsigned int reg)
{
	return ioread32(net->regs + reg);
}

static void cnuas_wr(struct cnuas_net *net, unsigned int reg, u32 val)
{
	iowrite32(val, net->regs + reg);
}

/* ---- statistics ---- */

void cnuas_net_read_stats(struct cnuas_net *net, u64 *rx, u64 *tx, u64 *misc)
{
	unsigned int start, i;

	do {
		start = u64_stats_fetch_begin(&net->rx_syncp);
		for (i = 0; i < CNUAS_RX_STAT_COUNT; i++)
			rx[i] = u64_stats_read(&net->rx_stats[i]);
	} while (u64_stats_fetch_retry(&net->rx_syncp, start));
	do {
		start = u64_stats_fetch_begin(&net->tx_syncp);
		for (i = 0; i < CNUAS_TX_STAT_COUNT; i++)
			tx[i] = u64_stats_read(&net->tx_stats[i]);
	} while (u64_stats_fetch_retry(&net->tx_syncp, start));
	for (i = 0; i < CNUAS_MISC_STAT_COUNT; i++)
		misc[i] = atomic64_read(&net->misc_stats[i]);
}

static void cnuas_get_stats64(struct net_device *dev,
			      struct rtnl_link_stats64 *s)
{
	struct cnuas_net *net = netdev_priv(dev);
	u64 rx[CNUAS_RX_STAT_COUNT], tx[CNUAS_TX_STAT_COUNT];
	u64 misc[CNUAS_MISC_STAT_COUNT];

	cnuas_net_read_stats(net, rx, tx, misc);
	s->rx_packets = rx[CNUAS_RX_PACKETS];
	s->rx_bytes = rx[CNUAS_RX_BYTES];
	s->tx_packets = tx[CNUAS_TX_PACKETS];
	s->tx_bytes = tx[CNUAS_TX_BYTES];
	s->rx_length_errors = rx[CNUAS_RX_DROP_RUNT] +
			      rx[CNUAS_RX_DROP_OVERSIZE] +
			      rx[CNUAS_RX_DROP_BAD_LEN];
	s->rx_frame_errors = rx[CNUAS_RX_DROP_BAD_SRC] +
			     rx[CNUAS_RX_DROP_BAD_MAC_CTRL];
	s->rx_errors = s->rx_length_errors + s->rx_frame_errors;
	s->rx_dropped = rx[CNUAS_RX_DROP_NOMEM] + rx[CNUAS_RX_DROP_DOWN];
	s->tx_dropped = tx[CNUAS_TX_DROP_LINK_DOWN] +
			tx[CNUAS_TX_DROP_OVERSIZE] +
			tx[CNUAS_TX_DROP_IB_MODE] +
			tx[CNUAS_TX_DROP_RDMA_FULL];
	s->tx_errors = tx[CNUAS_TX_TIMEOUTS];
}

/* ---- transmit ---- */

/* Copy @skb into the device's slot and ring the doorbell. */
static void cnuas_tx_send_locked(struct cnuas_net *net, struct sk_buff *skb,
				 bool rdma)
{
	unsigned int len = skb->len;

	lockdep_assert_held(&net->tx_lock);
	if (skb_copy_bits(skb, 0, net->tx_buf, len)) {
		/* Cannot happen for len == skb->len; never send garbage. */
		cnuas_tx_stat_add(net, CNUAS_TX_DROP_OVERSIZE, 1);
		return;
	}
	/* Ethernet pads short frames; RDMA frames go out as built. */
	if (!rdma && len < ETH_ZLEN) {
		memset(net->tx_buf + len, 0, ETH_ZLEN - len);
		len = ETH_ZLEN;
	}
	/* iowrite32 orders the buffer stores before the doorbell. */
	cnuas_wr(net, CNUAS_REG_TX_LEN, len);
	cnuas_wr(net, CNUAS_REG_TX_DOORBELL, 1);
	net->tx_busy = true;

	if (!READ_ONCE(net->link_up)) {
		/* The device drops it and still completes (docs/devices.md). */
		cnuas_tx_stat_add(net, CNUAS_TX_DROP_LINK_DOWN, 1);
		return;
	}
	cnuas_tx_stat_add(net, CNUAS_TX_PACKETS, 1);
	cnuas_tx_stat_add(net, CNUAS_TX_BYTES, len);
	if (rdma) {
		cnuas_tx_stat_add(net, CNUAS_TX_RDMA_PACKETS, 1);
		cnuas_tx_stat_add(net, CNUAS_TX_RDMA_BYTES, len);
	}
}

/*
 * Give the free slot to the next waiting frame, alternating between the
 * stack and the RDMA consumer.  Returns the frame sent (its bytes are in the
 * slot) for the caller to free once the lock is dropped, or NULL.
 */
static struct sk_buff *cnuas_tx_kick_locked(struct cnuas_net *net)
{
	struct sk_buff *skb;
	bool rdma;

	if (net->tx_busy)
		return NULL;
	if (net->tx_stack_pending &&
	    (!net->tx_rdma_turn || skb_queue_empty(&net->rdma_txq))) {
		skb = net->tx_stack_pending;
		net->tx_stack_pending = NULL;
		rdma = false;
	} else {
		skb = __skb_dequeue(&net->rdma_txq);
		if (!skb)
			return NULL;
		rdma = true;
	}
	net->tx_rdma_turn = !rdma;
	cnuas_tx_send_locked(net, skb, rdma);
	return skb;
}

static void cnuas_rdma_tx_wake(struct cnuas_net *net)
{
	struct cnuas_rdma_consumer *c;

	rcu_read_lock();
	c = rcu_dereference(net->rdma);
	if (c && c->ops->tx_wake)
		c->ops->tx_wake(c->ctx);
	rcu_read_unlock();
}

/* The slot is free again (TX-complete cause, or the watchdog). */
static void cnuas_tx_complete(struct cnuas_net *net)
{
	struct sk_buff *sent;
	unsigned long flags;
	bool wake_stack, wake_rdma = false;

	spin_lock_irqsave(&net->tx_lock, flags);
	net->tx_busy = false;
	sent = cnuas_tx_kick_locked(net);
	wake_stack = !net->tx_stack_pending;
	if (net->tx_rdma_stopped &&
	    skb_queue_len(&net->rdma_txq) <= CNUAS_NET_RDMA_TXQ_LEN / 2) {
		net->tx_rdma_stopped = false;
		wake_rdma = true;
	}
	spin_unlock_irqrestore(&net->tx_lock, flags);

	if (sent)
		dev_consume_skb_any(sent);
	if (wake_stack && netif_running(net->netdev))
		netif_wake_queue(net->netdev);
	if (wake_rdma)
		cnuas_rdma_tx_wake(net);
}

static netdev_tx_t cnuas_start_xmit(struct sk_buff *skb,
				    struct net_device *dev)
{
	struct cnuas_net *net = netdev_priv(dev);
	struct sk_buff *sent;
	unsigned long flags;
	enum cnuas_tx_stat drop;

	spin_lock_irqsave(&net->tx_lock, flags);
	if (skb->len > CNUAS_NET_MAX_FRAME || !skb->len) {
		drop = CNUAS_TX_DROP_OVERSIZE;
		goto drop;
	}
	if (READ_ONCE(net->layer) == CNUAS_LL_IB) {
		drop = CNUAS_TX_DROP_IB_MODE;
		goto drop;
	}
	if (net->tx_stack_pending) {
		/* The queue is stopped while a frame waits; not reached. */
		netif_stop_queue(dev);
		spin_unlock_irqrestore(&net->tx_lock, flags);
		return NETDEV_TX_BUSY;
	}
	skb_tx_timestamp(skb);
	net->tx_stack_pending = skb;
	sent = cnuas_tx_kick_locked(net);
	/* The single slot is busy now: stop until its completion. */
	netif_stop_queue(dev);
	spin_unlock_irqrestore(&net->tx_lock, flags);
	if (sent)
		dev_consume_skb_any(sent);
	return NETDEV_TX_OK;

drop:
	cnuas_tx_stat_add(net, drop, 1);
	spin_unlock_irqrestore(&net->tx_lock, flags);
	dev_kfree_skb_any(skb);
	return NETDEV_TX_OK;
}

static void cnuas_tx_timeout(struct net_device *dev, unsigned int txqueue)
{
	struct cnuas_net *net = netdev_priv(dev);
	unsigned long flags;

	spin_lock_irqsave(&net->tx_lock, flags);
	cnuas_tx_stat_add(net, CNUAS_TX_TIMEOUTS, 1);
	spin_unlock_irqrestore(&net->tx_lock, flags);
	netdev_err(dev, "transmit completion missing, IRQ_STATUS %#x; freeing the slot\n",
		   cnuas_rd(net, CNUAS_REG_IRQ_STATUS));
	cnuas_tx_complete(net);
}

/* ---- receive ---- */

static bool cnuas_is_roce(const u8 *f, unsigned int len)
{
	const struct ethhdr *eth = (const struct ethhdr *)f;
	const struct udphdr *udp;
	unsigned int off = ETH_HLEN;

	if (eth->h_proto == htons(ETH_P_IP)) {
		const struct iphdr *ip = (const struct iphdr *)(f + off);

		if (len < off + sizeof(*ip) || ip->version != 4 ||
		    ip->ihl < 5 || ip->protocol != IPPROTO_UDP ||
		    (ip->frag_off & htons(IP_MF | IP_OFFSET)))
			return false;
		off += ip->ihl * 4;
	} else if (eth->h_proto == htons(ETH_P_IPV6)) {
		const struct ipv6hdr *ip6 = (const struct ipv6hdr *)(f + off);

		if (len < off + sizeof(*ip6) || ip6->version != 6 ||
		    ip6->nexthdr != IPPROTO_UDP)
			return false;
		off += sizeof(*ip6);
	} else {
		return false;
	}
	if (len < off + sizeof(*udp))
		return false;
	udp = (const struct udphdr *)(f + off);
	return udp->dest == htons(CNUAS_NET_ROCE_UDP_PORT);
}

/* A MAC control frame (PAUSE, PFC) ends in the MAC: count it. */
static void cnuas_rx_mac_control(struct cnuas_net *net, const u8 *f,
				 unsigned int len)
{
	u16 op, cev;
	int prio;

	if (len < ETH_HLEN + 2) {
		cnuas_rx_stat_add(net, CNUAS_RX_DROP_BAD_MAC_CTRL, 1);
		return;
	}
	op = get_unaligned_be16(f + ETH_HLEN);
	if (op == CNUAS_MAC_CTRL_PAUSE && len >= ETH_HLEN + 4) {
		cnuas_rx_stat_add(net, CNUAS_RX_PAUSE, 1);
	} else if (op == CNUAS_MAC_CTRL_PFC && len >= CNUAS_PFC_FRAME_LEN) {
		cev = get_unaligned_be16(f + ETH_HLEN + 2);
		for (prio = 0; prio < CNUAS_NUM_PRIO; prio++)
			if (cev & BIT(prio))
				cnuas_rx_stat_add(net, CNUAS_RX_PRIO0_PAUSE + prio,
						  1);
	} else {
		cnuas_rx_stat_add(net, CNUAS_RX_DROP_BAD_MAC_CTRL, 1);
	}
}

enum cnuas_rx_dest { CNUAS_RX_CONSUMED, CNUAS_RX_STACK, CNUAS_RX_RDMA };

/*
 * Decide where the landed frame goes, counting the drops.  Looks at the
 * device buffer in place so nothing is copied for a dropped frame.  The
 * rule (no destination filter, lengths before content, the counter each
 * drop moves) is docs/devices.md, "cnuas_net: which received frames
 * are accepted"; harness/netdev.ts predictRx checks it from there.
 */
static enum cnuas_rx_dest cnuas_rx_classify(struct cnuas_net *net,
					    unsigned int len,
					    enum cnuas_link_layer layer)
{
	const u8 *f = net->rx_buf;
	unsigned int max;

	if (!len || len > CNUAS_NET_MAX_FRAME) {
		cnuas_rx_stat_add(net, CNUAS_RX_DROP_BAD_LEN, 1);
		return CNUAS_RX_CONSUMED;
	}
	if (layer == CNUAS_LL_IB) {
		if (len < CNUAS_IB_LRH_LEN) {
			cnuas_rx_stat_add(net, CNUAS_RX_DROP_RUNT, 1);
			return CNUAS_RX_CONSUMED;
		}
		return CNUAS_RX_RDMA;
	}
	if (len < ETH_HLEN) {
		cnuas_rx_stat_add(net, CNUAS_RX_DROP_RUNT, 1);
		return CNUAS_RX_CONSUMED;
	}
	max = min(READ_ONCE(net->netdev->mtu) + ETH_HLEN + VLAN_HLEN,
		  (unsigned int)CNUAS_NET_MAX_FRAME);
	if (len > max) {
		cnuas_rx_stat_add(net, CNUAS_RX_DROP_OVERSIZE, 1);
		return CNUAS_RX_CONSUMED;
	}
	if (is_multicast_ether_addr(f + ETH_ALEN)) {
		cnuas_rx_stat_add(net, CNUAS_RX_DROP_BAD_SRC, 1);
		return CNUAS_RX_CONSUMED;
	}
	if (get_unaligned_be16(f + 2 * ETH_ALEN) == ETH_P_PAUSE) {
		cnuas_rx_mac_control(net, f, len);
		return CNUAS_RX_CONSUMED;
	}
	if (layer == CNUAS_LL_ETH && cnuas_is_roce(f, len))
		return CNUAS_RX_RDMA;
	if (!netif_running(net->netdev)) {
		cnuas_rx_stat_add(net, CNUAS_RX_DROP_DOWN, 1);
		return CNUAS_RX_CONSUMED;
	}
	return CNUAS_RX_STACK;
}

static void cnuas_rx_deliver(struct cnuas_net *net, struct sk_buff *skb,
			     enum cnuas_rx_dest dest,
			     enum cnuas_link_layer layer)
{
	struct cnuas_rdma_consumer *c;
	unsigned int len = skb->len;

	if (dest == CNUAS_RX_RDMA) {
		skb->dev = net->netdev;
		skb_reset_mac_header(skb);
		if (layer == CNUAS_LL_ETH) {
			skb->protocol = eth_hdr(skb)->h_proto;
			skb_set_network_header(skb, ETH_HLEN);
		}
		rcu_read_lock();
		c = rcu_dereference(net->rdma);
		if (c) {
			c->ops->rx(c->ctx, skb);
			rcu_read_unlock();
			cnuas_rx_stat_add(net, CNUAS_RX_PACKETS, 1);
			cnuas_rx_stat_add(net, CNUAS_RX_BYTES, len);
			cnuas_rx_stat_add(net, CNUAS_RX_RDMA_PACKETS, 1);
			cnuas_rx_stat_add(net, CNUAS_RX_RDMA_BYTES, len);
			return;
		}
		rcu_read_unlock();
		/* The consumer left between classify and here. */
		if (layer == CNUAS_LL_IB || !netif_running(net->netdev)) {
			cnuas_rx_stat_add(net, CNUAS_RX_DROP_DOWN, 1);
			dev_kfree_skb_any(skb);
			return;
		}
	}
	skb->protocol = eth_type_trans(skb, net->netdev);
	cnuas_rx_stat_add(net, CNUAS_RX_PACKETS, 1);
	cnuas_rx_stat_add(net, CNUAS_RX_BYTES, len);
	napi_gro_receive(&net->napi, skb);
}

/* Take one landed frame, if any; returns false when none waits. */
static bool cnuas_rx_one(struct cnuas_net *net)
{
	enum cnuas_link_layer layer = READ_ONCE(net->layer);
	struct sk_buff *skb = NULL;
	enum cnuas_rx_dest dest;
	unsigned int len;

	if (!(cnuas_rd(net, CNUAS_REG_RX_STATUS) & CNUAS_RX_STATUS_READY))
		return false;
	len = cnuas_rd(net, CNUAS_REG_RX_LEN);
	/* The frame bytes were written before RX_STATUS was set. */
	dma_rmb();
	dest = cnuas_rx_classify(net, len, layer);
	if (dest != CNUAS_RX_CONSUMED) {
		skb = napi_alloc_skb(&net->napi, len);
		if (skb)
			skb_put_data(skb, net->rx_buf, len);
		else
			cnuas_rx_stat_add(net, CNUAS_RX_DROP_NOMEM, 1);
	}
	/* Release the buffer; the device may land the next frame now. */
	cnuas_wr(net, CNUAS_REG_RX_STATUS, 0);
	if (skb)
		cnuas_rx_deliver(net, skb, dest, layer);
	return true;
}

/* ---- link, interrupt, NAPI ---- */

static void cnuas_link_update(struct cnuas_net *net)
{
	bool up = cnuas_rd(net, CNUAS_REG_LINK_STATUS) & CNUAS_LINK_UP;
	struct cnuas_rdma_consumer *c;

	if (up == net->link_up)
		return;
	WRITE_ONCE(net->link_up, up);
	atomic64_inc(&net->misc_stats[CNUAS_LINK_CHANGES]);
	if (up)
		netif_carrier_on(net->netdev);
	else
		netif_carrier_off(net->netdev);
	netif_info(net, link, net->netdev, "link %s\n", up ? "up" : "down");

	rcu_read_lock();
	c = rcu_dereference(net->rdma);
	if (c && c->ops->link_change)
		c->ops->link_change(c->ctx, up);
	rcu_read_unlock();
}

static int cnuas_poll(struct napi_struct *napi, int budget)
{
	struct cnuas_net *net = container_of(napi, struct cnuas_net, napi);
	u32 status;
	int done = 0;

	/* Acknowledge first: a cause that recurs while we work stays set. */
	status = cnuas_rd(net, CNUAS_REG_IRQ_STATUS) & CNUAS_IRQ_ALL;
	if (status)
		cnuas_wr(net, CNUAS_REG_IRQ_STATUS, status);
	if (status & CNUAS_IRQ_LINK)
		cnuas_link_update(net);
	if (status & CNUAS_IRQ_TX)
		cnuas_tx_complete(net);
	/* RX_STATUS, not the cause bit, says whether a frame waits. */
	while (done < budget && cnuas_rx_one(net))
		done++;
	if (done == budget)
		return budget;
	if (napi_complete_done(napi, done)) {
		/* Causes raised meanwhile re-assert on unmask (MSI or INTx). */
		WRITE_ONCE(net->irq_enabled, CNUAS_IRQ_ALL);
		cnuas_wr(net, CNUAS_REG_IRQ_MASK, CNUAS_IRQ_ALL);
	}
	return done;
}

static irqreturn_t cnuas_irq(int irq, void *data)
{
	struct cnuas_net *net = data;
	u32 enabled = READ_ONCE(net->irq_enabled);

	if (!enabled)
		return IRQ_NONE;
	/* INTx may be shared: only claim it when one of our causes is up. */
	if (!net->msi && !(cnuas_rd(net, CNUAS_REG_IRQ_STATUS) & enabled))
		return IRQ_NONE;
	WRITE_ONCE(net->irq_enabled, 0);
	cnuas_wr(net, CNUAS_REG_IRQ_MASK, 0);
	napi_schedule(&net->napi);
	return IRQ_HANDLED;
}

/* ---- net_device ---- */

static int cnuas_open(struct net_device *dev)
{
	struct cnuas_net *net = netdev_priv(dev);
	unsigned long flags;

	/* The hardware runs from probe to remove; open only admits the stack. */
	spin_lock_irqsave(&net->tx_lock, flags);
	if (!net->tx_stack_pending)
		netif_start_queue(dev);
	spin_unlock_irqrestore(&net->tx_lock, flags);
	return 0;
}

static int cnuas_stop(struct net_device *dev)
{
	netif_stop_queue(dev);
	return 0;
}

static int cnuas_change_mtu(struct net_device *dev, int new_mtu)
{
	/* min_mtu/max_mtu were checked by the core; receive follows the MTU. */
	WRITE_ONCE(dev->mtu, new_mtu);
	return 0;
}

static const struct net_device_ops cnuas_netdev_ops = {
	.ndo_open		= cnuas_open,
	.ndo_stop		= cnuas_stop,
	.ndo_start_xmit		= cnuas_start_xmit,
	.ndo_get_stats64	= cnuas_get_stats64,
	.ndo_set_mac_address	= eth_mac_addr,
	.ndo_validate_addr	= eth_validate_addr,
	.ndo_change_mtu		= cnuas_change_mtu,
	.ndo_tx_timeout		= cnuas_tx_timeout,
};

/* ---- the RDMA consumer interface (cnuas_net.h) ---- */

int cnuas_net_register_rdma(struct cnuas_net *net,
			    const struct cnuas_net_rdma_ops *ops, void *ctx,
			    enum cnuas_link_layer layer)
{
	struct cnuas_rdma_consumer *c;

	if (!ops || !ops->rx ||
	    (layer != CNUAS_LL_ETH && layer != CNUAS_LL_IB))
		return -EINVAL;
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	c->ops = ops;
	c->ctx = ctx;

	mutex_lock(&net->rdma_mutex);
	if (rcu_access_pointer(net->rdma)) {
		mutex_unlock(&net->rdma_mutex);
		kfree(c);
		return -EBUSY;
	}
	/* Consumer first, then the layer that routes frames to it. */
	rcu_assign_pointer(net->rdma, c);
	WRITE_ONCE(net->layer, layer);
	mutex_unlock(&net->rdma_mutex);
	netdev_info(net->netdev, "RDMA consumer attached, link layer %s\n",
		    layer == CNUAS_LL_IB ? "InfiniBand" : "Ethernet (RoCEv2)");
	return 0;
}
EXPORT_SYMBOL_GPL(cnuas_net_register_rdma);

void cnuas_net_unregister_rdma(struct cnuas_net *net)
{
	struct cnuas_rdma_consumer *c;
	struct sk_buff_head purge;
	unsigned long flags;

	mutex_lock(&net->rdma_mutex);
	c = rcu_dereference_protected(net->rdma,
				      lockdep_is_held(&net->rdma_mutex));
	if (!c) {
		mutex_unlock(&net->rdma_mutex);
		return;
	}
	WRITE_ONCE(net->layer, CNUAS_LL_NONE);
	/* Under tx_lock so no cnuas_net_xmit() queues after the purge. */
	__skb_queue_head_init(&purge);
	spin_lock_irqsave(&net->tx_lock, flags);
	RCU_INIT_POINTER(net->rdma, NULL);
	skb_queue_splice_init(&net->rdma_txq, &purge);
	net->tx_rdma_stopped = false;
	spin_unlock_irqrestore(&net->tx_lock, flags);
	mutex_unlock(&net->rdma_mutex);

	synchronize_rcu();
	__skb_queue_purge(&purge);
	kfree(c);
	netdev_info(net->netdev, "RDMA consumer detached\n");
}
EXPORT_SYMBOL_GPL(cnuas_net_unregister_rdma);

int cnuas_net_xmit(struct cnuas_net *net, struct sk_buff *skb)
{
	struct sk_buff *sent = NULL;
	unsigned long flags;
	int err = 0;

	spin_lock_irqsave(&net->tx_lock, flags);
	if (!rcu_access_pointer(net->rdma)) {
		err = -ENODEV;
	} else if (!skb->len || skb->len > CNUAS_NET_MAX_FRAME) {
		cnuas_tx_stat_add(net, CNUAS_TX_DROP_OVERSIZE, 1);
		err = -EMSGSIZE;
	} else if (!READ_ONCE(net->link_up)) {
		cnuas_tx_stat_add(net, CNUAS_TX_DROP_LINK_DOWN, 1);
		err = -ENOLINK;
	} else if (skb_queue_len(&net->rdma_txq) >= CNUAS_NET_RDMA_TXQ_LEN) {
		cnuas_tx_stat_add(net, CNUAS_TX_DROP_RDMA_FULL, 1);
		net->tx_rdma_stopped = true;
		err = -ENOBUFS;
	} else {
		__skb_queue_tail(&net->rdma_txq, skb);
		sent = cnuas_tx_kick_locked(net);
	}
	spin_unlock_irqrestore(&net->tx_lock, flags);

	if (err)
		dev_kfree_skb_any(skb);
	else if (sent)
		dev_consume_skb_any(sent);
	return err;
}
EXPORT_SYMBOL_GPL(cnuas_net_xmit);

int cnuas_net_xmit_buf(struct cnuas_net *net, const void *buf,
		       unsigned int len)
{
	struct sk_buff *skb;

	if (!len || len > CNUAS_NET_MAX_FRAME)
		return -EMSGSIZE;
	skb = alloc_skb(len, GFP_ATOMIC);
	if (!skb)
		return -ENOMEM;
	skb_put_data(skb, buf, len);
	return cnuas_net_xmit(net, skb);
}
EXPORT_SYMBOL_GPL(cnuas_net_xmit_buf);

bool cnuas_net_link_up(struct cnuas_net *net)
{
	return READ_ONCE(net->link_up);
}
EXPORT_SYMBOL_GPL(cnuas_net_link_up);

enum cnuas_link_layer cnuas_net_link_layer(struct cnuas_net *net)
{
	return READ_ONCE(net->layer);
}
EXPORT_SYMBOL_GPL(cnuas_net_link_layer);

/* ---- auxiliary device ---- */

static void cnuas_adev_release(struct device *dev)
{
	struct auxiliary_device *adev = to_auxiliary_dev(dev);

	kfree(to_cnuas_net_adev(adev));
}

static int cnuas_adev_create(struct cnuas_net *net)
{
	struct cnuas_net_adev *a;
	int err;

	a = kzalloc(sizeof(*a), GFP_KERNEL);
	if (!a)
		return -ENOMEM;
	a->net = net;
	a->netdev = net->netdev;
	a->pdev = net->pdev;
	a->adev.name = CNUAS_NET_ADEV_NAME;
	a->adev.id = net->adev_id;
	a->adev.dev.parent = &net->pdev->dev;
	a->adev.dev.release = cnuas_adev_release;

	err = auxiliary_device_init(&a->adev);
	if (err) {
		kfree(a);
		return err;
	}
	err = auxiliary_device_add(&a->adev);
	if (err) {
		/* Drops the last reference: the release frees @a. */
		auxiliary_device_uninit(&a->adev);
		return err;
	}
	net->adev = a;
	return 0;
}

static void cnuas_adev_destroy(struct cnuas_net *net)
{
	/* The consumer's remove() runs inside delete. */
	auxiliary_device_delete(&net->adev->adev);
	auxiliary_device_uninit(&net->adev->adev);
	net->adev = NULL;
	/* A consumer that forgot to unregister must not outlive its device. */
	cnuas_net_unregister_rdma(net);
}

/* ---- PCI ---- */

static void cnuas_hw_quiesce(struct cnuas_net *net)
{
	cnuas_wr(net, CNUAS_REG_IRQ_MASK, 0);
	cnuas_wr(net, CNUAS_REG_RX_ADDR_LO, 0);
	cnuas_wr(net, CNUAS_REG_RX_ADDR_HI, 0);
	cnuas_wr(net, CNUAS_REG_IRQ_STATUS, CNUAS_IRQ_ALL);
}

/* Point the device at our buffers and drop a frame left by a former driver. */
static void cnuas_hw_arm(struct cnuas_net *net)
{
	cnuas_wr(net, CNUAS_REG_TX_ADDR_LO, lower_32_bits(net->tx_dma));
	cnuas_wr(net, CNUAS_REG_TX_ADDR_HI, upper_32_bits(net->tx_dma));
	cnuas_wr(net, CNUAS_REG_RX_ADDR_LO, lower_32_bits(net->rx_dma));
	cnuas_wr(net, CNUAS_REG_RX_ADDR_HI, upper_32_bits(net->rx_dma));
	cnuas_wr(net, CNUAS_REG_RX_STATUS, 0);
}

static void cnuas_read_mac(struct cnuas_net *net)
{
	u32 lo = cnuas_rd(net, CNUAS_REG_MAC_LO);
	u32 hi = cnuas_rd(net, CNUAS_REG_MAC_HI);
	u8 mac[ETH_ALEN];

	put_unaligned_le32(lo, mac);
	put_unaligned_le16(hi, mac + 4);
	if (is_valid_ether_addr(mac)) {
		eth_hw_addr_set(net->netdev, mac);
		return;
	}
	eth_hw_addr_random(net->netdev);
	dev_info(&net->pdev->dev, "device MAC %pM is not usable, using %pM\n",
		 mac, net->netdev->dev_addr);
}

static int cnuas_alloc_buffers(struct cnuas_net *net)
{
	struct device *d = &net->pdev->dev;

	net->tx_buf = dma_alloc_coherent(d, CNUAS_VNIC_MAX_FRAME, &net->tx_dma,
					 GFP_KERNEL);
	if (!net->tx_buf)
		return -ENOMEM;
	net->rx_buf = dma_alloc_coherent(d, CNUAS_VNIC_MAX_FRAME, &net->rx_dma,
					 GFP_KERNEL);
	if (!net->rx_buf) {
		dma_free_coherent(d, CNUAS_VNIC_MAX_FRAME, net->tx_buf,
				  net->tx_dma);
		return -ENOMEM;
	}
	return 0;
}

static void cnuas_free_buffers(struct cnuas_net *net)
{
	struct device *d = &net->pdev->dev;

	dma_free_coherent(d, CNUAS_VNIC_MAX_FRAME, net->rx_buf, net->rx_dma);
	dma_free_coherent(d, CNUAS_VNIC_MAX_FRAME, net->tx_buf, net->tx_dma);
}

static int cnuas_setup_irq(struct cnuas_net *net)
{
	struct pci_dev *pdev = net->pdev;
	int err;

	err = pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_MSI | PCI_IRQ_INTX);
	if (err < 0)
		return err;
	net->msi = pdev->msi_enabled;
	net->irq = pci_irq_vector(pdev, 0);
	err = request_irq(net->irq, cnuas_irq, net->msi ? 0 : IRQF_SHARED,
			  pci_name(pdev), net);
	if (err) {
		pci_free_irq_vectors(pdev);
		return err;
	}
	return 0;
}

static void cnuas_teardown_irq(struct cnuas_net *net)
{
	free_irq(net->irq, net);
	pci_free_irq_vectors(net->pdev);
}

/* Start the hardware path: NAPI, carrier, interrupts. */
static void cnuas_hw_start(struct cnuas_net *net)
{
	napi_enable(&net->napi);
	net->link_up = cnuas_rd(net, CNUAS_REG_LINK_STATUS) & CNUAS_LINK_UP;
	if (net->link_up)
		netif_carrier_on(net->netdev);
	WRITE_ONCE(net->irq_enabled, CNUAS_IRQ_ALL);
	cnuas_wr(net, CNUAS_REG_IRQ_MASK, CNUAS_IRQ_ALL);
}

static void cnuas_hw_stop(struct cnuas_net *net)
{
	napi_disable(&net->napi);
	WRITE_ONCE(net->irq_enabled, 0);
	cnuas_wr(net, CNUAS_REG_IRQ_MASK, 0);
	synchronize_irq(net->irq);
}

/* After the last sender is gone: let a frame in the slot leave, disarm RX. */
static void cnuas_hw_drain(struct cnuas_net *net)
{
	u32 status;

	if (net->tx_busy &&
	    readx_poll_timeout(ioread32, net->regs + CNUAS_REG_IRQ_STATUS,
			       status, status & CNUAS_IRQ_TX, 10,
			       CNUAS_TX_DRAIN_US))
		dev_info(&net->pdev->dev, "device kept the last frame; reset pending\n");
	cnuas_hw_quiesce(net);
	/* A read flushes the posted writes before the buffers are freed. */
	cnuas_rd(net, CNUAS_REG_IRQ_MASK);
	dev_kfree_skb_any(net->tx_stack_pending);
	net->tx_stack_pending = NULL;
}

static void cnuas_setup_netdev(struct net_device *dev)
{
	dev->netdev_ops = &cnuas_netdev_ops;
	dev->ethtool_ops = &cnuas_ethtool_ops;
	dev->dcbnl_ops = &cnuas_dcbnl_ops;
	dev->watchdog_timeo = CNUAS_TX_TIMEOUT;
	dev->min_mtu = ETH_MIN_MTU;
	dev->max_mtu = CNUAS_NET_MAX_MTU;
	/* The registers are read-only: the address lives in the driver. */
	dev->priv_flags |= IFF_LIVE_ADDR_CHANGE;
}

static int cnuas_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct net_device *dev;
	struct cnuas_net *net;
	int err;

	err = pci_enable_device_mem(pdev);
	if (err)
		return err;
	err = pci_request_region(pdev, CNUAS_VNIC_BAR, CNUAS_NET_DRV_NAME);
	if (err)
		goto err_disable;
	if (!(pci_resource_flags(pdev, CNUAS_VNIC_BAR) & IORESOURCE_MEM) ||
	    pci_resource_len(pdev, CNUAS_VNIC_BAR) < CNUAS_VNIC_BAR_SIZE) {
		dev_err(&pdev->dev, "BAR0 is not a %u-byte memory BAR\n",
			CNUAS_VNIC_BAR_SIZE);
		err = -ENODEV;
		goto err_release;
	}
	err = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (err)
		err = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(32));
	if (err)
		goto err_release;
	pci_set_master(pdev);

	dev = alloc_etherdev(sizeof(*net));
	if (!dev) {
		err = -ENOMEM;
		goto err_clear_master;
	}
	SET_NETDEV_DEV(dev, &pdev->dev);
	net = netdev_priv(dev);
	net->pdev = pdev;
	net->netdev = dev;
	net->msg_enable = netif_msg_init(-1, NETIF_MSG_LINK | NETIF_MSG_PROBE);
	spin_lock_init(&net->tx_lock);
	skb_queue_head_init(&net->rdma_txq);
	u64_stats_init(&net->rx_syncp);
	u64_stats_init(&net->tx_syncp);
	mutex_init(&net->rdma_mutex);
	pci_set_drvdata(pdev, net);
	cnuas_setup_netdev(dev);
	cnuas_dcb_init(net);

	net->regs = pci_iomap(pdev, CNUAS_VNIC_BAR, CNUAS_VNIC_BAR_SIZE);
	if (!net->regs) {
		err = -ENOMEM;
		goto err_free_netdev;
	}
	/* Silence a device a former driver left running before DMA is set. */
	cnuas_hw_quiesce(net);
	cnuas_read_mac(net);

	err = cnuas_alloc_buffers(net);
	if (err)
		goto err_unmap;
	netif_napi_add(dev, &net->napi, cnuas_poll);
	err = cnuas_setup_irq(net);
	if (err)
		goto err_napi_del;
	cnuas_hw_arm(net);

	net->adev_id = ida_alloc(&cnuas_ida, GFP_KERNEL);
	if (net->adev_id < 0) {
		err = net->adev_id;
		goto err_irq;
	}
	netif_carrier_off(dev);
	err = register_netdev(dev);
	if (err)
		goto err_ida;
	cnuas_hw_start(net);
	err = cnuas_adev_create(net);
	if (err)
		goto err_stop;

	netif_info(net, probe, dev, "cnuas-vnic up: MAC %pM, %s, link %s\n",
		   dev->dev_addr, net->msi ? "MSI" : "INTx",
		   net->link_up ? "up" : "down");
	return 0;

err_stop:
	cnuas_hw_stop(net);
	unregister_netdev(dev);
err_ida:
	ida_free(&cnuas_ida, net->adev_id);
err_irq:
	cnuas_hw_drain(net);
	cnuas_teardown_irq(net);
err_napi_del:
	netif_napi_del(&net->napi);
	cnuas_free_buffers(net);
err_unmap:
	pci_iounmap(pdev, net->regs);
err_free_netdev:
	free_netdev(dev);
err_clear_master:
	pci_clear_master(pdev);
err_release:
	pci_release_region(pdev, CNUAS_VNIC_BAR);
err_disable:
	pci_disable_device(pdev);
	return err;
}

static void cnuas_remove(struct pci_dev *pdev)
{
	struct cnuas_net *net = pci_get_drvdata(pdev);
	struct net_device *dev = net->netdev;

	cnuas_adev_destroy(net);
	/* Before unregister: the poll touches the carrier of a live netdev. */
	cnuas_hw_stop(net);
	unregister_netdev(dev);
	ida_free(&cnuas_ida, net->adev_id);
	cnuas_hw_drain(net);
	cnuas_teardown_irq(net);
	netif_napi_del(&net->napi);
	cnuas_free_buffers(net);
	pci_iounmap(pdev, net->regs);
	free_netdev(dev);
	pci_clear_master(pdev);
	pci_release_region(pdev, CNUAS_VNIC_BAR);
	pci_disable_device(pdev);
}

static const struct pci_device_id cnuas_pci_ids[] = {
	{ PCI_DEVICE(CNUAS_VNIC_VENDOR_ID, CNUAS_VNIC_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, cnuas_pci_ids);

static struct pci_driver cnuas_pci_driver = {
	.name		= CNUAS_NET_DRV_NAME,
	.id_table	= cnuas_pci_ids,
	.probe		= cnuas_probe,
	.remove		= cnuas_remove,
};
module_pci_driver(cnuas_pci_driver);

MODULE_DESCRIPTION("Cnuas virtual NIC (cnuas-vnic) network driver");
MODULE_AUTHOR("Cnuas HIL");
MODULE_LICENSE("Dual MIT/GPL");
MODULE_VERSION(CNUAS_NET_DRV_VERSION);
