/**
 * The seeded generator of cnuasgpu_host op sequences. It keeps its own copy
 * of the reference model, stepped on the model's nominal answers, to aim ops
 * at what exists (live handles, mappings, pins, DMA-BUF fds, free queue
 * slots) and at the edges (the arena's end, the pinned ceiling, a full queue,
 * one op past batch_max), and mixes in the malformed: bad sizes, flags,
 * reserved and out fields, garbage handles, bad pointers, unknown commands.
 *
 * Ordering the model cannot see is mostly avoided: before a synchronous
 * access to memory a queued op of some file may still touch, the generator
 * usually waits for that file's last op first (sometimes it does not, so the
 * model's candidate states get exercised too).
 *
 * The same seed and configuration always give the same sequence.
 *
 * @example
 * ```ts
 * const ops = generateHostOps(GPU_HOST_DEFAULTS, 7, 2000);
 * ops.map(formatOp).join("\n"); // the runner's stdin
 * ```
 */
import { GpuHostModel } from "../models/gpu_host.ts";
import type { SparseMem } from "../models/gpu_host_mem.ts";
import {
  FILE_SLOTS,
  type HandleRef,
  HOST_BUF_BYTES,
  type HostOp,
  type Mods,
  type SubOp,
  type WaitSeq,
} from "../models/gpu_host_ops.ts";
import { ioc, KNOWN_CMDS } from "../models/gpu_host_queue_ops.ts";
import type { GpuHostConfig } from "../models/gpu_host_state.ts";
import { prng, randInt, randU64 } from "../prng.ts";

const PAGE = 4096;
/** A WAIT the generator counts on to settle a file (long enough never to time out). */
const SETTLE_MS = 10_000;

/** Weights of the op kinds. */
const WEIGHTS: [string, number][] = [
  ["open", 3],
  ["close", 2],
  ["alloc", 10],
  ["free", 6],
  ["copy", 12],
  ["export", 3],
  ["closefd", 2],
  ["import", 3],
  ["mmap", 3],
  ["munmap", 2],
  ["mapio", 5],
  ["pin", 3],
  ["pinbad", 1],
  ["unpin", 2],
  ["pinio", 4],
  ["hbuf", 3],
  ["submit", 13],
  ["poll", 5],
  ["wait", 6],
  ["events", 2],
  ["stat", 3],
  ["info", 2],
  ["caps", 1],
  ["badcmd", 1],
];

type Live = { sym: number; kind: "alloc" | "import" | "pin"; size: number; mem: SparseMem };

/** The generator. */
export class GpuHostGen {
  /** Its model, stepped on nominal answers. */
  readonly model: GpuHostModel;
  private readonly rng: () => number;
  private nextSym = 1;
  /** Per slot: memory its queued ops may still touch. */
  private busy: Set<SparseMem>[] = Array.from({ length: FILE_SLOTS }, () => new Set());
  private total = WEIGHTS.reduce((s, [, w]) => s + w, 0);

  /** A generator for a load with `cfg`, seeded with `seed`. */
  constructor(readonly cfg: GpuHostConfig, seed: number) {
    this.model = new GpuHostModel(cfg);
    this.rng = prng(seed);
  }

  /** The next op (the model has followed its nominal answer). */
  next(): HostOp {
    const op = this.choose();
    const before = this.model.file("f" in op ? op.f : -1)?.submitted ?? 0n;
    this.model.nominal(op);
    this.track(op, before);
    return op;
  }

  private track(op: HostOp, before: bigint): void {
    if (op.op === "submit") {
      const f = this.model.file(op.f);
      for (const q of f?.queue ?? []) {
        if (q.seq <= before) continue;
        this.busy[op.f].add(q.alloc.mem);
        if (q.host.kind === "pin") this.busy[op.f].add(q.host.pin.buf);
        if (q.host.kind === "hbuf") this.busy[op.f].add(this.model.hbufs[op.f]);
      }
    }
    if (op.op === "close") this.busy[op.f].clear();
    if (op.op === "wait" && op.seq === "last" && op.timeoutMs >= SETTLE_MS && !op.mods) {
      this.busy[op.f].clear();
    }
  }

