/**
 * The wire fuzz of issue 20: seeded RoCEv2 (IPv4) frames aimed at live RC QPs
 * of cnuas_ib, each with the class the receiver must put it in — the
 * receive counter it must raise, or none when the frame is taken. The
 * classes come from the IBTA rules (volume 1, 9.7 and 9.9; RoCEv2 annex
 * A17) and, where those leave the counter open, from the table in
 * docs/devices.md ("Receive drop reasons"); never from the driver's code.
 *
 * QP 0 of the target is the main victim: it gets every class whose frame
 * leaves the QP usable, and a model of its responder (expected PSN, the
 * bytes of its window) follows the frames it takes. The other QPs are
 * sacrificed one fault each to the faults after which the IBTA puts the QP
 * into the error state ({@link fatalFrames}).
 *
 * The stream is a list of steps ({@link FuzzStep}: a mutation or a fault and
 * the seed of its own random choices). Every value a frame takes from the
 * state (the expected PSN, the requests a duplicate may repeat, the window)
 * is read when its step is applied, so any subset of the steps, applied in
 * order to a new generator, gives frames and a prediction that agree with
 * each other: a failing run shrinks to a few steps ({@link WireFuzz.apply}).
 *
 * Two link layers ({@link WireTarget.ib}): RoCEv2 over IPv4 ({@link MUTATIONS})
 * or native InfiniBand, frames starting at the LRH ({@link IB_MUTATIONS}).
 * The IB table keeps the transport mutations that make sense without IP and
 * UDP and adds the link's own: `vcrc-flip` (rule 1a), `lver`, `lnh-raw`,
 * `pktlen`, `trunc-lrh` (rule 1), `slid-zero`, `slid-mcast`, `grh-bad`
 * (rule 1b), and the frames not addressed to this port (rule 3a):
 * `vl15-to-rc`, `dlid-other`, `dlid-permissive`, `mcast-dlid-no-grh`. Every
 * IB frame carries a right VCRC, and a right ICRC, unless its mutation is
 * about them: a CRC is recomputed after the edit so that only the named
 * fault is present. With a UD QP in the target ({@link WireTarget.ud}) the
 * stream of either mode also gets {@link UD_MUTATIONS} (rules 3c, 3d, 7b,
 * 7c): `ud-no-recv`, `ud-qkey`, `mcast-no-member`, `mcast-not-ud`,
 * `mcast-unicast-dst`, and on native IB {@link IB_UD_MUTATIONS}
 * (`ud-src-qp0`, rule 7). The UD frames never touch the main victim's model.
 *
 * @example
 * ```ts
 * const fuzz = new WireFuzz(target, 42, victimWindow(target.mr.len / 2));
 * for (let i = 0; i < 1000; i++) await fabric.inject(port, fuzz.next().frame, "egress");
 * const predicted = fuzz.predicted(); // counter name -> count
 * ```
 */
import { rd16, wr16, wr24, wr32 } from "./bytes.ts";
import { buildIbFrame, buildRoceFrame, type TransportSpec } from "./build.ts";
import { ibIcrc, ibVcrc, roceIcrc, writeIcrc, writeVcrc } from "./icrc.ts";
import { ipv4HeaderChecksum } from "./ip.ts";
import { CNP_OPCODE, OP } from "./opcodes.ts";
import { type Bth, psnAdd } from "./transport.ts";
import { prng, randBytes, randInt, randU64 } from "../../prng.ts";

/** Offsets in an untagged IPv4 RoCEv2 frame. */
export const IP_OFF = 14;
/** The UDP header's offset. */
export const UDP_OFF = 34;
/** The BTH's offset (the end of the UDP header: where a RoCE parser starts). */
export const BTH_OFF = 42;
/** The BTH's offset in a native IB frame without a GRH (after the 8-byte LRH at 0). */
export const IB_BTH_OFF = 8;
/** The shortest native IB frame that is not malformed by length alone: LRH + BTH + ICRC + VCRC. */
export const IB_MIN_FRAME = 8 + 12 + 4 + 2;
/** The multicast QPN (IBA 10.5): a UD SEND to it goes to the QPs attached to its group. */
export const MCAST_QPN = 0xffffff;

/** The QPs and memory the fuzz aims at, as wire_victim printed them. */
export interface WireTarget {
  /** The target guest's MAC and IPv4 address (as numbers). */
  dstMac: number;
  dstIp: number;
  /** The address the victims are connected to (nobody has it: the fuzz speaks for it). */
  peerMac: number;
  peerIp: number;
  /** Another address, not the victims' peer. */
  foreignIp: number;
  /** QP 0 is the main victim; the rest are sacrificed by {@link fatalFrames}. */
  victims: { qpn: number; rqPsn: number; sqPsn: number }[];
  /** The MR: its first half is the window the fuzz writes, its second half a canary. */
  mr: { va: bigint; rkey: number; len: number };
  /** Path MTU of the victims. */
  pmtu: number;
  /** Native InfiniBand (link_layer=ib): frames start at the LRH (LNH 0b10, no GRH, VL 0, SL 0); absent: RoCEv2 over IPv4. */
  ib?: { dstLid: number; peerLid: number; foreignLid: number };
  /** wire_victim's UD QP (no receive ever posted on it) and its Q_Key; absent: no UD mutations. */
  ud?: { qpn: number; qkey: number };
}

/**
 * What the receiver does with a frame. `accepted`: taken (executed, or
 * answered); `not_roce`: it never reaches cnuas_ib (the Ethernet/IP/UDP
 * headers do not make a RoCEv2 frame); every other class names one counter
 * ({@link CLASS_COUNTER}).
 */
