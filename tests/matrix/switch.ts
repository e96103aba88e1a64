import type { Row } from "../../harness/matrix/row.ts";

/** cnuas-switch forwards, floods, drops and captures as its reference model says */
export const row: Row = {
  id: "switch",
  title: "cnuas-switch forwards, floods, drops and captures as its reference model says",
  needs: { guests: 0, builds: ["switch"] },
  timeoutSec: 300,
  missReason: "issue 4 (cnuas-switch) is not done yet",
};
