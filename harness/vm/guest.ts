/**
 * A guest VM: QEMU started paused with QMP on a unix socket and the serial
 * console in a file, `cont`, then SSH under a deadline. Implements `Guest`.
 */
import { HilError } from "../errors.ts";
import { join } from "node:path";
import { tailOf } from "../exec.ts";
import { progress } from "../progress.ts";
import { type GuestSpec, qemuArgs } from "./qemu_args.ts";
import { QmpClient, saveStateTo } from "./qmp.ts";
import { release, statState, track } from "./reaper.ts";
import { applyIdentity, IdentityError, type IdentityResult } from "./restore_identity.ts";
import { SshSession } from "./ssh.ts";
import { tarArchive, type TarFile } from "./tar.ts";
import type { Guest, RunOptions, RunResult } from "./types.ts";

/**
 * What a dead guest's console says: the first panic/BUG/Oops line (which a
 * long backtrace pushes out of the tail) and the last lines.
 */
export async function consoleSummary(path: string): Promise<string> {
  const text = await Deno.readTextFile(path).catch(() => "");
  const cause = text.split("\n").find((l) => /Kernel panic|BUG:|Oops|general protection/.test(l));
  const tail = await tailOf(path, 20);
  return (cause ? `${cause.trim()}\n…\n` : "") + tail;
}

const readProc = (p: string) => Deno.readTextFile(p).then((t) => t.trim()).catch(() => "?");

/** The /proc task directories of `pid`'s threads, in thread id order. */
async function tasksOf(pid: number): Promise<string[]> {
  const tids: string[] = [];
  for await (const e of Deno.readDir(`/proc/${pid}/task`)) tids.push(e.name);
  return tids.sort((a, b) => Number(a) - Number(b)).map((t) => `/proc/${pid}/task/${t}`);
}

/** The children of the threads whose task directories are `taskDirs`. */
async function childrenIn(taskDirs: string[]): Promise<number[]> {
  const kids: number[] = [];
  for (const dir of taskDirs) {
    for (const k of (await readProc(`${dir}/children`)).split(/\s+/)) {
      if (/^\d+$/.test(k)) kids.push(+k);
    }
  }
  return kids;
}

/**
 * A process's start time (clock ticks after boot, field 22) from its
 * `/proc/<pid>/stat` line, or "" for none (a process that is gone: "?").
 */
function startTimeIn(stat: string): string {
  // the command name (field 2) may hold spaces: count from its closing parenthesis
  return stat === "?" ? "" : stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? "";
}

/**
 * The children and grandchildren (QEMU's `exec:` reader runs under
 * `sh -c`) of the process whose threads' task directories are `own`.
 */
async function descendantPids(own: string[]): Promise<number[]> {
  const kids = await childrenIn(own);
  const grandkids = await Promise.all(
    kids.map(async (k) => childrenIn(await tasksOf(k).catch(() => []))),
  );
  return [...kids, ...grandkids.flat()];
}

/**
 * The children and grandchildren of `pid`, each with its start time, so a
 * later kill can tell it from a process that got its number since.
 */
export async function descendantsOf(pid: number): Promise<{ pid: number; start: string }[]> {
  const all = await descendantPids(await tasksOf(pid).catch(() => []));
  return await Promise.all(
    all.map(async (k) => ({ pid: k, start: startTimeIn(await readProc(`/proc/${k}/stat`)) })),
  );
}

/**
 * SIGKILL each of `procs` ({@link descendantsOf}) still running as the same
 * process, and wait until those have exited; returns how many it ended.
 */
