/**
 * Row `qtest-gpu`: the cnuasgpu model in QEMU matches its TypeScript
 * reference model, BAR1 and CnuasLink included. Runs the differential oracle
 * over fixed seeds (a failure reproduces exactly and is printed shrunk).
 */
import { formatGpuFailure, runGpuSeed } from "../../harness/oracle/gpu_diff.ts";
import { oracleRow } from "../../harness/oracle/row.ts";

/**
 * Fixed seeds from 0x69_0000; the BAR1 size cycles 4 KiB, 64 KiB, 256 KiB,
 * 1 MiB with the seed. 24 at the quick depth (12,000 operations; the Deno
 * tests run 24 other seeds), 40 at the deep one.
 */
const SEEDS = { quick: 24, deep: 40 };
const OPS_PER_SEED = 500;

/** The cnuasgpu differential row. */
export const row = oracleRow({
  id: "qtest-gpu",
  title: "the cnuasgpu model in QEMU matches its reference model, BAR1 and CnuasLink included",
  firstSeed: 0x69_0000,
  seeds: SEEDS,
  opsPerSeed: OPS_PER_SEED,
  async run(env, ctx, seeds) {
    let opsChecked = 0;
    let busyMs = 0;
    const failures: string[] = [];
    // Every seed runs, so one report shows all the failing ones.
    for (const seed of seeds) {
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
