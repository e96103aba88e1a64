/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * cnuas_ib: the transport headers as they are on the wire (all big-endian)
 * and the opcode table that says which headers each opcode carries.  The
 * layouts follow include/rdma/ib_hdrs.h and ib_pack.h; docs/wire.md summarises
 * them.
 */
#ifndef CNUAS_IB_HDR_H
#define CNUAS_IB_HDR_H

#include <linux/types.h>
#include <linux/skbuff.h>
#include <rdma/ib_pack.h>

#define CNUAS_BTH_BYTES		12
#define CNUAS_RETH_BYTES	16
#define CNUAS_AETH_BYTES	4
#define CNUAS_ATMETH_BYTES	28
#define CNUAS_ATMACK_BYTES	8
#define CNUAS_DETH_BYTES	8
#define CNUAS_IMMDT_BYTES	4
#define CNUAS_IETH_BYTES	4
#define CNUAS_ICRC_BYTES	4
#define CNUAS_GRH_BYTES		40
#define CNUAS_LRH_BYTES		8
#define CNUAS_VCRC_BYTES	2

/* Native IB LRH (docs/wire.md, "LRH"): byte 0 VL | LVer, byte 1 SL | LNH */
#define CNUAS_LRH_VL_SHIFT	4
#define CNUAS_LRH_LVER_MASK	0x0f
#define CNUAS_LRH_SL_SHIFT	4
#define CNUAS_LRH_LNH_MASK	0x03
#define CNUAS_LNH_LOCAL		0x2	/* a BTH follows */
#define CNUAS_LNH_GLOBAL	0x3	/* a GRH follows */
#define CNUAS_LRH_PKTLEN_MASK	0x7ff
#define CNUAS_VL_SMI		15	/* QP0 only */
#define CNUAS_LID_MCAST_FIRST	0xc000
#define CNUAS_LID_PERMISSIVE	0xffff
#define CNUAS_GRH_NXTHDR_BTH	0x1b

#define CNUAS_PSN_MASK		0xffffffU
#define CNUAS_QPN_MASK		0xffffffU
#define CNUAS_DEFAULT_PKEY	0xffff
#define CNUAS_GSI_QKEY		0x80010000U

/* BTH byte 1 */
#define CNUAS_BTH_SE		0x80
#define CNUAS_BTH_MIG		0x40
#define CNUAS_BTH_PAD_SHIFT	4
#define CNUAS_BTH_PAD_MASK	0x30
#define CNUAS_BTH_TVER_MASK	0x0f
/* BTH word 1: resv8a (FECN, BECN) above the destination QP */
#define CNUAS_BTH_FECN		0x80000000U
#define CNUAS_BTH_BECN		0x40000000U
/* BTH word 2 */
#define CNUAS_BTH_ACKREQ	0x80000000U

/*
 * RoCEv2 congestion notification packet (IBA annex A17.9.3): BTH opcode
 * 0x81 (transport base IB_OPCODE_CNP), BECN set, then 16 reserved bytes
 * and the ICRC.
 */
#define CNUAS_OPCODE_CNP	(IB_OPCODE_CNP | 0x01)
#define CNUAS_CNP_PAYLOAD_BYTES	16

/* AETH syndrome: top three bits say what it is */
#define CNUAS_AETH_TYPE_MASK	0xe0
#define CNUAS_AETH_ACK		0x00
#define CNUAS_AETH_RNR_NAK	0x20
#define CNUAS_AETH_NAK		0x60
#define CNUAS_AETH_CODE_MASK	0x1f
#define CNUAS_AETH_NO_CREDIT	0x1f	/* end-to-end credits not used */
#define CNUAS_NAK_PSN_SEQ	0
#define CNUAS_NAK_INV_REQ	1
#define CNUAS_NAK_REM_ACCESS	2
#define CNUAS_NAK_REM_OP	3

struct cnuas_lrh {
	u8 vl_lver;
	u8 sl_lnh;
	__be16 dlid;
	__be16 pktlen;		/* 5 reserved bits above PktLen (11) */
	__be16 slid;
} __packed;

struct cnuas_bth {
	u8 opcode;
	u8 flags;		/* SE, M, PadCnt, TVer */
	__be16 pkey;
	__be32 qpn;		/* resv8a (FECN/BECN) in the top byte */
	__be32 apsn;		/* AckReq in bit 31, PSN in the low 24 */
} __packed;

struct cnuas_reth {
	__be64 va;
	__be32 rkey;
	__be32 len;
} __packed;

struct cnuas_aeth {
	__be32 smsn;		/* syndrome in the top byte, MSN below */
} __packed;

struct cnuas_atmeth {
	__be64 va;
	__be32 rkey;
	__be64 swap_add;
	__be64 compare;
} __packed;

struct cnuas_atmack {
	__be64 orig;
} __packed;

struct cnuas_deth {
	__be32 qkey;
	__be32 sqp;		/* resv8 in the top byte */
} __packed;

