/**
 * The conformance checker: a clean synthetic RC conversation passes, and each
 * deliberate corruption is caught by exactly the rule it breaks. Conversations
 * are built with RcConversation (standard-conforming by construction: see
 * harness/models/rdma/conversation.ts); corruptions edit one frame and, where
 * the corruption is not the CRC itself, recompute the CRCs so only the
 * intended rule can fire.
 */
import assert from "node:assert/strict";
import * as r from "../../harness/models/rdma/mod.ts";
import { prng, randInt } from "../../harness/prng.ts";

/** Rules of a result, deduplicated and sorted, for exact comparisons. */
function rules(res: r.CheckResult): string[] {
  return [...new Set(res.violations.map((v) => v.rule))].sort();
}

/** SEND segmented at the MTU, WRITE with immediate, multi-packet READ, atomics, ACKs, both directions. */
function cleanConversation(opts: r.RcConversationOptions = {}): r.RcConversation {
  return new r.RcConversation({ pmtu: 1024, ...opts })
    .send("a", 3000) // FIRST, MIDDLE, LAST + ACK
    .write("a", 2048, { imm: 0x1234 }) // FIRST, LAST_WITH_IMMEDIATE + ACK
    .read("a", 5000) // request + FIRST, MIDDLE x3, LAST
    .atomic("a", "cas")
    .atomic("a", "fadd")
    .send("b", 100) // the other direction on the same QP pair
    .read("b", 1024) // single-packet response
    .send("a", 10, { ack: false })
    .send("a", 20, { ack: false })
    .ack("b") // one coalesced ACK for both
    .send("a", 0); // zero-length SEND
}

/** Index of the n-th frame (0-based) whose opcode has the given name. */
function nth(frames: r.CaptureFrame[], name: string, n = 0): number {
  let seen = 0;
  for (let i = 0; i < frames.length; i++) {
    const p = r.decodeFrame(frames[i].data, frames[i].linkType, { crc: false });
    if (p.op?.name === name && seen++ === n) return i;
  }
  throw new Error(`no frame #${n} with opcode ${name}`);
}

Deno.test("a clean RoCEv2 RC conversation has zero violations", () => {
  const conv = cleanConversation();
  const res = r.checkCapture(conv.frames);
  assert.deepEqual(res.violations, []);
  assert.equal(res.framesChecked, conv.frames.length);
  assert.equal(res.rdmaFrames, conv.frames.length);
  assert.equal(res.flows, 2);
});

Deno.test("a clean conversation passes with the path MTU given and inferred, at every IB MTU", () => {
  for (const pmtu of [256, 512, 1024, 2048, 4096]) {
    const conv = cleanConversation({ pmtu });
    assert.deepEqual(
      r.checkCapture(conv.frames, { pathMtu: pmtu }).violations,
      [],
      `given ${pmtu}`,
    );
    assert.deepEqual(r.checkCapture(conv.frames).violations, [], `inferred ${pmtu}`);
  }
});

Deno.test("a clean native InfiniBand conversation (ICRC and VCRC) has zero violations", () => {
  const conv = cleanConversation({ linkType: r.LINKTYPE_INFINIBAND, pmtu: 2048 });
  assert.deepEqual(r.checkCapture(conv.frames).violations, []);
});

Deno.test("PSNs wrapping through 0xFFFFFF to 0 are in order", () => {
  const conv = cleanConversation({ a: { startPsn: 0xfffffd }, b: { startPsn: 0xffffff } });
  assert.deepEqual(r.checkCapture(conv.frames).violations, []);
});

Deno.test("a flipped ICRC bit is reported as an ICRC violation and nothing else", () => {
  const conv = cleanConversation();
  const i = nth(conv.frames, "RC_SEND_MIDDLE");
  conv.frames[i].data[conv.frames[i].data.length - 2] ^= 0x10;
  const res = r.checkCapture(conv.frames);
  assert.deepEqual(rules(res), ["icrc"]);
  assert.equal(res.violations[0].frameIndex, i);
  assert.match(res.violations[0].flow, /10\.0\.0\.1 → 10\.0\.0\.2 QP 0x000012/);
});

Deno.test("a flipped VCRC bit on InfiniBand is reported as a VCRC violation and nothing else", () => {
  const conv = cleanConversation({ linkType: r.LINKTYPE_INFINIBAND });
  const i = nth(conv.frames, "RC_ACKNOWLEDGE");
  conv.frames[i].data[conv.frames[i].data.length - 1] ^= 0x01;
  const res = r.checkCapture(conv.frames);
  assert.deepEqual(rules(res), ["vcrc"]);
  assert.equal(res.violations[0].frameIndex, i);
});

Deno.test("a skipped PSN between two messages is a PSN-order violation", () => {
  const conv = new r.RcConversation().send("a", 100);
  conv.nextPsns("a", 1); // PSN reserved and never sent
  conv.send("a", 100);
  const res = r.checkCapture(conv.frames);
  assert.deepEqual(rules(res), ["psn-order"]);
  assert.match(res.violations[0].message, /skips 1 PSN/);
  assert.equal(res.violations[0].frameIndex, 2);
});

