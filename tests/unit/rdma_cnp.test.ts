/**
 * The checker's ECN census and CNP rule (IBA annex A17.9.3, RFC 3168): a
 * conversation whose data packets are ECT(0), some CE-marked, answered by a
 * well-formed CNP to the data sender's QP passes; each malformed or
 * misaddressed CNP is caught by rule `cnp`, and by nothing else.
 */
import assert from "node:assert/strict";
import * as r from "../../harness/models/rdma/mod.ts";

const A = r.parseIpv4("10.0.0.1");
const B = r.parseIpv4("10.0.0.2");
/** The data sender's QP (side a of the conversation). */
const A_QP = 0x11;

/** Rules of a result, deduplicated and sorted. */
function rules(res: r.CheckResult): string[] {
  return [...new Set(res.violations.map((v) => v.rule))].sort();
}

/** Rewrite the ECN bits of a RoCEv2/IPv4 frame (TOS is outside the ICRC; the IP checksum is redone). */
function setEcn(frame: Uint8Array, ecn: number): void {
  frame[15] = (frame[15] & 0xfc) | ecn;
  r.refreshIpv4Checksum(frame);
}

/**
 * a writes to b, every frame ECT(0) and the data packets of the second WRITE
 * CE-marked (a switch above its threshold), b acknowledging; the frames.
 */
function markedConversation(): r.CaptureFrame[] {
  const conv = new r.RcConversation({ pmtu: 1024 })
    .write("a", 2048)
    .write("a", 3072)
    .send("b", 100);
  for (const f of conv.frames) setEcn(f.data, 2);
  // the second WRITE's three packets (frames 3, 4, 5: after WRITE 1 and its ACK)
  for (const i of [3, 4, 5]) setEcn(conv.frames[i].data, 3);
  return conv.frames;
}

interface CnpSpec {
  destQp?: number;
  becn?: number;
  ackReq?: number;
  payload?: Uint8Array;
  timestampNs?: bigint;
  srcPort?: number;
}

/** A CNP from b (the notification point) to a, well-formed unless `s` says otherwise. */
function cnp(s: CnpSpec = {}): r.CaptureFrame {
  const data = r.buildRoceFrame({
    srcMac: 0x020000000002,
    dstMac: 0x020000000001,
    srcIp: B,
    dstIp: A,
    tos: 48 << 2,
    srcPort: s.srcPort ?? 0xc123,
    bth: {
      opcode: r.CNP_OPCODE,
      destQp: s.destQp ?? A_QP,
      psn: 0,
      becn: s.becn ?? 1,
      ackReq: s.ackReq ?? 0,
    },
    payload: s.payload ?? new Uint8Array(r.CNP_RESERVED_BYTES),
  });
  return { data, linkType: r.LINKTYPE_ETHERNET, timestampNs: s.timestampNs ?? 10_000_000n };
}

Deno.test("ECT(0) data, CE marks and a well-formed CNP to the sender's QP pass", () => {
  const frames = [...markedConversation(), cnp()];
  const res = r.checkCapture(frames, { cnpMinIntervalNs: 25_000, requireCeBeforeCnp: true });
  assert.deepEqual(res.violations, []);
  assert.equal(res.cnps, 1);
  assert.equal(res.ecn.ce, 3);
  assert.equal(res.ecn.ect0, frames.length - 1 - 3);
  assert.equal(res.ecn.notEct, 1, "the CNP itself is Not-ECT");
});

Deno.test("frames that are all ECT(0) are accepted and counted", () => {
  const conv = new r.RcConversation().send("a", 3000).read("b", 2000);
  for (const f of conv.frames) setEcn(f.data, 2);
  const res = r.checkCapture(conv.frames);
  assert.deepEqual(res.violations, []);
  assert.deepEqual(res.ecn, { notEct: 0, ect0: conv.frames.length, ect1: 0, ce: 0 });
  assert.equal(res.cnps, 0);
});

