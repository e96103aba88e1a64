/**
 * The soak as a row (`deno task soak --minutes N`) and as bench `benchSoak`
 * (a 2-minute soak into bench.json): two guests with cnuas_ib on an eth
 * fabric, then {@link runSoak}.
 */
import { join } from "node:path";
import type { Config } from "../config.ts";
import { UsageError } from "../errors.ts";
import { fabricStarter } from "../matrix/lab.ts";
import { rdmaPairNeeds } from "../matrix/needs.ts";
import type { Row } from "../matrix/row.ts";
import { runMatrix } from "../matrix/run.ts";
import type { Measurement, RowResult } from "../report/schema.ts";
import { setupRoceNodes } from "../guest/roce_pair.ts";
import { runSoak, type SoakOptions } from "../guest/soak.ts";
import { measuredSoFar, runBenchRow } from "./one_row.ts";

/** The bench's soak length. */
export const BENCH_SOAK_MINUTES = 2;

/** `--minutes` as a positive number of minutes; a UsageError otherwise. */
export function minutesFrom(value: string | undefined): number {
  if (value === undefined) throw new UsageError("soak wants --minutes N (a positive number)");
  const n = Number(value);
  if (!/^\s*\d*\.?\d+\s*$/.test(value) || !Number.isFinite(n) || n <= 0) {
    throw new UsageError(`--minutes wants a positive number of minutes, not '${value}'`);
  }
  return n;
}

/** A row that sets up two RoCE guests and soaks them (`id` names it in the report). */
export function makeSoakRow(opts: SoakOptions, id = "soak"): Row {
  return {
    id,
    title: `${opts.minutes}-minute RoCEv2 soak: loss 1%, cable pulls, switch restarts, no growth`,
    needs: rdmaPairNeeds("eth"),
    // setup and teardown, then the soak (the last round may start at the deadline)
    timeoutSec: 600 + Math.ceil(opts.minutes * 60 * 2),
    modules: ["cnuas_net", "cnuas_ib"],
    async run(ctx) {
      const nodes = await setupRoceNodes(ctx, ["10.81.0.1", "10.81.0.2"]);
      await runSoak(ctx, nodes, opts);
    },
  };
}

/** `deno task soak`: run the row in `reports/soak/<run-id>/`; returns its result and directory. */
export async function soakCommand(
  config: Config,
  minutes: number,
): Promise<{ result: RowResult; dir: string }> {
  const { report, dir } = await runMatrix(
    { ...config, reportsDir: join(config.reportsDir, "soak") },
    [makeSoakRow({ minutes })],
    { fabricStarter },
  );
  return { result: report.rows[0], dir };
}

/** `deno task bench` entry: a {@link BENCH_SOAK_MINUTES}-minute soak's measurements. */
export async function benchSoak(config: Config): Promise<Record<string, Measurement>> {
  const r = await runBenchRow(config, makeSoakRow({ minutes: BENCH_SOAK_MINUTES }, "bench-soak"));
  if (r.status !== "PASS") throw new Error(`soak ${r.status}: ${r.reason}${measuredSoFar(r)}`);
  return r.measurements;
}
