/**
 * Guest-side helpers for the RDMA rows and benches: load cnuas_ib on top of
 * cnuas_net, find the RoCEv2 GID of an address, and read what
 * `ibv_devinfo -v`, `ibstat` and `rdma -j` print. The parsers are pure
 * functions of the tools' text; the helpers that touch a guest do one SSH
 * round trip each where they can.
 *
 * @example
 * ```ts
 * const dev = await loadCnuasIb(guest);
 * const info = parseIbvDevinfo((await guest.run("ibv_devinfo -v")).stdout);
 * ```
 */
import { HilError } from "../errors.ts";
import { RowFailure } from "../matrix/row.ts";
import type { Guest } from "../vm/types.ts";
import { loadCnuasNet } from "./cnuas_net.ts";
import { modprobeLines } from "./kmod.ts";
import { collectBackground, inBackground, shq, waitListening } from "./shell.ts";

/** Module name of the RDMA driver. */
export const CNUAS_IB = "cnuas_ib";

/** A guest command failed or printed something the helpers cannot read. */
export class RdmaGuestError extends HilError {}

/** One cnuas_ib device and the netdev under it. */
export interface CnuasIbDev {
  /** `cnuas_ib0`, ... */
  ibdev: string;
  /** The cnuas_net interface (`eth1`, ...). */
  iface: string;
  /** PCI address of the function. */
  pci: string;
}

/**
 * Load cnuas_net, ib_uverbs (ib_core comes with it), rdma_ucm and cnuas_ib;
 * wait for the ib_device; return it with its netdev.
 */
export async function loadCnuasIb(g: Guest, linkLayer = "eth"): Promise<CnuasIbDev> {
  const [nic] = await loadCnuasNet(g);
  const script = [
    "modprobe ib_uverbs || exit 3",
    "modprobe rdma_ucm || exit 3",
    // autoloaded at boot with the default link_layer (eth); another one reloads it
    ...modprobeLines(CNUAS_IB, { link_layer: linkLayer }),
    `for i in $(seq 50); do ls /sys/bus/pci/devices/${nic.pci}/infiniband/ 2>/dev/null | grep -q . && break; sleep 0.1; done`,
    `ls /sys/bus/pci/devices/${nic.pci}/infiniband/`,
  ].join("\n");
  const r = await g.run(script, { timeoutSec: 60 });
  const ibdev = r.stdout.trim().split("\n").pop() ?? "";
  if (r.code !== 0 || !ibdev.startsWith(CNUAS_IB)) {
    throw new RdmaGuestError(
      `${g.name}: modprobe ${CNUAS_IB} link_layer=${linkLayer} failed (exit ${r.code}): ${r.stdout} ${r.stderr}`,
    );
  }
  return { ibdev, iface: nic.iface, pci: nic.pci };
}

/** The rdma_rxe device {@link bindRxe} creates. */
export const RXE_DEV = "rxe0";

/**
 * Unload cnuas_ib and bind the kernel's software RoCE (rdma_rxe) to the same
 * cnuas_net netdev, as the baseline the benches compare cnuas_ib with.
 */
export async function bindRxe(g: Guest, iface: string): Promise<void> {
  const r = await g.run(
    `rmmod ${CNUAS_IB} && modprobe rdma_rxe && rdma link add ${RXE_DEV} type rxe netdev ${
      shq(iface)
    }`,
    { timeoutSec: 120 },
  );
  if (r.code !== 0) throw new RowFailure(`${g.name}: rxe on ${iface}: ${r.stderr}`);
}

/**
 * The RoCE v2 GID index of `ip` on the rxe device {@link bindRxe} made, once
 * ib_core has put it in the table (up to ten seconds).
 */
export async function rxeGidIndex(g: Guest, ip: string): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const gid = roceV2GidIndex(await readGidTable(g, RXE_DEV), ip);
    if (gid >= 0) return gid;
    await new Promise((res) => setTimeout(res, 200));
  }
  throw new RowFailure(`${g.name}: ${RXE_DEV} has no RoCE v2 GID for ${ip}`);
}

