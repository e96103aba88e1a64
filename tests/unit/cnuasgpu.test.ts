import assert from "node:assert/strict";
import {
  expectedInfo,
  expectedSysfs,
  guestGpus,
  mismatches,
  nodesFor,
  parseGpuAbiFuzz,
  parseKeyValues,
  unbindProblems,
  unbindScript,
} from "../../harness/guest/cnuasgpu.ts";
import { RowFailure } from "../../harness/matrix/row.ts";

Deno.test("the two accelerators of a guest are expected to differ in every sized property", () => {
  const [g0, g1] = guestGpus(1, 2);
  assert.notEqual(g0.gpuId, g1.gpuId);
  assert.notEqual(expectedInfo(g0).sm_count, expectedInfo(g1).sm_count);
  assert.notEqual(expectedInfo(g0).devmem_size, expectedInfo(g1).devmem_size);
});

Deno.test("expectedInfo states devmem_size in bytes and the fixed identification values", () => {
  assert.deepEqual(expectedInfo({ gpuId: 17, smCount: 24, devmemMb: 128 }), {
    abi_version: "1",
    fw_version: "0x00010000",
    lanes_per_sm: "32",
    tensor_size: "16",
    gpu_id: "17",
    sm_count: "24",
    devmem_size: String(128 * 1024 * 1024),
  });
});

Deno.test("expectedSysfs keeps only the identity attributes sysfs has", () => {
  assert.deepEqual(Object.keys(expectedSysfs({ gpuId: 1, smCount: 16, devmemMb: 64 })).sort(), [
    "devmem_size",
    "gpu_id",
    "sm_count",
  ]);
});

Deno.test("mismatches names each differing and each missing key, and nothing else", () => {
  const got = parseKeyValues("gpu_id=1\nsm_count=16\nnoise line\n");
  assert.deepEqual(mismatches("dev", got, { gpu_id: "1", sm_count: "24", devmem_size: "5" }), [
    "dev: sm_count is 16, expected 24",
    "dev: devmem_size is (missing), expected 5",
  ]);
});

Deno.test("nodesFor orders nodes by the given devices and fails on an absent gpu_id", () => {
  const byId = new Map([[1, "cnuasgpu0"], [0, "cnuasgpu1"]]);
  const props = guestGpus(0, 2);
  assert.deepEqual(nodesFor(byId, props), ["cnuasgpu1", "cnuasgpu0"]);
  assert.throws(() => nodesFor(new Map([[0, "cnuasgpu0"]]), props), RowFailure);
});

/** key=value lines of an unbind-under-copies run that went as promised. */
const UNBIND_OK = {
  bdf: "0000:00:05.0",
  running_at_unbind: "1",
  unbind_code: "0",
  node_after_unbind: "0",
  loop_exit: "0",
  copy_loop_running: "1",
  copies_ok: "37",
  copy_end: "ENODEV",
  after_copy: "ENODEV",
  after_info: "ENODEV",
  after_alloc: "ENODEV",
  after_mmap: "ENODEV",
  bind_code: "0",
  rebound: "cnuasgpu1",
};

Deno.test("unbindProblems: a run that went as promised has none", () => {
  assert.deepEqual(unbindProblems(UNBIND_OK), []);
});

Deno.test("unbindProblems names a copy that outlived the unbind, a hang and a lost device", () => {
  const bad = unbindProblems({
    ...UNBIND_OK,
    copy_end: "none",
    loop_exit: "1",
    loop_hung: "1",
    after_info: "EFAULT",
    rebound: "",
  });
  assert.equal(bad.length, 5);
  assert.match(bad.join("\n"), /copy_end is none, expected ENODEV/);
  assert.match(bad.join("\n"), /loop_exit is 1/);
  assert.match(bad.join("\n"), /after_info is EFAULT/);
  assert.match(bad.join("\n"), /copy loop hung/);
  assert.match(bad.join("\n"), /no cnuasgpu device after bind/);
});

Deno.test("unbindProblems: copies not yet running at the unbind prove nothing", () => {
  const { after_copy: _gone, ...rest } = UNBIND_OK;
  const bad = unbindProblems({ ...rest, running_at_unbind: "0" });
  assert.deepEqual(bad, [
    "unbind under copies: running_at_unbind is 0, expected 1",
    "unbind under copies: after_copy is (missing), expected ENODEV",
  ]);
});

Deno.test("unbindScript bounds both sysfs writes and waits for the copy loop first", () => {
  const sh = unbindScript("cnuasgpu1", 30);
  assert.match(sh, /timeout 60 sh -c "echo \$bdf >\/sys\/bus\/pci\/drivers\/cnuasgpu\/unbind"/);
  assert.match(sh, /timeout 60 sh -c "echo \$bdf >\/sys\/bus\/pci\/drivers\/cnuasgpu\/bind"/);
  assert.match(sh, /cnuasgpu_copyloop' \/dev\/cnuasgpu1 30 /);
  assert.ok(sh.indexOf("copy_loop_running=1") < sh.indexOf("/unbind"));
  assert.match(sh, /seq 300\)/);
});

Deno.test("parseGpuAbiFuzz: calls, violations, counters", () => {
  const out = [
    "seed 7",
    "baseline_devmem_used 0",
    "baseline_exports 1",
    "violation: op_free succeeded: FREE of handle 9 not live in this file",
    "final_devmem_used 4096",
    "final_exports 1",
    "calls_total 12345",
    "calls_alloc 10",
    "violations 1",
    "FAIL",
  ].join("\n");
  const r = parseGpuAbiFuzz(1, out);
  assert.equal(r.calls, 12345);
  assert.equal(r.violations, 1);
  assert.deepEqual(r.violationLines, [
    "violation: op_free succeeded: FREE of handle 9 not live in this file",
  ]);
  assert.deepEqual(r.counters, {
    baseline_devmem_used: 0,
    baseline_exports: 1,
    final_devmem_used: 4096,
    final_exports: 1,
  });
  const none = parseGpuAbiFuzz(139, "seed 7\n");
  assert.equal(none.calls, 0);
  assert.equal(none.violations, -1);
});
