/**
 * The soak (issue 20): RoCEv2 traffic of many kinds between two guests for
 * a given time with 1% receive loss injected by cnuas_ib, cable pulls and
 * switch restarts between rounds; every transfer's data check must be
 * clean, guest and switch memory must not grow, the port counters must be
 * consistent. {@link runSoak} is one step a row calls (bench `benchSoak`,
 * `deno task soak`, the `fuzz` row's short soak).
 *
 * Disruptions are scheduled BETWEEN traffic runs, never during one: a run
 * that overlapped a pulled cable or a dead switch would legitimately fail,
 * and telling such failures from real ones is guesswork. For the same
 * reason the loss stops before each run's end: a tool's last exchange is
 * not loss-tolerant on any hardware (an `ibv_rc_pingpong` server exits once
 * its work is done, so a lost ACK of the client's last SEND leaves the
 * client retrying into a QP that is gone; an rping client destroys its
 * rdma_cm ID right after its DREQ, which stops the CM resending it, so a
 * lost DREQ leaves the server waiting forever). Each run under loss arms
 * cnuas_ib's `rx_drop_frames` window with {@link TrafficRun.lossFrames},
 * fewer frames than either end surely receives before that last exchange:
 * a deterministic cut (the same seed drops the same frames), not a timer.
 * Every run draws from its own seed ({@link runLossSeed}): re-seeded with
 * one seed, every run would lose the same frame positions, and a seed
 * whose first loss lies past a short window would never touch that run.
 * Nothing is retried: any failed run fails the soak.
 */
import { type RowContext, RowFailure } from "../matrix/row.ts";
import {
  type PairResult,
  parsePingpong,
  pingpongDataErrors,
  rpingDataErrors,
  runPair,
  type ServerReady,
} from "./cnuas_ib.ts";
import { ethtoolStats, waitCarrier, waitLinkChanges } from "./cnuas_net.ts";
import { lossSeed, pingpongLossFrames, setLoss, startLoss } from "./rdma_e2e.ts";
import {
  addrFlag,
  counterDelta,
  hwCounters,
  type RoceNode,
  switchPortOf,
  waitPortActive,
} from "./roce_pair.ts";

/** What a soak does; everything but `minutes` has a default. */
export interface SoakOptions {
  /**
   * Rounds start until this many minutes have passed (then see `pullEvery`);
   * 0 gives the shortest soak: 2 rounds with a cable pull and a switch
   * restart between them.
   */
  minutes: number;
  /** Each received frame is dropped with probability 1/N while loss is on (default 100). */
  lossOneIn?: number;
  /** A cable pull after every K-th round (default 1). */
  pullEvery?: number;
  /** A switch restart after every M-th round (default 2). */
  restartEvery?: number;
  /** The loss pattern's seed (default: ctx.config.lossSeed, else random). */
  seed?: number;
}

/**
 * Bounds of growth from the sample after the warm-up round to the one at
 * the end (docs/bench.md, "Soak"): a guest's unreclaimable slab, its
 * MemAvailable (after dropping caches in both samples), and the switch
 * daemon's RSS within one process.
 */
export const SOAK_BOUNDS = {
  /** KiB of SUnreclaim a guest may gain. */
  sunreclaimKiB: 1024,
  /** Bytes in use one slab cache of a guest may gain (kmalloc-512, skbuff_head_cache, ...). */
  slabCacheBytes: 262144,
  /** KiB of MemAvailable a guest may lose. */
  memAvailableKiB: 32768,
  /** KiB of VmRSS one switch process may gain. */
  switchRssKiB: 1024,
};

/** `/proc/meminfo` as KiB per field (`HugePages_*` counts as given). */
export function parseMeminfo(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split("\n")) {
    const m = /^(\w+(?:\(\w+\))?):\s+(\d+)(?:\s+kB)?\s*$/.exec(line);
    if (m) out[m[1]] = Number(m[2]);
  }
  return out;
}

/** One cache of `/proc/slabinfo` (version 2.1). */
export interface SlabCache {
  /** Objects in use. */
  activeObjs: number;
  /** Objects allocated (in use or free in its slabs). */
  numObjs: number;
  /** Bytes per object. */
  objSize: number;
}

