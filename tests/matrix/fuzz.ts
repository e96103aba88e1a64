/**
 * Row `fuzz`: the wire fuzz of issue 20 (./fuzz_wire.ts: generated RoCEv2
 * frames injected at the first guest beside a live flow to the second,
 * every class counted as predicted) and the uverbs ABI fuzz against
 * cnuas_ib (drivers/test/uverbs_fuzz.c). The fuzzer runs once with at least 10,000
 * calls and then as several processes at once; afterwards the device holds
 * what it held before (`rdma resource`, and verbs_limits reaches every
 * limit again, so the driver's own object counts did not leak), a loopback
 * pingpong still passes, a soak (harness/guest/soak.ts: every kind of
 * traffic under 1% loss, cable pulls and switch restarts, memory bounded;
 * 1 minute quick, 10 deep) passes between the two guests, the kernel log is
 * clean, and cnuas_ib unloads with a module refcount of 0 and loads again.
 *
 * The seed is random per run (measurement `uverbsFuzz.seed`);
 * `CNUAS_HIL_FUZZ_SEED=<seed>` replays one: the main process runs with the
 * seed, the processes run together with seed + 1, seed + 2, ...
 */
import type { Row, RowContext } from "../../harness/matrix/row.ts";
import { rdmaPairNeeds } from "../../harness/matrix/needs.ts";
import { fuzzSeed } from "../../harness/config.ts";
import { dmesgViolations } from "../../harness/matrix/dmesg_guard.ts";
import { sh } from "../../harness/guest/shell.ts";
import { CNUAS_IB, loadCnuasIb, runPair } from "../../harness/guest/cnuas_ib.ts";
import {
  expectBothExit0,
  pingpongResult,
  type RoceNode,
  setupRoceNodes,
  waitPortActive,
} from "../../harness/guest/roce_pair.ts";
import { runSoak } from "../../harness/guest/soak.ts";
import {
  runUverbsFuzz,
  runUverbsFuzzTogether,
  type UverbsFuzzRun,
} from "../../harness/guest/uverbs_fuzz.ts";
import {
  checkLimits,
  heldCommand,
  kernelHeld,
  resourceCounts,
  type ResourceKind,
  runVerbsLimits,
  tableLimit,
} from "./verbs_limits.ts";
import { wireFuzzSteps } from "./fuzz_wire.ts";

/** The guest's address (its RoCE v2 GID is what the fuzzer's loopback QPs use). */
const IP = "10.77.0.1";

/** The second guest's: the live flow's other end during the wire fuzz. */
const PEER_IP = "10.77.0.2";

/** Calls of the main fuzz process, per depth. */
export const FUZZ_CALLS = { quick: 10_000, deep: 100_000 } as const;

/**
 * Minutes of soak (harness/guest/soak.ts) after the fuzz, per depth: the
 * shortest soak in the quick matrix (0: a warm-up round, a cable pull and
 * a switch restart, one more round, memory judged over it, whatever the
 * machine's speed; `1` grew to 4 rounds once the rounds got faster), ten
 * minutes in the nightly deep run (ci/matrix.yml).
 */
export const FUZZ_SOAK_MINUTES = { quick: 0, deep: 10 } as const;

/** Processes that fuzz at once, and the calls each makes. */
export const FUZZ_TOGETHER = { procs: 3, calls: 4_000 } as const;

/**
 * Kernel log lines this row fails on beyond the dmesg guard's: a call trace
 * of any kind, and the page allocator's warning — a size user space chose
 * reached vmalloc/kmalloc unchecked (a CQ of 2^31 entries: "vmalloc error:
 * size 103079219200, exceeds total pages", with the stack).
 */
export const FUZZ_DMESG_PATTERNS: RegExp[] = [
  /Call Trace:/,
  /vmalloc error:/,
  /page allocation failure/,
];

/**
 * What a fuzzed guest's kernel log must not hold: the dmesg guard's findings
 * and every line matching one of `patterns`.
 */
export function fuzzDmesgFindings(log: string, patterns: RegExp[] = FUZZ_DMESG_PATTERNS): string[] {
  return [
    ...dmesgViolations(log),
    ...log.split("\n").filter((l) => patterns.some((p) => p.test(l))),
  ];
}

/** The objects counted before and after. */
const KINDS: readonly ResourceKind[] = ["pd", "cq", "qp", "mr", "srq"];

