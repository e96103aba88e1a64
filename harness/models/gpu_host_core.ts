/**
 * The state of the cnuasgpu_host reference model and the machinery its op
 * handlers share: the runner's symbols, file slots, resolving handle
 * references, following queued ops as they are known to complete, and
 * candidate states for answers that depend on how far the device's workers
 * have got.
 *
 * Completion timing: each file's ops complete in order, at times the model
 * cannot see. It keeps, per file, a lower bound (`lower`) of the last op
 * known to have completed (POLL and WAIT report it) and one (`ran`) of the
 * last op known to have run, and applies an op's effects (its bytes, the
 * holds it drops) once `ran` passes it. A completion proves its op ran; an
 * answer only some states explain proves the ops it needs ran, and the ones
 * before the last of them completed (that one's completion is posted after
 * it ran: docs/devices.md, "Asynchronous queues"). An answer that depends
 * on ops past `ran` (a digest of bytes a queued op writes, where ALLOC puts
 * an allocation when a queued op holds the top one, devmem_used) is checked
 * against every candidate "file f has run up to seq s"; the answer must
 * match one, and `ran` moves to the least matching one.
 * Accesses the model could not order (a synchronous write to bytes a queued
 * op reads or writes, two files' ops on the same bytes, ops cut short by
 * close) make the bytes concerned unknown instead of guessing.
 */
import { fnv1a64 } from "./gpu_host_bytes.ts";
import { SparseMem } from "./gpu_host_mem.ts";
import { FILE_SLOTS, type HandleRef, HOST_BUF_BYTES } from "./gpu_host_ops.ts";
import {
  type Alloc,
  applyContent,
  collect,
  type Dmabuf,
  FileState,
  type GpuHostConfig,
  type HObj,
  type MemRange,
  NodeState,
  opRanges,
  overlaps,
  type QOp,
} from "./gpu_host_state.ts";

/** A handle symbol (`$N`) as the runner keeps it. */
export interface HandleSym {
  /** The file it was got in. */
  file: FileState;
  /** The kernel's number. */
  number: number;
  /** What it named when got. */
  obj: HObj;
  /** Not freed, unpinned or closed by the runner (a pin's buffer still mapped). */
  live: boolean;
}

/** A DMA-BUF fd symbol (`#N`). */
export interface FdSym {
  /** Its DMA-BUF. */
  dmabuf: Dmabuf;
  /** Not closed. */
  open: boolean;
}

/** A mapping symbol (`%N`). */
export interface MapSym {
  /** The file it was made through (the mapping holds it). */
  file: FileState;
  /** The allocation mapped. */
  alloc: Alloc;
  /** The DMA-BUF when made through an import handle. */
  dmabuf?: Dmabuf;
  /** First byte of the allocation mapped. */
  off: number;
  /** Bytes mapped. */
  len: number;
  /** Not unmapped. */
  live: boolean;
}

/** A handle reference resolved in one file: skip (unbound symbol), or what it names (if anything). */
export type Resolved = { skip: true } | { skip: false; obj: HObj | undefined; sym?: HandleSym };

/** A candidate state: how far each file has completed, and what an answer would be there. */
export interface Candidate<T> {
  /** Per file: completed up to this seq. */
  points: Map<FileState, bigint>;
  /** The answer in that state. */
  value: T;
}

/** More candidate states than this and the answer is taken unchecked. */
const MAX_CANDIDATES = 4096;

/** The model's state. */
export class GpuHostCore {
  /** Nodes by index. */
  readonly nodes: NodeState[];
  /** Open files by runner slot. */
  readonly slots: (FileState | undefined)[] = new Array(FILE_SLOTS).fill(undefined);
  /** Files not yet released (open, or closed with mappings left), and released ones whose ops may still run. */
  live: FileState[] = [];
  /** The runner's host buffer of each slot. */
  readonly hbufs: SparseMem[];
  /** Handle symbols. */
  readonly syms = new Map<number, HandleSym>();
  /** DMA-BUF fd symbols. */
  readonly fds = new Map<number, FdSym>();
  /** Mapping symbols. */
  readonly maps = new Map<number, MapSym>();
  /** Answers taken without a check (too many candidate states). */
  unchecked = 0;

