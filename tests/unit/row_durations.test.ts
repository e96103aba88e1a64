/**
 * The rows' durations kept in the cache: what a fresh clone's run orders its
 * shared rows by (harness/matrix/row_durations.ts).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  cachedDurations,
  recordDurations,
  ROW_DURATIONS_FILE,
} from "../../harness/matrix/row_durations.ts";
import type { RowResult, Status } from "../../harness/report/schema.ts";

function result(id: string, status: Status, durationSec: number): RowResult {
  return { id, title: id, status, durationSec, measurements: {}, artifacts: [], steps: [] };
}

async function withCache(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "row-durations-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("no file: no durations, so the rows run in the order given", async () => {
  await withCache(async (dir) => {
    assert.deepEqual([...await cachedDurations(dir, "quick")], []);
  });
});

Deno.test("rows that ran to an end are kept per depth; ERROR, MISS and SKIP are not", async () => {
  await withCache(async (dir) => {
    await recordDurations(dir, "quick", [
      result("fuzz", "PASS", 190.04),
      result("docs", "FAIL", 90),
      result("boot", "ERROR", 3),
      result("ib-e2e", "MISS", 0),
      result("peermem", "SKIP", 0),
    ]);
    assert.deepEqual(Object.fromEntries(await cachedDurations(dir, "quick")), {
      fuzz: 190,
      docs: 90,
    });
    assert.equal((await cachedDurations(dir, "deep")).size, 0);
  });
});

Deno.test("a later run replaces its rows' entries and keeps the others", async () => {
  await withCache(async (dir) => {
    await recordDurations(dir, "quick", [result("a", "PASS", 10), result("b", "PASS", 20)]);
    await recordDurations(dir, "deep", [result("a", "PASS", 99)]);
    await recordDurations(dir, "quick", [result("a", "PASS", 12)]);
    assert.deepEqual(Object.fromEntries(await cachedDurations(dir, "quick")), { a: 12, b: 20 });
    assert.deepEqual(Object.fromEntries(await cachedDurations(dir, "deep")), { a: 99 });
  });
});

Deno.test("two runs recording at once lose no entry", async () => {
  await withCache(async (dir) => {
    await Promise.all(
      Array.from(
        { length: 8 },
        (_, i) => recordDurations(dir, "quick", [result(`r${i}`, "PASS", i)]),
      ),
    );
    assert.equal((await cachedDurations(dir, "quick")).size, 8);
  });
});

Deno.test("a torn or foreign file reads as none and is replaced by the next record", async () => {
  await withCache(async (dir) => {
    const path = join(dir, ROW_DURATIONS_FILE);
    for (
      const text of ['{"quick": {"a": 1', "[1,2]", '{"quick": {"a": "slow", "b": -1, "c": 5}}']
    ) {
      await Deno.writeTextFile(path, text);
      const got = Object.fromEntries(await cachedDurations(dir, "quick"));
      assert.deepEqual(got, text.includes('"c": 5') ? { c: 5 } : {}, text);
    }
    await Deno.writeTextFile(path, "not json");
    await recordDurations(dir, "quick", [result("a", "PASS", 3)]);
    assert.deepEqual(Object.fromEntries(await cachedDurations(dir, "quick")), { a: 3 });
  });
});

Deno.test("the cache keeps a row's cost: its wait for builds and saved states left out", async () => {
  await withCache(async (dir) => {
    await recordDurations(dir, "quick", [
      { ...result("qtest-fuzz", "PASS", 615.3), buildWaitSec: 557.1 },
      result("docs", "PASS", 33.4),
    ]);
    assert.deepEqual(Object.fromEntries(await cachedDurations(dir, "quick")), {
      "qtest-fuzz": 58.2,
      docs: 33.4,
    });
  });
});
