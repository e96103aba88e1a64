/**
 * Row `qtest-vnic`: the cnuas-vnic model in QEMU matches its TypeScript
 * reference model, op for op. Runs the differential oracle over fixed seeds
 * (a failure reproduces exactly and is printed shrunk) and attaches every
 * seed's QEMU guest-error log.
 */
import { join } from "node:path";
import { type Row, type RowContext, RowFailure } from "../../harness/matrix/row.ts";
import { formatFailure, runVnicDiff } from "../../harness/qtest_vnic_diff.ts";

/** Fixed seeds: half INTx, half MSI; some start without a listener or a socket path. */
const SEEDS = Array.from({ length: 48 }, (_, i) => 0x7e5_0000 + i);
const OPS_PER_SEED = 1000;

async function run(ctx: RowContext): Promise<void> {
  const binary = ctx.builds.qemu;
  if (!binary) throw new RowFailure("the runner did not provide the qemu build");
  const qemuLogPath = join(ctx.dir, "qemu-guest-errors.log");
  const report = await ctx.step(
    `differential oracle: ${SEEDS.length} seeds x ${OPS_PER_SEED} operations`,
    () =>
      runVnicDiff({
        binary,
        firmware: ctx.builds.qemuFirmware,
        seeds: SEEDS,
        opsPerSeed: OPS_PER_SEED,
        qemuLogPath,
        log: (line) => ctx.log(line),
      }),
  );
  ctx.artifact(qemuLogPath);
  ctx.measure("opsChecked", report.opsChecked, "ops");
  ctx.measure("opsPerSec", Math.round(report.opsPerSec), "ops/s");
  ctx.log(`coverage: ${JSON.stringify(report.coverage)}`);
  ctx.expect(report.failure === null, report.failure ? formatFailure(report.failure) : "");
  ctx.expect(
    report.opsChecked >= 10_000,
    `only ${report.opsChecked} operations were checked (10,000 is the floor)`,
  );
}

/** The cnuas-vnic differential row. */
export const row: Row = {
  id: "qtest-vnic",
  title: "the cnuas-vnic model in QEMU matches its TypeScript reference model, op for op",
  needs: { guests: 0, builds: ["qemu"] },
  timeoutSec: 300,
  run,
};
