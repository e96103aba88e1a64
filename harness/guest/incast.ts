/**
 * A RoCEv2 incast through the switch (row `lossless`, bench `incast`): the
 * first node receives, the others send to it at once through one switch
 * port drained slower than they send, so its egress queue fills. What is
 * configured where, and why these numbers, is docs/devices.md, "The
 * lossless row".
 *
 * The flows are `ibv_rc_pingpong --chk` (every message's data checked at the
 * receiving end): the tool sets no traffic class, so the RoCE priority is
 * reached through DSCP 0 — `dcb app` maps it to priority 3 on the hosts, the
 * switch's DSCP map does the same. A TCP flow beside them uses DSCP 8
 * (priority 1 at the switch, traffic class 0 on the hosts).
 */
import type { QosPortStats, QosPrioStats } from "../fabric/client.ts";
import { type RowContext, RowFailure, type RowNeeds } from "../matrix/row.ts";
import { collectBackground, inBackground, sh, shq, waitListening } from "./shell.ts";
import { ethtoolStats } from "./cnuas_net.ts";
import { type PairResult, parsePingpong } from "./cnuas_ib.ts";
import {
  addrFlag,
  counterDelta,
  expectBothExit0,
  hwCounters,
  pingpongResult,
  type RoceNode,
  setupRoceNodes,
  switchPortOf,
} from "./roce_pair.ts";

/** The priority RoCE traffic takes (PFC, ECN marking): the customary 3. */
export const ROCE_PRIO = 3;
/** The DSCP ibv_rc_pingpong's frames carry (it sets no traffic class). */
export const ROCE_DSCP = 0;
/** The DSCP of the TCP flow beside the incast. */
export const TCP_DSCP = 8;
/** The switch priority TCP_DSCP maps to (the default map: DSCP / 8). */
export const TCP_PRIO = 1;
/**
 * Nominal link speed PFC quanta count at, on the switch (`link_mbps`) and
 * the hosts (`pfc_link_mbps`): a full pause is 33.6 ms, refreshed every
 * 16.8 ms — longer than a TCG guest's usual descheduling (a pause of
 * 335 µs at 100 Gb/s runs out before a descheduled vCPU reads it).
 */
export const PFC_LINK_MBPS = 1000;
/** Each host's transmit shaper (`tx_rate_mbps`): what the senders offer. */
export const SENDER_MBPS = 20;
/** Drain rate of the receiver's switch port: the two senders offer five times as much. */
export const DRAIN_MBPS = 8;

/**
 * Thresholds of the RoCE queue in frames (the queue holds 256, the
 * switch's `--queue-depth`): XOFF above 32 leaves 224 frames of headroom,
 * 49 ms of both senders at full rate — what a sender may put on the wire
 * between the switch's XOFF and its driver reading it (at 30 Mb/s, 33 ms,
 * a loaded host's guest once took longer: 6 frames of pfc_violation); ECN
 * marks from 16.
 */
export const ROCE_QUEUE = { xoff: 32, xon: 16, ecnMin: 16, ecnMax: 32 } as const;

/**
 * DCQCN reaction-point timers for this fabric (cnuas_ib module parameters):
 * the defaults are tuned for microsecond round trips; under TCG a round trip
 * is milliseconds, so the recovery and alpha timers are 100 times longer
 * (a rate recovering in 300 µs would be back at line rate before the next
 * CNP could arrive).
 */
export const RP_SLOW_FABRIC: Record<string, number> = {
  rp_time_reset_us: 30000,
  rp_alpha_period_us: 5500,
  rp_reduce_period_us: 400,
};

/** The incast's world: receiver first, then the senders, and each node's switch port. */
export interface IncastWorld {
  nodes: RoceNode[];
  ports: number[];
}

/** Which congestion controls a segment runs with. */
export interface IncastMode {
  /** Segment name (capture file, measurement prefix). */
  name: string;
  /** PFC on the RoCE priority, hosts and switch. */
  pfc: boolean;
  /** ECN marking (step) in the switch's RoCE queue; the hosts' DCQCN is always on. */
  ecn: boolean;
  /** Sender indexes (1..) whose cnuas_net ignores received PFC (`pfc_ignore`). */
  ignorePfc?: number[];
  /** Run a TCP flow from the first sender to the receiver beside the incast. */
  tcp?: boolean;
  /**
   * Flows (QPs) of each sender, in sender order (default one each). A QP has
   * at most 256 packets unacknowledged (`CNUAS_IB_WINDOW`) and the switch's
   * queue holds 256, so one sender alone fills it only with two flows.
   */
  flows?: number[];
  /**
   * Probe the RoCE priority's latency behind the incast: the first sender
   * pings the receiver every 20 ms with DSCP 0 (the RoCE queue) while the
   * flows run (bench `incast`).
   */
  latencyProbe?: boolean;
}

