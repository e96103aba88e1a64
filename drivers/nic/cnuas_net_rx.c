// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * cnuas_net receive: the NAPI poll takes the frame the device landed in the
 * receive buffer, decides where it goes (the stack, the RDMA consumer, or a
 * counter), copies it into an skb and releases the buffer for the next one.
 */
#include <linux/etherdevice.h>
#include <linux/if_vlan.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/netdevice.h>
#include <linux/rcupdate.h>
#include <linux/udp.h>
#include <linux/unaligned.h>
#include <net/ip.h>

#include "cnuas_net_priv.h"
#include "cnuas_regs.h"

#define CNUAS_MAC_CTRL_PAUSE	0x0001
#define CNUAS_MAC_CTRL_PFC	0x0101
#define CNUAS_PFC_FRAME_LEN	(ETH_HLEN + 2 + 2 + 2 * CNUAS_NUM_PRIO)

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

/* A MAC control frame (PAUSE, PFC) ends in the MAC: count it, obey PFC. */
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
				cnuas_rx_stat_add(net, CNUAS_RX_PFC_PRIO0 + prio,
						  1);
		/* Honoured for the PFC-enabled priorities only. */
		cnuas_pfc_rx(net, cev, f + ETH_HLEN + 4);
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
 * are accepted"; harness/models/cnuas_net_rx.ts predictRx checks it from there.
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
	/*
	 * Native IB: every frame is cnuas_ib's to judge, a runt included; it
	 * counts one shorter than its headers in rcvd_hdr_err
	 * (docs/devices.md, "cnuas_ib: receive drop reasons", rule 1).
	 */
	if (layer == CNUAS_LL_IB)
		return CNUAS_RX_RDMA;
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
bool cnuas_rx_one(struct cnuas_net *net)
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
