import { pingEach } from "../../harness/guest/ping.ts";
import { type Row, type RowContext, RowFailure } from "../../harness/matrix/row.ts";
import { rdmaGpuPairNeeds } from "../../harness/matrix/needs.ts";
import { captured } from "../../harness/oracle/wire_capture.ts";
import { buildIbFrame, ibVcrc, OP, writeVcrc } from "../../harness/models/rdma/mod.ts";
import { type IbNode, setupIbNodes, startIpoib } from "../../harness/guest/ib_pair.ts";
import { hwCounters } from "../../harness/guest/roce_pair.ts";
import { peermem, withPeerGpus } from "../../harness/guest/peermem.ts";
import {
  examples,
  icrc,
  type IcrcInjection,
  lossRecovery,
  NO_SUCH_QP,
  perftests,
  pingpong,
  pingpong1MiB,
  PINGPONG_ITERS,
  PINGPONG_SIZES,
  recordPortCounters,
  rping,
  security,
  udPingpong,
} from "../../harness/guest/rdma_e2e.ts";

/**
 * IPoIB addresses of g0 (server side) and g1: the tools' TCP side channel
 * and rdma_cm's addresses (the vnic's Ethernet interface cannot send in IB mode).
 */
const IPS = ["10.78.0.1", "10.78.0.2"];

/** ibv_ud_pingpong message sizes: up to the port's MTU (4096, the SM's NeighborMTU). */
export const UD_PINGPONG_SIZES = [64, 2048, 4096];

/** Frames with one VCRC bit flipped the VCRC step sends to g1. */
export const VCRC_FRAMES = 3;

/** A frame from g0's LID to g1's, SEND_ONLY to no QP, with a correct ICRC and VCRC. */
function ibFrame(src: IbNode, dst: IbNode, psn: number): Uint8Array {
  return buildIbFrame({
    lrh: { dlid: dst.lid, slid: src.lid },
    bth: { opcode: OP.RC_SEND_ONLY, destQp: NO_SUCH_QP, psn },
    payload: new Uint8Array(32).fill(psn & 0xff),
  });
}

/** Native IB frames to g1, sent out of its switch port; a bad ICRC keeps a good VCRC. */
function ibInjection([src, dst]: IbNode[]): IcrcInjection {
  return {
    port: dst.swPort,
    frame: (psn) => ibFrame(src, dst, psn),
    breakIcrc: (f, i) => {
      const icrcEnd = f.length - 2; // the VCRC follows the ICRC
      f[icrcEnd - 1 - (i % 4)] ^= 1 << (i % 8); // one bit of the ICRC
      writeVcrc(f, icrcEnd, ibVcrc(f, icrcEnd)); // the link-level check still passes
    },
  };
}

/**
 * VCRC: frames with one bit of the VCRC flipped are sent to g1 from its
 * switch port (outside any capture, as the switch would have dropped them
 * had they come in): each is counted as rcvd_vcrc_err and goes no further.
 */
