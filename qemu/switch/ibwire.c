// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Native IB wire helpers: CRCs (written from IBA vol. 1 §7.8 and
 * docs/wire.md), LRH checks, MAD-carrying UD frames.  See ibwire.h.
 */
#include <string.h>

#include "ibwire.h"
#include "switch.h"

/*
 * Both CRCs are processed reflected: bytes in order, least significant bit
 * first, so the polynomials are used bit-reversed.  0x04C11DB7 reversed is
 * 0xEDB88320; 0x100B reversed (16 bits) is 0xD008.  The ICRC is bitwise (only
 * the SM's few frames need it); the VCRC, checked on every forwarded frame,
 * uses a 256-entry table.
 */
#define CRC32_POLY_REV	0xedb88320u
#define CRC16_POLY_REV	0xd008u

static uint32_t crc32_update(uint32_t c, const uint8_t *p, size_t n)
{
	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ CRC32_POLY_REV : c >> 1;
	}
	return c;
}

static uint16_t crc16_table[256];
static bool crc16_ready;

/* A table for the VCRC: it runs over every forwarded ib frame. */
static void crc16_init(void)
{
	for (unsigned int n = 0; n < 256; n++) {
		uint16_t c = (uint16_t)n;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (uint16_t)((c >> 1) ^ CRC16_POLY_REV) : (uint16_t)(c >> 1);
		crc16_table[n] = c;
	}
	crc16_ready = true;
}

uint16_t ib_vcrc(const uint8_t *data, size_t len)
{
	uint16_t c = 0xffff;

	if (!crc16_ready)
		crc16_init();
	for (size_t i = 0; i < len; i++)
		c = (uint16_t)(crc16_table[(c ^ data[i]) & 0xff] ^ (c >> 8));
	return (uint16_t)~c;
}

/*
 * docs/wire.md: local packet, the LRH with VL as ones; global, the whole LRH
 * and the GRH's traffic class, flow label and hop limit as ones; the BTH's
 * byte 4 (resv8a) as ones in both.  The CRC runs from the LRH to @icrc_off.
 */
uint32_t ib_icrc(const uint8_t *frame, size_t icrc_off)
{
	uint8_t hdr[IB_LRH_BYTES + IB_GRH_BYTES + IB_BTH_BYTES];
	bool global = (frame[1] & 3) == IB_LNH_GLOBAL;
	size_t n = IB_LRH_BYTES + (global ? IB_GRH_BYTES : 0) + IB_BTH_BYTES;
	uint32_t c;

	memcpy(hdr, frame, n);
	if (global) {
		memset(hdr, 0xff, IB_LRH_BYTES);
		hdr[8] |= 0x0f;
		hdr[9] = hdr[10] = hdr[11] = 0xff;
		hdr[15] = 0xff;
	} else {
		hdr[0] |= 0xf0;
	}
	hdr[n - IB_BTH_BYTES + 4] = 0xff;
	c = crc32_update(0xffffffffu, hdr, n);
	c = crc32_update(c, frame + n, icrc_off - n);
	return ~c;
}

bool ib_lrh_ok(const uint8_t *f, size_t len)
{
	unsigned int vl = f[0] >> 4, lver = f[0] & 0xf, lnh = f[1] & 3;
	unsigned int pktlen = rd16(f + 4) & 0x7ff, slid = rd16(f + 6);

	if (lver != 0 || lnh < IB_LNH_LOCAL)
		return false;
	if ((size_t)pktlen * 4 + IB_VCRC_BYTES != len)
		return false;
	if (vl == IB_VL_MGMT && lnh == IB_LNH_GLOBAL)
		return false;
	return slid != 0 && !(slid >= IB_LID_MCAST_FIRST && slid <= IB_LID_MCAST_LAST);
}

bool ib_vcrc_ok(const uint8_t *f, size_t len)
{
	uint16_t stored = (uint16_t)(f[len - 2] | f[len - 1] << 8);

	return ib_vcrc(f, len - 2) == stored;
}

