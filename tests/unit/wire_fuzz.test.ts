/**
 * The wire fuzz generator (harness/models/rdma/wire_fuzz.ts): one seed gives
 * one stream, every class and mutation comes out, and each frame, decoded
 * with the model's own parser, is what its class says it is.
 */
import assert from "node:assert/strict";
import { decodeFrame, LINKTYPE_ETHERNET, type Packet } from "../../harness/models/rdma/frame.ts";
import { parseIpv4 } from "../../harness/models/rdma/ip.ts";
import { psnDiff } from "../../harness/models/rdma/transport.ts";
import {
  CLASS_COUNTER,
  FATAL,
  type FuzzFrame,
  MUTATIONS,
  UNUSED_QPN,
  victimWindow,
  type WireClass,
  WireFuzz,
  type WireTarget,
} from "../../harness/models/rdma/wire_fuzz.ts";

const TARGET: WireTarget = {
  dstMac: 0x020000000001,
  dstIp: parseIpv4("10.77.0.1"),
  peerMac: 0x02000000ff99,
  peerIp: parseIpv4("10.77.0.99"),
  foreignIp: parseIpv4("10.77.0.98"),
  victims: Array.from({ length: 8 }, (_, i) => ({
    qpn: 0x20 + i,
    rqPsn: 0x100000 + 0x1000 * i,
    sqPsn: 0x700000 + 0x1000 * i,
  })),
  mr: { va: 0x7f0000001000n, rkey: 0x1234, len: 8192 },
  pmtu: 1024,
};

function stream(seed: number, n: number): { fuzz: WireFuzz; frames: FuzzFrame[] } {
  const fuzz = new WireFuzz(TARGET, seed, victimWindow(TARGET.mr.len / 2));
  const frames = Array.from({ length: n }, () => fuzz.next());
  frames.push(...fuzz.fatalFrames());
  return { fuzz, frames };
}

const decode = (f: Uint8Array): Packet => decodeFrame(f, LINKTYPE_ETHERNET);
const icrcOk = (p: Packet) => p.icrc !== undefined && p.icrc.wire === p.icrc.computed;
const victimQpns = new Set(TARGET.victims.map((v) => v.qpn));

Deno.test("the same seed gives the same frames, classes and window; another seed does not", () => {
  const a = stream(7, 3000), b = stream(7, 3000), c = stream(8, 3000);
  assert.deepEqual(a.frames, b.frames);
  assert.deepEqual(a.fuzz.window, b.fuzz.window);
  assert.deepEqual(a.fuzz.predicted(), b.fuzz.predicted());
  assert.notDeepEqual(a.frames.map((f) => f.frame), c.frames.map((f) => f.frame));
});

Deno.test("every mutation, every fault and every class is produced", () => {
  const { fuzz } = stream(1, 5000);
  for (const m of [...Object.keys(MUTATIONS), ...Object.keys(FATAL)]) {
    assert.ok((fuzz.mutations[m] ?? 0) > 0, `mutation ${m} never produced`);
  }
  for (const c of Object.keys(CLASS_COUNTER)) {
    assert.ok(fuzz.classes[c as WireClass] > 0, `class ${c} never produced`);
  }
});

Deno.test("predicted counts are the classes summed into their counters", () => {
  const { fuzz, frames } = stream(3, 2000);
  const want: Record<string, number> = {};
  for (const f of frames) {
    const c = CLASS_COUNTER[f.cls];
    if (c) want[c] = (want[c] ?? 0) + 1;
  }
  assert.deepEqual(fuzz.predicted(), want);
});

