import { type Row, type RowContext, RowFailure } from "../../harness/matrix/row.ts";
import { captured } from "../../harness/oracle/wire_capture.ts";
import type { PcapngCheckSummary } from "../../harness/oracle/wire_check.ts";
import {
  clearMode,
  type IncastMode,
  incastNeeds,
  type IncastResult,
  type IncastVolume,
  type IncastWorld,
  ROCE_PRIO,
  runIncast,
  setupIncast,
  TCP_BYTES,
} from "../../harness/guest/incast.ts";

/** Receiver (g0) and the two senders. */
const IPS = ["10.77.0.1", "10.77.0.2", "10.77.0.3"];

/**
 * Each flow's volume: 256 KiB messages (256 frames at path MTU 1024, one
 * QP window), 6 per flow at the quick depth, 16 at the deep one; 12 at the
 * quick depth in the two segments whose drops are compared (see
 * {@link volumeOf}). A message
 * is a bounded burst: when both senders' bursts meet, the switch's
 * 256-frame queue overflows, then drains while they wait for their pongs,
 * so go-back-N's resend gets through. With messages longer than a window
 * (512 KiB, 1 MiB) the senders always had more to send, the queue stayed
 * full of resends the receiver discards, and without control a QP ran out
 * of its seven retries in one run of three or four (congestion collapse).
 * The TCP flow beside the PFC segment: 1 MiB at the quick depth (~1.3 s at
 * the ~6.4 Mbit/s it got, inside the pingpongs' ~5.7 s: it runs while they
 * are paused), 4 MiB at the deep one (which outlasted them by ~3 s).
 */
const VOLUME: Record<"quick" | "deep", IncastVolume> = {
  quick: { size: 262144, iters: 6, tcpBytes: 1 << 20 },
  deep: { size: 262144, iters: 16, tcpBytes: TCP_BYTES },
};

/**
 * The volume of `mode`'s segment. `none` and `ecn` are compared ("ECN drops
 * fewer frames than no control"), and both counts vary between runs with
 * when the bursts meet and how the host schedules the guests: over 20 runs
 * of 6 messages, none lost 328–4,525 frames, ECN 0–587 (a lost ACK's go-back-N
 * resend or a stalled receiver), and once the lowest none met a high ECN.
 * At the quick depth those two run 12 messages, so each count sums as many
 * bursts as two runs would; the other segments' claims hold at 6.
 */
function volumeOf(mode: IncastMode, depth: "quick" | "deep"): IncastVolume {
  const compared = mode.name === "none" || mode.name === "ecn";
  return depth === "quick" && compared ? { ...VOLUME.quick, iters: 12 } : VOLUME[depth];
}

/**
 * Fairness bound of the ECN segment: the slower sender's pingpong rate is
 * at least half the faster one's (docs/devices.md, "The lossless row";
 * measured 0.93–0.98: both start at one instant and cut on the same marks).
 */
export const ECN_FAIRNESS_MIN = 0.5;

/** The segments, in order. */
const MODES: IncastMode[] = [
  { name: "none", pfc: false, ecn: false },
  { name: "pfc", pfc: true, ecn: false, tcp: true },
  { name: "ecn", pfc: false, ecn: true },
  {
    name: "pfc-ignored",
    pfc: true,
    ecn: false,
    ignorePfc: [2],
    // g2 alone, two bursts at once: 512 frames against a 256-frame queue
    flows: [0, 2],
  },
];

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

/** Record a segment's figures as `<segment>.*` measurements. */
function record(ctx: RowContext, seg: string, w: IncastWorld, r: IncastResult): void {
  for (const f of r.flows) {
    ctx.measure(`${seg}.${f.sender}.${f.port}.mbitPerSec`, f.mbitPerSec, "Mbit/s");
    ctx.measure(`${seg}.${f.sender}.${f.port}.usecPerIter`, f.usecPerIter, "us");
  }
  for (const [i, n] of w.nodes.entries()) {
    ctx.measure(`${seg}.${n.g.name}.pfcViolation`, r.sw[i].pfcViolation, "frames");
  }
  const gaveUp = r.flows.filter((f) => f.serverGaveUp).length;
  if (gaveUp) ctx.measure(`${seg}.serverGaveUp`, gaveUp, "flows");
  const rx = r.sw[0];
  ctx.measure(`${seg}.switch.queueFull`, rx.queueFull, "frames");
  ctx.measure(`${seg}.switch.ecnMarked`, rx.ecnMarked, "frames");
  ctx.measure(`${seg}.switch.pfcViolation`, sum(r.sw.map((s) => s.pfcViolation)), "frames");
  ctx.measure(`${seg}.switch.pauseSent`, sum(r.sw.map((s) => s.pauseSent)), "frames");
  ctx.measure(`${seg}.retransmits`, sum(r.hw.map((h) => h.retransmits ?? 0)), "packets");
  ctx.measure(`${seg}.npCnpSent`, r.hw[0].np_cnp_sent ?? 0, "packets");
  ctx.measure(
    `${seg}.rpCnpHandled`,
    sum(r.hw.slice(1).map((h) => h.rp_cnp_handled ?? 0)),
    "packets",
  );
  for (const [i, n] of w.nodes.entries()) {
    ctx.measure(
      `${seg}.${n.g.name}.rxPfcPauseUsec`,
      r.eth[i][`rx_pfc_prio${ROCE_PRIO}_pause_usec`] ?? 0,
      "us",
    );
  }
  if (r.tcp) ctx.measure(`${seg}.tcp.mbitPerSec`, r.tcp.mbitPerSec, "Mbit/s");
}