export type WireClass =
  | "accepted"
  | "not_roce"
  | "hdr_err"
  | "pkey_err"
  | "icrc_err"
  | "qpn_err"
  | "src_err"
  | "psn_err"
  | "duplicate"
  | "ghost_resp"
  | "state_err"
  | "rem_access"
  | "inv_req"
  | "vcrc_err"
  | "addr_err"
  | "mcast_no_member"
  | "no_recv"
  | "qkey_err";

/** The hw_counter each class raises by one per frame (docs/devices.md, "Receive drop reasons"). */
export const CLASS_COUNTER: Readonly<Record<WireClass, string | null>> = {
  accepted: null,
  not_roce: null,
  hdr_err: "rcvd_hdr_err",
  pkey_err: "rcvd_pkey_err",
  icrc_err: "rcvd_icrc_err",
  qpn_err: "rcvd_qpn_err",
  src_err: "rcvd_src_err",
  psn_err: "rcvd_psn_err",
  duplicate: "duplicate_request",
  ghost_resp: "rcvd_ghost_resp",
  state_err: "rcvd_state_err",
  rem_access: "send_rem_access_nak",
  inv_req: "send_inv_req_nak",
  vcrc_err: "rcvd_vcrc_err",
  addr_err: "rcvd_addr_err",
  mcast_no_member: "rcvd_mcast_no_member",
  no_recv: "rcvd_no_recv",
  qkey_err: "rcvd_qkey_err",
};

/**
 * One step of the stream: mutation `what` of the generator's table
 * ({@link mutationTable}: one frame) or fault `what` of {@link FATAL} (its
 * frames for its sacrificed QP), with the seed of the step's own random
 * choices.
 */
export interface FuzzStep {
  /** Position in the stream that made it (main steps first, then the faults). */
  index: number;
  what: string;
  seed: number;
}

/** One generated frame. */
export interface FuzzFrame {
  frame: Uint8Array;
  /** The step that made it ({@link FuzzStep.index}). */
  step: number;
  /** The predicted class. */
  cls: WireClass;
  /** Which mutation or sequence made it (e.g. `ip-checksum`, `dup-atomic`). */
  what: string;
  /** Index of the victim QP it is aimed at (-1: no victim). */
  victim: number;
  /** The victim's expected request PSN when the frame was made. */
  epsn: number;
}

/** The mutations of the RoCEv2 main stream, each with its class (a table: the unit tests walk it). */
export const MUTATIONS: Readonly<Record<string, WireClass>> = {
  "valid-write": "accepted",
  "valid-read": "accepted",
  "valid-atomic": "accepted",
  "udp-checksum": "accepted",
  "icrc-flip": "icrc_err",
  "stale-icrc-payload": "icrc_err",
  "stale-icrc-psn": "icrc_err",
  "stale-icrc-qpn": "icrc_err",
  "stale-icrc-rkey": "icrc_err",
  "stale-icrc-va": "icrc_err",
  "stale-icrc-dmalen": "icrc_err",
  "trunc-l2": "not_roce",
  "trunc-ip": "not_roce",
  "trunc-udp": "not_roce",
  "trunc-transport": "hdr_err",
  "trunc-raw": "hdr_err",
  "ip-totlen": "hdr_err",
  "udp-len": "hdr_err",
  "ip-checksum": "hdr_err",
  "tver": "hdr_err",
  "opcode-unknown": "hdr_err",
  "pad-too-long": "hdr_err",
  "payload-on-ack": "hdr_err",
  "pkey": "pkey_err",
  "qpn-unused": "qpn_err",
  "ud-to-rc": "qpn_err",
  "foreign-src": "src_err",
  "foreign-src-ack": "src_err",
  "psn-ahead": "psn_err",
  "dup-write": "duplicate",
  "dup-read": "duplicate",
  "dup-atomic": "duplicate",
  "ghost-ack": "ghost_resp",
  "ghost-read-resp": "ghost_resp",
  "ghost-atomic-ack": "ghost_resp",
};

/** The RoCEv2 mutations that need IP or UDP, or the Ethernet framing: none on native IB. */
const ROCE_ONLY = new Set([
  "udp-checksum",
  "trunc-l2",
  "trunc-ip",
  "trunc-udp",
  "trunc-raw",
  "ip-totlen",
  "udp-len",
  "ip-checksum",
]);

/**
 * The mutations of the native InfiniBand main stream ({@link WireTarget.ib}),
 * each with its class: the transport mutations of {@link MUTATIONS} that need
 * no IP or UDP (same names, IB framing; `opcode-unknown` also draws the CNP
 * opcode, unknown on native IB by rule 1b), then the link's own (rules 1, 1a,
 * 1b and 3a of docs/devices.md, "cnuas_ib: receive drop reasons").
 */
export const IB_MUTATIONS: Readonly<Record<string, WireClass>> = {
  ...Object.fromEntries(Object.entries(MUTATIONS).filter(([what]) => !ROCE_ONLY.has(what))),
  "vcrc-flip": "vcrc_err",
  "lver": "hdr_err",
  "lnh-raw": "hdr_err",
  "pktlen": "hdr_err",
  "trunc-lrh": "hdr_err",
  "slid-zero": "hdr_err",
  "slid-mcast": "hdr_err",
  "grh-bad": "hdr_err",
  "vl15-to-rc": "addr_err",
  "dlid-other": "addr_err",
  "dlid-permissive": "addr_err",
  "mcast-dlid-no-grh": "addr_err",
};

/**
 * The UD and multicast mutations, in the stream of either link layer when
 * the target has a UD QP ({@link WireTarget.ud}): rules 3c, 3d, 7b and 7c.
 * None of them touches the main victim's model.
 */
export const UD_MUTATIONS: Readonly<Record<string, WireClass>> = {
  "ud-no-recv": "no_recv",
  "ud-qkey": "qkey_err",
  "mcast-no-member": "mcast_no_member",
  "mcast-not-ud": "addr_err",
  "mcast-unicast-dst": "addr_err",
};

