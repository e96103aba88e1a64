/**
 * cnuasgpu numbers for `deno task bench`: host↔device copy bandwidth through
 * the copy ioctls and through memcpy() on an mmap of an allocation (4 KiB,
 * 1 MiB, 16 MiB), and CnuasLink frames/s and MiB/s from gpu0 to gpu1 through
 * the link-mode switch (64 B and 65528 B payloads, the latter a full 64 KiB
 * frame on the wire). The guest programs `cnuasgpu_copybench` and
 * `cnuasgpu_link bench` do the timing; this file runs them in a private row.
 *
 * @example
 * ```ts
 * const m = await benchGpu(defaultConfig());
 * console.log(m.gpuCopyToDevIoctlMiBPerSec1MiB.value);
 * ```
 */
import { HilError } from "../errors.ts";
import type { Config } from "../config.ts";
import { measuredSoFar, runBenchRow } from "./one_row.ts";
import { linkedGpuNeeds } from "../matrix/needs.ts";
import { type Row, type RowContext, RowFailure } from "../matrix/row.ts";
import { type Measurement } from "../report/schema.ts";
import {
  CNUASGPU_COPYBENCH,
  CNUASGPU_LINK,
  gpuNodesById,
  guestGpus,
  loadCnuasgpu,
  nodesFor,
  runGpuProgram,
  waitLinkState,
} from "../guest/cnuasgpu.ts";

/** Seconds each copy point (path × size) repeats its copy. */
export const COPY_SEC = 1;
/** Seconds each CnuasLink payload size is sent for. */
export const LINK_SEC = 3;
/** Payload sizes of the CnuasLink bench: 64 B and the largest (64 KiB frame on the wire). */
export const LINK_PAYLOADS = [64, 65536 - 8] as const;
/** Copy points `cnuasgpu_copybench` prints: {ioctl, mmap} × {to, from} device × 3 sizes. */
const COPY_POINTS = 12;
/** The allocation `cnuasgpu_copybench` copies to and from (its COPY_MAX), in MiB. */
const COPY_MAX_MIB = 16;
/** The destination gpu_id meaning "every accelerator" (the switch learns ports from it). */
const BROADCAST = "4294967295";

/** The bench could not produce its numbers; says what failed. */
export class GpuBenchError extends HilError {}

/** `bench NAME VALUE UNIT` lines of the guest program into measurements (other lines ignored). */
export function parseBenchLines(text: string): Record<string, Measurement> {
  const out: Record<string, Measurement> = {};
  for (const line of text.split("\n")) {
    const m = /^bench ([A-Za-z][A-Za-z0-9]*) (-?[0-9]+(?:\.[0-9]+)?) (\S+)$/.exec(line.trim());
    if (m) out[m[1]] = { value: Number(m[2]), unit: m[3] };
  }
  return out;
}

/** Run a bench guest program; its numbers, checked to be `want` many. */
async function benchMode(
  ctx: RowContext,
  program: string,
  args: string[],
  want: number,
  timeoutSec: number,
): Promise<{ numbers: Record<string, Measurement>; kv: Record<string, string> }> {
  const r = await runGpuProgram(ctx.guests[0], program, args, timeoutSec);
  const what = [program.split("/").pop(), ...args].join(" ");
  ctx.log(r.stdout.trim());
  ctx.expect(r.code === 0, `${what}: exit ${r.code}: ${r.stderr.trim()}`);
  const numbers = parseBenchLines(r.stdout);
  const n = Object.keys(numbers).length;
  ctx.expect(n === want, `${what}: ${n} numbers, expected ${want}`);
  for (const [k, m] of Object.entries(numbers)) ctx.measure(k, m.value, m.unit);
  return { numbers, kv: r.kv };
}

async function run(ctx: RowContext): Promise<void> {
  const g = ctx.guests[0];
  const props = guestGpus(0, 2);
  const names = await ctx.step("modprobe cnuasgpu", () => loadCnuasgpu(g, 2));
  const [a, b] = nodesFor(await gpuNodesById(g, names), props);
  // cnuasgpu_copybench allocates COPY_MAX_MIB on gpu0; the top of BAR1 holds the link buffers.
  ctx.expect(
    props[0].devmemMb > COPY_MAX_MIB,
    `${a} has ${props[0].devmemMb} MiB, cnuasgpu_copybench needs more than ${COPY_MAX_MIB} MiB`,
  );
  // The numbers differ by orders of magnitude between the two; bench.json keeps which it was.
  ctx.measure("gpuBenchGuestKvm", ctx.accel === "kvm" ? 1 : 0, "bool");

  await ctx.step(
    `${a}: copy bandwidth, ioctl and mmap, ${COPY_POINTS} points of ~${COPY_SEC} s`,
    () => benchMode(ctx, CNUASGPU_COPYBENCH, [`/dev/${a}`, String(COPY_SEC)], COPY_POINTS, 300),
  );

  await ctx.step("both links up; each device announces its gpu_id", async () => {
    await waitLinkState(g, [a, b], 1, 10);
    for (const n of [a, b]) {
      const r = await runGpuProgram(
        g,
        CNUASGPU_LINK,
        ["send", `/dev/${n}`, BROADCAST, "1", "8"],
        30,
      );
      if (r.code !== 0) throw new RowFailure(`${n}: hello failed: ${r.stderr.trim()}`);
    }
  });
  for (const size of LINK_PAYLOADS) {
    await ctx.step(`CnuasLink ${a} -> ${b}: ${size} B payloads for ~${LINK_SEC} s`, async () => {
      const { kv } = await benchMode(
        ctx,
        CNUASGPU_LINK,
        [
          "bench",
          `/dev/${a}`,
          `/dev/${b}`,
          String(props[1].gpuId),
          String(size),
          String(LINK_SEC),
        ],
        2,
        120,
      );
      ctx.expect(
        kv.sent_frames !== undefined && kv.sent_frames === kv.recv_frames,
        `${kv.sent_frames} frames sent, ${kv.recv_frames} received`,
      );
    });
  }
}

/** The bench's private row (not in the matrix): one guest, two accelerators on a link fabric. */
export const gpuBenchRow: Row = {
  id: "bench-gpu",
  title: "cnuasgpu copy bandwidth (ioctl, mmap) and CnuasLink throughput",
  needs: linkedGpuNeeds(),
  timeoutSec: 600,
  run,
};

/**
 * Copy bandwidth to and from device memory through the ioctls and through
 * mmap, and CnuasLink frames/s and MiB/s between two accelerators. Throws
 * GpuBenchError (with whatever was measured) when the row did not pass.
 */
export async function benchGpu(config: Config): Promise<Record<string, Measurement>> {
  const r = await runBenchRow(config, gpuBenchRow);
  if (r.status !== "PASS") {
    throw new GpuBenchError(`bench-gpu ${r.status}: ${r.reason}${measuredSoFar(r)}`);
  }
  return r.measurements;
}
