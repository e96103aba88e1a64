/** roce-e2e's loss seed: replayable from the command line, checked against the driver's dmesg line. */
import assert from "node:assert/strict";
import { lastLossLine, lossSeed, PINGPONG_ITERS } from "../../harness/guest/rdma_e2e.ts";
import { depthFrom, lossSeedFrom } from "../../harness/cli.ts";
import { fuzzSeed } from "../../harness/config.ts";

Deno.test("--loss-seed takes a decimal uint32 and refuses anything else", () => {
  assert.deepEqual(lossSeedFrom("12345"), { lossSeed: 12345 });
  assert.deepEqual(lossSeedFrom("4294967295"), { lossSeed: 4294967295 });
  assert.deepEqual(lossSeedFrom(undefined), {});
  assert.deepEqual(lossSeedFrom(""), {});
  for (const bad of ["-1", "0x10", "4294967296", "seed"]) {
    assert.throws(() => lossSeedFrom(bad), /--loss-seed wants a decimal number/, bad);
  }
});

Deno.test("lossSeed keeps an asked seed and draws a uint32 otherwise", () => {
  assert.equal(lossSeed(7), 7);
  assert.equal(lossSeed(0), 0);
  const seeds = new Set(Array.from({ length: 8 }, () => lossSeed(undefined)));
  assert.ok(seeds.size > 1);
  for (const s of seeds) assert.ok(Number.isInteger(s) && s >= 0 && s <= 0xffffffff);
});

Deno.test("lastLossLine reads the driver's last loss line", () => {
  const log = [
    "[   30.100000] cnuas_ib: rx loss injection 1/100 seed 7 frames 0",
    "[   31.000000] cnuas_net 0000:00:03.0 eth1: link up",
    "[   42.250000] cnuas_ib: rx loss injection 1/100 seed 3735928559 frames 120",
  ].join("\n");
  assert.deepEqual(lastLossLine(log), { oneIn: 100, seed: 3735928559, frames: 120 });
  assert.equal(lastLossLine("[ 1.0] cnuas_ib: probed"), undefined);
});

Deno.test("--depth takes quick or deep (quick without it); deep keeps the full pingpong volume", () => {
  assert.equal(depthFrom(undefined), "quick");
  assert.equal(depthFrom(""), "quick");
  assert.equal(depthFrom("deep"), "deep");
  for (const bad of ["Deep", "full", "1"]) {
    assert.throws(() => depthFrom(bad), /--depth takes quick or deep, not/, bad);
  }
  assert.equal(PINGPONG_ITERS.deep, 1000);
  assert.ok(PINGPONG_ITERS.quick < PINGPONG_ITERS.deep);
});

Deno.test("fuzzSeed replays the seed its variable names, else draws one below 2^31", () => {
  const env = (v?: string) => (n: string) => n === "CNUAS_HIL_X_SEED" ? v : undefined;
  assert.equal(fuzzSeed("CNUAS_HIL_X_SEED", env("1011196937")), 1011196937);
  for (const s of [fuzzSeed("CNUAS_HIL_X_SEED", env()), fuzzSeed("CNUAS_HIL_X_SEED", env("x"))]) {
    assert.ok(Number.isInteger(s) && s >= 0 && s < 2 ** 31);
  }
});
