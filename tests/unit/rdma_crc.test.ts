/**
 * The CRC algorithms behind the ICRC and VCRC, checked three independent ways:
 * the published CRC-32 check value, zlib's CRC-32 (node:zlib, a separate
 * implementation), and a bit-serial polynomial long division written straight
 * from the CRC definition (message bits in transmission order, register preset
 * to ones, remainder complemented and sent highest power first).
 */
import assert from "node:assert/strict";
import * as zlib from "node:zlib";

// zlib's CRC-32 is the independent reference. Deno has it at run time, but
// the Node 18 typings that @types/ssh2 pulls into a shared type check lack
// it, so it is typed here.
const zlibCrc32 = (zlib as unknown as { crc32(data: Uint8Array): number }).crc32;
import { crc16Vcrc, crc32, CRC32_INIT, crc32Update } from "../../harness/models/rdma/crc.ts";
import { prng, randBytes, randInt } from "../../harness/prng.ts";

const ascii = (s: string) => new TextEncoder().encode(s);

/**
 * CRC by long division over GF(2). Bits go in transmission order: bytes in
 * order, least significant bit first (IBA 7.8: "the least significant bit of
 * the most significant byte is the first bit in the CRC calculation"; the same
 * order as Ethernet). The message times x^width, with its first `width` bits
 * inverted (the preset to ones), is divided by x^width + poly, and the
 * remainder is complemented. Returned as the bytes that go on the wire: the
 * highest power first, packed least significant bit first.
 */
function crcByDivision(msg: Uint8Array, width: number, poly: number): Uint8Array {
  const bits: number[] = [];
  for (const byte of msg) for (let j = 0; j < 8; j++) bits.push((byte >> j) & 1);
  for (let i = 0; i < width; i++) bits.push(0);
  for (let i = 0; i < width; i++) bits[i] ^= 1; // the preset, applied to the augmented message
  const g: number[] = [1];
  for (let i = width - 1; i >= 0; i--) g.push((poly >>> i) & 1);
  for (let i = 0; i + width < bits.length; i++) {
    if (bits[i]) { for (let k = 0; k <= width; k++) bits[i + k] ^= g[k]; }
  }
  const rem = bits.slice(bits.length - width).map((b) => b ^ 1);
  const out = new Uint8Array(width / 8);
  rem.forEach((b, i) => (out[i >> 3] |= b << (i & 7)));
  return out;
}

const le32 = (v: number) => new Uint8Array([v, v >>> 8, v >>> 16, v >>> 24].map((x) => x & 0xff));
const le16 = (v: number) => new Uint8Array([v & 0xff, (v >>> 8) & 0xff]);

Deno.test("crc32 gives the published check value 0xCBF43926 for '123456789'", () => {
  assert.equal(crc32(ascii("123456789")), 0xcbf43926);
});

Deno.test("crc32 agrees with zlib on seeded random buffers of every length up to 300", () => {
  const rng = prng(11);
  for (let n = 0; n <= 300; n++) {
    const b = randBytes(rng, n);
    assert.equal(crc32(b), zlibCrc32(b) >>> 0, `length ${n}`);
  }
});

Deno.test("crc32Update over pieces equals crc32 over the whole buffer", () => {
  const rng = prng(12);
  const b = randBytes(rng, 1000);
  for (let k = 0; k < 50; k++) {
    const cut = randInt(rng, 0, b.length);
    const r = crc32Update(crc32Update(CRC32_INIT, b, 0, cut), b, cut, b.length);
    assert.equal(~r >>> 0, crc32(b));
  }
});

Deno.test("crc32 stored least significant byte first is the long-division CRC on the wire", () => {
  const rng = prng(13);
  for (const n of [1, 4, 9, 33, 64]) {
    const b = randBytes(rng, n);
    assert.deepEqual(le32(crc32(b)), crcByDivision(b, 32, 0x04c11db7));
  }
});

Deno.test("VCRC algorithm (poly 0x100B) stored least significant byte first is the long-division CRC", () => {
  const rng = prng(14);
  for (const n of [1, 2, 7, 26, 64, 300]) {
    const b = randBytes(rng, n);
    assert.deepEqual(le16(crc16Vcrc(b)), crcByDivision(b, 16, 0x100b));
  }
});

Deno.test("VCRC algorithm check value for '123456789' is 0x0A3D (derived by long division)", () => {
  // Worked out with crcByDivision above (poly 0x100B, reflected, preset and
  // complement); pinned so a table regression cannot hide behind both sides changing.
  assert.deepEqual(crcByDivision(ascii("123456789"), 16, 0x100b), le16(0x0a3d));
  assert.equal(crc16Vcrc(ascii("123456789")), 0x0a3d);
});

Deno.test("a message followed by its stored CRC-32 leaves the fixed residue 0xDEBB20E3", () => {
  // Property of this CRC family (the Ethernet "magic" remainder): appending the
  // LSB-first CRC makes the raw register end at 0xDEBB20E3.
  const rng = prng(15);
  const b = randBytes(rng, 77);
  const withCrc = new Uint8Array([...b, ...le32(crc32(b))]);
  assert.equal(crc32Update(CRC32_INIT, withCrc, 0, withCrc.length), 0xdebb20e3);
});
