import type { Row } from "../../harness/matrix/row.ts";

/** cnuasgpu_host.ko: zero-copy, pinned, DMA-BUF, async queues, ABI validators */
export const row: Row = {
  id: "gpu-host",
  title: "cnuasgpu_host.ko: zero-copy, pinned, DMA-BUF, async queues, ABI validators",
  needs: { guests: 1, builds: ["qemu", "image", "modules", "guestprogs"] },
  timeoutSec: 600,
  modules: ["cnuasgpu_host"],
  missReason: "cnuasgpu_host.ko has no issue done yet",
};
