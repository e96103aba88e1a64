/**
 * The cnuasgpu_host model's expectations for the memory ioctls and what the
 * runner does around them: ALLOC (the page-aligned bump allocator), FREE,
 * COPY_TO_DEV / COPY_FROM_DEV, mmap() and the runner's reads and writes
 * through a mapping, the runner's host buffers, INFO and CAPS. From
 * drivers/gpu/uapi/cnuasgpu.h, uapi/cnuasgpu_host.h and docs/devices.md.
 *
 * The allocator: sizes round up to pages; an allocation starts at the end of
 * the highest one still reserved (0 when none), rounded up to its alignment
 * (0 = a page; else a power of two from a page to 1 GiB), and is ENOMEM when
 * it would pass the arena's end. So space comes back only from the top.
 */
import { fnv1a64, patternBytes } from "./gpu_host_bytes.ts";
import type { Candidate, GpuHostCore } from "./gpu_host_core.ts";
import { errno, type Expect, okFields, SKIP } from "./gpu_host_expect.ts";
import { modNum, modOr, onlyMods, ptrKind } from "./gpu_host_mods.ts";
import { type Answer, HOST_BUF_BYTES, type HostOp } from "./gpu_host_ops.ts";
import {
  Alloc,
  collect,
  type FileState,
  heldOtherwise,
  type NodeCounts,
  nodeCounts,
  type NodeState,
  PAGE,
} from "./gpu_host_state.ts";

/** The runner's bounce buffer for synchronous copies (followed by a PROT_NONE page). */
export const COPY_BUF_BYTES = 1 << 20;

/** CAPS bits (uapi CNUASGPU_CAP_*). */
export const CAP = {
  ZEROCOPY: 1,
  PINNED: 2,
  DMABUF: 4,
  ASYNC: 8,
  LINK: 16,
  PEER_RDMA: 32,
} as const;

type Op<K extends HostOp["op"]> = Extract<HostOp, { op: K }>;

/**
 * Checks every ioctl makes first: the command's size bits (another size than
 * the struct's `size` bytes is another command), then the feature, then the
 * argument.
 */
export function preamble(
  mods: Record<string, string> | undefined,
  size: number,
  feature: boolean,
): Expect | null {
  if (mods?.ioc_size !== undefined && modNum(mods, "ioc_size") !== BigInt(size)) {
    return errno("ENOTTY");
  }
  if (!feature) return errno("EOPNOTSUPP");
  if (mods?.arg !== undefined) return errno("EFAULT");
  return null;
}

/** Node counters in each candidate state of the ops whose completion could change them. */
export function countCandidates(m: GpuHostCore, node: NodeState): Candidate<NodeCounts>[] | null {
  const relevant = m.pending().filter((q) => q.file.node === node && !heldOtherwise(q));
  return m.candidates(relevant, (done) => nodeCounts(node, done));
}

/** Where ALLOC of `size` bytes (rounded) aligned to `align` goes with the bump pointer at `top`. */
export function placement(
  top: number,
  size: bigint,
  align: bigint,
  arena: number,
): number | "ENOMEM" {
  const a = align === 0n ? BigInt(PAGE) : align;
  const start = ((BigInt(top) + a - 1n) / a) * a;
  return start + size > BigInt(arena) ? "ENOMEM" : Number(start);
}

/** Whether ALLOC's `align` is allowed. */
export function alignOk(align: bigint): boolean {
  return align === 0n ||
    ((align & (align - 1n)) === 0n && align >= BigInt(PAGE) && align <= 1n << 30n);
}

