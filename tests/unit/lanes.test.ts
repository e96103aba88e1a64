import assert from "node:assert/strict";
import { planRun, runPlan, sharesCores } from "../../harness/matrix/lanes.ts";
import type { Row } from "../../harness/matrix/row.ts";

function row(id: string, guests: number, sharing?: string): Row {
  return {
    id,
    title: id,
    needs: { guests, builds: [] },
    timeoutSec: 1,
    ...(sharing ? { sharesCores: sharing } : {}),
  };
}

const tick = () => new Promise((r) => setTimeout(r, 1));

/**
 * Run `rows` with `jobs` at a time, each taking `ticks[id]` (default 2) timer
 * ticks; the start/end events in order and what each row saw beside it.
 */
async function trace(
  rows: Row[],
  jobs: number,
  ticks: Record<string, number> = {},
  durations = new Map<string, number>(),
): Promise<{ events: string[]; beside: Map<string, string[]> }> {
  const events: string[] = [];
  const seen: number[] = [];
  const beside = new Map<string, string[]>();
  await runPlan(planRun(rows, jobs, durations), async (r, i, others) => {
    assert.equal(rows[i], r);
    seen.push(i);
    events.push(`+${r.id}`);
    for (let t = 0; t < (ticks[r.id] ?? 2); t++) await tick();
    events.push(`-${r.id}`);
    // read once the row is over, as the matrix run does
    queueMicrotask(() => beside.set(r.id, [...others].map((k) => rows[k].id).sort()));
  });
  await tick();
  assert.deepEqual(seen.toSorted((a, b) => a - b), rows.map((_, i) => i), "each row once");
  return { events, beside };
}

/** The most rows running at once in a trace's start/end events. */
function mostAtOnce(events: string[]): number {
  let running = 0;
  let most = 0;
  for (const e of events) {
    running += e.startsWith("+") ? 1 : -1;
    most = Math.max(most, running);
  }
  return most;
}

Deno.test("sharesCores: guest-less rows unless alone, guest rows that declare it", () => {
  assert.equal(sharesCores(row("qtest-vnic", 0)), true);
  assert.equal(sharesCores(row("boot", 2)), false);
  assert.equal(sharesCores(row("packages", 1, "no timing")), true);
  assert.equal(sharesCores({ ...row("switch", 0), alone: "deadlines" }), false);
});

Deno.test("runPlan: rows that judge timing run alone and first, in the order given", async () => {
  const rows = [
    row("q", 0),
    row("boot", 2),
    row("p", 1, "x"),
    { ...row("sw", 0), alone: "deadlines" },
    row("lossless", 3),
  ];
  const { events, beside } = await trace(rows, 2);
  assert.deepEqual(events.slice(0, 6), ["+boot", "-boot", "+sw", "-sw", "+lossless", "-lossless"]);
  assert.deepEqual(events.slice(6, 8).sort(), ["+p", "+q"]);
  assert.deepEqual(beside.get("boot"), []);
  assert.deepEqual(beside.get("q"), ["p"]);
  assert.deepEqual(beside.get("p"), ["q"]);
});

Deno.test("runPlan: never more than jobs at once; a row starts as soon as one ends", async () => {
  const rows = ["a", "b", "c", "d", "e"].map((id) => row(id, 1, "x"));
  const { events } = await trace(rows, 2, { a: 2, b: 6, c: 2, d: 2, e: 2 });
  assert.equal(mostAtOnce(events), 2, events.join(" "));
  // a ends first: c takes its place while b still runs
  assert.ok(events.indexOf("+c") < events.indexOf("-b"), events.join(" "));
});

Deno.test("runPlan: what ran beside a row is every row that overlapped it", async () => {
  const rows = [row("long", 1, "x"), row("s1", 0), row("s2", 0)];
  const { beside } = await trace(rows, 2, { long: 8, s1: 2, s2: 2 });
  assert.deepEqual(beside.get("long"), ["s1", "s2"]);
  assert.deepEqual(beside.get("s1"), ["long"]);
  assert.deepEqual(beside.get("s2"), ["long"]);
});

Deno.test("runPlan: with jobs 1 every row runs alone, in the order given", async () => {
  const rows = [row("a", 1, "x"), row("q", 0), row("b", 1, "x")];
  const { events } = await trace(rows, 1);
  assert.deepEqual(events, ["+a", "-a", "+q", "-q", "+b", "-b"]);
});

Deno.test("planRun: shared rows longest first by the previous durations, unknown at the median", () => {
  const rows = [row("a", 1, "x"), row("b", 1, "x"), row("c", 0), row("d", 1, "x"), row("t", 2)];
  const durations = new Map([["a", 10], ["b", 50], ["c", 30], ["t", 99]]);
  const plan = planRun(rows, 2, durations);
  assert.deepEqual(plan.alone.map(({ row }) => row.id), ["t"]);
  // d is unknown: the median of 10, 50, 30 is 30, and it ties c, which comes first
  assert.deepEqual(plan.shared.map(({ row }) => row.id), ["b", "c", "d", "a"]);
  assert.deepEqual(planRun(rows, 2).shared.map(({ row }) => row.id), ["a", "b", "c", "d"]);
});

