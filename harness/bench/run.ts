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
import type { Measurement } from "../report/schema.ts";
import { benchCnuasdev } from "./cnuasdev.ts";
import { benchGpu } from "./gpu.ts";
import { benchIbPerf } from "./ib_perf.ts";
import { benchNet } from "./net.ts";
import { runBenchRow } from "./one_row.ts";
import { benchRdmaChecker } from "./rdma.ts";
import { benchRdmaPerf } from "./rdma_perf.ts";
import { benchRdmaPoll } from "./rdma_poll.ts";
import { benchRdmaPost } from "./rdma_post.ts";
import { benchSwitch } from "./switch.ts";
import { benchVnic } from "./vnic.ts";

/** One benchmark: a name and a function producing measurements. */
export interface Bench {
  name: string;
  run: (config: Config) => Promise<Record<string, Measurement>>;
}

/** Warm `matrix --row boot`: wall time and boot-to-SSH per guest. */
async function benchBoot(config: Config): Promise<Record<string, Measurement>> {
  const [row] = await loadRows(["boot"]);
  const t0 = performance.now();
  const r = await runBenchRow(config, row);
  const wall = (performance.now() - t0) / 1000;
  if (r.status !== "PASS") throw new Error(`boot row ${r.status}: ${r.reason}`);
  return {
    warmMatrixRowBootSec: { value: Number(wall.toFixed(1)), unit: "s" },
    ...r.measurements,
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
    // The boot row's own figures, without its wall time (here that is the fresh figure).
    const { warmMatrixRowBootSec: _wall, ...r } = await benchBoot({ ...config, cacheDir });
    return {
      freshToBootRowSec: { value: Number(((performance.now() - t0) / 1000).toFixed(1)), unit: "s" },
      ...r,
    };
  } finally {
    await removeTree(cacheDir);
  }
}

/**
 * The benches after boot: device oracles, GPU and libcnuasdev, switch, RDMA
 * checker, NIC and RDMA figures.
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
];

/** Every bench's name, as `bench --only` takes it. */
export const BENCH_NAMES = ["boot", "fresh", ...BENCHES.map((b) => b.name)];

/**
 * Run every bench (`only`: just those named, in their usual order; `fresh`
 * is opt-in either way); write `reports/bench/<id>/bench.json`; return its
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
