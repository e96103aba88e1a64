/**
 * QMP client over a unix socket: greeting, capabilities negotiation, then
 * commands matched to replies by id; asynchronous events are kept.
 */
import { HilError } from "../errors.ts";
import { readLines, shq } from "../exec.ts";

/** QMP answered a command with an error. */
export class QmpError extends HilError {}

/** One QMP event. */
export interface QmpEvent {
  /** Event name, e.g. `SHUTDOWN`. */
  event: string;
  /** The event's payload, as QEMU sent it. */
  data?: unknown;
  /** When QEMU emitted it (host time). */
  timestamp?: { seconds: number; microseconds: number };
}

type Pending = { resolve: (v: unknown) => void; reject: (e: Error) => void };

/** A connected QMP session. */
export class QmpClient {
  #conn: Deno.UnixConn;
  #pending = new Map<string, Pending>();
  #nextId = 1;
  #closed = false;
  /** Events received so far, oldest first. */
  readonly events: QmpEvent[] = [];
  #greeting: Promise<unknown>;
  #greet!: (v: unknown) => void;

  private constructor(conn: Deno.UnixConn) {
    this.#conn = conn;
    this.#greeting = new Promise((r) => this.#greet = r);
    this.#readLoop();
  }

  /**
   * Connect to a QMP socket, retrying until `deadlineMs` (QEMU creates it
   * shortly after start), and negotiate capabilities.
   */
  static async connect(path: string, deadlineMs = 10_000): Promise<QmpClient> {
    const end = Date.now() + deadlineMs;
    for (;;) {
      try {
        const conn = await Deno.connect({ transport: "unix", path });
        const c = new QmpClient(conn);
        await c.#greeting;
        await c.execute("qmp_capabilities");
        return c;
      } catch (e) {
        if (Date.now() > end) {
          throw new QmpError(`cannot connect to QMP at ${path}: ${(e as Error).message}`);
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }

  async #readLoop(): Promise<void> {
    try {
      for await (const raw of readLines(this.#conn.readable)) {
        const line = raw.trim();
        if (line) this.#dispatch(JSON.parse(line) as Record<string, unknown>);
      }
    } catch { /* connection closed */ }
    this.#closed = true;
    for (const p of this.#pending.values()) p.reject(new QmpError("QMP connection closed"));
    this.#pending.clear();
  }

  #dispatch(msg: Record<string, unknown>): void {
    if ("QMP" in msg) return this.#greet(msg.QMP);
    if ("event" in msg) {
      this.events.push(msg as unknown as QmpEvent);
      return;
    }
    const id = String(msg.id ?? "");
    const p = this.#pending.get(id);
    if (!p) return;
    this.#pending.delete(id);
    if ("error" in msg) {
      const err = msg.error as { class?: string; desc?: string };
      p.reject(new QmpError(`${err.class ?? "Error"}: ${err.desc ?? "unknown"}`));
    } else p.resolve(msg.return);
  }

  /** Execute a command and return its `return` value. */
  execute(command: string, args?: Record<string, unknown>): Promise<unknown> {
    if (this.#closed) return Promise.reject(new QmpError("QMP connection closed"));
    const id = String(this.#nextId++);
    const msg = JSON.stringify({ execute: command, ...(args ? { arguments: args } : {}), id });
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#conn.write(new TextEncoder().encode(msg + "\n")).catch((e) => {
        this.#pending.delete(id);
        reject(e);
      });
    });
  }

  /**
   * `execute` that gives up after `timeoutMs`: QEMU answers QMP from its
   * main loop, which a stalled device or a state load can hold. Throws
   * QmpError "<command> not answered within N ms" (the late answer is
   * dropped).
   */
  executeWithin(
    command: string,
    timeoutMs: number,
    args?: Record<string, unknown>,
  ): Promise<unknown> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new QmpError(`${command} not answered within ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    return Promise.race([this.execute(command, args), late]).finally(() => clearTimeout(timer));
  }

  /** Whether the connection has closed (QEMU exited). */
  get closed(): boolean {
    return this.#closed;
  }

  /** Close the connection. */
  close(): void {
    try {
      this.#conn.close();
    } catch { /* already closed */ }
  }
}

/** The migration URI that writes a VM's state to `path` (`exec:`: QEMU 7.2 has no file URI). */
export function stateOutUri(path: string): string {
  return `exec:cat > ${shq(path)}`;
}

/** The migration URI (`-incoming`, `migrate-incoming`) that reads a state `stateOutUri` wrote. */
export function stateInUri(path: string): string {
  return `exec:cat ${shq(path)}`;
}

/**
 * Save the VM behind `qmp` to `path` (QMP `migrate`), polling every 100 ms
 * until it completed; the VM is stopped first and stays stopped. Not a live
 * save: one taken while the guest ran, under TCG on a loaded host, restored
 * into an RCU oops at the same instant every time (a freed VMA's callback
 * NULL: memory written during the save was not all in it). Throws QmpError
 * "saving <what> failed: <why>" or "saving <what> took over N s".
 */
export async function saveStateTo(
  qmp: QmpClient,
  path: string,
  timeoutSec: number,
  what = "the VM's state",
): Promise<void> {
  await qmp.execute("stop");
  await qmp.execute("migrate", { uri: stateOutUri(path) });
  const end = performance.now() + timeoutSec * 1000;
  for (;;) {
    const st = await qmp.execute("query-migrate") as { status?: string; "error-desc"?: string };
    if (st.status === "completed") return;
    if (st.status === "failed" || st.status === "cancelled") {
      throw new QmpError(`saving ${what} failed: ${st["error-desc"] ?? st.status}`);
    }
    if (performance.now() > end) throw new QmpError(`saving ${what} took over ${timeoutSec} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
