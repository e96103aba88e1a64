/**
 * Bench of the RDMA wire oracle: how many frames per second it decodes
 * (headers, ICRC) and checks (decode + every per-frame and per-flow rule) on a
 * mixed synthetic RoCEv2 capture. Goal: ≥ 200,000 frames/s checked.
 */
import { checkCapture, decodeFrame, RcConversation } from "../models/rdma/mod.ts";
import type { CaptureFrame } from "../models/rdma/mod.ts";
import { prng, randInt } from "../prng.ts";

/** Frames in the synthetic capture. */
const TARGET_FRAMES = 200_000;

/**
 * A mixed RoCEv2 capture: four QP pairs at path MTU 1024, each carrying small
 * and large SENDs (some with immediate), WRITEs, multi-packet READs, atomics
 * and coalesced ACKs, interleaved conversation by conversation.
 */
export function syntheticRoceCapture(minFrames = TARGET_FRAMES, seed = 7): CaptureFrame[] {
  const rng = prng(seed);
  const convs = [0, 1, 2, 3].map((i) =>
    new RcConversation({
      pmtu: 1024,
      seed: seed + i,
      a: { ip: 0x0a000001 + 2 * i, qpn: 0x100 + 2 * i, startPsn: randInt(rng, 0, 0xffffff) },
      b: { ip: 0x0a000002 + 2 * i, qpn: 0x101 + 2 * i, startPsn: randInt(rng, 0, 0xffffff) },
    })
  );
  const out: CaptureFrame[] = [];
  const taken = convs.map(() => 0);
  while (out.length < minFrames) {
    const c = randInt(rng, 0, convs.length - 1);
    const conv = convs[c];
    const side = randInt(rng, 0, 1) === 0 ? "a" : "b";
    switch (randInt(rng, 0, 9)) {
      case 0:
      case 1:
      case 2:
        conv.send(side, randInt(rng, 1, 256));
        break;
      case 3:
        conv.send(side, randInt(rng, 1025, 8192), { imm: 7 });
        break;
      case 4:
      case 5:
        conv.write(side, randInt(rng, 1, 4096));
        break;
      case 6:
        conv.read(side, randInt(rng, 1, 8192));
        break;
      case 7:
        conv.atomic(side, randInt(rng, 0, 1) === 0 ? "cas" : "fadd");
        break;
      default:
        conv.send(side, randInt(rng, 1, 64), { ack: false });
        conv.send(side, randInt(rng, 1, 64), { ack: false });
        conv.ack(side === "a" ? "b" : "a");
    }
    for (const f of conv.frames.slice(taken[c])) out.push(f);
    taken[c] = conv.frames.length;
  }
  return out;
}

/** Run the bench; figures are frames/s and MB/s for decode alone and for the full check. */
export async function benchRdmaChecker(): Promise<Record<string, { value: number; unit: string }>> {
  const t0 = performance.now();
  const frames = syntheticRoceCapture();
  const buildMs = performance.now() - t0;
  const bytes = frames.reduce((n, f) => n + f.data.length, 0);

  // Warm up the JIT on a slice so the timed runs measure steady state.
  checkCapture(frames.slice(0, 20_000));

  const d0 = performance.now();
  let sink = 0;
  for (const f of frames) sink += decodeFrame(f.data, f.linkType).payloadLength;
  const decodeMs = performance.now() - d0;

  const c0 = performance.now();
  const result = checkCapture(frames);
  const checkMs = performance.now() - c0;
  if (result.violationCount !== 0 || sink < 0) {
    throw new Error(
      `bench capture should be clean but the checker found ${result.violationCount} violations: ` +
        JSON.stringify(result.violations.slice(0, 3)),
    );
  }
  await Promise.resolve();
  return {
    "rdma.capture.frames": { value: frames.length, unit: "frames" },
    "rdma.capture.meanFrameBytes": { value: Math.round(bytes / frames.length), unit: "B" },
    "rdma.capture.buildSec": { value: round(buildMs / 1000), unit: "s" },
    "rdma.decode.framesPerSec": {
      value: Math.round(frames.length / (decodeMs / 1000)),
      unit: "frames/s",
    },
    "rdma.decode.MBPerSec": { value: round(bytes / 1e6 / (decodeMs / 1000)), unit: "MB/s" },
    "rdma.check.framesPerSec": {
      value: Math.round(frames.length / (checkMs / 1000)),
      unit: "frames/s",
    },
    "rdma.check.MBPerSec": { value: round(bytes / 1e6 / (checkMs / 1000)), unit: "MB/s" },
  };
}

function round(v: number): number {
  return Math.round(v * 100) / 100;
}

if (import.meta.main) {
  console.log(await benchRdmaChecker());
}