/** What the latency probe saw: round trips in ms, and pings without an answer. */
export interface ProbeResult {
  rttMs: number[];
  sent: number;
  lost: number;
}

/** Round trips and counts from `ping` output (its summary line and every `time=` line). */
export function parsePing(out: string): ProbeResult {
  const rttMs = [...out.matchAll(/ time=([\d.]+) ms/g)].map((m) => Number(m[1]));
  const sum = /(\d+) packets transmitted, (\d+) received/.exec(out);
  if (!sum) throw new RowFailure(`ping printed no summary: ${out.slice(-400)}`);
  return { rttMs, sent: Number(sum[1]), lost: Number(sum[1]) - Number(sum[2]) };
}

/** The q-quantile (0..1) of `xs`, nearest rank; NaN for none. */
export function quantile(xs: number[], q: number): number {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
}

/** One incast flow's figures (ibv_rc_pingpong's). */
export interface FlowFigures {
  sender: string;
  /** The pingpong's TCP port (one per flow). */
  port: number;
  mbitPerSec: number;
  usecPerIter: number;
  /**
   * The flow's frames could be dropped (no PFC, or its sender ignores it),
   * its client got every message intact, and the server's QP gave up on its
   * last one: see {@link lastAckLost}.
   */
  serverGaveUp: boolean;
}

/**
 * Where the RoCE priority is lossy — PFC off, or a sender that ignores it —
 * the switch drops the flows' frames at the full queue, ACKs too. When the
 * ACK of the server's last message is dropped and the client, having
 * received that message (its figures printed, exit 0), has already exited
 * and destroyed its QP, the server's resends go unanswered and its QP gives
 * up: "retry counter exceeded", a consequence of the drops and of the tool
 * ending, not a device fault. Only this outcome is taken from a lossy flow;
 * wrong data or any other failure still fails the row, and a flow PFC
 * protects is taken only when both ends exit 0.
 */
export function lastAckLost(r: PairResult): boolean {
  return r.clientCode === 0 && r.serverCode !== 0 &&
    /transport retry counter exceeded/.test(r.serverOut) &&
    parsePingpong(r.clientOut) !== undefined;
}

/** Counter deltas of a segment, the flows' figures and the TCP flow's. */
export interface IncastResult {
  flows: FlowFigures[];
  /** The switch's RoCE-priority counters per port (index as `world.nodes`), deltas. */
  sw: QosPrioStats[];
  /** The switch's TCP-priority counters per port, deltas. */
  swTcp: QosPrioStats[];
  /** `ethtool -S` deltas per node. */
  eth: Record<string, number>[];
  /** hw_counters deltas per node. */
  hw: Record<string, number>[];
  /** The TCP flow: bytes and Mbit/s, when it ran. */
  tcp?: { bytes: number; mbitPerSec: number };
  /** The latency probe, when it ran. */
  probe?: ProbeResult;
  /** Wall time from starting the flows to the last one's end, s. */
  wallSec: number;
}

/** Message size and count of each incast flow. */
export interface IncastVolume {
  size: number;
  iters: number;
  /** The TCP flow's bytes, for a segment that has one (default {@link TCP_BYTES}). */
  tcpBytes?: number;
}

/** The TCP flow's volume unless the segment's says otherwise: 4 MiB. */
export const TCP_BYTES = 4 << 20;

const MOD = "/sys/module";

/** Write module parameters on a node. */
async function setParams(n: RoceNode, mod: string, params: Record<string, number>): Promise<void> {
  const cmds = Object.entries(params).map(([k, v]) => `echo ${v} > ${MOD}/${mod}/parameters/${k}`);
  await sh(n.g, cmds.join(" && "));
}

/**
 * Configure the hosts (TC 1 for priority 3 with a 50/50 ETS share, DSCP 0 →
 * 3, PFC quanta at {@link PFC_LINK_MBPS}, the shaper, DCQCN timers) and the
 * switch's DSCP map, link speed and RoCE queue thresholds on every port; no
 * PFC, no ECN, no drain yet.
 */
