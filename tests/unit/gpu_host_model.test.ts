/**
 * The cnuasgpu_host reference model on its own, from the contract
 * (docs/devices.md, uapi/cnuasgpu_host.h): the bump allocator's offsets, the
 * lifetime of reservations, the pinned ceiling, queue slots and EAGAIN, the
 * errno check order, the ranges it allows where completion timing decides,
 * and the byte pattern and digest the op runner shares with it.
 */
import assert from "node:assert/strict";
import {
  GPU_HOST_DEFAULTS,
  type GpuHostConfig,
  GpuHostModel,
} from "../../harness/models/gpu_host.ts";
import { fnv1a64, patternBytes } from "../../harness/models/gpu_host_bytes.ts";
import { type HostOp, parseAnswer } from "../../harness/models/gpu_host_ops.ts";

/** Step `m` through [op, answer] pairs, failing on the first answer it refuses. */
function run(m: GpuHostModel, steps: [HostOp, string][]): void {
  for (const [i, [op, line]] of steps.entries()) {
    const bad = m.step(op, line);
    assert.equal(bad, null, `step ${i} ${JSON.stringify(op, big)} => ${line}: ${bad}`);
  }
}

function big(_k: string, v: unknown): unknown {
  return typeof v === "bigint" ? v.toString() : v;
}

/** What the model says it wants instead of `line` (null: allowed). */
function refuse(m: GpuHostModel, op: HostOp, line: string): string | null {
  return m.step(op, line);
}

const open0: [HostOp, string] = [{ op: "open", f: 0, node: 0 }, "ok"];
type Alloc = Extract<HostOp, { op: "alloc" }>;
const alloc = (size: number, out: number, align = 0, mods?: Alloc["mods"]): Alloc => ({
  op: "alloc",
  f: 0,
  size: BigInt(size),
  align: BigInt(align),
  out,
  mods,
});

function model(cfg: Partial<GpuHostConfig> = {}): GpuHostModel {
  const m = new GpuHostModel({ ...GPU_HOST_DEFAULTS, ...cfg });
  run(m, [open0]);
  return m;
}

Deno.test("pattern and digest: FNV-1a 64 vectors, and a pattern that starts at seed ^ 0xA5A5A5A5", () => {
  assert.equal(fnv1a64(new Uint8Array()), "cbf29ce484222325");
  assert.equal(fnv1a64(new TextEncoder().encode("a")), "af63dc4c8601ec8c");
  assert.equal(fnv1a64(new TextEncoder().encode("foobar")), "85944171f73967e8");
  // state 0xA5A5A5A5 ^ 0xA5A5A5A5 = 0 starts at 1: xorshift32(1) = 0x42021
  assert.equal(patternBytes(0xa5a5a5a5, 1)[0], 0x21);
  assert.deepEqual(patternBytes(7, 64), patternBytes(7, 64));
  assert.notDeepEqual(patternBytes(7, 64), patternBytes(8, 64));
});

Deno.test("bump allocator: page-rounded sizes, alignment, new ones after the last, space back from the top", () => {
  const m = model({ devmemMb: 1 });
  run(m, [
    [alloc(5000, 1), "ok handle=1 offset=0 size=8192"],
    [alloc(4096, 2, 65536), "ok handle=2 offset=65536 size=4096"],
    [alloc(1, 3), "ok handle=3 offset=69632 size=4096"],
    // a hole in the middle is not reused
    [{ op: "free", f: 0, h: "$2" }, "ok"],
    [alloc(4096, 4), "ok handle=2 offset=73728 size=4096"],
    // freeing the top two gives their space back, down to the end of $1
    [{ op: "free", f: 0, h: "$4" }, "ok"],
    [{ op: "free", f: 0, h: "$3" }, "ok"],
    [alloc(4096, 5), "ok handle=7 offset=8192 size=4096"],
  ]);
  assert.match(
    refuse(m, alloc(4096, 6), "ok handle=9 offset=4096 size=4096") ?? "",
    /offset=12288/,
  );
  // the arena's end: 1 MiB - 12 KiB are left
  assert.match(
    refuse(m, alloc((1 << 20) - 12288 + 1, 6), "ok handle=9 offset=12288 size=1036288") ?? "",
    /ENOMEM/,
  );
  run(m, [[alloc((1 << 20) - 12288, 6), "ok handle=9 offset=12288 size=1036288"]]);
  run(m, [[alloc(1, 7), "err ENOMEM"]]);
  // alignment past the arena has no room either; a bad alignment is EINVAL before that
  run(m, [[alloc(1, 8, 1 << 30), "err ENOMEM"], [alloc(1, 8, 4097), "err EINVAL"]]);
  run(m, [[alloc(0, 8), "err EINVAL"], [alloc(1, 8, 0, { flags: "1" }), "err EINVAL"]]);
});

