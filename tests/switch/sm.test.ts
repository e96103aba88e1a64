import { Fabric } from "../../harness/fabric/switch.ts";
import { switchBinary } from "./rig.ts";
import { smScenario } from "./sm_scenario.ts";

Deno.test("sm: fake end nodes come up ACTIVE with the planned LIDs; pulls, silence, SA", async () => {
  const dir = await Deno.makeTempDir({ prefix: "cnuas-sm-" });
  const fabric = await Fabric.start({ binary: await switchBinary(), mode: "ib" });
  try {
    const r = await smScenario(fabric, `${dir}/sm.pcapng`);
    console.log(JSON.stringify(r));
  } finally {
    await fabric.close();
    await Deno.remove(dir, { recursive: true });
  }
});
