import type { Row } from "../../harness/matrix/row.ts";

/** two accelerators exchange frames over CnuasLink through the switch */
export const row: Row = {
  id: "cnuaslink",
  title: "two accelerators exchange frames over CnuasLink through the switch",
  needs: { guests: 1, fabric: "link", builds: ["qemu", "image", "modules", "guestprogs"], devices: { gpu: 2 } },
  timeoutSec: 600,
  missReason: "issue 8 (cnuasgpu.ko CnuasLink) is not done yet",
};
