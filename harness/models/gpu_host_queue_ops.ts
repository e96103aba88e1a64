/**
 * The cnuasgpu_host model's expectations for the asynchronous queue (SUBMIT,
 * POLL, WAIT, poll() on the fd), the node's sysfs counters and commands the
 * driver does not know. From uapi/cnuasgpu_host.h and docs/devices.md:
 * a batch is checked whole before anything is queued (the first bad op
 * decides), a slot is held from SUBMIT until POLL or WAIT takes the op's
 * completion, ops complete in sequence order. How many completions are ready
 * at a POLL is up to the device's worker: the model allows every count the
 * known-completed bound and the last submitted op allow, checks the
 * completions taken, and follows the answer.
 */
import type { GpuHostCore } from "./gpu_host_core.ts";
import { errno, type Expect, okFields, SKIP } from "./gpu_host_expect.ts";
import { countCandidates, preamble } from "./gpu_host_mem_ops.ts";
import {
  GpuHostModelUsageError,
  KERN_ADDR,
  modNum,
  modOr,
  onlyMods,
  ptrKind,
} from "./gpu_host_mods.ts";
import { type Answer, HOST_BUF_BYTES, type HostOp, type SubOp } from "./gpu_host_ops.ts";
import { type FileState, type HObj, type HostSide, OPCODE, type QOp } from "./gpu_host_state.ts";

type Op<K extends HostOp["op"]> = Extract<HostOp, { op: K }>;

/** Longest WAIT (uapi CNUASGPU_WAIT_MAX_TIMEOUT_MS). */
export const WAIT_MAX_TIMEOUT_MS = 60000;

/** A WAIT shorter than this may time out; a longer one must not (the ops are short). */
export const WAIT_SURE_MS = 1000;

const U64 = 1n << 64n;
/** Where `host=wrap` puts an op's host address. */
export const WRAP_HOST = U64 - 4096n;

const EFAULT = -14;

type Resolved = ReturnType<GpuHostCore["resolve"]>;

/** A checked op, ready to queue. */
interface Draft {
  opcode: number;
  obj: Exclude<HObj, { kind: "pin" }>;
  off: number;
  len: number;
  host: HostSide;
  value: number;
  ud: bigint;
}

