/**
 * cnuas-vnic numbers for `deno task bench`: differential operations per second
 * (QEMU and model side by side, QEMU start-up included), and frames per second
 * from a guest doorbell to the socket peer through qtest at 64 and 9216 bytes.
 *
 * @example
 * ```ts
 * const m = await benchVnic(defaultConfig());
 * console.log(m.vnicDiffOpsPerSec.value);
 * ```
 */
import { HilError } from "../errors.ts";
import { buildQemu } from "../build/qemu.ts";
import type { Config } from "../config.ts";
import type { Measurement } from "../report/schema.ts";
import { VNIC_REG } from "../models/vnic.ts";
import { runVnicDiff } from "../oracle/vnic_diff.ts";
import { VnicRig } from "../qtest/vnic_rig.ts";

const DIFF_SEEDS = Array.from({ length: 24 }, (_, i) => 0xbe_0000 + i);
const DIFF_OPS_PER_SEED = 1000;
const TX_BUF = 0x30_0000;
/** Doorbells in flight before the peer drains (well inside the enlarged socket buffer). */
const TX_WINDOW = 64;

/** The differential run used by the bench failed: the numbers would mean nothing. */
export class VnicBenchError extends HilError {}

/**
 * Frames per second from doorbell to peer: pipelined doorbells in windows of
 * `TX_WINDOW`, the peer draining after each window and counting every frame.
 */
async function txFramesPerSec(
  env: { binary: string; firmware: string[] },
  size: number,
  seconds: number,
): Promise<number> {
  const rig = await VnicRig.start({ ...env, socket: "listening", irq: "intx" });
  try {
    await rig.qt.memWrite(TX_BUF, new Uint8Array(size).fill(0xa5));
    await rig.setReg(VNIC_REG.TX_ADDR_LO, TX_BUF);
    await rig.setReg(VNIC_REG.TX_LEN, size);
    let frames = 0;
    const t0 = performance.now();
    while (performance.now() - t0 < seconds * 1000) {
      const rings: Promise<void>[] = [];
      for (let i = 0; i < TX_WINDOW; i++) rings.push(rig.setReg(VNIC_REG.TX_DOORBELL, 1));
      await Promise.all(rings);
      const got = rig.drain().frames;
      if (got.length !== TX_WINDOW || got.some((f) => f.length !== size)) {
        throw new VnicBenchError(
          `TX bench: ${got.length} frames arrived for ${TX_WINDOW} doorbells`,
        );
      }
      frames += got.length;
    }
    return frames / ((performance.now() - t0) / 1000);
  } finally {
    await rig.close();
  }
}

/** Measure the vNIC oracle and the device's transmit path. */
export async function benchVnic(config: Config): Promise<Record<string, Measurement>> {
  const q = await buildQemu(config);
  const env = { binary: q.binary, firmware: q.firmware };
  const diff = await runVnicDiff({
    ...env,
    seeds: DIFF_SEEDS,
    opsPerSeed: DIFF_OPS_PER_SEED,
    shrink: false,
  });
  if (diff.failure) {
    throw new VnicBenchError(
      `differential run failed at seed ${diff.failure.seed}: ${diff.failure.divergence.detail}; ` +
        "run tests/qtest/vnic_diff.test.ts for the shrunk sequence",
    );
  }
  const tx64 = await txFramesPerSec(env, 64, 2);
  const tx9216 = await txFramesPerSec(env, 9216, 2);
  return {
    vnicDiffOpsPerSec: { value: Math.round(diff.opsPerSec), unit: "ops/s" },
    vnicDiffOps: { value: diff.opsChecked, unit: "ops" },
    vnicTxFramesPerSec64B: { value: Math.round(tx64), unit: "frames/s" },
    vnicTxFramesPerSec9216B: { value: Math.round(tx9216), unit: "frames/s" },
    vnicTxMbitPerSec9216B: { value: Math.round(tx9216 * 9216 * 8 / 1e6), unit: "Mbit/s" },
  };
}
