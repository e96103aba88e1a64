import type { Row } from "../../harness/matrix/row.ts";
import { rdmaPairNeeds } from "../../harness/matrix/needs.ts";

/** native InfiniBand link layer through the switch, LIDs from its subnet manager */
export const row: Row = {
  id: "ib-forwarding",
  title: "native InfiniBand link layer through the switch, LIDs from its subnet manager",
  needs: rdmaPairNeeds("ib"),
  timeoutSec: 600,
  modules: ["cnuas_net", "cnuas_ib"],
  missReason:
    "native InfiniBand link layer (subnet manager, cnuas_ib link_layer=ib) has no issue done yet",
};
