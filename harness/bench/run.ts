/**
 * `deno task bench`: every measurement the issues ask for, in one
 * `bench.json`. Speed goals are reported here, never asserted in tests.
 */
import { join, relative } from "node:path";
import { removeTree } from "../cache.ts";
import type { Config } from "../config.ts";
import { UsageError } from "../errors.ts";
import { loadRows } from "../matrix/registry.ts";
import { newRunId, projectDescribe } from "../matrix/run.ts";
import { progress } from "../progress.ts";
import type { Measurement, RowResult } from "../report/schema.ts";
import { benchCnuasdev } from "./cnuasdev.ts";
import { benchGpu } from "./gpu.ts";
import { benchIbPerf } from "./ib_perf.ts";
import { benchIncast } from "./incast.ts";
import { benchDriverEdit, benchMatrix } from "./matrix.ts";
import { benchNet } from "./net.ts";
import { runBenchRow } from "./one_row.ts";
import { benchRdmaChecker } from "./rdma.ts";
import { benchRdmaPerf } from "./rdma_perf.ts";
import { benchRdmaPoll } from "./rdma_poll.ts";
import { benchRdmaPost } from "./rdma_post.ts";
import { benchSoak } from "./soak.ts";
import { benchSwitch } from "./switch.ts";
import { benchVnic } from "./vnic.ts";

/** One benchmark: a name and a function producing measurements. */
export interface Bench {
  name: string;
  run: (config: Config) => Promise<Record<string, Measurement>>;
}

/** The goal for a restored guest, spawn to SSH ready, under TCG on 2 cores (issue 19). */
export const SNAPSHOT_RESTORE_BUDGET_SEC = 2;

/** The slowest guest's start to SSH ready in a row's result, when they all started `how`. */
export function slowestStart(r: RowResult, how: "cold" | "snapshot"): number {
  const gs = r.guests ?? [];
  const other = gs.find((g) => g.start !== how);
  if (!gs.length || other) {
    throw new Error(
      `${r.id}: wanted every guest started ${how}, got ` +
        (gs.map((g) => `${g.name} ${g.start}${g.coldReason ? ` (${g.coldReason})` : ""}`).join(
          ", ",
        ) || "no guests"),
    );
  }
  return Math.max(...gs.map((g) => g.startToSshSec));
}

/** `matrix --row boot` (its guests boot cold): wall time, boot-to-SSH per guest. */
async function coldBootRow(config: Config): Promise<{ r: RowResult; wallSec: number }> {
  const [row] = await loadRows(["boot"]);
  const t0 = performance.now();
  const r = await runBenchRow(config, row);
  if (r.status !== "PASS") throw new Error(`boot row ${r.status}: ${r.reason}`);
  return { r, wallSec: (performance.now() - t0) / 1000 };
}

/**
 * Warm `matrix --row boot`: wall time and boot-to-SSH per guest (the row
 * boots cold); then the same row with its guests restored from a saved
 * state (saved first if the cache has none; that is not in the figures):
 * `coldSec` and `snapshotRestoreSec` are the slower guest's spawn to SSH
 * ready each way, and the restore is judged against its budget.
 */
async function benchBoot(config: Config): Promise<Record<string, Measurement>> {
  const { r, wallSec } = await coldBootRow(config);
  const [row] = await loadRows(["boot"]);
  const restored = await runBenchRow({ ...config, snapshots: true }, {
    ...row,
    coldBoot: undefined,
  });
  if (restored.status !== "PASS") {
    throw new Error(`boot row from a snapshot ${restored.status}: ${restored.reason}`);
  }
  const restoreSec = slowestStart(restored, "snapshot");
  return {
    warmMatrixRowBootSec: { value: Number(wallSec.toFixed(1)), unit: "s" },
    ...r.measurements,
    coldSec: { value: slowestStart(r, "cold"), unit: "s" },
    snapshotRestoreSec: { value: restoreSec, unit: "s" },
    snapshotRestoreBudgetSec: { value: SNAPSHOT_RESTORE_BUDGET_SEC, unit: "s" },
    snapshotRestoreWithinBudget: {
      value: restoreSec <= SNAPSHOT_RESTORE_BUDGET_SEC ? 1 : 0,
      unit: "bool",
    },
  };
}

