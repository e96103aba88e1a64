/**
 * The checker on UD and multicast traffic: conforming UD unicast exchanges
 * and multicast sends (RoCEv2 over IPv4 and IPv6, native IB) pass, also
 * beside an RC conversation, and each planted violation is caught by exactly
 * the rule it breaks — every test checks the good frame first, so a rule that
 * never fires, or fires on everything, fails it.
 */
import assert from "node:assert/strict";
import * as r from "../../harness/models/rdma/mod.ts";

const A = r.parseIpv4("10.0.0.1");
const B = r.parseIpv4("10.0.0.2");
const GROUP = r.parseIpv4("239.1.2.3");
const GROUP_MAC = r.parseMac("01:00:5e:01:02:03");
/** UD QPs of A and B (the RC conversation uses 0x11 and 0x12). */
const QP_A = 0x21;
const QP_B = 0x22;

function rules(res: r.CheckResult): string[] {
  return [...new Set(res.violations.map((v) => v.rule))].sort();
}

function check(frames: Uint8Array[], opts: r.CheckOptions = {}): r.CheckResult {
  return r.checkCapture(frames.map((data) => ({ data, linkType: r.LINKTYPE_ETHERNET })), opts);
}

/** A RoCEv2 UD SEND_ONLY from A's UD QP to B's, with `over` replacing any part. */
function ud(over: Partial<r.RoceFrameSpec> = {}, bth: Partial<r.Bth> = {}): Uint8Array {
  return r.buildRoceFrame({
    srcIp: A,
    dstIp: B,
    deth: { qkey: 0x11111111, reserved8: 0, srcQp: QP_A },
    payload: new Uint8Array(64),
    ...over,
    bth: { opcode: r.OP.UD_SEND_ONLY, destQp: QP_B, psn: 7, ...bth },
  });
}

/** A RoCEv2 UD multicast send from A to the IPv4 group 239.1.2.3, addressed as RFC 1112 says. */
function mcast(over: Partial<r.RoceFrameSpec> = {}, bth: Partial<r.Bth> = {}): Uint8Array {
  return ud({ dstIp: GROUP, dstMac: GROUP_MAC, ...over }, { destQp: r.MULTICAST_QPN, ...bth });
}

/** The good frame passes, the bad one breaks exactly `expected`. */
function goodThenBad(good: Uint8Array[], bad: Uint8Array[], expected: string[]): r.CheckResult {
  assert.deepEqual(check(good).violations, [], "the conforming capture must pass");
  const res = check(bad);
  assert.deepEqual(rules(res), expected);
  return res;
}

// ---- conforming traffic -----------------------------------------------------------------------

Deno.test("a UD ping-pong (any PSNs, AckReq ignored, immediate data) beside RC traffic is clean", () => {
  const rc = new r.RcConversation({ pmtu: 1024 }).send("a", 3000).read("b", 2000);
  const pong = (psn: number, opcode: number = r.OP.UD_SEND_ONLY_WITH_IMMEDIATE) =>
    ud({
      srcIp: B,
      dstIp: A,
      deth: { qkey: 0x11111111, reserved8: 0, srcQp: QP_B },
      immDt: 0xabcd,
      payload: new Uint8Array(1024),
    }, { opcode, destQp: QP_A, psn });
  const frames = [
    ud({}, { psn: 0xfffffe }),
    pong(42),
    ...rc.frames.map((f) => f.data),
    ud({}, { psn: 3, ackReq: 1 }), // PSN back to 3: UD PSNs are not checked (IBA 9.8)
    ud({}, { psn: 3 }), // the same PSN again
    ud({}, { destQp: 0x33, psn: 0x123456 }), // another destination QP
    pong(41, r.OP.UD_SEND_ONLY),
    ud({ deth: { qkey: 0x22222222, reserved8: 0, srcQp: QP_A } }), // another Q_Key, per WR
  ];
  const res = check(frames, { pathMtu: 1024 });
  assert.deepEqual(res.violations, []);
  assert.equal(res.flows, 2, "UD packets open no request flows");
  assert.equal(res.rdmaFrames, frames.length);
});

Deno.test("a UD exchange over IPv6 and a controlled Q_Key from a non-GSI QP are clean", () => {
  const v6 = (last: number) => Uint8Array.from([0xfd, 0, ...new Array(13).fill(0), last]);
  const frames = [
    ud({ srcIp: v6(1), dstIp: v6(2) }),
    ud({ srcIp: v6(2), dstIp: v6(1), deth: { qkey: 0x80000001, reserved8: 0, srcQp: QP_B } }, {
      destQp: QP_A,
    }),
  ];
  assert.deepEqual(check(frames).violations, []);
});

