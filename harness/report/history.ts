/**
 * The history store: a directory any web server can serve, holding
 * `index.json` (every published run with its provenance and rows; format in
 * history_index.ts), `index.html` (the front page) and `runs/<runId>/` (each
 * run's report and artifacts, its page re-rendered with its history).
 *
 * Publishing is idempotent (a run id already present changes nothing) and
 * safe against concurrent publishers: it holds `.publish.lock` (lock.ts),
 * builds the run in a temporary directory beside `runs/` and renames it into
 * place, then writes the front page and, last, index.json, each through a
 * temporary file renamed over the old one. A crash leaves the old index
 * intact; leftovers are cleared by the next publish.
 */
import { dirname, join } from "node:path";
import { UserError } from "../errors.ts";
import { type BenchJson, parseBenchJson } from "./bench_json.ts";
import { type HistorySnapshot, pageContext } from "./context.ts";
import { detectFlaky, FLAKY_WINDOW } from "./flaky.ts";
import {
  chronological,
  emptyIndex,
  HistoryFormatError,
  type HistoryIndex,
  INDEX_FORMAT,
  parseHistoryIndex,
  type PruneRule,
  rowTrends,
  type RunEntry,
  selectPruned,
  type SkippedFile,
} from "./history_index.ts";
import { acquireLock, type LockOptions } from "./lock.ts";
import { toHtml } from "./render.ts";
import { MAX_PUBLISHED_FILE_BYTES, readRunSource, type RunSource } from "./run_source.ts";
import { type MatrixJson, parseMatrixJson } from "./schema.ts";
import { benchPage, frontPage } from "./site.ts";

/** Name of the lock file inside a history directory. */
export const LOCK_FILE = ".publish.lock";

/** Prefix of temporary files and directories of a publish in progress. */
const TMP_PREFIX = ".tmp-";

/** Options of `publishRun`. */
export interface PublishOptions extends PruneRule {
  /** Runs the front page grid, trends and flaky rows look back over (default 10). */
  last?: number;
  /** Files larger than this are not copied (default 50 MiB). */
  maxFileBytes?: number;
  /** The time pruning by age counts from (default now). */
  now?: Date;
  /** How to wait for the lock. */
  lock?: LockOptions;
  /** Where progress lines go (default stderr). */
  log?: (line: string) => void;
}

/** What a publish did. */
export interface PublishResult {
  /** The run's id. */
  runId: string;
  /** False when the run was already in the history (then nothing changed). */
  published: boolean;
  /** Run ids pruned from the history. */
  pruned: string[];
  /** Files of the run not copied. */
  skipped: SkippedFile[];
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

/** Write `text` to `path` through a temporary file in the same directory and a rename. */
export async function writeTextAtomic(dir: string, name: string, text: string): Promise<void> {
  const tmp = join(dir, `${TMP_PREFIX}${name}-${crypto.randomUUID()}`);
  await Deno.writeTextFile(tmp, text);
  await Deno.rename(tmp, join(dir, name));
}

/** index.json of `dir` (an empty history when there is none). */
export async function readIndex(dir: string): Promise<HistoryIndex> {
  const path = join(dir, "index.json");
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return emptyIndex();
    throw e;
  }
  return parseHistoryIndex(text, path);
}

/** The index and every run's report, as pages and diffs read them. */
export async function loadHistory(dir: string): Promise<HistorySnapshot & { index: HistoryIndex }> {
  const index = await readIndex(dir);
  const matrices = new Map<string, MatrixJson>();
  const benches = new Map<string, BenchJson>();
  for (const run of index.runs) {
    const file = join(dir, run.path, run.kind === "matrix" ? "matrix.json" : "bench.json");
    let text: string;
    try {
      text = await Deno.readTextFile(file);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
      throw new HistoryFormatError(
        `${file} is missing but index.json lists run ${run.runId}: restore it, or remove the run from index.json — nothing was changed`,
      );
    }
    if (run.kind === "matrix") matrices.set(run.runId, parseMatrixJson(text, file));
    else benches.set(run.runId, parseBenchJson(text, file));
  }
  return { index, runs: index.runs, matrices, benches };
}

/** The index after `runs` changed: newest first, flaky rows over the last `last` matrix runs. */
function nextIndex(runs: RunEntry[], last: number): HistoryIndex {
  return {
    format: INDEX_FORMAT,
    updatedAt: new Date().toISOString(),
    runs: chronological(runs).reverse(),
    flaky: detectFlaky(rowTrends(runs, last), last),
  };
}

