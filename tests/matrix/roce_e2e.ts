import type { Row } from "../../harness/matrix/row.ts";

/** unmodified RDMA tools over RoCEv2: pingpongs, perftest, rping, the examples */
export const row: Row = {
  id: "roce-e2e",
  title: "unmodified RDMA tools over RoCEv2: pingpongs, perftest, rping, the examples",
  needs: { guests: 2, fabric: "eth", builds: ["qemu", "image", "modules", "provider", "guestprogs"], devices: { vnic: 1 } },
  timeoutSec: 1200,
  missReason: "issue 7 (cnuas_ib.ko RoCEv2 transport) is not done yet",
};
