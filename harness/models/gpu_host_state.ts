/**
 * The objects of the cnuasgpu_host reference model (harness/models/gpu_host.ts)
 * and the rules that decide when they go away, from docs/devices.md
 * (cnuasgpu_host.ko) and drivers/gpu/uapi/cnuasgpu_host.h:
 *
 * - an allocation stays reserved while its owner file's handle names it, a
 *   mapping of it exists, a DMA-BUF of it is open (an fd or an import holds
 *   it) or a queued op names it;
 * - a pin stays pinned while its handle lives or a queued op names it;
 * - an open file is released when its fd is closed and no mapping made
 *   through it remains (a mapping holds its file, as every mmap() does):
 *   then its handles go and its queued ops are cancelled or finish.
 *
 * @example
 * ```ts
 * const node = new NodeState(0, 64 << 20, 32 << 20);
 * allocHeld(someAlloc, new Set()); // true while anything above holds it
 * ```
 */
import { SparseMem } from "./gpu_host_mem.ts";

/** Module parameters of one load (docs/devices.md's table). */
export interface GpuHostConfig {
  /** Nodes (`devices`). */
  devices: number;
  /** Arena per node, MiB (`devmem_mb`). */
  devmemMb: number;
  /** Pinned ceiling per node, MiB (`pinned_max_mb`). */
  pinnedMaxMb: number;
  /** `zerocopy`: mmap() of allocations. */
  zerocopy: boolean;
  /** `pinned`: PIN, UNPIN, pinned ops. */
  pinned: boolean;
  /** `dmabuf`: EXPORT_DMABUF, IMPORT_DMABUF. */
  dmabuf: boolean;
  /** `async`: SUBMIT, POLL, WAIT, poll(). */
  async: boolean;
  /** Ops per open file's queue (`queue_depth`). */
  queueDepth: number;
  /** Ops per SUBMIT (`batch_max`). */
  batchMax: number;
}

/** The module's defaults. */
export const GPU_HOST_DEFAULTS: GpuHostConfig = {
  devices: 1,
  devmemMb: 64,
  pinnedMaxMb: 32,
  zerocopy: true,
  pinned: true,
  dmabuf: true,
  async: true,
  queueDepth: 64,
  batchMax: 32,
};

/** insmod arguments for `c` (every parameter, so the load says what it is). */
export function moduleParams(c: GpuHostConfig): string {
  const b = (v: boolean) => (v ? 1 : 0);
  return `devices=${c.devices} devmem_mb=${c.devmemMb} pinned_max_mb=${c.pinnedMaxMb} ` +
    `zerocopy=${b(c.zerocopy)} pinned=${b(c.pinned)} dmabuf=${b(c.dmabuf)} ` +
    `async=${b(c.async)} queue_depth=${c.queueDepth} batch_max=${c.batchMax}`;
}

/** Page size of the guest (x86-64). */
export const PAGE = 4096;

/** One node's arena and pin accounting. */
export class NodeState {
  /** Reserved allocations. */
  allocs: Alloc[] = [];
  /** Pinned pins. */
  pins: Pin[] = [];
  /** A node with `arena` bytes of device memory and a pinned ceiling of `pinnedMax` bytes. */
  constructor(readonly idx: number, readonly arena: number, readonly pinnedMax: number) {}
}

/** An allocation of the arena. */
export class Alloc {
  /** Its bytes. */
  readonly mem: SparseMem;
  /** The file whose handle names it (null once freed or its file released). */
  owner: FileState | null;
  /** Mappings of it. */
  mappings = 0;
  /** Queued ops naming it that have not completed. */
  opHolds = 0;
  /** DMA-BUFs made of it. */
  dmabufs: Dmabuf[] = [];
  /** `size` bytes (a page multiple) at arena `offset` of node `node`, owned by `owner`. */
  constructor(
    readonly node: NodeState,
    readonly offset: number,
    readonly size: number,
    owner: FileState,
  ) {
    this.mem = new SparseMem(size);
    this.owner = owner;
  }
}

