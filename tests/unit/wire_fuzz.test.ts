/**
 * The wire fuzz generator (harness/models/rdma/wire_fuzz.ts): one seed gives
 * one stream, every class and mutation comes out, and each frame, decoded
 * with the model's own parser, is what its class says it is — on RoCEv2 and
 * on native InfiniBand, with and without the UD mutations.
 */
import assert from "node:assert/strict";
import {
  decodeFrame,
  LINKTYPE_ETHERNET,
  LINKTYPE_INFINIBAND,
  type Packet,
} from "../../harness/models/rdma/frame.ts";
import { ibVcrc, readVcrc } from "../../harness/models/rdma/icrc.ts";
import { parseIpv4 } from "../../harness/models/rdma/ip.ts";
import { psnDiff } from "../../harness/models/rdma/transport.ts";
import {
  CLASS_COUNTER,
  FATAL,
  type FuzzFrame,
  IB_MUTATIONS,
  IB_UD_MUTATIONS,
  MCAST_QPN,
  MUTATIONS,
  mutationTable,
  UD_MUTATIONS,
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

/** wire_victim's UD QP. */
const UD = { qpn: 0x31, qkey: 0x11110000 };
/** RoCEv2 with the UD mutations. */
const ROCE_UD: WireTarget = { ...TARGET, ud: UD };
/** Native IB, without and with the UD mutations. */
const IB_ONLY: WireTarget = { ...TARGET, ib: { dstLid: 0x11, peerLid: 0x22, foreignLid: 0x33 } };
const IB: WireTarget = { ...IB_ONLY, ud: UD };
const TARGETS: [string, WireTarget][] = [
  ["RoCEv2", TARGET],
  ["RoCEv2 + UD", ROCE_UD],
  ["IB", IB_ONLY],
  ["IB + UD", IB],
];

function stream(
  seed: number,
  n: number,
  target = TARGET,
): { fuzz: WireFuzz; frames: FuzzFrame[] } {
  const fuzz = new WireFuzz(target, seed, victimWindow(target.mr.len / 2));
  const frames = Array.from({ length: n }, () => fuzz.next());
  frames.push(...fuzz.fatalFrames());
  return { fuzz, frames };
}

const decode = (f: Uint8Array): Packet => decodeFrame(f, LINKTYPE_ETHERNET);
const decodeIb = (f: Uint8Array): Packet => decodeFrame(f, LINKTYPE_INFINIBAND);
const decodeFor = (t: WireTarget) => t.ib ? decodeIb : decode;
const icrcOk = (p: Packet) => p.icrc !== undefined && p.icrc.wire === p.icrc.computed;
const vcrcOk = (p: Packet) => p.vcrc !== undefined && p.vcrc.wire === p.vcrc.computed;
/** The VCRC in the last 2 bytes is right (also where the decoder stops before its own check). */
const vcrcAt = (b: Uint8Array) =>
  b.length >= 2 && readVcrc(b, b.length - 2) === ibVcrc(b, b.length - 2);
const victimQpns = new Set(TARGET.victims.map((v) => v.qpn));

Deno.test("the same seed gives the same frames, classes and window; another seed does not", () => {
  const a = stream(7, 3000), b = stream(7, 3000), c = stream(8, 3000);
  assert.deepEqual(a.frames, b.frames);
  assert.deepEqual(a.fuzz.window, b.fuzz.window);
  assert.deepEqual(a.fuzz.predicted(), b.fuzz.predicted());
  assert.notDeepEqual(a.frames.map((f) => f.frame), c.frames.map((f) => f.frame));
});

Deno.test("IB: the same seed gives the same frames, classes and window; another seed does not", () => {
  const a = stream(7, 3000, IB), b = stream(7, 3000, IB), c = stream(8, 3000, IB);
  assert.deepEqual(a.frames, b.frames);
  assert.deepEqual(a.fuzz.window, b.fuzz.window);
  assert.deepEqual(a.fuzz.predicted(), b.fuzz.predicted());
  assert.notDeepEqual(a.frames.map((f) => f.frame), c.frames.map((f) => f.frame));
});

Deno.test("each mode draws from its own tables", () => {
  const keys = (t: WireTarget) => Object.keys(mutationTable(t)).sort();
  assert.deepEqual(keys(TARGET), Object.keys(MUTATIONS).sort());
  assert.deepEqual(keys(ROCE_UD), [...Object.keys(MUTATIONS), ...Object.keys(UD_MUTATIONS)].sort());
  assert.deepEqual(keys(IB_ONLY), Object.keys(IB_MUTATIONS).sort());
  assert.deepEqual(
    keys(IB),
    [...Object.keys(IB_MUTATIONS), ...Object.keys(UD_MUTATIONS), ...Object.keys(IB_UD_MUTATIONS)]
      .sort(),
  );
});

for (const [mode, target] of TARGETS) {
  Deno.test(`${mode}: every mutation, every fault and every class of the mode is produced`, () => {
    const { fuzz } = stream(1, 8000, target);
    const table = mutationTable(target);
    for (const m of [...Object.keys(table), ...Object.keys(FATAL)]) {
      assert.ok((fuzz.mutations[m] ?? 0) > 0, `mutation ${m} never produced`);
    }
    const classes = new Set<string>([
      ...Object.values(table),
      ...Object.values(FATAL),
      "accepted",
      "state_err",
    ]);
    for (const c of Object.keys(CLASS_COUNTER)) {
      const n = fuzz.classes[c as WireClass];
      if (classes.has(c)) assert.ok(n > 0, `class ${c} never produced`);
      else assert.equal(n, 0, `class ${c} produced`);
    }
  });

  Deno.test(`${mode}: predicted counts are the classes summed into their counters`, () => {
    const { fuzz, frames } = stream(3, 2000, target);
    const want: Record<string, number> = {};
    for (const c of Object.values(CLASS_COUNTER)) if (c) want[c] = 0;
    for (const f of frames) {
      const c = CLASS_COUNTER[f.cls];
      if (c) want[c]++;
    }
    assert.deepEqual(fuzz.predicted(), want);
  });
}

/** One class's claim about a decoded frame: null when it holds, else why not. */
type Claim = (p: Packet, f: FuzzFrame) => string | null;

/** Native IB: a rule 1 fault (length, LVer, LNH, PktLen), found before the VCRC. */
function ibLinkFault(p: Packet, f: FuzzFrame): boolean {
  return f.frame.length < 26 || !p.lrh || p.lrh.lver !== 0 ||
    (p.lrh.lnh !== 2 && p.lrh.lnh !== 3) || f.frame.length !== p.lrh.pktLen * 4 + 2;
}

/** Native IB: a rule 1b fault of the link or network header (SLID, GRH). */
function ibRouteFault(p: Packet): boolean {
  const l = p.lrh!;
  return l.slid === 0 || (l.slid >= 0xc000 && l.slid <= 0xfffe) ||
    (p.grh !== undefined && (p.grh.ipVer !== 6 || p.grh.nxtHdr !== 0x1b || l.vl === 15));
}

/** A multicast GID (ff00::/8) or IPv4 address (224.0.0.0/4). */
const mcastGid = (g: Uint8Array) => g[0] === 0xff;
const mcastIp = (ip: number) => ip >>> 28 === 0xe;

/** What each class claims of a frame of `t`, checked on the decoded frame. */
function claimsFor(t: WireTarget): Record<WireClass, Claim> {
  const ib = t.ib;
  /** RoCEv2: IPv4 checksum right; IB: the link checks of rules 1, 1a and 1b pass. */
  const linkOk = (p: Packet, f: FuzzFrame) =>
    ib ? !ibLinkFault(p, f) && vcrcAt(f.frame) && !ibRouteFault(p) : p.ipv4ChecksumOk === true;
  const wellFormed = (p: Packet, f: FuzzFrame) =>
    p.errors.length === 0 && icrcOk(p) && linkOk(p, f) && p.op !== undefined &&
    p.bth!.tver === 0 && (p.bth!.pkey & 0x7fff) === 0x7fff;
  /** Unicast to this port (IB: our DLID, VL 0, no GRH). */
  const toUs = (p: Packet) =>
    ib ? p.lrh!.dlid === ib.dstLid && p.lrh!.vl === 0 && !p.grh : p.ipv4!.dst === t.dstIp;
  const fromPeer = (p: Packet) => ib ? p.lrh!.slid === ib.peerLid : p.ipv4!.src === t.peerIp;
  const valid = (p: Packet, f: FuzzFrame) =>
    !wellFormed(p, f)
      ? `not otherwise valid: ${p.errors} ICRC ${icrcOk(p)} link ${linkOk(p, f)}`
      : !toUs(p)
      ? "not addressed to this port"
      : null;
  const ud = (p: Packet, f: FuzzFrame, qkeyRight: boolean) =>
    valid(p, f) ??
      (p.op!.transport !== "UD" || p.bth!.destQp !== t.ud?.qpn
        ? "not a UD frame to the UD QP"
        : (p.deth!.qkey === t.ud.qkey) !== qkeyRight
        ? `Q_Key 0x${p.deth!.qkey.toString(16)}`
        : p.deth!.srcQp === 0
        ? "from source QP 0"
        : null);
  return {
    accepted: (p, f) =>
      valid(p, f) ??
        (p.bth!.psn !== f.epsn
          ? `PSN ${p.bth!.psn} is not the expected ${f.epsn}`
          : !fromPeer(p)
          ? "not from the peer"
          : p.op!.transport !== "RC" || !victimQpns.has(p.bth!.destQp)
          ? "not an RC frame to a victim"
          : null),
    not_roce: (p) => ib ? "no such class on IB" : p.kind === "roce" ? "decodes as RoCE" : null,
    hdr_err: (p, f) => {
      if (ib) {
        if (ibLinkFault(p, f)) return null;
        if (!vcrcAt(f.frame)) return "VCRC wrong: a rule 1a frame";
        if (ibRouteFault(p)) return null;
        return p.errors.length || !p.op || (p.op.transport !== "RC" && p.op.transport !== "UD") ||
            p.bth!.tver !== 0 || (!p.op.hasPayload && p.payloadLength > 0)
          ? null
          : "no header fault";
      }
      return p.kind === "roce" && p.errors.length === 0 && p.ipv4ChecksumOk && p.op &&
          p.bth!.tver === 0 && p.op.transport !== "UC" && (p.bth!.pkey & 0x7fff) === 0x7fff &&
          (p.op.hasPayload || p.payloadLength === 0)
        ? "no header fault"
        : null;
    },
    pkey_err: (p, f) =>
      p.errors.length || !icrcOk(p) || !linkOk(p, f)
        ? "not otherwise valid"
        : (p.bth!.pkey & 0x7fff) === 0x7fff
        ? `P_Key 0x${p.bth!.pkey.toString(16)} is ours`
        : null,
    icrc_err: (p, f) =>
      p.errors.length
        ? `malformed: ${p.errors}`
        : !linkOk(p, f)
        ? "link headers or VCRC wrong"
        : icrcOk(p)
        ? "ICRC right"
        : null,
    qpn_err: (p, f) =>
      valid(p, f) ??
        (victimQpns.has(p.bth!.destQp) && p.op!.transport === "RC"
          ? "an RC frame to a victim"
          : !victimQpns.has(p.bth!.destQp) &&
              (p.bth!.destQp < UNUSED_QPN.lo || p.bth!.destQp > UNUSED_QPN.hi)
          ? "a QPN that might exist"
          : null),
    src_err: (p, f) =>
      valid(p, f) ??
        (p.op!.transport === "UD"
          ? (ib && p.bth!.destQp === t.ud?.qpn && p.deth!.srcQp === 0 && fromPeer(p)
            ? null
            : "a UD frame, not from QP 0 to the UD QP")
          : fromPeer(p)
          ? "from the peer"
          : null),
    psn_err: (p, f) => {
      const d = psnDiff(p.bth!.psn, f.epsn);
      return valid(p, f) ?? (d <= 0 ? `PSN ${d} from the expected one` : null);
    },
    duplicate: (p, f) => {
      const d = psnDiff(p.bth!.psn, f.epsn);
      return valid(p, f) ??
        (d >= 0 || !p.op!.isRequest ? `PSN ${d} from the expected one` : null);
    },
    ghost_resp: (p, f) => {
      const d = psnDiff(p.bth!.psn, t.victims[0].sqPsn);
      return valid(p, f) ??
        (p.op!.isRequest || d < 0 ? `a response ${d} from the first send PSN` : null);
    },
    state_err: (p, f) => valid(p, f),
    rem_access: (p, f) => {
      const r = p.reth!;
      const inside = r.va >= t.mr.va && r.va + BigInt(r.dmaLen) <= t.mr.va + BigInt(t.mr.len);
      return valid(p, f) ?? (inside && r.rkey === t.mr.rkey ? "a valid access" : null);
    },
    inv_req: (p, f) => valid(p, f),
    vcrc_err: (p, f) =>
      !ib
        ? "no such class on RoCEv2"
        : p.errors.length || ibLinkFault(p, f)
        ? "malformed"
        : !icrcOk(p)
        ? "ICRC wrong too"
        : vcrcAt(f.frame)
        ? "VCRC right"
        : null,
    addr_err: (p, f) => {
      if (!wellFormed(p, f)) return `not otherwise valid: ${p.errors}`;
      const qp = p.bth!.destQp;
      const udSend = p.op!.transport === "UD" && p.op!.operation === "SEND";
      if (ib) {
        const { dlid, vl } = p.lrh!;
        const mc = dlid >= 0xc000 && dlid <= 0xfffe;
        const rule3a = (vl === 15) !== (qp === 0) || (mc && (!p.grh || qp !== MCAST_QPN)) ||
          (!mc && qp === MCAST_QPN) || (dlid === 0xffff && qp !== 0) ||
          (dlid < 0xc000 && dlid !== ib.dstLid);
        const rule3c = qp === MCAST_QPN && (!udSend || !p.grh || !mcastGid(p.grh.dgid));
        return rule3a || rule3c ? null : "addressed to this port";
      }
      return qp === MCAST_QPN && (!udSend || !mcastIp(p.ipv4!.dst)) ? null : "a good address";
    },
    mcast_no_member: (p, f) => {
      if (!wellFormed(p, f)) return `not otherwise valid: ${p.errors}`;
      if (p.bth!.destQp !== MCAST_QPN || p.op!.name !== "UD_SEND_ONLY") {
        return "not a UD SEND to the multicast QPN";
      }
      if (ib) {
        const { dlid, vl } = p.lrh!;
        return dlid >= 0xc000 && dlid <= 0xfffe && vl === 0 && p.grh &&
            [0xff, 0x12, 0x40, 0x1b, 0xff, 0xff].every((b, i) => p.grh!.dgid[i] === b)
          ? null
          : "not to a multicast DLID and GID";
      }
      const ip = p.ipv4!.dst;
      return ip >>> 24 === 239 && p.eth!.dst === 0x01005e000000 + (ip & 0x7fffff)
        ? null
        : "not to 239.x.y.z and its MAC";
    },
    no_recv: (p, f) => ud(p, f, true),
    qkey_err: (p, f) => ud(p, f, false),
  };
}

for (const [mode, target] of TARGETS) {
  Deno.test(`${mode}: each frame, decoded by the model, is what its class claims`, () => {
    const { frames } = stream(11, 20000, target);
    const claims = claimsFor(target), dec = decodeFor(target);
    const bad: string[] = [];
    for (const f of frames) {
      const why = claims[f.cls](dec(f.frame), f);
      if (why && bad.length < 10) bad.push(`${f.what} (${f.cls}): ${why}`);
    }
    assert.deepEqual(bad, []);
  });
}

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

Deno.test("IB: mutations change what they name: CRCs, LRH, GRH, addresses, truncation", () => {
  const { frames } = stream(5, 20000, IB);
  const of = (what: string) => frames.filter((f) => f.what === what);
  const one = (what: string) => of(what).map((f) => decodeIb(f.frame));
  for (const p of one("vcrc-flip")) assert.ok(!vcrcOk(p) && icrcOk(p));
  for (const f of frames.filter((f) => f.what.startsWith("stale-icrc") || f.what === "icrc-flip")) {
    const p = decodeIb(f.frame);
    assert.ok(vcrcOk(p) && !icrcOk(p), f.what);
  }
  for (const f of frames.filter((f) => f.cls !== "vcrc_err" && f.frame.length >= 26)) {
    // the VCRC is right where the frame's length puts it (PktLen may say otherwise), but on vcrc-flip
    const n = f.frame.length - 2;
    assert.equal(readVcrc(f.frame, n), ibVcrc(f.frame, n), f.what);
  }
  for (const p of one("lver")) assert.notEqual(p.lrh!.lver, 0);
  for (const p of one("lnh-raw")) assert.ok(p.lrh!.lnh < 2 && p.kind === "other");
  for (const f of of("pktlen")) {
    assert.notEqual(decodeIb(f.frame).lrh!.pktLen * 4 + 2, f.frame.length);
  }
  for (const f of of("trunc-lrh")) assert.ok(f.frame.length < 26, `${f.frame.length} bytes`);
  for (const f of of("trunc-transport")) {
    const p = decodeIb(f.frame);
    assert.ok(f.frame.length < 8 + 12 + 28 + 4 + 2, `${f.frame.length} bytes`);
    assert.equal(p.lrh!.pktLen * 4 + 2, f.frame.length);
    assert.ok(vcrcAt(f.frame) && p.errors.length > 0);
  }
  for (const p of one("slid-zero")) assert.equal(p.lrh!.slid, 0);
  for (const p of one("slid-mcast")) assert.ok(p.lrh!.slid >= 0xc000 && p.lrh!.slid <= 0xfffe);
  for (const p of one("grh-bad")) {
    assert.ok(p.lrh!.lnh === 3 && p.grh, "no GRH");
    assert.ok(
      p.grh.ipVer !== 6 || p.grh.nxtHdr !== 0x1b || p.errors.length > 0 || p.lrh!.vl === 15,
      "a good GRH",
    );
  }
  for (const p of one("vl15-to-rc")) assert.ok(p.lrh!.vl === 15 && p.op!.transport === "RC");
  for (const p of one("dlid-other")) {
    assert.ok(p.lrh!.dlid !== IB.ib!.dstLid && p.lrh!.dlid > 0 && p.lrh!.dlid < 0xc000);
  }
  for (const p of one("dlid-permissive")) assert.equal(p.lrh!.dlid, 0xffff);
  for (const p of one("mcast-dlid-no-grh")) {
    assert.ok(p.lrh!.dlid >= 0xc000 && p.lrh!.dlid < 0xffff && !p.grh && p.lrh!.lnh === 2);
  }
  for (const p of one("mcast-no-member")) assert.ok(p.grh && p.lrh!.dlid >= 0xc000);
  for (const p of one("mcast-unicast-dst")) {
    assert.ok(p.lrh!.dlid === IB.ib!.dstLid && p.bth!.destQp === MCAST_QPN);
  }
  const unknown = new Set(one("opcode-unknown").map((p) => p.bth!.opcode));
  assert.ok(unknown.has(0x81), "the CNP opcode never drawn");
  for (const f of frames.filter((f) => f.what !== "lnh-raw" && f.frame.length >= 26)) {
    assert.equal(decodeIb(f.frame).kind, "ib", f.what);
  }
});

Deno.test("UD mutations leave the main victim's model alone", () => {
  for (const target of [ROCE_UD, IB]) {
    const fuzz = new WireFuzz(target, 13, victimWindow(target.mr.len / 2));
    const ud = new Set([...Object.keys(UD_MUTATIONS), ...Object.keys(IB_UD_MUTATIONS)]);
    let seen = 0;
    for (let i = 0; i < 3000; i++) {
      const step = fuzz.nextStep();
      const [epsn, window] = [fuzz.epsn, fuzz.window.slice()];
      const [f] = fuzz.apply(step);
      if (!ud.has(f.what)) continue;
      seen++;
      assert.equal(fuzz.epsn, epsn);
      assert.deepEqual(fuzz.window, window);
      assert.equal(f.victim, -1);
    }
    assert.ok(seen > 100);
  }
});

Deno.test("a step of another mode's table is refused", () => {
  const roce = new WireFuzz(TARGET, 1, victimWindow(TARGET.mr.len / 2));
  const ib = new WireFuzz(IB_ONLY, 1, victimWindow(TARGET.mr.len / 2));
  for (const what of ["vcrc-flip", "ud-no-recv", "ud-src-qp0"]) {
    assert.throws(() => roce.apply({ index: 0, what, seed: 1 }), RangeError, what);
  }
  for (const what of ["ip-checksum", "trunc-l2", "udp-checksum", "ud-qkey"]) {
    assert.throws(() => ib.apply({ index: 0, what, seed: 1 }), RangeError, what);
  }
  assert.throws(
    () =>
      new WireFuzz(ROCE_UD, 1, victimWindow(4096)).apply({ index: 0, what: "ud-src-qp0", seed: 1 }),
    RangeError,
  );
});

Deno.test("IB: the faults are IB frames from the peer", () => {
  const { frames } = stream(17, 0, IB);
  assert.equal(frames.length, Object.keys(FATAL).length * 2 + 1);
  for (const f of frames) {
    const p = decodeIb(f.frame);
    assert.ok(p.kind === "ib" && vcrcOk(p) && icrcOk(p) && p.lrh!.slid === IB.ib!.peerLid, f.what);
    assert.equal(p.bth!.destQp, IB.victims[f.victim].qpn);
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
function steps(seed: number, n: number, target = TARGET) {
  const fuzz = new WireFuzz(target, seed, victimWindow(target.mr.len / 2));
  const main = Array.from({ length: n }, () => fuzz.nextStep());
  return [...main, ...fuzz.fatalSteps()];
}

for (const [mode, target] of TARGETS) {
  Deno.test(`${mode}: the steps, applied to a new generator, give the stream's frames exactly`, () => {
    const { frames } = stream(21, 3000, target);
    const fresh = new WireFuzz(target, 999, victimWindow(target.mr.len / 2));
    assert.deepEqual(steps(21, 3000, target).flatMap((s) => fresh.apply(s)), frames);
  });

  Deno.test(`${mode}: any subset of the steps gives frames whose classes, PSNs and window agree`, () => {
    const all = steps(23, 4000, target);
    const claims = claimsFor(target), dec = decodeFor(target);
    for (const keep of [2, 3, 7, 50]) {
      const subset = all.filter((_, i) => i % keep === 0);
      const fuzz = new WireFuzz(target, 1, victimWindow(target.mr.len / 2));
      const frames = subset.flatMap((s) => fuzz.apply(s));
      assert.deepEqual([...new Set(frames.map((f) => f.step))], subset.map((s) => s.index));
      // the same claims as a whole stream: expected PSNs follow the taken requests of the subset
      const bad = frames.map((f) => claims[f.cls](dec(f.frame), f)).filter((w) => w);
      assert.deepEqual(bad, [], `every ${keep}th step`);
      let epsn = target.victims[0].rqPsn;
      for (const f of frames.filter((f) => f.victim === 0 && f.cls === "accepted")) {
        assert.equal(dec(f.frame).bth!.psn, epsn);
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
}

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
