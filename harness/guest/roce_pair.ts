/**
 * What the RoCEv2 rows share: guests with cnuas_ib loaded and an address on
 * the fabric (a {@link RoceNode} each), server/client runs that fail the row
 * unless both ends exit 0, the pingpong data check, perftest runs recorded
 * as measurements, and the port counters. Everything but the setup takes any
 * {@link RdmaNode}, so the native-InfiniBand rows (ib_pair.ts) use it too.
 */
import { pingEach } from "./ping.ts";
import type { Guest } from "../vm/types.ts";
import { type RowContext, RowFailure } from "../matrix/row.ts";
import { waitCarrier } from "./cnuas_net.ts";
import {
  type CnuasIbDev,
  configureRoceAddress,
  loadCnuasIb,
  type PairResult,
  parsePerftest,
  parsePingpong,
  pingpongDataErrors,
  runPair,
  type ServerReady,
} from "./cnuas_ib.ts";

/**
 * What the two-guest helpers need of a node, RoCEv2 ({@link RoceNode}) or
 * native InfiniBand (IbNode): the guest, its cnuas_ib device, the IPv4
 * address the tools' TCP side channel (and rdma_cm) use, and — RoCE only —
 * the GID index the tools must be given. Without `gid` the tools address
 * the peer by LID (the port's own addressing on InfiniBand).
 */
export interface RdmaNode {
  /** The guest. */
  g: Guest;
  /** Its cnuas_ib device. */
  dev: CnuasIbDev;
  /** Its IPv4 address: on the fabric (RoCE) or on IPoIB (native IB). */
  ip: string;
  /** RoCE: the RoCE v2 GID index of that address; absent on native InfiniBand. */
  gid?: number;
}

/** One guest ready for RDMA over RoCEv2. */
export interface RoceNode extends RdmaNode {
  /** The RoCE v2 GID index of its address. */
  gid: number;
}

/**
 * The addressing flag a tool needs for node `n`, with a leading space:
 * ` -g <gid>` (`flag` "-g": ibv_*_pingpong, the examples, roce_security) or
 * ` -x <gid>` (`flag` "-x": perftest) on RoCE, where every path is global;
 * nothing on native InfiniBand, where the tools use the port's LID.
 *
 * @example
 * `ibv_rc_pingpong -d ${n.dev.ibdev}${addrFlag(n, "-g")} -s 64`
 */
export function addrFlag(n: RdmaNode, flag: "-g" | "-x"): string {
  return n.gid === undefined ? "" : ` ${flag} ${n.gid}`;
}

/**
 * Load cnuas_ib on each guest, give guest i the address `ips[i]`/24 and find
 * its RoCE v2 GID; with two or more guests, check the ports are up and the
 * last guest pings the first.
 */
export async function setupRoceNodes(ctx: RowContext, ips: string[]): Promise<RoceNode[]> {
  // the guests side by side: each is set up in its own shell, on its own vCPU
  const nodes: RoceNode[] = await Promise.all(ctx.guests.map(async (g, i) => {
    const dev = await ctx.step(
      `${g.name}: load cnuas_net and cnuas_ib`,
      () => loadCnuasIb(g),
    );
    const gid = await ctx.step(
      `${g.name}: ${ips[i]} on ${dev.iface}, its RoCE v2 GID`,
      () => configureRoceAddress(g, dev, `${ips[i]}/24`),
    );
    ctx.log(`${g.name}: ${dev.ibdev} on ${dev.iface}, GID index ${gid}`);
    return { g, dev, ip: ips[i], gid };
  }));
  await ctx.step("the ports come up (and the guests reach each other)", async () => {
    await Promise.all(nodes.map(async (n) => {
      ctx.expect(await waitCarrier(n.g, n.dev.iface, true), `${n.g.name}: no carrier`);
    }));
    if (nodes.length > 1) {
      const last = nodes[nodes.length - 1];
      const r = await pingEach(last.g, nodes[0].ip, { count: 3 });
      ctx.expect(r.ok, r.why);
    }
    await Promise.all(nodes.map(async (n) => {
      const st = await n.g.run(`ibv_devinfo -d ${n.dev.ibdev} | grep state:`, { timeoutSec: 30 });
      ctx.expect(/PORT_ACTIVE/.test(st.stdout), `${n.g.name} port: ${st.stdout}`);
    }));
  });
  return nodes;
}

