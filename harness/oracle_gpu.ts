/**
 * Differential oracle for cnuasgpu: seeded random operation sequences run
 * against the QEMU device (under qtest, with this process as the CnuasLink
 * peer) and the reference model side by side. Every register read, BAR1
 * read, emitted frame, guest-error log line, INTx level, MSI message and
 * link connection must agree; the first difference fails the run, and the
 * failing sequence is shrunk to a short reproduction.
 *
 * Operations happen one at a time. Those whose effect in the device is
 * asynchronous (a frame or a close from the peer) are followed by a settle
 * step that waits until LINK_STATUS and the log count reach what the model
 * predicts; a device that never gets there fails on a timeout.
 *
 * @example
 * ```ts
 * const res = await runGpuSeed({ binary, firmware }, 7, 500);
 * if (res.mismatch) console.log(formatGpuFailure(res));
 * ```
 */
import { join } from "node:path";
import {
  GPU_IRQ,
  GPU_LINK_MTU,
  GPU_REG,
  type GpuConfig,
  type GpuEffects,
  GpuModel,
} from "./models/gpu.ts";
import { prng, randBytes, randInt } from "./prng.ts";
import { QtestGpu } from "./qtest_gpu.ts";
import { SeqpacketClosedError, SeqpacketServer, SeqpacketSocket } from "./seqpacket.ts";
import { shrinkOps } from "./shrink.ts";

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
  | { op: "msi"; on: boolean };

/** Where QEMU is. */
export interface GpuOracleEnv {
  /** Path of `qemu-system-x86_64` with the cnuasgpu device. */
  binary: string;
  /** Firmware search directories for `-L`. */
  firmware?: string[];
  /** Keep QEMU's work directory (log, stderr) of failing runs. */
  keepFailed?: boolean;
}

/** The first difference between device and model. */
export interface GpuMismatch {
  /** Index of the operation after which it showed. */
  index: number;
  /** That operation; null when the difference showed before the first or after the last. */
  op: GpuOp | null;
  /** What was compared. */
  what: string;
  /** What the model says. */
  expected: string;
  /** What the device did. */
  actual: string;
}

/** Result of one sequence. */
export interface GpuRunResult {
  /** The seed the sequence and configuration came from. */
  seed: number;
  /** The device properties the seed chose. */
  config: GpuConfig;
  /** Operations executed and checked (skipped ones not counted). */
  opsChecked: number;
  /** Wall time of the unshrunk run, in milliseconds. */
  durationMs: number;
  /** The whole generated sequence. */
  ops: GpuOp[];
  /** The first difference, when there was one. */
  mismatch?: GpuMismatch;
  /** The shrunk reproduction, when a mismatch was found and shrinking ran. */
  shrunk?: { ops: GpuOp[]; mismatch: GpuMismatch; runs: number };
  /** QEMU work directory kept for a failing run. */
  workDir?: string;
}

/** How long an asynchronous device reaction may take before it counts as missing. */
const SETTLE_MS = 2000;
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

/** The QEMU -device properties for a config. */
export function gpuProps(config: GpuConfig, socketPath: string): Record<string, string | number> {
  return {
    gpu_id: config.gpuId,
    sm_count: config.smCount,
    lanes_per_sm: config.lanesPerSm,
    tensor_size: config.tensorSize,
    devmem_size: config.devmemSize,
    cnuaslink_socket: socketPath,
  };
}

/** Bytes of a memWrite or send op (a function of its seed). */
export function opBytes(seed: number, len: number): Uint8Array {
  return randBytes(prng(seed), len);
}

// ---- generation ---------------------------------------------------------------

