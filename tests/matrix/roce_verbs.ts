import { type Row, type RowContext, RowFailure } from "../../harness/matrix/row.ts";
import { rdmaPairNeeds } from "../../harness/matrix/needs.ts";
import { captured } from "../../harness/oracle/wire_capture.ts";
import {
  parseRstream,
  rpingDataErrors,
  rstreamDifferences,
  type RstreamResult,
  type RstreamRun,
  rstreamSize,
  runPair,
} from "../../harness/guest/cnuas_ib.ts";
import { shq } from "../../harness/guest/shell.ts";
import { GUEST_PATHS } from "../../harness/vm/types.ts";
import type { Depth } from "../../harness/config.ts";
import { perftestVolume, RECV_PINGPONG_VOLUME } from "../../harness/guest/rdma_e2e.ts";
import {
  counterDelta,
  hwCounters,
  mckeyMemberOk,
  measurePerftest,
  pair,
  pairBoth,
  pingpongResult,
  type RoceNode as Node,
  setupRoceNodes,
  startMckeyMembers,
} from "../../harness/guest/roce_pair.ts";

/** Addresses of g0 (server side) and g1 on the fabric. */
const IPS = ["10.77.0.3", "10.77.0.4"];

/** Netdev MTU of the row: the port's active MTU is then 4096. */
const NETDEV_MTU = 4200;

/** ibv_ud_pingpong message sizes (each ≤ the 4096-byte path MTU). */
export const UD_SIZES = [1024, 4096];
/** ibv_srq_pingpong runs: queue pairs sharing the SRQ, message size. */
export const SRQ_RUNS = [{ qps: 1, size: 4096 }, { qps: 16, size: 4096 }, { qps: 4, size: 65536 }];

/** perftest over UD and over an SRQ: program and its extra flags. */
export const VERBS_PERFTESTS: [string, string][] = [
  ["ib_send_bw", "-c UD -s 4096"],
  ["ib_send_lat", "-c UD -s 4096"],
  ["ib_send_bw", "--use-srq"],
  ["ib_send_lat", "--use-srq"],
];

/** The multicast group mckey joins, the members on g1 and the datagrams sent. */
export const MCAST = { group: "239.7.7.7", members: 2, messages: 50 };

/**
 * rping -V message sizes. Its usage says 23 to 65536, but trixie's rping
 * refuses 65536 ("Invalid size"): its largest is 65535.
 */
export const RPING_SIZES = [64, 4096, 65535];

/** ucmatose connections. */
export const UCMATOSE_CONNECTIONS = 4;

/**
 * The rstream run (-T verify): 500 transfers of 4 KiB each way, one per
 * iteration, so its data check covers every transfer (it checks the last
 * of each iteration only).
 */
export const RSTREAM_RUN: RstreamRun = { size: 4096, count: 1, iters: 500 };

/**
 * riostream runs (-T verify) by depth, one transfer per iteration as for
 * rstream. 4 KiB is one packet at the row's path MTU, 64 KiB sixteen. The
 * deep depth's 1,000 and 200 took 8.8 and 4.1 s beside another row under TCG.
 */
export const RIOSTREAM_RUNS: Record<Depth, RstreamRun[]> = {
  quick: [
    { size: 4096, count: 1, iters: 300 },
    { size: 65536, count: 1, iters: 100 },
  ],
  deep: [
    { size: 4096, count: 1, iters: 1000 },
    { size: 65536, count: 1, iters: 200 },
  ],
};

async function udPingpongs(ctx: RowContext, nodes: Node[]): Promise<void> {
  const [s, c] = nodes;
  for (const size of UD_SIZES) {
    const flags = `-s ${size} ${RECV_PINGPONG_VOLUME[ctx.config.depth]} --chk`;
    await ctx.step(`ibv_ud_pingpong ${flags}`, async () => {
      const what = `ibv_ud_pingpong ${flags}`;
      const args = (n: Node) => `ibv_ud_pingpong -d ${n.dev.ibdev} -g ${n.gid} -p 18520 ${flags}`;
      const f = pingpongResult(
        what,
        await pairBoth(what, nodes, args(s), `${args(c)} ${s.ip}`, 18520),
      );
      ctx.measure(`ud.${size}.usecPerIter`, f.usecPerIter, "us");
    });
  }
}

