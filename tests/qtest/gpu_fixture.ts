/**
 * Shared set-up of the cnuasgpu directed tests: a {@link GpuRig} (the device
 * with this process as its CnuasLink peer, as the differential oracle runs it)
 * on the cached QEMU build, and the driver steps the link tests repeat.
 */
import { GPU_LINK, GPU_REG } from "../../harness/models/gpu.ts";
import { type GpuProps, GpuRig } from "../../harness/qtest/gpu_rig.ts";
import { qemuEnv } from "./qemu_env.ts";

export type { GpuRig } from "../../harness/qtest/gpu_rig.ts";

/** Options of `startGpu`. */
export interface StartOptions {
  /** Give the device a `cnuaslink_socket` (default true). */
  link?: boolean;
  /** Listen on it before QEMU starts (default true). */
  listen?: boolean;
  /** More QEMU arguments. */
  extraArgs?: string[];
}

/** Start one cnuasgpu with `props`; the peer accepts the realize-time connection. */
export async function startGpu(props: GpuProps = {}, opts: StartOptions = {}): Promise<GpuRig> {
  const env = await qemuEnv();
  return await GpuRig.start({ ...env, props, ...opts, accept: true });
}

/** Poll `fn` until it returns true (the device reacts to socket events asynchronously). */
export async function eventually(
  what: string,
  fn: () => Promise<boolean> | boolean,
  ms = 3000,
): Promise<void> {
  const deadline = performance.now() + ms;
  while (!(await fn())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 1));
  }
}

/** Run `fn` on a fresh device (see `startGpu`) and always close it. */
export async function withGpu(
  props: Record<string, string | number>,
  fn: (rig: GpuRig) => Promise<void>,
  opts: StartOptions = {},
): Promise<void> {
  const rig = await startGpu(props, opts);
  try {
    await fn(rig);
  } finally {
    await rig.close();
  }
}

/** `len` bytes of a pattern that differs with `salt`. */
export function pattern(len: number, salt: number): Uint8Array {
  return Uint8Array.from({ length: len }, (_, i) => (i * 31 + salt) & 0xff);
}

/** Arm receive at `off` for `size` bytes. */
export async function armRx(rig: GpuRig, off: number, size: number): Promise<void> {
  await rig.gpu.setReg(GPU_REG.LINK_RX_OFFSET_LO, off);
  await rig.gpu.setReg(GPU_REG.LINK_RX_OFFSET_HI, 0);
  await rig.gpu.setReg(GPU_REG.LINK_RX_BUF_SIZE, size);
}

/** Point the transmit registers at `off`/`len` and ring. */
export async function ring(rig: GpuRig, off: number, len: number, hi = 0): Promise<void> {
  await rig.gpu.setReg(GPU_REG.LINK_TX_OFFSET_LO, off);
  await rig.gpu.setReg(GPU_REG.LINK_TX_OFFSET_HI, hi);
  await rig.gpu.setReg(GPU_REG.LINK_TX_LEN, len);
  await rig.gpu.setReg(GPU_REG.LINK_TX_DOORBELL, 1);
}

/** Send a frame and wait until the device has read it (logged a drop or shown it). */
export async function sendAndSettle(
  rig: GpuRig,
  frame: Uint8Array,
  expect: "deliver" | "drop",
): Promise<void> {
  const logs = rig.gpu.guestErrorCount();
  rig.conn!.send(frame);
  if (expect === "deliver") {
    await eventually(
      "the frame to land",
      async () => ((await rig.gpu.reg(GPU_REG.LINK_STATUS)) & GPU_LINK.RX_READY) !== 0,
    );
  } else {
    await eventually("the drop to be logged", () => rig.gpu.guestErrorCount() > logs);
  }
}
