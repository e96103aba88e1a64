/**
 * The cnuasgpu differential oracle: seeded random operation sequences
 * (`gpu_ops.ts`) run against the QEMU device (under qtest, with this process
 * as the CnuasLink peer) and the reference model side by side. Every register
 * read, BAR1 read, emitted frame, guest-error log line, INTx level, MSI
 * message and link connection must agree; the first difference fails the run
 * as a {@link Divergence}, and the failing sequence is shrunk to a short
 * reproduction. `vnic_diff.ts` is the same for cnuas-vnic.
 *
 * Register and BAR1 accesses are pipelined: each is sent with its INTx and
 * MSI checks without waiting for the answers, and compared when they come,
 * so a run costs one qtest round trip per batch instead of two per op; the
 * frames, log lines and connections of a batch are compared when it is
 * flushed (every {@link BATCH_OPS} ops, and before any other op). The peer's
 * actions, clock steps, MSI enables and resets run one at a time, after a
 * flush. Those whose effect in the device is asynchronous (a frame or a
 * close from the peer) are followed by a settle step that waits until
 * LINK_STATUS and the log count reach what the model predicts; a device
 * that never gets there fails on a timeout.
 *
 * @example
 * ```ts
 * const res = await runGpuSeed({ binary, firmware }, 7, 500);
 * if (res.divergence) console.log(formatGpuFailure(res));
 * ```
 */
import { HilError } from "../errors.ts";
import { GPU_LINK, GPU_REG, type GpuConfig, type GpuEffects, GpuModel } from "../models/gpu.ts";
import { GpuRig } from "../qtest/gpu_rig.ts";
import {
  type Divergence,
  firstDiff,
  formatFailure,
  formatOps,
  opBytes,
  type OpSource,
  type OracleEnv,
  shrinkDivergence,
  type ShrunkDivergence,
} from "./divergence.ts";
import {
  applyToModel,
  gpuConfigForSeed,
  gpuConfigProps,
  gpuDiffGenerator,
  type GpuGeneratorFactory,
  type GpuOp,
  gpuOpAllowed,
  noGpuEffects,
} from "./gpu_ops.ts";

/** The operation type, for callers that only import the runner. */
export type { GpuOp } from "./gpu_ops.ts";

/** Where QEMU is, and whether to keep a failing run's files. */
export interface GpuOracleEnv extends OracleEnv {
  /** Keep QEMU's work directory (log, stderr) of failing runs. */
  keepFailed?: boolean;
}

/** One sequence run. */
export interface GpuSequenceResult {
  /** The operations run (skipped ones included). */
  ops: GpuOp[];
  /** Operations executed and checked (not skipped). */
  executed: number;
  /** The first difference, or null. */
  divergence: Divergence<GpuOp> | null;
  /** QEMU's work directory (removed unless the run failed and `keepFailed`). */
  workDir: string;
}

/** Result of one seed. */
export interface GpuRunResult {
  /** The seed the sequence and configuration came from. */
  seed: number;
  /** The device properties the seed chose. */
  config: GpuConfig;
  /** Operations executed and checked (skipped ones not counted). */
  opsChecked: number;
  /** Wall time of the unshrunk run, in milliseconds. */
  durationMs: number;
  /** The operations run (up to the divergence, when there was one). */
  ops: GpuOp[];
  /** The first difference, or null. */
  divergence: Divergence<GpuOp> | null;
  /** The shrunk reproduction, when there was a divergence and shrinking ran. */
  shrunk?: ShrunkDivergence<GpuOp>;
  /** QEMU work directory kept for a failing run. */
  workDir?: string;
}

/** How long an asynchronous device reaction may take before it counts as missing. */
const SETTLE_MS = 2000;
/** Guest RAM word the rig aims MSI messages at. */
const MSI_WORD = 0x7000;
/** Register and BAR1 ops sent before their answers are awaited and their frames compared. */
export const BATCH_OPS = 128;
/** Bytes of frames a batch may expect the device to send before it is flushed (socket room). */
const BATCH_SENT_BYTES = 64 * 1024;
/** The ops that are pipelined: accesses whose effects are all synchronous in the device. */
const PIPELINED = new Set<GpuOp["op"]>(["read", "write", "odd", "memWrite", "memRead"]);