/**
 * The PFC frames on the wire agree with both sides' counters: every XOFF
 * and XON for the RoCE priority the capture holds was sent by the switch
 * (`pauseSent`/`resumeSent`) or by a host (`tx_pfc_prio3`), and each host
 * received (`rx_pfc_prio3`) exactly what the switch sent to its port.
 */
function pfcAgrees(ctx: RowContext, w: IncastWorld, r: IncastResult, cap?: PcapngCheckSummary) {
  const p = ROCE_PRIO;
  for (const [i, n] of w.nodes.entries()) {
    const sent = r.sw[i].pauseSent + r.sw[i].resumeSent;
    const got = r.eth[i][`rx_pfc_prio${p}`] ?? -1;
    ctx.expect(
      got === sent,
      `${n.g.name}: the switch sent ${sent} PFC frames for priority ${p} to port ` +
        `${w.ports[i]}, the host counted rx_pfc_prio${p} ${got}`,
    );
    const hostSent = r.eth[i][`tx_pfc_prio${p}`] ?? -1;
    const swGot = r.sw[i].pauseReceived + r.sw[i].resumeReceived;
    ctx.expect(
      hostSent === swGot,
      `${n.g.name}: sent tx_pfc_prio${p} ${hostSent}, the switch received ${swGot} on its port`,
    );
  }
  if (cap) {
    const onWire = cap.pfc.xoff[p] + cap.pfc.xon[p];
    const counted = sum(r.sw.map((s) => s.pauseSent + s.resumeSent)) +
      sum(r.eth.map((e) => e[`tx_pfc_prio${p}`] ?? 0));
    ctx.expect(
      onWire === counted,
      `the capture holds ${onWire} PFC frames for priority ${p}; the switch and hosts counted ${counted}`,
    );
  }
}

/** One segment: captured, checked by the wire oracle, its figures recorded. */
async function segment(
  ctx: RowContext,
  w: IncastWorld,
  mode: IncastMode,
): Promise<{ r: IncastResult; cap?: PcapngCheckSummary }> {
  let r: IncastResult | undefined;
  const cap = await captured(ctx, mode.name, async () => {
    r = await ctx.step(
      `${mode.name}: 2→1 incast (PFC ${mode.pfc ? "on" : "off"}, ECN ${mode.ecn ? "on" : "off"}${
        mode.ignorePfc ? `, ${mode.ignorePfc.map((i) => w.nodes[i].g.name)} ignores PFC` : ""
      }${mode.tcp ? ", TCP beside it" : ""}), every message checked`,
      () => runIncast(ctx, w, mode, volumeOf(mode, ctx.config.depth)),
    );
  });
  if (!r) throw new RowFailure(`${mode.name}: the incast left no result`);
  record(ctx, mode.name, w, r);
  ctx.log(`${mode.name}: ${JSON.stringify({ flows: r.flows, rx: r.sw[0], tcp: r.tcp })}`);
  return { r, cap };
}

