// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * cnuas_net transmit: one queue per traffic class in front of the device's
 * single slot.
 *
 * Classes: a frame's priority is its 802.1Q PCP when tagged; else, for
 * IPv4/IPv6, the priority the dcb app table gives its DSCP
 * (`dcb app add dev X dscp-prio 26:3`); else skb->priority when it is 0..7,
 * and 0 otherwise.  ETS's prio-tc map turns the priority into the traffic
 * class, which is the netdev transmit queue (ndo_select_queue) for the
 * stack and a per-class queue for the RDMA consumer.
 *
 * Scheduler (whenever the slot is free): a frame of our own PFC first, then
 * the strict-priority classes, highest class first, then the ETS classes by
 * deficit round robin with a quantum of tc-bw x CNUAS_ETS_QUANTUM bytes, so
 * backlogged classes share the slot by bytes in the configured ratio.  ETS
 * classes with 0% are served only while no other ETS class waits.  Inside
 * a class the stack and the consumer take turns.
 *
 * PFC: a received XOFF for a PFC-enabled priority pauses the class it maps
 * to until quanta x 512 bit times at the nominal speed have passed (one
 * hrtimer per priority, re-armed by every XOFF) or an XON (quanta 0)
 * arrives.  A paused class keeps its frames; the others go on.  The device
 * takes the refresh in time but the driver reads it later (a guest's vCPU
 * may stop for longer than a pause), so a pause never ends while a received
 * frame is still unread: the NAPI poll reads them and then ends it.
 *
 * Shaper: the device completes every frame at once, so the slot is never
 * a bottleneck the classes could share.  The tx_rate_mbps parameter (0,
 * the default: off) holds the slot after each frame for the time the frame
 * takes at that rate, emulating a slower link; frames behind a late timer
 * catch up for at most CNUAS_SHAPE_MAX_LAG.
 */
#include <linux/etherdevice.h>
#include <linux/export.h>
#include <linux/if_vlan.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/moduleparam.h>
#include <linux/netdevice.h>
#include <linux/rcupdate.h>
#include <linux/skbuff.h>
#include <linux/spinlock.h>
#include <linux/unaligned.h>

#include "cnuas_net_priv.h"
#include "cnuas_regs.h"

static unsigned int tx_rate_mbps;
module_param(tx_rate_mbps, uint, 0644);
MODULE_PARM_DESC(tx_rate_mbps,
		 "emulated line rate in Mb/s the transmit slot is shaped to (0: none, default)");

#define CNUAS_SHAPE_MAX_LAG	(2 * NSEC_PER_MSEC)

static unsigned int pfc_link_mbps = CNUAS_NET_SPEED_MBPS;

static int cnuas_set_pfc_link_mbps(const char *val,
				   const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, CNUAS_NET_SPEED_MBPS);
}

static const struct kernel_param_ops cnuas_pfc_link_mbps_ops = {
	.set = cnuas_set_pfc_link_mbps,
	.get = param_get_uint,
};

module_param_cb(pfc_link_mbps, &cnuas_pfc_link_mbps_ops, &pfc_link_mbps,
		0644);
MODULE_PARM_DESC(pfc_link_mbps,
		 "speed in Mb/s PFC quanta are counted at, 1..100000 (default 100000, the port's)");

/*
 * Test only: count received PFC frames but never pause on them, as a
 * misconfigured host would, so a switch's pfc_violation accounting can be
 * shown to catch such a host (docs/devices.md, "cnuas_net: DCB").
 */
static bool pfc_ignore;
module_param(pfc_ignore, bool, 0644);
MODULE_PARM_DESC(pfc_ignore,
		 "Test only: count received PFC frames but do not pause (default 0)");

/* quanta x 512 bit times at pfc_link_mbps, in nanoseconds */
static u64 cnuas_pfc_quanta_ns(unsigned int quanta)
{
	return DIV_ROUND_UP_ULL((u64)quanta * CNUAS_PFC_QUANTUM_BITS * 1000,
				READ_ONCE(pfc_link_mbps));
}

/* DRR bytes per percent of ETS bandwidth and visit. */
#define CNUAS_ETS_QUANTUM	256
/* Visits after which any waiting class has the credit for a largest frame. */
#define CNUAS_DRR_MAX_VISITS \
	(CNUAS_NUM_TC * (CNUAS_NET_MAX_FRAME / CNUAS_ETS_QUANTUM + 2))

