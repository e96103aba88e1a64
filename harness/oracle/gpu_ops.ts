/**
 * The operations of the cnuasgpu differential oracle: their shape (plain
 * data, printable as JSON), the per-seed device configuration, how each op
 * acts on the reference model (and when it is skipped on both sides), and the
 * seeded generator that aims sequences at interesting device states.
 *
 * @example
 * ```ts
 * const gen = new GpuOpGenerator(7);
 * const op = gen.next(model); // e.g. { op: "send", len: 60, seed: 123 }
 * ```
 */
import {
  GPU_IRQ,
  GPU_LINK_MTU,
  GPU_REG,
  type GpuConfig,
  type GpuEffects,
  type GpuModel,
} from "../models/gpu.ts";
import { prng, randInt } from "../prng.ts";
import { opBytes } from "./divergence.ts";

/** One operation of a differential sequence (plain data, printable as JSON). */
export type GpuOp =
  | { op: "read"; off: number }
  | { op: "write"; off: number; val: number }
  /** A BAR0 access of another size or alignment (`val` in hex: a write). */
  | { op: "odd"; off: number; size: 1 | 2 | 4 | 8; val?: string }
  | { op: "memWrite"; off: number; len: number; seed: number }
  | { op: "memRead"; off: number; len: number }
  | { op: "send"; len: number; seed: number }
  | { op: "close" }
  | { op: "listen"; on: boolean }
  | { op: "clock"; ns: number }
  | { op: "msi"; on: boolean }
  /** A system reset (ICH9 reset control), then the BARs programmed again. */
  | { op: "reset" };

/** Frames queued towards the device that the generator allows at once. */
const MAX_QUEUED = 6;

const ALL_REGS = Object.values(GPU_REG);
const WRITABLE_REGS = [
  GPU_REG.IRQ_STATUS,
  GPU_REG.IRQ_MASK,
  GPU_REG.LINK_TX_OFFSET_LO,
  GPU_REG.LINK_TX_OFFSET_HI,
  GPU_REG.LINK_TX_LEN,
  GPU_REG.LINK_TX_DOORBELL,
  GPU_REG.LINK_RX_OFFSET_LO,
  GPU_REG.LINK_RX_OFFSET_HI,
  GPU_REG.LINK_RX_BUF_SIZE,
  GPU_REG.LINK_RX_CONSUME,
];

/**
 * A BAR0 access that is not an aligned 32-bit one, aimed at the registers:
 * 1-, 2- and 8-byte accesses at and just past a register (8-byte ones both
 * 8- and only 4-aligned, so a 64-bit pair like LINK_TX_OFFSET_LO/HI is hit
 * whole), and unaligned 4-byte ones. Half are writes of a 64-bit value.
 */
export function oddAccess(
  rng: () => number,
  pick: <T>(xs: readonly T[]) => T,
): Extract<GpuOp, { op: "odd" }> {
  const size = pick([1, 2, 4, 8] as const);
  const base = pick(ALL_REGS);
  const off = size === 4 ? base + randInt(rng, 1, 3) : base + (rng() % 2 === 0 ? 0 : size);
  if (rng() % 2 === 0) return { op: "odd", off, size };
  const val = (BigInt(rng()) << 32n) | BigInt(rng());
  return { op: "odd", off, size, val: `0x${val.toString(16)}` };
}

/** Device configuration a seed runs with (small BAR1 sizes keep full compares cheap). */
export function gpuConfigForSeed(seed: number): GpuConfig {
  const rng = prng(seed ^ 0x5eed_c0de);
  const sizes = [4096, 65536, 262144, 1 << 20];
  return {
    gpuId: rng(),
    smCount: randInt(rng, 1, 256),
    lanesPerSm: randInt(rng, 1, 128),
    tensorSize: randInt(rng, 1, 64),
    devmemSize: sizes[seed % sizes.length],
    linkConfigured: true,
  };
}

/** The QEMU `-device` properties for a config (the rig adds `cnuaslink_socket`). */
export function gpuConfigProps(config: GpuConfig): Record<string, string | number> {
  return {
    gpu_id: config.gpuId,
    sm_count: config.smCount,
    lanes_per_sm: config.lanesPerSm,
    tensor_size: config.tensorSize,
    devmem_size: config.devmemSize,
  };
}

/**
 * The guard: false when `op` cannot be done in the current state (a send or
 * close with no connection, a listen that changes nothing) and is skipped on
 * both sides. `listening` is whether the peer listens now.
 */
export function gpuOpAllowed(op: GpuOp, model: GpuModel, listening: boolean): boolean {
  switch (op.op) {
    case "send":
    case "close":
      return model.peerConnected;
    case "listen":
      return op.on !== listening;
    default:
      return true;
  }
}

/**
 * Apply `op` to the model; returns its effects, or null when the op cannot be
 * done in the current state (the executor skips it on both sides).
 */
