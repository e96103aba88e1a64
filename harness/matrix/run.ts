/**
 * A whole matrix run: the rows that judge timing alone, the others several
 * at a time (lanes.ts), a report directory, provenance; the report lists the
 * rows in the order given.
 */
import { join } from "node:path";
import type { Config } from "../config.ts";
import { exec } from "../exec.ts";
import { progress } from "../progress.ts";
import { readPins } from "../pins.ts";
import {
  emptyPageContext,
  type MatrixJson,
  type Provenance,
  type RowResult,
} from "../report/schema.ts";
import { latestReport, recentReports, writeReport } from "../report/write.ts";
import { durationsFromReports } from "./shard_plan.ts";
import { cachedDurations, recordDurations } from "./row_durations.ts";
import { type FabricStarter, Lab } from "./lab.ts";
import type { Row } from "./row.ts";
import { planRun, runPlan } from "./lanes.ts";
import { runRow } from "./runner.ts";

/** How many of the newest local runs give the rows' durations their order in a run. */
const RECENT_RUNS = 30;

/** A new run id: UTC time plus a short random suffix. */
export function newRunId(): string {
  const t = new Date().toISOString().replace(/[-:]/g, "").replace(/\..*/, "");
  return `${t}-${crypto.randomUUID().slice(0, 6)}`;
}

/** `git describe` of the project (or "unknown" outside a checkout). */
export async function projectDescribe(repoRoot: string): Promise<string> {
  const r = await exec(["git", "-C", repoRoot, "describe", "--always", "--dirty", "--tags"], {
    allowFail: true,
  });
  return r.code === 0 ? r.stdout.trim() : "unknown";
}

/** Options of `runMatrix`. */
export interface MatrixRunOptions {
  /** This run's shard (`i/n`), recorded in the report's provenance. */
  shard?: string;
  /** Starts fabrics for rows that need one (`fabricStarter` from lab.ts). */
  fabricStarter?: FabricStarter;
}

/** Run rows and write `reports/<run-id>/`; returns the report and its directory. */
export async function runMatrix(
  config: Config,
  rows: Row[],
  opts: MatrixRunOptions = {},
): Promise<{ report: MatrixJson; dir: string }> {
  const runId = newRunId();
  const dir = join(config.reportsDir, runId);
  await Deno.mkdir(dir, { recursive: true });
  const lab = new Lab(config, opts.fabricStarter);
  const pins = await readPins(config);
  const provenance: Provenance = {
    runId,
    startedAt: new Date().toISOString(),
    project: await projectDescribe(config.repoRoot),
    qemu: pins.sources.qemu.version,
    rdmaCore: pins.sources["rdma-core"].version,
    host: {
      kernel: Deno.osRelease(),
      hostname: Deno.hostname(),
      cpus: navigator.hardwareConcurrency,
    },
    ...(opts.shard ? { shard: opts.shard } : {}),
    depth: config.depth,
    ...(config.devModules ? { devModules: true as const } : {}),
  };
  progress("matrix", `run ${runId}: ${rows.map((r) => r.id).join(", ")}`);
  // the page's "since the previous run" locally: the run `latest` pointed at until now
  // (a published page gets its whole history instead: report publish)
  const previous = await latestReport(config.reportsDir);
  // the rows sharing the cores start longest first, by what the recent local runs took;
  // rows they do not know (a fresh clone knows none) by the cache's record of earlier runs
  const recent = durationsFromReports(await recentReports(config.reportsDir, RECENT_RUNS));
  const known = new Map([...await cachedDurations(config.cacheDir, config.depth), ...recent]);
  const plan = planRun(rows, config.jobs, known);
  if (plan.shared.length + plan.background.length + plan.filler.length > 1 && plan.jobs > 1) {
    const ids = (rs: { row: Row }[]) => rs.map(({ row }) => row.id).join(", ");
    progress(
      "matrix",
      (plan.alone.length ? `alone first: ${ids(plan.alone)}; ` : "") +
        (plan.background.length
          ? `in the background from the start, at idle priority: ${ids(plan.background)}; `
          : "") +
        `then ${plan.jobs} at a time: ${ids(plan.shared)}` +
        (plan.filler.length
          ? `; beside them at idle priority, in the cycles they leave: ${ids(plan.filler)}`
          : ""),
    );
  }
  // by the rows' order, whichever ended first
  const done: (RowResult | undefined)[] = rows.map(() => undefined);
  const report = (): MatrixJson => ({
    provenance: {
      ...provenance,
      guestKernel: lab.image?.kernelRelease,
      accel: lab.accel,
      accelReason: lab.accelReason,
    },
    // a copy: another row may end while this one is written
    rows: done.filter((r) => r !== undefined),
  });
  const context = { ...emptyPageContext(), ...(previous ? { previous } : {}) };
  // Written before the first row too: a shard left without rows (`--row a --shard 3/3`)
  // still leaves a report for `report merge`.
  await writeReport(dir, report(), config.reportsDir, context);
  // Written after every row, so a killed run still leaves a report; one
  // write at a time, as rows running at once end.
  let writing = Promise.resolve();
  await runPlan(plan, async (row, i, beside) => {
    const result = await runRow(row, lab, dir);
    done[i] = beside.size ? { ...result, ranBeside: [...beside].map((k) => rows[k].id) } : result;
    writing = writing.then(() => writeReport(dir, report(), config.reportsDir, context));
    await writing;
  });
  await recordDurations(config.cacheDir, config.depth, report().rows).catch((e) =>
    progress("matrix", `the rows' durations were not kept in the cache: ${(e as Error).message}`)
  );
  return { report: report(), dir };
}