/** The MAC address of a node's interface, as sysfs gives it ("02:00:…"). */
export async function nodeMac(n: Pick<RdmaNode, "g" | "dev">): Promise<string> {
  const r = await n.g.run(`cat /sys/class/net/${n.dev.iface}/address`, { check: true });
  return r.stdout.trim();
}

/** The switch port a node's interface was learned on; fails the row when it was not. */
export async function switchPortOf(
  ctx: RowContext,
  n: Pick<RdmaNode, "g" | "dev">,
): Promise<number> {
  const mac = await nodeMac(n);
  const port = await ctx.fabric?.macPort(mac);
  if (port === undefined) throw new RowFailure(`the switch has not learned ${mac} (${n.g.name})`);
  return port;
}

/** Whether the node's port reaches PORT_ACTIVE within `timeoutSec` (`ibv_devinfo`, every 0.5 s). */
export async function waitPortActive(
  n: Pick<RdmaNode, "g" | "dev">,
  timeoutSec: number,
): Promise<boolean> {
  const r = await n.g.run(
    `for i in $(seq ${timeoutSec * 2}); do ibv_devinfo -d ${n.dev.ibdev} | ` +
      `grep -q 'state:.*PORT_ACTIVE' && exit 0; sleep 0.5; done; exit 1`,
    { timeoutSec: timeoutSec + 30 },
  );
  return r.code === 0;
}

/** Fail the row unless both ends of a pair exited 0. */
export function expectBothExit0(what: string, r: PairResult): PairResult {
  if (r.serverCode !== 0 || r.clientCode !== 0) {
    throw new RowFailure(
      `${what}: server exit ${r.serverCode}, client exit ${r.clientCode}\n` +
        `server: ${r.serverOut.slice(-1500)}\nclient: ${r.clientOut.slice(-1500)}`,
    );
  }
  return r;
}

/**
 * Run `server` on `s` and `client` on `c` (see runPair: `port` is the TCP
 * port the server listens on, 0 for none); fail the row unless both exit 0.
 */
export async function pairBoth(
  what: string,
  [s, c]: Pick<RdmaNode, "g">[],
  server: string,
  client: string,
  port: ServerReady,
  timeoutSec = 300,
): Promise<PairResult> {
  return expectBothExit0(what, await runPair(s.g, server, c.g, client, port, timeoutSec));
}

/** {@link pairBoth}, returning the client's output. */
export async function pair(
  what: string,
  nodes: Pick<RdmaNode, "g">[],
  server: string,
  client: string,
  port: ServerReady,
  timeoutSec = 300,
): Promise<string> {
  return (await pairBoth(what, nodes, server, client, port, timeoutSec)).clientOut;
}

/**
 * Fail unless an `ibv_*_pingpong --chk` server found no wrong data and the
 * client printed its figures; returns them.
 */
export function pingpongResult(
  what: string,
  r: PairResult,
): { usecPerIter: number; mbitPerSec: number } {
  const bad = pingpongDataErrors(r.serverOut);
  if (bad.length) {
    throw new RowFailure(`${what}: the server's --chk found wrong data: ${bad.join("; ")}`);
  }
  const f = parsePingpong(r.clientOut);
  if (!f) throw new RowFailure(`${what}: no figures in its output: ${r.clientOut}`);
  return f;
}

/** One figure of a perftest result row, named as the reports carry it. */
export interface PerftestFigure {
  /** `perftest.<prog>[.<extra>].<column>`, e.g. `perftest.ib_send_bw.c_UD_s_4096.BW_average`. */
  name: string;
  value: number;
  /** What the column header gives in brackets (`MB/sec`, `usec`), else "". */
  unit: string;
}

