/**
 * libcnuasdev numbers for `deno task bench`, the three backends side by
 * side: copy bandwidth (copy calls, zerocopy mmap, pinned async ops) at 4 KiB,
 * 64 KiB and 1 MiB each way, and the asynchronous queue's ops/s at batch 1
 * and batch_max. One guest with a cnuasgpu function and cnuasgpu.ko and
 * cnuasgpu_host.ko loaded; `cnuasdev_bench` (drivers/lib/test) does the
 * timing and checks every figure's data by a digest, on pcie:0, host:0 and
 * soft in turn. A mode the device lacks a capability for prints no figure
 * (see docs/bench.md). The runner's dmesg guard reads the guest's log after
 * the row, as after every row.
 *
 * @example
 * ```ts
 * const m = await benchCnuasdev(defaultConfig());
 * console.log(m["host.zerocopyToDev.1M.MiBps"].value);
 * ```
 */
import type { Config } from "../config.ts";
import { HilError } from "../errors.ts";
import {
  CNUASDEV_BENCH,
  devBenchName,
  loadCnuasgpuHost,
  missingDevBenchFigures,
  parseDevBench,
} from "../guest/cnuasdev.ts";
import { loadCnuasgpu } from "../guest/cnuasgpu.ts";
import { shq } from "../guest/shell.ts";
import { cnuasdevGuestNeeds } from "../matrix/needs.ts";
import type { Row, RowContext } from "../matrix/row.ts";
import type { Measurement } from "../report/schema.ts";
import { measuredSoFar, runBenchRow } from "./one_row.ts";

/** Seconds each point (mode × direction × size, or queue batch) repeats its operation. */
export const POINT_SEC = 1;
/** The backends, in libcnuasdev's enumeration order, by the spec that opens each. */
export const BACKENDS = [
  { backend: "pcie", spec: "pcie:0" },
  { backend: "host", spec: "host:0" },
  { backend: "soft", spec: "soft" },
] as const;

/** The bench could not produce its numbers; says what failed. */
export class CnuasdevBenchError extends HilError {}

/** Run `cnuasdev_bench` on one backend; record its figures under the backend's name. */
async function benchBackend(
  ctx: RowContext,
  b: typeof BACKENDS[number],
): Promise<void> {
  const r = await ctx.guests[0].run(`${shq(CNUASDEV_BENCH)} ${shq(b.spec)} ${POINT_SEC}`, {
    timeoutSec: 600,
  });
  ctx.log(r.stdout.trim());
  const run = parseDevBench(r.stdout);
  ctx.expect(
    run.backend === b.backend,
    `cnuasdev_bench ${b.spec} ran on ${run.backend}, not ${b.backend}: ${r.stderr.trim()}`,
  );
  // Each printed figure passed its own data check: keep them even if a later point failed.
  for (const [name, m] of run.figures) {
    ctx.measure(devBenchName(b.backend, name, m.unit), m.value, m.unit);
  }
  for (const [mode, needs] of run.skips) {
    ctx.log(`${b.backend}: no ${mode} figures, the device lacks ${needs}`);
  }
  ctx.expect(
    r.code === 0 && run.passed,
    `cnuasdev_bench ${b.spec}: exit ${r.code}${run.passed ? "" : ", no PASS"}: ${
      r.stderr.trim().slice(-800)
    }`,
  );
  const missing = missingDevBenchFigures(run);
  ctx.expect(missing.length === 0, `${b.backend}: no figure for ${missing.join(", ")}`);
}

async function run(ctx: RowContext): Promise<void> {
  const g = ctx.guests[0];
  await ctx.step("modprobe cnuasgpu: /dev/cnuasgpu0", () => loadCnuasgpu(g, 1));
  await ctx.step("modprobe cnuasgpu_host: /dev/cnuasgpu_host0", () => loadCnuasgpuHost(g));
  for (const b of BACKENDS) {
    await ctx.step(
      `${b.backend}: copy bandwidth and queue ops/s, ~${POINT_SEC} s a point`,
      () => benchBackend(ctx, b),
    );
  }
}

/** The bench's private row (not in the matrix): the cnuasdev row's guest. */
export const cnuasdevBenchRow: Row = {
  id: "bench-cnuasdev",
  title: "libcnuasdev copy bandwidth and queue ops/s on pcie, host and soft",
  needs: cnuasdevGuestNeeds(),
  timeoutSec: 900,
  modules: ["cnuasgpu", "cnuasgpu_host"],
  libraries: ["libcnuasdev"],
  run,
};

/**
 * Copy bandwidth per backend and mode and queue ops/s, named
 * `<backend>.<name>.<unit>` (`pcie.copyToDev.64k.MiBps`,
 * `host.async.b32.opsPerSec`). Throws CnuasdevBenchError (with whatever was
 * measured) when the row did not pass.
 */
export async function benchCnuasdev(config: Config): Promise<Record<string, Measurement>> {
  const r = await runBenchRow(config, cnuasdevBenchRow);
  if (r.status !== "PASS") {
    throw new CnuasdevBenchError(`bench-cnuasdev ${r.status}: ${r.reason}${measuredSoFar(r)}`);
  }
  return r.measurements;
}