/**
 * drivers/test/ud_checks: what ibv_ud_pingpong does not look at — the GRH
 * of a UD receive (its IPv4 header and addresses), src_qp, Q_Key drops and
 * rcvd_qkey_err, a send above the path MTU, and multicast attach/detach.
 */
async function udChecks(ctx: RowContext, nodes: Node[]): Promise<void> {
  const [s, c] = nodes;
  await ctx.step("ud_checks: GRH, Q_Key drops, above the path MTU, multicast detach", async () => {
    const bin = `${GUEST_PATHS.bin}/ud_checks`;
    const r = await pairBoth(
      "ud_checks",
      nodes,
      `${bin} -d ${s.dev.ibdev} -g ${s.gid} -p 18523 -s`,
      `${bin} -d ${c.dev.ibdev} -g ${c.gid} -p 18523 ${s.ip}`,
      18523,
    );
    for (const [side, out] of [["server", r.serverOut], ["client", r.clientOut]]) {
      const bad = out.split("\n").filter((l) => /FAIL/.test(l));
      ctx.expect(bad.length === 0 && /^PASS$/m.test(out), `ud_checks ${side}: ${bad.join("; ")}`);
    }
  });
}

/**
 * ibv_srq_pingpong: several RC QPs receiving through one SRQ. Its --chk
 * only looks at the first byte of each page (rdma-core's srq_pingpong.c),
 * so drivers/test/srq_limit's peer test, which checks every receive's
 * wr_id, order and bytes, runs after it.
 */
async function srq(ctx: RowContext, nodes: Node[]): Promise<void> {
  const [s, c] = nodes;
  for (const { qps, size } of SRQ_RUNS) {
    const flags = `-q ${qps} -s ${size} ${RECV_PINGPONG_VOLUME[ctx.config.depth]} --chk`;
    await ctx.step(`ibv_srq_pingpong ${flags}`, async () => {
      const what = `ibv_srq_pingpong ${flags}`;
      const args = (n: Node) => `ibv_srq_pingpong -d ${n.dev.ibdev} -g ${n.gid} -p 18521 ${flags}`;
      const f = pingpongResult(
        what,
        await pairBoth(what, nodes, args(s), `${args(c)} ${s.ip}`, 18521),
      );
      ctx.measure(`srq.q${qps}.${size}.usecPerIter`, f.usecPerIter, "us");
    });
  }
  await ctx.step(
    "srq_limit: SRQ limits, error paths, the limit event, LAST_WQE_REACHED",
    async () => {
      const bin = `${GUEST_PATHS.bin}/srq_limit`;
      const r = await pairBoth(
        "srq_limit",
        nodes,
        `${bin} -d ${s.dev.ibdev} -g ${s.gid} -p 18522 -s`,
        `${bin} -d ${c.dev.ibdev} -g ${c.gid} -p 18522 ${s.ip}`,
        18522,
      );
      for (const [side, out] of [["server", r.serverOut], ["client", r.clientOut]]) {
        const bad = out.split("\n").filter((l) => /FAIL/.test(l));
        ctx.expect(bad.length === 0 && /^PASS$/m.test(out), `srq_limit ${side}: ${bad.join("; ")}`);
      }
    },
  );
}

async function perftests(ctx: RowContext, nodes: Node[]): Promise<void> {
  for (const [i, [prog, extra]] of VERBS_PERFTESTS.entries()) {
    await measurePerftest(
      ctx,
      nodes,
      prog,
      18610 + i,
      extra,
      perftestVolume(ctx.config.depth, prog),
    );
  }
}

/**
 * mckey: g0 sends `messages` UD datagrams to a multicast group; `members`
 * mckey processes on g1 join it first (one UD QP each, attached) and must
 * each receive every datagram. Then, with every member gone (detached),
 * g0 sends again: g1 must deliver none of it (rcvd_mcast_pkts unchanged,
 * each datagram dropped for want of a member).
 */