export function applyToModel(
  m: GpuModel,
  op: GpuOp,
  listening: boolean,
): { fx: GpuEffects | null; value?: bigint; bytes?: Uint8Array; listening: boolean } {
  if (!gpuOpAllowed(op, m, listening)) return { fx: null, listening };
  switch (op.op) {
    case "read": {
      const r = m.read(op.off);
      return { fx: r, value: BigInt(r.value), listening };
    }
    case "write":
      return { fx: m.write(op.off, op.val), listening };
    case "odd": {
      const r = m.access(op.off, op.size, op.val === undefined ? undefined : BigInt(op.val));
      return { fx: r, value: BigInt(r.value), listening };
    }
    case "memWrite":
      m.writeMem(op.off, opBytes(op.seed, op.len));
      return { fx: noGpuEffects(), listening };
    case "memRead":
      return { fx: noGpuEffects(), bytes: m.readMem(op.off, op.len), listening };
    case "send":
      return { fx: m.peerSend(opBytes(op.seed, op.len)), listening };
    case "close":
      return { fx: m.peerClose(), listening };
    case "listen":
      return { fx: m.setListening(op.on), listening: op.on };
    case "clock":
      return { fx: m.clockStep(op.ns), listening };
    case "msi":
      return { fx: m.setMsiEnabled(op.on), listening };
    case "reset":
      return { fx: m.reset(), listening };
  }
}

/** The effects of an op with none (BAR1 traffic). */
export function noGpuEffects(): GpuEffects {
  return { logs: [], sent: [], msi: 0, connects: 0 };
}

// ---- generator ----------------------------------------------------------------

/** Makes a seed's op generator: the differential one, or a flavor built on it. */
export type GpuGeneratorFactory = (seed: number) => { next(model: GpuModel): GpuOp };

/** The differential oracle's generator. */
export const gpuDiffGenerator: GpuGeneratorFactory = (seed) => new GpuOpGenerator(seed);

/** Produces operations from a seed, looking at the model to aim at interesting states. */
export class GpuOpGenerator {
  readonly #rng: () => number;
  #queue: GpuOp[] = [];
  /** Whether the peer listens once the queued ops have run (it starts listening). */
  #listening = true;

  constructor(seed: number) {
    this.#rng = prng(seed);
    // Start from a sensible state most of the time: interrupts enabled, receive armed.
    if (this.#chance(0.7)) this.#push({ op: "write", off: GPU_REG.IRQ_MASK, val: 3 });
    if (this.#chance(0.5)) this.#push({ op: "msi", on: true });
  }

  /** The next operation; `model` has run every operation returned before. */
  next(model: GpuModel): GpuOp {
    while (this.#queue.length === 0) this.#plan(model);
    return this.#queue.shift()!;
  }

  #int(lo: number, hi: number): number {
    return randInt(this.#rng, lo, hi);
  }

  #pick<T>(xs: readonly T[]): T {
    return xs[this.#int(0, xs.length - 1)];
  }

  #chance(p: number): boolean {
    return this.#rng() / 0x1_0000_0000 < p;
  }

  #push(op: GpuOp): void {
    this.#queue.push(op);
    if (op.op === "listen") this.#listening = op.on;
  }

  /** A BAR1 offset: mostly inside, some at the end, past it, or anywhere. */
  #offset(size: number): number {
    const rng = this.#rng;
    const r = rng() % 10;
    if (r < 6) return randInt(rng, 0, size - 1) & ~3;
    if (r < 8) return Math.max(0, size - randInt(rng, 0, 300));
    if (r < 9) return size + randInt(rng, 0, 64);
    return rng();
  }

