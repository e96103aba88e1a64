import type { Row } from "../../harness/matrix/row.ts";

/** two guests exchange Ethernet/IP traffic through the switch */
export const row: Row = {
  id: "eth-forwarding",
  title: "two guests exchange Ethernet/IP traffic through the switch",
  needs: { guests: 2, fabric: "eth", builds: ["qemu", "image", "modules"], devices: { vnic: 1 } },
  timeoutSec: 600,
  missReason: "issue 5 (cnuas_net.ko) is not done yet",
};
