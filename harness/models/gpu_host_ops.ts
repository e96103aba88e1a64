/**
 * The op lines of drivers/test/cnuasgpu_host_ops (the guest op runner) as
 * data, their text form, and the runner's answer lines parsed. One op per
 * line; the runner answers each with one line: `ok key=value ...`,
 * `err ERRNO_NAME` or `skip` (the op names a symbol that is not bound, or a
 * file slot that is not open: nothing was called).
 *
 * Symbols are the runner's names for what it got: `$N` a handle (of an
 * allocation, an import or a pin), `#N` a DMA-BUF fd, `%N` a mapping. The op
 * that makes one names it (`alloc 0 4096 0 $3`), so a sequence cut down by
 * the shrinker keeps its meaning; the generator numbers them in order.
 * A handle reference is `$N`, `bad` (a value the runner picks that is not
 * live in that file) or `0`. `key=value` modifiers set a field of the ioctl's
 * struct raw (`flags=1`, `size=31`, `ops_ptr=null`), or `arg=null`/`arg=bad`
 * (the ioctl's argument pointer) and `ioc_size=N` (the command number's
 * size bits). Pointer fields take `null`, `bad` (a PROT_NONE page of the
 * runner) or `kern` (a kernel address). docs/devices.md (cnuasgpu_host op
 * runner) lists every line.
 *
 * @example
 * ```ts
 * formatOp({ op: "alloc", f: 0, size: 8192n, align: 0n, out: 1 }); // "alloc 0 8192 0 $1"
 * parseAnswer("ok handle=1 offset=0 size=8192").kv.get("offset"); // "0"
 * ```
 */

/** Raw struct field overrides, by field name (numbers in decimal or 0x hex, or null/bad/kern). */
export type Mods = Record<string, string>;

/** A handle as an op names it. */
export type HandleRef = `$${number}` | "bad" | "0";

/** A DMA-BUF fd as IMPORT names it: a symbol, a closed fd, or /dev/null. */
export type FdRef = `#${number}` | "badfd" | "devnull";

/** WAIT's sequence number: the file's last submitted, past it, or a number. */
export type WaitSeq = "last" | `last+${number}` | `${number}`;

/** Ways PIN is given a range it must refuse. */
export const PIN_BAD_KINDS = ["ptr", "len", "zero", "wrap", "prot", "ro", "kern", "map"] as const;

/** One of PIN_BAD_KINDS. */
export type PinBadKind = typeof PIN_BAD_KINDS[number];

/** One op of a SUBMIT batch. */
export type SubOp =
  /** COPY_TO_DEV / COPY_FROM_DEV with the host side at byte `hoff` of the file slot's host buffer. */
  | {
    k: "to" | "from";
    h: HandleRef;
    off: bigint;
    len: bigint;
    hoff: bigint;
    ud: bigint;
    mods?: Mods;
  }
  /** FILL with `value`. */
  | { k: "fill"; h: HandleRef; off: bigint; len: bigint; value: number; ud: bigint; mods?: Mods }
  /** A pinned copy: the host side at byte `poff` of pin `p`. */
  | {
    k: "pto" | "pfrom";
    h: HandleRef;
    off: bigint;
    len: bigint;
    p: HandleRef;
    poff: bigint;
    ud: bigint;
    mods?: Mods;
  };

/** One op line. */
export type HostOp =
  | { op: "open"; f: number; node: number }
  | { op: "close"; f: number }
  | { op: "caps"; f: number; mods?: Mods }
  | { op: "info"; f: number; mods?: Mods }
  | { op: "alloc"; f: number; size: bigint; align: bigint; out: number; mods?: Mods }
  | { op: "free"; f: number; h: HandleRef; mods?: Mods }
  | { op: "copy_to"; f: number; h: HandleRef; off: bigint; len: bigint; seed: number; mods?: Mods }
  | { op: "copy_from"; f: number; h: HandleRef; off: bigint; len: bigint; mods?: Mods }
  | { op: "export"; f: number; h: HandleRef; out: number; mods?: Mods }
  | { op: "closefd"; fd: number }
  | { op: "import"; f: number; fd: FdRef; out: number; mods?: Mods }
  | {
    op: "mmap";
    f: number;
    h: HandleRef;
    pgoff: number;
    npages: number;
    out: number;
    private?: boolean;
  }
  | { op: "munmap"; m: number }
  | { op: "mwrite"; m: number; off: number; len: number; seed: number }
  | { op: "mread"; m: number; off: number; len: number }
  | { op: "pin"; f: number; npages: number; out: number; mods?: Mods }
  | { op: "pinbad"; f: number; kind: PinBadKind; npages: number; m?: number }
  | { op: "unpin"; f: number; h: HandleRef; mods?: Mods }
  | { op: "pwrite"; p: number; off: number; len: number; seed: number }
  | { op: "pread"; p: number; off: number; len: number }
  | { op: "hwrite"; f: number; off: number; len: number; seed: number }
  | { op: "hread"; f: number; off: number; len: number }
  | { op: "submit"; f: number; ops: SubOp[]; mods?: Mods }
  | { op: "poll"; f: number; max: number; mods?: Mods }
  | { op: "wait"; f: number; seq: WaitSeq; max: number; timeoutMs: number; mods?: Mods }
  | { op: "events"; f: number }
  | { op: "stat"; node: number }
  | { op: "badcmd"; f: number; cmd: number };

