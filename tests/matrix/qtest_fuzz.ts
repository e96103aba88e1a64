/**
 * Row `qtest-fuzz`: QEMU never dies because of the guest. Both device models
 * run the hostile flavors of their differential oracles
 * (`harness/oracle/vnic_fuzz_ops.ts`, `gpu_fuzz_ops.ts`) under the
 * sanitizer build (`qemu-asan`: ASan + UBSan, every report fatal and written
 * into the row's `sanitizer/` directory): at least 100,000 operations per
 * device, QEMU answering qtest after every one, no sanitizer report, and the
 * model agreeing with the device on every access the contract defines. A
 * failure names its seed and is shrunk with the oracles' shrinker.
 *
 * The seed is random per run (measurement `fuzz.seed`; vnic seed k and gpu
 * seed k are `fuzz.seed + k`); `CNUAS_HIL_QTEST_FUZZ_SEED` fixes it to replay
 * a run.
 */
import { join } from "node:path";
import { formatGpuFailure, runGpuSeed } from "../../harness/oracle/gpu_diff.ts";
import { gpuHostileGenerator } from "../../harness/oracle/gpu_fuzz_ops.ts";
import type { OracleEnv } from "../../harness/oracle/divergence.ts";
import { formatVnicFailure, runVnicDiff } from "../../harness/oracle/vnic_diff.ts";
import { VNIC_FUZZ_FLAVOR } from "../../harness/oracle/vnic_fuzz_ops.ts";
import { reportSummary, sanitizerEnv, sanitizerReports } from "../../harness/qtest/sanitizer.ts";
import { type Row, type RowContext, RowFailure } from "../../harness/matrix/row.ts";
import { fuzzSeed } from "../../harness/config.ts";

/** Operations each device must have checked (skipped ones do not count). */
export const FUZZ_OPS_FLOOR = 100_000;
/** Seeds per device and operations per seed: a little over the floor, since guards skip some. */
const SEEDS = 20;
const VNIC_OPS_PER_SEED = 5_200;
const GPU_OPS_PER_SEED = 5_100;
/** Longest text of one sanitizer report the failure message carries (the file has it all). */
const REPORT_CHARS = 6_000;

/** What one device's fuzz did. */
interface DeviceFuzz {
  ops: number;
  busyMs: number;
  failure: string | null;
}

async function fuzzVnic(env: OracleEnv, seeds: number[], ctx: RowContext): Promise<DeviceFuzz> {
  const report = await runVnicDiff({
    ...env,
    seeds,
    opsPerSeed: VNIC_OPS_PER_SEED,
    flavor: VNIC_FUZZ_FLAVOR,
    shrinkBudgetMs: 60_000,
    log: (line) => ctx.log(`vnic ${line}`),
  });
  ctx.log(`vnic coverage: ${JSON.stringify(report.coverage)}`);
  return {
    ops: report.opsChecked,
    busyMs: report.elapsedMs,
    failure: report.failure ? formatVnicFailure(report.failure) : null,
  };
}

async function fuzzGpu(env: OracleEnv, seeds: number[], ctx: RowContext): Promise<DeviceFuzz> {
  let ops = 0;
  let busyMs = 0;
  for (const seed of seeds) {
    if (ctx.signal.aborted) break;
    const res = await runGpuSeed(env, seed, GPU_OPS_PER_SEED, {
      generator: gpuHostileGenerator,
      shrinkRuns: 40,
    });
    ops += res.opsChecked;
    busyMs += res.durationMs;
    ctx.log(`gpu seed ${seed}: ${res.opsChecked} ops, ${res.divergence ? "DIVERGENCE" : "agree"}`);
    if (res.divergence) return { ops, busyMs, failure: formatGpuFailure(res) };
  }
  return { ops, busyMs, failure: null };
}

/** The device-model fuzz row. */
export const row: Row = {
  id: "qtest-fuzz",
  title: "hostile register, DMA and wire sequences never kill QEMU (ASan/UBSan build) and " +
    "both device models still match their reference models",
  needs: { guests: 0, builds: ["qemu-asan"] },
  filler: "it judges no time (QEMU runs under qtest's virtual clock), and it is latency-bound: " +
    "alone its QEMU and oracle keep 0.7 of 2 cores busy, waiting on each other the rest",
  timeoutSec: 900,
  run: async (ctx) => {
    const binary = ctx.builds.qemuAsan;
    if (!binary) throw new RowFailure("the runner did not provide the qemu-asan build");
    const sanDir = join(ctx.dir, "sanitizer");
    await Deno.mkdir(sanDir, { recursive: true });
    const env: OracleEnv = {
      binary,
      firmware: ctx.builds.qemuFirmware,
      qemuEnv: sanitizerEnv(sanDir),
    };
    const base = fuzzSeed("CNUAS_HIL_QTEST_FUZZ_SEED");
    ctx.measure("fuzz.seed", base, "seed");
    ctx.log(`seed ${base} (replay: CNUAS_HIL_QTEST_FUZZ_SEED=${base})`);
    const seeds = Array.from({ length: SEEDS }, (_, k) => (base + k) >>> 0);

    const devices = [
      { name: "vnic", opsPerSeed: VNIC_OPS_PER_SEED, fuzz: fuzzVnic },
      { name: "gpu", opsPerSeed: GPU_OPS_PER_SEED, fuzz: fuzzGpu },
    ];
    // Every device runs and the sanitizer reports are read before the row
    // fails, so one report shows every failure with the report behind it.
    const failures: string[] = [];
    for (const d of devices) {
      const res = await ctx.step(
        `${d.name}: hostile oracle, ${SEEDS} seeds x ${d.opsPerSeed} operations`,
        () => d.fuzz(env, seeds, ctx),
      );
      const perSec = res.ops / Math.max(res.busyMs / 1000, 1e-3);
      ctx.measure(`${d.name}.ops`, res.ops, "ops");
      ctx.measure(`${d.name}.opsPerSec`, Math.round(perSec), "ops/s");
      ctx.measure(`${d.name}.seeds`, SEEDS, "seeds");
      if (res.failure) failures.push(res.failure);
      else if (res.ops < FUZZ_OPS_FLOOR) {
        failures.push(
          `${d.name}: only ${res.ops} operations were checked (${FUZZ_OPS_FLOOR} is the floor)`,
        );
      }
    }

    const reports = await sanitizerReports(sanDir);
    ctx.measure("sanitizerReports", reports.length, "reports");
    // A crash is replayed by the shrinker, each replay writing the same report again.
    const bySummary = Map.groupBy(reports, (r) => reportSummary(r.text));
    for (const [summary, same] of bySummary) {
      for (const r of same) ctx.artifact(r.path);
      failures.push(
        `sanitizer report ${same[0].path} (${same.length} with ${summary || "this text"}):\n` +
          same[0].text.slice(0, REPORT_CHARS),
      );
    }
    ctx.expect(failures.length === 0, failures.join("\n\n"));
  },
};