/** The checks SUBMIT makes of one op, in order: an errno name, or the op to queue. */
function checkOp(
  m: GpuHostCore,
  s: SubOp | null,
  h: Resolved | undefined,
  p: Resolved | undefined,
): string | Draft {
  if (!s) return "EINVAL"; // past the ops given: the runner's array is zero there (opcode 0)
  onlyMods("submit op", s.mods, ["opcode", "flags", "value", "reserved", "pin_handle", "host"]);
  const pinnedKind = s.k === "pto" || s.k === "pfrom";
  const dflt = { to: 1, pto: 1, from: 2, pfrom: 2, fill: 3 }[s.k];
  const opcode = modOr(s.mods, "opcode", BigInt(dflt));
  const flags = modOr(s.mods, "flags", pinnedKind ? 1n : 0n);
  const pinned = (flags & 1n) !== 0n;
  const pinRef = pinnedKind && p && !p.skip ? p : undefined;
  const pinHandleSet = modNum(s.mods, "pin_handle") !== undefined
    ? modNum(s.mods, "pin_handle") !== 0n
    : pinnedKind && (s as { p: string }).p !== "0";
  const value = modNum(s.mods, "value") ?? BigInt(s.k === "fill" ? s.value : 0);
  const hostMod = s.mods?.host;
  let host: bigint | "hbuf";
  if (s.k === "fill") host = modOr(s.mods, "host", 0n);
  else if (pinnedKind) host = (s as { poff: bigint }).poff;
  else if (hostMod === "wrap") host = WRAP_HOST;
  else if (hostMod === "kern") host = KERN_ADDR;
  else if (hostMod !== undefined) {
    host = ptrKind(s.mods, "host") === "fault" ? 1n : modOr(s.mods, "host", 0n);
  } else host = "hbuf";
  if (pinned && !m.cfg.pinned) return "EOPNOTSUPP";
  if (opcode < 1n || opcode > 3n || (flags & ~1n) !== 0n || s.len === 0n) return "EINVAL";
  if (modOr(s.mods, "reserved", 0n) !== 0n) return "EINVAL";
  if (opcode === BigInt(OPCODE.FILL)) {
    if (value > 255n || host !== 0n || pinHandleSet || flags !== 0n) return "EINVAL";
  } else {
    if (value !== 0n || (pinHandleSet && !pinned)) return "EINVAL";
    if (!pinned && host !== "hbuf" && host + s.len > U64) return "EINVAL";
    if (!pinned && host === "hbuf" && s.len >= 1n << 62n) {
      throw new GpuHostModelUsageError("a host-buffer op this long may wrap: the model cannot say");
    }
  }
  const obj = h && !h.skip ? h.obj : undefined;
  if (!obj || obj.kind === "pin") return "ENOENT";
  const pinObj = pinRef?.obj;
  if (pinned && opcode !== BigInt(OPCODE.FILL) && pinObj?.kind !== "pin") return "ENOENT";
  if (s.off + s.len > BigInt(obj.alloc.size)) return "EINVAL";
  let side: HostSide = { kind: "none" };
  if (opcode !== BigInt(OPCODE.FILL)) {
    if (pinned && pinObj?.kind === "pin") {
      if (BigInt(host === "hbuf" ? 0 : host) + s.len > BigInt(pinObj.pin.length)) return "EINVAL";
      side = { kind: "pin", pin: pinObj.pin, off: Number(host) };
    } else if (host === "hbuf") {
      const hoff = (s as { hoff: bigint }).hoff;
      if (hoff >= BigInt(HOST_BUF_BYTES)) {
        throw new GpuHostModelUsageError(
          "a host offset past the host buffer lands on unknown memory",
        );
      }
      side = { kind: "hbuf", slot: -1, off: Number(hoff) };
    } else side = { kind: "fault" };
  }
  return {
    opcode: Number(opcode),
    obj,
    off: Number(s.off),
    len: Number(s.len),
    host: side,
    value: Number(value),
    ud: s.ud,
  };
}

/** SUBMIT. */
export function submitExpect(m: GpuHostCore, o: Op<"submit">): Expect {
  onlyMods("submit", o.mods, [
    "arg",
    "ioc_size",
    "size",
    "op_size",
    "count",
    "flags",
    "first_seq",
    "reserved",
    "ops_ptr",
  ]);
  const f = m.file(o.f);
  if (!f) return SKIP;
  const refs = o.ops.map((s) => ({
    h: m.resolve(f, s.h),
    p: s.k === "pto" || s.k === "pfrom" ? m.resolve(f, s.p) : undefined,
  }));
  if (refs.some((r) => r.h.skip || r.p?.skip)) return SKIP;
  const pre = preamble(o.mods, 40, m.cfg.async);
  if (pre) return pre;
  const count = modOr(o.mods, "count", BigInt(o.ops.length));
  if (
    modOr(o.mods, "size", 40n) !== 40n || modOr(o.mods, "op_size", 56n) !== 56n || count === 0n ||
    count > BigInt(m.cfg.batchMax) || modOr(o.mods, "flags", 0n) !== 0n ||
    modOr(o.mods, "first_seq", 0n) !== 0n || modOr(o.mods, "reserved", 0n) !== 0n
  ) {
    return errno("EINVAL");
  }
  if (ptrKind(o.mods, "ops_ptr") !== "ok") return errno("EFAULT");
  const drafts: Draft[] = [];
  for (let i = 0; i < Number(count); i++) {
    const d = checkOp(m, o.ops[i] ?? null, refs[i]?.h, refs[i]?.p);
    if (typeof d === "string") return errno(d);
    drafts.push(d);
  }
  if (f.submitted - f.reaped + count > BigInt(m.cfg.queueDepth)) return errno("EAGAIN");
  return okFields({ first: String(f.submitted + 1n) }, () => {
    for (const d of drafts) {
      const host = d.host.kind === "hbuf" ? { ...d.host, slot: o.f } : d.host;
      const q: QOp = {
        seq: ++f.submitted,
        file: f,
        opcode: d.opcode,
        alloc: d.obj.alloc,
        dmabuf: d.obj.kind === "import" ? d.obj.dmabuf : undefined,
        off: d.off,
        len: d.len,
        host,
        value: d.value,
        ud: d.ud,
        status: host.kind === "fault" || (host.kind === "hbuf" && host.off + d.len > HOST_BUF_BYTES)
          ? EFAULT
          : 0,
        tainted: false,
        applied: false,
      };
      q.alloc.opHolds++;
      if (q.dmabuf) q.dmabuf.viaImport++;
      if (q.host.kind === "pin") q.host.pin.opHolds++;
      m.raceCheck(q);
      f.queue.push(q);
    }
  });
}