/** A 2→1 RoCEv2 incast through a slow switch port: no control, PFC, ECN/DCQCN, PFC ignored. */
export const row: Row = {
  id: "lossless",
  title: "2→1 RoCEv2 incast through a slow port: drops, PFC (lossless), ECN/DCQCN, a PFC violator",
  needs: incastNeeds(),
  timeoutSec: 1500,
  modules: ["cnuas_net", "cnuas_ib"],
  async run(ctx) {
    const w = await setupIncast(ctx, IPS);
    const nodes = w.nodes;
    const p = ROCE_PRIO;
    try {
      // 1. no control: the queue overflows, go-back-N recovers
      const none = (await segment(ctx, w, MODES[0])).r;
      await ctx.step("none: drops at the switch, retransmits, everything completed", () => {
        ctx.expect(
          none.sw[0].queueFull > 0,
          `no queue_full at the receiver's port: ${JSON.stringify(none.sw[0])}`,
        );
        const rt = sum(none.hw.map((h) => h.retransmits ?? 0));
        ctx.expect(rt > 0, "no sender retransmitted");
        ctx.expect(sum(none.sw.map((s) => s.pauseSent)) === 0, "the switch paused with PFC off");
        return Promise.resolve();
      });

      // 2. PFC: lossless on the RoCE priority, TCP on priority 1 untouched
      const pfc = await segment(ctx, w, MODES[1]);
      await ctx.step(
        `pfc: no drop on priority ${p}, pauses sent and honoured, counters agree, TCP unpaused`,
        () => {
          const r = pfc.r;
          const drops = sum(r.sw.map((s) => s.queueFull + s.pfcViolation));
          // retransmits are not judged: a sender paused longer than its ACK
          // timeout resends what is still queued (duplicates, not losses)
          ctx.expect(drops === 0, `${drops} frames of priority ${p} dropped with PFC on`);
          for (const i of [1, 2]) {
            ctx.expect(r.sw[i].pauseSent > 0, `no XOFF to ${nodes[i].g.name}'s port`);
            const us = r.eth[i][`rx_pfc_prio${p}_pause_usec`] ?? 0;
            ctx.expect(us > 0, `${nodes[i].g.name} was never paused (pause_usec ${us})`);
          }
          pfcAgrees(ctx, w, r, pfc.cap);
          ctx.expect(
            sum(r.swTcp.map((s) => s.pauseSent)) === 0,
            "the switch paused priority 1 (TCP)",
          );
          ctx.expect(
            (r.eth[1].rx_pfc_prio1 ?? 0) === 0 && (r.eth[1].tx_tc0_packets ?? 0) > 0,
            `TCP's sender: rx_pfc_prio1 ${r.eth[1].rx_pfc_prio1}, tx_tc0_packets ${
              r.eth[1].tx_tc0_packets
            }`,
          );
          return Promise.resolve();
        },
      );

      // 3. ECN/DCQCN, no PFC: marks, CNPs, rates cut; fewer drops than with no control
      const ecnSeg = await segment(ctx, w, MODES[2]);
      const ecn = ecnSeg.r;
      await ctx.step(
        "ecn: CE marks → CNPs → rate cuts; fewer drops and retransmits than none",
        () => {
          ctx.expect(ecn.sw[0].ecnMarked > 0, "the switch marked nothing");
          // the capture is taken as frames enter the switch, before marking:
          // the senders' ECT(0) and the receiver's CNPs are on it, CE is not
          const census = ecnSeg.cap?.ecn;
          ctx.expect(
            (census?.ect0 ?? 0) > 0 && (ecnSeg.cap?.cnps ?? 0) > 0,
            `capture: ECN ${JSON.stringify(census)}, CNPs ${ecnSeg.cap?.cnps}`,
          );
          ctx.expect(
            (ecn.hw[0].np_ecn_marked_roce_packets ?? 0) > 0 && (ecn.hw[0].np_cnp_sent ?? 0) > 0,
            `receiver: np_ecn_marked_roce_packets ${ecn.hw[0].np_ecn_marked_roce_packets}, ` +
              `np_cnp_sent ${ecn.hw[0].np_cnp_sent}`,
          );
          for (const i of [1, 2]) {
            ctx.expect(
              (ecn.hw[i].rp_cnp_handled ?? 0) > 0,
              `${nodes[i].g.name}: rp_cnp_handled ${ecn.hw[i].rp_cnp_handled}`,
            );
          }
          ctx.expect(
            ecn.sw[0].queueFull < none.sw[0].queueFull,
            `queue_full with ECN ${ecn.sw[0].queueFull}, without control ${none.sw[0].queueFull}`,
          );
          const rt = (r: IncastResult) => sum(r.hw.map((h) => h.retransmits ?? 0));
          ctx.expect(rt(ecn) < rt(none), `retransmits with ECN ${rt(ecn)}, without ${rt(none)}`);
          const rates = [1, 2].map((i) =>
            sum(ecn.flows.filter((f) => f.sender === nodes[i].g.name).map((f) => f.mbitPerSec))
          );
          const fairness = Math.min(...rates) / Math.max(...rates);
          ctx.measure("ecn.fairness", fairness, "ratio");
          ctx.expect(
            fairness >= ECN_FAIRNESS_MIN,
            `the senders' rates ${rates.join(", ")} Mbit/s: ratio ${
              fairness.toFixed(2)
            } < ${ECN_FAIRNESS_MIN}`,
          );
          return Promise.resolve();
        },
      );

      // 4. a host that ignores PFC: the switch's accounting catches it
      const bad = (await segment(ctx, w, MODES[3])).r;
      await ctx.step(
        `pfc-ignored: ${nodes[2].g.name}'s frames into the full queue are pfc_violation`,
        () => {
          ctx.expect(bad.sw[2].pauseSent > 0, `no XOFF to ${nodes[2].g.name}`);
          ctx.expect(
            (bad.eth[2][`rx_pfc_prio${p}_pause_usec`] ?? 0) === 0,
            `${nodes[2].g.name} paused although it ignores PFC`,
          );
          ctx.expect(bad.sw[2].pfcViolation > 0, `no pfc_violation on ${nodes[2].g.name}'s port`);
          // the XOFFs go to the ports that fed the queue: g1 sent nothing
          ctx.expect(
            bad.sw[1].pauseSent === 0 && bad.sw[1].pfcViolation === 0,
            `${nodes[1].g.name} sent nothing and got ${bad.sw[1].pauseSent} XOFFs, ` +
              `${bad.sw[1].pfcViolation} violations`,
          );
          return Promise.resolve();
        },
      );
    } finally {
      await clearMode(ctx, w).catch((e) =>
        ctx.log(`restoring the fabric: ${(e as Error).message}`)
      );
    }
  },
};