/** `/proc/slabinfo` 2.1 by cache name; throws on another version. */
export function parseSlabinfo(text: string): Record<string, SlabCache> {
  const lines = text.split("\n");
  const v = /^slabinfo - version: (\S+)/.exec(lines[0] ?? "");
  if (!v || v[1] !== "2.1") throw new Error(`not slabinfo 2.1: ${lines[0]}`);
  const out: Record<string, SlabCache> = {};
  for (const line of lines.slice(1)) {
    if (line.startsWith("#") || !line.trim()) continue;
    const f = line.trim().split(/\s+/);
    if (f.length < 4) continue;
    out[f[0]] = { activeObjs: Number(f[1]), numObjs: Number(f[2]), objSize: Number(f[3]) };
  }
  return out;
}

/** `VmRSS` of a `/proc/<pid>/status`, in KiB; undefined without one (a kernel thread). */
export function parseStatusRss(text: string): number | undefined {
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(text);
  return m ? Number(m[1]) : undefined;
}

/**
 * The caches whose bytes in use (active objects × size) grew most from
 * `a` to `b`, largest first, those that grew only.
 */
export function slabGrowth(
  a: Record<string, SlabCache>,
  b: Record<string, SlabCache>,
  top = 5,
): { name: string; bytes: number }[] {
  const used = (c?: SlabCache) => c ? c.activeObjs * c.objSize : 0;
  return Object.keys(b).map((name) => ({ name, bytes: used(b[name]) - used(a[name]) }))
    .filter((g) => g.bytes > 0).sort((x, y) => y.bytes - x.bytes).slice(0, top);
}

/** One guest's memory at an instant. */
export interface GuestMemory {
  meminfo: Record<string, number>;
  slab: Record<string, SlabCache>;
}

/** Drop the page cache and reclaimable slab (so the figures are comparable), then read both. */
export async function sampleGuestMemory(n: Pick<RoceNode, "g">): Promise<GuestMemory> {
  const r = await n.g.run(
    "sync; echo 3 >/proc/sys/vm/drop_caches; sleep 1; cat /proc/meminfo; echo @@; cat /proc/slabinfo",
    { check: true, timeoutSec: 60 },
  );
  const [mem, slab] = r.stdout.split("\n@@\n");
  return { meminfo: parseMeminfo(mem), slab: parseSlabinfo(slab) };
}

/** The switch daemon's RSS (KiB) and PID, when the fabric is a process of ours. */
async function switchRss(ctx: RowContext): Promise<{ pid: number; rssKiB: number } | undefined> {
  const pid = ctx.fabric?.pid;
  if (pid === undefined) return undefined;
  const rss = parseStatusRss(await Deno.readTextFile(`/proc/${pid}/status`));
  return rss === undefined ? undefined : { pid, rssKiB: rss };
}

/**
 * Where a guest's memory from `warm` to `end` broke {@link SOAK_BOUNDS}
 * (`SUnreclaim` gained, one slab cache gained, `MemAvailable` lost); empty
 * when it held.
 */
export function guestMemoryProblems(
  warm: GuestMemory,
  end: GuestMemory,
  bounds = SOAK_BOUNDS,
): string[] {
  const d = (k: string) => (end.meminfo[k] ?? 0) - (warm.meminfo[k] ?? 0);
  const grew = slabGrowth(warm.slab, end.slab);
  const most = `grew most: ${grew.map((g) => `${g.name} +${g.bytes} B`).join(", ") || "none"}`;
  const out: string[] = [];
  if (d("SUnreclaim") > bounds.sunreclaimKiB) {
    out.push(`SUnreclaim grew by ${d("SUnreclaim")} KiB (bound ${bounds.sunreclaimKiB}); ${most}`);
  }
  if (grew.length && grew[0].bytes > bounds.slabCacheBytes) {
    out.push(
      `slab cache ${grew[0].name} grew by ${grew[0].bytes} bytes ` +
        `(bound ${bounds.slabCacheBytes} per cache)`,
    );
  }
  if (-d("MemAvailable") > bounds.memAvailableKiB) {
    out.push(`MemAvailable fell by ${-d("MemAvailable")} KiB (bound ${bounds.memAvailableKiB})`);
  }
  return out;
}

/**
 * The most the switch's RSS grew within one process, over samples in time
 * order (a restart starts a new process: growth runs from each PID's first
 * sample to its last).
 */
