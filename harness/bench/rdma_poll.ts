/**
 * Bench of the provider's completion fast path: `ibv_poll_cq` cost per
 * drained completion and per empty poll, with no system call allowed (see
 * harness/guest/poll_cq.ts), over cnuas_ib and then over `rdma_rxe` bound to the
 * same cnuas_net netdev in the same guest (rxe's provider maps its CQ too),
 * with one getppid() system call as the scale of a kernel entry. Figures:
 * ns per call, the speed-up of cnuas_ib over rxe, and how many empty polls
 * fit in one system call.
 */
import type { Config } from "../config.ts";
import { runBenchRow } from "./one_row.ts";
import type { Row } from "../matrix/row.ts";
import type { Measurement } from "../report/schema.ts";
import { type PollCqFigures, runPollCqBench } from "../guest/poll_cq.ts";
import { bindRxe, loadCnuasIb, RXE_DEV } from "../guest/cnuas_ib.ts";

/** Runs per device; the median of each figure is reported. */
const RUNS = 3;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** Median of each figure over the runs. */
function medians(runs: PollCqFigures[]): Record<string, number> {
  return {
    drainNsPerCompletion: median(runs.map((r) => r.drainNsPerCompletion)),
    emptyPollNs: median(runs.map((r) => r.emptyPollNs)),
    getppidSyscallNs: median(runs.map((r) => r.getppidSyscallNs)),
  };
}

/** The bench as a matrix row, so the runner brings up the guest. */
export const rdmaPollRow: Row = {
  id: "bench-rdma-poll",
  title: "ibv_poll_cq without system calls: cnuas_ib and rdma_rxe",
  needs: {
    guests: 1,
    builds: ["qemu", "image", "provider", "guestprogs"],
    devices: { vnic: 1 },
  },
  timeoutSec: 900,
  async run(ctx) {
    const g = ctx.guests[0];
    const dev = await ctx.step("load cnuas_ib", () => loadCnuasIb(g));
    const figures: Record<string, Record<string, number>> = {};
    for (const [label, ibdev] of [["cnuas_ib", dev.ibdev], ["rxe", RXE_DEV]] as const) {
      if (label === "rxe") {
        await ctx.step(
          "swap cnuas_ib for rdma_rxe on the same netdev",
          () => bindRxe(g, dev.iface),
        );
      }
      const runs: PollCqFigures[] = [];
      for (let i = 0; i < RUNS; i++) {
        runs.push(
          await ctx.step(
            `${label}: poll_cq_bench run ${i + 1}/${RUNS}`,
            () => runPollCqBench(g, ibdev),
          ),
        );
      }
      figures[label] = medians(runs);
      for (const [k, v] of Object.entries(figures[label])) {
        ctx.measure(`${label}.${k}`, Number(v.toFixed(1)), "ns");
      }
      ctx.measure(
        `${label}.emptyPollsPerSyscall`,
        Number((figures[label].getppidSyscallNs / figures[label].emptyPollNs).toFixed(1)),
        "x",
      );
    }
    for (const k of ["drainNsPerCompletion", "emptyPollNs"]) {
      const [a, b] = [figures.cnuas_ib[k], figures.rxe[k]];
      ctx.measure(`speedup.${k}`, a > 0 ? Number((b / a).toFixed(3)) : 0, "x");
    }
  },
};

/** `deno task bench` entry: run the row once and return its measurements. */
export async function benchRdmaPoll(config: Config): Promise<Record<string, Measurement>> {
  const r = await runBenchRow(config, rdmaPollRow);
  if (r.status !== "PASS") throw new Error(`rdma poll bench ${r.status}: ${r.reason}`);
  return r.measurements;
}