Deno.test("a wrong pad count (payload + pad not a multiple of 4) is a pad-count violation", () => {
  const conv = new r.RcConversation();
  const psn = conv.nextPsns("a", 1);
  conv.emit("a", {
    bth: { opcode: r.OP.RC_SEND_ONLY, destQp: 0, psn },
    payload: new Uint8Array([1, 2, 3, 4, 5]),
    padBytes: 2, // 5 + 2 = 7: should have been 3
  });
  conv.ack("b");
  const res = r.checkCapture(conv.frames);
  assert.deepEqual(rules(res), ["pad-count"]);
  assert.equal(res.violations[0].frameIndex, 0);
});

Deno.test("a padded MIDDLE packet is a pad-count violation", () => {
  const conv = new r.RcConversation({ pmtu: 256 }).send("a", 600);
  const i = nth(conv.frames, "RC_SEND_MIDDLE");
  conv.frames[i].data[14 + 20 + 8 + 1] |= 0x10; // PadCnt 1 on a full-MTU MIDDLE
  r.refreshCrcs(conv.frames[i].data, 1);
  const res = r.checkCapture(conv.frames);
  // The pad also eats a payload byte, so the MIDDLE is one short of the MTU as well.
  assert.deepEqual(rules(res), ["pad-count", "payload-mtu"]);
  assert.ok(
    res.violations.some((v) => v.rule === "pad-count" && /must not be padded/.test(v.message)),
  );
});

Deno.test("a MIDDLE without a FIRST is an opcode-sequence violation", () => {
  const conv = new r.RcConversation({ pmtu: 256 }).send("a", 800);
  const i = nth(conv.frames, "RC_SEND_FIRST");
  conv.frames[i].data[14 + 20 + 8] = r.OP.RC_SEND_MIDDLE;
  r.refreshCrcs(conv.frames[i].data, 1);
  const res = r.checkCapture(conv.frames);
  assert.deepEqual(rules(res), ["opcode-sequence"]);
  assert.match(res.violations[0].message, /RC_SEND_MIDDLE without a FIRST/);
  assert.equal(res.violations[0].frameIndex, i);
});

Deno.test("a FIRST while a message is still open, and a message that never ends, are sequence violations", () => {
  const conv = new r.RcConversation({ pmtu: 256 }).send("a", 600);
  const i = nth(conv.frames, "RC_SEND_LAST");
  conv.frames[i].data[14 + 20 + 8] = r.OP.RC_SEND_FIRST;
  conv.frames[i].data[14 + 20 + 8 + 1] &= 0xcf; // a FIRST is never padded
  r.refreshCrcs(conv.frames[i].data, 1);
  const res = r.checkCapture(conv.frames);
  assert.deepEqual(rules(res), ["opcode-sequence", "payload-mtu"]); // the short FIRST is not a full MTU either
  assert.ok(res.violations.some((v) => /no LAST yet/.test(v.message)));
  assert.ok(res.violations.some((v) => /never ends/.test(v.message)));
});

Deno.test("a request the requester sent again but that is never acknowledged is an ACK-coverage violation", () => {
  const conv = new r.RcConversation().send("a", 100);
  const psn = conv.psnOf("a");
  conv.send("a", 2000, { ack: false }).rewind("a", psn).send("a", 2000, { ack: false });
  const res = r.checkCapture(conv.frames);
  assert.deepEqual(rules(res), ["ack-coverage"]);
  assert.match(res.violations[0].message, /2 request packet\(s\)/);
});

Deno.test("an ACK the responder sent while the last message was on its way does not make it owed", () => {
  // The switch sees the ACK after the tail went out; the responder sent it
  // before the tail reached it (ibv_srq_pingpong -q 4 at teardown).
  const conv = new r.RcConversation().send("a", 100);
  const acked = conv.psnOf("a") - 1;
  conv.send("a", 2000, { ack: false });
  conv.emit("b", {
    bth: { opcode: r.OP.RC_ACKNOWLEDGE, destQp: 0, psn: acked },
    aeth: { syndrome: 0x1f, msn: 1 },
  });
  assert.deepEqual(r.checkCapture(conv.frames).violations, []);
});

Deno.test("a last message in flight when both QPs went away (no resend, no later answer) is not judged", () => {
  const conv = new r.RcConversation().send("a", 100).send("a", 2000, { ack: false });
  assert.deepEqual(r.checkCapture(conv.frames).violations, []);
});

Deno.test("one coalesced ACK covers every earlier request", () => {
  const conv = new r.RcConversation();
  for (let k = 0; k < 10; k++) conv.send("a", 1500, { ack: false }).write("a", 100, { ack: false });
  conv.ack("b");
  assert.deepEqual(r.checkCapture(conv.frames).violations, []);
});

Deno.test("a bad IPv4 header checksum is an ipv4-checksum violation (the ICRC does not cover it)", () => {
  const conv = cleanConversation();
  const i = nth(conv.frames, "RC_RDMA_READ_REQUEST");
  conv.frames[i].data[14 + 10] ^= 0x01;
  const res = r.checkCapture(conv.frames);
  assert.deepEqual(rules(res), ["ipv4-checksum"]);
  assert.equal(res.violations[0].frameIndex, i);
});

