/**
 * The `PageContext` of a published run (schema.ts): what its page shows
 * from the history beside the run itself. A pure function of a history
 * snapshot; history.ts loads the snapshot, render.ts draws the context.
 */
import type { BenchJson } from "./bench_json.ts";
import { benchFigures } from "./bench_json.ts";
import { detectFlaky, FLAKY_WINDOW } from "./flaky.ts";
import { chronological, rowTrends, type RunEntry } from "./history_index.ts";
import type { BenchSeries, MatrixJson, PageContext } from "./schema.ts";
import { UserError } from "../errors.ts";

/** A history as the pages and the diff read it: the index and each run's report. */
export interface HistorySnapshot {
  /** The index's runs, any order. */
  runs: RunEntry[];
  /** Matrix reports by run id (their published matrix.json). */
  matrices: Map<string, MatrixJson>;
  /** Bench runs by run id. */
  benches: Map<string, BenchJson>;
}

/** The run asked for is not in the history. */
export class UnknownRunError extends UserError {}

/**
 * The context of run `runId`'s page, from the runs up to and including it
 * (runs started later are not its past): the previous matrix run; per row
 * of this run its last `last` runs, oldest first, this run last; the rows
 * flagged flaky over those; every bench figure over the last `last` bench
 * runs, oldest first. A bench run's page gets only the bench series.
 */
export function pageContext(h: HistorySnapshot, runId: string, last = FLAKY_WINDOW): PageContext {
  const self = h.runs.find((r) => r.runId === runId);
  if (!self) throw new UnknownRunError(`run ${runId} is not in the history`);
  const upTo = chronological(h.runs);
  const past = upTo.slice(0, upTo.indexOf(self) + 1);
  const benchRuns = past.filter((r) => r.kind === "bench").slice(-last);
  const bench: Record<string, BenchSeries> = {};
  for (const run of benchRuns) {
    const b = h.benches.get(run.runId);
    if (!b) continue;
    for (const [name, m] of Object.entries(benchFigures(b))) {
      (bench[name] ??= { unit: m.unit, points: [] }).points.push({
        runId: run.runId,
        startedAt: run.startedAt,
        project: run.project,
        value: m.value,
      });
    }
  }
  if (self.kind !== "matrix") return { trends: {}, flaky: {}, bench };
  const matrixPast = past.filter((r) => r.kind === "matrix");
  const prev = matrixPast.at(-2);
  const own = new Set(self.rows.map((r) => r.id));
  const trends = Object.fromEntries(
    Object.entries(rowTrends(matrixPast, last)).filter(([id]) => own.has(id)),
  );
  const previous = prev ? h.matrices.get(prev.runId) : undefined;
  return {
    ...(previous ? { previous } : {}),
    trends,
    flaky: detectFlaky(trends, last),
    bench,
  };
}
