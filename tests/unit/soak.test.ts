/** The soak's parsers: /proc/meminfo, /proc/slabinfo, /proc/<pid>/status; --minutes. */
import assert from "node:assert/strict";
import {
  counterProblems,
  guestMemoryProblems,
  parseMeminfo,
  parseSlabinfo,
  parseStatusRss,
  runLossSeed,
  slabGrowth,
  SOAK_BOUNDS,
  switchRssGrowth,
} from "../../harness/guest/soak.ts";
import { pingpongLossFrames } from "../../harness/guest/rdma_e2e.ts";
import { minutesFrom } from "../../harness/bench/soak.ts";
import { UsageError } from "../../harness/errors.ts";
import { main } from "../../harness/cli.ts";

const MEMINFO = `MemTotal:         999772 kB
MemFree:          742116 kB
MemAvailable:     801336 kB
Slab:              40260 kB
SReclaimable:      14408 kB
SUnreclaim:        25852 kB
KernelStack:        2144 kB
HugePages_Total:       0
Hugepagesize:       2048 kB
Active(anon):      10240 kB
`;

Deno.test("meminfo: KiB per field, counts without a unit, names with brackets", () => {
  const m = parseMeminfo(MEMINFO);
  assert.equal(m.MemAvailable, 801336);
  assert.equal(m.SUnreclaim, 25852);
  assert.equal(m.HugePages_Total, 0);
  assert.equal(m["Active(anon)"], 10240);
  assert.equal(Object.keys(m).length, 10);
});

const SLABINFO = `slabinfo - version: 2.1
# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> <num_slabs> <sharedavail>
kmalloc-1k           512    528   1024   16    4 : tunables    0    0    0 : slabdata     33     33      0
kmalloc-64          3000   3072     64   64    1 : tunables    0    0    0 : slabdata     48     48      0
skbuff_head_cache    256    272    256   16    1 : tunables    0    0    0 : slabdata     17     17      0
`;

Deno.test("slabinfo 2.1: objects and sizes per cache; another version refused", () => {
  const s = parseSlabinfo(SLABINFO);
  assert.deepEqual(s["kmalloc-1k"], { activeObjs: 512, numObjs: 528, objSize: 1024 });
  assert.deepEqual(s.skbuff_head_cache, { activeObjs: 256, numObjs: 272, objSize: 256 });
  assert.equal(Object.keys(s).length, 3);
  assert.throws(() => parseSlabinfo("slabinfo - version: 1.1\n"), /not slabinfo 2\.1/);
  assert.throws(() => parseSlabinfo(""), /not slabinfo/);
});

Deno.test("slab growth: bytes in use gained per cache, largest first, shrinking ones left out", () => {
  const a = parseSlabinfo(SLABINFO);
  const b = parseSlabinfo(
    SLABINFO.replace("kmalloc-1k           512", "kmalloc-1k          2512")
      .replace("kmalloc-64          3000", "kmalloc-64          2000")
      .replace("skbuff_head_cache    256", "skbuff_head_cache    260") +
      "new_cache 10 10 100 1 1 : tunables 0 0 0 : slabdata 1 1 0\n",
  );
  assert.deepEqual(slabGrowth(a, b), [
    { name: "kmalloc-1k", bytes: 2000 * 1024 },
    { name: "skbuff_head_cache", bytes: 4 * 256 },
    { name: "new_cache", bytes: 1000 },
  ]);
  assert.deepEqual(slabGrowth(a, b, 1).map((g) => g.name), ["kmalloc-1k"]);
});

Deno.test("status: VmRSS in KiB; none for a process without one", () => {
  const st = "Name:\tcnuas-switch\nVmPeak:\t   12000 kB\nVmRSS:\t    3456 kB\nThreads:\t1\n";
  assert.equal(parseStatusRss(st), 3456);
  assert.equal(parseStatusRss("Name:\tkthreadd\nThreads:\t1\n"), undefined);
});

Deno.test("--minutes: a positive number, else a usage error naming the value", () => {
  assert.equal(minutesFrom("2"), 2);
  assert.equal(minutesFrom("0.5"), 0.5);
  for (const bad of ["0", "-1", "abc", "", "1e3", "2m", "Infinity", "NaN"]) {
    assert.throws(
      () => minutesFrom(bad),
      (e: unknown) => e instanceof UsageError && e.message.includes(`'${bad}'`),
      bad,
    );
  }
  assert.throws(() => minutesFrom(undefined), /--minutes N/);
});

Deno.test("soak without --minutes is a usage error before anything runs", async () => {
  await assert.rejects(() => main(["soak"]), UsageError);
  await assert.rejects(() => main(["soak", "--minutes=-3"]), /positive number.*'-3'/);
  await assert.rejects(() => main(["soak", "--minutes", "ten"]), /positive number.*'ten'/);
});

