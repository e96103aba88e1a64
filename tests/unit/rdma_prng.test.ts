/** The seeded PRNG the RDMA tests, the bench and other helpers build their random data from. */
import assert from "node:assert/strict";
import { prng, randBytes, randInt, randU64 } from "../../harness/prng.ts";

Deno.test("prng is mulberry32: seed 42 starts 0x99e1ef7c, 0x72c32b8a, 0xda3b32c0", () => {
  // mulberry32 (Tommy Ettinger's public-domain generator) with the state advanced by
  // 0x6D2B79F5 per call; values as uint32 rather than divided by 2^32.
  const r = prng(42);
  assert.deepEqual([r(), r(), r()], [0x99e1ef7c, 0x72c32b8a, 0xda3b32c0]);
});

Deno.test("prng replays the same sequence for the same seed and another for another seed", () => {
  const a = prng(7), b = prng(7), c = prng(8);
  const sa = Array.from({ length: 100 }, a);
  assert.deepEqual(sa, Array.from({ length: 100 }, b));
  assert.notDeepEqual(sa, Array.from({ length: 100 }, c));
  for (const v of sa) assert.ok(Number.isInteger(v) && v >= 0 && v < 2 ** 32);
});

Deno.test("randInt stays within inclusive bounds and reaches both ends", () => {
  const r = prng(1);
  const seen = new Set<number>();
  for (let i = 0; i < 2000; i++) {
    const v = randInt(r, -3, 3);
    assert.ok(v >= -3 && v <= 3);
    seen.add(v);
  }
  assert.equal(seen.size, 7);
  const big = randInt(r, 0, 2 ** 40);
  assert.ok(big >= 0 && big <= 2 ** 40);
});

Deno.test("randInt refuses an empty or non-integer range", () => {
  assert.throws(() => randInt(prng(1), 5, 4), RangeError);
  assert.throws(() => randInt(prng(1), 0.5, 4), RangeError);
});

Deno.test("randBytes and randU64 give the requested sizes", () => {
  const r = prng(3);
  assert.equal(randBytes(r, 13).length, 13);
  const v = randU64(r);
  assert.ok(v >= 0n && v < 2n ** 64n);
});
