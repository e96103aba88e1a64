/**
 * What a matrix row is, and the context it runs in. A row declares what it
 * needs (guests, fabric, builds); the runner brings those into the state asked
 * for and hands the row a context. Rows never boot or build anything
 * themselves.
 */
import { HilError } from "../errors.ts";
import type { Accel, Config } from "../config.ts";
import type { FabricMode, FabricOps } from "../fabric/client.ts";
import type { Guest } from "../vm/types.ts";

export type { FabricMode } from "../fabric/client.ts";

/** Our kernel modules, as compat.json names them. */
export const MODULES = ["cnuas_net", "cnuas_ib", "cnuasgpu", "cnuasgpu_host"] as const;

/** One of our kernel modules. */
export type ModuleName = typeof MODULES[number];

/** Our user-space libraries, as compat.json names them. */
export const LIBRARIES = ["libcnuasdev"] as const;

/** One of our user-space libraries. */
export type LibraryName = typeof LIBRARIES[number];

/** Build stages a row can ask for. */
export type BuildTarget =
  | "qemu"
  | "qemu-asan"
  | "image"
  | "switch"
  | "modules"
  | "provider"
  | "guestprogs"
  | "cnuasdev"
  | "cnuasdev-host"
  | "packages";

/** What a row asks the runner for. */
export interface RowNeeds {
  /** Number of guests to boot (0 = none). */
  guests: number;
  /** A fabric the guests' devices connect to. */
  fabric?: FabricMode;
  /** Builds that must exist before the row runs. */
  builds: BuildTarget[];
  /** Emulated devices each guest gets (default: none of ours). */
  devices?: GuestDevices;
}

/** Our devices attached to each guest of a row. */
export interface GuestDevices {
  /** Number of cnuas-vnic functions per guest, each on the row's fabric. */
  vnic?: number;
  /** Number of cnuasgpu functions per guest (gpu_id = guest*16 + index). */
  gpu?: number;
  /**
   * A second virtio-net NIC per guest, the guests joined by QEMU's own
   * `-netdev socket` (guest 0 listens, the others connect): the baseline
   * that cnuas_net's throughput is compared with.
   */
  virtioSocketNet?: boolean;
}

/**
 * A row's running fabric: the switch's typed control operations (no raw
 * requests: a row says what it does to the fabric, the client spells the
 * protocol).
 */
export interface FabricHandle extends FabricOps {
  /** Mode the switch runs in. */
  mode: FabricMode;
  /** Path of the data socket devices connect to. */
  socketPath: string;
  /** The daemon's host PID (a new one after each {@link restart}), when it is a real process. */
  readonly pid?: number;
  /**
   * Kill the daemon (SIGKILL by default) and start it again on the same
   * socket (devices reconnect), in `mode` when given.
   */
  restart(signal?: "SIGKILL" | "SIGTERM", mode?: FabricMode): Promise<void>;
}

/** Paths of built artifacts, filled for the builds a row asked for. */
export interface BuildOutputs {
  /** `qemu-system-x86_64` with our device models. */
  qemu?: string;
  /** Firmware search directories for `-L`. */
  qemuFirmware?: string[];
  /** `qemu-system-x86_64` built with `--enable-sanitizers` (ASan + UBSan). */
  qemuAsan?: string;
  /** The cnuas-switch daemon binary. */
  switch?: string;
  /** Guest image directory (kernel, initrd, rootfs.img, ssh key). */
  image?: string;
  /** Directory of built kernel modules (*.ko). */
  modules?: string;
  /** Directory of built guest programs (drivers/test, drivers/examples). */
  guestPrograms?: string;
  /** Directory holding the provider's install tree. */
  provider?: string;
  /** libcnuasdev built in the build root (`CNUASDEV_LAYOUT`: install tree, programs, sources). */
  cnuasdev?: string;
  /** libcnuasdev and its programs built with the host's cc. */
  cnuasdevHost?: string;
  /** The Debian packages (`.deb` paths; harness/build/packages.ts). */
  packages?: string[];
}

