/**
 * Differential test of cnuasgpu: for each seed, a random sequence of register
 * traffic, BAR1 reads and writes, CnuasLink frames both ways (oversize,
 * unarmed, out-of-range and empty ones included), peer closes, listener
 * changes and clock steps runs against QEMU and the reference model side by
 * side; they must agree on every observation. 24 seeds × 500 operations.
 */
import assert from "node:assert/strict";
import { formatGpuFailure, runGpuSeed } from "../../harness/oracle/gpu_diff.ts";
import { qemuEnv } from "./qemu_env.ts";

const SEEDS = Array.from({ length: 24 }, (_, i) => i + 1);
const OPS_PER_SEED = 500;
/** Some operations are skipped when their precondition is gone (a send with no connection). */
const MIN_CHECKED = 450;

for (const seed of SEEDS) {
  Deno.test(`cnuasgpu agrees with its model over ${OPS_PER_SEED} random operations, seed ${seed}`, async () => {
    const env = await qemuEnv();
    const res = await runGpuSeed(env, seed, OPS_PER_SEED);
    assert.equal(res.divergence, null, formatGpuFailure(res));
    assert.ok(res.opsChecked >= MIN_CHECKED, `only ${res.opsChecked} operations were checked`);
  });
}