Deno.test("a RoCEv2 packet sent to UDP port 4790 is a udp-port violation", () => {
  const conv = cleanConversation();
  const stray = r.buildRoceFrame({
    srcIp: r.parseIpv4("10.0.0.1"),
    dstIp: r.parseIpv4("10.0.0.2"),
    dstPort: 4790,
    bth: { opcode: r.OP.UD_SEND_ONLY, destQp: 0x99, psn: 0 },
    deth: { qkey: 0x1111, reserved8: 0, srcQp: 0x98 },
    payload: new Uint8Array(64),
  });
  const frames = [...conv.frames, { data: stray, linkType: 1 }];
  const res = r.checkCapture(frames);
  assert.deepEqual(rules(res), ["udp-port"]);
  assert.equal(res.violations[0].frameIndex, frames.length - 1);
  assert.equal(res.otherFrames, 1);
});

Deno.test("non-RDMA frames (ARP, TCP, plain UDP) are counted but are not violations", () => {
  const arp = new Uint8Array(60);
  arp.set([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x08, 0x06]);
  const dns = r.buildRoceFrame({
    srcIp: 1,
    dstIp: 2,
    dstPort: 53,
    bth: { opcode: r.OP.RC_SEND_ONLY, destQp: 1, psn: 1 },
  });
  dns[dns.length - 1] ^= 0xff; // not a valid ICRC: an ordinary UDP datagram
  const frames = [{ data: arp, linkType: 1 }, ...cleanConversation().frames, {
    data: dns,
    linkType: 1,
  }];
  const res = r.checkCapture(frames);
  assert.deepEqual(res.violations, []);
  assert.equal(res.otherFrames, 2);
  assert.equal(res.framesChecked, frames.length);
});

Deno.test("go-back-N retransmission after a PSN-sequence NAK is recognised, not a violation", () => {
  const conv = new r.RcConversation({ pmtu: 256 });
  const first = conv.psnOf("a");
  conv.send("a", 1024, { ack: false }); // PSNs first..first+3
  conv.nak("b", first + 2, r.NAK_CODES.PSN_SEQUENCE_ERROR); // responder lost first+2
  resendTail(conv, first, 4, 2, 1024); // from the NAKed PSN: MIDDLE and LAST
  conv.ack("b");
  assert.deepEqual(r.checkCapture(conv.frames).violations, []);
});

Deno.test("a requester that resumes past the NAKed PSN is a psn-order violation", () => {
  const conv = new r.RcConversation({ pmtu: 256 });
  const first = conv.psnOf("a");
  conv.send("a", 1024, { ack: false });
  conv.nak("b", first + 1, r.NAK_CODES.PSN_SEQUENCE_ERROR);
  // Go-back-N must restart at first+1; this requester restarts at first+2.
  resendTail(conv, first, 4, 2, 1024);
  conv.ack("b");
  const res = r.checkCapture(conv.frames);
  assert.deepEqual(rules(res), ["psn-order"]);
  assert.match(res.violations[0].message, /resumed at PSN/);
});

/** Emit a FETCH_ADD from "a" at `psn` (no answer). */
function fetchAdd(conv: r.RcConversation, psn: number): void {
  conv.emit("a", {
    bth: { opcode: r.OP.RC_FETCH_ADD, destQp: 0, psn, ackReq: 1 },
    atomicEth: { va: 0x1000n, rkey: 1, swapAdd: 1n, compare: 0n },
  });
}

/** Emit the ATOMIC_ACKNOWLEDGE from "b" for the atomic at `psn`. */
function atomicAck(conv: r.RcConversation, psn: number): void {
  conv.emit("b", {
    bth: { opcode: r.OP.RC_ATOMIC_ACKNOWLEDGE, destQp: 0, psn },
    aeth: { syndrome: 0x1f, msn: 1 },
    atomicAckEth: { origRemoteData: 0n },
  });
}

Deno.test("atomics sent before a sequence NAK arrived, then resent from the NAKed PSN, are answered once", () => {
  const conv = new r.RcConversation();
  const p = conv.nextPsns("a", 6);
  for (let i = 0; i < 4; i++) fetchAdd(conv, p + i);
  atomicAck(conv, p);
  conv.nak("b", p + 1, r.NAK_CODES.PSN_SEQUENCE_ERROR); // the responder lost p+1
  fetchAdd(conv, p + 4); // already on its way: the responder drops it
  fetchAdd(conv, p + 5);
  for (let i = 1; i < 6; i++) fetchAdd(conv, p + i); // go-back-N from the NAKed PSN
  for (let i = 1; i < 6; i++) atomicAck(conv, p + i);
  assert.deepEqual(r.checkCapture(conv.frames).violations, []);
});

Deno.test("an atomic acknowledgement for an atomic never sent is still flagged after a NAK and resend", () => {
  const conv = new r.RcConversation();
  const p = conv.nextPsns("a", 3);
  for (let i = 0; i < 3; i++) fetchAdd(conv, p + i);
  atomicAck(conv, p);
  conv.nak("b", p + 1, r.NAK_CODES.PSN_SEQUENCE_ERROR);
  for (let i = 1; i < 3; i++) fetchAdd(conv, p + i);
  for (let i = 1; i < 3; i++) atomicAck(conv, p + i);
  conv.send("a", 10); // PSN p+3: a SEND, acknowledged, not an atomic
  atomicAck(conv, p + 3);
  const res = r.checkCapture(conv.frames);
  assert.deepEqual(rules(res), ["atomic-response"]);
  assert.equal(res.violationCount, 1);
  assert.match(res.violations[0].message, new RegExp(`PSN ${p + 3} answers no atomic request`));
});

