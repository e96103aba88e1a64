/** The command line refuses what it would otherwise silently ignore. */
import assert from "node:assert/strict";
import { main } from "../../harness/cli.ts";
import { UsageError } from "../../harness/errors.ts";

Deno.test("words after a command that takes none are a usage error, nothing runs", async () => {
  await assert.rejects(
    () => main(["build", "--only", "modules", "guestprogs"]),
    (e: unknown) =>
      e instanceof UsageError && /build: unexpected 'guestprogs'/.test(e.message) &&
      /--only a --only b/.test(e.message),
  );
  await assert.rejects(() => main(["bench", "--only", "a", "b", "c"]), /unexpected 'b' 'c'/);
});

Deno.test("--dev-modules is refused where a gate or a measurement would run on it", async () => {
  for (const cmd of ["test", "bench", "build", "soak"]) {
    await assert.rejects(
      () => main([cmd, "--dev-modules"]),
      (e: unknown) =>
        e instanceof UsageError && new RegExp(`--dev-modules is for matrix.*not ${cmd}`).test(
          e.message,
        ),
    );
  }
});
