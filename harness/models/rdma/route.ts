/**
 * InfiniBand routing headers: the Local Route Header (LRH, 8 bytes) and the
 * Global Route Header (GRH, 40 bytes). Layouts per the IBA specification
 * volume 1, chapter 7 (summarised in docs/wire.md). Reserved fields are kept
 * so decode followed by encode reproduces the bytes exactly.
 */
import { checkBytes, checkField, need, rd16, rd32, wr16, wr32 } from "./bytes.ts";

/** Bytes in an LRH. */
export const LRH_BYTES = 8;
/** Bytes in a GRH. */
export const GRH_BYTES = 40;

/** LRH.LNH: raw packet, the payload is not IBA transport. */
export const LNH_RAW = 0;
/** LRH.LNH: IPv6 non-IBA transport follows. */
export const LNH_IP_NON_IBA = 1;
/** LRH.LNH: IBA local, a BTH follows the LRH. */
export const LNH_IBA_LOCAL = 2;
/** LRH.LNH: IBA global, a GRH follows the LRH. */
export const LNH_IBA_GLOBAL = 3;
/** GRH.NxtHdr value saying a BTH follows. */
export const GRH_NEXT_HEADER_BTH = 0x1b;

/** The Local Route Header. */
export interface Lrh {
  /** Virtual lane, 4 bits (15 = management). */
  vl: number;
  /** Link version, 4 bits (0). */
  lver: number;
  /** Service level, 4 bits. */
  sl: number;
  /** Reserved, 2 bits. */
  reserved2: number;
  /** Link next header, 2 bits (see the `LNH_*` constants). */
  lnh: number;
  dlid: number;
  /** Reserved, 5 bits. */
  reserved5: number;
  /** Packet length in 4-byte words from the LRH through the ICRC (VCRC excluded), 11 bits. */
  pktLen: number;
  slid: number;
}

/** Decode an LRH at `off` (throws TruncatedError if short). */
export function decodeLrh(b: Uint8Array, off = 0): Lrh {
  need(b, off, LRH_BYTES, "LRH");
  const w = rd16(b, off + 4);
  return {
    vl: b[off] >>> 4,
    lver: b[off] & 0xf,
    sl: b[off + 1] >>> 4,
    reserved2: (b[off + 1] >>> 2) & 3,
    lnh: b[off + 1] & 3,
    dlid: rd16(b, off + 2),
    reserved5: w >>> 11,
    pktLen: w & 0x7ff,
    slid: rd16(b, off + 6),
  };
}

/** Encode an LRH into `out` at `off` (allocated when omitted). */
export function encodeLrh(h: Lrh, out?: Uint8Array, off = 0): Uint8Array {
  checkField("LRH", "vl", h.vl, 4);
  checkField("LRH", "lver", h.lver, 4);
  checkField("LRH", "sl", h.sl, 4);
  checkField("LRH", "reserved2", h.reserved2, 2);
  checkField("LRH", "lnh", h.lnh, 2);
  checkField("LRH", "dlid", h.dlid, 16);
  checkField("LRH", "reserved5", h.reserved5, 5);
  checkField("LRH", "pktLen", h.pktLen, 11);
  checkField("LRH", "slid", h.slid, 16);
  const b = out ?? new Uint8Array(LRH_BYTES);
  need(b, off, LRH_BYTES, "LRH (encode)");
  b[off] = (h.vl << 4) | h.lver;
  b[off + 1] = (h.sl << 4) | (h.reserved2 << 2) | h.lnh;
  wr16(b, off + 2, h.dlid);
  wr16(b, off + 4, (h.reserved5 << 11) | h.pktLen);
  wr16(b, off + 6, h.slid);
  return b;
}

/** The Global Route Header (IPv6-shaped). */
export interface Grh {
  /** IP version, 4 bits (6). */
  ipVer: number;
  tClass: number;
  /** 20 bits. */
  flowLabel: number;
  /** Bytes after the GRH through the ICRC (VCRC excluded). */
  payLen: number;
  /** 0x1B when a BTH follows. */
  nxtHdr: number;
  hopLmt: number;
  /** Source GID, 16 bytes. */
  sgid: Uint8Array;
  /** Destination GID, 16 bytes. */
  dgid: Uint8Array;
}

/** Decode a GRH at `off` (throws TruncatedError if short). GIDs are views into `b`. */
export function decodeGrh(b: Uint8Array, off = 0): Grh {
  need(b, off, GRH_BYTES, "GRH");
  const w = rd32(b, off);
  return {
    ipVer: w >>> 28,
    tClass: (w >>> 20) & 0xff,
    flowLabel: w & 0xfffff,
    payLen: rd16(b, off + 4),
    nxtHdr: b[off + 6],
    hopLmt: b[off + 7],
    sgid: b.subarray(off + 8, off + 24),
    dgid: b.subarray(off + 24, off + 40),
  };
}

/** Encode a GRH into `out` at `off` (allocated when omitted). */
export function encodeGrh(h: Grh, out?: Uint8Array, off = 0): Uint8Array {
  checkField("GRH", "ipVer", h.ipVer, 4);
  checkField("GRH", "tClass", h.tClass, 8);
  checkField("GRH", "flowLabel", h.flowLabel, 20);
  checkField("GRH", "payLen", h.payLen, 16);
  checkField("GRH", "nxtHdr", h.nxtHdr, 8);
  checkField("GRH", "hopLmt", h.hopLmt, 8);
  checkBytes("GRH", "sgid", h.sgid, 16);
  checkBytes("GRH", "dgid", h.dgid, 16);
  const b = out ?? new Uint8Array(GRH_BYTES);
  need(b, off, GRH_BYTES, "GRH (encode)");
  wr32(b, off, ((h.ipVer << 28) | (h.tClass << 20) | h.flowLabel) >>> 0);
  wr16(b, off + 4, h.payLen);
  b[off + 6] = h.nxtHdr;
  b[off + 7] = h.hopLmt;
  b.set(h.sgid, off + 8);
  b.set(h.dgid, off + 24);
  return b;
}
