/**
 * Row `fuzz-ib`: the wire fuzz of issue 20 on a native InfiniBand port
 * (./fuzz_wire.ts with native IB framing: LRH, VCRC, LIDs). cnuas_ib runs
 * with `link_layer=ib`, the switch's SM gives the ports their LIDs, IPoIB
 * carries the live pingpong's rendezvous, and the switch injects generated
 * frames at the first guest's port: the link-layer faults (VCRC, LVer,
 * LNH, PktLen, SLID, GRH, addressing) and the transport faults of the RoCEv2
 * row, each counted as docs/devices.md ("cnuas_ib: receive drop reasons")
 * says. Afterwards the kernel log is clean.
 *
 * `CNUAS_HIL_WIRE_FUZZ_SEED=<seed>` replays a run, as in row `fuzz`.
 */
import { type Row, RowFailure } from "../../harness/matrix/row.ts";
import { rdmaPairNeeds } from "../../harness/matrix/needs.ts";
import { setupIbNodes, startIpoib } from "../../harness/guest/ib_pair.ts";
import { wireFuzzSteps } from "./fuzz_wire.ts";
import { fuzzDmesgFindings } from "./fuzz.ts";

/** IPoIB addresses of g0 (the target) and g1 (its live peer). */
const IPS = ["10.76.0.1", "10.76.0.2"];

/** The row. */
export const row: Row = {
  id: "fuzz-ib",
  title:
    "wire fuzz of cnuas_ib on native InfiniBand: link and transport faults counted as predicted",
  needs: rdmaPairNeeds("ib", "guestprogs"),
  sharesCores: "it judges counters against the model, read once the guest is quiet",
  timeoutSec: 1200,
  modules: ["cnuas_net", "cnuas_ib"],
  async run(ctx) {
    if (!ctx.fabric) throw new RowFailure("fuzz-ib needs the ib fabric and got none");
    const nodes = await setupIbNodes(ctx, ctx.fabric, ctx.guests, IPS);
    // IPv6 off on IPoIB: a guest's IPv6 multicast (MLD reports to ff02::16, router
    // solicitations to ff02::2) goes to groups both guests' ipoib joined only to send to, so the
    // switch forwards it to the target, which attached no QP to them: rcvd_mcast_no_member beside
    // the model's frames (the first run: 7 over). ARP goes to the broadcast group, which the
    // target's ipoib attached to (rcvd_mcast_pkts: liveFlow.mcastDelivered); an IPv4 group a
    // guest daemon joined would bring IGMP reports (224.0.0.22) back in the same way.
    await Promise.all(nodes.map((n) =>
      ctx.step(
        `${n.g.name}: IPoIB up with ${n.ip}, no IPv6`,
        () => startIpoib(n, { ipv6: false }),
      )
    ));
    await wireFuzzSteps(ctx, ["ib", nodes[0], nodes[1]]);
    await ctx.step("kernel logs clean (the dmesg guard, and no call trace)", async () => {
      let oops = 0;
      for (const n of nodes) {
        const bad = fuzzDmesgFindings(await n.g.dmesg());
        oops += bad.length;
        ctx.expect(bad.length === 0, `${n.g.name} dmesg: ${bad.slice(0, 5).join(" | ")}`);
      }
      ctx.measure("oops", oops, "lines");
    });
  },
};