/** Objects of the device, every owner's. */
async function deviceObjects(n: RoceNode): Promise<Record<ResourceKind, number>> {
  return resourceCounts(await sh(n.g, heldCommand(KINDS)), n.dev.ibdev, KINDS, "all");
}

/**
 * Objects the driver still counts that nobody holds, from verbs_limits'
 * output after the fuzz: for each object limit it no longer reaches, how
 * far short it stopped (`max_mr: 125 ok ...` with max_mr 256 is 131); a
 * difference of another kind (`differences` in all) counts 1.
 */
export function limitShortfall(out: string, differences: number): number {
  let short = 0, named = 0;
  for (const m of out.matchAll(/^max_(pd|cq|mr|qp): (\d+) ok/gm)) {
    const missing = tableLimit(`max_${m[1]}`) - Number(m[2]);
    if (missing > 0) {
      short += missing;
      named++;
    }
  }
  return short + Math.max(0, differences - named);
}

/** Fail the row on a run that printed violations or exited nonzero. */
function expectClean(ctx: RowContext, what: string, r: UverbsFuzzRun): void {
  ctx.expect(
    r.code === 0 && r.report.pass && r.report.violations === 0,
    `${what} (seed ${r.report.seed}): exit ${r.code}, ${r.report.violations} violations: ${
      r.report.violationLines.slice(0, 5).join(" | ")
    } ${r.stderr.trim().slice(-500)}`,
  );
}

/** ibv_rc_pingpong against the own GID, data checked. */
async function loopbackPingpong(n: RoceNode, port: number): Promise<number> {
  const flags = "-s 4096 -n 100 --chk";
  const what = `loopback ibv_rc_pingpong ${flags}`;
  const cmd = `ibv_rc_pingpong -d ${n.dev.ibdev} -g ${n.gid} -p ${port} ${flags}`;
  return pingpongResult(
    what,
    expectBothExit0(what, await runPair(n.g, cmd, n.g, `${cmd} ${n.ip}`, port, 300)),
  )
    .usecPerIter;
}

