/**
 * Content-addressed store for heavy artifacts. An entry lives at
 * `<cacheDir>/<stage>/<key>/` where key = sha256 of the stage's inputs. It is
 * built in a private temporary directory and published by one rename after a
 * `.complete` marker is written, under an exclusive file lock, so two runs
 * never corrupt it and a partial entry is never used.
 */
import { createHash } from "node:crypto";
import { basename, dirname, join, relative } from "node:path";
import { progress } from "./progress.ts";

/** Name of the marker written last into a finished entry. */
export const COMPLETE_MARKER = ".complete";

/** Hash any JSON-serialisable description of inputs. */
export function hashInputs(inputs: unknown): string {
  return createHash("sha256").update(stableJson(inputs)).digest("hex");
}

/** JSON with object keys sorted, so equal inputs hash equally. */
export function stableJson(value: unknown): string {
  return JSON.stringify(value, (_k, v) => {
    if (v && typeof v === "object" && !Array.isArray(v) && !(v instanceof Uint8Array)) {
      return Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)));
    }
    return v;
  });
}

/**
 * sha256 over a set of files and directories (recursively, sorted, names
 * relative to `base` included), so renaming or editing any file changes it.
 */
export async function hashTree(base: string, paths: string[]): Promise<string> {
  const h = createHash("sha256");
  const files: string[] = [];
  for (const p of paths) await collect(join(base, p), files);
  files.sort();
  for (const f of files) {
    h.update(relative(base, f));
    h.update("\0");
    h.update(await Deno.readFile(f));
    h.update("\0");
  }
  return h.digest("hex");
}

async function collect(path: string, out: string[]): Promise<void> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(path);
  } catch {
    return; // an absent input hashes as absent
  }
  if (info.isFile) {
    out.push(path);
    return;
  }
  if (!info.isDirectory) return;
  for await (const e of Deno.readDir(path)) {
    if (e.name.startsWith(".")) continue;
    await collect(join(path, e.name), out);
  }
}

/** Whether a directory is a finished cache entry. */
export async function isComplete(dir: string): Promise<boolean> {
  try {
    return (await Deno.stat(join(dir, COMPLETE_MARKER))).isFile;
  } catch {
    return false;
  }
}

/** A published cache entry. */
export interface CacheEntry {
  /** Directory holding the artifacts. */
  dir: string;
  /** The input hash. */
  key: string;
  /** True when this call built it. */
  built: boolean;
}

/** Where the entry for `inputs` under `stage` lives (finished or not). */
export function entryDir(cacheDir: string, stage: string, inputs: unknown): string {
  return join(cacheDir, stage, hashInputs(inputs));
}

/**
 * Return the entry for `inputs` under `stage`, building it with
 * `build(tmpDir, logDir)` when absent. `build` writes artifacts into the first
 * directory and logs into the second (`<cache>/logs/<stage>/<key>/`, which
 * survives a failed build so its path can be printed); if `build` throws,
 * nothing is published.
 */
export async function cached(
  cacheDir: string,
  stage: string,
  inputs: unknown,
  build: (outDir: string, logDir: string) => Promise<void>,
): Promise<CacheEntry> {
  const dir = entryDir(cacheDir, stage, inputs);
  const key = basename(dir);
  const stageDir = dirname(dir);
  if (await markUsed(dir)) return { dir, key, built: false };
  await Deno.mkdir(stageDir, { recursive: true });
  return await withLock(join(stageDir, `${key}.lock`), async () => {
    if (await markUsed(dir)) return { dir, key, built: false };
    // A directory without the marker is a partial entry from a killed run.
    await removeTree(dir);
    const tmp = join(stageDir, `.tmp-${key}-${Deno.pid}`);
    await removeTree(tmp);
    await Deno.mkdir(tmp, { recursive: true });
    const logDir = join(cacheDir, "logs", stage, key);
    await Deno.mkdir(logDir, { recursive: true });
    progress("cache", `building ${stage} (${key.slice(0, 12)}), logs in ${logDir}`);
    try {
      await build(tmp, logDir);
      await Deno.writeTextFile(
        join(tmp, COMPLETE_MARKER),
        stableJson({ stage, key, inputs, at: new Date().toISOString() }),
      );
      await Deno.rename(tmp, dir);
      await pruneStage(cacheDir, stage, KEEP_PER_STAGE, dir).catch((e) =>
        progress("cache", `pruning ${stage} failed: ${(e as Error).message}`)
      );
    } catch (e) {
      await removeTree(tmp).catch(() => {});
      throw e;
    }
    return { dir, key, built: true };
  });
}

/**
 * If `dir` is a finished entry, stamp its marker with now (the pruner keeps
 * what was used lately) and say so.
 */
export async function markUsed(dir: string): Promise<boolean> {
  const now = new Date();
  try {
    await Deno.utime(join(dir, COMPLETE_MARKER), now, now);
    return true;
  } catch {
    return false;
  }
}

/**
 * Run `fn` holding an exclusive lock on the file `path` (created if needed).
 * The kernel drops the lock when the process dies, so a killed run never
 * leaves a stale lock behind.
 */
