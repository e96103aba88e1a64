/**
 * A run directory about to be published: what kind of run it is, its index
 * entry, the report it renders, and which files go into the history (and
 * which are left out: absurdly large files, missing artifacts).
 */
import { basename, isAbsolute, join, normalize } from "node:path";
import { UserError } from "../errors.ts";
import { type BenchJson, isBenchError, parseBenchJson, resultFigures } from "./bench_json.ts";
import {
  INDEX_MEASUREMENTS_PER_ROW,
  isSafeRunId,
  type RowSummary,
  type RunEntry,
  type SkippedFile,
} from "./history_index.ts";
import { type MatrixJson, parseMatrixJson, rollUp } from "./schema.ts";

/**
 * Files above this size are not copied into the history (a row's packet
 * captures reach gigabytes; a static site of reports should not): they are
 * listed in the run's `skipped` instead.
 */
export const MAX_PUBLISHED_FILE_BYTES = 50 * 1024 * 1024;

const MIB = 1024 * 1024;

/** The renderings beside matrix.json that are copied as they are. */
const MATRIX_REPORT_FILES = ["junit.xml", "matrix.md", "compat.json"];

/** The directory given to publish is not a report directory. */
export class NotAReportError extends UserError {}

/** One file to copy: from the run directory to a path inside the published run. */
export interface FileCopy {
  /** Absolute (or cwd-relative) source path. */
  from: string;
  /** Path inside `runs/<runId>/`. */
  to: string;
}

/** A run ready to publish. */
export interface RunSource {
  /** Its index entry (`path` and `publishedAt` filled by the store). */
  entry: Omit<RunEntry, "path" | "publishedAt">;
  /** The matrix report, artifact paths rewritten to where they are published. */
  matrix?: MatrixJson;
  /** The bench run. */
  bench?: BenchJson;
  /** Files copied as they are. */
  files: FileCopy[];
}

async function statOrUndefined(path: string): Promise<Deno.FileInfo | undefined> {
  try {
    return await Deno.stat(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
}

function firstMeasurements(ms: RowSummary["measurements"]): RowSummary["measurements"] {
  return Object.fromEntries(Object.entries(ms).slice(0, INDEX_MEASUREMENTS_PER_ROW));
}

/**
 * Where an artifact goes inside the published run: its own path when it
 * lies inside the run directory; otherwise (a merged report points into its
 * shards with `../`) `rows/<row>/<file name>`, numbered on a clash.
 */
function publishedPath(artifact: string, rowId: string, taken: Set<string>): string {
  const inside = normalize(artifact);
  let to = !isAbsolute(inside) && !inside.startsWith("..")
    ? inside
    : join("rows", rowId, basename(inside));
  for (let n = 2; taken.has(to); n++) {
    to = join("rows", rowId, `${n}-${basename(inside)}`);
  }
  taken.add(to);
  return to;
}

async function matrixSource(dir: string, maxBytes: number): Promise<RunSource> {
  const path = join(dir, "matrix.json");
  const m = parseMatrixJson(await Deno.readTextFile(path), path);
  const runId = m.provenance?.runId;
  if (typeof runId !== "string" || !isSafeRunId(runId)) {
    throw new NotAReportError(`${path}: provenance.runId ${JSON.stringify(runId)} is not a run id`);
  }
  const files: FileCopy[] = [];
  for (const f of MATRIX_REPORT_FILES) {
    if ((await statOrUndefined(join(dir, f)))?.isFile) files.push({ from: join(dir, f), to: f });
  }
  const skipped: SkippedFile[] = [];
  const taken = new Set<string>(["matrix.json", "index.html", ...MATRIX_REPORT_FILES]);
  const rows = [];
  for (const r of m.rows) {
    const kept: string[] = [];
    for (const a of r.artifacts ?? []) {
      const from = isAbsolute(a) ? a : join(dir, a);
      const st = await statOrUndefined(from);
      if (!st) skipped.push({ path: a, reason: "missing" });
      else if (!st.isFile) skipped.push({ path: a, reason: "not a file" });
      else if (st.size > maxBytes) {
        skipped.push({
          path: a,
          bytes: st.size,
          reason: `over ${maxBytes % MIB === 0 ? `${maxBytes / MIB} MiB` : `${maxBytes} bytes`}`,
        });
      } else {
        const to = publishedPath(a, r.id, taken);
        files.push({ from, to });
        kept.push(to);
      }
    }
    rows.push({ ...r, artifacts: kept });
  }
  const matrix: MatrixJson = { provenance: m.provenance, rows };
  const p = m.provenance;
  return {
    matrix,
    files,
    entry: {
      runId,
      startedAt: p.startedAt,
      project: p.project ?? "unknown",
      host: p.host,
      kind: "matrix",
      ...(p.shard ? { shard: p.shard } : {}),
      status: rollUp(m.rows.map((r) => r.status)),
      rows: m.rows.map((r) => ({
        id: r.id,
        status: r.status,
        durationSec: r.durationSec,
        ...(r.buildWaitSec !== undefined ? { buildWaitSec: r.buildWaitSec } : {}),
        measurements: firstMeasurements(r.measurements ?? {}),
      })),
      skipped,
    },
  };
}

async function benchSource(dir: string): Promise<RunSource> {
  const path = join(dir, "bench.json");
  const b = parseBenchJson(await Deno.readTextFile(path), path);
  // bench.json names no run: its directory does (reports/bench/<id>/, maybe via `latest`)
  const runId = basename(await Deno.realPath(dir));
  if (!isSafeRunId(runId)) {
    throw new NotAReportError(`${dir}: the directory name ${runId} cannot be a run id`);
  }
  const rows: RowSummary[] = Object.entries(b.results).map(([name, r]) => ({
    id: name,
    status: isBenchError(r) ? "ERROR" : "PASS",
    measurements: firstMeasurements(resultFigures(r)),
  }));
  return {
    bench: b,
    files: [],
    entry: {
      runId,
      startedAt: b.at,
      project: b.project,
      host: b.host,
      kind: "bench",
      status: rollUp(rows.map((r) => r.status)),
      rows,
      skipped: [],
    },
  };
}

/**
 * Read the run in `dir`: a matrix report (matrix.json) or a bench run
 * (bench.json). Bad input is a UserError naming the directory.
 */
export async function readRunSource(
  dir: string,
  maxBytes = MAX_PUBLISHED_FILE_BYTES,
): Promise<RunSource> {
  const st = await statOrUndefined(dir);
  if (!st) throw new NotAReportError(`${dir}: no such directory`);
  if (!st.isDirectory) throw new NotAReportError(`${dir}: not a directory`);
  if ((await statOrUndefined(join(dir, "matrix.json")))?.isFile) {
    return await matrixSource(dir, maxBytes);
  }
  if ((await statOrUndefined(join(dir, "bench.json")))?.isFile) return await benchSource(dir);
  throw new NotAReportError(
    `${dir}: not a report directory (it has no matrix.json or bench.json; publish ` +
      "reports/<run-id>/, a merged report or reports/bench/<id>/)",
  );
}