/** Remove what an interrupted publish left: temporary files, a run directory the index lacks. */
async function clearLeftovers(dir: string, index: HistoryIndex, runId: string): Promise<void> {
  for await (const e of Deno.readDir(dir)) {
    if (e.name.startsWith(TMP_PREFIX)) await Deno.remove(join(dir, e.name), { recursive: true });
  }
  const runDir = join(dir, "runs", runId);
  if (!index.runs.some((r) => r.runId === runId) && await exists(runDir)) {
    await Deno.remove(runDir, { recursive: true });
  }
}

/** Copy the run's files and its rendered page into a new directory `tmp`. */
async function stageRun(
  tmp: string,
  source: RunSource,
  snapshot: HistorySnapshot,
  last: number,
): Promise<void> {
  await Deno.mkdir(tmp);
  for (const f of source.files) {
    await Deno.mkdir(dirname(join(tmp, f.to)), { recursive: true });
    await Deno.copyFile(f.from, join(tmp, f.to));
  }
  const ctx = pageContext(snapshot, source.entry.runId, last);
  if (source.matrix) {
    await Deno.writeTextFile(
      join(tmp, "matrix.json"),
      JSON.stringify(source.matrix, null, 2) + "\n",
    );
    await Deno.writeTextFile(join(tmp, "index.html"), toHtml(source.matrix, ctx));
  } else if (source.bench) {
    await Deno.writeTextFile(join(tmp, "bench.json"), JSON.stringify(source.bench, null, 2) + "\n");
    await Deno.writeTextFile(
      join(tmp, "index.html"),
      benchPage(source.entry.runId, source.bench, ctx),
    );
  }
}

/**
 * Publish the run in `runDir` (a matrix report or a bench run) into the
 * history `historyDir` (created if missing), then prune by `keep` and
 * `maxAgeDays`.
 */
export async function publishRun(
  runDir: string,
  historyDir: string,
  opts: PublishOptions = {},
): Promise<PublishResult> {
  const log = opts.log ?? ((l: string) => console.error(l));
  const last = opts.last ?? FLAKY_WINDOW;
  const source = await readRunSource(runDir, opts.maxFileBytes ?? MAX_PUBLISHED_FILE_BYTES);
  const runId = source.entry.runId;
  if (source.matrix?.provenance.devModules) {
    // its modules are the working tree's over an older image's packages
    throw new UserError(
      `${runId} ran with --dev-modules (a developer's run): not published; run without it`,
    );
  }
  await Deno.mkdir(join(historyDir, "runs"), { recursive: true });
  const lock = await acquireLock(join(historyDir, LOCK_FILE), { log, ...opts.lock });
  try {
    const history = await loadHistory(historyDir);
    if (history.index.runs.some((r) => r.runId === runId)) {
      log(`${runId} is already in ${historyDir}: nothing changed`);
      return { runId, published: false, pruned: [], skipped: [] };
    }
    await clearLeftovers(historyDir, history.index, runId);
    const entry: RunEntry = {
      ...source.entry,
      path: `runs/${runId}/`,
      publishedAt: new Date().toISOString(),
    };
    const runs = [...history.index.runs, entry];
    const snapshot: HistorySnapshot = {
      runs,
      matrices: new Map(history.matrices),
      benches: new Map(history.benches),
    };
    if (source.matrix) snapshot.matrices.set(runId, source.matrix);
    if (source.bench) snapshot.benches.set(runId, source.bench);
    const tmp = join(historyDir, `${TMP_PREFIX}${runId}-${crypto.randomUUID()}`);
    await stageRun(tmp, source, snapshot, last);
    await Deno.rename(tmp, join(historyDir, "runs", runId));
    const pruned = selectPruned(runs, opts, opts.now ?? new Date());
    const index = nextIndex(runs.filter((r) => !pruned.includes(r.runId)), last);
    await writeTextAtomic(historyDir, "index.html", frontPage(index, last));
    // index.json last: until it is renamed into place the old history stands
    await writeTextAtomic(historyDir, "index.json", JSON.stringify(index, null, 2) + "\n");
    for (const id of pruned) {
      await Deno.remove(join(historyDir, "runs", id), { recursive: true }).catch(() => {});
    }
    log(
      `published ${runId} (${source.entry.kind}, ${entry.rows.length} rows) into ${historyDir}` +
        (entry.skipped.length
          ? `; ${entry.skipped.length} files not copied (see index.json)`
          : "") +
        (pruned.length ? `; pruned ${pruned.join(", ")}` : ""),
    );
    return { runId, published: true, pruned, skipped: entry.skipped };
  } finally {
    await lock.release();
  }
}