/**
 * The UD mutations of native IB only (with {@link UD_MUTATIONS}): a UD from
 * source QP 0 to a UD QP other than QP0 (rule 7; RoCEv2 has no such rule).
 */
export const IB_UD_MUTATIONS: Readonly<Record<string, WireClass>> = {
  "ud-src-qp0": "src_err",
};

/**
 * The mutations a generator for `target` draws its main stream from:
 * {@link MUTATIONS} (RoCEv2) or {@link IB_MUTATIONS} (native IB), with
 * {@link UD_MUTATIONS} (and on IB {@link IB_UD_MUTATIONS}) when the target
 * has a UD QP. A step's `what` is looked up here.
 */
export function mutationTable(target: WireTarget): Readonly<Record<string, WireClass>> {
  return {
    ...(target.ib ? IB_MUTATIONS : MUTATIONS),
    ...(target.ud ? UD_MUTATIONS : {}),
    ...(target.ud && target.ib ? IB_UD_MUTATIONS : {}),
  };
}

/** The faults {@link fatalFrames} gives one sacrificed QP each, with their class. */
export const FATAL: Readonly<Record<string, WireClass>> = {
  "bad-rkey": "rem_access",
  "va-below-mr": "rem_access",
  "va-beyond-mr": "rem_access",
  "dmalen-mismatch": "inv_req",
  "middle-without-first": "inv_req",
  "last-beyond-reth": "inv_req",
  "oversize": "inv_req",
};

/** QPNs no QP has during a run (cnuas_ib allocates upwards from 16). */
export const UNUSED_QPN = { lo: 0xf00000, hi: 0xfffffe } as const;

/** Opcodes outside the transports cnuas_ib implements (RC, UD, the CNP): reserved, UC, RD. */
const UNKNOWN_OPCODES = [0x15, 0x18, 0x1f, 0x20, 0x24, 0x2a, 0x40, 0x44, 0x66, 0x7f, 0xc0, 0xff];
/** Native IB: the same, and the CNP (a RoCEv2 packet only: rule 1b). */
const IB_UNKNOWN_OPCODES = [...UNKNOWN_OPCODES, CNP_OPCODE];

/** RC opcodes a multicast frame may wrongly carry (rule 3c: only a UD SEND may go to QPN 0xFFFFFF). */
const RC_TO_MCAST = [OP.RC_SEND_ONLY, OP.RC_RDMA_WRITE_ONLY];

/**
 * Where a frame goes and comes from, beyond its transport part (default: from
 * the victims' peer to the target). Fields of the other link layer are ignored.
 */
interface Route {
  /** From the foreign address (RoCEv2: `foreignIp`; IB: SLID `foreignLid`). */
  foreign?: boolean;
  /**
   * To multicast group `mcast` (below 0xFF0000): RoCEv2 to 239.x.y.z (its
   * low 24 bits) and its MAC 01:00:5e:…; IB to a multicast DLID with a GRH
   * whose DGID is ff12:401b:ffff::ef<mcast> ({@link mcastGid}).
   */
  mcast?: number;
  /** IB: LRH fields overriding the route's. */
  lrh?: { dlid?: number; slid?: number; vl?: number };
  /** IB: a GRH from the peer's GID to the target's (unicast; ignored with `mcast`). */
  grh?: boolean;
  /** RoCEv2: the UDP checksum (default 0). */
  udpChecksum?: number;
}

/** A transport part whose DestQP defaults to the frame's victim. */
type Transport = Omit<TransportSpec, "bth"> & {
  bth: Partial<Bth> & { opcode: number; psn: number };
};

/** The DGID of multicast group `g` (the IPoIB mapping of IPv4 group 239.x.y.z, P_Key 0xFFFF). */
export function mcastGid(g: number): Uint8Array {
  const gid = new Uint8Array(16);
  gid.set([0xff, 0x12, 0x40, 0x1b, 0xff, 0xff]);
  wr32(gid, 12, (0xef000000 | (g & 0xffffff)) >>> 0);
  return gid;
}

/** The multicast DLID the fuzz uses for group `g` (0xC000..0xFFFE). */
export function mcastLid(g: number): number {
  return 0xc000 + (g % 0x3fff);
}

/** A link-local GID for a LID (the fuzz's stand-in: nothing checks a unicast GRH's GIDs). */
function lidGid(lid: number): Uint8Array {
  const gid = new Uint8Array(16);
  gid.set([0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x00, 0x5e, 0xff, 0xfe, 0]);
  wr16(gid, 14, lid);
  return gid;
}

/** Set PktLen of an IB frame to its length and recompute its VCRC (its ICRC left as it is). */
function fixIbLength(f: Uint8Array): void {
  wr16(f, 4, (rd16(f, 4) & 0xf800) | ((f.length - 2) >> 2));
  writeVcrc(f, f.length - 2, ibVcrc(f, f.length - 2));
}

/** Set IP total length and UDP length to the frame's length, and the IP checksum. */
export function fixLengths(f: Uint8Array): void {
  wr16(f, IP_OFF + 2, f.length - IP_OFF);
  wr16(f, UDP_OFF + 4, f.length - UDP_OFF);
  fixIpChecksum(f);
}

/** Recompute the IPv4 header checksum. */
function fixIpChecksum(f: Uint8Array): void {
  wr16(f, IP_OFF + 10, 0);
  wr16(f, IP_OFF + 10, ipv4HeaderChecksum(f, IP_OFF));
}

/**
 * The generator: {@link next} gives the main stream's frames one at a time,
 * {@link fatalFrames} the sacrifices; {@link predicted} sums the classes
 * into counter deltas; {@link window} is what QP 0's window must hold.
 */
