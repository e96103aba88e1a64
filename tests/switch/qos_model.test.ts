import assert from "node:assert/strict";
import {
  classify,
  decodePfc,
  defaultDscpMap,
  ecnMark,
  encodePfc,
  ipv4ChecksumOk,
  pauseNs,
  QosQueuesModel,
  RedRng,
} from "../../harness/models/switch_qos.ts";
import { ipFrame, plainFrame, vlanFrame } from "./qos_traffic.ts";

Deno.test("qos model: the VLAN PCP wins, then DSCP through the map (default DSCP / 8), non-IP is 0", () => {
  const map = defaultDscpMap();
  assert.equal(classify(vlanFrame(2, 1, 5, 0), map), 5);
  assert.equal(classify(ipFrame(2, 1, 26, 0, 0), map), 3);
  assert.equal(classify(ipFrame(2, 1, 48, 0, 0), map), 6);
  assert.equal(classify(plainFrame(2, 1, 0), map), 0);
  map[26] = 4;
  assert.equal(classify(ipFrame(2, 1, 26, 0, 0), map), 4);
});

Deno.test("qos model: a PFC frame is 60 bytes, one priority bit and its quanta; 65535 quanta at 100 Gb/s are 335.5 us", () => {
  const f = encodePfc(3, 0xffff);
  assert.equal(f.length, 60);
  assert.deepEqual([...f.subarray(12, 18)], [0x88, 0x08, 0x01, 0x01, 0x00, 0x08]);
  const d = decodePfc(f)!;
  assert.deepEqual(d.quanta, [0, 0, 0, 0xffff, 0, 0, 0, 0]);
  assert.equal(decodePfc(plainFrame(2, 1, 0)), null);
  assert.equal(pauseNs(0xffff), 335539);
  assert.equal(pauseNs(0xffff, 100), 335539200);
});

Deno.test("qos model: CE marking sets TOS bits 11 and keeps the IPv4 checksum right; non-ECT and CE are left alone", () => {
  for (const ecn of [1, 2]) {
    const m = ecnMark(ipFrame(2, 1, 26, ecn, 7))!;
    assert.equal(m[15] & 3, 3);
    assert.equal(m[15] >> 2, 26);
    assert.ok(ipv4ChecksumOk(m));
  }
  assert.equal(ecnMark(ipFrame(2, 1, 26, 0, 7)), null);
  assert.equal(ecnMark(ipFrame(2, 1, 26, 3, 7)), null);
  assert.equal(ecnMark(plainFrame(2, 1, 7)), null);
});

Deno.test("qos model: the RED draw is xorshift64 from the seed, the same sequence every time", () => {
  const a = new RedRng(7), b = new RedRng(7), z = new RedRng(0), one = new RedRng(1);
  const xs = Array.from({ length: 8 }, () => a.draw());
  assert.deepEqual(Array.from({ length: 8 }, () => b.draw()), xs);
  assert.ok(xs.every((x) => x >= 0 && x < 100));
  assert.equal(z.draw(), one.draw(), "seed 0 means 1");
});

Deno.test("qos model: a port two congested queues pause gets one XOFF, and XON only when the last releases it", () => {
  const m = new QosQueuesModel({ queueDepth: 8, maxPorts: 3 });
  for (const e of [2, 3]) m.configure(e, { pfc: [3], prios: [{ prio: 3, xoff: 2, xon: 1 }] });
  const f = (dst: number) => ipFrame(dst, 1, 26, 0, 0);
  const pfc = (dst: number) => m.enqueue(dst, f(dst), 1).pfc;
  assert.deepEqual([pfc(2), pfc(2), pfc(2)], [[], [], [{ port: 1, prio: 3, quanta: 0xffff }]]);
  assert.deepEqual([pfc(3), pfc(3), pfc(3)], [[], [], []]);
  assert.deepEqual([m.dequeue(2)!.pfc, m.dequeue(2)!.pfc], [[], []]);
  assert.deepEqual(m.dequeue(3)!.pfc, []);
  assert.deepEqual(m.dequeue(3)!.pfc, [{ port: 1, prio: 3, quanta: 0 }]);
  assert.equal(m.counters(1, 3).pauseSent, 1);
  assert.equal(m.counters(1, 3).resumeSent, 1);
});

Deno.test("qos model: round robin one frame a turn from 7 down, skipping paused priorities", () => {
  const m = new QosQueuesModel({ queueDepth: 8, maxPorts: 2 });
  for (let i = 0; i < 2; i++) {
    m.enqueue(2, plainFrame(2, 1, i), 1);
    m.enqueue(2, vlanFrame(2, 1, 5, i), 1);
    m.enqueue(2, ipFrame(2, 1, 26, 0, i), 1);
  }
  const order = [m.dequeue(2, new Set([5]))!.prio];
  for (let d = m.dequeue(2); d; d = m.dequeue(2)) order.push(d.prio);
  assert.deepEqual(order, [3, 0, 5, 3, 0, 5]);
});