/**
 * The measurements of perftest result row `row` (see parsePerftest) of
 * `prog` run with `extra` flags: one per column but the `#` ones, named
 * `perftest.<prog>`, then `extra` with every run of other characters than
 * letters and digits made one `_` (none when `extra` is empty), then the
 * column without its unit and with `_` for spaces.
 *
 * @example
 * perftestFigures("ib_send_lat", "--use-srq", { "#bytes": 2, "t_avg[usec]": 9.1 });
 * // [{ name: "perftest.ib_send_lat.use_srq.t_avg", value: 9.1, unit: "usec" }]
 */
export function perftestFigures(
  prog: string,
  extra: string,
  row: Record<string, number>,
): PerftestFigure[] {
  const flags = extra.replace(/[^a-zA-Z0-9]+/g, "_").replace(/^_|_$/g, "");
  const key = flags ? `perftest.${prog}.${flags}` : `perftest.${prog}`;
  return Object.entries(row).filter(([k]) => !k.startsWith("#")).map(([k, value]) => ({
    name: `${key}.${k.replace(/\[.*\]/, "").replace(/\s+/g, "_")}`,
    value,
    unit: /\[(.*)\]/.exec(k)?.[1] ?? "",
  }));
}

/**
 * A step that runs perftest `prog` between the two nodes (`-d` the node's
 * device, on RoCE `-x` its GID index (see {@link addrFlag}), `-p port`, `-F`,
 * then `extra`, then `volume`; the client connects to the first node's `ip`),
 * fails the row unless both ends exit 0 and the client printed a result row,
 * and records that row ({@link perftestFigures}: named by `extra`, not by
 * `volume`, so a depth's iteration count keeps the figures' names).
 * perftest checks no data: a run proves completion and speed only.
 */
export async function measurePerftest(
  ctx: RowContext,
  nodes: RdmaNode[],
  prog: string,
  port: number,
  extra = "",
  volume = "",
): Promise<void> {
  const [s, c] = nodes;
  const flags = [extra, volume].filter((f) => f).map((f) => ` ${f}`).join("");
  const addr = s.gid === undefined ? "" : " -x <gid>";
  await ctx.step(`${prog}${addr}${flags}`, async () => {
    const args = (n: RdmaNode) =>
      `${prog} -d ${n.dev.ibdev}${addrFlag(n, "-x")} -p ${port} -F${flags}`;
    const r = await pairBoth(`${prog}${flags}`, nodes, args(s), `${args(c)} ${s.ip}`, port);
    const row = perftestRowOf(ctx, prog, `${prog}${flags}`, r);
    if (row === undefined) return;
    for (const f of perftestFigures(prog, extra, row)) ctx.measure(f.name, f.value, f.unit);
  });
}

/**
 * The result row of a perftest pair run `r` whose ends both exited 0
 * ({@link perftestResult}; `what` names the run in the log and failures):
 * the client's, else the server's (logged). When neither end calibrated its
 * clock (perftest's figures are then zeros) the run still completed, but
 * its figures would be made up: none is returned, the log says so and
 * `perftest.<prog>.clockVoid` records it. No row for any other reason fails
 * the row.
 */
export function perftestRowOf(
  ctx: RowContext,
  prog: string,
  what: string,
  r: PairResult,
): Record<string, number> | undefined {
  const { row, side, why } = perftestResult(r.clientOut, r.serverOut);
  if (side === "server") ctx.log(`${what}: the server's figures (${why})`);
  if (row === undefined && why === "neither end calibrated its clock") {
    ctx.log(`${what}: ${why}; no figures recorded for this run`);
    ctx.measure(`perftest.${prog}.clockVoid`, 1, "runs");
    return undefined;
  }
  ctx.expect(row !== undefined, `${what}: ${why}: ${r.clientOut}`);
  return row;
}

/** perftest's warning that it could not calibrate its clock: its figures are then void. */
const PERFTEST_CLOCK_WARNING = /Correlation coefficient r\^2: [\d.]+ < 0\.9/;

