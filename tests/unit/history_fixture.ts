/** Run directories for the history tests: small matrix reports and bench runs on disk. */
import { join } from "node:path";
import type { BenchJson } from "../../harness/report/bench_json.ts";
import type { MatrixJson, Status } from "../../harness/report/schema.ts";

/** A row of a sample run: id, status, and optional measurements. */
export interface SampleRow {
  id: string;
  status: Status;
  durationSec?: number;
  measurements?: Record<string, number>;
}

/** A matrix report of `rows`, started at `startedAt` on commit `project`. */
export function sampleMatrix(
  runId: string,
  startedAt: string,
  project: string,
  rows: SampleRow[],
): MatrixJson {
  return {
    provenance: {
      runId,
      startedAt,
      project,
      host: { kernel: "6.1", hostname: "h", cpus: 2 },
    },
    rows: rows.map((r) => ({
      id: r.id,
      title: `${r.id} title`,
      status: r.status,
      durationSec: r.durationSec ?? 1,
      ...(r.status === "PASS" ? {} : { reason: `${r.id} went ${r.status}` }),
      measurements: Object.fromEntries(
        Object.entries(r.measurements ?? {}).map(([k, v]) => [k, { value: v, unit: "u" }]),
      ),
      artifacts: [`rows/${r.id}/transcript.log`],
      steps: [],
    })),
  };
}

/** Write `m` as a run directory under `parent` (matrix.json, a transcript per row); returns it. */
export async function writeRunDir(parent: string, m: MatrixJson): Promise<string> {
  const dir = join(parent, m.provenance.runId);
  for (const r of m.rows) {
    await Deno.mkdir(join(dir, "rows", r.id), { recursive: true });
    await Deno.writeTextFile(join(dir, "rows", r.id, "transcript.log"), `${r.id} transcript\n`);
  }
  await Deno.writeTextFile(join(dir, "matrix.json"), JSON.stringify(m, null, 2));
  await Deno.writeTextFile(join(dir, "junit.xml"), "<testsuite/>\n");
  return dir;
}

/** A bench run directory `parent/<id>/bench.json` with `figures` under bench `benchRdmaPerf`. */
export async function writeBenchDir(
  parent: string,
  id: string,
  at: string,
  figures: Record<string, number>,
): Promise<string> {
  const dir = join(parent, id);
  await Deno.mkdir(dir, { recursive: true });
  const b: BenchJson = {
    project: "abc",
    at,
    host: { kernel: "6.1", cpus: 2 },
    results: {
      benchRdmaPerf: Object.fromEntries(
        Object.entries(figures).map(([k, v]) => [k, { value: v, unit: "MiB/s" }]),
      ),
      benchNet: { error: "guest did not boot" },
    },
  };
  await Deno.writeTextFile(join(dir, "bench.json"), JSON.stringify(b, null, 2));
  return dir;
}

/** Every file under `dir` with its content, for "nothing changed" comparisons. */
export async function snapshotTree(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  async function walk(d: string, rel: string) {
    for await (const e of Deno.readDir(d)) {
      const p = join(d, e.name), r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory) await walk(p, r);
      else out[r] = await Deno.readTextFile(p);
    }
  }
  await walk(dir, "");
  return out;
}

/** Quiet log collector for publish calls. */
export function logLines(): { lines: string[]; log: (l: string) => void } {
  const lines: string[] = [];
  return { lines, log: (l) => lines.push(l) };
}
