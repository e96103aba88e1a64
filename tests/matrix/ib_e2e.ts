import type { Row } from "../../harness/matrix/row.ts";
import { rdmaPairNeeds } from "../../harness/matrix/needs.ts";

/** unmodified RDMA tools over the native InfiniBand link layer */
export const row: Row = {
  id: "ib-e2e",
  title: "unmodified RDMA tools over the native InfiniBand link layer",
  needs: rdmaPairNeeds("ib", "guestprogs"),
  timeoutSec: 1200,
  modules: ["cnuas_net", "cnuas_ib"],
  missReason:
    "native InfiniBand link layer (subnet manager, cnuas_ib link_layer=ib) has no issue done yet",
};