/**
 * The figures of a perftest pair run: the client's result row, unless the
 * client could not calibrate its cycle counter (perftest prints the
 * correlation warning and then figures of 0, as happens under TCG) — then
 * the server's row, when the server calibrated and printed one (bandwidth
 * tests print it on both ends). `row` undefined: neither end has figures.
 */
export function perftestResult(
  clientOut: string,
  serverOut: string,
): { row?: Record<string, number>; side?: "client" | "server"; why: string } {
  const client = parsePerftest(clientOut);
  const clientVoid = PERFTEST_CLOCK_WARNING.test(clientOut);
  if (client && !clientVoid) return { row: client, side: "client", why: "client's row" };
  const server = parsePerftest(serverOut);
  if (server && !PERFTEST_CLOCK_WARNING.test(serverOut)) {
    return {
      row: server,
      side: "server",
      why: client ? "the client's clock calibration failed" : "the client printed no row",
    };
  }
  return { why: client ? "neither end calibrated its clock" : "no result row in its output" };
}

/** The port's hw_counters (`rdma statistic` names) of a node. */
export async function hwCounters(n: Pick<RdmaNode, "g" | "dev">): Promise<Record<string, number>> {
  const d = `/sys/class/infiniband/${n.dev.ibdev}/ports/1/hw_counters`;
  const r = await n.g.run(`cd ${d} && grep -H . *`, { timeoutSec: 30 });
  const out: Record<string, number> = {};
  for (const line of r.stdout.split("\n")) {
    const m = /^(\w+):(\d+)$/.exec(line.trim());
    if (m) out[m[1]] = Number(m[2]);
  }
  return out;
}

/** Each counter's rise from `before` to `after`. */
export function counterDelta(
  before: Record<string, number>,
  after: Record<string, number>,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of Object.keys(after)) out[k] = after[k] - (before[k] ?? 0);
  return out;
}

/** One `mckey` group member's result. */
export interface MckeyMember {
  /** Its temporary files' stem in the guest. */
  tag: string;
  /** Exit status (124: killed by its timeout). */
  code: number;
  /** What it printed. */
  out: string;
}

/**
 * Start `members` `mckey` receivers on `n`, each a UD QP joined (attached)
 * to `group` and waiting for `messages` datagrams; resolves once every one
 * has printed that it joined. `wait()` collects them.
 */
export async function startMckeyMembers(
  n: RoceNode,
  group: string,
  members: number,
  messages: number,
): Promise<{ wait(): Promise<MckeyMember[]> }> {
  const tags = Array.from({ length: members }, (_, k) => `/tmp/mckey.${k}`);
  const start = tags.map((t) =>
    `rm -f ${t}.*; (timeout 180 stdbuf -oL mckey -m ${group} -b ${n.ip} -C ${messages} ` +
    `>${t}.out 2>&1; echo $? >${t}.rc) >/dev/null 2>&1 &`
  ).join("\n");
  const outs = tags.map((t) => `${t}.out`).join(" ");
  const joined =
    `for i in $(seq 600); do k=$(cat ${outs} 2>/dev/null | grep -c '^mckey: joined'); ` +
    `[ "$k" -ge ${members} ] && exit 0; sleep 0.1; done; exit 1`;
  const j = await n.g.run(`${start}\n${joined}`, { timeoutSec: 120 });
  if (j.code !== 0) {
    throw new RowFailure(`${n.g.name}: the ${members} mckey members did not all join ${group}`);
  }
  return {
    wait: async () => {
      const out: MckeyMember[] = [];
      for (const tag of tags) {
        const r = await n.g.run(
          `for i in $(seq 600); do [ -f ${tag}.rc ] && break; sleep 0.1; done; cat ${tag}.out; ` +
            `exit $(cat ${tag}.rc 2>/dev/null || echo 124)`,
          { timeoutSec: 120 },
        );
        out.push({ tag, code: r.code, out: r.stdout });
      }
      return out;
    },
  };
}

/** Whether a member exited 0 having received everything ("data transfers complete"). */
export function mckeyMemberOk(m: MckeyMember): boolean {
  return m.code === 0 && /data transfers complete/.test(m.out);
}
