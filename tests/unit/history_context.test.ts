/** The PageContext of a published run: previous run, trends, flaky rows, bench series. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { pageContext, UnknownRunError } from "../../harness/report/context.ts";
import { loadHistory, publishRun } from "../../harness/report/history.ts";
import { historyGrid } from "../../harness/report/grid.ts";
import { sampleMatrix, writeBenchDir, writeRunDir } from "./history_fixture.ts";

async function fourRuns() {
  const tmp = await Deno.makeTempDir();
  const site = join(tmp, "site");
  const specs = [
    ["r1", "01", "c1", "PASS"],
    ["r2", "02", "c2", "FAIL"],
    ["r3", "03", "c2", "PASS"],
    ["r4", "05", "c3", "PASS"],
  ] as const;
  for (const [id, day, project, status] of specs) {
    const rows = [{ id: "switch", status, durationSec: Number(day) }];
    if (id !== "r2") rows.push({ id: "qtest-gpu", status: "PASS", durationSec: 2 });
    const run = await writeRunDir(tmp, sampleMatrix(id, `2026-12-${day}T00:00:00Z`, project, rows));
    await publishRun(run, site, { log: () => {} });
  }
  for (const [id, day, v] of [["b1", "02", 10], ["b2", "04", 12], ["b3", "06", 14]] as const) {
    await publishRun(
      await writeBenchDir(tmp, id, `2026-12-${day}T12:00:00Z`, { "cnuas_ib.bw": v }),
      site,
      { log: () => {} },
    );
  }
  return { site, h: await loadHistory(site) };
}

Deno.test("a run's context: its previous run, trends oldest first ending with it, flaky rows", async () => {
  const { h } = await fourRuns();
  const ctx = pageContext(h, "r3");
  assert.equal(ctx.previous?.provenance.runId, "r2");
  assert.deepEqual(ctx.trends.switch.map((p) => [p.runId, p.status, p.durationSec]), [
    ["r1", "PASS", 1],
    ["r2", "FAIL", 2],
    ["r3", "PASS", 3],
  ]);
  assert.deepEqual(ctx.trends["qtest-gpu"].map((p) => p.runId), ["r1", "r3"]);
  assert.deepEqual(Object.keys(ctx.flaky), ["switch"]); // FAIL and PASS on c2
  assert.match(ctx.flaky.switch, /same commit c2/);
  // runs after r3 are not its past: r4 is absent, the bench series stop at b1
  assert.deepEqual(ctx.bench["benchRdmaPerf.cnuas_ib.bw"].points.map((p) => p.value), [10]);
});

Deno.test("the newest run sees every bench run before it, oldest first, and a short window", async () => {
  const { h } = await fourRuns();
  const ctx = pageContext(h, "r4");
  const series = ctx.bench["benchRdmaPerf.cnuas_ib.bw"];
  assert.equal(series.unit, "MiB/s");
  assert.deepEqual(series.points.map((p) => [p.runId, p.value]), [["b1", 10], ["b2", 12]]);
  assert.deepEqual(pageContext(h, "r4", 2).trends.switch.map((p) => p.runId), ["r3", "r4"]);
  const first = pageContext(h, "r1"); // the first run: no previous run, no bench before it
  assert.equal(first.previous, undefined);
  assert.deepEqual(first.trends.switch, [
    {
      runId: "r1",
      project: "c1",
      startedAt: "2026-12-01T00:00:00Z",
      status: "PASS",
      durationSec: 1,
    },
  ]);
  assert.deepEqual([first.flaky, first.bench], [{}, {}]);
  assert.throws(() => pageContext(h, "nope"), UnknownRunError);
});

Deno.test("index.json and the terminal grid flag the flaky row with why", async () => {
  const { site, h } = await fourRuns();
  assert.match(h.index.flaky.switch, /same commit c2/);
  const grid = historyGrid(h.index, 10, site);
  const line = grid.split("\n").find((l) => l.startsWith("switch"))!;
  assert.match(line, /^switch\s+P 1\.0\s+F 2\.0\s+P 3\.0\s+P 5\.0\s+FLAKY: it passed and failed/);
  assert.match(grid.split("\n").find((l) => l.startsWith("qtest-gpu"))!, /P 2\.0\s+·\s+P 2\.0/);
  const front = await Deno.readTextFile(join(site, "index.html"));
  assert.match(front, /switch ⚠ flaky/);
});
