/**
 * A qtest client: starts QEMU with `-accel qtest`, speaks the qtest line
 * protocol over a unix socket QEMU connects to, and always kills QEMU by PID
 * on `close()` (and on process unload), so no QEMU outlives a test.
 *
 * Commands are pipelined: every call writes its line at once and resolves
 * when its response arrives, so issuing many calls before awaiting them costs
 * one round trip. Asynchronous `IRQ raise N` / `IRQ lower N` lines (after
 * `irqInterceptIn`) update {@link QtestMachine.irqLevel} in stream order, so
 * after a response the levels include every change its command caused.
 *
 * @example
 * ```ts
 * const qt = await QtestMachine.start({ binary, firmware, devices: ["edu"] });
 * try {
 *   await qt.writel(0x100000, 0x1234);
 *   console.log(await qt.readl(0x100000));
 * } finally {
 *   await qt.close();
 * }
 * ```
 */
import { HilError } from "../errors.ts";
import { dirname, join } from "node:path";
import { qemuOptValue } from "../vm/qemu_args.ts";
import { atIdle, spawnArgv } from "../priority.ts";

/**
 * How long a QEMU started at idle priority (a `filler` row's) may take to
 * connect: it runs only in the cycles the other rows leave, and two busy
 * guest rows can leave none for a while. A QEMU that hangs still fails.
 */
export const IDLE_START_TIMEOUT_MS = 300_000;

/** How to start a qtest machine. */
export interface QtestOptions {
  /** `qemu-system-x86_64`. */
  binary: string;
  /** Firmware directories (`-L` each). */
  firmware?: string[];
  /** `-device` values, e.g. `cnuas-vnic,addr=0x4,socket_path=/tmp/s`. */
  devices?: string[];
  /** Machine type (default `q35`). */
  machine?: string;
  /** Guest RAM (default `128M`). */
  memory?: string;
  /** More QEMU arguments. */
  extraArgs?: string[];
  /** Directory for the qtest socket and logs; a fresh temp dir when absent. */
  workDir?: string;
  /** `-d` log items written to the QEMU log (default `guest_errors`). */
  logItems?: string;
  /**
   * How long QEMU may take to come up (default 20 s; 300 s at idle priority,
   * where it gets only the cycles other rows leave, {@link IDLE_START_TIMEOUT_MS}).
   */
  startTimeoutMs?: number;
  /** Environment variables QEMU gets besides this process's (e.g. `ASAN_OPTIONS`). */
  env?: Record<string, string>;
}

/** File in the work directory QEMU writes the qtest transcript to. */
export const QTEST_TRANSCRIPT = "qtest.log";

/** QEMU failed to start, died, or answered a command with FAIL/ERR. */
export class QtestError extends HilError {}

const live = new Set<QtestMachine>();
let unloadHooked = false;

function hookUnload(): void {
  if (unloadHooked) return;
  unloadHooked = true;
  globalThis.addEventListener("unload", () => {
    for (const m of live) m.killNow();
  });
}

/** A response with the interrupt lines as they stood when it arrived. */
export interface QtestReply {
  /** Text after `OK`, trimmed. */
  text: string;
  /** Bit n set while intercepted line n (n < 32) is raised. */
  irqMask: number;
}

interface Pending {
  cmd: string;
  resolve: (reply: QtestReply) => void;
  reject: (e: Error) => void;
}

const enc = new TextEncoder();

/** A QEMU process under qtest control. */
export class QtestMachine {
  /** PID of the QEMU process. */
  readonly pid: number;
  /** QEMU's `-D` log (guest errors and other `-d` items). */
  readonly logPath: string;
  /** QEMU's stderr. */
  readonly stderrPath: string;
  /** Directory holding the socket and logs. */
  readonly workDir: string;

  readonly #child: Deno.ChildProcess;
  readonly #conn: Deno.UnixConn;
  readonly #ownsWorkDir: boolean;
  readonly #stderrDone: Promise<void>;
  readonly #readerDone: Promise<void>;
  #pending: Pending[] = [];
  #pendingHead = 0;
  #out: string[] = [];
  #flushScheduled = false;
  #writing: Promise<void> = Promise.resolve();
  #irq = new Map<number, boolean>();
  #irqChanges = 0;
  #irqMask = 0;
  #dead: Error | null = null;
  #closed = false;
  #exited = false;

