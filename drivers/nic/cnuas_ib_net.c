// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * cnuas_ib: frames.  Building RoCEv2 frames (Ethernet + IPv4/IPv6 + UDP
 * 4791 + BTH + extension headers + payload + pad + ICRC), handing them to
 * cnuas_net, waiting for room when its queue is full, and the receive
 * side: validate a frame, check its ICRC and queue it on its QP (or, for
 * multicast, on every QP attached to its group).  Frames to our own MAC
 * never reach the wire: they go round through the receive path here, as a
 * RoCE NIC loops back traffic to its own GIDs (docs/devices.md, "cnuas_ib loopback").
 */
#include <linux/etherdevice.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/moduleparam.h>
#include <linux/prandom.h>
#include <linux/udp.h>
#include <net/ip.h>

#include "cnuas_ib.h"

/*
 * Fault injection for tests of the recovery paths: drop each frame that
 * arrives (requests, ACKs, responses alike) with probability 1/N, as a
 * lossy link after the switch would.  On receive, so a capture at the
 * switch still shows every frame a conformant sender sent.  Pseudo-random,
 * not every Nth: a periodic loss can hit the same packet of every go-back-N
 * resend.  The generator is seeded from rx_drop_seed, and re-seeded on every
 * write of either parameter, so a run can be repeated: each device draws
 * one number per received frame from its own stream, hence the same seed
 * and the same frame sequence drop the same frames.  0, the default N,
 * drops none.
 */
static unsigned int rx_drop_one_in;
static unsigned int rx_drop_seed;
/* Bumped (after the new values are stored) by every parameter write. */
static atomic_t rx_drop_gen = ATOMIC_INIT(0);

static int cnuas_ib_rx_drop_set(const char *val, const struct kernel_param *kp)
{
	int err = param_set_uint(val, kp);
	unsigned int n;

	if (err)
		return err;
	/* the devices re-seed on their next frame, having seen the values */
	atomic_inc_return_release(&rx_drop_gen);
	n = READ_ONCE(rx_drop_one_in);
	if (n)
		pr_info("cnuas_ib: rx loss injection 1/%u seed %u\n", n,
			READ_ONCE(rx_drop_seed));
	return 0;
}

static const struct kernel_param_ops cnuas_ib_rx_drop_ops = {
	.set = cnuas_ib_rx_drop_set,
	.get = param_get_uint,
};

module_param_cb(rx_drop_one_in, &cnuas_ib_rx_drop_ops, &rx_drop_one_in, 0644);
MODULE_PARM_DESC(rx_drop_one_in,
		 "Test only: drop received frames with probability 1/N (0: none)");
module_param_cb(rx_drop_seed, &cnuas_ib_rx_drop_ops, &rx_drop_seed, 0644);
MODULE_PARM_DESC(rx_drop_seed,
		 "Test only: seed of the rx_drop_one_in loss pattern (each write re-seeds)");

/**
 * cnuas_ib_rx_drop_init - start a device's loss stream from the parameters
 * @dev: the device (probe, before any frame)
 */
void cnuas_ib_rx_drop_init(struct cnuas_ib_dev *dev)
{
	spin_lock_init(&dev->drop_lock);
	dev->drop_gen = atomic_read_acquire(&rx_drop_gen);
	prandom_seed_state(&dev->drop_state, READ_ONCE(rx_drop_seed));
}

/* Is this received frame one the injected loss takes?  Any context. */
static bool cnuas_ib_rx_drop(struct cnuas_ib_dev *dev)
{
	unsigned long flags;
	unsigned int n;
	bool drop;
	u32 gen;

	if (likely(!READ_ONCE(rx_drop_one_in)))
		return false;
	spin_lock_irqsave(&dev->drop_lock, flags);
	/* pairs with the release in cnuas_ib_rx_drop_set() */
	gen = atomic_read_acquire(&rx_drop_gen);
	if (gen != dev->drop_gen) {
		dev->drop_gen = gen;
		prandom_seed_state(&dev->drop_state, READ_ONCE(rx_drop_seed));
	}
	n = READ_ONCE(rx_drop_one_in);
	/* one draw per frame while N != 0, whatever it decides */
	drop = n && !reciprocal_scale(prandom_u32_state(&dev->drop_state), n);
	spin_unlock_irqrestore(&dev->drop_lock, flags);
	return drop;
}

static unsigned int cnuas_ip_len(int family)
{
	return family == AF_INET ? sizeof(struct iphdr) :
				   sizeof(struct ipv6hdr);
}

