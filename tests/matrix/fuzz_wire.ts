/**
 * The wire fuzz of row `fuzz` (RoCEv2) and row `fuzz-ib` (native
 * InfiniBand) (issue 20): while live `ibv_rc_pingpong --chk` runs go back to
 * back between the two guests, the switch injects generated frames
 * (harness/models/rdma/wire_fuzz.ts) at the first guest's port, aimed at
 * wire_victim's QPs, its MR and its UD QP. Afterwards: every live run
 * completed with its data checked, every receive counter the classes name
 * rose by exactly the model's prediction, no frame was dropped at the switch
 * or on a full QP queue, the main victim QP is still RTS and each sacrificed
 * one is in the error state, the MR's window holds what the model computed,
 * and no byte changed in its canary half or in the memory around it.
 *
 * The victims answer the fake peer (ACKs, READ responses, atomic ACKs,
 * NAKs). On RoCEv2 the switch floods those to the other ports (the fake
 * MAC is never learned); on native IB the fake peer's LID gets an LFT entry
 * to the live peer's port for the fuzz's duration, whose cnuas_ib drops them
 * as not addressed to it — without it the switch drops them as `bad_dlid`
 * at the target's ingress (docs/switch.md, "Forwarding", ib step 3), as a
 * real switch drops a DLID it has no route for, and a check of the switch's
 * drops at the target's port could not tell them from injected frames lost.
 * An injected (egress) frame meets no forwarding rule: the only place the
 * switch can lose one is the target port's queue (`queue_full`).
 *
 * The seed is random per run (measurement `wireFuzz.seed`);
 * `CNUAS_HIL_WIRE_FUZZ_SEED=<seed>` replays one. A run whose counters, QPs
 * or memory differ from the model shrinks: subsets of its steps are replayed
 * (without the live flow) on a new wire_victim until a minimal failing
 * sequence is left, which the row logs and writes to
 * `wire-fuzz-minimal.pcapng` (README.md, row `fuzz`: "A failing run shrinks").
 */
import { join } from "node:path";
import { type RowContext, RowFailure } from "../../harness/matrix/row.ts";
import type { FabricOps } from "../../harness/fabric/client.ts";
import { writePcapng } from "../../harness/fabric/pcapng.ts";
import { shrinkOps } from "../../harness/oracle/shrink.ts";
import { fuzzSeed } from "../../harness/config.ts";
import { runPair } from "../../harness/guest/cnuas_ib.ts";
import { ethtoolStats } from "../../harness/guest/cnuas_net.ts";
import {
  addrFlag,
  counterDelta,
  expectBothExit0,
  hwCounters,
  nodeMac,
  pingpongResult,
  type RdmaNode,
  switchPortOf,
} from "../../harness/guest/roce_pair.ts";
import {
  type FakePeer,
  injectPaced,
  startVictim,
  stopVictim,
  type VictimReport,
  type VictimSetup,
} from "../../harness/guest/wire_fuzz.ts";
import type { IbNode } from "../../harness/guest/ib_pair.ts";
import { parseMac } from "../../harness/models/rdma/ethernet.ts";
import { parseIpv4 } from "../../harness/models/rdma/ip.ts";
import {
  CLASS_COUNTER,
  FATAL,
  type FuzzFrame,
  type FuzzStep,
  victimWindow,
  WireFuzz,
} from "../../harness/models/rdma/wire_fuzz.ts";

/** Frames of the main stream, per depth. */
export const WIRE_FUZZ_FRAMES = { quick: 100_000, deep: 100_000 } as const;

/** The address the victims talk to (on the guests' /24; nobody has it). */
export const FAKE_PEER = {
  ip: "10.77.0.99",
  mac: "02:00:00:00:ff:99",
  qpnBase: 0xffff00,
};

/** A source that is not the victims' peer. */
const FOREIGN_IP = "10.77.0.98";

/** Native IB: the LID the victims are connected to and another one (the SM gives neither). */
export const FAKE_PEER_IB = { lid: 0x9999, qpnBase: FAKE_PEER.qpnBase } as const;
const FOREIGN_LID = 0x9998;

/** The guest the fuzz aims at and its peer: RoCEv2 nodes, or native IB ones. */
export type WireFuzzNodes = ["eth", RdmaNode & { gid: number }, RdmaNode] | ["ib", IbNode, IbNode];

