/**
 * A row segment captured at the switch and checked by the RDMA wire oracle
 * (harness/models/rdma/): the end-to-end RDMA rows wrap each segment of
 * traffic in {@link captured}. Totals over a row's segments are its
 * `framesChecked` and `violations` measurements.
 */
import { join } from "node:path";
import { type RowContext, RowFailure } from "./matrix/row.ts";
import { checkPcapngFile } from "./rdma_check.ts";

/** Oracle totals over a row's captures (recorded as `framesChecked` and `violations`). */
const oracleTotals = new WeakMap<RowContext, { frames: number; violations: number }>();

/**
 * Run `fn` with the switch capturing every frame into `<name>.pcapng`, then
 * run the capture through the RDMA wire oracle: any violation fails the
 * row. A clean capture is deleted (its `.violations.json` summary stays as
 * the proof the check ran); one with violations is kept for inspection.
 */
export async function captured(
  ctx: RowContext,
  name: string,
  fn: () => Promise<void>,
): Promise<void> {
  if (!ctx.fabric) throw new RowFailure(`${name}: capturing needs the row's fabric`);
  const path = join(ctx.dir, `${name}.pcapng`);
  const start = await ctx.fabric.control({ op: "capture_start", path });
  if (start.ok !== true) throw new RowFailure(`capture_start: ${String(start.error)}`);
  try {
    await fn();
  } finally {
    const stop = await ctx.fabric!.control({ op: "capture_stop" });
    if (stop.ok !== true) ctx.log(`capture_stop: ${String(stop.error)}`);
  }
  await ctx.step(`${name}: the capture passes the RDMA wire oracle`, async () => {
    const r = await checkPcapngFile(path);
    ctx.artifact(r.reportPath);
    ctx.measure(`oracle.${name}.framesChecked`, r.framesChecked, "frames");
    ctx.measure(`oracle.${name}.rdmaFrames`, r.rdmaFrames, "frames");
    ctx.measure(`oracle.${name}.violations`, r.violationCount, "violations");
    const total = oracleTotals.get(ctx) ?? { frames: 0, violations: 0 };
    total.frames += r.framesChecked;
    total.violations += r.violationCount;
    oracleTotals.set(ctx, total);
    ctx.measure("framesChecked", total.frames, "frames");
    ctx.measure("violations", total.violations, "violations");
    // An empty or cut capture proves nothing: it must not pass as clean.
    ctx.expect(r.rdmaFrames > 0, `${name}: the capture holds no RDMA frame`);
    ctx.expect(r.truncatedFrames === 0, `${name}: ${r.truncatedFrames} frames cut short`);
    if (r.violationCount === 0) {
      await Deno.remove(path);
    } else {
      ctx.artifact(path);
    }
    ctx.expect(
      r.violationCount === 0,
      `${name}: ${r.violationCount} wire violations (${
        JSON.stringify(r.byRule)
      }), see ${r.reportPath}`,
    );
  });
}
