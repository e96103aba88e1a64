/**
 * How a row's guests start: from a saved VM state where the run, the row
 * and the guest's devices allow it, else by booting their kernel.
 */
import type { Config } from "../config.ts";
import type { GuestSpec } from "../vm/qemu_args.ts";
import { snapshotBlocker } from "../vm/snapshot_key.ts";
import type { Row } from "./row.ts";

/** Why a guest of `row` with `spec` boots cold, or undefined when it may be restored. */
export function coldReason(row: Row, config: Config, spec: GuestSpec): string | undefined {
  if (!config.snapshots) return "--no-snapshot";
  if (row.coldBoot) return `the row boots cold: ${row.coldBoot}`;
  // Fault injection on the kernel command line (tests) acts during a boot.
  if (spec.append?.length) return "extra kernel command line words act at boot";
  return snapshotBlocker(spec);
}