#define CNUAS_PFC_LEN		60	/* 802.3 minFrameSize less the FCS */
#define CNUAS_MAC_CTRL_PFC	0x0101
#define CNUAS_PFC_XOFF_QUANTA	0xffff

static const u8 cnuas_pfc_dest[ETH_ALEN] = {
	0x01, 0x80, 0xc2, 0x00, 0x00, 0x01
};

/* The priority of a frame (see the top of this file). */
static u8 cnuas_frame_prio(struct cnuas_net *net, const struct sk_buff *skb)
{
	u8 buf[ETH_HLEN + 2];
	const u8 *h;
	u8 dscp, prio;
	__be16 proto;

	h = skb_header_pointer(skb, 0, sizeof(buf), buf);
	if (!h)
		goto fallback;
	proto = get_unaligned((const __be16 *)(h + 2 * ETH_ALEN));
	if (eth_type_vlan(proto))
		return get_unaligned_be16(h + ETH_HLEN) >> VLAN_PRIO_SHIFT;
	if (proto == htons(ETH_P_IP) && (h[ETH_HLEN] >> 4) == 4)
		dscp = h[ETH_HLEN + 1] >> 2;
	else if (proto == htons(ETH_P_IPV6) && (h[ETH_HLEN] >> 4) == 6)
		dscp = (get_unaligned_be16(h + ETH_HLEN) >> 6) & 0x3f;
	else
		goto fallback;
	prio = READ_ONCE(net->dscp_prio[dscp]);
	if (prio < CNUAS_NUM_PRIO)
		return prio;
fallback:
	return skb->priority < CNUAS_NUM_PRIO ? skb->priority : 0;
}

u16 cnuas_select_queue(struct net_device *dev, struct sk_buff *skb,
		       struct net_device *sb_dev)
{
	struct cnuas_net *net = netdev_priv(dev);

	return READ_ONCE(net->prio_tc[cnuas_frame_prio(net, skb)]);
}

/* The shaper's clock advances by the time @len bytes take at the rate. */
static void cnuas_shape_account(struct cnuas_net *net, unsigned int len)
{
	unsigned int rate = READ_ONCE(tx_rate_mbps);
	ktime_t now, floor;

	if (!rate)
		return;
	now = ktime_get();
	floor = ktime_sub_ns(now, CNUAS_SHAPE_MAX_LAG);
	if (ktime_before(net->tx_shape_at, floor))
		net->tx_shape_at = floor;
	net->tx_shape_at = ktime_add_ns(net->tx_shape_at,
					div_u64((u64)len * 8 * 1000, rate));
}

/* Copy @skb into the device's slot and ring the doorbell. */
static void cnuas_tx_send_locked(struct cnuas_net *net, struct sk_buff *skb,
				 bool rdma, int tc)
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
	WRITE_ONCE(net->tx_busy, true);
	cnuas_shape_account(net, len);

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
	if (tc >= 0) {
		cnuas_tx_stat_add(net, CNUAS_TX_TC0_PACKETS + tc, 1);
		cnuas_tx_stat_add(net, CNUAS_TX_TC0_BYTES + tc, len);
	}
}

/* Classes holding a paused priority. */
static u8 cnuas_paused_tcs(struct cnuas_net *net)
{
	unsigned int prio;
	u8 tcs = 0;

	for (prio = 0; prio < CNUAS_NUM_PRIO; prio++)
		if (net->paused & BIT(prio))
			tcs |= BIT(net->prio_tc[prio]);
	return tcs;
}

/* The next frame of class @tc: the stack's and the consumer's take turns. */
static struct sk_buff *cnuas_tc_peek(struct cnuas_net *net, unsigned int tc,
				     bool *rdma)
{
	struct sk_buff *s = skb_peek(&net->stack_txq[tc]);
	struct sk_buff *r = skb_peek(&net->rdma_txq[tc]);

	*rdma = r && (!s || (net->tx_rdma_turn & BIT(tc)));
	return *rdma ? r : s;
}

