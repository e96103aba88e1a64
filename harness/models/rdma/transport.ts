/**
 * InfiniBand transport headers: the Base Transport Header (BTH) and the
 * extended transport headers (RETH, AETH, AtomicETH, AtomicAckETH, DETH,
 * ImmDt, IETH). Layouts per the IBA specification volume 1, chapter 9
 * (summarised in docs/wire.md); all big-endian. Reserved fields are kept so
 * decode followed by encode reproduces the bytes exactly.
 */
import {
  checkField,
  checkField64,
  need,
  rd16,
  rd24,
  rd32,
  rd64,
  wr16,
  wr24,
  wr32,
  wr64,
} from "./bytes.ts";

/** Bytes in each transport header. */
export const BTH_BYTES = 12;
/** Bytes in an RDMA Extended Transport Header. */
export const RETH_BYTES = 16;
/** Bytes in an ACK Extended Transport Header. */
export const AETH_BYTES = 4;
/** Bytes in an Atomic Extended Transport Header. */
export const ATOMIC_ETH_BYTES = 28;
/** Bytes in an Atomic ACK Extended Transport Header. */
export const ATOMIC_ACK_ETH_BYTES = 8;
/** Bytes in a Datagram Extended Transport Header. */
export const DETH_BYTES = 8;
/** Bytes of immediate data. */
export const IMMDT_BYTES = 4;
/** Bytes in an Invalidate Extended Transport Header. */
export const IETH_BYTES = 4;
/** Bytes of the ICRC trailer. */
export const ICRC_BYTES = 4;
/** Bytes of the VCRC trailer (native InfiniBand only). */
export const VCRC_BYTES = 2;

/** PSNs are 24-bit and wrap. */
export const PSN_MASK = 0xffffff;

/** The Base Transport Header. */
export interface Bth {
  opcode: number;
  /** Solicited event, 1 bit. */
  se: number;
  /** Migration request, 1 bit. */
  migReq: number;
  /** Pad count, 2 bits: bytes of pad after the payload to reach a multiple of 4. */
  padCnt: number;
  /** Transport header version, 4 bits (0). */
  tver: number;
  pkey: number;
  /** Forward explicit congestion notification (resv8a bit 7). */
  fecn: number;
  /** Backward explicit congestion notification (resv8a bit 6). */
  becn: number;
  /** Rest of resv8a, 6 bits. */
  reserved6: number;
  /** Destination QP, 24 bits. */
  destQp: number;
  /** Acknowledge request, 1 bit. */
  ackReq: number;
  /** Reserved, 7 bits. */
  reserved7: number;
  /** Packet sequence number, 24 bits. */
  psn: number;
}

/** Decode a BTH at `off` (throws TruncatedError if short). */
export function decodeBth(b: Uint8Array, off = 0): Bth {
  need(b, off, BTH_BYTES, "BTH");
  const f = b[off + 1];
  const r = b[off + 4];
  return {
    opcode: b[off],
    se: f >>> 7,
    migReq: (f >>> 6) & 1,
    padCnt: (f >>> 4) & 3,
    tver: f & 0xf,
    pkey: rd16(b, off + 2),
    fecn: r >>> 7,
    becn: (r >>> 6) & 1,
    reserved6: r & 0x3f,
    destQp: rd24(b, off + 5),
    ackReq: b[off + 8] >>> 7,
    reserved7: b[off + 8] & 0x7f,
    psn: rd24(b, off + 9),
  };
}

/** Encode a BTH into `out` at `off` (allocated when omitted). */
export function encodeBth(h: Bth, out?: Uint8Array, off = 0): Uint8Array {
  checkField("BTH", "opcode", h.opcode, 8);
  checkField("BTH", "se", h.se, 1);
  checkField("BTH", "migReq", h.migReq, 1);
  checkField("BTH", "padCnt", h.padCnt, 2);
  checkField("BTH", "tver", h.tver, 4);
  checkField("BTH", "pkey", h.pkey, 16);
  checkField("BTH", "fecn", h.fecn, 1);
  checkField("BTH", "becn", h.becn, 1);
  checkField("BTH", "reserved6", h.reserved6, 6);
  checkField("BTH", "destQp", h.destQp, 24);
  checkField("BTH", "ackReq", h.ackReq, 1);
  checkField("BTH", "reserved7", h.reserved7, 7);
  checkField("BTH", "psn", h.psn, 24);
  const b = out ?? new Uint8Array(BTH_BYTES);
  need(b, off, BTH_BYTES, "BTH (encode)");
  b[off] = h.opcode;
  b[off + 1] = (h.se << 7) | (h.migReq << 6) | (h.padCnt << 4) | h.tver;
  wr16(b, off + 2, h.pkey);
  b[off + 4] = (h.fecn << 7) | (h.becn << 6) | h.reserved6;
  wr24(b, off + 5, h.destQp);
  b[off + 8] = (h.ackReq << 7) | h.reserved7;
  wr24(b, off + 9, h.psn);
  return b;
}