/** The uverbs ABI fuzz; the device must come out of it as it went in. */
export const row: Row = {
  id: "fuzz",
  title: "wire fuzz and uverbs ABI fuzz of cnuas_ib: drops counted as predicted, " +
    "no oops, no leak, device still works",
  needs: rdmaPairNeeds("eth", "guestprogs"),
  sharesCores:
    "it judges counters against the model, read once the guest is quiet; the soak's memory bound " +
    "is per round, not per second",
  timeoutSec: 1800,
  modules: ["cnuas_net", "cnuas_ib"],
  async run(ctx) {
    const nodes = await setupRoceNodes(ctx, [IP, PEER_IP]);
    const [n] = nodes;
    const g = n.g;
    await wireFuzzSteps(ctx, ["eth", nodes[0], nodes[1]]);
    const before = await ctx.step("objects of the device before", async () => {
      const b = await deviceObjects(n);
      ctx.log(`before: ${JSON.stringify(b)}`);
      return b;
    });
    // a real DMA-BUF for ibv_reg_dmabuf_mr: udmabuf over a memfd (the fuzzer skips it without)
    const udmabuf = await g.run("test -c /dev/udmabuf || modprobe udmabuf", { timeoutSec: 60 });
    ctx.log(`udmabuf: ${udmabuf.code === 0 ? "/dev/udmabuf" : `none (${udmabuf.stderr.trim()})`}`);
    const seed = fuzzSeed("CNUAS_HIL_FUZZ_SEED");
    ctx.measure("uverbsFuzz.seed", seed, "seed");
    const calls = FUZZ_CALLS[ctx.config.depth];
    let callsMade = 0;
    await ctx.step(`uverbs_fuzz: ${calls} calls, seed ${seed}`, async () => {
      const r = await runUverbsFuzz(g, n.dev.ibdev, calls, seed);
      await Deno.writeTextFile(`${ctx.dir}/uverbs_fuzz.txt`, r.stdout + r.stderr);
      ctx.artifact("uverbs_fuzz.txt");
      callsMade += r.report.callsTotal;
      for (const [k, v] of Object.entries(r.report.calls)) {
        ctx.measure(`uverbsFuzz.calls.${k}`, v, "calls");
      }
      ctx.expect(
        r.report.callsTotal >= calls,
        `${r.report.callsTotal} calls made, ${calls} asked for`,
      );
      expectClean(ctx, "uverbs_fuzz", r);
    });
    const { procs, calls: each } = FUZZ_TOGETHER;
    await ctx.step(`${procs} uverbs_fuzz processes at once, ${each} calls each`, async () => {
      const runs = await runUverbsFuzzTogether(g, n.dev.ibdev, procs, each, seed + 1);
      await Deno.writeTextFile(
        `${ctx.dir}/uverbs_fuzz_together.txt`,
        runs.map((r, i) => `== process ${i}\n${r.stdout}${r.stderr}`).join("\n"),
      );
      ctx.artifact("uverbs_fuzz_together.txt");
      for (const [i, r] of runs.entries()) {
        callsMade += r.report.callsTotal;
        expectClean(ctx, `uverbs_fuzz process ${i}`, r);
      }
    });
    ctx.measure("callsMade", callsMade, "calls");

    // objects left behind: in ib_core's tracking, or in the driver's own counts
    let leaks = 0;
    await ctx.step("objects of the device back to what they were", async () => {
      // the processes are gone; their contexts were torn down as their files closed
      let after = await deviceObjects(n);
      for (let i = 0; i < 10 && KINDS.some((k) => after[k] !== before[k]); i++) {
        await new Promise((r) => setTimeout(r, 500));
        after = await deviceObjects(n);
      }
      const diff = KINDS.filter((k) => after[k] !== before[k]);
      const tracked = diff.reduce((s, k) => s + Math.abs(after[k] - before[k]), 0);
      leaks += tracked;
      ctx.measure("leaks", leaks, "objects"); // again after verbs_limits
      ctx.expect(
        tracked === 0,
        `rdma resource after the fuzz: ${diff.map((k) => `${k} ${before[k]} -> ${after[k]}`)}`,
      );
    });
    await ctx.step("verbs_limits: every limit reached again (no object count leaked)", async () => {
      const held = kernelHeld(await sh(g, heldCommand()), n.dev.ibdev);
      const r = await runVerbsLimits(g, n.dev.ibdev, held);
      const v = checkLimits(r.stdout, held);
      // a limit not reached again: the driver's count of that object leaked
      leaks += limitShortfall(r.stdout, v.differences.length);
      ctx.measure("leaks", leaks, "objects");
      ctx.expect(v.differences.length === 0, v.differences.join("; "));
    });
    // traffic of every kind after the fuzz, under loss, cable pulls and switch restarts
    await runSoak(ctx, nodes, { minutes: FUZZ_SOAK_MINUTES[ctx.config.depth] });
    await ctx.step("kernel log clean (the dmesg guard, and no call trace)", async () => {
      const bad = fuzzDmesgFindings(await g.dmesg());
      ctx.measure("oops", bad.length, "lines");
      ctx.expect(bad.length === 0, `dmesg: ${bad.slice(0, 5).join(" | ")}`);
    });
    await ctx.step("cnuas_ib still works: ibv_rc_pingpong to the own GID", async () => {
      ctx.measure("loopback.usecPerIter", await loopbackPingpong(n, 18520), "us");
    });
    await ctx.step("module refcount 0; rmmod and modprobe cnuas_ib; pingpong again", async () => {
      const refcnt = Number((await sh(g, `cat /sys/module/${CNUAS_IB}/refcnt`)).trim());
      ctx.measure("moduleRefcnt", refcnt, "refs");
      ctx.expect(refcnt === 0, `cnuas_ib refcnt ${refcnt} after the fuzz, want 0`);
      const r = await g.run(
        `rmmod ${CNUAS_IB} && ! grep -q '^${CNUAS_IB} ' /proc/modules`,
        { timeoutSec: 60 },
      );
      ctx.expect(r.code === 0, `rmmod ${CNUAS_IB}: exit ${r.code}: ${r.stderr}`);
      const dev = await loadCnuasIb(g);
      ctx.expect(dev.ibdev === n.dev.ibdev, `reloaded as ${dev.ibdev}, was ${n.dev.ibdev}`);
      ctx.expect(
        await waitPortActive({ g, dev }, 20),
        `${dev.ibdev}: port not ACTIVE after the reload`,
      );
      await loopbackPingpong(n, 18521);
    });
  },
};