/**
 * cnuas_ib_frame_alloc - a frame with every header but the BTH's QP/PSN
 * @qp: the sender (its QP number picks the UDP source port for UD)
 * @av: where it goes
 * @opcode: BTH opcode (its row in the opcode table sizes the headers)
 * @paylen: payload bytes (the pad is added here)
 * @bth: set to the frame's BTH; the caller fills dest QP and PSN, the
 *       extension headers (zeroed) and the payload (at bth + hdr_len)
 *
 * Return: the frame, or NULL without memory.  GFP_ATOMIC.
 */
struct sk_buff *cnuas_ib_frame_alloc(struct cnuas_ib_qp *qp,
				     const struct cnuas_ib_av *av,
				     u8 opcode, u32 paylen,
				     struct cnuas_bth **bth)
{
	const struct cnuas_opcode_info *info = &cnuas_ib_opcode[opcode];
	struct net_device *ndev = qp->dev->netdev;
	unsigned int pad = (4 - (paylen & 3)) & 3;
	unsigned int ip_len = cnuas_ip_len(av->family);
	unsigned int l4_len = sizeof(struct udphdr) + info->hdr_len + paylen +
			      pad + CNUAS_ICRC_BYTES;
	unsigned int total = ETH_HLEN + ip_len + l4_len;
	struct sk_buff *skb;
	struct ethhdr *eth;
	struct udphdr *udp;
	u8 *p;

	skb = alloc_skb(total + NET_IP_ALIGN, GFP_ATOMIC);
	if (!skb)
		return NULL;
	skb_reserve(skb, NET_IP_ALIGN);
	p = skb_put(skb, total);
	skb_reset_mac_header(skb);
	skb->dev = ndev;

	eth = (struct ethhdr *)p;
	ether_addr_copy(eth->h_dest, av->dmac);
	ether_addr_copy(eth->h_source, ndev->dev_addr);
	p += ETH_HLEN;
	skb_set_network_header(skb, ETH_HLEN);

	if (av->family == AF_INET) {
		struct iphdr *ip = (struct iphdr *)p;

		eth->h_proto = htons(ETH_P_IP);
		skb->protocol = htons(ETH_P_IP);
		ip->version = 4;
		ip->ihl = 5;
		ip->tos = av->tclass;
		ip->tot_len = htons(ip_len + l4_len);
		ip->id = 0;
		ip->frag_off = htons(IP_DF);
		ip->ttl = av->hop_limit;
		ip->protocol = IPPROTO_UDP;
		memcpy(&ip->saddr, &av->saddr.s6_addr32[3], 4);
		memcpy(&ip->daddr, &av->daddr.s6_addr32[3], 4);
		ip->check = 0;
		ip->check = ip_fast_csum(ip, ip->ihl);
	} else {
		struct ipv6hdr *ip6 = (struct ipv6hdr *)p;

		eth->h_proto = htons(ETH_P_IPV6);
		skb->protocol = htons(ETH_P_IPV6);
		ip6_flow_hdr(ip6, av->tclass, htonl(av->flow_label));
		ip6->payload_len = htons(l4_len);
		ip6->nexthdr = IPPROTO_UDP;
		ip6->hop_limit = av->hop_limit;
		ip6->saddr = av->saddr;
		ip6->daddr = av->daddr;
	}
	p += ip_len;

	udp = (struct udphdr *)p;
	udp->source = htons(qp->sport);
	udp->dest = htons(CNUAS_NET_ROCE_UDP_PORT);
	udp->len = htons(l4_len);
	udp->check = 0;
	p += sizeof(*udp);

	memset(p, 0, info->hdr_len);
	*bth = (struct cnuas_bth *)p;
	(*bth)->opcode = opcode;
	(*bth)->flags = pad << CNUAS_BTH_PAD_SHIFT;
	(*bth)->pkey = htons(CNUAS_DEFAULT_PKEY);
	/* the pad and the ICRC: the pad must be zero */
	memset(p + info->hdr_len + paylen, 0, pad + CNUAS_ICRC_BYTES);
	return skb;
}

/* Compute and store the ICRC of a frame from cnuas_ib_frame_alloc(). */
void cnuas_ib_frame_finish(struct cnuas_ib_qp *qp, struct sk_buff *skb)
{
	int family = (skb->data[ETH_HLEN] >> 4) == 4 ? AF_INET : AF_INET6;
	unsigned int end = skb->len - CNUAS_ICRC_BYTES;

	put_unaligned_le32(cnuas_ib_icrc(skb, ETH_HLEN, family, end),
			   skb->data + end);
}

