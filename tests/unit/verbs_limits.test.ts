/** The verbs-limits row's reading: what the kernel holds, and each line against table 4.1. */
import assert from "node:assert/strict";
import {
  checkLimits,
  expectedLines,
  type Held,
  kernelHeld,
  ordinal,
  tableLimit,
} from "../matrix/verbs_limits.ts";
import { RowFailure } from "../../harness/matrix/row.ts";

/** `rdma -j resource show pd|cq|qp|mr` right after loading cnuas_ib (rdma-core 56.1). */
const SEP = "==cnuas-held==\n";
const PD = JSON.stringify([
  {
    ifindex: 0,
    ifname: "cnuas_ib0",
    pdn: 0,
    local_dma_lkey: "1bf",
    users: 1,
    comm: "ib_core",
  },
]);
const CQ = JSON.stringify([
  {
    ifindex: 0,
    ifname: "cnuas_ib0",
    cqn: 0,
    cqe: 1024,
    users: 2,
    "poll-ctx": "WORKQUEUE",
    "adaptive-moderation": false,
    comm: "ib_core",
  },
]);
const QP = JSON.stringify([
  {
    ifindex: 0,
    ifname: "cnuas_ib0",
    port: 1,
    lqpn: 1,
    type: "GSI",
    state: "RTS",
    "sq-psn": 0,
    comm: "ib_core",
  },
]);
const AFTER_LOAD = [PD, CQ, QP, "[]"].join(`\n${SEP}`) + "\n";

const HELD: Held = { pd: 1, cq: 1, qp: 1, mr: 1 };

/** The program's output from a real run (cnuas_ib0, TCG guest). */
const GOOD = [
  "max_pd: 64 ok (1 held by the kernel), 65th ENOMEM, after free ok",
  "max_cq: 256 ok (1 held by the kernel), 257th ENOMEM, after free ok",
  "max_mr: 256 ok (1 held by the kernel), 257th ENOMEM, after free ok",
  "max_qp: 256 ok (1 held by the kernel), 257th ENOMEM, after free ok",
  "max_cqe: 4096 ok, 4097 EINVAL",
  "max_sge: 16 ok, 17 send EINVAL, 17 receive EINVAL",
  "max_qp_wr: 4096 ok, 4097 send EINVAL, 4097 receive EINVAL",
  "max_inline: 256 ok, 257 EINVAL",
  "PASS",
].join("\n") + "\n";

Deno.test("the kernel holds QP1, its CQ, its PD and that PD's DMA MR", () => {
  assert.deepEqual(kernelHeld(AFTER_LOAD, "cnuas_ib0"), HELD);
});

Deno.test("a process's objects and other devices' are not the kernel's", () => {
  const pd = JSON.stringify([
    ...JSON.parse(PD),
    { ifindex: 0, ifname: "cnuas_ib0", pdn: 3, users: 0, ctxn: 0, pid: 812, comm: "x" },
    { ifindex: 1, ifname: "rxe0", pdn: 0, users: 1, comm: "ib_core" },
  ]);
  const mr = JSON.stringify([
    { ifindex: 0, ifname: "cnuas_ib0", mrn: 1, rkey: "200", mrlen: 4096, pid: 812, comm: "x" },
  ]);
  const out = [pd, CQ, QP, mr].join(`\n${SEP}`);
  assert.deepEqual(kernelHeld(out, "cnuas_ib0"), HELD);
  assert.deepEqual(kernelHeld(out, "rxe0"), { pd: 1, cq: 0, qp: 0, mr: 1 });
});

Deno.test("an rdma output without its four parts is refused", () => {
  assert.throws(() => kernelHeld(PD, "cnuas_ib0"), RowFailure);
});

Deno.test("ordinals as the program prints them", () => {
  assert.deepEqual(
    [1, 2, 3, 4, 11, 12, 13, 21, 65, 101, 111, 112, 257].map(ordinal),
    [
      "1st",
      "2nd",
      "3rd",
      "4th",
      "11th",
      "12th",
      "13th",
      "21st",
      "65th",
      "101st",
      "111th",
      "112th",
      "257th",
    ],
  );
});

Deno.test("the limits come from table 4.1", () => {
  assert.equal(tableLimit("max_pd"), 64);
  assert.equal(tableLimit("max_qp_wr"), 4096);
  assert.throws(() => tableLimit("max_inline"), /no numeric max_inline/);
  assert.throws(() => tableLimit("fw_ver"), /no numeric fw_ver/);
});

Deno.test("a real run's output passes", () => {
  assert.deepEqual(expectedLines(HELD), GOOD.split("\n").slice(0, 7));
  assert.deepEqual(checkLimits(GOOD, HELD), { differences: [], maxInline: 256 });
});

Deno.test("a 65th PD that was created fails naming the line", () => {
  const out = GOOD.replace("65th ENOMEM", "65th ok (want ENOMEM)").replace("PASS", "FAIL");
  const v = checkLimits(out, HELD);
  assert.deepEqual(v.differences, [
    'max_pd: got "max_pd: 64 ok (1 held by the kernel), 65th ok (want ENOMEM), after free ok", ' +
    'want "max_pd: 64 ok (1 held by the kernel), 65th ENOMEM, after free ok"',
    'last line "FAIL", want PASS',
  ]);
});

Deno.test("a limit the device reports differently from table 4.1 fails", () => {
  // the program passes by its own lights: the device said 65 and allowed 65
  const out = GOOD.replace(
    "max_pd: 64 ok (1 held by the kernel), 65th",
    "max_pd: 65 ok (1 held by the kernel), 66th",
  );
  assert.equal(checkLimits(out, HELD).differences.length, 1);
  assert.match(checkLimits(out, HELD).differences[0], /^max_pd: got "max_pd: 65 ok/);
});

Deno.test("a kernel holding something else changes the line wanted", () => {
  assert.match(
    checkLimits(GOOD, { ...HELD, qp: 0 }).differences.join(),
    /want "max_qp: 256 ok \(0 held by the kernel\)/,
  );
});

Deno.test("a missing line, a wrong errno and a bad inline line are each named", () => {
  const out = GOOD.replace(/^max_cq: .*\n/m, "")
    .replace("4097 send EINVAL", "4097 send ENOMEM (want EINVAL)")
    .replace("max_inline: 256 ok, 257 EINVAL", "max_inline: 256 ok, 258 EINVAL");
  const d = checkLimits(out, HELD).differences;
  assert.equal(d.length, 3);
  assert.match(d[0], /^max_cq: got "\(no line\)"/);
  assert.match(d[1], /^max_qp_wr: got .*4097 send ENOMEM/);
  assert.match(d[2], /^max_inline: got "max_inline: 256 ok, 258 EINVAL"/);
  assert.match(checkLimits(GOOD.replace(/^max_inline.*\n/m, ""), HELD).differences[0], /no line/);
});