const REAP_OUT = ["count", "submitted", "completed", "reaped"];

/** POLL. */
export function pollExpect(m: GpuHostCore, o: Op<"poll">): Expect {
  const keys = ["size", "comp_size", "comps_ptr", "timeout_ms", "seq", "flags", ...REAP_OUT];
  onlyMods("poll", o.mods, ["arg", "ioc_size", ...keys]);
  const f = m.file(o.f);
  if (!f) return SKIP;
  const pre = preamble(o.mods, 64, m.cfg.async);
  if (pre) return pre;
  if (
    badReap(m, o.mods, o.max) || modOr(o.mods, "seq", 0n) !== 0n ||
    modOr(o.mods, "timeout_ms", 0n) !== 0n
  ) {
    return errno("EINVAL");
  }
  return reapExpect(m, f, o.max, null, 0, ptrKind(o.mods, "comps_ptr") !== "ok");
}

/** WAIT. */
export function waitExpect(m: GpuHostCore, o: Op<"wait">): Expect {
  const keys = ["size", "comp_size", "comps_ptr", "flags", ...REAP_OUT];
  onlyMods("wait", o.mods, ["arg", "ioc_size", ...keys]);
  const f = m.file(o.f);
  if (!f) return SKIP;
  const pre = preamble(o.mods, 64, m.cfg.async);
  if (pre) return pre;
  const seq = o.seq === "last"
    ? f.submitted
    : o.seq.startsWith("last+")
    ? f.submitted + BigInt(o.seq.slice(5))
    : BigInt(o.seq);
  if (
    badReap(m, o.mods, o.max) || seq === 0n || seq > f.submitted ||
    o.timeoutMs > WAIT_MAX_TIMEOUT_MS
  ) {
    return errno("EINVAL");
  }
  return reapExpect(m, f, o.max, seq, o.timeoutMs, ptrKind(o.mods, "comps_ptr") !== "ok");
}

/** The struct checks POLL and WAIT share. */
function badReap(m: GpuHostCore, mods: Record<string, string> | undefined, max: number): boolean {
  return modOr(mods, "size", 64n) !== 64n || modOr(mods, "comp_size", 24n) !== 24n ||
    max > m.cfg.queueDepth || modOr(mods, "flags", 0n) !== 0n ||
    REAP_OUT.some((k) => modOr(mods, k, 0n) !== 0n);
}

function bmin(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}

