import assert from "node:assert/strict";
import type { PortStatus } from "../../harness/fabric/client.ts";
import type { PcapngPacket } from "../../harness/fabric/pcapng.ts";
import { buildIbFrame, OP } from "../../harness/models/rdma/mod.ts";
import { DROP_REASONS } from "../../harness/models/switch.ts";
import { ibTablesChanged, replayIbCapture } from "../../harness/oracle/switch_replay.ts";

function ud(dlid: number, slid: number): Uint8Array {
  return buildIbFrame({
    lrh: { dlid, slid },
    bth: { opcode: OP.UD_SEND_ONLY, destQp: 0x11, psn: 0 },
    deth: { qkey: 0x1234, reserved8: 0, srcQp: 0x12 },
    payload: new Uint8Array(20),
  });
}

/** Port 2 appeared first: interface 0 is port2, interface 1 is port1. */
const interfaces = [
  { linkType: 247, name: "port2", tsResolNs: 1n },
  { linkType: 247, name: "port1", tsResolNs: 1n },
];

function pkt(port: number, data: Uint8Array, direction: "inbound" | "outbound"): PcapngPacket {
  return {
    interfaceId: port === 2 ? 0 : 1,
    timestampNs: 0n,
    data,
    origLen: data.length,
    direction,
  };
}

function status(port: number, c: Partial<PortStatus> = {}): PortStatus {
  const drops = Object.fromEntries(DROP_REASONS.map((r) => [r, 0])) as PortStatus["drops"];
  return {
    port,
    state: "up",
    queueLen: 0,
    rxFrames: 0,
    rxBytes: 0,
    txFrames: 0,
    txBytes: 0,
    ...c,
    drops: { ...drops, ...(c.drops ?? {}) },
  };
}

const tables = {
  upPorts: [1, 2],
  lft: [{ lid: 1, port: 0 }, { lid: 2, port: 1 }, { lid: 3, port: 2 }],
  mcast: [{ mlid: 0xc000, ports: [1, 2] }],
};

/** Port 1 sends to LID 3, to the SM and to the group; one frame has a bad VCRC; the SM answers. */
function scenario() {
  const toPeer = ud(3, 2);
  const toSm = ud(0xffff, 0xffff);
  const mcast = buildIbFrame({
    lrh: { dlid: 0xc000, slid: 2 },
    grh: { sgid: new Uint8Array(16), dgid: new Uint8Array(16).fill(0xff) },
    bth: { opcode: OP.UD_SEND_ONLY, destQp: 0xffffff, psn: 0 },
    deth: { qkey: 0xb1b, reserved8: 0, srcQp: 0x12 },
    payload: new Uint8Array(8),
  });
  const badVcrc = ud(3, 2);
  badVcrc[badVcrc.length - 1] ^= 1;
  const fromSm = ud(0xffff, 0xffff);
  const packets = [
    pkt(1, toPeer, "inbound"),
    pkt(1, toSm, "inbound"),
    pkt(1, mcast, "inbound"),
    pkt(1, badVcrc, "inbound"),
    pkt(2, fromSm, "outbound"),
  ];
  const rx1 = toPeer.length + toSm.length + mcast.length + badVcrc.length;
  const after = [
    status(1, { rxFrames: 4, rxBytes: rx1, drops: { bad_vcrc: 1 } as PortStatus["drops"] }),
    status(2, { txFrames: 3, txBytes: toPeer.length + mcast.length + fromSm.length }),
  ];
  return { packets, after };
}

Deno.test("replay: the daemon's counters equal the model's for every frame", () => {
  const { packets, after } = scenario();
  const r = replayIbCapture({ interfaces, packets }, tables, [status(1), status(2)], after);
  assert.deepEqual(r.differences, []);
  assert.equal(r.summary.inbound, 4);
  assert.equal(r.summary.outbound, 1);
  assert.equal(r.summary.forwarded, 2);
  assert.equal(r.summary.toSwitch, 1);
  assert.deepEqual(r.summary.drops, { bad_vcrc: 1 });
});