async function multicast(ctx: RowContext, nodes: Node[]): Promise<void> {
  const [s, c] = nodes;
  const { group, members, messages } = MCAST;
  const send = `mckey -m ${group} -b ${s.ip} -s -C ${messages}`;
  await ctx.step(
    `mckey: ${members} members on ${c.g.name} receive ${messages} datagrams to ${group}`,
    async () => {
      const before = await hwCounters(c);
      const members_ = await startMckeyMembers(c, group, members, messages);
      const snd = await s.g.run(`timeout 120 ${send}`, { timeoutSec: 150 });
      ctx.expect(snd.code === 0, `mckey sender exit ${snd.code}: ${snd.stdout.slice(-800)}`);
      for (const m of await members_.wait()) {
        ctx.expect(mckeyMemberOk(m), `mckey member ${m.tag}: exit ${m.code}: ${m.out.slice(-600)}`);
      }
      const d = counterDelta(before, await hwCounters(c));
      ctx.measure("mcast.rcvd_mcast_pkts", d.rcvd_mcast_pkts ?? 0, "frames");
      ctx.expect(
        d.rcvd_mcast_pkts === messages,
        `${c.g.name}: rcvd_mcast_pkts rose by ${d.rcvd_mcast_pkts}, want ${messages}`,
      );
    },
  );
  await ctx.step(
    "after every member left, the group's datagrams are delivered to none",
    async () => {
      const before = await hwCounters(c);
      const snd = await s.g.run(`timeout 120 ${send}`, { timeoutSec: 150 });
      ctx.expect(snd.code === 0, `mckey sender exit ${snd.code}: ${snd.stdout.slice(-800)}`);
      let d: Record<string, number> = {};
      for (let t = 0; t < 40; t++) {
        d = counterDelta(before, await hwCounters(c));
        if ((d.rcvd_drop ?? 0) >= messages) break;
        await new Promise((r) => setTimeout(r, 250));
      }
      // docs/devices.md, "cnuas_ib: receive drop reasons", rule 3d
      ctx.expect(
        (d.rcvd_mcast_pkts ?? 0) === 0 && d.rcvd_drop === messages &&
          d.rcvd_mcast_no_member === messages,
        `${c.g.name}: rcvd_mcast_pkts +${d.rcvd_mcast_pkts}, rcvd_drop +${d.rcvd_drop}, ` +
          `rcvd_mcast_no_member +${d.rcvd_mcast_no_member}; want +0, +${messages} and ` +
          `+${messages} (no member left)`,
      );
    },
  );
}

/** The RDMA CM tools: UD via SIDR, several RC connections, the rdma_cm examples, rsockets. */
async function rdmaCm(ctx: RowContext, nodes: Node[]): Promise<void> {
  const [s] = nodes;
  const cm = (port: number) => ({ rdmaCm: port });
  await ctx.step("udaddy (UD QPs through SIDR on the GSI QP)", async () => {
    // udaddy's -p is the port space, not a port: it listens on its own 7174
    const out = await pair("udaddy", nodes, "udaddy", `udaddy -s ${s.ip}`, cm(7174));
    ctx.expect(/return status 0/.test(out), `udaddy: ${out.slice(-600)}`);
  });
  await ctx.step(`ucmatose -c ${UCMATOSE_CONNECTIONS} (RC connections at once)`, async () => {
    const n = UCMATOSE_CONNECTIONS;
    const out = await pair(
      "ucmatose",
      nodes,
      `ucmatose -p 18531 -c ${n} -C 20`,
      `ucmatose -s ${s.ip} -p 18531 -c ${n} -C 20`,
      cm(18531),
    );
    ctx.expect(/return status 0/.test(out), `ucmatose: ${out.slice(-600)}`);
  });
  await ctx.step("rdma_server / rdma_client", async () => {
    const out = await pair(
      "rdma_client",
      nodes,
      "rdma_server -p 18532",
      `rdma_client -s ${s.ip} -p 18532`,
      cm(18532),
    );
    ctx.expect(/rdma_client: end 0/.test(out), `rdma_client: ${out.slice(-600)}`);
  });
  for (const size of RPING_SIZES) {
    await ctx.step(`rping -V -S ${size}`, async () => {
      const out = await pair(
        `rping -S ${size}`,
        nodes,
        `rping -s -a ${s.ip} -p 18533 -C 10 -S ${size} -v -V`,
        `rping -c -a ${s.ip} -p 18533 -C 10 -S ${size} -v -V`,
        cm(18533),
      );
      const bad = rpingDataErrors(out);
      ctx.expect(bad.length === 0, `rping -V found wrong data: ${bad.join("; ")}`);
      const pings = out.split("\n").filter((l) => /ping data:/.test(l)).length;
      ctx.expect(pings === 10, `rping -S ${size} printed ${pings} of 10 pings`);
    });
  }
  await ctx.step("rstream -T verify over rsockets (RDMA CM + RC underneath)", async () => {
    const r = await rsocketsPair(ctx, nodes, "rstream", "-T v", RSTREAM_RUN, 18534);
    ctx.measure("rstream.4k.gbitPerSec", r.gbitPerSec, "Gbit/s");
  });
  for (const [i, run] of RIOSTREAM_RUNS[ctx.config.depth].entries()) {
    const size = rstreamSize(run.size);
    await ctx.step(`riostream -S ${run.size} -I ${run.iters} -T verify (RDMA writes)`, async () => {
      const r = await rsocketsPair(ctx, nodes, "riostream", "-T v", run, 18535 + i);
      ctx.measure(`riostream.${size}.gbitPerSec`, r.gbitPerSec, "Gbit/s");
      ctx.measure(`riostream.${size}.usecPerXfer`, r.usecPerXfer, "us");
    });
  }
}

