/** Shard plans: balanced by a history's row durations (LPT), round-robin without. */
import assert from "node:assert/strict";
import { UsageError } from "../../harness/errors.ts";
import { shardRows } from "../../harness/matrix/registry.ts";
import {
  durationsFromIndex,
  durationsFromReports,
  formatPlan,
  planShards,
  rowCostSec,
} from "../../harness/matrix/shard_plan.ts";
import { emptyIndex, type RunEntry } from "../../harness/report/history_index.ts";
import type { Status } from "../../harness/report/schema.ts";

const IDS = ["a", "b", "c", "d", "e", "f", "g"];

Deno.test("LPT: longest first, each to the least-loaded shard; report order kept inside a shard", () => {
  const d = new Map([["a", 10], ["b", 70], ["c", 30], ["d", 60], ["e", 20], ["f", 50], ["g", 40]]);
  const plan = planShards(IDS, 3, d);
  assert.equal(plan.basis, "durations");
  // b70→1, d60→2, f50→3, g40→3 (50<60<70), c30→2, e20→1, a10→1 (90,90,90: ties to the lower)
  assert.deepEqual(plan.shards.map((s) => s.rows), [["a", "b", "e"], ["c", "d"], ["f", "g"]]);
  assert.deepEqual(plan.shards.map((s) => s.predictedSec), [100, 90, 90]);
  assert.deepEqual(plan.guessed, []);
});

Deno.test("every row lands in exactly one shard, for any count, also with more shards than rows", () => {
  const d = new Map(IDS.map((id, k) => [id, (k * 37) % 11 + 1]));
  for (const n of [1, 2, 3, 5, 9]) {
    const plan = planShards(IDS, n, d);
    assert.equal(plan.shards.length, n);
    assert.deepEqual(plan.shards.flatMap((s) => s.rows).sort(), [...IDS].sort());
    const all = IDS.reduce((t, id) => t + d.get(id)!, 0);
    assert.equal(plan.shards.reduce((t, s) => t + s.predictedSec, 0), all);
  }
});

Deno.test("rows the history does not know are predicted at the median and named", () => {
  const plan = planShards(IDS, 2, new Map([["a", 10], ["b", 30], ["c", 20]]));
  assert.deepEqual(plan.guessed, ["d", "e", "f", "g"]);
  assert.equal(plan.durations.get("g"), 20);
  assert.match(formatPlan(plan, "h")[0], /no duration for d, e, f, g: the median was assumed/);
});

Deno.test("without any duration the rows are dealt round-robin, as before", () => {
  const plan = planShards(IDS, 3, new Map([["not-a-row", 5]]));
  assert.equal(plan.basis, "count");
  assert.deepEqual(plan.shards.map((s) => s.rows), [["a", "d", "g"], ["b", "e"], ["c", "f"]]);
  assert.match(
    formatPlan(plan, "reports/history", 2).join("\n"),
    /round-robin[\s\S]*2\/3.*this shard/,
  );
});

Deno.test("shardRows follows the plan, keeps the row objects and rejects a bad shard", () => {
  const rows = IDS.map((id) => ({ id, title: id.toUpperCase() }));
  const d = new Map([["a", 10], ["b", 70], ["c", 30], ["d", 60], ["e", 20], ["f", 50], ["g", 40]]);
  assert.deepEqual(shardRows(rows, 2, 3, d), [{ id: "c", title: "C" }, { id: "d", title: "D" }]);
  assert.throws(() => shardRows(rows, 4, 3, d), UsageError);
  assert.throws(() => planShards(IDS, 0, d), UsageError);
});

function run(runId: string, startedAt: string, rows: [string, Status, number][]): RunEntry {
  return {
    runId,
    startedAt,
    project: "p",
    host: { kernel: "k", cpus: 2 },
    kind: "matrix",
    path: `runs/${runId}/`,
    publishedAt: startedAt,
    status: "PASS",
    rows: rows.map(([id, status, durationSec]) => ({ id, status, durationSec, measurements: {} })),
    skipped: [],
  };
}

Deno.test("durations come from each row's newest run that ran it to an end", () => {
  const index = emptyIndex();
  index.runs = [
    run("old", "2026-11-01T00:00:00Z", [["a", "PASS", 100], ["b", "PASS", 50], ["c", "FAIL", 40]]),
    run("new", "2026-12-01T00:00:00Z", [["a", "PASS", 120], ["b", "ERROR", 2], ["c", "MISS", 0]]),
  ];
  assert.deepEqual(durationsFromIndex(index), new Map([["a", 120], ["b", 50], ["c", 40]]));
  assert.deepEqual(durationsFromIndex(emptyIndex()), new Map());
});

Deno.test("durationsFromReports: each row's newest ended run; reports come newest first", () => {
  const report = (rows: [string, Status, number][]) => ({
    provenance: {
      runId: "r",
      startedAt: "2026-12-01T00:00:00Z",
      project: "p",
      host: { kernel: "k", hostname: "h", cpus: 2 },
    },
    rows: rows.map(([id, status, durationSec]) => ({
      id,
      title: id,
      status,
      durationSec,
      measurements: {},
      artifacts: [],
      steps: [],
    })),
  });
  const newest = report([["a", "PASS", 120], ["b", "ERROR", 2]]);
  const older = report([["a", "PASS", 100], ["b", "FAIL", 50], ["c", "MISS", 0]]);
  assert.deepEqual(durationsFromReports([newest, older]), new Map([["a", 120], ["b", 50]]));
  assert.deepEqual(durationsFromReports([]), new Map());
});

Deno.test("a row's wait for the cache is not its cost: reports, index and the guard", () => {
  // a cold run: qtest-fuzz waited 557 s for the sanitizer QEMU, gpu-smoke 51 s for its state
  assert.equal(rowCostSec({ durationSec: 615.3, buildWaitSec: 557.1 }), 615.3 - 557.1);
  assert.equal(rowCostSec({ durationSec: 56.8 }), 56.8);
  // a hand-edited index: a wait that is not a real one takes nothing off, none goes below 0
  for (const bad of [NaN, -3, Infinity, "9" as unknown as number]) {
    assert.equal(rowCostSec({ durationSec: 20, buildWaitSec: bad }), 20);
  }
  assert.equal(rowCostSec({ durationSec: 20, buildWaitSec: 25 }), 0);

  const index = emptyIndex();
  const entry = run("cold", "2026-12-06T02:00:00Z", [["qtest-fuzz", "PASS", 615.3], [
    "b",
    "PASS",
    9,
  ]]);
  entry.rows[0].buildWaitSec = 557.1;
  index.runs = [entry];
  assert.deepEqual(durationsFromIndex(index), new Map([["qtest-fuzz", 615.3 - 557.1], ["b", 9]]));

  const row = {
    id: "gpu-smoke",
    title: "g",
    status: "PASS" as Status,
    durationSec: 56.8,
    buildWaitSec: 51.6,
    measurements: {},
    artifacts: [],
    steps: [],
  };
  const report = {
    provenance: {
      runId: "r",
      startedAt: "2026-12-06T02:00:00Z",
      project: "p",
      host: { kernel: "k", hostname: "h", cpus: 2 },
    },
    rows: [row],
  };
  assert.equal(durationsFromReports([report]).get("gpu-smoke")!.toFixed(1), "5.2");
});