export async function killLeftovers(procs: { pid: number; start: string }[]): Promise<number> {
  // alive as the same process: its start time unchanged and not yet a zombie
  const stillRuns = async (p: { pid: number; start: string }) => {
    const stat = await readProc(`/proc/${p.pid}/stat`);
    return p.start !== "" && startTimeIn(stat) === p.start && !["Z", "X"].includes(statState(stat));
  };
  const killed: { pid: number; start: string }[] = [];
  for (const p of procs) {
    if (!await stillRuns(p)) continue;
    try {
      Deno.kill(p.pid, "SIGKILL");
      killed.push(p);
    } catch { /* gone meanwhile */ }
  }
  // a killed process runs on until it has exited: wait for that
  for (let i = 0; i < 200 && killed.length; i++) {
    if (!(await Promise.all(killed.map(stillRuns))).includes(true)) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  return killed.length;
}

/**
 * A process's descendants (their command lines) and its threads' names,
 * states and wait channels, from /proc: "children: sh -c cat /x/state, cat
 * /x/state; threads: qemu-system-x86 S do_sys_poll, CPU 0/TCG S futex_wait".
 */
export async function processState(pid: number): Promise<string> {
  let own: string[];
  try {
    own = await tasksOf(pid);
  } catch {
    return `process ${pid} gone`;
  }
  const threads = await Promise.all(own.map(async (dir) => {
    const [comm, stat, wchan] = await Promise.all(
      ["comm", "stat", "wchan"].map((f) => readProc(`${dir}/${f}`)),
    );
    return `${comm} ${statState(stat)} ${wchan}`;
  }));
  const cmds = await Promise.all(
    (await descendantPids(own)).map((k) =>
      readProc(`/proc/${k}/cmdline`).then((c) => c.replaceAll("\0", " ").trim())
    ),
  );
  return `children: ${cmds.join(", ") || "none"}; threads: ${threads.join(", ")}`;
}

/** The guest's QEMU exited while it was needed (panic, crash). */
export class GuestDiedError extends HilError {}

/** The guest never answered SSH within its deadline. */
export class BootTimeoutError extends HilError {}

/**
 * What the guests' init (harness/build/guest-init.sh) prints on the console
 * once sshd runs; a cold guest is not asked over SSH before.
 */
export const SSHD_MARKER = "CNUAS-SSHD-STARTED";

/** Longest one SSH connection attempt to a guest that can answer may take (ms). */
const SSH_ATTEMPT_MS = 15_000;

/** Options of `bootGuest`. */
export interface BootOptions {
  /** Private key file for root. */
  sshKeyPath: string;
  /** Seconds from `cont` until SSH must answer. */
  bootTimeoutSec: number;
  /** Directory for qemu.log. */
  logDir: string;
  /** Called with the QMP client before `cont` (fault hooks). */
  beforeCont?: (qmp: QmpClient) => Promise<void>;
}

/** A running guest. */
export class GuestVm implements Guest {
  readonly name: string;
  readonly consoleLog: string;
  /** Path of the host-side log of QEMU's command line, stdout and stderr. */
  readonly qemuLog: string;
  bootToSshSec: number = NaN;
  /**
   * Seconds from spawning QEMU to SSH answering (a restored guest's load of
   * its saved state included); NaN until it answered.
   */
  startToSshSec: number = NaN;
  /** Whether the guest booted its kernel or was restored from a saved state. */
  readonly startedFrom: "cold" | "snapshot";
  /** Host TCP port forwarded to the guest's SSH (127.0.0.1), once it answered. */
  sshPort?: number;
  #child: Deno.ChildProcess;
  #qmp!: QmpClient;
  #ssh?: SshSession;
  #exited: Promise<Deno.CommandStatus>;
  #exitStatus?: Deno.CommandStatus;
  #spawnedAt: number;
  #spawnedAtEpochMs: number;
  #identitySocket?: string;

  private constructor(
    spec: GuestSpec,
    child: Deno.ChildProcess,
    qemuLog: string,
    spawnedAt: number,
  ) {
    this.name = spec.name;
    this.startedFrom = spec.incoming ? "snapshot" : "cold";
    this.#identitySocket = spec.identitySocket;
    this.#spawnedAt = spawnedAt;
    this.#spawnedAtEpochMs = performance.timeOrigin + spawnedAt;
    this.consoleLog = spec.consoleLog;
    this.qemuLog = qemuLog;
    this.#child = child;
    this.#exited = child.status.then((s) => {
      this.#exitStatus = s;
      release(child.pid);
      return s;
    });
  }

  /** PID of the QEMU process. */
  get pid(): number {
    return this.#child.pid;
  }

  /**
   * Seconds from spawning QEMU until the guest first ran (QMP `RESUME`): for
   * a restored guest, the load of its saved state; NaN before that.
   */
  get resumeSec(): number {
    const ev = this.#qmp?.events.find((e) => e.event === "RESUME");
    if (!ev?.timestamp) return NaN;
    const at = ev.timestamp.seconds * 1000 + ev.timestamp.microseconds / 1000;
    return (at - this.#spawnedAtEpochMs) / 1000;
  }

  /** Seconds since QEMU was spawned. */
  sinceSpawnSec(): number {
    return (performance.now() - this.#spawnedAt) / 1000;
  }

  /** Whether QEMU is still running. */
  get running(): boolean {
    return this.#exitStatus === undefined;
  }

  /** Start QEMU paused, apply hooks, `cont`; does not wait for SSH. */
  static async start(spec: GuestSpec, opts: BootOptions): Promise<GuestVm> {
    await Deno.mkdir(opts.logDir, { recursive: true });
    const qemuLog = join(opts.logDir, `${spec.name}.qemu.log`);
    await Deno.writeTextFile(spec.consoleLog, "");
    await Deno.remove(spec.qmpSocket).catch(() => {});
    const log = await Deno.open(qemuLog, { create: true, write: true, truncate: true });
    await log.write(new TextEncoder().encode(`$ ${spec.qemu} ${qemuArgs(spec).join(" ")}\n`));
    const spawnedAt = performance.now();
    const child = new Deno.Command(spec.qemu, {
      args: qemuArgs(spec),
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    track(child.pid, `qemu ${spec.name}`);
    const pump = async (s: ReadableStream<Uint8Array>) => {
      for await (const c of s) await log.write(c).catch(() => {});
    };
    Promise.all([pump(child.stdout), pump(child.stderr)]).finally(() => log.close());
    const vm = new GuestVm(spec, child, qemuLog, spawnedAt);
    try {
      vm.#qmp = await Promise.race([
        QmpClient.connect(spec.qmpSocket, 15_000),
        vm.#exited.then(async () => {
          throw new GuestDiedError(
            `QEMU for ${spec.name} exited at start; see ${qemuLog}:\n${await tailOf(qemuLog, 10)}`,
          );
        }),
      ]);
      if (opts.beforeCont) await opts.beforeCont(vm.#qmp);
      await vm.#qmp.execute("cont");
    } catch (e) {
      await vm.close();
      throw e;
    }
    return vm;
  }

  /**
   * Whether `text` appears on the guest's console before `untilMs`
   * (performance.now() time) while QEMU runs; looked for every 100 ms.
   */
  async consoleSays(text: string, untilMs: number): Promise<boolean> {
    while (this.running && performance.now() < untilMs) {
      if ((await Deno.readTextFile(this.consoleLog).catch(() => "")).includes(text)) return true;
      await new Promise((r) => setTimeout(r, 100));
    }
    return false;
  }

  /**
   * Until a restored guest has run (QMP `RESUME`), QEMU exits, or
   * `untilMs` (performance.now() time) passes; at once for a cold guest.
   * What reaches the guest's devices before then meets the devices'
   * state from before the load, which the load then replaces.
   */
  async waitForResume(untilMs: number): Promise<void> {
    while (this.startedFrom === "snapshot" && this.running && Number.isNaN(this.resumeSec)) {
      if (performance.now() > untilMs) break;
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /**
   * Give a guest restored from a saved state its own identity through its
   * agent (vm/restore_identity.ts), once the guest runs: what the host
   * sends before that meets the serial port's state from before the load,
   * and is lost with it.
   */
  async applyIdentity(coldplug: boolean, timeoutSec = 90): Promise<IdentityResult> {
    if (this.#identitySocket === undefined) {
      throw new IdentityError(`${this.name}: no identity line`);
    }
    await this.waitForResume(performance.now() + timeoutSec * 1000);
    if (this.startedFrom === "snapshot" && Number.isNaN(this.resumeSec)) {
      throw new IdentityError(
        `${this.name}: the restored guest did not run within ${timeoutSec} s ` +
          `(${await this.#restoreDiagnosis()})`,
      );
    }
    return await applyIdentity(this.name, this.#identitySocket, coldplug, timeoutSec);
  }

  /** Wait until SSH answers, or throw with the console tail. */
  async waitForSsh(port: number, key: string, timeoutSec: number): Promise<void> {
    const t0 = performance.now();
    const end = t0 + timeoutSec * 1000;
    let lastErr = "";
    // A restored guest runs only once its state is loaded. A connection
    // tried before that is accepted by the user-mode network on the host
    // side, and its SYN to the guest is lost: the retry costs seconds.
    await this.waitForResume(end);
    // A cold guest answers only once its init has started sshd, which it
    // says on the console. A connection tried before the guest's network is
    // up is accepted by the user-mode network on the host side and then
    // waits for a guest that cannot answer yet: up to a whole attempt's 4 s
    // lost (seen: sshd started 8.5 s after cont, SSH answered at 13.7 s).
    if (this.startedFrom === "cold" && !await this.consoleSays(SSHD_MARKER, end)) {
      lastErr = `sshd not started (no ${SSHD_MARKER} on the console)`;
    }
    while (performance.now() < end) {
      if (!this.running) {
        throw new GuestDiedError(
          `${this.name} died during boot (QEMU exit ${this.#exitStatus?.code}); console ${this.consoleLog}:\n${await consoleSummary(
            this.consoleLog,
          )}`,
        );
      }
      try {
        // The guest can answer by now (its console said sshd runs, or its
        // state resumed running), so an attempt is slow only because the
        // guest is: beside other rows, with udev still loading modules, a
        // handshake took over 4 s, and each 4 s attempt gave up and began
        // again (a cold guest answered 8.5 s after its sshd started).
        const attemptMs = Math.min(SSH_ATTEMPT_MS, Math.max(1000, end - performance.now()));
        this.#ssh = await SshSession.connect(port, key, attemptMs);
        this.sshPort = port;
        this.bootToSshSec = (performance.now() - t0) / 1000;
        this.startToSshSec = (performance.now() - this.#spawnedAt) / 1000;
        return;
      } catch (e) {
        lastErr = (e as Error).message;
        await new Promise((r) => setTimeout(r, 300));
      }
    }
    const never = this.startedFrom === "snapshot" && Number.isNaN(this.resumeSec)
      ? `; its state never ran (${await this.#restoreDiagnosis()})`
      : "";
    throw new BootTimeoutError(
      `${this.name} did not answer SSH within ${timeoutSec} s (last error: ${lastErr})${never}; console ${this.consoleLog}:\n${await consoleSummary(
        this.consoleLog,
      )}`,
    );
  }

  /**
   * Why a restored guest has not run: QEMU's run state and incoming
   * migration status (each asked with a deadline: a load that holds the
   * main loop answers neither), whether the process reading the state
   * (`exec:cat`) is still there, and what QEMU's threads wait in.
   */
  async #restoreDiagnosis(): Promise<string> {
    const ask = async (cmd: string, show: (r: Record<string, unknown>) => string) => {
      try {
        return `${cmd}: ${
          show(await this.#qmp.executeWithin(cmd, 5000) as Record<string, unknown>)
        }`;
      } catch (e) {
        return `${cmd}: ${(e as Error).message}`;
      }
    };
    const status = await ask("query-status", (r) => String(r.status));
    const migrate = await ask(
      "query-migrate",
      (r) => `${r.status ?? "none"}${r["error-desc"] ? ` (${r["error-desc"]})` : ""}`,
    );
    return [status, migrate, await processState(this.pid)].join("; ");
  }

  #session(): SshSession {
    if (!this.#ssh) throw new Error(`${this.name}: not connected`);
    return this.#ssh;
  }

  async #alive(): Promise<void> {
    if (!this.running) {
      throw new GuestDiedError(
        `${this.name} is dead (QEMU exit ${this.#exitStatus?.code}); console ${this.consoleLog}:\n${await consoleSummary(
          this.consoleLog,
        )}`,
      );
    }
  }

  /** Run a shell command as root in the guest. */
  async run(cmd: string, opts: RunOptions = {}): Promise<RunResult> {
    await this.#alive();
    let r: RunResult;
    try {
      r = await this.#session().run(cmd, opts);
    } catch (e) {
      await this.#alive();
      throw e;
    }
    if (r.code === -1) {
      // The connection closed without an exit status. A guest that panicked
      // is a guest death, not a failed command: QEMU (-no-reboot) ends a
      // moment after the panic, so wait for that a little.
      await Promise.race([this.#exited, new Promise((res) => setTimeout(res, 3000))]);
      await this.#alive();
    }
    return r;
  }

  /** Write a file in the guest. */
  async putFile(path: string, data: Uint8Array, mode?: number): Promise<void> {
    await this.#alive();
    await this.#session().putFile(path, data, mode);
  }

  /**
   * Write `files` (absolute guest paths) in one SSH command: a tar archive on
   * stdin, extracted at /. One file per command cost ~0.3 s each, 7-9 s for a
   * row's two dozen programs under TCG.
   */
  async putFiles(files: TarFile[]): Promise<void> {
    const archive = tarArchive(files.map((f) => ({ ...f, path: f.path.replace(/^\/+/, "") })));
    const r = await this.run("tar -x --no-same-owner -m -C /", { stdin: archive, timeoutSec: 120 });
    if (r.code !== 0) {
      throw new HilError(
        `${this.name}: installing ${files.length} files failed: ${r.stderr.trim()}`,
      );
    }
  }

  /** Read a file from the guest. */
  async getFile(path: string): Promise<Uint8Array> {
    await this.#alive();
    return await this.#session().getFile(path);
  }

  /** The guest kernel log. */
  async dmesg(): Promise<string> {
    const r = await this.run("dmesg", { timeoutSec: 30 });
    return r.stdout;
  }

  /** A QMP command. */
  qmp(command: string, args?: Record<string, unknown>): Promise<unknown> {
    return this.#qmp.execute(command, args);
  }

  /**
   * Save the whole VM state to `path` (QMP `migrate` to `exec:`: QEMU 7.2
   * has no file URI) and leave the VM stopped there. The SSH session is
   * closed first and the guest given a moment to end its side, so no
   * half-open connection travels with the state.
   */
  async saveState(path: string, timeoutSec: number): Promise<void> {
    this.#ssh?.close();
    this.#ssh = undefined;
    await new Promise((r) => setTimeout(r, 500));
    await this.#alive();
    await saveStateTo(this.#qmp, path, timeoutSec, `${this.name}'s state`);
  }

  /**
   * Shut down: QMP `quit` (the disk is a snapshot, nothing to flush), then
   * SIGKILL if QEMU has not exited within 5 s. Never leaves QEMU running,
   * nor a child of QEMU's (a restore's `exec:` reader blocked on its input).
   */
  async close(): Promise<void> {
    this.#ssh?.close();
    if (this.running) {
      // QEMU's own children (the `exec:` reader of a restore) outlive it when they
      // are blocked (a state that never arrives): ended below, by PID and start time
      const children = await descendantsOf(this.#child.pid);
      this.#qmp?.execute("quit").catch(() => {});
      const done = await Promise.race([
        this.#exited.then(() => true),
        new Promise<boolean>((r) => setTimeout(() => r(false), 5000)),
      ]);
      if (!done) {
        progress(this.name, "QEMU ignored quit; killing");
        try {
          this.#child.kill("SIGKILL");
        } catch { /* gone */ }
        await this.#exited;
      }
      const ended = await killLeftovers(children);
      if (ended) progress(this.name, `ended ${ended} process(es) QEMU left behind`);
    }
    this.#qmp?.close();
  }
}