/* Deficit round robin over the ETS classes in @ready (non-empty mask). */
static int cnuas_drr_pick(struct cnuas_net *net, u8 ready)
{
	struct sk_buff *skb;
	unsigned int i, tc;
	bool rdma;

	for (i = 0; i < CNUAS_DRR_MAX_VISITS; i++) {
		tc = net->drr_tc;
		if (ready & BIT(tc)) {
			if (net->drr_fresh) {
				net->drr_deficit[tc] +=
					net->tc_bw[tc] * CNUAS_ETS_QUANTUM;
				net->drr_fresh = false;
			}
			skb = cnuas_tc_peek(net, tc, &rdma);
			if (net->drr_deficit[tc] >= (int)skb->len) {
				net->drr_deficit[tc] -= skb->len;
				return tc;
			}
		} else {
			/* An idle or paused class keeps no credit. */
			net->drr_deficit[tc] = 0;
		}
		net->drr_tc = (tc + 1) % CNUAS_NUM_TC;
		net->drr_fresh = true;
	}
	/* Not reached: every waiting class has credit by now. */
	return ffs(ready) - 1;
}

/* The class that sends next, or -1 when nothing may be sent. */
static int cnuas_tx_pick_tc(struct cnuas_net *net)
{
	u8 paused = cnuas_paused_tcs(net);
	u8 ready = 0, ets = 0;
	unsigned int i;
	int tc;

	for (tc = 0; tc < CNUAS_NUM_TC; tc++)
		if (!(paused & BIT(tc)) &&
		    (!skb_queue_empty(&net->stack_txq[tc]) ||
		     !skb_queue_empty(&net->rdma_txq[tc])))
			ready |= BIT(tc);
	if (!ready)
		return -1;
	for (tc = CNUAS_NUM_TC - 1; tc >= 0; tc--)
		if ((ready & BIT(tc)) &&
		    net->tc_tsa[tc] == IEEE_8021QAZ_TSA_STRICT)
			return tc;
	for (tc = 0; tc < CNUAS_NUM_TC; tc++)
		if ((ready & BIT(tc)) && net->tc_bw[tc])
			ets |= BIT(tc);
	if (ets)
		return cnuas_drr_pick(net, ets);
	/* Only 0% classes wait: they share what is left, in turn. */
	for (i = 1; i <= CNUAS_NUM_TC; i++) {
		tc = (net->rr_zero_tc + i) % CNUAS_NUM_TC;
		if (ready & BIT(tc)) {
			net->rr_zero_tc = tc;
			return tc;
		}
	}
	return -1;
}

static void cnuas_count_pfc_sent(struct cnuas_net *net, u8 cev)
{
	unsigned int prio;

	for (prio = 0; prio < CNUAS_NUM_PRIO; prio++)
		if (cev & BIT(prio))
			cnuas_tx_stat_add(net, CNUAS_TX_PFC_PRIO0 + prio, 1);
}

/*
 * Give the free slot to the next frame the scheduler picks.  Returns the
 * frame sent (its bytes are in the slot) for the caller to free once the
 * lock is dropped, or NULL.
 */
static struct sk_buff *cnuas_tx_kick_locked(struct cnuas_net *net)
{
	struct sk_buff *skb;
	bool rdma;
	int tc;

