/**
 * The cnuas-vnic differential oracle: seeded random operation sequences
 * (`vnic_ops.ts`) run on the QEMU device (through qtest, the test playing the
 * switch) and on the reference model side by side. Any difference in a
 * register read, guest memory, the interrupt line (INTx level or MSI), a frame
 * on the socket, the peer's view of the connection or the reconnects fails the
 * run as a {@link Divergence}, naming the seed, the operation and — after
 * shrinking — a minimal sequence. `gpu_diff.ts` is the same for cnuasgpu.
 *
 * Determinism: guest operations are pipelined and run in order; every socket
 * operation of the peer is followed by a barrier (see `VnicRig.barrier`), and
 * time moves only by `clock_step`, so the device and the model see the same
 * order of events.
 *
 * Guards: an operation whose DMA could touch guest-physical memory the model
 * does not describe (below 2 MiB: legacy ranges and the MSI dword; 0xb0000000
 * up to 4 GiB: MMCONFIG, BARs, IOAPIC, APIC) is skipped on both sides, as is a
 * peer send beyond 8 queued datagrams. Guards read the model's state, so a
 * shrunk sequence stays executable.
 *
 * @example
 * ```ts
 * const report = await runVnicDiff({ binary, firmware, seeds: [1, 2, 3], opsPerSeed: 500 });
 * if (report.failure) console.log(formatVnicFailure(report.failure));
 * ```
 */
import type { SparseMemory } from "../models/guest_memory.ts";
import { VNIC_REG, type VnicModel } from "../models/vnic.ts";
import { QtestError } from "../qtest/client.ts";
import { VNIC_RIG, VnicRig } from "../qtest/vnic_rig.ts";
import {
  type Divergence,
  firstDiff,
  formatFailure,
  hex,
  opBytes,
  type OpSource,
  type OracleEnv,
  shrinkDivergence,
  type ShrunkDivergence,
} from "./divergence.ts";
import {
  type AccessSize,
  DIFF_RAM,
  VNIC_DIFF_FLAVOR,
  type VnicDiffSetup,
  vnicModelForSetup,
  type VnicOp,
  type VnicOracleFlavor,
  vnicSetupForSeed,
} from "./vnic_ops.ts";

/** The operation and setup types, for callers that only import the runner. */
export type { VnicDiffSetup, VnicOp } from "./vnic_ops.ts";

const U64 = 1n << 64n;

/** One sequence run. */
export interface VnicSequenceResult {
  /** The operations executed (skipped ones included). */
  ops: VnicOp[];
  /** Operations that ran (not skipped by a guard). */
  executed: number;
  /** The first difference, or null. */
  divergence: Divergence<VnicOp> | null;
  /** The QEMU log (guest errors) of the run. */
  qemuLog: string;
  /** What the sequence exercised (model outcome counters, MSIs, ops by kind, skips). */
  coverage: Record<string, number>;
}

/** A failing seed with its shrunk reproduction. */
export interface VnicDiffFailure {
  /** The failing seed. */
  seed: number;
  /** How that seed's machine started. */
  setup: VnicDiffSetup;
  /** The first difference of the unshrunk sequence. */
  divergence: Divergence<VnicOp>;
  /** Operations up to the failing one. */
  opsToFailure: number;
  /** The shrunk sequence and its own divergence. */
  shrunk?: ShrunkDivergence<VnicOp>;
}

/** What a differential run did. */
export interface VnicDiffReport {
  /** The seeds asked for (the run stops at the first failing one). */
  seeds: number[];
  /** Operations checked on both sides (guard-skipped ones excluded). */
  opsChecked: number;
  /** Wall time of the whole run, shrinking included, in milliseconds. */
  elapsedMs: number;
  /** `opsChecked` per second of `elapsedMs`. */
  opsPerSec: number;
  /** The first failing seed, or null when every seed agreed. */
  failure: VnicDiffFailure | null;
  /** Summed coverage of every seed. */
  coverage: Record<string, number>;
}