Deno.test("handles: never 0, never one that is live in the file; another file has its own", () => {
  const m = model();
  run(m, [[alloc(1, 1), "ok handle=5 offset=0 size=4096"]]);
  assert.match(refuse(m, alloc(1, 2), "ok handle=0 offset=4096 size=4096") ?? "", /handle 0/);
  assert.match(refuse(m, alloc(1, 2), "ok handle=5 offset=4096 size=4096") ?? "", /already live/);
  run(m, [
    [{ op: "open", f: 1, node: 0 }, "ok"],
    [{ op: "alloc", f: 1, size: 1n, align: 0n, out: 2 }, "ok handle=5 offset=4096 size=4096"],
    // $2's number is 5 in file 1; in file 0 number 5 is $1: FREE there frees $1
    [{ op: "free", f: 0, h: "$2" }, "ok"],
    [{ op: "free", f: 0, h: "$1" }, "err ENOENT"],
    // one namespace: a pin's handle is not an allocation's
    [{ op: "pin", f: 1, npages: 1, out: 3 }, "ok handle=6"],
    [{ op: "free", f: 1, h: "$3" }, "err ENOENT"],
    [{ op: "unpin", f: 1, h: "$2" }, "err ENOENT"],
    [{ op: "unpin", f: 1, h: "$3" }, "ok"],
  ]);
});

Deno.test("lifetime: an exported or mapped allocation stays reserved after FREE and close", () => {
  const m = model();
  const used = (n: number): [HostOp, string] => [
    { op: "stat", node: 0 },
    `ok devmem_used=${n} allocations=${n ? 1 : 0} exports=${
      n ? 1 : 0
    } pinned_used=0 pins=0 inflight=0`,
  ];
  run(m, [
    [alloc(8192, 1), "ok handle=1 offset=0 size=8192"],
    [{ op: "export", f: 0, h: "$1", out: 2 }, "ok cloexec=0"],
    [{ op: "free", f: 0, h: "$1" }, "ok"],
    used(8192),
    [{ op: "open", f: 1, node: 0 }, "ok"],
    [{ op: "import", f: 1, fd: "#2", out: 3 }, "ok handle=1 offset=0 length=8192"],
    [{ op: "closefd", fd: 2 }, "ok"],
    [{ op: "copy_to", f: 1, h: "$3", off: 100n, len: 50n, seed: 9 }, "ok"],
    [{ op: "close", f: 0 }, "ok"],
    used(8192),
    [{ op: "free", f: 1, h: "$3" }, "ok"],
    [
      { op: "stat", node: 0 },
      "ok devmem_used=0 allocations=0 exports=0 pinned_used=0 pins=0 inflight=0",
    ],
  ]);
  // A mapping holds its allocation and the file it was made through.
  run(m, [
    [{ op: "alloc", f: 1, size: 4096n, align: 0n, out: 4 }, "ok handle=1 offset=0 size=4096"],
    [{ op: "alloc", f: 1, size: 4096n, align: 0n, out: 5 }, "ok handle=2 offset=4096 size=4096"],
    [{ op: "mmap", f: 1, h: "$5", pgoff: 0, npages: 1, out: 6 }, "ok"],
    [{ op: "close", f: 1 }, "ok"],
    [
      { op: "stat", node: 0 },
      "ok devmem_used=8192 allocations=2 exports=0 pinned_used=0 pins=0 inflight=0",
    ],
    [{ op: "munmap", m: 6 }, "ok"],
    [
      { op: "stat", node: 0 },
      "ok devmem_used=0 allocations=0 exports=0 pinned_used=0 pins=0 inflight=0",
    ],
  ]);
});

