// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * cnuas_ib: the invariant CRC of a RoCEv2 packet.  CRC-32 (IEEE, reflected,
 * initial value all ones, result complemented, stored little-endian) over
 * eight bytes of 0xff standing in for the LRH, then the IP header, the UDP
 * header, the BTH and everything after it up to the ICRC, with the fields
 * routers may change taken as all ones: IPv4 TOS, TTL and header checksum
 * (IPv6 traffic class, flow label and hop limit), the UDP checksum and BTH
 * byte 4 (resv8a with FECN/BECN).
 */
#include <linux/crc32.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>

#include "cnuas_ib.h"

/**
 * cnuas_ib_icrc - compute the ICRC of a linear RoCEv2 frame
 * @skb: the frame, Ethernet header first
 * @net_off: offset of the IP header
 * @family: AF_INET or AF_INET6
 * @end: offset of the ICRC (the bytes covered end here)
 *
 * Return: the value to store (little-endian) in the ICRC field.
 */
u32 cnuas_ib_icrc(const struct sk_buff *skb, unsigned int net_off,
		  int family, unsigned int end)
{
	u8 hdr[sizeof(struct ipv6hdr) + sizeof(struct udphdr) +
	       CNUAS_BTH_BYTES];
	static const u8 lrh[8] = { 0xff, 0xff, 0xff, 0xff,
				   0xff, 0xff, 0xff, 0xff };
	unsigned int ip_len, hlen;
	u32 crc;

	ip_len = family == AF_INET ? sizeof(struct iphdr) :
				     sizeof(struct ipv6hdr);
	hlen = ip_len + sizeof(struct udphdr) + CNUAS_BTH_BYTES;
	memcpy(hdr, skb->data + net_off, hlen);
	if (family == AF_INET) {
		struct iphdr *ip = (struct iphdr *)hdr;

		ip->tos = 0xff;
		ip->ttl = 0xff;
		ip->check = htons(0xffff);
	} else {
		struct ipv6hdr *ip6 = (struct ipv6hdr *)hdr;

		ip6->priority = 0xf;
		memset(ip6->flow_lbl, 0xff, sizeof(ip6->flow_lbl));
		ip6->hop_limit = 0xff;
	}
	((struct udphdr *)(hdr + ip_len))->check = htons(0xffff);
	((struct cnuas_bth *)(hdr + ip_len + sizeof(struct udphdr)))->qpn |=
		htonl(0xff000000);

	crc = crc32_le(~0U, lrh, sizeof(lrh));
	crc = crc32_le(crc, hdr, hlen);
	crc = crc32_le(crc, skb->data + net_off + hlen, end - net_off - hlen);
	return ~crc;
}
