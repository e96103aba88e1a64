/**
 * Reading wire_victim's output (harness/guest/wire_fuzz.ts): its setup and
 * report lines become numbers and bytes, and output without them is an error
 * that quotes it.
 */
import assert from "node:assert/strict";
import {
  parseVictimReport,
  parseVictimSetup,
  WireVictimError,
} from "../../harness/guest/wire_fuzz.ts";

Deno.test("the setup lines give the MR and every QP", () => {
  const s = parseVictimSetup(
    "mr va 0x7f12a000 rkey 0x1a2b len 8192\n" +
      "qp 0 qpn 0x11 rq_psn 0x100000 sq_psn 0x700000\n" +
      "qp 1 qpn 0x12 rq_psn 0x101000 sq_psn 0x701000\nud qpn 0x13 qkey 0x11111111\nready\n",
  );
  assert.deepEqual(s, {
    mr: { va: 0x7f12a000n, rkey: 0x1a2b, len: 8192 },
    qps: [
      { qpn: 0x11, rqPsn: 0x100000, sqPsn: 0x700000 },
      { qpn: 0x12, rqPsn: 0x101000, sqPsn: 0x701000 },
    ],
    ud: { qpn: 0x13, qkey: 0x11111111 },
  });
});

Deno.test("setup output without ready is an error", () => {
  assert.throws(
    () => parseVictimSetup("mr va 0x1 rkey 0x2 len 8192\nFAIL: RTR\n"),
    WireVictimError,
  );
});

Deno.test("the report lines give states, canaries and the window's bytes", () => {
  const r = parseVictimReport(
    "qp 0 state 3\nqp 1 state 6\nud state 3\ncqes 0\ncanary_outside_changed 0\n" +
      "canary_inside_changed 48\nwindow 00ff10\ndone\n",
  );
  assert.deepEqual(r, {
    states: [3, 6],
    udState: 3,
    cqes: 0,
    canaryOutside: 0,
    canaryInside: 48,
    window: new Uint8Array([0, 0xff, 0x10]),
  });
});

Deno.test("a report cut short is an error", () => {
  assert.throws(() => parseVictimReport("qp 0 state 3\ncqes 0\n"), WireVictimError);
});
