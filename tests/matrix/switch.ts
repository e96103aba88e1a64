import { join } from "node:path";
import { Fabric } from "../../harness/fabric/switch.ts";
import type { Row, RowContext } from "../../harness/matrix/row.ts";
import { type SwitchMode, SwitchModel } from "../../harness/models/switch.ts";
import { readPcapng } from "../../harness/fabric/pcapng.ts";
import {
  closeClients,
  connectPorts,
  type Rig,
  runTraffic,
  slowPortScenario,
  TrafficMismatch,
} from "../switch/traffic.ts";
import { smScenario, SmScenarioError } from "../switch/sm_scenario.ts";

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
  // The traffic is compared frame for frame with the model, so the subnet
  // manager (whose SMPs the model does not predict) is off; it has its own step.
  const fabric = await Fabric.start({
    binary: ctx.builds.switch!,
    mode,
    noSm: mode === "ib",
    logPath: join(ctx.dir, `switch-${mode}.log`),
    signal: ctx.signal,
  });
  ctx.artifact(fabric.logPath);
  const rig: Rig = {
    fabric,
    model: new SwitchModel({ mode, sm: mode !== "ib" }),
    clients: new Map(),
  };
  const capture = join(ctx.dir, `switch-${mode}.pcapng`);
  try {
    await connectPorts(rig, PORTS);
    await fabric.startCapture(capture);
    ctx.artifact(capture);
    const sent: { port: number; frame: Uint8Array }[] = [];
    const r = await runTraffic(rig, { seed: SEEDS[mode], steps: STEPS, events: true, sent });
    const { packets } = await fabric.stopCapture();
    const stats = await fabric.stats();
    ctx.log(
      `${mode}: ${r.framesSent} frames sent (${r.injected} injected), ${r.deliveriesChecked} ` +
        `deliveries compared, ${r.linkCycles} cable pulls, ${r.seconds.toFixed(2)} s`,
    );
    ctx.expect(r.injected > 0, `${mode}: the seeded run injected no frame`);
    if (mode === "ib") {
      ctx.expect(
        stats.drops.bad_vcrc > 0 && stats.drops.bad_lrh > 0,
        `ib: the run must exercise both bad_vcrc (${stats.drops.bad_vcrc}) and bad_lrh ` +
          `(${stats.drops.bad_lrh})`,
      );
      ctx.log(`ib: ${stats.drops.bad_vcrc} bad_vcrc, ${stats.drops.bad_lrh} bad_lrh drops`);
    }
    const cap = readPcapng(await Deno.readFile(capture));
    ctx.expect(
      cap.packets.length === packets,
      `${mode}: capture file holds ${cap.packets.length} packets, the switch wrote ${packets}`,
    );
    ctx.expect(
      packets === r.framesSent,
      `${mode}: capture recorded ${packets} frames, ${r.framesSent} were sent while it ran`,
    );
    // Frame for frame: the capture records each frame once, on ingress, in
    // the order the test sent them (one burst is drained before the next).
    for (const [i, p] of cap.packets.entries()) {
      const want = sent[i];
      const name = cap.interfaces[p.interfaceId]?.name;
      ctx.expect(
        name === `port${want.port}`,
        `${mode}: capture packet ${i} on ${name}, sent on port${want.port}`,
      );
      // A frame longer than the switch's receive buffer is captured cut
      // short (origLen says how long it was); never below the largest frame.
      const whole = p.data.length === want.frame.length ||
        (p.data.length >= 9216 && p.data.length < want.frame.length);
      ctx.expect(
        p.origLen === want.frame.length && whole &&
          sameBytes(p.data, want.frame.subarray(0, p.data.length)),
        `${mode}: capture packet ${i} (${p.data.length} of ${p.origLen} B) differs from the ` +
          `frame sent (${want.frame.length} B)`,
      );
    }
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

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/**
 * cnuas-switch against its reference model: in each mode eight test ports
 * send seeded random traffic (runts, oversize, floods, moves, aging, LFT and
 * multicast edits, cable pulls); every frame every port receives and every
 * counter must be what the model predicts, and the capture must hold every
 * frame sent. In ib mode the random traffic runs without the subnet manager
 * (its frames carry valid and broken LRHs and VCRCs the model predicts); the
 * SM has its own step against fake end nodes.
 */
export const row: Row = {
  id: "switch",
  title: "cnuas-switch forwards, floods, drops and captures as its reference model says",
  needs: { guests: 0, builds: ["switch"] },
  alone: "its subnet manager's queries are answered from this process within 200 ms (3 tries)",
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
    await ctx.step("a port that stops reading does not stall the others", async () => {
      const fabric = await Fabric.start({
        binary: ctx.builds.switch!,
        mode: "eth",
        queueDepth: 16,
        logPath: join(ctx.dir, "switch-slow-port.log"),
        signal: ctx.signal,
      });
      const rig: Rig = { fabric, model: new SwitchModel({ mode: "eth" }), clients: new Map() };
      try {
        await connectPorts(rig, 3);
        const r = await slowPortScenario(rig, 6000, 16);
        ctx.measure("slowPortQueueFullDrops", r.queueFull, "frames");
        frames += 2 * r.delivered;
      } catch (e) {
        if (e instanceof TrafficMismatch) ctx.expect(false, `slow port: ${e.message}`);
        throw e;
      } finally {
        closeClients(rig);
        await fabric.close();
      }
    });
    await ctx.step("the subnet manager brings fake end nodes ACTIVE; SA answers", async () => {
      const fabric = await Fabric.start({
        binary: ctx.builds.switch!,
        mode: "ib",
        logPath: join(ctx.dir, "switch-sm.log"),
        signal: ctx.signal,
      });
      ctx.artifact(fabric.logPath);
      const capture = join(ctx.dir, "switch-sm.pcapng");
      try {
        const r = await smScenario(fabric, capture);
        ctx.artifact(capture);
        ctx.measure("smFirstActiveMs", Math.round(r.firstActiveMs), "ms");
        ctx.measure("smResweepMs", Math.round(r.resweepMs), "ms");
        ctx.measure("smSmpsAnswered", r.smpsAnswered, "MADs");
        ctx.measure("smSaChecked", r.saChecked, "MADs");
      } catch (e) {
        if (e instanceof SmScenarioError) ctx.expect(false, `sm: ${e.message}`);
        throw e;
      } finally {
        await fabric.close();
      }
    });
    ctx.measure("framesChecked", frames, "frames");
    ctx.measure("framesPerSec", Math.round(frames / sec), "frames/s");
  },
};
