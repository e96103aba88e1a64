import assert from "node:assert/strict";
import { join } from "node:path";
import { buildCnuasdevHost, hostCnuasdevEnv } from "../../harness/build/cnuasdev.ts";
import { defaultConfig } from "../../harness/config.ts";
import { exec } from "../../harness/exec.ts";
import {
  devBenchName,
  differential,
  missingDevBenchFigures,
  parseDevBench,
  parseSuite,
} from "../../harness/guest/cnuasdev.ts";

/** A suite run as `cnuasdev_suite` prints it, cut down to three cases. */
function run(backend: string, caps: string, round: string, pinned?: string): string {
  return [
    `info backend=${backend} name=${backend}:0 path=- version=1.0.0 caps=${caps}`,
    "case props page_size=4096 abi=1",
    `case alloc.round r1=${round}@0 used=4096`,
    pinned === undefined ? "skip pin.basic needs=pinned" : `case pin.basic pin=${pinned}`,
    "suite backend=x cases=3 skipped=0 checks=9 failed=0",
  ].join("\n");
}

Deno.test("parseSuite reads the backend, the case lines, the skips and the summary", () => {
  const r = parseSuite(run("host", "zerocopy,pinned", "4096", "OK"));
  assert.equal(r.backend, "host");
  assert.equal(r.info.caps, "zerocopy,pinned");
  assert.equal(r.cases.get("alloc.round"), "r1=4096@0 used=4096");
  assert.equal(r.cases.size, 3);
  assert.equal(r.skips.size, 0);
  assert.equal(r.summary.failed, "0");
  assert.equal(parseSuite(run("pcie", "zerocopy", "4096")).skips.get("pin.basic"), "pinned");
});

Deno.test("the differential compares only cases both backends ran", () => {
  const d = differential([
    parseSuite(run("pcie", "zerocopy", "4096")),
    parseSuite(run("host", "zerocopy,pinned", "4096", "OK")),
    parseSuite(run("soft", "zerocopy,pinned", "4096", "OK")),
  ]);
  assert.deepEqual(d.mismatches, []);
  assert.deepEqual(d.pairs.map((p) => [p.pair, p.compared]), [
    ["pcie/host", 2],
    ["pcie/soft", 2],
    ["host/soft", 3],
  ]);
  assert.equal(d.compared, 7);
  assert.deepEqual(d.pairs[0].notComparable, ["pin.basic"]);
});

Deno.test("a planted allocator bug in one backend fails the differential, naming the value", () => {
  const d = differential([
    parseSuite(run("host", "pinned", "4096", "OK")),
    parseSuite(run("soft", "pinned", "8192", "OK")),
  ]);
  assert.deepEqual(d.mismatches, ["host/soft alloc.round: r1: 4096@0 ≠ 8192@0"]);
});

Deno.test("a case one run neither ran nor skipped is a mismatch (the suite stopped)", () => {
  const cut = run("soft", "pinned", "4096", "OK").split("\n").slice(0, 2).join("\n");
  const d = differential([parseSuite(run("host", "pinned", "4096", "OK")), parseSuite(cut)]);
  assert.deepEqual(d.mismatches, [
    "host/soft alloc.round: soft neither ran nor skipped it",
    "host/soft pin.basic: soft neither ran nor skipped it",
  ]);
});

/** Whether this host can compile C (the harness's host packages: gcc, make). */
async function hostCompiles(): Promise<boolean> {
  const r = await exec(["sh", "-c", "command -v cc && command -v make"], { allowFail: true });
  return r.code === 0;
}

const canCompile = await hostCompiles();