Deno.test("a requester that goes back before the NAKed PSN (it lost ACKs) resends duplicates, not a violation", () => {
  const conv = new r.RcConversation();
  const p = conv.nextPsns("a", 4);
  for (let i = 0; i < 4; i++) fetchAdd(conv, p + i);
  atomicAck(conv, p);
  atomicAck(conv, p + 1); // lost at the requester, after the capture point
  conv.nak("b", p + 2, r.NAK_CODES.PSN_SEQUENCE_ERROR);
  for (let i = 1; i < 4; i++) fetchAdd(conv, p + i); // retried from p+1
  for (let i = 1; i < 4; i++) atomicAck(conv, p + i); // p+1 replayed as a duplicate
  assert.deepEqual(r.checkCapture(conv.frames).violations, []);
});

/** A READ request from "a" at `psn` for `len` bytes at `va`. */
function readRequest(conv: r.RcConversation, psn: number, len: number, va: bigint): void {
  conv.emit("a", {
    bth: { opcode: r.OP.RC_RDMA_READ_REQUEST, destQp: 0, psn, ackReq: 1 },
    reth: { va, rkey: 0x1234, dmaLen: len },
  });
}

/**
 * Packets `from`..`to`-1 of the `n`-packet response (256-byte MTU) to a READ
 * whose first PSN is `start`, sent by "b".
 */
function readResponses(
  conv: r.RcConversation,
  start: number,
  n: number,
  from = 0,
  to = n,
): void {
  for (let i = from; i < to; i++) {
    const opcode = n === 1
      ? r.OP.RC_RDMA_READ_RESPONSE_ONLY
      : i === 0
      ? r.OP.RC_RDMA_READ_RESPONSE_FIRST
      : i === n - 1
      ? r.OP.RC_RDMA_READ_RESPONSE_LAST
      : r.OP.RC_RDMA_READ_RESPONSE_MIDDLE;
    conv.emit("b", {
      bth: { opcode, destQp: 0, psn: r.psnAdd(start, i) },
      aeth: opcode === r.OP.RC_RDMA_READ_RESPONSE_MIDDLE ? undefined : { syndrome: 0x1f, msn: 1 },
      payload: new Uint8Array(256),
    });
  }
}

/**
 * An 8-packet READ at PSN p whose response packet p+3 the requester lost: it
 * re-reads the tail (PSN p+3, 5 packets, VA + 768) after response packet p+4.
 */
function readThenReRead(conv: r.RcConversation): number {
  const p = conv.nextPsns("a", 8);
  readRequest(conv, p, 2048, 0x10000n);
  readResponses(conv, p, 8, 0, 5);
  readRequest(conv, r.psnAdd(p, 3), 1280, 0x10000n + 768n);
  return p;
}

Deno.test("a READ re-issued for its tail while the first response is still in flight: both responses pass", () => {
  const conv = new r.RcConversation({ pmtu: 256 });
  const p = readThenReRead(conv);
  readResponses(conv, p, 8, 5, 8); // the rest of the first response, stale to the requester
  readResponses(conv, r.psnAdd(p, 3), 5); // the re-read's own response: FIRST at p+3
  assert.deepEqual(r.checkCapture(conv.frames).violations, []);
});

Deno.test("a responder that abandons a READ response to answer the re-read of its tail is not a violation", () => {
  const conv = new r.RcConversation({ pmtu: 256 });
  const p = readThenReRead(conv);
  readResponses(conv, r.psnAdd(p, 3), 5);
  conv.send("a", 10); // the READ was answered: nothing is left outstanding
  assert.deepEqual(r.checkCapture(conv.frames).violations, []);
});

Deno.test("the response to a re-read may follow the responses to later READs", () => {
  const conv = new r.RcConversation({ pmtu: 256 });
  const p = readThenReRead(conv);
  const q = conv.nextPsns("a", 2);
  readRequest(conv, q, 512, 0x20000n);
  readResponses(conv, p, 8, 5, 8);
  readResponses(conv, q, 2); // the later READ, received before the re-read, answered first
  readResponses(conv, r.psnAdd(p, 3), 5);
  assert.deepEqual(r.checkCapture(conv.frames).violations, []);
});

Deno.test("a re-read answered without a READ response FIRST at the re-read PSN is flagged", () => {
  const conv = new r.RcConversation({ pmtu: 256 });
  const p = readThenReRead(conv);
  readResponses(conv, p, 8, 5, 8);
  readResponses(conv, p, 8, 3, 8); // MIDDLE..LAST at p+3: a re-read response must start anew
  const res = r.checkCapture(conv.frames);
  assert.deepEqual(rules(res), ["opcode-sequence"]);
  assert.match(
    res.violations[0].message,
    /RC_RDMA_READ_RESPONSE_MIDDLE .* without a READ response FIRST/,
  );
});

Deno.test("a READ response longer than its READ is flagged against that READ, not a later re-read", () => {
  const conv = new r.RcConversation({ pmtu: 256 });
  const p = readThenReRead(conv);
  readResponses(conv, p, 9, 5, 9); // one MIDDLE too many: 2304 bytes for a 2048-byte READ
  readResponses(conv, r.psnAdd(p, 3), 5);
  const res = r.checkCapture(conv.frames);
  assert.ok(rules(res).includes("read-response"));
  assert.ok(res.violations.some((v) => /carried 2304 bytes.*asked for 2048/.test(v.message)));
});

