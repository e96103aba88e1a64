/**
 * Writing a run's report directory and the `reports/latest` link; merging
 * shard reports into one.
 */
import { join, relative } from "node:path";
import { moduleCredits } from "../matrix/registry.ts";
import { toCompat, toHtml, toJunit, toMarkdown } from "./render.ts";
import { type MatrixJson, parseMatrixJson, type RowResult } from "./schema.ts";

/** Write matrix.json and its renderings into `dir`; point `<reportsDir>/latest` at it. */
export async function writeReport(dir: string, m: MatrixJson, reportsDir?: string): Promise<void> {
  await Deno.mkdir(dir, { recursive: true });
  await Deno.writeTextFile(join(dir, "matrix.json"), JSON.stringify(m, null, 2) + "\n");
  await Deno.writeTextFile(join(dir, "junit.xml"), toJunit(m));
  await Deno.writeTextFile(join(dir, "matrix.md"), toMarkdown(m));
  await Deno.writeTextFile(join(dir, "index.html"), toHtml(m));
  // compat.json credits each module with the rows that declare it
  const compat = toCompat(m, await moduleCredits());
  await Deno.writeTextFile(join(dir, "compat.json"), JSON.stringify(compat, null, 2) + "\n");
  if (reportsDir) {
    const link = join(reportsDir, "latest");
    await Deno.remove(link).catch(() => {});
    await Deno.symlink(relative(reportsDir, dir), link);
  }
}

/** Two shards both ran a row: a merge would have to pick one. */
export class MergeConflictError extends Error {
  override name = "MergeConflictError";
}

/**
 * Merge shard reports: rows of all shards (a row present in two is a
 * conflict), provenance of the first with the shard list recorded.
 * Artifact paths are rewritten relative to `outDir`.
 */
export async function mergeReports(dirs: string[], outDir: string): Promise<MatrixJson> {
  const parts: { dir: string; m: MatrixJson }[] = [];
  for (const d of dirs) {
    const path = join(d, "matrix.json");
    parts.push({ dir: d, m: parseMatrixJson(await Deno.readTextFile(path), path) });
  }
  if (parts.length === 0) throw new MergeConflictError("nothing to merge: give report directories");
  const seen = new Map<string, string>();
  const rows: RowResult[] = [];
  for (const { dir, m } of parts) {
    for (const r of m.rows) {
      if (seen.has(r.id)) {
        throw new MergeConflictError(`row ${r.id} is in both ${seen.get(r.id)} and ${dir}`);
      }
      seen.set(r.id, dir);
      rows.push({ ...r, artifacts: r.artifacts.map((a) => relative(outDir, join(dir, a))) });
    }
  }
  const first = parts[0].m.provenance;
  const merged: MatrixJson = {
    provenance: {
      ...first,
      runId: `merged-${first.runId}`,
      shard: `merged from ${
        parts.map((p) => p.m.provenance.shard ?? p.m.provenance.runId).join(", ")
      }`,
    },
    rows,
  };
  await writeReport(outDir, merged);
  return merged;
}