export function switchRssGrowth(samples: { pid: number; rssKiB: number }[]): number {
  let worst = 0;
  for (const pid of new Set(samples.map((r) => r.pid))) {
    const s = samples.filter((r) => r.pid === pid);
    worst = Math.max(worst, s[s.length - 1].rssKiB - s[0].rssKiB);
  }
  return worst;
}

/** The hw_counters the soak records (summed over both guests) as `soak.counters.*`. */
export const SOAK_COUNTERS = [
  "rx_drop_injected",
  "rcvd_pkts",
  "sent_pkts",
  "retransmits",
  "send_seq_nak",
  "rcvd_icrc_err",
  "retry_exceeded_err",
];

/**
 * Where two guests' counter rises over a soak (`d[i]`: guest i's, see
 * counterDelta) are inconsistent with 1/`lossOneIn` loss between just
 * them: nothing dropped, drops not answered by retransmits and sequence
 * NAKs, a bad ICRC, a guest receiving more than its peer sent
 * (`rcvd_pkts` counts dropped frames too), an injected rate above twice
 * the asked one. Empty when consistent.
 */
export function counterProblems(d: Record<string, number>[], lossOneIn: number): string[] {
  const sum = (k: string) => d.reduce((a, x) => a + (x[k] ?? 0), 0);
  const out: string[] = [];
  if (sum("rx_drop_injected") <= 0) out.push("no frame was dropped: loss injection did nothing");
  else {
    if (sum("retransmits") <= 0) out.push("frames were dropped but nothing was retransmitted");
    if (sum("send_seq_nak") <= 0) out.push("no sequence NAK was sent for a gap");
  }
  if (sum("rcvd_icrc_err") !== 0) out.push(`${sum("rcvd_icrc_err")} frames with a bad ICRC`);
  for (const [i, x] of d.entries()) {
    const peer = d[1 - i];
    if ((x.rcvd_pkts ?? 0) > (peer?.sent_pkts ?? 0)) {
      out.push(`guest ${i} received ${x.rcvd_pkts} frames, its peer sent ${peer?.sent_pkts ?? 0}`);
    }
  }
  const rate = sum("rx_drop_injected") / Math.max(1, sum("rcvd_pkts"));
  if (rate > 2 / lossOneIn) {
    out.push(`injected loss ${(rate * 100).toFixed(2)}% is above twice 1/${lossOneIn}`);
  }
  return out;
}

/** What {@link runSoak} found. */
export interface SoakResult {
  rounds: number;
  runs: number;
  /** Frames the loss could take (the runs' windows, each end), `soak.lossWindowFrames`. */
  lossWindowFrames: number;
  cablePulls: number;
  switchRestarts: number;
  /** Payload bytes whose check came out clean. */
  verifiedBytes: number;
}

/** One traffic run: how to start it, where loss is on, what its data check found. */
export interface TrafficRun {
  name: string;
  /**
   * The loss takes only the first this many frames each end receives (0:
   * loss off for the run): half of a lower bound of the frames either end
   * receives before the tool's last exchange, so that exchange is never
   * hit (see the module comment).
   */
  lossFrames: number;
  run(): Promise<PairResult>;
  /** Lines of wrong data in its output (never retried). */
  dataErrors(r: PairResult): string[];
  /** Why a run that exited 0 on both ends is still not complete, or "" when it is. */
  incomplete(r: PairResult): string;
  /** Payload bytes the check covered. */
  bytes: number;
}