/** Generate `count` operations for `seed`, steered by a shadow model so most are meaningful. */
export function generateGpuOps(
  seed: number,
  count: number,
  config = gpuConfigForSeed(seed),
): GpuOp[] {
  const rng = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[randInt(rng, 0, xs.length - 1)];
  const chance = (p: number) => rng() / 0x1_0000_0000 < p;
  const size = config.devmemSize;
  const shadow = new GpuModel(config, { listening: true });
  let listening = true;
  const ops: GpuOp[] = [];
  const push = (op: GpuOp) => {
    ops.push(op);
    listening = applyToModel(shadow, op, listening).listening;
  };

  const offset = (): number => {
    const r = rng() % 10;
    if (r < 6) return randInt(rng, 0, size - 1) & ~3;
    if (r < 8) return Math.max(0, size - randInt(rng, 0, 300));
    if (r < 9) return size + randInt(rng, 0, 64);
    return rng();
  };
  const length = (): number => {
    const r = rng() % 20;
    if (r < 12) return randInt(rng, 1, 256);
    if (r < 15) return randInt(rng, 1, 4096);
    if (r < 16) return randInt(rng, 1, GPU_LINK_MTU);
    if (r < 17) return pick([0, GPU_LINK_MTU, GPU_LINK_MTU + 1]);
    if (r < 18) return size;
    return rng() % 3 === 0 ? rng() : randInt(rng, 1, 64);
  };
  const regValue = (off: number): number => {
    switch (off) {
      case GPU_REG.IRQ_STATUS:
      case GPU_REG.IRQ_MASK:
        return chance(0.8) ? randInt(rng, 0, 3) : rng();
      case GPU_REG.LINK_TX_OFFSET_LO:
      case GPU_REG.LINK_RX_OFFSET_LO:
        return offset() >>> 0;
      case GPU_REG.LINK_TX_OFFSET_HI:
      case GPU_REG.LINK_RX_OFFSET_HI:
        return chance(0.85) ? 0 : pick([1, 0xffff_ffff, rng()]);
      case GPU_REG.LINK_TX_LEN:
      case GPU_REG.LINK_RX_BUF_SIZE:
        return length() >>> 0;
      case GPU_REG.LINK_TX_DOORBELL:
      case GPU_REG.LINK_RX_CONSUME:
        return chance(0.85) ? 1 : pick([0, rng()]);
      default:
        return rng();
    }
  };

  // Start from a sensible state most of the time: interrupts enabled, receive armed.
  if (chance(0.7)) push({ op: "write", off: GPU_REG.IRQ_MASK, val: 3 });
  if (chance(0.5)) push({ op: "msi", on: true });

  while (ops.length < count) {
    const r = randInt(rng, 0, 99);
    const connected = shadow.peerConnected;
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
      push({ op: "write", off, val: regValue(off) });
    } else if (r < 46) {
      const off = randInt(rng, 0, size - 1);
      const len = Math.min(size - off, chance(0.9) ? randInt(rng, 1, 512) : randInt(rng, 1, 65536));
      push({ op: "memWrite", off, len, seed: rng() });
    } else if (r < 51) {
      const off = randInt(rng, 0, size - 1);
      push({ op: "memRead", off, len: Math.min(size - off, randInt(rng, 1, 1024)) });
    } else if (r < 63) {
      // Transmit: put a frame into BAR1, point the registers at it, ring.
      const len = chance(0.9) ? randInt(rng, 1, Math.min(size, 2048)) : length() >>> 0;
      const off = chance(0.85)
        ? randInt(rng, 0, Math.max(0, size - Math.min(len, size)))
        : offset();
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
      const buf = chance(0.85) ? randInt(rng, 256, Math.min(size, 4096)) : length() >>> 0;
      const off = chance(0.9) ? randInt(rng, 0, Math.max(0, size - Math.min(buf, size))) : offset();
      push({ op: "write", off: GPU_REG.LINK_RX_OFFSET_LO, val: off >>> 0 });
      if (chance(0.15)) {
        push({ op: "write", off: GPU_REG.LINK_RX_OFFSET_HI, val: chance(0.5) ? 0 : 1 });
      }
      push({ op: "write", off: GPU_REG.LINK_RX_BUF_SIZE, val: buf >>> 0 });
    } else if (r < 82) {
      if (connected && shadow.queuedFrames < MAX_QUEUED) {
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
      const status = shadow.linkStatus;
      if (status & 2) {
        push({ op: "read", off: GPU_REG.LINK_RX_LEN });
        push({ op: "write", off: GPU_REG.IRQ_STATUS, val: GPU_IRQ.RX_READY });
      }
      push({ op: "write", off: GPU_REG.LINK_RX_CONSUME, val: 1 });
    } else if (r < 92) {
      if (connected) push({ op: "close" });
    } else if (r < 94) {
      push({ op: "listen", on: listening ? chance(0.2) : chance(0.8) });
    } else if (r < 98) {
      push({ op: "clock", ns: pick([1e6, 50e6, 99e6, 100e6, 101e6, 300e6, 700e6, 2e9, 3.5e9]) });
    } else {
      push({ op: "msi", on: chance(0.5) });
    }
  }
  return ops.slice(0, count);
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
      return { fx: emptyFx(), listening };
    case "memRead":
      return { fx: emptyFx(), bytes: m.readMem(op.off, op.len), listening };
    case "send":
      if (!m.peerConnected) return { fx: null, listening };
      return { fx: m.peerSend(opBytes(op.seed, op.len)), listening };
    case "close":
      if (!m.peerConnected) return { fx: null, listening };
      return { fx: m.peerClose(), listening };
    case "listen":
      if (op.on === listening) return { fx: null, listening };
      return { fx: m.setListening(op.on), listening: op.on };
    case "clock":
      return { fx: m.clockStep(op.ns), listening };
    case "msi":
      return { fx: m.setMsiEnabled(op.on), listening };
  }
}

