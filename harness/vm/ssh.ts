/**
 * Commands and files over SSH (npm:ssh2). Results come back as exit code,
 * stdout and stderr — never by parsing the console.
 */
// @ts-types="@types/ssh2"
import { Client } from "ssh2";
import { Buffer } from "node:buffer";
import { HilError } from "../errors.ts";
import { shq } from "../exec.ts";
import type { RunOptions, RunResult } from "./types.ts";

/** The SSH connection failed or dropped. */
export class SshError extends HilError {}

/** Exit code reported for a command killed by its timeout (as coreutils' `timeout`). */
export const TIMEOUT_CODE = 124;

/** A logged-in SSH session to a guest. */
export class SshSession {
  #client: Client;
  private constructor(client: Client) {
    this.#client = client;
  }

  /** Try once to connect; rejects on failure. */
  static connect(port: number, privateKey: string, timeoutMs = 5000): Promise<SshSession> {
    return new Promise((resolve, reject) => {
      const c = new Client();
      let ready = false;
      c.once("ready", () => {
        ready = true;
        resolve(new SshSession(c));
      });
      // ssh2 may emit several errors for one failed attempt; all are handled here.
      c.on("error", (e: Error) => {
        if (!ready) {
          reject(new SshError(e.message));
          c.end();
        }
      });
      c.connect({
        host: "127.0.0.1",
        port,
        username: "root",
        privateKey,
        readyTimeout: timeoutMs,
        keepaliveInterval: 5000,
        keepaliveCountMax: 6,
      });
      // Nagle off, from the handshake on (connect made the socket): a
      // command is a few small messages each way (channel open, exec, exit
      // status, close), and each waited for the previous one's ACK.
      // Measured under TCG: `true` 156 -> 56 ms a command.
      c.setNoDelay(true);
    });
  }

  /**
   * Run a command. Root's login shell in the image is dash (build/image.ts)
   * and runs the command itself: one program start per command, where
   * `bash -c "timeout ... sh -c CMD"` made three (~95 ms under TCG). The
   * shell first prints its PID, which is its session's ID (sshd starts each
   * command in a session of its own). At the timeout the host ends that
   * session from a second channel — TERM, KILL 5 s later, every process the
   * command started and did not move to a session of its own, as coreutils
   * `timeout -k 5` did in the guest — and reports code 124. The host gives
   * up 15 s later in case the guest itself stops answering.
   */
  run(cmd: string, opts: RunOptions = {}): Promise<RunResult> {
    const timeoutSec = opts.timeoutSec ?? 60;
    const wrapped = `echo $$\n${cmd}`;
    const t0 = performance.now();
    return new Promise((resolve, reject) => {
      this.#client.exec(wrapped, (err, stream) => {
        if (err) return reject(new SshError(`exec failed: ${err.message}`));
        const out: Buffer[] = [];
        const errb: Buffer[] = [];
        let head = Buffer.alloc(0);
        let sid: number | undefined;
        let code = -1;
        let timedOut = false;
        let settled = false;
        const finish = (c: number) => {
          if (settled) return;
          settled = true;
          clearTimeout(deadline);
          clearTimeout(guard);
          resolve({
            code: timedOut ? TIMEOUT_CODE : c,
            stdout: Buffer.concat(out).toString("utf8"),
            stderr: Buffer.concat(errb).toString("utf8"),
            durationSec: (performance.now() - t0) / 1000,
          });
        };
        const deadline = setTimeout(() => {
          timedOut = true;
          if (sid !== undefined) this.#endSession(sid);
        }, timeoutSec * 1000);
        const guard = setTimeout(() => {
          errb.push(
            Buffer.from(`\n[harness] no answer ${timeoutSec + 15} s after start; gave up\n`),
          );
          stream.close();
          finish(TIMEOUT_CODE);
        }, (timeoutSec + 15) * 1000);
        stream.on("data", (d: Buffer) => {
          if (sid !== undefined) {
            out.push(d);
            return;
          }
          // the shell's PID line first, then the command's own output
          head = Buffer.concat([head, d]);
          const nl = head.indexOf(10);
          if (nl < 0) return;
          const pid = Number(head.subarray(0, nl).toString());
          sid = Number.isInteger(pid) && pid > 1 ? pid : 0;
          if (head.length > nl + 1) out.push(head.subarray(nl + 1));
          if (timedOut && sid) this.#endSession(sid);
        });
        stream.stderr.on("data", (d: Buffer) => errb.push(d));
        stream.on("exit", (c: number | null, signal?: string) => {
          code = c ?? (signal ? 128 + 9 : -1);
        });
        stream.on("close", () => finish(code));
        if (opts.stdin !== undefined) {
          stream.end(typeof opts.stdin === "string" ? opts.stdin : Buffer.from(opts.stdin));
        } else stream.end();
      });
    });
  }

  /**
   * End every process of session `sid` (a timed-out command): TERM, then
   * KILL 5 s later, from a detached shell so this channel closes at once.
   */
  #endSession(sid: number): void {
    if (!sid) return;
    const kill =
      `(pkill -TERM -s ${sid}; sleep 5; pkill -KILL -s ${sid}) </dev/null >/dev/null 2>&1 &`;
    this.#client.exec(kill, (err, stream) => {
      if (err) return; // the guard still ends the run
      stream.on("data", () => {});
      stream.stderr.on("data", () => {});
      stream.end();
    });
  }

  /** Write a file in the guest (through `cat`, so no sftp subsystem is needed). */
  async putFile(path: string, data: Uint8Array, mode = 0o644): Promise<void> {
    const dir = path.slice(0, path.lastIndexOf("/")) || "/";
    const r = await this.run(
      `mkdir -p ${shq(dir)} && cat > ${shq(path)}.part && chmod ${mode.toString(8)} ${
        shq(path)
      }.part && mv ${shq(path)}.part ${shq(path)}`,
      { stdin: data, timeoutSec: 120 },
    );
    if (r.code !== 0) throw new SshError(`writing ${path} failed: ${r.stderr.trim()}`);
  }

  /** Read a file from the guest. */
  getFile(path: string): Promise<Uint8Array> {
    return new Promise((resolve, reject) => {
      this.#client.exec(`cat ${shq(path)}`, (err, stream) => {
        if (err) return reject(new SshError(err.message));
        const out: Buffer[] = [];
        const errb: Buffer[] = [];
        let code = -1;
        stream.on("data", (d: Buffer) => out.push(d));
        stream.stderr.on("data", (d: Buffer) => errb.push(d));
        stream.on("exit", (c: number | null) => code = c ?? -1);
        stream.on("close", () => {
          if (code !== 0) {
            reject(new SshError(`reading ${path}: ${Buffer.concat(errb).toString()}`));
          } else resolve(new Uint8Array(Buffer.concat(out)));
        });
        stream.end();
      });
    });
  }

  /** Close the session. */
  close(): void {
    this.#client.end();
  }
}
