/**
 * Shared set-up of the cnuasgpu qtest tests: the QEMU build (from the cache,
 * built on first use) and a device with this process as its CnuasLink peer.
 */
import { join } from "node:path";
import { buildQemu } from "../../harness/build/qemu.ts";
import { defaultConfig } from "../../harness/config.ts";
import type { GpuOracleEnv } from "../../harness/oracle_gpu.ts";
import { type GpuProps, QtestGpu } from "../../harness/qtest_gpu.ts";
import { SeqpacketServer, type SeqpacketSocket } from "../../harness/seqpacket.ts";

let envPromise: Promise<GpuOracleEnv> | undefined;

/** QEMU with our device models (cached build). */
export function gpuEnv(): Promise<GpuOracleEnv> {
  envPromise ??= buildQemu(defaultConfig({ verbose: false })).then((q) => ({
    binary: q.binary,
    firmware: q.firmware,
  }));
  return envPromise;
}

/** A running device and its peer. */
export interface GpuRig {
  gpu: QtestGpu;
  socketPath: string;
  /** The listening peer socket (null once closed by the test). */
  server: SeqpacketServer | null;
  /** The accepted connection, when the device connected. */
  conn: SeqpacketSocket | null;
  /** Stop QEMU and close the sockets. */
  close(): Promise<void>;
}

/** Options of `startGpu`. */
export interface StartOptions {
  /** Give the device a `cnuaslink_socket` (default true). */
  link?: boolean;
  /** Listen on it before QEMU starts (default true). */
  listen?: boolean;
}

/** Start one cnuasgpu with `props`; the peer accepts the realize-time connection. */
export async function startGpu(props: GpuProps = {}, opts: StartOptions = {}): Promise<GpuRig> {
  const env = await gpuEnv();
  const workDir = await Deno.makeTempDir({ prefix: "gpu-qtest-" });
  const socketPath = join(workDir, "link.sock");
  const server = opts.listen === false ? null : SeqpacketServer.listen(socketPath);
  const linkProps: GpuProps = opts.link === false ? {} : { cnuaslink_socket: socketPath };
  let gpu: QtestGpu;
  try {
    gpu = await QtestGpu.start({
      binary: env.binary,
      firmware: env.firmware,
      workDir,
      props: { ...linkProps, ...props },
    });
  } catch (e) {
    server?.close();
    await Deno.remove(workDir, { recursive: true }).catch(() => {});
    throw e;
  }
  const rig: GpuRig = {
    gpu,
    socketPath,
    server,
    conn: opts.link === false ? null : server?.accept(2000) ?? null,
    async close() {
      rig.conn?.close();
      rig.server?.close();
      await gpu.close();
      await Deno.remove(workDir, { recursive: true }).catch(() => {});
    },
  };
  return rig;
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
