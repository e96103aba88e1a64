/**
 * Row `qtest-gpu`: the cnuasgpu model in QEMU matches its TypeScript
 * reference model, BAR1 and CnuasLink included. Runs the differential oracle
 * over fixed seeds (a failure reproduces exactly and is printed shrunk).
 */
import { formatGpuFailure, runGpuSeed } from "../../harness/oracle_gpu.ts";
import { type Row, type RowContext, RowFailure } from "../../harness/matrix/row.ts";

/** Fixed seeds; the BAR1 size cycles 4 KiB, 64 KiB, 256 KiB, 1 MiB with the seed. */
const SEEDS = Array.from({ length: 40 }, (_, i) => 0x69_0000 + i);
const OPS_PER_SEED = 500;

async function run(ctx: RowContext): Promise<void> {
  const binary = ctx.builds.qemu;
  if (!binary) throw new RowFailure("the runner did not provide the qemu build");
  const env = { binary, firmware: ctx.builds.qemuFirmware };
  let opsChecked = 0;
  let busyMs = 0;
  const failures: string[] = [];
  await ctx.step(
    `differential oracle: ${SEEDS.length} seeds x ${OPS_PER_SEED} operations`,
    async () => {
      for (const seed of SEEDS) {
        if (ctx.signal.aborted) break;
        const res = await runGpuSeed(env, seed, OPS_PER_SEED);
        opsChecked += res.opsChecked;
        busyMs += res.durationMs;
        ctx.log(`seed ${seed}: ${res.opsChecked} ops, ${res.mismatch ? "MISMATCH" : "agree"}`);
        if (res.mismatch) failures.push(formatGpuFailure(res));
      }
    },
  );
  ctx.measure("opsChecked", opsChecked, "ops");
  ctx.measure("opsPerSec", Math.round(opsChecked / Math.max(busyMs / 1000, 1e-3)), "ops/s");
  ctx.expect(failures.length === 0, failures.join("\n\n"));
  ctx.expect(
    opsChecked >= 10_000,
    `only ${opsChecked} operations were checked (10,000 is the floor)`,
  );
}

/** The cnuasgpu differential row. */
export const row: Row = {
  id: "qtest-gpu",
  title: "the cnuasgpu model in QEMU matches its reference model, BAR1 and CnuasLink included",
  needs: { guests: 0, builds: ["qemu"] },
  timeoutSec: 300,
  run,
};
