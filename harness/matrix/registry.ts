/**
 * The rows of the validation matrix, in report order. Each lives in its own
 * file `tests/matrix/<id with _ for ->.ts` exporting `row`.
 */
import { UserError } from "../errors.ts";
import { join } from "node:path";
import { REPO_ROOT } from "../config.ts";
import type { LibraryName, ModuleName, Row } from "./row.ts";
import { checkShard, planShards } from "./shard_plan.ts";

/** Every row id, in report order (ARCHITECTURE.md's table, with fresh-host first). */
export const ROW_IDS = [
  "fresh-host",
  "boot",
  "packages",
  "qtest-vnic",
  "switch",
  "driver-load",
  "eth-forwarding",
  "ibstat",
  "verbs-limits",
  "roce-e2e",
  "roce-verbs",
  "roce-loopback",
  "lossless",
  "ib-forwarding",
  "ib-e2e",
  "qtest-gpu",
  "qtest-fuzz",
  "gpu-smoke",
  "cnuaslink",
  "gpu-host",
  "cnuasdev",
  "peermem",
  "fuzz",
  "fuzz-ib",
  "docs",
] as const;

/** An unknown row id was asked for. */
export class UnknownRowError extends UserError {}

/** The file a row lives in. */
export function rowFile(id: string): string {
  return join(REPO_ROOT, "tests", "matrix", `${id.replaceAll("-", "_")}.ts`);
}

/** Load rows by id (all when `ids` is empty), checking every id first. */
export async function loadRows(ids: string[] = []): Promise<Row[]> {
  const known: readonly string[] = ROW_IDS;
  const bad = ids.filter((i) => !known.includes(i));
  if (bad.length) {
    throw new UnknownRowError(
      `unknown row${bad.length > 1 ? "s" : ""} ${bad.join(", ")}; the rows are: ${
        ROW_IDS.join(", ")
      }`,
    );
  }
  const wanted = ids.length ? ROW_IDS.filter((i) => ids.includes(i)) : [...ROW_IDS];
  const rows: Row[] = [];
  for (const id of wanted) {
    const mod = await import(`file://${rowFile(id)}`) as { row: Row };
    if (mod.row?.id !== id) throw new Error(`${rowFile(id)} must export a row with id ${id}`);
    rows.push(mod.row);
  }
  return rows;
}

/** Each row's declared modules (`Row.modules`), by row id: what compat.json credits. */
export async function moduleCredits(): Promise<Record<string, ModuleName[]>> {
  const out: Record<string, ModuleName[]> = {};
  for (const r of await loadRows()) out[r.id] = r.modules ?? [];
  return out;
}

/** Each row's declared libraries (`Row.libraries`), by row id: what compat.json credits. */
export async function libraryCredits(): Promise<Record<string, LibraryName[]>> {
  const out: Record<string, LibraryName[]> = {};
  for (const r of await loadRows()) out[r.id] = r.libraries ?? [];
  return out;
}

/**
 * Rows of shard `index` (1-based) of `count`, in report order: balanced by
 * `durations` when any is known, else round-robin (shard_plan.ts).
 */
export function shardRows<T extends { id: string }>(
  rows: T[],
  index: number,
  count: number,
  durations: ReadonlyMap<string, number> = new Map(),
): T[] {
  checkShard(index, count);
  const mine = new Set(planShards(rows.map((r) => r.id), count, durations).shards[index - 1].rows);
  return rows.filter((r) => mine.has(r.id));
}
