/**
 * Reference model of cnuas-switch's egress QoS in eth mode, written from
 * docs/switch.md ("QoS: priorities, PFC, ECN"), not from the daemon's C:
 * classification (PCP, DSCP map), the PFC frame, ECN marking and the RED
 * draw, and the eight egress queues of each port with their XOFF/XON and
 * drop rules. Pure and without time: the drain rate, pause expiry and XOFF
 * refresh are timing, so the model says *which* frame leaves next and what
 * PFC frames an enqueue or a dequeue causes, never *when*.
 *
 * @example
 * ```ts
 * const q = new QosQueuesModel({ queueDepth: 16, maxPorts: 3 });
 * q.configure(3, { pfc: [3], prios: [{ prio: 3, xoff: 4, xon: 2 }] });
 * q.enqueue(3, frame, 1); // { outcome: "queued", pfc: [], ... }
 * ```
 */
import { ipv4ChecksumValid, ipv4HeaderChecksum } from "./rdma/ip.ts";

/** Priorities (traffic classes) per port. */
export const PRIOS = 8;
/** The nominal link speed of every port, Mb/s (what cnuas_net reports to ethtool). */
export const LINK_MBPS = 100_000;
/** One PFC quantum: 512 bit times at {@link LINK_MBPS}, in picoseconds (5.12 ns). */
export const QUANTUM_PS = 512 * 1_000_000 / LINK_MBPS;
/** Quanta the switch puts in its XOFF frames unless `qos_set` changes it. */
export const DEFAULT_QUANTA = 0xffff;
/** A PFC frame as the switch sends it, padded to 60 bytes (no FCS). */
export const PFC_FRAME_LEN = 60;
/** Shortest MAC Control frame with every PFC field (header, opcode, vector, 8 quanta). */
export const PFC_MIN_LEN = 34;
/** The destination of every PFC frame (802.1Qbb). */
export const PFC_DST = Uint8Array.of(0x01, 0x80, 0xc2, 0x00, 0x00, 0x01);
/** The switch's own MAC, the source of its PFC frames: 02:43:4e:55:53:00 ("CNUS"). */
export const SWITCH_MAC = Uint8Array.of(0x02, 0x43, 0x4e, 0x55, 0x53, 0x00);

/** The pause time of `quanta` at `linkMbps` (default the hosts' 100000), ns: 65535 → 335,539 ns. */
export function pauseNs(quanta: number, linkMbps = LINK_MBPS): number {
  return Math.floor(quanta * 512 * 1000 / linkMbps);
}

/** The default DSCP → priority map: DSCP / 8, the class selector (26 → 3, 48 → 6). */
export function defaultDscpMap(): number[] {
  return Array.from({ length: 64 }, (_, d) => d >> 3);
}

function be16(f: Uint8Array, o: number): number {
  return (f[o] << 8) | f[o + 1];
}

/**
 * Offset of the IPv4 header (untagged, or after one 802.1Q/802.1ad tag), or 0
 * when the frame does not carry a whole one (version 4, IHL ≥ 5).
 */
export function ipv4Offset(f: Uint8Array): number {
  if (f.length < 14) return 0;
  let et = be16(f, 12), off = 14;
  if (et === 0x8100 || et === 0x88a8) {
    if (f.length < 18) return 0;
    et = be16(f, 16);
    off = 18;
  }
  if (et !== 0x0800 || f.length < off + 20) return 0;
  const ihl = f[off] & 0xf;
  if (f[off] >> 4 !== 4 || ihl < 5 || f.length < off + ihl * 4) return 0;
  return off;
}

/** The frame's priority: the PCP of a VLAN tag, else the IPv4 DSCP through `dscpMap`, else 0. */
export function classify(f: Uint8Array, dscpMap: readonly number[]): number {
  if (f.length < 14) return 0;
  const et = be16(f, 12);
  if (et === 0x8100 || et === 0x88a8) return f.length >= 16 ? f[14] >> 5 : 0;
  const ip = ipv4Offset(f);
  return ip ? dscpMap[f[ip + 1] >> 2] : 0;
}

