/**
 * The cnuas-switch control protocol (docs/switch.md, "Control protocol"):
 * typed operations and their replies, the errors they throw, and the
 * JSON-lines connection they travel over. The daemon process is switch.ts.
 */
import { HilError } from "../errors.ts";
import { readLines } from "../exec.ts";
import { DROP_REASONS, type DropReason } from "../models/switch.ts";
import type { EcnMode, PrioConfig } from "../models/switch_qos.ts";

/** The mode a cnuas-switch fabric runs in. */
export type FabricMode = "eth" | "ib" | "link";

/** A control request got `ok: false`; `reply.error` says what to fix. */
export class FabricControlError extends HilError {
  /** Keeps the failed request and the daemon's reply for the caller to inspect. */
  constructor(readonly request: Record<string, unknown>, readonly reply: Record<string, unknown>) {
    super(`switch control ${String(request.op)}: ${String(reply.error)}`);
  }
}

/** The control connection broke or answered out of order. */
export class FabricProtocolError extends HilError {}

/** Frames one `inject` request may carry (the switch's SW_INJECT_MAX_FRAMES, docs/switch.md). */
export const INJECT_MAX_FRAMES = 1024;

/** What one {@link FabricOps.injectFrames} request did. */
export interface InjectResult {
  /** Frames put on the fabric (fewer than asked only if the port went down on the way). */
  frames: number;
  /** Their bytes. */
  bytes: number;
  /** Frames in the port's egress queues after the last one. */
  queueLen: number;
}

/** Per-port counters as the daemon reports them. */
export interface PortStatus {
  /** Port number (from 1). */
  port: number;
  /** `up` with a device connected, `down` after `linkDown` (slot reserved). */
  state: "up" | "down";
  /** Frames queued for sending to the port's device. */
  queueLen: number;
  /** CnuasLink mode: the gpu_id learned on this port. */
  gpuId?: number;
  /** Frames received from the port's device. */
  rxFrames: number;
  /** Bytes received from the port's device. */
  rxBytes: number;
  /** Frames sent to the port's device. */
  txFrames: number;
  /** Bytes sent to the port's device. */
  txBytes: number;
  /** Dropped frames by reason. */
  drops: Record<DropReason, number>;
}

/** Whole-switch statistics (`stats` op). */
export interface FabricStats {
  /** The mode the daemon runs in. */
  mode: FabricMode;
  /** Port slots (1..maxPorts). */
  maxPorts: number;
  /** Ports with a device connected now. */
  portsUp: number;
  /** Device connections accepted since start. */
  connections: number;
  /** Device connections refused because every port was taken or down. */
  refused: number;
  /** Frames received since start, over all ports (closed connections included). */
  rxFrames: number;
  /** Bytes received since start, over all ports (closed connections included). */
  rxBytes: number;
  /** Frames sent since start, over all ports (closed connections included). */
  txFrames: number;
  /** Bytes sent since start, over all ports (closed connections included). */
  txBytes: number;
  /** Dropped frames by reason since start, over all ports (closed connections included). */
  drops: Record<DropReason, number>;
  /** eth: PFC frames the switch sent (XOFF and XON), in `txFrames` too and captured outbound. */
  pfcSent: number;
  /** Capture state: file and packet count while active, the last error if any. */
  capture: { active: boolean; path?: string; packets?: number; files?: number; error?: string };
}

/** One LFT entry; `port: null` clears it, port 0 is the switch itself. */
export interface LftEntry {
  /** Destination LID. */
  lid: number;
  /** Output port, or `null` to clear the entry. */
  port: number | null;
}

/** One learned MAC address of an eth-mode switch (`table` op). */
export interface MacEntry {
  /** `02:00:…`, lowercase. */
  mac: string;
  /** The port it was learned on. */
  port: number;
  /** Time since it was last seen, ms (switch clock). */
  ageMs: number;
}

/** A port's state as the subnet manager sees it (docs/switch.md, "Sequence per end port"). */
export type SmPortState = "active" | "armed" | "init" | "probing" | "unresponsive" | "down";

