import type { Row } from "../../harness/matrix/row.ts";

/** the cnuas-vnic model in QEMU matches its TypeScript reference model, op for op */
export const row: Row = {
  id: "qtest-vnic",
  title: "the cnuas-vnic model in QEMU matches its TypeScript reference model, op for op",
  needs: { guests: 0, builds: ["qemu"] },
  timeoutSec: 300,
  missReason: "issue 3 (cnuas-vnic device model and qtest oracle) is not done yet",
};