/**
 * Fresh machine to a finished `boot` row: an empty cache (host packages are
 * taken as installed), so every download and build stage runs. Opt-in
 * (`bench --fresh`): it takes about ten minutes on two cores.
 */
async function benchFresh(config: Config): Promise<Record<string, Measurement>> {
  const cacheDir = await Deno.makeTempDir({ dir: "/var/tmp", prefix: "cnuas-hil-fresh-" });
  try {
    const t0 = performance.now();
    // The boot row's own figures (its wall time here is the fresh figure).
    const { r } = await coldBootRow({ ...config, cacheDir });
    return {
      freshToBootRowSec: { value: Number(((performance.now() - t0) / 1000).toFixed(1)), unit: "s" },
      ...r.measurements,
    };
  } finally {
    await removeTree(cacheDir);
  }
}

/**
 * The benches after boot: device oracles, GPU and libcnuasdev, switch, RDMA
 * checker, NIC and RDMA figures, a short soak.
 */
const BENCHES: Bench[] = [
  { name: "benchVnic", run: benchVnic },
  { name: "benchGpu", run: benchGpu },
  { name: "benchCnuasdev", run: benchCnuasdev },
  { name: "benchSwitch", run: benchSwitch },
  { name: "benchRdmaChecker", run: benchRdmaChecker },
  { name: "benchNet", run: benchNet },
  { name: "benchRdmaPerf", run: benchRdmaPerf },
  { name: "benchRdmaPoll", run: benchRdmaPoll },
  { name: "benchRdmaPost", run: benchRdmaPost },
  { name: "benchIbPerf", run: benchIbPerf },
  { name: "benchIncast", run: benchIncast },
  { name: "benchSoak", run: benchSoak },
  { name: "driverEdit", run: benchDriverEdit },
];

/** Every bench's name, as `bench --only` takes it. */
export const BENCH_NAMES = ["boot", "fresh", "matrix", ...BENCHES.map((b) => b.name)];

/**
 * Run every bench (`only`: just those named, in their usual order; `fresh`
 * and `matrix`, which runs every row, are opt-in either way); write `reports/bench/<id>/bench.json`; return its
 * path.
 */
export async function runBench(
  config: Config,
  opts: { fresh?: boolean; only?: string[] } = {},
): Promise<string> {
  const unknown = (opts.only ?? []).filter((n) => !BENCH_NAMES.includes(n));
  if (unknown.length) {
    throw new UsageError(`unknown bench ${unknown.join(", ")}; benches: ${BENCH_NAMES.join(" ")}`);
  }
  const results: Record<string, Record<string, Measurement> | { error: string }> = {};
  let benches: Bench[] = [{ name: "boot", run: benchBoot }];
  if (opts.fresh || opts.only?.includes("fresh")) benches.push({ name: "fresh", run: benchFresh });
  if (opts.only?.includes("matrix")) benches.push({ name: "matrix", run: benchMatrix });
  benches.push(...BENCHES);
  if (opts.only) benches = benches.filter((b) => opts.only!.includes(b.name));
  for (const b of benches) {
    progress("bench", b.name);
    try {
      results[b.name] = await b.run(config);
    } catch (e) {
      results[b.name] = { error: (e as Error).message };
    }
  }
  const dir = join(config.reportsDir, "bench", newRunId());
  await Deno.mkdir(dir, { recursive: true });
  const path = join(dir, "bench.json");
  await Deno.writeTextFile(
    path,
    JSON.stringify(
      {
        project: await projectDescribe(config.repoRoot),
        at: new Date().toISOString(),
        host: { kernel: Deno.osRelease(), cpus: navigator.hardwareConcurrency },
        results,
      },
      null,
      2,
    ) + "\n",
  );
  const latest = join(config.reportsDir, "bench", "latest");
  await Deno.remove(latest).catch(() => {});
  await Deno.symlink(relative(join(config.reportsDir, "bench"), dir), latest);
  return path;
}
