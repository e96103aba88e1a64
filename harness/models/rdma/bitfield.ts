/**
 * Layout-driven codecs for the MAD attributes, whose fields are packed at bit
 * granularity (IBA tables give each as "bits 264..267"). A layout is a list of
 * (name, bit offset from the first bit of the attribute, width). Fields of up
 * to 32 bits are numbers; 64-bit fields are bigints. Every bit of the
 * attribute belongs to exactly one field (reserved bits get named fields), so
 * decode followed by encode reproduces the bytes.
 */
import { FieldRangeError } from "./errors.ts";
import { need } from "./bytes.ts";

/** One field: name, bit offset (big-endian bit 0 = MSB of byte 0), width in bits. */
export type FieldSpec = readonly [name: string, bitOffset: number, bits: number];

/** Read `bits` (≤ 32) bits starting at big-endian bit offset `bit` of `b[off..]`. */
export function readBits(b: Uint8Array, off: number, bit: number, bits: number): number {
  let v = 0;
  for (let i = 0; i < bits; i++) {
    const p = bit + i;
    v = v * 2 + ((b[off + (p >>> 3)] >>> (7 - (p & 7))) & 1);
  }
  return v;
}

/** Write `bits` (≤ 32) bits of `v` at big-endian bit offset `bit` of `b[off..]`. */
export function writeBits(b: Uint8Array, off: number, bit: number, bits: number, v: number): void {
  for (let i = bits - 1, x = v; i >= 0; i--, x = Math.floor(x / 2)) {
    const p = bit + i;
    const mask = 1 << (7 - (p & 7));
    if (x % 2) b[off + (p >>> 3)] |= mask;
    else b[off + (p >>> 3)] &= ~mask;
  }
}

/** Decode every field of `layout` from the `bytes`-byte attribute at `off`. */
export function decodeLayout(
  layout: readonly FieldSpec[],
  bytes: number,
  what: string,
  b: Uint8Array,
  off: number,
): Record<string, number | bigint> {
  need(b, off, bytes, what);
  const out: Record<string, number | bigint> = {};
  for (const [name, bit, bits] of layout) {
    out[name] = bits === 64
      ? (BigInt(readBits(b, off, bit, 32)) << 32n) | BigInt(readBits(b, off, bit + 32, 32))
      : readBits(b, off, bit, bits);
  }
  return out;
}

/** Encode every field of `layout` from `v` into the `bytes`-byte attribute at `off`. */
export function encodeLayout(
  layout: readonly FieldSpec[],
  bytes: number,
  what: string,
  v: Readonly<Record<string, number | bigint>>,
  out: Uint8Array | undefined,
  off: number,
): Uint8Array {
  const b = out ?? new Uint8Array(bytes);
  need(b, off, bytes, `${what} (encode)`);
  for (const [name, bit, bits] of layout) {
    const x = v[name];
    if (bits === 64) {
      if (typeof x !== "bigint" || x < 0n || x > 0xffff_ffff_ffff_ffffn) {
        throw new FieldRangeError(what, name, String(x), 64);
      }
      writeBits(b, off, bit, 32, Number(x >> 32n));
      writeBits(b, off, bit + 32, 32, Number(x & 0xffff_ffffn));
    } else {
      if (typeof x !== "number" || !Number.isInteger(x) || x < 0 || x >= 2 ** bits) {
        throw new FieldRangeError(what, name, String(x), bits);
      }
      writeBits(b, off, bit, bits, x);
    }
  }
  return b;
}

/** Check that a layout covers `bytes` bytes exactly once, in order (used by tests). */
export function layoutCoversExactly(layout: readonly FieldSpec[], bytes: number): boolean {
  let next = 0;
  for (const [, bit, bits] of layout) {
    if (bit !== next) return false;
    next += bits;
  }
  return next === bytes * 8;
}
