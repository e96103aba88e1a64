/**
 * A failing row's logs outlive the checkout they ran in: CI runs the matrix
 * in a clean clone that is removed afterwards, and a failure that happens
 * once in a while must still be readable. The directories of the failing
 * rows of a run are copied to `<cache>/failed-rows/<run id>/`; the newest
 * {@link KEEP_RUNS} runs stay.
 */
import { basename, join } from "node:path";
import { removeTree } from "../cache.ts";
import { exec, tailOf } from "../exec.ts";

/** How many runs' failed rows are kept. */
export const KEEP_RUNS = 5;

/**
 * Copy the directories of `rows` (ids) from the report at `reportDir` to
 * the cache; returns where they went (undefined when there was nothing to
 * copy). Older runs beyond {@link KEEP_RUNS} are removed.
 */
export async function keepFailedRows(
  cacheDir: string,
  reportDir: string,
  rows: string[],
): Promise<string | undefined> {
  if (!rows.length) return undefined;
  const root = join(cacheDir, "failed-rows");
  const dest = join(root, basename(reportDir));
  await Deno.mkdir(dest, { recursive: true });
  const sources = [
    ...rows.map((id) => join(reportDir, "rows", id)),
    join(reportDir, "matrix.json"),
  ];
  for (const src of sources) {
    const out = await exec(["cp", "-a", src, dest], { allowFail: true });
    if (out.code !== 0) console.error(`keep failed rows: cp ${src}: ${out.stderr.trim()}`);
  }
  const runs: string[] = [];
  for await (const e of Deno.readDir(root)) if (e.isDirectory) runs.push(e.name);
  // report ids begin with their UTC time (20261203T020253-…): by name is by age
  runs.sort();
  for (const old of runs.slice(0, Math.max(0, runs.length - KEEP_RUNS))) {
    await removeTree(join(root, old));
  }
  return dest;
}

/** The last `n` lines of a failing row's transcript, or nothing when it has none. */
export async function transcriptTail(reportDir: string, row: string, n: number): Promise<string[]> {
  const tail = await tailOf(join(reportDir, "rows", row, "transcript.log"), n);
  return tail.split("\n").filter((l) => l);
}
