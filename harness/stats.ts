/** Small statistics shared by the bench, the report diff and the shard planner. */

/** Median of `xs` (mean of the middle two for an even count); NaN when empty. */
export function median(xs: readonly number[]): number {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}
