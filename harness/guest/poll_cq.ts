/**
 * The provider's completion fast path, measured in a guest with
 * `drivers/test/poll_cq_bench.c`: it fills a CQ with flushed receive
 * completions, forbids every system call with seccomp, then drains the CQ
 * and polls it empty. A provider whose `ibv_poll_cq` enters the kernel is
 * killed by SIGSYS instead of printing figures. Used by the `ibstat` row
 * (the check) and by `deno task bench` (the figures, cnuas_ib against rxe).
 */
import { RowFailure } from "../matrix/row.ts";
import { type Guest, GUEST_PATHS } from "../vm/types.ts";
import { shq } from "./shell.ts";
import { passFigures } from "./pass_output.ts";

/** The guest program. */
export const POLL_CQ_BENCH = `${GUEST_PATHS.bin}/poll_cq_bench`;

/** Exit status of a process killed by SIGSYS, as the shell reports it. */
export const SIGSYS_EXIT = 128 + 31;

/** The status a command wrapped as `cmd; echo "exit=$?"` ended with (-1: none printed). */
function exitStatus(stdout: string): number {
  return Number(/exit=(\d+)\s*$/.exec(stdout)?.[1] ?? -1);
}

/** What one run of poll_cq_bench measured. */
export interface PollCqFigures {
  /** Completions drained (one flushed receive each). */
  completions: number;
  /** Completions asked for per ibv_poll_cq call. */
  batch: number;
  /** Drain time divided by completions, ns. */
  drainNsPerCompletion: number;
  /** Calls that found the CQ empty while draining (the flush still landing). */
  emptyPollsDuringDrain: number;
  /** One ibv_poll_cq on an empty CQ, ns. */
  emptyPollNs: number;
  /** One getppid() system call in the same process, ns: the scale of a kernel entry. */
  getppidSyscallNs: number;
}

/**
 * Parse poll_cq_bench's key=value output; undefined when it did not print
 * PASS. The program prints no system-call count: its seccomp filter kills it
 * at the first call, so a PASS is only reachable without one (the exit
 * status tells, see {@link runPollCqBench}).
 */
export function parsePollCqBench(out: string): PollCqFigures | undefined {
  const fig = passFigures("poll_cq_bench", out);
  if (fig === undefined) return undefined;
  const need = fig.need;
  return {
    completions: need("completions"),
    batch: need("batch"),
    drainNsPerCompletion: need("drain_ns_per_completion"),
    emptyPollsDuringDrain: need("empty_polls_during_drain"),
    emptyPollNs: need("empty_poll_ns"),
    getppidSyscallNs: need("getppid_syscall_ns"),
  };
}

/** Options of one run. */
export interface PollCqOptions {
  completions?: number;
  batch?: number;
  emptyPolls?: number;
}

/** Run poll_cq_bench on `ibdev`; a wrong completion, a system call or a crash fails the row. */
export async function runPollCqBench(
  g: Guest,
  ibdev: string,
  o: PollCqOptions = {},
): Promise<PollCqFigures> {
  const args = [
    `-d ${shq(ibdev)}`,
    `-n ${o.completions ?? 4096}`,
    `-b ${o.batch ?? 16}`,
    `-e ${o.emptyPolls ?? 1000000}`,
  ].join(" ");
  const r = await g.run(`${POLL_CQ_BENCH} ${args} 2>&1; echo "exit=$?"`, { timeoutSec: 300 });
  const out = r.stdout;
  const code = exitStatus(out);
  if (code === SIGSYS_EXIT) {
    throw new RowFailure(
      `ibv_poll_cq on ${ibdev} made a system call: seccomp killed poll_cq_bench (SIGSYS)`,
    );
  }
  const figures = code === 0 ? parsePollCqBench(out) : undefined;
  if (figures === undefined) {
    throw new RowFailure(`poll_cq_bench -d ${ibdev}: exit ${code}: ${out.slice(-800)}`);
  }
  return figures;
}

/**
 * The check's own test: with `-x` the program makes one system call inside
 * the filtered section, so it must die of SIGSYS. Returns the exit status.
 */
export async function pollCqFilterExit(g: Guest, ibdev: string): Promise<number> {
  const r = await g.run(
    `${POLL_CQ_BENCH} -x -d ${shq(ibdev)} -n 16 -e 1 >/dev/null 2>&1; echo "exit=$?"`,
    { timeoutSec: 120 },
  );
  return exitStatus(r.stdout);
}
