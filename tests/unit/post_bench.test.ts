/** post_bench's output, the bench's gate on system calls per post, and its figures' names. */
import assert from "node:assert/strict";
import { parsePostBench, type PostBenchFigures } from "../../harness/guest/post_bench.ts";
import {
  postMeasurements,
  syscallClaimViolations,
  verbFigureName,
} from "../../harness/bench/rdma_post.ts";
import { RowFailure } from "../../harness/matrix/row.ts";

/**
 * A cnuas_ib run as post_bench printed it before the SRQ ring was mapped
 * (send and SRQ receives through the kernel, QP receives mapped); the
 * tests below make it today's with {@link ringSrq}.
 */
const CNUAS = `device=cnuas_ib0 gid_index=1
send_round_wrs=64 send_rounds=20 recv_round_wrs=1024 recv_rounds=2
post_send_b1_ns_per_wr=53979.4
post_send_b16_ns_per_wr=15861.0
post_send_b64_ns_per_wr=16324.1
post_recv_b1_ns_per_wr=94.8
post_recv_b16_ns_per_wr=39.2
post_srq_recv_b1_ns_per_wr=5776.8
post_srq_recv_b16_ns_per_wr=1362.1
getppid_syscall_ns=485.5
selftest_getppid_calls=1000
selftest_getppid_syscalls=1000
selftest_getppid_syscall_list=getppid:1000
post_send_b1_calls=128
post_send_b1_syscalls=128
post_send_b1_syscall_list=ioctl:128
post_send_b16_calls=8
post_send_b16_syscalls=8
post_send_b16_syscall_list=ioctl:8
post_send_b64_calls=2
post_send_b64_syscalls=2
post_send_b64_syscall_list=ioctl:2
post_recv_b1_calls=1024
post_recv_b1_syscalls=0
post_recv_b1_syscall_list=none
post_recv_b16_calls=64
post_recv_b16_syscalls=0
post_recv_b16_syscall_list=none
post_srq_recv_b1_calls=1024
post_srq_recv_b1_syscalls=1024
post_srq_recv_b1_syscall_list=ioctl:1024
post_srq_recv_b16_calls=64
post_srq_recv_b16_syscalls=64
post_srq_recv_b16_syscall_list=ioctl:64
PASS
`;

function parsed(out = CNUAS): PostBenchFigures {
  const f = parsePostBench(out);
  assert.ok(f);
  return f;
}

Deno.test("post_bench output with PASS gives every case's figures", () => {
  const f = parsed();
  assert.equal(f.getppidSyscallNs, 485.5);
  assert.deepEqual(f.cases.post_send_b16, {
    nsPerWr: 15861,
    calls: 8,
    syscalls: 8,
    syscallsPerCall: 1,
    syscallList: "ioctl:8",
  });
  assert.equal(f.cases.post_recv_b1.syscallsPerCall, 0);
  assert.equal(f.cases.post_recv_b1.syscallList, "none");
  assert.equal(f.cases.post_srq_recv_b16.nsPerWr, 1362.1);
  assert.equal(Object.keys(f.cases).length, 7);
});

Deno.test("post_bench output without PASS gives nothing", () => {
  assert.equal(parsePostBench(CNUAS.replace("PASS", "")), undefined);
  assert.equal(
    parsePostBench("FAIL: WRITE 3: the target slot does not hold the bytes sent"),
    undefined,
  );
});

Deno.test("a PASS with a missing figure is refused", () => {
  for (const k of ["post_send_b64_ns_per_wr", "post_recv_b16_syscalls", "getppid_syscall_ns"]) {
    assert.throws(
      () => parsePostBench(CNUAS.replace(new RegExp(`^${k}=.*$`, "m"), "")),
      (e: unknown) => e instanceof RowFailure && e.message.includes(k),
    );
  }
});

Deno.test("a counter that miscounts its own getppid() self-test is refused", () => {
  assert.throws(
    () =>
      parsePostBench(
        CNUAS.replace("selftest_getppid_syscalls=1000", "selftest_getppid_syscalls=999"),
      ),
    (e: unknown) => e instanceof RowFailure && /counter is wrong/.test(e.message),
  );
});

/** The same run with the SRQ's receives posted into its mapped ring: no system call. */
function ringSrq(out = CNUAS): string {
  return out.replace("post_srq_recv_b1_syscalls=1024", "post_srq_recv_b1_syscalls=0")
    .replace("post_srq_recv_b1_syscall_list=ioctl:1024", "post_srq_recv_b1_syscall_list=none")
    .replace("post_srq_recv_b16_syscalls=64", "post_srq_recv_b16_syscalls=0")
    .replace("post_srq_recv_b16_syscall_list=ioctl:64", "post_srq_recv_b16_syscall_list=none");
}

Deno.test("cnuas_ib's counts as designed pass the gate", () => {
  assert.deepEqual(syscallClaimViolations(parsed(ringSrq())), []);
});

Deno.test("a post_recv that makes a system call fails the gate", () => {
  // CNUAS_NO_RQ_RING=1: the provider posts receives through the kernel
  const f = parsed(
    ringSrq().replace("post_recv_b1_syscalls=0", "post_recv_b1_syscalls=1024")
      .replace("post_recv_b1_syscall_list=none", "post_recv_b1_syscall_list=ioctl:1024"),
  );
  const bad = syscallClaimViolations(f);
  assert.equal(bad.length, 1);
  assert.match(bad[0], /^post_recv_b1: 1024 system calls in 1024 calls \(ioctl:1024\); want 0/);
});

Deno.test("a post_send list that takes more than one system call fails the gate", () => {
  const f = parsed(CNUAS.replace("post_send_b64_syscalls=2", "post_send_b64_syscalls=3"));
  assert.match(syscallClaimViolations(f).join(), /post_send_b64: 3 system calls in 2 calls/);
  const none = parsed(CNUAS.replace("post_send_b1_syscalls=128", "post_send_b1_syscalls=0"));
  assert.match(syscallClaimViolations(none).join(), /post_send_b1: 0 system calls/);
});

Deno.test("an SRQ posted through the kernel fails the gate: the SRQ ring wants 0", () => {
  const bad = syscallClaimViolations(parsed());
  assert.equal(bad.length, 2);
  assert.match(bad[0], /^post_srq_recv_b1: 1024 system calls in 1024 calls \(ioctl:1024\)/);
});

Deno.test("figures are named per verb and batch; times are medians, counts the worst run", () => {
  assert.equal(verbFigureName("post_srq_recv"), "postSrqRecv");
  const a = parsed();
  const b = parsed(CNUAS.replace("post_send_b1_ns_per_wr=53979.4", "post_send_b1_ns_per_wr=1000"));
  const c = parsed(
    CNUAS.replace("post_send_b1_ns_per_wr=53979.4", "post_send_b1_ns_per_wr=2000")
      .replace("post_recv_b16_syscalls=0", "post_recv_b16_syscalls=64"),
  );
  const m = postMeasurements([a, b, c]);
  assert.deepEqual(m["postSendNsPerWr.b1"], { value: 2000, unit: "ns" });
  assert.deepEqual(m["postSendSyscallsPerCall.b64"], { value: 1, unit: "syscalls" });
  assert.deepEqual(m["postRecvSyscallsPerCall.b16"], { value: 1, unit: "syscalls" });
  assert.deepEqual(m["postSrqRecvNsPerWr.b16"], { value: 1362.1, unit: "ns" });
  assert.equal(Object.keys(m).length, 15);
});
