import type { Row } from "../../harness/matrix/row.ts";

/** ibv_devices, ibv_devinfo -v, ibstat, rdma link show the datasheet attributes */
export const row: Row = {
  id: "ibstat",
  title: "ibv_devices, ibv_devinfo -v, ibstat, rdma link show the datasheet attributes",
  needs: { guests: 1, builds: ["qemu", "image", "modules", "provider"], devices: { vnic: 1 } },
  timeoutSec: 300,
  missReason: "issue 7 (cnuas_ib.ko and the cnuas provider) is not done yet",
};