function bmax(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

/** Taking completions: how many may be ready, which they are, and following the answer. */
function reapExpect(
  m: GpuHostCore,
  f: FileState,
  max: number,
  waitSeq: bigint | null,
  timeoutMs: number,
  badPtr: boolean,
): Expect {
  const lowerNow = waitSeq === null ? f.lower : bmax(f.lower, waitSeq);
  const maxB = BigInt(max);
  const lo = bmin(maxB, lowerNow - f.reaped);
  const hi = bmin(maxB, f.submitted - f.reaped);
  const mayTimeOut = waitSeq !== null && f.lower < waitSeq && timeoutMs < WAIT_SURE_MS;
  const line = (count: bigint, completed: bigint) => {
    const comps = f.queue.slice(0, Number(count)).map((q) =>
      `${q.seq}:${q.status}:${q.opcode}:${q.ud}`
    );
    return `ok count=${count} submitted=${f.submitted} completed=${completed} ` +
      `reaped=${f.reaped + count} c=${comps.join(",")}`;
  };
  const okCheck = (a: Answer): string | null => {
    const want = () =>
      `want ${lo === hi ? "" : `${lo}..`}${line(hi, f.submitted)} (completed >= ${lowerNow})`;
    if (a.status !== "ok") return want();
    const count = BigInt(a.kv.get("count") ?? "-1");
    const completed = BigInt(a.kv.get("completed") ?? "-1");
    if (count < lo || count > hi || (badPtr && count !== 0n)) return want();
    if (completed < bmax(lowerNow, f.reaped + count) || completed > f.submitted) return want();
    return a.line.trim() === line(count, completed) ? null : want();
  };
  const okThen = (a: Answer) => {
    const count = BigInt(a.kv.get("count") ?? "0");
    m.advance(f, bmax(lowerNow, BigInt(a.kv.get("completed") ?? "0")));
    f.reaped += count;
    f.queue.splice(0, Number(count));
  };
  const efaultOk = badPtr && max > 0 && f.submitted > f.reaped;
  const okZeroOk = !badPtr || lo === 0n;
  return {
    nominal: badPtr && efaultOk ? "err EFAULT" : line(badPtr ? 0n : hi, f.submitted),
    check(a) {
      if (a.status === "err" && a.errno === "ETIMEDOUT") {
        return mayTimeOut ? null : `want ${line(hi, f.submitted)}, not ETIMEDOUT`;
      }
      if (a.status === "err" && a.errno === "EFAULT") {
        return efaultOk ? null : `want ${line(0n, f.submitted)}, not EFAULT`;
      }
      if (a.status === "ok" && !okZeroOk) return "want err EFAULT (a completion was ready)";
      return okCheck(a);
    },
    then(a) {
      if (a.status === "ok") okThen(a);
      else if (a.errno === "EFAULT") m.advance(f, bmax(lowerNow, f.reaped + 1n));
    },
  };
}

/** poll() on the fd, timeout 0. */
export function eventsExpect(m: GpuHostCore, o: Op<"events">): Expect {
  const f = m.file(o.f);
  if (!f) return SKIP;
  if (!m.cfg.async) return okFields({ in: "0", out: "0", err: "1" });
  const out = f.submitted - f.reaped < BigInt(m.cfg.queueDepth) ? "1" : "0";
  const ready = f.lower > f.reaped, none = f.submitted === f.reaped;
  return okFields({ out, err: "0" }, (a) => {
    if (a.kv.get("in") === "1") m.advance(f, f.reaped + 1n);
  }, {
    nominal: { in: none ? "0" : "1" },
    check: (a) => {
      const v = a.kv.get("in");
      if (ready) return v === "1" ? null : "want in=1 (a completion is ready)";
      if (none) return v === "0" ? null : "want in=0 (nothing submitted is untaken)";
      return v === "0" || v === "1" ? null : "want in=0 or in=1";
    },
  });
}

/** The node's sysfs counters, in the order the runner reads them. */
const STAT_FIELDS = ["devmem_used", "allocations", "pinned_used", "pins"] as const;

/**
 * The node's sysfs counters. The runner reads them one after another, so
 * ops may complete between two reads: each counter must match a candidate
 * state no earlier than the previous counter's.
 */
export function statExpect(m: GpuHostCore, o: Op<"stat">): Expect {
  const node = m.nodes[o.node];
  if (!node) {
    throw new GpuHostModelUsageError(`stat of node ${o.node}: the load has ${m.nodes.length}`);
  }
  const cands = countCandidates(m, node);
  if (!cands) m.unchecked++;
  const all = cands ?? [];
  const field = (v: (typeof all)[number]["value"], k: (typeof STAT_FIELDS)[number]) =>
    ({
      devmem_used: v.devmemUsed,
      allocations: v.allocations,
      pinned_used: v.pinnedUsed,
      pins: v.pins,
    })[k];
  const order = (a: Answer) =>
    m.inOrder(all, STAT_FIELDS.map((k) => (v) => String(field(v, k)) === a.kv.get(k)));
  const dmabufs = node.allocs.flatMap((a) => a.dmabufs);
  const expLo = dmabufs.filter((d) => d.fds > 0 || d.imports > 0).length;
  const expHi = expLo +
    dmabufs.filter((d) => d.fds === 0 && d.imports === 0 && d.viaImport > 0).length;
  const files = m.live.filter((f) => f.node === node);
  const inflightHi = files.reduce((s, f) => s + Number(f.submitted - f.lower), 0);
  const last = all[all.length - 1];
  const show = (c: (typeof all)[number]) =>
    STAT_FIELDS.map((k) => `${k}=${field(c.value, k)}`).join(" ");
  return {
    nominal: `ok ${
      last ? show(last) : STAT_FIELDS.map((k) => `${k}=0`).join(" ")
    } exports=${expLo} inflight=0`,
    check(a) {
      if (a.status !== "ok") return "want ok with the counters";
      const r = cands ? order(a) : { least: [] };
      if ("failed" in r) {
        const k = STAT_FIELDS[r.failed];
        return `want ${k} ${[...new Set(all.map((c) => field(c.value, k)))].join(" or ")} ` +
          `(states: ${[...new Set(all.map(show))].join(" | ")})`;
      }
      const ex = Number(a.kv.get("exports")), inf = Number(a.kv.get("inflight"));
      if (!(ex >= expLo && ex <= expHi)) return `want exports ${expLo}..${expHi}`;
      if (!(inf >= 0 && inf <= inflightHi)) return `want inflight 0..${inflightHi}`;
      return a.kv.size === 6 ? null : "want exactly the six counters";
    },
    then(a) {
      const r = cands ? order(a) : null;
      if (r && "least" in r) m.settleTo(r.least);
    },
  };
}

/** The commands the driver knows (LINK_SEND and LINK_RECV are ENOTTY on this module). */
export const KNOWN_CMDS: Record<string, number> = {
  INFO: ioc(2, 0x00, 56),
  ALLOC: ioc(3, 0x01, 32),
  FREE: ioc(1, 0x02, 8),
  COPY_TO_DEV: ioc(1, 0x03, 32),
  COPY_FROM_DEV: ioc(1, 0x04, 32),
  EXPORT_DMABUF: ioc(3, 0x07, 16),
  CAPS: ioc(3, 0x08, 64),
  PIN: ioc(3, 0x10, 32),
  UNPIN: ioc(1, 0x11, 16),
  IMPORT_DMABUF: ioc(3, 0x12, 32),
  SUBMIT: ioc(3, 0x13, 40),
  POLL: ioc(3, 0x14, 64),
  WAIT: ioc(3, 0x15, 64),
};

/** `_IOC(dir, 0xC7, nr, size)`. */
export function ioc(dir: number, nr: number, size: number, type = 0xc7): number {
  return ((dir << 30) | (size << 16) | (type << 8) | nr) >>> 0;
}

/** A command the driver does not know. */
export function badcmdExpect(m: GpuHostCore, o: Op<"badcmd">): Expect {
  if (Object.values(KNOWN_CMDS).includes(o.cmd >>> 0)) {
    throw new GpuHostModelUsageError(
      `badcmd 0x${o.cmd.toString(16)} is a command the driver knows`,
    );
  }
  return m.file(o.f) ? errno("ENOTTY") : SKIP;
}
