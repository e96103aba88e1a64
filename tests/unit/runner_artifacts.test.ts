/** The runner lists only artifacts that exist when the row ends. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { defaultConfig } from "../../harness/config.ts";
import { Lab } from "../../harness/matrix/lab.ts";
import type { Row } from "../../harness/matrix/row.ts";
import { runRow } from "../../harness/matrix/runner.ts";
import { setQuiet } from "../../harness/progress.ts";

setQuiet(true);

Deno.test("an artifact the row deleted (a clean capture) is not listed; one it kept is", async () => {
  const runDir = await Deno.makeTempDir();
  const row: Row = {
    id: "artifacts",
    title: "attaches two files, deletes one",
    needs: { guests: 0, builds: [] },
    timeoutSec: 30,
    async run(ctx) {
      for (const name of ["kept.pcapng", "clean.pcapng"]) {
        await Deno.writeTextFile(join(ctx.dir, name), "x");
        ctx.artifact(name);
      }
      await Deno.remove(join(ctx.dir, "clean.pcapng"));
    },
  };
  const r = await runRow(row, new Lab(defaultConfig({ accel: "tcg" })), runDir);
  assert.equal(r.status, "PASS", r.reason);
  assert.ok(r.artifacts.some((a) => a.endsWith("kept.pcapng")), JSON.stringify(r.artifacts));
  assert.ok(!r.artifacts.some((a) => a.endsWith("clean.pcapng")), JSON.stringify(r.artifacts));
  assert.ok(r.artifacts.some((a) => a.endsWith("transcript.log")));
  await Deno.remove(runDir, { recursive: true });
});
