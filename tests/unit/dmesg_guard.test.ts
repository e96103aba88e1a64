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

/** One real-looking line for each kind of report the guard must catch. */
const REPORTS: Record<string, string> = {
  "RCU stall": "[  120.431201] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:",
  "RCU stall (sched)": "[  120.431201] rcu: INFO: rcu_sched detected stalls on CPUs/tasks:",
  "RCU self-detected": "[   95.120001] rcu: INFO: rcu_preempt self-detected stall on CPU",
  "RCU self-detected (old)": "[   95.120001] INFO: rcu_sched self-detected stall on CPU",
  "UBSAN": "[   12.004512] UBSAN: shift-out-of-bounds in drivers/nic/cnuas_ib_qp.c:412:18",
  "KASAN": "[   13.220001] BUG: KASAN: slab-out-of-bounds in cnuas_ib_post_send+0x2b4/0x6a0",
  "list_add": "[   14.000001] list_add corruption. next->prev should be prev " +
    "(ffff8880047e1a08), but was 0000000000000000. (next=ffff8880047e1a08).",
  "list_del": "[   14.000002] list_del corruption, ffff888004a1e2c8->next is LIST_POISON1 " +
    "(dead000000000100)",
  "refcount saturated": "[   15.100002] refcount_t: saturated; leaking memory.",
  "refcount underflow": "[   15.100003] refcount_t: underflow; use-after-free.",
  "refcount addition on 0": "[   15.100004] refcount_t: addition on 0; use-after-free.",
  "lockdep circular": "[   16.300001] WARNING: possible circular locking dependency detected",
  "lockdep inconsistent": "[   16.300002] WARNING: inconsistent lock state",
  "lockdep recursive": "[   16.300003] WARNING: possible recursive locking detected",
  "lockdep RCU": "[   16.300004] WARNING: suspicious RCU usage",
  "DEBUG_LOCKS_WARN_ON": "[   16.300005] DEBUG_LOCKS_WARN_ON(lock->magic != lock)",
  "kernel BUG at": "[   17.000001] kernel BUG at drivers/nic/cnuas_net.c:388!",
};

for (const [kind, line] of Object.entries(REPORTS)) {
  Deno.test(`the dmesg guard flags ${kind}`, () => {
    const log = ["[    1.0] cnuas_net 0000:00:03.0: probed", line, "[   99.0] eth1: link up"]
      .join("\n");
    assert.deepEqual(dmesgViolations(log), [line]);
  });
}

Deno.test("an fpu warning is not ignored", () => {
  const warn = "[    0.041000] WARNING: CPU: 0 PID: 0 at arch/x86/kernel/fpu/xstate.c:769 " +
    "fpu__init_system_xstate+0x1b6/0x6a0";
  const other = "[   20.000000] WARNING: CPU: 1 PID: 812 at arch/x86/kernel/fpu/core.c:57 " +
    "kernel_fpu_begin_mask+0xd3/0xf0";
  assert.deepEqual(dmesgViolations([warn, other].join("\n")), [warn, other]);
});

Deno.test("the dmesg guard does not flag the kernel command line or clean boots", () => {
  // x86/fpu lines as a TCG guest (-cpu max) prints them at boot
  const log = [
    "[    0.0] Command line: console=ttyS0 panic=-1 softlockup_panic=1 hung_task_panic=1",
    "[    0.031315] x86/fpu: Supporting XSAVE feature 0x001: 'x87 floating point registers'",
    "[    0.037248] x86/fpu: xstate_offset[2]:  576, xstate_sizes[2]:  256",
    "[    0.037467] x86/fpu: Enabled xstate features 0x21f, context size is 2696 bytes, " +
    "using 'standard' format.",
    "[    0.1] random: crng init done",
    "[    9.0] EXT4-fs (vda): mounted filesystem",
  ].join("\n");
  assert.deepEqual(dmesgViolations(log), []);
});
