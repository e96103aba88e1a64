/**
 * Big-endian field access on byte arrays, and hex helpers. Plain index
 * arithmetic on `Uint8Array` is what V8 optimises best here: no DataView is
 * created per header, which matters on the checker's hot path.
 */
import { FieldRangeError, TruncatedError } from "./errors.ts";

/** Read an unsigned 16-bit big-endian value. */
export function rd16(b: Uint8Array, o: number): number {
  return (b[o] << 8) | b[o + 1];
}

/** Read an unsigned 24-bit big-endian value. */
export function rd24(b: Uint8Array, o: number): number {
  return (b[o] << 16) | (b[o + 1] << 8) | b[o + 2];
}

/** Read an unsigned 32-bit big-endian value. */
export function rd32(b: Uint8Array, o: number): number {
  return ((b[o] << 24) | (b[o + 1] << 16) | (b[o + 2] << 8) | b[o + 3]) >>> 0;
}

/** Read an unsigned 64-bit big-endian value. */
export function rd64(b: Uint8Array, o: number): bigint {
  return (BigInt(rd32(b, o)) << 32n) | BigInt(rd32(b, o + 4));
}

/** Write an unsigned 16-bit big-endian value. */
export function wr16(b: Uint8Array, o: number, v: number): void {
  b[o] = v >>> 8;
  b[o + 1] = v;
}

/** Write an unsigned 24-bit big-endian value. */
export function wr24(b: Uint8Array, o: number, v: number): void {
  b[o] = v >>> 16;
  b[o + 1] = v >>> 8;
  b[o + 2] = v;
}

/** Write an unsigned 32-bit big-endian value. */
export function wr32(b: Uint8Array, o: number, v: number): void {
  b[o] = v >>> 24;
  b[o + 1] = v >>> 16;
  b[o + 2] = v >>> 8;
  b[o + 3] = v;
}

/** Write an unsigned 64-bit big-endian value. */
export function wr64(b: Uint8Array, o: number, v: bigint): void {
  wr32(b, o, Number((v >> 32n) & 0xffff_ffffn));
  wr32(b, o + 4, Number(v & 0xffff_ffffn));
}

/** Throw a {@link FieldRangeError} unless `v` is an integer in `[0, 2^bits)`. */
export function checkField(header: string, field: string, v: number, bits: number): void {
  if (!Number.isInteger(v) || v < 0 || v >= 2 ** bits) {
    throw new FieldRangeError(header, field, String(v), bits);
  }
}

/** Throw a {@link FieldRangeError} unless `v` fits in 64 unsigned bits. */
export function checkField64(header: string, field: string, v: bigint): void {
  if (v < 0n || v > 0xffff_ffff_ffff_ffffn) throw new FieldRangeError(header, field, String(v), 64);
}

/** Throw a {@link TruncatedError} unless `need` bytes are available at `off`. */
export function need(b: Uint8Array, off: number, need: number, what: string): void {
  if (off < 0 || off + need > b.length) throw new TruncatedError(what, need, b.length - off);
}

/** Throw a {@link FieldRangeError} unless `v` is a byte array of exactly `n` bytes. */
export function checkBytes(header: string, field: string, v: Uint8Array, n: number): void {
  if (v.length !== n) throw new FieldRangeError(header, field, `${v.length} bytes`, n * 8);
}

/**
 * Parse hex into bytes. Whitespace, colons, dashes and a `0x` prefix are ignored,
 * so dumps can be pasted as they appear in documents.
 *
 * @example
 * ```ts
 * hexToBytes("45 00 00 3c"); // Uint8Array [0x45, 0x00, 0x00, 0x3c]
 * ```
 */
export function hexToBytes(hex: string): Uint8Array {
  const clean = hex.replace(/0x/gi, "").replace(/[\s:-]/g, "");
  if (clean.length % 2 !== 0 || /[^0-9a-f]/i.test(clean)) {
    throw new RangeError(`hexToBytes: not an even-length hex string: ${hex.slice(0, 40)}...`);
  }
  const out = new Uint8Array(clean.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(clean.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/** Lower-case hex of bytes, no separators. */
export function bytesToHex(b: Uint8Array): string {
  let s = "";
  for (let i = 0; i < b.length; i++) s += b[i].toString(16).padStart(2, "0");
  return s;
}