function emptyFx(): GpuEffects {
  return { logs: [], sent: [], msi: 0, connects: 0 };
}

// ---- execution ----------------------------------------------------------------

class Mismatch extends Error {
  override name = "GpuOracleMismatch";
  constructor(readonly detail: Omit<GpuMismatch, "index" | "op">) {
    super(`${detail.what}: expected ${detail.expected}, device ${detail.actual}`);
  }
}

function expectEq(what: string, expected: unknown, actual: unknown): void {
  const e = show(expected);
  const a = show(actual);
  if (e !== a) throw new Mismatch({ what, expected: e, actual: a });
}

function show(v: unknown): string {
  if (v instanceof Uint8Array) {
    const head = Array.from(v.subarray(0, 16), (b) => b.toString(16).padStart(2, "0")).join("");
    return `${v.length} bytes [${head}${v.length > 16 ? "…" : ""}] #${hashBytes(v)}`;
  }
  if (typeof v === "number") {
    return `0x${(v >>> 0).toString(16)}` + (v > 0xffff_ffff ? ` (${v})` : "");
  }
  if (typeof v === "bigint") return `0x${v.toString(16)}`;
  return JSON.stringify(v);
}

function hashBytes(b: Uint8Array): string {
  let h = 0x811c9dc5;
  for (const x of b) h = Math.imul(h ^ x, 0x01000193);
  return (h >>> 0).toString(16);
}

function firstDiff(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : n;
}

function expectBytes(what: string, expected: Uint8Array, actual: Uint8Array): void {
  const at = firstDiff(expected, actual);
  if (at < 0) return;
  throw new Mismatch({
    what: `${what} (first difference at byte ${at})`,
    expected: show(expected.subarray(at, at + 16)) + ` of ${expected.length}`,
    actual: show(actual.subarray(at, at + 16)) + ` of ${actual.length}`,
  });
}

/** The device and the peer's sockets of one run. */
class Rig {
  conn: SeqpacketSocket | null = null;
  server: SeqpacketServer | null;
  expectedLogs = 0;