Deno.test("a READ response MIDDLE on a flow that never sent a READ is flagged", () => {
  const conv = new r.RcConversation({ pmtu: 256 }).send("a", 10);
  readResponses(conv, r.psnAdd(conv.psnOf("a"), -2), 3, 1, 2); // a MIDDLE at the SEND's PSN
  assert.deepEqual(rules(r.checkCapture(conv.frames)), ["opcode-sequence"]);
});

Deno.test("a resent message after a lost ACK (timeout) is recognised as a retransmission", () => {
  const conv = new r.RcConversation({ pmtu: 256 });
  const first = conv.psnOf("a");
  conv.send("a", 700, { ack: false });
  conv.rewind("a", first);
  conv.send("a", 700); // same PSNs again, then the ACK
  assert.deepEqual(r.checkCapture(conv.frames).violations, []);
});

Deno.test("RNR NAK then resend is not a violation; the resent request still needs its ACK", () => {
  const conv = new r.RcConversation();
  const psn = conv.psnOf("a");
  conv.send("a", 64, { ack: false }).nak("b", psn, 5, true).rewind("a", psn).send("a", 64, {
    ack: false,
  });
  assert.deepEqual(rules(r.checkCapture(conv.frames)), ["ack-coverage"]);
  conv.ack("b");
  assert.deepEqual(r.checkCapture(conv.frames).violations, []);
});

Deno.test("after a remote-access-error NAK nothing more is owed an ACK", () => {
  const conv = new r.RcConversation();
  const psn = conv.psnOf("a");
  conv.write("a", 64, { ack: false }).write("a", 64, { ack: false });
  conv.nak("b", psn, r.NAK_CODES.REMOTE_ACCESS_ERROR);
  assert.deepEqual(r.checkCapture(conv.frames).violations, []);
});

Deno.test("a READ response shorter than the READ's DMA length is a read-response violation", () => {
  const conv = new r.RcConversation({ pmtu: 1024 }).read("a", 3000);
  const i = nth(conv.frames, "RC_RDMA_READ_REQUEST");
  const f = conv.frames[i].data;
  f[f.length - 4 - 2] = 0x0c; // RETH DMA length 3000 (0x0bb8) -> 0x0cb8 = 3256
  r.refreshCrcs(f, 1);
  const res = r.checkCapture(conv.frames, { pathMtu: 1024 });
  assert.deepEqual(rules(res), ["read-response"]);
  assert.match(res.violations[0].message, /carried 3000 bytes.*asked for 3256/);
});

Deno.test("a READ request that is never answered is a read-response violation", () => {
  const conv = new r.RcConversation().read("a", 100);
  const frames = conv.frames.slice(0, 1);
  assert.deepEqual(rules(r.checkCapture(frames)), ["read-response"]);
});

Deno.test("a READ response with no READ request behind it is flagged", () => {
  const conv = new r.RcConversation().send("a", 10);
  const psn = conv.psnOf("a") - 1;
  conv.emit("b", {
    bth: { opcode: r.OP.RC_RDMA_READ_RESPONSE_ONLY, destQp: 0, psn },
    aeth: { syndrome: 0x1f, msn: 1 },
    payload: new Uint8Array(8),
  });
  assert.deepEqual(rules(r.checkCapture(conv.frames)), ["read-response"]);
});

Deno.test("an atomic answered by a plain ACKNOWLEDGE (no AtomicAckETH) is an atomic-response violation", () => {
  const conv = new r.RcConversation();
  const psn = conv.nextPsns("a", 1);
  conv.emit("a", {
    bth: { opcode: r.OP.RC_FETCH_ADD, destQp: 0, psn, ackReq: 1 },
    atomicEth: { va: 0x1000n, rkey: 1, swapAdd: 1n, compare: 0n },
  });
  conv.ack("b");
  const res = r.checkCapture(conv.frames);
  assert.deepEqual(rules(res), ["atomic-response"]);
  assert.match(res.violations[0].message, /without AtomicAckETH/);
});

Deno.test("an ACK for a PSN that was never sent is an ack-psn violation", () => {
  const conv = new r.RcConversation().send("a", 10);
  conv.nextPsns("a", 5); // reserved, never sent: the next ACK acknowledges them
  conv.ack("b");
  const res = r.checkCapture(conv.frames);
  assert.deepEqual(rules(res), ["ack-psn"]);
});

Deno.test("payload beyond the path MTU and a short FIRST are payload-mtu violations", () => {
  const big = new r.RcConversation({ pmtu: 2048 }).send("a", 2000);
  assert.deepEqual(rules(r.checkCapture(big.frames, { pathMtu: 1024 })), ["payload-mtu"]);
  const short = new r.RcConversation({ pmtu: 1000 }).send("a", 2500);
  assert.deepEqual(rules(r.checkCapture(short.frames)), ["payload-mtu"]);
});

Deno.test("an RDMA WRITE that carries more than its RETH DMA length is a write-length violation", () => {
  const conv = new r.RcConversation({ pmtu: 256 }).write("a", 600);
  const i = nth(conv.frames, "RC_RDMA_WRITE_FIRST");
  const f = conv.frames[i].data;
  f[14 + 20 + 8 + 12 + 15] = 0x00; // DMA length 600 (0x0258) -> 0x0200 = 512
  r.refreshCrcs(f, 1);
  const res = r.checkCapture(conv.frames);
  assert.deepEqual(rules(res), ["write-length"]);
});