/** What a target node is, whichever the link layer. */
type Target = WireFuzzNodes[1];

const fakePeer = (t: Target): FakePeer => "lid" in t ? FAKE_PEER_IB : FAKE_PEER;

/** Victim QPs: the main one and one per fault. */
const VICTIMS = 1 + Object.keys(FATAL).length;

/**
 * The live flow: message size, TCP port, and the iterations of one run. Runs follow each other
 * until the injection is over, so the flow outlasts it by at most one run whatever the machine's
 * speed: one run sized for the whole injection had to guess that speed, and guessed 25-35 s long.
 * 500 iterations: 2-4 s a run under TCG beside the injection (2,000 took 7-15 s once the injection
 * itself took 3-6 s, and the last run set the step's length).
 */
const LIVE = { size: 4096, port: 18530, iters: 500 } as const;

/** ibv_qp_state values. */
const QPS_RTS = 3, QPS_ERR = 6;

/**
 * Counters a resend of the live flow may raise at the target beyond the model's count, one per
 * resend: the peer's resend is a duplicate while the target's QP lives and meets no QP once that
 * run has ended (runs end while the injection goes on), as does the peer's second ACK of a request
 * the target resent.
 */
const LIVE_RESEND_COUNTERS: readonly string[] = ["duplicate_request", "rcvd_qpn_err"];

/** Counters that must not move at all: a frame dropped for a reason the model never predicts. */
const MUST_STAY = ["rcvd_rxq_full"];

/** The LRH's length: a native IB frame shorter than it has none. */
const IB_LRH_BYTES = 8;

/** How long a failing run may spend shrinking, per depth. */
const SHRINK_BUDGET_SEC = { quick: 300, deep: 900 } as const;

/** The generator for a started wire_victim. */
async function generator(t: Target, victim: VictimSetup, seed: number): Promise<WireFuzz> {
  const common = { victims: victim.qps, mr: victim.mr, ud: victim.ud, pmtu: 1024 };
  // native IB: the MAC and IP fields are not used
  const target = "lid" in t
    ? {
      ...common,
      dstMac: 0,
      dstIp: 0,
      peerMac: 0,
      peerIp: 0,
      foreignIp: 0,
      ib: { dstLid: t.lid, peerLid: FAKE_PEER_IB.lid, foreignLid: FOREIGN_LID },
    }
    : {
      ...common,
      dstMac: parseMac(await nodeMac(t)),
      dstIp: parseIpv4(t.ip),
      peerMac: parseMac(FAKE_PEER.mac),
      peerIp: parseIpv4(FAKE_PEER.ip),
      foreignIp: parseIpv4(FOREIGN_IP),
    };
  return new WireFuzz(target, seed, victimWindow(victim.mr.len / 2));
}

/** The switch port of the target. */
const portOf = async (ctx: RowContext, t: Target) =>
  "swPort" in t ? t.swPort : await switchPortOf(ctx, t);

/** Start wire_victim on the target. */
const startOn = (t: Target) =>
  startVictim(t.g, t.dev, "gid" in t ? t.gid : 0, fakePeer(t), VICTIMS);

/**
 * Frames a second a port receives with no fuzz backlog left: a native IB
 * port gets the SM's sweeps (2–3 SMPs a second measured), so its rcvd_pkts
 * is never still; a backlog being worked through moves thousands a second.
 * Reading too early can only make the exact comparison fail, never pass.
 */
const QUIET_FRAMES_PER_SEC = 8;

/** `t`'s hw counters once the guest has worked through its backlog (rcvd_pkts quiet for 1 s). */
async function settledCounters(t: RdmaNode): Promise<Record<string, number>> {
  let after = await hwCounters(t);
  for (let i = 0; i < 60; i++) {
    await new Promise((r) => setTimeout(r, 1000));
    const again = await hwCounters(t);
    const quiet = (again.rcvd_pkts ?? 0) - (after.rcvd_pkts ?? 0) <= QUIET_FRAMES_PER_SEC;
    after = again;
    if (quiet) break;
  }
  return after;
}

/**
 * Each class's counter against the model's prediction (`slack`: how far
 * duplicate_request may exceed it, the live flow's resends); what differs.
 */