/** ALLOC. */
export function allocExpect(m: GpuHostCore, o: Op<"alloc">): Expect {
  onlyMods("alloc", o.mods, ["arg", "ioc_size", "flags"]);
  const f = m.file(o.f);
  if (!f) return SKIP;
  const pre = preamble(o.mods, 32, true);
  if (pre) return pre;
  if (modOr(o.mods, "flags", 0n) !== 0n || o.size === 0n || !alignOk(o.align)) {
    return errno("EINVAL");
  }
  const size = ((o.size + BigInt(PAGE) - 1n) / BigInt(PAGE)) * BigInt(PAGE);
  // more than the arena fits in no state: decided before the candidates,
  // which may be too many to list (and then an answer is taken unchecked)
  if (size > BigInt(f.node.arena)) return errno("ENOMEM");
  const cands = countCandidates(m, f.node);
  const where = (c: NodeCounts) => placement(c.top, size, o.align, f.node.arena);
  const answer = (p: number | "ENOMEM", h: string) =>
    p === "ENOMEM" ? "err ENOMEM" : `ok handle=${h} offset=${p} size=${size}`;
  if (!cands) m.unchecked++;
  const all = cands ?? [];
  const nominalC = all[all.length - 1];
  const nominal = answer(nominalC ? where(nominalC.value) : 0, String(m.nominalHandle(f)));
  const matching = (a: Answer) =>
    all.filter((c) => {
      const p = where(c.value);
      return p === "ENOMEM"
        ? a.status === "err" && a.errno === "ENOMEM"
        : a.status === "ok" && a.kv.get("offset") === String(p);
    });
  return {
    nominal,
    check(a) {
      const want = [...new Set(all.map((c) => answer(where(c.value), "H")))].join(" | ");
      if (a.status === "err" && a.errno === "ENOMEM") {
        return !cands || matching(a).length ? null : `want ${want}`;
      }
      if (a.status !== "ok" || a.kv.get("size") !== String(size)) return `want ${want}`;
      if (a.kv.size !== 3 || !a.kv.has("offset")) return `want ${want}`;
      if (cands && matching(a).length === 0) return `want ${want}`;
      return m.badNewHandle(f, a.kv.get("handle"));
    },
    then(a) {
      if (cands) m.settleTo(matching(a));
      if (a.status !== "ok") return;
      const alloc = new Alloc(f.node, Number(a.kv.get("offset")), Number(size), f);
      f.node.allocs.push(alloc);
      const number = Number(a.kv.get("handle"));
      const obj = { kind: "alloc", alloc } as const;
      f.handles.set(number, obj);
      m.syms.set(o.out, { file: f, number, obj, live: true });
    },
  };
}

/** Forget the runner's live symbol of `number` in `file` (FREE or UNPIN succeeded). */
export function dropSym(m: GpuHostCore, file: FileState, number: number): void {
  const s = m.liveSym(file, number);
  if (s) s.live = false;
}

/** FREE. */
export function freeExpect(m: GpuHostCore, o: Op<"free">): Expect {
  onlyMods("free", o.mods, ["arg", "ioc_size", "reserved"]);
  const f = m.file(o.f);
  if (!f) return SKIP;
  const r = m.resolve(f, o.h);
  if (r.skip) return SKIP;
  const pre = preamble(o.mods, 8, true);
  if (pre) return pre;
  if (modOr(o.mods, "reserved", 0n) !== 0n) return errno("EINVAL");
  const obj = r.obj;
  if (!obj || obj.kind === "pin") return errno("ENOENT");
  return okFields({}, () => {
    const number = r.sym!.number;
    f.handles.delete(number);
    if (obj.kind === "alloc") obj.alloc.owner = null;
    else obj.dmabuf.imports--;
    dropSym(m, f, number);
    collect(obj.alloc.node);
  });
}

