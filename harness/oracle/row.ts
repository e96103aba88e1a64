/**
 * The matrix rows of the differential oracles (`qtest-vnic`, `qtest-gpu`)
 * share their shape: the qemu build as the only need, one step running the
 * fixed seeds of the run's depth, and the same measurements (`opsChecked`,
 * `opsPerSec`) and floors in each, so the two rows' reports compare directly.
 *
 * @example
 * ```ts
 * export const row = oracleRow({
 *   id: "qtest-gpu", title, firstSeed: 0x69_0000, seeds: { quick: 24, deep: 40 }, opsPerSeed: 500, run,
 * });
 * ```
 */
import type { Depth } from "../config.ts";
import { type Row, type RowContext, RowFailure } from "../matrix/row.ts";
import type { OracleEnv } from "./divergence.ts";

/**
 * Operations a row must check before its agreement means anything (the
 * device issues': at least 10,000 per run, at either depth).
 */
const OPS_FLOOR = 10_000;
/** Seeds a row must run, likewise (at least 20 per run). */
const SEEDS_FLOOR = 20;

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
  /** The first fixed seed; a run's seeds are consecutive from it. */
  firstSeed: number;
  /**
   * Seeds per depth: the quick depth runs the first ones of the deep
   * depth's, so a quick PASS is a prefix of a deep one (its step names the
   * deep count).
   */
  seeds: Record<Depth, number>;
  /** Operations per seed, for the step's name. */
  opsPerSeed: number;
  /** Run every seed of `seeds` on the qemu build. */
  run(env: OracleEnv, ctx: RowContext, seeds: number[]): Promise<OracleRunSummary>;
}

/** The seeds `spec` runs at `depth`. */
function oracleSeeds(
  spec: Pick<OracleRowSpec, "firstSeed" | "seeds">,
  depth: Depth,
): number[] {
  return Array.from({ length: spec.seeds[depth] }, (_, i) => spec.firstSeed + i);
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
      const seeds = oracleSeeds(spec, ctx.config.depth);
      const deep = ctx.config.depth === "quick" && spec.seeds.deep !== seeds.length
        ? ` (--depth deep: ${spec.seeds.deep} seeds)`
        : "";
      const sum = await ctx.step(
        `differential oracle: ${seeds.length} seeds x ${spec.opsPerSeed} operations${deep}`,
        () => spec.run(env, ctx, seeds),
      );
      ctx.measure("seeds", seeds.length, "seeds");
      ctx.measure("opsChecked", sum.opsChecked, "ops");
      ctx.measure("opsPerSec", Math.round(sum.opsPerSec), "ops/s");
      ctx.expect(sum.failures.length === 0, sum.failures.join("\n\n"));
      ctx.expect(
        sum.opsChecked >= OPS_FLOOR && seeds.length >= SEEDS_FLOOR,
        `only ${sum.opsChecked} operations over ${seeds.length} seeds were checked ` +
          `(the floor: ${OPS_FLOOR} over ${SEEDS_FLOOR})`,
      );
    },
  };
}
