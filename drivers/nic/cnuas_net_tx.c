// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * cnuas_net transmit: the device's single slot, shared between the network
 * stack (ndo_start_xmit) and the RDMA consumer (cnuas_net_xmit()), taken in
 * turn.  A frame is copied into the slot and the doorbell rung; the
 * TX-complete cause (handled in the NAPI poll) or the watchdog frees the
 * slot for the next waiting frame.
 */
#include <linux/export.h>
#include <linux/netdevice.h>
#include <linux/rcupdate.h>
#include <linux/skbuff.h>
#include <linux/spinlock.h>

#include "cnuas_net_priv.h"
#include "cnuas_regs.h"

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
void cnuas_tx_complete(struct cnuas_net *net)
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

netdev_tx_t cnuas_start_xmit(struct sk_buff *skb, struct net_device *dev)
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

void cnuas_tx_timeout(struct net_device *dev, unsigned int txqueue)
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

/* ---- the RDMA consumer's transmit (cnuas_net.h) ---- */

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