/** RDMA Extended Transport Header: the remote buffer of a WRITE or READ. */
export interface Reth {
  /** Remote virtual address. */
  va: bigint;
  rkey: number;
  /** Length of the whole message in bytes. */
  dmaLen: number;
}

/** Decode a RETH at `off`. */
export function decodeReth(b: Uint8Array, off = 0): Reth {
  need(b, off, RETH_BYTES, "RETH");
  return { va: rd64(b, off), rkey: rd32(b, off + 8), dmaLen: rd32(b, off + 12) };
}

/** Encode a RETH into `out` at `off` (allocated when omitted). */
export function encodeReth(h: Reth, out?: Uint8Array, off = 0): Uint8Array {
  checkField64("RETH", "va", h.va);
  checkField("RETH", "rkey", h.rkey, 32);
  checkField("RETH", "dmaLen", h.dmaLen, 32);
  const b = out ?? new Uint8Array(RETH_BYTES);
  need(b, off, RETH_BYTES, "RETH (encode)");
  wr64(b, off, h.va);
  wr32(b, off + 8, h.rkey);
  wr32(b, off + 12, h.dmaLen);
  return b;
}

/** ACK Extended Transport Header. */
export interface Aeth {
  /** Top 3 bits: 000 ACK, 001 RNR NAK, 011 NAK; low 5 bits credit count, RNR timer or NAK code. */
  syndrome: number;
  /** Message sequence number, 24 bits. */
  msn: number;
}

/** Decode an AETH at `off`. */
export function decodeAeth(b: Uint8Array, off = 0): Aeth {
  need(b, off, AETH_BYTES, "AETH");
  return { syndrome: b[off], msn: rd24(b, off + 1) };
}

/** Encode an AETH into `out` at `off` (allocated when omitted). */
export function encodeAeth(h: Aeth, out?: Uint8Array, off = 0): Uint8Array {
  checkField("AETH", "syndrome", h.syndrome, 8);
  checkField("AETH", "msn", h.msn, 24);
  const b = out ?? new Uint8Array(AETH_BYTES);
  need(b, off, AETH_BYTES, "AETH (encode)");
  b[off] = h.syndrome;
  wr24(b, off + 1, h.msn);
  return b;
}

/** What an AETH syndrome says. */
export type AethKind = "ack" | "rnr-nak" | "nak" | "reserved";

/** Classify an AETH syndrome by its top three bits. */
export function aethKind(syndrome: number): AethKind {
  switch (syndrome >>> 5) {
    case 0:
      return "ack";
    case 1:
      return "rnr-nak";
    case 3:
      return "nak";
    default:
      return "reserved";
  }
}

/** NAK codes (low 5 bits of a NAK syndrome). */
export const NAK_CODES = {
  PSN_SEQUENCE_ERROR: 0,
  INVALID_REQUEST: 1,
  REMOTE_ACCESS_ERROR: 2,
  REMOTE_OPERATIONAL_ERROR: 3,
  INVALID_RD_REQUEST: 4,
} as const;

/** AETH syndrome of an ACK with the given credit count (0..31; 31 = invalid credits). */
export function ackSyndrome(credits = 31): number {
  return credits & 0x1f;
}

/** AETH syndrome of a NAK with the given code (see {@link NAK_CODES}). */
export function nakSyndrome(code: number): number {
  return 0x60 | (code & 0x1f);
}

/** AETH syndrome of an RNR NAK with the given RNR timer code. */
export function rnrNakSyndrome(timer: number): number {
  return 0x20 | (timer & 0x1f);
}

/** Atomic Extended Transport Header (compare-and-swap, fetch-and-add). */
export interface AtomicEth {
  va: bigint;
  rkey: number;
  /** Swap value (CmpSwap) or add value (FetchAdd). */
  swapAdd: bigint;
  /** Compare value (CmpSwap only). */
  compare: bigint;
}

/** Decode an AtomicETH at `off`. */
export function decodeAtomicEth(b: Uint8Array, off = 0): AtomicEth {
  need(b, off, ATOMIC_ETH_BYTES, "AtomicETH");
  return {
    va: rd64(b, off),
    rkey: rd32(b, off + 8),
    swapAdd: rd64(b, off + 12),
    compare: rd64(b, off + 20),
  };
}

