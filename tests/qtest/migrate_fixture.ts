/**
 * Saving a qtest machine's state and loading it into another (QMP
 * `migrate` to `exec:`, QEMU 7.2 has no file URI; the destination started
 * with `-incoming defer`, so a test decides what happens before the load).
 */
import { join } from "node:path";
import { QmpClient } from "../../harness/vm/qmp.ts";

/** `-qmp` arguments for a machine named `name`, its socket in `dir`. */
export function qmpArgs(dir: string, name: string): string[] {
  return ["-qmp", `unix:${qmpPath(dir, name)},server=on,wait=off`];
}

/** Where `qmpArgs` puts the QMP socket. */
export function qmpPath(dir: string, name: string): string {
  return join(dir, `${name}.qmp`);
}

/** Poll a QMP query every 50 ms until `done` (20 s at most; a failed migration throws). */
export async function until(
  qmp: QmpClient,
  command: string,
  done: (r: Record<string, unknown>) => boolean,
): Promise<void> {
  const end = Date.now() + 20_000;
  for (;;) {
    const r = await qmp.execute(command) as Record<string, unknown>;
    if (done(r)) return;
    if (r.status === "failed") throw new Error(`${command}: ${JSON.stringify(r)}`);
    if (Date.now() > end) throw new Error(`${command} still says ${JSON.stringify(r)}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

/** Save the machine behind `qmp` to `file` and wait until the save completed. */
export async function saveState(qmp: QmpClient, file: string): Promise<void> {
  await qmp.execute("migrate", { uri: `exec:cat > ${file}` });
  await until(qmp, "query-migrate", (r) => r.status === "completed");
}

/** Load `file` into a machine started with `-incoming defer`; resolves once it runs. */
export async function loadState(qmp: QmpClient, file: string): Promise<void> {
  const st = await qmp.execute("query-status") as { status: string };
  if (st.status !== "inmigrate") throw new Error(`the destination is ${st.status}, not inmigrate`);
  await qmp.execute("migrate-incoming", { uri: `exec:cat ${file}` });
  await until(qmp, "query-status", (r) => r.running === true);
}