Deno.test("a READ before the path MTU is known is accounted once the next PSN shows its size", () => {
  const conv = new r.RcConversation({ pmtu: 512 }).read("a", 1500).send("a", 20);
  assert.deepEqual(r.checkCapture(conv.frames).violations, []);
});

Deno.test("a QP number reused by a new connection (new random PSN, nothing outstanding) is not a skip", () => {
  const one = new r.RcConversation({ a: { startPsn: 10 } }).send("a", 100);
  const two = new r.RcConversation({ a: { startPsn: 900_000 }, b: { startPsn: 77 } }).send("a", 100)
    .read("a", 64);
  assert.deepEqual(r.checkCapture([...one.frames, ...two.frames]).violations, []);
});

Deno.test("the same frame recorded on two interfaces (ingress and egress) is checked once", () => {
  const conv = cleanConversation();
  const frames: r.CaptureFrame[] = [];
  for (const f of conv.frames) {
    frames.push(f);
    frames.push({ ...f, interfaceId: f.interfaceId === 0 ? 1 : 0 });
  }
  const res = r.checkCapture(frames);
  assert.deepEqual(res.violations, []);
  assert.equal(res.duplicateCopies, conv.frames.length);
  assert.equal(res.framesChecked, 2 * conv.frames.length);
});

Deno.test("a MAD to QP1 with a Q_Key other than 0x80010000 is a management violation", () => {
  const mad = r.buildRoceFrame({
    srcIp: 1,
    dstIp: 2,
    bth: { opcode: r.OP.UD_SEND_ONLY, destQp: 1, psn: 0 },
    deth: { qkey: 0x12345678, reserved8: 0, srcQp: 1 },
    payload: new Uint8Array(256),
  });
  const res = r.checkCapture([{ data: mad, linkType: 1 }]);
  assert.deepEqual(rules(res), ["management"]);
  assert.match(res.violations[0].message, /Q_Key/);
});

Deno.test("QP0 traffic off VL15 on InfiniBand is a management violation", () => {
  const smp = (vl: number) =>
    r.buildIbFrame({
      lrh: { dlid: 1, slid: 0xffff, vl },
      bth: { opcode: r.OP.UD_SEND_ONLY, destQp: 0, psn: 0 },
      deth: { qkey: 0, reserved8: 0, srcQp: 0 },
      payload: new Uint8Array(256),
    });
  assert.deepEqual(r.checkCapture([{ data: smp(15), linkType: 247 }]).violations, []);
  assert.deepEqual(rules(r.checkCapture([{ data: smp(0), linkType: 247 }])), ["management"]);
});

Deno.test("maxViolations caps the list while violationCount and byRule count everything", () => {
  const conv = cleanConversation();
  for (const f of conv.frames) f.data[f.data.length - 1] ^= 1;
  const res = r.checkCapture(conv.frames, { maxViolations: 3 });
  assert.equal(res.violations.length, 3);
  assert.equal(res.violationCount, conv.frames.length);
  assert.deepEqual(res.byRule, { icrc: conv.frames.length });
});

Deno.test("the streaming checker gives the same result as checkCapture", () => {
  const conv = cleanConversation();
  conv.frames[3].data[conv.frames[3].data.length - 1] ^= 1;
  const c = new r.CaptureChecker();
  for (const f of conv.frames) c.push(f);
  assert.deepEqual(c.finish(), r.checkCapture(conv.frames));
  assert.throws(() => c.push(conv.frames[0]), /after finish/);
});

Deno.test("an invalid pathMtu option is refused with the valid choices", () => {
  assert.throws(() => r.checkCapture([], { pathMtu: 1500 }), /256, 512, 1024, 2048, 4096/);
});

/**
 * Resend packets k..n-1 of an n-packet SEND of `len` bytes that started at PSN
 * `first`, as a go-back-N requester does after a NAK at PSN first+k.
 */
function resendTail(
  conv: r.RcConversation,
  first: number,
  n: number,
  k: number,
  len: number,
): void {
  conv.rewind("a", first + k);
  for (let i = k; i < n; i++) {
    const chunk = Math.min(conv.pmtu, len - i * conv.pmtu);
    const opcode = i === n - 1
      ? r.OP.RC_SEND_LAST
      : i === 0
      ? r.OP.RC_SEND_FIRST
      : r.OP.RC_SEND_MIDDLE;
    conv.emit("a", {
      bth: { opcode, destQp: 0, psn: r.psnAdd(first, i) },
      payload: new Uint8Array(chunk),
    });
  }
  conv.rewind("a", r.psnAdd(first, n));
}

