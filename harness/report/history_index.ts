/**
 * `index.json` of a history directory: the list of published runs with
 * their provenance and per-row outcome, and the pure questions asked of it
 * (order, trends per row, which runs to prune). The store that writes it is
 * history.ts.
 */
import { UserError } from "../errors.ts";
import type { Measurement, Status, TrendPoint } from "./schema.ts";
import { STATUS_PRIORITY } from "./schema.ts";

/** The `format` of index.json this code writes and reads. */
export const INDEX_FORMAT = 1;

/** Measurements a row keeps in index.json (the rest are in the run's matrix.json). */
export const INDEX_MEASUREMENTS_PER_ROW = 6;

/** What a published run is: a matrix report or a bench.json. */
export type RunKind = "matrix" | "bench";

/** One row of a published run, as index.json keeps it. */
export interface RowSummary {
  /** The row id (a bench's name for bench runs). */
  id: string;
  /** How it ended (a bench: PASS with figures, ERROR without). */
  status: Status;
  /** Its wall time; bench.json records none. */
  durationSec?: number;
  /** Of it, the wait for the cache (the matrix report's `buildWaitSec`), when there was one. */
  buildWaitSec?: number;
  /** Its first few measurements (figures for a bench), in the order the row reported them. */
  measurements: Record<string, Measurement>;
}

/** A file of the run that was not copied into the history, and why. */
export interface SkippedFile {
  /** Path relative to the run directory, as the report named it. */
  path: string;
  /** Its size, when it exists. */
  bytes?: number;
  /** `over 50 MiB`, `missing`, `not a file`. */
  reason: string;
}

/** One published run. */
export interface RunEntry {
  /** `provenance.runId`, or a bench's directory name. */
  runId: string;
  /** Start time (a bench: when it ended, bench.json's `at`), ISO 8601. */
  startedAt: string;
  /** `git describe` of the project. */
  project: string;
  /** Where it ran (bench.json has no hostname). */
  host: { hostname?: string; kernel: string; cpus: number };
  /** Matrix report or bench.json. */
  kind: RunKind;
  /** Its directory relative to the history directory: `runs/<runId>/`. */
  path: string;
  /** When it was published, ISO 8601. */
  publishedAt: string;
  /** The shard line of a (merged) matrix report. */
  shard?: string;
  /** Roll-up of its rows. */
  status: Status;
  /** One per row (per bench for bench runs). */
  rows: RowSummary[];
  /** Files left out of the copy. */
  skipped: SkippedFile[];
}

/** The whole index.json. */
export interface HistoryIndex {
  /** INDEX_FORMAT. */
  format: number;
  /** When it was last written, ISO 8601. */
  updatedAt: string;
  /** Newest first (by startedAt). */
  runs: RunEntry[];
  /** Matrix rows flagged flaky over the last runs, each with why. */
  flaky: Record<string, string>;
}

/** index.json is not what this code writes: publishing stops before writing anything. */
export class HistoryFormatError extends UserError {}

/** An empty history. */
export function emptyIndex(): HistoryIndex {
  return { format: INDEX_FORMAT, updatedAt: new Date(0).toISOString(), runs: [], flaky: {} };
}

const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** Whether a run id can name a directory of the history (no `/`, no `..`). */
export function isSafeRunId(id: string): boolean {
  return RUN_ID.test(id) && !id.includes("..");
}

/** Parse and check index.json text. */
export function parseHistoryIndex(text: string, source = "index.json"): HistoryIndex {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new HistoryFormatError(
      `${source}: not JSON (${(e as Error).message}); fix or move it away — nothing was changed`,
    );
  }
  const idx = v as HistoryIndex;
  if (!idx || typeof idx !== "object" || !Array.isArray(idx.runs)) {
    throw new HistoryFormatError(
      `${source}: expected { format, runs: [...] } — nothing was changed`,
    );
  }
  if (idx.format !== INDEX_FORMAT) {
    throw new HistoryFormatError(
      `${source}: format ${idx.format}, this harness reads format ${INDEX_FORMAT} — nothing was changed`,
    );
  }
  for (const r of idx.runs) {
    if (
      !r || typeof r.runId !== "string" || !isSafeRunId(r.runId) ||
      typeof r.startedAt !== "string" || (r.kind !== "matrix" && r.kind !== "bench") ||
      !Array.isArray(r.rows) ||
      r.rows.some((row) => typeof row?.id !== "string" || !STATUS_PRIORITY.includes(row.status))
    ) {
      throw new HistoryFormatError(
        `${source}: run ${JSON.stringify(r?.runId)} is not a run entry — nothing was changed`,
      );
    }
  }
  return { ...idx, flaky: idx.flaky ?? {} };
}

/** Oldest first by start time (run id breaks ties), a copy. */
export function chronological<T extends { startedAt: string; runId: string }>(runs: T[]): T[] {
  return [...runs].sort((a, b) =>
    a.startedAt < b.startedAt ? -1 : a.startedAt > b.startedAt ? 1 : a.runId.localeCompare(b.runId)
  );
}

/**
 * Per row id, its runs among `runs` (oldest first) as trend points, the
 * last `last` runs that have the row. Matrix runs only.
 */
export function rowTrends(runs: RunEntry[], last: number): Record<string, TrendPoint[]> {
  const out: Record<string, TrendPoint[]> = {};
  for (const run of chronological(runs.filter((r) => r.kind === "matrix"))) {
    for (const row of run.rows) {
      (out[row.id] ??= []).push({
        runId: run.runId,
        project: run.project,
        startedAt: run.startedAt,
        status: row.status,
        durationSec: row.durationSec ?? 0,
      });
    }
  }
  for (const id of Object.keys(out)) out[id] = out[id].slice(-last);
  return out;
}

/** How far back pruning keeps runs. */
export interface PruneRule {
  /** Keep the newest this many runs of each kind. */
  keep?: number;
  /** Drop runs that started more than this many days before `now`. */
  maxAgeDays?: number;
}

/** The run ids `rule` removes from `runs` at time `now` (pure). */
export function selectPruned(runs: RunEntry[], rule: PruneRule, now: Date): string[] {
  const out = new Set<string>();
  if (rule.keep !== undefined) {
    for (const kind of ["matrix", "bench"] as const) {
      const newestFirst = chronological(runs.filter((r) => r.kind === kind)).reverse();
      for (const r of newestFirst.slice(rule.keep)) out.add(r.runId);
    }
  }
  if (rule.maxAgeDays !== undefined) {
    const cutoff = now.getTime() - rule.maxAgeDays * 86_400_000;
    for (const r of runs) if (Date.parse(r.startedAt) < cutoff) out.add(r.runId);
  }
  return runs.map((r) => r.runId).filter((id) => out.has(id));
}
