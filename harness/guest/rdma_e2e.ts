/**
 * The steps the two-guest end-to-end rows share (roce-e2e over RoCEv2,
 * ib-e2e over native InfiniBand): the pingpongs with their data check,
 * perftest with its figures, rping -V, the example programs, roce_security,
 * the loss segment and the ICRC injection. Each takes {@link RdmaNode}s and
 * builds the tools' addressing from them ({@link addrFlag}: a GID index on
 * RoCE, nothing — the LID — on InfiniBand); the rows decide which steps run,
 * in which capture segment. The first node is the server, the second the
 * client, which reaches the server at its `ip`.
 */
import type { Depth } from "../config.ts";
import { type RowContext, RowFailure } from "../matrix/row.ts";
import { GUEST_PATHS } from "../vm/types.ts";
import { captured } from "../oracle/wire_capture.ts";
import { pingpongDataErrors, rpingDataErrors, runPair } from "./cnuas_ib.ts";
import {
  addrFlag,
  expectBothExit0,
  hwCounters,
  measurePerftest,
  pair,
  pairBoth,
  pingpongResult,
  type RdmaNode,
} from "./roce_pair.ts";

/** ibv_rc_pingpong message sizes: 1 B to 1 MiB. */
export const PINGPONG_SIZES = [1, 64, 1024, 4096, 65536, 1048576];
/**
 * Iterations of each pingpong by depth (the RoCE issue asked for 1,000: the
 * deep depth; quick checks the same sizes and MTUs with fewer).
 */
export const PINGPONG_ITERS: Record<Depth, number> = { quick: 100, deep: 1000 };
/**
 * Iterations of the 1 MiB pingpongs by depth: at the quick depth 25 (25 MiB
 * each way, 256 frames a message at path MTU 4096: every frame still checked
 * by the wire oracle, the buffer by --chk), as 100 were the slowest steps of
 * roce-e2e and ib-e2e (10-13 s each beside another row under TCG).
 */
export const PINGPONG_1MIB_ITERS: Record<Depth, number> = { quick: 25, deep: 1000 };

/**
 * Volume flags by depth of the pingpongs that refill a receive queue as
 * they go (ibv_ud_pingpong, ibv_srq_pingpong): each posts `rx_depth`
 * receives (default 500) and posts more only once they run low (one left;
 * over an SRQ, as many as it has QPs). 500 iterations at the default reach
 * that once, as the deep depth does; the quick depth's 100 pass `-r 50`,
 * so the queue is refilled there too (at least twice), at a fifth of the
 * round trips (~10 ms each beside another row under TCG).
 */
export const RECV_PINGPONG_VOLUME: Record<Depth, string> = {
  quick: "-n 100 -r 50",
  deep: "-n 500",
};

/**
 * perftest's volume flags by depth: quick runs each bandwidth program 500
 * times (32 MiB of its default 64 KiB messages, 4-5.6 s a program beside
 * another row under TCG at 1,000; perftest's own default is 1,000 for all of
 * PERFTESTS but ib_write_bw, which does 5,000) and each latency program 200
 * times (1,000 round trips at its default, a few ms each under TCG: 13-15 s
 * a program beside a busy row; 200 still give its t_typical and
 * percentiles); deep keeps perftest's defaults. A volume is not part of the
 * figures' names.
 */
export const PERFTEST_VOLUME: Record<Depth, { bw: string; lat: string }> = {
  quick: { bw: "-n 500", lat: "-n 200" },
  deep: { bw: "", lat: "" },
};

/** The volume flags of perftest program `prog` (`ib_*_bw` or `ib_*_lat`) at `depth`. */
export function perftestVolume(depth: Depth, prog: string): string {
  return PERFTEST_VOLUME[depth][prog.endsWith("_lat") ? "lat" : "bw"];
}

/** perftest programs the rows run, each exiting 0 with its figures recorded. */
export const PERFTESTS = [
  "ib_send_bw",
  "ib_write_bw",
  "ib_read_bw",
  "ib_atomic_bw",
  "ib_send_lat",
  "ib_write_lat",
  "ib_read_lat",
];

