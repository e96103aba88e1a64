/**
 * Reference model of cnuas-switch's forwarding and dropping decisions, written
 * from docs/switch.md (and the LRH / CnuasLink layouts in docs/wire.md and
 * docs/devices.md), not from the daemon's C. Pure: no I/O, time only through
 * `advance`.
 *
 * Ports are slots 1..maxPorts; a connection takes the lowest free slot; port 0
 * is the switch itself. `ingress` returns where a frame goes (ascending port
 * order) or why it is dropped, and keeps the per-port counters docs/switch.md
 * defines — except `queue_full`, which depends on timing and is never predicted.
 *
 * @example
 * ```ts
 * const m = new SwitchModel({ mode: "eth" });
 * const a = m.connect()!, b = m.connect()!;
 * m.ingress(a, frame); // { egress: [b] } — unknown destination floods
 * ```
 *
 * In ib mode frames are checked for a sane LRH (`bad_lrh`) and VCRC
 * (`bad_vcrc`) before the DLID decides; frames for the switch itself go to its
 * subnet manager (taken, no drop) unless the model is built with `sm: false`
 * (the daemon's `--no-sm`), when they drop as `no_sm`. {@link SmLidPlan} is
 * the SM's LID plan (docs/switch.md, "LID plan").
 */
import { ibVcrc, readVcrc } from "./rdma/icrc.ts";
import { isPfcFrame } from "./switch_qos.ts";

/** The mode a switch runs in. */
export type SwitchMode = "eth" | "ib" | "link";

/** Drop reasons, as docs/switch.md lists them. */
export const DROP_REASONS = [
  "runt",
  "oversize",
  "filtered",
  "bad_dlid",
  "bad_vcrc",
  "bad_lrh",
  "no_port",
  "loopback",
  "no_sm",
  "unknown_gpu",
  "queue_full",
  "pfc_violation",
  "mac_control",
] as const;

/** Why a frame was dropped. */
export type DropReason = typeof DROP_REASONS[number];

/** Minimum and maximum frame length per mode (bytes). */
export const FRAME_LIMITS: Record<SwitchMode, { min: number; max: number }> = {
  eth: { min: 14, max: 9216 },
  ib: { min: 8, max: 9216 },
  link: { min: 8, max: 65536 },
};

/** Learned MACs / gpu_ids the switch holds at most. */
export const FDB_CAPACITY = 4096;

/** First multicast LID; 0xC000..0xFFFE are multicast. */
export const MLID_FIRST = 0xc000;
/** Last multicast LID. */
export const MLID_LAST = 0xfffe;
/** The permissive LID: addressed to the switch itself. */
export const PERMISSIVE_LID = 0xffff;
/** CnuasLink destination meaning "every other port". */
export const GPU_ID_ALL = 0xffffffff;

/** Counters of one port, as the daemon keeps them. */
export interface PortCounters {
  /** Frames received on the port. */
  rxFrames: number;
  /** Bytes received on the port. */
  rxBytes: number;
  /** Frames sent out of the port. */
  txFrames: number;
  /** Bytes sent out of the port. */
  txBytes: number;
  /** Dropped frames by reason. */
  drops: Record<DropReason, number>;
}

/** The outcome of one ingress frame. */
export interface Decision {
  /** Ports the frame is sent out of, ascending (empty when dropped). */
  egress: number[];
  /** Set when the frame was dropped. */
  drop?: DropReason;
}

/** A port slot's state. */
export type PortState = "free" | "up" | "down";

/** Options of `SwitchModel`. */
export interface SwitchModelOptions {
  mode: SwitchMode;
  /** Default 64. */
  maxPorts?: number;
  /** MAC aging in seconds, 0 = never; default 300. */
  agingSec?: number;
  /** ib: a subnet manager takes frames for the switch (default true; false = `--no-sm`). */
  sm?: boolean;
}

/**
 * docs/switch.md ("Forwarding", ib step 1): is the LRH of `f` acceptable?
 * LVer 0, LNH 0b10 or 0b11, PktLen × 4 + 2 = length, no VL 15 with a GRH,
 * SLID neither 0 nor multicast. `f` holds at least the 8-byte LRH.
 */