export async function configureIncast(ctx: RowContext, w: IncastWorld): Promise<void> {
  const f = ctx.fabric!;
  for (const n of w.nodes) {
    const dev = `dev ${n.dev.iface}`;
    await sh(
      n.g,
      `dcb ets set ${dev} tc-tsa all:ets tc-bw all:0 0:50 1:50 prio-tc all:0 ${ROCE_PRIO}:1 && ` +
        `dcb app add ${dev} dscp-prio ${ROCE_DSCP}:${ROCE_PRIO} && ` +
        `dcb pfc set ${dev} prio-pfc all:off`,
    );
    await setParams(n, "cnuas_net", {
      pfc_link_mbps: PFC_LINK_MBPS,
      tx_rate_mbps: SENDER_MBPS,
      pfc_ignore: 0,
    });
    await setParams(n, "cnuas_ib", RP_SLOW_FABRIC);
  }
  await f.qosSet({
    linkMbps: PFC_LINK_MBPS,
    dscp: [{ dscp: ROCE_DSCP, prio: ROCE_PRIO }],
    prios: [{ prio: ROCE_PRIO, xoff: ROCE_QUEUE.xoff, xon: ROCE_QUEUE.xon }],
  });
}

/**
 * Bring up the incast's guests (`ips[0]` the receiver's address), find each
 * one's switch port, and {@link configureIncast}.
 */
export async function setupIncast(ctx: RowContext, ips: string[]): Promise<IncastWorld> {
  if (!ctx.fabric) throw new RowFailure(`${ctx.id} needs the eth fabric and got none`);
  const nodes = await setupRoceNodes(ctx, ips);
  const w: IncastWorld = { nodes, ports: [] };
  await ctx.step("each guest's switch port; hosts and switch configured", async () => {
    for (const n of nodes.slice(1)) await sh(n.g, `ping -c 2 -W 5 ${nodes[0].ip}`);
    for (const n of nodes) w.ports.push(await switchPortOf(ctx, n));
    await configureIncast(ctx, w);
  });
  return w;
}

/** What an incast row asks for: three guests with a vnic each on an eth switch. */
export function incastNeeds(): RowNeeds {
  return {
    guests: 3,
    fabric: "eth",
    builds: ["qemu", "image", "provider"],
    devices: { vnic: 1 },
  };
}

/** Turn the switch's and hosts' controls to `mode`, and the receiver's port to the drain rate. */
async function applyMode(ctx: RowContext, w: IncastWorld, mode: IncastMode): Promise<void> {
  const f = ctx.fabric!;
  await f.qosSet({
    pfc: mode.pfc ? [ROCE_PRIO] : [],
    prios: [{
      prio: ROCE_PRIO,
      ecn: mode.ecn ? "step" : "off",
      ecnMin: ROCE_QUEUE.ecnMin,
      ecnMax: ROCE_QUEUE.ecnMax,
    }],
  });
  await f.qosSet({ port: w.ports[0], drainMbps: DRAIN_MBPS });
  // each guest's two settings in order, the guests side by side
  await Promise.all(w.nodes.map(async (n, i) => {
    const pfc = mode.pfc ? `${ROCE_PRIO}:on` : `${ROCE_PRIO}:off`;
    await sh(n.g, `dcb pfc set dev ${n.dev.iface} prio-pfc all:off ${pfc}`);
    await setParams(n, "cnuas_net", { pfc_ignore: mode.ignorePfc?.includes(i) ? 1 : 0 });
  }));
}

/** Undo {@link applyMode}: no drain limit, no PFC, no ECN, every host honouring PFC. */
export async function clearMode(ctx: RowContext, w: IncastWorld): Promise<void> {
  await applyMode(ctx, w, { name: "clear", pfc: false, ecn: false });
  await ctx.fabric!.qosSet({ port: w.ports[0], drainMbps: 0 });
}

/** A port's stats for one priority, from a `qos_stats` reply. */
function prioOf(stats: QosPortStats[], port: number, prio: number): QosPrioStats {
  const p = stats.find((s) => s.port === port)?.prios.find((x) => x.prio === prio);
  if (!p) throw new RowFailure(`qos_stats has no port ${port} priority ${prio}`);
  return p;
}

/** Counter deltas of two QoS samples (state fields taken from `b`). */
function prioDelta(a: QosPrioStats, b: QosPrioStats): QosPrioStats {
  const out = { ...b };
  for (const k of Object.keys(b) as (keyof QosPrioStats)[]) {
    const v = b[k];
    if (typeof v === "number" && k !== "prio" && k !== "queueLen" && k !== "pausedBy") {
      (out as Record<string, unknown>)[k] = v - (a[k] as number);
    }
  }
  return out;
}