Deno.test("multicast sends over IPv4, IPv6 and native IB, addressed to their groups, are clean", () => {
  const mgid = Uint8Array.from([0xff, 0x0e, ...new Array(10).fill(0), 0, 1, 0, 2]);
  const v6 = ud({
    srcIp: Uint8Array.from([0xfd, ...new Array(14).fill(0), 1]),
    dstIp: mgid,
    dstMac: r.parseMac("33:33:00:01:00:02"), // RFC 2464 §7: 33:33 + the last 32 bits
  }, { destQp: r.MULTICAST_QPN });
  assert.equal(r.ipv4MulticastMac(GROUP), GROUP_MAC);
  // RFC 1112 §6.4 keeps only the low 23 bits: the top bit of the second byte is dropped.
  assert.equal(r.ipv4MulticastMac(r.parseIpv4("224.129.2.3")), GROUP_MAC);
  assert.deepEqual(check([mcast(), mcast({}, { psn: 99 }), v6]).violations, []);
  const ib = r.buildIbFrame({
    lrh: { dlid: 0xc001, slid: 3 },
    bth: { opcode: r.OP.UD_SEND_ONLY_WITH_IMMEDIATE, destQp: r.MULTICAST_QPN, psn: 1 },
    deth: { qkey: 0x1234, reserved8: 0, srcQp: 0x40 },
    immDt: 5,
    payload: new Uint8Array(16),
  });
  assert.deepEqual(
    r.checkCapture([{ data: ib, linkType: r.LINKTYPE_INFINIBAND }]).violations,
    [],
  );
});

// ---- payload and responses ------------------------------------------------------------------

Deno.test("a UD payload above the path MTU the check runs with is a payload-mtu violation", () => {
  const at = (n: number) => ud({ payload: new Uint8Array(n) });
  assert.deepEqual(check([at(1024)], { pathMtu: 1024 }).violations, []);
  assert.deepEqual(rules(check([at(1028)], { pathMtu: 1024 })), ["payload-mtu"]);
  assert.deepEqual(rules(check([at(4100)])), ["payload-mtu"]); // no MTU given: 4096 is the ceiling
});

Deno.test("an ACK answering a UD packet is flagged: UD has no responses", () => {
  const ack = r.buildRoceFrame({
    srcIp: B,
    dstIp: A,
    bth: { opcode: r.OP.RC_ACKNOWLEDGE, destQp: QP_A, psn: 7 },
    aeth: { syndrome: 0x1f, msn: 1 },
  });
  // The ACK goes to A's UD QP (qp-service) and answers no RC request (ack-psn).
  goodThenBad([ud({}, { ackReq: 1 })], [ud({}, { ackReq: 1 }), ack], ["ack-psn", "qp-service"]);
});

// ---- one service per QP -----------------------------------------------------------------------

Deno.test("an RC packet to a QP that sent UD is a qp-service violation, reported once", () => {
  const rcToA = (psn: number) =>
    r.buildRoceFrame({
      srcIp: B,
      dstIp: A,
      bth: { opcode: r.OP.RC_SEND_ONLY, destQp: QP_A, psn },
      payload: new Uint8Array(8),
    });
  const ackToB = (psn: number) =>
    r.buildRoceFrame({
      srcIp: A,
      dstIp: B,
      bth: { opcode: r.OP.RC_ACKNOWLEDGE, destQp: 0x77, psn },
      aeth: { syndrome: 0x1f, msn: 1 },
    });
  const res = goodThenBad(
    [ud()],
    [ud(), rcToA(10), ackToB(10), rcToA(11), ackToB(11)],
    ["qp-service"],
  );
  assert.equal(res.violations.length, 1, "the QP is taken as RC from the violation on");
  assert.equal(res.violations[0].frameIndex, 1);
  assert.match(res.violations[0].message, /QP 0x000021 of 10\.0\.0\.1, a UD QP/);
});

Deno.test("a UD packet to a QP of an RC connection is a qp-service violation", () => {
  const rc = new r.RcConversation().send("a", 100);
  const good = rc.frames.map((f) => f.data);
  const bad = [...good, ud({}, { destQp: 0x12 })]; // 0x12 is B's RC QP
  const res = goodThenBad([...good, ud()], bad, ["qp-service"]);
  assert.match(res.violations[0].message, /connected \(RC\/UC\) QP/);
});

// ---- DETH and QP0 -----------------------------------------------------------------------------

Deno.test("DETH SrcQP 0xFFFFFF (the multicast QP number) is a deth violation", () => {
  goodThenBad([ud()], [ud({ deth: { qkey: 1, reserved8: 0, srcQp: 0xffffff } })], ["deth"]);
});