/** Options of `runVnicDiff`. */
export interface VnicDiffOptions extends OracleEnv {
  /** Seeds to run, in order. */
  seeds: number[];
  /** Operations generated per seed. */
  opsPerSeed: number;
  /** Shrink a failure (default true). */
  shrink?: boolean;
  /** Shrink budget in ms (default 90 000). */
  shrinkBudgetMs?: number;
  /** Progress lines. */
  log?: (line: string) => void;
  /** Append every seed's QEMU guest-error log here. */
  qemuLogPath?: string;
  /** Generator and guard (default the differential oracle's). */
  flavor?: VnicOracleFlavor;
}

// ---- runner ---------------------------------------------------------------------

function cmdAddr(off: number): string {
  return `0x${(VNIC_RIG.bar + BigInt(off)).toString(16)}`;
}

const READ_CMD = { 1: "readb", 2: "readw", 4: "readl", 8: "readq" } as const;
const WRITE_CMD = { 1: "writeb", 2: "writew", 4: "writel", 8: "writeq" } as const;

function sizeMask(size: AccessSize): bigint {
  return size === 8 ? U64 - 1n : (1n << BigInt(size * 8)) - 1n;
}

class Run {
  readonly rig: VnicRig;
  readonly model: VnicModel;
  readonly mem: SparseMemory;
  readonly ops: VnicOp[] = [];
  readonly #allowed: VnicOracleFlavor["allowed"];
  divergence: Divergence<VnicOp> | null = null;
  executed = 0;
  #batch: Promise<void>[] = [];
  #batchTxBytes = 0;
  #msiSeen = 0;
  /** MSI enable as the driver last set it (the setup's mode after start and FLR). */
  #msiOn: boolean;

  constructor(rig: VnicRig, setup: VnicDiffSetup, allowed: VnicOracleFlavor["allowed"]) {
    this.rig = rig;
    this.#allowed = allowed;
    ({ model: this.model, mem: this.mem } = vnicModelForSetup(setup));
    this.#msiOn = setup.irq === "msi";
  }