/** A decoded PFC frame. */
export interface PfcFrame {
  /** Source MAC. */
  src: Uint8Array;
  /** Class-enable vector: bit N set = priority N's quanta apply. */
  vector: number;
  /** Quanta of priorities 0..7 (0 = resume). */
  quanta: number[];
}

/** Is `f` an 802.1Qbb PFC frame (EtherType 0x8808, opcode 0x0101, all fields present)? */
export function isPfcFrame(f: Uint8Array): boolean {
  return f.length >= PFC_MIN_LEN && be16(f, 12) === 0x8808 && be16(f, 14) === 0x0101;
}

/** Decode a PFC frame; null when `f` is not one. */
export function decodePfc(f: Uint8Array): PfcFrame | null {
  if (!isPfcFrame(f)) return null;
  return {
    src: f.slice(6, 12),
    vector: f[17],
    quanta: Array.from({ length: PRIOS }, (_, p) => be16(f, 18 + 2 * p)),
  };
}

/** The PFC frame the switch sends: one priority's bit and quanta, 60 bytes, zero padded. */
export function encodePfc(prio: number, quanta: number, src: Uint8Array = SWITCH_MAC): Uint8Array {
  const f = new Uint8Array(PFC_FRAME_LEN);
  f.set(PFC_DST, 0);
  f.set(src, 6);
  f.set([0x88, 0x08, 0x01, 0x01, 0x00, 1 << prio], 12);
  f[18 + 2 * prio] = quanta >> 8;
  f[19 + 2 * prio] = quanta & 0xff;
  return f;
}

/** The IPv4 header checksum of the frame is right (false when there is no IPv4 header). */
export function ipv4ChecksumOk(f: Uint8Array): boolean {
  const ip = ipv4Offset(f);
  return ip ? ipv4ChecksumValid(f, ip) : false;
}

/**
 * ECN marking: a copy of an ECT(0)/ECT(1) IPv4 packet with CE (TOS low bits
 * 11) and its header checksum updated; null for non-ECT, CE already, or not
 * IPv4.
 */
export function ecnMark(f: Uint8Array): Uint8Array | null {
  const ip = ipv4Offset(f);
  if (!ip) return null;
  const ecn = f[ip + 1] & 3;
  if (ecn === 0 || ecn === 3) return null;
  const out = f.slice();
  out[ip + 1] |= 3;
  const c = ipv4HeaderChecksum(out, ip);
  out[ip + 10] = c >> 8;
  out[ip + 11] = c & 0xff;
  return out;
}

/** The RED generator: xorshift64 (13, 7, 17) from `seed` (0 means 1); a draw is state % 100. */
export class RedRng {
  #s: bigint;
  /** Start from `seed` (qos_set's `ecn_seed`, default 1). */
  constructor(seed = 1) {
    this.#s = BigInt(seed || 1) & 0xffffffffffffffffn;
  }
  /** The next draw, 0..99. */
  draw(): number {
    const m = 0xffffffffffffffffn;
    let s = this.#s;
    s ^= (s << 13n) & m;
    s ^= s >> 7n;
    s ^= (s << 17n) & m;
    this.#s = s;
    return Number(s % 100n);
  }
}

/** ECN marking mode of a queue. */
export type EcnMode = "off" | "step" | "red";

/** Thresholds of one egress queue, in frames queued. */
export interface PrioConfig {
  /** Above this many frames a PFC queue pauses its senders. */
  xoff: number;
  /** At or below this many it resumes them. */
  xon: number;
  /** ECN marking mode. */
  ecn: EcnMode;
  /** step: mark at ≥ ecnMin frames found queued; red: the ramp's start. */
  ecnMin: number;
  /** red: from here on every ECT packet is marked. */
  ecnMax: number;
  /** red: marking probability (percent) just below ecnMax. */
  ecnProb: number;
}

/** The defaults of a queue (docs/switch.md): xoff depth/2, xon depth/4, ECN off, min depth/4, max depth/2, 100 %. */
export function defaultPrioConfig(queueDepth: number): PrioConfig {
  const half = Math.floor(queueDepth / 2), quarter = Math.floor(queueDepth / 4);
  return { xoff: half, xon: quarter, ecn: "off", ecnMin: quarter, ecnMax: half, ecnProb: 100 };
}