/** One ibv_rc_pingpong pair run, its figures recorded as `pingpong.mtu<m>[.events].<size>.*`. */
export async function pingpong(
  ctx: RowContext,
  nodes: RdmaNode[],
  opts: { size: number; iters: number; events: boolean; mtu: number },
): Promise<void> {
  const [s, c] = nodes;
  // --chk: the tool's own data check (see pingpongDataErrors for what it covers)
  const flags = `-s ${opts.size} -n ${opts.iters} -m ${opts.mtu}${opts.events ? " -e" : ""} --chk`;
  await ctx.step(`ibv_rc_pingpong ${flags}`, async () => {
    const args = (n: RdmaNode) => `ibv_rc_pingpong -d ${n.dev.ibdev}${addrFlag(n, "-g")} ${flags}`;
    const what = `ibv_rc_pingpong ${flags}`;
    const r = await pairBoth(what, nodes, args(s), `${args(c)} ${s.ip}`, 18515, 900);
    const f = pingpongResult(what, r);
    const key = `pingpong.mtu${opts.mtu}.${opts.events ? "events." : ""}${opts.size}`;
    ctx.measure(`${key}.usecPerIter`, f!.usecPerIter, "us");
    ctx.measure(`${key}.mbitPerSec`, f!.mbitPerSec, "Mbit/s");
  });
}

/**
 * 1 MiB messages at path MTU 4096 (a quarter of the frames of 1024), polled
 * and with events, each its own captured segment: the biggest captures of a
 * row (over 2 GiB each at the deep depth; the switch rolls them over at 1 GiB).
 */
export async function pingpong1MiB(ctx: RowContext, nodes: RdmaNode[]): Promise<void> {
  const iters = PINGPONG_1MIB_ITERS[ctx.config.depth];
  for (const events of [false, true]) {
    await captured(
      ctx,
      `pingpong-1MiB${events ? "-events" : ""}`,
      () => pingpong(ctx, nodes, { size: 1048576, iters, events, mtu: 4096 }),
    );
  }
}

/**
 * One ibv_ud_pingpong pair run with --chk (each datagram within the path
 * MTU), its figures recorded as `udPingpong.<size>.*`.
 */
export async function udPingpong(
  ctx: RowContext,
  nodes: RdmaNode[],
  size: number,
): Promise<void> {
  const [s, c] = nodes;
  const flags = `-s ${size} ${RECV_PINGPONG_VOLUME[ctx.config.depth]} --chk`;
  await ctx.step(`ibv_ud_pingpong ${flags}`, async () => {
    const args = (n: RdmaNode) =>
      `ibv_ud_pingpong -d ${n.dev.ibdev}${addrFlag(n, "-g")} -p 18517 ${flags}`;
    const what = `ibv_ud_pingpong ${flags}`;
    const r = await pairBoth(what, nodes, args(s), `${args(c)} ${s.ip}`, 18517, 600);
    // with --chk both ends check what they received: the server's lines
    // fail pingpongResult, the client's are looked at here
    const bad = pingpongDataErrors(r.clientOut);
    if (bad.length) {
      throw new RowFailure(`${what}: the client's --chk found wrong data: ${bad.join("; ")}`);
    }
    const f = pingpongResult(what, r);
    ctx.measure(`udPingpong.${size}.usecPerIter`, f.usecPerIter, "us");
    ctx.measure(`udPingpong.${size}.mbitPerSec`, f.mbitPerSec, "Mbit/s");
  });
}

/**
 * perftest has no check of the data it moves (it measures; no option makes
 * it compare buffers): its runs here prove completion and speed, and the
 * wire oracle checks every frame of them. Payload is checked by the
 * pingpongs (--chk), rping (-V), the examples and peermem.
 */
export async function perftests(ctx: RowContext, nodes: RdmaNode[]): Promise<void> {
  for (const [i, prog] of PERFTESTS.entries()) {
    await measurePerftest(ctx, nodes, prog, 18600 + i, "", perftestVolume(ctx.config.depth, prog));
  }
}