/** The traffic of one round between server `s` and client `c`. */
function trafficMix([s, c]: RoceNode[]): TrafficRun[] {
  const pair = (port: ServerReady, srv: string, cli: string, timeoutSec = 300) => () =>
    runPair(s.g, srv, c.g, cli, port, timeoutSec);
  const rc = (size: number, iters: number, port: number): TrafficRun => {
    const flags = `-p ${port} -s ${size} -n ${iters} -m 1024 --chk`;
    const cmd = (n: RoceNode) => `ibv_rc_pingpong -d ${n.dev.ibdev}${addrFlag(n, "-g")} ${flags}`;
    return {
      name: `ibv_rc_pingpong -s ${size} -n ${iters}`,
      // each end receives the peer's messages (size/1024 packets each) before the last one
      lossFrames: pingpongLossFrames(size, iters, 1024),
      run: pair(port, cmd(s), `${cmd(c)} ${s.ip}`),
      dataErrors: (r) => pingpongDataErrors(r.serverOut),
      incomplete: (r) => parsePingpong(r.clientOut) ? "" : "the client printed no figures",
      bytes: 2 * size * iters,
    };
  };
  const udFlags = "-p 18531 -s 1024 -n 100 --chk";
  const ud = (n: RoceNode) => `ibv_ud_pingpong -d ${n.dev.ibdev}${addrFlag(n, "-g")} ${udFlags}`;
  const rping = (side: "-s" | "-c") => `rping ${side} -a ${s.ip} -p 18532 -C 10 -S 1024 -v -V`;
  const atomic = (n: RoceNode) =>
    `ib_atomic_bw -d ${n.dev.ibdev}${addrFlag(n, "-x")} -p 18533 -n 200 -F`;
  return [
    rc(64, 100, 18530),
    rc(4096, 100, 18534),
    rc(65536, 30, 18535),
    {
      // UD has no recovery: one lost datagram and the pingpong waits forever
      name: "ibv_ud_pingpong -s 1024 -n 100 (loss off: UD does not recover)",
      lossFrames: 0,
      run: pair(18531, ud(s), `${ud(c)} ${s.ip}`),
      dataErrors: (r) => [...pingpongDataErrors(r.serverOut), ...pingpongDataErrors(r.clientOut)],
      incomplete: (r) => parsePingpong(r.clientOut) ? "" : "the client printed no figures",
      bytes: 2 * 1024 * 100,
    },
    {
      name: "rping -V -C 10 -S 1024 (rdma_cm connect, READ/WRITE, disconnect)",
      // per ping the server receives 3 frames (2 SENDs, a READ response), the client 4
      // (a READ request, a WRITE, 2 SENDs): >= 30 each before the DREQ
      lossFrames: RPING_LOSS_FRAMES,
      run: pair({ rdmaCm: 18532 }, rping("-s"), rping("-c")),
      dataErrors: (r) => [...rpingDataErrors(r.clientOut), ...rpingDataErrors(r.serverOut)],
      incomplete: (r) => {
        const pings = r.clientOut.split("\n").filter((l) => /ping data:/.test(l)).length;
        return pings === 10 ? "" : `${pings} of 10 pings`;
      },
      bytes: 2 * 1024 * 10,
    },
    {
      // perftest checks no data: completion under loss only
      name: "ib_atomic_bw -n 200 (atomics; no data check exists)",
      // 200 requests in, 200 responses in; perftest ends on a TCP barrier after them
      lossFrames: 100,
      run: pair(18533, atomic(s), `${atomic(c)} ${s.ip}`),
      dataErrors: () => [],
      incomplete: () => "",
      bytes: 0,
    },
  ];
}

/** Fail unless the node's port is ACTIVE (within `timeoutSec`). */
async function expectPortActive(n: RoceNode, timeoutSec = 60): Promise<void> {
  if (!await waitPortActive(n, timeoutSec)) {
    throw new RowFailure(`${n.g.name}: port not ACTIVE after ${timeoutSec} s`);
  }
}

/** Pull node `n`'s cable at the switch: carrier down and back, the port ACTIVE again. */
async function cablePull(ctx: RowContext, n: RoceNode): Promise<void> {
  const fabric = ctx.fabric!;
  const port = await switchPortOf(ctx, n);
  const before = await ethtoolStats(n.g, n.dev.iface);
  await fabric.linkDown(port);
  // the device reconnects into another free slot within ~100 ms: link_changes shows the flap
  const moved = await waitLinkChanges(n.g, n.dev.iface, before, 2, 30);
  await fabric.linkUp(port);
  ctx.expect(moved >= 2, `${n.g.name}: link_changes moved by ${moved} after link_down, want 2`);
  ctx.expect(await waitCarrier(n.g, n.dev.iface, true, 30), `${n.g.name}: no carrier back`);
  await expectPortActive(n);
}

/** Kill and restart the switch; both carriers back, both ports ACTIVE. */
async function switchRestart(ctx: RowContext, nodes: RoceNode[]): Promise<void> {
  await ctx.fabric!.restart();
  for (const n of nodes) {
    ctx.expect(await waitCarrier(n.g, n.dev.iface, true, 60), `${n.g.name}: no carrier back`);
    await expectPortActive(n);
  }
}

/** The loss window of `rping -C 10`: half of the 30 frames either end surely receives. */
export const RPING_LOSS_FRAMES = 15;

