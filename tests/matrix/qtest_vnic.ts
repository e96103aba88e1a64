/**
 * Row `qtest-vnic`: the cnuas-vnic model in QEMU matches its TypeScript
 * reference model, op for op. Runs the differential oracle over fixed seeds
 * (a failure reproduces exactly and is printed shrunk) and attaches every
 * seed's QEMU guest-error log.
 */
import { join } from "node:path";
import { oracleRow } from "../../harness/oracle/row.ts";
import { formatVnicFailure, runVnicDiff } from "../../harness/oracle/vnic_diff.ts";

/**
 * Fixed seeds from 0x7e5_0000: half INTx, half MSI; some start without a
 * listener or a socket path. 24 at the quick depth (24,000 operations; the
 * Deno tests run 24 other seeds), 48 at the deep one.
 */
const SEEDS = { quick: 24, deep: 48 };
const OPS_PER_SEED = 1000;

/** The cnuas-vnic differential row. */
export const row = oracleRow({
  id: "qtest-vnic",
  title: "the cnuas-vnic model in QEMU matches its TypeScript reference model, op for op",
  firstSeed: 0x7e5_0000,
  seeds: SEEDS,
  opsPerSeed: OPS_PER_SEED,
  async run(env, ctx, seeds) {
    const qemuLogPath = join(ctx.dir, "qemu-guest-errors.log");
    const report = await runVnicDiff({
      ...env,
      seeds,
      opsPerSeed: OPS_PER_SEED,
      qemuLogPath,
      log: (line) => ctx.log(line),
    });
    ctx.artifact(qemuLogPath);
    ctx.log(`coverage: ${JSON.stringify(report.coverage)}`);
    return {
      opsChecked: report.opsChecked,
      opsPerSec: report.opsPerSec,
      failures: report.failure ? [formatVnicFailure(report.failure)] : [],
    };
  },
});