/** COPY_TO_DEV and COPY_FROM_DEV. */
export function copyExpect(m: GpuHostCore, o: Op<"copy_to"> | Op<"copy_from">): Expect {
  onlyMods(o.op, o.mods, ["arg", "ioc_size", "reserved", "user_ptr"]);
  const f = m.file(o.f);
  if (!f) return SKIP;
  const r = m.resolve(f, o.h);
  if (r.skip) return SKIP;
  const pre = preamble(o.mods, 32, true);
  if (pre) return pre;
  if (modOr(o.mods, "reserved", 0n) !== 0n || o.len === 0n) return errno("EINVAL");
  const obj = r.obj;
  if (!obj || obj.kind === "pin") return errno("ENOENT");
  const a = obj.alloc;
  if (o.off + o.len > BigInt(a.size)) return errno("EINVAL");
  if (ptrKind(o.mods, "user_ptr") !== "ok") return errno("EFAULT");
  const off = Number(o.off), len = Number(o.len);
  if (len > COPY_BUF_BYTES) {
    // Runs into the guard page after the runner's buffer part way through.
    return errno("EFAULT");
  }
  if (o.op === "copy_to") {
    return okFields({}, () => {
      m.syncWrite({ mem: a.mem, off, len });
      a.mem.write(off, patternBytes(o.seed, len));
    });
  }
  return digestExpect(m, a.mem, off, len);
}

/** An `ok digest=...` answer of `len` bytes at `off` of `mem`. */
export function digestExpect(
  m: GpuHostCore,
  mem: Alloc["mem"],
  off: number,
  len: number,
): Expect {
  const cands = m.digests(mem, off, len);
  if (!cands) m.unchecked++;
  const all = cands ?? [];
  const ok = (a: Answer) => all.filter((c) => c.value === "?" || c.value === a.kv.get("digest"));
  const last = all[all.length - 1];
  return okFields({}, (a) => cands && m.settleTo(ok(a)), {
    nominal: { digest: last && last.value !== "?" ? last.value : fnv1a64(new Uint8Array(len)) },
    check: (a) =>
      !cands || ok(a).length
        ? null
        : `want digest ${[...new Set(all.map((c) => c.value))].join(" or ")}`,
  });
}

/** The runner's host buffer: hwrite and hread. */
export function hbufExpect(m: GpuHostCore, o: Op<"hwrite"> | Op<"hread">): Expect {
  if (o.off < 0 || o.len < 1 || o.off + o.len > HOST_BUF_BYTES) return SKIP;
  const mem = m.hbufs[o.f];
  if (o.op === "hread") return digestExpect(m, mem, o.off, o.len);
  return okFields({}, () => {
    m.syncWrite({ mem, off: o.off, len: o.len });
    mem.write(o.off, patternBytes(o.seed, o.len));
  });
}

/** mmap(): the range must lie inside one allocation or import of this file. */
export function mmapExpect(m: GpuHostCore, o: Op<"mmap">): Expect {
  const f = m.file(o.f);
  if (!f) return SKIP;
  const r = m.resolve(f, o.h);
  if (r.skip) return SKIP;
  if (r.sym?.obj.kind === "pin") return SKIP; // a pin has no offset to map at
  if (o.npages < 1) throw new RangeError("mmap of 0 pages: the VFS answers that, not the driver");
  if (!m.cfg.zerocopy) return errno("EOPNOTSUPP");
  if (o.private) return errno("EINVAL");
  // The runner maps at the offset the symbol was given (far past the arena for bad and 0).
  const base = r.sym ? symOffset(r.sym.obj) : 2 ** 40;
  const start = base + o.pgoff * PAGE, len = o.npages * PAGE;
  const hit = [...f.handles.values()].find((h) =>
    h.kind !== "pin" && start >= h.alloc.offset && start + len <= h.alloc.offset + h.alloc.size
  );
  if (!hit || hit.kind === "pin") return errno("EINVAL");
  return okFields({}, () => {
    const dmabuf = hit.kind === "import" ? hit.dmabuf : undefined;
    hit.alloc.mappings++;
    if (dmabuf) dmabuf.viaImport++;
    f.mapRefs++;
    const off = start - hit.alloc.offset;
    m.maps.set(o.out, { file: f, alloc: hit.alloc, dmabuf, off, len, live: true });
  });
}

function symOffset(obj: { kind: string; alloc?: Alloc }): number {
  return obj.alloc ? obj.alloc.offset : 2 ** 40;
}

