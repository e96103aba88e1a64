/**
 * Differential traffic runner: seeded random frames go into a live
 * cnuas-switch and into `SwitchModel` side by side; every frame every port
 * receives must be the one the model predicts, in order, and every counter
 * must match.
 *
 * Determinism across ports: frames are sent as bursts from one port at a
 * time; after each burst a barrier (the daemon's rx counter of that port
 * reaches the model's, no egress queue holds anything) guarantees the switch
 * has finished forwarding, then every port is drained and compared. The
 * daemon processes a port's frames in order, so the model sees the same
 * sequence of events the daemon did.
 */
import type { PortStatus } from "../../harness/fabric/client.ts";
import type { Fabric } from "../../harness/fabric/switch.ts";
import {
  DROP_REASONS,
  GPU_ID_ALL,
  type SwitchMode,
  SwitchModel,
} from "../../harness/models/switch.ts";
import { prng, randBytes, randInt } from "../../harness/prng.ts";
import { ibVcrc, writeVcrc } from "../../harness/models/rdma/icrc.ts";
import { SeqpacketSocket } from "../../harness/fabric/seqpacket.ts";

/** A difference between the daemon and the model. */
export class TrafficMismatch extends Error {
  override name = "TrafficMismatch";
}

/** Switch, model and one test client per port. */
export interface Rig {
  fabric: Fabric;
  model: SwitchModel;
  /** Client socket of each port that is up. */
  clients: Map<number, SeqpacketSocket>;
}

/** What a run checked. */
export interface TrafficResult {
  /** Frames sent into the switch whose outcome was verified. */
  framesSent: number;
  /** Frames received by test ports and compared byte for byte with the model. */
  deliveriesChecked: number;
  /** Link down/up cycles exercised. */
  linkCycles: number;
  /** Frames injected through the control socket (counted in framesSent too). */
  injected: number;
  seconds: number;
}

/** Options of `runTraffic`. */
export interface TrafficOptions {
  seed: number;
  /** Bursts to send. */
  steps: number;
  /** Allow control events between bursts (aging, LFT edits, cable pulls). */
  events?: boolean;
  /** When given, every frame sent is appended here with its ingress port, in order. */
  sent?: { port: number; frame: Uint8Array }[];
}

const HEX_PREVIEW = 24;

function hex(b: Uint8Array): string {
  const s = Array.from(b.subarray(0, HEX_PREVIEW), (x) => x.toString(16).padStart(2, "0")).join("");
  return b.length > HEX_PREVIEW ? `${s}… (${b.length} B)` : `${s} (${b.length} B)`;
}