  private r(n: number): number {
    return randInt(this.rng, 0, n - 1);
  }

  private chance(p: number): boolean {
    return this.rng() / 0x1_0000_0000 < p;
  }

  private pick<T>(xs: readonly T[]): T {
    return xs[this.r(xs.length)];
  }

  private openSlots(): number[] {
    return [...Array(FILE_SLOTS).keys()].filter((f) => this.model.file(f));
  }

  private live(f: number, kinds: Live["kind"][]): Live[] {
    const out: Live[] = [];
    const file = this.model.file(f);
    for (const [sym, s] of this.model.syms) {
      if (!s.live || s.file !== file || !kinds.includes(s.obj.kind)) continue;
      const o = s.obj;
      out.push(
        o.kind === "pin"
          ? { sym, kind: "pin", size: o.pin.length, mem: o.pin.buf }
          : { sym, kind: o.kind, size: o.alloc.size, mem: o.alloc.mem },
      );
    }
    return out;
  }

  /** A file slot whose queued ops may touch `mem`, if any. */
  private busyWith(mem: SparseMem, except = -1): number {
    return this.busy.findIndex((b, f) => f !== except && b.has(mem));
  }

  private settle(f: number, max = this.cfg.queueDepth): HostOp {
    return { op: "wait", f, seq: "last", max, timeoutMs: SETTLE_MS };
  }

  /** `op` unless `mem` may be touched by queued ops: then usually a WAIT that settles them. */
  private guard(mem: SparseMem, write: boolean, op: HostOp, except = -1): HostOp {
    const f = this.busyWith(mem, except);
    if (f < 0 || !this.model.file(f)) return op;
    return this.chance(write ? 0.05 : 0.2) ? op : this.settle(f);
  }

  private href(f: number, kinds: Live["kind"][], pLive = 0.9): { ref: HandleRef; l?: Live } {
    const ls = this.live(f, kinds);
    if (ls.length && this.chance(pLive)) {
      const l = this.pick(ls);
      return { ref: `$${l.sym}`, l };
    }
    const stale = [...this.model.syms.keys()];
    if (stale.length && this.chance(0.5)) return { ref: `$${this.pick(stale)}` };
    return { ref: this.chance(0.8) ? "bad" : "0" };
  }

  private mods(extra: Record<string, string[]>): Mods | undefined {
    if (!this.chance(0.12)) return undefined;
    const keys = ["arg", "ioc_size", ...Object.keys(extra)];
    const k = this.pick(keys);
    if (k === "arg") return { arg: this.pick(["null", "bad"]) };
    if (k === "ioc_size") return { ioc_size: String(this.pick([0, 8, 24, 48, 72, 255])) };
    return { [k]: this.pick(extra[k]) };
  }

  private range(size: number, maxLen = 16384, pBad = 0.06): { off: bigint; len: bigint } {
    if (this.chance(pBad)) {
      return this.pick([
        { off: 0n, len: 0n },
        { off: BigInt(size), len: 1n },
        { off: BigInt(size - 1), len: 2n },
        { off: 0n, len: BigInt(size + 1) },
        { off: 1n << 40n, len: 4096n },
      ]);
    }
    const off = this.r(size);
    const len = 1 + this.r(Math.min(size - off, maxLen));
    return { off: BigInt(off), len: BigInt(len) };
  }

  /** Submits left of a run that fills one file's queue to its depth and one past. */
  private filling = 0;
  private fillSlot = 0;

