/**
 * Row `qtest-gpu`: the cnuasgpu model in QEMU matches its TypeScript
 * reference model, BAR1 and CnuasLink included. Runs the differential oracle
 * over fixed seeds (a failure reproduces exactly and is printed shrunk).
 */
import { formatGpuFailure, runGpuSeed } from "../../harness/oracle/gpu_diff.ts";
import { oracleRow } from "../../harness/oracle/row.ts";

/** Fixed seeds; the BAR1 size cycles 4 KiB, 64 KiB, 256 KiB, 1 MiB with the seed. */
const SEEDS = Array.from({ length: 40 }, (_, i) => 0x69_0000 + i);
const OPS_PER_SEED = 500;

/** The cnuasgpu differential row. */
export const row = oracleRow({
  id: "qtest-gpu",
  title: "the cnuasgpu model in QEMU matches its reference model, BAR1 and CnuasLink included",
  seeds: SEEDS.length,
  opsPerSeed: OPS_PER_SEED,
  async run(env, ctx) {
    let opsChecked = 0;
    let busyMs = 0;
    const failures: string[] = [];
    // Every seed runs, so one report shows all the failing ones.
    for (const seed of SEEDS) {
      if (ctx.signal.aborted) break;
      const res = await runGpuSeed(env, seed, OPS_PER_SEED);
      opsChecked += res.opsChecked;
      busyMs += res.durationMs;
      ctx.log(`seed ${seed}: ${res.opsChecked} ops, ${res.divergence ? "DIVERGENCE" : "agree"}`);
      if (res.divergence) failures.push(formatGpuFailure(res));
    }
    return { opsChecked, opsPerSec: opsChecked / Math.max(busyMs / 1000, 1e-3), failures };
  },
});