Deno.test("memory judge: the planted leak's figures fail, a clean soak's pass", () => {
  const warm = { meminfo: parseMeminfo(MEMINFO), slab: parseSlabinfo(SLABINFO) };
  // a clean 2-minute soak: +20 KiB unreclaimable, 51 KiB in one cache, 7.9 MiB less available
  const clean = {
    meminfo: { ...warm.meminfo, SUnreclaim: 25852 + 20, MemAvailable: 801336 - 7872 },
    slab: parseSlabinfo(SLABINFO.replace("kmalloc-64          3000", "kmalloc-64          3800")),
  };
  assert.deepEqual(guestMemoryProblems(warm, clean), []);
  // the planted kmalloc(512) per frame: +3704 KiB, kmalloc-1k here stands for the cache
  const leak = {
    meminfo: { ...warm.meminfo, SUnreclaim: 25852 + 3704 },
    slab: parseSlabinfo(SLABINFO.replace("kmalloc-1k           512", "kmalloc-1k          4184")),
  };
  const p = guestMemoryProblems(warm, leak);
  assert.equal(p.length, 2);
  assert.match(
    p[0],
    /SUnreclaim grew by 3704 KiB \(bound 1024\); grew most: kmalloc-1k \+3760128 B/,
  );
  assert.match(p[1], /slab cache kmalloc-1k grew by 3760128 bytes/);
  // one cache over its bound alone is enough
  const one = {
    meminfo: warm.meminfo,
    slab: parseSlabinfo(SLABINFO.replace("kmalloc-1k           512", "kmalloc-1k           769")),
  };
  assert.equal(SOAK_BOUNDS.slabCacheBytes, 262144);
  assert.deepEqual(guestMemoryProblems(warm, one), [
    "slab cache kmalloc-1k grew by 263168 bytes (bound 262144 per cache)",
  ]);
  const starved = { ...clean, meminfo: { ...clean.meminfo, MemAvailable: 801336 - 40000 } };
  assert.deepEqual(guestMemoryProblems(warm, starved), [
    "MemAvailable fell by 40000 KiB (bound 32768)",
  ]);
});

Deno.test("switch RSS: growth within each process, a restart's new process not counted as growth", () => {
  assert.equal(switchRssGrowth([]), 0);
  assert.equal(
    switchRssGrowth([{ pid: 1, rssKiB: 2316 }, { pid: 1, rssKiB: 2316 }, { pid: 2, rssKiB: 2328 }]),
    0,
  );
  assert.equal(
    switchRssGrowth([{ pid: 1, rssKiB: 2000 }, { pid: 1, rssKiB: 2500 }, { pid: 2, rssKiB: 9000 }]),
    500,
  );
});

Deno.test("counters: the clean soak's are consistent; each inconsistency named", () => {
  // the first 2-minute soak's per-guest rises, split roughly as measured
  const g0 = {
    rx_drop_injected: 120,
    rcvd_pkts: 11000,
    sent_pkts: 11761,
    retransmits: 2000,
    send_seq_nak: 70,
    rcvd_icrc_err: 0,
  };
  const g1 = {
    rx_drop_injected: 120,
    rcvd_pkts: 11761,
    sent_pkts: 11000,
    retransmits: 2198,
    send_seq_nak: 68,
    rcvd_icrc_err: 0,
  };
  assert.deepEqual(counterProblems([g0, g1], 100), []);
  assert.deepEqual(
    counterProblems([{ ...g0, rx_drop_injected: 0 }, { ...g1, rx_drop_injected: 0 }], 100),
    [
      "no frame was dropped: loss injection did nothing",
    ],
  );
  assert.deepEqual(counterProblems([{ ...g0, retransmits: 0 }, { ...g1, retransmits: 0 }], 100), [
    "frames were dropped but nothing was retransmitted",
  ]);
  assert.deepEqual(counterProblems([g0, { ...g1, rcvd_icrc_err: 3 }], 100), [
    "3 frames with a bad ICRC",
  ]);
  assert.deepEqual(counterProblems([{ ...g0, rcvd_pkts: 11001 }, g1], 100), [
    "guest 0 received 11001 frames, its peer sent 11000",
  ]);
  assert.deepEqual(
    counterProblems([{ ...g0, rx_drop_injected: 300 }, { ...g1, rx_drop_injected: 300 }], 100),
    ["injected loss 2.64% is above twice 1/100"],
  );
});

Deno.test("loss windows: half the peer's packets before the last message, never into it", () => {
  // 64 B x 100: one packet per message, 99 before the last
  assert.equal(pingpongLossFrames(64, 100, 1024), 49);
  assert.equal(pingpongLossFrames(4096, 100, 1024), 198);
  assert.equal(pingpongLossFrames(65536, 30, 1024), 928);
  // a partial packet still is a packet
  assert.equal(pingpongLossFrames(1500, 3, 1024), 2);
  for (const [size, iters] of [[64, 100], [4096, 100], [65536, 30], [1, 2]]) {
    assert.ok(
      pingpongLossFrames(size, iters, 1024) < (iters - 1) * Math.ceil(size / 1024) || iters < 2,
    );
  }
});

Deno.test("each run's loss seed: a uint32 from the soak's seed and the run, distinct per run", () => {
  assert.equal(runLossSeed(7, 0), 7);
  const seeds = Array.from({ length: 64 }, (_, i) => runLossSeed(4294967295, i));
  assert.equal(new Set(seeds).size, 64);
  for (const s of seeds) assert.ok(Number.isInteger(s) && s >= 0 && s <= 0xffffffff);
  assert.equal(runLossSeed(1073972035, 5), runLossSeed(1073972035, 5));
});
