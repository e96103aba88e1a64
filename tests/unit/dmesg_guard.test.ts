import assert from "node:assert/strict";
import { dmesgViolations } from "../../harness/matrix/dmesg_guard.ts";

Deno.test("the dmesg guard flags kernel bugs", () => {
  const log = [
    "[    1.0] cnuas_net 0000:00:03.0: probed",
    "[    2.0] BUG: kernel NULL pointer dereference, address: 0000000000000008",
    "[    3.0] WARNING: CPU: 0 PID: 1 at drivers/net/cnuas_net.c:10 probe+0x1/0x2",
    "[    4.0] general protection fault, probably for non-canonical address",
    "[    5.0] list_add corruption. prev->next should be next",
    "[    6.0] BUG: KASAN: slab-use-after-free in x",
    "[    7.0] INFO: task insmod:123 blocked for more than 120 seconds.",
  ].join("\n");
  assert.equal(dmesgViolations(log).length, 6);
});

Deno.test("the dmesg guard does not flag the kernel command line or clean boots", () => {
  const log = [
    "[    0.0] Command line: console=ttyS0 panic=-1 softlockup_panic=1 hung_task_panic=1",
    "[    0.1] random: crng init done",
    "[    9.0] EXT4-fs (vda): mounted filesystem",
  ].join("\n");
  assert.deepEqual(dmesgViolations(log), []);
});