/** rdma_cm: address and route resolution, CM MADs on QP1, then RC traffic (`rping -V`). */
export async function rping(ctx: RowContext, nodes: RdmaNode[]): Promise<void> {
  const s = nodes[0];
  await ctx.step("rping -V (rdma_cm: CM over the GSI QP, then RDMA READ/WRITE)", async () => {
    // -V: the client compares what the server wrote back with what it sent
    const out = await pair(
      "rping",
      nodes,
      `rping -s -a ${s.ip} -p 18850 -C 20 -S 1024 -v -V`,
      `rping -c -a ${s.ip} -p 18850 -C 20 -S 1024 -v -V`,
      { rdmaCm: 18850 },
    );
    const bad = rpingDataErrors(out);
    ctx.expect(bad.length === 0, `rping -V found wrong data: ${bad.join("; ")}`);
    const pings = out.split("\n").filter((l) => /ping data:/.test(l)).length;
    ctx.expect(pings === 20, `rping printed ${pings} of 20 pings: ${out.slice(-800)}`);
  });
}

/**
 * The example programs `names` (drivers/examples, in the guest's program
 * directory), each run as a pair on TCP port 18700 + its index
 * (`-d dev [-g gid] -p port [SERVER_IP]`); each must print PASS.
 */
export async function examples(
  ctx: RowContext,
  nodes: RdmaNode[],
  names: string[],
): Promise<void> {
  const [s, c] = nodes;
  for (const [i, ex] of names.entries()) {
    await ctx.step(`example ${ex}`, async () => {
      const port = 18700 + i;
      const bin = `${GUEST_PATHS.bin}/${ex}`;
      const args = (n: RdmaNode) => `${bin} -d ${n.dev.ibdev}${addrFlag(n, "-g")} -p ${port}`;
      const out = await pair(ex, nodes, args(s), `${args(c)} ${s.ip}`, port);
      ctx.expect(/PASS/.test(out), `${ex} did not report PASS: ${out.slice(-1500)}`);
    });
  }
}

/** Inline-length cases roce_security runs: RC and UD, each with inline room and with none. */
export const INLINE_CASES = 4;

/** roce_security between the nodes: access flags, foreign PD, bounds, RNR, inline lengths. */
export async function security(ctx: RowContext, nodes: RdmaNode[]): Promise<void> {
  const [s, c] = nodes;
  const bin = `${GUEST_PATHS.bin}/roce_security`;
  await ctx.step(
    "security and RNR: access flags, foreign PD, bounds, receive not ready, inline lengths",
    async () => {
      const args = (n: RdmaNode) => `${bin} -d ${n.dev.ibdev}${addrFlag(n, "-g")} -p 18800`;
      const out = await pair("roce_security", nodes, args(s), `${args(c)} ${s.ip}`, 18800);
      ctx.log(out);
      // the exit status covers every case; this proves the inline ones ran at all
      const inline = out.split("\n").filter((l) => /^case inline .*: ok$/.test(l)).length;
      ctx.measure("security.inlineCasesOk", inline, "count");
      ctx.expect(
        inline === INLINE_CASES,
        `roce_security: ${inline} of ${INLINE_CASES} inline-length cases ok:\n${out.slice(-1500)}`,
      );
    },
  );
}

/** Each frame either guest's cnuas_ib receives is dropped with probability 1/N in the loss step. */
export const LOSS_ONE_IN = 100;

/**
 * Set each node's cnuas_ib `rx_drop_one_in` to `every` (0: no loss) and
 * `rx_drop_frames` to `frames` (the loss takes only the first that many
 * frames each device receives from now; 0: no limit), and `rx_drop_seed`
 * to `seed` when one is given. Each write re-seeds the pattern.
 */
export async function setLoss(
  nodes: RdmaNode[],
  every: number,
  frames = 0,
  seed?: number,
): Promise<void> {
  const p = "/sys/module/cnuas_ib/parameters";
  const seedFirst = seed === undefined ? "" : `echo ${seed} >${p}/rx_drop_seed && `;
  // arming ends with the ratio (the count restarts at the last write); disarming starts with it
  const cmd = every
    ? `${seedFirst}echo ${frames} >${p}/rx_drop_frames && echo ${every} >${p}/rx_drop_one_in`
    : `echo 0 >${p}/rx_drop_one_in && ${seedFirst}echo ${frames} >${p}/rx_drop_frames`;
  for (const n of nodes) await n.g.run(cmd, { check: true, timeoutSec: 30 });
}

