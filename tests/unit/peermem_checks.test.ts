/** The peermem row reads drivers/test/peermem.c's check lines; names may hold ": " themselves. */
import assert from "node:assert/strict";
import { failedChecks, PEERMEM_CHECKS } from "../../harness/guest/peermem.ts";

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
