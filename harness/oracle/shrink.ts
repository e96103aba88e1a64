/**
 * Delta debugging (ddmin) over an operation list: finds a short sub-sequence
 * that still fails, given a replay function. Generic, so every differential
 * oracle (vnic, gpu, switch) shrinks its failures the same way.
 *
 * @example
 * ```ts
 * const { ops } = await shrinkOps(failingOps, async (cand) => (await replay(cand)).failed);
 * ```
 */

/** Limits of one shrink. */
export interface ShrinkOptions {
  /** Stop after this many replays (default 400). */
  maxRuns?: number;
  /** Stop after this many milliseconds (default 120 000). */
  budgetMs?: number;
}

/** What a shrink found. */
export interface ShrinkResult<T> {
  /** The shortest failing sequence found. */
  ops: T[];
  /** Replays made. */
  runs: number;
  /** True when the result is 1-minimal (removing any single op makes it pass). */
  minimal: boolean;
}

/**
 * Shrink `ops`, which must fail, to a shorter list for which `fails` still
 * returns true. Chunks are removed first (ddmin), then single operations,
 * until nothing more can go or the budget is spent.
 */
export async function shrinkOps<T>(
  ops: T[],
  fails: (candidate: T[]) => Promise<boolean>,
  opts: ShrinkOptions = {},
): Promise<ShrinkResult<T>> {
  const maxRuns = opts.maxRuns ?? 400;
  const deadline = performance.now() + (opts.budgetMs ?? 120_000);
  let runs = 0;
  const budgetLeft = () => runs < maxRuns && performance.now() < deadline;
  const tryCandidate = async (cand: T[]): Promise<boolean> => {
    runs++;
    return await fails(cand);
  };

  let cur = ops.slice();
  let n = 2;
  while (cur.length >= 2 && budgetLeft()) {
    const chunk = Math.ceil(cur.length / n);
    let reduced = false;
    for (let start = 0; start < cur.length && budgetLeft(); start += chunk) {
      const cand = cur.slice(0, start).concat(cur.slice(start + chunk));
      if (cand.length > 0 && await tryCandidate(cand)) {
        cur = cand;
        n = Math.max(n - 1, 2);
        reduced = true;
        break;
      }
    }
    if (!reduced) {
      if (chunk <= 1) break;
      n = Math.min(n * 2, cur.length);
    }
  }

  // One-minimality: drop single ops, scanning from the end (later ops are
  // usually the ones the failure does not need).
  let minimal = false;
  while (budgetLeft()) {
    let removed = false;
    for (let i = cur.length - 1; i >= 0 && budgetLeft(); i--) {
      if (cur.length === 1) break;
      const cand = cur.slice(0, i).concat(cur.slice(i + 1));
      if (await tryCandidate(cand)) {
        cur = cand;
        removed = true;
      }
    }
    if (!removed) {
      minimal = budgetLeft() || cur.length === 1;
      break;
    }
  }
  return { ops: cur, runs, minimal };
}