function judgeCounters(
  fuzz: WireFuzz,
  delta: Record<string, number>,
  slack: number,
  measure?: (name: string, value: number) => void,
): string[] {
  const wrong: string[] = [];
  const predicted = fuzz.predicted();
  /** What the counters a live resend may raise counted above the prediction, together. */
  let above = 0;
  for (const counter of new Set(Object.values(CLASS_COUNTER))) {
    if (!counter) continue;
    const want = predicted[counter] ?? 0, got = delta[counter] ?? 0;
    measure?.(`wireFuzz.predicted.${counter}`, want);
    measure?.(`wireFuzz.counted.${counter}`, got);
    const resendable = LIVE_RESEND_COUNTERS.includes(counter);
    if (got < want || (got > want && !resendable)) {
      wrong.push(`${counter}: predicted ${want}, counted ${got}`);
    } else if (resendable) above += got - want;
  }
  if (above > slack) {
    wrong.push(
      `${LIVE_RESEND_COUNTERS.join(" and ")}: ${above} above the prediction, more than the ` +
        `live flow's ${slack} resends`,
    );
  }
  for (const c of MUST_STAY) {
    if (delta[c]) wrong.push(`${c}: ${delta[c]} (must stay 0)`);
  }
  return wrong;
}

/**
 * wire_victim's report against the model: QP 0 RTS, each QP whose fault
 * was sent in the error state and the others RTS, the window as computed,
 * no canary byte changed, no completion; what differs.
 */
function judgeVictim(
  fuzz: WireFuzz,
  setup: VictimSetup,
  report: VictimReport,
  faults: Set<string>,
  measure?: (name: string, value: number) => void,
): string[] {
  const wrong: string[] = [];
  const names = Object.keys(FATAL);
  const wantStates = setup.qps.map((_, i) => i > 0 && faults.has(names[i - 1]) ? QPS_ERR : QPS_RTS);
  if (JSON.stringify(report.states) !== JSON.stringify(wantStates)) {
    wrong.push(
      `QP states ${report.states}, want ${wantStates} (main victim RTS, each sacrificed one ERR)`,
    );
  }
  if (report.udState !== QPS_RTS) wrong.push(`UD QP state ${report.udState}, want ${QPS_RTS}`);
  measure?.("wireFuzz.canaryOutside", report.canaryOutside);
  measure?.("wireFuzz.canaryInside", report.canaryInside);
  if (report.canaryOutside !== 0) wrong.push(`${report.canaryOutside} bytes around the MR changed`);
  if (report.canaryInside !== 0) {
    wrong.push(`${report.canaryInside} bytes of the MR's canary half changed`);
  }
  const diff = report.window.reduce((s, b, i) => s + (b === fuzz.window[i] ? 0 : 1), 0);
  measure?.("wireFuzz.windowBytesWrong", diff);
  if (diff !== 0) wrong.push(`${diff} bytes of the MR window differ from the model's`);
  if (report.cqes !== 0) wrong.push(`${report.cqes} completions on a CQ with no work posted`);
  return wrong;
}

/** Where a shrink ended: the steps left, their frames as injected and what their replay found. */
interface Shrunk {
  steps: FuzzStep[];
  frames: FuzzFrame[];
  wrong: string[];
  runs: number;
  minimal: boolean;
}

/**
 * Replay subsets of a failing run's `steps` on a new wire_victim each,
 * without the live flow, until no step can go (ddmin,
 * harness/oracle/shrink.ts) or the depth's budget is spent. Undefined when
 * all the steps alone do not fail (the failure needs the live flow).
 */
