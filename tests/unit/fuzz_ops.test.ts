import assert from "node:assert/strict";
import { GpuModel } from "../../harness/models/gpu.ts";
import { applyToModel, gpuConfigForSeed, type GpuOp } from "../../harness/oracle/gpu_ops.ts";
import { GpuHostileGenerator } from "../../harness/oracle/gpu_fuzz_ops.ts";
import { vnicModelForSetup, type VnicOp, vnicSetupForSeed } from "../../harness/oracle/vnic_ops.ts";
import { hostileRangeKnown, VnicHostileGenerator } from "../../harness/oracle/vnic_fuzz_ops.ts";
import { VNIC_RIG } from "../../harness/qtest/vnic_rig.ts";

function vnicOps(seed: number, n: number): VnicOp[] {
  const { model } = vnicModelForSetup(vnicSetupForSeed(seed));
  const gen = new VnicHostileGenerator(seed);
  return Array.from({ length: n }, () => gen.next(model));
}

Deno.test("hostileRangeKnown: RAM below 2 MiB and the firmware ROM are unknown, the rest known", () => {
  assert.equal(hostileRangeKnown(0x10_0000n, 4), false); // the MSI word
  assert.equal(hostileRangeKnown(0x1f_fff0n, 0x20), false); // runs into 2 MiB
  assert.equal(hostileRangeKnown(0xffff_0000n, 16), false); // firmware ROM
  assert.equal(hostileRangeKnown(0x20_0000n, 9216), true); // modelled RAM
  assert.equal(hostileRangeKnown(VNIC_RIG.bar, 64), true); // own BAR0: refused, known
  assert.equal(hostileRangeKnown(0xfec0_0000n, 4), true); // IOAPIC
  assert.equal(hostileRangeKnown((1n << 64n) - 4n, 16), true); // wraps: refused whole
});

Deno.test("the hostile vnic generator is a function of its seed", () => {
  assert.deepEqual(vnicOps(7, 2000), vnicOps(7, 2000));
  assert.notDeepEqual(vnicOps(7, 200), vnicOps(8, 200));
});

Deno.test("the hostile vnic generator aims DMA at BAR0, other MMIO and past 2^64", () => {
  const ops = vnicOps(11, 20_000);
  const addrs = new Set<number>();
  for (const op of ops) {
    if (op.k === "wr" && (op.off === 0x00 || op.off === 0x10)) addrs.add(Number(BigInt(op.value)));
  }
  const bar = Number(VNIC_RIG.bar);
  const near = (lo: number, hi: number) => [...addrs].some((a) => a >= lo && a < hi);
  assert.ok(near(bar, bar + 0x1000), "own BAR0");
  assert.ok(near(0xfec0_0000, 0xfef0_0000), "IOAPIC, HPET, LAPIC");
  assert.ok(ops.some((op) => op.k === "wr" && op.size !== 4), "odd widths");
  assert.ok(ops.some((op) => op.k === "flr"), "resets");
  assert.ok(
    ops.some((op) => op.k === "wr" && op.off === 0x04 && BigInt(op.value) === 0xffff_ffffn),
    "addresses past 2^64",
  );
});

Deno.test("the hostile gpu generator is a function of its seed and runs on the model", () => {
  const run = (seed: number): GpuOp[] => {
    const model = new GpuModel(gpuConfigForSeed(seed), { listening: true });
    const gen = new GpuHostileGenerator(seed);
    let listening = true;
    return Array.from({ length: 3000 }, () => {
      const op = gen.next(model);
      listening = applyToModel(model, op, listening).listening;
      return op;
    });
  };
  const a = run(5);
  assert.deepEqual(a, run(5));
  assert.ok(a.some((op) => op.op === "write" && op.off === 0x208 && op.val === 0xffff_ffff));
  assert.ok(a.some((op) => op.op === "odd" && op.off > 0x400), "odd widths across BAR0");
});