Deno.test("seeded lossy conversations (NAK and resend, timeouts, RNR, re-read) are clean", () => {
  for (const seed of [1, 2, 3, 4, 5]) {
    const rng = prng(seed);
    const conv = new r.RcConversation({
      pmtu: 256,
      seed,
      a: { startPsn: randInt(rng, 0xfff000, 0xffffff) }, // wrap inside the run
      b: { startPsn: randInt(rng, 0, 0xffffff) },
    });
    for (let step = 0; step < 150; step++) {
      const first = conv.psnOf("a");
      switch (randInt(rng, 0, 7)) {
        case 0: {
          const len = randInt(rng, 3 * 256 + 1, 8 * 256);
          const n = Math.ceil(len / 256);
          conv.send("a", len, { ack: false });
          const k = randInt(rng, 1, n - 1);
          conv.nak("b", r.psnAdd(first, k), r.NAK_CODES.PSN_SEQUENCE_ERROR);
          resendTail(conv, first, n, k, len);
          conv.ack("b");
          break;
        }
        case 1: {
          const len = randInt(rng, 1, 2000);
          conv.send("a", len, { ack: false }).rewind("a", first).send("a", len);
          break;
        }
        case 2: {
          const len = randInt(rng, 1, 300);
          conv.send("a", len, { ack: false }).nak("b", first, 3, true).rewind("a", first).send(
            "a",
            len,
          );
          break;
        }
        case 3: {
          const len = randInt(rng, 1, 3000);
          conv.read("a", len).rewind("a", first).read("a", len); // response lost after the switch
          break;
        }
        case 4:
          conv.atomic("a", "fadd");
          break;
        case 5:
          conv.write("a", randInt(rng, 0, 3000), randInt(rng, 0, 1) ? { imm: 1 } : {});
          break;
        default:
          conv.send("b", randInt(rng, 0, 1000)).read("b", randInt(rng, 1, 700));
      }
    }
    const res = r.checkCapture(conv.frames);
    assert.deepEqual(res.violations, [], `seed ${seed}`);
  }
});

/**
 * The pattern of the lossy roce-e2e capture: the responder lost the READ at
 * p+2, NAKed p+2 on seeing p+4, but a timer retransmission of both READs was
 * already on the wire (captured before the NAK), so it answers them after its
 * NAK; the requester, on the NAK, resends from p+2 and gets each answer twice.
 */
function readsAnsweredAfterTheirNak(conv: r.RcConversation): number {
  const p = conv.nextPsns("a", 6);
  readRequest(conv, p, 512, 0x1000n);
  readRequest(conv, r.psnAdd(p, 2), 512, 0x2000n); // lost at the responder
  readRequest(conv, r.psnAdd(p, 4), 512, 0x3000n);
  readResponses(conv, p, 2);
  readRequest(conv, r.psnAdd(p, 2), 512, 0x2000n); // timer: resent from the oldest unanswered
  readRequest(conv, r.psnAdd(p, 4), 512, 0x3000n);
  conv.nak("b", r.psnAdd(p, 2), r.NAK_CODES.PSN_SEQUENCE_ERROR); // for the first p+4
  readResponses(conv, r.psnAdd(p, 2), 2); // the resent p+2 arrives: answered
  readRequest(conv, r.psnAdd(p, 2), 512, 0x2000n); // go-back-N on the NAK
  return p;
}

Deno.test("requests captured before a NAK at their PSN may be answered after it, then again as duplicates", () => {
  const conv = new r.RcConversation({ pmtu: 256 });
  const p = readsAnsweredAfterTheirNak(conv);
  readResponses(conv, r.psnAdd(p, 4), 2);
  readResponses(conv, r.psnAdd(p, 2), 2); // the duplicate p+2
  readRequest(conv, r.psnAdd(p, 4), 512, 0x3000n);
  readResponses(conv, r.psnAdd(p, 4), 2); // the duplicate p+4
  assert.deepEqual(r.checkCapture(conv.frames).violations, []);
});

Deno.test("after answering past its NAK the responder still may not pass over a READ", () => {
  const conv = new r.RcConversation({ pmtu: 256 });
  const p = readsAnsweredAfterTheirNak(conv);
  readRequest(conv, r.psnAdd(p, 4), 512, 0x3000n); // go-back-N goes on
  conv.send("a", 10); // PSN p+6, then an ACK that covers the READ at p+4 unanswered
  const res = r.checkCapture(conv.frames);
  assert.deepEqual(rules(res), ["read-response"]);
  assert.match(
    res.violations[0].message,
    new RegExp(`passes over the READ at PSN ${r.psnAdd(p, 4)}`),
  );
});

Deno.test("a response beyond every request captured before the NAK is still flagged", () => {
  const conv = new r.RcConversation({ pmtu: 256 });
  const p = readsAnsweredAfterTheirNak(conv);
  readResponses(conv, r.psnAdd(p, 4), 2);
  readResponses(conv, r.psnAdd(p, 6), 2); // nothing was ever sent at p+6
  const res = r.checkCapture(conv.frames);
  assert.ok(rules(res).includes("ack-psn"), JSON.stringify(res.violations));
});

Deno.test("in-flight requests the responder discarded after its NAK owe nothing unless resent", () => {
  const conv = new r.RcConversation();
  const p = conv.nextPsns("a", 4);
  for (let i = 0; i < 4; i++) fetchAdd(conv, p + i);
  atomicAck(conv, p);
  conv.nak("b", p + 1, r.NAK_CODES.PSN_SEQUENCE_ERROR);
  fetchAdd(conv, p + 1); // resent; p+2 and p+3 are not (the QP was then destroyed)
  atomicAck(conv, p + 1);
  assert.deepEqual(r.checkCapture(conv.frames).violations, []);
  fetchAdd(conv, p + 2); // resent after all: now it is owed an answer
  const res = r.checkCapture(conv.frames);
  assert.deepEqual(rules(res), ["atomic-response"]);
  assert.match(res.violations[0].message, new RegExp(`atomic at PSN ${p + 2} is never answered`));
});

