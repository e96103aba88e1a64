/**
 * Writing a run's report directory and the `reports/latest` link.
 */
import { join, relative } from "node:path";
import { libraryCredits, moduleCredits } from "../matrix/registry.ts";
import { toCompat, toHtml, toJunit, toMarkdown } from "./render.ts";
import { readPageFiles } from "./page_files.ts";
import { emptyPageContext, type MatrixJson, type PageContext, parseMatrixJson } from "./schema.ts";

/**
 * The run `<reportsDir>/latest` points at (the one before a run that is
 * about to start), for its page's "since the previous run"; undefined when
 * there is none or it cannot be read (a local page then shows the run alone).
 */
export async function latestReport(reportsDir: string): Promise<MatrixJson | undefined> {
  const path = join(reportsDir, "latest", "matrix.json");
  try {
    return parseMatrixJson(await Deno.readTextFile(path), path);
  } catch {
    return undefined;
  }
}

/**
 * The newest `count` runs under `reportsDir` (run ids sort by their start
 * time), newest first; directories without a readable matrix.json are left
 * out.
 */
export async function recentReports(reportsDir: string, count: number): Promise<MatrixJson[]> {
  const ids: string[] = [];
  try {
    for await (const e of Deno.readDir(reportsDir)) {
      if (e.isDirectory && /^\d{8}T\d{6}-/.test(e.name)) ids.push(e.name);
    }
  } catch {
    return [];
  }
  const out: MatrixJson[] = [];
  for (const id of ids.sort().reverse().slice(0, count)) {
    const path = join(reportsDir, id, "matrix.json");
    try {
      out.push(parseMatrixJson(await Deno.readTextFile(path), path));
    } catch {
      // a run killed before its first write, or not a run: nothing to learn from
    }
  }
  return out;
}

/**
 * Write matrix.json and its renderings into `dir`; point `<reportsDir>/latest`
 * at it. The page shows `context` (the run's history; empty: the run alone)
 * and what `dir` holds: each step's transcript excerpt is written to
 * `rows/<id>/steps/<n>.txt` for it to link.
 */
export async function writeReport(
  dir: string,
  m: MatrixJson,
  reportsDir?: string,
  context: PageContext = emptyPageContext(),
): Promise<void> {
  await Deno.mkdir(dir, { recursive: true });
  await Deno.writeTextFile(join(dir, "matrix.json"), JSON.stringify(m, null, 2) + "\n");
  await Deno.writeTextFile(join(dir, "junit.xml"), toJunit(m));
  await Deno.writeTextFile(join(dir, "matrix.md"), toMarkdown(m));
  await Deno.writeTextFile(
    join(dir, "index.html"),
    toHtml(m, context, await readPageFiles(dir, m)),
  );
  // compat.json credits each module and library with the rows that declare it
  const compat = toCompat(m, await moduleCredits(), await libraryCredits());
  await Deno.writeTextFile(join(dir, "compat.json"), JSON.stringify(compat, null, 2) + "\n");
  if (reportsDir) {
    const link = join(reportsDir, "latest");
    await Deno.remove(link).catch(() => {});
    await Deno.symlink(relative(reportsDir, dir), link);
  }
}