/** One port in the `sm` reply. */
export interface SmPort {
  /** Switch port (from 1). */
  port: number;
  /** Where the SM's sequence stands for this port. */
  state: SmPortState;
  /** The end node's port GUID (16 lowercase hex digits), once discovered. */
  guid?: string;
  /** The LID the SM gave that GUID, once discovered. */
  lid?: number;
  /** The node's NodeDescription text, once read. */
  nodeDesc?: string;
}

/** One SA multicast group in the `sm` reply. */
export interface SmGroup {
  /** MGID, eight groups of four hex digits. */
  mgid: string;
  /** Its multicast LID (0xC000..0xFFFE). */
  mlid: number;
  /** The group's Q_Key. */
  qkey: number;
  /** Member switch ports, ascending. */
  ports: number[];
}

/** MAD counters of the SM and SA. */
export interface SmMadCounters {
  /** MADs sent: SMPs, SA answers, TrapRepresses. */
  sent: number;
  /** Frames handed to the SM. */
  received: number;
  /** SMP timeouts (every expiry). */
  timeouts: number;
  /** SMP resends. */
  retries: number;
  /** Frames the SM could not use (truncated, garbage, unmatched answers). */
  bad: number;
  /** SA requests answered. */
  saRequests: number;
  /** SA answers with a non-zero status. */
  saErrors: number;
}

/** The subnet manager's state (`sm` op, ib mode). */
export interface SmStatus {
  /** False when the daemon runs with `--no-sm` (everything else is then empty). */
  enabled: boolean;
  /** The SM's own LID. */
  lid: number;
  /** Subnet prefix, `fe80:0000:0000:0000` form. */
  subnetPrefix: string;
  /** Periodic sweep passes so far. */
  sweeps: number;
  /** Connected ports and ports where a node was ever discovered, ascending. */
  ports: SmPort[];
  /** SA multicast groups (the IPoIB broadcast group first). */
  groups: SmGroup[];
  /** MAD counters. */
  mads: SmMadCounters;
}

/** One egress queue's thresholds (`qos_get`): the model's {@link PrioConfig} and its priority. */
export interface QosPrioConfig extends PrioConfig {
  /** Priority 0..7. */
  prio: number;
}

/** One port's QoS configuration (`qos_get`). */
export interface QosPortConfig {
  /** Port number. */
  port: number;
  /** Drain rate in Mbit/s, 0 = as fast as the device reads. */
  drainMbps: number;
  /** Test hook: egress stopped (frames queue) while true. */
  hold: boolean;
  /** Priorities with PFC enabled, ascending. */
  pfc: number[];
  /** Thresholds of priorities 0..7. */
  prios: QosPrioConfig[];
}

/** The switch's QoS configuration (`qos_get`). */
export interface QosConfig {
  /** Nominal link speed the PFC quanta are counted at, Mb/s (100000 unless set). */
  linkMbps: number;
  /** Quanta in the switch's XOFF frames. */
  pfcQuanta: number;
  /** Their pause time in ns (quanta times 5.12 ns). */
  pauseNs: number;
  /** Seed of the RED generator. */
  ecnSeed: number;
  /** DSCP 0..63 to priority. */
  dscpMap: number[];
  /** Every port asked for. */
  ports: QosPortConfig[];
}

/** A `qos_set` request; every field optional, all checked before any applies. */
export interface QosSetRequest {
  /** The port to configure; absent: every port. */
  port?: number;
  /** Drain rate, Mbit/s (0 = unlimited). */
  drainMbps?: number;
  /** Stop (true) or restart (false) the port's egress: a test hook. */
  hold?: boolean;
  /** The priorities with PFC on (replaces the set; `[]` turns PFC off). */
  pfc?: number[];
  /** Threshold edits, per priority. */
  prios?: ({ prio: number } & Partial<Omit<QosPrioConfig, "prio">>)[];
  /** DSCP-to-priority edits (switch-wide), as `dcb app ... dscp-prio` gives them. */
  dscp?: { dscp: number; prio: number }[];
  /** Quanta of the switch's XOFF frames, 1..65535 (switch-wide). */
  pfcQuanta?: number;
  /** Reseed the RED generator (switch-wide). */
  ecnSeed?: number;
  /** Nominal link speed the quanta count at, Mb/s (switch-wide; default 100000, as the hosts). */
  linkMbps?: number;
}

