/**
 * `lab`: bring a row's world up (builds, fabric, guests with our artifacts)
 * and hold it for interactive work — the developer SSHes in, loads modules,
 * runs tools — until SIGINT/SIGTERM, then tear it down like a row would.
 */
import { dirname, join } from "node:path";
import type { Config } from "../config.ts";
import { UsageError } from "../errors.ts";
import { progress } from "../progress.ts";
import { fabricStarter, Lab } from "./lab.ts";
import type { FabricMode, Row } from "./row.ts";
import { rdmaPairNeeds } from "./needs.ts";

/** What `lab` brings up. */
export interface HoldOptions {
  /** Guests to boot (1..4). */
  guests: number;
  /** Fabric mode, or none. */
  fabric?: FabricMode;
  /** cnuasgpu functions per guest (0..4, default 0). */
  gpus?: number;
}

/** Bring the world up, print how to reach it, wait for a signal, tear down. */
export async function holdLab(config: Config, opts: HoldOptions): Promise<void> {
  if (!Number.isInteger(opts.guests) || opts.guests < 1 || opts.guests > 4) {
    throw new UsageError(`lab --guests takes 1 to 4, not ${opts.guests}`);
  }
  const gpus = opts.gpus ?? 0;
  if (!Number.isInteger(gpus) || gpus < 0 || gpus > 4) {
    throw new UsageError(`lab --gpus takes 0 to 4, not ${opts.gpus}`);
  }
  const needs = rdmaPairNeeds(opts.fabric ?? "eth", "guestprogs", "cnuasdev");
  needs.guests = opts.guests;
  if (gpus) needs.devices = { ...needs.devices, gpu: gpus };
  const row: Row = { id: "lab", title: "interactive lab", needs, timeoutSec: 0 };
  const dir = join(config.reportsDir, `lab-${Date.now()}`);
  await Deno.mkdir(dir, { recursive: true });
  const lab = new Lab(config, fabricStarter);
  const setup = await lab.bringUp(row, dir, (l) => progress("lab", l));
  const key = lab.image!.sshKey;
  for (const g of setup.guests) {
    console.log(
      `${g.name}: ssh -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -i ${key} -p ${g.sshPort} root@127.0.0.1`,
    );
  }
  console.log("(root's login shell is dash; end the ssh command with -t bash -l for bash)");
  if (setup.fabric) {
    // the switch keeps its control socket beside the data socket (fabric/switch.ts)
    const data = setup.fabric.socketPath;
    console.log(
      `fabric data socket (devices): ${data}; control socket (JSON lines, docs/switch.md): ${
        join(dirname(data), "control.sock")
      }`,
    );
  }
  console.log(
    `logs in ${dir}; modules in /opt/cnuas/modules (not loaded), libcnuasdev installed. ` +
      "Ctrl-C tears down.",
  );
  await new Promise<void>((resolve) => {
    Deno.addSignalListener("SIGINT", resolve);
    Deno.addSignalListener("SIGTERM", resolve);
  });
  const arts = await setup.close();
  console.log(`torn down; artifacts: ${arts.join(" ")}`);
}
