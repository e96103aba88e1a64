/**
 * `matrix.json`, the source of truth of a run (its layout is in
 * docs/architecture.md): the statuses, measurements and rows every renderer,
 * merger and the runner share.
 */
import { UserError } from "../errors.ts";

/** KCIDB-ordered status; the roll-up takes the first present in this order. */
export const STATUS_PRIORITY = ["FAIL", "ERROR", "MISS", "PASS", "DONE", "SKIP"] as const;

/** Outcome of a row. */
export type Status = typeof STATUS_PRIORITY[number];

/** A number with its unit. */
export interface Measurement {
  /** The measured value. */
  value: number;
  /** Its unit, e.g. `s`, `MB/s`. */
  unit: string;
}

/** One step of a row's transcript. */
export interface StepResult {
  /** The name the row gave `ctx.step`. */
  name: string;
  /** PASS, or how the step failed. */
  status: Status;
  /** Wall time of the step in seconds. */
  durationSec: number;
  /** Why the step failed, when it did. */
  error?: string;
}

/** How one guest of a row started. */
export interface GuestStart {
  /** `g0`, `g1`, ... */
  name: string;
  /** Booted its kernel, or restored from a saved VM state. */
  start: "cold" | "snapshot";
  /** Seconds from spawning QEMU until the guest answered SSH and was ready for the row. */
  startToSshSec: number;
  /** Why a guest booted cold (the row opts out, `--no-snapshot`, a device that cannot be saved). */
  coldReason?: string;
}

/** One row of a run. */
export interface RowResult {
  /** The row's id. */
  id: string;
  /** The row's one-line title. */
  title: string;
  /** How the row ended. */
  status: Status;
  /** Wall time of the row in seconds. */
  durationSec: number;
  /**
   * Seconds of `durationSec` the row waited for the cache to build what it
   * needed (a build, a saved guest state): a first run's cost, not the
   * row's, so the next runs' order and the shard plans leave it out
   * (absent: under 0.1 s, and in older reports).
   */
  buildWaitSec?: number;
  /** When the row started, ISO 8601 (reports before this field lack it). */
  startedAt?: string;
  /** Why the row did not pass (or why it is missing). */
  reason?: string;
  /** Measurements by name. */
  measurements: Record<string, Measurement>;
  /** Paths relative to the run directory. */
  artifacts: string[];
  /** The row's steps in order. */
  steps: StepResult[];
  /** How each guest started (rows without guests, and older reports, have none). */
  guests?: GuestStart[];
  /**
   * The rows that ran at some time beside this one, sharing the host's cores
   * (absent: it ran alone). Its duration was measured that way.
   */
  ranBeside?: string[];
}

/** Where a run's inputs came from. */
export interface Provenance {
  /** The run's id (`merged-…` for merged shard reports). */
  runId: string;
  /** Start time, ISO 8601. */
  startedAt: string;
  /** `git describe` of the project (`unknown` outside git). */
  project: string;
  /** Guest kernel release, when a guest image was built. */
  guestKernel?: string;
  /** Pinned QEMU source version. */
  qemu?: string;
  /** Pinned rdma-core source version. */
  rdmaCore?: string;
  /** The accelerator guests ran under, when a row booted one. */
  accel?: string;
  /** Why that accelerator was chosen. */
  accelReason?: string;
  /** The host the run ran on. */
  host: { kernel: string; hostname: string; cpus: number };
  /** This run's shard (`i/n`), when sharded. */
  shard?: string;
  /** How much each row did (`--depth`); absent in reports from before depths existed. */
  depth?: "quick" | "deep";
  /**
   * The guests ran the working tree's kernel modules over an image whose
   * packages may be older (`--dev-modules`, a developer's run): the modules
   * under test are not the packaged ones.
   */
  devModules?: true;
}

/** The whole report. */
export interface MatrixJson {
  /** Where the run's inputs came from. */
  provenance: Provenance;
  /** One result per row. */
  rows: RowResult[];
}

/** One past run of a row, as a page's trends show it. */
export interface TrendPoint {
  /** The run it comes from. */
  runId: string;
  /** That run's `provenance.project` (the commit). */
  project: string;
  /** Start time of that run, ISO 8601. */
  startedAt: string;
  /** How the row ended there. */
  status: Status;
  /** Its wall time there, in seconds. */
  durationSec: number;
}

/** One bench figure over runs (bench.json runs published into the same history). */
export interface BenchSeries {
  /** Unit of every point. */
  unit: string;
  /** Oldest first. */
  points: { runId: string; startedAt: string; project: string; value: number }[];
}

/**
 * What a run's page shows beyond the run itself, from the history it was
 * published into (harness/report/history.ts builds it; render.ts draws it).
 * Without a history every field is empty and the page shows the run alone.
 */
export interface PageContext {
  /** The run published before this one, for "what changed since the previous run". */
  previous?: MatrixJson;
  /** Per row id, its last runs oldest first, this run last. */
  trends: Record<string, TrendPoint[]>;
  /** Rows flagged flaky, each with why (a sentence). */
  flaky: Record<string, string>;
  /** Bench figures by name (e.g. `perf.cnuas_ib.ib_send_bw.MBps`), for charts over runs. */
  bench: Record<string, BenchSeries>;
}

/** The context of a page with no history: the run alone. */
export function emptyPageContext(): PageContext {
  return { trends: {}, flaky: {}, bench: {} };
}

/** KCIDB roll-up: the highest-priority status present (SKIP for none). */
export function rollUp(statuses: Status[]): Status {
  for (const s of STATUS_PRIORITY) if (statuses.includes(s)) return s;
  return "SKIP";
}

/** Whether a status breaks the gate (`deno task test`). */
export function isFailing(s: Status): boolean {
  return s === "FAIL" || s === "ERROR";
}

/** Raised when a matrix.json does not have the expected shape. */
export class ReportFormatError extends UserError {}

/** Parse and check a matrix.json text. */
export function parseMatrixJson(text: string, source = "matrix.json"): MatrixJson {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new ReportFormatError(`${source}: not JSON (${(e as Error).message})`);
  }
  const m = v as MatrixJson;
  if (!m || typeof m !== "object" || !m.provenance || !Array.isArray(m.rows)) {
    throw new ReportFormatError(`${source}: expected { provenance, rows: [...] }`);
  }
  for (const r of m.rows) {
    if (typeof r.id !== "string" || !STATUS_PRIORITY.includes(r.status)) {
      throw new ReportFormatError(`${source}: row ${JSON.stringify(r.id)} has status ${r.status}`);
    }
  }
  return m;
}
