/**
 * Bench of the RDMA transport: perftest's `ib_send_bw` and `ib_write_bw`
 * (MiB/s and messages/s at 64 B and 64 KiB) and `ib_send_lat` (typical µs) between
 * two guests, first over cnuas_ib, then over the kernel's own software
 * RoCE (`rdma_rxe`) bound to the same cnuas_net netdevs in the same guests.
 * The figure is the ratio, as a speed-up of cnuas_ib over rxe (above 1:
 * cnuas_ib is faster). Goal: at least 1 on every one.
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
  readGidTable,
  roceV2GidIndex,
  runPair,
  RXE_DEV,
} from "../guest/cnuas_ib.ts";
import type { Guest } from "../vm/types.ts";

/** Addresses of the two guests on the fabric. */
const IPS = ["10.78.0.1", "10.78.0.2"];

/** The measurements taken for each device, in the order they run. */
export const PERF_CASES = [
  { prog: "ib_send_bw", size: 64 },
  { prog: "ib_send_bw", size: 65536 },
  { prog: "ib_write_bw", size: 64 },
  { prog: "ib_write_bw", size: 65536 },
  { prog: "ib_send_lat", size: 2 },
] as const;

/** One side of the pair: a guest, the RDMA device to use and its GID index. */
interface Side {
  g: Guest;
  ibdev: string;
  gid: number;
  ip: string;
}

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

async function measureAll(
  ctx: RowContext,
  label: string,
  [s, c]: Side[],
): Promise<Record<string, number>> {
  const got: Record<string, number> = {};
  for (const [i, pc] of PERF_CASES.entries()) {
    const port = 19000 + i;
    const args = (x: Side) =>
      `${pc.prog} -d ${shq(x.ibdev)} -x ${x.gid} -p ${port} -s ${pc.size} -F`;
    await ctx.step(`${label}: ${pc.prog} -s ${pc.size}`, async () => {
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
        const name = `${pc.prog}.${pc.size}.${k}`;
        got[name] = m.value;
        ctx.measure(`${label}.${name}`, m.value, m.unit);
      }
    });
  }
  return got;
}

/** Swap cnuas_ib for rdma_rxe on the same netdev; returns the rxe side. */
async function switchToRxe(g: Guest, iface: string, ip: string): Promise<Side> {
  await bindRxe(g, iface);
  for (let i = 0; i < 50; i++) {
    const gid = roceV2GidIndex(await readGidTable(g, RXE_DEV), ip);
    if (gid >= 0) return { g, ibdev: RXE_DEV, gid, ip };
    await new Promise((res) => setTimeout(res, 200));
  }
  throw new RowFailure(`${g.name}: ${RXE_DEV} has no RoCE v2 GID for ${ip}`);
}

/** The bench as a matrix row, so the runner brings up guests and fabric. */
export const rdmaPerfRow: Row = {
  id: "bench-rdma-perf",
  title: "perftest over cnuas_ib and over rdma_rxe on the same netdevs",
  needs: rdmaPairNeeds("eth"),
  timeoutSec: 1800,
  async run(ctx) {
    const cnuas: Side[] = [];
    const ifaces: string[] = [];
    for (const [i, g] of ctx.guests.entries()) {
      const dev = await ctx.step(`${g.name}: cnuas_ib`, () => loadCnuasIb(g));
      const gid = await configureRoceAddress(g, dev, `${IPS[i]}/24`);
      if (!await waitCarrier(g, dev.iface, true)) throw new RowFailure(`${g.name}: no carrier`);
      cnuas.push({ g, ibdev: dev.ibdev, gid, ip: IPS[i] });
      ifaces.push(dev.iface);
    }
    await ctx.guests[1].run(`ping -c 2 -W 5 ${IPS[0]}`, { timeoutSec: 60 });
    const a = await measureAll(ctx, "cnuas_ib", cnuas);
    const rxe: Side[] = [];
    for (const [i, g] of ctx.guests.entries()) {
      rxe.push(await ctx.step(`${g.name}: rdma_rxe`, () => switchToRxe(g, ifaces[i], IPS[i])));
    }
    const b = await measureAll(ctx, "rxe", rxe);
    for (const name of Object.keys(a)) {
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
