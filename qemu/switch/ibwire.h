/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Native InfiniBand on the wire (docs/wire.md, IBA vol. 1 ch. 7 and 9): the
 * two CRCs, the LRH checks forwarding applies to every frame, and building /
 * parsing the UD SEND_ONLY packets that carry MADs (LRH, BTH, DETH, MAD,
 * ICRC, VCRC) for the subnet manager.
 */
#ifndef CNUAS_IBWIRE_H
#define CNUAS_IBWIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IB_LRH_BYTES		8
#define IB_GRH_BYTES		40
#define IB_BTH_BYTES		12
#define IB_DETH_BYTES		8
#define IB_ICRC_BYTES		4
#define IB_VCRC_BYTES		2
#define IB_MAD_BYTES		256
/* LRH + BTH + DETH + MAD + ICRC + VCRC, no GRH: every frame the SM sends. */
#define IB_MAD_FRAME_BYTES	(IB_LRH_BYTES + IB_BTH_BYTES + IB_DETH_BYTES + IB_MAD_BYTES + \
				 IB_ICRC_BYTES + IB_VCRC_BYTES)

#define IB_LNH_LOCAL		2	/* BTH follows */
#define IB_LNH_GLOBAL		3	/* GRH follows */
#define IB_VL_MGMT		15
#define IB_OP_UD_SEND_ONLY	0x64
#define IB_PKEY_DEFAULT		0xffff
#define IB_GSI_QKEY		0x80010000u

static inline uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t rd24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static inline uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) << 32 | rd32(p + 4);
}

static inline void wr16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void wr24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

static inline void wr32(uint8_t *p, uint32_t v)
{
	wr16(p, v >> 16);
	wr16(p + 2, v);
}

static inline void wr64(uint8_t *p, uint64_t v)
{
	wr32(p, (uint32_t)(v >> 32));
	wr32(p + 4, (uint32_t)v);
}

/* The VCRC over @data[0..len): CRC-16, polynomial 0x100B, reflected, preset and complemented. */
uint16_t ib_vcrc(const uint8_t *data, size_t len);
/* The ICRC of a whole frame (LRH first) whose ICRC field starts at @icrc_off. */
uint32_t ib_icrc(const uint8_t *frame, size_t icrc_off);

/* Forwarding's LRH checks (docs/switch.md, "Forwarding", ib step 1); @len >= 8. */
bool ib_lrh_ok(const uint8_t *frame, size_t len);
/* The stored VCRC (last 2 bytes, LSB first) matches; @len >= 8. */
bool ib_vcrc_ok(const uint8_t *frame, size_t len);

/* The addressing of one UD packet carrying a MAD. */
struct ib_ud {
	unsigned int vl;
	uint16_t dlid, slid;
	uint32_t dqp, sqp, qkey;
};

/*
 * Build a UD SEND_ONLY frame of IB_MAD_FRAME_BYTES into @out around the
 * 256-byte @mad; @psn is the BTH PSN.
 */
void ib_build_mad_frame(uint8_t *out, const struct ib_ud *a, uint32_t psn, const uint8_t *mad);

/*
 * Parse a frame that passed the forwarding checks as a UD SEND_ONLY carrying
 * exactly one MAD: fills @a and points *mad at the 256 bytes.  False for
 * anything else (docs/switch.md, "The frames": GRH skipped, opcode, TVer,
 * length, ICRC).
 */
bool ib_parse_mad_frame(const uint8_t *frame, size_t len, struct ib_ud *a, const uint8_t **mad);

#endif