/** Counters and state of one port's priority (`qos_stats`). */
export interface QosPrioStats {
  /** Priority 0..7. */
  prio: number;
  /** Frames in this egress queue now. */
  queueLen: number;
  /** The queue is above XOFF and not yet back at XON (its senders are paused). */
  xoff: boolean;
  /** Egress to this port on this priority is paused by the port's own PFC now. */
  paused: boolean;
  /** Egress queues that hold this port paused on this priority now. */
  pausedBy: number;
  /** Frames / bytes received from the port on this priority (MAC Control excluded). */
  rxFrames: number;
  rxBytes: number;
  /** Frames / bytes sent to the port on this priority (the switch's PFC frames excluded). */
  txFrames: number;
  txBytes: number;
  /** XOFF frames (refreshes included) the switch sent to the port for this priority. */
  pauseSent: number;
  /** XON frames (quanta 0) the switch sent to the port for this priority. */
  resumeSent: number;
  /** PFC frames from the port with this priority's bit and non-zero quanta. */
  pauseReceived: number;
  /** ... with quanta 0. */
  resumeReceived: number;
  /** Time egress to the port on this priority was paused by its PFC, in microseconds. */
  pauseUs: number;
  /** Packets CE-marked in this egress queue. */
  ecnMarked: number;
  /** Frames dropped because this egress queue was full (no PFC on it). */
  queueFull: number;
  /** Frames this port sent into a full PFC queue (it ignored the pause). */
  pfcViolation: number;
}

/** One port's `qos_stats`. */
export interface QosPortStats {
  /** Port number. */
  port: number;
  /** Frames in all its egress queues. */
  queueLen: number;
  /** Priorities 0..7. */
  prios: QosPrioStats[];
}

/**
 * The typed control operations of a running switch: what a row gets to
 * drive its fabric with. Every operation throws {@link FabricControlError}
 * when the daemon refuses it.
 */
export interface FabricOps {
  /** Ports with a device connected or taken down. */
  ports(): Promise<PortStatus[]>;
  /** Whole-switch totals. */
  stats(): Promise<FabricStats>;
  /** The mode's table: `macs` (eth), `lft` + `mcast` (ib) or `gpu_ids` (link). */
  table(): Promise<Record<string, unknown>>;
  /** The MAC table of an eth-mode switch. */
  macs(): Promise<MacEntry[]>;
  /** The port `mac` was learned on; undefined when the switch has not learned it. */
  macPort(mac: string): Promise<number | undefined>;
  /** Set (or with `port: null` clear) LFT entries; all or nothing. */
  setLft(entries: LftEntry[]): Promise<void>;
  /** Subscribe a port to a multicast LID. */
  mcastJoin(mlid: number, port: number): Promise<void>;
  /** Unsubscribe a port from a multicast LID. */
  mcastLeave(mlid: number, port: number): Promise<void>;
  /** Pull the cable: the device's socket closes, the slot stays reserved until `linkUp`. */
  linkDown(port: number): Promise<void>;
  /** Free a downed slot: the next connection takes the lowest free port. */
  linkUp(port: number): Promise<void>;
  /** Inject a frame as if it arrived on `port` (ingress) or send it out of `port` (egress). */
  inject(port: number, frame: Uint8Array, direction?: "ingress" | "egress"): Promise<void>;
  /**
   * Inject up to {@link INJECT_MAX_FRAMES} frames in order in one request
   * (all checked before any is sent); resolves to what the switch did and
   * the port's egress queue length after the last one.
   */
  injectFrames(
    port: number,
    frames: readonly Uint8Array[],
    direction?: "ingress" | "egress",
  ): Promise<InjectResult>;
  /** Move the switch's clock forward (MAC aging) by whole seconds. */
  advanceTime(seconds: number): Promise<void>;
  /**
   * Start a pcapng capture of every frame received (and injected) to `path`;
   * resolves to the port counters at the instant it started. With
   * `fileBytes` the switch rolls over to `<stem>.1.pcapng`, `<stem>.2.pcapng`…
   * before a file would pass that size (docs/switch.md, "Capture").
   */
  startCapture(path: string, opts?: { fileBytes?: number }): Promise<PortStatus[]>;
  /**
   * Stop the capture; resolves once the files are complete on disk, with the
   * port counters at the instant it stopped.
   */
  stopCapture(): Promise<CaptureStopped>;
  /** Wait until `n` ports are up (devices connect asynchronously). */
  waitForPorts(n: number, timeoutMs?: number): Promise<PortStatus[]>;
  /** The subnet manager's state (ib mode): LIDs, port states, groups, MAD counters. */
  sm(): Promise<SmStatus>;
  /** Change QoS settings (eth mode); resolves to the number of ports configured. */
  qosSet(req: QosSetRequest): Promise<number>;
  /** The QoS configuration of one port (or every port). */
  qosGet(port?: number): Promise<QosConfig>;
  /** Per-priority counters of one connected port (or all). */
  qosStats(port?: number): Promise<QosPortStats[]>;
}

