/**
 * Bench of the RDMA transport: perftest's `ib_send_bw` and `ib_write_bw`
 * (MiB/s and messages/s at 64 B and 64 KiB), `ib_send_bw` over UD (64 B and
 * 1024 B, the path MTU of the row's 1500-byte netdev MTU) and with an SRQ
 * (`--use-srq`, 64 B), and `ib_send_lat` (typical µs) between two guests;
 * then multicast fan-out (harness/guest/mcast_fanout.ts: one UD sender,
 * 1, 2 and 4 member QPs, datagrams/s delivered and dropped). First over
 * cnuas_ib, then over the kernel's own software RoCE (`rdma_rxe`) bound to
 * the same cnuas_net netdevs in the same guests. The figure is the ratio,
 * as a speed-up of cnuas_ib over rxe (above 1: cnuas_ib is faster). Goal:
 * at least 1 on every one.
 */
import type { Config } from "../config.ts";
import { runBenchRow } from "./one_row.ts";
import { rdmaPairNeeds } from "../matrix/needs.ts";
import type { Row, RowContext } from "../matrix/row.ts";
import type { Measurement } from "../report/schema.ts";
import { RowFailure } from "../matrix/row.ts";
import { waitCarrier } from "../guest/cnuas_net.ts";
import { shq } from "../guest/shell.ts";
import {
  bindRxe,
  configureRoceAddress,
  loadCnuasIb,
  parsePerftest,
  runPair,
  RXE_DEV,
  rxeGidIndex,
} from "../guest/cnuas_ib.ts";
import { runMcastFanout } from "../guest/mcast_fanout.ts";
import type { Guest } from "../vm/types.ts";

/** Addresses of the two guests on the fabric. */
const IPS = ["10.78.0.1", "10.78.0.2"];

/**
 * The perftest runs for each device, in the order they run: program, message
 * size, extra flags and the tag they add to the figure's name
 * (`ib_send_bw_ud.64.msgPerSec`).
 */
export const PERF_CASES: readonly { prog: string; size: number; flags?: string; tag?: string }[] = [
  { prog: "ib_send_bw", size: 64 },
  { prog: "ib_send_bw", size: 65536 },
  { prog: "ib_write_bw", size: 64 },
  { prog: "ib_write_bw", size: 65536 },
  { prog: "ib_send_lat", size: 2 },
  { prog: "ib_send_bw", size: 64, flags: "-c UD", tag: "ud" },
  { prog: "ib_send_bw", size: 1024, flags: "-c UD", tag: "ud" },
  { prog: "ib_send_bw", size: 64, flags: "--use-srq", tag: "srq" },
];

/** Member QPs of each multicast fan-out run (one sender each). */
export const FANOUT_MEMBERS = [1, 2, 4];

/** Datagrams (64 B) the sender sends in each fan-out run. */
const FANOUT_COUNT = 20000;

/**
 * One side of the pair: a guest, the RDMA device to use, its GID index (none
 * over native IB: perftest addresses by LID) and the address perftest
 * exchanges QP numbers over.
 */
export interface Side {
  g: Guest;
  ibdev: string;
  gid?: number;
  ip: string;
}

/** A side over RoCEv2: it has a GID index. */
type RoceSide = Side & { gid: number };

/** Figures of one perftest run, named for bench.json. */
export function perfFigures(
  prog: string,
  report: Record<string, number>,
): Record<string, Measurement> {
  if (prog.endsWith("_lat")) {
    // The typical (median) latency is the figure: under TCG a few
    // descheduled iterations swing the average far more than the product.
    const out: Record<string, Measurement> = {};
    const typ = report["t_typical[usec]"];
    const avg = report["t_avg[usec]"];
    if (typ !== undefined) out.usec = { value: typ, unit: "us" };
    if (avg !== undefined) out.usecAvg = { value: avg, unit: "us" };
    return out;
  }
  const bwKey = Object.keys(report).find((k) => k.startsWith("BW average"));
  const rate = report["MsgRate[Mpps]"];
  const out: Record<string, Measurement> = {};
  if (bwKey) out.MiBps = { value: report[bwKey], unit: "MiB/s" };
  if (rate !== undefined) out.msgPerSec = { value: Math.round(rate * 1e6), unit: "msg/s" };
  return out;
}

/** cnuas_ib over rxe, as a speed-up: bandwidths divide, latencies invert. */
export function speedup(name: string, cnuas: number, rxe: number): number {
  if (!cnuas || !rxe) return 0;
  const r = /\.usec(Avg)?$/.test(name) ? rxe / cnuas : cnuas / rxe;
  return Number(r.toFixed(3));
}

/**
 * Every {@link PERF_CASES} run between `s` (server) and `c` (client); each
 * figure recorded as `<label>.<name>` and returned by name. `common` is
 * added to every command line (`-m 1024`).
 */