/*
 * A frame to one of our own addresses, or a copy of a multicast frame for
 * our own members: queue it for the receive path, where it counts as
 * received.  A full loop queue loses the frame as a congested wire would;
 * RC recovers.
 */
static void cnuas_ib_loop_queue(struct cnuas_ib_dev *dev, struct sk_buff *skb)
{
	if (skb_queue_len(&dev->loop_q) >= CNUAS_IB_LOOPQ_MAX) {
		kfree_skb(skb);
		return;
	}
	cnuas_stat_inc(dev, CNUAS_STAT_LOOPBACK_PKTS);
	skb_queue_tail(&dev->loop_q, skb);
	/*
	 * A BH work item: it runs in softirq context, as cnuas_net's NAPI
	 * poll does, and as soon as the sender re-enables BHs — a kworker
	 * would wait for a busy-polling receiver's time slice to end.
	 */
	queue_work(system_bh_wq, &dev->loop_work);
}

/* Deliver looped-back frames (softirq context, like NAPI). */
void cnuas_ib_loop_work(struct work_struct *work)
{
	struct cnuas_ib_dev *dev = container_of(work, struct cnuas_ib_dev,
						loop_work);
	struct sk_buff *skb;
	int n = 0;

	while ((skb = skb_dequeue(&dev->loop_q))) {
		cnuas_ib_rx(dev, skb);
		if (++n == CNUAS_IB_BUDGET) {
			/* a BH work item must not hog the CPU: go round */
			queue_work(system_bh_wq, &dev->loop_work);
			return;
		}
	}
}

/**
 * cnuas_ib_xmit - hand a frame to cnuas_net
 * @qp: the sender; put on the wait list when the queue is full
 * @skb: the frame, always consumed
 *
 * Return: 0 when it went (or was lost as on a wire: link down), -ENOBUFS
 * when cnuas_net's queue is full (the QP is kicked once there is room).
 */
int cnuas_ib_xmit(struct cnuas_ib_qp *qp, struct sk_buff *skb)
{
	struct cnuas_ib_dev *dev = qp->dev;
	unsigned long flags;
	u32 gen;
	int err;

	if (ether_addr_equal(eth_hdr(skb)->h_dest, dev->netdev->dev_addr)) {
		cnuas_stat_inc(dev, CNUAS_STAT_SENT_PKTS);
		cnuas_ib_loop_queue(dev, skb);
		return 0;
	}
	/*
	 * Multicast: QPs of this device attached to the group get a copy too,
	 * as on a RoCE NIC; the frame still goes to the wire for the others.
	 */
	if (is_multicast_ether_addr(eth_hdr(skb)->h_dest) &&
	    cnuas_ib_mcast_has_members(dev, skb)) {
		struct sk_buff *copy = skb_clone(skb, GFP_ATOMIC);

		if (copy)
			cnuas_ib_loop_queue(dev, copy);
	}

	gen = READ_ONCE(dev->tx_gen);
	err = cnuas_net_xmit(dev->net, skb);
	if (likely(!err)) {
		cnuas_stat_inc(dev, CNUAS_STAT_SENT_PKTS);
		return 0;
	}
	if (err != -ENOBUFS)
		return 0;

	cnuas_stat_inc(dev, CNUAS_STAT_TX_BUSY);
	spin_lock_irqsave(&dev->txwait_lock, flags);
	if (gen != dev->tx_gen) {
		/* room appeared since we tried: go again at once */
		spin_unlock_irqrestore(&dev->txwait_lock, flags);
		cnuas_ib_qp_kick(qp);
		return -ENOBUFS;
	}
	if (!qp->tx_blocked) {
		WRITE_ONCE(qp->tx_blocked, true);
		list_add_tail(&qp->txwait, &dev->txwait);
	}
	spin_unlock_irqrestore(&dev->txwait_lock, flags);
	return -ENOBUFS;
}

/* cnuas_net's queue has room again: kick every QP that waited. */
void cnuas_ib_tx_wake(void *ctx)
{
	struct cnuas_ib_dev *dev = ctx;
	struct cnuas_ib_qp *qp, *tmp;
	unsigned long flags;

	spin_lock_irqsave(&dev->txwait_lock, flags);
	dev->tx_gen++;
	list_for_each_entry_safe(qp, tmp, &dev->txwait, txwait) {
		list_del_init(&qp->txwait);
		WRITE_ONCE(qp->tx_blocked, false);
		cnuas_ib_qp_kick(qp);
	}
	spin_unlock_irqrestore(&dev->txwait_lock, flags);
}

