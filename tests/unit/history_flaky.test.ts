/** Flaky rows: same-commit disagreement and flip-flops without a code change. */
import assert from "node:assert/strict";
import { detectFlaky, flakyReason } from "../../harness/report/flaky.ts";
import type { Status, TrendPoint } from "../../harness/report/schema.ts";

/** Points from `spec`: "PASS@c1 FAIL@c2 ..." in order, oldest first. */
function points(spec: string): TrendPoint[] {
  return spec.split(" ").map((w, i) => {
    const [status, project] = w.split("@");
    return {
      runId: `r${i + 1}`,
      project,
      startedAt: `2026-12-01T${String(i).padStart(2, "0")}:00:00Z`,
      status: status as Status,
      durationSec: 1,
    };
  });
}

Deno.test("passing and failing on one clean commit is flaky, wherever the runs are", () => {
  const why = flakyReason(points("PASS@c1 PASS@c2 FAIL@c1"));
  assert.match(why!, /same commit c1: PASS in run r1, FAIL in run r3/);
  assert.match(flakyReason(points("ERROR@c1 DONE@c1"))!, /same commit c1/);
});

Deno.test("a regression on a new commit, and its fix on a later one, are not flaky", () => {
  assert.equal(flakyReason(points("PASS@c1 FAIL@c2 FAIL@c2 PASS@c3")), undefined);
  assert.equal(flakyReason(points("PASS@c1 PASS@c1 FAIL@c2")), undefined);
});

Deno.test("dirty and unknown trees do not count as one commit; one flip there is not flaky", () => {
  assert.equal(flakyReason(points("PASS@c1-dirty FAIL@c1-dirty")), undefined);
  assert.equal(flakyReason(points("PASS@unknown FAIL@unknown")), undefined);
});

Deno.test("a flip and a flip back with no project change between them is flaky", () => {
  const why = flakyReason(points("PASS@c1-dirty FAIL@c1-dirty PASS@c1-dirty"));
  assert.match(why!, /flipped PASS→FAIL→PASS with no code change between the flips/);
  assert.match(why!, /runs r2 to r3/);
  // the code changed between the flips (a fix): not flaky
  assert.equal(flakyReason(points("PASS@x-dirty FAIL@y-dirty PASS@z-dirty")), undefined);
  // FAIL→PASS→FAIL on an unknown tree
  assert.match(flakyReason(points("FAIL@unknown PASS@unknown FAIL@unknown"))!, /FAIL→PASS→FAIL/);
});

Deno.test("MISS and SKIP are neither passes nor failures", () => {
  assert.equal(flakyReason(points("PASS@c1 MISS@c1 SKIP@c1 PASS@c1")), undefined);
  // a MISS between a pass and a fail does not hide the disagreement
  assert.match(flakyReason(points("PASS@c1 MISS@c1 FAIL@c1"))!, /same commit c1/);
});

Deno.test("only the last runs count", () => {
  const old = points("PASS@c1 FAIL@c1 PASS@c2 PASS@c2 PASS@c2");
  assert.ok(flakyReason(old, 5));
  assert.equal(flakyReason(old, 3), undefined);
});

Deno.test("detectFlaky flags each flaky row with its sentence", () => {
  const got = detectFlaky({
    switch: points("PASS@c1 FAIL@c1"),
    "qtest-gpu": points("PASS@c1 PASS@c1"),
  });
  assert.deepEqual(Object.keys(got), ["switch"]);
  assert.match(got.switch, /^it passed and failed on the same commit c1/);
});
