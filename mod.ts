/**
 * Cnuas HIL: the public API of the hardware-in-the-loop harness.
 *
 * @example
 * ```ts
 * import { defaultConfig, loadRows, runMatrix } from "./mod.ts";
 * const { dir } = await runMatrix(defaultConfig(), await loadRows(["boot"]));
 * console.log(`report in ${dir}`);
 * ```
 * @module
 */

/** Configuration: paths, cache, mirror, accelerator. */
export { type Accel, type Config, defaultConfig, timeoutScale } from "./harness/config.ts";
/** Content-addressed cache of build artifacts. */
export { cached, type CacheEntry, hashInputs, hashTree } from "./harness/cache.ts";
/** Pinned sources: the lock file and verified downloads. */
export {
  ChecksumError,
  DownloadError,
  fetchPinned,
  type PinnedFile,
  readPins,
  repin,
  type SourcePin,
} from "./harness/pins.ts";
/** Build stages. */
export { buildQemu, type QemuBuild } from "./harness/build/qemu.ts";
/** The guest root / build root tree. */
export { buildGuestRoot, type GuestRoot } from "./harness/build/guest_root.ts";
/** The guest image (kernel, initrd, ext4 root, SSH key). */
export { buildImage, type GuestImage } from "./harness/build/image.ts";
/** Kernel modules and guest programs built in the build root. */
export { buildGuestPrograms, buildModules } from "./harness/build/modules.ts";
/** Guests: QEMU + QMP + SSH. */
export { BootTimeoutError, GuestDiedError, GuestVm } from "./harness/vm/guest.ts";
/** The QMP client. */
export { QmpClient, QmpError } from "./harness/vm/qmp.ts";
/** The interface rows use to talk to guests. */
export { type Guest, GUEST_PATHS, type RunOptions, type RunResult } from "./harness/vm/types.ts";
/** Accelerator choice with the KVM boot probe. */
export { type AccelChoice, chooseAccel } from "./harness/vm/accel.ts";
/** Matrix rows and their context. */
export {
  type BuildOutputs,
  type Row,
  type RowContext,
  RowFailure,
  type RowNeeds,
  type Status,
  STATUS_PRIORITY,
} from "./harness/matrix/row.ts";
/** The registry of rows. */
export { loadRows, ROW_IDS, shardRows, UnknownRowError } from "./harness/matrix/registry.ts";
/** Running rows and whole matrices. */
export { runRow } from "./harness/matrix/runner.ts";
/** A whole matrix run and its report directory. */
export { runMatrix } from "./harness/matrix/run.ts";
/** The strategy layer (builds, fabric, guests for a row). */
export { Lab, LabError } from "./harness/matrix/lab.ts";
/** The dmesg guard. */
export { DMESG_IGNORE, dmesgViolations } from "./harness/matrix/dmesg_guard.ts";
/** Report schema and renderings. */
export {
  type MatrixJson,
  parseMatrixJson,
  rollUp,
  type RowResult,
} from "./harness/report/schema.ts";
/** JUnit, Markdown, HTML and compat renderings. */
export { toCompat, toHtml, toJunit, toMarkdown } from "./harness/report/render.ts";
/** Writing and merging report directories. */
export { mergeReports, writeReport } from "./harness/report/write.ts";
/** The fabric switch: daemon handle, control client and start-up. */
export { Fabric, FabricControlError, startFabric } from "./harness/fabric.ts";
/** The switch build stage. */
export { buildSwitch } from "./harness/build/switch.ts";
/** SEQPACKET sockets (Deno has none of its own). */
export { SeqpacketServer, SeqpacketSocket } from "./harness/seqpacket.ts";
/** Reference model of the switch's forwarding decisions. */
export { SwitchModel } from "./harness/models/switch.ts";
/** RDMA wire codecs, ICRC/VCRC and the conformance checker. */
export * as rdma from "./harness/models/rdma/mod.ts";
/** pcapng reader and writer. */
export {
  PcapngFormatError,
  type PcapngInterface,
  type PcapngPacket,
  readPcapng,
  writePcapng,
} from "./harness/pcapng.ts";
/** Checking a whole capture file against the RDMA wire rules. */
export { checkPcapngFile, type PcapngCheckSummary } from "./harness/rdma_check.ts";
/** Seeded pseudo-random numbers for reproducible tests. */
export { prng, randBytes, randInt, randU64 } from "./harness/prng.ts";
/** The provider build stage. */
export { buildProvider } from "./harness/build/provider.ts";