/** `ibv_devinfo -v`: device attributes and per-port attributes, keys as printed. */
export interface IbvDevinfo {
  hcaId: string;
  device: Map<string, string>;
  ports: Map<string, string>[];
  /** GID lines of each port: index → GID text. */
  gids: Map<number, string>[];
}

/** Parse `ibv_devinfo -v` for one device. */
export function parseIbvDevinfo(text: string): IbvDevinfo {
  const out: IbvDevinfo = { hcaId: "", device: new Map(), ports: [], gids: [] };
  let port: Map<string, string> | undefined;
  for (const line of text.split("\n")) {
    const hca = /^hca_id:\s*(\S+)/.exec(line);
    if (hca) {
      out.hcaId = hca[1];
      continue;
    }
    const gid = /^\s+GID\[\s*(\d+)\]:\s*([^,\s]+)/.exec(line);
    if (gid && port) {
      out.gids[out.gids.length - 1].set(Number(gid[1]), gid[2]);
      continue;
    }
    const kv = /^\s+([\w ]+?):\s*(.*?)\s*$/.exec(line);
    if (!kv) continue;
    if (kv[1] === "port") {
      port = new Map();
      out.ports.push(port);
      out.gids.push(new Map());
      continue;
    }
    (port ?? out.device).set(kv[1], kv[2]);
  }
  return out;
}

/** `ibstat <dev>`: CA lines and the lines of each port. */
export interface Ibstat {
  ca: Map<string, string>;
  ports: Map<string, string>[];
}

/** Parse `ibstat <dev>`. */
export function parseIbstat(text: string): Ibstat {
  const out: Ibstat = { ca: new Map(), ports: [] };
  let port: Map<string, string> | undefined;
  for (const line of text.split("\n")) {
    if (/^\s+Port \d+:\s*$/.test(line)) {
      port = new Map();
      out.ports.push(port);
      continue;
    }
    const kv = /^\s+([\w ]+?):\s*(.*?)\s*$/.exec(line);
    if (kv) (port ?? out.ca).set(kv[1], kv[2]);
  }
  return out;
}

/**
 * One port as `rdma -j [-d] link show` prints it (iproute2 6.x, rdma/link.c):
 * `ifname` is the device, `port` the port number. The kernel (nldev) sends
 * `subnet_prefix`, `lid`, `sm_lid`, `lmc` and the capability mask only for
 * an InfiniBand port; `netdev` only when a net_device is bound; `caps` (the
 * port_cap_flags bit names: SM, SYS_IMAGE_GUID, CM, CLIENT_REG, ...) only
 * with `-d`.
 */
export interface RdmaLink {
  ifindex?: number;
  ifname: string;
  port: number;
  subnet_prefix?: string;
  lid?: number;
  sm_lid?: number;
  lmc?: number;
  state?: string;
  physical_state?: string;
  netdev?: string;
  netdev_index?: number;
  caps?: string[];
}

/** Parse `rdma -j [-d] link show`: one entry per port, in the order printed. */
export function parseRdmaLinks(json: string): RdmaLink[] {
  let v: unknown;
  try {
    v = JSON.parse(json);
  } catch (e) {
    throw new RdmaGuestError(`rdma -j link show printed no JSON (${e}): ${json.slice(0, 400)}`);
  }
  if (!Array.isArray(v)) {
    throw new RdmaGuestError(`rdma -j link show printed no array: ${json.slice(0, 400)}`);
  }
  return v.filter((x): x is RdmaLink =>
    typeof x === "object" && x !== null && typeof x.ifname === "string" &&
    typeof x.port === "number"
  );
}

/**
 * What a guest shows of an ib_device's port 1 in native InfiniBand mode,
 * read in one command by {@link readIbModeAttributes}: the three tools, and
 * the one P_Key table entry from sysfs (no tool prints P_Keys).
 */
