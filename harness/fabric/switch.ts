/**
 * A running cnuas-switch: the daemon process (started and stopped by PID,
 * never left behind) with the typed control operations of client.ts. It
 * runs the binary it is given and builds nothing: the lab hands it the
 * switch build.
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
import { HilError } from "../errors.ts";
import { join } from "node:path";
import {
  type CaptureStopped,
  ControlConnection,
  FabricClient,
  type FabricMode,
  FabricProtocolError,
  type PortStatus,
} from "./client.ts";

/** The daemon did not come up; the message carries the end of its log. */
export class FabricStartError extends HilError {}

/** Options of `Fabric.start`. */
export interface FabricOptions {
  /** Path of the cnuas-switch binary (`buildSwitch`). */
  binary: string;
  mode: FabricMode;
  /** Default 64. */
  maxPorts?: number;
  /** Frames queued per slow port and priority before `queue_full` drops; default 256. */
  queueDepth?: number;
  /** MAC aging in seconds (0 = never); default 300. */
  agingSec?: number;
  /** ib: run without the subnet manager (`--no-sm`): frames for the switch drop as `no_sm`. */
  noSm?: boolean;
  /** ib: the SM's own LID (`--sm-lid-start`, default 1); end ports get the LIDs after it. */
  smLidStart?: number;
  /** ib: the SM's sweep period in ms (`--sm-sweep-ms`, default 500). */
  smSweepMs?: number;
  /** ib: the subnet prefix, `fe80:0000:0000:0000` form (`--subnet-prefix`). */
  subnetPrefix?: string;
  /** Daemon log; default inside the private socket directory (removed on close). */
  logPath?: string;
  /** Stop the daemon when this aborts. */
  signal?: AbortSignal;
  /** How long the daemon may take to answer its first `ping`; default 5000 ms. */
  startTimeoutMs?: number;
}

/** One daemon process and its control connection. */
interface DaemonProcess {
  child: Deno.ChildProcess;
  client: ControlConnection;
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
  if (opts.noSm) args.push("--no-sm");
  if (opts.smLidStart !== undefined) args.push("--sm-lid-start", String(opts.smLidStart));
  if (opts.smSweepMs !== undefined) args.push("--sm-sweep-ms", String(opts.smSweepMs));
  if (opts.subnetPrefix !== undefined) args.push("--subnet-prefix", opts.subnetPrefix);
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
      return { child, client: new ControlConnection(conn), stderr };
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
export class Fabric extends FabricClient {
  /** The mode the daemon runs in (a {@link restart} may change it). */
  get mode(): FabricMode {
    return this.#opts.mode;
  }
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
  #client: ControlConnection;
  #stderr: Promise<string>;
  #opts: FabricOptions;
  #nextId = 1;
  #closed?: Promise<void>;
  #onAbort?: () => void;
  #signal?: AbortSignal;

  private constructor(
    opts: FabricOptions,
    dir: string,
    logPath: string,
    child: Deno.ChildProcess,
    client: ControlConnection,
    stderr: Promise<string>,
  ) {
    super();
    this.#opts = opts;
    this.#dir = dir;
    this.socketPath = join(dir, "fabric.sock");
    this.controlPath = join(dir, "control.sock");
    this.logPath = logPath;
    this.#child = child;
    this.#client = client;
    this.#stderr = stderr;
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
   * survive; the log continues in the same file. With `mode` the new daemon
   * runs in that mode instead (the same guests' vnics then sit on an eth or
   * an ib fabric, as their driver is loaded for: bench ib-perf).
   */
  async restart(signal: "SIGKILL" | "SIGTERM" = "SIGKILL", mode?: FabricMode): Promise<void> {
    if (this.#closed) throw new FabricProtocolError("restart after close");
    await this.#client.close();
    try {
      this.#child.kill(signal);
    } catch {
      // already exited
    }
    await this.#child.status;
    await this.#stderr.catch(() => "");
    if (mode !== undefined) this.#opts = { ...this.#opts, mode };
    const proc = await spawnDaemon(this.#opts, this.#dir, this.logPath);
    this.#child = proc.child;
    this.#client = proc.client;
    this.#stderr = proc.stderr;
    await this.request({ op: "ping" });
  }

  /** Send one request (an `id` is added) and return the reply as is, `ok: false` included. */
  override async control(request: Record<string, unknown>): Promise<Record<string, unknown>> {
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

  /** Start a capture (see FabricClient); its file becomes one of the artifacts `close` returns. */
  override async startCapture(path: string, opts?: { fileBytes?: number }): Promise<PortStatus[]> {
    const ports = await super.startCapture(path, opts);
    this.captures.push(path);
    return ports;
  }

  /** Stop the capture (see FabricClient); the files it rolled over to become artifacts too. */
  override async stopCapture(): Promise<CaptureStopped> {
    const stopped = await super.stopCapture();
    for (const f of stopped.files) if (!this.captures.includes(f.path)) this.captures.push(f.path);
    return stopped;
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
