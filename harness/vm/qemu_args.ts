/**
 * The QEMU command line of a guest, as a pure function of its description.
 */
import type { Accel } from "../config.ts";
import { stateInUri } from "./qmp.ts";

/**
 * For a machine whose state `saveStateTo` saves (it stops the machine
 * first): leave the run state out of the stream, so the machine that loads
 * it runs as its own start says (`cont`, or at once without `-S`), not
 * stopped as the saved one was.
 */
export const SAVES_STATE_ARGS: readonly string[] = ["-global", "migration.store-global-state=off"];

/** One of our devices on a guest's PCI bus. */
export type GuestDevice =
  | { kind: "vnic"; socketPath?: string; mac: string }
  | { kind: "virtio-socket"; mode: "listen" | "connect"; port: number; mac: string }
  | { kind: "gpu"; gpuId: number; smCount: number; devmemMb: number; linkSocket?: string };

/**
 * Properties of accelerator `index` of guest `guest`. They differ per device
 * (sm_count 16, 24, ...; devmem 256, 128, ... MiB, never below 64) so a
 * driver that reports defaults instead of what it read is caught.
 */
export function gpuProps(
  guest: number,
  index: number,
): { gpuId: number; smCount: number; devmemMb: number } {
  return {
    gpuId: guest * 16 + index,
    smCount: 16 + 8 * index,
    devmemMb: Math.max(64, 256 >> index),
  };
}

/** Everything that decides a guest's QEMU argv. */
export interface GuestSpec {
  name: string;
  qemu: string;
  firmware: string[];
  kernel: string;
  initrd: string;
  rootfs: string;
  accel: Accel;
  memMb: number;
  cpus: number;
  sshPort: number;
  qmpSocket: string;
  /**
   * The chardev socket of the guest's second serial line (ttyS1), where a
   * restored guest's identity agent waits (vm/restore_identity.ts). Guests
   * that may be saved or restored have one; the line is part of the machine,
   * so the saved and the restored guest must agree.
   */
  identitySocket?: string;
  consoleLog: string;
  devices: GuestDevice[];
  /** Extra kernel command line words. */
  append?: string[];
  /**
   * Open `rootfs` for writing instead of with `snapshot=on` (a throwaway
   * overlay). Only the guest a saved state is made from does: its disk is a
   * copy that then stays with the state (docs/architecture.md, "Guests from
   * a snapshot").
   */
  rootfsWritable?: boolean;
  /** Start from this saved VM state (`-incoming`) instead of booting. */
  incoming?: string;
  /**
   * This guest's state is saved (`saveStateTo`, with the guest stopped):
   * the run state stays out of the stream, so a restored guest runs
   * (`cont`) although the one saved was stopped.
   */
  savesState?: boolean;
}

/**
 * `value` as one value of a QEMU option list (`-drive file=…,if=…`,
 * `-device …,socket_path=…`, `-chardev …,path=…`): QEMU splits those at
 * commas and reads a doubled comma as one, so a path with a comma in it (a
 * reports directory named `runs,tcg`) must have its commas doubled — left
 * as they are, QEMU reads the rest as an option and exits at start.
 */
export function qemuOptValue(value: string): string {
  return value.replaceAll(",", ",,");
}

/** Kernel command line: console on serial, our init, panics end the VM. */
export function kernelCmdline(spec: GuestSpec): string {
  return [
    "console=ttyS0,115200",
    "root=/dev/vda",
    "rw",
    "init=/sbin/cnuas-init",
    "net.ifnames=0",
    "panic=-1",
    "softlockup_panic=1",
    "hung_task_panic=1",
    "nmi_watchdog=0",
    // The IO-APIC timer check panics a TCG guest whose vCPU thread was
    // descheduled for its few ticks (seen on a loaded host: "IO-APIC + timer
    // doesn't work!"); QEMU's timer is known good.
    "no_timer_check",
    // No user-space address randomization: QEMU 7.2's TCG keys a translated
    // block by its virtual address, so libraries mapped at a new base in
    // every process are translated anew in every process (fork+exec 3-4x
    // slower; docs/architecture.md). The kernel's own KASLR stays.
    "norandmaps",
    // Debian's kernel zeroes every page and slab object it allocates
    // (CONFIG_INIT_ON_ALLOC_DEFAULT_ON, a hardening default); under TCG
    // clearing memory is among the dearest things a guest does, and every
    // skb and page-cache page paid for it. Memory handed to user space is
    // zeroed either way; a driver that reads memory it never wrote now sees
    // garbage rather than zeros, which finds the bug sooner.
    "init_on_alloc=0",
    "loglevel=5",
    `cnuas.hostname=${spec.name}`,
    ...(spec.append ?? []),
  ].join(" ");
}