// ---- comparison ------------------------------------------------------------------

/**
 * Thrown at the first difference; the runner adds the operation (a
 * pipelined one names its own: `opIndex`).
 */
class DivergenceError extends HilError {
  override name = "GpuDivergence";
  constructor(readonly kind: string, readonly detail: string, readonly opIndex?: number) {
    super(`${kind}: ${detail}`);
  }
}

/** A pipelined op's checks: its index and the comparisons waiting on the device's answers. */
interface Pending {
  index: number;
  checks: Promise<void>[];
}

function expectEq(kind: string, what: string, expected: unknown, actual: unknown): void {
  const e = show(expected);
  const a = show(actual);
  if (e !== a) throw new DivergenceError(kind, `${what}: device ${a}, model ${e}`);
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

function expectBytes(kind: string, what: string, expected: Uint8Array, actual: Uint8Array): void {
  const at = firstDiff(expected, actual);
  if (at < 0) return;
  throw new DivergenceError(
    kind,
    `${what} (first difference at byte ${at}): device ${
      show(actual.subarray(at, at + 16))
    } of ${actual.length}, model ${show(expected.subarray(at, at + 16))} of ${expected.length}`,
  );
}

// ---- execution ----------------------------------------------------------------

/** The device, its peer and the model of one run. */
class Run {
  readonly model: GpuModel;
  /** Guest-error log lines the model has asked for so far. */
  expectedLogs = 0;
  /** Whether the peer listens (it does when QEMU starts). */
  listening = true;
  /** Pipelined ops not yet flushed, in order. */
  #batch: Pending[] = [];
  /** The batch's effects the flush compares: frames the device should have sent, connections. */
  #batchFx: GpuEffects = noGpuEffects();
  /** Whether an op of the batch wrote log lines (counted into `expectedLogs` as it was sent). */
  #batchLogs = false;

  constructor(readonly rig: GpuRig, config: GpuConfig) {
    this.model = new GpuModel(config, { listening: true });
  }

  /** Wait until the device's LINK_STATUS and log count reach the model's; throws on timeout. */
  async settle(before: number): Promise<void> {
    const { rig, model } = this;
    const deadline = performance.now() + SETTLE_MS;
    let status = -1;
    let logs = -1;
    for (;;) {
      status = await rig.gpu.reg(GPU_REG.LINK_STATUS);
      logs = rig.gpu.guestErrorCount();
      if (status === model.linkStatus && logs >= this.expectedLogs) break;
      // A state the device can only reach by doing something else: fail at once.
      if ((status !== model.linkStatus && status !== before) || logs > this.expectedLogs) break;
      if (performance.now() > deadline) break;
      if (logs < this.expectedLogs) await new Promise((r) => setTimeout(r, 1));
    }
    expectEq("link", "LINK_STATUS after the peer's action settled", model.linkStatus, status);
    expectEq("logs", "guest-error log lines", `${this.expectedLogs}`, `${logs}`);
  }

  /**
   * Run `op` on both sides and compare; false when the guard skipped it.
   * `index` is the op's place in the sequence (a pipelined op's divergence
   * names it).
   */
  async step(op: GpuOp, index: number): Promise<boolean> {
    const { rig, model } = this;
    const gpu = rig.gpu;
    // Model first for ops with preconditions: a skipped op is skipped on both sides.
    if (!gpuOpAllowed(op, model, this.listening)) return false;
    if (PIPELINED.has(op.op)) {
      await this.#pipeline(op, index);
      return true;
    }
    await this.flush();

    let fx: GpuEffects;
    switch (op.op) {
      case "read":
      case "write":
      case "odd":
      case "memWrite":
      case "memRead":
        throw new Error(`${op.op} is pipelined`);
      case "send": {
        const before = model.linkStatus;
        const frame = opBytes(op.seed, op.len);
        rig.conn!.send(frame, 2000);
        fx = model.peerSend(frame);
        this.expectedLogs += fx.logs.length;
        await this.settle(before);
        fx = { ...fx, logs: [] };
        break;
      }
      case "close": {
        const before = model.linkStatus;
        rig.closeConn();
        fx = model.peerClose();
        this.expectedLogs += fx.logs.length;
        await this.settle(before);
        fx = { ...fx, logs: [] };
        break;
      }
      case "listen":
        if (op.on) rig.listen();
        else rig.stopListening();
        fx = model.setListening(op.on);
        this.listening = op.on;
        break;
      case "clock":
        await gpu.qt.clockStep(op.ns);
        fx = model.clockStep(op.ns);
        break;
      case "msi":
        await gpu.setMsi(op.on);
        fx = model.setMsiEnabled(op.on);
        break;
      case "reset": {
        // What the device shows at once: the waiting frame forgotten, the link as it was.
        const before = model.linkStatus & ~GPU_LINK.RX_READY;
        await gpu.systemReset();
        fx = model.reset();
        // Frames queued behind a waiting one are read (and dropped) asynchronously.
        this.expectedLogs += fx.logs.length;
        await this.settle(before);
        fx = { ...fx, logs: [] };
        break;
      }
    }
    await this.checkAfter(fx);
    return true;
  }

  /**
   * Send a register or BAR1 access and its INTx and MSI checks without
   * awaiting them; each comparison runs when its answer comes. The model
   * moves at once, so the next op is generated from the state after this one.
   */
  async #pipeline(op: GpuOp, index: number): Promise<void> {
    const { rig, model } = this;
    const gpu = rig.gpu;
    const checks: Promise<void>[] = [];
    let fx: GpuEffects;
    switch (op.op) {
      case "read": {
        const m = model.read(op.off);
        checks.push(
          gpu.reg(op.off).then((dev) => {
            expectEq("read", `read of register 0x${op.off.toString(16)}`, m.value, dev);
          }),
        );
        fx = m;
        break;
      }
      case "write":
        checks.push(gpu.setReg(op.off, op.val));
        fx = model.write(op.off, op.val);
        break;
      case "odd": {
        const dev = gpu.regAccess(
          op.off,
          op.size,
          op.val === undefined ? undefined : BigInt(op.val),
        );
        const res = applyToModel(model, op, this.listening);
        fx = res.fx!;
        checks.push(dev.then((v) => {
          if (op.val !== undefined) return;
          expectEq("read", `${op.size}-byte read at 0x${op.off.toString(16)}`, res.value ?? 0n, v);
        }));
        break;
      }
      case "memWrite": {
        const data = opBytes(op.seed, op.len);
        checks.push(gpu.devmemWrite(op.off, data));
        model.writeMem(op.off, data);
        fx = noGpuEffects();
        break;
      }
      case "memRead": {
        const want = model.readMem(op.off, op.len);
        checks.push(
          gpu.devmemRead(op.off, op.len).then((dev) => {
            expectBytes("memory", `BAR1 read at 0x${op.off.toString(16)}`, want, dev);
          }),
        );
        fx = noGpuEffects();
        break;
      }
      default:
        throw new Error(`${op.op} is not pipelined`);
    }
    // the levels right after this op, read in order behind it
    checks.push(...this.#levelChecks(fx.msi > 0));
    // Judged at the flush; until then a rejection (QEMU gone) must not count as unhandled.
    for (const c of checks) c.catch(() => {});
    this.#batch.push({ index, checks });
    this.#batchFx.sent.push(...fx.sent);
    this.#batchFx.connects += fx.connects;
    if (fx.logs.length > 0) {
      this.expectedLogs += fx.logs.length;
      this.#batchLogs = true;
    }
    // the peer's socket holds the batch's frames until the flush reads them
    const sentBytes = this.#batchFx.sent.reduce((n, f) => n + f.length, 0);
    if (this.#batch.length >= BATCH_OPS || sentBytes >= BATCH_SENT_BYTES || fx.connects > 0) {
      await this.flush();
    }
  }

  /**
   * Await the pipelined ops' answers (the first op whose comparison failed
   * is the divergence), then compare what the batch did besides its values:
   * frames, log lines, connections.
   */
  async flush(): Promise<void> {
    const batch = this.#batch;
    if (batch.length === 0) return;
    const fx = this.#batchFx;
    const logs = this.#batchLogs;
    this.#batch = [];
    this.#batchFx = noGpuEffects();
    this.#batchLogs = false;
    const results = await Promise.all(batch.map((p) => Promise.allSettled(p.checks)));
    for (const [k, settled] of results.entries()) {
      const bad = settled.find((r) => r.status === "rejected");
      if (!bad) continue;
      const e = (bad as PromiseRejectedResult).reason;
      if (e instanceof DivergenceError) {
        throw new DivergenceError(e.kind, e.detail, batch[k].index);
      }
      throw e;
    }
    const last = batch[batch.length - 1].index;
    try {
      // the logs were counted in as the ops were sent: compare, add none; each
      // op's INTx and MSI were checked behind it
      this.#checkPeerSide({ ...fx, logs: [] }, logs);
    } catch (e) {
      if (!(e instanceof DivergenceError)) throw e;
      throw new DivergenceError(e.kind, `${e.detail} (ops up to this one)`, last);
    }
  }

  /** Compare what an op (or the device's realize) did besides its return value. */
  async checkAfter(fx: GpuEffects): Promise<void> {
    this.#checkPeerSide(fx, false);
    await Promise.all(this.#levelChecks(fx.msi > 0));
  }

  /**
   * The INTx level and the MSI word as the device has them now, against the
   * model's level and whether an MSI was due (`msiDue`); the word is
   * cleared when one was (a word left set is a difference at the next check).
   * Sent at once, compared as the answers come.
   */
  #levelChecks(msiDue: boolean): Promise<void>[] {
    const gpu = this.rig.gpu;
    const intx = this.model.intx;
    const checks = [
      gpu.intx().then((dev) => expectEq("irq", "INTx asserted", intx, dev)),
      gpu.qt.readl(MSI_WORD).then((word) => expectEq("msi", "MSI sent", msiDue, word !== 0)),
    ];
    if (msiDue) checks.push(gpu.qt.writel(MSI_WORD, 0));
    return checks;
  }

  /**
   * Frames the device sent, connections it opened and (with `fx` naming
   * some, or `compareLogs`) its log lines, against `fx` and the model.
   */
  #checkPeerSide(fx: GpuEffects, compareLogs: boolean): void {
    const { rig, model } = this;
    // Frames the device emitted during the op (sends are synchronous in the device).
    const frames = rig.drainFrames();
    expectEq(
      "frames",
      "number of frames sent to the peer",
      `${fx.sent.length}`,
      `${frames.length}`,
    );
    fx.sent.forEach((f, i) => expectBytes("frames", `frame ${i} sent to the peer`, f, frames[i]));

    // Connections the device opened (connects happen inside clock_step).
    for (let i = 0; i < fx.connects; i++) {
      const c = rig.server?.accept(2000) ?? null;
      if (!c) {
        throw new DivergenceError(
          "accept",
          `device connections to the peer: device ${i}, model ${fx.connects}`,
        );
      }
      rig.closeConn();
      rig.conn = c;
    }
    if (this.listening && rig.server) {
      const extra = rig.server.accept(0);
      if (extra) {
        extra.close();
        throw new DivergenceError(
          "accept",
          "unexpected connection from the device: device one, model none",
        );
      }
    }
    if (!model.peerConnected) rig.closeConn();

    if (fx.logs.length > 0 || compareLogs) {
      this.expectedLogs += fx.logs.length;
      expectEq(
        "logs",
        `guest-error log lines (${fx.logs.join("; ")})`,
        `${this.expectedLogs}`,
        `${rig.gpu.guestErrorCount()}`,
      );
    }
  }

  /** Final agreement: link state, logs, no stray frames, the whole of BAR1. */
  async checkEnd(): Promise<void> {
    const { rig, model } = this;
    await this.settle(model.linkStatus);
    expectEq("frames", "frames left at the end", "0", `${rig.drainFrames().length}`);
    expectEq(
      "logs",
      "guest-error log lines at the end",
      `${this.expectedLogs}`,
      `${rig.gpu.guestErrorCount()}`,
    );
    const size = model.config.devmemSize;
    const chunk = 1 << 18;
    for (let off = 0; off < size; off += chunk) {
      const len = Math.min(chunk, size - off);
      expectBytes(
        "memory",
        `BAR1 at 0x${off.toString(16)} at the end`,
        model.readMem(off, len),
        await rig.gpu.devmemRead(off, len),
      );
    }
  }
}