/**
 * The loss seed of the soak's `run`-th traffic run (from 0), derived from
 * the soak's seed so `--loss-seed` replays every run (golden-ratio steps:
 * neighbouring runs get unrelated seeds).
 */
export function runLossSeed(soakSeed: number, run: number): number {
  return (soakSeed + Math.imul(run, 0x9e3779b9)) >>> 0;
}

/** Run one traffic run with its loss window and seed; any failure fails the soak. */
async function runChecked(
  ctx: RowContext,
  nodes: RoceNode[],
  t: TrafficRun,
  every: number,
  seed: number,
) {
  await setLoss(nodes, t.lossFrames ? every : 0, t.lossFrames, seed);
  let r: PairResult;
  try {
    r = await t.run();
  } finally {
    await setLoss(nodes, 0);
  }
  const bad = t.dataErrors(r);
  if (bad.length) {
    throw new RowFailure(`${t.name}: the data check found wrong data: ${bad.join("; ")}`);
  }
  const why = r.serverCode !== 0 || r.clientCode !== 0
    ? `server exit ${r.serverCode}, client exit ${r.clientCode}`
    : t.incomplete(r);
  if (why) {
    const loss = t.lossFrames
      ? `loss 1/${every} in the first ${t.lossFrames} frames, seed ${seed}`
      : "no loss";
    throw new RowFailure(
      `${t.name} (${loss}): ${why}\n` +
        `server: ${r.serverOut.slice(-600)}\nclient: ${r.clientOut.slice(-600)}`,
    );
  }
  ctx.log(
    `${t.name}: clean (${
      t.lossFrames ? `loss window ${t.lossFrames} frames, seed ${seed}` : "no loss"
    })`,
  );
}

/**
 * The soak: rounds of {@link trafficMix} between `nodes[0]` (server) and
 * `nodes[1]` until `opts.minutes` have passed and at least one cable pull
 * and one switch restart were each followed by a round; a cable pull (of
 * the client's cable) after every `pullEvery`-th round, a switch restart
 * after every `restartEvery`-th. Memory is sampled after the first round
 * (the warm-up) and at the end and judged against {@link SOAK_BOUNDS};
 * counters must be consistent. Measurements are named `soak.*`. Call it
 * outside a wire capture segment: the restart kills a running capture.
 */
