/**
 * The bytes the cnuasgpu_host op runner writes and the digest it prints,
 * defined once here and implemented the same way in
 * drivers/test/cnuasgpu_host_ops.c:
 *
 * - pattern(seed, n): a xorshift32 stream. The state starts at
 *   `seed XOR 0xA5A5A5A5` (as an unsigned 32-bit number; 1 if that is 0);
 *   for each byte the state steps `s ^= s << 13; s ^= s >> 17; s ^= s << 5`
 *   (32-bit, logical shifts) and the byte is the low 8 bits of the new state.
 *   Byte 0 of the pattern lands at the op's offset.
 * - digest(bytes): FNV-1a 64 (offset basis 0xcbf29ce484222325, prime
 *   0x100000001b3; per byte `h ^= b; h *= prime` mod 2^64), printed as 16
 *   lower-case hex digits.
 *
 * @example
 * ```ts
 * fnv1a64(patternBytes(7, 4096)); // what `copy_from` prints after `copy_to ... 7`
 * ```
 */

/** `n` bytes of the seeded pattern (see the module comment). */
export function patternBytes(seed: number, n: number): Uint8Array {
  const out = new Uint8Array(n);
  let s = ((seed >>> 0) ^ 0xa5a5a5a5) >>> 0;
  if (s === 0) s = 1;
  for (let i = 0; i < n; i++) {
    s = (s ^ (s << 13)) >>> 0;
    s = (s ^ (s >>> 17)) >>> 0;
    s = (s ^ (s << 5)) >>> 0;
    out[i] = s & 0xff;
  }
  return out;
}

/** FNV-1a 64 of `bytes`, as 16 lower-case hex digits. */
export function fnv1a64(bytes: Uint8Array): string {
  // Four 16-bit limbs, low first; the prime is 2^40 + 0x1b3.
  let h0 = 0x2325, h1 = 0x8422, h2 = 0x9ce4, h3 = 0xcbf2;
  for (let i = 0; i < bytes.length; i++) {
    h0 ^= bytes[i];
    const r0 = h0 * 0x1b3;
    const r1 = h1 * 0x1b3 + (r0 >>> 16);
    const r2 = h2 * 0x1b3 + (h0 << 8) + (r1 >>> 16);
    const r3 = h3 * 0x1b3 + (h1 << 8) + (r2 >>> 16);
    h0 = r0 & 0xffff;
    h1 = r1 & 0xffff;
    h2 = r2 & 0xffff;
    h3 = r3 & 0xffff;
  }
  const hex = (v: number) => v.toString(16).padStart(4, "0");
  return hex(h3) + hex(h2) + hex(h1) + hex(h0);
}
