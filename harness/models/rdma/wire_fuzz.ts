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
 * @example
 * ```ts
 * const fuzz = new WireFuzz(target, 42);
 * for (let i = 0; i < 1000; i++) await fabric.inject(port, fuzz.next().frame, "egress");
 * const predicted = fuzz.predicted(); // counter name -> count
 * ```
 */
import { rd16, wr16, wr24 } from "./bytes.ts";
import { buildRoceFrame, type RoceFrameSpec } from "./build.ts";
import { roceIcrc, writeIcrc } from "./icrc.ts";
import { ipv4HeaderChecksum } from "./ip.ts";
import { OP } from "./opcodes.ts";
import { psnAdd } from "./transport.ts";
import { prng, randBytes, randInt, randU64 } from "../../prng.ts";

/** Offsets in an untagged IPv4 RoCEv2 frame. */
export const IP_OFF = 14;
/** The UDP header's offset. */
export const UDP_OFF = 34;
/** The BTH's offset (the end of the UDP header: where a RoCE parser starts). */
export const BTH_OFF = 42;

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
  | "inv_req";

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
};

/**
 * One step of the stream: mutation `what` of {@link MUTATIONS} (one frame) or
 * fault `what` of {@link FATAL} (its frames for its sacrificed QP), with the
 * seed of the step's own random choices.
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

/** The mutations of the main stream, each with its class (a table: the unit tests walk it). */
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

/** Recompute the ICRC at the end of a frame. */
function recrc(f: Uint8Array): void {
  writeIcrc(f, f.length - 4, roceIcrc(f, IP_OFF, BTH_OFF, f.length - 4));
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
    this.#names = Object.keys(MUTATIONS);
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

  /** A frame from the victims' peer to victim `v`, well formed. */
  #frame(v: number, spec: Partial<RoceFrameSpec> & Pick<RoceFrameSpec, "bth">): Uint8Array {
    const t = this.#t;
    return buildRoceFrame({
      srcMac: t.peerMac,
      dstMac: t.dstMac,
      srcIp: t.peerIp,
      dstIp: t.dstIp,
      srcPort: 0xc000 + randInt(this.#rng, 0, 0x3fff),
      ...spec,
      bth: { ...spec.bth, destQp: spec.bth.destQp ?? t.victims[v].qpn },
    });
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
  #write(psn: number, take: boolean, extra: Partial<RoceFrameSpec> = {}): Uint8Array {
    const { off, len } = this.#span(64);
    const payload = randBytes(this.#rng, len);
    const f = this.#frame(0, {
      bth: { opcode: OP.RC_RDMA_WRITE_ONLY, destQp: this.#t.victims[0].qpn, psn, ackReq: 1 },
      reth: { va: this.#t.mr.va + BigInt(off), rkey: this.#t.mr.rkey, dmaLen: len },
      payload,
      ...extra,
    });
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
  #response(kind: "ack" | "read" | "atomic", psn: number, srcIp?: number): Uint8Array {
    const qpn = this.#t.victims[0].qpn;
    const aeth = { syndrome: 0x1f, msn: randInt(this.#rng, 0, 0xffffff) };
    const src = srcIp === undefined ? {} : { srcIp };
    if (kind === "ack") {
      return this.#frame(0, { ...src, bth: { opcode: OP.RC_ACKNOWLEDGE, destQp: qpn, psn }, aeth });
    }
    if (kind === "read") {
      return this.#frame(0, {
        ...src,
        bth: { opcode: OP.RC_RDMA_READ_RESPONSE_ONLY, destQp: qpn, psn },
        aeth,
        payload: randBytes(this.#rng, randInt(this.#rng, 1, 64)),
      });
    }
    return this.#frame(0, {
      ...src,
      bth: { opcode: OP.RC_ATOMIC_ACKNOWLEDGE, destQp: qpn, psn },
      aeth,
      atomicAckEth: { origRemoteData: randU64(this.#rng) },
    });
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
      if (step.what in MUTATIONS) return [this.#main(step)];
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
    const cls = MUTATIONS[what];
    this.#count(cls, what);
    return { frame, step: step.index, cls, what, victim: what === "qpn-unused" ? -1 : 0, epsn };
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
        f[f.length - 1 - randInt(r, 0, 3)] ^= 1 << randInt(r, 0, 7);
        return f;
      }
      case "stale-icrc-payload": {
        const f = this.#write(e, false);
        // the payload starts after BTH + RETH; the last byte before the pad and ICRC is payload
        f[BTH_OFF + 12 + 16] ^= 1 << randInt(r, 0, 7);
        return f;
      }
      case "stale-icrc-psn": {
        const f = this.#write(e, false);
        f[BTH_OFF + 11] ^= 1 << randInt(r, 0, 7);
        return f;
      }
      case "stale-icrc-qpn": {
        const f = this.#write(e, false);
        f[BTH_OFF + 7] ^= 1 << randInt(r, 0, 7);
        return f;
      }
      case "stale-icrc-rkey":
      case "stale-icrc-va":
      case "stale-icrc-dmalen": {
        const f = this.#write(e, false);
        const at = { "stale-icrc-va": 0, "stale-icrc-rkey": 8, "stale-icrc-dmalen": 12 }[what];
        f[BTH_OFF + 12 + at + randInt(r, 0, 3)] ^= 1 << randInt(r, 0, 7);
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
        f[BTH_OFF + 1] = (f[BTH_OFF + 1] & 0xf0) | randInt(r, 1, 15);
        recrc(f);
        return f;
      }
      case "opcode-unknown": {
        const f = this.#write(e, false);
        f[BTH_OFF] = UNKNOWN_OPCODES[randInt(r, 0, UNKNOWN_OPCODES.length - 1)];
        recrc(f);
        return f;
      }
      case "pad-too-long": {
        // a response with no payload: any pad count claims bytes that are not there
        const f = this.#response("ack", this.#ghostPsn());
        f[BTH_OFF + 1] |= randInt(r, 1, 3) << 4;
        recrc(f);
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
        wr16(f, BTH_OFF + 2, (randInt(r, 0, 0x7ffe) | (randInt(r, 0, 1) << 15)) & 0xffff);
        recrc(f);
        return f;
      }
      case "qpn-unused": {
        const f = this.#write(e, false);
        wr24(f, BTH_OFF + 5, randInt(r, UNUSED_QPN.lo, UNUSED_QPN.hi));
        recrc(f);
        return f;
      }
      case "ud-to-rc":
        return this.#frame(0, {
          bth: { opcode: OP.UD_SEND_ONLY, destQp: t.victims[0].qpn, psn: e },
          deth: { qkey: randInt(r, 0, 0xffffffff), reserved8: 0, srcQp: randInt(r, 2, 0xffffff) },
          payload: randBytes(r, randInt(r, 0, 64)),
        });
      case "foreign-src":
        return this.#write(e, false, { srcIp: t.foreignIp });
      case "foreign-src-ack":
        return this.#response("ack", this.#ghostPsn(), t.foreignIp);
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