/** The TCP flow: a receiver hashing what arrives, a sender with DSCP 8 sending `bytes`. */
const TCP_RX_PY = `
import hashlib, socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(1); c, _ = s.accept()
h = hashlib.sha256(); n = 0
while True:
    b = c.recv(65536)
    if not b: break
    h.update(b); n += len(b)
print("rx", n, h.hexdigest(), flush=True)
`;
const TCP_TX_PY = `
import hashlib, socket, sys, time
host, port, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.socket(); s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, ${TCP_DSCP << 2})
s.connect((host, port))
block = bytes(range(256)) * 256; h = hashlib.sha256(); n = 0; t0 = time.monotonic()
while n < total:
    b = block[: min(len(block), total - n)]
    s.sendall(b); h.update(b); n += len(b)
s.shutdown(socket.SHUT_WR); s.recv(1); t = time.monotonic() - t0
print("tx", n, h.hexdigest(), "%.6f" % t, flush=True)
`;
const TCP_PORT = 5301;
/**
 * How far ahead of now the flows' common start instant is set: time for
 * one ssh round trip per sending guest, made side by side, several times
 * over (the lossless row runs alone: its launches took 76-106 ms of the
 * 2,000 this was until 2026-12-05, which every segment then waited out).
 * Guests' clocks are stepped to the host's when they start, so one instant
 * means the same to all of them. A launch that ends past the instant fails
 * the incast: its flows did not start together.
 */
export const START_LEAD_MS = 800;

/**
 * Run the incast in `mode` (the caller captures around it): both pingpong
 * flows at once, with the TCP flow when asked; returns the deltas.
 */