/** Bytes of the runner's host buffer per file slot (followed by a PROT_NONE page). */
export const HOST_BUF_BYTES = 64 * 4096;

/** File slots the runner has. */
export const FILE_SLOTS = 4;

function mods(m: Mods | undefined): string {
  if (!m) return "";
  return Object.entries(m).map(([k, v]) => ` ${k}=${v}`).join("");
}

function subOpText(s: SubOp): string {
  switch (s.k) {
    case "to":
    case "from":
      return `${s.k} ${s.h} ${s.off} ${s.len} ${s.hoff} ${s.ud}${mods(s.mods)}`;
    case "fill":
      return `fill ${s.h} ${s.off} ${s.len} ${s.value} ${s.ud}${mods(s.mods)}`;
    case "pto":
    case "pfrom":
      return `${s.k} ${s.h} ${s.off} ${s.len} ${s.p} ${s.poff} ${s.ud}${mods(s.mods)}`;
  }
}

/** The op as the runner reads it. */
export function formatOp(o: HostOp): string {
  switch (o.op) {
    case "open":
      return `open ${o.f} ${o.node}`;
    case "close":
      return `close ${o.f}`;
    case "caps":
    case "info":
      return `${o.op} ${o.f}${mods(o.mods)}`;
    case "alloc":
      return `alloc ${o.f} ${o.size} ${o.align} $${o.out}${mods(o.mods)}`;
    case "free":
    case "unpin":
      return `${o.op} ${o.f} ${o.h}${mods(o.mods)}`;
    case "copy_to":
      return `copy_to ${o.f} ${o.h} ${o.off} ${o.len} ${o.seed}${mods(o.mods)}`;
    case "copy_from":
      return `copy_from ${o.f} ${o.h} ${o.off} ${o.len}${mods(o.mods)}`;
    case "export":
      return `export ${o.f} ${o.h} #${o.out}${mods(o.mods)}`;
    case "closefd":
      return `closefd #${o.fd}`;
    case "import":
      return `import ${o.f} ${o.fd} $${o.out}${mods(o.mods)}`;
    case "mmap":
      return `mmap ${o.f} ${o.h} ${o.pgoff} ${o.npages} %${o.out}${o.private ? " private=1" : ""}`;
    case "munmap":
      return `munmap %${o.m}`;
    case "mwrite":
      return `mwrite %${o.m} ${o.off} ${o.len} ${o.seed}`;
    case "mread":
      return `mread %${o.m} ${o.off} ${o.len}`;
    case "pin":
      return `pin ${o.f} ${o.npages} $${o.out}${mods(o.mods)}`;
    case "pinbad":
      return `pinbad ${o.f} ${o.kind} ${o.npages}${o.m !== undefined ? ` %${o.m}` : ""}`;
    case "pwrite":
      return `pwrite $${o.p} ${o.off} ${o.len} ${o.seed}`;
    case "pread":
      return `pread $${o.p} ${o.off} ${o.len}`;
    case "hwrite":
      return `hwrite ${o.f} ${o.off} ${o.len} ${o.seed}`;
    case "hread":
      return `hread ${o.f} ${o.off} ${o.len}`;
    case "submit":
      return `submit ${o.f}${mods(o.mods)} : ${o.ops.map(subOpText).join(" ; ")}`;
    case "poll":
      return `poll ${o.f} ${o.max}${mods(o.mods)}`;
    case "wait":
      return `wait ${o.f} ${o.seq} ${o.max} ${o.timeoutMs}${mods(o.mods)}`;
    case "events":
      return `events ${o.f}`;
    case "stat":
      return `stat ${o.node}`;
    case "badcmd":
      return `badcmd ${o.f} 0x${(o.cmd >>> 0).toString(16)}`;
  }
}

/** One answer line of the runner. */
export interface Answer {
  /** `ok`, `err` or `skip`. */
  status: "ok" | "err" | "skip";
  /** The errno name of an `err` line. */
  errno: string;
  /** The `key=value` fields of an `ok` line. */
  kv: Map<string, string>;
  /** The line as printed. */
  line: string;
}

/** Parse one answer line; a line of another shape gives status "err" with errno "BADLINE". */
export function parseAnswer(line: string): Answer {
  const t = line.trim().split(/\s+/);
  const kv = new Map<string, string>();
  if (t[0] === "ok") {
    for (const w of t.slice(1)) {
      const i = w.indexOf("=");
      if (i > 0) kv.set(w.slice(0, i), w.slice(i + 1));
    }
    return { status: "ok", errno: "", kv, line };
  }
  if (t[0] === "err" && t.length === 2) return { status: "err", errno: t[1], kv, line };
  if (t[0] === "skip" && t.length === 1) return { status: "skip", errno: "", kv, line };
  return { status: "err", errno: "BADLINE", kv, line };
}
