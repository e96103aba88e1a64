/**
 * Reading an op's raw field overrides (`key=value` modifiers of the runner's
 * op lines) the way the runner applies them: numbers in decimal or 0x hex;
 * pointer fields also take `null` (0), `bad` (a PROT_NONE page of the
 * runner) and `kern` (0xffff800000000000).
 *
 * @example
 * ```ts
 * modNum({ flags: "0x2" }, "flags"); // 2n
 * ptrKind({ ops_ptr: "null" }, "ops_ptr"); // "fault"
 * ```
 */
import { HilError } from "../errors.ts";
import type { Mods } from "./gpu_host_ops.ts";

/** The model was handed an op the runner's format allows but the model does not cover. */
export class GpuHostModelUsageError extends HilError {}

/** The kernel address `kern` stands for. */
export const KERN_ADDR = 0xffff800000000000n;

/** A numeric modifier, or undefined when absent. */
export function modNum(m: Mods | undefined, k: string): bigint | undefined {
  const v = m?.[k];
  if (v === undefined) return undefined;
  if (v === "null") return 0n;
  if (!/^(0x[0-9a-fA-F]+|[0-9]+)$/.test(v)) {
    throw new GpuHostModelUsageError(`modifier ${k}=${v} is not a number`);
  }
  return BigInt(v);
}

/** A numeric modifier or `dflt`. */
export function modOr(m: Mods | undefined, k: string, dflt: bigint): bigint {
  return modNum(m, k) ?? dflt;
}

/** A pointer modifier: absent (the runner's own buffer), one that faults, or a raw value. */
export function ptrKind(m: Mods | undefined, k: string): "ok" | "fault" | bigint {
  const v = m?.[k];
  if (v === undefined) return "ok";
  if (v === "null" || v === "bad" || v === "kern") return "fault";
  return modOr(m, k, 0n);
}

/** Throw unless every modifier of `m` is one of `keys`. */
export function onlyMods(what: string, m: Mods | undefined, keys: readonly string[]): void {
  for (const k of Object.keys(m ?? {})) {
    if (!keys.includes(k)) {
      throw new GpuHostModelUsageError(`${what}: the model does not cover modifier ${k}`);
    }
  }
}

/** Fields every ioctl op takes: the argument pointer and the command's size bits. */
export const COMMON_MODS = ["arg", "ioc_size"] as const;
