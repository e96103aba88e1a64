/**
 * Needs several rows share, named for the world they bring up: a bench row
 * and the matrix row it mirrors then cannot drift apart. Each call returns a
 * fresh object, so no row can change another's.
 */
import type { BuildTarget, FabricMode, RowNeeds } from "./row.ts";

/**
 * One guest with two accelerators whose CnuasLinks meet at a link-mode
 * switch (row cnuaslink, bench gpu).
 */
export function linkedGpuNeeds(): RowNeeds {
  return {
    guests: 1,
    fabric: "link",
    builds: ["qemu", "image", "guestprogs"],
    devices: { gpu: 2 },
  };
}

/**
 * One guest with one cnuas-vnic on an eth-mode switch, the RDMA provider
 * and the guest programs built (rows ibstat, verbs-limits).
 */
export function rdmaGuestNeeds(): RowNeeds {
  return {
    guests: 1,
    fabric: "eth",
    builds: ["qemu", "image", "provider", "guestprogs"],
    devices: { vnic: 1 },
  };
}

/**
 * Two guests, one cnuas-vnic each, on a `fabric`-mode switch, with the RDMA
 * provider built (rows ib-forwarding, ib-e2e, roce-e2e, bench rdma-perf);
 * `extra` builds come after the provider.
 */
export function rdmaPairNeeds(fabric: FabricMode, ...extra: BuildTarget[]): RowNeeds {
  return {
    guests: 2,
    fabric,
    builds: ["qemu", "image", "provider", ...extra],
    devices: { vnic: 1 },
  };
}

/**
 * {@link rdmaPairNeeds} with the guest programs and one cnuasgpu function
 * per guest beside the vnic, for RDMA between the accelerators' memories
 * (harness/guest/peermem.ts; rows peermem, ib-e2e). The accelerator costs
 * each guest a PCI function and a 256 MiB BAR1 of QEMU RAM (host memory
 * touched only as used).
 */
export function rdmaGpuPairNeeds(fabric: FabricMode): RowNeeds {
  const needs = rdmaPairNeeds(fabric, "guestprogs");
  needs.devices = { ...needs.devices, gpu: 1 };
  return needs;
}

/**
 * One guest with one cnuasgpu function and libcnuasdev installed (row
 * cnuasdev, bench cnuasdev); `extra` builds come after the library.
 */
export function cnuasdevGuestNeeds(...extra: BuildTarget[]): RowNeeds {
  return {
    guests: 1,
    builds: ["qemu", "image", "cnuasdev", ...extra],
    devices: { gpu: 1 },
  };
}
