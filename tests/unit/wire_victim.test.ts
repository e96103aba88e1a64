/**
 * Reading wire_victim's output (harness/guest/wire_fuzz.ts): its setup and
 * report lines become numbers and bytes, and output without them is an error
 * that quotes it; the paced injection keeps the switch's queue short.
 */
import assert from "node:assert/strict";
import type { FabricOps } from "../../harness/fabric/client.ts";
import {
  injectPaced,
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

/** A switch port that drains `drain` frames per `ports` read, recording each inject request. */
function fakePort(drain: number, lose = 0) {
  let queued = 0;
  const requests: number[][] = [];
  const fabric = {
    injectFrames(_port: number, frames: readonly Uint8Array[]) {
      requests.push(frames.map((f) => f[0]));
      queued += frames.length;
      const sent = frames.length - lose;
      return Promise.resolve({ frames: sent, bytes: 0, queueLen: queued });
    },
    ports() {
      queued = Math.max(0, queued - drain);
      return Promise.resolve([{ port: 3, queueLen: queued }]);
    },
  };
  return { fabric: fabric as unknown as FabricOps, requests, queued: () => queued };
}

Deno.test("injectPaced sends every frame in order, in requests of at most `batch`", async () => {
  const p = fakePort(1000);
  const frames = Array.from({ length: 150 }, (_, i) => new Uint8Array([i]));
  assert.equal(await injectPaced(p.fabric, 3, frames, { batch: 64, maxQueue: 32 }), 150);
  assert.deepEqual(p.requests.map((r) => r.length), [64, 64, 22]);
  assert.deepEqual(p.requests.flat(), frames.map((f) => f[0]));
});

Deno.test("injectPaced starts a request only once the port's queue is at most maxQueue", async () => {
  const p = fakePort(10);
  const seen: number[] = [];
  const fabric = {
    ...p.fabric,
    injectFrames: (port: number, frames: readonly Uint8Array[]) => {
      seen.push(p.queued());
      return p.fabric.injectFrames(port, frames);
    },
  } as FabricOps;
  const frames = Array.from({ length: 200 }, () => new Uint8Array([1]));
  await injectPaced(fabric, 3, frames, { batch: 50, maxQueue: 20 });
  assert.deepEqual(seen.slice(1).map((q) => q <= 20), [true, true, true]);
  assert.equal(seen[0], 0);
});

Deno.test("injectPaced splits by bytes too, and fails when the switch sent fewer", async () => {
  const big = Array.from({ length: 3 }, (_, i) => new Uint8Array(60 * 1024).fill(i));
  const p = fakePort(1000);
  await injectPaced(p.fabric, 3, big);
  assert.deepEqual(p.requests.map((r) => r.length), [2, 1]);
  await assert.rejects(
    injectPaced(fakePort(1000, 1).fabric, 3, [new Uint8Array(1), new Uint8Array(1)]),
    /went down after 1 injected frames/,
  );
});
