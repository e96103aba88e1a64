/** The peermem row reads drivers/test/peermem.c's check lines; names may hold ": " themselves. */
import assert from "node:assert/strict";
import {
  dieLines,
  errorCounters,
  failedChecks,
  PEERMEM_CHECKS,
} from "../../harness/guest/peermem.ts";

const SERVER_OK = [
  "registered 4194304 bytes of /dev/cnuasgpu0 as a DMA-BUF MR: lkey 0x28f",
  ...PEERMEM_CHECKS.server.map((c) => `${c}: ok`),
  "PASS",
].join("\n");

Deno.test("every server check printed as ok: nothing failed", () => {
  assert.deepEqual(failedChecks(SERVER_OK, PEERMEM_CHECKS.server), []);
});

Deno.test("a MISMATCH and a missing line are both reported, by name", () => {
  const out = SERVER_OK
    .replace(
      "fd closed, MR still registered: still reserved: ok",
      "fd closed, MR still registered: still reserved: MISMATCH",
    )
    .replace("device memory after the client's SEND: ok\n", "");
  assert.deepEqual(failedChecks(out, PEERMEM_CHECKS.server), [
    "device memory after the client's SEND: not printed",
    "fd closed, MR still registered: still reserved: MISMATCH",
  ]);
});

Deno.test("a mismatch keeps its explanation, even when it holds ': ' itself", () => {
  const why = "MISMATCH (status 0: success; 3 of 4194304 bytes differ, the first at 2097152: " +
    "0x00, want 0x5e)";
  const out = SERVER_OK.replace(
    "device memory after the client's READ and WRITE: ok",
    `device memory after the client's READ and WRITE: ${why}`,
  );
  assert.deepEqual(failedChecks(out, PEERMEM_CHECKS.server), [
    `device memory after the client's READ and WRITE: ${why}`,
  ]);
});

Deno.test("the line where an end gave up is found, other lines are not", () => {
  const out = "READ: the server's device memory into ours: ok\nFAIL: no completion in 120 s\n";
  assert.deepEqual(dieLines(out), ["FAIL: no completion in 120 s"]);
  assert.deepEqual(dieLines(SERVER_OK), []);
});

Deno.test("peermem failure evidence names the error counters that moved, not the traffic ones", () => {
  assert.equal(
    errorCounters({
      sent_pkts: 900,
      rcvd_pkts: 800,
      retry_exceeded: 1,
      rcvd_psn_err: 0,
      retransmits: 7,
    }),
    "retry_exceeded=1 retransmits=7",
  );
  assert.equal(errorCounters({ sent_pkts: 5, sent_acks: 2 }), "none");
});
