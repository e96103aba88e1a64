/**
 * `deno task bench`: every measurement the issues ask for, in one
 * `bench.json`. Speed goals are reported here, never asserted in tests.
 */
import { join, relative } from "node:path";
import { removeTree } from "../cache.ts";
import type { Config } from "../config.ts";
import { loadRows } from "../matrix/registry.ts";
import { newRunId, projectDescribe, runMatrix } from "../matrix/run.ts";
import { progress } from "../progress.ts";
import type { Measurement } from "../matrix/row.ts";
import { fabricStarter } from "../matrix/lab.ts";

/** One benchmark: a name and a function producing measurements. */
export interface Bench {
  name: string;
  run: (config: Config) => Promise<Record<string, Measurement>>;
}

/** Warm `matrix --row boot`: wall time and boot-to-SSH per guest. */
async function benchBoot(config: Config): Promise<Record<string, Measurement>> {
  const rows = await loadRows(["boot"]);
  const t0 = performance.now();
  const { report } = await runMatrix(
    { ...config, reportsDir: join(config.reportsDir, "bench-runs") },
    rows,
    {
      fabricStarter,
    },
  );
  const wall = (performance.now() - t0) / 1000;
  const r = report.rows[0];
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

/** Benches contributed by the other parts (device oracles, switch, RDMA checker). */
const OPTIONAL_BENCHES: { file: string; fn: string }[] = [
  { file: "./vnic.ts", fn: "benchVnic" },
  { file: "./gpu.ts", fn: "benchGpu" },
  { file: "./switch.ts", fn: "benchSwitch" },
  { file: "./rdma.ts", fn: "benchRdmaChecker" },
  { file: "./net.ts", fn: "benchNet" },
  { file: "./rdma_perf.ts", fn: "benchRdmaPerf" },
  { file: "./rdma_poll.ts", fn: "benchRdmaPoll" },
];

/** Run every bench; write `reports/bench/<id>/bench.json`; return its path. */
export async function runBench(config: Config, opts: { fresh?: boolean } = {}): Promise<string> {
  const results: Record<string, Record<string, Measurement> | { error: string }> = {};
  const benches: Bench[] = [{ name: "boot", run: benchBoot }];
  if (opts.fresh) benches.push({ name: "fresh", run: benchFresh });
  for (const b of OPTIONAL_BENCHES) {
    try {
      const mod = await import(b.file) as Record<string, Bench["run"]>;
      if (typeof mod[b.fn] === "function") benches.push({ name: b.fn, run: mod[b.fn] });
    } catch (e) {
      if (!(e instanceof TypeError && /Module not found/.test(e.message))) throw e;
    }
  }
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