export function lrhValid(f: Uint8Array): boolean {
  const vl = f[0] >> 4, lver = f[0] & 0xf, lnh = f[1] & 3;
  const pktLen = ((f[4] << 8) | f[5]) & 0x7ff;
  const slid = (f[6] << 8) | f[7];
  if (lver !== 0 || lnh < 2) return false;
  if (pktLen * 4 + 2 !== f.length) return false;
  if (vl === 15 && lnh === 3) return false;
  return slid !== 0 && !(slid >= MLID_FIRST && slid <= MLID_LAST);
}

/** docs/switch.md ("Forwarding", ib step 2): the last two bytes are the VCRC of the rest. */
export function vcrcValid(f: Uint8Array): boolean {
  return ibVcrc(f, f.length - 2) === readVcrc(f, f.length - 2);
}

/**
 * The subnet manager's LID plan (docs/switch.md, "LID plan"): the SM has
 * `start`; each port GUID gets the next LID at its first successful
 * discovery and keeps it for the daemon's lifetime, wherever it reconnects.
 */
export class SmLidPlan {
  /** The SM's own LID. */
  readonly smLid: number;
  #next: number;
  #byGuid = new Map<bigint, number>();
  #port = new Map<number, number>();

  /** A plan starting at `start` (the daemon's `--sm-lid-start`, default 1). */
  constructor(start = 1) {
    this.smLid = start;
    this.#next = start + 1;
  }

