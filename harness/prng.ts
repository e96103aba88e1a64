/**
 * A tiny seeded pseudo-random generator (mulberry32) for tests, synthetic
 * captures and differential runs. Deterministic across platforms: the same seed
 * always yields the same sequence, so a failing seed reproduces exactly.
 *
 * @example
 * ```ts
 * const rng = prng(42);
 * const byte = randInt(rng, 0, 255);
 * ```
 */

/**
 * Create a generator seeded with `seed` (any 32-bit integer). Each call of the
 * returned function yields the next value as an unsigned 32-bit integer.
 */
export function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

/**
 * A uniformly distributed integer in `[lo, hi]` (both inclusive). Ranges up to
 * 2^53 wide are supported; wider ranges than 2^32 combine two draws.
 */
export function randInt(rng: () => number, lo: number, hi: number): number {
  if (!Number.isSafeInteger(lo) || !Number.isSafeInteger(hi) || hi < lo) {
    throw new RangeError(`randInt: need safe integers with lo <= hi, got [${lo}, ${hi}]`);
  }
  const span = hi - lo + 1;
  if (span <= 0x1_0000_0000) {
    // Rejection sampling keeps the distribution uniform for spans that do not divide 2^32.
    const limit = 0x1_0000_0000 - (0x1_0000_0000 % span);
    let v = rng();
    while (v >= limit) v = rng();
    return lo + (v % span);
  }
  const hiBits = Math.floor(span / 0x1_0000_0000);
  for (;;) {
    const v = randInt(rng, 0, hiBits) * 0x1_0000_0000 + rng();
    if (v < span) return lo + v;
  }
}

/** `n` pseudo-random bytes. */
export function randBytes(rng: () => number, n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i += 4) {
    const v = rng();
    out[i] = v;
    if (i + 1 < n) out[i + 1] = v >>> 8;
    if (i + 2 < n) out[i + 2] = v >>> 16;
    if (i + 3 < n) out[i + 3] = v >>> 24;
  }
  return out;
}

/** A pseudo-random unsigned 64-bit value as a bigint. */
export function randU64(rng: () => number): bigint {
  return (BigInt(rng()) << 32n) | BigInt(rng());
}