/** Run one sequence on a fresh QEMU and model; stops at the first difference. */
export async function runGpuSequence(
  env: GpuOracleEnv,
  config: GpuConfig,
  source: OpSource<GpuOp>,
  generator: GpuGeneratorFactory = gpuDiffGenerator,
): Promise<GpuSequenceResult> {
  const rig = await GpuRig.start({
    binary: env.binary,
    firmware: env.firmware,
    props: gpuConfigProps(config),
    prefix: "gpu-oracle-",
    env: env.qemuEnv,
  });
  const run = new Run(rig, config);
  const gen = "seed" in source ? generator(source.seed) : null;
  const total = "seed" in source ? source.count : source.list.length;
  const ops: GpuOp[] = [];
  let executed = 0;
  // -1: the realize-time checks, before the first operation.
  let index = -1;
  let divergence: Divergence<GpuOp> | null = null;
  try {
    await run.checkAfter(run.model.takeInitialEffects());
    for (index = 0; index < total; index++) {
      const op = gen ? gen.next(run.model) : (source as { list: GpuOp[] }).list[index];
      ops.push(op);
      if (await run.step(op, index)) executed++;
    }
    await run.flush();
    await run.checkEnd();
  } catch (e) {
    if (!(e instanceof DivergenceError)) throw e;
    // a pipelined op's difference is found up to BATCH_OPS ops later: it names its op
    if (e.opIndex !== undefined) index = e.opIndex;
    divergence = { opIndex: index, op: ops[index] ?? null, kind: e.kind, detail: e.detail };
  } finally {
    await rig.close({ keepFiles: divergence !== null && env.keepFailed === true });
  }
  return { ops, executed, divergence, workDir: rig.workDir };
}

