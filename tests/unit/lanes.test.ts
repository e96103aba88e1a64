import assert from "node:assert/strict";
import { guestless, planLanes, runInLanes } from "../../harness/matrix/lanes.ts";
import type { Row } from "../../harness/matrix/row.ts";

function row(id: string, guests: number, sharesCores?: string): Row {
  return {
    id,
    title: id,
    needs: { guests, builds: [] },
    timeoutSec: 1,
    ...(sharesCores ? { sharesCores } : {}),
  };
}

const tick = () => new Promise((r) => setTimeout(r, 1));

/** Run `rows`, each taking `ticks[id]` (default 2) timer ticks; the start/end events in order. */
async function trace(rows: Row[], ticks: Record<string, number> = {}): Promise<string[]> {
  const events: string[] = [];
  const seen: number[] = [];
  await runInLanes(rows, async (r, i) => {
    assert.equal(rows[i], r);
    seen.push(i);
    events.push(`+${r.id}`);
    for (let t = 0; t < (ticks[r.id] ?? 2); t++) await tick();
    events.push(`-${r.id}`);
  });
  assert.deepEqual(seen.toSorted((a, b) => a - b), rows.map((_, i) => i), "each row once");
  return events;
}

Deno.test("guestless: rows that need no guests and do not ask for the cores alone", () => {
  assert.equal(guestless(row("qtest-vnic", 0)), true);
  assert.equal(guestless(row("boot", 2)), false);
  assert.equal(guestless({ ...row("switch", 0), alone: "deadlines" }), false);
});

Deno.test("runInLanes: a guest-less row that asks to be alone waits in the guest lane", async () => {
  const rows = [row("q", 0), row("p", 1, "x"), { ...row("sw", 0), alone: "deadlines" }];
  const events = await trace(rows, { q: 6, p: 2, sw: 1 });
  assert.ok(events.indexOf("+sw") > events.indexOf("-q"), events.join(" "));
  assert.deepEqual(events.slice(-2), ["+sw", "-sw"]);
});

Deno.test("runInLanes: with no row sharing its cores, the guest-less rows run first, alone", async () => {
  const events = await trace([row("boot", 2), row("qtest", 0), row("ibstat", 1), row("sw", 0)]);
  assert.deepEqual(events, [
    "+qtest",
    "-qtest",
    "+sw",
    "-sw",
    "+boot",
    "-boot",
    "+ibstat",
    "-ibstat",
  ]);
});

Deno.test("runInLanes: guest-less rows start beside the first row sharing its cores", async () => {
  const rows = [
    row("fresh", 0),
    row("boot", 2),
    row("packages", 1, "no timing"),
    row("qtest", 0),
    row("driver-load", 1),
  ];
  const events = await trace(rows, { fresh: 6, qtest: 6, packages: 2 });
  // boot runs alone; the side lane starts with packages and overlaps it
  assert.deepEqual(events.slice(0, 4), ["+boot", "-boot", "+fresh", "+packages"]);
  assert.ok(events.indexOf("-packages") < events.indexOf("-fresh"), events.join(" "));
  // driver-load judges timing: it starts only once the side lane is done
  assert.ok(events.indexOf("+driver-load") > events.indexOf("-qtest"), events.join(" "));
  assert.deepEqual(events.slice(-2), ["+driver-load", "-driver-load"]);
});

Deno.test("runInLanes: consecutive sharing rows keep the side lane beside them", async () => {
  const rows = [row("a", 1, "x"), row("b", 1, "x"), row("q", 0)];
  const events = await trace(rows, { q: 8, a: 2, b: 2 });
  assert.deepEqual(events.slice(0, 2), ["+q", "+a"]);
  assert.ok(events.indexOf("+b") < events.indexOf("-q"), events.join(" "));
});

Deno.test("runInLanes: a failing side lane fails the run once the guest lane waits for it", async () => {
  const ran: string[] = [];
  await assert.rejects(
    runInLanes([row("p", 1, "x"), row("q", 0), row("late", 1)], async (r) => {
      ran.push(r.id);
      await tick();
      if (r.id === "q") throw new Error("side broke");
    }),
    /side broke/,
  );
  assert.deepEqual(ran, ["q", "p"]);
});

Deno.test("runInLanes: a guest lane failing before the sharing row starts no guest-less row", async () => {
  const ran: string[] = [];
  await assert.rejects(
    runInLanes([row("g", 1), row("p", 1, "x"), row("q", 0)], async (r) => {
      ran.push(r.id);
      await tick();
      if (r.id === "g") throw new Error("guest lane broke");
    }),
    /guest lane broke/,
  );
  assert.deepEqual(ran, ["g"]);
});

Deno.test("planLanes: each lane's rows by index, and the row the guest-less lane starts beside", () => {
  const rows = [row("fresh", 0), row("boot", 2), row("packages", 1, "x"), row("q", 0)];
  const plan = planLanes(rows);
  assert.deepEqual(plan.side.map(({ i }) => i), [0, 3]);
  assert.deepEqual(plan.main.map(({ i }) => i), [1, 2]);
  assert.equal(plan.beside?.id, "packages");
  assert.equal(planLanes([row("boot", 2), row("q", 0)]).beside, undefined);
});
