/**
 * `bench.json` as the history reads it (written by harness/bench/run.ts, its
 * figures described in docs/bench.md): parsing with a clear error, and the
 * figures flattened to one name each.
 */
import type { MatrixJson, Measurement } from "./schema.ts";
import { ReportFormatError } from "./schema.ts";

/** One bench's outcome: figures by name, or why it failed. */
export type BenchResult = Record<string, Measurement> | { error: string };

/** The whole `bench.json`. */
export interface BenchJson {
  /** `git describe` of the project. */
  project: string;
  /** When the bench run ended, ISO 8601. */
  at: string;
  /** The host it ran on. */
  host: { kernel: string; cpus: number; hostname?: string };
  /** Per bench name (`benchRdmaPerf`, `boot`, ...). */
  results: Record<string, BenchResult>;
}

/** Whether a bench's result is a failure rather than figures. */
export function isBenchError(r: BenchResult): r is { error: string } {
  return typeof (r as { error?: unknown }).error === "string";
}

/** Parse and check a bench.json text. */
export function parseBenchJson(text: string, source = "bench.json"): BenchJson {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new ReportFormatError(`${source}: not JSON (${(e as Error).message})`);
  }
  const b = v as BenchJson;
  if (
    !b || typeof b !== "object" || typeof b.at !== "string" || !b.results ||
    typeof b.results !== "object" || !b.host || typeof b.host !== "object"
  ) {
    throw new ReportFormatError(`${source}: expected { project, at, host, results: {...} }`);
  }
  if (Number.isNaN(Date.parse(b.at))) {
    throw new ReportFormatError(`${source}: "at" is not a date: ${JSON.stringify(b.at)}`);
  }
  return { ...b, project: typeof b.project === "string" ? b.project : "unknown" };
}

/** A bench's numeric figures (none when it failed). */
export function resultFigures(r: BenchResult): Record<string, Measurement> {
  const out: Record<string, Measurement> = {};
  if (isBenchError(r)) return out;
  for (const [name, m] of Object.entries(r)) {
    if (m && typeof m.value === "number" && Number.isFinite(m.value)) {
      out[name] = { value: m.value, unit: String(m.unit ?? "") };
    }
  }
  return out;
}

/**
 * Every numeric figure of a bench run as `<bench>.<figure>` (e.g.
 * `benchRdmaPerf.cnuas_ib.ib_send_bw.65536.MiBps`, `boot.warmMatrixRowBootSec`):
 * the names bench.json gives, so a new figure needs no change here.
 */
export function benchFigures(b: BenchJson): Record<string, Measurement> {
  const out: Record<string, Measurement> = {};
  for (const [bench, result] of Object.entries(b.results)) {
    for (const [name, m] of Object.entries(resultFigures(result))) out[`${bench}.${name}`] = m;
  }
  return out;
}

/**
 * A bench run as a matrix report: one row per bench (PASS with its figures
 * as measurements, ERROR with its error as reason), so diffs treat both alike.
 */
export function benchAsMatrix(runId: string, b: BenchJson): MatrixJson {
  return {
    provenance: {
      runId,
      startedAt: b.at,
      project: b.project,
      host: { kernel: b.host.kernel, hostname: b.host.hostname ?? "", cpus: b.host.cpus },
    },
    rows: Object.entries(b.results).map(([name, r]) => ({
      id: name,
      title: name,
      status: isBenchError(r) ? "ERROR" : "PASS",
      durationSec: 0,
      ...(isBenchError(r) ? { reason: r.error } : {}),
      measurements: resultFigures(r),
      artifacts: [],
      steps: [],
    })),
  };
}
