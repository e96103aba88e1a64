import type { Row } from "../../harness/matrix/row.ts";

/** the cnuasgpu model in QEMU matches its reference model, BAR1 and CnuasLink included */
export const row: Row = {
  id: "qtest-gpu",
  title: "the cnuasgpu model in QEMU matches its reference model, BAR1 and CnuasLink included",
  needs: { guests: 0, builds: ["qemu"] },
  timeoutSec: 300,
  missReason: "issue 8 (cnuasgpu device model and qtest oracle) is not done yet",
};