/** Options of `runGpuSeed`. */
export interface GpuSeedOptions {
  /** Shrink a failing sequence (default true). */
  shrink?: boolean;
  /** Replays the shrinker may make (default 150). */
  shrinkRuns?: number;
  /** The seed's generator (default the differential one). */
  generator?: GpuGeneratorFactory;
}

/** Generate and run the sequence of `seed`; shrink it when it fails. */
export async function runGpuSeed(
  env: GpuOracleEnv,
  seed: number,
  count: number,
  opts: GpuSeedOptions = {},
): Promise<GpuRunResult> {
  const config = gpuConfigForSeed(seed);
  const t0 = performance.now();
  const generator = opts.generator ?? gpuDiffGenerator;
  const res = await runGpuSequence(
    { ...env, keepFailed: true },
    config,
    { seed, count },
    generator,
  );
  const result: GpuRunResult = {
    seed,
    config,
    opsChecked: res.executed,
    durationMs: performance.now() - t0,
    ops: res.ops,
    divergence: res.divergence,
    workDir: res.divergence ? res.workDir : undefined,
  };
  if (res.divergence && opts.shrink !== false) {
    result.shrunk = await shrinkDivergence(
      res.ops,
      res.divergence,
      async (cand) => (await runGpuSequence(env, config, { list: cand })).divergence,
      { maxRuns: opts.shrinkRuns ?? 150 },
    );
  }
  return result;
}

/** A failure as text: seed, config, divergence and the (shrunk) sequence, one op per line. */
export function formatGpuFailure(r: GpuRunResult): string {
  if (!r.divergence) return `seed ${r.seed}: no divergence`;
  const ops = r.ops.slice(0, r.divergence.opIndex + 1);
  const text = formatFailure(
    `cnuasgpu differs from its model: seed ${r.seed}, config ${JSON.stringify(r.config)}`,
    r.divergence,
    r.shrunk,
    [
      `  first ${ops.length} ops (replay with runGpuSequence(env, config, { list: ops })):`,
      ...formatOps(ops),
    ],
  );
  return r.workDir ? `${text}\n  QEMU log and stderr of the original run: ${r.workDir}` : text;
}