  private choose(): HostOp {
    if (this.filling > 0 && this.model.file(this.fillSlot)) {
      this.filling--;
      return this.submit(this.fillSlot, true);
    }
    const open = this.openSlots();
    if (open.length < 2 || this.chance(0.01)) {
      const free = [...Array(FILE_SLOTS).keys()].filter((f) => !this.model.file(f));
      if (free.length) {
        return { op: "open", f: this.pick(free), node: this.r(this.cfg.devices) };
      }
    }
    let w = this.r(this.total);
    let kind = WEIGHTS[0][0];
    for (const [k, n] of WEIGHTS) {
      if (w < n) {
        kind = k;
        break;
      }
      w -= n;
    }
    // Most ops want something to act on: usually a file that has it.
    const withAllocs = open.filter((f) => this.live(f, ["alloc", "import"]).length);
    const f = withAllocs.length && this.chance(0.85) ? this.pick(withAllocs) : this.pick(open);
    return this.make(kind, f);
  }

  private make(kind: string, f: number): HostOp {
    const needsAlloc = ["copy", "submit", "mmap", "export"].includes(kind);
    if (needsAlloc && !this.live(f, ["alloc", "import"]).length && this.chance(0.9)) {
      return this.alloc(f);
    }
    switch (kind) {
      case "open":
      case "close":
        return this.openSlots().length > 2 || this.chance(0.3)
          ? { op: "close", f }
          : { op: "info", f };
      case "alloc":
        return this.alloc(f);
      case "free":
        return {
          op: "free",
          f,
          h: this.href(f, ["alloc", "import", "pin"]).ref,
          mods: this.mods({ reserved: ["1"] }),
        };
      case "copy":
        return this.copy(f);
      case "export": {
        const { ref } = this.href(f, ["alloc", "import"]);
        const mods = this.chance(0.2)
          ? { flags: "1" }
          : this.mods({ flags: ["2", "0x80000000"], reserved: ["1"], fd: ["3"] });
        return { op: "export", f, h: ref, out: this.nextSym++, mods };
      }
      case "closefd": {
        const open = [...this.model.fds].filter(([, s]) => s.open).map(([k]) => k);
        return open.length ? { op: "closefd", fd: this.pick(open) } : { op: "stat", node: 0 };
      }
      case "import":
        return this.importOp(f);
      case "mmap":
        return this.mmap(f);
      case "munmap":
      case "mapio":
        return this.mapOp(kind, f);
      case "pin":
        return this.pin(f);
      case "pinbad":
        return this.pinBad(f);
      case "unpin":
        return {
          op: "unpin",
          f,
          h: this.href(f, ["pin", "alloc"]).ref,
          mods: this.mods({ size: ["0", "32"], flags: ["1"], reserved: ["1"] }),
        };
      case "pinio":
        return this.pinIo(f);
      case "hbuf": {
        const off = this.r(HOST_BUF_BYTES - 1);
        const len = 1 + this.r(Math.min(HOST_BUF_BYTES - off, 8192));
        const op: HostOp = this.chance(0.5)
          ? { op: "hwrite", f, off, len, seed: this.rng() }
          : { op: "hread", f, off, len };
        return this.guard(this.model.hbufs[f], op.op === "hwrite", op);
      }
      case "submit":
        return this.submit(f);
      case "poll":
        return { op: "poll", f, max: this.r(this.cfg.queueDepth + 1), mods: this.reapMods(true) };
      case "wait":
        return this.wait(f);
      case "events":
        return { op: "events", f };
      case "stat":
        return { op: "stat", node: this.model.file(f)?.node.idx ?? 0 };
      case "info":
        return { op: "info", f, mods: this.mods({}) };
      case "caps":
        return {
          op: "caps",
          f,
          mods: this.mods({
            size: ["0", "60", "65"],
            version: ["1"],
            reserved4: ["1"],
            page_size: ["4096"],
          }),
        };
      default:
        return this.badcmd(f);
    }
  }