export class WireFuzz {
  /** The bytes the window must hold after every frame generated so far was received. */
  readonly window: Uint8Array;
  /** Frames generated per class. */
  readonly classes: Record<WireClass, number>;
  /** Frames generated per mutation (`what`). */
  readonly mutations: Record<string, number> = {};
  /** The main victim's expected request PSN. */
  epsn: number;
  readonly #t: WireTarget;
  /** Draws the steps: which mutation, and each step's seed. */
  readonly #master: () => number;
  /** The random choices of the step being applied. */
  #rng: () => number;
  /** Steps drawn so far. */
  #drawn = 0;
  readonly #names: string[];
  /** The mutations of this generator's mode ({@link mutationTable}). */
  readonly #table: Readonly<Record<string, WireClass>>;
  /** The BTH's offset in a frame without a GRH. */
  readonly #bth: number;
  /** Executed requests of QP 0 that a duplicate may name: PSN and kind. */
  readonly #done: { psn: number; kind: "write" | "read" | "atomic" }[] = [];

  /** `window`: the window's bytes at the start (wire_victim's pattern). */
  constructor(target: WireTarget, seed: number, window: Uint8Array) {
    if (target.victims.length < 1) throw new RangeError("WireFuzz: no victim QP");
    if (window.length !== target.mr.len / 2) {
      throw new RangeError(`WireFuzz: window of ${window.length} bytes, MR of ${target.mr.len}`);
    }
    this.#t = target;
    this.#master = prng(seed);
    this.#rng = this.#master;
    this.window = window.slice();
    this.epsn = target.victims[0].rqPsn;
    this.#table = mutationTable(target);
    this.#names = Object.keys(this.#table);
    this.#bth = target.ib ? IB_BTH_OFF : BTH_OFF;
    this.classes = Object.fromEntries(
      Object.keys(CLASS_COUNTER).map((k) => [k, 0]),
    ) as Record<WireClass, number>;
  }