  #diverge(i: number, kind: string, detail: string): void {
    if (this.divergence && this.divergence.opIndex <= i) return;
    this.divergence = { opIndex: i, op: this.ops[i], kind, detail };
  }

  /** Compare the INTx level a response carried with the model's level `want` after op i. */
  #checkIrq(i: number, irqMask: number, want: boolean): void {
    const got = (irqMask >>> this.rig.gsi & 1) === 1;
    if (got !== want) {
      this.#diverge(
        i,
        "irq",
        `INTx device ${got ? "high" : "low"}, model ${want ? "high" : "low"}`,
      );
    }
  }

  /** Queue the MSI check for op i (while MSI is on, and once after it is switched off). */
  #checkMsi(i: number, always = false): void {
    if (!this.#msiOn && !always) return;
    const want = this.model.msiCount - this.#msiSeen;
    this.#msiSeen = this.model.msiCount;
    if (want > 1) throw new Error(`model sent ${want} MSIs in one event: model bug`);
    const wantIrq = this.model.intx;
    const rd = this.rig.qt.request(`readl ${hex(VNIC_RIG.msiAddr)}`).then((rep) => {
      const got = Number(rep.text) === VNIC_RIG.msiData;
      if (got !== (want === 1)) {
        this.#diverge(
          i,
          "msi",
          `MSI device ${got ? "sent" : "not sent"}, model ${want ? "sent" : "not sent"}`,
        );
      }
      this.#checkIrq(i, rep.irqMask, wantIrq);
    });
    this.#batch.push(rd, this.rig.qt.request(`writel ${hex(VNIC_RIG.msiAddr)} 0x0`).then(() => {}));
  }

  #checkDelivery(i: number, before: number): void {
    if (this.model.deliveries === before) return;
    const d = this.model.lastDelivery!;
    const lo = Math.max(DIFF_RAM.lo, Number(d.addr) - 16);
    const hi = Math.min(DIFF_RAM.hi, Number(d.addr) + d.len + 16);
    this.#compareMemory(i, lo, hi - lo, "landing");
  }

  #compareMemory(i: number, addr: number, len: number, what: string): void {
    const want = this.mem.read(BigInt(addr), len);
    this.#batch.push(
      this.rig.qt.memRead(addr, len).then((got) => {
        const at = firstDiff(got, want);
        if (at >= 0) {
          this.#diverge(
            i,
            "memory",
            `${what} ${hex(addr)}+${len}: first difference at ${hex(addr + at)}: device ${
              got[at]
            }, model ${want[at]}`,
          );
        }
      }),
    );
  }

  /** Let every command in flight finish (or fail) without comparing further. */
  async settle(): Promise<void> {
    const batch = this.#batch;
    this.#batch = [];
    await Promise.allSettled(batch);
  }

  /** Await everything in flight, then compare the frames the peer holds. */
  async flush(i: number): Promise<void> {
    const batch = this.#batch;
    this.#batch = [];
    this.#batchTxBytes = 0;
    await Promise.all(batch);
    const got = this.rig.drain();
    const want = this.model.takeFrames();
    const n = Math.max(got.frames.length, want.length);
    for (let k = 0; k < n; k++) {
      const g = got.frames[k];
      const w = want[k];
      if (!g || !w || firstDiff(g, w) >= 0) {
        this.#diverge(
          i,
          "frames",
          `frame ${k} since the last check: device ${g ? `${g.length} bytes` : "none"}, model ${
            w ? `${w.length} bytes` : "none"
          }${g && w ? ` (first difference at byte ${firstDiff(g, w)})` : ""}`,
        );
        break;
      }
    }
    const modelClosed = this.model.peerConnected && !this.model.peerConnectionAlive;
    if (this.rig.peerConnected && got.closed !== modelClosed) {
      this.#diverge(
        i,
        "closed",
        `device end of the peer's connection: device ${got.closed ? "closed" : "open"}, model ${
          modelClosed ? "closed" : "open"
        }`,
      );
    }
  }

  async step(op: VnicOp): Promise<void> {
    const i = this.ops.length;
    this.ops.push(op);
    if (!this.#allowed(op, this.model)) return;
    this.executed++;
    const qt = this.rig.qt;
    const model = this.model;
    const deliveries = model.deliveries;
    switch (op.k) {
      case "rd": {
        const want = model.mmioRead(op.off, op.size);
        const wantIrq = model.intx;
        this.#batch.push(
          qt.request(`${READ_CMD[op.size]} ${cmdAddr(op.off)}`).then((rep) => {
            const got = BigInt(rep.text) & sizeMask(op.size);
            if (got !== want) {
              this.#diverge(
                i,
                "read",
                `${op.size}-byte read at ${hex(op.off)}: device ${hex(got)}, model ${hex(want)}`,
              );
            }
            this.#checkIrq(i, rep.irqMask, wantIrq);
          }),
        );
        break;
      }
      case "wr": {
        const v = BigInt(op.value) & sizeMask(op.size);
        model.mmioWrite(op.off, op.size, v);
        const wantIrq = model.intx;
        this.#batch.push(
          qt.request(`${WRITE_CMD[op.size]} ${cmdAddr(op.off)} ${hex(v)}`).then((rep) => {
            this.#checkIrq(i, rep.irqMask, wantIrq);
          }),
        );
        this.#checkMsi(i);
        if (op.off === VNIC_REG.TX_DOORBELL) this.#batchTxBytes += model.registers.txLen;
        break;
      }
      case "fill": {
        const data = opBytes(op.seed, op.len);
        this.mem.write(BigInt(op.addr), data);
        this.#batch.push(qt.memWrite(op.addr, data));
        break;
      }
      case "check":
        this.#compareMemory(i, op.addr, op.len, "check");
        break;
      case "send": {
        await this.flush(i);
        const frame = opBytes(op.seed, op.len);
        const want = model.peerSend(frame);
        const got = this.rig.peerSend(frame);
        if (got !== want) this.#diverge(i, "send", `peer send: device side ${got}, model ${want}`);
        await this.#afterSocketEvent(i);
        break;
      }
      case "close":
        await this.flush(i);
        model.peerClose();
        this.rig.peerClose();
        await this.#afterSocketEvent(i);
        break;
      case "lclose":
        await this.flush(i);
        model.listenerClose();
        this.rig.listenerClose();
        await this.#afterSocketEvent(i);
        break;
      case "lopen":
        model.listenerOpen();
        this.rig.listenerOpen();
        break;
      case "step": {
        await this.flush(i);
        model.clockStep(op.ns);
        const now = await qt.clockStep(op.ns);
        if (now !== model.nowNs) {
          this.#diverge(i, "clock", `virtual time device ${now} ns, model ${model.nowNs} ns`);
        }
        let accepted = 0;
        let modelAccepted = 0;
        while (this.rig.acceptPending()) accepted++;
        while (model.peerAccept()) modelAccepted++;
        if (accepted !== modelAccepted) {
          this.#diverge(
            i,
            "accept",
            `connections accepted after the step: device ${accepted}, model ${modelAccepted}`,
          );
        }
        await this.#afterSocketEvent(i);
        break;
      }
      case "flr":
        await this.flush(i);
        model.reset();
        model.setMsiEnabled(false);
        await this.rig.flr();
        model.setMsiEnabled(this.rig.irq === "msi");
        this.#msiOn = this.rig.irq === "msi";
        await this.#afterSocketEvent(i);
        break;
      case "msi":
        model.setMsiEnabled(op.on);
        // Awaited: the config sequence reads the capability list first, so
        // commands issued meanwhile would overtake its writes.
        if (op.on) await this.rig.pci.enableMsi(VNIC_RIG.msiAddr, VNIC_RIG.msiData);
        else await this.rig.pci.disableMsi();
        this.#msiOn = op.on;
        // No message either way; the check's response carries the INTx level.
        this.#checkMsi(i, true);
        break;
    }
    this.#checkDelivery(i, deliveries);
    if (this.#batch.length > 512 || this.#batchTxBytes > 512 * 1024) await this.flush(i);
  }

  /**
   * After a socket event: one awaited round trip orders later commands
   * behind the device's handling of it; the checks that follow (pipelined)
   * carry the interrupt lines it produced.
   */
  async #afterSocketEvent(i: number): Promise<void> {
    await this.rig.qt.sync();
    if (this.#msiOn) {
      this.#checkMsi(i);
      return;
    }
    const want = this.model.intx;
    this.#batch.push(
      this.rig.qt.request("endianness").then((rep) => this.#checkIrq(i, rep.irqMask, want)),
    );
  }
}