  /** A length for a frame or buffer, the MTU edges and the whole BAR1 included. */
  #length(size: number): number {
    const rng = this.#rng;
    const r = rng() % 20;
    if (r < 12) return randInt(rng, 1, 256);
    if (r < 15) return randInt(rng, 1, 4096);
    if (r < 16) return randInt(rng, 1, GPU_LINK_MTU);
    if (r < 17) return this.#pick([0, GPU_LINK_MTU, GPU_LINK_MTU + 1]);
    if (r < 18) return size;
    return rng() % 3 === 0 ? rng() : randInt(rng, 1, 64);
  }

  #regValue(off: number, size: number): number {
    const rng = this.#rng;
    switch (off) {
      case GPU_REG.IRQ_STATUS:
      case GPU_REG.IRQ_MASK:
        return this.#chance(0.8) ? randInt(rng, 0, 3) : rng();
      case GPU_REG.LINK_TX_OFFSET_LO:
      case GPU_REG.LINK_RX_OFFSET_LO:
        return this.#offset(size) >>> 0;
      case GPU_REG.LINK_TX_OFFSET_HI:
      case GPU_REG.LINK_RX_OFFSET_HI:
        return this.#chance(0.85) ? 0 : this.#pick([1, 0xffff_ffff, rng()]);
      case GPU_REG.LINK_TX_LEN:
      case GPU_REG.LINK_RX_BUF_SIZE:
        return this.#length(size) >>> 0;
      case GPU_REG.LINK_TX_DOORBELL:
      case GPU_REG.LINK_RX_CONSUME:
        return this.#chance(0.85) ? 1 : this.#pick([0, rng()]);
      default:
        return rng();
    }
  }

  #plan(model: GpuModel): void {
    const rng = this.#rng;
    const pick = <T>(xs: readonly T[]): T => this.#pick(xs);
    const chance = (p: number) => this.#chance(p);
    const push = (op: GpuOp) => this.#push(op);
    const size = model.config.devmemSize;
    const r = randInt(rng, 0, 99);
    const connected = model.peerConnected;
    if (r < 14) {
      push({ op: "read", off: chance(0.9) ? pick(ALL_REGS) : randInt(rng, 0, 0xffff) & ~3 });
    } else if (r < 17) {
      push(oddAccess(rng, pick));
    } else if (r < 38) {
      const w = rng() % 20;
      const off = w < 16
        ? pick(WRITABLE_REGS)
        : w < 19
        ? pick(ALL_REGS)
        : randInt(rng, 0, 0xffff) & ~3;
      push({ op: "write", off, val: this.#regValue(off, size) });
    } else if (r < 46) {
      const off = randInt(rng, 0, size - 1);
      const len = Math.min(size - off, chance(0.9) ? randInt(rng, 1, 512) : randInt(rng, 1, 65536));
      push({ op: "memWrite", off, len, seed: rng() });
    } else if (r < 51) {
      const off = randInt(rng, 0, size - 1);
      push({ op: "memRead", off, len: Math.min(size - off, randInt(rng, 1, 1024)) });
    } else if (r < 63) {
      // Transmit: put a frame into BAR1, point the registers at it, ring.
      const len = chance(0.9) ? randInt(rng, 1, Math.min(size, 2048)) : this.#length(size) >>> 0;
      const off = chance(0.85)
        ? randInt(rng, 0, Math.max(0, size - Math.min(len, size)))
        : this.#offset(size);
      if (len > 0 && len <= size && off + len <= size && chance(0.8)) {
        push({ op: "memWrite", off, len, seed: rng() });
      }
      push({ op: "write", off: GPU_REG.LINK_TX_OFFSET_LO, val: off >>> 0 });
      if (chance(0.2)) {
        push({ op: "write", off: GPU_REG.LINK_TX_OFFSET_HI, val: chance(0.5) ? 0 : 1 });
      }
      push({ op: "write", off: GPU_REG.LINK_TX_LEN, val: len >>> 0 });
      push({ op: "write", off: GPU_REG.LINK_TX_DOORBELL, val: 1 });
    } else if (r < 70) {
      // Arm receive, usually with a buffer that fits.
      const buf = chance(0.85) ? randInt(rng, 256, Math.min(size, 4096)) : this.#length(size) >>> 0;
      const off = chance(0.9)
        ? randInt(rng, 0, Math.max(0, size - Math.min(buf, size)))
        : this.#offset(size);
      push({ op: "write", off: GPU_REG.LINK_RX_OFFSET_LO, val: off >>> 0 });
      if (chance(0.15)) {
        push({ op: "write", off: GPU_REG.LINK_RX_OFFSET_HI, val: chance(0.5) ? 0 : 1 });
      }
      push({ op: "write", off: GPU_REG.LINK_RX_BUF_SIZE, val: buf >>> 0 });
    } else if (r < 82) {
      if (connected && model.queuedFrames < MAX_QUEUED) {
        const x = rng() % 40;
        const len = x < 30
          ? randInt(rng, 1, 300)
          : x < 36
          ? randInt(rng, 1, GPU_LINK_MTU)
          : x < 39
          ? randInt(rng, GPU_LINK_MTU + 1, GPU_LINK_MTU + 64)
          : 0;
        push({ op: "send", len, seed: rng() });
      } else {
        push({ op: "clock", ns: pick([50e6, 100e6, 250e6, 1e9]) });
      }
    } else if (r < 90) {
      // Consume what waits, after looking at it.
      if (model.linkStatus & 2) {
        push({ op: "read", off: GPU_REG.LINK_RX_LEN });
        push({ op: "write", off: GPU_REG.IRQ_STATUS, val: GPU_IRQ.RX_READY });
      }
      push({ op: "write", off: GPU_REG.LINK_RX_CONSUME, val: 1 });
    } else if (r < 92) {
      if (connected) push({ op: "close" });
    } else if (r < 94) {
      push({ op: "listen", on: this.#listening ? chance(0.2) : chance(0.8) });
    } else if (r < 98) {
      push({ op: "clock", ns: pick([1e6, 50e6, 99e6, 100e6, 101e6, 300e6, 700e6, 2e9, 3.5e9]) });
    } else {
      push({ op: "msi", on: chance(0.5) });
    }
  }
}
