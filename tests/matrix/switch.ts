import { join } from "node:path";
import { Fabric } from "../../harness/fabric.ts";
import type { Row, RowContext } from "../../harness/matrix/row.ts";
import { type SwitchMode, SwitchModel } from "../../harness/models/switch.ts";
import { readPcapng } from "../../harness/pcapng.ts";
import {
  closeClients,
  connectPorts,
  type Rig,
  runTraffic,
  TrafficMismatch,
} from "../switch/traffic.ts";

/** Test ports per fabric. */
const PORTS = 8;
/** Random bursts per mode (1-4 frames each, control events in between). */
const STEPS = 4000;
/** Fixed seeds: a failure reproduces exactly. */
const SEEDS: Record<SwitchMode, number> = { eth: 0x5e7001, ib: 0x5e7002, link: 0x5e7003 };

/** One mode: seeded traffic through daemon and model, then the capture re-read. */
async function checkMode(
  ctx: RowContext,
  mode: SwitchMode,
): Promise<{ frames: number; sec: number }> {
  const fabric = await Fabric.start({
    binary: ctx.builds.switch!,
    mode,
    logPath: join(ctx.dir, `switch-${mode}.log`),
    signal: ctx.signal,
  });
  ctx.artifact(fabric.logPath);
  const rig: Rig = { fabric, model: new SwitchModel({ mode }), clients: new Map() };
  const capture = join(ctx.dir, `switch-${mode}.pcapng`);
  try {
    await connectPorts(rig, PORTS);
    await fabric.startCapture(capture);
    ctx.artifact(capture);
    const r = await runTraffic(rig, { seed: SEEDS[mode], steps: STEPS, events: true });
    const { packets } = await fabric.stopCapture();
    const stats = await fabric.stats();
    ctx.log(
      `${mode}: ${r.framesSent} frames sent, ${r.deliveriesChecked} deliveries compared, ` +
        `${r.linkCycles} cable pulls, ${r.seconds.toFixed(2)} s`,
    );
    const cap = readPcapng(await Deno.readFile(capture));
    ctx.expect(
      cap.packets.length === packets,
      `${mode}: capture file holds ${cap.packets.length} packets, the switch wrote ${packets}`,
    );
    ctx.expect(
      packets === r.framesSent,
      `${mode}: capture recorded ${packets} frames, ${r.framesSent} were sent while it ran`,
    );
    ctx.expect(stats.drops.queue_full === 0, `${mode}: ${stats.drops.queue_full} queue_full drops`);
    return { frames: r.framesSent + r.deliveriesChecked, sec: r.seconds };
  } catch (e) {
    if (e instanceof TrafficMismatch) ctx.expect(false, `${mode}: ${e.message}`);
    throw e;
  } finally {
    closeClients(rig);
    await fabric.close();
  }
}

/**
 * cnuas-switch against its reference model: in each mode eight test ports
 * send seeded random traffic (runts, oversize, floods, moves, aging, LFT and
 * multicast edits, cable pulls); every frame every port receives and every
 * counter must be what the model predicts, and the capture must hold every
 * frame sent.
 */
export const row: Row = {
  id: "switch",
  title: "cnuas-switch forwards, floods, drops and captures as its reference model says",
  needs: { guests: 0, builds: ["switch"] },
  timeoutSec: 300,
  async run(ctx) {
    let frames = 0;
    let sec = 0;
    for (const mode of ["eth", "ib", "link"] as const) {
      const r = await ctx.step(`${mode} traffic vs model`, () => checkMode(ctx, mode));
      ctx.measure(`framesChecked.${mode}`, r.frames, "frames");
      frames += r.frames;
      sec += r.sec;
    }
    ctx.measure("framesChecked", frames, "frames");
    ctx.measure("framesPerSec", Math.round(frames / sec), "frames/s");
  },
};
