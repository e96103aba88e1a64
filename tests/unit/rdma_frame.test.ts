/**
 * Whole-frame decoding: Ethernet → IP → UDP 4791 → BTH → ETHs → payload →
 * ICRC, and LRH → (GRH) → BTH → … → ICRC → VCRC. Malformed input must come back
 * with errors, never as an exception.
 */
import assert from "node:assert/strict";
import * as r from "../../harness/models/rdma/mod.ts";
import { prng, randBytes, randInt } from "../../harness/prng.ts";

const rng = prng(77);
const A = r.parseIpv4("10.1.0.1");
const B = r.parseIpv4("10.1.0.2");

Deno.test("a RoCEv2 RDMA WRITE FIRST decodes every layer down to its payload", () => {
  const payload = randBytes(rng, 1024);
  const f = r.buildRoceFrame({
    srcIp: A,
    dstIp: B,
    srcPort: 0xc123,
    bth: { opcode: r.OP.RC_RDMA_WRITE_FIRST, destQp: 0x000123, psn: 0xabcdef, ackReq: 0 },
    reth: { va: 0x1000n, rkey: 0x77, dmaLen: 4000 },
    payload,
  });
  const p = r.decodeFrame(f, r.LINKTYPE_ETHERNET);
  assert.equal(p.kind, "roce");
  assert.deepEqual(p.errors, []);
  assert.equal(p.eth!.etherType, r.ETHERTYPE_IPV4);
  assert.equal(p.ipv4!.totalLength, f.length - 14);
  assert.ok(p.ipv4ChecksumOk);
  assert.deepEqual(p.udp, { srcPort: 0xc123, dstPort: 4791, length: f.length - 34, checksum: 0 });
  assert.equal(p.op!.name, "RC_RDMA_WRITE_FIRST");
  assert.equal(p.bth!.psn, 0xabcdef);
  assert.deepEqual(p.reth, { va: 0x1000n, rkey: 0x77, dmaLen: 4000 });
  assert.equal(p.payloadOffset, 14 + 20 + 8 + 12 + 16);
  assert.equal(p.payloadLength, 1024);
  assert.deepEqual(r.packetPayload(f, p), payload);
  assert.equal(p.icrc!.wire, p.icrc!.computed);
});

Deno.test("pad bytes count in paddedLength but not in the payload", () => {
  const f = r.buildRoceFrame({
    srcIp: A,
    dstIp: B,
    bth: { opcode: r.OP.RC_SEND_ONLY_WITH_IMMEDIATE, destQp: 1, psn: 1 },
    immDt: 0x01020304,
    payload: randBytes(rng, 5),
  });
  const p = r.decodeFrame(f, 1);
  assert.equal(p.bth!.padCnt, 3);
  assert.equal(p.paddedLength, 8);
  assert.equal(p.payloadLength, 5);
  assert.equal(p.immDt, 0x01020304);
});

Deno.test("RoCEv2 behind a VLAN tag and over IPv6 decode as RoCE", () => {
  const v = r.buildRoceFrame({
    srcIp: A,
    dstIp: B,
    vlans: [{ tpid: 0x8100, pcp: 3, dei: 0, vid: 10 }],
    bth: { opcode: r.OP.RC_ACKNOWLEDGE, destQp: 5, psn: 5 },
    aeth: { syndrome: 0x1f, msn: 2 },
  });
  const pv = r.decodeFrame(v, 1);
  assert.equal(pv.kind, "roce");
  assert.equal(pv.eth!.vlans[0].vid, 10);
  assert.deepEqual(pv.aeth, { syndrome: 0x1f, msn: 2 });
  const six = r.buildRoceFrame({
    srcIp: new Uint8Array(16).fill(1),
    dstIp: new Uint8Array(16).fill(2),
    bth: { opcode: r.OP.RC_COMPARE_SWAP, destQp: 5, psn: 5 },
    atomicEth: { va: 8n, rkey: 1, swapAdd: 2n, compare: 3n },
  });
  const p6 = r.decodeFrame(six, 1);
  assert.equal(p6.kind, "roce");
  assert.equal(p6.ipv6!.payloadLength, six.length - 54);
  assert.deepEqual(p6.atomicEth, { va: 8n, rkey: 1, swapAdd: 2n, compare: 3n });
  assert.deepEqual(p6.errors, []);
});

Deno.test("a native IB UD MAD to QP1 with a GRH decodes LRH, GRH, DETH and the MAD", () => {
  const mad = new Uint8Array(256);
  mad.set([1, 0x07, 2, 0x03, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0x00, 0x10], 0); // CM class, Send
  const f = r.buildIbFrame({
    lrh: { dlid: 3, slid: 4, sl: 0, vl: 0 },
    grh: { sgid: new Uint8Array(16).fill(0xaa), dgid: new Uint8Array(16).fill(0xbb) },
    bth: { opcode: r.OP.UD_SEND_ONLY, destQp: 1, psn: 0 },
    deth: { qkey: 0x80010000, reserved8: 0, srcQp: 1 },
    payload: mad,
  });
  const p = r.decodeFrame(f, r.LINKTYPE_INFINIBAND);
  assert.equal(p.kind, "ib");
  assert.deepEqual(p.errors, []);
  assert.equal(p.lrh!.lnh, r.LNH_IBA_GLOBAL);
  assert.equal(p.grh!.nxtHdr, 0x1b);
  assert.equal(p.grh!.payLen, f.length - 2 - 48);
  assert.equal(p.deth!.qkey, r.GSI_QKEY);
  assert.equal(p.mad!.header.mgmtClass, r.MGMT_CLASS.CM);
  assert.equal(p.mad!.header.transactionId, 9n);
  assert.equal(p.vcrc!.wire, p.vcrc!.computed);
});

