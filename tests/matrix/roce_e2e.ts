import { join } from "node:path";
import type { Guest } from "../../harness/vm/types.ts";
import { type Row, type RowContext, RowFailure } from "../../harness/matrix/row.ts";
import { waitCarrier } from "../../harness/netdev.ts";
import { checkPcapngFile } from "../../harness/rdma_check.ts";
import { GUEST_PATHS } from "../../harness/vm/types.ts";
import {
  type CnuasIbDev,
  configureRoceAddress,
  loadCnuasIb,
  parsePerftest,
  parsePingpong,
  runPair,
} from "../../harness/rdma_guest.ts";

/** Addresses of g0 (server side) and g1 on the fabric. */
const IPS = ["10.77.0.1", "10.77.0.2"];

/** ibv_rc_pingpong message sizes: 1 B to 1 MiB. */
export const PINGPONG_SIZES = [1, 65536];
/** Iterations of each pingpong (the issue asks for 1,000). */
export const PINGPONG_ITERS = 100;

/** perftest programs the row runs, each exiting 0 with its figures recorded. */
export const PERFTESTS = [
  "ib_send_bw",
  "ib_write_bw",
  "ib_read_bw",
  "ib_atomic_bw",
  "ib_send_lat",
  "ib_write_lat",
  "ib_read_lat",
];

/** One guest of the pair, ready for RDMA. */
interface Node {
  g: Guest;
  dev: CnuasIbDev;
  ip: string;
  gid: number;
}

async function setup(ctx: RowContext): Promise<Node[]> {
  const nodes: Node[] = [];
  for (const [i, g] of ctx.guests.entries()) {
    const dev = await ctx.step(`${g.name}: load cnuas_net and cnuas_ib`, () => loadCnuasIb(g));
    const gid = await ctx.step(`${g.name}: ${IPS[i]} on ${dev.iface}, its RoCE v2 GID`, () =>
      configureRoceAddress(g, dev, `${IPS[i]}/24`));
    ctx.log(`${g.name}: ${dev.ibdev} on ${dev.iface}, GID index ${gid}`);
    nodes.push({ g, dev, ip: IPS[i], gid });
  }
  await ctx.step("both ports come up and the guests reach each other", async () => {
    for (const n of nodes) {
      ctx.expect(await waitCarrier(n.g, n.dev.iface, true), `${n.g.name}: no carrier`);
    }
    const r = await nodes[1].g.run(`ping -c 3 -W 5 ${nodes[0].ip}`, { timeoutSec: 60 });
    ctx.expect(r.code === 0, `ping ${nodes[0].ip} from ${nodes[1].g.name}: ${r.stdout}`);
    for (const n of nodes) {
      const st = await n.g.run(`ibv_devinfo -d ${n.dev.ibdev} | grep state:`, { timeoutSec: 30 });
      ctx.expect(/PORT_ACTIVE/.test(st.stdout), `${n.g.name} port: ${st.stdout}`);
    }
  });
  return nodes;
}

/** Run a server/client pair and fail the row unless both exit 0. */
async function pair(
  ctx: RowContext,
  what: string,
  [s, c]: Node[],
  server: string,
  client: string,
  port: number,
  timeoutSec = 300,
): Promise<string> {
  const r = await runPair(s.g, server, c.g, client, port, timeoutSec);
  if (r.serverCode !== 0 || r.clientCode !== 0) {
    throw new RowFailure(
      `${what}: server exit ${r.serverCode}, client exit ${r.clientCode}\n` +
        `server: ${r.serverOut.slice(-1500)}\nclient: ${r.clientOut.slice(-1500)}`,
    );
  }
  return r.clientOut;
}

async function pingpongs(ctx: RowContext, nodes: Node[]): Promise<void> {
  const [s, c] = nodes;
  for (const events of [false, true]) {
    for (const size of PINGPONG_SIZES) {
      const name = `ibv_rc_pingpong -s ${size}${events ? " -e" : ""}`;
      await ctx.step(`${name} -n ${PINGPONG_ITERS}`, async () => {
        const args = (n: Node) =>
          `ibv_rc_pingpong -d ${n.dev.ibdev} -g ${n.gid} -s ${size} -n ${PINGPONG_ITERS}` +
          (events ? " -e" : "");
        const out = await pair(ctx, name, nodes, args(s), `${args(c)} ${s.ip}`, 18515);
        const f = parsePingpong(out);
        ctx.expect(f !== undefined, `${name}: no figures in its output: ${out}`);
        const key = `pingpong.${events ? "events." : ""}${size}`;
        ctx.measure(`${key}.usecPerIter`, f!.usecPerIter, "us");
        ctx.measure(`${key}.mbitPerSec`, f!.mbitPerSec, "Mbit/s");
      });
    }
  }
}