/** Is a packet that finds `q` frames queued due for CE? (RED draws only on its ramp.) */
export function ecnDue(c: PrioConfig, q: number, rng: RedRng): boolean {
  switch (c.ecn) {
    case "step":
      return q >= c.ecnMin;
    case "red":
      if (q < c.ecnMin) return false;
      if (q >= c.ecnMax) return true;
      return rng.draw() * (c.ecnMax - c.ecnMin) < c.ecnProb * (q - c.ecnMin);
    default:
      return false;
  }
}

/** A PFC frame the switch sends: to `port`, for `prio`, with `quanta` (0 = XON). */
export interface PfcEvent {
  port: number;
  prio: number;
  quanta: number;
}

/** What an enqueue did. */
export interface EnqueueResult {
  outcome: "queued" | "queue_full" | "pfc_violation";
  prio: number;
  /** The frame as queued (CE-marked when `marked`). */
  frame: Uint8Array;
  marked: boolean;
  /** XOFF frames it caused, in port order. */
  pfc: PfcEvent[];
}

/** Per port and priority counters the model predicts. */
export interface QosCounters {
  queueFull: number;
  pfcViolation: number;
  ecnMarked: number;
  pauseSent: number;
  resumeSent: number;
}

interface Queue {
  frames: { frame: Uint8Array; ingress: number }[];
  xoff: boolean;
  pausedIn: Set<number>;
}

/** Options of {@link QosQueuesModel}. */
export interface QosQueuesOptions {
  /** The daemon's `--queue-depth` (frames per queue). */
  queueDepth: number;
  /** Port slots. */
  maxPorts: number;
  /** The RED seed (`ecn_seed`), default 1. */
  seed?: number;
}

/**
 * The egress queues of an eth switch: one FIFO of `queueDepth` frames per
 * port and priority, served round robin one frame a turn (7 first, then
 * downward and around, skipping empty and paused queues); PFC XOFF above
 * `xoff` to every ingress port with a frame in the queue (and, until the
 * queue is back at `xon`, to every port that adds one); a port is sent XOFF
 * when the first queue pauses it and XON when the last one releases it.
 */
export class QosQueuesModel {
  readonly queueDepth: number;
  dscpMap = defaultDscpMap();
  quanta = DEFAULT_QUANTA;
  #rng: RedRng;
  #cfg = new Map<number, PrioConfig[]>();
  #pfc = new Map<number, Set<number>>();
  #q = new Map<number, Queue[]>();
  #refs = new Map<number, number[]>();
  #c = new Map<number, QosCounters[]>();
  /** Per port: the priority the round robin looks at first. */
  #rr = new Map<number, number>();