export async function runSoak(
  ctx: RowContext,
  nodes: RoceNode[],
  opts: SoakOptions,
): Promise<SoakResult> {
  if (!ctx.fabric) throw new RowFailure("the soak needs the fabric");
  const every = opts.lossOneIn ?? 100;
  const pullEvery = opts.pullEvery ?? 1;
  const restartEvery = opts.restartEvery ?? 2;
  const seed = opts.seed ?? lossSeed(ctx.config.lossSeed);
  const m = (k: string, v: number, unit: string) => ctx.measure(`soak.${k}`, v, unit);
  ctx.log(`soak: ${opts.minutes} min, loss 1/${every} seed ${seed} (replay: --loss-seed ${seed})`);
  m("lossSeed", seed, "seed");
  await ctx.step(`soak: loss 1/${every} seed ${seed} armed`, async () => {
    await startLoss(ctx, nodes, every, seed);
    await setLoss(nodes, 0);
  });
  const res: SoakResult = {
    rounds: 0,
    runs: 0,
    lossWindowFrames: 0,
    cablePulls: 0,
    switchRestarts: 0,
    verifiedBytes: 0,
  };
  const counters0 = await Promise.all(nodes.map(hwCounters));
  let warm: GuestMemory[] = [];
  let lastCounters = counters0;
  const rss: { pid: number; rssKiB: number; round: number }[] = [];
  const t0 = performance.now();
  const deadline = t0 + opts.minutes * 60_000;
  let disruptedSinceRound = false;
  for (;;) {
    const round = ++res.rounds;
    await ctx.step(`soak round ${round}`, async () => {
      for (const t of trafficMix(nodes)) {
        await runChecked(ctx, nodes, t, every, runLossSeed(seed, res.runs));
        res.runs++;
        res.lossWindowFrames += 2 * t.lossFrames;
        res.verifiedBytes += t.bytes;
      }
    });
    disruptedSinceRound = false;
    // counters only go up while the module stays loaded
    const now = await Promise.all(nodes.map(hwCounters));
    for (const [i, n] of nodes.entries()) {
      const down = Object.entries(counterDelta(lastCounters[i], now[i])).filter(([, d]) => d < 0);
      ctx.expect(!down.length, `${n.g.name}: counters went down: ${JSON.stringify(down)}`);
    }
    lastCounters = now;
    const sw = await switchRss(ctx);
    if (sw) rss.push({ ...sw, round });
    if (round === 1) {
      warm = await ctx.step(
        "soak: memory after the warm-up round",
        () => Promise.all(nodes.map(sampleGuestMemory)),
      );
    }
    const timeUp = performance.now() >= deadline;
    if (timeUp && res.cablePulls > 0 && res.switchRestarts > 0) break;
    if (round % pullEvery === 0 || (timeUp && res.cablePulls === 0)) {
      await ctx.step(
        `soak: cable pull of ${nodes[1].g.name} after round ${round}`,
        () => cablePull(ctx, nodes[1]),
      );
      res.cablePulls++;
      disruptedSinceRound = true;
    }
    if (round % restartEvery === 0 || (timeUp && res.switchRestarts === 0)) {
      await ctx.step(`soak: switch restart after round ${round}`, () => switchRestart(ctx, nodes));
      res.switchRestarts++;
      disruptedSinceRound = true;
    }
  }
  ctx.expect(!disruptedSinceRound, "the soak ended on a disruption with no round after it");
  const wallSec = (performance.now() - t0) / 1000;
  const end = await ctx.step(
    "soak: memory at the end",
    () => Promise.all(nodes.map(sampleGuestMemory)),
  );
  m("minutes", opts.minutes, "min");
  m("wallSec", Number(wallSec.toFixed(1)), "s");
  m("rounds", res.rounds, "count");
  m("runs", res.runs, "count");
  m("lossWindowFrames", res.lossWindowFrames, "frames");
  m("cablePulls", res.cablePulls, "count");
  m("switchRestarts", res.switchRestarts, "count");
  m("verifiedBytes", res.verifiedBytes, "bytes");
  await ctx.step("soak: memory growth within bounds", () => {
    const problems: string[] = [];
    for (const [i, n] of nodes.entries()) {
      const [a, b] = [warm[i].meminfo, end[i].meminfo];
      for (const k of ["MemAvailable", "Slab", "SUnreclaim", "KernelStack", "PageTables"]) {
        m(`${n.g.name}.${k}DeltaKiB`, (b[k] ?? 0) - (a[k] ?? 0), "KiB");
      }
      const grew = slabGrowth(warm[i].slab, end[i].slab);
      ctx.log(
        `${n.g.name}: slab caches that grew most: ` +
          (grew.map((g) => `${g.name} +${g.bytes} B`).join(", ") || "none"),
      );
      m(`${n.g.name}.topSlabGrowthBytes`, grew[0]?.bytes ?? 0, "bytes");
      problems.push(...guestMemoryProblems(warm[i], end[i]).map((p) => `${n.g.name}: ${p}`));
    }
    if (rss.length) {
      const worst = switchRssGrowth(rss);
      m("switch.rssKiB", rss[rss.length - 1].rssKiB, "KiB");
      m("switch.rssGrowthKiB", worst, "KiB");
      ctx.log(`switch RSS per round: ${rss.map((r) => `${r.pid}:${r.rssKiB}`).join(" ")}`);
      if (worst > SOAK_BOUNDS.switchRssKiB) {
        problems.push(
          `switch RSS grew by ${worst} KiB within one process (bound ${SOAK_BOUNDS.switchRssKiB})`,
        );
      }
    }
    ctx.expect(problems.length === 0, problems.join("; "));
    return Promise.resolve();
  });
  await ctx.step("soak: counters consistent", () => {
    const d = nodes.map((_, i) => counterDelta(counters0[i], lastCounters[i]));
    const sum = (k: string) => d.reduce((a, x) => a + (x[k] ?? 0), 0);
    for (const k of SOAK_COUNTERS) m(`counters.${k}`, sum(k), "count");
    const rate = sum("rx_drop_injected") / Math.max(1, sum("rcvd_pkts"));
    m("lossRatePercent", Number((rate * 100).toFixed(3)), "%");
    const problems = counterProblems(d, every);
    ctx.expect(problems.length === 0, problems.join("; "));
    return Promise.resolve();
  });
  return res;
}
