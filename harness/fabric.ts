/**
 * A running cnuas-switch: the daemon process (started and stopped by PID,
 * never left behind), its JSON-lines control client, and capture helpers.
 * The control protocol is documented in docs/switch.md.
 *
 * @example
 * ```ts
 * const fabric = await Fabric.start({ binary: await buildSwitch(config), mode: "eth" });
 * try {
 *   const ports = await fabric.ports();
 * } finally {
 *   await fabric.close();
 * }
 * ```
 */
import { join } from "node:path";
import { buildSwitch } from "./build/switch.ts";
import type { Config } from "./config.ts";
import type { FabricHandle, FabricMode } from "./matrix/row.ts";
import { DROP_REASONS, type DropReason } from "./models/switch.ts";

/** The daemon did not come up; the message carries the end of its log. */
export class FabricStartError extends Error {
  override name = "FabricStartError";
}

/** A control request got `ok: false`; `reply.error` says what to fix. */
export class FabricControlError extends Error {
  /** Error name, shown in messages and logs. */
  override name = "FabricControlError";
  /** Keeps the failed request and the daemon's reply for the caller to inspect. */
  constructor(readonly request: Record<string, unknown>, readonly reply: Record<string, unknown>) {
    super(`switch control ${String(request.op)}: ${String(reply.error)}`);
  }
}

/** The control connection broke or answered out of order. */
export class FabricProtocolError extends Error {
  override name = "FabricProtocolError";
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
  /** Capture state: file and packet count while active, the last error if any. */
  capture: { active: boolean; path?: string; packets?: number; error?: string };
}

/** One LFT entry; `port: null` clears it, port 0 is the switch itself. */
export interface LftEntry {
  /** Destination LID. */
  lid: number;
  /** Output port, or `null` to clear the entry. */
  port: number | null;
}

/** Options of `Fabric.start`. */
export interface FabricOptions {
  /** Path of the cnuas-switch binary (`buildSwitch`). */
  binary: string;
  mode: FabricMode;
  /** Default 64. */
  maxPorts?: number;
  /** Frames queued per slow port before `queue_full` drops; default 256. */
  queueDepth?: number;
  /** MAC aging in seconds (0 = never); default 300. */
  agingSec?: number;
  /** Daemon log; default inside the private socket directory (removed on close). */
  logPath?: string;
  /** Stop the daemon when this aborts. */
  signal?: AbortSignal;
  /** How long the daemon may take to answer its first `ping`; default 5000 ms. */
  startTimeoutMs?: number;
}

function num(v: unknown): number {
  return typeof v === "number" ? v : 0;
}