/** What each class claims, checked on the decoded frame. */
const CLAIMS: Record<WireClass, (p: Packet, f: FuzzFrame) => string | null> = {
  accepted: (p, f) =>
    p.errors.length || !icrcOk(p) || p.ipv4ChecksumOk !== true
      ? `malformed: ${p.errors}`
      : p.bth!.psn !== f.epsn
      ? `PSN ${p.bth!.psn} is not the expected ${f.epsn}`
      : p.ipv4!.src !== TARGET.peerIp
      ? "not from the peer"
      : null,
  not_roce: (p) => p.kind === "roce" ? "decodes as RoCE" : null,
  hdr_err: (p) =>
    p.kind === "roce" && p.errors.length === 0 && p.ipv4ChecksumOk && p.op && p.bth!.tver === 0 &&
      p.op.transport !== "UC" && (p.bth!.pkey & 0x7fff) === 0x7fff &&
      (p.op.hasPayload || p.payloadLength === 0)
      ? "no header fault"
      : null,
  pkey_err: (p) =>
    !icrcOk(p) || p.errors.length
      ? "not otherwise valid"
      : (p.bth!.pkey & 0x7fff) === 0x7fff
      ? `P_Key 0x${p.bth!.pkey.toString(16)} is ours`
      : null,
  icrc_err: (p) => p.errors.length ? `malformed: ${p.errors}` : icrcOk(p) ? "ICRC right" : null,
  qpn_err: (p) =>
    !icrcOk(p) || p.errors.length
      ? "not otherwise valid"
      : victimQpns.has(p.bth!.destQp) && p.op!.transport === "RC"
      ? "an RC frame to a victim"
      : !victimQpns.has(p.bth!.destQp) &&
          (p.bth!.destQp < UNUSED_QPN.lo || p.bth!.destQp > UNUSED_QPN.hi)
      ? "a QPN that might exist"
      : null,
  src_err: (p) =>
    !icrcOk(p) || p.errors.length
      ? "not otherwise valid"
      : p.ipv4!.src === TARGET.peerIp
      ? "from the peer"
      : null,
  psn_err: (p, f) => {
    const d = psnDiff(p.bth!.psn, f.epsn);
    return !icrcOk(p) || d <= 0 ? `PSN ${d} from the expected one` : null;
  },
  duplicate: (p, f) => {
    const d = psnDiff(p.bth!.psn, f.epsn);
    return !icrcOk(p) || d >= 0 || !p.op!.isRequest ? `PSN ${d} from the expected one` : null;
  },
  ghost_resp: (p) => {
    const d = psnDiff(p.bth!.psn, TARGET.victims[0].sqPsn);
    return !icrcOk(p) || p.op!.isRequest || d < 0
      ? `a response ${d} from the first send PSN`
      : null;
  },
  state_err: (p) => !icrcOk(p) || p.errors.length ? "not otherwise valid" : null,
  rem_access: (p) => {
    const r = p.reth!;
    const inside = r.va >= TARGET.mr.va &&
      r.va + BigInt(r.dmaLen) <= TARGET.mr.va + BigInt(TARGET.mr.len);
    return !icrcOk(p) || (inside && r.rkey === TARGET.mr.rkey) ? "a valid access" : null;
  },
  inv_req: (p) => !icrcOk(p) || p.errors.length ? "not otherwise valid" : null,
};

Deno.test("each frame, decoded by the model, is what its class claims", () => {
  const { frames } = stream(11, 20000);
  const bad: string[] = [];
  for (const f of frames) {
    const why = CLAIMS[f.cls](decode(f.frame), f);
    if (why && bad.length < 10) bad.push(`${f.what} (${f.cls}): ${why}`);
  }
  assert.deepEqual(bad, []);
});

Deno.test("mutations change what they name: TVer, opcode, pad, lengths, checksum, truncation", () => {
  const { frames } = stream(5, 20000);
  const one = (what: string) => frames.filter((f) => f.what === what).map((f) => decode(f.frame));
  for (const p of one("tver")) assert.notEqual(p.bth!.tver, 0);
  for (const p of one("opcode-unknown")) {
    assert.ok(!p.op || p.op.transport === "UC", `${p.bth!.opcode}`);
  }
  for (const p of one("ip-checksum")) assert.equal(p.ipv4ChecksumOk, false);
  for (const p of one("pad-too-long")) assert.notEqual(p.bth!.padCnt, 0);
  for (const f of frames.filter((f) => f.what === "ip-totlen")) {
    assert.notEqual(decode(f.frame).ipv4!.totalLength, f.frame.length - 14);
  }
  for (const f of frames.filter((f) => f.what === "udp-len")) {
    assert.notEqual(decode(f.frame).udp!.length, f.frame.length - 34);
  }
  for (const f of frames.filter((f) => f.what === "trunc-transport")) {
    assert.ok(f.frame.length < 42 + 12 + 28 + 4, `${f.frame.length} bytes`);
    assert.equal(decode(f.frame).ipv4!.totalLength, f.frame.length - 14);
  }
  for (const f of frames.filter((f) => f.what.startsWith("stale-icrc") || f.what === "icrc-flip")) {
    assert.ok(!icrcOk(decode(f.frame)));
  }
});