Deno.test({
  name: "on this host, libcnuasdev's no-device smoke, the Soft-GPU suite and the bench pass",
  ignore: !canCompile,
  async fn() {
    const cacheDir = await Deno.makeTempDir({ prefix: "cnuasdev-unit-" });
    try {
      const dir = await buildCnuasdevHost(defaultConfig({ cacheDir }));
      const env = hostCnuasdevEnv(dir);
      const smoke = await exec([join(dir, "cnuasdev_hostdev_fake_smoke")], {
        env,
        allowFail: true,
      });
      assert.equal(smoke.code, 0, smoke.stdout + smoke.stderr);
      assert.match(smoke.stdout, /^smoke=PASS checks=\d+ failed=0$/m);
      const suite = await exec([join(dir, "cnuasdev_suite"), "soft"], { env, allowFail: true });
      assert.equal(suite.code, 0, suite.stdout + suite.stderr);
      const r = parseSuite(suite.stdout);
      assert.equal(r.backend, "soft");
      assert.ok(r.cases.size >= 22, `${r.cases.size} cases`);
      assert.deepEqual([...r.skips.keys()], ["dmabuf.export", "dmabuf.import", "link.down"]);
      assert.equal(r.summary.failed, "0");
      // the bench, briefly: every mode on soft; without zerocopy, pinned and async only copies
      const full = await exec([join(dir, "cnuasdev_bench"), "soft", "0.01"], {
        env,
        allowFail: true,
      });
      assert.equal(full.code, 0, full.stdout + full.stderr);
      const b = parseDevBench(full.stdout);
      assert.ok(b.passed);
      assert.equal(b.backend, "soft");
      assert.deepEqual(missingDevBenchFigures(b), []);
      assert.equal(b.figures.size, 3 * 6 + 2);
      assert.equal(b.figures.get("async.b32")?.unit, "ops/s");
      const bare = await exec(
        [join(dir, "cnuasdev_bench"), "soft:0,zerocopy=0,pinned=0,async=0", "0.01"],
        { env, allowFail: true },
      );
      const c = parseDevBench(bare.stdout);
      assert.ok(c.passed, bare.stdout + bare.stderr);
      assert.deepEqual([...c.skips.keys()], ["zerocopy", "pinned", "async"]);
      assert.deepEqual([...c.figures.keys()].filter((n) => !n.startsWith("copy")), []);
      assert.deepEqual(missingDevBenchFigures(c), []);
    } finally {
      await Deno.remove(cacheDir, { recursive: true });
    }
  },
});

/** A `cnuasdev_bench` run as it prints it, cut down. */
const BENCH_OUT = [
  "info backend=host name=host:0 version=1.0.0 caps=0x3cf queue_depth=64 batch_max=32 " +
  "pinned_max=33554432 seconds=1.000",
  "bench copyToDev.4k 812.5 MiB/s iters=207999 bytes=851963904 sec=1.000 digest=722a4ae121677f25",
  "bench copyFromDev.1M 1200 MiB/s iters=1200 bytes=1258291200 sec=1.000 digest=dc64a9973a822325",
  "bench async.b32 162985.7 ops/s ops=32608 op_bytes=4096 sec=0.200 digest=949a8859fa822325",
  "skip zerocopy needs=zerocopy",
  "skip pinned needs=pinned,async",
  "bench broken",
  "bench copyToDev.64k nan MiB/s",
  "bench copyToDev.64k 5.0 furlongs",
  "FAIL point:232: zerocopyToDev.4k: digest 1, expected 2",
  "PASS",
].join("\n");

Deno.test("parseDevBench keeps the checked figures, the skipped modes and PASS", () => {
  const r = parseDevBench(BENCH_OUT);
  assert.equal(r.backend, "host");
  assert.equal(r.info.batch_max, "32");
  assert.deepEqual([...r.figures], [
    ["copyToDev.4k", { value: 812.5, unit: "MiB/s" }],
    ["copyFromDev.1M", { value: 1200, unit: "MiB/s" }],
    ["async.b32", { value: 162985.7, unit: "ops/s" }],
  ]);
  assert.deepEqual([...r.skips], [["zerocopy", "zerocopy"], ["pinned", "pinned,async"]]);
  assert.ok(r.passed);
  const died = parseDevBench(BENCH_OUT.replace(/\nPASS$/, ""));
  assert.ok(!died.passed);
  assert.equal(parseDevBench("").backend, "?");
});

Deno.test("devBenchName prefixes the backend and ends with the unit", () => {
  assert.equal(devBenchName("pcie", "copyToDev.64k", "MiB/s"), "pcie.copyToDev.64k.MiBps");
  assert.equal(devBenchName("host", "async.b32", "ops/s"), "host.async.b32.opsPerSec");
  assert.equal(
    devBenchName("soft", "zerocopyFromDev.1M", "MiB/s"),
    "soft.zerocopyFromDev.1M.MiBps",
  );
});

Deno.test("missingDevBenchFigures wants every mode not skipped, each size, both ways", () => {
  const r = parseDevBench(BENCH_OUT);
  const missing = missingDevBenchFigures(r);
  // copy: 6 points, 2 printed; zerocopy and pinned skipped; async: b1 missing
  assert.deepEqual(missing, [
    "copyFromDev.4k",
    "copyToDev.64k",
    "copyFromDev.64k",
    "copyToDev.1M",
    "async.b1",
  ]);
  const noAsync = parseDevBench(`${BENCH_OUT}\nskip async needs=async`);
  assert.ok(!missingDevBenchFigures(noAsync).some((n) => n.startsWith("async")));
  const noBatch = parseDevBench(BENCH_OUT.replace("batch_max=32", "batch_max=0"));
  assert.ok(missingDevBenchFigures(noBatch).includes("async.b<batch_max>"));
});