/**
 * Run rsockets example `tool` (rstream or riostream) as custom run `run`
 * with `flags` between the nodes; fail the row unless both ends exit 0 and
 * each printed exactly the result line of that run (and no failed data
 * check). Returns the client's result line.
 */
async function rsocketsPair(
  ctx: RowContext,
  [s, c]: Node[],
  tool: string,
  flags: string,
  run: RstreamRun,
  port: number,
): Promise<RstreamResult> {
  const args = `-p ${port} -S ${run.size} -C ${run.count} -I ${run.iters} ${flags}`.trim();
  const r = await runPair(
    s.g,
    `${tool} ${args}`,
    c.g,
    `${tool} -s ${shq(s.ip)} ${args}`,
    { rdmaCm: port },
    120,
  );
  ctx.log(`${tool} server:\n${r.serverOut}\n${tool} client:\n${r.clientOut}`);
  if (r.serverCode !== 0 || r.clientCode !== 0) {
    throw new RowFailure(
      `${tool}: server ${r.serverCode}, client ${r.clientCode}: ${r.serverOut} ${r.clientOut}`,
    );
  }
  const bad = [
    ...rstreamDifferences(r.serverOut, run).map((x) => `server: ${x}`),
    ...rstreamDifferences(r.clientOut, run).map((x) => `client: ${x}`),
  ];
  ctx.expect(bad.length === 0, `${tool} ${args}: ${bad.join("; ")}`);
  return parseRstream(r.clientOut)[0];
}

/**
 * Verbs breadth over RoCEv2 with unmodified rdma-core and perftest tools:
 * user UD, SRQ, multicast, the RDMA CM tool set and rsockets — every frame
 * captured and checked by the wire oracle (UD, DETH and multicast rules).
 */
export const row: Row = {
  id: "roce-verbs",
  title: "UD, SRQ, multicast, RDMA CM tools and rsockets over RoCEv2",
  needs: rdmaPairNeeds("eth", "guestprogs"),
  sharesCores: "it judges data, counts and events; the tools' rates are recorded, not judged",
  timeoutSec: 1200,
  modules: ["cnuas_net", "cnuas_ib"],
  async run(ctx) {
    const nodes = await setupRoceNodes(ctx, IPS);
    for (const n of nodes) {
      await n.g.run(`ip link set dev ${n.dev.iface} mtu ${NETDEV_MTU}`, {
        check: true,
        timeoutSec: 30,
      });
    }
    await captured(ctx, "ud-srq", async () => {
      await udPingpongs(ctx, nodes);
      await udChecks(ctx, nodes);
      await srq(ctx, nodes);
      await perftests(ctx, nodes);
    });
    await captured(ctx, "multicast", () => multicast(ctx, nodes));
    await captured(ctx, "rdma-cm", () => rdmaCm(ctx, nodes));
  },
};
