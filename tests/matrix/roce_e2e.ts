import { type Row, type RowContext, RowFailure } from "../../harness/matrix/row.ts";
import { rdmaPairNeeds } from "../../harness/matrix/needs.ts";
import { captured } from "../../harness/oracle/wire_capture.ts";
import { buildRoceFrame, OP } from "../../harness/models/rdma/mod.ts";
import {
  nodeMac,
  type RoceNode as Node,
  setupRoceNodes,
  switchPortOf,
} from "../../harness/guest/roce_pair.ts";
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
} from "../../harness/guest/rdma_e2e.ts";

/** Addresses of g0 (server side) and g1 on the fabric. */
const IPS = ["10.77.0.1", "10.77.0.2"];

/** Set the netdev MTU of both guests (the port's active MTU follows it). */
async function setMtu(nodes: Node[], mtu: number): Promise<void> {
  for (const n of nodes) {
    await n.g.run(`ip link set dev ${n.dev.iface} mtu ${mtu}`, { check: true, timeoutSec: 30 });
  }
}

/** A MAC address "aa:bb:..." as a 48-bit number. */
function macNumber(mac: string): number {
  return parseInt(mac.replaceAll(":", ""), 16);
}

/** An IPv4 address "a.b.c.d" as a 32-bit number. */
function ipNumber(ip: string): number {
  return ip.split(".").reduce((n, o) => n * 256 + Number(o), 0);
}

/** RoCEv2 frames from g0's addresses to g1's, sent out of the port the switch learned g1's MAC on. */
async function roceInjection(ctx: RowContext, [src, dst]: Node[]): Promise<IcrcInjection> {
  const [srcMac, dstMac] = [await nodeMac(src), await nodeMac(dst)];
  const port = await switchPortOf(ctx, dst);
  return {
    port,
    frame: (psn) =>
      buildRoceFrame({
        srcMac: macNumber(srcMac),
        dstMac: macNumber(dstMac),
        srcIp: ipNumber(src.ip),
        dstIp: ipNumber(dst.ip),
        bth: { opcode: OP.RC_SEND_ONLY, destQp: NO_SUCH_QP, psn },
        payload: new Uint8Array(32).fill(psn & 0xff),
      }),
    breakIcrc: (f, i) => {
      f[f.length - 1 - (i % 4)] ^= 1 << (i % 8); // one bit of the ICRC
    },
  };
}

/** Unmodified RDMA tools over RoCEv2 between two guests, every frame checked. */
export const row: Row = {
  id: "roce-e2e",
  title: "unmodified RDMA tools over RoCEv2: pingpongs, perftest, rping, the examples",
  needs: rdmaPairNeeds("eth", "guestprogs"),
  sharesCores:
    "it judges data (--chk, -V) and counts; the tools' rates and latencies are recorded, not " +
    "judged",
  timeoutSec: 1200,
  modules: ["cnuas_net", "cnuas_ib"],
  async run(ctx) {
    if (!ctx.fabric) throw new RowFailure("roce-e2e needs the eth fabric and got none");
    const nodes = await setupRoceNodes(ctx, IPS);
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
    // larger path MTUs need a larger netdev MTU (the port's active MTU follows it)
    await setMtu(nodes, 9000);
    await captured(ctx, "pingpong-mtu", async () => {
      for (const mtu of [2048, 4096]) {
        await pingpong(ctx, nodes, { size: 65536, iters: 100, events: false, mtu });
      }
    });
    await pingpong1MiB(ctx, nodes);
    await setMtu(nodes, 1500);
    await captured(ctx, "perftest", () => perftests(ctx, nodes));
    await captured(ctx, "examples-security-rping", async () => {
      await examples(ctx, nodes, ["roce_send_recv", "roce_rdma_write"]);
      await security(ctx, nodes);
      await rping(ctx, nodes);
    });
    await captured(ctx, "loss", () => lossRecovery(ctx, nodes));
    await icrc(ctx, nodes, (c) => roceInjection(c, nodes));
    await recordPortCounters(ctx, nodes);
  },
};
