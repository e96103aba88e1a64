import type { Row } from "../../harness/matrix/row.ts";

/** cnuasgpu.ko probes; info, alloc, copy, free, mmap of BAR1, sysfs */
export const row: Row = {
  id: "gpu-smoke",
  title: "cnuasgpu.ko probes; info, alloc, copy, free, mmap of BAR1, sysfs",
  needs: { guests: 1, builds: ["qemu", "image", "modules", "guestprogs"], devices: { gpu: 2 } },
  timeoutSec: 600,
  missReason: "issue 8 (cnuasgpu.ko) is not done yet",
};