/**
 * SEND_ONLY requests (8 bytes) from a to QP 0 of b, packets of a SEND
 * message (`op`, a path MTU of 256 bytes each), and b's ACKs, at the PSNs given.
 */
function sendAndAck(conv: r.RcConversation) {
  return {
    send: (psn: number) =>
      conv.emit("a", {
        bth: { opcode: r.OP.RC_SEND_ONLY, destQp: 0, psn },
        payload: new Uint8Array(8),
      }),
    sendPacket: (op: number, psn: number) =>
      conv.emit("a", { bth: { opcode: op, destQp: 0, psn }, payload: new Uint8Array(256) }),
    ack: (psn: number) =>
      conv.emit("b", {
        bth: { opcode: r.OP.RC_ACKNOWLEDGE, destQp: 0, psn },
        aeth: { syndrome: 0x1f, msn: 1 },
      }),
  };
}

Deno.test("once the responder answers past its NAKed PSN, the requester need not go back to it", () => {
  const conv = new r.RcConversation({ pmtu: 256 });
  const p = conv.nextPsns("a", 4);
  const { send, ack } = sendAndAck(conv);
  send(p);
  send(p + 1); // lost at the responder
  send(p + 2);
  send(p + 1); // timer: resent from the oldest unacknowledged
  send(p + 2);
  conv.nak("b", p + 1, r.NAK_CODES.PSN_SEQUENCE_ERROR); // for the first p+2
  ack(p + 2); // the resent p+1 and p+2 arrived; the requester lost the NAK, not this
  send(p + 3);
  send(p + 3); // its ACK lost: resent after a timeout, not from p+1
  ack(p + 3);
  assert.deepEqual(r.checkCapture(conv.frames).violations, []);
});

Deno.test("an ACK covering the rest of a go-back lets the requester go on past it", () => {
  const conv = new r.RcConversation({ pmtu: 256 });
  const p = conv.nextPsns("a", 8);
  const { send, ack } = sendAndAck(conv);
  for (let i = 0; i < 6; i++) send(p + i);
  send(p + 1); // timer: going back from the oldest unacknowledged
  send(p + 2);
  ack(p + 5); // the first sends all arrived; their ACK was late
  send(p + 6); // on after the acknowledged PSN, not p + 3
  ack(p + 6);
  assert.deepEqual(r.checkCapture(conv.frames).violations, []);
});

Deno.test("a jump past unacknowledged requests, or past anything sent, is still a skip", () => {
  const conv = new r.RcConversation({ pmtu: 256 });
  const p = conv.nextPsns("a", 12);
  const { send, ack } = sendAndAck(conv);
  for (let i = 0; i < 6; i++) send(p + i);
  send(p + 1);
  ack(p + 3); // only up to p + 3
  send(p + 6); // p + 4 and p + 5 are owed: skipped
  send(p + 9); // never sent p + 7 and p + 8
  ack(p + 9);
  const v = r.checkCapture(conv.frames).violations.filter((x) => x.rule === "psn-order");
  assert.equal(v.length, 2, JSON.stringify(v));
});

Deno.test("a resend cut short mid-message by an ACK may start the next message", () => {
  const conv = new r.RcConversation({ pmtu: 256 });
  const p = conv.nextPsns("a", 4);
  const { sendPacket: send, ack } = sendAndAck(conv);
  send(r.OP.RC_SEND_FIRST, p);
  send(r.OP.RC_SEND_MIDDLE, p + 1);
  send(r.OP.RC_SEND_LAST, p + 2);
  send(r.OP.RC_SEND_MIDDLE, p + 1); // timer: going back, from the middle of the message
  ack(p + 2); // the whole message had arrived
  send(r.OP.RC_SEND_FIRST, p + 3); // the next message, the resend abandoned
  send(r.OP.RC_SEND_LAST, p + 4);
  ack(p + 4);
  assert.deepEqual(r.checkCapture(conv.frames).violations, []);
});

Deno.test("a resend an ACK cut short at the end of the capture is not a message without LAST", () => {
  const conv = new r.RcConversation({ pmtu: 256 });
  const p = conv.nextPsns("a", 3);
  const { sendPacket: send, ack } = sendAndAck(conv);
  send(r.OP.RC_SEND_FIRST, p);
  send(r.OP.RC_SEND_MIDDLE, p + 1);
  send(r.OP.RC_SEND_LAST, p + 2);
  send(r.OP.RC_SEND_FIRST, p); // timer: going back; the ACK below stops it
  ack(p + 2);
  assert.deepEqual(r.checkCapture(conv.frames).violations, []);
});

Deno.test("a first sending that never ends is still flagged at the end of the capture", () => {
  const conv = new r.RcConversation({ pmtu: 256 });
  const p = conv.nextPsns("a", 2);
  conv.emit("a", {
    bth: { opcode: r.OP.RC_SEND_FIRST, destQp: 0, psn: p },
    payload: new Uint8Array(256),
  });
  sendAndAck(conv).ack(p);
  const v = r.checkCapture(conv.frames).violations.map((x) => x.rule);
  assert.ok(v.includes("opcode-sequence"), JSON.stringify(v));
});
