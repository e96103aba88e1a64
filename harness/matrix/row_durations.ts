/**
 * The rows' durations kept in the cache (`<cacheDir>/row-durations.json`),
 * so a run in a fresh clone — no local reports, as in CI — still starts the
 * rows that share the cores longest first. Local reports, when there are
 * any, come first (they are this checkout's); the cache fills in the rows
 * they do not know. Like any cache it only makes a run faster: a missing or
 * unreadable file orders the rows as given, and nothing is judged by it.
 */
import { join } from "node:path";
import { withLock } from "../cache.ts";
import type { Depth } from "../config.ts";
import type { RowResult } from "../report/schema.ts";
import { rowCostSec, TIMED_STATUSES } from "./shard_plan.ts";

/** The file, under the cache directory. */
export const ROW_DURATIONS_FILE = "row-durations.json";

/** The file's shape: per depth, each row's latest cost in seconds (`rowCostSec`: without its wait for the cache). */
type DurationsFile = Partial<Record<Depth, Record<string, number>>>;

/** The file's contents, or an empty record when it is missing or not ours. */
async function readFile(path: string): Promise<DurationsFile> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch {
    return {};
  }
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return {};
    const out: DurationsFile = {};
    for (const depth of ["quick", "deep"] as const) {
      const rows = (parsed as Record<string, unknown>)[depth];
      if (typeof rows !== "object" || rows === null) continue;
      const kept: Record<string, number> = {};
      for (const [id, sec] of Object.entries(rows)) {
        if (typeof sec === "number" && Number.isFinite(sec) && sec >= 0) kept[id] = sec;
      }
      out[depth] = kept;
    }
    return out;
  } catch {
    // a torn or foreign file: the next run writes a good one
    return {};
  }
}

/** Each row's latest duration at `depth` as the cache holds it (empty without a file). */
export async function cachedDurations(
  cacheDir: string,
  depth: Depth,
): Promise<Map<string, number>> {
  const file = await readFile(join(cacheDir, ROW_DURATIONS_FILE));
  return new Map(Object.entries(file[depth] ?? {}));
}

/**
 * Record the durations of `rows` that ran to an end (PASS, FAIL, DONE) at
 * `depth`, keeping the other rows' entries. Under a lock and published by a
 * rename, so two runs ending at once neither lose an entry nor tear the file.
 */
export async function recordDurations(
  cacheDir: string,
  depth: Depth,
  rows: readonly RowResult[],
): Promise<void> {
  const timed = rows.filter((r) => TIMED_STATUSES.has(r.status));
  if (!timed.length) return;
  await Deno.mkdir(cacheDir, { recursive: true });
  const path = join(cacheDir, ROW_DURATIONS_FILE);
  await withLock(`${path}.lock`, async () => {
    const file = await readFile(path);
    const kept = { ...file[depth] };
    for (const r of timed) kept[r.id] = Math.round(rowCostSec(r) * 10) / 10;
    file[depth] = kept;
    const tmp = `${path}.${Deno.pid}.tmp`;
    await Deno.writeTextFile(tmp, JSON.stringify(file, null, 2) + "\n");
    await Deno.rename(tmp, path);
  });
}