/** A failed expectation: the row's status becomes FAIL (anything else thrown is ERROR). */
export class RowFailure extends HilError {}

/**
 * Something the row needs is not built yet (a module, a program): the row's
 * status becomes MISS, naming it. Thrown after the row ran what it could,
 * so a row that cannot prove everything never reports PASS.
 */
export class RowMiss extends HilError {}

/** Handed to `Row.run`. */
export interface RowContext {
  /** The row's id. */
  id: string;
  /** The row's own artifact directory inside the report. */
  dir: string;
  /** Run configuration. */
  config: Config;
  /** The accelerator guests run under. */
  accel: Accel;
  /** Built artifacts the row asked for. */
  builds: BuildOutputs;
  /** Booted guests, as many as `needs.guests`, artifacts already installed. */
  guests: Guest[];
  /** The row's fabric when `needs.fabric` is set. */
  fabric?: FabricHandle;
  /** Aborted when the row's timeout expires. */
  signal: AbortSignal;
  /** Run a named step; the transcript and progress lines show it. */
  step<T>(name: string, fn: () => Promise<T>): Promise<T>;
  /** Record a measurement. */
  measure(name: string, value: number, unit: string): void;
  /** Attach a file (absolute, or relative to `dir`) to the row's artifacts. */
  artifact(path: string): void;
  /** Append a line to the row's transcript. */
  log(line: string): void;
  /** Fail the row (status FAIL) when `cond` is false, naming what differed. */
  expect(cond: boolean, message: string): void;
}

/** One row of the validation matrix. */
export interface Row {
  /** Stable id (`boot`, `qtest-vnic`, ...). */
  id: string;
  /** One line: what the row proves. */
  title: string;
  /** What the runner must provide. */
  needs: RowNeeds;
  /** Wall-clock limit under KVM; scaled for TCG. */
  timeoutSec: number;
  /**
   * Our kernel modules the row loads and exercises: compat.json credits each
   * with this row's status. Absent for rows that load none.
   */
  modules?: ModuleName[];
  /**
   * Our user-space libraries the row exercises: compat.json credits each
   * with this row's status, as it does modules. Absent for rows that use none.
   */
  libraries?: LibraryName[];
  /**
   * Why this row's guests always boot cold, when they must (`boot` measures
   * a real boot); otherwise they start from a saved state where they can.
   */
  coldBoot?: string;
  /**
   * Why this row needs the modules its packages installed (it checks the
   * packaging), so `--dev-modules`, which puts the working tree's modules
   * over them, skips it.
   */
  packagedModules?: string;
  /**
   * Why this row's claims hold with the guest-less rows running beside it on
   * the same cores (it judges no rate, latency or time): the runner then runs
   * those rows alongside it (lanes.ts). Absent: the row has the cores to
   * itself and its guests.
   */
  sharesCores?: string;
  /**
   * Why this row, though it has no guests, must not run beside another row
   * (it answers a peer under a tight deadline from this process): it runs in
   * the guest lane, with the cores to itself.
   */
  alone?: string;
  /**
   * Why this guest-less row may run beside the rows that run alone: it judges
   * no time, and its work is host commands, which then run at idle CPU and
   * I/O priority (priority.ts), taking only the cycles those rows leave. It
   * starts with the run (when more than one row may run at once) and holds
   * one of the `--jobs` slots once the sharing rows start.
   */
  background?: string;
  /**
   * Why this guest-less row may run beside the sharing rows without a slot of
   * its own: it judges no time, and its work is host processes that wait on
   * each other (a qtest peer), which then run at idle CPU and I/O priority
   * (priority.ts), taking only the cycles the sharing rows leave idle. It
   * starts with the sharing rows (when more than one row may run at once).
   */
  filler?: string;
  /** The row body; absent for a row not implemented yet. */
  run?: (ctx: RowContext) => Promise<void>;
  /** Why the row reports MISS (required when `run` is absent). */
  missReason?: string;
}