Deno.test("contents: copies, mappings and fills agree; a new allocation reads as zeros", () => {
  const m = model();
  const d = (bytes: Uint8Array) => `ok digest=${fnv1a64(bytes)}`;
  const want = new Uint8Array(8192);
  want.set(patternBytes(3, 100), 4000);
  run(m, [
    [alloc(8192, 1), "ok handle=1 offset=0 size=8192"],
    [{ op: "copy_from", f: 0, h: "$1", off: 0n, len: 8192n }, d(new Uint8Array(8192))],
    [{ op: "copy_to", f: 0, h: "$1", off: 4000n, len: 100n, seed: 3 }, "ok"],
    [{ op: "mmap", f: 0, h: "$1", pgoff: 0, npages: 2, out: 2 }, "ok"],
    [{ op: "mread", m: 2, off: 0, len: 8192 }, d(want)],
    [{
      op: "submit",
      f: 0,
      ops: [{ k: "fill", h: "$1", off: 0n, len: 10n, value: 0xab, ud: 77n }],
    }, "ok first=1"],
    [
      { op: "wait", f: 0, seq: "last", max: 64, timeoutMs: 10000 },
      "ok count=1 submitted=1 completed=1 reaped=1 c=1:0:3:77",
    ],
  ]);
  want.fill(0xab, 0, 10);
  run(m, [[{ op: "copy_from", f: 0, h: "$1", off: 0n, len: 8192n }, d(want)]]);
  assert.match(
    refuse(m, { op: "copy_from", f: 0, h: "$1", off: 0n, len: 10n }, d(new Uint8Array(10))) ?? "",
    /want digest/,
  );
});

Deno.test("pinned ceiling: the node's pinned bytes may reach it, not pass it (ENOMEM pins nothing)", () => {
  const m = model({ pinnedMaxMb: 1 });
  run(m, [
    [{ op: "pin", f: 0, npages: 200, out: 1 }, "ok handle=1"],
    [{ op: "open", f: 1, node: 0 }, "ok"],
    [{ op: "pin", f: 1, npages: 57, out: 2 }, "err ENOMEM"],
    [{ op: "pinbad", f: 1, kind: "prot", npages: 57 }, "err ENOMEM"],
    [{ op: "pinbad", f: 1, kind: "prot", npages: 56 }, "err EFAULT"],
    [{ op: "pinbad", f: 1, kind: "wrap", npages: 57 }, "err EINVAL"],
    [{ op: "pin", f: 1, npages: 56, out: 3 }, "ok handle=1"],
    [{ op: "close", f: 0 }, "ok"],
    [{ op: "pin", f: 1, npages: 200, out: 4 }, "ok handle=2"],
  ]);
  assert.match(refuse(m, { op: "pin", f: 1, npages: 1, out: 5 }, "ok handle=3") ?? "", /ENOMEM/);
});

Deno.test("queue: slots held until the completion is taken, EAGAIN when a batch does not fit, batch_max", () => {
  const m = model({ queueDepth: 4, batchMax: 3 });
  const fill = (n: number): HostOp => ({
    op: "submit",
    f: 0,
    ops: Array.from({ length: n }, (_, i) => ({
      k: "fill" as const,
      h: "$1" as const,
      off: 0n,
      len: 1n,
      value: i,
      ud: BigInt(i),
    })),
  });
  run(m, [
    [alloc(4096, 1), "ok handle=1 offset=0 size=4096"],
    [fill(3), "ok first=1"],
    [fill(2), "err EAGAIN"],
    [fill(4), "err EINVAL"],
    [fill(1), "ok first=4"],
    // all four done, but only two taken: two slots free
    [{ op: "poll", f: 0, max: 2 }, "ok count=2 submitted=4 completed=4 reaped=2 c=1:0:3:0,2:0:3:1"],
    [{ op: "events", f: 0 }, "ok in=1 out=1 err=0"],
    [fill(3), "err EAGAIN"],
    [fill(2), "ok first=5"],
    [{ op: "events", f: 0 }, "ok in=1 out=0 err=0"],
  ]);
});