	if (net->tx_busy || net->tx_shaped)
		return NULL;
	if (net->tx_ctrl) {
		skb = net->tx_ctrl;
		net->tx_ctrl = NULL;
		cnuas_tx_send_locked(net, skb, false, -1);
		if (READ_ONCE(net->link_up))
			cnuas_count_pfc_sent(net, skb->data[ETH_HLEN + 3]);
		return skb;
	}
	tc = cnuas_tx_pick_tc(net);
	if (tc < 0)
		return NULL;
	skb = cnuas_tc_peek(net, tc, &rdma);
	if (rdma) {
		__skb_unlink(skb, &net->rdma_txq[tc]);
		net->rdma_txq_len--;
		net->tx_rdma_turn &= ~BIT(tc);
	} else {
		__skb_unlink(skb, &net->stack_txq[tc]);
		net->tx_rdma_turn |= BIT(tc);
	}
	cnuas_tx_send_locked(net, skb, rdma, tc);
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

/* Wake the stack's queues with room, and the consumer when it waits. */
static void cnuas_tx_wake(struct cnuas_net *net, u8 wake_tcs, bool wake_rdma)
{
	struct net_device *dev = net->netdev;
	unsigned int tc;

	if (netif_running(dev))
		for (tc = 0; tc < CNUAS_NUM_TC; tc++)
			if (wake_tcs & BIT(tc))
				netif_tx_wake_queue(netdev_get_tx_queue(dev, tc));
	if (wake_rdma)
		cnuas_rdma_tx_wake(net);
}

/* Kick the slot and collect who may be woken; caller holds tx_lock. */
static struct sk_buff *cnuas_tx_run_locked(struct cnuas_net *net, u8 *wake_tcs,
					   bool *wake_rdma)
{
	struct sk_buff *sent = cnuas_tx_kick_locked(net);
	unsigned int tc;

	*wake_tcs = 0;
	for (tc = 0; tc < CNUAS_NUM_TC; tc++)
		if (skb_queue_len(&net->stack_txq[tc]) <= CNUAS_TX_TC_DEPTH / 2)
			*wake_tcs |= BIT(tc);
	*wake_rdma = false;
	if (net->tx_rdma_stopped &&
	    net->rdma_txq_len <= CNUAS_NET_RDMA_TXQ_LEN / 2) {
		net->tx_rdma_stopped = false;
		*wake_rdma = true;
	}
	return sent;
}

/* The slot is free again (TX-complete cause, or the watchdog). */
void cnuas_tx_complete(struct cnuas_net *net)
{
	struct sk_buff *sent;
	unsigned long flags;
	bool wake_rdma;
	u8 wake_tcs;

	spin_lock_irqsave(&net->tx_lock, flags);
	WRITE_ONCE(net->tx_busy, false);
	if (READ_ONCE(tx_rate_mbps) &&
	    ktime_before(ktime_get(), net->tx_shape_at)) {
		/* The emulated line is still busy with the last frame. */
		net->tx_shaped = true;
		hrtimer_start(&net->shape_timer, net->tx_shape_at,
			      HRTIMER_MODE_ABS_SOFT);
		spin_unlock_irqrestore(&net->tx_lock, flags);
		return;
	}
	sent = cnuas_tx_run_locked(net, &wake_tcs, &wake_rdma);
	spin_unlock_irqrestore(&net->tx_lock, flags);

	if (sent)
		dev_consume_skb_any(sent);
	cnuas_tx_wake(net, wake_tcs, wake_rdma);
}

static enum hrtimer_restart cnuas_shape_expire(struct hrtimer *t)
{
	struct cnuas_net *net = container_of(t, struct cnuas_net, shape_timer);
	struct sk_buff *sent;
	unsigned long flags;
	bool wake_rdma;
	u8 wake_tcs;

	spin_lock_irqsave(&net->tx_lock, flags);
	net->tx_shaped = false;
	sent = cnuas_tx_run_locked(net, &wake_tcs, &wake_rdma);
	spin_unlock_irqrestore(&net->tx_lock, flags);
	if (sent)
		dev_consume_skb_any(sent);
	cnuas_tx_wake(net, wake_tcs, wake_rdma);
	return HRTIMER_NORESTART;
}

netdev_tx_t cnuas_start_xmit(struct sk_buff *skb, struct net_device *dev)
{
	struct cnuas_net *net = netdev_priv(dev);
	unsigned int tc = skb_get_queue_mapping(skb);
	struct netdev_queue *txq;
	struct sk_buff *sent;
	unsigned long flags;
	enum cnuas_tx_stat drop;

	if (tc >= CNUAS_NUM_TC)
		tc = 0;
	txq = netdev_get_tx_queue(dev, tc);
	spin_lock_irqsave(&net->tx_lock, flags);
	if (skb->len > CNUAS_NET_MAX_FRAME || !skb->len) {
		drop = CNUAS_TX_DROP_OVERSIZE;
		goto drop;
	}
	if (READ_ONCE(net->layer) == CNUAS_LL_IB) {
		drop = CNUAS_TX_DROP_IB_MODE;
		goto drop;
	}
	if (skb_queue_len(&net->stack_txq[tc]) >= CNUAS_TX_TC_DEPTH) {
		/* The queue is stopped while it is full; not reached. */
		netif_tx_stop_queue(txq);
		spin_unlock_irqrestore(&net->tx_lock, flags);
		return NETDEV_TX_BUSY;
	}
	skb_tx_timestamp(skb);
	__skb_queue_tail(&net->stack_txq[tc], skb);
	if (skb_queue_len(&net->stack_txq[tc]) >= CNUAS_TX_TC_DEPTH)
		netif_tx_stop_queue(txq);
	sent = cnuas_tx_kick_locked(net);
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
	netdev_err(dev, "transmit completion missing on queue %u, IRQ_STATUS %#x; freeing the slot\n",
		   txqueue, cnuas_rd(net, CNUAS_REG_IRQ_STATUS));
	cnuas_tx_complete(net);
}

/* ---- PFC ---- */

/* Priority @prio resumes at @now; its pause time is counted. */
static void cnuas_pause_end_locked(struct cnuas_net *net, unsigned int prio,
				   ktime_t now)
{
	s64 us = ktime_us_delta(now, net->pause_start[prio]);

	WRITE_ONCE(net->paused, net->paused & ~BIT(prio));
	cnuas_tx_stat_add(net, CNUAS_TX_PFC_PAUSE_USEC0 + prio, max(us, 0LL));
}

static enum hrtimer_restart cnuas_pfc_expire(struct hrtimer *t)
{
	struct cnuas_pfc_timer *pt = container_of(t, struct cnuas_pfc_timer,
						  timer);
	struct cnuas_net *net = pt->net;
	struct sk_buff *sent = NULL;
	unsigned long flags;
	bool wake_rdma = false;
	u8 wake_tcs = 0;
	ktime_t now;

