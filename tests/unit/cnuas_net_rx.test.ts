/**
 * The cnuas_net receive oracle (`predictRx`, `explainRxDelta`): what the
 * documented contract decides about a received frame, what it leaves open,
 * and how a window of `ethtool -S` counters is judged against both.
 */
import assert from "node:assert/strict";
import {
  addCounters,
  type Counters,
  expectedRxCounters,
  explainRxDelta,
  macBytes,
  pfcFrame,
  predictRx,
  type RxPrediction,
  UnpredictableFrameError,
} from "../../harness/models/cnuas_net_rx.ts";

/** A frame of `len` bytes to a unicast MAC; `src0` is the first source byte. */
function frame(len: number, type = 0x0800, src0 = 0x02): Uint8Array {
  const f = new Uint8Array(len);
  f.set([0x02, 0xc7, 0x0a, 0, 1, 0].slice(0, Math.min(len, 6)), 0);
  if (len >= 12) f.set([src0, 0xc7, 0x0a, 0, 0, 0], 6);
  if (len >= 14) f.set([type >> 8, type & 0xff], 12);
  return f;
}

/** What `frame(100)` moves on an up interface: it goes up the stack. */
const UP_100: Counters = { rx_packets: 1, rx_bytes: 100 };

/** A MAC Control frame of `len` bytes with `opcode`. */
function macControl(len: number, opcode: number, src0 = 0x02): Uint8Array {
  const f = frame(len, 0x8808, src0);
  if (len >= 16) f.set([opcode >> 8, opcode & 0xff], 14);
  return f;
}

Deno.test("a frame shorter than the Ethernet header is a runt", () => {
  assert.deepEqual(expectedRxCounters(frame(13), 1500), { rx_drop_runt: 1 });
});

Deno.test("a frame longer than MTU + 18 is oversize, MTU + 18 itself is accepted", () => {
  assert.deepEqual(expectedRxCounters(frame(1519), 1500), { rx_drop_oversize: 1 });
  assert.deepEqual(expectedRxCounters(frame(1518), 1500), { rx_packets: 1, rx_bytes: 1518 });
});

Deno.test("a multicast source address is a malformed frame", () => {
  assert.deepEqual(expectedRxCounters(frame(64, 0x0800, 0x01), 1500), { rx_drop_bad_src: 1 });
});

Deno.test("a PFC frame counts each priority of its class-enable vector, nothing else", () => {
  const f = pfcFrame("02:c7:0a:ff:00:01", [3, 5]);
  assert.equal(f.length, 60);
  assert.deepEqual(expectedRxCounters(f, 1500), { rx_pfc_prio3: 1, rx_pfc_prio5: 1 });
});

Deno.test("802.3x PAUSE counts rx_pause; an unknown MAC control opcode is malformed", () => {
  const pause = frame(60, 0x8808);
  pause.set([0x00, 0x01], 14);
  assert.deepEqual(expectedRxCounters(pause, 1500), { rx_pause: 1 });
  const odd = frame(60, 0x8808);
  odd.set([0x0f, 0x0f], 14);
  assert.deepEqual(expectedRxCounters(odd, 1500), { rx_drop_bad_mac_ctrl: 1 });
});

Deno.test("a stack frame on a down interface is counted as rx_drop_down", () => {
  assert.deepEqual(expectedRxCounters(frame(100), 1500, false), { rx_drop_down: 1 });
});

Deno.test("addCounters sums increments into the accumulator", () => {
  const acc = addCounters({ rx_packets: 1 }, { rx_packets: 2, rx_bytes: 100 });
  assert.deepEqual(acc, { rx_packets: 3, rx_bytes: 100 });
});

Deno.test("macBytes rejects text that is not six hex octets", () => {
  assert.deepEqual(Array.from(macBytes("02:c7:0a:00:01:ff")), [2, 0xc7, 0x0a, 0, 1, 0xff]);
  assert.throws(() => macBytes("02:c7:0a:00:01"), RangeError);
  assert.throws(() => macBytes("02:c7:0a:00:01:zz"), RangeError);
});

