/**
 * Reads what the HTML page needs from a run directory (which artifacts
 * exist, the transcripts, the oracle summaries) and writes each step's
 * transcript excerpt as `rows/<id>/steps/<n>.txt`, so the page links to
 * long transcripts instead of inlining them.
 */
import { basename, join } from "node:path";
import { exists } from "../cache.ts";
import type { MatrixJson, RowResult } from "./schema.ts";
import {
  type CaptureSummary,
  INLINE_TAIL_LINES,
  type PageFiles,
  splitTranscript,
  type StepExcerpt,
} from "./page_data.ts";

/** The suffix the RDMA wire oracle gives its report beside a capture. */
const ORACLE_SUFFIX = ".violations.json";

/** A row's transcript: its `transcript.log` artifact, else `rows/<id>/transcript.log`. */
function transcriptPath(r: RowResult): string {
  return r.artifacts.find((a) => basename(a) === "transcript.log") ?? `rows/${r.id}/transcript.log`;
}

/** Write each step's lines beside the transcript; the excerpts in `r.steps` order. */
async function stepExcerpts(dir: string, r: RowResult): Promise<StepExcerpt[]> {
  const transcript = transcriptPath(r);
  let text: string;
  try {
    text = await Deno.readTextFile(join(dir, transcript));
  } catch {
    return r.steps.map(() => ({ lineCount: 0, tail: [] }));
  }
  const sections = splitTranscript(text, r.steps.map((s) => s.name));
  // Under this run's own rows/, also when the transcript is a merged shard's.
  const stepsDir = join("rows", r.id.replace(/[^A-Za-z0-9_-]/g, "_"), "steps");
  if (sections.some((l) => l.length)) await Deno.mkdir(join(dir, stepsDir), { recursive: true });
  return Promise.all(sections.map(async (lines, i) => {
    const failed = r.steps[i].status !== "PASS";
    const tail = failed ? lines.slice(-INLINE_TAIL_LINES) : [];
    if (!lines.length) return { lineCount: 0, tail };
    const file = join(stepsDir, `${i + 1}.txt`);
    await Deno.writeTextFile(join(dir, file), lines.join("\n") + "\n");
    return { file, lineCount: lines.length, tail };
  }));
}

/** The oracle's summary of one `*.violations.json` artifact; a bad file says why. */
async function captureSummary(
  dir: string,
  report: string,
  present: Set<string>,
): Promise<CaptureSummary> {
  const captured = report.slice(0, -ORACLE_SUFFIX.length);
  const base: CaptureSummary = {
    report,
    ...(present.has(captured) ? { capture: captured } : {}),
    byRule: {},
  };
  try {
    const v = JSON.parse(await Deno.readTextFile(join(dir, report))) as Record<string, unknown>;
    const num = (x: unknown) => (typeof x === "number" ? x : undefined);
    const byRule: Record<string, number> = {};
    if (v.byRule && typeof v.byRule === "object") {
      for (const [k, n] of Object.entries(v.byRule)) if (typeof n === "number") byRule[k] = n;
    }
    return {
      ...base,
      framesChecked: num(v.framesChecked),
      violationCount: num(v.violationCount),
      byRule,
    };
  } catch (e) {
    return { ...base, problem: (e as Error).message.split("\n")[0] };
  }
}

/**
 * Everything of run directory `dir` the page of `m` shows beyond
 * matrix.json; writes the step excerpt files on the way.
 */
export async function readPageFiles(dir: string, m: MatrixJson): Promise<PageFiles> {
  const present = new Set<string>();
  const files: PageFiles = { present, steps: {}, captures: {} };
  for (const r of m.rows) {
    const found = await Promise.all(r.artifacts.map((a) => exists(join(dir, a))));
    r.artifacts.forEach((a, i) => found[i] && present.add(a));
    files.steps[r.id] = await stepExcerpts(dir, r);
    const reports = r.artifacts.filter((a) => a.endsWith(ORACLE_SUFFIX) && present.has(a));
    files.captures[r.id] = await Promise.all(reports.map((a) => captureSummary(dir, a, present)));
  }
  return files;
}
