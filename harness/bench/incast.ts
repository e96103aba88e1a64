/**
 * Bench `incast` (issue 16): the `lossless` row's 2→1 RoCEv2 incast
 * (harness/guest/incast.ts) under each congestion control — none, PFC,
 * ECN/DCQCN, PFC and ECN together — side by side: the flows' goodput, the
 * round trips of a small-message probe on the same priority behind them
 * (ping every 20 ms with the RoCE DSCP: it waits in the same switch queue),
 * and what the switch and the senders counted.
 */
import type { Config } from "../config.ts";
import type { Row } from "../matrix/row.ts";
import type { Measurement } from "../report/schema.ts";
import { type IncastMode, incastNeeds, quantile, runIncast, setupIncast } from "../guest/incast.ts";
import { measuredSoFar, runBenchRow } from "./one_row.ts";

/** The four controls, as the issue lists them. */
export const INCAST_BENCH_MODES: IncastMode[] = [
  { name: "none", pfc: false, ecn: false, latencyProbe: true },
  { name: "pfc", pfc: true, ecn: false, latencyProbe: true },
  { name: "ecn", pfc: false, ecn: true, latencyProbe: true },
  { name: "pfcEcn", pfc: true, ecn: true, latencyProbe: true },
];

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

/** The bench as a row: one world, the four modes one after the other. */
export const incastBenchRow: Row = {
  id: "bench-incast",
  title: "incast goodput and probe latency: none, PFC, ECN, PFC+ECN",
  needs: incastNeeds(),
  timeoutSec: 1800,
  modules: ["cnuas_net", "cnuas_ib"],
  async run(ctx) {
    const w = await setupIncast(ctx, ["10.78.0.1", "10.78.0.2", "10.78.0.3"]);
    for (const mode of INCAST_BENCH_MODES) {
      const r = await ctx.step(
        `${mode.name}: incast with the latency probe`,
        () => runIncast(ctx, w, mode, { size: 262144, iters: 6 }),
      );
      const m = (k: string, v: number, unit: string) => ctx.measure(`${mode.name}.${k}`, v, unit);
      // ibv_rc_pingpong's figure: both directions' bytes over its run time
      m("goodputMbps", sum(r.flows.map((f) => f.mbitPerSec)), "Mbit/s");
      m("wallSec", r.wallSec, "s");
      const rtt = r.probe!.rttMs;
      m("probeP50Ms", quantile(rtt, 0.5), "ms");
      m("probeP99Ms", quantile(rtt, 0.99), "ms");
      m("probeSent", r.probe!.sent, "packets");
      m("probeLost", r.probe!.lost, "packets");
      m("queueFull", r.sw[0].queueFull, "frames");
      m("ecnMarked", r.sw[0].ecnMarked, "frames");
      m("pauseSent", sum(r.sw.map((s) => s.pauseSent)), "frames");
      m("pfcViolation", sum(r.sw.map((s) => s.pfcViolation)), "frames");
      m("retransmits", sum(r.hw.map((h) => h.retransmits ?? 0)), "packets");
      m("rpCnpHandled", sum(r.hw.map((h) => h.rp_cnp_handled ?? 0)), "packets");
    }
  },
};

/** `deno task bench` entry: run the bench row once and return its measurements. */
export async function benchIncast(config: Config): Promise<Record<string, Measurement>> {
  const r = await runBenchRow(config, incastBenchRow);
  if (r.status !== "PASS") throw new Error(`incast ${r.status}: ${r.reason}${measuredSoFar(r)}`);
  return r.measurements;
}