  /** A freshly loaded module with `cfg`. */
  constructor(readonly cfg: GpuHostConfig) {
    this.nodes = Array.from(
      { length: cfg.devices },
      (_, i) => new NodeState(i, cfg.devmemMb << 20, cfg.pinnedMaxMb << 20),
    );
    this.hbufs = Array.from({ length: FILE_SLOTS }, () => new SparseMem(HOST_BUF_BYTES));
  }

  /** The open file in slot `f`. */
  file(f: number): FileState | undefined {
    const s = this.slots[f];
    return s?.fdOpen ? s : undefined;
  }

  /** Resolve `ref` in `file`. */
  resolve(file: FileState, ref: HandleRef): Resolved {
    if (ref === "bad" || ref === "0") return { skip: false, obj: undefined };
    const sym = this.syms.get(Number(ref.slice(1)));
    if (!sym) return { skip: true };
    return { skip: false, obj: file.handles.get(sym.number), sym };
  }

  /** A handle number the kernel may give next in `file` (nominal: the least free). */
  nominalHandle(file: FileState): number {
    let n = 1;
    while (file.handles.has(n)) n++;
    return n;
  }

  /** Null when `v` is a handle `file` may be given now, else why not. */
  badNewHandle(file: FileState, v: string | undefined): string | null {
    const n = Number(v);
    if (v === undefined || !/^[0-9]+$/.test(v) || n < 1 || n > 0xffff_ffff) {
      return `handle ${v} is not a number in 1..2^32-1`;
    }
    return file.handles.has(n) ? `handle ${n} is already live in this file` : null;
  }

  /** The runner's symbol of live handle `number` in `file`, if any. */
  liveSym(file: FileState, number: number): HandleSym | undefined {
    for (const s of this.syms.values()) {
      if (s.live && s.file === file && s.number === number) return s;
    }
    return undefined;
  }

  /** Ops not yet known to have completed, all files. */
  pending(): QOp[] {
    return this.live.flatMap((f) => f.queue.filter((q) => !q.applied));
  }

  /** `file`'s ops up to `point` are known completed (a completion said so). */
  advance(file: FileState, point: bigint): void {
    this.ranTo(file, point);
    if (point > file.lower) file.lower = point;
  }

  /**
   * `file`'s ops up to `point` are known to have run — their bytes landed
   * and they let go of what they held — which proves the ops before `point`
   * completed, not `point` itself: its completion is posted after that
   * (docs/devices.md, "Asynchronous queues").
   */
  ranTo(file: FileState, point: bigint): void {
    for (const q of file.queue) {
      if (q.applied || q.seq > point) continue;
      applyContent(q, this.hbufs, (m) => m);
      q.alloc.opHolds--;
      if (q.dmabuf) q.dmabuf.viaImport--;
      if (q.host.kind === "pin") q.host.pin.opHolds--;
      q.applied = true;
    }
    if (point > file.ran) file.ran = point;
    if (point - 1n > file.lower) file.lower = point - 1n;
    this.forgetDrained(file);
    collect(file.node);
  }

  /**
   * Release `file` if its fd is closed and no mapping holds it: its handles
   * go at once; its queued ops are cancelled or cut short, but close does not
   * wait for the worker (docs/devices.md, "Asynchronous queues"), so each
   * keeps what it names until it is known to have completed, like any queued
   * op: answers that depend on it are checked against every candidate.
   */
  maybeRelease(file: FileState): void {
    if (file.fdOpen || file.mapRefs > 0 || file.released) return;
    for (const q of file.queue) if (!q.applied) q.tainted = true; // cancelled, or cut short
    for (const obj of file.handles.values()) {
      if (obj.kind === "alloc" && obj.alloc.owner === file) obj.alloc.owner = null;
      if (obj.kind === "import") obj.dmabuf.imports--;
      if (obj.kind === "pin") obj.pin.handle = false;
    }
    file.handles.clear();
    file.released = true;
    this.forgetDrained(file);
    collect(file.node);
  }

  /** Drop a released `file` once none of its ops can still be running. */
  private forgetDrained(file: FileState): void {
    if (!file.released || file.queue.some((q) => !q.applied)) return;
    file.queue = [];
    this.live = this.live.filter((f) => f !== file);
  }

  /** A synchronous write of `r`: queued ops touching those bytes race with it. */
  syncWrite(r: MemRange): void {
    for (const q of this.pending()) {
      const { reads, writes } = opRanges(q, this.hbufs);
      if ([...reads, ...writes].some((x) => overlaps(x, r))) q.tainted = true;
    }
  }