/** munmap, mwrite, mread. */
export function mapUseExpect(
  m: GpuHostCore,
  o: Op<"munmap"> | Op<"mwrite"> | Op<"mread">,
): Expect {
  const s = m.maps.get(o.m);
  if (!s?.live) return SKIP;
  if (o.op === "munmap") {
    return okFields({}, () => {
      s.live = false;
      s.alloc.mappings--;
      if (s.dmabuf) s.dmabuf.viaImport--;
      s.file.mapRefs--;
      m.maybeRelease(s.file);
      collect(s.alloc.node);
    });
  }
  if (o.off < 0 || o.len < 1 || o.off + o.len > s.len) return SKIP;
  const off = s.off + o.off;
  if (o.op === "mread") return digestExpect(m, s.alloc.mem, off, o.len);
  return okFields({}, () => {
    m.syncWrite({ mem: s.alloc.mem, off, len: o.len });
    s.alloc.mem.write(off, patternBytes(o.seed, o.len));
  });
}

/** INFO: identity, and devmem_used in every candidate state. */
export function infoExpect(m: GpuHostCore, o: Op<"info">): Expect {
  onlyMods("info", o.mods, ["arg", "ioc_size"]);
  const f = m.file(o.f);
  if (!f) return SKIP;
  const pre = preamble(o.mods, 56, true);
  if (pre) return pre;
  const size = String(f.node.arena);
  const cands = countCandidates(m, f.node);
  if (!cands) m.unchecked++;
  const all = cands ?? [];
  const used = (a: Answer) =>
    all.filter((c) => String(c.value.devmemUsed) === a.kv.get("devmem_used"));
  return okFields(
    {
      abi_version: "1",
      fw_version: "0x00010000",
      gpu_id: String(f.node.idx),
      sm_count: "0",
      lanes_per_sm: "0",
      tensor_size: "0",
      devmem_size: size,
      alloc_limit: size,
      link_up: "0",
      reserved: "0",
    },
    (a) => cands && m.settleTo(used(a)),
    {
      nominal: { devmem_used: String(all[all.length - 1]?.value.devmemUsed ?? 0) },
      check: (a) =>
        !cands || used(a).length
          ? null
          : `want devmem_used ${[...new Set(all.map((c) => c.value.devmemUsed))].join(" or ")}`,
    },
  );
}

/** CAPS fields the runner prints, with the byte offset a modifier of that name sets. */
export const CAPS_FIELDS = [
  "version",
  "kind",
  "caps",
  "devmem_size",
  "pinned_max",
  "queue_depth",
  "batch_max",
  "page_size",
  "reserved0",
  "reserved1",
  "reserved2",
  "reserved3",
  "reserved4",
] as const;

/** CAPS: in, size 64 and every other byte 0. */
export function capsExpect(m: GpuHostCore, o: Op<"caps">): Expect {
  onlyMods("caps", o.mods, ["arg", "ioc_size", "size", ...CAPS_FIELDS]);
  const f = m.file(o.f);
  if (!f) return SKIP;
  const pre = preamble(o.mods, 64, true);
  if (pre) return pre;
  if (modOr(o.mods, "size", 64n) !== 64n) return errno("EINVAL");
  if (CAPS_FIELDS.some((k) => (modNum(o.mods, k) ?? 0n) !== 0n)) return errno("EINVAL");
  const c = m.cfg;
  const bits = (c.zerocopy ? CAP.ZEROCOPY : 0) | (c.pinned ? CAP.PINNED : 0) |
    (c.dmabuf ? CAP.DMABUF | CAP.PEER_RDMA : 0) | (c.async ? CAP.ASYNC : 0);
  return okFields({
    size: "64",
    version: "1",
    kind: "2",
    caps: `0x${bits.toString(16).padStart(2, "0")}`,
    devmem_size: String(f.node.arena),
    pinned_max: String(c.pinned ? f.node.pinnedMax : 0),
    queue_depth: String(c.async ? c.queueDepth : 0),
    batch_max: String(c.async ? c.batchMax : 0),
    page_size: String(PAGE),
    reserved: "0",
  });
}
