/**
 * The cnuasgpu_host model's expectations for sharing and pinning:
 * EXPORT_DMABUF, closing a DMA-BUF fd, IMPORT_DMABUF, PIN (and the ranges it
 * must refuse), UNPIN, and the runner's reads and writes of a pin's buffer.
 * From uapi/cnuasgpu_host.h and docs/devices.md: a DMA-BUF holds its
 * allocation reserved while an fd or an import names it; the node's pinned
 * bytes may not pass the ceiling (ENOMEM, checked before any page is
 * touched); memory that cannot be pinned writable is EFAULT.
 */
import { patternBytes } from "./gpu_host_bytes.ts";
import type { GpuHostCore } from "./gpu_host_core.ts";
import { errno, type Expect, okFields, SKIP } from "./gpu_host_expect.ts";
import { countCandidates, digestExpect, dropSym, preamble } from "./gpu_host_mem_ops.ts";
import { modOr, onlyMods } from "./gpu_host_mods.ts";
import type { Answer, HostOp } from "./gpu_host_ops.ts";
import { collect, Dmabuf, PAGE, Pin } from "./gpu_host_state.ts";

type Op<K extends HostOp["op"]> = Extract<HostOp, { op: K }>;

/** Whether any modifier among `keys` is set non-zero. */
function anySet(mods: Record<string, string> | undefined, keys: string[]): boolean {
  return keys.some((k) => modOr(mods, k, 0n) !== 0n);
}

/** EXPORT_DMABUF: a new DMA-BUF of an allocation, or a new fd of an import's. */
export function exportExpect(m: GpuHostCore, o: Op<"export">): Expect {
  onlyMods("export", o.mods, ["arg", "ioc_size", "flags", "reserved", "fd"]);
  const f = m.file(o.f);
  if (!f) return SKIP;
  const r = m.resolve(f, o.h);
  if (r.skip) return SKIP;
  const pre = preamble(o.mods, 16, m.cfg.dmabuf);
  if (pre) return pre;
  const flags = modOr(o.mods, "flags", 0n);
  if ((flags & ~1n) !== 0n || anySet(o.mods, ["reserved", "fd"])) return errno("EINVAL");
  const obj = r.obj;
  if (!obj || obj.kind === "pin") return errno("ENOENT");
  return okFields({ cloexec: flags === 1n ? "1" : "0" }, () => {
    let d: Dmabuf;
    if (obj.kind === "import") d = obj.dmabuf;
    else {
      d = new Dmabuf(obj.alloc);
      obj.alloc.dmabufs.push(d);
    }
    d.fds++;
    m.fds.set(o.out, { dmabuf: d, open: true });
  });
}

/** close() of a DMA-BUF fd. */
export function closefdExpect(m: GpuHostCore, o: Op<"closefd">): Expect {
  const s = m.fds.get(o.fd);
  if (!s?.open) return SKIP;
  return okFields({}, () => {
    s.open = false;
    s.dmabuf.fds--;
    collect(s.dmabuf.alloc.node);
  });
}

/** IMPORT_DMABUF. */
export function importExpect(m: GpuHostCore, o: Op<"import">): Expect {
  onlyMods("import", o.mods, ["arg", "ioc_size", "size", "flags", "handle", "offset", "length"]);
  const f = m.file(o.f);
  if (!f) return SKIP;
  const sym = o.fd.startsWith("#") ? m.fds.get(Number(o.fd.slice(1))) : undefined;
  if (o.fd.startsWith("#") && !sym?.open) return SKIP;
  const pre = preamble(o.mods, 32, m.cfg.dmabuf);
  if (pre) return pre;
  if (
    modOr(o.mods, "size", 32n) !== 32n || anySet(o.mods, ["flags", "handle", "offset", "length"])
  ) {
    return errno("EINVAL");
  }
  if (o.fd === "badfd") return errno("EBADF");
  if (!sym) return errno("EINVAL"); // /dev/null: not a DMA-BUF this module made
  const d = sym.dmabuf;
  if (d.alloc.node !== f.node) return errno("EXDEV");
  return okFields(
    { offset: String(d.alloc.offset), length: String(d.alloc.size) },
    (a: Answer) => {
      d.imports++;
      const number = Number(a.kv.get("handle"));
      const obj = { kind: "import", alloc: d.alloc, dmabuf: d } as const;
      f.handles.set(number, obj);
      m.syms.set(o.out, { file: f, number, obj, live: true });
    },
    {
      nominal: { handle: String(m.nominalHandle(f)) },
      check: (a) => m.badNewHandle(f, a.kv.get("handle")),
    },
  );
}