/** Encode an AtomicETH into `out` at `off` (allocated when omitted). */
export function encodeAtomicEth(h: AtomicEth, out?: Uint8Array, off = 0): Uint8Array {
  checkField64("AtomicETH", "va", h.va);
  checkField("AtomicETH", "rkey", h.rkey, 32);
  checkField64("AtomicETH", "swapAdd", h.swapAdd);
  checkField64("AtomicETH", "compare", h.compare);
  const b = out ?? new Uint8Array(ATOMIC_ETH_BYTES);
  need(b, off, ATOMIC_ETH_BYTES, "AtomicETH (encode)");
  wr64(b, off, h.va);
  wr32(b, off + 8, h.rkey);
  wr64(b, off + 12, h.swapAdd);
  wr64(b, off + 20, h.compare);
  return b;
}

/** Atomic ACK Extended Transport Header: the remote value before the atomic. */
export interface AtomicAckEth {
  origRemoteData: bigint;
}

/** Decode an AtomicAckETH at `off`. */
export function decodeAtomicAckEth(b: Uint8Array, off = 0): AtomicAckEth {
  need(b, off, ATOMIC_ACK_ETH_BYTES, "AtomicAckETH");
  return { origRemoteData: rd64(b, off) };
}

/** Encode an AtomicAckETH into `out` at `off` (allocated when omitted). */
export function encodeAtomicAckEth(h: AtomicAckEth, out?: Uint8Array, off = 0): Uint8Array {
  checkField64("AtomicAckETH", "origRemoteData", h.origRemoteData);
  const b = out ?? new Uint8Array(ATOMIC_ACK_ETH_BYTES);
  need(b, off, ATOMIC_ACK_ETH_BYTES, "AtomicAckETH (encode)");
  wr64(b, off, h.origRemoteData);
  return b;
}

/** Datagram Extended Transport Header (UD). */
export interface Deth {
  qkey: number;
  /** Reserved, 8 bits. */
  reserved8: number;
  /** Source QP, 24 bits. */
  srcQp: number;
}

/** Decode a DETH at `off`. */
export function decodeDeth(b: Uint8Array, off = 0): Deth {
  need(b, off, DETH_BYTES, "DETH");
  return { qkey: rd32(b, off), reserved8: b[off + 4], srcQp: rd24(b, off + 5) };
}

/** Encode a DETH into `out` at `off` (allocated when omitted). */
export function encodeDeth(h: Deth, out?: Uint8Array, off = 0): Uint8Array {
  checkField("DETH", "qkey", h.qkey, 32);
  checkField("DETH", "reserved8", h.reserved8, 8);
  checkField("DETH", "srcQp", h.srcQp, 24);
  const b = out ?? new Uint8Array(DETH_BYTES);
  need(b, off, DETH_BYTES, "DETH (encode)");
  wr32(b, off, h.qkey);
  b[off + 4] = h.reserved8;
  wr24(b, off + 5, h.srcQp);
  return b;
}

/** Decode immediate data (ImmDt) at `off`: an opaque 32-bit value. */
export function decodeImmDt(b: Uint8Array, off = 0): number {
  need(b, off, IMMDT_BYTES, "ImmDt");
  return rd32(b, off);
}

/** Encode immediate data into `out` at `off` (allocated when omitted). */
export function encodeImmDt(v: number, out?: Uint8Array, off = 0): Uint8Array {
  checkField("ImmDt", "value", v, 32);
  const b = out ?? new Uint8Array(IMMDT_BYTES);
  need(b, off, IMMDT_BYTES, "ImmDt (encode)");
  wr32(b, off, v);
  return b;
}

/** Decode an IETH at `off`: the R_Key to invalidate. */
export function decodeIeth(b: Uint8Array, off = 0): number {
  need(b, off, IETH_BYTES, "IETH");
  return rd32(b, off);
}

/** Encode an IETH into `out` at `off` (allocated when omitted). */
export function encodeIeth(rkey: number, out?: Uint8Array, off = 0): Uint8Array {
  checkField("IETH", "rkey", rkey, 32);
  const b = out ?? new Uint8Array(IETH_BYTES);
  need(b, off, IETH_BYTES, "IETH (encode)");
  wr32(b, off, rkey);
  return b;
}

/** Signed distance from PSN `b` to PSN `a` in the 24-bit circle, in [-2^23, 2^23). */
export function psnDiff(a: number, b: number): number {
  return ((a - b) << 8) >> 8;
}

/** PSN `p` advanced by `n`, wrapped to 24 bits. */
export function psnAdd(p: number, n: number): number {
  return (p + n) & PSN_MASK;
}