async function perftests(ctx: RowContext, nodes: Node[]): Promise<void> {
  const [s, c] = nodes;
  for (const [i, prog] of PERFTESTS.entries()) {
    await ctx.step(`${prog} -x <gid>`, async () => {
      const port = 18600 + i;
      const args = (n: Node) => `${prog} -d ${n.dev.ibdev} -x ${n.gid} -p ${port} -F`;
      const out = await pair(ctx, prog, nodes, args(s), `${args(c)} ${s.ip}`, port);
      const row = parsePerftest(out);
      ctx.expect(row !== undefined, `${prog}: no result row in its output: ${out}`);
      for (const [k, v] of Object.entries(row!)) {
        if (k.startsWith("#")) continue;
        const unit = /\[(.*)\]/.exec(k)?.[1] ?? "";
        ctx.measure(`perftest.${prog}.${k.replace(/\[.*\]/, "").replace(/\s+/g, "_")}`, v, unit);
      }
    });
  }
}

async function examples(ctx: RowContext, nodes: Node[]): Promise<void> {
  const [s, c] = nodes;
  for (const [i, ex] of ["roce_send_recv", "roce_rdma_write"].entries()) {
    await ctx.step(`example ${ex}`, async () => {
      const port = 18700 + i;
      const bin = `${GUEST_PATHS.bin}/${ex}`;
      const out = await pair(
        ctx,
        ex,
        nodes,
        `${bin} -d ${s.dev.ibdev} -g ${s.gid} -p ${port}`,
        `${bin} -d ${c.dev.ibdev} -g ${c.gid} -p ${port} ${s.ip}`,
        port,
      );
      ctx.expect(/PASS/.test(out), `${ex} did not report PASS: ${out.slice(-1500)}`);
    });
  }
}

async function security(ctx: RowContext, nodes: Node[]): Promise<void> {
  const [s, c] = nodes;
  const bin = `${GUEST_PATHS.bin}/roce_security`;
  await ctx.step("security: access flags, foreign PD, bounds", async () => {
    const out = await pair(
      ctx,
      "roce_security",
      nodes,
      `${bin} -d ${s.dev.ibdev} -g ${s.gid} -p 18800`,
      `${bin} -d ${c.dev.ibdev} -g ${c.gid} -p 18800 ${s.ip}`,
      18800,
    );
    ctx.log(out);
  });
}

/** Unmodified RDMA tools over RoCEv2 between two guests, every frame checked. */
export const row: Row = {
  id: "roce-e2e",
  title: "unmodified RDMA tools over RoCEv2: pingpongs, perftest, rping, the examples",
  needs: {
    guests: 2,
    fabric: "eth",
    builds: ["qemu", "image", "modules", "provider", "guestprogs"],
    devices: { vnic: 1 },
  },
  timeoutSec: 1200,
  async run(ctx) {
    if (!ctx.fabric) throw new RowFailure("roce-e2e needs the eth fabric and got none");
    const capture = join(ctx.dir, "fabric.pcapng");
    const start = await ctx.fabric.control({ op: "capture_start", path: capture });
    if (start.ok !== true) throw new RowFailure(`capture_start: ${String(start.error)}`);
    const nodes = await setup(ctx);
    try {
      await pingpongs(ctx, nodes);
      await perftests(ctx, nodes);
      await examples(ctx, nodes);
      await security(ctx, nodes);
    } finally {
      await ctx.fabric.control({ op: "capture_stop" });
      ctx.artifact(capture);
    }
    await ctx.step("the capture passes the RDMA wire oracle", async () => {
      const r = await checkPcapngFile(capture);
      ctx.artifact(r.reportPath);
      ctx.measure("oracle.framesChecked", r.framesChecked, "frames");
      ctx.measure("oracle.rdmaFrames", r.rdmaFrames, "frames");
      ctx.expect(
        r.violationCount === 0,
        `${r.violationCount} wire violations (${JSON.stringify(r.byRule)}), see ${r.reportPath}`,
      );
    });
  },
};
