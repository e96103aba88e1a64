// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * cnuas_ib: frames.  Building RoCEv2 frames (Ethernet + IPv4/IPv6 + UDP
 * 4791 + BTH + extension headers + payload + pad + ICRC), handing them to
 * cnuas_net, waiting for room when its queue is full, and the receive
 * side: validate a frame, check its ICRC and queue it on its QP (or, for
 * multicast, on every QP attached to its group).  Frames to our own MAC
 * never reach the wire: they go round through the receive path here, as a
 * RoCE NIC loops back traffic to its own GIDs (docs/devices.md, "cnuas_ib loopback").
 *
 * In native InfiniBand mode (link_layer=ib, cnuas_ib_is_ib()) frames are
 * LRH [GRH] BTH ... pad ICRC VCRC instead, with no Ethernet, IP or UDP
 * (docs/wire.md, "LRH"; docs/devices.md, "cnuas_ib in native InfiniBand
 * mode", "Data path"); frames to our own LID take the loopback path.
 */
#include <linux/etherdevice.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/moduleparam.h>
#include <linux/prandom.h>
#include <linux/udp.h>
#include <net/ip.h>
#include <rdma/ib_addr.h>

#include "cnuas_ib.h"

/*
 * Fault injection for tests of the recovery paths: drop each frame that
 * arrives (requests, ACKs, responses alike) with probability 1/N, as a
 * lossy link after the switch would.  On receive, so a capture at the
 * switch still shows every frame a conformant sender sent.  Pseudo-random,
 * not every Nth: a periodic loss can hit the same packet of every go-back-N
 * resend.  The generator is seeded from rx_drop_seed, and re-seeded on every
 * write of any of the three parameters, so a run can be repeated: each
 * device draws one number per received frame from its own stream, hence
 * the same seed and the same frame sequence drop the same frames.  0, the
 * default N, drops none.
 *
 * rx_drop_frames = F (0: no limit) confines the loss to the first F frames
 * a device receives after that seeding.  A test tool's last exchange is not
 * loss-tolerant on any hardware: an ibv_rc_pingpong server leaves once its
 * own work is done, so a lost ACK of the client's last SEND leaves the
 * client retrying into a QP that is gone, and an rping client destroys its
 * ID right after sending the DREQ, which stops the CM resending it, so a
 * lost DREQ leaves the server waiting forever.  A test that knows a lower
 * bound of the frames each end receives before that exchange sets F below
 * it: the loss hits the transfer, never its end (docs/devices.md).
 */
static unsigned int rx_drop_one_in;
static unsigned int rx_drop_seed;
static unsigned int rx_drop_frames;
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
		pr_info("cnuas_ib: rx loss injection 1/%u seed %u frames %u\n",
			n, READ_ONCE(rx_drop_seed), READ_ONCE(rx_drop_frames));
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
module_param_cb(rx_drop_frames, &cnuas_ib_rx_drop_ops, &rx_drop_frames, 0644);
MODULE_PARM_DESC(rx_drop_frames,
		 "Test only: lose only among the first F frames after a write (0: all)");

/**
 * cnuas_ib_rx_drop_init - start a device's loss stream from the parameters
 * @dev: the device (probe, before any frame)
 */
void cnuas_ib_rx_drop_init(struct cnuas_ib_dev *dev)
{
	spin_lock_init(&dev->drop_lock);
	dev->drop_gen = atomic_read_acquire(&rx_drop_gen);
	dev->drop_drawn = 0;
	prandom_seed_state(&dev->drop_state, READ_ONCE(rx_drop_seed));
}

/* Is this received frame one the injected loss takes?  Any context. */
static bool cnuas_ib_rx_drop(struct cnuas_ib_dev *dev)
{
	unsigned long flags;
	unsigned int n, f;
	bool drop;
	u32 gen;

	if (likely(!READ_ONCE(rx_drop_one_in)))
		return false;
	spin_lock_irqsave(&dev->drop_lock, flags);
	/* pairs with the release in cnuas_ib_rx_drop_set() */
	gen = atomic_read_acquire(&rx_drop_gen);
	if (gen != dev->drop_gen) {
		dev->drop_gen = gen;
		dev->drop_drawn = 0;
		prandom_seed_state(&dev->drop_state, READ_ONCE(rx_drop_seed));
	}
	n = READ_ONCE(rx_drop_one_in);
	f = READ_ONCE(rx_drop_frames);
	/* one draw per frame while N != 0 and within the first F, whatever it decides */
	drop = false;
	if (n && (!f || dev->drop_drawn < f)) {
		dev->drop_drawn++;
		drop = !reciprocal_scale(prandom_u32_state(&dev->drop_state), n);
	}
	spin_unlock_irqrestore(&dev->drop_lock, flags);
	return drop;
}

/**
 * cnuas_ib_local_gid - our one GID in native IB mode (GID index 0)
 * @dev: the device
 * @gid: set to the subnet prefix the SM gave (fe80::/64 until then) and
 *	 the port GUID
 */
void cnuas_ib_local_gid(struct cnuas_ib_dev *dev, union ib_gid *gid)
{
	__be64 prefix = READ_ONCE(dev->port.subnet_prefix);

	gid->global.subnet_prefix = prefix ? prefix :
				    cpu_to_be64(0xfe80000000000000ULL);
	gid->global.interface_id = dev->node_guid;
}

/*
 * The port's MTU now, bounding path MTUs and UD payloads: RoCE, what the
 * netdev's MTU leaves; native IB, the port's neighbour MTU as the SM set
 * it (4096 until it did).
 */
enum ib_mtu cnuas_ib_port_mtu(struct cnuas_ib_dev *dev)
{
	u8 mtu;

	if (!cnuas_ib_is_ib(dev))
		return iboe_get_mtu(dev->netdev->mtu);
	mtu = READ_ONCE(dev->port.neighbor_mtu);
	if (mtu < IB_MTU_256 || mtu > CNUAS_IB_MAX_MTU)
		mtu = CNUAS_IB_MAX_MTU;
	return mtu;
}

/* The largest UD payload now, in bytes. */
u32 cnuas_ib_ud_mtu(struct cnuas_ib_dev *dev)
{
	return ib_mtu_enum_to_int(cnuas_ib_port_mtu(dev));
}

/*
 * Native IB: LRH [GRH] BTH ext-headers payload pad ICRC VCRC.  QP0 sends
 * on VL15 without a GRH; everything else on VL 0 with the AV's SL.  The
 * SLID is our LID, the permissive LID while we have none (only QP0 sends
 * then: the port is not ACTIVE).  LMC is 0: the path bits add nothing.
 */
static struct sk_buff *cnuas_ib_frame_alloc_ib(struct cnuas_ib_qp *qp,
					       const struct cnuas_ib_av *av,
					       u8 opcode, u32 paylen,
					       struct cnuas_bth **bth)
{
	const struct cnuas_opcode_info *info = &cnuas_ib_opcode[opcode];
	bool smi = qp->type == IB_QPT_SMI;
	bool grh = av->grh && !smi;
	unsigned int pad = (4 - (paylen & 3)) & 3;
	/* BTH through the ICRC: what the GRH's PayLen counts */
	unsigned int tlen = info->hdr_len + paylen + pad + CNUAS_ICRC_BYTES;
	unsigned int total = CNUAS_LRH_BYTES + (grh ? CNUAS_GRH_BYTES : 0) +
			     tlen;
	u16 lid = cnuas_ib_port_lid(qp->dev);
	struct cnuas_lrh *lrh;
	struct sk_buff *skb;
	u8 *p;

	/* PktLen is 11 bits of words; the UD and path MTUs keep us far below */
	if (paylen > CNUAS_NET_MAX_FRAME || total / 4 > CNUAS_LRH_PKTLEN_MASK)
		return NULL;
	skb = alloc_skb(total + CNUAS_VCRC_BYTES, GFP_ATOMIC);
	if (!skb)
		return NULL;
	p = skb_put(skb, total + CNUAS_VCRC_BYTES);
	skb_reset_mac_header(skb);
	skb->dev = qp->dev->netdev;

	lrh = (struct cnuas_lrh *)p;
	lrh->vl_lver = (smi ? CNUAS_VL_SMI : 0) << CNUAS_LRH_VL_SHIFT;
	lrh->sl_lnh = (av->sl << CNUAS_LRH_SL_SHIFT) |
		      (grh ? CNUAS_LNH_GLOBAL : CNUAS_LNH_LOCAL);
	lrh->dlid = htons(av->dlid);
	lrh->pktlen = htons(total / 4);
	lrh->slid = htons(lid ? lid : CNUAS_LID_PERMISSIVE);
	p += CNUAS_LRH_BYTES;

	if (grh) {
		struct ib_grh *g = (struct ib_grh *)p;

		g->version_tclass_flow = cpu_to_be32(6U << 28 |
						     (u32)av->tclass << 20 |
						     (av->flow_label & 0xfffff));
		g->paylen = cpu_to_be16(tlen);
		g->next_hdr = CNUAS_GRH_NXTHDR_BTH;
		g->hop_limit = av->hop_limit;
		memcpy(g->sgid.raw, &av->saddr, sizeof(g->sgid.raw));
		memcpy(g->dgid.raw, &av->daddr, sizeof(g->dgid.raw));
		p += CNUAS_GRH_BYTES;
	}

	memset(p, 0, info->hdr_len);
	*bth = (struct cnuas_bth *)p;
	(*bth)->opcode = opcode;
	(*bth)->flags = pad << CNUAS_BTH_PAD_SHIFT;
	(*bth)->pkey = htons(CNUAS_DEFAULT_PKEY);
	/* the pad must be zero; ICRC and VCRC come in frame_finish */
	memset(p + info->hdr_len + paylen, 0,
	       pad + CNUAS_ICRC_BYTES + CNUAS_VCRC_BYTES);
	return skb;
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

	if (cnuas_ib_is_ib(qp->dev))
		return cnuas_ib_frame_alloc_ib(qp, av, opcode, paylen, bth);
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
		ip->tos = cnuas_ib_tos(av->tclass, opcode);
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
		ip6_flow_hdr(ip6, cnuas_ib_tos(av->tclass, opcode),
			     htonl(av->flow_label));
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

/*
 * Compute and store the ICRC of a frame from cnuas_ib_frame_alloc() (and,
 * native IB, the VCRC after it).
 */
void cnuas_ib_frame_finish(struct cnuas_ib_qp *qp, struct sk_buff *skb)
{
	unsigned int end;
	int family;

	if (cnuas_ib_is_ib(qp->dev)) {
		end = skb->len - CNUAS_VCRC_BYTES - CNUAS_ICRC_BYTES;
		put_unaligned_le32(cnuas_ib_icrc_ib(skb->data, end),
				   skb->data + end);
		end += CNUAS_ICRC_BYTES;
		put_unaligned_le16(cnuas_ib_vcrc(skb->data, end),
				   skb->data + end);
		return;
	}
	family = (skb->data[ETH_HLEN] >> 4) == 4 ? AF_INET : AF_INET6;
	end = skb->len - CNUAS_ICRC_BYTES;
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

/* The group a RoCE frame of ours goes to, as a GID (IPv4-mapped for IPv4). */
static void cnuas_ib_roce_mgid(const struct sk_buff *skb, union ib_gid *mgid)
{
	const u8 *ip = skb->data + ETH_HLEN;

	if (skb->protocol == htons(ETH_P_IP))
		ipv6_addr_set_v4mapped(((const struct iphdr *)ip)->daddr,
				       (struct in6_addr *)mgid->raw);
	else
		memcpy(mgid->raw, &((const struct ipv6hdr *)ip)->daddr,
		       sizeof(mgid->raw));
}

/*
 * A frame went (to the wire or round the loop queue): sent_pkts, and
 * sent_kernel_pkts when a kernel QP sent it (QP0's SMA answers, QP1's SA
 * and CM MADs, IPoIB), so a test can tell its own user QP's frames from
 * what the kernel sends meanwhile.
 */
static void cnuas_ib_count_sent(struct cnuas_ib_qp *qp)
{
	cnuas_stat_inc(qp->dev, CNUAS_STAT_SENT_PKTS);
	if (!qp->user)
		cnuas_stat_inc(qp->dev, CNUAS_STAT_SENT_KERNEL_PKTS);
}

/*
 * Native IB: the part of sending that stays on this device.  Data frames
 * (anything but QP0's) go nowhere while the port is not ACTIVE; a frame to
 * our own LID goes round the loopback path; one to a multicast LID gives
 * our own members of its group (the GRH's DGID) a copy, as RoCE does.
 * Return: true when @skb was consumed here.
 */
static bool cnuas_ib_xmit_ib_local(struct cnuas_ib_qp *qp, struct sk_buff *skb)
{
	const struct cnuas_lrh *lrh = (const struct cnuas_lrh *)skb->data;
	struct cnuas_ib_dev *dev = qp->dev;
	u16 dlid = ntohs(lrh->dlid);
	u16 lid;

	if (qp->type != IB_QPT_SMI && !cnuas_ib_port_active(dev)) {
		cnuas_stat_inc(dev, CNUAS_STAT_TX_PORT_NOT_ACTIVE);
		kfree_skb(skb);
		return true;
	}
	lid = cnuas_ib_port_lid(dev);
	if (lid && dlid == lid) {
		cnuas_ib_count_sent(qp);
		cnuas_ib_loop_queue(dev, skb);
		return true;
	}
	if (cnuas_ib_lid_is_mcast(dlid) &&
	    (lrh->sl_lnh & CNUAS_LRH_LNH_MASK) == CNUAS_LNH_GLOBAL) {
		const struct ib_grh *g =
			(const struct ib_grh *)(skb->data + CNUAS_LRH_BYTES);

		if (cnuas_ib_mcast_has_members(dev, &g->dgid)) {
			struct sk_buff *copy = skb_clone(skb, GFP_ATOMIC);

			if (copy)
				cnuas_ib_loop_queue(dev, copy);
		}
	}
	return false;
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
	union ib_gid mgid;
	u32 gen;
	int err;

	if (cnuas_ib_is_ib(dev)) {
		if (cnuas_ib_xmit_ib_local(qp, skb))
			return 0;
	} else if (ether_addr_equal(eth_hdr(skb)->h_dest,
				    dev->netdev->dev_addr)) {
		cnuas_ib_count_sent(qp);
		cnuas_ib_loop_queue(dev, skb);
		return 0;
	} else if (is_multicast_ether_addr(eth_hdr(skb)->h_dest)) {
		/*
		 * Multicast: QPs of this device attached to the group get a
		 * copy too, as on a RoCE NIC; the frame still goes to the wire
		 * for the others.
		 */
		cnuas_ib_roce_mgid(skb, &mgid);
		if (cnuas_ib_mcast_has_members(dev, &mgid)) {
			struct sk_buff *copy = skb_clone(skb, GFP_ATOMIC);

			if (copy)
				cnuas_ib_loop_queue(dev, copy);
		}
	}

	gen = READ_ONCE(dev->tx_gen);
	err = cnuas_net_xmit(dev->net, skb);
	if (likely(!err)) {
		cnuas_ib_count_sent(qp);
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

static int cnuas_ib_parse_bth(struct sk_buff *skb, struct cnuas_pkt *pkt);

/*
 * Parse and check the IP and UDP headers and the BTH; fill the packet
 * description in skb->cb.  Return: 0, or -EINVAL to drop.
 */
static int cnuas_ib_parse(struct sk_buff *skb)
{
	struct cnuas_pkt *pkt = cnuas_pkt(skb);
	unsigned int ip_len, l4_off, len;
	const struct udphdr *udp;

	if (skb->len < ETH_HLEN)
		return -EINVAL;
	memset(pkt, 0, sizeof(*pkt));
	pkt->net_off = ETH_HLEN;
	if (skb->protocol == htons(ETH_P_IP)) {
		const struct iphdr *ip = (void *)(skb->data + ETH_HLEN);

		ip_len = sizeof(*ip);
		if (skb->len < ETH_HLEN + ip_len || ip->version != 4 ||
		    ip->ihl != 5 || ip->protocol != IPPROTO_UDP ||
		    ip_is_fragment(ip) || ip_fast_csum(ip, ip->ihl))
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
	return cnuas_ib_parse_bth(skb, pkt);
}

/*
 * Native IB: parse and check the LRH, its VCRC, the GRH if there is one
 * and the BTH; fill the packet description; take the VCRC off the end so
 * the frame ends with the ICRC, as a RoCE one does.  Return: 0, -EBADMSG
 * for a wrong VCRC, -EACCES for a P_Key not ours, -EINVAL for anything
 * else to drop.
 */
static int cnuas_ib_parse_ib(struct sk_buff *skb)
{
	struct cnuas_pkt *pkt = cnuas_pkt(skb);
	const struct cnuas_lrh *lrh;
	unsigned int len = skb->len;
	u8 lnh;

	if (len < CNUAS_LRH_BYTES + CNUAS_BTH_BYTES + CNUAS_ICRC_BYTES +
		  CNUAS_VCRC_BYTES)
		return -EINVAL;
	lrh = (const struct cnuas_lrh *)skb->data;
	lnh = lrh->sl_lnh & CNUAS_LRH_LNH_MASK;
	if ((lrh->vl_lver & CNUAS_LRH_LVER_MASK) ||
	    (lnh != CNUAS_LNH_LOCAL && lnh != CNUAS_LNH_GLOBAL))
		return -EINVAL;
	if (len != (ntohs(lrh->pktlen) & CNUAS_LRH_PKTLEN_MASK) * 4 +
		   CNUAS_VCRC_BYTES)
		return -EINVAL;
	len -= CNUAS_VCRC_BYTES;
	if (get_unaligned_le16(skb->data + len) !=
	    cnuas_ib_vcrc(skb->data, len))
		return -EBADMSG;

	memset(pkt, 0, sizeof(*pkt));
	pkt->vl = lrh->vl_lver >> CNUAS_LRH_VL_SHIFT;
	pkt->sl = lrh->sl_lnh >> CNUAS_LRH_SL_SHIFT;
	pkt->dlid = ntohs(lrh->dlid);
	pkt->slid = ntohs(lrh->slid);
	/* no port sends from LID 0 or a multicast LID */
	if (!pkt->slid || cnuas_ib_lid_is_mcast(pkt->slid))
		return -EINVAL;
	if (pskb_trim(skb, len))
		return -EINVAL;
	pkt->bth_off = CNUAS_LRH_BYTES;
	if (lnh == CNUAS_LNH_GLOBAL) {
		const struct ib_grh *grh;

		/* VL15 carries only QP0's SMPs, which never have a GRH */
		if (pkt->vl == CNUAS_VL_SMI ||
		    len < CNUAS_LRH_BYTES + CNUAS_GRH_BYTES + CNUAS_BTH_BYTES +
			  CNUAS_ICRC_BYTES)
			return -EINVAL;
		grh = (const struct ib_grh *)(skb->data + CNUAS_LRH_BYTES);
		if ((be32_to_cpu(grh->version_tclass_flow) >> 28) != 6 ||
		    grh->next_hdr != CNUAS_GRH_NXTHDR_BTH ||
		    be16_to_cpu(grh->paylen) !=
		    len - CNUAS_LRH_BYTES - CNUAS_GRH_BYTES)
			return -EINVAL;
		pkt->grh = 1;
		pkt->net_off = CNUAS_LRH_BYTES;
		pkt->bth_off += CNUAS_GRH_BYTES;
	}
	return cnuas_ib_parse_bth(skb, pkt);
}

/*
 * The BTH at pkt->bth_off, after the network headers: known opcode, TVer
 * 0, our P_Key, room for the headers, the pad and the ICRC.  Fills the
 * transport part of @pkt.  Return: 0, -EACCES for a P_Key not ours, or
 * -EINVAL for anything else to drop.
 */
static int cnuas_ib_parse_bth(struct sk_buff *skb, struct cnuas_pkt *pkt)
{
	const struct cnuas_opcode_info *info;
	const struct cnuas_bth *bth;
	u16 pkey;
	u8 pad;

	if (skb->len < pkt->bth_off + CNUAS_BTH_BYTES + CNUAS_ICRC_BYTES)
		return -EINVAL;
	bth = (const void *)(skb->data + pkt->bth_off);
	info = &cnuas_ib_opcode[bth->opcode];
	if (!(info->mask & CNUAS_OP_VALID) ||
	    (bth->flags & CNUAS_BTH_TVER_MASK))
		return -EINVAL;
	pkey = ntohs(bth->pkey);
	if ((pkey & 0x7fff) != 0x7fff)
		return -EACCES;
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
 * Native IB: cnuas_ib_rx_ib_addr() saw a multicast DLID and a GRH; the
 * group is the GRH's DGID.
 */
static void cnuas_ib_rx_mcast(struct cnuas_ib_dev *dev, struct sk_buff *skb)
{
	const struct cnuas_pkt *pkt = cnuas_pkt(skb);
	const u8 *ip = skb->data + pkt->net_off;
	union ib_gid mgid;

	/* docs/devices.md, "cnuas_ib: receive drop reasons", rules 3c and 3d */
	if (!(pkt->mask & CNUAS_OP_UD))
		goto drop;
	if (!pkt->family) {
		const struct ib_grh *grh = (const struct ib_grh *)ip;

		if (!pkt->grh || grh->dgid.raw[0] != 0xff)
			goto drop;
		mgid = grh->dgid;
	} else if (pkt->family == AF_INET) {
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
	if (cnuas_ib_mcast_rx(dev, skb, &mgid)) {
		cnuas_stat_inc(dev, CNUAS_STAT_RCVD_MCAST_PKTS);
	} else {
		cnuas_stat_inc(dev, CNUAS_STAT_RCVD_MCAST_NO_MEMBER);
		cnuas_stat_inc(dev, CNUAS_STAT_RCVD_DROP);
	}
	return;
drop:
	cnuas_stat_inc(dev, CNUAS_STAT_RCVD_ADDR_ERR);
	cnuas_stat_inc(dev, CNUAS_STAT_RCVD_DROP);
	kfree_skb(skb);
}

/*
 * Native IB: is a parsed frame, ICRC checked, addressed to us?  QP0 and
 * only QP0 on VL15; DLID our LID (none before the SM gives one), the
 * permissive LID (QP0 only: directed-route SMPs), or a multicast LID with
 * a GRH to the multicast QPN (the group is checked on delivery).
 */
static bool cnuas_ib_rx_ib_addr(struct cnuas_ib_dev *dev,
				const struct cnuas_pkt *pkt)
{
	bool vl15 = pkt->vl == CNUAS_VL_SMI, qp0 = !pkt->qpn;
	u16 lid = cnuas_ib_port_lid(dev);

	if (vl15 != qp0)
		return false;
	if (cnuas_ib_lid_is_mcast(pkt->dlid))
		return pkt->grh && pkt->qpn == CNUAS_IB_MCAST_QPN;
	if (pkt->qpn == CNUAS_IB_MCAST_QPN)
		return false;
	if (pkt->dlid == CNUAS_LID_PERMISSIVE)
		return pkt->qpn == 0;
	return lid && pkt->dlid == lid;
}

/**
 * cnuas_ib_rx - cnuas_net's receive callback (NAPI context)
 * @ctx: our device
 * @skb: a RoCEv2 frame (UDP 4791), or in native IB mode any frame (LRH
 *	 first), ours to consume
 */
void cnuas_ib_rx(void *ctx, struct sk_buff *skb)
{
	struct cnuas_ib_dev *dev = ctx;
	struct cnuas_ib_qp *qp;
	struct cnuas_pkt *pkt;
	enum cnuas_ib_stat why;
	struct sk_buff_head *q;
	unsigned int end;
	int err;

	cnuas_stat_inc(dev, CNUAS_STAT_RCVD_PKTS);
	if (cnuas_ib_rx_drop(dev)) {
		cnuas_stat_inc(dev, CNUAS_STAT_RX_DROP_INJECTED);
		goto free;
	}
	if (skb_linearize(skb))
		goto drop;
	if (cnuas_ib_is_ib(dev)) {
		err = cnuas_ib_parse_ib(skb);
		if (err == -EBADMSG) {
			cnuas_stat_inc(dev, CNUAS_STAT_RCVD_VCRC_ERR);
			goto free;
		}
		if (err)
			goto bad_hdr;
		pkt = cnuas_pkt(skb);
		end = skb->len - CNUAS_ICRC_BYTES;
		if (get_unaligned_le32(skb->data + end) !=
		    cnuas_ib_icrc_ib(skb->data, end)) {
			cnuas_stat_inc(dev, CNUAS_STAT_RCVD_ICRC_ERR);
			goto free;
		}
		why = CNUAS_STAT_RCVD_ADDR_ERR;
		if (!cnuas_ib_rx_ib_addr(dev, pkt))
			goto counted_drop;
	} else {
		err = cnuas_ib_parse(skb);
		if (err)
			goto bad_hdr;
		pkt = cnuas_pkt(skb);
		end = skb->len - CNUAS_ICRC_BYTES;
		if (get_unaligned_le32(skb->data + end) !=
		    cnuas_ib_icrc(skb, pkt->net_off, pkt->family, end)) {
			cnuas_stat_inc(dev, CNUAS_STAT_RCVD_ICRC_ERR);
			goto free;
		}
		if (cnuas_ib_pkt_ce(skb)) {
			cnuas_stat_inc(dev, CNUAS_STAT_NP_ECN_MARKED);
			pkt->ce = 1;
		}
		if (pkt->mask & CNUAS_OP_CNP) {
			cnuas_ib_rx_cnp(dev, skb);
			return;
		}
	}
	/* native IB has no CNP of this kind (its CC is another protocol) */
	err = -EINVAL;
	if (pkt->mask & CNUAS_OP_CNP)
		goto bad_hdr;

	if (pkt->qpn == CNUAS_IB_MCAST_QPN) {
		cnuas_ib_rx_mcast(dev, skb);
		return;
	}

	rcu_read_lock();
	qp = xa_load(&dev->qps, pkt->qpn);
	why = CNUAS_STAT_RCVD_QPN_ERR;
	if (!qp || READ_ONCE(qp->dying))
		goto unlock_drop;
	if (cnuas_qp_is_rc(qp) ? !(pkt->mask & CNUAS_OP_RC) :
				 !(pkt->mask & CNUAS_OP_UD))
		goto unlock_drop;
	q = (pkt->mask & CNUAS_OP_REQ) ? &qp->req_q : &qp->resp_q;
	why = CNUAS_STAT_RCVD_RXQ_FULL;
	if (skb_queue_len(q) >= CNUAS_IB_RXQ_MAX)
		goto unlock_drop;
	skb_queue_tail(q, skb);
	cnuas_ib_qp_run(qp);
	rcu_read_unlock();
	return;

bad_hdr:
	cnuas_stat_inc(dev, err == -EACCES ? CNUAS_STAT_RCVD_PKEY_ERR :
					     CNUAS_STAT_RCVD_HDR_ERR);
	goto drop;
unlock_drop:
	rcu_read_unlock();
counted_drop:
	cnuas_stat_inc(dev, why);
drop:
	cnuas_stat_inc(dev, CNUAS_STAT_RCVD_DROP);
free:
	kfree_skb(skb);
}

/*
 * Did @skb come from the peer this connected QP talks to?  RoCE: by the
 * source IP address.  Native IB: by the SLID (the path's DLID: LMC 0), and
 * when both the path and the packet have a GRH, by the SGID too.
 */
bool cnuas_ib_pkt_from_peer(struct cnuas_ib_qp *qp, struct sk_buff *skb)
{
	const struct cnuas_pkt *pkt = cnuas_pkt(skb);
	const u8 *ip = skb->data + pkt->net_off;

	if (cnuas_ib_is_ib(qp->dev)) {
		if (pkt->family || pkt->slid != qp->av.dlid)
			return false;
		if (!pkt->grh || !qp->av.grh)
			return true;
		return !memcmp(((const struct ib_grh *)ip)->sgid.raw,
			       &qp->av.daddr, sizeof(qp->av.daddr));
	}
	if (pkt->family != qp->av.family)
		return false;
	if (pkt->family == AF_INET)
		return !memcmp(&((const struct iphdr *)ip)->saddr,
			       &qp->av.daddr.s6_addr32[3], 4);
	return ipv6_addr_equal(&((const struct ipv6hdr *)ip)->saddr,
			       &qp->av.daddr);
}