Deno.test("empty frames and frames above 9216 bytes never reach the driver: no counter moves", () => {
  assert.deepEqual(predictRx(new Uint8Array(0), 9000), { kind: "exact", counters: {} });
  assert.deepEqual(predictRx(frame(9217), 9202), { kind: "exact", counters: {} });
});

Deno.test("a frame both oversize and from a group source is judged by its length first", () => {
  assert.deepEqual(expectedRxCounters(frame(1519, 0x0800, 0x01), 1500), { rx_drop_oversize: 1 });
});

Deno.test("the largest MTU admits the device's largest frame, 9216 bytes", () => {
  assert.deepEqual(expectedRxCounters(frame(9216), 9202), { rx_packets: 1, rx_bytes: 9216 });
});

Deno.test("a PFC frame ignores the reserved upper byte of its class-enable vector", () => {
  const f = pfcFrame("02:c7:0a:ff:00:01", [0, 7]);
  f[16] = 0xff;
  assert.deepEqual(expectedRxCounters(f, 1500), { rx_pfc_prio0: 1, rx_pfc_prio7: 1 });
});

Deno.test("a PFC frame enabling no priority moves no counter", () => {
  assert.deepEqual(expectedRxCounters(pfcFrame("02:c7:0a:ff:00:01", []), 1500), {});
});

Deno.test("MAC Control frames without an opcode or too short for its fields are malformed", () => {
  assert.deepEqual(expectedRxCounters(frame(15, 0x8808), 1500), { rx_drop_bad_mac_ctrl: 1 });
  assert.deepEqual(expectedRxCounters(macControl(17, 0x0001), 1500), {
    rx_drop_bad_mac_ctrl: 1,
  });
  assert.deepEqual(expectedRxCounters(macControl(33, 0x0101), 1500), {
    rx_drop_bad_mac_ctrl: 1,
  });
});

Deno.test("a PAUSE frame longer than 60 bytes is open: honoured or malformed", () => {
  const p = predictRx(macControl(64, 0x0001), 1500);
  assert.equal(p.kind, "open");
  assert.deepEqual(p.kind === "open" && p.outcomes, [{ rx_pause: 1 }, { rx_drop_bad_mac_ctrl: 1 }]);
});

Deno.test("expectedRxCounters refuses a frame the contract does not decide", () => {
  assert.throws(
    () => expectedRxCounters(macControl(40, 0x0001, 0x01), 1500),
    UnpredictableFrameError,
  );
});

Deno.test("a MAC Control frame from a group source may count either rule", () => {
  const p = predictRx(macControl(60, 0x0001, 0x01), 1500);
  assert.deepEqual(p.kind === "open" && p.outcomes, [{ rx_pause: 1 }, { rx_drop_bad_src: 1 }]);
});

Deno.test("on a down interface a runt is open between its length drop and rx_drop_down", () => {
  const p = predictRx(frame(9), 1500, false);
  assert.deepEqual(p.kind === "open" && p.outcomes, [{ rx_drop_runt: 1 }, { rx_drop_down: 1 }]);
});

Deno.test("a window of exactly predicted frames must match every receive counter", () => {
  const preds = [frame(100), frame(5)].map((f) => predictRx(f, 1500));
  const v = explainRxDelta(preds, { ...UP_100, rx_drop_runt: 1, tx_packets: 7 });
  assert.equal(v.ok, true);
  assert.deepEqual(v.problems, []);
});

Deno.test("a receive counter no prediction names must not move", () => {
  const v = explainRxDelta([predictRx(frame(100), 1500)], { ...UP_100, rx_drop_nomem: 1 });
  assert.equal(v.ok, false);
  assert.deepEqual(v.problems, ["rx_drop_nomem moved by 1, expected 0"]);
});

Deno.test("open frames pass when one allowed outcome each explains the delta", () => {
  const preds: RxPrediction[] = [
    predictRx(frame(100), 1500),
    predictRx(macControl(64, 0x0001), 1500),
    predictRx(macControl(80, 0x0001), 1500),
  ];
  const v = explainRxDelta(preds, { ...UP_100, rx_pause: 1, rx_drop_bad_mac_ctrl: 1 });
  assert.equal(v.ok, true);
  assert.equal(v.openFrames, 2);
});

