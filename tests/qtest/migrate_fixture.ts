/**
 * Saving a qtest machine's state and loading it into another (the harness's
 * own `saveStateTo` and state URIs; the destination started with
 * `-incoming defer`, so a test decides what happens before the load), in a
 * scratch directory whose processes and sockets are closed however the test
 * ends.
 */
import { join } from "node:path";
import { SAVES_STATE_ARGS } from "../../harness/vm/qemu_args.ts";
import { type QmpClient, saveStateTo, stateInUri } from "../../harness/vm/qmp.ts";

/**
 * `-qmp` arguments for a machine named `name`, its socket in `dir`, and the
 * harness's `SAVES_STATE_ARGS`: `saveState` stops the source, and the
 * destination must still run once the load ends, as a restored guest does.
 */
export function qmpArgs(dir: string, name: string): string[] {
  return ["-qmp", `unix:${qmpPath(dir, name)},server=on,wait=off`, ...SAVES_STATE_ARGS];
}

/** Where `qmpArgs` puts the QMP socket. */
export function qmpPath(dir: string, name: string): string {
  return join(dir, `${name}.qmp`);
}

/** How long a qtest machine's state may take to save (it has 128 MiB of RAM, most untouched). */
export const SAVE_TIMEOUT_SEC = 20;

/** Save the machine behind `qmp` to `file`. */
export function saveState(qmp: QmpClient, file: string): Promise<void> {
  return saveStateTo(qmp, file, SAVE_TIMEOUT_SEC, "the source's state");
}

/** Load `file` into a machine started with `-incoming defer`; resolves once it runs (20 s at most). */
export async function loadState(qmp: QmpClient, file: string): Promise<void> {
  const st = await qmp.execute("query-status") as { status: string };
  if (st.status !== "inmigrate") throw new Error(`the destination is ${st.status}, not inmigrate`);
  await qmp.execute("migrate-incoming", { uri: stateInUri(file) });
  const end = Date.now() + 20_000;
  for (;;) {
    const r = await qmp.execute("query-status") as { status: string; running: boolean };
    if (r.running) return;
    if (Date.now() > end) throw new Error(`the destination is still ${r.status} after the load`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

/**
 * Run `fn` with a fresh scratch directory and a `defer` that registers a
 * closer; the closers run in reverse however `fn` ends (their own failures
 * ignored), then the directory goes.
 */
export async function inScratch(
  prefix: string,
  fn: (dir: string, defer: (close: () => unknown) => void) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix });
  const closers: (() => unknown)[] = [];
  try {
    await fn(dir, (c) => closers.push(c));
  } finally {
    for (const c of closers.reverse()) await Promise.resolve().then(c).catch(() => {});
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