  private alloc(f: number): HostOp {
    const node = this.model.file(f)!.node;
    const out = this.nextSym++;
    let size: bigint;
    const x = this.r(100);
    if (x < 75) size = BigInt((1 + this.r(5)) * PAGE - this.r(PAGE));
    else if (x < 85) size = BigInt(Math.max(PAGE, Math.floor(node.arena / (1 + this.r(4)))));
    else if (x < 92) size = BigInt(node.arena - this.r(3) * PAGE + this.r(2) * PAGE);
    else if (x < 96) size = (1n << 62n) + randU64(this.rng) % (1n << 62n);
    else size = 0n;
    const good = [4096n, 8192n, 65536n, 1n << 20n, 1n << 30n];
    const bad = [3n, 2048n, 4097n, 1n << 31n, 3n << 12n];
    const y = this.r(100);
    const align = y < 80 ? 0n : y < 93 ? this.pick(good) : this.pick(bad);
    return { op: "alloc", f, size, align, out, mods: this.mods({ flags: ["1", "0x100"] }) };
  }

  private copy(f: number): HostOp {
    const { ref, l } = this.href(f, this.chance(0.05) ? ["pin"] : ["alloc", "import"]);
    const { off, len } = this.range(l?.size ?? PAGE);
    const mods = this.mods({ reserved: ["1"], user_ptr: ["null", "bad", "kern"] });
    const op: HostOp = this.chance(0.5)
      ? { op: "copy_to", f, h: ref, off, len, seed: this.rng(), mods }
      : { op: "copy_from", f, h: ref, off, len, mods };
    return l && l.kind !== "pin" ? this.guard(l.mem, op.op === "copy_to", op) : op;
  }

  private importOp(f: number): HostOp {
    const open = [...this.model.fds].filter(([, s]) => s.open).map(([k]) => k);
    const fd = open.length && this.chance(0.85)
      ? `#${this.pick(open)}` as const
      : this.pick(["badfd", "devnull"] as const);
    const mods = this.mods({
      size: ["0", "24"],
      flags: ["1"],
      handle: ["1"],
      offset: ["4096"],
      length: ["1"],
    });
    return { op: "import", f, fd, out: this.nextSym++, mods };
  }

  private mmap(f: number): HostOp {
    const { ref, l } = this.href(f, ["alloc", "import"]);
    const pages = l ? l.size / PAGE : 1;
    let pgoff = this.r(pages), npages = 1 + this.r(pages - pgoff);
    if (this.chance(0.1)) npages = pages - pgoff + 1;
    if (this.chance(0.05)) pgoff = pages;
    return {
      op: "mmap",
      f,
      h: ref,
      pgoff,
      npages,
      out: this.nextSym++,
      private: this.chance(0.05),
    };
  }

  private mapOp(kind: string, _f: number): HostOp {
    const maps = [...this.model.maps].filter(([, s]) => s.live);
    if (!maps.length) return { op: "stat", node: 0 };
    const [m, s] = this.pick(maps);
    if (kind === "munmap") return { op: "munmap", m };
    const off = this.r(s.len);
    const len = 1 + this.r(Math.min(s.len - off, 16384));
    const op: HostOp = this.chance(0.5)
      ? { op: "mwrite", m, off, len, seed: this.rng() }
      : { op: "mread", m, off, len };
    return this.guard(s.alloc.mem, op.op === "mwrite", op);
  }

  private pin(f: number): HostOp {
    const node = this.model.file(f)!.node;
    const used = node.pins.reduce((s, p) => s + p.length, 0);
    const room = Math.max(0, (node.pinnedMax - used) / PAGE);
    let npages = 1 + this.r(8);
    if (this.chance(0.1)) npages = room + 1 + this.r(4);
    else if (this.chance(0.05) && room > 0 && room <= 1024) npages = room;
    const mods = this.mods({ size: ["0", "40"], flags: ["1"], handle: ["7"], reserved: ["1"] });
    return { op: "pin", f, npages, out: this.nextSym++, mods };
  }