export async function measureAll(
  ctx: RowContext,
  label: string,
  [s, c]: Side[],
  common = "",
): Promise<Record<string, number>> {
  const got: Record<string, number> = {};
  for (const [i, pc] of PERF_CASES.entries()) {
    const port = 19000 + i;
    const flags = `${common ? ` ${common}` : ""}${pc.flags ? ` ${pc.flags}` : ""}`;
    const gid = (x: Side) => x.gid === undefined ? "" : ` -x ${x.gid}`;
    const args = (x: Side) =>
      `${pc.prog} -d ${shq(x.ibdev)}${gid(x)} -p ${port} -s ${pc.size} -F${flags}`;
    await ctx.step(`${label}: ${pc.prog} -s ${pc.size}${flags}`, async () => {
      const r = await runPair(s.g, args(s), c.g, `${args(c)} ${s.ip}`, port, 600);
      for (const x of [s, c]) {
        const d = `/sys/class/infiniband/${x.ibdev}/ports/1/hw_counters`;
        const cnt = await x.g.run(`cd ${d} 2>/dev/null && grep -H . * | tr '\\n' ' '`);
        ctx.log(`${x.g.name} ${x.ibdev} counters: ${cnt.stdout}`);
      }
      if (r.serverCode !== 0 || r.clientCode !== 0) {
        throw new RowFailure(
          `${label} ${pc.prog}: exit ${r.serverCode}/${r.clientCode}: ${r.clientOut.slice(-800)}`,
        );
      }
      const rep = parsePerftest(r.clientOut);
      if (!rep) throw new RowFailure(`${label} ${pc.prog}: no result row: ${r.clientOut}`);
      for (const [k, m] of Object.entries(perfFigures(pc.prog, rep))) {
        const name = `${pc.prog}${pc.tag ? `_${pc.tag}` : ""}.${pc.size}.${k}`;
        got[name] = m.value;
        ctx.measure(`${label}.${name}`, m.value, m.unit);
      }
    });
  }
  return got;
}

/**
 * Multicast fan-out: the sender on the second guest, 1, 2 and 4 members on
 * the first. Figures per member count: the sender's datagrams/s, the mean
 * and the lowest member's delivered datagrams/s, all members' together,
 * and the share of member deliveries dropped.
 */
async function measureFanout(
  ctx: RowContext,
  label: string,
  [m, s]: RoceSide[],
): Promise<Record<string, number>> {
  const got: Record<string, number> = {};
  for (const members of FANOUT_MEMBERS) {
    await ctx.step(`${label}: multicast fan-out to ${members} member QP(s)`, async () => {
      const f = await runMcastFanout(m, s, {
        members,
        count: FANOUT_COUNT,
        ipJoin: m.ibdev === RXE_DEV,
      });
      const mean = f.memberFramesPerSec.reduce((a, b) => a + b, 0) / members;
      const figures: [string, number, string][] = [
        ["senderFramesPerSec", f.senderFramesPerSec, "frames/s"],
        ["memberFramesPerSec", Math.round(mean), "frames/s"],
        ["memberFramesPerSecMin", Math.min(...f.memberFramesPerSec), "frames/s"],
        ["totalFramesPerSec", f.totalFramesPerSec, "frames/s"],
        ["droppedPct", Number((100 * f.totalDropped / (members * f.count)).toFixed(1)), "%"],
      ];
      for (const [k, v, unit] of figures) {
        const name = `mcast.m${members}.${k}`;
        got[name] = v;
        ctx.measure(`${label}.${name}`, v, unit);
      }
      ctx.log(
        `${label} fan-out m${members}: dropped per member ${f.memberDropped.join(",")}, ` +
          `out of order ${f.outOfOrder}`,
      );
    });
  }
  return got;
}

/** Swap cnuas_ib for rdma_rxe on the same netdev; returns the rxe side. */
async function switchToRxe(g: Guest, iface: string, ip: string): Promise<RoceSide> {
  await bindRxe(g, iface);
  return { g, ibdev: RXE_DEV, gid: await rxeGidIndex(g, ip), ip };
}

/** The bench as a matrix row, so the runner brings up guests and fabric. */
export const rdmaPerfRow: Row = {
  id: "bench-rdma-perf",
  title: "perftest over cnuas_ib and over rdma_rxe on the same netdevs",
  needs: rdmaPairNeeds("eth", "guestprogs"),
  timeoutSec: 1800,
  async run(ctx) {
    const cnuas: RoceSide[] = [];
    const ifaces: string[] = [];
    for (const [i, g] of ctx.guests.entries()) {
      const dev = await ctx.step(`${g.name}: cnuas_ib`, () => loadCnuasIb(g));
      const gid = await configureRoceAddress(g, dev, `${IPS[i]}/24`);
      if (!await waitCarrier(g, dev.iface, true)) throw new RowFailure(`${g.name}: no carrier`);
      cnuas.push({ g, ibdev: dev.ibdev, gid, ip: IPS[i] });
      ifaces.push(dev.iface);
    }
    await ctx.guests[1].run(`ping -c 2 -W 5 ${IPS[0]}`, { timeoutSec: 60 });
    const a = {
      ...await measureAll(ctx, "cnuas_ib", cnuas),
      ...await measureFanout(ctx, "cnuas_ib", cnuas),
    };
    const rxe: RoceSide[] = [];
    for (const [i, g] of ctx.guests.entries()) {
      rxe.push(await ctx.step(`${g.name}: rdma_rxe`, () => switchToRxe(g, ifaces[i], IPS[i])));
    }
    const b = { ...await measureAll(ctx, "rxe", rxe), ...await measureFanout(ctx, "rxe", rxe) };
    for (const name of Object.keys(a)) {
      if (name.endsWith(".droppedPct")) continue;
      if (name in b) ctx.measure(`speedup.${name}`, speedup(name, a[name], b[name]), "x");
    }
  },
};

/** `deno task bench` entry: run the row once and return its measurements. */
export async function benchRdmaPerf(config: Config): Promise<Record<string, Measurement>> {
  const r = await runBenchRow(config, rdmaPerfRow);
  if (r.status !== "PASS") throw new Error(`rdma perf bench ${r.status}: ${r.reason}`);
  return r.measurements;
}
