// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * cnuas_ib: the CRCs.  The invariant CRC of a RoCEv2 packet: CRC-32 (IEEE, reflected,
 * initial value all ones, result complemented, stored little-endian) over
 * eight bytes of 0xff standing in for the LRH, then the IP header, the UDP
 * header, the BTH and everything after it up to the ICRC, with the fields
 * routers may change taken as all ones: IPv4 TOS, TTL and header checksum
 * (IPv6 traffic class, flow label and hop limit), the UDP checksum and BTH
 * byte 4 (resv8a with FECN/BECN).
 *
 * Native InfiniBand (docs/wire.md, "ICRC" and "VCRC"): the same CRC-32
 * over the LRH (VL taken as ones) or, with a GRH, over eight bytes of ones
 * for the LRH and the GRH (traffic class, flow label and hop limit as
 * ones), then the BTH (byte 4 as ones) and the rest up to the ICRC; and the
 * variant CRC, CRC-16 of polynomial 0x100B with the same conventions
 * (reflected, preset all ones, complemented, stored little-endian) over
 * every byte from the LRH through the ICRC, nothing masked.
 */
#include <linux/crc32.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <linux/unaligned.h>

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

/**
 * cnuas_ib_icrc_ib - compute the ICRC of a linear native-IB frame
 * @frame: the frame, LRH first; the LRH's LNH says whether a GRH follows
 * @end: offset of the ICRC; the caller has checked that the LRH, the GRH
 *	 (LNH 0b11) and the BTH lie below it
 *
 * Return: the value to store (little-endian) in the ICRC field.
 */
u32 cnuas_ib_icrc_ib(const u8 *frame, unsigned int end)
{
	u8 hdr[CNUAS_LRH_BYTES + CNUAS_GRH_BYTES + CNUAS_BTH_BYTES];
	bool global = (frame[1] & CNUAS_LRH_LNH_MASK) == CNUAS_LNH_GLOBAL;
	unsigned int hlen = CNUAS_LRH_BYTES + CNUAS_BTH_BYTES +
			    (global ? CNUAS_GRH_BYTES : 0);
	u32 crc;

	memcpy(hdr, frame, hlen);
	if (global) {
		/* routers rebuild the LRH; tclass, flow label, hop limit vary */
		memset(hdr, 0xff, CNUAS_LRH_BYTES);
		hdr[CNUAS_LRH_BYTES] |= 0x0f;
		memset(hdr + CNUAS_LRH_BYTES + 1, 0xff, 3);
		hdr[CNUAS_LRH_BYTES + 7] = 0xff;
	} else {
		/* the VL: switches may change it */
		hdr[0] |= 0xf0;
	}
	/* BTH byte 4: resv8a with FECN/BECN */
	hdr[hlen - CNUAS_BTH_BYTES + 4] = 0xff;

	crc = crc32_le(~0U, hdr, hlen);
	crc = crc32_le(crc, frame + hlen, end - hlen);
	return ~crc;
}

/*
 * CRC-16, polynomial 0x100B reflected (0xD008): entry i is the CRC
 * register after shifting byte i through it, eight steps of "shift right,
 * xor 0xD008 if the bit shifted out was 1".  The kernel's crc16/crc-itu-t
 * helpers are other polynomials.
 */
