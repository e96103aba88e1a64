/** `report diff`: status changes in order, deltas judged against the history's noise. */
import assert from "node:assert/strict";
import {
  DEFAULT_NOISE,
  diffMarkdown,
  diffRuns,
  diffText,
  noiseBand,
} from "../../harness/report/diff.ts";
import { historyCommand } from "../../harness/report/command.ts";
import { logLines, sampleMatrix, writeRunDir } from "./history_fixture.ts";

Deno.test("noise band: 3 scaled MADs, at least 1 % of the median, from 3 values up", () => {
  assert.equal(noiseBand([10, 11]), undefined);
  const b = noiseBand([10, 12, 11, 13, 100])!; // median 12, deviations 2 0 1 1 88 → MAD 1
  assert.equal(b.median, 12);
  assert.equal(b.mad, 1);
  assert.ok(Math.abs(b.threshold - 3 * 1.4826) < 1e-9);
  // a measurement that never varied: the 1 % floor
  assert.equal(noiseBand([200, 200, 200])!.threshold, 2);
  // a count that was always 0: any change is beyond noise
  assert.equal(noiseBand([0, 0, 0])!.threshold, 0);
  assert.equal(noiseBand([1, 2, 3], { ...DEFAULT_NOISE, k: 1 })!.threshold, 1.4826);
});

const history = [10, 12, 11, 13, 100].map((v, i) =>
  sampleMatrix(`h${i}`, `2026-11-0${i + 1}T00:00:00Z`, "c0", [
    { id: "switch", status: "PASS", durationSec: 10, measurements: { fps: v, violations: 0 } },
  ])
);

Deno.test("deltas beyond the band are flagged, within it are counted, outliers don't widen it", () => {
  const a = sampleMatrix("a", "2026-12-01T00:00:00Z", "c1", [
    { id: "switch", status: "PASS", durationSec: 10, measurements: { fps: 12, violations: 0 } },
  ]);
  const near = sampleMatrix("b", "2026-12-02T00:00:00Z", "c2", [
    { id: "switch", status: "PASS", durationSec: 10, measurements: { fps: 16, violations: 0 } },
  ]);
  const far = sampleMatrix("b", "2026-12-02T00:00:00Z", "c2", [
    { id: "switch", status: "PASS", durationSec: 10, measurements: { fps: 30, violations: 1 } },
  ]);
  const dNear = diffRuns(a, near, history);
  assert.deepEqual(dNear.deltas.map((d) => [d.name, d.judgement]), [["fps", "within noise"]]);
  const dFar = diffRuns(a, far, history);
  assert.deepEqual(dFar.deltas.map((d) => [d.name, d.delta, d.judgement]), [
    ["violations", 1, "beyond noise"], // 1/0-band sorts first
    ["fps", 18, "beyond noise"],
  ]);
  assert.equal(dFar.historyRuns, 5);
  const text = diffText(dFar);
  assert.match(text, /beyond noise \(2\)/);
  assert.match(text, /switch fps: 12 → 30 u \(\+150\.0 %\); noise ±4\.448 over 5 runs/);
});

Deno.test("run b is left out of its own band; too little history is not judged", () => {
  const a = sampleMatrix("a", "2026-12-01T00:00:00Z", "c1", [
    { id: "switch", status: "PASS", measurements: { fps: 10 } },
  ]);
  const b = sampleMatrix("h0", "2026-12-02T00:00:00Z", "c1", [
    { id: "switch", status: "PASS", measurements: { fps: 20 } },
  ]);
  const d = diffRuns(a, b, history.slice(0, 3)); // h0 is b: two values remain
  assert.equal(d.deltas[0].judgement, "not judged");
  assert.equal(d.historyRuns, 2);
});

Deno.test("without a history every delta is listed and the output says it is not judged", () => {
  const a = sampleMatrix("a", "2026-12-01T00:00:00Z", "c1", [
    { id: "switch", status: "PASS", durationSec: 10, measurements: { fps: 10 } },
  ]);
  const b = sampleMatrix("b", "2026-12-02T00:00:00Z", "c1", [
    { id: "switch", status: "PASS", durationSec: 11, measurements: { fps: 10.5 } },
  ]);
  const d = diffRuns(a, b);
  assert.deepEqual(d.deltas.map((x) => [x.name, x.judgement]), [
    ["fps", "not judged"],
    ["durationSec", "not judged"],
  ]);
  assert.match(diffText(d), /NOT judged \(no history/);
  assert.match(diffMarkdown(d), /NOT judged/);
});

Deno.test("status changes: new failures first, then fixed, changed, added, removed", () => {
  const a = sampleMatrix("a", "2026-12-01T00:00:00Z", "c1", [
    { id: "gone", status: "PASS" },
    { id: "fixed", status: "FAIL" },
    { id: "miss", status: "PASS" },
    { id: "broke", status: "PASS" },
    { id: "same", status: "PASS" },
  ]);
  const b = sampleMatrix("b", "2026-12-02T00:00:00Z", "c2", [
    { id: "fixed", status: "PASS" },
    { id: "miss", status: "MISS" },
    { id: "broke", status: "ERROR" },
    { id: "same", status: "PASS" },
    { id: "new-bad", status: "FAIL" },
    { id: "new-ok", status: "PASS" },
  ]);
  const d = diffRuns(a, b);
  assert.deepEqual(d.statusChanges.map((c) => [c.kind, c.row]), [
    ["new failure", "broke"],
    ["new failure", "new-bad"],
    ["fixed", "fixed"],
    ["changed", "miss"],
    ["added", "new-ok"],
    ["removed", "gone"],
  ]);
  assert.equal(d.statusChanges[0].reason, "broke went ERROR");
  const md = diffMarkdown(d);
  assert.match(md, /\| ❌ \*\*new failure\*\* \| broke \| PASS → ERROR \| broke went ERROR \|/);
  const text = diffText(d);
  assert.ok(text.indexOf("NEW FAILURE") < text.indexOf("FIXED"));
  assert.match(text, /REMOVED\s+gone\s+PASS → \(absent\)/);
});

Deno.test("report diff judges noise only against runs of run B's depth", async () => {
  const dir = await Deno.makeTempDir();
  const hist = `${dir}/history`;
  const run = (id: string, day: number, depth: "quick" | "deep", fps: number) => {
    const m = sampleMatrix(id, `2026-12-0${day}T00:00:00Z`, `c${day}`, [
      { id: "switch", status: "PASS", measurements: { fps } },
    ]);
    return { ...m, provenance: { ...m.provenance, depth } };
  };
  // quick runs agree closely; deep runs (other volumes) are far apart
  const runs = [
    run("q1", 1, "quick", 100),
    run("d1", 2, "deep", 1000),
    run("q2", 3, "quick", 100),
    run("d2", 4, "deep", 10),
    run("q3", 5, "quick", 100),
    run("d3", 6, "deep", 500),
    run("q4", 7, "quick", 110),
  ];
  const out = logLines();
  const log = console.log;
  console.log = out.log;
  try {
    for (const m of runs) await historyCommand("publish", [await writeRunDir(dir, m)], {}, hist);
    out.lines.length = 0;
    await historyCommand("diff", ["q3", "q4"], { history: hist }, hist);
  } finally {
    console.log = log;
  }
  const text = out.lines.join("\n");
  assert.match(text, /beyond noise \(1\)/, text);
  assert.match(text, /over 3 runs/, text);
  await Deno.remove(dir, { recursive: true });
});