/** ENOMEM when `bytes` more pinned bytes pass the ceiling, in every candidate state; else `then`. */
function ceiling(
  m: GpuHostCore,
  f: NonNullable<ReturnType<GpuHostCore["file"]>>,
  bytes: number,
  fits: Expect,
): Expect {
  const cands = countCandidates(m, f.node);
  if (!cands) m.unchecked++;
  const all = cands ?? [];
  const over = (c: (typeof all)[number]) => c.value.pinnedUsed + bytes > f.node.pinnedMax;
  const matching = (a: Answer) =>
    all.filter((c) => (a.status === "err" && a.errno === "ENOMEM") === over(c));
  const last = all[all.length - 1];
  return {
    nominal: last && over(last) ? "err ENOMEM" : fits.nominal,
    check(a) {
      if (a.status === "err" && a.errno === "ENOMEM") {
        return !cands || all.some(over) ? null : `want ${fits.nominal}`;
      }
      if (cands && !all.some((c) => !over(c))) return "want err ENOMEM";
      return fits.check(a);
    },
    then(a) {
      if (cands) m.settleTo(matching(a));
      if (!(a.status === "err" && a.errno === "ENOMEM")) fits.then?.(a);
    },
  };
}

/** PIN of a fresh buffer of `npages` pages. */
export function pinExpect(m: GpuHostCore, o: Op<"pin">): Expect {
  onlyMods("pin", o.mods, ["arg", "ioc_size", "size", "flags", "handle", "reserved"]);
  const f = m.file(o.f);
  if (!f) return SKIP;
  const pre = preamble(o.mods, 32, m.cfg.pinned);
  if (pre) return pre;
  if (
    modOr(o.mods, "size", 32n) !== 32n || anySet(o.mods, ["flags", "handle", "reserved"]) ||
    o.npages < 1
  ) {
    return errno("EINVAL");
  }
  const bytes = o.npages * PAGE;
  const fits = okFields({}, (a: Answer) => {
    const pin = new Pin(f.node, f, bytes);
    f.node.pins.push(pin);
    const number = Number(a.kv.get("handle"));
    const obj = { kind: "pin", pin } as const;
    f.handles.set(number, obj);
    m.syms.set(o.out, { file: f, number, obj, live: true });
  }, {
    nominal: { handle: String(m.nominalHandle(f)) },
    check: (a) => m.badNewHandle(f, a.kv.get("handle")),
  });
  return ceiling(m, f, bytes, fits);
}

/** PIN of a range it must refuse. */
export function pinBadExpect(m: GpuHostCore, o: Op<"pinbad">): Expect {
  const f = m.file(o.f);
  if (!f) return SKIP;
  if (o.kind === "map" && !(o.m !== undefined && m.maps.get(o.m)?.live)) return SKIP;
  if (!m.cfg.pinned) return errno("EOPNOTSUPP");
  if (o.npages < 1 || ["ptr", "len", "zero", "wrap"].includes(o.kind)) return errno("EINVAL");
  return ceiling(m, f, o.npages * PAGE, errno("EFAULT"));
}

/** UNPIN. */
export function unpinExpect(m: GpuHostCore, o: Op<"unpin">): Expect {
  onlyMods("unpin", o.mods, ["arg", "ioc_size", "size", "flags", "reserved"]);
  const f = m.file(o.f);
  if (!f) return SKIP;
  const r = m.resolve(f, o.h);
  if (r.skip) return SKIP;
  const pre = preamble(o.mods, 16, m.cfg.pinned);
  if (pre) return pre;
  if (modOr(o.mods, "size", 16n) !== 16n || anySet(o.mods, ["flags", "reserved"])) {
    return errno("EINVAL");
  }
  const obj = r.obj;
  if (obj?.kind !== "pin") return errno("ENOENT");
  return okFields({}, () => {
    const number = r.sym!.number;
    f.handles.delete(number);
    obj.pin.handle = false;
    dropSym(m, f, number);
    collect(f.node);
  });
}

/** The runner's writes and reads of a pin's buffer (no system call). */
export function pinBufExpect(m: GpuHostCore, o: Op<"pwrite"> | Op<"pread">): Expect {
  const s = m.syms.get(o.p);
  if (!s?.live || s.obj.kind !== "pin") return SKIP;
  const pin = s.obj.pin;
  if (o.off < 0 || o.len < 1 || o.off + o.len > pin.length) return SKIP;
  if (o.op === "pread") return digestExpect(m, pin.buf, o.off, o.len);
  return okFields({}, () => {
    m.syncWrite({ mem: pin.buf, off: o.off, len: o.len });
    pin.buf.write(o.off, patternBytes(o.seed, o.len));
  });
}