/* What an opcode carries and means (cnuas_ib_opcode[].mask). */
enum cnuas_op_mask {
	CNUAS_OP_RETH		= BIT(0),
	CNUAS_OP_AETH		= BIT(1),
	CNUAS_OP_ATMETH		= BIT(2),
	CNUAS_OP_ATMACK		= BIT(3),
	CNUAS_OP_DETH		= BIT(4),
	CNUAS_OP_IMMDT		= BIT(5),
	CNUAS_OP_IETH		= BIT(6),
	CNUAS_OP_PAYLOAD	= BIT(7),
	CNUAS_OP_REQ		= BIT(8),	/* requester -> responder */
	CNUAS_OP_RESP		= BIT(9),	/* responder -> requester */
	CNUAS_OP_SEND		= BIT(10),
	CNUAS_OP_WRITE		= BIT(11),
	CNUAS_OP_READ		= BIT(12),
	CNUAS_OP_ATOMIC		= BIT(13),
	CNUAS_OP_FIRST		= BIT(14),
	CNUAS_OP_MIDDLE		= BIT(15),
	CNUAS_OP_LAST		= BIT(16),
	CNUAS_OP_ONLY		= CNUAS_OP_FIRST | CNUAS_OP_LAST,
	CNUAS_OP_RC		= BIT(17),
	CNUAS_OP_UD		= BIT(18),
	CNUAS_OP_VALID		= BIT(19),
	CNUAS_OP_CNP		= BIT(20),	/* RoCEv2 CNP (annex A17) */
};

/* Extension headers, in the order they follow the BTH. */
enum cnuas_hdr {
	CNUAS_HDR_RETH,
	CNUAS_HDR_DETH,
	CNUAS_HDR_AETH,
	CNUAS_HDR_ATMETH,
	CNUAS_HDR_ATMACK,
	CNUAS_HDR_IMMDT,
	CNUAS_HDR_IETH,
	CNUAS_HDR_NUM,
};

/**
 * struct cnuas_opcode_info - one row of the opcode table
 * @name: for logs
 * @mask: cnuas_op_mask bits
 * @hdr_len: bytes from the start of the BTH to the payload
 * @off: offset of each extension header from the start of the BTH
 *	 (filled by cnuas_ib_opcode_init() from @mask)
 */
struct cnuas_opcode_info {
	const char *name;
	u32 mask;
	u8 hdr_len;
	u8 off[CNUAS_HDR_NUM];
};

extern struct cnuas_opcode_info cnuas_ib_opcode[256];

void cnuas_ib_opcode_init(void);

/*
 * A parsed received frame, kept in skb->cb while it waits in a QP's
 * queue.  Offsets are from skb->data (the destination MAC; in native IB
 * mode the LRH).  RoCE: @net_off is the IP header, @family says which.
 * Native IB: @family is 0, @grh says whether a GRH arrived (then
 * @net_off is its offset), @slid, @dlid, @sl and @vl are the LRH's.
 */
struct cnuas_pkt {
	u32 psn;
	u32 qpn;
	u32 mask;
	u16 net_off;		/* IP header */
	u16 bth_off;
	u16 pay_off;
	u16 paylen;
	u8 opcode;
	u8 family;		/* AF_INET or AF_INET6; 0 in native IB */
	u8 ackreq:1;
	u8 se:1;
	u8 grh:1;		/* native IB: a GRH at @net_off */
	u8 sl:4;		/* native IB: LRH.SL */
	u8 vl:4;		/* native IB: LRH.VL */
	u8 ce:1;		/* RoCEv2: the IP ECN field was CE */
	u16 slid;		/* native IB: LRH.SLID */
	u16 dlid;		/* native IB: LRH.DLID */
};

static inline struct cnuas_pkt *cnuas_pkt(struct sk_buff *skb)
{
	BUILD_BUG_ON(sizeof(struct cnuas_pkt) > sizeof(skb->cb));
	return (struct cnuas_pkt *)skb->cb;
}

static inline void *cnuas_pkt_payload(struct sk_buff *skb)
{
	return skb->data + cnuas_pkt(skb)->pay_off;
}

/* Extension header @h of a parsed packet. */
static inline void *cnuas_pkt_hdr(struct sk_buff *skb, enum cnuas_hdr h)
{
	const struct cnuas_pkt *pkt = cnuas_pkt(skb);

	return skb->data + pkt->bth_off + cnuas_ib_opcode[pkt->opcode].off[h];
}

/* 24-bit serial number arithmetic: <0 when a is before b. */
static inline int cnuas_psn_cmp(u32 a, u32 b)
{
	return (s32)((a - b) << 8) >> 8;
}

static inline u32 cnuas_psn_add(u32 psn, u32 n)
{
	return (psn + n) & CNUAS_PSN_MASK;
}

#endif /* CNUAS_IB_HDR_H */