/** The loss pattern's seed: the one asked for (`--loss-seed`), else a random uint32. */
export function lossSeed(asked: number | undefined): number {
  return asked ?? crypto.getRandomValues(new Uint32Array(1))[0];
}

/** The ratio, seed and frame window of the last "rx loss injection" line of a kernel log. */
export function lastLossLine(
  dmesg: string,
): { oneIn: number; seed: number; frames: number } | undefined {
  const all = [
    ...dmesg.matchAll(/cnuas_ib: rx loss injection 1\/(\d+) seed (\d+) frames (\d+)\s*$/gm),
  ];
  const m = all.at(-1);
  return m ? { oneIn: Number(m[1]), seed: Number(m[2]), frames: Number(m[3]) } : undefined;
}

/**
 * Seed the loss pattern, then switch loss on (the seed first: the driver
 * re-seeds on each write and says so in dmesg once N is set) with no frame
 * window; check that each guest's kernel says it drops 1 in `every` with
 * that seed.
 */
export async function startLoss(
  ctx: RowContext,
  nodes: RdmaNode[],
  every: number,
  seed: number,
  frames = 0,
): Promise<void> {
  await setLoss(nodes, every, frames, seed);
  for (const n of nodes) {
    const said = lastLossLine((await n.g.run("dmesg", { timeoutSec: 30 })).stdout);
    ctx.expect(
      said?.oneIn === every && said?.seed === seed && said?.frames === frames,
      `${n.g.name}: dmesg says ${
        said ? `1/${said.oneIn} seed ${said.seed} frames ${said.frames}` : "nothing"
      } about rx loss injection, want 1/${every} seed ${seed} frames ${frames}`,
    );
  }
}

/**
 * The loss window of an `ibv_rc_pingpong -s size -n iters` at path MTU
 * `mtu`: each end receives at least `iters - 1` of its peer's messages
 * (`ceil(size / mtu)` packets each) before the last exchange; half of it.
 */
export function pingpongLossFrames(size: number, iters: number, mtu: number): number {
  return Math.floor((iters - 1) * Math.ceil(size / mtu) / 2);
}

/**
 * ibv_rc_pingpong --chk under loss. Its server exits once its own work is
 * done, so a lost ACK of the client's last SEND would leave the client
 * retrying into a QP that is gone (RETRY_EXC_ERR, on any RDMA device). So
 * the loss takes only each end's first {@link pingpongLossFrames} frames
 * (`rx_drop_frames`, docs/devices.md): frames, not time, so the last
 * exchange is outside the window on a machine of any speed. 200 iterations
 * of 64 KiB at MTU 1024 give a window of 6,368 frames: 64 drops expected per
 * end at 1/100, fewer than `minDrops` at ~4 in 10^11 seeds (binomial). (A run of
 * 2,000 iterations with loss switched off by the harness once both ends had
 * dropped `minDrops` ran ~15 s past that point, every time.)
 */
export const LOSS_PINGPONG = {
  size: 65536,
  iters: 200,
  mtu: 1024,
  /** Frames each guest must have dropped. */
  minDrops: 20,
};

/** rx_drop_injected of each guest since `before`. */
async function dropsSince(nodes: RdmaNode[], before: Record<string, number>[]): Promise<number[]> {
  const now = await Promise.all(nodes.map(hwCounters));
  return now.map((a, i) => (a.rx_drop_injected ?? 0) - (before[i].rx_drop_injected ?? 0));
}

