/**
 * Guest-side helpers of the `gpu-host` row: loading (`modprobe`: the
 * cnuas-gpu-modules package installs it; nothing loads it by itself) and
 * unloading cnuasgpu_host with given parameters, its sysfs attributes, a load that
 * must be refused (and the kernel message naming
 * the parameter), and the script that kills a process holding pins with ops
 * in flight.
 *
 * @example
 * ```ts
 * await loadHost(g, 1, "");              // modprobe with the module's defaults
 * const kv = await hostSysfs(g, 0);      // devmem_used, pinned_used, inflight, ...
 * ```
 */
import { RowFailure } from "../matrix/row.ts";
import { type Guest, GUEST_PATHS } from "../vm/types.ts";
import { parseKeyValues } from "./cnuasgpu.ts";
import { shq } from "./shell.ts";

/** The op runner (drivers/test/cnuasgpu_host_ops.c). */
export const HOST_OPS_BIN = `${GUEST_PATHS.bin}/cnuasgpu_host_ops`;
/** The module's own checks (drivers/test/cnuasgpu_host_test.c). */
export const CNUASGPU_HOST_TEST = `${GUEST_PATHS.bin}/cnuasgpu_host_test`;

/** sysfs attributes of /sys/class/cnuasgpu_host/cnuasgpu_hostN (docs/devices.md). */
export const HOST_SYSFS_ATTRS = [
  "devmem_size",
  "devmem_used",
  "allocations",
  "exports",
  "pinned_max",
  "pinned_used",
  "pins",
  "inflight",
  "caps",
  "features",
  "queue_depth",
  "batch_max",
] as const;

/** The counters that must be back to 0 once nothing uses a node. */
export const HOST_IDLE_COUNTERS = [
  "devmem_used",
  "allocations",
  "exports",
  "pinned_used",
  "pins",
  "inflight",
] as const;

/** The class directory of node `n`. */
export function hostClassDir(n: number): string {
  return `/sys/class/cnuasgpu_host/cnuasgpu_host${n}`;
}

/** All sysfs attributes of node `n` (one value per line: `features` has spaces). */
export async function hostSysfs(g: Guest, n: number): Promise<Record<string, string>> {
  const cmd = HOST_SYSFS_ATTRS.map((a) => `echo "${a}=$(cat ${hostClassDir(n)}/${a})"`).join("; ");
  return parseKeyValues((await g.run(cmd, { check: true })).stdout);
}

/** Whether cnuasgpu_host is loaded. */
export async function hostLoaded(g: Guest): Promise<boolean> {
  return (await g.run("grep -q '^cnuasgpu_host ' /proc/modules")).code === 0;
}

/** modprobe cnuasgpu_host with `params` (empty: its defaults); wait for its `devices` nodes. */
export async function loadHost(g: Guest, devices: number, params: string): Promise<void> {
  const r = await g.run(
    [
      `modprobe cnuasgpu_host ${params} || exit 3`,
      "for i in $(seq 50); do",
      `  [ "$(ls /dev/cnuasgpu_host* 2>/dev/null | wc -l)" -ge ${devices} ] && break`,
      "  sleep 0.1",
      "done",
      "ls /dev/ | grep '^cnuasgpu_host'",
    ].join("\n"),
    { timeoutSec: 60 },
  );
  if (r.code !== 0) {
    throw new RowFailure(`modprobe cnuasgpu_host ${params} failed (exit ${r.code}): ${r.stderr}`);
  }
  const nodes = r.stdout.split(/\s+/).filter((n) => /^cnuasgpu_host\d+$/.test(n)).sort();
  const want = Array.from({ length: devices }, (_, i) => `cnuasgpu_host${i}`);
  if (nodes.join(" ") !== want.join(" ")) {
    throw new RowFailure(`after modprobe: /dev has ${nodes.join(", ") || "none"}, want ${want}`);
  }
}

/** rmmod cnuasgpu_host; fail unless the class and the nodes are gone. */
export async function unloadHost(g: Guest): Promise<void> {
  const r = await g.run(
    "rmmod cnuasgpu_host && ! ls /dev/cnuasgpu_host* 2>/dev/null && " +
      "! ls -d /sys/class/cnuasgpu_host 2>/dev/null",
    { timeoutSec: 60 },
  );
  if (r.code !== 0) throw new RowFailure(`rmmod cnuasgpu_host left: ${r.stdout}${r.stderr}`);
}

