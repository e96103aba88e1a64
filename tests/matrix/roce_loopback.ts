import type { Row, RowContext } from "../../harness/matrix/row.ts";
import { captured } from "../../harness/oracle/wire_capture.ts";
import { runPair } from "../../harness/guest/cnuas_ib.ts";
import {
  counterDelta,
  expectBothExit0,
  hwCounters,
  mckeyMemberOk,
  perftestRowOf,
  pingpongResult,
  type RoceNode,
  setupRoceNodes,
  startMckeyMembers,
} from "../../harness/guest/roce_pair.ts";

/** The guest's address; every tool's client connects to it, from the same guest. */
const IP = "10.77.0.1";

/** ibv_rc_pingpong sizes against the own GID. */
export const LOOPBACK_RC_SIZES = [1, 4096, 65536];
/** ibv_ud_pingpong size (≤ the 1024-byte path MTU of a 1500-byte netdev). */
export const LOOPBACK_UD_SIZE = 1024;
/** Iterations of each pingpong. */
export const LOOPBACK_ITERS = 200;
/** perftest programs run against the own GID. */
export const LOOPBACK_PERFTESTS = ["ib_send_bw", "ib_write_bw", "ib_read_bw"];

/** Local multicast: members on the sending guest, and the datagrams sent. */
export const LOOPBACK_MCAST = { group: "239.7.7.8", members: 2, messages: 20 };

/**
 * mckey members and the mckey sender on the same guest: each member gets
 * every datagram through the device's loopback copy (the switch never
 * reflects a frame to its sender).
 */
async function localMulticast(ctx: RowContext, n: RoceNode): Promise<void> {
  const { group, members, messages } = LOOPBACK_MCAST;
  await ctx.step(
    `mckey: ${members} members on the sending guest get ${messages} datagrams`,
    async () => {
      const m = await startMckeyMembers(n, group, members, messages);
      const snd = await n.g.run(`timeout 120 mckey -m ${group} -b ${n.ip} -s -C ${messages}`, {
        timeoutSec: 150,
      });
      ctx.expect(snd.code === 0, `mckey sender exit ${snd.code}: ${snd.stdout.slice(-800)}`);
      for (const r of await m.wait()) {
        ctx.expect(mckeyMemberOk(r), `mckey member ${r.tag}: exit ${r.code}: ${r.out.slice(-600)}`);
      }
    },
  );
}

/** Server and client on the same guest, both against its own GID; fail unless both exit 0. */
async function self(what: string, n: RoceNode, cmd: string, port: number) {
  return expectBothExit0(what, await runPair(n.g, cmd, n.g, `${cmd} ${n.ip}`, port, 300));
}

async function pingpongs(ctx: RowContext, n: RoceNode): Promise<void> {
  for (const size of LOOPBACK_RC_SIZES) {
    const flags = `-s ${size} -n ${LOOPBACK_ITERS} --chk`;
    await ctx.step(`ibv_rc_pingpong ${flags} to the own GID`, async () => {
      const what = `loopback ibv_rc_pingpong ${flags}`;
      const cmd = `ibv_rc_pingpong -d ${n.dev.ibdev} -g ${n.gid} -p 18515 ${flags}`;
      const f = pingpongResult(what, await self(what, n, cmd, 18515));
      ctx.measure(`rc.${size}.usecPerIter`, f.usecPerIter, "us");
    });
  }
  const flags = `-s ${LOOPBACK_UD_SIZE} -n ${LOOPBACK_ITERS} --chk`;
  await ctx.step(`ibv_ud_pingpong ${flags} to the own GID`, async () => {
    const what = `loopback ibv_ud_pingpong ${flags}`;
    const cmd = `ibv_ud_pingpong -d ${n.dev.ibdev} -g ${n.gid} -p 18516 ${flags}`;
    const f = pingpongResult(what, await self(what, n, cmd, 18516));
    ctx.measure(`ud.${LOOPBACK_UD_SIZE}.usecPerIter`, f.usecPerIter, "us");
  });
}

async function perftests(ctx: RowContext, n: RoceNode): Promise<void> {
  for (const [i, prog] of LOOPBACK_PERFTESTS.entries()) {
    await ctx.step(`${prog} to the own GID`, async () => {
      const port = 18600 + i;
      const cmd = `${prog} -d ${n.dev.ibdev} -x ${n.gid} -p ${port} -F -s 65536 -n 500`;
      const r = await self(prog, n, cmd, port);
      // both ends exited 0 (self), so the transfers completed
      const row = perftestRowOf(ctx, prog, prog, r);
      if (row === undefined) return;
      const bw = row["BW average[MiB/sec]"] ?? row["BW average[MB/sec]"];
      ctx.expect(bw !== undefined && bw > 0, `${prog}: no bandwidth figure: ${r.clientOut}`);
      ctx.measure(`perftest.${prog}.bwAverage`, bw!, "MiB/s");
    });
  }
}

/**
 * RC, UD and multicast to the device's own GID (the HiCAIN design's single-VM loopback):
 * delivered inside cnuas_ib like any RoCE NIC does, never on the wire — the
 * switch's capture over the whole run must hold no RDMA frame — with the
 * same completion semantics and data (`--chk`) as between two hosts.
 */
export const row: Row = {
  id: "roce-loopback",
  title: "RC, UD and multicast to the own GID: pingpongs (--chk), perftest, mckey",
  needs: {
    guests: 1,
    fabric: "eth",
    builds: ["qemu", "image", "provider"],
    devices: { vnic: 1 },
  },
  sharesCores:
    "it judges exit codes, data (--chk), delivery and counters; perftest's bandwidth is recorded, " +
    "and a run whose clock calibration failed on busy cores records none",
  timeoutSec: 600,
  modules: ["cnuas_net", "cnuas_ib"],
  async run(ctx) {
    const [n] = await setupRoceNodes(ctx, [IP]);
    const before = await hwCounters(n);
    await captured(ctx, "loopback", async () => {
      await pingpongs(ctx, n);
      await perftests(ctx, n);
    }, { kind: "no-rdma" });
    // the multicast datagrams also go to the wire (for members elsewhere): checked as usual
    await captured(ctx, "multicast", () => localMulticast(ctx, n));
    await ctx.step("the frames went round inside the device (loopback_pkts)", async () => {
      const d = counterDelta(before, await hwCounters(n));
      ctx.measure("loopback_pkts", d.loopback_pkts ?? 0, "frames");
      // every unicast frame sent went round; each multicast datagram went to
      // the wire (sent_pkts) and once round to the local members
      const { messages } = LOOPBACK_MCAST;
      ctx.expect(
        (d.loopback_pkts ?? 0) > 0 && d.loopback_pkts === d.sent_pkts,
        `loopback_pkts rose by ${d.loopback_pkts}, sent_pkts by ${d.sent_pkts}: ` +
          `every frame sent should have been looped back (the ${messages} multicast ones too)`,
      );
    });
  },
};
