/**
 * The Invariant CRC (ICRC) of RoCEv2 and native InfiniBand packets, and the
 * Variant CRC (VCRC) of native InfiniBand.
 *
 * ICRC (IBA vol. 1 §7.8.1; RoCEv2 annex A17.3.3): CRC-32 as Ethernet computes
 * it, over the packet from the first byte the transport sees through the last
 * pad byte, with every field a switch or router may rewrite taken as all ones:
 * - RoCEv2: 8 bytes of 0xFF stand in for the LRH, then the IP header with
 *   IPv4 TOS, TTL and header checksum (IPv6 traffic class, flow label, hop
 *   limit) as ones, the UDP header with its checksum as ones, the BTH with
 *   byte 4 (resv8a: FECN, BECN) as ones, the extended headers, payload and pad.
 * - Native IB, local packet (LNH = BTH): the LRH with VL as ones, the BTH with
 *   resv8a as ones, then the rest.
 * - Native IB, global packet (LNH = GRH): the whole LRH as ones (a router
 *   rebuilds it), the GRH with traffic class, flow label and hop limit as ones,
 *   the BTH with resv8a as ones, then the rest.
 * The 32-bit result is stored least significant byte first (the byte order in
 * which an Ethernet FCS goes on the wire; Linux rxe stores the CPU-order value).
 *
 * VCRC (IBA vol. 1 §7.8.2): CRC-16 with polynomial 0x100B, same bit order,
 * preset and complement as the ICRC, over every byte from the LRH through the
 * ICRC; stored least significant byte first, like the ICRC.
 */
import { CRC16_VCRC_INIT, crc16VcrcUpdate, CRC32_INIT, crc32Update } from "./crc.ts";
import { LNH_IBA_GLOBAL } from "./route.ts";

/** Scratch for the masked copy of the headers (IPv4 with options + UDP + BTH is at most 80 bytes). */
const scratch = new Uint8Array(96);
/** CRC register after the 8 bytes of 0xFF that stand in for an LRH. */
const AFTER_MASKED_LRH = crc32Update(CRC32_INIT, new Uint8Array(8).fill(0xff), 0, 8);

/**
 * ICRC of a RoCEv2 packet inside `frame`: the IP header starts at `ipOff`, the
 * BTH at `bthOff`, and the ICRC field at `icrcOff` (so the CRC covers
 * `[ipOff, icrcOff)`). IPv4 or IPv6 is taken from the IP version nibble.
 */
export function roceIcrc(
  frame: Uint8Array,
  ipOff: number,
  bthOff: number,
  icrcOff: number,
): number {
  const hdrEnd = bthOff + 12;
  const n = hdrEnd - ipOff;
  if (n > scratch.length || n < 20 || icrcOff < hdrEnd) {
    throw new RangeError(`roceIcrc: header span ${n} or ICRC offset ${icrcOff} impossible`);
  }
  for (let i = 0; i < n; i++) scratch[i] = frame[ipOff + i];
  const udp = bthOff - 8 - ipOff;
  if (scratch[0] >>> 4 === 4) {
    scratch[1] = 0xff; // TOS
    scratch[8] = 0xff; // TTL
    scratch[10] = 0xff; // header checksum
    scratch[11] = 0xff;
  } else {
    scratch[0] |= 0x0f; // traffic class (high nibble), then flow label
    scratch[1] = 0xff;
    scratch[2] = 0xff;
    scratch[3] = 0xff;
    scratch[7] = 0xff; // hop limit
  }
  scratch[udp + 6] = 0xff; // UDP checksum
  scratch[udp + 7] = 0xff;
  scratch[n - 8] = 0xff; // BTH resv8a
  let c = crc32Update(AFTER_MASKED_LRH, scratch, 0, n);
  c = crc32Update(c, frame, hdrEnd, icrcOff);
  return ~c >>> 0;
}

/**
 * ICRC of a native InfiniBand packet whose LRH starts at `frame[0]` and whose
 * ICRC field is at `icrcOff`. The BTH position follows from LRH.LNH (right
 * after the LRH, or after a GRH).
 */
export function ibIcrc(frame: Uint8Array, icrcOff: number): number {
  const global = (frame[1] & 3) === LNH_IBA_GLOBAL;
  const hdrEnd = global ? 8 + 40 + 12 : 8 + 12;
  if (icrcOff < hdrEnd || icrcOff > frame.length) {
    throw new RangeError(
      `ibIcrc: ICRC offset ${icrcOff} impossible for a ${frame.length}-byte frame`,
    );
  }
  for (let i = 0; i < hdrEnd; i++) scratch[i] = frame[i];
  if (global) {
    for (let i = 0; i < 8; i++) scratch[i] = 0xff; // LRH rebuilt by routers
    scratch[8] |= 0x0f; // GRH traffic class + flow label
    scratch[9] = 0xff;
    scratch[10] = 0xff;
    scratch[11] = 0xff;
    scratch[15] = 0xff; // hop limit
  } else {
    scratch[0] |= 0xf0; // VL
  }
  scratch[hdrEnd - 8] = 0xff; // BTH resv8a
  let c = crc32Update(CRC32_INIT, scratch, 0, hdrEnd);
  c = crc32Update(c, frame, hdrEnd, icrcOff);
  return ~c >>> 0;
}

/** VCRC over `frame[0..end)` (the LRH through the ICRC). */
export function ibVcrc(frame: Uint8Array, end: number): number {
  return ~crc16VcrcUpdate(CRC16_VCRC_INIT, frame, 0, end) & 0xffff;
}

/** Read a stored ICRC (least significant byte first). */
export function readIcrc(b: Uint8Array, off: number): number {
  return (b[off] | (b[off + 1] << 8) | (b[off + 2] << 16) | (b[off + 3] << 24)) >>> 0;
}

/** Store an ICRC (least significant byte first). */
export function writeIcrc(b: Uint8Array, off: number, v: number): void {
  b[off] = v;
  b[off + 1] = v >>> 8;
  b[off + 2] = v >>> 16;
  b[off + 3] = v >>> 24;
}

/** Read a stored VCRC (least significant byte first). */
export function readVcrc(b: Uint8Array, off: number): number {
  return b[off] | (b[off + 1] << 8);
}

/** Store a VCRC (least significant byte first). */
export function writeVcrc(b: Uint8Array, off: number, v: number): void {
  b[off] = v;
  b[off + 1] = v >>> 8;
}
