/**
 * Test fixture: a fresh cnuas-switch (built through the cache), its model,
 * and `ports` test clients connected in order, torn down whatever happens.
 */
import { buildSwitch } from "../../harness/build/switch.ts";
import { defaultConfig } from "../../harness/config.ts";
import { Fabric, type FabricOptions } from "../../harness/fabric/switch.ts";
import { type SwitchMode, SwitchModel } from "../../harness/models/switch.ts";
import { closeClients, connectPorts, type Rig } from "./traffic.ts";

let binary: Promise<string> | undefined;

/** The daemon binary, built once per test process. */
export function switchBinary(): Promise<string> {
  binary ??= buildSwitch(defaultConfig());
  return binary;
}

/** Run `fn` against a switch in `mode` with `ports` clients on ports 1..ports. */
export async function withRig(
  mode: SwitchMode,
  ports: number,
  fn: (rig: Rig) => Promise<void>,
  opts: Partial<Omit<FabricOptions, "binary" | "mode">> = {},
): Promise<void> {
  // Forwarding tests compare every frame every port receives: the subnet
  // manager's SMPs would be frames the model does not predict, so ib rigs run
  // without it unless asked (noSm: false).
  const noSm = opts.noSm ?? mode === "ib";
  const fabric = await Fabric.start({ binary: await switchBinary(), mode, ...opts, noSm });
  const rig: Rig = {
    fabric,
    model: new SwitchModel({ mode, maxPorts: opts.maxPorts, agingSec: opts.agingSec, sm: !noSm }),
    clients: new Map(),
  };
  try {
    await connectPorts(rig, ports);
    await fn(rig);
  } finally {
    closeClients(rig);
    await fabric.close();
  }
}
