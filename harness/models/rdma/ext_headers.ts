/**
 * The extended transport headers as one table: for each header the opcode
 * table names, the packet field that holds it and the codec that reads and
 * writes it. Frame decoding (`frame.ts`) and frame building (`build.ts`) both
 * walk an opcode's headers through this table, so which field a header lands
 * in, and how far it moves the offset, is written down once.
 */
import { EXT_HEADER_BYTES, type ExtHeader, type OpcodeInfo } from "./opcodes.ts";
import {
  type Aeth,
  type AtomicAckEth,
  type AtomicEth,
  decodeAeth,
  decodeAtomicAckEth,
  decodeAtomicEth,
  decodeDeth,
  decodeIeth,
  decodeImmDt,
  decodeReth,
  type Deth,
  encodeAeth,
  encodeAtomicAckEth,
  encodeAtomicEth,
  encodeDeth,
  encodeIeth,
  encodeImmDt,
  encodeReth,
  type Reth,
} from "./transport.ts";

/** The extended transport headers of a packet, decoded or to be built; absent unless its opcode carries them. */
export interface ExtHeaderFields {
  /** RDMA extended transport header (WRITE FIRST/ONLY, READ requests). */
  reth?: Reth;
  /** ACK extended transport header (responses). */
  aeth?: Aeth;
  /** Atomic extended transport header (COMPARE_SWAP, FETCH_ADD). */
  atomicEth?: AtomicEth;
  /** Atomic acknowledge extended transport header (ATOMIC_ACKNOWLEDGE). */
  atomicAckEth?: AtomicAckEth;
  /** Datagram extended transport header (UD). */
  deth?: Deth;
  /** Immediate data (the `_WITH_IMMEDIATE` opcodes). */
  immDt?: number;
  /** Invalidate extended transport header: the R_Key to invalidate. */
  ieth?: number;
}

/** How one extended header moves between the wire and its field. */
interface ExtHeaderCodec {
  /** Decode the header at `off` into its field of `into`. */
  read(b: Uint8Array, off: number, into: ExtHeaderFields): void;
  /** Encode the header from its field of `from` at `off`; false when `from` lacks the field. */
  write(from: ExtHeaderFields, b: Uint8Array, off: number): boolean;
}

const CODECS: Readonly<Record<ExtHeader, ExtHeaderCodec>> = {
  DETH: {
    read(b, o, p) {
      p.deth = decodeDeth(b, o);
    },
    write(s, b, o) {
      if (s.deth === undefined) return false;
      encodeDeth(s.deth, b, o);
      return true;
    },
  },
  RETH: {
    read(b, o, p) {
      p.reth = decodeReth(b, o);
    },
    write(s, b, o) {
      if (s.reth === undefined) return false;
      encodeReth(s.reth, b, o);
      return true;
    },
  },
  AtomicETH: {
    read(b, o, p) {
      p.atomicEth = decodeAtomicEth(b, o);
    },
    write(s, b, o) {
      if (s.atomicEth === undefined) return false;
      encodeAtomicEth(s.atomicEth, b, o);
      return true;
    },
  },
  AETH: {
    read(b, o, p) {
      p.aeth = decodeAeth(b, o);
    },
    write(s, b, o) {
      if (s.aeth === undefined) return false;
      encodeAeth(s.aeth, b, o);
      return true;
    },
  },
  AtomicAckETH: {
    read(b, o, p) {
      p.atomicAckEth = decodeAtomicAckEth(b, o);
    },
    write(s, b, o) {
      if (s.atomicAckEth === undefined) return false;
      encodeAtomicAckEth(s.atomicAckEth, b, o);
      return true;
    },
  },
  ImmDt: {
    read(b, o, p) {
      p.immDt = decodeImmDt(b, o);
    },
    write(s, b, o) {
      if (s.immDt === undefined) return false;
      encodeImmDt(s.immDt, b, o);
      return true;
    },
  },
  IETH: {
    read(b, o, p) {
      p.ieth = decodeIeth(b, o);
    },
    write(s, b, o) {
      if (s.ieth === undefined) return false;
      encodeIeth(s.ieth, b, o);
      return true;
    },
  },
};

/**
 * Decode the extended headers of `op`, in wire order, from `b` at `off` into
 * `into`; returns the offset after them. The caller has checked that
 * `op.headerBytes` bytes are there.
 */
export function decodeExtHeaders(
  op: OpcodeInfo,
  b: Uint8Array,
  off: number,
  into: ExtHeaderFields,
): number {
  let o = off;
  for (const h of op.headers) {
    CODECS[h].read(b, o, into);
    o += EXT_HEADER_BYTES[h];
  }
  return o;
}

/**
 * Encode the extended headers of `op`, in wire order, from `from` into `b` at
 * `off`; returns the offset after them.
 *
 * @throws {RangeError} when `from` lacks a header `op` carries.
 */
export function encodeExtHeaders(
  op: OpcodeInfo,
  from: ExtHeaderFields,
  b: Uint8Array,
  off: number,
): number {
  let o = off;
  for (const h of op.headers) {
    if (!CODECS[h].write(from, b, o)) {
      throw new RangeError(`${op.name} carries a ${h}; give it in the spec`);
    }
    o += EXT_HEADER_BYTES[h];
  }
  return o;
}
