/**
 * Which saved VM state a guest can start from: the pure part of guests from
 * a snapshot (docs/architecture.md, "Guests from a snapshot"). A state is
 * made from a base spec — the guest's spec with what differs between guests
 * (name, ports, sockets, MACs) replaced by fixed stand-ins — and keyed by
 * that spec's QEMU command line, so anything on the command line the state
 * depends on is in the key without a list to keep in step.
 */
import { type GuestDevice, type GuestSpec, qemuArgs } from "./qemu_args.ts";

/** Bump when what a saved state holds, or how it is made, changes. */
export const SNAPSHOT_VERSION = 11;

/** The name (and hostname) of the guest a state is made from. */
export const SNAPSHOT_GUEST = "snapshot";

/**
 * The vnic MAC of the guest a state is made from. Never seen by a row: the
 * MAC is a device property, not saved state, so a restored NIC has the MAC
 * its own command line gives it.
 */
export const STAND_IN_MAC = "02:c7:0a:ff:ff:ff";

/**
 * The accelerator identity of the guest a state is made from. Like the MAC,
 * `gpu_id` and `sm_count` are properties, not saved state (docs/devices.md,
 * "gpu: saved state"), so a restored cnuasgpu reads its own; a row that saw
 * these values would have a driver that probed before the save. BAR1's size
 * is saved state and stays in the key.
 */
export const STAND_IN_GPU = { gpuId: 0xffff, smCount: 8 } as const;

/**
 * Why a guest with this spec cannot start from a saved state, or undefined
 * when it can.
 */
export function snapshotBlocker(spec: GuestSpec): string | undefined {
  if (spec.incoming || spec.rootfsWritable) return "the spec is already a save or a restore";
  if (spec.identitySocket === undefined) {
    return "no identity line (ttyS1) for a restored guest's identity agent";
  }
  for (const d of spec.devices) {
    if (d.kind === "virtio-socket") {
      return "the virtio-net baseline NIC keeps its MAC in saved state and pairs its -netdev " +
        "socket at start";
    }
  }
  return undefined;
}

/** A device as the guest a state is made from has it: no socket, the stand-in identity. */
function baseDevice(d: GuestDevice): GuestDevice {
  if (d.kind === "vnic") return { kind: "vnic", mac: STAND_IN_MAC };
  if (d.kind === "gpu") return { kind: "gpu", ...STAND_IN_GPU, devmemMb: d.devmemMb };
  return d;
}

/** The spec a state for `spec` is made from (paths and port left empty: filled at save). */
export function snapshotBaseSpec(spec: GuestSpec): GuestSpec {
  const { rootfsWritable: _w, incoming: _i, savesState: _s, ...rest } = spec;
  return {
    ...rest,
    name: SNAPSHOT_GUEST,
    sshPort: 0,
    qmpSocket: "",
    ...(spec.identitySocket === undefined ? {} : { identitySocket: "" }),
    consoleLog: "",
    devices: spec.devices.map(baseDevice),
  };
}

/**
 * What a saved state for `spec` is cached under: the base spec's command
 * line (image, kernel and initrd paths live in content-addressed cache
 * entries, so a path names its content), the QEMU binary (likewise), and
 * the image's own key.
 */
export function snapshotKeyInputs(spec: GuestSpec, imageKey: string): Record<string, unknown> {
  return {
    version: SNAPSHOT_VERSION,
    qemu: spec.qemu,
    image: imageKey,
    argv: qemuArgs(snapshotBaseSpec(spec)),
  };
}