static const u16 cnuas_vcrc_table[256] = {
	0x0000, 0x1ba1, 0x3742, 0x2ce3, 0x6e84, 0x7525, 0x59c6, 0x4267,
	0xdd08, 0xc6a9, 0xea4a, 0xf1eb, 0xb38c, 0xa82d, 0x84ce, 0x9f6f,
	0x1a01, 0x01a0, 0x2d43, 0x36e2, 0x7485, 0x6f24, 0x43c7, 0x5866,
	0xc709, 0xdca8, 0xf04b, 0xebea, 0xa98d, 0xb22c, 0x9ecf, 0x856e,
	0x3402, 0x2fa3, 0x0340, 0x18e1, 0x5a86, 0x4127, 0x6dc4, 0x7665,
	0xe90a, 0xf2ab, 0xde48, 0xc5e9, 0x878e, 0x9c2f, 0xb0cc, 0xab6d,
	0x2e03, 0x35a2, 0x1941, 0x02e0, 0x4087, 0x5b26, 0x77c5, 0x6c64,
	0xf30b, 0xe8aa, 0xc449, 0xdfe8, 0x9d8f, 0x862e, 0xaacd, 0xb16c,
	0x6804, 0x73a5, 0x5f46, 0x44e7, 0x0680, 0x1d21, 0x31c2, 0x2a63,
	0xb50c, 0xaead, 0x824e, 0x99ef, 0xdb88, 0xc029, 0xecca, 0xf76b,
	0x7205, 0x69a4, 0x4547, 0x5ee6, 0x1c81, 0x0720, 0x2bc3, 0x3062,
	0xaf0d, 0xb4ac, 0x984f, 0x83ee, 0xc189, 0xda28, 0xf6cb, 0xed6a,
	0x5c06, 0x47a7, 0x6b44, 0x70e5, 0x3282, 0x2923, 0x05c0, 0x1e61,
	0x810e, 0x9aaf, 0xb64c, 0xaded, 0xef8a, 0xf42b, 0xd8c8, 0xc369,
	0x4607, 0x5da6, 0x7145, 0x6ae4, 0x2883, 0x3322, 0x1fc1, 0x0460,
	0x9b0f, 0x80ae, 0xac4d, 0xb7ec, 0xf58b, 0xee2a, 0xc2c9, 0xd968,
	0xd008, 0xcba9, 0xe74a, 0xfceb, 0xbe8c, 0xa52d, 0x89ce, 0x926f,
	0x0d00, 0x16a1, 0x3a42, 0x21e3, 0x6384, 0x7825, 0x54c6, 0x4f67,
	0xca09, 0xd1a8, 0xfd4b, 0xe6ea, 0xa48d, 0xbf2c, 0x93cf, 0x886e,
	0x1701, 0x0ca0, 0x2043, 0x3be2, 0x7985, 0x6224, 0x4ec7, 0x5566,
	0xe40a, 0xffab, 0xd348, 0xc8e9, 0x8a8e, 0x912f, 0xbdcc, 0xa66d,
	0x3902, 0x22a3, 0x0e40, 0x15e1, 0x5786, 0x4c27, 0x60c4, 0x7b65,
	0xfe0b, 0xe5aa, 0xc949, 0xd2e8, 0x908f, 0x8b2e, 0xa7cd, 0xbc6c,
	0x2303, 0x38a2, 0x1441, 0x0fe0, 0x4d87, 0x5626, 0x7ac5, 0x6164,
	0xb80c, 0xa3ad, 0x8f4e, 0x94ef, 0xd688, 0xcd29, 0xe1ca, 0xfa6b,
	0x6504, 0x7ea5, 0x5246, 0x49e7, 0x0b80, 0x1021, 0x3cc2, 0x2763,
	0xa20d, 0xb9ac, 0x954f, 0x8eee, 0xcc89, 0xd728, 0xfbcb, 0xe06a,
	0x7f05, 0x64a4, 0x4847, 0x53e6, 0x1181, 0x0a20, 0x26c3, 0x3d62,
	0x8c0e, 0x97af, 0xbb4c, 0xa0ed, 0xe28a, 0xf92b, 0xd5c8, 0xce69,
	0x5106, 0x4aa7, 0x6644, 0x7de5, 0x3f82, 0x2423, 0x08c0, 0x1361,
	0x960f, 0x8dae, 0xa14d, 0xbaec, 0xf88b, 0xe32a, 0xcfc9, 0xd468,
	0x4b07, 0x50a6, 0x7c45, 0x67e4, 0x2583, 0x3e22, 0x12c1, 0x0960,
};

/*
 * Slice-by-8: entry [k][i] is byte i's contribution with k more bytes
 * shifted in after it ([0] is the byte table), so eight bytes take eight
 * independent lookups instead of eight steps that each wait for the last.
 * Every byte of every native-IB frame goes through this twice (send and
 * receive).  Filled once at module load.
 */
static u16 cnuas_vcrc_slice[8][256] __read_mostly;

/* Fill the slice tables from the byte table (module init). */
void cnuas_ib_vcrc_init(void)
{
	unsigned int i, k;

	memcpy(cnuas_vcrc_slice[0], cnuas_vcrc_table,
	       sizeof(cnuas_vcrc_table));
	for (k = 1; k < ARRAY_SIZE(cnuas_vcrc_slice); k++) {
		for (i = 0; i < 256; i++) {
			u16 c = cnuas_vcrc_slice[k - 1][i];

			cnuas_vcrc_slice[k][i] = (c >> 8) ^
						 cnuas_vcrc_table[c & 0xff];
		}
	}
}

/**
 * cnuas_ib_vcrc - the variant CRC of a native-IB frame
 * @buf: the frame, LRH first
 * @len: bytes covered: the LRH through the ICRC
 *
 * Return: the value to store (little-endian) after the ICRC.
 */
u16 cnuas_ib_vcrc(const u8 *buf, unsigned int len)
{
	const u16 (*t)[256] = cnuas_vcrc_slice;
	u16 crc = 0xffff;

	for (; len >= 8; buf += 8, len -= 8) {
		u16 x = crc ^ get_unaligned_le16(buf);

		crc = t[7][x & 0xff] ^ t[6][x >> 8] ^ t[5][buf[2]] ^
		      t[4][buf[3]] ^ t[3][buf[4]] ^ t[2][buf[5]] ^
		      t[1][buf[6]] ^ t[0][buf[7]];
	}
	while (len--)
		crc = (crc >> 8) ^ cnuas_vcrc_table[(crc ^ *buf++) & 0xff];
	return ~crc;
}
