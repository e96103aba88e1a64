import type { Row } from "../../harness/matrix/row.ts";

/** DMA-BUF export of accelerator memory, ibv_reg_dmabuf_mr on cnuas_ib, RDMA into it */
export const row: Row = {
  id: "peermem",
  title: "DMA-BUF export of accelerator memory, ibv_reg_dmabuf_mr on cnuas_ib, RDMA into it",
  needs: {
    guests: 2,
    fabric: "eth",
    builds: ["qemu", "image", "modules", "provider", "guestprogs"],
    devices: { vnic: 1, gpu: 1 },
  },
  timeoutSec: 1200,
  missReason: "peer memory (cnuasgpu DMA-BUF + cnuas_ib dmabuf MR) has no issue done yet",
};