/** What a refused load did: modprobe's exit, and the kernel lines it printed. */
export interface RefusedLoad {
  /** modprobe's exit status. */
  code: number;
  /** Kernel log lines printed by the attempt. */
  dmesg: string;
  /** The module is loaded afterwards (it should not be). */
  loaded: boolean;
}

/**
 * modprobe with each of `paramSets` in turn, each of which must be refused;
 * one result per set, in order. One command for all of them (an SSH
 * command costs a TCG guest more than a refused load's own work), reading
 * the kernel log once per attempt: what it printed is the log's new lines.
 */
export async function tryBadLoads(g: Guest, paramSets: string[]): Promise<RefusedLoad[]> {
  const script = [
    "log=/tmp/cnuasgpu_host-bad-loads.dmesg",
    'dmesg >"$log"; n=$(wc -l <"$log")',
    ...paramSets.map((params, i) =>
      [
        `echo "attempt ${i}"`,
        `modprobe cnuasgpu_host ${params} 2>/dev/null; echo "code=$?"`,
        "grep -q '^cnuasgpu_host ' /proc/modules && echo loaded=1 && rmmod cnuasgpu_host",
        'dmesg >"$log"; tail -n +"$((n + 1))" "$log" | sed "s/^/dmesg: /"; n=$(wc -l <"$log")',
      ].join("\n")
    ),
    'rm -f "$log"',
  ].join("\n");
  const r = await g.run(script, { timeoutSec: 60 + 30 * paramSets.length });
  // split on the markers: [before, "0", what attempt 0 printed, "1", ...]
  const parts = r.stdout.split(/^attempt (\d+)$/m);
  const printed = new Map<number, string>();
  for (let k = 1; k + 1 < parts.length; k += 2) printed.set(Number(parts[k]), parts[k + 1]);
  const results: RefusedLoad[] = [];
  for (let i = 0; i < paramSets.length; i++) {
    const out = printed.get(i);
    if (out === undefined) {
      throw new RowFailure(
        `modprobe cnuasgpu_host ${paramSets[i]}: no attempt ${i} in the output ` +
          `(exit ${r.code}): ${r.stdout.slice(-500)}${r.stderr.slice(-500)}`,
      );
    }
    results.push({
      code: Number(/^code=(\d+)/m.exec(out)?.[1] ?? "-1"),
      dmesg: out.split("\n").filter((l) => l.startsWith("dmesg: ")).map((l) => l.slice(7))
        .join("\n"),
      loaded: /^loaded=1/m.test(out),
    });
  }
  return results;
}

/**
 * Shell script: a runner process that allocates, pins and fills its queue
 * with long ops (FREE and UNPIN of what they use while they are queued), is
 * killed with SIGKILL while they run (the counters are read just before); then node 0's counters are read until
 * they are back to 0 (at most 30 s). key=value lines: the counters before
 * the kill (`before_*`) and after (`after_*`), and the runner's answers.
 */
export function killMidQueueScript(ops: string, batch: string[]): string {
  const d = hostClassDir(0);
  const counters = "inflight pinned_used devmem_used pins allocations exports";
  // One cat reads them all, microseconds apart (a cat each would take a TCG fork apiece).
  const names = counters.split(" ");
  const read = (p: string) =>
    `set -- $(cd ${d} && cat ${counters}); ` +
    names.map((c, i) => `echo "${p}_${c}=$${i + 1}"`).join("; ");
  return [
    "t=$(mktemp -d)",
    'mkfifo "$t/in"',
    `${shq(ops)} <"$t/in" >"$t/out" 2>&1 &`,
    "pid=$!",
    'exec 3>"$t/in"',
    ...batch.map((l) => `echo ${shq(l)} >&3`),
    `for i in $(seq 600); do [ "$(wc -l <"$t/out")" -ge ${batch.length} ] && break; sleep 0.05; done`,
    read("before"),
    'kill -9 "$pid"; wait "$pid"; echo "killed=$?"',
    "exec 3>&-",
    "for i in $(seq 300); do",
    `  [ "$(cd ${d} && cat ${counters} | tr -d '\\n')" = 000000 ] && break`,
    "  sleep 0.1",
    "done",
    read("after"),
    'sed "s/^/answer: /" "$t/out"; rm -rf "$t"',
  ].join("\n");
}