  private pinBad(f: number): HostOp {
    const kind = this.pick(["ptr", "len", "zero", "wrap", "prot", "ro", "kern", "map"] as const);
    const maps = [...this.model.maps].filter(([, s]) => s.live).map(([k]) => k);
    const big = this.chance(0.2) ? (this.model.file(f)!.node.pinnedMax / PAGE) + 1 : 0;
    const npages = big || 2 + this.r(4);
    if (kind === "map") {
      return maps.length
        ? { op: "pinbad", f, kind, npages: 1, m: this.pick(maps) }
        : { op: "pinbad", f, kind: "prot", npages };
    }
    return { op: "pinbad", f, kind, npages };
  }

  private pinIo(f: number): HostOp {
    const pins = this.live(f, ["pin"]);
    if (!pins.length) return this.pin(f);
    const p = this.pick(pins);
    const off = this.r(p.size);
    const len = 1 + this.r(Math.min(p.size - off, 16384));
    const op: HostOp = this.chance(0.5)
      ? { op: "pwrite", p: p.sym, off, len, seed: this.rng() }
      : { op: "pread", p: p.sym, off, len };
    return this.guard(p.mem, op.op === "pwrite", op);
  }

  private subOp(f: number, mayBreak: boolean): SubOp {
    const { ref, l } = this.href(f, ["alloc", "import"], mayBreak ? 0.9 : 1);
    const { off, len } = this.range(l?.size ?? PAGE, 65536, mayBreak ? 0.3 : 0);
    const ud = this.chance(0.5) ? BigInt(this.r(1000)) : randU64(this.rng);
    const pins = this.live(f, ["pin"]);
    const k = this.pick(["to", "from", "fill", "pto", "pfrom"] as const);
    let s: SubOp;
    if ((k === "pto" || k === "pfrom") && (pins.length || this.chance(0.1))) {
      const p = pins.length && (!mayBreak || this.chance(0.7)) ? this.pick(pins) : undefined;
      const plen = p?.size ?? PAGE;
      const n = len > BigInt(plen) ? BigInt(1 + this.r(plen)) : len;
      const poff = BigInt(this.r(plen - Number(n) + 1));
      s = {
        k,
        h: ref,
        off,
        len: n,
        p: p ? `$${p.sym}` : this.pick(["bad", "0"] as const),
        poff,
        ud,
      };
    } else if (k === "fill") {
      s = {
        k: "fill",
        h: ref,
        off,
        len,
        value: this.chance(0.97) ? this.r(256) : 256 + this.r(10),
        ud,
      };
    } else {
      const kk = k === "pto" ? "to" : k === "pfrom" ? "from" : k;
      const n = len > BigInt(HOST_BUF_BYTES) ? BigInt(HOST_BUF_BYTES) : len;
      const hoff = BigInt(this.r(HOST_BUF_BYTES - Number(n) + 1));
      s = { k: kk, h: ref, off, len: n, hoff, ud };
    }
    if (mayBreak && this.chance(0.3)) {
      const pinnedOff = !this.cfg.pinned && (s.k === "fill");
      const bad: Mods[] = [
        { opcode: this.pick(["0", "4", "0xff"]) },
        { reserved: "1" },
        ...(pinnedOff ? [] : [{ flags: this.pick(["2", "0x80"]) }]),
        ...(s.k === "to" || s.k === "from"
          ? [{ host: this.pick(["bad", "kern"]) }, { host: "wrap" }, { value: "1" }, {
            pin_handle: "5",
          }]
          : []),
        ...(s.k === "fill" ? [{ host: "4096" }] : []),
      ];
      s.mods = this.pick(bad);
      if (s.mods.host === "wrap" && s.len <= 4096n) s.len = 8192n;
    }
    return s;
  }

