/**
 * The switch as an oracle for a live fabric: replay a capture through the
 * switch model (harness/models/switch.ts, written from docs/switch.md) and
 * compare what the model says each port sent, received and dropped with
 * the daemon's own counters over the same frames. The `capture_start` and
 * `capture_stop` replies carry the counters of the capture's first and
 * last instant, so the comparison is exact on a busy fabric (the subnet
 * manager sweeps while a row runs). A frame the switch has forwarded but
 * still holds in the port's egress queue (its guest has not read its
 * socket yet) is in the capture and not yet in `tx`: the `queue_len` of
 * the stop reply says how many, and in ib mode a port has one FIFO queue,
 * so they are the last that many frames the model sent to that port.
 * Frames queued at the start were sent during the capture but forwarded
 * before it: `tx` frames count them exactly, `tx` bytes within their
 * largest possible size.
 */
import type { LftEntry, PortStatus } from "../fabric/client.ts";
import type { PcapngInterface, PcapngPacket } from "../fabric/pcapng.ts";
import { DROP_REASONS, FRAME_LIMITS, SwitchModel } from "../models/switch.ts";

/** The switch's tables and ports while the capture ran (they must not change meanwhile). */
export interface IbFabricTables {
  /** Ports with a device connected, ascending. */
  upPorts: number[];
  /** The LFT (`table` op). */
  lft: LftEntry[];
  /** Multicast LID -> member ports (`table` op). */
  mcast: { mlid: number; ports: number[] }[];
}

/** How many frames the replay decided, by outcome. */
export interface ReplaySummary {
  /** Frames the capture recorded on ingress. */
  inbound: number;
  /** Frames the switch itself sent (its SM), recorded outbound. */
  outbound: number;
  /** Ingress frames forwarded to at least one port. */
  forwarded: number;
  /** Ingress frames the switch's SM took. */
  toSwitch: number;
  /** Ingress frames dropped, by reason. */
  drops: Record<string, number>;
}

/**
 * The switch port a captured packet went through: the switch names each
 * capture interface `port<N>` (docs/switch.md, "Capture"); interfaces are
 * numbered in the order ports appeared, not by port.
 */
export function switchPort(interfaces: PcapngInterface[], pkt: PcapngPacket): number {
  const m = /^port(\d+)$/.exec(interfaces[pkt.interfaceId]?.name ?? "");
  if (!m) throw new Error(`capture interface ${pkt.interfaceId} is not named port<N>`);
  return Number(m[1]);
}

/**
 * Replay a capture's packets (in file order) through a model holding
 * `tables`, and list every port counter that moved differently on the
 * daemon between `before` and `after`. Empty list: the daemon forwarded,
 * dropped and counted exactly as the model.
 */
