import assert from "node:assert/strict";
import { loadRows, ROW_IDS, shardRows, UnknownRowError } from "../../harness/matrix/registry.ts";
import { UsageError } from "../../harness/errors.ts";

Deno.test("every row of the architecture table is registered and loads", async () => {
  const rows = await loadRows();
  assert.deepEqual(rows.map((r) => r.id), [...ROW_IDS]);
  for (const r of rows) {
    assert.ok(r.run || r.missReason, `${r.id} has neither run nor missReason`);
    assert.ok(r.timeoutSec > 0, `${r.id} timeout`);
  }
});

Deno.test("an unknown row is an error that lists the rows", async () => {
  await assert.rejects(
    loadRows(["boot", "nosuch"]),
    (e: Error) =>
      e instanceof UnknownRowError && e.message.includes("nosuch") &&
      ROW_IDS.every((id) => e.message.includes(id)),
  );
});

Deno.test("shards partition the rows: each row in exactly one shard", () => {
  const rows = ROW_IDS.map((id) => ({ id }));
  for (const n of [1, 2, 3, 5]) {
    const seen = Array.from({ length: n }, (_, i) => shardRows(rows, i + 1, n)).flat().map((r) =>
      r.id
    );
    assert.deepEqual([...seen].sort(), [...ROW_IDS].sort());
  }
  assert.throws(() => shardRows(rows, 0, 2), UsageError);
  assert.throws(() => shardRows(rows, 3, 2), UsageError);
});

Deno.test("--row and --shard combine: the rows asked for, dealt round-robin in report order", async () => {
  const ordered = await loadRows(["switch", "qtest-vnic", "qtest-gpu"]);
  assert.deepEqual([1, 2, 3].map((i) => shardRows(ordered, i, 3).map((r) => r.id)), [
    ["qtest-vnic"],
    ["switch"],
    ["qtest-gpu"],
  ]);
  assert.deepEqual(shardRows([{ id: "switch" }], 3, 3), []); // an empty shard is allowed
});