/** argv (without the binary) for a guest; starts paused (`-S`). */
export function qemuArgs(spec: GuestSpec): string[] {
  const args = [
    "-S",
    "-name",
    // thread names ("CPU 0/TCG") in /proc, for what a stalled guest waits in
    `guest=${qemuOptValue(spec.name)},debug-threads=on`,
    "-machine",
    "q35",
    "-accel",
    spec.accel === "kvm" ? "kvm" : "tcg,thread=multi",
    "-cpu",
    spec.accel === "kvm" ? "host" : "max",
    "-smp",
    String(spec.cpus),
    "-m",
    String(spec.memMb),
    "-nodefaults",
    "-display",
    "none",
    "-no-reboot",
    "-kernel",
    spec.kernel,
    "-initrd",
    spec.initrd,
    "-append",
    kernelCmdline(spec),
    "-drive",
    `file=${qemuOptValue(spec.rootfs)},if=none,id=root,format=raw${
      spec.rootfsWritable ? "" : ",snapshot=on"
    }`,
    "-device",
    "virtio-blk-pci,drive=root",
    "-netdev",
    `user,id=mgmt,hostfwd=tcp:127.0.0.1:${spec.sshPort}-:22`,
    "-device",
    "virtio-net-pci,netdev=mgmt,romfile=",
    "-device",
    "virtio-rng-pci",
    // A guest restored from a saved state sees a new generation ID and the
    // kernel reseeds its CRNG at once, before anything in it draws random
    // numbers (two guests from one state would otherwise share the stream).
    "-device",
    "vmgenid,guid=auto",
    "-chardev",
    `file,id=con,path=${qemuOptValue(spec.consoleLog)}`,
    "-serial",
    "chardev:con",
    "-qmp",
    `unix:${qemuOptValue(spec.qmpSocket)},server=on,wait=off`,
  ];
  if (spec.identitySocket !== undefined) {
    args.push(
      "-chardev",
      `socket,id=identity,path=${qemuOptValue(spec.identitySocket)},server=on,wait=off`,
      "-device",
      "isa-serial,chardev=identity,index=1",
    );
  }
  for (const dir of spec.firmware) args.push("-L", dir);
  if (spec.incoming) args.push("-incoming", stateInUri(spec.incoming));
  if (spec.savesState) args.push(...SAVES_STATE_ARGS);
  for (const [i, d] of spec.devices.entries()) {
    if (d.kind === "virtio-socket") {
      args.push(
        "-netdev",
        `socket,id=sock${i},${d.mode}=127.0.0.1:${d.port}`,
        "-device",
        `virtio-net-pci,netdev=sock${i},mac=${d.mac},romfile=`,
      );
    } else if (d.kind === "vnic") {
      args.push(
        "-device",
        [
          "cnuas-vnic",
          `mac=${d.mac}`,
          ...(d.socketPath ? [`socket_path=${qemuOptValue(d.socketPath)}`] : []),
        ].join(","),
      );
    } else {
      args.push(
        "-device",
        [
          "cnuasgpu",
          `gpu_id=${d.gpuId}`,
          `sm_count=${d.smCount}`,
          `devmem_size=${d.devmemMb * 1024 * 1024}`,
          ...(d.linkSocket ? [`cnuaslink_socket=${qemuOptValue(d.linkSocket)}`] : []),
        ].join(","),
      );
    }
  }
  return args;
}

/** A locally administered MAC for vnic `index` of guest `guest`. */
export function vnicMac(guest: number, index: number): string {
  const b = [0x02, 0xc7, 0x0a, 0x00, guest & 0xff, index & 0xff];
  return b.map((x) => x.toString(16).padStart(2, "0")).join(":");
}
