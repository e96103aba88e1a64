import type { Row } from "../../harness/matrix/row.ts";

/** cnuas_net loads, probes, the netdev answers ip/ethtool/dcb, unload/reload clean */
export const row: Row = {
  id: "driver-load",
  title: "cnuas_net loads, probes, the netdev answers ip/ethtool/dcb, unload/reload clean",
  needs: { guests: 1, builds: ["qemu", "image", "modules"], devices: { vnic: 1 } },
  timeoutSec: 300,
  missReason: "issue 5 (cnuas_net.ko) is not done yet",
};