function equal(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Connect a test client and check it got the port the model predicts. */
export async function connectPort(rig: Rig): Promise<number> {
  const want = rig.model.connect();
  if (want === null) throw new TrafficMismatch("model has no free port left");
  const sock = SeqpacketSocket.connect(rig.fabric.socketPath);
  const deadline = performance.now() + 5000;
  for (;;) {
    const up = (await rig.fabric.ports()).filter((p) => p.state === "up").map((p) => p.port);
    const expected = rig.model.upPorts();
    if (up.length === expected.length) {
      if (up.join() !== expected.join()) {
        sock.close();
        throw new TrafficMismatch(`ports up ${up} but the model expects ${expected}`);
      }
      rig.clients.set(want, sock);
      return want;
    }
    if (performance.now() > deadline) throw new TrafficMismatch(`port ${want} never came up`);
    await new Promise((r) => setTimeout(r, 1));
  }
}

/** Start-state helper: `n` ports connected in order (ports 1..n). */
export async function connectPorts(rig: Rig, n: number): Promise<void> {
  for (let i = 0; i < n; i++) await connectPort(rig);
}

/** Close every client socket. */
export function closeClients(rig: Rig): void {
  for (const s of rig.clients.values()) s.close();
  rig.clients.clear();
}

/**
 * Wait until the daemon has taken in `rxFrames` frames on `port` and holds
 * nothing in any egress queue: everything it will send is in the sockets.
 */
export async function barrier(rig: Rig, port: number): Promise<PortStatus[]> {
  const want = rig.model.counters(port).rxFrames;
  const deadline = performance.now() + 5000;
  for (;;) {
    const ports = await rig.fabric.ports();
    const p = ports.find((x) => x.port === port);
    if (p && p.rxFrames === want && ports.every((x) => x.queueLen === 0)) return ports;
    if (p && p.rxFrames > want) {
      throw new TrafficMismatch(
        `port ${port}: switch counted ${p.rxFrames} rx frames, sent ${want}`,
      );
    }
    if (performance.now() > deadline) {
      throw new TrafficMismatch(
        `port ${port}: switch took in ${p?.rxFrames ?? "no"} of ${want} frames within 5 s`,
      );
    }
    await new Promise((r) => setTimeout(r, 0));
  }
}

/** Drain every port and compare with what the model said each should get. */
export function compareDeliveries(
  rig: Rig,
  expected: Map<number, Uint8Array[]>,
  context: string,
): number {
  let checked = 0;
  for (const [port, sock] of rig.clients) {
    const got = sock.drain();
    const want = expected.get(port) ?? [];
    for (let i = 0; i < Math.max(got.length, want.length); i++) {
      if (i >= got.length) {
        throw new TrafficMismatch(
          `${context}: port ${port} got ${got.length} frames, model expects ${want.length}; ` +
            `missing frame #${i}: ${hex(want[i])}`,
        );
      }
      if (i >= want.length) {
        throw new TrafficMismatch(
          `${context}: port ${port} got ${got.length} frames, model expects ${want.length}; ` +
            `unexpected frame #${i}: ${hex(got[i])}`,
        );
      }
      if (!equal(got[i], want[i])) {
        throw new TrafficMismatch(
          `${context}: port ${port} frame #${i} differs: got ${hex(got[i])}, expected ${
            hex(want[i])
          }`,
        );
      }
      checked++;
    }
  }
  return checked;
}

/** Every counter of every up port equals the model's. */
export function compareCounters(rig: Rig, ports: PortStatus[], context: string): void {
  const up = ports.filter((p) => p.state === "up").map((p) => p.port);
  const expectedUp = rig.model.upPorts();
  if (up.join() !== expectedUp.join()) {
    throw new TrafficMismatch(`${context}: ports up ${up}, model expects ${expectedUp}`);
  }
  for (const p of ports) {
    if (p.state !== "up") continue;
    const m = rig.model.counters(p.port);
    const pairs: [string, number, number][] = [
      ["rx_frames", p.rxFrames, m.rxFrames],
      ["rx_bytes", p.rxBytes, m.rxBytes],
      ["tx_frames", p.txFrames, m.txFrames],
      ["tx_bytes", p.txBytes, m.txBytes],
      ...DROP_REASONS.map((r): [string, number, number] => [`drops.${r}`, p.drops[r], m.drops[r]]),
    ];
    for (const [name, got, want] of pairs) {
      if (got !== want) {
        throw new TrafficMismatch(
          `${context}: port ${p.port} ${name} is ${got}, model says ${want}`,
        );
      }
    }
    if (rig.model.mode === "link" && p.gpuId !== rig.model.portGpu(p.port)) {
      throw new TrafficMismatch(
        `${context}: port ${p.port} gpu_id ${p.gpuId}, model says ${rig.model.portGpu(p.port)}`,
      );
    }
  }
}

/** Send a burst from `port`, then check every delivery against the model. */
export async function sendAndCheck(
  rig: Rig,
  port: number,
  frames: Uint8Array[],
  context: string,
): Promise<number> {
  const expected = new Map<number, Uint8Array[]>();
  for (const f of frames) {
    for (const e of rig.model.ingress(port, f).egress) {
      const l = expected.get(e) ?? [];
      l.push(f);
      expected.set(e, l);
    }
  }
  const sock = rig.clients.get(port);
  if (!sock) throw new TrafficMismatch(`${context}: no client on port ${port}`);
  for (const f of frames) sock.send(f);
  await barrier(rig, port);
  return compareDeliveries(rig, expected, context);
}

/** Random frame generation and control events for one mode. */
interface ModeDriver {
  setup(rig: Rig): Promise<void>;
  frame(rng: () => number, port: number): Uint8Array;
  event(rng: () => number, rig: Rig): Promise<void>;
}

function pick<T>(rng: () => number, xs: readonly T[]): T {
  return xs[randInt(rng, 0, xs.length - 1)];
}

/** A length: mostly ordinary, sometimes runt, at the limit, or oversize. */
function length(rng: () => number, min: number, max: number, typical: number): number {
  const r = randInt(rng, 0, 99);
  if (r < 4) return randInt(rng, 0, min - 1);
  if (r < 6) return max;
  if (r < 8) return randInt(rng, max + 1, max + 64);
  if (r < 10) return randInt(rng, Math.max(min, max - 2048), max);
  return randInt(rng, min, typical);
}

function withHeader(rng: () => number, len: number, header: Uint8Array): Uint8Array {
  const f = randBytes(rng, len);
  f.set(header.subarray(0, Math.min(len, header.length)));
  return f;
}

function ethDriver(ports: number): ModeDriver {
  const macOf = (p: number, k: number) => [0x02, 0, 0, 0, p, k];
  const unknown = [0x02, 0x99, 0, 0, 0, 1];
  const bcast = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
  const mcast = [0x01, 0x00, 0x5e, 0x00, 0x00, 0x07];
  return {
    setup: () => Promise.resolve(),
    frame(rng, port) {
      const r = randInt(rng, 0, 99);
      const dst = r < 55
        ? macOf(randInt(rng, 1, ports), randInt(rng, 0, 1))
        : r < 70
        ? unknown
        : r < 85
        ? bcast
        : mcast;
      const s = randInt(rng, 0, 99);
      const src = s < 88
        ? macOf(port, randInt(rng, 0, 1))
        : s < 96
        ? macOf(randInt(rng, 1, ports), randInt(rng, 0, 1)) // a station moves
        : mcast; // invalid source: never learned
      const header = new Uint8Array([...dst, ...src, 0x88, 0xb5]);
      return withHeader(rng, length(rng, 14, 9216, 200), header);
    },
    async event(rng, rig) {
      if (randInt(rng, 0, 3) === 0) {
        // Age everything out: both clocks jump past the aging time.
        await rig.fabric.advanceTime(301);
        rig.model.advance(301);
      }
    },
  };
}

/** Options of {@link ibFrame}. */
export interface IbFrameOptions {
  /** Source LID; default 1. */
  slid?: number;
  /** Virtual lane; default 0. */
  vl?: number;
  /** Link next header; default 0b10 (BTH follows). */
  lnh?: number;
  /** Filler after the LRH (random or zeros); the VCRC is computed over it. */
  body?: Uint8Array;
}

/**
 * A native-IB frame of `len` bytes (4 × PktLen + 2) with a valid LRH and
 * VCRC, so the switch's `bad_lrh` / `bad_vcrc` checks pass; the bytes between
 * LRH and VCRC are `body` (zeros by default).
 */
export function ibFrame(dlid: number, len = 32, opts: IbFrameOptions = {}): Uint8Array {
  if (len < 10 || (len - 2) % 4 !== 0) throw new RangeError(`ibFrame: length ${len} not 4k+2`);
  const f = new Uint8Array(len);
  if (opts.body) f.set(opts.body.subarray(0, len - 10), 8);
  const slid = opts.slid ?? 1;
  const words = (len - 2) / 4;
  f.set([
    (opts.vl ?? 0) << 4,
    opts.lnh ?? 2,
    dlid >> 8,
    dlid & 0xff,
    words >> 8,
    words & 0xff,
    slid >> 8,
    slid & 0xff,
  ]);
  writeVcrc(f, len - 2, ibVcrc(f, len - 2));
  return f;
}

/** A frame the LRH check refuses, one of the docs/switch.md conditions at random. */
function badLrh(rng: () => number, dlid: number, slid: number): Uint8Array {
  const len = 4 * randInt(rng, 3, 60) + 2;
  const kind = randInt(rng, 0, 5);
  const f = ibFrame(dlid, len, {
    slid: kind === 4 ? 0 : kind === 5 ? randInt(rng, 0xc000, 0xfffe) : slid,
    vl: kind === 3 ? 15 : 0,
    lnh: kind === 1 ? randInt(rng, 0, 1) : kind === 3 ? 3 : 2,
    body: randBytes(rng, len),
  });
  if (kind === 0) f[0] |= randInt(rng, 1, 15); // LVer
  if (kind === 2) f[5] ^= randInt(rng, 1, 0xff); // PktLen no longer the length
  if (kind !== 2) writeVcrc(f, len - 2, ibVcrc(f, len - 2)); // only the LRH is wrong
  return f;
}

function ibDriver(ports: number): ModeDriver {
  const lidOf = (p: number) => 0x10 + p;
  const SWITCH_LID = 0x100;
  const ABSENT_PORT_LID = 0x200; // routed to a port nothing is connected to
  const MLIDS = [0xc001, 0xc002, 0xc003];
  const setLft = async (rig: Rig, lid: number, port: number | null) => {
    await rig.fabric.setLft([{ lid, port }]);
    rig.model.setLft(lid, port);
  };
  const mcast = async (rig: Rig, mlid: number, port: number, join: boolean) => {
    if (join) {
      await rig.fabric.mcastJoin(mlid, port);
      rig.model.mcastJoin(mlid, port);
    } else {
      await rig.fabric.mcastLeave(mlid, port);
      rig.model.mcastLeave(mlid, port);
    }
  };
  return {
    async setup(rig) {
      for (let p = 1; p <= ports; p++) await setLft(rig, lidOf(p), p);
      await setLft(rig, SWITCH_LID, 0);
      await setLft(rig, ABSENT_PORT_LID, 40);
      for (const p of [1, 2, 3]) await mcast(rig, MLIDS[0], p, true);
      for (let p = 4; p <= ports; p++) await mcast(rig, MLIDS[1], p, true);
      await mcast(rig, MLIDS[1], 40, true);
    },
    frame(rng, port) {
      const r = randInt(rng, 0, 99);
      const dlid = r < 50
        ? lidOf(randInt(rng, 1, ports))
        : r < 55
        ? 0
        : r < 60
        ? 0xffff
        : r < 72
        ? pick(rng, MLIDS)
        : r < 77
        ? SWITCH_LID
        : r < 82
        ? ABSENT_PORT_LID
        : randInt(rng, 1, 0xbfff);
      // Size rules first (runt, oversize), then the LRH and VCRC checks,
      // then valid frames for the DLID rules.
      const k = randInt(rng, 0, 99);
      if (k < 3) return randBytes(rng, randInt(rng, 0, 7));
      if (k < 5) return randBytes(rng, randInt(rng, 9217, 9280));
      const slid = randInt(rng, 0, 9) ? lidOf(port) : 0xffff;
      if (k < 11) return badLrh(rng, dlid, slid);
      const words = randInt(rng, 0, 19) ? randInt(rng, 2, 80) : randInt(rng, 81, 2047);
      const len = 4 * words + 2;
      const global = randInt(rng, 0, 9) === 0;
      const f = ibFrame(dlid, len, {
        slid,
        vl: !global && randInt(rng, 0, 1) ? 15 : 0,
        lnh: global ? 3 : 2,
        body: randBytes(rng, len),
      });
      if (k < 17) f[randInt(rng, 0, len - 1)] ^= 1 << randInt(rng, 0, 7); // one bit flipped
      return f;
    },
    async event(rng, rig) {
      const r = randInt(rng, 0, 3);
      if (r === 0) await mcast(rig, pick(rng, MLIDS), randInt(rng, 1, ports), true);
      else if (r === 1) await mcast(rig, pick(rng, MLIDS), randInt(rng, 1, ports), false);
      else if (r === 2) {
        // Re-route a port's LID, sometimes to the port itself or to nothing.
        const p = randInt(rng, 1, ports);
        const to = randInt(rng, 0, 3);
        await setLft(rig, lidOf(p), to === 0 ? null : to === 1 ? randInt(rng, 1, ports) : p);
      }
    },
  };
}

function linkDriver(ports: number): ModeDriver {
  const gpuOf = (p: number) => 100 + p;
  const le = (v: number) => [v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, (v >>> 24) & 0xff];
  return {
    setup: () => Promise.resolve(),
    frame(rng, port) {
      const r = randInt(rng, 0, 99);
      const dst = r < 60 ? gpuOf(randInt(rng, 1, ports)) : r < 80 ? GPU_ID_ALL : 7777;
      const s = randInt(rng, 0, 99);
      const src = s < 88 ? gpuOf(port) : s < 96 ? gpuOf(randInt(rng, 1, ports)) : GPU_ID_ALL;
      const header = new Uint8Array([...le(dst), ...le(src)]);
      return withHeader(rng, length(rng, 8, 65536, 300), header);
    },
    event: () => Promise.resolve(),
  };
}

function driverFor(mode: SwitchMode, ports: number): ModeDriver {
  return mode === "eth" ? ethDriver(ports) : mode === "ib" ? ibDriver(ports) : linkDriver(ports);
}

/**
 * Pull the cable on `port`: the client must see its socket close; the slot
 * is then freed and a new client reconnects into it.
 */
export async function cableCycle(rig: Rig, port: number): Promise<void> {
  await rig.fabric.linkDown(port);
  rig.model.linkDown(port);
  const old = rig.clients.get(port)!;
  rig.clients.delete(port);
  const closed = old.waitClosed(5000);
  old.close();
  if (!closed) {
    throw new TrafficMismatch(`port ${port}: link_down did not close the device's socket`);
  }
  await rig.fabric.linkUp(port);
  rig.model.linkUp(port);
  const again = await connectPort(rig);
  if (again !== port) {
    throw new TrafficMismatch(`port ${port}: reconnect after link_up landed on port ${again}`);
  }
}

/** Set up the mode's state and run `steps` random bursts through switch and model. */
export async function runTraffic(rig: Rig, opts: TrafficOptions): Promise<TrafficResult> {
  const rng = prng(opts.seed);
  const ports = rig.model.upPorts();
  const driver = driverFor(rig.model.mode, ports.length);
  await driver.setup(rig);
  const started = performance.now();
  let framesSent = 0;
  let deliveriesChecked = 0;
  let linkCycles = 0;
  let injected = 0;
  for (let step = 0; step < opts.steps; step++) {
    if (opts.events && randInt(rng, 0, 49) === 0) {
      const kind = randInt(rng, 0, 4);
      if (kind === 0) {
        await cableCycle(rig, pick(rng, rig.model.upPorts()));
        linkCycles++;
      } else if (kind === 1) {
        // A frame injected over the control socket as if it arrived on a port.
        const port = pick(rng, rig.model.upPorts());
        // The control protocol carries at most 65536 bytes per injected frame.
        const frame = driver.frame(rng, port).subarray(0, 65536);
        const d = rig.model.ingress(port, frame);
        await rig.fabric.inject(port, frame, "ingress");
        await barrier(rig, port);
        deliveriesChecked += compareDeliveries(
          rig,
          new Map(d.egress.map((p) => [p, [frame]])),
          `seed ${opts.seed} step ${step} (injected on port ${port})`,
        );
        framesSent++;
        injected++;
        opts.sent?.push({ port, frame });
      } else {
        await driver.event(rng, rig);
      }
      continue;
    }
    const port = pick(rng, rig.model.upPorts());
    const burst = Array.from({ length: randInt(rng, 1, 4) }, () => driver.frame(rng, port));
    const context = `seed ${opts.seed} step ${step} (${burst.length} frames from port ${port})`;
    deliveriesChecked += await sendAndCheck(rig, port, burst, context);
    framesSent += burst.length;
    for (const frame of burst) opts.sent?.push({ port, frame });
    if (step % 100 === 99) compareCounters(rig, await rig.fabric.ports(), context);
  }
  compareCounters(rig, await rig.fabric.ports(), `seed ${opts.seed} end`);
  return {
    framesSent,
    deliveriesChecked,
    linkCycles,
    injected,
    seconds: (performance.now() - started) / 1000,
  };
}

/** What `slowPortScenario` saw. */
export interface SlowPortResult {
  /** Frames each reading port received, in order. */
  delivered: number;
  /** Frames the stuck port's queue dropped. */
  queueFull: number;
}

/**
 * A port that stops reading must not stall the others: port 1 floods
 * `frames` numbered broadcasts while ports 2 and 3 read and a fourth port
 * never does. Needs a rig with 3 ports and a small `queueDepth`; throws
 * TrafficMismatch on a stall, a reordering or a miscount.
 */
export async function slowPortScenario(
  rig: Rig,
  frames: number,
  queueDepth: number,
): Promise<SlowPortResult> {
  const numbered = (i: number) => {
    const f = new Uint8Array(1000);
    f.set([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 1, 0, 0x88, 0xb5]);
    new DataView(f.buffer).setUint32(14, i);
    return f;
  };
  const seq = (f: Uint8Array) => new DataView(f.buffer, f.byteOffset).getUint32(14);
  const stuck = SeqpacketSocket.connect(rig.fabric.socketPath, { bufferBytes: 16384 });
  try {
    await rig.fabric.waitForPorts(4);
    const sender = rig.clients.get(1)!;
    const readers = [rig.clients.get(2)!, rig.clients.get(3)!];
    const got = readers.map(() => 0);
    const take = (k: number, f: Uint8Array) => {
      if (seq(f) !== got[k]) {
        throw new TrafficMismatch(`port ${k + 2} got frame ${seq(f)}, expected ${got[k]}`);
      }
      got[k]++;
    };
    for (let i = 0; i < frames; i++) {
      sender.send(numbered(i));
      for (const [k, r] of readers.entries()) for (const f of r.drain()) take(k, f);
    }
    for (const [k, r] of readers.entries()) {
      while (got[k] < frames) {
        const f = r.recv(5000);
        if (!f) throw new TrafficMismatch(`port ${k + 2} stalled at frame ${got[k]} of ${frames}`);
        take(k, f);
      }
    }
    const p4 = (await rig.fabric.ports()).find((p) => p.port === 4);
    if (!p4 || p4.drops.queue_full === 0) {
      throw new TrafficMismatch("the stuck port never overflowed its queue");
    }
    if (p4.queueLen !== queueDepth || p4.txFrames + p4.queueLen + p4.drops.queue_full !== frames) {
      throw new TrafficMismatch(
        `stuck port: ${p4.txFrames} sent + ${p4.queueLen} queued + ${p4.drops.queue_full} dropped ` +
          `!= ${frames} (queue depth ${queueDepth})`,
      );
    }
    // When it reads again it gets the frames that fitted, oldest first, nothing else.
    const fitted = p4.txFrames + p4.queueLen;
    for (let i = 0; i < fitted; i++) {
      const f = stuck.recv(5000);
      if (!f || seq(f) !== i) {
        throw new TrafficMismatch(
          `stuck port got ${f ? `frame ${seq(f)}` : "nothing"} as frame ${i}`,
        );
      }
    }
    if (stuck.recv(100) !== null) throw new TrafficMismatch("stuck port got more than fitted");
    return { delivered: frames, queueFull: p4.drops.queue_full };
  } finally {
    stuck.close();
  }
}