Deno.test("POLL: any count the known-completed bound and the last submitted allow; the model follows it", () => {
  const m = model();
  const sub: HostOp = {
    op: "submit",
    f: 0,
    ops: [0, 1, 2].map((i) => ({
      k: "fill" as const,
      h: "$1" as const,
      off: 0n,
      len: 1n,
      value: i,
      ud: 9n,
    })),
  };
  run(m, [[alloc(1, 1), "ok handle=1 offset=0 size=4096"], [sub, "ok first=1"]]);
  const poll: HostOp = { op: "poll", f: 0, max: 8 };
  // two ready, reported completed 3 (the third finished meanwhile): allowed
  assert.equal(
    refuse(new GpuHostModel(GPU_HOST_DEFAULTS), { op: "stat", node: 0 }, "x"),
    "want ok with the counters",
  );
  run(m, [[poll, "ok count=0 submitted=3 completed=0 reaped=0 c="]]);
  run(m, [[poll, "ok count=1 submitted=3 completed=1 reaped=1 c=1:0:3:9"]]);
  // completed below what is known (1) is not allowed, nor taking past completed
  assert.notEqual(refuse(m, poll, "ok count=0 submitted=3 completed=0 reaped=1 c="), null);
  assert.notEqual(
    refuse(m, poll, "ok count=2 submitted=3 completed=2 reaped=3 c=2:0:3:9,3:0:3:9"),
    null,
  );
  run(m, [[poll, "ok count=1 submitted=3 completed=3 reaped=2 c=2:0:3:9"]]);
  // now op 3 is known complete: a poll must take it
  assert.notEqual(refuse(m, poll, "ok count=0 submitted=3 completed=3 reaped=2 c="), null);
  run(m, [[poll, "ok count=1 submitted=3 completed=3 reaped=3 c=3:0:3:9"]]);
});

Deno.test("FREE while an op is queued: the allocation stays until the op completes (either answer, then followed)", () => {
  const m = model();
  run(m, [
    [alloc(4096, 1), "ok handle=1 offset=0 size=4096"],
    [alloc(4096, 2), "ok handle=2 offset=4096 size=4096"],
    [
      { op: "submit", f: 0, ops: [{ k: "fill", h: "$2", off: 0n, len: 4096n, value: 1, ud: 0n }] },
      "ok first=1",
    ],
    [{ op: "free", f: 0, h: "$2" }, "ok"],
  ]);
  const next = alloc(4096, 3);
  // op not done yet: after $2; done: where $2 was
  assert.equal(
    m.expect(next).check({
      status: "ok",
      errno: "",
      kv: new Map([["handle", "2"], ["offset", "8192"], ["size", "4096"]]),
      line: "",
    }),
    null,
  );
  assert.notEqual(
    m.expect(next).check({
      status: "ok",
      errno: "",
      kv: new Map([["handle", "2"], ["offset", "12288"], ["size", "4096"]]),
      line: "",
    }),
    null,
  );
  run(m, [[next, "ok handle=2 offset=4096 size=4096"]]);
  // that answer proved the op ran, not that its completion is posted (docs/devices.md,
  // "Asynchronous queues"): a poll may still find none, but the memory is not held again
  const poll: HostOp = { op: "poll", f: 0, max: 1 };
  assert.equal(refuse(m, poll, "ok count=0 submitted=1 completed=0 reaped=0 c="), null);
  assert.notEqual(
    refuse(
      m,
      { op: "stat", node: 0 },
      "ok devmem_used=12288 allocations=3 exports=0 pinned_used=0 pins=0 inflight=0",
    ),
    null,
  );
  run(m, [[poll, "ok count=1 submitted=1 completed=1 reaped=1 c=1:0:3:0"]]);
});

Deno.test("an op's bytes seen prove the ops before it completed, not its own completion", () => {
  const m = model();
  const fill = (value: number, off: bigint) => ({
    k: "fill" as const,
    h: "$1" as const,
    off,
    len: 16n,
    value,
    ud: 5n,
  });
  run(m, [
    [alloc(4096, 1), "ok handle=1 offset=0 size=4096"],
    [{ op: "submit", f: 0, ops: [fill(1, 0n), fill(2, 16n), fill(3, 32n)] }, "ok first=1"],
  ]);
  // op 2's bytes are there (op 3's not): op 1 completed, op 2 ran, its completion may lag
  const bytes = new Uint8Array(48);
  bytes.fill(1, 0, 16);
  bytes.fill(2, 16, 32);
  run(m, [[{ op: "copy_from", f: 0, h: "$1", off: 0n, len: 48n }, `ok digest=${fnv1a64(bytes)}`]]);
  const poll: HostOp = { op: "poll", f: 0, max: 8 };
  assert.notEqual(refuse(m, poll, "ok count=0 submitted=3 completed=0 reaped=0 c="), null);
  assert.equal(refuse(m, poll, "ok count=1 submitted=3 completed=1 reaped=1 c=1:0:3:5"), null);
  run(m, [[poll, "ok count=1 submitted=3 completed=2 reaped=2 c=2:0:3:5"]]);
});

