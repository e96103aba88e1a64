/**
 * cnuas-switch numbers for `deno task bench`: port-to-port forwarding rate at
 * 64 B and 1500 B, the latency the switch adds (p50, p99), and the load
 * generator's own ceiling (the same generator over a direct socketpair, no
 * switch in the path) so a reader can see the generator was not the limit.
 */
import { buildSwitch, loadgenOf } from "../build/switch.ts";
import type { Config } from "../config.ts";
import { exec } from "../exec.ts";
import { Fabric } from "../fabric/switch.ts";
import type { Measurement } from "../report/schema.ts";

/** What one cnuas-loadgen run prints. */
interface LoadgenResult {
  size: number;
  sent: number;
  received: number;
  seconds: number;
  framesPerSec: number;
  mbitPerSec: number;
  latencyP50Us: number;
  latencyP99Us: number;
}

async function loadgen(bin: string, args: string[]): Promise<LoadgenResult> {
  const r = await exec([bin, ...args]);
  return JSON.parse(r.stdout.trim().split("\n").pop()!) as LoadgenResult;
}

const round = (v: number, digits = 0) => Number(v.toFixed(digits));

/** CPU time a process has used so far, in ns (first field of /proc/PID/schedstat). */
async function cpuNs(pid: number): Promise<number> {
  const text = await Deno.readTextFile(`/proc/${pid}/schedstat`);
  return Number(text.split(" ")[0]);
}

/**
 * Run the switch benchmarks (eth mode, two ports, one switch process).
 * @example
 * ```ts
 * const m = await benchSwitch(defaultConfig());
 * m.forward64FramesPerSec.value; // frames/s
 * ```
 */
export async function benchSwitch(config: Config): Promise<Record<string, Measurement>> {
  const bin = await buildSwitch(config);
  const gen = loadgenOf(bin);
  const out: Record<string, Measurement> = {};
  const cases = [
    { size: 64, count: 1_000_000 },
    { size: 1500, count: 400_000 },
  ];
  for (const { size, count } of cases) {
    const rate = ["--size", String(size), "--count", String(count), "--latency", "0"];
    const lat = ["--size", String(size), "--count", "1000", "--latency", "20000"];
    const direct = await loadgen(gen, ["--direct", ...rate]);
    const directLat = await loadgen(gen, ["--direct", ...lat]);
    const fabric = await Fabric.start({ binary: bin, mode: "eth" });
    let sw: LoadgenResult;
    let swLat: LoadgenResult;
    let queueFull = 0;
    let cpu = 0;
    try {
      const before = await cpuNs(fabric.pid);
      sw = await loadgen(gen, ["--socket", fabric.socketPath, ...rate]);
      cpu = (await cpuNs(fabric.pid)) - before;
      swLat = await loadgen(gen, ["--socket", fabric.socketPath, ...lat]);
      queueFull = (await fabric.stats()).drops.queue_full;
    } finally {
      await fabric.close();
    }
    // The switch is one thread: CPU per frame bounds what one core forwards.
    const nsPerFrame = cpu / Math.max(1, sw.received);
    out[`switchCpu${size}NsPerFrame`] = { value: round(nsPerFrame), unit: "ns" };
    out[`switchCpu${size}Utilisation`] = {
      value: round(cpu / 1e9 / Math.max(sw.seconds, 1e-9), 2),
      unit: "cores",
    };
    out[`oneCoreCapacity${size}FramesPerSec`] = {
      value: round(1e9 / nsPerFrame),
      unit: "frames/s",
    };
    out[`forward${size}FramesPerSec`] = { value: round(sw.framesPerSec), unit: "frames/s" };
    out[`forward${size}Mbps`] = { value: round(sw.mbitPerSec, 1), unit: "Mbit/s" };
    out[`forward${size}Lost`] = { value: sw.sent - sw.received + queueFull, unit: "frames" };
    out[`loadgenCeiling${size}FramesPerSec`] = {
      value: round(direct.framesPerSec),
      unit: "frames/s",
    };
    out[`latency${size}P50Us`] = { value: round(swLat.latencyP50Us, 2), unit: "us" };
    out[`latency${size}P99Us`] = { value: round(swLat.latencyP99Us, 2), unit: "us" };
    out[`latencyAdded${size}P50Us`] = {
      value: round(swLat.latencyP50Us - directLat.latencyP50Us, 2),
      unit: "us",
    };
    out[`latencyAdded${size}P99Us`] = {
      value: round(swLat.latencyP99Us - directLat.latencyP99Us, 2),
      unit: "us",
    };
  }
  return out;
}