  constructor(readonly gpu: QtestGpu, readonly socketPath: string, server: SeqpacketServer) {
    this.server = server;
  }

  /** Frames the device sent since the last call. */
  drainFrames(): Uint8Array[] {
    const out: Uint8Array[] = [];
    if (!this.conn) return out;
    try {
      for (let f = this.conn.tryRecv(); f; f = this.conn.tryRecv()) out.push(f);
    } catch (e) {
      if (!(e instanceof SeqpacketClosedError)) throw e;
    }
    return out;
  }

  closeConn(): void {
    this.conn?.close();
    this.conn = null;
  }

  close(): void {
    this.closeConn();
    this.server?.close();
    this.server = null;
  }
}

/** Wait until the device's LINK_STATUS and log count reach the model's; throws on timeout. */
async function settle(rig: Rig, model: GpuModel, before: number): Promise<void> {
  const deadline = performance.now() + SETTLE_MS;
  let status = -1;
  let logs = -1;
  for (;;) {
    status = await rig.gpu.reg(GPU_REG.LINK_STATUS);
    logs = rig.gpu.guestErrorCount();
    if (status === model.linkStatus && logs >= rig.expectedLogs) break;
    // A state the device can only reach by doing something else: fail at once.
    if ((status !== model.linkStatus && status !== before) || logs > rig.expectedLogs) break;
    if (performance.now() > deadline) break;
    if (logs < rig.expectedLogs) await new Promise((r) => setTimeout(r, 1));
  }
  expectEq("LINK_STATUS after the peer's action settled", model.linkStatus, status);
  expectEq("guest-error log lines", `${rig.expectedLogs}`, `${logs}`);
}

async function execOp(rig: Rig, model: GpuModel, op: GpuOp, listening: boolean): Promise<
  { executed: boolean; listening: boolean }
> {
  const gpu = rig.gpu;
  // Model first for ops with preconditions: a skipped op is skipped on both sides.
  const before = { peer: model.peerConnected };
  if ((op.op === "send" || op.op === "close") && !before.peer) {
    return { executed: false, listening };
  }
  if (op.op === "listen" && op.on === listening) return { executed: false, listening };

  let fx: GpuEffects;
  let nowListening = listening;
  switch (op.op) {
    case "read": {
      const dev = await gpu.reg(op.off);
      const m = model.read(op.off);
      expectEq(`read of register 0x${op.off.toString(16)}`, m.value, dev);
      fx = m;
      break;
    }
    case "write":
      await gpu.setReg(op.off, op.val);
      fx = model.write(op.off, op.val);
      break;
    case "odd": {
      const dev = await gpu.regAccess(
        op.off,
        op.size,
        op.val === undefined ? undefined : BigInt(op.val),
      );
      const res = applyToModel(model, op, listening);
      fx = res.fx!;
      if (op.val === undefined) {
        expectEq(`${op.size}-byte read at 0x${op.off.toString(16)}`, res.value ?? 0n, dev);
      }
      break;
    }
    case "memWrite": {
      const data = opBytes(op.seed, op.len);
      await gpu.devmemWrite(op.off, data);
      model.writeMem(op.off, data);
      fx = emptyFx();
      break;
    }
    case "memRead": {
      const dev = await gpu.devmemRead(op.off, op.len);
      expectBytes(`BAR1 read at 0x${op.off.toString(16)}`, model.readMem(op.off, op.len), dev);
      fx = emptyFx();
      break;
    }
    case "send": {
      const before = model.linkStatus;
      const frame = opBytes(op.seed, op.len);
      rig.conn!.send(frame, 2000);
      fx = model.peerSend(frame);
      rig.expectedLogs += fx.logs.length;
      await settle(rig, model, before);
      fx = { ...fx, logs: [] };
      break;
    }
    case "close": {
      const before = model.linkStatus;
      rig.closeConn();
      fx = model.peerClose();
      rig.expectedLogs += fx.logs.length;
      await settle(rig, model, before);
      fx = { ...fx, logs: [] };
      break;
    }
    case "listen":
      if (op.on) rig.server = SeqpacketServer.listen(rig.socketPath);
      else {
        rig.server?.close();
        rig.server = null;
      }
      fx = model.setListening(op.on);
      nowListening = op.on;
      break;
    case "clock":
      await gpu.qt.clockStep(op.ns);
      fx = model.clockStep(op.ns);
      break;
    case "msi":
      await gpu.setMsi(op.on);
      fx = model.setMsiEnabled(op.on);
      break;
  }
  await checkAfter(rig, model, fx, nowListening);
  return { executed: true, listening: nowListening };
}