/** One file of a capture, as `capture_stop` lists it. */
export interface CaptureFile {
  /** Where it is. */
  path: string;
  /** Packets in it. */
  packets: number;
  /** Its length in bytes: everything the switch wrote to it. */
  bytes: number;
}

/** What `capture_stop` said. */
export interface CaptureStopped {
  /** The first file's path (the one `capture_start` named). */
  path: string;
  /** Packets over every file. */
  packets: number;
  /** Every file, in the order written (one unless the capture rolled over). */
  files: CaptureFile[];
  /** Port counters at the instant the capture stopped. */
  ports: PortStatus[];
}

/** The `ports` list of a reply (ports, capture_start, capture_stop). */
function portList(v: unknown): PortStatus[] {
  return ((v ?? []) as Record<string, unknown>[]).map((p) => ({
    port: num(p.port),
    state: p.state as "up" | "down",
    queueLen: num(p.queue_len),
    gpuId: typeof p.gpu_id === "number" ? p.gpu_id : undefined,
    rxFrames: num(p.rx_frames),
    rxBytes: num(p.rx_bytes),
    txFrames: num(p.tx_frames),
    txBytes: num(p.tx_bytes),
    drops: drops(p.drops),
  }));
}

function num(v: unknown): number {
  return typeof v === "number" ? v : 0;
}

function drops(v: unknown): Record<DropReason, number> {
  const o = (v ?? {}) as Record<string, unknown>;
  return Object.fromEntries(DROP_REASONS.map((r) => [r, num(o[r])])) as Record<DropReason, number>;
}

/**
 * The typed operations over a raw `control` request: each builds its
 * request, checks `ok` and reads the reply's fields into camelCase types.
 * A subclass supplies the transport ({@link Fabric} over its socket).
 */
export abstract class FabricClient implements FabricOps {
  /**
   * Send one request and return the reply as is, `ok: false` included. Raw
   * on purpose: protocol tests send malformed requests through it; rows use
   * the typed operations.
   */
  abstract control(request: Record<string, unknown>): Promise<Record<string, unknown>>;

  /** Send one request; throw FabricControlError on `ok: false`. */
  async request(request: Record<string, unknown>): Promise<Record<string, unknown>> {
    const reply = await this.control(request);
    if (reply.ok !== true) throw new FabricControlError(request, reply);
    return reply;
  }

  /** Ports with a device connected or taken down. */
  async ports(): Promise<PortStatus[]> {
    return portList((await this.request({ op: "ports" })).ports);
  }

