/**
 * The two CRCs of InfiniBand, as plain functions over bytes.
 *
 * - CRC-32 (the ICRC's algorithm): the IEEE 802.3 CRC — polynomial 0x04C11DB7,
 *   processed reflected (bytes in order, least significant bit of each byte
 *   first), register preset to all ones, result complemented. Check value over
 *   the ASCII bytes "123456789" is 0xCBF43926.
 * - CRC-16 (the VCRC's algorithm): polynomial x^16 + x^12 + x^3 + x + 1
 *   (0x100B), with the same conventions as the ICRC: reflected, preset to
 *   0xFFFF, result complemented.
 *
 * The update functions work on the raw register (not complemented) so a CRC
 * can run over several discontiguous pieces (the ICRC runs over a masked copy
 * of the headers and then the untouched payload in place).
 */

/** Reflected form of 0x04C11DB7. */
const CRC32_POLY_REFLECTED = 0xedb88320;
/** Reflected form of 0x100B. */
const CRC16_VCRC_POLY_REFLECTED = 0xd008;

/** Eight slicing tables of 256 entries each (slicing-by-8: 8 bytes per step). */
const T32 = buildCrc32Tables();
const T16 = buildCrc16Table();

function buildCrc32Tables(): Int32Array {
  const t = new Int32Array(256 * 8);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ CRC32_POLY_REFLECTED : c >>> 1;
    t[n] = c;
  }
  for (let n = 0; n < 256; n++) {
    let c = t[n];
    for (let s = 1; s < 8; s++) {
      c = t[c & 0xff] ^ (c >>> 8);
      t[s * 256 + n] = c;
    }
  }
  return t;
}

function buildCrc16Table(): Uint16Array {
  const t = new Uint16Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ CRC16_VCRC_POLY_REFLECTED : c >>> 1;
    t[n] = c;
  }
  return t;
}

/** Register value a CRC-32 starts from. */
export const CRC32_INIT = 0xffffffff;

/**
 * Advance a raw CRC-32 register over `b[start..end)`. Returns the new raw
 * register as an unsigned 32-bit number; complement it (`~r >>> 0`) to finish.
 */
export function crc32Update(crc: number, b: Uint8Array, start: number, end: number): number {
  const t = T32;
  let c = crc | 0;
  let i = start;
  const end8 = end - 8;
  while (i <= end8) {
    const a = c ^ (b[i] | (b[i + 1] << 8) | (b[i + 2] << 16) | (b[i + 3] << 24));
    c = t[1792 + (a & 0xff)] ^ t[1536 + ((a >>> 8) & 0xff)] ^ t[1280 + ((a >>> 16) & 0xff)] ^
      t[1024 + (a >>> 24)] ^ t[768 + b[i + 4]] ^ t[512 + b[i + 5]] ^ t[256 + b[i + 6]] ^
      t[b[i + 7]];
    i += 8;
  }
  while (i < end) c = t[(c ^ b[i++]) & 0xff] ^ (c >>> 8);
  return c >>> 0;
}

/**
 * The finished CRC-32 (IEEE 802.3) of `b`.
 *
 * @example
 * ```ts
 * crc32(new TextEncoder().encode("123456789")); // 0xcbf43926
 * ```
 */
export function crc32(b: Uint8Array): number {
  return ~crc32Update(CRC32_INIT, b, 0, b.length) >>> 0;
}

/** Register value the VCRC starts from. */
export const CRC16_VCRC_INIT = 0xffff;

/** Advance a raw VCRC register over `b[start..end)`; complement (`~r & 0xffff`) to finish. */
export function crc16VcrcUpdate(crc: number, b: Uint8Array, start: number, end: number): number {
  const t = T16;
  let c = crc & 0xffff;
  for (let i = start; i < end; i++) c = t[(c ^ b[i]) & 0xff] ^ (c >>> 8);
  return c;
}

/** The finished VCRC-algorithm CRC-16 of `b` (poly 0x100B, reflected, preset and complement). */
export function crc16Vcrc(b: Uint8Array): number {
  return ~crc16VcrcUpdate(CRC16_VCRC_INIT, b, 0, b.length) & 0xffff;
}
