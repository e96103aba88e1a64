/**
 * `report publish`, `report history` and `report diff`: their arguments
 * checked and their output printed (cli.ts hands the words after `report`
 * and the parsed flags here).
 */
import { join } from "node:path";
import { UsageError } from "../errors.ts";
import { benchAsMatrix, parseBenchJson } from "./bench_json.ts";
import { UnknownRunError } from "./context.ts";
import { diffMarkdown, diffRuns, diffText } from "./diff.ts";
import { FLAKY_WINDOW } from "./flaky.ts";
import { historyGrid } from "./grid.ts";
import { chronological, type RunKind } from "./history_index.ts";
import { loadHistory, publishRun, readIndex } from "./history.ts";
import { NotAReportError } from "./run_source.ts";
import { type MatrixJson, parseMatrixJson } from "./schema.ts";

/** The `report` subcommands this module runs. */
export const HISTORY_SUBCOMMANDS = ["publish", "history", "diff"] as const;

/** Flags of these subcommands, as cli.ts's parseArgs gives them. */
export interface HistoryFlags {
  to?: string;
  from?: string;
  history?: string;
  keep?: string;
  "max-age-days"?: string;
  "max-file-mb"?: string;
  last?: string;
  markdown?: boolean;
}

function count(flag: string, value: string | undefined, min: number): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < min) {
    throw new UsageError(`--${flag} wants a whole number of at least ${min}, not ${value}`);
  }
  return Number(value);
}

async function readRunAt(dir: string): Promise<{ kind: RunKind; m: MatrixJson } | undefined> {
  for (const [file, kind] of [["matrix.json", "matrix"], ["bench.json", "bench"]] as const) {
    const path = join(dir, file);
    let text: string;
    try {
      text = await Deno.readTextFile(path);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotADirectory) continue;
      throw e;
    }
    if (kind === "matrix") return { kind, m: parseMatrixJson(text, path) };
    const runId = (await Deno.realPath(dir)).split("/").pop()!;
    return { kind, m: benchAsMatrix(runId, parseBenchJson(text, path)) };
  }
  return undefined;
}

async function runDiff(words: string[], flags: HistoryFlags): Promise<number> {
  if (words.length !== 2) {
    throw new UsageError("usage: report diff <run-a> <run-b> [--history DIR] [--markdown]");
  }
  const last = count("last", flags.last, 1) ?? FLAKY_WINDOW;
  const history = flags.history ? await loadHistory(flags.history) : undefined;
  const resolve = async (word: string) => {
    const here = await readRunAt(word);
    if (here) return here;
    const entry = history?.runs.find((r) => r.runId === word);
    if (entry && history) return (await readRunAt(join(flags.history!, entry.path)))!;
    if (history) {
      throw new UnknownRunError(
        `${word}: neither a report directory nor a run of ${flags.history}`,
      );
    }
    throw new NotAReportError(
      `${word}: not a report directory (no matrix.json or bench.json); to name a run by id give --history DIR`,
    );
  };
  const a = await resolve(words[0]), b = await resolve(words[1]);
  if (a.kind !== b.kind) throw new UsageError(`cannot diff a ${a.kind} run with a ${b.kind} run`);
  let past: MatrixJson[] | undefined;
  if (history) {
    // a quick run's volumes are not a deep run's: noise is judged at run B's depth
    const sameDepth = (id: string) =>
      a.kind !== "matrix" || history.matrices.get(id)?.provenance.depth === b.m.provenance.depth;
    const runs = chronological(history.runs.filter((r) => r.kind === a.kind))
      .filter((r) => r.runId !== b.m.provenance.runId && sameDepth(r.runId)).slice(-last);
    past = runs.map((r) =>
      a.kind === "matrix"
        ? history.matrices.get(r.runId)!
        : benchAsMatrix(r.runId, history.benches.get(r.runId)!)
    );
  }
  const d = diffRuns(a.m, b.m, past);
  console.log((flags.markdown ? diffMarkdown(d) : diffText(d)).trimEnd());
  return 0;
}

/**
 * Run `report <sub> <words...>`. `defaultDir` is where the history lives
 * when neither --to nor --from names it. Returns the exit code: 0 also when
 * runs differ; bad input throws a UserError (exit 2).
 */
export async function historyCommand(
  sub: typeof HISTORY_SUBCOMMANDS[number],
  words: string[],
  flags: HistoryFlags,
  defaultDir: string,
): Promise<number> {
  switch (sub) {
    case "publish": {
      if (words.length !== 1) {
        throw new UsageError(
          "usage: report publish <run-dir> [--to <dir>] [--keep N] [--max-age-days D] [--max-file-mb M]",
        );
      }
      const to = flags.to ?? defaultDir;
      const maxMiB = count("max-file-mb", flags["max-file-mb"], 0);
      const r = await publishRun(words[0], to, {
        keep: count("keep", flags.keep, 1),
        maxAgeDays: count("max-age-days", flags["max-age-days"], 0),
        last: count("last", flags.last, 1),
        ...(maxMiB === undefined ? {} : { maxFileBytes: maxMiB * 1024 * 1024 }),
        log: (l) => console.log(l),
      });
      for (const s of r.skipped) console.log(`  not copied: ${s.path} (${s.reason})`);
      return 0;
    }
    case "history": {
      if (words.length) throw new UsageError("usage: report history [--from DIR] [--last N]");
      const from = flags.from ?? defaultDir;
      try {
        await Deno.stat(join(from, "index.json"));
      } catch {
        throw new NotAReportError(`${from}: no history here (no index.json); publish a run first`);
      }
      const last = count("last", flags.last, 1) ?? FLAKY_WINDOW;
      console.log(historyGrid(await readIndex(from), last, from).trimEnd());
      return 0;
    }
    case "diff":
      return await runDiff(words, flags);
  }
}