/** A DMA-BUF made by EXPORT_DMABUF. */
export class Dmabuf {
  /** Open fds of it. */
  fds = 0;
  /** Live IMPORT_DMABUF handles of it. */
  imports = 0;
  /** Mappings and queued ops made through an import handle (they may hold it open too). */
  viaImport = 0;
  /** A DMA-BUF of `alloc`. */
  constructor(readonly alloc: Alloc) {}
}

/** A pin of the runner's user memory. */
export class Pin {
  /** The runner's buffer: what pinned ops read and write. */
  readonly buf: SparseMem;
  /** Its handle lives. */
  handle = true;
  /** Queued ops naming it that have not completed. */
  opHolds = 0;
  /** `length` bytes pinned on `node` by `file`. */
  constructor(readonly node: NodeState, readonly file: FileState, readonly length: number) {
    this.buf = new SparseMem(length);
  }
}

/** What a handle names. */
export type HObj =
  | { kind: "alloc"; alloc: Alloc }
  | { kind: "import"; alloc: Alloc; dmabuf: Dmabuf }
  | { kind: "pin"; pin: Pin };

/** Where a queued op's host side is. */
export type HostSide =
  | { kind: "hbuf"; slot: number; off: number }
  | { kind: "pin"; pin: Pin; off: number }
  /** A user address that faults at its first byte (nothing moves). */
  | { kind: "fault" }
  | { kind: "none" };

/** Op codes (uapi CNUASGPU_OP_*). */
export const OPCODE = { TO: 1, FROM: 2, FILL: 3 } as const;

/** A queued op. */
export interface QOp {
  /** Its sequence number. */
  seq: bigint;
  /** The file it was submitted on. */
  file: FileState;
  /** CNUASGPU_OP_*. */
  opcode: number;
  /** The allocation it names. */
  alloc: Alloc;
  /** The DMA-BUF when named through an import. */
  dmabuf?: Dmabuf;
  /** Bytes into the allocation. */
  off: number;
  /** Bytes. */
  len: number;
  /** Its host side. */
  host: HostSide;
  /** FILL's byte. */
  value: number;
  /** Returned in the completion. */
  ud: bigint;
  /** Completion status: 0 or -EFAULT. */
  status: number;
  /** Raced with another writer or was cancelled: what it writes becomes unknown. */
  tainted: boolean;
  /** Its effects are in the model's state (it is known to have completed). */
  applied: boolean;
}

/** One open of a node. */
export class FileState {
  /** The fd is open. */
  fdOpen = true;
  /** Mappings made through this file. */
  mapRefs = 0;
  /** Released: handles gone, queue drained. */
  released = false;
  /** Live handles by number. */
  handles = new Map<number, HObj>();
  /** Last sequence number submitted. */
  submitted = 0n;
  /** Last completion taken. */
  reaped = 0n;
  /** Known completed up to here (a lower bound; the device may be further). */
  lower = 0n;
  /** Known to have run up to here (its bytes and holds followed); at least `lower`. */
  ran = 0n;
  /** Ops from `reaped + 1` to `submitted`. */
  queue: QOp[] = [];
  /** Opened in runner slot `slot` on `node`. */
  constructor(readonly slot: number, readonly node: NodeState) {}
}

/** How many ops of `done` name `a`. */
function doneOn(done: ReadonlySet<QOp>, match: (q: QOp) => boolean): number {
  let n = 0;
  for (const q of done) if (match(q)) n++;
  return n;
}

/** Whether `a` is reserved when the ops of `done` have completed too. */
export function allocHeld(a: Alloc, done: ReadonlySet<QOp>): boolean {
  return a.owner !== null || a.mappings > 0 || a.dmabufs.some((d) => d.fds > 0 || d.imports > 0) ||
    a.opHolds - doneOn(done, (q) => !q.applied && q.alloc === a) > 0;
}

/** Whether `p` is pinned when the ops of `done` have completed too. */
export function pinHeld(p: Pin, done: ReadonlySet<QOp>): boolean {
  return p.handle ||
    p.opHolds - doneOn(done, (q) => !q.applied && q.host.kind === "pin" && q.host.pin === p) > 0;
}