async function shrinkWireFailure(
  ctx: RowContext,
  t: Target,
  fabric: FabricOps,
  port: number,
  seed: number,
  steps: FuzzStep[],
): Promise<Shrunk | undefined> {
  let last: { steps: FuzzStep[]; frames: FuzzFrame[]; wrong: string[] } | undefined;
  const replay = async (cand: FuzzStep[]): Promise<string[]> => {
    const victim = await startOn(t);
    const fuzz = await generator(t, victim, seed);
    const frames = cand.flatMap((s) => fuzz.apply(s));
    const before = await hwCounters(t);
    await injectPaced(fabric, port, frames.map((f) => f.frame));
    const delta = counterDelta(before, await settledCounters(t));
    const { report, code } = await stopVictim(t.g);
    const faults = new Set(cand.map((s) => s.what).filter((w) => w in FATAL));
    const wrong = [
      ...(code === 0 ? [] : [`wire_victim exit ${code}`]),
      ...judgeCounters(fuzz, delta, 0),
      ...judgeVictim(fuzz, victim, report, faults),
    ];
    if (wrong.length) last = { steps: cand, frames, wrong };
    return wrong;
  };
  const all = await replay(steps);
  ctx.log(`shrink: the ${steps.length} steps without the live flow: ${all.join("; ") || "pass"}`);
  if (!all.length) return undefined;
  const r = await shrinkOps(steps, async (cand) => (await replay(cand)).length > 0, {
    maxRuns: 400,
    budgetMs: SHRINK_BUDGET_SEC[ctx.config.depth] * 1000,
  });
  // the result is the last candidate that failed, unless nothing could go (then it is a copy)
  let runs = r.runs + 1;
  if (last?.steps !== r.ops) {
    // a copy: replay it once more for its frames and what it finds
    runs++;
    await replay(r.ops);
    if (last?.steps !== r.ops) {
      const wrong = ["nothing: they passed when replayed once more (a flaky failure?)"];
      return { steps: r.ops, frames: [], wrong, runs, minimal: false };
    }
  }
  return { ...last, runs, minimal: r.minimal };
}

/** Write the shrunk frames, as injected, beside the row's logs, and list them in the log. */
async function writeMinimal(ctx: RowContext, s: Shrunk): Promise<void> {
  const file = join(ctx.dir, "wire-fuzz-minimal.pcapng");
  await Deno.writeFile(
    file,
    writePcapng(
      [{ linkType: 1, name: "injected" }],
      s.frames.map((f, i) => ({ interfaceId: 0, timestampNs: BigInt(i) * 1000n, data: f.frame })),
    ),
  );
  ctx.artifact(file);
  for (const f of s.frames) {
    ctx.log(`shrink: step ${f.step} ${f.what} (${f.cls}): ${f.frame.length} bytes`);
  }
}

/** The wire fuzz; the first node is the target, the second its live peer. */
export async function wireFuzzSteps(ctx: RowContext, nodes: WireFuzzNodes): Promise<void> {
  const fabric = ctx.fabric;
  if (!fabric) throw new Error("row fuzz: the wire fuzz needs the row's fabric");
  if (nodes[0] === "eth") return await fuzzSteps(ctx, nodes, fabric);
  const [, t, peer] = nodes;
  // the victims' answers to the fake peer: to the live peer's port, whose cnuas_ib drops them
  // (rcvd_addr_err: not its LID), not bad_dlid drops at the target's ingress (the module comment)
  const lid = FAKE_PEER_IB.lid;
  await ctx.step(
    `LFT: the fake peer's LID 0x${lid.toString(16)} to ${peer.g.name}'s port ${peer.swPort}`,
    () => fabric.setLft([{ lid, port: peer.swPort }]),
  );
  // the SA groups the target's port is in (a live multicast frame to one its IPoIB did not attach
  // a QP to counts in the target's rcvd_mcast_no_member): logged for a run whose count differs
  const groups = async (when: string) => {
    const mine = (await fabric.sm()).groups.filter((g) => g.ports.includes(t.swPort));
    ctx.log(
      `SA groups with ${t.g.name}'s port ${t.swPort} ${when}: ${
        mine.map((g) => `${g.mgid} (mlid 0x${g.mlid.toString(16)}, ports ${g.ports})`).join("; ")
      }`,
    );
  };
  await groups("before the fuzz");
  try {
    await fuzzSteps(ctx, nodes, fabric);
  } finally {
    // the route goes with the fuzz; a failure here must not hide the fuzz's own
    await groups("after the fuzz").catch((e) => ctx.log(`SA groups: ${e}`));
    await fabric.setLft([{ lid, port: null }]).catch((e) => ctx.log(`LFT: ${e}`));
  }
}