  /** Whole-switch totals. */
  async stats(): Promise<FabricStats> {
    const r = await this.request({ op: "stats" });
    return {
      mode: r.mode as FabricMode,
      maxPorts: num(r.max_ports),
      portsUp: num(r.ports_up),
      connections: num(r.connections),
      refused: num(r.refused),
      rxFrames: num(r.rx_frames),
      rxBytes: num(r.rx_bytes),
      txFrames: num(r.tx_frames),
      txBytes: num(r.tx_bytes),
      drops: drops(r.drops),
      pfcSent: num(r.pfc_sent),
      capture: r.capture as FabricStats["capture"],
    };
  }

  /** The mode's table: `macs` (eth), `lft` + `mcast` (ib) or `gpu_ids` (link). */
  table(): Promise<Record<string, unknown>> {
    return this.request({ op: "table" });
  }

  /** The MAC table of an eth-mode switch. */
  async macs(): Promise<MacEntry[]> {
    const r = await this.table();
    return ((r.macs ?? []) as Record<string, unknown>[]).map((m) => ({
      mac: String(m.mac),
      port: num(m.port),
      ageMs: num(m.age_ms),
    }));
  }

  /** The port `mac` was learned on; undefined when the switch has not learned it. */
  async macPort(mac: string): Promise<number | undefined> {
    const want = mac.toLowerCase();
    return (await this.macs()).find((m) => m.mac === want)?.port;
  }

  /** Set (or with `port: null` clear) LFT entries; all or nothing. */
  async setLft(entries: LftEntry[]): Promise<void> {
    await this.request({ op: "set_lft", entries });
  }

  /** Subscribe a port to a multicast LID. */
  async mcastJoin(mlid: number, port: number): Promise<void> {
    await this.request({ op: "mcast_join", mlid, port });
  }

  /** Unsubscribe a port from a multicast LID. */
  async mcastLeave(mlid: number, port: number): Promise<void> {
    await this.request({ op: "mcast_leave", mlid, port });
  }

  /** Pull the cable: the device's socket closes, the slot stays reserved until `linkUp`. */
  async linkDown(port: number): Promise<void> {
    await this.request({ op: "link_down", port });
  }

  /** Free a downed slot: the next connection takes the lowest free port. */
  async linkUp(port: number): Promise<void> {
    await this.request({ op: "link_up", port });
  }

  /** Inject a frame as if it arrived on `port` (ingress) or send it out of `port` (egress). */
  async inject(
    port: number,
    frame: Uint8Array,
    direction: "ingress" | "egress" = "ingress",
  ): Promise<void> {
    await this.request({ op: "inject", port, direction, hex: frame.toHex() });
  }

  /** Inject up to {@link INJECT_MAX_FRAMES} frames in order in one request. */
  async injectFrames(
    port: number,
    frames: readonly Uint8Array[],
    direction: "ingress" | "egress" = "ingress",
  ): Promise<InjectResult> {
    const r = await this.request({
      op: "inject",
      port,
      direction,
      frames: frames.map((f) => f.toHex()),
    });
    return { frames: num(r.frames), bytes: num(r.bytes), queueLen: num(r.queue_len) };
  }

  /** Move the switch's clock forward (MAC aging) by whole seconds. */
  async advanceTime(seconds: number): Promise<void> {
    await this.request({ op: "advance_time", seconds });
  }

  /** Start a pcapng capture of every frame received (and injected) to `path`. */
  async startCapture(path: string, opts: { fileBytes?: number } = {}): Promise<PortStatus[]> {
    const req = {
      op: "capture_start",
      path,
      ...(opts.fileBytes ? { file_bytes: opts.fileBytes } : {}),
    };
    return portList((await this.request(req)).ports);
  }

  /** Stop the capture; resolves once the files are complete on disk. */
  async stopCapture(): Promise<CaptureStopped> {
    const r = await this.request({ op: "capture_stop" });
    const files = ((r.files ?? []) as Record<string, unknown>[]).map((f) => ({
      path: String(f.path),
      packets: num(f.packets),
      bytes: num(f.bytes),
    }));
    return { path: String(r.path), packets: num(r.packets), files, ports: portList(r.ports) };
  }