Deno.test("errno order: size bits, feature, argument, own fields, handles, ranges, resources", () => {
  const m = model({ pinned: false, queueDepth: 2, batchMax: 2 });
  const submit = (ops: HostOp & { op: "submit" }) => ops;
  run(m, [
    [alloc(0, 1, 0, { ioc_size: "24", arg: "null" }), "err ENOTTY"],
    [{ op: "pin", f: 0, npages: 0, out: 1, mods: { arg: "null" } }, "err EOPNOTSUPP"],
    [{ op: "free", f: 0, h: "bad", mods: { reserved: "1", arg: "null" } }, "err EFAULT"],
    [{ op: "free", f: 0, h: "bad", mods: { reserved: "1" } }, "err EINVAL"],
    [{ op: "copy_to", f: 0, h: "bad", off: 1n << 40n, len: 1n, seed: 0 }, "err ENOENT"],
    [alloc(4096, 2), "ok handle=1 offset=0 size=4096"],
    [
      { op: "copy_to", f: 0, h: "$2", off: 4096n, len: 1n, seed: 0, mods: { user_ptr: "bad" } },
      "err EINVAL",
    ],
    [
      { op: "copy_to", f: 0, h: "$2", off: 4095n, len: 1n, seed: 0, mods: { user_ptr: "bad" } },
      "err EFAULT",
    ],
    [
      submit({
        op: "submit",
        f: 0,
        ops: [{ k: "fill", h: "$2", off: 0n, len: 1n, value: 1, ud: 0n }, {
          k: "fill",
          h: "$2",
          off: 0n,
          len: 1n,
          value: 1,
          ud: 0n,
        }],
      }),
      "ok first=1",
    ],
    // a bad op decides before the full queue; the first bad op decides
    [
      submit({
        op: "submit",
        f: 0,
        ops: [
          { k: "fill", h: "bad", off: 0n, len: 1n, value: 1, ud: 0n },
          { k: "fill", h: "$2", off: 0n, len: 1n, value: 256, ud: 0n },
        ],
      }),
      "err ENOENT",
    ],
    [
      submit({
        op: "submit",
        f: 0,
        ops: [{ k: "fill", h: "$2", off: 0n, len: 1n, value: 256, ud: 0n }],
      }),
      "err EINVAL",
    ],
    [
      submit({
        op: "submit",
        f: 0,
        ops: [{ k: "pto", h: "bad", off: 0n, len: 1n, p: "bad", poff: 0n, ud: 0n }],
      }),
      "err EOPNOTSUPP",
    ],
    [
      submit({
        op: "submit",
        f: 0,
        ops: [{ k: "fill", h: "$2", off: 4096n, len: 1n, value: 1, ud: 0n }],
      }),
      "err EINVAL",
    ],
    [
      submit({
        op: "submit",
        f: 0,
        ops: [{ k: "fill", h: "$2", off: 0n, len: 1n, value: 1, ud: 0n }],
      }),
      "err EAGAIN",
    ],
  ]);
});

Deno.test("a switched-off feature: no CAPS bit, EOPNOTSUPP for its calls, EPOLLERR for async", () => {
  const m = model({ zerocopy: false, dmabuf: false, async: false });
  run(m, [
    [
      { op: "caps", f: 0 },
      "ok size=64 version=1 kind=2 caps=0x02 devmem_size=67108864 pinned_max=33554432 queue_depth=0 batch_max=0 page_size=4096 reserved=0",
    ],
    [alloc(1, 1), "ok handle=1 offset=0 size=4096"],
    [{ op: "mmap", f: 0, h: "$1", pgoff: 0, npages: 1, out: 2, private: true }, "err EOPNOTSUPP"],
    [{ op: "export", f: 0, h: "bad", out: 3, mods: { flags: "2" } }, "err EOPNOTSUPP"],
    [{ op: "import", f: 0, fd: "badfd", out: 4 }, "err EOPNOTSUPP"],
    [{ op: "poll", f: 0, max: 100000 }, "err EOPNOTSUPP"],
    [{ op: "events", f: 0 }, "ok in=0 out=0 err=1"],
  ]);
});