Deno.test("runPlan: after a failure no row starts; the rows under way end, then it rejects", async () => {
  const ran: string[] = [];
  const ended: string[] = [];
  const rows = [row("x", 1, "x"), row("y", 1, "x"), row("z", 1, "x")];
  await assert.rejects(
    runPlan(planRun(rows, 2), async (r) => {
      ran.push(r.id);
      await tick();
      if (r.id === "x") throw new Error("x broke");
      await tick();
      await tick();
      ended.push(r.id);
    }),
    /x broke/,
  );
  assert.deepEqual(ran, ["x", "y"]);
  assert.deepEqual(ended, ["y"]);
});

Deno.test("runPlan: a row that runs alone and fails starts nothing after it", async () => {
  const ran: string[] = [];
  await assert.rejects(
    runPlan(planRun([row("g", 1), row("p", 1, "x"), row("q", 0)], 2), async (r) => {
      ran.push(r.id);
      await tick();
      if (r.id === "g") throw new Error("g broke");
    }),
    /g broke/,
  );
  assert.deepEqual(ran, ["g"]);
});

Deno.test("runPlan: a background row runs beside the rows that run alone, then holds a slot", async () => {
  const rows = [
    { ...row("fh", 0), background: "host commands" },
    row("boot", 2),
    row("lossless", 3),
    row("a", 1, "x"),
    row("b", 1, "x"),
    row("c", 1, "x"),
  ];
  const plan = planRun(rows, 2);
  assert.deepEqual(plan.background.map(({ row }) => row.id), ["fh"]);
  assert.deepEqual(plan.shared.map(({ row }) => row.id), ["a", "b", "c"]);
  // fh outlasts the rows that run alone: until it ends one sharing row runs at a time
  const { events, beside } = await trace(rows, 2, { fh: 7, boot: 2, lossless: 2, a: 4 });
  assert.deepEqual(events.slice(0, 6), ["+fh", "+boot", "-boot", "+lossless", "-lossless", "+a"]);
  assert.ok(events.indexOf("+b") > events.indexOf("-fh"), events.join(" "));
  assert.equal(mostAtOnce(events), 2, events.join(" "));
  assert.deepEqual(beside.get("boot"), ["fh"]);
  assert.deepEqual(beside.get("fh"), ["a", "boot", "lossless"]);
});

Deno.test("runPlan: a background row that ends among the rows that run alone holds no slot", async () => {
  const rows = [
    { ...row("fh", 0), background: "host commands" },
    row("boot", 2),
    ...["a", "b"]
      .map((id) => row(id, 1, "x")),
  ];
  const { events } = await trace(rows, 2, { fh: 1, boot: 4 });
  assert.deepEqual(events.slice(0, 4), ["+fh", "+boot", "-fh", "-boot"]);
  assert.deepEqual(events.slice(4, 6).sort(), ["+a", "+b"]);
});

Deno.test("planRun: with jobs 1 a background row waits its turn with the sharing rows", () => {
  const rows = [{ ...row("fh", 0), background: "host commands" }, row("boot", 2)];
  const plan = planRun(rows, 1);
  assert.deepEqual(plan.background, []);
  assert.deepEqual(plan.shared.map(({ row }) => row.id), ["fh"]);
});

Deno.test("runPlan: a filler row starts with the sharing rows and holds no slot", async () => {
  const rows = [
    { ...row("fh", 0), background: "host commands" },
    row("boot", 2),
    { ...row("qf", 0), filler: "a latency-bound qtest peer" },
    row("a", 1, "x"),
    row("b", 1, "x"),
    row("c", 1, "x"),
  ];
  const plan = planRun(rows, 2);
  assert.deepEqual(plan.filler.map(({ row }) => row.id), ["qf"]);
  assert.deepEqual(plan.shared.map(({ row }) => row.id), ["a", "b", "c"]);
  const { events, beside } = await trace(rows, 2, { fh: 1, boot: 3, qf: 9 });
  // not beside the rows that run alone: it starts once they are done, with two sharing rows
  assert.deepEqual(events.slice(0, 4), ["+fh", "+boot", "-fh", "-boot"]);
  assert.deepEqual(events.slice(4, 7).sort(), ["+a", "+b", "+qf"]);
  assert.equal(mostAtOnce(events), 3, events.join(" "));
  assert.deepEqual(beside.get("qf"), ["a", "b", "c"]);
  assert.ok(!beside.get("boot")!.includes("qf"));
  // with one row at a time it is a sharing row like another
  assert.deepEqual(planRun(rows, 1).filler, []);
  assert.ok(planRun(rows, 1).shared.some(({ row }) => row.id === "qf"));
});