  /** The subnet manager's state (ib mode): LIDs, port states, groups, MAD counters. */
  async sm(): Promise<SmStatus> {
    const r = await this.request({ op: "sm" });
    const m = (r.mads ?? {}) as Record<string, unknown>;
    return {
      enabled: r.enabled === true,
      lid: num(r.lid),
      subnetPrefix: String(r.subnet_prefix ?? ""),
      sweeps: num(r.sweeps),
      ports: ((r.ports ?? []) as Record<string, unknown>[]).map((p) => ({
        port: num(p.port),
        state: p.state as SmPortState,
        guid: typeof p.guid === "string" ? p.guid : undefined,
        lid: typeof p.lid === "number" ? p.lid : undefined,
        nodeDesc: typeof p.node_desc === "string" ? p.node_desc : undefined,
      })),
      groups: ((r.groups ?? []) as Record<string, unknown>[]).map((g) => ({
        mgid: String(g.mgid),
        mlid: num(g.mlid),
        qkey: num(g.qkey),
        ports: (g.ports ?? []) as number[],
      })),
      mads: {
        sent: num(m.sent),
        received: num(m.received),
        timeouts: num(m.timeouts),
        retries: num(m.retries),
        bad: num(m.bad),
        saRequests: num(m.sa_requests),
        saErrors: num(m.sa_errors),
      },
    };
  }

  /**
   * Change QoS settings (eth mode); resolves to the number of ports configured.
   *
   * @example
   * ```ts
   * await fabric.qosSet({ port: 3, drainMbps: 10, pfc: [3], prios: [{ prio: 3, xoff: 32, xon: 16 }] });
   * ```
   */
  async qosSet(req: QosSetRequest): Promise<number> {
    const wire: Record<string, unknown> = { op: "qos_set" };
    if (req.port !== undefined) wire.port = req.port;
    if (req.drainMbps !== undefined) wire.drain_mbps = req.drainMbps;
    if (req.hold !== undefined) wire.hold = req.hold;
    if (req.pfc !== undefined) wire.pfc = req.pfc;
    if (req.dscp !== undefined) wire.dscp = req.dscp;
    if (req.pfcQuanta !== undefined) wire.pfc_quanta = req.pfcQuanta;
    if (req.ecnSeed !== undefined) wire.ecn_seed = req.ecnSeed;
    if (req.linkMbps !== undefined) wire.link_mbps = req.linkMbps;
    if (req.prios !== undefined) {
      wire.prios = req.prios.map((p) => ({
        prio: p.prio,
        ...(p.xoff !== undefined ? { xoff: p.xoff } : {}),
        ...(p.xon !== undefined ? { xon: p.xon } : {}),
        ...(p.ecn !== undefined ? { ecn: p.ecn } : {}),
        ...(p.ecnMin !== undefined ? { ecn_min: p.ecnMin } : {}),
        ...(p.ecnMax !== undefined ? { ecn_max: p.ecnMax } : {}),
        ...(p.ecnProb !== undefined ? { ecn_prob: p.ecnProb } : {}),
      }));
    }
    return num((await this.request(wire)).ports);
  }

  /** The QoS configuration of one port (or every port). */
  async qosGet(port?: number): Promise<QosConfig> {
    const r = await this.request({ op: "qos_get", ...(port !== undefined ? { port } : {}) });
    return {
      linkMbps: num(r.link_mbps),
      pfcQuanta: num(r.pfc_quanta),
      pauseNs: num(r.pause_ns),
      ecnSeed: num(r.ecn_seed),
      dscpMap: (r.dscp_map ?? []) as number[],
      ports: ((r.ports ?? []) as Record<string, unknown>[]).map((p) => ({
        port: num(p.port),
        drainMbps: num(p.drain_mbps),
        hold: p.hold === true,
        pfc: (p.pfc ?? []) as number[],
        prios: ((p.prios ?? []) as Record<string, unknown>[]).map((c) => ({
          prio: num(c.prio),
          xoff: num(c.xoff),
          xon: num(c.xon),
          ecn: c.ecn as EcnMode,
          ecnMin: num(c.ecn_min),
          ecnMax: num(c.ecn_max),
          ecnProb: num(c.ecn_prob),
        })),
      })),
    };
  }