function drops(v: unknown): Record<DropReason, number> {
  const o = (v ?? {}) as Record<string, unknown>;
  return Object.fromEntries(DROP_REASONS.map((r) => [r, num(o[r])])) as Record<DropReason, number>;
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

/**
 * The typed control operations over any handle that can send a request — a
 * {@link Fabric} this process started, or the runner's `FabricHandle` a row
 * gets. Every method throws {@link FabricControlError} on `ok: false`.
 */
export class FabricClient {
  readonly #send: (request: Record<string, unknown>) => Promise<Record<string, unknown>>;

  /** Wrap `handle.control` (the reply as is, `ok: false` included). */
  constructor(handle: Pick<FabricHandle, "control">) {
    this.#send = (r) => handle.control(r);
  }

  /** Send one request; throw FabricControlError on `ok: false`. */
  async request(request: Record<string, unknown>): Promise<Record<string, unknown>> {
    const reply = await this.#send(request);
    if (reply.ok !== true) throw new FabricControlError(request, reply);
    return reply;
  }

  /** Ports with a device connected or taken down. */
  async ports(): Promise<PortStatus[]> {
    const r = await this.request({ op: "ports" });
    return (r.ports as Record<string, unknown>[]).map((p) => ({
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
    await this.request({ op: "inject", port, direction, hex: toHex(frame) });
  }

  /** Move the switch's clock forward (MAC aging) by whole seconds. */
  async advanceTime(seconds: number): Promise<void> {
    await this.request({ op: "advance_time", seconds });
  }

  /** Start a pcapng capture of every frame received (and injected) to `path`. */
  async startCapture(path: string): Promise<void> {
    await this.request({ op: "capture_start", path });
  }

  /** Stop the capture; resolves once the file is complete on disk. */
  async stopCapture(): Promise<{ path: string; packets: number }> {
    const r = await this.request({ op: "capture_stop" });
    return { path: String(r.path), packets: num(r.packets) };
  }
}

/** JSON-lines client: one request in flight per line, replies in request order. */
class ControlClient {
  #conn: Deno.UnixConn;
  #waiters: { resolve: (v: Record<string, unknown>) => void; reject: (e: Error) => void }[] = [];
  #reader: Promise<void>;
  #broken?: Error;

  constructor(conn: Deno.UnixConn) {
    this.#conn = conn;
    this.#reader = this.#readLoop();
  }

  async #readLoop(): Promise<void> {
    const dec = new TextDecoder();
    let buf = "";
    try {
      for await (const chunk of this.#conn.readable) {
        buf += dec.decode(chunk, { stream: true });
        let nl: number;
        while ((nl = buf.indexOf("\n")) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          const w = this.#waiters.shift();
          if (!w) continue;
          try {
            w.resolve(JSON.parse(line));
          } catch {
            w.reject(new FabricProtocolError(`switch sent a line that is not JSON: ${line}`));
          }
        }
      }
      this.#broken = new FabricProtocolError("the switch closed its control connection");
    } catch (e) {
      this.#broken = new FabricProtocolError(`control connection failed: ${(e as Error).message}`);
    }
    for (const w of this.#waiters.splice(0)) w.reject(this.#broken);
  }

  async line(text: string): Promise<Record<string, unknown>> {
    if (this.#broken) throw this.#broken;
    if (text.includes("\n")) throw new RangeError("a control request is one line");
    const p = new Promise<Record<string, unknown>>((resolve, reject) => {
      this.#waiters.push({ resolve, reject });
    });
    const bytes = new TextEncoder().encode(text + "\n");
    for (let off = 0; off < bytes.length;) off += await this.#conn.write(bytes.subarray(off));
    return await p;
  }

  async close(): Promise<void> {
    try {
      this.#conn.close();
    } catch {
      // already closed by the peer
    }
    await this.#reader;
  }
}

/** One daemon process and its control connection. */
interface DaemonProcess {
  child: Deno.ChildProcess;
  client: ControlClient;
  stderr: Promise<string>;
}

/** Spawn the daemon with its sockets in `dir` and connect to its control socket. */
async function spawnDaemon(
  opts: FabricOptions,
  dir: string,
  logPath: string,
): Promise<DaemonProcess> {
  const args = [
    "--mode",
    opts.mode,
    "--socket",
    join(dir, "fabric.sock"),
    "--control",
    join(dir, "control.sock"),
    "--log",
    logPath,
    "--exit-with",
    String(Deno.pid),
  ];
  if (opts.maxPorts !== undefined) args.push("--max-ports", String(opts.maxPorts));
  if (opts.queueDepth !== undefined) args.push("--queue-depth", String(opts.queueDepth));
  if (opts.agingSec !== undefined) args.push("--aging-sec", String(opts.agingSec));
  const child = new Deno.Command(opts.binary, {
    args,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  let exited = false;
  const status = child.status.then((s) => {
    exited = true;
    return s;
  });
  const deadline = performance.now() + (opts.startTimeoutMs ?? 5000);
  for (;;) {
    try {
      const conn = await Deno.connect({ transport: "unix", path: join(dir, "control.sock") });
      return { child, client: new ControlClient(conn), stderr };
    } catch {
      if (exited || performance.now() > deadline) {
        if (!exited) child.kill("SIGKILL");
        const s = await status;
        const err = (await stderr).trim();
        const log = await Deno.readTextFile(logPath).catch(() => "");
        throw new FabricStartError(
          `cnuas-switch ${opts.mode} did not come up (exit ${s.code}): ` +
            `${err || log.trim().split("\n").slice(-5).join("\n") || "no output"}`,
        );
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  }
}

/** A running cnuas-switch daemon and its control connection. */
export class Fabric implements FabricHandle {
  readonly mode: FabricMode;
  /** Data socket (SEQPACKET) devices connect to. */
  readonly socketPath: string;
  /** Control socket (JSON lines). */
  readonly controlPath: string;
  /** Daemon log file. */
  readonly logPath: string;
  /** Captures started through this handle (artifacts). */
  readonly captures: string[] = [];
  readonly #dir: string;
  #child: Deno.ChildProcess;
  #client: ControlClient;
  #stderr: Promise<string>;
  readonly #opts: FabricOptions;
  #nextId = 1;
  readonly #ops: FabricClient;
  #closed?: Promise<void>;
  #onAbort?: () => void;
  #signal?: AbortSignal;

  private constructor(
    opts: FabricOptions,
    dir: string,
    logPath: string,
    child: Deno.ChildProcess,
    client: ControlClient,
    stderr: Promise<string>,
  ) {
    this.mode = opts.mode;
    this.#opts = opts;
    this.#dir = dir;
    this.socketPath = join(dir, "fabric.sock");
    this.controlPath = join(dir, "control.sock");
    this.logPath = logPath;
    this.#child = child;
    this.#client = client;
    this.#stderr = stderr;
    this.#ops = new FabricClient(this);
    if (opts.signal) {
      this.#signal = opts.signal;
      this.#onAbort = () => void this.close();
      opts.signal.addEventListener("abort", this.#onAbort, { once: true });
    }
  }

  /** The daemon's PID. */
  get pid(): number {
    return this.#child.pid;
  }

  /** Start a daemon and wait until its control socket answers. */
  static async start(opts: FabricOptions): Promise<Fabric> {
    // Socket paths are capped at 107 bytes: keep them in a short private directory.
    const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cnuas-sw-" });
    const logPath = opts.logPath ?? join(dir, "switch.log");
    let proc: DaemonProcess;
    try {
      proc = await spawnDaemon(opts, dir, logPath);
    } catch (e) {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      throw e;
    }
    const fabric = new Fabric(opts, dir, logPath, proc.child, proc.client, proc.stderr);
    try {
      await fabric.request({ op: "ping" });
    } catch (e) {
      await fabric.close();
      throw new FabricStartError(`cnuas-switch did not answer ping: ${(e as Error).message}`);
    }
    return fabric;
  }

  /**
   * Kill the daemon (SIGKILL by default: a crash, as a device sees it — its
   * socket closes) and start a new one on the same socket paths, so devices
   * reconnect on their own. Learned tables, LFT and a running capture do not
   * survive; the log continues in the same file.
   */
  async restart(signal: "SIGKILL" | "SIGTERM" = "SIGKILL"): Promise<void> {
    if (this.#closed) throw new FabricProtocolError("restart after close");
    await this.#client.close();
    try {
      this.#child.kill(signal);
    } catch {
      // already exited
    }
    await this.#child.status;
    await this.#stderr.catch(() => "");
    const proc = await spawnDaemon(this.#opts, this.#dir, this.logPath);
    this.#child = proc.child;
    this.#client = proc.client;
    this.#stderr = proc.stderr;
    await this.request({ op: "ping" });
  }

  /** Send one request (an `id` is added) and return the reply as is, `ok: false` included. */
  async control(request: Record<string, unknown>): Promise<Record<string, unknown>> {
    const id = this.#nextId++;
    const reply = await this.#client.line(JSON.stringify({ ...request, id }));
    if (reply.id !== id) {
      throw new FabricProtocolError(`reply id ${JSON.stringify(reply.id)} for request ${id}`);
    }
    return reply;
  }

  /** Send a raw line (for protocol tests) and return the reply. */
  controlLine(line: string): Promise<Record<string, unknown>> {
    return this.#client.line(line);
  }

  /** Like `control`, but throws FabricControlError on `ok: false`. */
  request(request: Record<string, unknown>): Promise<Record<string, unknown>> {
    return this.#ops.request(request);
  }

  /** Ports with a device connected or taken down. */
  ports(): Promise<PortStatus[]> {
    return this.#ops.ports();
  }

  /** Whole-switch totals. */
  stats(): Promise<FabricStats> {
    return this.#ops.stats();
  }

  /** The mode's table: `macs` (eth), `lft` + `mcast` (ib) or `gpu_ids` (link). */
  table(): Promise<Record<string, unknown>> {
    return this.#ops.table();
  }

  /** Set (or with `port: null` clear) LFT entries; all or nothing. */
  setLft(entries: LftEntry[]): Promise<void> {
    return this.#ops.setLft(entries);
  }

  /** Subscribe a port to a multicast LID. */
  mcastJoin(mlid: number, port: number): Promise<void> {
    return this.#ops.mcastJoin(mlid, port);
  }

  /** Unsubscribe a port from a multicast LID. */
  mcastLeave(mlid: number, port: number): Promise<void> {
    return this.#ops.mcastLeave(mlid, port);
  }

  /** Pull the cable: the device's socket closes, the slot stays reserved until `linkUp`. */
  linkDown(port: number): Promise<void> {
    return this.#ops.linkDown(port);
  }

  /** Free a downed slot: the next connection takes the lowest free port. */
  linkUp(port: number): Promise<void> {
    return this.#ops.linkUp(port);
  }

  /** Inject a frame as if it arrived on `port` (ingress) or send it out of `port` (egress). */
  inject(
    port: number,
    frame: Uint8Array,
    direction: "ingress" | "egress" = "ingress",
  ): Promise<void> {
    return this.#ops.inject(port, frame, direction);
  }

  /** Move the switch's clock forward (MAC aging) by whole seconds. */
  advanceTime(seconds: number): Promise<void> {
    return this.#ops.advanceTime(seconds);
  }

  /** Start a pcapng capture of every frame received (and injected) to `path`. */
  async startCapture(path: string): Promise<void> {
    await this.#ops.startCapture(path);
    this.captures.push(path);
  }

  /** Stop the capture; resolves once the file is complete on disk. */
  stopCapture(): Promise<{ path: string; packets: number }> {
    return this.#ops.stopCapture();
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

  /**
   * Stop the daemon: SIGTERM (it flushes a running capture), SIGKILL after
   * 3 s. Returns the artifacts worth keeping (log when given, captures).
   */
  async close(): Promise<string[]> {
    this.#closed ??= this.#shutdown();
    await this.#closed;
    const keep = this.logPath.startsWith(this.#dir + "/") ? [] : [this.logPath];
    return [...keep, ...this.captures];
  }

  async #shutdown(): Promise<void> {
    if (this.#signal && this.#onAbort) this.#signal.removeEventListener("abort", this.#onAbort);
    await this.#client.close();
    try {
      this.#child.kill("SIGTERM");
    } catch {
      // already exited
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const killed = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        try {
          this.#child.kill("SIGKILL");
        } catch {
          // exited in between
        }
        resolve();
      }, 3000);
    });
    await Promise.race([this.#child.status, killed]);
    await this.#child.status;
    clearTimeout(timer);
    await this.#stderr.catch(() => "");
    await Deno.remove(this.#dir, { recursive: true }).catch(() => {});
  }

  /** `await using` support. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

/** Lowercase hex of a frame (the control protocol's `hex` field). */
export function toHex(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += b.toString(16).padStart(2, "0");
  return s;
}

/**
 * The runner's fabric starter (`FabricStarter` in harness/matrix/lab.ts):
 * builds the daemon when needed and logs into the row's directory.
 */
export async function startFabric(config: Config, mode: FabricMode, dir: string): Promise<Fabric> {
  await Deno.mkdir(dir, { recursive: true });
  return await Fabric.start({
    binary: await buildSwitch(config),
    mode,
    logPath: join(dir, `switch-${mode}.log`),
  });
}