export interface IbModeAttributes {
  devinfo: IbvDevinfo;
  ibstat: Ibstat;
  /** `rdma -d -j link show` entry of the device's port 1 (undefined: not listed). */
  rdma?: RdmaLink;
  /** `/sys/class/infiniband/<dev>/ports/1/pkeys/0`, as printed (`0xffff`). */
  pkey0: string;
}

const IB_ATTR_SEPARATOR = "==cnuas-ib-attrs";

/** The four commands of {@link readIbModeAttributes}, in order. */
function ibModeAttributeCommands(ibdev: string): string[] {
  const d = shq(ibdev);
  return [
    "rdma -d -j link show",
    `ibv_devinfo -v -d ${d}`,
    `ibstat ${d}`,
    `cat /sys/class/infiniband/${d}/ports/1/pkeys/0`,
  ];
}

/**
 * The one shell command that reads {@link IbModeAttributes}: each tool's
 * output followed by a line of its own carrying the tool's exit status.
 */
export function ibModeAttributesCommand(ibdev: string): string {
  // the marker on a line of its own even after output without a final newline
  return ibModeAttributeCommands(ibdev).map((c) =>
    `${c}; printf '\\n${IB_ATTR_SEPARATOR} rc=%d\\n' $?`
  ).join("; ");
}

/**
 * Parse the output of {@link ibModeAttributesCommand}; a tool that failed
 * (non-zero exit) or output that was cut short throws RdmaGuestError naming it.
 */
export function parseIbModeAttributes(out: string, ibdev: string): IbModeAttributes {
  const cmds = ibModeAttributeCommands(ibdev);
  const re = new RegExp(`^${IB_ATTR_SEPARATOR} rc=(\\d+)$`, "m");
  const parts: string[] = [];
  let rest = out;
  for (const cmd of cmds) {
    const m = re.exec(rest);
    if (!m) throw new RdmaGuestError(`'${cmd}' printed no end marker: ${out.slice(-400)}`);
    if (m[1] !== "0") throw new RdmaGuestError(`'${cmd}' exited ${m[1]}`);
    parts.push(rest.slice(0, m.index));
    rest = rest.slice(m.index + m[0].length + 1);
  }
  return {
    rdma: parseRdmaLinks(parts[0]).find((l) => l.ifname === ibdev && l.port === 1),
    devinfo: parseIbvDevinfo(parts[1]),
    ibstat: parseIbstat(parts[2]),
    pkey0: parts[3].trim(),
  };
}

/**
 * Read what `ibdev`'s port 1 shows in native InfiniBand mode — `rdma -d -j
 * link show`, `ibv_devinfo -v`, `ibstat` and the P_Key table entry — in one
 * SSH round trip. Compare it with what the driver must show with
 * `ibModeAttributeDifferences` (harness/guest/cnuas_ib_attrs.ts).
 */
export async function readIbModeAttributes(g: Guest, ibdev: string): Promise<IbModeAttributes> {
  const r = await g.run(ibModeAttributesCommand(ibdev), { timeoutSec: 60 });
  try {
    return parseIbModeAttributes(r.stdout, ibdev);
  } catch (e) {
    if (!(e instanceof RdmaGuestError)) throw e;
    throw new RdmaGuestError(`${g.name}: ${e.message}: ${r.stderr.trim().slice(-400)}`);
  }
}

/** The GID table index of the RoCE v2 GID of an IPv4 address, or -1. */
export function roceV2GidIndex(
  entries: { index: number; gid: string; type: string }[],
  ipv4: string,
): number {
  const hex = ipv4.split(".").map((o) => Number(o).toString(16).padStart(2, "0"));
  const tail = `ffff:${hex[0]}${hex[1]}:${hex[2]}${hex[3]}`;
  const e = entries.find((x) => x.type === "RoCE v2" && x.gid.endsWith(tail));
  return e ? e.index : -1;
}

