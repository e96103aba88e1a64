/** Parsing poll_cq_bench's output: only a complete PASS yields figures. */
import assert from "node:assert/strict";
import { parsePollCqBench } from "../../harness/guest/poll_cq.ts";
import { RowFailure } from "../../harness/matrix/row.ts";

const GOOD = [
  "device=cnuas_ib0",
  "completions=4096 batch=16",
  "drain_ns_per_completion=77.0",
  "empty_polls_during_drain=0",
  "empty_poll_ns=68.7",
  "getppid_syscall_ns=465.4",
  "PASS",
].join("\n");

Deno.test("poll_cq_bench output with PASS gives every figure", () => {
  assert.deepEqual(parsePollCqBench(GOOD), {
    completions: 4096,
    batch: 16,
    drainNsPerCompletion: 77,
    emptyPollsDuringDrain: 0,
    emptyPollNs: 68.7,
    getppidSyscallNs: 465.4,
  });
});

Deno.test("poll_cq_bench output without PASS gives nothing", () => {
  assert.equal(parsePollCqBench(GOOD.replace("PASS", "")), undefined);
  assert.equal(parsePollCqBench("FAIL: completion 3: status 0 wr_id 7 qp 0x11"), undefined);
});

Deno.test("a PASS with a missing figure is refused", () => {
  for (const k of ["completions", "drain_ns_per_completion", "empty_poll_ns"]) {
    assert.throws(
      () => parsePollCqBench(GOOD.replace(new RegExp(`${k}=[\\d.]+`), "")),
      (e: unknown) => e instanceof RowFailure && e.message.includes(k),
    );
  }
});
