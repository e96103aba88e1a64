/**
 * Accelerator choice. KVM counts as working only if a probe guest reaches
 * the init marker within seconds: on some hosts /dev/kvm opens and QMP says
 * KVM is enabled, yet the guest kernel hangs right after decompression.
 * The probe's verdict is kept in the cache per host kernel, QEMU binary and
 * image, so it is paid once.
 */
import { join } from "node:path";
import type { Accel, Config } from "../config.ts";
import { progress } from "../progress.ts";
import { GuestVm } from "./guest.ts";
import { freePort } from "./ports.ts";

/** Seconds a KVM probe guest gets to print the init marker. */
export const KVM_PROBE_SEC = 12;

/** The line guest-init.sh prints first. */
export const INIT_MARKER = "CNUAS-INIT-REACHED";

/** Inputs of a probe. */
export interface ProbeInputs {
  /** Path of the QEMU binary the probe guest runs under. */
  qemu: string;
  /** Firmware search directories for `-L`. */
  firmware: string[];
  /** Guest kernel path. */
  kernel: string;
  /** Guest initrd path. */
  initrd: string;
  /** Guest root file system image path. */
  rootfs: string;
  /** Cache key of the image; part of the key the verdict is kept under. */
  imageKey: string;
}

/** Outcome of choosing an accelerator. */
export interface AccelChoice {
  /** The accelerator guests will use. */
  accel: Accel;
  /** Why (shown once, recorded in the report). */
  reason: string;
}

function kvmOpens(): boolean {
  try {
    Deno.openSync("/dev/kvm", { read: true, write: true }).close();
    return true;
  } catch {
    return false;
  }
}

/** Resolve `config.accel` to a concrete accelerator, probing in auto mode. */
export async function chooseAccel(config: Config, p: ProbeInputs): Promise<AccelChoice> {
  if (config.accel !== "auto") return { accel: config.accel, reason: `--accel ${config.accel}` };
  if (!kvmOpens()) return { accel: "tcg", reason: "/dev/kvm cannot be opened: TCG" };
  const hostKernel = Deno.osRelease();
  const st = await Deno.stat(p.qemu);
  const id = JSON.stringify({
    hostKernel,
    qemu: p.qemu,
    mtime: st.mtime?.getTime(),
    image: p.imageKey,
  });
  const memo = join(config.cacheDir, "accel-probe.json");
  try {
    const saved = JSON.parse(await Deno.readTextFile(memo)) as { id: string; choice: AccelChoice };
    if (saved.id === id) {
      return { ...saved.choice, reason: `${saved.choice.reason} (cached probe)` };
    }
  } catch { /* no verdict yet */ }
  const choice = await probeKvm(p);
  await Deno.mkdir(config.cacheDir, { recursive: true });
  await Deno.writeTextFile(memo, JSON.stringify({ id, choice }));
  return choice;
}

async function probeKvm(p: ProbeInputs): Promise<AccelChoice> {
  const dir = await Deno.makeTempDir({ prefix: "cnuas-kvm-probe-" });
  progress("accel", `probing KVM (a guest must reach init within ${KVM_PROBE_SEC} s)`);
  const consoleLog = join(dir, "console.log");
  const vm = await GuestVm.start({
    name: "kvmprobe",
    qemu: p.qemu,
    firmware: p.firmware,
    kernel: p.kernel,
    initrd: p.initrd,
    rootfs: p.rootfs,
    accel: "kvm",
    memMb: 512,
    cpus: 1,
    sshPort: freePort(),
    qmpSocket: join(dir, "qmp.sock"),
    consoleLog,
    devices: [],
  }, { sshKeyPath: "", bootTimeoutSec: KVM_PROBE_SEC, logDir: dir }).catch((e: Error) => e);
  if (vm instanceof Error) {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    return { accel: "tcg", reason: `KVM probe could not start QEMU (${vm.message}): TCG` };
  }
  const t0 = performance.now();
  const reached = await vm.consoleSays(INIT_MARKER, t0 + KVM_PROBE_SEC * 1000);
  const secs = ((performance.now() - t0) / 1000).toFixed(1);
  await vm.close();
  await Deno.remove(dir, { recursive: true }).catch(() => {});
  return reached ? { accel: "kvm", reason: `KVM probe guest reached init in ${secs} s` } : {
    accel: "tcg",
    reason: `/dev/kvm opens but a KVM guest did not reach init within ${KVM_PROBE_SEC} s: ` +
      `falling back to TCG`,
  };
}
