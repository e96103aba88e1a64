/**
 * Differential test of cnuas-vnic: for each seed, a random sequence of
 * register reads and writes (odd sizes, unaligned and unknown offsets
 * included), transmits of 1..9216-byte and invalid frames, datagrams from the
 * peer arriving armed, unarmed and while RX_STATUS is 1, peer closes,
 * listener changes, clock steps and resets runs on QEMU and on the reference
 * model side by side; they must agree on every register read, guest memory,
 * the interrupt line, MSIs and every frame on the socket. 24 seeds × 1000
 * operations; a failure prints the seed and a shrunk sequence.
 */
import assert from "node:assert/strict";
import { formatVnicFailure, runVnicDiff } from "../../harness/oracle/vnic_diff.ts";
import { qemuEnv } from "./qemu_env.ts";

const SEEDS = Array.from({ length: 24 }, (_, i) => i + 1);
const OPS_PER_SEED = 1000;
/** Guards skip an operation now and then (DMA aimed outside the modelled memory, a full queue). */
const MIN_CHECKED = 900;

for (const seed of SEEDS) {
  Deno.test(`cnuas-vnic agrees with its model over ${OPS_PER_SEED} random operations, seed ${seed}`, async () => {
    const env = await qemuEnv();
    const report = await runVnicDiff({
      ...env,
      seeds: [seed],
      opsPerSeed: OPS_PER_SEED,
      shrinkBudgetMs: 40_000,
    });
    assert.equal(report.failure, null, report.failure ? formatVnicFailure(report.failure) : "");
    assert.ok(
      report.opsChecked >= MIN_CHECKED,
      `only ${report.opsChecked} operations were checked`,
    );
  });
}
