import assert from "node:assert/strict";
import { exec } from "../../harness/exec.ts";
import { atIdle, atIdlePriority, spawnArgv } from "../../harness/priority.ts";

const policy = async () => (await exec(["sh", "-c", "chrt -p $$; ionice -p $$"])).stdout;

Deno.test("atIdlePriority: commands started inside run at SCHED_IDLE and idle I/O, others do not", async () => {
  const [inside, outside] = await Promise.all([atIdlePriority(policy), policy()]);
  assert.match(inside, /SCHED_IDLE/);
  assert.match(inside, /^idle$/m);
  assert.doesNotMatch(outside, /SCHED_IDLE/);
  assert.doesNotMatch(outside, /^idle$/m);
});

Deno.test("atIdlePriority: the context follows awaits and ends with the work", async () => {
  assert.equal(atIdle(), false);
  const seen = await atIdlePriority(async () => {
    await new Promise((r) => setTimeout(r, 1));
    return [atIdle(), spawnArgv(["true"]).at(-1)];
  });
  assert.deepEqual(seen, [true, "true"]);
  assert.equal(atIdle(), false);
  assert.deepEqual(spawnArgv(["true"]), ["true"]);
});
