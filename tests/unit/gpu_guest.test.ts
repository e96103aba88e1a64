import assert from "node:assert/strict";
import {
  expectedInfo,
  expectedSysfs,
  guestGpus,
  mismatches,
  nodesFor,
  parseKeyValues,
} from "../../harness/gpu_guest.ts";
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