export async function runIncast(
  ctx: RowContext,
  w: IncastWorld,
  mode: IncastMode,
  vol: IncastVolume,
): Promise<IncastResult> {
  const f = ctx.fabric!;
  const [rx, ...senders] = w.nodes;
  await applyMode(ctx, w, mode);
  const sw0 = await f.qosStats();
  const eth0 = await Promise.all(w.nodes.map((n) => ethtoolStats(n.g, n.dev.iface)));
  const hw0 = await Promise.all(w.nodes.map((n) => hwCounters(n)));
  const flags = `-s ${vol.size} -n ${vol.iters} -m 1024 --chk`;
  const flowSenders = senders.flatMap((s, i) => Array(mode.flows?.[i] ?? 1).fill(s) as RoceNode[]);
  const ignoresPfc = (s: RoceNode) => mode.ignorePfc?.includes(w.nodes.indexOf(s)) ?? false;
  const lossy = (s: RoceNode) => !mode.pfc || ignoresPfc(s);
  const port = (i: number) => 18515 + i;
  const what = (i: number) =>
    `${flowSenders[i].g.name} → ${rx.g.name}: ibv_rc_pingpong -p ${port(i)} ${flags}`;
  const tcpBytes = vol.tcpBytes ?? TCP_BYTES;
  const tcpRx = "/tmp/incast-tcp-rx", tcpTx = "/tmp/incast-tcp-tx";
  const timeout = 300;
  if (mode.tcp) {
    await sh(rx.g, inBackground(tcpRx, `python3 -c ${shq(TCP_RX_PY)} ${TCP_PORT}`, timeout));
    await sh(rx.g, waitListening([TCP_PORT], 100));
  }
  const probe = "/tmp/incast-probe";
  if (mode.latencyProbe) {
    await sh(
      senders[0].g,
      `rm -f ${probe}.*; (ping -n -Q ${
        ROCE_DSCP << 2
      } -i 0.02 -W 2 ${rx.ip} >${probe}.out 2>&1 & ` +
        `echo $! >${probe}.pid) >/dev/null 2>&1`,
    );
  }
  // Every server listens first; then every client (and the TCP sender)
  // waits for one start instant, so the flows overlap from their first
  // message (started one after the other, a short flow can be over before
  // the next one's ssh round trips are done, and nothing congests).
  const args = (n: RoceNode, i: number) =>
    `ibv_rc_pingpong -d ${n.dev.ibdev}${addrFlag(n, "-g")} -p ${port(i)} ${flags}`;
  const srvTag = (i: number) => `/tmp/incast-srv.${port(i)}`;
  const cliTag = (i: number) => `/tmp/incast-cli.${port(i)}`;
  await sh(
    rx.g,
    [
      ...flowSenders.map((_, i) => inBackground(srvTag(i), args(rx, i), timeout)),
      waitListening(flowSenders.map((_, i) => port(i)), 300),
    ].join("\n"),
  );
  const startMs = Date.now() + START_LEAD_MS;
  const atStart = (cmd: string) =>
    `while [ $(date +%s%3N) -lt ${startMs} ]; do sleep 0.02; done; ${cmd}`;
  // one command per sending guest (its flows and the TCP sender), the guests side by side
  const launches = new Map<RoceNode, string[]>();
  const launch = (n: RoceNode, cmd: string) => {
    const cmds = launches.get(n);
    if (cmds) cmds.push(cmd);
    else launches.set(n, [cmd]);
  };
  for (const [i, s] of flowSenders.entries()) {
    launch(s, inBackground(cliTag(i), atStart(`${args(s, i)} ${rx.ip}`), timeout));
  }
  if (mode.tcp) {
    const tx = `python3 -c ${shq(TCP_TX_PY)} ${rx.ip} ${TCP_PORT} ${tcpBytes}`;
    launch(senders[0], inBackground(tcpTx, atStart(tx), timeout));
  }
  await Promise.all([...launches].map(([n, cmds]) => sh(n.g, cmds.join("\n"))));
  const launchedMs = Date.now();
  if (launchedMs >= startMs) {
    throw new RowFailure(
      `launching the flows ended ${launchedMs - startMs} ms past their common start ` +
        `(${START_LEAD_MS} ms ahead): they did not start together`,
    );
  }
  ctx.log(`flows launched ${startMs - launchedMs} ms before their common start`);
  const t0 = performance.now() + Math.max(0, startMs - Date.now());
  const clients = [];
  for (const [i, s] of flowSenders.entries()) {
    clients.push(await collectBackground(s.g, cliTag(i), timeout));
  }
  // A client that failed (e.g. its retry counter exceeded) leaves its server
  // waiting for ever: end the servers (our processes in our guest) so the
  // failure is reported now, not at the timeout.
  if (clients.some((c) => c.code !== 0)) await rx.g.run("pkill -x ibv_rc_pingpong");
  const flows: FlowFigures[] = [];
  for (const [i, s] of flowSenders.entries()) {
    const c = clients[i];
    const srv = await collectBackground(rx.g, srvTag(i), timeout);
    const pr = { serverCode: srv.code, serverOut: srv.out, clientCode: c.code, clientOut: c.out };
    const serverGaveUp = lossy(s) && lastAckLost(pr);
    const r = serverGaveUp ? pr : expectBothExit0(what(i), pr);
    flows.push({ sender: s.g.name, port: port(i), serverGaveUp, ...pingpongResult(what(i), r) });
  }
  const wallSec = (performance.now() - t0) / 1000;
  let probeResult: ProbeResult | undefined;
  if (mode.latencyProbe) {
    const out = await sh(
      senders[0].g,
      `kill -INT $(cat ${probe}.pid); for i in $(seq 50); do ` +
        `grep -q 'packets transmitted' ${probe}.out && break; sleep 0.1; done; cat ${probe}.out`,
    );
    probeResult = parsePing(out);
  }
  let tcp: IncastResult["tcp"];
  if (mode.tcp) {
    const t = await collectBackground(senders[0].g, tcpTx, timeout);
    const r = await collectBackground(rx.g, tcpRx, timeout);
    const txm = /^tx (\d+) ([0-9a-f]{64}) ([\d.]+)$/m.exec(t.out);
    const rxm = /^rx (\d+) ([0-9a-f]{64})$/m.exec(r.out);
    if (t.code !== 0 || r.code !== 0 || !txm || !rxm) {
      throw new RowFailure(
        `TCP flow: sender exit ${t.code} ${t.out}; receiver exit ${r.code} ${r.out}`,
      );
    }
    if (txm[1] !== rxm[1] || txm[2] !== rxm[2]) {
      throw new RowFailure(
        `TCP flow: sent ${txm[1]} bytes sha256 ${txm[2]}, got ${rxm[1]} ${rxm[2]}`,
      );
    }
    tcp = { bytes: Number(rxm[1]), mbitPerSec: (Number(rxm[1]) * 8) / Number(txm[3]) / 1e6 };
  }
  const sw1 = await f.qosStats();
  const eth1 = await Promise.all(w.nodes.map((n) => ethtoolStats(n.g, n.dev.iface)));
  const hw1 = await Promise.all(w.nodes.map((n) => hwCounters(n)));
  await clearMode(ctx, w);
  return {
    flows,
    sw: w.ports.map((p) => prioDelta(prioOf(sw0, p, ROCE_PRIO), prioOf(sw1, p, ROCE_PRIO))),
    swTcp: w.ports.map((p) => prioDelta(prioOf(sw0, p, TCP_PRIO), prioOf(sw1, p, TCP_PRIO))),
    eth: w.nodes.map((_, i) => counterDelta(eth0[i], eth1[i])),
    hw: w.nodes.map((_, i) => counterDelta(hw0[i], hw1[i])),
    tcp,
    probe: probeResult,
    wallSec,
  };
}