  /** An idle switch with default thresholds everywhere. */
  constructor(opts: QosQueuesOptions) {
    this.queueDepth = opts.queueDepth;
    this.#rng = new RedRng(opts.seed);
    for (let p = 1; p <= opts.maxPorts; p++) {
      this.#cfg.set(p, Array.from({ length: PRIOS }, () => defaultPrioConfig(opts.queueDepth)));
      this.#pfc.set(p, new Set());
      this.#q.set(
        p,
        Array.from({ length: PRIOS }, () => ({ frames: [], xoff: false, pausedIn: new Set() })),
      );
      this.#refs.set(p, new Array(PRIOS).fill(0));
      this.#c.set(
        p,
        Array.from(
          { length: PRIOS },
          () => ({ queueFull: 0, pfcViolation: 0, ecnMarked: 0, pauseSent: 0, resumeSent: 0 }),
        ),
      );
    }
  }

  /** `qos_set` on one port: the PFC priorities and threshold edits. */
  configure(
    port: number,
    opts: { pfc?: number[]; prios?: ({ prio: number } & Partial<PrioConfig>)[] },
  ): void {
    if (opts.pfc) this.#pfc.set(port, new Set(opts.pfc));
    for (const e of opts.prios ?? []) Object.assign(this.#cfg.get(port)![e.prio], e);
  }

  /** Reseed the RED generator (`ecn_seed`). */
  reseed(seed: number): void {
    this.#rng = new RedRng(seed);
  }

  /** Counters of `port`, priority `prio`. */
  counters(port: number, prio: number): QosCounters {
    return this.#c.get(port)![prio];
  }

  /** Frames queued on `port` (all priorities). */
  queued(port: number): number {
    return this.#q.get(port)!.reduce((n, q) => n + q.frames.length, 0);
  }

  #ref(port: number, prio: number, out: PfcEvent[]): void {
    const refs = this.#refs.get(port)!;
    if (refs[prio]++ === 0) {
      out.push({ port, prio, quanta: this.quanta });
      this.counters(port, prio).pauseSent++;
    }
  }

  #unref(port: number, prio: number, out: PfcEvent[]): void {
    const refs = this.#refs.get(port)!;
    if (refs[prio] > 0 && --refs[prio] === 0) {
      out.push({ port, prio, quanta: 0 });
      this.counters(port, prio).resumeSent++;
    }
  }

  #pause(q: Queue, ingress: number, prio: number, out: PfcEvent[]): void {
    if (ingress === 0 || q.pausedIn.has(ingress)) return;
    q.pausedIn.add(ingress);
    this.#ref(ingress, prio, out);
  }

  /** A frame from `ingress` (0: the switch) is forwarded to `egress` and must queue. */
  enqueue(egress: number, frame: Uint8Array, ingress: number): EnqueueResult {
    const prio = classify(frame, this.dscpMap);
    const q = this.#q.get(egress)![prio];
    const cfg = this.#cfg.get(egress)![prio];
    const pfc = this.#pfc.get(egress)!.has(prio);
    const out: PfcEvent[] = [];
    if (q.frames.length >= this.queueDepth) {
      if (pfc && ingress) {
        this.counters(ingress, prio).pfcViolation++;
        return { outcome: "pfc_violation", prio, frame, marked: false, pfc: out };
      }
      this.counters(egress, prio).queueFull++;
      return { outcome: "queue_full", prio, frame, marked: false, pfc: out };
    }
    let f = frame, marked = false;
    if (ecnDue(cfg, q.frames.length, this.#rng)) {
      const m = ecnMark(frame);
      if (m) {
        f = m;
        marked = true;
        this.counters(egress, prio).ecnMarked++;
      }
    }
    q.frames.push({ frame: f, ingress });
    if (pfc && !q.xoff && q.frames.length > cfg.xoff) {
      q.xoff = true;
      for (const e of q.frames) this.#pause(q, e.ingress, prio, out);
    } else if (pfc && q.xoff) {
      this.#pause(q, ingress, prio, out);
    }
    return { outcome: "queued", prio, frame: f, marked, pfc: out };
  }

  /**
   * The next frame to leave `egress`: the head of the first non-empty
   * priority not in `paused` (priorities the host paused) in round-robin
   * order, with the XON frames its departure causes; null when nothing may
   * leave.
   */
  dequeue(
    egress: number,
    paused: ReadonlySet<number> = new Set(),
  ): { frame: Uint8Array; prio: number; pfc: PfcEvent[] } | null {
    const queues = this.#q.get(egress)!;
    const rr = this.#rr.get(egress) ?? PRIOS - 1;
    for (let k = 0; k < PRIOS; k++) {
      const prio = (rr + PRIOS - k) % PRIOS;
      const q = queues[prio];
      if (!q.frames.length || paused.has(prio)) continue;
      const { frame } = q.frames.shift()!;
      this.#rr.set(egress, (prio + PRIOS - 1) % PRIOS);
      const out: PfcEvent[] = [];
      if (q.xoff && q.frames.length <= this.#cfg.get(egress)![prio].xon) {
        q.xoff = false;
        for (const p of [...q.pausedIn].sort((a, b) => a - b)) this.#unref(p, prio, out);
        q.pausedIn.clear();
      }
      return { frame, prio, pfc: out };
    }
    return null;
  }
}
