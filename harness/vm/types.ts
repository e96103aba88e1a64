/**
 * The interface rows use to talk to a booted guest. The implementation
 * (QMP + SSH + console) lives beside this file.
 */

/** Result of one command run in a guest over SSH. */
export interface RunResult {
  /** Exit status (non-zero when killed by a signal or the timeout). */
  code: number;
  /** The command's standard output. */
  stdout: string;
  /** The command's standard error. */
  stderr: string;
  /** Wall-clock seconds the command took. */
  durationSec: number;
}

/** Options of `Guest.run`. */
export interface RunOptions {
  /** Kill the command after this many seconds (code 124). Default 60. */
  timeoutSec?: number;
  /** Throw a RowFailure when the exit code is non-zero. */
  check?: boolean;
  /** Bytes written to the command's stdin. */
  stdin?: string | Uint8Array;
}

/** Where the runner puts built artifacts inside every guest. */
export const GUEST_PATHS = {
  /** Kernel modules (`cnuas_net.ko`, ...). */
  modules: "/opt/cnuas/modules",
  /** Guest-side test programs and examples. */
  bin: "/opt/cnuas/bin",
  /** Example sources to build in the guest (libcnuasdev's, with pkg-config). */
  src: "/opt/cnuas/src",
} as const;

/** A booted guest. */
export interface Guest {
  /** `g0`, `g1`, ... */
  name: string;
  /** Run a shell command (as root) and collect its result. */
  run(cmd: string, opts?: RunOptions): Promise<RunResult>;
  /** Write bytes to a file in the guest. */
  putFile(remotePath: string, data: Uint8Array, mode?: number): Promise<void>;
  /** Read a file from the guest. */
  getFile(remotePath: string): Promise<Uint8Array>;
  /** The kernel log since boot. */
  dmesg(): Promise<string>;
  /** Send a QMP command and return its `return` value. */
  qmp(command: string, args?: Record<string, unknown>): Promise<unknown>;
  /** Path of the serial console log on the host. */
  consoleLog: string;
  /** Seconds from `cont` to SSH answering. */
  bootToSshSec: number;
  /** Seconds from spawning QEMU to SSH answering (loading a saved state included). */
  startToSshSec: number;
  /** Whether the guest booted its kernel or was restored from a saved state. */
  startedFrom: "cold" | "snapshot";
}