export async function withLock<T>(path: string, fn: () => Promise<T>): Promise<T> {
  const lock = await Deno.open(path, { create: true, write: true });
  try {
    await lock.lock(true);
    return await fn();
  } finally {
    await lock.unlock().catch(() => {});
    lock.close();
  }
}

/**
 * A persistent work tree `<cacheDir>/<area>/<key>` for incremental builds (a
 * configured source tree): `prepare` fills it once, and a `.prepared` marker
 * tells a finished tree from one a killed run left half done, which is
 * started again. `use` then runs under the same lock, so two runs never
 * build in one tree at once.
 */
export async function withWorkTree<T>(
  cacheDir: string,
  area: string,
  key: string,
  prepare: (dir: string) => Promise<void>,
  use: (dir: string) => Promise<T>,
): Promise<T> {
  const dir = join(cacheDir, area, key);
  await Deno.mkdir(join(cacheDir, area), { recursive: true });
  return await withLock(`${dir}.lock`, async () => {
    const marker = join(dir, ".prepared");
    if (!await exists(marker)) {
      await removeTree(dir);
      await Deno.mkdir(dir, { recursive: true });
      await prepare(dir);
      await Deno.writeTextFile(marker, new Date().toISOString());
    }
    return await use(dir);
  });
}

/** Whether a path exists. */
export async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

/** Finished entries kept per stage; older ones are removed when a new one is published. */
export const KEEP_PER_STAGE = 3;

/**
 * An entry used this recently is never pruned, however many newer ones
 * exist: another run on the machine may be using it right now (a matrix
 * run holds its QEMU build for its whole length, while a developer's edits
 * publish new ones).
 */
export const IN_USE_GRACE_MS = 6 * 3600 * 1000;

/** A finished entry of a stage, as its marker records it. */
export interface FinishedEntry {
  dir: string;
  key: string;
  /** Last use (the marker's mtime), ms since the epoch. */
  usedAt: number;
}

/**
 * The finished entries of a stage, most recently used first; unfinished
 * ones (a build in progress or a killed one) are left out. None when the
 * stage has no directory yet.
 */
export async function finishedEntries(cacheDir: string, stage: string): Promise<FinishedEntry[]> {
  const stageDir = join(cacheDir, stage);
  const entries: FinishedEntry[] = [];
  try {
    for await (const e of Deno.readDir(stageDir)) {
      if (!e.isDirectory || !/^[0-9a-f]{64}$/.test(e.name)) continue;
      const dir = join(stageDir, e.name);
      try {
        const st = await Deno.stat(join(dir, COMPLETE_MARKER));
        entries.push({ dir, key: e.name, usedAt: st.mtime?.getTime() ?? 0 });
      } catch { /* unfinished */ }
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  return entries.sort((a, b) => b.usedAt - a.usedAt);
}

/** A finished entry's marker, as `cached` writes it. */
async function readMarker(dir: string): Promise<{ inputs?: unknown; at?: unknown }> {
  return JSON.parse(await Deno.readTextFile(join(dir, COMPLETE_MARKER)));
}

/** The inputs a finished entry was built from, as its marker records them. */
export async function entryInputs(dir: string): Promise<unknown> {
  return (await readMarker(dir)).inputs;
}

/** When a finished entry was built, as its marker records it (an ISO 8601 time). */
export async function entryBuiltAt(dir: string): Promise<string> {
  const { at } = await readMarker(dir);
  if (typeof at !== "string") throw new Error(`${dir}: its cache marker has no build time`);
  return at;
}

/**
 * Keep the `keep` most recently used finished entries of a stage (by their
 * marker's time, stamped at every use), never removing `protect` or an entry
 * used within `graceMs`. Superseded guest images and root trees are
 * gigabytes each; a long-lived runner would fill its disk.
 */
export async function pruneStage(
  cacheDir: string,
  stage: string,
  keep: number,
  protect?: string,
  graceMs: number = IN_USE_GRACE_MS,
): Promise<string[]> {
  const entries = await finishedEntries(cacheDir, stage);
  const removed: string[] = [];
  const recent = Date.now() - graceMs;
  for (const { dir, usedAt: at } of entries.slice(keep)) {
    if (dir === protect || at > recent) continue;
    await removeTree(dir);
    removed.push(dir);
  }
  return removed;
}

/**
 * Remove a tree, refusing when anything is still mounted inside it: an rm
 * through a bind-mounted /dev or /proc would destroy the host's.
 */
export async function removeTree(dir: string): Promise<void> {
  const mounts = await Deno.readTextFile("/proc/self/mountinfo").catch(() => "");
  const prefix = dir.endsWith("/") ? dir : dir + "/";
  for (const line of mounts.split("\n")) {
    const mountPoint = line.split(" ")[4];
    if (mountPoint && (mountPoint === dir || mountPoint.startsWith(prefix))) {
      throw new Error(`refusing to remove ${dir}: ${mountPoint} is still mounted`);
    }
  }
  await Deno.remove(dir, { recursive: true }).catch((e) => {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  });
}