Deno.test("replay: a frame the switch sent elsewhere, or a drop it did not count, is named", () => {
  const { packets, after } = scenario();
  const wrong = after.map((p) => ({ ...p, drops: { ...p.drops } }));
  wrong[1].txFrames -= 1; // the peer never got one
  wrong[0].drops.bad_vcrc = 0;
  wrong[0].drops.bad_lrh = 1; // counted under the wrong reason
  const r = replayIbCapture({ interfaces, packets }, tables, [status(1), status(2)], wrong);
  assert.deepEqual(r.differences, [
    "port 1 drops.bad_vcrc: the switch counted 0, the model 1",
    "port 1 drops.bad_lrh: the switch counted 1, the model 0",
    "port 2 tx frames: the switch counted 2, the model 3",
  ]);
});

Deno.test("replay: a port that went down during the capture is reported, not compared", () => {
  const { packets, after } = scenario();
  const r = replayIbCapture({ interfaces, packets }, tables, [status(1), status(2)], [
    after[0],
    { ...after[1], state: "down" },
  ]);
  assert.deepEqual(r.differences, ["port 2 was not up from the capture's start to its stop"]);
});

Deno.test("replay: a truncated packet cannot be replayed and says so", () => {
  const f = ud(3, 2);
  const r = replayIbCapture(
    {
      interfaces,
      packets: [{ interfaceId: 1, timestampNs: 0n, data: f.subarray(0, 10), origLen: f.length }],
    },
    tables,
    [status(1), status(2)],
    [status(1), status(2)],
  );
  assert.deepEqual(r.differences, ["packet 0 on port 1 was captured truncated"]);
});

Deno.test("replay: frames still in a port's queue at the stop are the model's last ones", () => {
  const { packets, after } = scenario();
  const fromSmLen = packets[4].data.length;
  // the SM's answer, the last frame for port 2, waits in its queue (the guest has not read yet)
  const held = [after[0], {
    ...after[1],
    queueLen: 1,
    txFrames: 2,
    txBytes: after[1].txBytes - fromSmLen,
  }];
  const r = replayIbCapture({ interfaces, packets }, tables, [status(1), status(2)], held);
  assert.deepEqual(r.differences, []);
  // a queued frame does not excuse a different one missing: the multicast frame (not the last) lost
  const mcastLen = packets[2].data.length;
  const lost = [after[0], {
    ...after[1],
    queueLen: 1,
    txFrames: 2,
    txBytes: after[1].txBytes - mcastLen,
  }];
  const r2 = replayIbCapture({ interfaces, packets }, tables, [status(1), status(2)], lost);
  assert.deepEqual(r2.differences, [
    `port 2 tx bytes: the switch counted ${after[1].txBytes - mcastLen}, the model ${
      after[1].txBytes - fromSmLen
    }`,
  ]);
});

Deno.test("replay: frames queued at the start count in tx frames, their bytes within bounds", () => {
  const { packets, after } = scenario();
  const before = [status(1), status(2, { queueLen: 2 })];
  const ok = [after[0], { ...after[1], txFrames: 5, txBytes: after[1].txBytes + 2 * 100 }];
  assert.deepEqual(replayIbCapture({ interfaces, packets }, tables, before, ok).differences, []);
  // one of the two never sent, and 10 bytes cannot be two frames of at least 8
  const short = [after[0], { ...after[1], txFrames: 4, txBytes: after[1].txBytes + 10 }];
  assert.deepEqual(replayIbCapture({ interfaces, packets }, tables, before, short).differences, [
    "port 2 tx frames: the switch counted 4, the model 5",
    `port 2 tx bytes: the switch counted ${after[1].txBytes + 10}, the model ${
      after[1].txBytes
    } and the 2 frames queued at the start`,
  ]);
});

Deno.test("tables read before and after a capture: equal in any order, a join named", () => {
  const shuffled = {
    ...tables,
    lft: [...tables.lft].reverse(),
    mcast: [{ mlid: 0xc000, ports: [2, 1] }],
  };
  assert.equal(ibTablesChanged(tables, shuffled), "");
  const joined = { ...tables, mcast: [...tables.mcast, { mlid: 0xc001, ports: [2] }] };
  assert.equal(
    ibTablesChanged(tables, joined),
    "multicast [[49152,[1,2]]] -> [[49152,[1,2]],[49153,[2]]]",
  );
});
