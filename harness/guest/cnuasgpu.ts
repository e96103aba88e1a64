/**
 * Guest-side helpers shared by the cnuasgpu rows (`gpu-smoke`, `cnuaslink`)
 * and the GPU bench: loading cnuasgpu.ko, reading its sysfs class, waiting
 * for link state, running the guest programs (`cnuasgpu_smoke` and its
 * siblings, drivers/test/cnuasgpu_*.c), and what each
 * accelerator must report given the properties the lab gave it.
 *
 * @example
 * ```ts
 * const names = await loadCnuasgpu(guest, 2);
 * const byId = await gpuNodesById(guest, names);
 * await waitLinkState(guest, [...byId.values()], 1, 10);
 * ```
 */
import { RowFailure } from "../matrix/row.ts";
import { gpuProps } from "../vm/qemu_args.ts";
import { type Guest, GUEST_PATHS } from "../vm/types.ts";
import { modprobeLines } from "./kmod.ts";
import { shq } from "./shell.ts";

/** Paths of the guest test programs (drivers/test/cnuasgpu_*.c). */
export const CNUASGPU_SMOKE = `${GUEST_PATHS.bin}/cnuasgpu_smoke`;
export const CNUASGPU_FUZZ = `${GUEST_PATHS.bin}/cnuasgpu_fuzz`;
export const CNUASGPU_LINK = `${GUEST_PATHS.bin}/cnuasgpu_link`;
export const CNUASGPU_COPYBENCH = `${GUEST_PATHS.bin}/cnuasgpu_copybench`;
export const CNUASGPU_COPYLOOP = `${GUEST_PATHS.bin}/cnuasgpu_copyloop`;
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

/** Identification values the lab never changes (docs/devices.md defaults, uapi ABI version). */
const FIXED_INFO = {
  abi_version: "1",
  fw_version: "0x00010000",
  lanes_per_sm: "32",
  tensor_size: "16",
} as const;

/** INFO keys (as `cnuasgpu_smoke` prints them) that sysfs also has. */
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

/** What INFO (as printed by `cnuasgpu_smoke`) must say for a device with `p`. */
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

/** `key=value` lines into a record (other lines ignored). */
export function parseKeyValues(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const m = /^([a-z_]+)=(.*)$/.exec(line.trim());
    if (m) out[m[1]] = m[2];
  }
  return out;
}

/**
 * `modprobe cnuasgpu` (udev has normally loaded it at boot: the package
 * installs it, the accelerator's modalias names it) and wait until `count`
 * /dev/cnuasgpuN nodes exist.
 */
