/**
 * The arithmetic of bench ib-perf (harness/bench/ib_perf.ts): medians,
 * guest clock offsets, the guest scripts' timestamps, SM figures with their
 * budget verdicts and the IB-over-RoCE ratios.
 */
import assert from "node:assert/strict";
import { ibOverRoce, parseStamps, smFigures, waitState } from "../../harness/bench/ib_perf.ts";
import { clockOffsetMs, nsToMs } from "../../harness/vm/clock.ts";
import { median } from "../../harness/stats.ts";

Deno.test("median: odd, even, unsorted, empty", () => {
  assert.deepEqual(median([5]), 5);
  assert.deepEqual(median([3, 1, 2]), 2);
  assert.deepEqual(median([4, 1, 3, 2]), 2.5);
  assert.deepEqual(median([900, 100, 120, 110, 5000]), 120);
  assert.ok(Number.isNaN(median([])));
});

Deno.test("median leaves its input alone", () => {
  const xs = [3, 1, 2];
  median(xs);
  assert.deepEqual(xs, [3, 1, 2]);
});

Deno.test("nsToMs keeps µs precision past 2^53 ns", () => {
  assert.deepEqual(nsToMs("1764644000123456789"), 1764644000123.456);
  assert.deepEqual(nsToMs(" 1764644000000000000\n"), 1764644000000);
  assert.throws(() => nsToMs("1764644000.5"));
  assert.throws(() => nsToMs(""));
  assert.throws(() => nsToMs("12345"));
});

Deno.test("clockOffsetMs: the guest read is taken at the midpoint of the round trip", () => {
  // host 1000..1100 ms, guest says 1250 ms: the guest runs 200 ms ahead
  assert.deepEqual(clockOffsetMs(1000, "1250000000", 1100), 200);
  // a guest behind the host gives a negative lead
  assert.deepEqual(clockOffsetMs(5000, "4950000000", 5000), -50);
});

Deno.test("parseStamps: NAME <ns> lines by name, everything else ignored, last wins", () => {
  const out = [
    "insmod 1764644000100000000",
    "some noise 1764644000100000000",
    "active 1764644000350000000",
    "down  notanumber",
    "active 1764644000400000000",
    "",
  ].join("\n");
  assert.deepEqual(parseStamps(out), { insmod: 1764644000100, active: 1764644000400 });
  assert.deepEqual(parseStamps(""), {});
});

Deno.test("smFigures: median/min/max in ms, reps, budget and its verdict", () => {
  const f = smFigures("sm.x", [1200.4, 800.6, 3000, 950, 1000], 1000);
  assert.deepEqual(f["sm.x.medianMs"], { value: 1000, unit: "ms" });
  assert.deepEqual(f["sm.x.minMs"], { value: 801, unit: "ms" });
  assert.deepEqual(f["sm.x.maxMs"], { value: 3000, unit: "ms" });
  assert.deepEqual(f["sm.x.reps"], { value: 5, unit: "runs" });
  assert.deepEqual(f["sm.x.budgetMs"], { value: 1000, unit: "ms" });
  assert.deepEqual(
    f["sm.x.budgetPass"],
    { value: 1, unit: "bool" },
    "the median on the budget passes",
  );
  assert.deepEqual(smFigures("sm.x", [1001, 1002, 1], 1000)["sm.x.budgetPass"].value, 0);
  const noBudget = smFigures("sm.y", [1, 2]);
  assert.deepEqual(Object.keys(noBudget).sort(), [
    "sm.y.maxMs",
    "sm.y.medianMs",
    "sm.y.minMs",
    "sm.y.reps",
  ]);
});

Deno.test("ibOverRoce: rates divide, latencies invert, one-sided figures dropped", () => {
  const ib = {
    "ib_send_bw.64.MiBps": 20,
    "ib_send_bw.64.msgPerSec": 300000,
    "ib_send_lat.2.usec": 50,
    "ib_send_lat.2.usecAvg": 80,
    "ib_write_bw.64.MiBps": 0,
    "only_ib.1.MiBps": 1,
  };
  const roce = {
    "ib_send_bw.64.MiBps": 10,
    "ib_send_bw.64.msgPerSec": 400000,
    "ib_send_lat.2.usec": 100,
    "ib_send_lat.2.usecAvg": 40,
    "ib_write_bw.64.MiBps": 5,
  };
  assert.deepEqual(ibOverRoce(ib, roce), {
    "ibOverRoce.ib_send_bw.64.MiBps": { value: 2, unit: "x" },
    "ibOverRoce.ib_send_bw.64.msgPerSec": { value: 0.75, unit: "x" },
    "ibOverRoce.ib_send_lat.2.usec": { value: 2, unit: "x" },
    "ibOverRoce.ib_send_lat.2.usecAvg": { value: 0.5, unit: "x" },
    "ibOverRoce.ib_write_bw.64.MiBps": { value: 0, unit: "x" },
  });
});

Deno.test("waitState: polls the state file, then fails (exit 5) unless it got there", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const state = `${dir}/state`;
    const sh = async (script: string) =>
      (await new Deno.Command("sh", { args: ["-c", script] }).output()).code;
    await Deno.writeTextFile(state, "4: ACTIVE\n");
    assert.deepEqual(await sh(waitState(state, true, 3)), 0);
    assert.deepEqual(await sh(waitState(state, false, 3)), 5);
    await Deno.writeTextFile(state, "1: DOWN\n");
    assert.deepEqual(await sh(waitState(state, false, 3)), 0);
    assert.deepEqual(await sh(waitState(state, true, 3)), 5);
    assert.deepEqual(await sh(waitState(`${dir}/missing`, true, 2)), 5);
    // it changes while polled
    const p = sh(`${waitState(state, true, 200)} && echo ok`);
    await new Promise((r) => setTimeout(r, 300));
    await Deno.writeTextFile(state, "4: ACTIVE\n");
    assert.deepEqual(await p, 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
