/**
 * The QEMU the qtest tests run: the cached build with our device models
 * (built on first use, then shared by every test file in the process).
 */
import { buildQemu } from "../../harness/build/qemu.ts";
import { defaultConfig } from "../../harness/config.ts";
import type { OracleEnv } from "../../harness/oracle/divergence.ts";

/** Where the built QEMU is. */
export interface QemuEnv extends OracleEnv {
  firmware: string[];
}

let envPromise: Promise<QemuEnv> | undefined;

/** QEMU with our device models (cached build). */
export function qemuEnv(): Promise<QemuEnv> {
  envPromise ??= buildQemu(defaultConfig({ verbose: false })).then((q) => ({
    binary: q.binary,
    firmware: q.firmware,
  }));
  return envPromise;
}