Deno.test("a CNP to a QP the sender does not own is a cnp violation", () => {
  const res = r.checkCapture([...markedConversation(), cnp({ destQp: 0x99 })]);
  assert.deepEqual(rules(res), ["cnp"]);
  assert.match(res.violations[0].message, /0x000099, a QP no packet/);
});

Deno.test("a CNP named after the notification point's own QP is caught", () => {
  // b's QP is 0x12: a QP of the conversation, but not one a owns
  const res = r.checkCapture([...markedConversation(), cnp({ destQp: 0x12 })]);
  assert.deepEqual(rules(res), ["cnp"]);
});

Deno.test("a CNP to QP1 or the multicast QP is a cnp violation", () => {
  for (const qp of [1, 0xffffff]) {
    const res = r.checkCapture([...markedConversation(), cnp({ destQp: qp })]);
    assert.deepEqual(rules(res), ["cnp"], `QP ${qp}`);
  }
});

Deno.test("a CNP without 16 reserved bytes, with non-zero ones, without BECN or with AckReq is caught", () => {
  const bad: [string, r.CaptureFrame, RegExp][] = [
    ["12 bytes", cnp({ payload: new Uint8Array(12) }), /12 bytes after its BTH/],
    ["20 bytes", cnp({ payload: new Uint8Array(20) }), /20 bytes after its BTH/],
    ["non-zero", cnp({ payload: new Uint8Array(16).fill(1, 7, 8) }), /not all zero/],
    ["no BECN", cnp({ becn: 0 }), /without BECN/],
    ["AckReq", cnp({ ackReq: 1 }), /AckReq set/],
  ];
  for (const [what, frame, message] of bad) {
    const res = r.checkCapture([...markedConversation(), frame]);
    assert.deepEqual(rules(res), ["cnp"], what);
    assert.equal(res.violationCount, 1, what);
    assert.match(res.violations[0].message, message, what);
  }
});

Deno.test("a CNP with no CE mark before it is caught when the capture can see marks", () => {
  const conv = new r.RcConversation().write("a", 2048);
  for (const f of conv.frames) setEcn(f.data, 2);
  const frames = [...conv.frames, cnp()];
  const res = r.checkCapture(frames, { requireCeBeforeCnp: true });
  assert.deepEqual(rules(res), ["cnp"]);
  assert.match(res.violations[0].message, /before any CE-marked packet/);
  // the default: a capture at the switch's ingress never sees the marks it makes
  assert.deepEqual(r.checkCapture(frames).violations, []);
});

Deno.test("CNPs to one QP closer than the promised interval are caught", () => {
  const frames = [
    ...markedConversation(),
    cnp({ timestampNs: 10_000_000n }),
    cnp({ timestampNs: 10_002_000n }),
  ];
  const res = r.checkCapture(frames, { cnpMinIntervalNs: 25_000 });
  assert.deepEqual(rules(res), ["cnp"]);
  assert.match(res.violations[0].message, /2000 ns after the previous one/);
  // far enough apart, or not checked: fine
  const spaced = [
    ...markedConversation(),
    cnp({ timestampNs: 10_000_000n }),
    cnp({ timestampNs: 10_050_000n }),
  ];
  assert.deepEqual(r.checkCapture(spaced, { cnpMinIntervalNs: 25_000 }).violations, []);
  assert.deepEqual(r.checkCapture(frames).violations, []);
  // another notification point QP (another UDP source port) has its own interval
  const two = [
    ...markedConversation(),
    cnp({ timestampNs: 10_000_000n }),
    cnp({ timestampNs: 10_002_000n, srcPort: 0xc999 }),
  ];
  assert.deepEqual(r.checkCapture(two, { cnpMinIntervalNs: 25_000 }).violations, []);
});

Deno.test("a CNP's ICRC is still checked", () => {
  const f = cnp();
  f.data[f.data.length - 1] ^= 0xff;
  const res = r.checkCapture([...markedConversation(), f]);
  assert.deepEqual(rules(res), ["icrc"]);
});