export function replayIbCapture(
  { interfaces, packets }: { interfaces: PcapngInterface[]; packets: PcapngPacket[] },
  tables: IbFabricTables,
  before: PortStatus[],
  after: PortStatus[],
): { differences: string[]; summary: ReplaySummary } {
  const maxPort = Math.max(64, ...tables.upPorts);
  const model = new SwitchModel({ mode: "ib", maxPorts: maxPort, sm: true });
  // connect() takes the lowest free slot: fill 1..max, then free the ones not up
  const highest = Math.max(0, ...tables.upPorts);
  for (let p = 1; p <= highest; p++) model.connect();
  for (let p = 1; p <= highest; p++) if (!tables.upPorts.includes(p)) model.disconnect(p);
  for (const e of tables.lft) model.setLft(e.lid, e.port);
  for (const g of tables.mcast) for (const p of g.ports) model.mcastJoin(g.mlid, p);

  const summary: ReplaySummary = {
    inbound: 0,
    outbound: 0,
    forwarded: 0,
    toSwitch: 0,
    drops: {},
  };
  const differences: string[] = [];
  // each port's egress frame lengths in the order the model sent them
  const sent = new Map<number, number[]>();
  const send = (p: number, len: number) => {
    const list = sent.get(p);
    if (list) list.push(len);
    else sent.set(p, [len]);
  };
  for (const [i, pkt] of packets.entries()) {
    const port = switchPort(interfaces, pkt);
    if (pkt.data.length !== pkt.origLen) {
      differences.push(`packet ${i} on port ${port} was captured truncated`);
      continue;
    }
    if (pkt.direction === "outbound") {
      summary.outbound++;
      model.egress(port, pkt.data);
      send(port, pkt.data.length);
      continue;
    }
    summary.inbound++;
    const d = model.ingress(port, pkt.data);
    if (d.drop) summary.drops[d.drop] = (summary.drops[d.drop] ?? 0) + 1;
    else if (d.egress.length) summary.forwarded++;
    else summary.toSwitch++;
    for (const p of d.egress) send(p, pkt.data.length);
  }

  const by = (list: PortStatus[]) => new Map(list.map((p) => [p.port, p]));
  const b = by(before), a = by(after);
  for (const port of tables.upPorts) {
    const pb = b.get(port), pa = a.get(port);
    if (!pb || !pa || pb.state !== "up" || pa.state !== "up") {
      differences.push(`port ${port} was not up from the capture's start to its stop`);
      continue;
    }
    const m = model.counters(port);
    const cmp = (what: string, got: number, want: number) => {
      if (got !== want) {
        differences.push(`port ${port} ${what}: the switch counted ${got}, the model ${want}`);
      }
    };
    cmp("rx frames", pa.rxFrames - pb.rxFrames, m.rxFrames);
    cmp("rx bytes", pa.rxBytes - pb.rxBytes, m.rxBytes);
    const held = Math.min(pa.queueLen, m.txFrames);
    const heldBytes = (sent.get(port) ?? []).slice(m.txFrames - held).reduce((x, y) => x + y, 0);
    cmp("tx frames", pa.txFrames - pb.txFrames, m.txFrames - held + pb.queueLen);
    const txBytes = pa.txBytes - pb.txBytes, want = m.txBytes - heldBytes;
    if (pb.queueLen === 0) cmp("tx bytes", txBytes, want);
    else if (
      txBytes < want + pb.queueLen * FRAME_LIMITS.ib.min ||
      txBytes > want + pb.queueLen * FRAME_LIMITS.ib.max
    ) {
      differences.push(
        `port ${port} tx bytes: the switch counted ${txBytes}, the model ${want} and ` +
          `the ${pb.queueLen} frames queued at the start`,
      );
    }
    for (const r of DROP_REASONS) cmp(`drops.${r}`, pa.drops[r] - pb.drops[r], m.drops[r]);
  }
  return { differences, summary };
}

/** The LFT and multicast table of an ib-mode switch (`table` op), typed. */
export async function ibTables(
  fabric: { table(): Promise<Record<string, unknown>>; ports(): Promise<PortStatus[]> },
): Promise<IbFabricTables> {
  const t = await fabric.table();
  const lft = ((t.lft ?? []) as Record<string, unknown>[]).map((e) => ({
    lid: Number(e.lid),
    port: Number(e.port),
  }));
  const mcast = ((t.mcast ?? []) as Record<string, unknown>[]).map((g) => ({
    mlid: Number(g.mlid),
    ports: ((g.ports ?? []) as unknown[]).map(Number),
  }));
  const upPorts = (await fabric.ports()).filter((p) => p.state === "up").map((p) => p.port);
  return { upPorts, lft, mcast };
}

/**
 * How two readings of the switch's tables differ ("" when they do not): the
 * replay holds one reading for the whole capture, so a caller compares the
 * readings before and after it.
 */
export function ibTablesChanged(a: IbFabricTables, b: IbFabricTables): string {
  const lft = (t: IbFabricTables) =>
    JSON.stringify([...t.lft].sort((x, y) => x.lid - y.lid).map((e) => [e.lid, e.port]));
  const mcast = (t: IbFabricTables) =>
    JSON.stringify(
      [...t.mcast].sort((x, y) => x.mlid - y.mlid).map((g) => [
        g.mlid,
        [...g.ports].sort((x, y) => x - y),
      ]),
    );
  const out: string[] = [];
  if (lft(a) !== lft(b)) out.push(`LFT ${lft(a)} -> ${lft(b)}`);
  if (mcast(a) !== mcast(b)) out.push(`multicast ${mcast(a)} -> ${mcast(b)}`);
  if (a.upPorts.join() !== b.upPorts.join()) out.push(`up ports ${a.upPorts} -> ${b.upPorts}`);
  return out.join("; ");
}