void ib_build_mad_frame(uint8_t *out, const struct ib_ud *a, uint32_t psn, const uint8_t *mad)
{
	uint8_t *bth = out + IB_LRH_BYTES, *deth = bth + IB_BTH_BYTES;
	size_t icrc_off = IB_MAD_FRAME_BYTES - IB_VCRC_BYTES - IB_ICRC_BYTES;
	uint32_t icrc;
	uint16_t vcrc;

	memset(out, 0, IB_MAD_FRAME_BYTES);
	out[0] = (uint8_t)(a->vl << 4);		/* LVer 0 */
	out[1] = IB_LNH_LOCAL;			/* SL 0 */
	wr16(out + 2, a->dlid);
	wr16(out + 4, (IB_MAD_FRAME_BYTES - IB_VCRC_BYTES) / 4);
	wr16(out + 6, a->slid);
	bth[0] = IB_OP_UD_SEND_ONLY;		/* SE, M, PadCnt, TVer all 0 */
	wr16(bth + 2, IB_PKEY_DEFAULT);
	wr24(bth + 5, a->dqp);
	wr24(bth + 9, psn & 0xffffff);
	wr32(deth, a->qkey);
	wr24(deth + 5, a->sqp);
	memcpy(deth + IB_DETH_BYTES, mad, IB_MAD_BYTES);
	icrc = ib_icrc(out, icrc_off);
	out[icrc_off] = (uint8_t)icrc;
	out[icrc_off + 1] = (uint8_t)(icrc >> 8);
	out[icrc_off + 2] = (uint8_t)(icrc >> 16);
	out[icrc_off + 3] = (uint8_t)(icrc >> 24);
	vcrc = ib_vcrc(out, IB_MAD_FRAME_BYTES - IB_VCRC_BYTES);
	out[IB_MAD_FRAME_BYTES - 2] = (uint8_t)vcrc;
	out[IB_MAD_FRAME_BYTES - 1] = (uint8_t)(vcrc >> 8);
}

bool ib_parse_mad_frame(const uint8_t *f, size_t len, struct ib_ud *a, const uint8_t **mad)
{
	size_t hdr = IB_LRH_BYTES, icrc_off;
	const uint8_t *bth, *deth;
	uint32_t stored;

	if (len < IB_LRH_BYTES + IB_BTH_BYTES)
		return false;
	if ((f[1] & 3) == IB_LNH_GLOBAL)
		hdr += IB_GRH_BYTES;
	else if ((f[1] & 3) != IB_LNH_LOCAL)
		return false;
	/* Exactly one MAD, no pad: headers + 256 + ICRC + VCRC. */
	if (len != hdr + IB_BTH_BYTES + IB_DETH_BYTES + IB_MAD_BYTES + IB_ICRC_BYTES +
		   IB_VCRC_BYTES)
		return false;
	bth = f + hdr;
	deth = bth + IB_BTH_BYTES;
	if (bth[0] != IB_OP_UD_SEND_ONLY || (bth[1] & 0x3f) != 0)
		return false;	/* PadCnt and TVer 0 */
	icrc_off = len - IB_VCRC_BYTES - IB_ICRC_BYTES;
	stored = (uint32_t)f[icrc_off] | (uint32_t)f[icrc_off + 1] << 8 |
		 (uint32_t)f[icrc_off + 2] << 16 | (uint32_t)f[icrc_off + 3] << 24;
	if (ib_icrc(f, icrc_off) != stored)
		return false;
	a->vl = f[0] >> 4;
	a->dlid = rd16(f + 2);
	a->slid = rd16(f + 6);
	a->dqp = rd24(bth + 5);
	a->qkey = rd32(deth);
	a->sqp = rd24(deth + 5);
	*mad = deth + IB_DETH_BYTES;
	return true;
}
