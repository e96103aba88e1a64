/**
 * Keeps every child process the harness starts (QEMU, the switch) and ends
 * them on every exit path: normal exit, an uncaught error, SIGINT, SIGTERM.
 */

const live = new Map<number, string>();
let installed = false;

/** Ends every live child now (SIGKILL), synchronously. */
export function killAll(): void {
  for (const pid of live.keys()) {
    try {
      Deno.kill(pid, "SIGKILL");
    } catch { /* already gone */ }
  }
  live.clear();
}

function install(): void {
  if (installed) return;
  installed = true;
  globalThis.addEventListener("unload", killAll);
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    try {
      Deno.addSignalListener(sig, () => {
        killAll();
        Deno.exit(130);
      });
    } catch { /* signal not available */ }
  }
}

/** Track a child by PID until `release`. */
export function track(pid: number, what: string): void {
  install();
  live.set(pid, what);
}

/** Stop tracking a child that has exited. */
export function release(pid: number): void {
  live.delete(pid);
}

/** PIDs currently tracked (for tests that check nothing is left). */
export function trackedPids(): number[] {
  return [...live.keys()];
}

/**
 * The state letter (R, S, D, Z, …) of a `/proc/<pid>/stat` line: the field
 * after the ")" that ends the name (a name may hold spaces and parentheses).
 */
export function statState(stat: string): string {
  const at = stat.lastIndexOf(")") + 2;
  return stat.slice(at, at + 1);
}

/** Whether a PID still names a live (non-zombie) process. */
export function pidAlive(pid: number): boolean {
  try {
    const state = statState(Deno.readTextFileSync(`/proc/${pid}/stat`));
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}
