/**
 * Guest-side helpers of the cnuasgpu rows (`gpu-smoke`, `cnuaslink`):
 * loading cnuasgpu.ko, reading its sysfs class and running the guest program
 * `cnuasgpu_smoke`.
 */
import { RowFailure } from "../../harness/matrix/row.ts";
import { type Guest, GUEST_PATHS } from "../../harness/vm/types.ts";

/** Path of the module inside the guest. */
export const CNUASGPU_KO = `${GUEST_PATHS.modules}/cnuasgpu.ko`;
/** Path of the guest test program. */
export const CNUASGPU_SMOKE = `${GUEST_PATHS.bin}/cnuasgpu_smoke`;
/** sysfs attributes every /sys/class/cnuasgpu/cnuasgpuN has. */
export const GPU_SYSFS_ATTRS = [
  "gpu_id",
  "sm_count",
  "devmem_size",
  "devmem_used",
  "link_up",
  "link_rx_ready",
  "peer_rdma",
  "export_align",
  "exports",
] as const;

/** Quote for a POSIX shell. */
export function shq(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/** `key=value` lines into a record (other lines ignored). */
export function parseKeyValues(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const m = /^([a-z_]+)=(.*)$/.exec(line.trim());
    if (m) out[m[1]] = m[2];
  }
  return out;
}

/** insmod cnuasgpu (unless loaded) and wait until `count` /dev/cnuasgpuN nodes exist. */
export async function loadCnuasgpu(g: Guest, count: number): Promise<string[]> {
  const script = [
    "grep -q '^cnuasgpu ' /proc/modules || insmod " + shq(CNUASGPU_KO) + " || exit 3",
    "for i in $(seq 50); do",
    `  [ "$(ls /sys/class/cnuasgpu 2>/dev/null | wc -l)" -ge ${count} ] && break`,
    "  sleep 0.1",
    "done",
    "ls /sys/class/cnuasgpu",
  ].join("\n");
  const r = await g.run(script, { timeoutSec: 30 });
  if (r.code !== 0) {
    throw new RowFailure(`${g.name}: insmod cnuasgpu failed (exit ${r.code}): ${r.stderr.trim()}`);
  }
  const names = r.stdout.split(/\s+/).filter((n) => /^cnuasgpu\d+$/.test(n)).sort();
  if (names.length !== count) {
    throw new RowFailure(
      `${g.name}: ${names.length} cnuasgpu devices after insmod, expected ${count}`,
    );
  }
  return names;
}

/** All sysfs attributes of one class device. */
export async function readGpuSysfs(g: Guest, name: string): Promise<Record<string, string>> {
  const cmd = GPU_SYSFS_ATTRS.map((a) => `echo ${a}=$(cat /sys/class/cnuasgpu/${name}/${a})`)
    .join("; ");
  const r = await g.run(cmd, { check: true });
  return parseKeyValues(r.stdout);
}

/** Run `cnuasgpu_smoke` with `args`; the result's stdout parsed as key=value. */
export async function runSmoke(
  g: Guest,
  args: string[],
  timeoutSec = 120,
): Promise<{ code: number; kv: Record<string, string>; stdout: string; stderr: string }> {
  const r = await g.run([CNUASGPU_SMOKE, ...args].map(shq).join(" "), { timeoutSec });
  return { code: r.code, kv: parseKeyValues(r.stdout), stdout: r.stdout, stderr: r.stderr };
}

/** Map gpu_id → device node name, from sysfs. */
export async function gpuNodesById(g: Guest, names: string[]): Promise<Map<number, string>> {
  const out = new Map<number, string>();
  for (const n of names) {
    const kv = await readGpuSysfs(g, n);
    out.set(Number(kv.gpu_id), n);
  }
  return out;
}