Deno.test("open frames fail when no choice of outcomes explains the delta", () => {
  const preds = [predictRx(macControl(64, 0x0001), 1500)];
  const v = explainRxDelta(preds, { rx_pause: 1, rx_drop_bad_mac_ctrl: 1 });
  assert.equal(v.ok, false);
  assert.match(v.problems[0], /no choice of allowed outcomes/);
});

Deno.test("a search over too many open frames ends and says so instead of passing", () => {
  // Open on a down interface: delivered-if-up frames with distinct lengths make every
  // partial sum a new state, and an odd byte total no subset reaches keeps it searching.
  const preds = Array.from({ length: 40 }, (_, i): RxPrediction => {
    const delivered: Counters = { rx_packets: 1, rx_bytes: 1000 + 2 * i * i };
    return { kind: "open", outcomes: [delivered, { rx_drop_down: 1 }], why: "test" };
  });
  const v = explainRxDelta(preds, { rx_packets: 20, rx_drop_down: 20, rx_bytes: 55_555 });
  assert.equal(v.ok, false);
  assert.match(v.problems[0], /too many to search/);
});

// ---- the acceptance rule of docs/devices.md ("cnuas_net: which received frames are
// accepted"), pinned: a change to any of these is a change to the contract. ----

/** A `len`-byte IPv4 frame from a unicast source to destination `dst`. */
function toDest(dst: number[], len = 100): Uint8Array {
  const f = frame(len);
  f.set(dst, 0);
  return f;
}

Deno.test("contract: no destination filter — own, other unicast, multicast and broadcast frames all go up", () => {
  const destinations = [
    [0x02, 0xc7, 0x0a, 0, 1, 0], // the interface's own address
    [0x02, 0x11, 0x22, 0x33, 0x44, 0x55], // another host
    [0x01, 0x00, 0x5e, 0x00, 0x00, 0x01], // IPv4 multicast
    [0x33, 0x33, 0x00, 0x00, 0x00, 0x01], // IPv6 multicast
    [0xff, 0xff, 0xff, 0xff, 0xff, 0xff], // broadcast
  ];
  for (const dst of destinations) {
    assert.deepEqual(
      expectedRxCounters(toDest(dst), 1500),
      { rx_packets: 1, rx_bytes: 100 },
      `${dst}`,
    );
    assert.deepEqual(
      expectedRxCounters(toDest(dst), 1500, false),
      { rx_drop_down: 1 },
      `${dst}, down`,
    );
  }
});

Deno.test("contract: a frame is accepted from 14 to min(MTU + 18, 9216) bytes, at any MTU", () => {
  for (const [mtu, max] of [[68, 86], [1500, 1518], [9000, 9018], [9198, 9216], [9202, 9216]]) {
    assert.deepEqual(
      expectedRxCounters(frame(13), mtu),
      { rx_drop_runt: 1 },
      `13 bytes, MTU ${mtu}`,
    );
    assert.deepEqual(
      expectedRxCounters(frame(14), mtu),
      { rx_packets: 1, rx_bytes: 14 },
      `14, MTU ${mtu}`,
    );
    assert.deepEqual(
      expectedRxCounters(frame(max), mtu),
      { rx_packets: 1, rx_bytes: max },
      `${max}, MTU ${mtu}`,
    );
    const over = max + 1;
    const want = over > 9216 ? {} : { rx_drop_oversize: 1 };
    assert.deepEqual(expectedRxCounters(frame(over), mtu), want, `${over} bytes, MTU ${mtu}`);
  }
});

Deno.test("contract: a broadcast frame from a group source is still malformed (the source is checked, the destination not)", () => {
  assert.deepEqual(
    expectedRxCounters(
      toDest([0xff, 0xff, 0xff, 0xff, 0xff, 0xff], 64).map((b, i) => i === 6 ? 0x03 : b),
      1500,
    ),
    {
      rx_drop_bad_src: 1,
    },
  );
});
