/**
 * The hostile flavors of both oracles (row `qtest-fuzz`) on the normal QEMU
 * build, a few seeds each: DMA aimed at the NIC's own BAR0, other MMIO,
 * beyond RAM and past 2^64, overlapping buffers, doorbell loops, resets with
 * frames waiting, BAR1 windows past the end and wrapping, every width at
 * every offset. The device must agree with its model on every operation. The
 * row runs the same flavors at 100,000 operations per device under ASan.
 */
import assert from "node:assert/strict";
import { formatGpuFailure, runGpuSeed } from "../../harness/oracle/gpu_diff.ts";
import { gpuHostileGenerator } from "../../harness/oracle/gpu_fuzz_ops.ts";
import { formatVnicFailure, runVnicDiff } from "../../harness/oracle/vnic_diff.ts";
import { VNIC_FUZZ_FLAVOR } from "../../harness/oracle/vnic_fuzz_ops.ts";
import { qemuEnv } from "./qemu_env.ts";

const SEEDS = [0xf0_0001, 0xf0_0002, 0xf0_0003];
const OPS_PER_SEED = 1500;
/** Guards skip an operation now and then (DMA into RAM below 2 MiB or the ROM, a full queue). */
const MIN_CHECKED = 1400;

for (const seed of SEEDS) {
  Deno.test(`cnuas-vnic agrees with its model over ${OPS_PER_SEED} hostile operations, seed ${seed}`, async () => {
    const report = await runVnicDiff({
      ...await qemuEnv(),
      seeds: [seed],
      opsPerSeed: OPS_PER_SEED,
      flavor: VNIC_FUZZ_FLAVOR,
      shrinkBudgetMs: 40_000,
    });
    assert.equal(report.failure, null, report.failure ? formatVnicFailure(report.failure) : "");
    assert.ok(report.opsChecked >= MIN_CHECKED, `only ${report.opsChecked} operations checked`);
    // The hostile bursts happened: DMA refused both ways, resets, deliveries.
    for (const k of ["txRejected", "rxDroppedDma", "resets", "rxDelivered", "txSent"]) {
      assert.ok((report.coverage[k] ?? 0) > 0, `no ${k} in ${JSON.stringify(report.coverage)}`);
    }
  });

  Deno.test(`cnuasgpu agrees with its model over ${OPS_PER_SEED} hostile operations, seed ${seed}`, async () => {
    const res = await runGpuSeed(await qemuEnv(), seed, OPS_PER_SEED, {
      generator: gpuHostileGenerator,
      shrinkRuns: 40,
    });
    assert.equal(res.divergence, null, formatGpuFailure(res));
    assert.ok(res.opsChecked >= MIN_CHECKED, `only ${res.opsChecked} operations checked`);
  });
}