  private submit(f: number, fill = false): HostOp {
    const file = this.model.file(f)!;
    const free = this.cfg.queueDepth - Number(file.submitted - file.reaped);
    if (!fill && this.chance(0.05)) {
      this.fillSlot = f;
      this.filling = Math.ceil(free / this.cfg.batchMax) + 1;
    }
    let n = 1 + this.r(Math.min(this.cfg.batchMax, 8));
    if (fill) n = free > 0 ? Math.min(free, this.cfg.batchMax) : 1 + this.r(2);
    else if (this.chance(0.1)) n = this.cfg.batchMax;
    else if (this.chance(0.05)) n = Math.min(free + 1, this.cfg.batchMax + 1);
    // At most one op of a batch is (maybe) malformed, in one batch out of eight.
    const broken = !fill && this.chance(0.125) ? this.r(n) : -1;
    const ops = Array.from({ length: Math.max(1, n) }, (_, i) => this.subOp(f, i === broken));
    // Ops of another file on the same bytes: usually settle that file first.
    for (const s of ops) {
      const sym = s.h.startsWith("$") ? this.model.syms.get(Number(s.h.slice(1))) : undefined;
      const mem = sym && sym.obj.kind !== "pin" ? sym.obj.alloc.mem : undefined;
      if (mem) {
        const g = this.busyWith(mem, f);
        if (g >= 0 && this.model.file(g) && !fill && this.chance(0.9)) return this.settle(g);
      }
    }
    const mods = !fill && this.chance(0.08)
      ? this.pick<Mods>([
        { size: "32" },
        { op_size: "48" },
        { count: "0" },
        { count: String(this.cfg.batchMax + 1) },
        { count: String(ops.length + 1) },
        { flags: "1" },
        { first_seq: "1" },
        { reserved: "1" },
        { ops_ptr: "null" },
        { arg: "null" },
        { ioc_size: "48" },
      ])
      : undefined;
    return { op: "submit", f, ops, mods };
  }

  private reapMods(poll: boolean): Mods | undefined {
    if (!this.chance(0.08)) return undefined;
    return this.pick<Mods>([
      { size: "56" },
      { comp_size: "16" },
      { comps_ptr: "null" },
      { flags: "1" },
      { count: "1" },
      { reaped: "1" },
      ...(poll ? [{ seq: "1" }, { timeout_ms: "5" }] : []),
      { arg: "null" },
    ]);
  }

  private wait(f: number): HostOp {
    const file = this.model.file(f)!;
    const max = this.chance(0.8) ? this.cfg.queueDepth : this.r(this.cfg.queueDepth + 1);
    if (this.chance(0.7) && file.submitted > 0n) return this.settle(f, max);
    const seq = this.pick<WaitSeq>([
      "last",
      "last+1",
      "0",
      `${1 + this.r(Math.max(1, Number(file.submitted)))}`,
    ]);
    const timeoutMs = this.pick([0, 0, 10, SETTLE_MS, 60001]);
    return { op: "wait", f, seq, max, timeoutMs, mods: this.reapMods(false) };
  }

  private badcmd(f: number): HostOp {
    const known = new Set(Object.values(KNOWN_CMDS));
    for (;;) {
      const cmd = this.chance(0.5)
        ? ioc(this.r(4), this.r(0x20), this.pick([0, 8, 16, 24, 32, 40, 56, 64, 72, 128]))
        : this.chance(0.3)
        ? this.pick([ioc(1, 0x05, 24), ioc(3, 0x06, 32)]) // LINK_SEND, LINK_RECV
        : ioc(this.r(4), this.r(256), this.r(256), this.pick([0x41, 0xc6, 0xc8, 0xfe]));
      if (!known.has(cmd)) return { op: "badcmd", f, cmd };
    }
  }
}

/** `count` ops for a load with `cfg` from `seed`. */
export function generateHostOps(cfg: GpuHostConfig, seed: number, count: number): HostOp[] {
  const g = new GpuHostGen(cfg, seed);
  return Array.from({ length: count }, () => g.next());
}
