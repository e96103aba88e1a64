/**
 * A bench that is a row: the matrix runner brings up its guests and fabric,
 * into a report directory of its own under `bench-runs/`.
 */
import { join } from "node:path";
import type { Config } from "../config.ts";
import { fabricStarter } from "../matrix/lab.ts";
import type { Row } from "../matrix/row.ts";
import { runMatrix } from "../matrix/run.ts";
import type { RowResult } from "../report/schema.ts";

/** Run `row` once (with a real switch when it asks for a fabric) and return its result. */
export async function runBenchRow(config: Config, row: Row): Promise<RowResult> {
  const { report } = await runMatrix(
    { ...config, reportsDir: join(config.reportsDir, "bench-runs") },
    [row],
    { fabricStarter },
  );
  return report.rows[0];
}

/**
 * What a row that did not pass measured all the same, for its error message:
 * ` (measured: name=value unit, …)`, or "" when nothing was.
 */
export function measuredSoFar(r: RowResult): string {
  const got = Object.entries(r.measurements).map(([k, m]) => `${k}=${m.value} ${m.unit}`);
  return got.length ? ` (measured: ${got.join(", ")})` : "";
}