async function pingpongUnderLoss(
  ctx: RowContext,
  nodes: RdmaNode[],
  seed: number,
): Promise<void> {
  const [s, c] = nodes;
  const { size, iters, mtu, minDrops } = LOSS_PINGPONG;
  const window = pingpongLossFrames(size, iters, mtu);
  const flags = `-s ${size} -n ${iters} -m ${mtu} --chk`;
  const what = `ibv_rc_pingpong ${flags} under loss`;
  await ctx.step(
    `loss 1/${LOSS_ONE_IN}: ibv_rc_pingpong ${flags}, loss in each end's first ${window} frames`,
    async () => {
      const args = (n: RdmaNode) =>
        `ibv_rc_pingpong -d ${n.dev.ibdev}${addrFlag(n, "-g")} -p 18516 ${flags}`;
      const before = await Promise.all(nodes.map(hwCounters));
      await startLoss(ctx, nodes, LOSS_ONE_IN, seed, window);
      // the window ends the loss before the run's last exchange; lossRecovery's finally disarms it
      const r = await runPair(s.g, args(s), c.g, `${args(c)} ${s.ip}`, 18516, 900);
      const drops = await dropsSince(nodes, before);
      ctx.log(
        `${what}: ${drops.join(" + ")} frames dropped (window ${window} frames, seed ${seed})`,
      );
      ctx.measure("loss.pingpong.rxDropInjected", drops[0] + drops[1], "frames");
      ctx.measure("loss.pingpong.lossWindowFrames", window, "frames");
      const seeded = `${what} (loss seed ${seed})`;
      const f = pingpongResult(seeded, expectBothExit0(seeded, r));
      ctx.measure("loss.pingpong.usecPerIter", f.usecPerIter, "us");
      ctx.expect(
        drops.every((d) => d >= minDrops),
        `${what}: ${drops.join(" and ")} frames dropped in the first ${window} of each end, ` +
          `want ${minDrops} each (seed ${seed})`,
      );
    },
  );
}

/**
 * Iterations of the 64 KiB bandwidth programs under loss, by depth: 100 are
 * 6,400 frames at MTU 1024, ~64 drops a program at 1/{@link LOSS_ONE_IN}
 * (200, the deep depth's, took 3.7-4.7 s a program beside another row under
 * TCG). ib_atomic_bw runs 500 at both: an atomic is one frame each way.
 */
export const LOSS_BW_ITERS: Record<Depth, number> = { quick: 100, deep: 200 };

/**
 * The recovery paths under 1/{@link LOSS_ONE_IN} receive loss on both
 * guests: sequence NAKs, timeouts, duplicates, lost read responses.
 * perftest send/write/read/atomic, then a checked pingpong; the counters
 * must show drops, retransmissions and sequence NAKs.
 */
export async function lossRecovery(ctx: RowContext, nodes: RdmaNode[]): Promise<void> {
  const [s, c] = nodes;
  const before = await Promise.all(nodes.map(hwCounters));
  const seed = lossSeed(ctx.config.lossSeed);
  ctx.log(`loss seed ${seed} (replay this pattern with --loss-seed ${seed})`);
  ctx.measure("loss.seed", seed, "seed");
  await startLoss(ctx, nodes, LOSS_ONE_IN, seed);
  try {
    // perftest holds both QPs until a final handshake over TCP, so loss
    // stays on to its end; it checks no data (see perftests). The pingpong
    // after them checks data under loss (see LOSS_PINGPONG).
    const perf = (prog: string, port: number, extra: string) => (n: RdmaNode) =>
      `${prog} -d ${n.dev.ibdev}${addrFlag(n, "-x")} -p ${port} ${extra} -F`;
    const bw = `-s 65536 -n ${LOSS_BW_ITERS[ctx.config.depth]}`;
    const runs: [string, (n: RdmaNode) => string, number][] = [
      [`ib_send_bw ${bw}`, perf("ib_send_bw", 18903, bw), 18903],
      [`ib_write_bw ${bw}`, perf("ib_write_bw", 18900, bw), 18900],
      [`ib_read_bw ${bw}`, perf("ib_read_bw", 18901, bw), 18901],
      ["ib_atomic_bw -n 500", perf("ib_atomic_bw", 18902, "-n 500"), 18902],
    ];
    for (const [name, cmd, port] of runs) {
      await ctx.step(`loss 1/${LOSS_ONE_IN}: ${name}`, async () => {
        await pair(`${name} with loss`, nodes, cmd(s), `${cmd(c)} ${s.ip}`, port);
      });
    }
    // last: it arms its own loss window (the same seed), which ends before its last exchange
    await pingpongUnderLoss(ctx, nodes, seed);
  } finally {
    await setLoss(nodes, 0);
  }
  const after = await Promise.all(nodes.map(hwCounters));
  const delta = (k: string) =>
    after.reduce((sum, a, i) => sum + (a[k] ?? 0) - (before[i][k] ?? 0), 0);
  for (
    const k of [
      "rx_drop_injected",
      "retransmits",
      "send_seq_nak",
      "rcvd_seq_nak",
      "duplicate_request",
    ]
  ) {
    ctx.measure(`loss.${k}`, delta(k), "count");
  }
  ctx.expect(delta("rx_drop_injected") > 0, "no frame was dropped: the loss knob did nothing");
  ctx.expect(delta("retransmits") > 0, "frames were lost but nothing was retransmitted");
  ctx.expect(delta("send_seq_nak") > 0, "no sequence NAK was sent for a gap");
}

