import assert from "node:assert/strict";
import { join } from "node:path";
import { buildCnuasdevHost, hostCnuasdevEnv } from "../../harness/build/cnuasdev.ts";
import { defaultConfig } from "../../harness/config.ts";
import { exec } from "../../harness/exec.ts";
import { differential, parseSuite } from "../../harness/guest/cnuasdev.ts";

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
  name: "on this host, libcnuasdev's no-device smoke and the Soft-GPU suite pass",
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
    } finally {
      await Deno.remove(cacheDir, { recursive: true });
    }
  },
});