Deno.test("on native IB, SrcQP 0 must go to QP0 and QP0 must hear from SrcQP 0 (deth)", () => {
  const ib = (srcQp: number, destQp: number, vl = 0) => ({
    data: r.buildIbFrame({
      lrh: { dlid: 2, slid: 1, vl },
      bth: { opcode: r.OP.UD_SEND_ONLY, destQp, psn: 0 },
      deth: { qkey: 0, reserved8: 0, srcQp },
      payload: new Uint8Array(256),
    }),
    linkType: r.LINKTYPE_INFINIBAND,
  });
  assert.deepEqual(r.checkCapture([ib(0, 0, 15), ib(0x40, 0x41)]).violations, []);
  assert.deepEqual(rules(r.checkCapture([ib(0, 0x41)])), ["deth"]);
  assert.deepEqual(rules(r.checkCapture([ib(0x40, 0, 15)])), ["deth"]);
});

Deno.test("QP0 on RoCEv2, as destination or as DETH source, is a management violation", () => {
  const smp = { payload: new Uint8Array(256), deth: { qkey: 0, reserved8: 0, srcQp: 0 } };
  const res = goodThenBad([ud()], [ud(smp, { destQp: 0 })], ["management"]);
  assert.equal(res.violations.length, 1);
  assert.match(res.violations[0].message, /RoCE has no QP0/);
  assert.deepEqual(rules(check([ud({ deth: { qkey: 0, reserved8: 0, srcQp: 0 } })])), [
    "management",
  ]);
});

// ---- multicast --------------------------------------------------------------------------------

Deno.test("DestQP 0xFFFFFF to a unicast IP is a multicast violation", () => {
  const res = goodThenBad([mcast()], [ud({}, { destQp: r.MULTICAST_QPN })], ["multicast"]);
  assert.match(res.violations[0].message, /10\.0\.0\.2 is unicast/);
});

Deno.test("a multicast IP to a QP other than 0xFFFFFF is a multicast violation", () => {
  const res = goodThenBad([mcast()], [mcast({}, { destQp: QP_B })], ["multicast"]);
  assert.match(res.violations[0].message, /239\.1\.2\.3 is multicast but DestQP is 0x000022/);
});

Deno.test("an RC packet to the multicast QP is a multicast violation and opens no flow", () => {
  const rcMc = mcast({ deth: undefined, payload: new Uint8Array(8) }, {
    opcode: r.OP.RC_SEND_ONLY,
  });
  const res = goodThenBad([mcast()], [rcMc], ["multicast"]);
  assert.equal(res.violations.length, 1);
  assert.equal(res.flows, 0);
});

Deno.test("a multicast frame not sent to its RFC 1112 group MAC is a multicast violation", () => {
  const res = goodThenBad(
    [mcast()],
    [mcast({ dstMac: r.parseMac("01:00:5e:81:02:03") })], // bit 24 of the address leaked in
    ["multicast"],
  );
  assert.match(res.violations[0].message, /01:00:5e:01:02:03/);
  const v6 = ud({
    srcIp: Uint8Array.from([0xfd, ...new Array(14).fill(0), 1]),
    dstIp: Uint8Array.from([0xff, 0x02, ...new Array(13).fill(0), 1]),
    dstMac: GROUP_MAC, // an IPv4 mapping for an IPv6 group
  }, { destQp: r.MULTICAST_QPN });
  assert.deepEqual(rules(check([v6])), ["multicast"]);
});

Deno.test("a multicast source IP or a group source MAC is a multicast violation", () => {
  goodThenBad([mcast()], [mcast({ srcIp: r.parseIpv4("224.0.0.9") })], ["multicast"]);
  goodThenBad([ud()], [ud({ srcMac: r.parseMac("03:00:00:00:00:01") })], ["multicast"]);
});

Deno.test("on native IB, DestQP 0xFFFFFF needs a multicast DLID and a multicast DLID needs it", () => {
  const ib = (dlid: number, destQp: number, slid = 1) => ({
    data: r.buildIbFrame({
      lrh: { dlid, slid },
      bth: { opcode: r.OP.UD_SEND_ONLY, destQp, psn: 0 },
      deth: { qkey: 5, reserved8: 0, srcQp: 0x40 },
      payload: new Uint8Array(8),
    }),
    linkType: r.LINKTYPE_INFINIBAND,
  });
  assert.deepEqual(r.checkCapture([ib(0xc000, r.MULTICAST_QPN), ib(2, 0x41)]).violations, []);
  assert.deepEqual(rules(r.checkCapture([ib(2, r.MULTICAST_QPN)])), ["multicast"]);
  assert.deepEqual(rules(r.checkCapture([ib(0xc000, 0x41)])), ["multicast"]);
  assert.deepEqual(rules(r.checkCapture([ib(0xc000, r.MULTICAST_QPN, 0xc001)])), ["multicast"]);
});