/** {@link wireFuzzSteps} once the fabric is ready for it. */
async function fuzzSteps(ctx: RowContext, nodes: WireFuzzNodes, fabric: FabricOps): Promise<void> {
  const [mode, t, peer] = nodes;
  const seed = fuzzSeed("CNUAS_HIL_WIRE_FUZZ_SEED");
  ctx.measure("wireFuzz.seed", seed, "seed");
  const frames = WIRE_FUZZ_FRAMES[ctx.config.depth];
  const { port, victim, fuzz } = await ctx.step("wire_victim: victim QPs and MR", async () => {
    const port = await portOf(ctx, t);
    const victim = await startOn(t);
    ctx.log(
      `wire_victim: ${
        JSON.stringify(victim, (_, v) => typeof v === "bigint" ? `0x${v.toString(16)}` : v)
      }`,
    );
    const fuzz = await generator(t, victim, seed);
    return { port, victim, fuzz };
  });
  /** What the counters said against the model (checked after the victim's report is in). */
  const wrong: string[] = [];
  /** The steps sent, main stream then faults (what a shrink starts from). */
  const steps: FuzzStep[] = [];
  const before = await hwCounters(t);
  const peerBefore = await hwCounters(peer);
  const netBefore = await ethtoolStats(t.g, t.dev.iface);
  const dropsBefore = (await fabric.ports()).find((p) => p.port === port)?.drops;
  /** Native IB: frames of the main stream shorter than the LRH. */
  let shortOfLrh = 0;
  await ctx.step(
    `${frames} fuzz frames at ${t.g.name} beside live ibv_rc_pingpong --chk runs`,
    async () => {
      const flags = `-s ${LIVE.size} -n ${LIVE.iters} --chk`;
      const cmd = `ibv_rc_pingpong -d ${t.dev.ibdev}${addrFlag(t, "-g")} -p ${LIVE.port} ${flags}`;
      const pcmd = `ibv_rc_pingpong -d ${peer.dev.ibdev}${
        addrFlag(peer, "-g")
      } -p ${LIVE.port} ${flags} ${t.ip}`;
      let injecting = true;
      // each run's usec/iter; a run whose data check or exit fails ends the runs, and the step
      // fails on it once the injection is over
      const live = (async () => {
        const usec: number[] = [];
        do {
          const what = `live ibv_rc_pingpong ${flags} (run ${usec.length + 1})`;
          const pair = await runPair(t.g, cmd, peer.g, pcmd, LIVE.port, 600);
          usec.push(pingpongResult(what, expectBothExit0(what, pair)).usecPerIter);
        } while (injecting);
        return usec;
      })();
      live.catch(() => {}); // awaited below, after the injection
      // the injection starts once the first run's QP is RTS at the target: it runs beside the flow
      const rts = await t.g.run(
        `for i in $(seq 300); do rdma resource show qp | ` +
          `grep -q 'type RC state RTS .*comm ibv_rc_pingpong' && exit 0; sleep 0.1; done; exit 1`,
        { timeoutSec: 60 },
      );
      if (rts.code !== 0) {
        injecting = false;
        await live; // its failure, if it failed, says more
        throw new RowFailure("the live flow's QP at the target did not reach RTS in 30 s");
      }
      const t0 = performance.now();
      const main = function* () {
        for (let i = 0; i < frames; i++) {
          const s = fuzz.nextStep();
          steps.push(s);
          const f = fuzz.apply(s)[0].frame;
          if (mode === "ib" && f.length < IB_LRH_BYTES) shortOfLrh++;
          yield f;
        }
      };
      let n: number;
      try {
        n = await injectPaced(fabric, port, main());
      } finally {
        injecting = false;
      }
      const sec = (performance.now() - t0) / 1000;
      ctx.measure("wireFuzz.injectSeconds", Math.round(sec * 10) / 10, "s");
      ctx.measure("wireFuzz.framesPerSecond", Math.round(n / sec), "frames/s");
      // the sacrifices, once the main stream is in (they write the window's other half)
      const faults = fuzz.fatalSteps();
      steps.push(...faults);
      n += await injectPaced(
        fabric,
        port,
        faults.flatMap((s) => fuzz.apply(s)).map((f) => f.frame),
      );
      ctx.measure("framesInjected", n, "frames");
      const usec = await live;
      ctx.measure("liveFlow.runs", usec.length, "count");
      ctx.measure("liveFlow.iterations", usec.length * LIVE.iters, "count");
      ctx.measure(
        "liveFlow.usecPerIter",
        Math.round(usec.reduce((a, b) => a + b, 0) / usec.length * 100) / 100,
        "us",
      );
    },
  );
  await ctx.step("receive counters: each class's counter rose by the model's count", async () => {
    // the guest may still be working through its socket's backlog
    const delta = counterDelta(before, await settledCounters(t));
    // the live flow's own resends, either end's: at most one count each (LIVE_RESEND_COUNTERS)
    const peerResent = counterDelta(peerBefore, await hwCounters(peer)).retransmits ?? 0;
    const targetResent = delta.retransmits ?? 0;
    ctx.measure("liveFlow.peerRetransmits", peerResent, "frames");
    ctx.measure("liveFlow.targetRetransmits", targetResent, "frames");
    wrong.push(
      ...judgeCounters(
        fuzz,
        delta,
        peerResent + targetResent,
        (n, v) => ctx.measure(n, v, "frames"),
      ),
    );
    for (const [what, k] of Object.entries(fuzz.mutations)) {
      ctx.measure(`wireFuzz.frames.${what}`, k, "frames");
    }
    // injected frames never reach a multicast group anyone joined: this is the live multicast
    ctx.measure("liveFlow.mcastDelivered", delta.rcvd_mcast_pkts ?? 0, "frames");
    const dropsAfter = (await fabric.ports()).find((p) => p.port === port)?.drops;
    const byReason = Object.entries(counterDelta(dropsBefore ?? {}, dropsAfter ?? {}))
      .filter(([, d]) => d !== 0);
    const switchDrops = byReason.reduce((s, [, d]) => s + d, 0);
    ctx.measure("wireFuzz.switchDrops", switchDrops, "frames");
    if (switchDrops) {
      wrong.push(
        `the switch dropped ${switchDrops} frames at port ${port} (${
          byReason.map(([k, d]) => `${k} ${d}`).join(", ")
        })`,
      );
    }
    // cnuas_net's own length check, before cnuas_ib: on a native IB port every frame must get
    // through to cnuas_ib (docs/devices.md, "cnuas_ib: receive drop reasons", rule 1)
    const runts = counterDelta(netBefore, await ethtoolStats(t.g, t.dev.iface)).rx_drop_runt ?? 0;
    ctx.measure("wireFuzz.cnuasNet.rxDropRunt", runts, "frames");
    if (mode === "ib") {
      ctx.measure("wireFuzz.frames.shorterThanLrh", shortOfLrh, "frames");
      if (runts) {
        wrong.push(
          `cnuas_net rx_drop_runt: ${runts} (must stay 0: on a native IB port every frame reaches ` +
            `cnuas_ib; ${shortOfLrh} injected frames are shorter than the ${IB_LRH_BYTES}-byte ` +
            `LRH, rule 1 puts them in rcvd_hdr_err)`,
        );
      }
    }
    ctx.log(`counter deltas: ${JSON.stringify(delta)}`);
  });
  await ctx.step("victim QPs, MR window and canaries", async () => {
    const { report, code } = await stopVictim(t.g);
    ctx.expect(code === 0, `wire_victim exit ${code}`);
    const faults = new Set(steps.map((s) => s.what).filter((w) => w in FATAL));
    wrong.push(
      ...judgeVictim(fuzz, victim, report, faults, (n, v) => ctx.measure(n, v, "bytes")),
    );
  });
  await ctx.step("the counters, QPs and memory as the model predicted", async () => {
    if (!wrong.length) return;
    const failure = `wire fuzz (seed ${seed}; replay: CNUAS_HIL_WIRE_FUZZ_SEED=${seed}): ` +
      wrong.join("; ");
    ctx.log(failure);
    const shrunk = await shrinkWireFailure(ctx, t, fabric, port, seed, steps);
    if (!shrunk) {
      ctx.expect(false, `${failure}; its steps alone pass: the failure needs the live flow`);
      return;
    }
    ctx.measure("wireFuzz.shrink.steps", shrunk.steps.length, "steps");
    ctx.measure("wireFuzz.shrink.runs", shrunk.runs, "runs");
    await writeMinimal(ctx, shrunk);
    const list = shrunk.steps.map((s) => `${s.what}@${s.index}`).join(", ");
    ctx.expect(
      false,
      `${failure}; shrunk in ${shrunk.runs} replays to ${shrunk.steps.length} steps` +
        `${shrunk.minimal ? " (1-minimal)" : " (budget spent)"}: ${list}; ` +
        `they alone give: ${shrunk.wrong.join("; ")} (frames: wire-fuzz-minimal.pcapng)`,
    );
  });
}
