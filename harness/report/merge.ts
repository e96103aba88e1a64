/**
 * Merging shard reports (CI runs the matrix in shards) into one report
 * directory, as if one run had produced it.
 */
import { join, relative } from "node:path";
import { UserError } from "../errors.ts";
import { type MatrixJson, parseMatrixJson, type RowResult } from "./schema.ts";
import { writeReport } from "./write.ts";

/** Two shards both ran a row: a merge would have to pick one. */
export class MergeConflictError extends UserError {}

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
  const depths = new Set(parts.map((p) => p.m.provenance.depth ?? "n/a"));
  if (depths.size > 1) {
    // a quick row and a deep row are different claims: one page must not mix them
    throw new MergeConflictError(
      `the reports ran at different depths (${[...depths].join(", ")}): merge one depth at a time`,
    );
  }
  if (parts.some((p) => p.m.provenance.devModules)) {
    // modules from a working tree over an older image: not one of the matrix's claims
    throw new MergeConflictError(
      "a report ran with --dev-modules (a developer's run): merge only runs without it",
    );
  }
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
