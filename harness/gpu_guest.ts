/**
 * Guest-side helpers shared by the cnuasgpu rows (`gpu-smoke`, `cnuaslink`)
 * and the GPU bench: loading cnuasgpu.ko, reading its sysfs class, waiting
 * for link state, running the guest program `cnuasgpu_smoke`, and what each
 * accelerator must report given the properties the lab gave it.
 *
 * @example
 * ```ts
 * const names = await loadCnuasgpu(guest, 2);
 * const byId = await gpuNodesById(guest, names);
 * await waitLinkState(guest, [...byId.values()], 1, 10);
 * ```
 */
import { RowFailure } from "./matrix/row.ts";
import { gpuProps } from "./vm/qemu_args.ts";
import { type Guest, GUEST_PATHS } from "./vm/types.ts";

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

/** Identification values the lab never changes (DEVICES.md defaults, uapi ABI version). */
const FIXED_INFO = {
  abi_version: "1",
  fw_version: "0x00010000",
  lanes_per_sm: "32",
  tensor_size: "16",
} as const;

/** INFO keys (as `cnuasgpu_smoke smoke` prints them) that sysfs also has. */
const SYSFS_INFO_KEYS = ["gpu_id", "sm_count", "devmem_size"] as const;

/** Properties the lab gave one accelerator (see `gpuProps`). */
export interface GpuProps {
  /** The device's `gpu_id` property. */
  gpuId: number;
  /** The device's `sm_count` property. */
  smCount: number;
  /** BAR1 size in MiB (`devmem_size` / 1 MiB). */
  devmemMb: number;
}

/** Properties of the first `count` accelerators of guest `guest`, in device order. */
export function guestGpus(guest: number, count: number): GpuProps[] {
  return Array.from({ length: count }, (_, k) => gpuProps(guest, k));
}

/** What INFO (as printed by `cnuasgpu_smoke smoke`) must say for a device with `p`. */
export function expectedInfo(p: GpuProps): Record<string, string> {
  return {
    ...FIXED_INFO,
    gpu_id: String(p.gpuId),
    sm_count: String(p.smCount),
    devmem_size: String(p.devmemMb * 1024 * 1024),
  };
}

/** What the sysfs identity attributes must say for a device with `p`. */
export function expectedSysfs(p: GpuProps): Record<string, string> {
  const info = expectedInfo(p);
  return Object.fromEntries(SYSFS_INFO_KEYS.map((k) => [k, info[k]]));
}

/** One line per key of `want` whose value in `got` differs (empty when all match). */
export function mismatches(
  what: string,
  got: Record<string, string>,
  want: Record<string, string>,
): string[] {
  return Object.entries(want)
    .filter(([k, v]) => got[k] !== v)
    .map(([k, v]) => `${what}: ${k} is ${got[k] ?? "(missing)"}, expected ${v}`);
}

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

/**
 * The node of each device in `props`, in that order; a RowFailure naming
 * what sysfs had when one of their gpu_ids is missing.
 */
export function nodesFor(byId: Map<number, string>, props: GpuProps[]): string[] {
  return props.map((p) => {
    const n = byId.get(p.gpuId);
    if (n === undefined) {
      throw new RowFailure(
        `no cnuasgpu device with gpu_id ${p.gpuId}; sysfs has ${[...byId.keys()].join(", ")}`,
      );
    }
    return n;
  });
}

/** Wait until every node in `names` reads link_up `want`; a RowFailure with the last values. */
export async function waitLinkState(
  g: Guest,
  names: string[],
  want: 0 | 1,
  timeoutSec: number,
): Promise<void> {
  const files = names.map((n) => `/sys/class/cnuasgpu/${n}/link_up`).join(" ");
  const r = await g.run(
    `for i in $(seq ${timeoutSec * 10}); do ` +
      `[ "$(cat ${files} | sort -u)" = ${want} ] && exit 0; sleep 0.1; done; ` +
      `cat ${files}; exit 1`,
    { timeoutSec: timeoutSec + 10 },
  );
  if (r.code !== 0) {
    const last = r.stdout.trim().split(/\s+/).join(", ");
    throw new RowFailure(
      `link_up of ${names.join(", ")} not all ${want} within ${timeoutSec} s (last: ${last})`,
    );
  }
}