/** Whether anything but queued ops holds what `q` names (its completion then frees nothing). */
export function heldOtherwise(q: QOp): boolean {
  const a = q.alloc;
  const allocOk = a.owner !== null || a.mappings > 0 ||
    a.dmabufs.some((d) => d.fds > 0 || d.imports > 0);
  const pinOk = q.host.kind !== "pin" || q.host.pin.handle;
  return allocOk && pinOk;
}

/** Node counters as sysfs shows them (exports aside). */
export interface NodeCounts {
  /** Bytes reserved. */
  devmemUsed: number;
  /** Reserved allocations. */
  allocations: number;
  /** Bytes pinned. */
  pinnedUsed: number;
  /** Pins. */
  pins: number;
  /** End of the highest reserved allocation: where the bump pointer is. */
  top: number;
}

/** `node`'s counters when the ops of `done` have completed too. */
export function nodeCounts(node: NodeState, done: ReadonlySet<QOp>): NodeCounts {
  const allocs = node.allocs.filter((a) => allocHeld(a, done));
  const pins = node.pins.filter((p) => pinHeld(p, done));
  return {
    devmemUsed: allocs.reduce((s, a) => s + a.size, 0),
    allocations: allocs.length,
    pinnedUsed: pins.reduce((s, p) => s + p.length, 0),
    pins: pins.length,
    top: allocs.reduce((t, a) => Math.max(t, a.offset + a.size), 0),
  };
}

/** Drop what nothing holds any more. */
export function collect(node: NodeState): void {
  const none = new Set<QOp>();
  node.allocs = node.allocs.filter((a) => allocHeld(a, none));
  node.pins = node.pins.filter((p) => pinHeld(p, none));
}

/** A byte range of one memory object. */
export interface MemRange {
  /** The object. */
  mem: SparseMem;
  /** First byte. */
  off: number;
  /** Bytes. */
  len: number;
}

/** What `q` reads and writes (`hbufs` are the runner's host buffers by slot). */
export function opRanges(q: QOp, hbufs: SparseMem[]): { reads: MemRange[]; writes: MemRange[] } {
  const dev: MemRange = { mem: q.alloc.mem, off: q.off, len: q.len };
  let host: MemRange | null = null;
  if (q.host.kind === "hbuf") {
    const m = hbufs[q.host.slot];
    const off = Math.min(q.host.off, m.size);
    host = { mem: m, off, len: Math.min(q.len, m.size - off) };
  } else if (q.host.kind === "pin") host = { mem: q.host.pin.buf, off: q.host.off, len: q.len };
  if (q.opcode === OPCODE.FILL) return { reads: [], writes: [dev] };
  if (q.opcode === OPCODE.TO) return { reads: host ? [host] : [], writes: [dev] };
  return { reads: [dev], writes: host ? [host] : [] };
}

/** Whether two ranges share a byte. */
export function overlaps(a: MemRange, b: MemRange): boolean {
  return a.mem === b.mem && a.off < b.off + b.len && b.off < a.off + a.len;
}

/**
 * Do `q`'s effect on the bytes `view` gives for each object (the model's own,
 * or copies when a candidate state is tried).
 */
export function applyContent(
  q: QOp,
  hbufs: SparseMem[],
  view: (m: SparseMem) => SparseMem,
): void {
  const { reads, writes } = opRanges(q, hbufs);
  const dst = writes[0] ? view(writes[0].mem) : null;
  if (!dst) return;
  const w = writes[0];
  // A host range running past the runner's host buffer faults part way.
  const partial = q.host.kind === "hbuf" && q.host.off + q.len > hbufs[q.host.slot].size;
  if (q.tainted || partial) {
    dst.markUnknown(w.off, w.len);
    return;
  }
  if (q.host.kind === "fault") return; // faulted on its first byte: nothing moved
  if (q.opcode === OPCODE.FILL) {
    dst.fill(w.off, w.len, q.value);
    return;
  }
  const r = reads[0];
  const src = view(r.mem);
  const bytes = src.read(r.off, r.len);
  if (src.hasUnknown(r.off, r.len)) dst.markUnknown(w.off, w.len);
  else dst.write(w.off, bytes);
}
