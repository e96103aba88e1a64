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

/** The codec of the header held in field `field`: one shape for all seven, so none can drift. */
function codec<K extends keyof ExtHeaderFields>(
  field: K,
  decode: (b: Uint8Array, off: number) => NonNullable<ExtHeaderFields[K]>,
  encode: (v: NonNullable<ExtHeaderFields[K]>, b: Uint8Array, off: number) => unknown,
): ExtHeaderCodec {
  return {
    read(b, off, into) {
      into[field] = decode(b, off);
    },
    write(from, b, off) {
      const v = from[field];
      if (v === undefined) return false;
      encode(v, b, off);
      return true;
    },
  };
}

const CODECS: Readonly<Record<ExtHeader, ExtHeaderCodec>> = {
  DETH: codec("deth", decodeDeth, encodeDeth),
  RETH: codec("reth", decodeReth, encodeReth),
  AtomicETH: codec("atomicEth", decodeAtomicEth, encodeAtomicEth),
  AETH: codec("aeth", decodeAeth, encodeAeth),
  AtomicAckETH: codec("atomicAckEth", decodeAtomicAckEth, encodeAtomicAckEth),
  ImmDt: codec("immDt", decodeImmDt, encodeImmDt),
  IETH: codec("ieth", decodeIeth, encodeIeth),
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