Deno.test("ARP, TCP, plain UDP and raw IB decode as 'other' without errors", () => {
  const arp = new Uint8Array(60);
  arp.set([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x08, 0x06]);
  assert.deepEqual([r.decodeFrame(arp, 1).kind, r.decodeFrame(arp, 1).label], ["other", "arp"]);
  const udp = r.buildRoceFrame({
    srcIp: A,
    dstIp: B,
    dstPort: 53,
    bth: { opcode: 4, destQp: 1, psn: 1 },
  });
  const pu = r.decodeFrame(udp, 1);
  assert.deepEqual([pu.kind, pu.label, pu.errors], ["other", "ipv4/udp", []]);
  const tcp = udp.slice();
  tcp[14 + 9] = 6;
  r.refreshIpv4Checksum(tcp);
  assert.equal(r.decodeFrame(tcp, 1).label, "ipv4/tcp");
  const raw = r.encodeLrh({
    vl: 0,
    lver: 0,
    sl: 0,
    reserved2: 0,
    lnh: 0,
    dlid: 1,
    reserved5: 0,
    pktLen: 2,
    slid: 2,
  });
  const pr = r.decodeFrame(new Uint8Array([...raw, 0, 0]), r.LINKTYPE_INFINIBAND);
  assert.deepEqual([pr.kind, pr.label, pr.errors], ["other", "ib/raw", []]);
  assert.equal(r.decodeFrame(arp, 105).label, "linktype-105");
});

Deno.test("every truncation of a RoCE and an IB frame decodes with errors instead of throwing", () => {
  const roce = r.buildRoceFrame({
    srcIp: A,
    dstIp: B,
    bth: { opcode: r.OP.RC_RDMA_READ_RESPONSE_FIRST, destQp: 9, psn: 9 },
    aeth: { syndrome: 0, msn: 1 },
    payload: randBytes(rng, 64),
  });
  for (let n = 0; n < roce.length; n++) {
    const p = r.decodeFrame(roce.subarray(0, n), 1);
    if (n >= 14) assert.ok(p.errors.length > 0, `RoCE cut at ${n} bytes decoded without error`);
  }
  const ib = r.buildIbFrame({
    lrh: { dlid: 1, slid: 2 },
    bth: { opcode: r.OP.RC_ACKNOWLEDGE, destQp: 9, psn: 9 },
    aeth: { syndrome: 0, msn: 1 },
  });
  for (let n = 0; n < ib.length; n++) {
    assert.ok(r.decodeFrame(ib.subarray(0, n), 247).errors.length > 0, `IB cut at ${n}`);
  }
});

Deno.test("seeded random bytes and mutated frames never make decodeFrame throw", () => {
  const good = r.buildRoceFrame({
    srcIp: A,
    dstIp: B,
    bth: { opcode: r.OP.RC_SEND_FIRST, destQp: 9, psn: 9 },
    payload: randBytes(rng, 256),
  });
  for (let i = 0; i < 3000; i++) {
    const lt = i % 2 === 0 ? 1 : 247;
    r.decodeFrame(randBytes(rng, randInt(rng, 0, 200)), lt);
    const m = good.slice();
    for (let k = 0; k < 4; k++) m[randInt(rng, 0, m.length - 1)] = randInt(rng, 0, 255);
    r.decodeFrame(m, 1);
    r.decodeFrame(m, 247);
  }
});

Deno.test("an unknown opcode, a short UDP length and a PktLen mismatch are reported as errors", () => {
  const f = r.buildRoceFrame({
    srcIp: A,
    dstIp: B,
    bth: { opcode: r.OP.RC_SEND_ONLY, destQp: 1, psn: 1 },
  });
  const unknown = f.slice();
  unknown[42] = 0x40; // RD SEND FIRST: RD is not accepted
  assert.match(r.decodeFrame(unknown, 1).errors.join(), /opcode 0x40/);
  const shortUdp = f.slice();
  shortUdp[34 + 5] -= 4; // UDP length low byte
  assert.match(r.decodeFrame(shortUdp, 1).errors.join(), /UDP length/);
  const ib = r.buildIbFrame({
    lrh: { dlid: 1, slid: 2 },
    bth: { opcode: r.OP.RC_SEND_ONLY, destQp: 1, psn: 1 },
  });
  assert.match(r.decodeFrame(new Uint8Array([...ib, 0, 0, 0, 0]), 247).errors.join(), /PktLen/);
});

Deno.test("an IPv4 fragment carrying RoCEv2 is reported", () => {
  const f = r.buildRoceFrame({
    srcIp: A,
    dstIp: B,
    bth: { opcode: r.OP.RC_SEND_ONLY, destQp: 1, psn: 1 },
  });
  f[14 + 6] |= 0x20; // More Fragments
  r.refreshIpv4Checksum(f);
  assert.match(r.decodeFrame(f, 1).errors.join(), /fragment/);
});