  private constructor(
    child: Deno.ChildProcess,
    conn: Deno.UnixConn,
    paths: { workDir: string; logPath: string; stderrPath: string; ownsWorkDir: boolean },
    stderrDone: Promise<void>,
  ) {
    this.#child = child;
    this.pid = child.pid;
    this.#conn = conn;
    this.workDir = paths.workDir;
    this.logPath = paths.logPath;
    this.stderrPath = paths.stderrPath;
    this.#ownsWorkDir = paths.ownsWorkDir;
    this.#stderrDone = stderrDone;
    this.#child.status.then(() => {
      this.#exited = true;
      this.#fail(new QtestError(`QEMU (pid ${this.pid}) exited; see ${this.stderrPath}`));
    });
    this.#readerDone = this.#readLoop();
  }

  /** The QEMU command line `start` would run (for logs and failure messages). */
  static argv(opts: QtestOptions, socketPath: string, logPath: string): string[] {
    const args = [
      opts.binary,
      "-machine",
      opts.machine ?? "q35",
      "-accel",
      "qtest",
      "-qtest",
      `unix:${qemuOptValue(socketPath)}`,
      "-display",
      "none",
      "-nodefaults",
      "-m",
      opts.memory ?? "128M",
      "-d",
      opts.logItems ?? "guest_errors",
      "-D",
      logPath,
      // The qtest transcript (every command and answer) goes to a file of its
      // own, which QEMU writes through a buffer; without this it goes to
      // stderr one unbuffered write per word (155,000 writes for one seed of
      // 5,100 oracle operations), and writing and piping them cost more CPU
      // than the accesses themselves.
      "-qtest-log",
      join(dirname(logPath), QTEST_TRANSCRIPT),
    ];
    for (const dir of opts.firmware ?? []) args.push("-L", dir);
    for (const dev of opts.devices ?? []) args.push("-device", dev);
    args.push(...(opts.extraArgs ?? []));
    return args;
  }

  /** Start QEMU and wait until it answers. */
  static async start(opts: QtestOptions): Promise<QtestMachine> {
    hookUnload();
    const ownsWorkDir = !opts.workDir;
    const workDir = opts.workDir ?? await Deno.makeTempDir({ prefix: "qtest-" });
    await Deno.mkdir(workDir, { recursive: true });
    const socketPath = join(workDir, "qtest.sock");
    const logPath = join(workDir, "qemu.log");
    const stderrPath = join(workDir, "qemu.stderr");
    await Deno.remove(socketPath).catch(() => {});
    const listener = Deno.listen({ transport: "unix", path: socketPath });
    // a row running at idle priority (a `filler`) runs its QEMU there too
    const argv = spawnArgv(QtestMachine.argv(opts, socketPath, logPath));
    let child: Deno.ChildProcess;
    try {
      child = new Deno.Command(argv[0], {
        args: argv.slice(1),
        stdin: "null",
        stdout: "null",
        stderr: "piped",
        ...(opts.env ? { env: opts.env } : {}),
      }).spawn();
    } catch (e) {
      listener.close();
      throw new QtestError(`cannot run ${argv[0]}: ${(e as Error).message}; build QEMU first`);
    }
    const errFile = await Deno.open(stderrPath, { create: true, write: true, truncate: true });
    const stderrDone = child.stderr.pipeTo(errFile.writable).catch(() => {});
    const timeoutMs = opts.startTimeoutMs ?? (atIdle() ? IDLE_START_TIMEOUT_MS : 20_000);
    let timer: ReturnType<typeof setTimeout> | undefined;
    let conn: Deno.UnixConn;
    try {
      conn = await Promise.race([
        listener.accept(),
        child.status.then(() => {
          throw new QtestError(`QEMU exited before connecting`);
        }),
        new Promise<never>((_, rej) => {
          timer = setTimeout(
            () => rej(new QtestError(`QEMU did not connect within ${timeoutMs} ms`)),
            timeoutMs,
          );
        }),
      ]);
    } catch (e) {
      try {
        child.kill("SIGKILL");
      } catch { /* already gone */ }
      await child.status;
      await stderrDone;
      const err = await Deno.readTextFile(stderrPath).catch(() => "");
      throw new QtestError(
        `${(e as Error).message}\n$ ${argv.join(" ")}\n${err.trim()}\n(stderr: ${stderrPath})`,
      );
    } finally {
      clearTimeout(timer);
      listener.close();
      await Deno.remove(socketPath).catch(() => {});
    }
    const m = new QtestMachine(
      child,
      conn,
      { workDir, logPath, stderrPath, ownsWorkDir },
      stderrDone,
    );
    live.add(m);
    try {
      // Answers only once machine creation is complete.
      await m.command("endianness");
    } catch (e) {
      await m.close();
      const err = await Deno.readTextFile(stderrPath).catch(() => "");
      throw new QtestError(`${(e as Error).message}\n$ ${argv.join(" ")}\n${err.trim()}`);
    }
    return m;
  }

  // ---- protocol ----------------------------------------------------------

  /**
   * Send one command line; resolves with the text after `OK` (trimmed).
   * Calls made without awaiting in between are pipelined in order.
   */
  async command(line: string): Promise<string> {
    return (await this.request(line)).text;
  }

  /**
   * Like `command`, also returning the intercepted interrupt lines as they
   * stood right after this response (later `IRQ` lines in the same read are
   * not included), so pipelined callers can check levels per command.
   */
  request(line: string): Promise<QtestReply> {
    if (this.#dead) return Promise.reject(this.#dead);
    return new Promise<QtestReply>((resolve, reject) => {
      this.#pending.push({ cmd: line, resolve, reject });
      this.#out.push(line, "\n");
      if (!this.#flushScheduled) {
        this.#flushScheduled = true;
        queueMicrotask(() => this.#flush());
      }
    });
  }

  #flush(): void {
    this.#flushScheduled = false;
    if (this.#out.length === 0) return;
    const data = enc.encode(this.#out.join(""));
    this.#out = [];
    this.#writing = this.#writing.then(async () => {
      let off = 0;
      while (off < data.length) off += await this.#conn.write(data.subarray(off));
    }).catch((e) => this.#fail(new QtestError(`write to QEMU failed: ${(e as Error).message}`)));
  }

  async #readLoop(): Promise<void> {
    const buf = new Uint8Array(1 << 16);
    const dec = new TextDecoder();
    let carry = "";
    try {
      for (;;) {
        const n = await this.#conn.read(buf);
        if (n === null) break;
        const text = carry + dec.decode(buf.subarray(0, n), { stream: true });
        let start = 0;
        for (;;) {
          const nl = text.indexOf("\n", start);
          if (nl < 0) break;
          this.#onLine(text.slice(start, nl));
          start = nl + 1;
        }
        carry = text.slice(start);
      }
    } catch (e) {
      if (!this.#closed) this.#fail(new QtestError(`qtest socket: ${(e as Error).message}`));
    }
    this.#fail(new QtestError(`QEMU (pid ${this.pid}) closed the qtest socket`));
  }

  #onLine(line: string): void {
    if (line.startsWith("IRQ ")) {
      const [, what, num] = line.split(" ");
      const n = Number(num);
      const up = what === "raise";
      this.#irq.set(n, up);
      if (n < 32) {
        this.#irqMask = up ? (this.#irqMask | 1 << n) >>> 0 : (this.#irqMask & ~(1 << n)) >>> 0;
      }
      this.#irqChanges++;
      return;
    }
    const p = this.#pending[this.#pendingHead];
    if (!p) return; // nothing asked: ignore
    this.#pending[this.#pendingHead++] = undefined as unknown as Pending;
    if (this.#pendingHead > 4096) {
      this.#pending = this.#pending.slice(this.#pendingHead);
      this.#pendingHead = 0;
    }
    if (line === "OK" || line.startsWith("OK ")) {
      p.resolve({ text: line.slice(2).trim(), irqMask: this.#irqMask });
    } else p.reject(new QtestError(`qtest '${p.cmd.slice(0, 80)}' answered '${line}'`));
  }

  #fail(e: Error): void {
    if (this.#dead) return;
    this.#dead = e;
    for (let i = this.#pendingHead; i < this.#pending.length; i++) this.#pending[i].reject(e);
    this.#pending = [];
    this.#pendingHead = 0;
  }

  // ---- typed commands ----------------------------------------------------

  /** MMIO/RAM read of 1, 2, 4 or 8 bytes (little-endian value). */
  async read(addr: bigint | number, size: 1 | 2 | 4 | 8): Promise<bigint> {
    const op = ({ 1: "readb", 2: "readw", 4: "readl", 8: "readq" } as const)[size];
    return BigInt(await this.command(`${op} 0x${addr.toString(16)}`));
  }

  /** MMIO/RAM write of 1, 2, 4 or 8 bytes. */
  async write(addr: bigint | number, size: 1 | 2 | 4 | 8, value: bigint | number): Promise<void> {
    const op = ({ 1: "writeb", 2: "writew", 4: "writel", 8: "writeq" } as const)[size];
    const mask = size === 8 ? 0xffff_ffff_ffff_ffffn : (1n << BigInt(size * 8)) - 1n;
    const v = BigInt(value) & mask;
    await this.command(`${op} 0x${addr.toString(16)} 0x${v.toString(16)}`);
  }

  /** 32-bit read as a number. */
  async readl(addr: bigint | number): Promise<number> {
    return Number(await this.read(addr, 4));
  }

  /** 32-bit write. */
  writel(addr: bigint | number, value: number | bigint): Promise<void> {
    return this.write(addr, 4, value);
  }

  /** Port input of 1, 2 or 4 bytes. */
  async in(port: number, size: 1 | 2 | 4): Promise<number> {
    const op = ({ 1: "inb", 2: "inw", 4: "inl" } as const)[size];
    return Number(await this.command(`${op} 0x${port.toString(16)}`));
  }

  /** Port output of 1, 2 or 4 bytes. */
  async out(port: number, size: 1 | 2 | 4, value: number): Promise<void> {
    const op = ({ 1: "outb", 2: "outw", 4: "outl" } as const)[size];
    await this.command(`${op} 0x${port.toString(16)} 0x${(value >>> 0).toString(16)}`);
  }

  /**
   * PCI configuration read through the legacy 0xcf8/0xcfc mechanism (first
   * 256 bytes of bus/slot/function).
   */
  async configRead(
    a: { bus: number; slot: number; fn: number },
    off: number,
    size: 1 | 2 | 4,
  ): Promise<number> {
    const sel = this.out(0xcf8, 4, cf8(a, off));
    const v = this.in(0xcfc + (off & 3), size);
    await sel;
    return await v;
  }

  /** PCI configuration write through 0xcf8/0xcfc. */
  async configWrite(
    a: { bus: number; slot: number; fn: number },
    off: number,
    size: 1 | 2 | 4,
    value: number,
  ): Promise<void> {
    const sel = this.out(0xcf8, 4, cf8(a, off));
    const w = this.out(0xcfc + (off & 3), size, value);
    await sel;
    await w;
  }

  /** Read `len` bytes of guest memory (`b64read`). */
  async memRead(addr: bigint | number, len: number): Promise<Uint8Array> {
    if (len === 0) return new Uint8Array();
    const b64 = await this.command(`b64read 0x${addr.toString(16)} ${len}`);
    return Uint8Array.fromBase64(b64);
  }

  /** Write bytes to guest memory (`b64write`). */
  async memWrite(addr: bigint | number, data: Uint8Array): Promise<void> {
    if (data.length === 0) return;
    await this.command(`b64write 0x${addr.toString(16)} ${data.length} ${data.toBase64()}`);
  }

  /** Fill guest memory with one byte value. */
  async memset(addr: bigint | number, len: number, value: number): Promise<void> {
    await this.command(`memset 0x${addr.toString(16)} ${len} 0x${(value & 0xff).toString(16)}`);
  }

  /**
   * Advance the virtual clock by `ns` (or to the next timer deadline when
   * omitted), running the timers that fall due; returns the new time in ns.
   */
  async clockStep(ns?: number): Promise<number> {
    return Number(await this.command(ns === undefined ? "clock_step" : `clock_step ${ns}`));
  }

  /** Set the virtual clock (forward only); returns the new time in ns. */
  async clockSet(ns: number): Promise<number> {
    return Number(await this.command(`clock_set ${ns}`));
  }

  /** Intercept the gpio-in lines of a device (`ioapic` on PC machines). */
  async irqInterceptIn(qomPath: string): Promise<void> {
    await this.command(`irq_intercept_in ${qomPath}`);
  }

  /** Level of intercepted line `n` as of the last response processed. */
  irqLevel(n: number): boolean {
    return this.#irq.get(n) ?? false;
  }

  /** Number of `IRQ` messages seen so far. */
  get irqChanges(): number {
    return this.#irqChanges;
  }

  /** A round trip that touches no device: after it resolves, QEMU has run its loop past every event that was ready when it was sent. */
  async sync(): Promise<void> {
    await this.command("endianness");
  }

  /** The QEMU `-D` log so far. */
  async readLog(): Promise<string> {
    return await Deno.readTextFile(this.logPath).catch(() => "");
  }

  /** Whether QEMU is still running. */
  get alive(): boolean {
    return !this.#exited;
  }

  /** SIGKILL now, without waiting (unload hook). */
  killNow(): void {
    if (this.#exited) return;
    try {
      Deno.kill(this.pid, "SIGKILL");
    } catch { /* gone */ }
  }

  /** Kill QEMU by PID, wait for it, release the socket; removes a temp work dir unless `keepFiles`. */
  async close(opts: { keepFiles?: boolean } = {}): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    live.delete(this);
    this.killNow();
    await this.#child.status;
    try {
      this.#conn.close();
    } catch { /* already closed */ }
    await this.#readerDone;
    await this.#writing.catch(() => {});
    await this.#stderrDone;
    if (this.#ownsWorkDir && !opts.keepFiles) {
      await Deno.remove(this.workDir, { recursive: true }).catch(() => {});
    }
  }
}

function cf8(a: { bus: number; slot: number; fn: number }, off: number): number {
  return (0x8000_0000 | a.bus << 16 | a.slot << 11 | a.fn << 8 | (off & 0xfc)) >>> 0;
}
