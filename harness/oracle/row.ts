/**
 * The matrix rows of the differential oracles (`qtest-vnic`, `qtest-gpu`)
 * share their shape: the qemu build as the only need, one step running the
 * fixed seeds, and the same measurements (`opsChecked`, `opsPerSec`) and
 * floor in each, so the two rows' reports compare directly.
 *
 * @example
 * ```ts
 * export const row = oracleRow({ id: "qtest-gpu", title, seeds: 40, opsPerSeed: 500, run });
 * ```
 */
import { type Row, type RowContext, RowFailure } from "../matrix/row.ts";
import type { OracleEnv } from "./divergence.ts";

/** Operations a row must check before its agreement means anything. */
const OPS_FLOOR = 10_000;

/** What a row's differential run found. */
export interface OracleRunSummary {
  /** Operations checked on both sides. */
  opsChecked: number;
  /** Operations checked per second of device time. */
  opsPerSec: number;
  /** One formatted failure report per failing seed. */
  failures: string[];
}

/** A differential oracle as a matrix row. */
export interface OracleRowSpec {
  /** Row id. */
  id: string;
  /** What the row proves. */
  title: string;
  /** Number of seeds, for the step's name. */
  seeds: number;
  /** Operations per seed, for the step's name. */
  opsPerSeed: number;
  /** Run every seed on the qemu build. */
  run(env: OracleEnv, ctx: RowContext): Promise<OracleRunSummary>;
}

/** The row: runs `spec.run` in one step, then measures and checks the summary. */
export function oracleRow(spec: OracleRowSpec): Row {
  return {
    id: spec.id,
    title: spec.title,
    needs: { guests: 0, builds: ["qemu"] },
    timeoutSec: 300,
    run: async (ctx) => {
      const binary = ctx.builds.qemu;
      if (!binary) throw new RowFailure("the runner did not provide the qemu build");
      const env = { binary, firmware: ctx.builds.qemuFirmware };
      const sum = await ctx.step(
        `differential oracle: ${spec.seeds} seeds x ${spec.opsPerSeed} operations`,
        () => spec.run(env, ctx),
      );
      ctx.measure("opsChecked", sum.opsChecked, "ops");
      ctx.measure("opsPerSec", Math.round(sum.opsPerSec), "ops/s");
      ctx.expect(sum.failures.length === 0, sum.failures.join("\n\n"));
      ctx.expect(
        sum.opsChecked >= OPS_FLOOR,
        `only ${sum.opsChecked} operations were checked (10,000 is the floor)`,
      );
    },
  };
}