/** The first 32 GID table entries of port 1 (sysfs), empty ones left out. */
export async function readGidTable(
  g: Guest,
  ibdev: string,
): Promise<{ index: number; gid: string; type: string }[]> {
  const d = `/sys/class/infiniband/${ibdev}/ports/1`;
  // the shell's own `read`, not a `cat` per file: 64 processes took 3.4 s under TCG
  const r = await g.run(
    `cd ${d} && for i in $(seq 0 31); do g=; t=; read -r g 2>/dev/null <gids/$i; ` +
      `read -r t 2>/dev/null <gid_attrs/types/$i; echo "$i $g $t"; done`,
    { timeoutSec: 30 },
  );
  const out: { index: number; gid: string; type: string }[] = [];
  for (const line of r.stdout.split("\n")) {
    const m = /^(\d+) (\S+) (.+)$/.exec(line.trim());
    if (m && m[2] !== "0000:0000:0000:0000:0000:0000:0000:0000") {
      out.push({ index: Number(m[1]), gid: m[2], type: m[3].trim() });
    }
  }
  return out;
}

/**
 * Give the interface an IPv4 address, bring it up and wait until ib_core has
 * put the RoCE v2 GID for it in the table; returns that GID's index.
 */
export async function configureRoceAddress(
  g: Guest,
  dev: CnuasIbDev,
  cidr: string,
  mtu = 1500,
): Promise<number> {
  const ip = cidr.split("/")[0];
  await g.run(
    `ip addr flush dev ${shq(dev.iface)}; ip link set dev ${shq(dev.iface)} mtu ${mtu} up && ` +
      `ip addr add ${shq(cidr)} dev ${shq(dev.iface)}`,
    { check: true, timeoutSec: 30 },
  );
  for (let i = 0; i < 50; i++) {
    const idx = roceV2GidIndex(await readGidTable(g, dev.ibdev), ip);
    if (idx >= 0) return idx;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new RdmaGuestError(`${g.name}: no RoCE v2 GID for ${ip} on ${dev.ibdev}`);
}

/**
 * How to know a pair's server is ready for its client: the TCP port it
 * listens on (perftest, the pingpongs), `{ rdmaCm: port }` for an RDMA CM
 * server (its cm_id in state LISTEN on that port, as `rdma resource show
 * cm_id` lists it). Every server shows one of the two: none is given a
 * fixed time to start.
 */
export type ServerReady = number | { rdmaCm: number };

/**
 * What {@link runPair} and {@link startPair} take: the server's guest and
 * command, the client's guest and command, how the server shows it is
 * ready, and the seconds after which both are killed (default 120).
 */
export type PairArgs = [
  sg: Guest,
  server: string,
  cg: Guest,
  client: string,
  port: ServerReady,
  timeoutSec?: number,
];

/** What a server/client pair of commands did. */
export interface PairResult {
  serverCode: number;
  serverOut: string;
  clientCode: number;
  clientOut: string;
}

/** Start `server` in the background on `sg` and wait until it listens (see {@link runPair}). */
async function startServer(
  sg: Guest,
  server: string,
  port: ServerReady,
  timeoutSec: number,
): Promise<string> {
  const tag = `/tmp/pair.${pairTag(port)}`;
  const ready = typeof port !== "number"
    ? `for i in $(seq 300); do ` +
      `rdma resource show cm_id | grep -q "state LISTEN .*:${port.rdmaCm} " && exit 0; ` +
      `[ -f ${tag}.rc ] && exit 0; sleep 0.1; done`
    : waitListening([port], 300, tag);
  await sg.run(`${inBackground(tag, server, timeoutSec)}\n${ready}`, { timeoutSec: 60 });
  return tag;
}

/** A file-name part for a pair's temporary files. */
function pairTag(port: ServerReady): string {
  return typeof port === "number" ? String(port) : `cm${port.rdmaCm}`;
}

/**
 * Run `server` in the background on `sg`, wait until it is ready (it
 * listens on TCP `port`, or on an RDMA CM port: {@link ServerReady}), run
 * `client` on `cg`, then collect the server's exit code and output. Both
 * are killed after `timeoutSec`.
 */
export async function runPair(...args: PairArgs): Promise<PairResult> {
  const [sg, server, cg, client, port, timeoutSec = 120] = args;
  const tag = await startServer(sg, server, port, timeoutSec);
  const c = await cg.run(`timeout ${timeoutSec} sh -c ${shq(client)} 2>&1`, {
    timeoutSec: timeoutSec + 30,
  });
  const s = await collectBackground(sg, tag, timeoutSec);
  return { serverCode: s.code, serverOut: s.out, clientCode: c.code, clientOut: c.stdout };
}

/** A server/client pair running in the background ({@link startPair}). */
export interface RunningPair {
  /** Whether each end is still running (its exit status not yet written). */
  running(): Promise<{ server: boolean; client: boolean }>;
  /** Wait for both ends (each up to the pair's timeout) and collect them. */
  wait(): Promise<PairResult>;
}

/**
 * Like {@link runPair}, but the client runs in the background too, so the
 * caller can act while the pair runs (change a module parameter, sample
 * counters) and then {@link RunningPair.wait} for it.
 */
export async function startPair(...args: PairArgs): Promise<RunningPair> {
  const [sg, server, cg, client, port, timeoutSec = 120] = args;
  const stag = await startServer(sg, server, port, timeoutSec);
  const ctag = `/tmp/pair-client.${pairTag(port)}`;
  await cg.run(inBackground(ctag, client, timeoutSec), { timeoutSec: 60 });
  const alive = async (g: Guest, tag: string) =>
    (await g.run(`[ -f ${tag}.rc ] && echo done || echo running`, { timeoutSec: 30 })).stdout
      .trim() === "running";
  return {
    running: async () => ({ server: await alive(sg, stag), client: await alive(cg, ctag) }),
    wait: async () => {
      const c = await collectBackground(cg, ctag, timeoutSec);
      const s = await collectBackground(sg, stag, timeoutSec);
      return { serverCode: s.code, serverOut: s.out, clientCode: c.code, clientOut: c.out };
    },
  };
}

/**
 * Lines where `ibv_rc_pingpong --chk` found a wrong byte. The server checks
 * (only it does, after its last receive): the first byte of each page of
 * its buffer must hold what the client wrote there. It prints these lines
 * but still exits 0, so the caller must look for them.
 */
export function pingpongDataErrors(serverOut: string): string[] {
  return serverOut.split("\n").filter((l) => /invalid data in page/.test(l));
}

/**
 * Lines where `rping -V` found the buffer the server wrote back differing
 * from the one the client sent (rping also exits non-zero then).
 */
export function rpingDataErrors(out: string): string[] {
  return out.split("\n").filter((l) => /data mismatch/.test(l));
}

/** `ibv_rc_pingpong` figures: bytes/s and µs per iteration, or undefined. */
export function parsePingpong(
  text: string,
): { mbitPerSec: number; usecPerIter: number } | undefined {
  const bw = /=\s*([\d.]+)\s*Mbit\/sec/.exec(text);
  const lat = /=\s*([\d.]+)\s*usec\/iter/.exec(text);
  if (!bw || !lat) return undefined;
  return { mbitPerSec: Number(bw[1]), usecPerIter: Number(lat[1]) };
}

/**
 * The first data row of a perftest report, keyed by its column headers
 * (`#bytes`, `BW average[MB/sec]`, `MsgRate[Mpps]`, `t_avg[usec]`, ...).
 */
export function parsePerftest(text: string): Record<string, number> | undefined {
  const lines = text.split("\n");
  const h = lines.findIndex((l) => /^\s*#bytes\s/.test(l));
  if (h < 0) return undefined;
  const heads = lines[h].match(/#\w+|(?:[\w.%]+ )?[\w.%]+\[[^\]]+\]|\S+/g) ?? [];
  for (const l of lines.slice(h + 1)) {
    const vals = l.trim().split(/\s+/);
    if (vals.length < 2 || !/^\d+$/.test(vals[0])) continue;
    const out: Record<string, number> = {};
    heads.forEach((k, i) => {
      if (i < vals.length && /^[\d.]+$/.test(vals[i])) out[k] = Number(vals[i]);
    });
    return out;
  }
  return undefined;
}

/**
 * A result line of `rstream` or `riostream` (librdmacm's rsockets examples;
 * both print it with examples/common.c's size_str and cnt_str): the test
 * name (`custom` when -S, -C or -I is given), then transfer size,
 * transfers per iteration, iterations and total bytes (both ways) as the
 * tool abbreviates them, then seconds, Gbit/s and µs per transfer.
 */
export interface RstreamResult {
  name: string;
  bytes: string;
  xfers: string;
  iters: string;
  total: string;
  sec: number;
  gbitPerSec: number;
  usecPerXfer: number;
}

/** Every result line rstream or riostream printed, in order. */
export function parseRstream(text: string): RstreamResult[] {
  const out: RstreamResult[] = [];
  const re = /^(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+([\d.]+)s\s+([\d.]+)\s+([\d.]+)\s*$/;
  for (const line of text.split("\n")) {
    const m = re.exec(line);
    if (!m) continue;
    out.push({
      name: m[1],
      bytes: m[2],
      xfers: m[3],
      iters: m[4],
      total: m[5],
      sec: Number(m[6]),
      gbitPerSec: Number(m[7]),
      usecPerXfer: Number(m[8]),
    });
  }
  return out;
}

/** A byte count as librdmacm's examples print it (common.c size_str): 4k, 1.5m, 1000. */
export function rstreamSize(n: number): string {
  const [base, mag] = n >= 2 ** 30
    ? [2 ** 30, "g"]
    : n >= 2 ** 20
    ? [2 ** 20, "m"]
    : n >= 2 ** 10
    ? [2 ** 10, "k"]
    : [1, ""];
  const whole = Math.floor(n / base);
  const fraction = whole < 10 ? Math.floor(((n % base) * 10) / base) : 0;
  return fraction ? `${whole}.${fraction}${mag}` : `${whole}${mag}`;
}

/** A count as librdmacm's examples print it (common.c cnt_str): 200, 1k, 2m. */
export function rstreamCount(n: number): string {
  if (n >= 1e9) return `${Math.floor(n / 1e9)}b`;
  if (n >= 1e6) return `${Math.floor(n / 1e6)}m`;
  if (n >= 1e3) return `${Math.floor(n / 1e3)}k`;
  return String(n);
}

/** A custom rstream/riostream run: -S size, -C count, -I iterations. */
export interface RstreamRun {
  size: number;
  count: number;
  iters: number;
}

/**
 * What is wrong with one end's output of custom run `want`: not exactly one
 * result line, a field other than the run asked for (so a transfer cut
 * short or repeated shows), or a line of the tool's own data check (-T v:
 * "data verification failed byte N"). Empty when all is well.
 */
export function rstreamDifferences(out: string, want: RstreamRun): string[] {
  const bad = out.split("\n").filter((l) => /data verification failed/.test(l));
  const lines = parseRstream(out);
  if (lines.length !== 1) return [...bad, `${lines.length} result lines, want 1`];
  const [r] = lines;
  const expect: [keyof RstreamResult, string][] = [
    ["name", "custom"],
    ["bytes", rstreamSize(want.size)],
    ["xfers", rstreamCount(want.count)],
    ["iters", rstreamCount(want.iters)],
    ["total", rstreamSize(want.size * want.count * want.iters * 2)],
  ];
  for (const [k, v] of expect) {
    if (r[k] !== v) bad.push(`${k} ${r[k]}, want ${v}`);
  }
  return bad;
}
