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

/** Configuration: paths, cache, mirror, accelerator; the environment variables it reads. */
export {
  type Accel,
  type Config,
  defaultConfig,
  type EnvironmentSettings,
  environmentSettings,
  timeoutScale,
} from "./harness/config.ts";
/** The base of the harness's typed errors, and how the CLI prints one. */
export { describeError, HilError, UsageError, UserError } from "./harness/errors.ts";
/** Content-addressed cache of build artifacts. */
export { cached, type CacheEntry, hashInputs, hashTree } from "./harness/cache.ts";
/** Pinned sources: the lock file and verified downloads. */
export {
  ChecksumError,
  DownloadError,
  fetchPinned,
  type PinnedFile,
  type PinsFile,
  readPins,
  repin,
  type SourcePin,
} from "./harness/pins.ts";
/** Seeded pseudo-random numbers for reproducible tests. */
export { prng, randBytes, randInt, randU64 } from "./harness/prng.ts";
/** Build stages. */
export { buildQemu, type QemuBuild } from "./harness/build/qemu.ts";
/** The guest root / build root tree. */
export { buildGuestRoot, type GuestRoot } from "./harness/build/guest_root.ts";
/** The guest image (kernel, initrd, ext4 root, SSH key). */
export { buildImage, type GuestImage } from "./harness/build/image.ts";
/** Kernel modules and guest programs built in the build root. */
export { buildGuestPrograms, buildModules } from "./harness/build/modules.ts";
/** The switch build stage. */
export { buildSwitch } from "./harness/build/switch.ts";
/** The provider build stage. */
export { buildProvider } from "./harness/build/provider.ts";
/** Guests: QEMU + QMP + SSH. */
export { BootTimeoutError, GuestDiedError, GuestVm } from "./harness/vm/guest.ts";
/** The QMP client. */
export { QmpClient, QmpError, type QmpEvent } from "./harness/vm/qmp.ts";
/** The interface rows use to talk to guests. */
export { type Guest, GUEST_PATHS, type RunOptions, type RunResult } from "./harness/vm/types.ts";
/** Accelerator choice with the KVM boot probe. */
export { type AccelChoice, chooseAccel, type ProbeInputs } from "./harness/vm/accel.ts";
/** The fabric switch: daemon handle, control client and start-up. */
export { Fabric } from "./harness/fabric/switch.ts";
/** The switch's typed control client: its errors and reply types. */
export {
  FabricClient,
  FabricControlError,
  type FabricOps,
  type FabricStats,
  INJECT_MAX_FRAMES,
  type InjectResult,
  type LftEntry,
  type MacEntry,
  type PortStatus,
  type QosConfig,
  type QosPortConfig,
  type QosPortStats,
  type QosPrioConfig,
  type QosPrioStats,
  type QosSetRequest,
} from "./harness/fabric/client.ts";
/** SEQPACKET sockets (Deno has none of its own). */
export {
  type SeqpacketOptions,
  SeqpacketServer,
  SeqpacketSocket,
} from "./harness/fabric/seqpacket.ts";
/** pcapng reader and writer. */
export {
  PcapngFormatError,
  type PcapngInterface,
  type PcapngPacket,
  readPcapng,
  writePcapng,
} from "./harness/fabric/pcapng.ts";
/** The qtest client (device models driven through their registers). */
export { QtestError, QtestMachine, type QtestReply } from "./harness/qtest/client.ts";
/** How the vnic rig starts the device's socket. */
export { type VnicSocketMode } from "./harness/qtest/vnic_rig.ts";
/** Matrix rows and their context. */
export {
  type BuildOutputs,
  type BuildTarget,
  type FabricHandle,
  type FabricMode,
  type GuestDevices,
  LIBRARIES,
  type LibraryName,
  type ModuleName,
  MODULES,
  type Row,
  type RowContext,
  RowFailure,
  type RowNeeds,
} from "./harness/matrix/row.ts";
/** The registry of rows. */
export { loadRows, ROW_IDS, shardRows, UnknownRowError } from "./harness/matrix/registry.ts";
/** Running rows and whole matrices. */
export { runRow } from "./harness/matrix/runner.ts";
/** A whole matrix run and its report directory. */
export { type MatrixRunOptions, runMatrix } from "./harness/matrix/run.ts";
/** The strategy layer (builds, fabric, guests for a row). */
export {
  type FabricStarter,
  fabricStarter,
  Lab,
  LabError,
  type RowSetup,
} from "./harness/matrix/lab.ts";
/** The dmesg guard. */
export { DMESG_IGNORE, dmesgViolations } from "./harness/matrix/dmesg_guard.ts";
/** Report schema and renderings. */
export {
  type MatrixJson,
  type Measurement,
  parseMatrixJson,
  type Provenance,
  rollUp,
  type RowResult,
  type Status,
  STATUS_PRIORITY,
  type StepResult,
} from "./harness/report/schema.ts";
/** JUnit, Markdown, HTML and compat renderings. */
export {
  type CompatEntry,
  type CompatJson,
  LIBRARY_VERSIONS,
  MODULE_VERSIONS,
  toCompat,
  toHtml,
  toJunit,
  toMarkdown,
} from "./harness/report/render.ts";
/** Writing and merging report directories. */
export { writeReport } from "./harness/report/write.ts";
/** Merging shard reports into one. */
export { MergeConflictError, mergeReports } from "./harness/report/merge.ts";
/** The history of published runs: the store, its index, flaky rows, page contexts, diffs. */
export {
  loadHistory,
  type PublishOptions,
  publishRun,
  readIndex,
} from "./harness/report/history.ts";
export {
  HistoryFormatError,
  type HistoryIndex,
  type RowSummary,
  type RunEntry,
} from "./harness/report/history_index.ts";
export { detectFlaky, flakyReason } from "./harness/report/flaky.ts";
export { type HistorySnapshot, pageContext } from "./harness/report/context.ts";
export {
  diffMarkdown,
  diffRuns,
  diffText,
  noiseBand,
  type RunDiff,
} from "./harness/report/diff.ts";
/** Reference model of the switch's forwarding decisions. */
export {
  type Decision,
  DROP_REASONS,
  type DropReason,
  type PortCounters,
  type PortState,
  type SwitchMode,
  SwitchModel,
} from "./harness/models/switch.ts";
/** Reference model of the switch's egress QoS: priorities, PFC frames, ECN, the queues. */
export {
  classify as qosClassify,
  decodePfc,
  ecnMark,
  encodePfc,
  LINK_MBPS,
  pauseNs,
  type PfcFrame,
  QosQueuesModel,
} from "./harness/models/switch_qos.ts";
/** RDMA wire codecs, ICRC/VCRC and the conformance checker. */
export * as rdma from "./harness/models/rdma/mod.ts";
/** Reference model of cnuas-vnic. */
export {
  type PeerSendResult,
  VNIC_REG,
  type VnicCounters,
  VnicModel,
  type VnicRegisters,
} from "./harness/models/vnic.ts";
/** Reference model of cnuasgpu. */
export {
  GPU_REG,
  type GpuConfig,
  type GpuEffects,
  GpuModel,
  type GpuRead,
} from "./harness/models/gpu.ts";
/** The wire checker's options and result, which the capture-file check takes and extends. */
export {
  type CheckOptions,
  type CheckResult,
  type RuleId,
  type Violation,
} from "./harness/models/rdma/checker.ts";
/** Checking a whole capture file against the RDMA wire rules. */
export { checkPcapngFile, type PcapngCheckSummary } from "./harness/oracle/wire_check.ts";
/** What both differential oracles report: the first divergence, shrunk. */
export {
  type Divergence,
  formatDivergence,
  type OpSource,
  type OracleEnv,
  type ShrunkDivergence,
} from "./harness/oracle/divergence.ts";
/** The cnuas-vnic differential oracle. */
export {
  formatVnicFailure,
  runVnicDiff,
  runVnicSequence,
  type VnicDiffFailure,
  type VnicDiffOptions,
  type VnicDiffReport,
  type VnicDiffSetup,
  type VnicOp,
  type VnicSequenceResult,
} from "./harness/oracle/vnic_diff.ts";
/** Access sizes of the MMIO operations in a vnic sequence. */
export { type AccessSize } from "./harness/oracle/vnic_ops.ts";
/** The cnuasgpu differential oracle. */
export {
  formatGpuFailure,
  type GpuOp,
  type GpuOracleEnv,
  type GpuRunResult,
  type GpuSeedOptions,
  type GpuSequenceResult,
  runGpuSeed,
  runGpuSequence,
} from "./harness/oracle/gpu_diff.ts";
/** Shrinking a failing operation sequence to a short reproduction. */
export { shrinkOps, type ShrinkOptions, type ShrinkResult } from "./harness/oracle/shrink.ts";