/* Take a QP off the wait list (destroy). */
void cnuas_ib_txwait_del(struct cnuas_ib_qp *qp)
{
	unsigned long flags;

	spin_lock_irqsave(&qp->dev->txwait_lock, flags);
	if (qp->tx_blocked) {
		list_del_init(&qp->txwait);
		WRITE_ONCE(qp->tx_blocked, false);
	}
	spin_unlock_irqrestore(&qp->dev->txwait_lock, flags);
}

/*
 * Parse and check the IP and UDP headers and the BTH; fill the packet
 * description in skb->cb.  Return: 0, or -EINVAL to drop.
 */
static int cnuas_ib_parse(struct sk_buff *skb)
{
	struct cnuas_pkt *pkt = cnuas_pkt(skb);
	const struct cnuas_opcode_info *info;
	unsigned int ip_len, l4_off, len;
	const struct cnuas_bth *bth;
	const struct udphdr *udp;
	u16 pkey;
	u8 pad;

	if (skb->len < ETH_HLEN)
		return -EINVAL;
	memset(pkt, 0, sizeof(*pkt));
	pkt->net_off = ETH_HLEN;
	if (skb->protocol == htons(ETH_P_IP)) {
		const struct iphdr *ip = (void *)(skb->data + ETH_HLEN);

		ip_len = sizeof(*ip);
		if (skb->len < ETH_HLEN + ip_len || ip->version != 4 ||
		    ip->ihl != 5 || ip->protocol != IPPROTO_UDP ||
		    ip_is_fragment(ip))
			return -EINVAL;
		len = ntohs(ip->tot_len);
		if (len < ip_len || ETH_HLEN + len > skb->len)
			return -EINVAL;
		pkt->family = AF_INET;
	} else if (skb->protocol == htons(ETH_P_IPV6)) {
		const struct ipv6hdr *ip6 = (void *)(skb->data + ETH_HLEN);

		ip_len = sizeof(*ip6);
		if (skb->len < ETH_HLEN + ip_len || ip6->version != 6 ||
		    ip6->nexthdr != IPPROTO_UDP)
			return -EINVAL;
		len = ip_len + ntohs(ip6->payload_len);
		if (ETH_HLEN + len > skb->len)
			return -EINVAL;
		pkt->family = AF_INET6;
	} else {
		return -EINVAL;
	}
	/* drop the Ethernet padding: the IP length says where we end */
	if (pskb_trim(skb, ETH_HLEN + len))
		return -EINVAL;

	l4_off = ETH_HLEN + ip_len;
	if (skb->len < l4_off + sizeof(*udp) + CNUAS_BTH_BYTES +
		       CNUAS_ICRC_BYTES)
		return -EINVAL;
	udp = (const void *)(skb->data + l4_off);
	if (udp->dest != htons(CNUAS_NET_ROCE_UDP_PORT) ||
	    ntohs(udp->len) != skb->len - l4_off)
		return -EINVAL;

	pkt->bth_off = l4_off + sizeof(*udp);
	bth = (const void *)(skb->data + pkt->bth_off);
	info = &cnuas_ib_opcode[bth->opcode];
	if (!(info->mask & CNUAS_OP_VALID) ||
	    (bth->flags & CNUAS_BTH_TVER_MASK))
		return -EINVAL;
	pkey = ntohs(bth->pkey);
	if ((pkey & 0x7fff) != 0x7fff)
		return -EINVAL;
	pad = (bth->flags & CNUAS_BTH_PAD_MASK) >> CNUAS_BTH_PAD_SHIFT;
	if (skb->len < pkt->bth_off + info->hdr_len + pad + CNUAS_ICRC_BYTES)
		return -EINVAL;

	pkt->opcode = bth->opcode;
	pkt->mask = info->mask;
	pkt->qpn = ntohl(bth->qpn) & CNUAS_QPN_MASK;
	pkt->psn = ntohl(bth->apsn) & CNUAS_PSN_MASK;
	pkt->ackreq = !!(ntohl(bth->apsn) & CNUAS_BTH_ACKREQ);
	pkt->se = !!(bth->flags & CNUAS_BTH_SE);
	pkt->pay_off = pkt->bth_off + info->hdr_len;
	pkt->paylen = skb->len - pkt->pay_off - pad - CNUAS_ICRC_BYTES;
	if (!(info->mask & CNUAS_OP_PAYLOAD) && pkt->paylen)
		return -EINVAL;
	return 0;
}

