/**
 * `matrix.json`, the source of truth of a run (schema of ARCHITECTURE.md).
 */
import { type Measurement, type Status, STATUS_PRIORITY } from "../matrix/row.ts";

/** One step of a row's transcript. */
export interface StepResult {
  name: string;
  status: Status;
  durationSec: number;
  error?: string;
}

/** One row of a run. */
export interface RowResult {
  id: string;
  title: string;
  status: Status;
  durationSec: number;
  reason?: string;
  measurements: Record<string, Measurement>;
  /** Paths relative to the run directory. */
  artifacts: string[];
  steps: StepResult[];
}

/** Where a run's inputs came from. */
export interface Provenance {
  runId: string;
  startedAt: string;
  project: string;
  guestKernel?: string;
  qemu?: string;
  rdmaCore?: string;
  accel?: string;
  accelReason?: string;
  host: { kernel: string; hostname: string; cpus: number };
  shard?: string;
}

/** The whole report. */
export interface MatrixJson {
  provenance: Provenance;
  rows: RowResult[];
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
export class ReportFormatError extends Error {
  override name = "ReportFormatError";
}

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