/** Run one sequence on a fresh QEMU and model; stops at the first difference. */
export async function runVnicSequence(
  env: OracleEnv,
  setup: VnicDiffSetup,
  source: OpSource<VnicOp>,
  flavor: VnicOracleFlavor = VNIC_DIFF_FLAVOR,
): Promise<VnicSequenceResult> {
  const rig = await VnicRig.start({
    binary: env.binary,
    firmware: env.firmware,
    socket: setup.socket,
    irq: setup.irq,
    mac: setup.mac,
    env: env.qemuEnv,
  });
  const run = new Run(rig, setup, flavor.allowed);
  try {
    const gen = "seed" in source ? flavor.generator(source.seed) : null;
    const total = "seed" in source ? source.count : source.list.length;
    for (let n = 0; n < total && !run.divergence; n++) {
      const op = gen ? gen.next(run.model) : (source as { list: VnicOp[] }).list[n];
      await run.step(op);
    }
    if (!run.divergence) await run.flush(run.ops.length - 1);
    else await run.settle();
  } catch (e) {
    await run.settle();
    if (!(e instanceof QtestError)) {
      await rig.close();
      throw e;
    }
    const i = Math.max(0, run.ops.length - 1);
    run.divergence ??= {
      opIndex: i,
      op: run.ops[i],
      kind: "crash",
      detail: e.message.split("\n")[0],
    };
  }
  await rig.close({ keepFiles: true });
  const qemuLog = await Deno.readTextFile(rig.logPath).catch(() => "");
  await rig.removeFiles();
  const coverage: Record<string, number> = {
    ...run.model.counters,
    msi: run.model.msiCount,
    skipped: run.ops.length - run.executed,
  };
  for (const op of run.ops) coverage[`op.${op.k}`] = (coverage[`op.${op.k}`] ?? 0) + 1;
  return { ops: run.ops, executed: run.executed, divergence: run.divergence, qemuLog, coverage };
}

