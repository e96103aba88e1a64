/**
 * Bench of the posting verbs (issue 14): `ibv_post_send` per WR for lists
 * of 1, 16 and 64 WRs per call, `ibv_post_recv` and `ibv_post_srq_recv`
 * per WR for lists of 1 and 16, and the system calls each call makes
 * (see harness/guest/post_bench.ts), over cnuas_ib and then over `rdma_rxe`
 * bound to the same cnuas_net netdev in the same guest. Figures: ns per WR,
 * system calls per call, and the speed-up of cnuas_ib over rxe.
 *
 * The row is also a gate on the design's claim: cnuas_ib's post_recv makes
 * no system call and its post_send exactly one per call, however long the
 * list; post_recv and post_srq_recv make none (both rings are mapped).
 * rxe's counts are recorded as measured.
 */
import type { Config } from "../config.ts";
import { runBenchRow } from "./one_row.ts";
import { rdmaGuestNeeds } from "../matrix/needs.ts";
import { type Row, RowFailure } from "../matrix/row.ts";
import type { Measurement } from "../report/schema.ts";
import { bindRxe, RXE_DEV, rxeGidIndex } from "../guest/cnuas_ib.ts";
import { setupRoceNodes } from "../guest/roce_pair.ts";
import {
  POST_CASES,
  type PostBenchFigures,
  type PostBenchOptions,
  postCaseKey,
  type PostVerb,
  runPostBench,
} from "../guest/post_bench.ts";

/** Runs per device; the median of each figure is reported. */
const RUNS = 3;

/** The guest's address: its RoCEv2 GID is the one the loopback QPs use. */
const IP = "10.79.0.1";

/** System calls per call the design claims for cnuas_ib, by verb. */
export const CNUAS_SYSCALLS_PER_CALL: Record<PostVerb, number> = {
  post_send: 1,
  post_recv: 0,
  post_srq_recv: 0,
};

/** `post_srq_recv` → `postSrqRecv`, the measurement's name for a verb. */
export function verbFigureName(verb: PostVerb): string {
  return verb.replace(/_(\w)/g, (_, c: string) => c.toUpperCase());
}

/**
 * Where cnuas_ib's counts differ from {@link CNUAS_SYSCALLS_PER_CALL}: one
 * line per case, empty when the claim holds. Exact: a post_send list of 64
 * that made 2 system calls is as wrong as a post_recv that made one.
 */
export function syscallClaimViolations(f: PostBenchFigures): string[] {
  const want = CNUAS_SYSCALLS_PER_CALL;
  const out: string[] = [];
  for (const c of POST_CASES) {
    const k = postCaseKey(c);
    const got = f.cases[k];
    if (got.syscalls !== want[c.verb] * got.calls) {
      out.push(
        `${k}: ${got.syscalls} system calls in ${got.calls} calls (${got.syscallList}); ` +
          `want ${want[c.verb]} per call`,
      );
    }
  }
  return out;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** The figures of several runs as measurements named `<verb>NsPerWr.b<n>` and so on. */
export function postMeasurements(runs: PostBenchFigures[]): Record<string, Measurement> {
  const out: Record<string, Measurement> = {};
  for (const c of POST_CASES) {
    const k = postCaseKey(c);
    const name = verbFigureName(c.verb);
    out[`${name}NsPerWr.b${c.batch}`] = {
      value: Number(median(runs.map((r) => r.cases[k].nsPerWr)).toFixed(1)),
      unit: "ns",
    };
    // exact counts: the largest of the runs, so a run that made more is not hidden
    out[`${name}SyscallsPerCall.b${c.batch}`] = {
      value: Number(Math.max(...runs.map((r) => r.cases[k].syscallsPerCall)).toFixed(3)),
      unit: "syscalls",
    };
  }
  out.getppidSyscallNs = {
    value: Number(median(runs.map((r) => r.getppidSyscallNs)).toFixed(1)),
    unit: "ns",
  };
  return out;
}

/** Options of the row (a planted provider setting, to see the gate fail). */
export interface RdmaPostRowOptions {
  /** `NAME=value` put before post_bench on cnuas_ib, e.g. `CNUAS_NO_RQ_RING=1`. */
  cnuasEnv?: string;
}

/** The bench as a matrix row, so the runner brings up the guest. */
export function makeRdmaPostRow(o: RdmaPostRowOptions = {}): Row {
  return {
    id: "bench-rdma-post",
    title: "ibv_post_send/recv/srq_recv per WR and system calls: cnuas_ib and rdma_rxe",
    needs: rdmaGuestNeeds(),
    timeoutSec: 1200,
    async run(ctx) {
      const [n] = await setupRoceNodes(ctx, [IP]);
      const figures: Record<string, Record<string, Measurement>> = {};
      for (const label of ["cnuas_ib", "rxe"] as const) {
        let [ibdev, gid] = [n.dev.ibdev, n.gid];
        if (label === "rxe") {
          gid = await ctx.step("swap cnuas_ib for rdma_rxe on the same netdev", async () => {
            await bindRxe(n.g, n.dev.iface);
            return await rxeGidIndex(n.g, IP);
          });
          ibdev = RXE_DEV;
        }
        const opts: PostBenchOptions = label === "cnuas_ib" && o.cnuasEnv
          ? { env: o.cnuasEnv }
          : {};
        const runs: PostBenchFigures[] = [];
        for (let i = 0; i < RUNS; i++) {
          runs.push(
            await ctx.step(
              `${label}: post_bench -g ${gid} run ${i + 1}/${RUNS}`,
              () => runPostBench(n.g, ibdev, gid, opts),
            ),
          );
          for (const [k, c] of Object.entries(runs[i].cases)) {
            ctx.log(`${label} ${k}: ${c.nsPerWr} ns/WR, ${c.syscallList} in ${c.calls} calls`);
          }
        }
        figures[label] = postMeasurements(runs);
        for (const [k, m] of Object.entries(figures[label])) {
          ctx.measure(`${label}.${k}`, m.value, m.unit);
        }
        if (label === "cnuas_ib") {
          const bad = [...new Set(runs.flatMap((r) => syscallClaimViolations(r)))];
          if (bad.length) {
            throw new RowFailure(`cnuas_ib: system calls per post: ${bad.join("; ")}`);
          }
        }
      }
      for (const c of POST_CASES) {
        const k = `${verbFigureName(c.verb)}NsPerWr.b${c.batch}`;
        const [a, b] = [figures.cnuas_ib[k].value, figures.rxe[k].value];
        ctx.measure(`speedup.${k}`, a > 0 ? Number((b / a).toFixed(3)) : 0, "x");
      }
    },
  };
}

/** The row as `deno task bench` runs it. */
export const rdmaPostRow: Row = makeRdmaPostRow();

/** `deno task bench` entry: run the row once and return its measurements. */
export async function benchRdmaPost(config: Config): Promise<Record<string, Measurement>> {
  const r = await runBenchRow(config, rdmaPostRow);
  if (r.status !== "PASS") throw new Error(`rdma post bench ${r.status}: ${r.reason}`);
  return r.measurements;
}