/** Frames of each kind the ICRC step sends to the second node from the switch. */
export const ICRC_FRAMES = { bad: 7, good: 5 };

/** A QP number no QP of the rows has (cnuas_ib hands out small ones). */
export const NO_SUCH_QP = 0xabcde;

/** How the ICRC step reaches the second node: its switch port and the frames it sends. */
export interface IcrcInjection {
  /** The switch port the frames leave by (egress) to reach the node. */
  port: number;
  /** A frame to the node (an RC SEND_ONLY to {@link NO_SUCH_QP}) with a correct ICRC. */
  frame(psn: number): Uint8Array;
  /**
   * Flip one bit of frame `f`'s ICRC (the `i`-th bad frame), mending
   * whatever link-level check covers it (the VCRC on InfiniBand).
   */
  breakIcrc(f: Uint8Array, i: number): void;
}

/**
 * ICRC: frames built by the TypeScript model (IBTA ICRC) are sent to the
 * second node from its switch port, outside any capture: those with one
 * ICRC bit flipped must be dropped and counted as rcvd_icrc_err; those with
 * the model's ICRC must pass the check (and be dropped later, counted as
 * rcvd_drop, for want of a QP). Exact counts both ways.
 */
export async function icrc(
  ctx: RowContext,
  nodes: RdmaNode[],
  how: (ctx: RowContext) => Promise<IcrcInjection>,
): Promise<void> {
  const dst = nodes[1];
  await ctx.step(
    `ICRC: ${ICRC_FRAMES.bad} frames with a bad ICRC counted and dropped, ` +
      `${ICRC_FRAMES.good} with a good one pass the check`,
    async () => {
      const fabric = ctx.fabric;
      if (!fabric) throw new RowFailure("the ICRC step needs the fabric");
      const inj = await how(ctx);
      const inject = (f: Uint8Array) => fabric.inject(inj.port, f, "egress");
      const before = await hwCounters(dst);
      for (let i = 0; i < ICRC_FRAMES.bad; i++) {
        const f = inj.frame(100 + i);
        inj.breakIcrc(f, i);
        await inject(f);
      }
      for (let i = 0; i < ICRC_FRAMES.good; i++) {
        await inject(inj.frame(200 + i));
      }
      let d = { icrc: 0, drop: 0 };
      for (let t = 0; t < 40; t++) {
        const after = await hwCounters(dst);
        const delta = (k: string) => (after[k] ?? 0) - (before[k] ?? 0);
        d = { icrc: delta("rcvd_icrc_err"), drop: delta("rcvd_drop") };
        if (d.icrc >= ICRC_FRAMES.bad && d.drop >= ICRC_FRAMES.good) break;
        await new Promise((r) => setTimeout(r, 250));
      }
      ctx.measure("icrc.rcvd_icrc_err", d.icrc, "count");
      ctx.expect(
        d.icrc === ICRC_FRAMES.bad,
        `rcvd_icrc_err rose by ${d.icrc}, want ${ICRC_FRAMES.bad}`,
      );
      ctx.expect(
        d.drop === ICRC_FRAMES.good,
        `rcvd_drop rose by ${d.drop}, want ${ICRC_FRAMES.good} (good ICRC, no such QP)`,
      );
    },
  );
}

/** Record every hw_counter of each node as `counters.<guest>.<name>`. */
export async function recordPortCounters(ctx: RowContext, nodes: RdmaNode[]): Promise<void> {
  await ctx.step("port counters", async () => {
    for (const n of nodes) {
      for (const [k, v] of Object.entries(await hwCounters(n))) {
        ctx.measure(`counters.${n.g.name}.${k}`, v, "count");
      }
    }
  });
}
