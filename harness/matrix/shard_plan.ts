/**
 * Which rows each CI shard runs. With row durations from a published
 * history (`report publish`), shards are balanced by time: longest
 * processing time first — rows in decreasing duration, each to the shard
 * with the least predicted time so far (ties to the lower shard, rows of
 * equal duration in report order), which is within 4/3 of the best split.
 * Rows the history does not know are predicted at the median of those it
 * does. Without any duration the rows are dealt round-robin in report order.
 * The plan is a pure function of the row list, the shard count and the
 * durations, so every shard job computes the same plan from the same
 * history (ci/matrix.yml hands all of them one snapshot of it).
 */
import { UsageError } from "../errors.ts";
import type { HistoryIndex } from "../report/history_index.ts";
import type { MatrixJson } from "../report/schema.ts";
import { median } from "../stats.ts";

/** Statuses whose duration says what the row costs (ERROR, MISS, SKIP end early). */
export const TIMED_STATUSES = new Set(["PASS", "FAIL", "DONE"]);

/** One shard of a plan. */
export interface PlannedShard {
  /** Row ids, in report order. */
  rows: string[];
  /** Sum of the rows' durations (guessed ones included), seconds; 0 for a count plan. */
  predictedSec: number;
}

/** How the rows are split over `count` shards. */
export interface ShardPlan {
  /** `durations`: balanced by time; `count`: round-robin (no duration known). */
  basis: "durations" | "count";
  /** Shard 1 first. */
  shards: PlannedShard[];
  /** Each planned row's duration (seconds) as the plan used it. */
  durations: Map<string, number>;
  /** Rows whose duration was guessed (the median), not recorded. */
  guessed: string[];
}

/**
 * What a row that ran costs, in seconds: its wall time without the time it
 * waited for the cache (`buildWaitSec`: a build or a saved guest state the
 * run made first), which the next run will not wait for. A cold run's
 * `qtest-fuzz` took 615 s, 557 of them building the sanitizer QEMU.
 */
export function rowCostSec(row: { durationSec: number; buildWaitSec?: number }): number {
  const wait = row.buildWaitSec;
  // an index edited by hand may hold anything: only a real wait is taken off
  const waited = typeof wait === "number" && Number.isFinite(wait) && wait > 0 ? wait : 0;
  return Math.max(0, row.durationSec - waited);
}

/**
 * Each matrix row's cost ({@link rowCostSec}) in the most recent run of the
 * history that ran it to an end (PASS, FAIL or DONE).
 */
export function durationsFromIndex(index: HistoryIndex): Map<string, number> {
  const out = new Map<string, number>();
  const newestFirst = index.runs.filter((r) => r.kind === "matrix")
    .sort((a, b) => b.startedAt.localeCompare(a.startedAt));
  for (const run of newestFirst) {
    for (const row of run.rows) {
      if (out.has(row.id) || row.durationSec === undefined) continue;
      if (TIMED_STATUSES.has(row.status)) {
        out.set(row.id, rowCostSec({ ...row, durationSec: row.durationSec }));
      }
    }
  }
  return out;
}

/**
 * Each row's cost in the newest of `reports` (newest first) that ran it
 * to an end, as {@link durationsFromIndex} does for a history.
 */
export function durationsFromReports(reports: readonly MatrixJson[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of reports) {
    for (const row of m.rows) {
      if (!out.has(row.id) && TIMED_STATUSES.has(row.status)) out.set(row.id, rowCostSec(row));
    }
  }
  return out;
}

/** Check `--shard i/n`'s numbers. */
export function checkShard(index: number, count: number): void {
  if (
    !Number.isInteger(index) || !Number.isInteger(count) || count < 1 || index < 1 || index > count
  ) {
    throw new UsageError(`--shard wants i/n with 1 ≤ i ≤ n, got ${index}/${count}`);
  }
}

/** Split `ids` (in report order) over `count` shards, by `known` durations when there are any. */
export function planShards(
  ids: readonly string[],
  count: number,
  known: ReadonlyMap<string, number>,
): ShardPlan {
  checkShard(1, count);
  const recorded = ids.filter((id) => known.has(id)).map((id) => known.get(id)!);
  if (recorded.length === 0) {
    const shards = Array.from({ length: count }, (_, s) => ({
      rows: ids.filter((_, k) => k % count === s),
      predictedSec: 0,
    }));
    return { basis: "count", shards, durations: new Map(), guessed: [] };
  }
  const guess = median(recorded);
  const durations = new Map(ids.map((id) => [id, known.get(id) ?? guess]));
  const guessed = ids.filter((id) => !known.has(id));
  const order = ids.map((id, k) => ({ id, k, sec: durations.get(id)! }))
    .sort((a, b) => b.sec - a.sec || a.k - b.k);
  const load = new Array<number>(count).fill(0);
  const member = new Map<string, number>();
  for (const r of order) {
    let best = 0;
    for (let s = 1; s < count; s++) if (load[s] < load[best]) best = s;
    load[best] += r.sec;
    member.set(r.id, best);
  }
  const shards = load.map((predictedSec, s) => ({
    rows: ids.filter((id) => member.get(id) === s),
    predictedSec,
  }));
  return { basis: "durations", shards, durations, guessed };
}

/** The plan as lines for a terminal (`task matrix --plan`). */
export function formatPlan(plan: ShardPlan, source: string, mine?: number): string[] {
  const lines = [
    plan.basis === "durations"
      ? `${plan.shards.length} shard(s) balanced by the row durations in ${source}` +
        (plan.guessed.length
          ? ` (no duration for ${plan.guessed.join(", ")}: the median was assumed)`
          : "")
      : `${plan.shards.length} shard(s) dealt round-robin: no row durations in ${source}`,
  ];
  plan.shards.forEach((s, i) => {
    const time = plan.basis === "durations" ? ` ~${Math.round(s.predictedSec)} s` : "";
    const here = mine === i + 1 ? "  ← this shard" : "";
    lines.push(
      `shard ${i + 1}/${plan.shards.length}${time}: ${s.rows.join(", ") || "(none)"}${here}`,
    );
  });
  return lines;
}