/** Run many seeds; on the first failure, shrink it and stop. */
export async function runVnicDiff(opts: VnicDiffOptions): Promise<VnicDiffReport> {
  const env = { binary: opts.binary, firmware: opts.firmware, qemuEnv: opts.qemuEnv };
  const flavor = opts.flavor ?? VNIC_DIFF_FLAVOR;
  const log = opts.log ?? (() => {});
  const t0 = performance.now();
  let opsChecked = 0;
  let failure: VnicDiffFailure | null = null;
  const coverage: Record<string, number> = {};
  for (const seed of opts.seeds) {
    const setup = vnicSetupForSeed(seed);
    const res = await runVnicSequence(env, setup, { seed, count: opts.opsPerSeed }, flavor);
    opsChecked += res.executed;
    for (const [k, v] of Object.entries(res.coverage)) coverage[k] = (coverage[k] ?? 0) + v;
    if (opts.qemuLogPath) {
      await Deno.writeTextFile(
        opts.qemuLogPath,
        `=== seed ${seed} (${setup.socket}, ${setup.irq})\n${res.qemuLog}`,
        {
          append: true,
        },
      );
    }
    if (!res.divergence) {
      log(`seed ${seed} (${setup.socket}, ${setup.irq}): ${res.executed} ops agree`);
      continue;
    }
    const d = res.divergence;
    log(`seed ${seed}: ${d.kind} at op ${d.opIndex}: ${d.detail}`);
    failure = { seed, setup, divergence: d, opsToFailure: d.opIndex + 1 };
    if (opts.shrink ?? true) {
      failure.shrunk = await shrinkDivergence(
        res.ops,
        d,
        async (cand) => (await runVnicSequence(env, setup, { list: cand }, flavor)).divergence,
        { budgetMs: opts.shrinkBudgetMs ?? 90_000, sameKind: true },
      );
      log(`shrunk to ${failure.shrunk.ops.length} ops in ${failure.shrunk.runs} replays`);
    }
    break;
  }
  const elapsedMs = performance.now() - t0;
  return {
    seeds: opts.seeds,
    opsChecked,
    elapsedMs,
    opsPerSec: opsChecked / (elapsedMs / 1000),
    failure,
    coverage,
  };
}

/** A failure as text: seed, setup, divergence and the shrunk sequence, one op per line. */
export function formatVnicFailure(f: VnicDiffFailure): string {
  const mac = f.setup.mac.map((b) => b.toString(16).padStart(2, "0")).join(":");
  return formatFailure(
    `cnuas-vnic differs from its model: seed ${f.seed} (${f.setup.socket}, ${f.setup.irq}, mac ${mac})`,
    f.divergence,
    f.shrunk,
    [
      `  reproduce: runVnicSequence(env, vnicSetupForSeed(${f.seed}), { seed: ${f.seed}, count: ${f.opsToFailure} })`,
    ],
  );
}
