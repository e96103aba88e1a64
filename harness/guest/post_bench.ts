/**
 * The cost of posting work requests, measured in a guest with
 * `drivers/test/post_bench.c`: ns per WR of `ibv_post_send` (RDMA WRITEs
 * in lists of 1, 16 and 64, to a second QP of the same device through its
 * own RoCEv2 GID), of `ibv_post_recv` and of `ibv_post_srq_recv` (lists of
 * 1 and 16), and the system calls each call makes, counted exactly by a
 * seccomp user-notification supervisor. Used by the `bench-rdma-post`
 * bench row (cnuas_ib against rdma_rxe).
 *
 * @example
 * ```ts
 * const f = await runPostBench(guest, "cnuas_ib0", 1);
 * f.cases.post_recv_b16.syscalls; // 0: the receive ring is mapped
 * ```
 */
import { RowFailure } from "../matrix/row.ts";
import { type Guest, GUEST_PATHS } from "../vm/types.ts";
import { shq } from "./shell.ts";
import { passFigures } from "./pass_output.ts";

/** The guest program. */
export const POST_BENCH = `${GUEST_PATHS.bin}/post_bench`;

/** The verbs post_bench measures. */
export type PostVerb = "post_send" | "post_recv" | "post_srq_recv";

/** Each case: a verb and the WRs per call (a linked list of that many). */
export const POST_CASES: readonly { verb: PostVerb; batch: number }[] = [
  { verb: "post_send", batch: 1 },
  { verb: "post_send", batch: 16 },
  { verb: "post_send", batch: 64 },
  { verb: "post_recv", batch: 1 },
  { verb: "post_recv", batch: 16 },
  { verb: "post_srq_recv", batch: 1 },
  { verb: "post_srq_recv", batch: 16 },
];

/** A case's name in post_bench's output: `post_send_b16`. */
export function postCaseKey(c: { verb: PostVerb; batch: number }): string {
  return `${c.verb}_b${c.batch}`;
}

/** What post_bench found for one case. */
export interface PostCaseFigures {
  /** Median over the timed rounds of ns per WR posted. */
  nsPerWr: number;
  /** Calls made in the counting pass. */
  calls: number;
  /** System calls those calls made. */
  syscalls: number;
  /** `syscalls / calls`. */
  syscallsPerCall: number;
  /** Which system calls, `name:count,...`, or `none`. */
  syscallList: string;
}

/** What one run of post_bench measured. */
export interface PostBenchFigures {
  /** By {@link postCaseKey}. */
  cases: Record<string, PostCaseFigures>;
  /** One getppid() system call in the same process, ns: the scale of a kernel entry. */
  getppidSyscallNs: number;
}

/**
 * Parse post_bench's key=value output; undefined when it did not print
 * PASS. A PASS without a figure, or with a counter that miscounted its own
 * self-test (N getppid() calls are N system calls), is a RowFailure.
 */
export function parsePostBench(out: string): PostBenchFigures | undefined {
  const fig = passFigures("post_bench", out);
  if (fig === undefined) return undefined;
  const need = fig.need;
  const selftest = [need("selftest_getppid_calls"), need("selftest_getppid_syscalls")];
  if (selftest[0] === 0 || selftest[0] !== selftest[1]) {
    throw new RowFailure(
      `post_bench's system call counter is wrong: ${selftest[0]} getppid() counted as ${
        selftest[1]
      }`,
    );
  }
  const cases: Record<string, PostCaseFigures> = {};
  for (const c of POST_CASES) {
    const k = postCaseKey(c);
    const calls = need(`${k}_calls`);
    const syscalls = need(`${k}_syscalls`);
    if (calls <= 0) throw new RowFailure(`post_bench counted no ${k} calls`);
    cases[k] = {
      nsPerWr: need(`${k}_ns_per_wr`),
      calls,
      syscalls,
      syscallsPerCall: syscalls / calls,
      syscallList: fig.text(`${k}_syscall_list`) ?? "?",
    };
  }
  return { cases, getppidSyscallNs: need("getppid_syscall_ns") };
}

/** Options of one run. */
export interface PostBenchOptions {
  /** Timed send rounds (64 WRITEs each) per batch size. */
  sendRounds?: number;
  /** Timed receive rounds (a full queue each) per batch size. */
  recvRounds?: number;
  /** `NAME=value ...` put before the command (e.g. a provider switch). */
  env?: string;
}

/** Run post_bench on `ibdev` with RoCEv2 GID `gid`; a failure or a crash fails the row. */
export async function runPostBench(
  g: Guest,
  ibdev: string,
  gid: number,
  o: PostBenchOptions = {},
): Promise<PostBenchFigures> {
  const args = [
    `-d ${shq(ibdev)}`,
    `-g ${gid}`,
    `-n ${o.sendRounds ?? 100}`,
    `-r ${o.recvRounds ?? 8}`,
  ].join(" ");
  const env = o.env ? `env ${o.env} ` : "";
  const r = await g.run(`${env}${POST_BENCH} ${args} 2>&1; echo "exit=$?"`, { timeoutSec: 300 });
  const code = Number(/exit=(\d+)\s*$/.exec(r.stdout)?.[1] ?? -1);
  const figures = code === 0 ? parsePostBench(r.stdout) : undefined;
  if (figures === undefined) {
    throw new RowFailure(`post_bench -d ${ibdev}: exit ${code}: ${r.stdout.slice(-800)}`);
  }
  return figures;
}