  /** Per-priority counters of one connected port (or all). */
  async qosStats(port?: number): Promise<QosPortStats[]> {
    const r = await this.request({ op: "qos_stats", ...(port !== undefined ? { port } : {}) });
    return ((r.ports ?? []) as Record<string, unknown>[]).map((p) => ({
      port: num(p.port),
      queueLen: num(p.queue_len),
      prios: ((p.prios ?? []) as Record<string, unknown>[]).map((c) => ({
        prio: num(c.prio),
        queueLen: num(c.queue_len),
        xoff: c.xoff === true,
        paused: c.paused === true,
        pausedBy: num(c.paused_by),
        rxFrames: num(c.rx_frames),
        rxBytes: num(c.rx_bytes),
        txFrames: num(c.tx_frames),
        txBytes: num(c.tx_bytes),
        pauseSent: num(c.pause_sent),
        resumeSent: num(c.resume_sent),
        pauseReceived: num(c.pause_received),
        resumeReceived: num(c.resume_received),
        pauseUs: num(c.pause_us),
        ecnMarked: num(c.ecn_marked),
        queueFull: num(c.queue_full),
        pfcViolation: num(c.pfc_violation),
      })),
    }));
  }

  /** Wait until `n` ports are up (devices connect asynchronously). */
  async waitForPorts(n: number, timeoutMs = 5000): Promise<PortStatus[]> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const ports = (await this.ports()).filter((p) => p.state === "up");
      if (ports.length >= n) return ports;
      if (performance.now() > deadline) {
        throw new FabricProtocolError(`${ports.length} of ${n} ports up after ${timeoutMs} ms`);
      }
      await new Promise((r) => setTimeout(r, 2));
    }
  }
}

/** JSON-lines connection: replies come in request order, so each line answers the oldest waiter. */
export class ControlConnection {
  #conn: Deno.UnixConn;
  #waiters: { resolve: (v: Record<string, unknown>) => void; reject: (e: Error) => void }[] = [];
  #reader: Promise<void>;
  #writing: Promise<void> = Promise.resolve();
  #broken?: Error;

  /** Start reading replies from `conn`. */
  constructor(conn: Deno.UnixConn) {
    this.#conn = conn;
    this.#reader = this.#readLoop();
  }

  async #readLoop(): Promise<void> {
    try {
      for await (const line of readLines(this.#conn.readable)) {
        const w = this.#waiters.shift();
        if (!w) continue;
        try {
          w.resolve(JSON.parse(line));
        } catch {
          w.reject(new FabricProtocolError(`switch sent a line that is not JSON: ${line}`));
        }
      }
      this.#broken = new FabricProtocolError("the switch closed its control connection");
    } catch (e) {
      this.#broken = new FabricProtocolError(`control connection failed: ${(e as Error).message}`);
    }
    for (const w of this.#waiters.splice(0)) w.reject(this.#broken);
  }

  /** Send one line (no newline in it) and return the reply it gets. */
  async line(text: string): Promise<Record<string, unknown>> {
    if (this.#broken) throw this.#broken;
    if (text.includes("\n")) throw new RangeError("a control request is one line");
    const p = new Promise<Record<string, unknown>>((resolve, reject) => {
      this.#waiters.push({ resolve, reject });
    });
    const bytes = new TextEncoder().encode(text + "\n");
    // Lines sent without awaiting in between are pipelined: each write waits
    // for the one before it, so lines go out whole and in the waiters' order.
    const written = this.#writing.then(async () => {
      for (let off = 0; off < bytes.length;) off += await this.#conn.write(bytes.subarray(off));
    });
    this.#writing = written.catch(() => {});
    await written;
    return await p;
  }

  /** Close the socket and wait for the reader to fail the waiters left. */
  async close(): Promise<void> {
    try {
      this.#conn.close();
    } catch {
      // already closed by the peer
    }
    await this.#reader;
  }
}