async function checkAfter(
  rig: Rig,
  model: GpuModel,
  fx: GpuEffects,
  listening: boolean,
): Promise<void> {
  const gpu = rig.gpu;
  // Frames the device emitted during the op (sends are synchronous in the device).
  const frames = rig.drainFrames();
  expectEq("number of frames sent to the peer", `${fx.sent.length}`, `${frames.length}`);
  fx.sent.forEach((f, i) => expectBytes(`frame ${i} sent to the peer`, f, frames[i]));

  // Connections the device opened (connects happen inside clock_step).
  for (let i = 0; i < fx.connects; i++) {
    const c = rig.server?.accept(2000) ?? null;
    if (!c) {
      throw new Mismatch({
        what: "device connections to the peer",
        expected: `${fx.connects}`,
        actual: `${i}`,
      });
    }
    rig.closeConn();
    rig.conn = c;
  }
  if (listening && rig.server) {
    const extra = rig.server.accept(0);
    if (extra) {
      extra.close();
      throw new Mismatch({
        what: "unexpected connection from the device",
        expected: "none",
        actual: "one",
      });
    }
  }
  if (!model.peerConnected) rig.closeConn();

  if (fx.logs.length > 0) {
    rig.expectedLogs += fx.logs.length;
    expectEq(
      `guest-error log lines (${fx.logs.join("; ")})`,
      `${rig.expectedLogs}`,
      `${gpu.guestErrorCount()}`,
    );
  }

  const [intx, msiWord] = await Promise.all([gpu.intx(), gpu.qt.readl(0x7000)]);
  expectEq("INTx asserted", model.intx, intx);
  if (msiWord !== 0) await gpu.qt.writel(0x7000, 0);
  expectEq("MSI sent", fx.msi > 0, msiWord !== 0);
}

/** Final agreement: link state, logs, no stray frames, the whole of BAR1. */
async function checkEnd(rig: Rig, model: GpuModel): Promise<void> {
  await settle(rig, model, model.linkStatus);
  expectEq("frames left at the end", "0", `${rig.drainFrames().length}`);
  expectEq(
    "guest-error log lines at the end",
    `${rig.expectedLogs}`,
    `${rig.gpu.guestErrorCount()}`,
  );
  const size = model.config.devmemSize;
  const chunk = 1 << 18;
  for (let off = 0; off < size; off += chunk) {
    const len = Math.min(chunk, size - off);
    expectBytes(
      `BAR1 at 0x${off.toString(16)} at the end`,
      model.readMem(off, len),
      await rig.gpu.devmemRead(off, len),
    );
  }
}