Deno.test("ioc_size: the struct's own size is the same command; another size is ENOTTY", () => {
  const m = model();
  run(m, [
    [alloc(1, 1), "ok handle=1 offset=0 size=4096"],
    [{ op: "free", f: 0, h: "$1", mods: { ioc_size: "16" } }, "err ENOTTY"],
    [{ op: "free", f: 0, h: "$1", mods: { ioc_size: "8" } }, "ok"],
  ]);
});

Deno.test("stat: counters read one after another may straddle a completion, never go back", () => {
  const m = model();
  run(m, [
    [alloc(4096, 1), "ok handle=1 offset=0 size=4096"],
    [alloc(12288, 2), "ok handle=2 offset=4096 size=12288"],
    [
      { op: "submit", f: 0, ops: [{ k: "fill", h: "$2", off: 0n, len: 1n, value: 1, ud: 0n }] },
      "ok first=1",
    ],
    [{ op: "free", f: 0, h: "$2" }, "ok"],
  ]);
  const stat: HostOp = { op: "stat", node: 0 };
  const line = (used: number, n: number) =>
    `ok devmem_used=${used} allocations=${n} exports=0 pinned_used=0 pins=0 inflight=0`;
  // devmem_used read before the op completed, allocations after: allowed
  assert.equal(m.expect(stat).check(parseAnswer(line(16384, 1))), null);
  // the other way round would have time go backwards
  assert.notEqual(m.expect(stat).check(parseAnswer(line(4096, 2))), null);
  run(m, [[stat, line(16384, 2)]]);
});

Deno.test("a copy that faults at its first user byte changes no device byte (sync and queued)", () => {
  const m = model();
  const pat = patternBytes(77, 8192);
  run(m, [
    [alloc(8192, 1), "ok handle=1 offset=0 size=8192"],
    [{ op: "copy_to", f: 0, h: "$1", off: 0n, len: 8192n, seed: 77 }, "ok"],
    [
      { op: "copy_to", f: 0, h: "$1", off: 6484n, len: 334n, seed: 5, mods: { user_ptr: "null" } },
      "err EFAULT",
    ],
    [{
      op: "submit",
      f: 0,
      ops: [{ k: "to", h: "$1", off: 0n, len: 100n, hoff: 0n, ud: 1n, mods: { host: "bad" } }],
    }, "ok first=1"],
    [
      { op: "wait", f: 0, seq: "last", max: 8, timeoutMs: 10000 },
      "ok count=1 submitted=1 completed=1 reaped=1 c=1:-14:1:1",
    ],
    [{ op: "copy_from", f: 0, h: "$1", off: 0n, len: 8192n }, `ok digest=${fnv1a64(pat)}`],
  ]);
});

Deno.test("close with ops queued: they keep what they name until they are known done (close does not wait)", () => {
  const m = model({ devmemMb: 1 });
  const fill = { k: "fill" as const, h: "$1" as const, off: 0n, len: 4096n, value: 7, ud: 0n };
  run(m, [
    [alloc(1 << 20, 1), "ok handle=1 offset=0 size=1048576"],
    [{ op: "submit", f: 0, ops: [fill, fill] }, "ok first=1"],
    [{ op: "close", f: 0 }, "ok"],
    [{ op: "open", f: 1, node: 0 }, "ok"],
  ]);
  const whole = { op: "alloc" as const, f: 1, size: 1n << 20n, align: 0n, out: 2 };
  // the worker may not have let go of the closed file's ops yet: ENOMEM is allowed
  assert.equal(refuse(m, whole, "err ENOMEM"), null);
  // ... and so is the whole arena once it has; stat may see the ops in flight
  run(m, [
    [
      { op: "stat", node: 0 },
      "ok devmem_used=1048576 allocations=1 exports=0 pinned_used=0 pins=0 inflight=1",
    ],
    [whole, "ok handle=1 offset=0 size=1048576"],
  ]);
  // that answer proved the ops done: the closed file holds nothing now
  assert.notEqual(
    refuse(
      m,
      { op: "stat", node: 0 },
      "ok devmem_used=2097152 allocations=2 exports=0 pinned_used=0 pins=0 inflight=0",
    ),
    null,
  );
  run(m, [[
    { op: "stat", node: 0 },
    "ok devmem_used=1048576 allocations=1 exports=0 pinned_used=0 pins=0 inflight=0",
  ]]);
});
