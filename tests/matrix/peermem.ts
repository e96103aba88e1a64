import type { Row } from "../../harness/matrix/row.ts";
import { rdmaGpuPairNeeds } from "../../harness/matrix/needs.ts";
import { captured } from "../../harness/oracle/wire_capture.ts";
import { setupRoceNodes } from "../../harness/guest/roce_pair.ts";
import { peermem, withPeerGpus } from "../../harness/guest/peermem.ts";

/** Addresses of g0 (server) and g1 on the fabric. */
const IPS = ["10.79.0.1", "10.79.0.2"];

/** DMA-BUF export of accelerator memory, ibv_reg_dmabuf_mr on cnuas_ib, RDMA into it */
export const row: Row = {
  id: "peermem",
  title: "DMA-BUF export of accelerator memory, ibv_reg_dmabuf_mr on cnuas_ib, RDMA into it",
  needs: rdmaGpuPairNeeds("eth"),
  sharesCores: "it judges the data moved, with 120 s per completion",
  timeoutSec: 600,
  modules: ["cnuasgpu", "cnuas_net", "cnuas_ib"],
  async run(ctx) {
    const nodes = await withPeerGpus(ctx, await setupRoceNodes(ctx, IPS));
    await captured(ctx, "peermem", () => peermem(ctx, nodes));
  },
};