  /** Taint `q` and every pending op of another file it races with. */
  raceCheck(q: QOp): void {
    const mine = opRanges(q, this.hbufs);
    for (const p of this.pending()) {
      if (p.file === q.file) continue;
      const other = opRanges(p, this.hbufs);
      const clash = mine.writes.some((w) =>
        [...other.reads, ...other.writes].some((x) => overlaps(w, x))
      ) ||
        mine.reads.some((r) => other.writes.some((w) => overlaps(r, w)));
      if (clash) q.tainted = p.tainted = true;
    }
  }

  /**
   * The answer `evaluate` gives in each candidate state that `relevant` ops
   * distinguish; null when there are too many.
   */
  candidates<T>(relevant: QOp[], evaluate: (done: ReadonlySet<QOp>) => T): Candidate<T>[] | null {
    const files = [...new Set(relevant.map((q) => q.file))];
    const axes = files.map((f) => [
      f.ran,
      ...relevant.filter((q) => q.file === f).map((q) => q.seq).sort((a, b) => (a < b ? -1 : 1)),
    ]);
    if (axes.reduce((n, a) => n * a.length, 1) > MAX_CANDIDATES) return null;
    const out: Candidate<T>[] = [];
    const walk = (i: number, points: Map<FileState, bigint>) => {
      if (i === files.length) {
        const done = new Set<QOp>();
        for (const [f, p] of points) {
          for (const q of f.queue) if (!q.applied && q.seq <= p) done.add(q);
        }
        out.push({ points: new Map(points), value: evaluate(done) });
        return;
      }
      for (const p of axes[i]) {
        points.set(files[i], p);
        walk(i + 1, points);
      }
      points.delete(files[i]);
    };
    walk(0, new Map());
    return out;
  }

  /**
   * Answers read one after another (sysfs attributes) while ops complete:
   * each must match a candidate state no earlier than the one before it
   * matched. Returns the least state the last one allows, or null (with the
   * index of the first answer no such state explains).
   */
  inOrder<T>(
    cands: Candidate<T>[],
    matches: ((v: T) => boolean)[],
  ): { least: Candidate<T>[] } | { failed: number } {
    let bound = new Map<FileState, bigint>();
    let least: Candidate<T>[] = [];
    for (const [i, match] of matches.entries()) {
      const ok = cands.filter((c) =>
        match(c.value) && [...c.points].every(([f, p]) => p >= (bound.get(f) ?? f.ran))
      );
      if (!ok.length) return { failed: i };
      const next = new Map<FileState, bigint>();
      for (const c of ok) {
        for (const [f, p] of c.points) {
          const cur = next.get(f);
          if (cur === undefined || p < cur) next.set(f, p);
        }
      }
      bound = next;
      least = ok;
    }
    return { least };
  }

  /**
   * Follow an answer the `matching` candidates explain: each file has run
   * up to its least point among them ({@link ranTo}: what is seen of an op
   * does not prove its completion posted).
   */
  settleTo<T>(matching: Candidate<T>[]): void {
    const least = new Map<FileState, bigint>();
    for (const c of matching) {
      for (const [f, p] of c.points) {
        const cur = least.get(f);
        if (cur === undefined || p < cur) least.set(f, p);
      }
    }
    for (const [f, p] of least) this.ranTo(f, p);
  }

  /**
   * The digest of `len` bytes at `off` of `mem` in each candidate state
   * ("?" where a byte is unknown).
   */
  digests(mem: SparseMem, off: number, len: number): Candidate<string>[] | null {
    const target: MemRange = { mem, off, len };
    const relevant = this.pending().filter((q) =>
      opRanges(q, this.hbufs).writes.some((w) => overlaps(w, target))
    );
    return this.candidates(relevant, (done) => {
      const overlay = new Map<SparseMem, SparseMem>();
      const view = (m: SparseMem) => {
        let c = overlay.get(m);
        if (!c) overlay.set(m, c = m.clone());
        return c;
      };
      const ordered = [...done].sort((a, b) =>
        a.file === b.file
          ? (a.seq < b.seq ? -1 : 1)
          : this.live.indexOf(a.file) - this.live.indexOf(b.file)
      );
      for (const q of ordered) applyContent(q, this.hbufs, view);
      const m = overlay.get(mem) ?? mem;
      return m.hasUnknown(off, len) ? "?" : fnv1a64(m.read(off, len));
    });
  }
}