export async function loadCnuasgpu(g: Guest, count: number): Promise<string[]> {
  const script = [
    ...modprobeLines("cnuasgpu"),
    "for i in $(seq 50); do",
    `  [ "$(ls /sys/class/cnuasgpu 2>/dev/null | wc -l)" -ge ${count} ] && break`,
    "  sleep 0.1",
    "done",
    "ls /sys/class/cnuasgpu",
  ].join("\n");
  const r = await g.run(script, { timeoutSec: 30 });
  if (r.code !== 0) {
    throw new RowFailure(
      `${g.name}: modprobe cnuasgpu failed (exit ${r.code}): ${r.stderr.trim()}`,
    );
  }
  const names = r.stdout.split(/\s+/).filter((n) => /^cnuasgpu\d+$/.test(n)).sort();
  if (names.length !== count) {
    throw new RowFailure(
      `${g.name}: ${names.length} cnuasgpu devices after modprobe, expected ${count}`,
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

/** Run guest program `program` (e.g. CNUASGPU_SMOKE) with `args`; its stdout parsed as key=value. */
export async function runGpuProgram(
  g: Guest,
  program: string,
  args: string[],
  timeoutSec = 120,
): Promise<{ code: number; kv: Record<string, string>; stdout: string; stderr: string }> {
  const r = await g.run([program, ...args].map(shq).join(" "), { timeoutSec });
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

/** The errno every call on an unbound device must end with. */
const GONE = "ENODEV";

/**
 * Shell script for one unbind-under-load run on device node `name`: start
 * `cnuasgpu_copyloop` in the background, unbind the PCI function from
 * cnuasgpu through sysfs once copies are going, give the copies `seconds` to
 * end by themselves, then bind the function again. Everything it learns is
 * printed as key=value lines (the copy-loop's own lines included); sysfs
 * writes are bounded by `timeout` so a remove that hangs is reported, not
 * waited on for ever.
 */
export function unbindScript(name: string, seconds: number): string {
  const out = `/tmp/cnuasgpu_copy_loop.${name}.out`;
  const drv = "/sys/bus/pci/drivers/cnuasgpu";
  return [
    `bdf=$(basename "$(readlink -f /sys/class/cnuasgpu/${name}/device)")`,
    "echo bdf=$bdf",
    `${shq(CNUASGPU_COPYLOOP)} /dev/${name} ${seconds} >${out} 2>&1 &`,
    "pid=$!",
    "for i in $(seq 600); do",
    `  grep -q '^copy_loop_running=1' ${out} && break`,
    "  kill -0 $pid 2>/dev/null || break",
    "  sleep 0.1",
    "done",
    `echo running_at_unbind=$(grep -c '^copy_loop_running=1' ${out})`,
    `timeout 60 sh -c "echo $bdf >${drv}/unbind"; echo unbind_code=$?`,
    `[ -e /dev/${name} ]; echo node_after_unbind=$((1 - $?))`,
    `for i in $(seq ${seconds * 10}); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done`,
    "if kill -0 $pid 2>/dev/null; then echo loop_hung=1; kill -9 $pid; fi",
    "wait $pid; echo loop_exit=$?",
    `cat ${out}; rm -f ${out}`,
    `timeout 60 sh -c "echo $bdf >${drv}/bind"; echo bind_code=$?`,
    "for i in $(seq 50); do",
    '  [ -n "$(ls /sys/bus/pci/devices/$bdf/cnuasgpu 2>/dev/null)" ] && break',
    "  sleep 0.1",
    "done",
    "echo rebound=$(ls /sys/bus/pci/devices/$bdf/cnuasgpu 2>/dev/null)",
  ].join("\n");
}

/**
 * What went wrong in an unbind-under-load run (`unbindScript`'s key=value
 * lines): copies that were not running when the unbind came, an unbind or
 * bind that failed or hung, copies that never stopped or stopped with
 * anything but ENODEV, calls on the gone device that did not fail with
 * ENODEV, a device node left behind, no device after the bind. Empty when
 * the run went as the driver promises.
 */
export function unbindProblems(kv: Record<string, string>): string[] {
  const want: Record<string, string> = {
    running_at_unbind: "1",
    unbind_code: "0",
    node_after_unbind: "0",
    loop_exit: "0",
    copy_end: GONE,
    after_copy: GONE,
    after_info: GONE,
    after_alloc: GONE,
    after_mmap: GONE,
    bind_code: "0",
  };
  const bad = mismatches("unbind under copies", kv, want);
  if (kv.loop_hung !== undefined) bad.push("unbind under copies: the copy loop hung");
  if (!/^cnuasgpu\d+$/.test(kv.rebound ?? "")) {
    bad.push(`unbind under copies: no cnuasgpu device after bind (${kv.rebound ?? "nothing"})`);
  }
  return bad;
}

/** Run `unbindScript` on `name`; its key=value lines and the raw output. */
export async function unbindUnderCopies(
  g: Guest,
  name: string,
  seconds = 60,
): Promise<{ kv: Record<string, string>; stdout: string }> {
  const r = await g.run(unbindScript(name, seconds), { timeoutSec: seconds + 240 });
  return { kv: parseKeyValues(r.stdout), stdout: `${r.stdout}${r.stderr}` };
}

/** The ABI fuzzer of both GPU modules (drivers/test/cnuasgpu_abi_fuzz.c). */
export const CNUASGPU_ABI_FUZZ = `${GUEST_PATHS.bin}/cnuasgpu_abi_fuzz`;

/** What one run of cnuasgpu_abi_fuzz said. */
export interface GpuAbiFuzzResult {
  /** Exit status (0 PASS, 1 a check failed, 2 usage). */
  code: number;
  /** calls_total (every phase). */
  calls: number;
  /** violations (-1 when the program did not get that far). */
  violations: number;
  /** The first violation lines. */
  violationLines: string[];
  /** baseline_X and final_X counters. */
  counters: Record<string, number>;
  /** Its whole output. */
  stdout: string;
  stderr: string;
}

/** Parse cnuasgpu_abi_fuzz's `key value` lines. */
export function parseGpuAbiFuzz(code: number, stdout: string, stderr = ""): GpuAbiFuzzResult {
  const num = (k: string) => {
    const m = new RegExp(`^${k} (\\d+)$`, "m").exec(stdout);
    return m ? Number(m[1]) : -1;
  };
  const counters: Record<string, number> = {};
  for (const m of stdout.matchAll(/^((?:baseline|final)_[a-z_]+) (-?\d+)$/gm)) {
    counters[m[1]] = Number(m[2]);
  }
  return {
    code,
    calls: Math.max(0, num("calls_total")),
    violations: num("violations"),
    violationLines: stdout.split("\n").filter((l) => l.startsWith("violation: ")).slice(0, 10),
    counters,
    stdout,
    stderr,
  };
}

/** Run cnuasgpu_abi_fuzz on `node` (/dev/cnuasgpuN or /dev/cnuasgpu_hostN). */
export async function runGpuAbiFuzz(
  g: Guest,
  node: string,
  calls: number,
  seed: number,
  timeoutSec = 600,
): Promise<GpuAbiFuzzResult> {
  const r = await g.run([CNUASGPU_ABI_FUZZ, node, String(calls), String(seed)].map(shq).join(" "), {
    timeoutSec,
  });
  return parseGpuAbiFuzz(r.code, r.stdout, r.stderr);
}