async function vcrc(ctx: RowContext, [src, dst]: IbNode[]): Promise<void> {
  await ctx.step(`VCRC: ${VCRC_FRAMES} frames with a bad VCRC counted and dropped`, async () => {
    const before = await hwCounters(dst);
    for (let i = 0; i < VCRC_FRAMES; i++) {
      const f = ibFrame(src, dst, 300 + i);
      f[f.length - 1 - (i % 2)] ^= 1 << (i % 8);
      await ctx.fabric!.inject(dst.swPort, f, "egress");
    }
    let d = { vcrc: 0, icrc: 0, drop: 0 };
    for (let t = 0; t < 40; t++) {
      const after = await hwCounters(dst);
      const delta = (k: string) => (after[k] ?? 0) - (before[k] ?? 0);
      d = { vcrc: delta("rcvd_vcrc_err"), icrc: delta("rcvd_icrc_err"), drop: delta("rcvd_drop") };
      if (d.vcrc >= VCRC_FRAMES) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    ctx.measure("vcrc.rcvd_vcrc_err", d.vcrc, "count");
    ctx.expect(d.vcrc === VCRC_FRAMES, `rcvd_vcrc_err rose by ${d.vcrc}, want ${VCRC_FRAMES}`);
    ctx.expect(
      d.icrc === 0 && d.drop === 0,
      `frames with a bad VCRC went further: rcvd_icrc_err +${d.icrc}, rcvd_drop +${d.drop}`,
    );
  });
}

/** IPoIB: each guest pings the other over ib0 (ARP on the broadcast group, SA path records). */
async function ipoibPing(ctx: RowContext, nodes: IbNode[]): Promise<void> {
  for (const [from, to] of [[nodes[1], nodes[0]], [nodes[0], nodes[1]]]) {
    await ctx.step(`IPoIB: ${from.g.name} pings ${to.ip}`, async () => {
      const r = await pingEach(from.g, to.ip, { count: 5 });
      ctx.expect(r.ok, `over IPoIB: ${r.why}`);
      if (r.rttAvgMs !== undefined) {
        ctx.measure(`ipoib.ping.${from.g.name}.rttAvg`, r.rttAvgMs, "ms");
      }
    });
  }
}

/** Unmodified RDMA tools over native InfiniBand between two guests, every frame checked. */
export const row: Row = {
  id: "ib-e2e",
  title: "unmodified RDMA tools over the native InfiniBand link layer",
  // each guest's cnuasgpu is for the peermem segment
  needs: rdmaGpuPairNeeds("ib"),
  sharesCores: "it judges data (--chk, -V), counts and each ping's reply; the tools' rates and " +
    "latencies are recorded, not judged",
  timeoutSec: 1200,
  modules: ["cnuas_net", "cnuas_ib", "cnuasgpu"],
  async run(ctx) {
    if (!ctx.fabric) throw new RowFailure("ib-e2e needs the ib fabric and got none");
    const nodes = await setupIbNodes(ctx, ctx.fabric, ctx.guests, IPS);
    await Promise.all(nodes.map(async (n) => {
      const iface = await ctx.step(`${n.g.name}: IPoIB up with ${n.ip}`, () => startIpoib(n));
      ctx.log(`${n.g.name}: IPoIB on ${iface}`);
    }));
    await captured(ctx, "ipoib", () => ipoibPing(ctx, nodes));
    const small = PINGPONG_SIZES.filter((n) => n < 1048576);
    await captured(ctx, "pingpong", async () => {
      for (const events of [false, true]) {
        for (const size of small) {
          await pingpong(ctx, nodes, {
            size,
            iters: PINGPONG_ITERS[ctx.config.depth],
            events,
            mtu: 1024,
          });
        }
      }
      // segmentation at the smallest path MTU
      await pingpong(ctx, nodes, { size: 65536, iters: 100, events: false, mtu: 256 });
    });
    // the port's MTU is the SM's NeighborMTU (4096): no netdev to resize
    await captured(ctx, "pingpong-mtu", async () => {
      for (const mtu of [2048, 4096]) {
        await pingpong(ctx, nodes, { size: 65536, iters: 100, events: false, mtu });
      }
    });
    await captured(ctx, "ud-pingpong", async () => {
      for (const size of UD_PINGPONG_SIZES) await udPingpong(ctx, nodes, size);
    });
    await captured(ctx, "perftest", () => perftests(ctx, nodes));
    await captured(ctx, "examples-security-rping", async () => {
      await examples(ctx, nodes, ["ib_send_recv"]);
      // roce_security connects by LID on a native IB port (rc_pair.h rc_peer_av)
      await security(ctx, nodes);
      await rping(ctx, nodes);
    });
    // DMA-BUF MRs of accelerator memory, the peers addressed by LID (no GRH)
    const gpuNodes = await withPeerGpus(ctx, nodes);
    await captured(ctx, "peermem", () => peermem(ctx, gpuNodes));
    await captured(ctx, "loss", () => lossRecovery(ctx, nodes));
    await icrc(ctx, nodes, () => Promise.resolve(ibInjection(nodes)));
    await vcrc(ctx, nodes);
    // last: the biggest captures
    await pingpong1MiB(ctx, nodes);
    await recordPortCounters(ctx, nodes);
  },
};