  /** The node with `guid` was discovered on `port`: its LID (new or remembered). */
  discovered(guid: bigint, port: number): number | null {
    let lid = this.#byGuid.get(guid);
    if (lid === undefined) {
      if (this.#next >= MLID_FIRST) return null;
      lid = this.#next++;
      this.#byGuid.set(guid, lid);
    }
    this.#port.set(lid, port);
    return lid;
  }

  /** The LID of `guid`, if it was ever discovered. */
  lidOf(guid: bigint): number | undefined {
    return this.#byGuid.get(guid);
  }

  /** The LFT the SM programs: SM LID -> 0, each end LID -> the port it was last seen on. */
  lft(): Map<number, number> {
    return new Map([[this.smLid, 0], ...this.#port]);
  }
}

interface Learned {
  port: number;
  seenNs: bigint;
}

function zeroCounters(): PortCounters {
  return {
    rxFrames: 0,
    rxBytes: 0,
    txFrames: 0,
    txBytes: 0,
    drops: Object.fromEntries(DROP_REASONS.map((r) => [r, 0])) as Record<DropReason, number>,
  };
}

function macKey(f: Uint8Array, off: number): string {
  return Array.from(f.subarray(off, off + 6), (b) => b.toString(16).padStart(2, "0")).join(":");
}

function u32le(f: Uint8Array, off: number): number {
  return (f[off] | (f[off + 1] << 8) | (f[off + 2] << 16) | (f[off + 3] << 24)) >>> 0;
}

/** The model. Mutable state, deterministic transitions. */
export class SwitchModel {
  /** The mode the switch runs in. */
  readonly mode: SwitchMode;
  /** Number of port slots (ports 1..maxPorts). */
  readonly maxPorts: number;
  /** MAC aging time in nanoseconds, 0 = never. */
  readonly agingNs: bigint;
  /** ib: frames for the switch are taken by its subnet manager. */
  readonly sm: boolean;
  #now = 0n;
  #state: PortState[];
  #counters: PortCounters[];
  #macs = new Map<string, Learned>();
  #gpus = new Map<number, number>();
  #portGpu = new Map<number, number>();
  #lft = new Map<number, number>();
  #mcast = new Map<number, Set<number>>();

  /** A switch with every port slot free and empty tables. */
  constructor(opts: SwitchModelOptions) {
    this.mode = opts.mode;
    this.maxPorts = opts.maxPorts ?? 64;
    this.agingNs = BigInt(opts.agingSec ?? 300) * 1_000_000_000n;
    this.sm = opts.sm ?? true;
    this.#state = Array.from({ length: this.maxPorts + 1 }, () => "free" as PortState);
    this.#counters = Array.from({ length: this.maxPorts + 1 }, zeroCounters);
  }

  /** Move the clock forward (the daemon's `advance_time`). */
  advance(seconds: number): void {
    this.#now += BigInt(seconds) * 1_000_000_000n;
  }

  /** A device connects: it takes the lowest free slot; null when none is free. */
  connect(): number | null {
    for (let p = 1; p <= this.maxPorts; p++) {
      if (this.#state[p] === "free") {
        this.#state[p] = "up";
        this.#counters[p] = zeroCounters();
        return p;
      }
    }
    return null;
  }

  /** The device on `port` goes away: learned state on that port is forgotten. */
  disconnect(port: number): void {
    if (this.#state[port] !== "up") return;
    this.#state[port] = "free";
    for (const [k, v] of this.#macs) if (v.port === port) this.#macs.delete(k);
    for (const [k, v] of this.#gpus) if (v === port) this.#gpus.delete(k);
    this.#portGpu.delete(port);
  }

  /** Cable pull: disconnect and reserve the slot. */
  linkDown(port: number): void {
    this.disconnect(port);
    this.#state[port] = "down";
  }

  /** A downed slot becomes free for the next connection. */
  linkUp(port: number): void {
    if (this.#state[port] === "down") this.#state[port] = "free";
  }

  /** State of a slot. */
  portState(port: number): PortState {
    return this.#state[port] ?? "free";
  }

  /** Ports currently up, ascending. */
  upPorts(): number[] {
    const out: number[] = [];
    for (let p = 1; p <= this.maxPorts; p++) if (this.#state[p] === "up") out.push(p);
    return out;
  }

  /** Counters of the current connection on `port` (a copy). */
  counters(port: number): PortCounters {
    const c = this.#counters[port];
    return { ...c, drops: { ...c.drops } };
  }

  /** Set (`port` number) or clear (`null`) one LFT entry. */
  setLft(lid: number, port: number | null): void {
    if (port === null) this.#lft.delete(lid);
    else this.#lft.set(lid, port);
  }

  /** Subscribe `port` to multicast LID `mlid`. */
  mcastJoin(mlid: number, port: number): void {
    let s = this.#mcast.get(mlid);
    if (!s) this.#mcast.set(mlid, s = new Set());
    s.add(port);
  }

  /** Unsubscribe; a group left empty no longer exists. */
  mcastLeave(mlid: number, port: number): void {
    const s = this.#mcast.get(mlid);
    if (!s) return;
    s.delete(port);
    if (s.size === 0) this.#mcast.delete(mlid);
  }

  /** Live MAC table entries: MAC text -> port. */
  macTable(): Map<string, number> {
    const out = new Map<string, number>();
    for (const [k, v] of this.#macs) if (!this.#expired(v)) out.set(k, v.port);
    return out;
  }

  /** gpu_id -> port. */
  gpuTable(): Map<number, number> {
    return new Map(this.#gpus);
  }

  /** The gpu_id learned on `port` (link mode), if any. */
  portGpu(port: number): number | undefined {
    return this.#portGpu.get(port);
  }

  /** A frame sent out of `port` by the control socket (`inject` egress). */
  egress(port: number, frame: Uint8Array): void {
    if (this.#state[port] !== "up") return;
    this.#counters[port].txFrames++;
    this.#counters[port].txBytes += frame.length;
  }

  /** A frame arrives on `port`: decide, update state and counters. */
  ingress(port: number, frame: Uint8Array): Decision {
    const c = this.#counters[port];
    c.rxFrames++;
    c.rxBytes += frame.length;
    const d = this.#decide(port, frame);
    if (d.drop) c.drops[d.drop]++;
    for (const p of d.egress) {
      this.#counters[p].txFrames++;
      this.#counters[p].txBytes += frame.length;
    }
    return d;
  }

  #decide(port: number, f: Uint8Array): Decision {
    const lim = FRAME_LIMITS[this.mode];
    if (f.length < lim.min) return { egress: [], drop: "runt" };
    if (f.length > lim.max) return { egress: [], drop: "oversize" };
    switch (this.mode) {
      case "eth":
        return this.#eth(port, f);
      case "ib":
        return this.#ib(port, f);
      case "link":
        return this.#link(port, f);
    }
  }

  #flood(port: number): number[] {
    return this.upPorts().filter((p) => p !== port);
  }

  #expired(e: Learned): boolean {
    return this.agingNs > 0n && this.#now - e.seenNs >= this.agingNs;
  }

  #learnMac(key: string, port: number): void {
    const e = this.#macs.get(key);
    if (e) {
      e.port = port;
      e.seenNs = this.#now;
      return;
    }
    if (this.#macs.size >= FDB_CAPACITY && this.agingNs > 0n) {
      for (const [k, v] of this.#macs) if (this.#expired(v)) this.#macs.delete(k);
    }
    if (this.#macs.size < FDB_CAPACITY) this.#macs.set(key, { port, seenNs: this.#now });
  }

  #eth(port: number, f: Uint8Array): Decision {
    // MAC Control (0x8808) is link-local: a PFC frame is taken (it pauses
    // egress toward `port`, see switch_qos.ts), anything else is dropped.
    if (f[12] === 0x88 && f[13] === 0x08) {
      return isPfcFrame(f) ? { egress: [] } : { egress: [], drop: "mac_control" };
    }
    // A group address (I/G bit set) is never a valid source: not learned.
    if ((f[6] & 1) === 0) this.#learnMac(macKey(f, 6), port);
    if (f[0] & 1) return { egress: this.#flood(port) };
    const dst = macKey(f, 0);
    let e = this.#macs.get(dst);
    if (e && this.#expired(e)) {
      this.#macs.delete(dst);
      e = undefined;
    }
    if (!e) return { egress: this.#flood(port) };
    if (e.port === port) return { egress: [], drop: "filtered" };
    return { egress: [e.port] };
  }

  #ib(port: number, f: Uint8Array): Decision {
    if (!lrhValid(f)) return { egress: [], drop: "bad_lrh" };
    if (!vcrcValid(f)) return { egress: [], drop: "bad_vcrc" };
    const dlid = (f[2] << 8) | f[3];
    if (dlid === 0) return { egress: [], drop: "bad_dlid" };
    // For the switch itself: its SM takes it, or with no SM it is dropped.
    const toSwitch: Decision = this.sm ? { egress: [] } : { egress: [], drop: "no_sm" };
    if (dlid === PERMISSIVE_LID) return toSwitch;
    if (dlid >= MLID_FIRST) {
      const members = this.#mcast.get(dlid);
      if (!members) return { egress: [], drop: "bad_dlid" };
      return {
        egress: [...members].filter((p) => p !== port && this.#state[p] === "up").sort((a, b) =>
          a - b
        ),
      };
    }
    const out = this.#lft.get(dlid);
    if (out === undefined) return { egress: [], drop: "bad_dlid" };
    if (out === 0) return toSwitch;
    if (out === port) return { egress: [], drop: "loopback" };
    if (this.#state[out] !== "up") return { egress: [], drop: "no_port" };
    return { egress: [out] };
  }

  #learnGpu(port: number, src: number): void {
    if (src === GPU_ID_ALL || this.#portGpu.get(port) === src) return;
    const old = this.#portGpu.get(port);
    if (old !== undefined) {
      if (this.#gpus.get(old) === port) this.#gpus.delete(old);
      this.#portGpu.delete(port);
    }
    const prev = this.#gpus.get(src);
    if (prev !== undefined && prev !== port) this.#portGpu.delete(prev);
    this.#gpus.set(src, port);
    this.#portGpu.set(port, src);
  }

  #link(port: number, f: Uint8Array): Decision {
    const dst = u32le(f, 0);
    this.#learnGpu(port, u32le(f, 4));
    if (dst === GPU_ID_ALL) return { egress: this.#flood(port) };
    const out = this.#gpus.get(dst);
    if (out === undefined) return { egress: [], drop: "unknown_gpu" };
    if (out === port) return { egress: [], drop: "loopback" };
    return { egress: [out] };
  }
}
