import assert from "node:assert/strict";
import { parseUverbsFuzz, UverbsFuzzOutputError } from "../../harness/guest/uverbs_fuzz.ts";
import { resourceCounts } from "../matrix/verbs_limits.ts";
import { limitShortfall } from "../matrix/fuzz.ts";

const PASSING = [
  "seed 42",
  "gid_index 1",
  "main_sequence_calls 9001",
  "calls_total 10003",
  "calls_pd 700",
  "calls_raw_use 2500",
  "violations 0",
  "PASS",
].join("\n");

Deno.test("parseUverbsFuzz reads the seed, the totals and the calls per kind", () => {
  const r = parseUverbsFuzz(PASSING);
  assert.equal(r.seed, 42);
  assert.equal(r.callsTotal, 10003);
  assert.deepEqual(r.calls, { pd: 700, raw_use: 2500 });
  assert.equal(r.violations, 0);
  assert.deepEqual(r.violationLines, []);
  assert.equal(r.pass, true);
});

Deno.test("parseUverbsFuzz keeps the violation lines and a FAIL", () => {
  const out = [
    "seed 42",
    "VIOLATION after 12 calls: raw destroy of CQ handle 7 (not one) succeeded",
    "calls_total 10003",
    "violations 1",
    "FAIL",
  ].join("\n");
  const r = parseUverbsFuzz(out);
  assert.equal(r.violations, 1);
  assert.deepEqual(r.violationLines, [
    "VIOLATION after 12 calls: raw destroy of CQ handle 7 (not one) succeeded",
  ]);
  assert.equal(r.pass, false);
});

Deno.test("parseUverbsFuzz refuses an output without its summary (a crashed run)", () => {
  assert.throws(() => parseUverbsFuzz("seed 1\ncalls_pd 3\n"), UverbsFuzzOutputError);
});

Deno.test("resourceCounts counts a device's objects, every owner's or the kernel's", () => {
  const out = [
    JSON.stringify([
      { ifname: "cnuas_ib0", pdn: 1 },
      { ifname: "cnuas_ib0", pdn: 2, pid: 77 },
      { ifname: "rxe0", pdn: 1 },
    ]),
    "==cnuas-held==",
    JSON.stringify([{ ifname: "cnuas_ib0", srqn: 1, pid: 77 }]),
    "",
  ].join("\n");
  assert.deepEqual(resourceCounts(out, "cnuas_ib0", ["pd", "srq"], "all"), {
    pd: 2,
    cq: 0,
    qp: 0,
    mr: 0,
    srq: 1,
  });
  assert.equal(resourceCounts(out, "cnuas_ib0", ["pd", "srq"], "kernel").pd, 1);
});

Deno.test("limitShortfall: how far short of each object limit verbs_limits stopped", () => {
  const out = [
    "max_pd: 64 ok (1 held by the kernel), 65th ENOMEM, after free ok",
    "max_mr: 125 ok (1 held by the kernel), 126th ENOMEM (want ok, limit 256)",
    "max_cqe: 4096 ok, 4097 EINVAL",
    "FAIL",
  ].join("\n");
  // max_mr 131 short; the last line "FAIL" is the second difference, counted 1
  assert.equal(limitShortfall(out, 2), 132);
  assert.equal(limitShortfall("max_pd: 64 ok (1 held by the kernel)\nPASS", 0), 0);
});
