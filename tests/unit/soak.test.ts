/** The soak's parsers: /proc/meminfo, /proc/slabinfo, /proc/<pid>/status; --minutes. */
import assert from "node:assert/strict";
import {
  parseMeminfo,
  parseSlabinfo,
  parseStatusRss,
  slabGrowth,
} from "../../harness/guest/soak.ts";
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
