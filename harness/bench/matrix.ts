/**
 * The matrix at the speed of a unit test (issue 19), measured: a driver
 * edit to a row's result (`driverEdit`, in every bench run), and the whole
 * quick matrix warm (`matrix`, only with `bench --only matrix`: it runs
 * every row).
 */
import { join } from "node:path";
import type { Config } from "../config.ts";
import { exec } from "../exec.ts";
import { fabricStarter } from "../matrix/lab.ts";
import { loadRows } from "../matrix/registry.ts";
import { runMatrix } from "../matrix/run.ts";
import { progress } from "../progress.ts";
import type { Measurement, RowResult } from "../report/schema.ts";

/** Issue 19's budget for the quick full matrix, warm, under TCG on 2 cores. */
export const WARM_MATRIX_BUDGET_SEC = 360;
/** Issue 19's budget from a one-line driver edit to `driver-load`'s result. */
export const DRIVER_EDIT_BUDGET_SEC = 60;

/** What a matrix run's rows add up to: row time, and how their guests started. */
export function matrixFigures(rows: RowResult[]): Record<string, Measurement> {
  const starts = rows.flatMap((r) => r.guests ?? []);
  const failed = rows.filter((r) => r.status !== "PASS").map((r) => r.id);
  const out: Record<string, Measurement> = {
    rows: { value: rows.length, unit: "rows" },
    rowsNotPassed: { value: failed.length, unit: "rows" },
    rowSec: { value: Number(rows.reduce((a, r) => a + r.durationSec, 0).toFixed(1)), unit: "s" },
    guestBoots: { value: starts.filter((g) => g.start === "cold").length, unit: "guests" },
    guestRestores: { value: starts.filter((g) => g.start === "snapshot").length, unit: "guests" },
    rowsAlone: { value: rows.filter((r) => !r.ranBeside?.length).length, unit: "rows" },
  };
  for (const r of rows) {
    out[`row.${r.id}.sec`] = { value: Number(r.durationSec.toFixed(1)), unit: "s" };
  }
  return out;
}

/**
 * The whole quick matrix: `warmMatrixSec` is the wall time of the run,
 * judged against the budget. Warm means the cache already holds the
 * builds and saved states (a `task test` ran before); anything missing is
 * built inside the figure, and `guestBoots`/`guestRestores` say how guests
 * started.
 */
export async function benchMatrix(config: Config): Promise<Record<string, Measurement>> {
  const rows = await loadRows();
  const t0 = performance.now();
  const { report } = await runMatrix(
    { ...config, reportsDir: join(config.reportsDir, "bench-runs") },
    rows,
    { fabricStarter },
  );
  const wallSec = (performance.now() - t0) / 1000;
  return {
    warmMatrixSec: { value: Number(wallSec.toFixed(1)), unit: "s" },
    warmMatrixBudgetSec: { value: WARM_MATRIX_BUDGET_SEC, unit: "s" },
    warmMatrixWithinBudget: { value: wallSec <= WARM_MATRIX_BUDGET_SEC ? 1 : 0, unit: "bool" },
    jobs: { value: config.jobs, unit: "rows" },
    ...matrixFigures(report.rows),
  };
}

/** The line `benchDriverEdit` changes: a comment, so the module's behaviour stays the same. */
export const EDITED_FILE = "drivers/nic/cnuas_net_main.c";

/** `text` with a marker appended to its first comment line that is `" *"` followed by text. */
export function editOneLine(text: string, marker: string): string {
  const lines = text.split("\n");
  const i = lines.findIndex((l) => /^ \* \S/.test(l));
  if (i < 0) throw new Error(`${EDITED_FILE}: no comment line to edit`);
  lines[i] += ` ${marker}`;
  return lines.join("\n");
}

/**
 * A one-line edit of cnuas_net_main.c to `matrix --row driver-load
 * --dev-modules`'s result, in a copy of the working tree (the repository is
 * not touched): the modules rebuild, the restore and the row, as a developer
 * waits for them. The edit is new each time, so the modules stage compiles.
 */
export async function benchDriverEdit(config: Config): Promise<Record<string, Measurement>> {
  const copy = await Deno.makeTempDir({ prefix: "cnuas-hil-edit-" });
  try {
    const files = (await exec(
      ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
      { cwd: config.repoRoot },
    )).stdout.split("\0").filter(Boolean);
    for (const f of files) {
      const src = join(config.repoRoot, f);
      const st = await Deno.lstat(src).catch(() => undefined);
      if (!st?.isFile) continue;
      await Deno.mkdir(join(copy, f, ".."), { recursive: true });
      await Deno.copyFile(src, join(copy, f));
    }
    const path = join(copy, EDITED_FILE);
    await Deno.writeTextFile(
      path,
      editOneLine(await Deno.readTextFile(path), `(bench ${Date.now()})`),
    );
    progress("bench", `driverEdit: ${EDITED_FILE} edited in ${copy}`);
    const [row] = await loadRows(["driver-load"]);
    const t0 = performance.now();
    const { report } = await runMatrix(
      { ...config, repoRoot: copy, devModules: true, reportsDir: join(copy, "reports") },
      [row],
      { fabricStarter },
    );
    const sec = (performance.now() - t0) / 1000;
    const r = report.rows[0];
    if (r.status !== "PASS") throw new Error(`driver-load --dev-modules ${r.status}: ${r.reason}`);
    return {
      driverEditToResultSec: { value: Number(sec.toFixed(1)), unit: "s" },
      driverEditBudgetSec: { value: DRIVER_EDIT_BUDGET_SEC, unit: "s" },
      driverEditWithinBudget: { value: sec <= DRIVER_EDIT_BUDGET_SEC ? 1 : 0, unit: "bool" },
      driverLoadStepsSec: {
        value: Number(r.steps.reduce((a, s) => a + s.durationSec, 0).toFixed(1)),
        unit: "s",
      },
      guestReadySec: {
        value: Math.max(0, ...(r.guests ?? []).map((g) => g.startToSshSec)),
        unit: "s",
      },
    };
  } finally {
    await Deno.remove(copy, { recursive: true }).catch(() => {});
  }
}
