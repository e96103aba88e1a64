import assert from "node:assert/strict";
import { SwitchModel } from "../../harness/models/switch.ts";
import { ibFrame } from "./traffic.ts";

function eth(dst: number, src: number, len = 64): Uint8Array {
  const f = new Uint8Array(len);
  f.set([dst === 0xff ? 0xff : 0x02, 0, 0, 0, 0, dst]);
  if (dst === 0xff) f.fill(0xff, 0, 6);
  f.set([0x02, 0, 0, 0, 0, src], 6);
  return f;
}

function link(dst: number, src: number): Uint8Array {
  const f = new Uint8Array(8);
  new DataView(f.buffer).setUint32(0, dst, true);
  new DataView(f.buffer).setUint32(4, src, true);
  return f;
}

Deno.test("model: connections take the lowest free slot; a downed slot is skipped until link_up", () => {
  const m = new SwitchModel({ mode: "eth" });
  assert.deepEqual([m.connect(), m.connect(), m.connect()], [1, 2, 3]);
  m.linkDown(2);
  assert.equal(m.connect(), 4);
  m.linkUp(2);
  assert.equal(m.connect(), 2);
});

Deno.test("model: a full switch refuses the next connection", () => {
  const m = new SwitchModel({ mode: "eth", maxPorts: 1 });
  assert.equal(m.connect(), 1);
  assert.equal(m.connect(), null);
});

Deno.test("model: eth floods unknown destinations to every other up port, never back", () => {
  const m = new SwitchModel({ mode: "eth" });
  [1, 2, 3].forEach(() => m.connect());
  assert.deepEqual(m.ingress(2, eth(9, 2)).egress, [1, 3]);
  assert.deepEqual(m.ingress(3, eth(2, 3)).egress, [2]);
  assert.deepEqual(m.ingress(1, eth(0xff, 1)).egress, [2, 3]);
});

Deno.test("model: eth aging is driven by the explicit clock only", () => {
  const m = new SwitchModel({ mode: "eth", agingSec: 5 });
  [1, 2, 3].forEach(() => m.connect());
  m.ingress(2, eth(9, 2));
  m.advance(4);
  assert.deepEqual(m.ingress(1, eth(2, 1)).egress, [2]);
  m.advance(5);
  assert.deepEqual(m.ingress(1, eth(2, 1)).egress, [2, 3]);
});

Deno.test("model: counters count rx on ingress, tx per egress and drops by reason", () => {
  const m = new SwitchModel({ mode: "eth" });
  [1, 2].forEach(() => m.connect());
  m.ingress(1, eth(9, 1, 100));
  m.ingress(1, new Uint8Array(3));
  assert.deepEqual(m.counters(1).rxFrames, 2);
  assert.deepEqual(m.counters(1).rxBytes, 103);
  assert.equal(m.counters(1).drops.runt, 1);
  assert.equal(m.counters(2).txBytes, 100);
});

Deno.test("model: ib routes by LFT and drops what has nowhere to go", () => {
  const m = new SwitchModel({ mode: "ib" });
  [1, 2].forEach(() => m.connect());
  const lrh = (dlid: number) => ibFrame(dlid, 10);
  m.setLft(5, 2);
  m.setLft(6, 1);
  m.setLft(7, 9);
  assert.deepEqual(m.ingress(1, lrh(5)), { egress: [2] });
  assert.equal(m.ingress(1, lrh(6)).drop, "loopback");
  assert.equal(m.ingress(1, lrh(7)).drop, "no_port");
  assert.equal(m.ingress(1, lrh(8)).drop, "bad_dlid");
  m.mcastJoin(0xc000, 1);
  m.mcastLeave(0xc000, 1);
  assert.equal(m.ingress(1, lrh(0xc000)).drop, "bad_dlid", "an emptied group no longer exists");
});

Deno.test("model: link learns one gpu_id per port and a gpu_id moves with its source", () => {
  const m = new SwitchModel({ mode: "link" });
  [1, 2, 3].forEach(() => m.connect());
  m.ingress(1, link(0xffffffff, 10));
  assert.deepEqual(m.ingress(2, link(10, 20)).egress, [1]);
  m.ingress(3, link(0xffffffff, 10));
  assert.equal(m.portGpu(1), undefined);
  assert.deepEqual(m.ingress(2, link(10, 20)).egress, [3]);
  m.ingress(3, link(0xffffffff, 30));
  assert.equal(m.ingress(2, link(10, 20)).drop, "unknown_gpu");
});
