import assert from "node:assert/strict";
import { shrinkOps } from "../../harness/oracle/shrink.ts";

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

Deno.test("shrinkOps reduces a failing list to the ops the failure needs", async () => {
  // Fails whenever 17 and 42 are both present, in that order.
  const fails = (c: number[]) =>
    Promise.resolve(c.indexOf(17) >= 0 && c.indexOf(42) > c.indexOf(17));
  const r = await shrinkOps(range(100), fails);
  assert.deepEqual(r.ops, [17, 42]);
  assert.equal(r.minimal, true);
});

Deno.test("shrinkOps keeps a list of which every element is needed", async () => {
  const fails = (c: number[]) => Promise.resolve(c.length === 5);
  const r = await shrinkOps(range(5), fails);
  assert.deepEqual(r.ops, range(5));
  assert.equal(r.minimal, true);
});

Deno.test("shrinkOps stops at its replay budget and says the result may not be minimal", async () => {
  let calls = 0;
  const fails = (c: number[]) => {
    calls++;
    return Promise.resolve(c.includes(3) && c.includes(97));
  };
  const r = await shrinkOps(range(100), fails, { maxRuns: 5 });
  assert.equal(calls, 5);
  assert.equal(r.runs, 5);
  assert.equal(r.minimal, false);
  assert.ok(r.ops.includes(3) && r.ops.includes(97));
});
