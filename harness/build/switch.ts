/**
 * Switch stage: `qemu/switch` (cnuas-switch and its load generator) built with
 * the host's cc into a content-addressed cache entry.
 */
import { dirname, join } from "node:path";
import { cached, hashTree } from "../cache.ts";
import type { Config } from "../config.ts";
import { exec } from "../exec.ts";
import { ensureHostPackages } from "../host.ts";

/** File name of the daemon inside the entry. */
export const SWITCH_BINARY = "cnuas-switch";
/** File name of the load generator built beside it. */
export const LOADGEN_BINARY = "cnuas-loadgen";

/**
 * Build (or find in the cache) cnuas-switch; returns its absolute path. A
 * compiler failure throws with the make log's path and its last lines.
 * @example
 * ```ts
 * const bin = await buildSwitch(defaultConfig());
 * ```
 */
export async function buildSwitch(config: Config): Promise<string> {
  const src = join(config.repoRoot, "qemu/switch");
  const entry = await cached(
    config.cacheDir,
    "switch",
    { src: await hashTree(config.repoRoot, ["qemu/switch"]) },
    async (out, logDir) => {
      await ensureHostPackages(["switch"], join(logDir, "host-packages.log"));
      await exec(["make", "-C", src, `O=${out}`], { logPath: join(logDir, "make.log") });
    },
  );
  return join(entry.dir, SWITCH_BINARY);
}

/** The load generator that `buildSwitch` built beside the daemon at `switchBinary`. */
export function loadgenOf(switchBinary: string): string {
  return join(dirname(switchBinary), LOADGEN_BINARY);
}
