/**
 * Host processes at idle priority for one stretch of async work: a row that
 * declares `background` (matrix/row.ts) runs beside the rows that judge
 * timing, and the commands it starts through `exec` run at SCHED_IDLE and in
 * the idle I/O class, so they take only the cycles and disk time those rows
 * leave (a task of normal priority that wakes preempts a SCHED_IDLE one at
 * once). The context follows the work through every await
 * (AsyncLocalStorage), so rows running at the same time keep their own.
 */
import { AsyncLocalStorage } from "node:async_hooks";

const idle = new AsyncLocalStorage<true>();

/** The wrapper that starts a command at idle CPU and I/O priority (util-linux). */
export const IDLE_PRIORITY_PREFIX = ["chrt", "--idle", "0", "ionice", "-c", "3"];

/** Run `fn` with every command it starts through `exec` at idle priority. */
export function atIdlePriority<T>(fn: () => Promise<T>): Promise<T> {
  return idle.run(true, fn);
}

/** Whether the current work runs at idle priority ({@link atIdlePriority}). */
export function atIdle(): boolean {
  return idle.getStore() === true;
}

/** The argv to spawn for `argv` here: wrapped in {@link IDLE_PRIORITY_PREFIX} at idle priority. */
export function spawnArgv(argv: string[]): string[] {
  return atIdle() ? [...IDLE_PRIORITY_PREFIX, ...argv] : argv;
}
