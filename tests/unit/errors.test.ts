/** The CLI prints a user's mistake as one line and a fault with its stack. */
import assert from "node:assert/strict";
import { describeError, HilError, UsageError, UserError } from "../../harness/errors.ts";
import { UnknownRowError } from "../../harness/matrix/registry.ts";
import { ChecksumError, DownloadError } from "../../harness/pins.ts";
import { HostSetupError } from "../../harness/host.ts";
import { MergeConflictError } from "../../harness/report/merge.ts";

Deno.test("user-facing errors print as their message alone", () => {
  for (
    const e of [
      new UsageError("--shard wants i/n"),
      new UnknownRowError("no row bogus"),
      new HostSetupError("apt-get failed"),
      new DownloadError("404"),
      new ChecksumError("sha256 differs"),
      new MergeConflictError("row boot twice"),
    ]
  ) {
    assert.ok(e instanceof UserError, e.name);
    assert.equal(describeError(e), `error: ${e.message}`);
  }
});

Deno.test("faults print the top of their stack; names are the class names", () => {
  class LabFault extends HilError {}
  const fault = new LabFault("qemu died");
  assert.equal(fault.name, "LabFault");
  assert.equal(new UsageError("x").name, "UsageError");
  const text = describeError(fault);
  assert.match(text, /^error: qemu died\n\s+at /);
  assert.match(describeError(new TypeError("boom")), /^error: boom\n\s+at /);
  assert.equal(describeError("plain"), "error: plain");
});
