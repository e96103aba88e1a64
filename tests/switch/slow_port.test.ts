import assert from "node:assert/strict";
import { slowPortScenario } from "./traffic.ts";
import { withRig } from "./rig.ts";

Deno.test("slow port: a port that stops reading does not stall the others, and its overflow is counted", async () => {
  await withRig("eth", 3, async (rig) => {
    const r = await slowPortScenario(rig, 6000, 16);
    assert.equal(r.delivered, 6000);
    assert.ok(r.queueFull > 0);
  }, { queueDepth: 16 });
});