	spin_lock_irqsave(&net->tx_lock, flags);
	now = ktime_get();
	/* A newer XOFF moved the end (and re-armed us), or an XON came. */
	if ((net->paused & BIT(pt->prio)) &&
	    ktime_compare(now, net->pause_until[pt->prio]) >= 0) {
		if (cnuas_rd(net, CNUAS_REG_RX_STATUS) & CNUAS_RX_STATUS_READY) {
			/*
			 * A frame waits that may be the refresh: the device
			 * got it in time, we did not read it yet.  The poll
			 * reads it, then ends what is still due.
			 */
			spin_unlock_irqrestore(&net->tx_lock, flags);
			napi_schedule(&net->napi);
			return HRTIMER_NORESTART;
		}
		cnuas_pause_end_locked(net, pt->prio, now);
		sent = cnuas_tx_run_locked(net, &wake_tcs, &wake_rdma);
	}
	spin_unlock_irqrestore(&net->tx_lock, flags);
	if (sent)
		dev_consume_skb_any(sent);
	cnuas_tx_wake(net, wake_tcs, wake_rdma);
	return HRTIMER_NORESTART;
}

/*
 * End of a NAPI poll: the frames that had landed are read, so a pause whose
 * time is up and that no XOFF among them refreshed ends now.
 */
void cnuas_pfc_poll_done(struct cnuas_net *net)
{
	struct sk_buff *sent;
	unsigned long flags;
	unsigned int prio;
	bool wake_rdma;
	u8 wake_tcs;
	ktime_t now;

	if (!READ_ONCE(net->paused))
		return;
	spin_lock_irqsave(&net->tx_lock, flags);
	now = ktime_get();
	for (prio = 0; prio < CNUAS_NUM_PRIO; prio++)
		if ((net->paused & BIT(prio)) &&
		    ktime_compare(now, net->pause_until[prio]) >= 0)
			cnuas_pause_end_locked(net, prio, now);
	sent = cnuas_tx_run_locked(net, &wake_tcs, &wake_rdma);
	spin_unlock_irqrestore(&net->tx_lock, flags);
	if (sent)
		dev_consume_skb_any(sent);
	cnuas_tx_wake(net, wake_tcs, wake_rdma);
}

/*
 * A PFC frame arrived (NAPI): @cev is its class-enable vector, @quanta
 * the eight big-endian pause times.  Priorities without PFC enabled are
 * only counted (by the caller), as on real NICs.
 */
void cnuas_pfc_rx(struct cnuas_net *net, u16 cev, const u8 *quanta)
{
	struct net_device *dev = net->netdev;
	struct sk_buff *sent;
	unsigned long flags;
	unsigned int prio;
	bool wake_rdma;
	u8 wake_tcs, held;
	ktime_t now;
	u16 q;

	if (READ_ONCE(pfc_ignore))
		return;

	spin_lock_irqsave(&net->tx_lock, flags);
	cev &= net->pfc_en;
	now = ktime_get();
	for (prio = 0; prio < CNUAS_NUM_PRIO; prio++) {
		if (!(cev & BIT(prio)))
			continue;
		q = get_unaligned_be16(quanta + 2 * prio);
		if (!q) {
			if (net->paused & BIT(prio)) {
				cnuas_pause_end_locked(net, prio, now);
				hrtimer_try_to_cancel(&net->pfc_timer[prio].timer);
			}
			continue;
		}
		if (!(net->paused & BIT(prio))) {
			WRITE_ONCE(net->paused, net->paused | BIT(prio));
			net->pause_start[prio] = now;
		}
		net->pause_until[prio] = ktime_add_ns(now,
						      cnuas_pfc_quanta_ns(q));
		hrtimer_start(&net->pfc_timer[prio].timer,
			      net->pause_until[prio], HRTIMER_MODE_ABS_SOFT);
	}
	held = cnuas_paused_tcs(net);
	sent = cnuas_tx_run_locked(net, &wake_tcs, &wake_rdma);
	spin_unlock_irqrestore(&net->tx_lock, flags);

	if (sent)
		dev_consume_skb_any(sent);
	/* A class held by its peer has not hung: keep the watchdog off it. */
	for (prio = 0; prio < CNUAS_NUM_TC; prio++)
		if (held & BIT(prio))
			txq_trans_cond_update(netdev_get_tx_queue(dev, prio));
	cnuas_tx_wake(net, wake_tcs & ~held, wake_rdma);
}

/* Queue a PFC frame of our own for the PFC-enabled priorities. */
static void cnuas_pfc_send(struct cnuas_net *net, u8 cev, u16 quanta)
{
	struct sk_buff *skb, *old, *sent;
	unsigned long flags;
	unsigned int prio;
	bool wake_rdma;
	u8 wake_tcs;
	u8 *f;

	skb = alloc_skb(CNUAS_PFC_LEN, GFP_ATOMIC);
	if (!skb)
		return;
	f = skb_put_zero(skb, CNUAS_PFC_LEN);
	ether_addr_copy(f, cnuas_pfc_dest);
	ether_addr_copy(f + ETH_ALEN, net->netdev->dev_addr);
	put_unaligned_be16(ETH_P_PAUSE, f + 2 * ETH_ALEN);
	put_unaligned_be16(CNUAS_MAC_CTRL_PFC, f + ETH_HLEN);
	put_unaligned_be16(cev, f + ETH_HLEN + 2);
	for (prio = 0; prio < CNUAS_NUM_PRIO; prio++)
		if (cev & BIT(prio))
			put_unaligned_be16(quanta, f + ETH_HLEN + 4 + 2 * prio);

	spin_lock_irqsave(&net->tx_lock, flags);
	/* The newest state replaces one still waiting. */
	old = net->tx_ctrl;
	net->tx_ctrl = skb;
	sent = cnuas_tx_run_locked(net, &wake_tcs, &wake_rdma);
	spin_unlock_irqrestore(&net->tx_lock, flags);
	dev_kfree_skb_any(old);
	if (sent)
		dev_consume_skb_any(sent);
	cnuas_tx_wake(net, wake_tcs, wake_rdma);
}

/*
 * The receive path's view of its own backlog (NAPI): @behind when a poll
 * used its whole budget, i.e. frames kept waiting for the single landing
 * buffer.  Then the PFC-enabled priorities get an XOFF (refreshed at half
 * its time while it lasts) and, once a poll drains everything, an XON.
 * The device does not say which priority the waiting frames have, so every
 * PFC-enabled priority is paused.
 */
void cnuas_pfc_rx_pressure(struct cnuas_net *net, bool behind)
{
	u8 en = READ_ONCE(net->pfc_en);
	ktime_t now;

	if (behind) {
		if (!en)
			return;
		now = ktime_get();
		if (net->rx_xoff &&
		    ktime_to_ns(ktime_sub(now, net->rx_xoff_at)) <
		    cnuas_pfc_quanta_ns(CNUAS_PFC_XOFF_QUANTA) / 2)
			return;
		net->rx_xoff = true;
		net->rx_xoff_at = now;
		cnuas_pfc_send(net, en, CNUAS_PFC_XOFF_QUANTA);
	} else if (net->rx_xoff) {
		net->rx_xoff = false;
		cnuas_pfc_send(net, en, 0);
	}
}

/* ---- setup, DCB changes, teardown ---- */

void cnuas_tx_init(struct cnuas_net *net)
{
	unsigned int i;

	spin_lock_init(&net->tx_lock);
	for (i = 0; i < CNUAS_NUM_TC; i++) {
		skb_queue_head_init(&net->stack_txq[i]);
		skb_queue_head_init(&net->rdma_txq[i]);
	}
	for (i = 0; i < CNUAS_NUM_PRIO; i++) {
		net->pfc_timer[i].net = net;
		net->pfc_timer[i].prio = i;
		hrtimer_init(&net->pfc_timer[i].timer, CLOCK_MONOTONIC,
			     HRTIMER_MODE_ABS_SOFT);
		net->pfc_timer[i].timer.function = cnuas_pfc_expire;
	}
	hrtimer_init(&net->shape_timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS_SOFT);
	net->shape_timer.function = cnuas_shape_expire;
	net->drr_fresh = true;
	memset(net->dscp_prio, 0xff, sizeof(net->dscp_prio));
}

/*
 * The DCB settings changed (RTNL): the scheduler takes the new map, classes
 * and shares, and priorities whose PFC was turned off resume at once.
 */
void cnuas_tx_sched_update(struct cnuas_net *net)
{
	struct sk_buff *sent;
	unsigned long flags;
	unsigned int i;
	bool wake_rdma;
	u8 wake_tcs;
	ktime_t now;

	spin_lock_irqsave(&net->tx_lock, flags);
	for (i = 0; i < CNUAS_NUM_PRIO; i++)
		WRITE_ONCE(net->prio_tc[i], net->ets.prio_tc[i]);
	memcpy(net->tc_tsa, net->ets.tc_tsa, sizeof(net->tc_tsa));
	memcpy(net->tc_bw, net->ets.tc_tx_bw, sizeof(net->tc_bw));
	memset(net->drr_deficit, 0, sizeof(net->drr_deficit));
	net->drr_fresh = true;
	WRITE_ONCE(net->pfc_en, net->pfc.pfc_en);
	now = ktime_get();
	for (i = 0; i < CNUAS_NUM_PRIO; i++)
		if ((net->paused & BIT(i)) && !(net->pfc_en & BIT(i))) {
			cnuas_pause_end_locked(net, i, now);
			hrtimer_try_to_cancel(&net->pfc_timer[i].timer);
		}
	sent = cnuas_tx_run_locked(net, &wake_tcs, &wake_rdma);
	spin_unlock_irqrestore(&net->tx_lock, flags);
	if (sent)
		dev_consume_skb_any(sent);
	cnuas_tx_wake(net, wake_tcs, wake_rdma);
}

/* After the last sender is gone: stop the timers, free what waits. */
void cnuas_tx_purge(struct cnuas_net *net)
{
	unsigned int i;

	for (i = 0; i < CNUAS_NUM_PRIO; i++)
		hrtimer_cancel(&net->pfc_timer[i].timer);
	hrtimer_cancel(&net->shape_timer);
	net->tx_shaped = false;
	for (i = 0; i < CNUAS_NUM_TC; i++)
		__skb_queue_purge(&net->stack_txq[i]);
	dev_kfree_skb_any(net->tx_ctrl);
	net->tx_ctrl = NULL;
}

/* ---- the RDMA consumer's transmit (cnuas_net.h) ---- */

int cnuas_net_xmit(struct cnuas_net *net, struct sk_buff *skb)
{
	struct sk_buff *sent = NULL;
	unsigned long flags;
	unsigned int tc = 0;
	int err = 0;

	if (skb->len)
		tc = READ_ONCE(net->prio_tc[cnuas_frame_prio(net, skb)]);
	spin_lock_irqsave(&net->tx_lock, flags);
	if (!rcu_access_pointer(net->rdma)) {
		err = -ENODEV;
	} else if (!skb->len || skb->len > CNUAS_NET_MAX_FRAME) {
		cnuas_tx_stat_add(net, CNUAS_TX_DROP_OVERSIZE, 1);
		err = -EMSGSIZE;
	} else if (!READ_ONCE(net->link_up)) {
		cnuas_tx_stat_add(net, CNUAS_TX_DROP_LINK_DOWN, 1);
		err = -ENOLINK;
	} else if (net->rdma_txq_len >= CNUAS_NET_RDMA_TXQ_LEN) {
		cnuas_tx_stat_add(net, CNUAS_TX_DROP_RDMA_FULL, 1);
		net->tx_rdma_stopped = true;
		err = -ENOBUFS;
	} else {
		__skb_queue_tail(&net->rdma_txq[tc], skb);
		net->rdma_txq_len++;
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