  /** Counter name → how much it must have grown, from the classes generated so far. */
  predicted(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [c, counter] of Object.entries(CLASS_COUNTER)) {
      if (counter) out[counter] = (out[counter] ?? 0) + this.classes[c as WireClass];
    }
    return out;
  }

  /**
   * A frame from the victims' peer to victim `v` (its DestQP unless the BTH
   * names one), well formed, in the generator's link layer; `route` moves
   * its source or destination.
   */
  #frame(v: number, spec: Transport, route: Route = {}): Uint8Array {
    const t = this.#t;
    const bth = { ...spec.bth, destQp: spec.bth.destQp ?? t.victims[v].qpn };
    const g = route.mcast;
    if (t.ib) {
      const ib = t.ib;
      return buildIbFrame({
        ...spec,
        bth,
        lrh: {
          dlid: g === undefined ? ib.dstLid : mcastLid(g),
          slid: route.foreign ? ib.foreignLid : ib.peerLid,
          ...route.lrh,
        },
        grh: g !== undefined
          ? { sgid: lidGid(ib.peerLid), dgid: mcastGid(g) }
          : route.grh
          ? { sgid: lidGid(ib.peerLid), dgid: lidGid(ib.dstLid) }
          : undefined,
      });
    }
    return buildRoceFrame({
      srcMac: t.peerMac,
      dstMac: g === undefined ? t.dstMac : 0x01005e000000 + (g & 0x7fffff),
      srcIp: route.foreign ? t.foreignIp : t.peerIp,
      dstIp: g === undefined ? t.dstIp : (0xef000000 | (g & 0xffffff)) >>> 0,
      srcPort: 0xc000 + randInt(this.#rng, 0, 0x3fff),
      udpChecksum: route.udpChecksum,
      ...spec,
      bth,
    });
  }

  /** Recompute the ICRC (and on IB then the VCRC) at the end of a frame without a GRH. */
  #recrc(f: Uint8Array): void {
    if (!this.#t.ib) {
      writeIcrc(f, f.length - 4, roceIcrc(f, IP_OFF, BTH_OFF, f.length - 4));
      return;
    }
    writeIcrc(f, f.length - 6, ibIcrc(f, f.length - 6));
    this.#revcrc(f);
  }

  /** IB: recompute the VCRC over the frame (RoCEv2: nothing). */
  #revcrc(f: Uint8Array): void {
    if (this.#t.ib) writeVcrc(f, f.length - 2, ibVcrc(f, f.length - 2));
  }

  /** Bytes after the ICRC: the VCRC on IB, none on RoCEv2. */
  get #tail(): number {
    return this.#t.ib ? 2 : 0;
  }

  /**
   * An offset and length (1..max) inside the main stream's part of the
   * window, its first half (the sacrifices write the second).
   */
  #span(max: number): { off: number; len: number } {
    const len = randInt(this.#rng, 1, max);
    return { off: randInt(this.#rng, 0, this.window.length / 2 - len), len };
  }

  /** A WRITE_ONLY of QP 0 at `psn` into the window; `take` applies it to the model. */
  #write(psn: number, take: boolean, route: Route = {}): Uint8Array {
    const { off, len } = this.#span(64);
    const payload = randBytes(this.#rng, len);
    const f = this.#frame(0, {
      bth: { opcode: OP.RC_RDMA_WRITE_ONLY, destQp: this.#t.victims[0].qpn, psn, ackReq: 1 },
      reth: { va: this.#t.mr.va + BigInt(off), rkey: this.#t.mr.rkey, dmaLen: len },
      payload,
    }, route);
    if (take) this.window.set(payload, off);
    return f;
  }

  /** A READ request of QP 0 at `psn` (one response packet). */
  #read(psn: number): Uint8Array {
    const { off, len } = this.#span(64);
    return this.#frame(0, {
      bth: { opcode: OP.RC_RDMA_READ_REQUEST, destQp: this.#t.victims[0].qpn, psn },
      reth: { va: this.#t.mr.va + BigInt(off), rkey: this.#t.mr.rkey, dmaLen: len },
    });
  }

  /** A FETCH_ADD of QP 0 at `psn` on an aligned word of the window; `take` applies it. */
  #atomic(psn: number, take: boolean): Uint8Array {
    const off = 8 * randInt(this.#rng, 0, this.window.length / 16 - 1);
    const add = randU64(this.#rng);
    if (take) {
      const dv = new DataView(this.window.buffer, this.window.byteOffset + off, 8);
      dv.setBigUint64(0, BigInt.asUintN(64, dv.getBigUint64(0, true) + add), true);
    }
    return this.#frame(0, {
      bth: { opcode: OP.RC_FETCH_ADD, destQp: this.#t.victims[0].qpn, psn },
      atomicEth: {
        va: this.#t.mr.va + BigInt(off),
        rkey: this.#t.mr.rkey,
        swapAdd: add,
        compare: 0n,
      },
    });
  }

  /** A response (ACK, READ response, atomic ACK) to QP 0 at `psn`. */
  #response(kind: "ack" | "read" | "atomic", psn: number, foreign = false): Uint8Array {
    const qpn = this.#t.victims[0].qpn;
    const aeth = { syndrome: 0x1f, msn: randInt(this.#rng, 0, 0xffffff) };
    const route = { foreign };
    if (kind === "ack") {
      return this.#frame(0, { bth: { opcode: OP.RC_ACKNOWLEDGE, destQp: qpn, psn }, aeth }, route);
    }
    if (kind === "read") {
      return this.#frame(0, {
        bth: { opcode: OP.RC_RDMA_READ_RESPONSE_ONLY, destQp: qpn, psn },
        aeth,
        payload: randBytes(this.#rng, randInt(this.#rng, 1, 64)),
      }, route);
    }
    return this.#frame(0, {
      bth: { opcode: OP.RC_ATOMIC_ACKNOWLEDGE, destQp: qpn, psn },
      aeth,
      atomicAckEth: { origRemoteData: randU64(this.#rng) },
    }, route);
  }

  /** A UD SEND_ONLY to `destQp` from source QP `srcQp` with Q_Key `qkey` (any PSN: UD has none to check). */
  #ud(destQp: number, qkey: number, srcQp: number, route: Route = {}): Uint8Array {
    const r = this.#rng;
    return this.#frame(-1, {
      bth: { opcode: OP.UD_SEND_ONLY, destQp, psn: randInt(r, 0, 0xffffff) },
      deth: { qkey, reserved8: 0, srcQp },
      payload: randBytes(r, randInt(r, 0, 64)),
    }, route);
  }

  /** A multicast group nobody joins: 239.0.0.0..239.254.255.255 (239.255/16 is the local scope). */
  #group(): number {
    return randInt(this.#rng, 0, 0xfeffff);
  }

  /** The target's UD QP. */
  #udQp(): { qpn: number; qkey: number } {
    if (!this.#t.ud) throw new RangeError("WireFuzz: a UD mutation for a target without a UD QP");
    return this.#t.ud;
  }

  /** A PSN QP 0 never sent: from its first send PSN on, less than half the space ahead. */
  #ghostPsn(): number {
    return psnAdd(this.#t.victims[0].sqPsn, randInt(this.#rng, 0, 0x3fffff));
  }

  /** Draw the next step of the main stream (nothing is applied). */
  nextStep(): FuzzStep {
    const m = this.#master;
    const what = this.#names[randInt(m, 0, this.#names.length - 1)];
    return { index: this.#drawn++, what, seed: randInt(m, 0, 0xffffffff) };
  }

  /** The next frame of the main stream: the next step, applied. */
  next(): FuzzFrame {
    return this.apply(this.nextStep())[0];
  }

  /**
   * Apply `step` to the model: its frames, each counted in its class. A
   * step of a generator with another seed may be applied too (a shrink
   * replays a subset of a failing run's steps on a new generator).
   *
   * @throws {RangeError} for an unknown step, or a fault with no QP to sacrifice.
   */
  apply(step: FuzzStep): FuzzFrame[] {
    this.#rng = prng(step.seed);
    try {
      if (step.what in this.#table) return [this.#main(step)];
      return this.#fatal(step);
    } finally {
      this.#rng = this.#master;
    }
  }

  /** Apply a main-stream step: one frame. */
  #main(step: FuzzStep): FuzzFrame {
    const what = step.what;
    const epsn = this.epsn;
    const frame = this.#make(what);
    const cls = this.#table[what];
    this.#count(cls, what);
    const victim = what === "qpn-unused" || what in UD_MUTATIONS || what in IB_UD_MUTATIONS
      ? -1
      : 0;
    return { frame, step: step.index, cls, what, victim, epsn };
  }

  #count(cls: WireClass, what: string): void {
    this.classes[cls]++;
    this.mutations[what] = (this.mutations[what] ?? 0) + 1;
  }

  /** Build mutation `what`, updating the model when the frame is taken. */
  #make(what: string): Uint8Array {
    const r = this.#rng;
    const t = this.#t;
    const e = this.epsn;
    const B = this.#bth;
    switch (what) {
      case "valid-write":
        this.#done.push({ psn: e, kind: "write" });
        this.epsn = psnAdd(e, 1);
        return this.#write(e, true);
      case "valid-read":
        this.#done.push({ psn: e, kind: "read" });
        this.epsn = psnAdd(e, 1);
        return this.#read(e);
      case "valid-atomic":
        this.#done.push({ psn: e, kind: "atomic" });
        this.epsn = psnAdd(e, 1);
        return this.#atomic(e, true);
      case "udp-checksum":
        // RoCEv2: the ICRC covers the data and masks the UDP checksum, which is not checked
        this.#done.push({ psn: e, kind: "write" });
        this.epsn = psnAdd(e, 1);
        return this.#write(e, true, { udpChecksum: randInt(r, 1, 0xffff) });
      case "icrc-flip": {
        const f = this.#write(e, false);
        f[f.length - this.#tail - 1 - randInt(r, 0, 3)] ^= 1 << randInt(r, 0, 7);
        this.#revcrc(f);
        return f;
      }
      case "stale-icrc-payload": {
        const f = this.#write(e, false);
        // the payload starts after BTH + RETH; the last byte before the pad and ICRC is payload
        f[B + 12 + 16] ^= 1 << randInt(r, 0, 7);
        this.#revcrc(f);
        return f;
      }
      case "stale-icrc-psn": {
        const f = this.#write(e, false);
        f[B + 11] ^= 1 << randInt(r, 0, 7);
        this.#revcrc(f);
        return f;
      }
      case "stale-icrc-qpn": {
        const f = this.#write(e, false);
        f[B + 7] ^= 1 << randInt(r, 0, 7);
        this.#revcrc(f);
        return f;
      }
      case "stale-icrc-rkey":
      case "stale-icrc-va":
      case "stale-icrc-dmalen": {
        const f = this.#write(e, false);
        const at = { "stale-icrc-va": 0, "stale-icrc-rkey": 8, "stale-icrc-dmalen": 12 }[what];
        f[B + 12 + at + randInt(r, 0, 3)] ^= 1 << randInt(r, 0, 7);
        this.#revcrc(f);
        return f;
      }
      case "trunc-l2":
        return this.#write(e, false).slice(0, randInt(r, 1, IP_OFF - 1));
      case "trunc-ip":
        return this.#write(e, false).slice(0, randInt(r, IP_OFF, UDP_OFF - 1));
      case "trunc-udp":
        return this.#write(e, false).slice(0, randInt(r, UDP_OFF, BTH_OFF - 1));
      case "trunc-transport": {
        // cut short of BTH + its extended headers + ICRC (WRITE_ONLY and READ: RETH, 12 + 16 + 4
        // bytes; FETCH_ADD: AtomicETH, 12 + 28 + 4; ACK: AETH, 12 + 4 + 4), lengths made to agree
        const [f, need] = [
          () => [this.#write(e, false), 32] as const,
          () => [this.#read(e), 32] as const,
          () => [this.#atomic(e, false), 44] as const,
          () => [this.#response("ack", this.#ghostPsn()), 20] as const,
        ][randInt(r, 0, 3)]();
        if (t.ib) {
          // whole words (PktLen counts words) after the LRH, then a VCRC over them
          const n = B + 4 * randInt(r, 0, (need - 1) >> 2);
          const cut = new Uint8Array(n + 2);
          cut.set(f.subarray(0, n));
          fixIbLength(cut);
          return cut;
        }
        const cut = f.slice(0, BTH_OFF + randInt(r, 0, need - 1));
        fixLengths(cut);
        return cut;
      }
      case "trunc-raw": {
        const f = this.#write(e, false);
        return f.slice(0, randInt(r, BTH_OFF, f.length - 1));
      }
      case "ip-totlen": {
        const f = this.#write(e, false);
        const d = randInt(r, 1, 64) * (randInt(r, 0, 1) ? 1 : -1);
        wr16(f, IP_OFF + 2, (rd16(f, IP_OFF + 2) + d) & 0xffff);
        fixIpChecksum(f);
        return f;
      }
      case "udp-len": {
        const f = this.#write(e, false);
        const d = randInt(r, 1, 64) * (randInt(r, 0, 1) ? 1 : -1);
        wr16(f, UDP_OFF + 4, (rd16(f, UDP_OFF + 4) + d) & 0xffff);
        return f;
      }
      case "ip-checksum": {
        const f = this.#write(e, false);
        wr16(f, IP_OFF + 10, rd16(f, IP_OFF + 10) ^ randInt(r, 1, 0xffff));
        return f;
      }
      case "tver": {
        const f = this.#write(e, false);
        f[B + 1] = (f[B + 1] & 0xf0) | randInt(r, 1, 15);
        this.#recrc(f);
        return f;
      }
      case "opcode-unknown": {
        const f = this.#write(e, false);
        const ops = t.ib ? IB_UNKNOWN_OPCODES : UNKNOWN_OPCODES;
        f[B] = ops[randInt(r, 0, ops.length - 1)];
        this.#recrc(f);
        return f;
      }
      case "pad-too-long": {
        // a response with no payload: any pad count claims bytes that are not there
        const f = this.#response("ack", this.#ghostPsn());
        f[B + 1] |= randInt(r, 1, 3) << 4;
        this.#recrc(f);
        return f;
      }
      case "payload-on-ack":
        return this.#frame(0, {
          bth: { opcode: OP.RC_ACKNOWLEDGE, destQp: t.victims[0].qpn, psn: this.#ghostPsn() },
          aeth: { syndrome: 0x1f, msn: 0 },
          payload: randBytes(r, 4 * randInt(r, 1, 4)),
        });
      case "pkey": {
        const f = this.#write(e, false);
        wr16(f, B + 2, (randInt(r, 0, 0x7ffe) | (randInt(r, 0, 1) << 15)) & 0xffff);
        this.#recrc(f);
        return f;
      }
      case "qpn-unused": {
        const f = this.#write(e, false);
        wr24(f, B + 5, randInt(r, UNUSED_QPN.lo, UNUSED_QPN.hi));
        this.#recrc(f);
        return f;
      }
      case "ud-to-rc":
        return this.#frame(0, {
          bth: { opcode: OP.UD_SEND_ONLY, destQp: t.victims[0].qpn, psn: e },
          deth: { qkey: randInt(r, 0, 0xffffffff), reserved8: 0, srcQp: randInt(r, 2, 0xffffff) },
          payload: randBytes(r, randInt(r, 0, 64)),
        });
      case "foreign-src":
        return this.#write(e, false, { foreign: true });
      case "foreign-src-ack":
        return this.#response("ack", this.#ghostPsn(), true);
      case "psn-ahead":
        return this.#write(psnAdd(e, randInt(r, 1, 0x7fffff)), false);
      case "dup-write":
        return this.#write(this.#dupPsn(), false);
      case "dup-read":
        return this.#read(this.#dupPsn("read"));
      case "dup-atomic":
        // a repeated atomic is answered from its saved result, never executed again
        return this.#atomic(this.#dupPsn("atomic"), false);
      case "ghost-ack":
        return this.#response("ack", this.#ghostPsn());
      case "ghost-read-resp":
        return this.#response("read", this.#ghostPsn());
      case "ghost-atomic-ack":
        return this.#response("atomic", this.#ghostPsn());
    }
    if (t.ib) return this.#makeIb(what) ?? this.#makeUd(what);
    return this.#makeUd(what);
  }

  /** Build native IB link mutation `what` (undefined: not one); none is taken. */
  #makeIb(what: string): Uint8Array | undefined {
    const r = this.#rng;
    const ib = this.#t.ib!;
    const e = this.epsn;
    switch (what) {
      case "vcrc-flip": {
        const f = this.#write(e, false);
        f[f.length - 1 - randInt(r, 0, 1)] ^= 1 << randInt(r, 0, 7);
        return f;
      }
      case "lver": {
        const f = this.#write(e, false);
        f[0] = (f[0] & 0xf0) | randInt(r, 1, 15);
        this.#recrc(f);
        return f;
      }
      case "lnh-raw": {
        // raw (0b00) or IPv6 non-IBA (0b01): not an IBA packet cnuas_ib takes
        const f = this.#write(e, false);
        f[1] = (f[1] & 0xfc) | randInt(r, 0, 1);
        this.#recrc(f);
        return f;
      }
      case "pktlen": {
        // PktLen ± 1..8 words; ICRC and VCRC where the frame's own length puts them
        const f = this.#write(e, false);
        const d = randInt(r, 1, 8) * (randInt(r, 0, 1) ? 1 : -1);
        const w = rd16(f, 4);
        wr16(f, 4, (w & 0xf800) | (((w & 0x7ff) + d) & 0x7ff));
        this.#recrc(f);
        return f;
      }
      case "trunc-lrh": {
        // shorter than LRH + BTH + ICRC + VCRC: any cut, or whole words with PktLen and VCRC agreeing
        const f = this.#write(e, false);
        if (randInt(r, 0, 1)) return f.slice(0, randInt(r, 1, IB_MIN_FRAME - 1));
        const n = 4 * randInt(r, 2, (IB_MIN_FRAME - 3) >> 2);
        const cut = new Uint8Array(n + 2);
        cut.set(f.subarray(0, n));
        fixIbLength(cut);
        return cut;
      }
      case "slid-zero":
      case "slid-mcast": {
        // the LRH of a local packet is in the ICRC (VL masked): both CRCs recomputed
        const f = this.#write(e, false);
        wr16(f, 6, what === "slid-zero" ? 0 : randInt(r, 0xc000, 0xfffe));
        this.#recrc(f);
        return f;
      }
      case "grh-bad": {
        // a unicast WRITE with a GRH, then one GRH fault: IPVer, NxtHdr, PayLen, or VL15
        const f = this.#write(e, false, { grh: true });
        const g = IB_BTH_OFF;
        switch (randInt(r, 0, 3)) {
          case 0: {
            const v = randInt(r, 0, 14);
            f[g] = (f[g] & 0x0f) | ((v >= 6 ? v + 1 : v) << 4);
            break;
          }
          case 1: {
            const n = randInt(r, 0, 0xfe);
            f[g + 6] = n >= 0x1b ? n + 1 : n;
            break;
          }
          case 2: {
            const d = randInt(r, 1, 64) * (randInt(r, 0, 1) ? 1 : -1);
            wr16(f, g + 4, (rd16(f, g + 4) + d) & 0xffff);
            break;
          }
          default:
            f[0] = 0xf0 | (f[0] & 0x0f);
        }
        writeIcrc(f, f.length - 6, ibIcrc(f, f.length - 6));
        this.#revcrc(f);
        return f;
      }
      case "vl15-to-rc":
        // VL15 masked in the ICRC: the builder's CRCs are right
        return this.#write(e, false, { lrh: { vl: 15 } });
      case "dlid-other": {
        const d = randInt(r, 1, 0xbffe);
        return this.#write(e, false, { lrh: { dlid: d >= ib.dstLid ? d + 1 : d } });
      }
      case "dlid-permissive":
        return this.#write(e, false, { lrh: { dlid: 0xffff } });
      case "mcast-dlid-no-grh": {
        // a multicast DLID without a GRH: an RC WRITE to the victim, or a UD SEND to QPN 0xFFFFFF
        const route = { lrh: { dlid: randInt(r, 0xc000, 0xfffe) } };
        if (randInt(r, 0, 1)) return this.#write(e, false, route);
        return this.#ud(MCAST_QPN, this.#t.ud?.qkey ?? randInt(r, 0, 0xffffffff), 1, route);
      }
      case "ud-src-qp0": {
        const ud = this.#udQp();
        return this.#ud(ud.qpn, ud.qkey, 0);
      }
    }
    return undefined;
  }

  /** Build UD mutation `what` (aimed at the target's UD QP or a multicast group). */
  #makeUd(what: string): Uint8Array {
    const r = this.#rng;
    const srcQp = () => randInt(r, 1, 0xfffffe);
    switch (what) {
      case "ud-no-recv": {
        const ud = this.#udQp();
        return this.#ud(ud.qpn, ud.qkey, srcQp());
      }
      case "ud-qkey": {
        const ud = this.#udQp();
        return this.#ud(ud.qpn, (ud.qkey ^ randInt(r, 1, 0xffffffff)) >>> 0, srcQp());
      }
      case "mcast-no-member": {
        const ud = this.#udQp();
        return this.#ud(MCAST_QPN, ud.qkey, srcQp(), { mcast: this.#group() });
      }
      case "mcast-not-ud":
        return this.#frame(-1, {
          bth: {
            opcode: RC_TO_MCAST[randInt(r, 0, RC_TO_MCAST.length - 1)],
            destQp: MCAST_QPN,
            psn: randInt(r, 0, 0xffffff),
          },
          reth: { va: this.#t.mr.va, rkey: this.#t.mr.rkey, dmaLen: 16 },
          payload: randBytes(r, 16),
        }, { mcast: this.#group() });
      case "mcast-unicast-dst": {
        const ud = this.#udQp();
        return this.#ud(MCAST_QPN, ud.qkey, srcQp());
      }
    }
    throw new RangeError(`WireFuzz: no mutation ${what}`);
  }

  /**
   * A PSN behind the expected one (the duplicate region): half the time an
   * executed request's (of `kind` when there is one), else any.
   */
  #dupPsn(kind?: "write" | "read" | "atomic"): number {
    const r = this.#rng;
    const done = kind ? this.#done.filter((d) => d.kind === kind).slice(-64) : [];
    if (done.length && randInt(r, 0, 1)) return done[randInt(r, 0, done.length - 1)].psn;
    return psnAdd(this.epsn, -randInt(r, 1, 0x7fffff));
  }

  /**
   * The sacrifices' steps: victim i (1..) gets fault i−1 of {@link FATAL}.
   * Victims beyond the faults get nothing.
   */
  fatalSteps(): FuzzStep[] {
    const names = Object.keys(FATAL).slice(0, Math.max(0, this.#t.victims.length - 1));
    return names.map((what) => ({
      index: this.#drawn++,
      what,
      seed: randInt(this.#master, 0, 0xffffffff),
    }));
  }

  /** The sacrifices: {@link fatalSteps}, applied. */
  fatalFrames(): FuzzFrame[] {
    return this.fatalSteps().flatMap((s) => this.apply(s));
  }

  /**
   * A fault step: for its victim, the frames of the fault (what precedes
   * the fault is taken), then a WRITE the QP, now in the error state, must
   * drop (`state_err`). The window of each victim is the same MR: a taken
   * prefix writes it and the model follows.
   */
  #fatal(step: FuzzStep): FuzzFrame[] {
    const t = this.#t;
    const r = this.#rng;
    const out: FuzzFrame[] = [];
    const what = step.what;
    const v = Object.keys(FATAL).indexOf(what) + 1;
    if (v === 0) throw new RangeError(`WireFuzz: no mutation or fault ${what}`);
    if (v >= t.victims.length) throw new RangeError(`WireFuzz: no QP to sacrifice to ${what}`);
    const half = BigInt(t.mr.len / 2);
    const q = t.victims[v];
    const write = (psn: number, va: bigint, len: number, dmaLen = len, rkey = t.mr.rkey) =>
      this.#frame(v, {
        bth: { opcode: OP.RC_RDMA_WRITE_ONLY, destQp: q.qpn, psn },
        reth: { va, rkey, dmaLen },
        payload: randBytes(r, len),
      });
    const push = (frame: Uint8Array, cls: WireClass, w: string) => {
      out.push({ frame, step: step.index, cls, what: w, victim: v, epsn: psn });
      this.#count(cls, w);
    };
    let psn = q.rqPsn;
    switch (what) {
      case "bad-rkey":
        push(
          write(psn, t.mr.va, 16, 16, (t.mr.rkey ^ randInt(r, 1, 0xffffffff)) >>> 0),
          "rem_access",
          what,
        );
        break;
      case "va-below-mr":
        push(write(psn, t.mr.va - 64n, 32), "rem_access", what);
        break;
      case "va-beyond-mr":
        push(write(psn, t.mr.va + BigInt(t.mr.len) - 16n, 32), "rem_access", what);
        break;
      case "dmalen-mismatch":
        push(write(psn, t.mr.va, 32, 64), "inv_req", what);
        break;
      case "middle-without-first":
        push(
          this.#frame(v, {
            bth: { opcode: OP.RC_RDMA_WRITE_MIDDLE, destQp: q.qpn, psn },
            payload: randBytes(r, t.pmtu),
          }),
          "inv_req",
          what,
        );
        break;
      case "last-beyond-reth": {
        // FIRST of a pmtu + 16 byte write ending where the MR's canary half starts, then a
        // LAST of 64 bytes: 48 bytes more than the RETH allows, aimed at the canary
        const va = t.mr.va + half - BigInt(t.pmtu + 16);
        const first = randBytes(r, t.pmtu);
        push(
          this.#frame(v, {
            bth: { opcode: OP.RC_RDMA_WRITE_FIRST, destQp: q.qpn, psn },
            reth: { va, rkey: t.mr.rkey, dmaLen: t.pmtu + 16 },
            payload: first,
          }),
          "accepted",
          "last-beyond-reth-first",
        );
        this.window.set(first, Number(va - t.mr.va));
        psn = psnAdd(psn, 1);
        push(
          this.#frame(v, {
            bth: { opcode: OP.RC_RDMA_WRITE_LAST, destQp: q.qpn, psn },
            payload: randBytes(r, 64),
          }),
          "inv_req",
          what,
        );
        break;
      }
      case "oversize":
        push(write(psn, t.mr.va, t.pmtu + 8), "inv_req", what);
        break;
    }
    push(write(psn, t.mr.va, 8), "state_err", "write-after-error");
    return out;
  }
}

/** wire_victim's window pattern: byte i is i * 7 + 3. */
export function victimWindow(len: number): Uint8Array {
  const w = new Uint8Array(len);
  for (let i = 0; i < len; i++) w[i] = (i * 7 + 3) & 0xff;
  return w;
}