/** Run `ops` against a fresh device and model. */
export async function runGpuOps(
  env: GpuOracleEnv,
  config: GpuConfig,
  ops: GpuOp[],
): Promise<{ opsChecked: number; mismatch?: GpuMismatch; workDir: string }> {
  const workDir = await Deno.makeTempDir({ prefix: "gpu-oracle-" });
  const socketPath = join(workDir, "link.sock");
  const server = SeqpacketServer.listen(socketPath);
  let gpu: QtestGpu;
  try {
    gpu = await QtestGpu.start({
      binary: env.binary,
      firmware: env.firmware,
      workDir,
      props: gpuProps(config, socketPath),
    });
  } catch (e) {
    server.close();
    throw e;
  }
  const rig = new Rig(gpu, socketPath, server);
  const model = new GpuModel(config, { listening: true });
  let opsChecked = 0;
  let index = -1;
  let listening = true;
  let mismatch: GpuMismatch | undefined;
  try {
    await checkAfter(rig, model, model.takeInitialEffects(), listening);
    for (index = 0; index < ops.length; index++) {
      const r = await execOp(rig, model, ops[index], listening);
      listening = r.listening;
      if (r.executed) opsChecked++;
    }
    index = ops.length;
    await checkEnd(rig, model);
  } catch (e) {
    if (!(e instanceof Mismatch)) throw e;
    mismatch = { index, op: ops[index] ?? null, ...e.detail };
  } finally {
    rig.close();
    const keep = mismatch !== undefined && env.keepFailed === true;
    await gpu.close({ keepFiles: true });
    if (!keep) await Deno.remove(workDir, { recursive: true }).catch(() => {});
  }
  return { opsChecked, mismatch, workDir };
}

/** Options of `runGpuSeed`. */
export interface GpuSeedOptions {
  /** Shrink a failing sequence (default true). */
  shrink?: boolean;
  /** Replays the shrinker may make (default 150). */
  shrinkRuns?: number;
}

/** Generate and run the sequence of `seed`; shrink it when it fails. */
export async function runGpuSeed(
  env: GpuOracleEnv,
  seed: number,
  count: number,
  opts: GpuSeedOptions = {},
): Promise<GpuRunResult> {
  const config = gpuConfigForSeed(seed);
  const ops = generateGpuOps(seed, count, config);
  const t0 = performance.now();
  const res = await runGpuOps({ ...env, keepFailed: true }, config, ops);
  const result: GpuRunResult = {
    seed,
    config,
    opsChecked: res.opsChecked,
    durationMs: performance.now() - t0,
    ops,
    mismatch: res.mismatch,
    workDir: res.mismatch ? res.workDir : undefined,
  };
  if (res.mismatch && opts.shrink !== false) {
    const prefix = ops.slice(0, Math.min(ops.length, res.mismatch.index + 1));
    let last = res.mismatch;
    const shrunk = await shrinkOps(prefix, async (cand) => {
      const r = await runGpuOps(env, config, cand);
      if (r.mismatch) last = r.mismatch;
      return r.mismatch !== undefined;
    }, { maxRuns: opts.shrinkRuns ?? 150 });
    const final = await runGpuOps(env, config, shrunk.ops);
    result.shrunk = { ops: shrunk.ops, mismatch: final.mismatch ?? last, runs: shrunk.runs };
  }
  return result;
}

/** A failure report: seed, config, the difference and the (shrunk) sequence to replay. */
export function formatGpuFailure(r: GpuRunResult): string {
  if (!r.mismatch) return `seed ${r.seed}: no mismatch`;
  const m = r.shrunk?.mismatch ?? r.mismatch;
  const ops = r.shrunk?.ops ?? r.ops.slice(0, r.mismatch.index + 1);
  const lines = [
    `cnuasgpu differs from its model: seed ${r.seed}, config ${JSON.stringify(r.config)}`,
    `  at op ${m.index} ${JSON.stringify(m.op)}: ${m.what}`,
    `    model:  ${m.expected}`,
    `    device: ${m.actual}`,
    `  ${
      r.shrunk
        ? `shrunk to ${ops.length} ops in ${r.shrunk.runs} replays`
        : `first ${ops.length} ops`
    }` +
    ` (replay with runGpuOps(env, config, ops)):`,
    ...ops.map((o, i) => `    ${String(i).padStart(4)} ${JSON.stringify(o)}`),
  ];
  if (r.workDir) lines.push(`  QEMU log and stderr of the original run: ${r.workDir}`);
  return lines.join("\n");
}