Deno.test("the model's window follows taken writes and atomics, never dropped ones", () => {
  const fuzz = new WireFuzz(TARGET, 9, victimWindow(TARGET.mr.len / 2));
  const before = fuzz.window.slice();
  let taken = 0;
  for (let i = 0; i < 2000; i++) {
    const f = fuzz.next();
    const after = fuzz.window.slice();
    const changed = after.some((b, j) => b !== before[j]);
    if (changed) {
      assert.ok(["valid-write", "valid-atomic", "udp-checksum"].includes(f.what), f.what);
      taken++;
    }
    before.set(after);
  }
  assert.ok(taken > 50);
});

/** The steps of a run (main stream then faults) and its frames. */
function steps(seed: number, n: number) {
  const fuzz = new WireFuzz(TARGET, seed, victimWindow(TARGET.mr.len / 2));
  const main = Array.from({ length: n }, () => fuzz.nextStep());
  return [...main, ...fuzz.fatalSteps()];
}

Deno.test("the steps, applied to a new generator, give the stream's frames exactly", () => {
  const { frames } = stream(21, 3000);
  const fresh = new WireFuzz(TARGET, 999, victimWindow(TARGET.mr.len / 2));
  assert.deepEqual(steps(21, 3000).flatMap((s) => fresh.apply(s)), frames);
});

Deno.test("any subset of the steps gives frames whose classes, PSNs and window agree", () => {
  const all = steps(23, 4000);
  for (const keep of [2, 3, 7, 50]) {
    const subset = all.filter((_, i) => i % keep === 0);
    const fuzz = new WireFuzz(TARGET, 1, victimWindow(TARGET.mr.len / 2));
    const frames = subset.flatMap((s) => fuzz.apply(s));
    assert.deepEqual([...new Set(frames.map((f) => f.step))], subset.map((s) => s.index));
    // the same claims as a whole stream: expected PSNs follow the taken requests of the subset
    const bad = frames.map((f) => CLAIMS[f.cls](decode(f.frame), f)).filter((w) => w);
    assert.deepEqual(bad, [], `every ${keep}th step`);
    let epsn = TARGET.victims[0].rqPsn;
    for (const f of frames.filter((f) => f.victim === 0 && f.cls === "accepted")) {
      assert.equal(decode(f.frame).bth!.psn, epsn);
      epsn = (epsn + 1) & 0xffffff;
    }
    const want = Object.fromEntries(Object.keys(fuzz.predicted()).map((c) => [c, 0]));
    for (const f of frames) {
      const c = CLASS_COUNTER[f.cls];
      if (c) want[c]++;
    }
    assert.deepEqual(fuzz.predicted(), want);
  }
});

Deno.test("a fault step alone gives its victim's frames; an unknown step is refused", () => {
  const fuzz = new WireFuzz(TARGET, 4, victimWindow(TARGET.mr.len / 2));
  const fatal = fuzz.fatalSteps().find((s) => s.what === "oversize")!;
  const frames = new WireFuzz(TARGET, 5, victimWindow(TARGET.mr.len / 2)).apply(fatal);
  assert.deepEqual(frames.map((f) => [f.what, f.cls]), [
    ["oversize", "inv_req"],
    ["write-after-error", "state_err"],
  ]);
  assert.throws(() => fuzz.apply({ index: 0, what: "no-such-thing", seed: 1 }), RangeError);
  const small = new WireFuzz(
    { ...TARGET, victims: TARGET.victims.slice(0, 2) },
    4,
    victimWindow(4096),
  );
  assert.equal(small.fatalSteps().length, 1);
  assert.throws(() => small.apply(fatal), /no QP to sacrifice/);
});