/*
 * A frame to the multicast QPN: UD only, to a multicast IP address; the
 * group is the destination address as a GID (IPv4-mapped for IPv4).
 */
static void cnuas_ib_rx_mcast(struct cnuas_ib_dev *dev, struct sk_buff *skb)
{
	const struct cnuas_pkt *pkt = cnuas_pkt(skb);
	const u8 *ip = skb->data + pkt->net_off;
	union ib_gid mgid;

	if (!(pkt->mask & CNUAS_OP_UD))
		goto drop;
	if (pkt->family == AF_INET) {
		__be32 daddr = ((const struct iphdr *)ip)->daddr;

		if (!ipv4_is_multicast(daddr))
			goto drop;
		ipv6_addr_set_v4mapped(daddr, (struct in6_addr *)mgid.raw);
	} else {
		const struct in6_addr *daddr = &((const struct ipv6hdr *)ip)->daddr;

		if (!ipv6_addr_is_multicast(daddr))
			goto drop;
		memcpy(mgid.raw, daddr, sizeof(mgid.raw));
	}
	if (cnuas_ib_mcast_rx(dev, skb, &mgid))
		cnuas_stat_inc(dev, CNUAS_STAT_RCVD_MCAST_PKTS);
	else
		cnuas_stat_inc(dev, CNUAS_STAT_RCVD_DROP);
	return;
drop:
	cnuas_stat_inc(dev, CNUAS_STAT_RCVD_DROP);
	kfree_skb(skb);
}

/**
 * cnuas_ib_rx - cnuas_net's receive callback (NAPI context)
 * @ctx: our device
 * @skb: a RoCEv2 frame (UDP 4791), ours to consume
 */
void cnuas_ib_rx(void *ctx, struct sk_buff *skb)
{
	struct cnuas_ib_dev *dev = ctx;
	struct cnuas_ib_qp *qp;
	struct cnuas_pkt *pkt;
	struct sk_buff_head *q;
	unsigned int end;

	cnuas_stat_inc(dev, CNUAS_STAT_RCVD_PKTS);
	if (cnuas_ib_rx_drop(dev)) {
		cnuas_stat_inc(dev, CNUAS_STAT_RX_DROP_INJECTED);
		goto free;
	}
	if (skb_linearize(skb) || cnuas_ib_parse(skb))
		goto drop;
	pkt = cnuas_pkt(skb);

	end = skb->len - CNUAS_ICRC_BYTES;
	if (get_unaligned_le32(skb->data + end) !=
	    cnuas_ib_icrc(skb, pkt->net_off, pkt->family, end)) {
		cnuas_stat_inc(dev, CNUAS_STAT_RCVD_ICRC_ERR);
		goto free;
	}

	if (pkt->qpn == CNUAS_IB_MCAST_QPN) {
		cnuas_ib_rx_mcast(dev, skb);
		return;
	}

	rcu_read_lock();
	qp = xa_load(&dev->qps, pkt->qpn);
	if (!qp || READ_ONCE(qp->dying))
		goto unlock_drop;
	if (cnuas_qp_is_rc(qp) ? !(pkt->mask & CNUAS_OP_RC) :
				 !(pkt->mask & CNUAS_OP_UD))
		goto unlock_drop;
	q = (pkt->mask & CNUAS_OP_REQ) ? &qp->req_q : &qp->resp_q;
	if (skb_queue_len(q) >= CNUAS_IB_RXQ_MAX)
		goto unlock_drop;
	skb_queue_tail(q, skb);
	cnuas_ib_qp_run(qp);
	rcu_read_unlock();
	return;

unlock_drop:
	rcu_read_unlock();
drop:
	cnuas_stat_inc(dev, CNUAS_STAT_RCVD_DROP);
free:
	kfree_skb(skb);
}

/* Did @skb come from the peer this connected QP talks to? */
bool cnuas_ib_pkt_from_peer(struct cnuas_ib_qp *qp, struct sk_buff *skb)
{
	const struct cnuas_pkt *pkt = cnuas_pkt(skb);
	const u8 *ip = skb->data + pkt->net_off;

	if (pkt->family != qp->av.family)
		return false;
	if (pkt->family == AF_INET)
		return !memcmp(&((const struct iphdr *)ip)->saddr,
			       &qp->av.daddr.s6_addr32[3], 4);
	return ipv6_addr_equal(&((const struct ipv6hdr *)ip)->saddr,
			       &qp->av.daddr);
}
