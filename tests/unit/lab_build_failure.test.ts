/** A failed build is told in full once; later rows that need it get one line pointing there. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { defaultConfig } from "../../harness/config.ts";
import { Lab } from "../../harness/matrix/lab.ts";
import type { Row } from "../../harness/matrix/row.ts";
import { runRow } from "../../harness/matrix/runner.ts";
import { setQuiet } from "../../harness/progress.ts";

setQuiet(true);

Deno.test("a broken switch build: the first row has the log tail, the next two one line", async () => {
  // A repository whose switch does not compile, and a cache of its own.
  const repo = await Deno.makeTempDir();
  const cacheDir = await Deno.makeTempDir();
  const runDir = await Deno.makeTempDir();
  await Deno.mkdir(join(repo, "qemu", "switch"), { recursive: true });
  await Deno.writeTextFile(
    join(repo, "qemu", "switch", "Makefile"),
    "all:\n\t@echo 'main.c:1: error: planted compile error'; exit 1\n",
  );
  const lab = new Lab(defaultConfig({ repoRoot: repo, cacheDir, accel: "tcg" }));
  const row = (id: string): Row => ({
    id,
    title: "needs the switch",
    needs: { guests: 0, builds: ["switch"] },
    timeoutSec: 60,
    run: () => Promise.resolve(),
  });
  const results = [];
  for (const id of ["first", "second", "third"]) results.push(await runRow(row(id), lab, runDir));
  assert.deepEqual(results.map((r) => r.status), ["ERROR", "ERROR", "ERROR"]);
  const [first, ...later] = results.map((r) => r.reason ?? "");
  assert.match(first, /build switch failed: make .* exited 2; see .*make\.log/);
  assert.match(first, /planted compile error/, "the first row carries the log's last lines");
  for (const reason of later) {
    assert.equal(reason.split("\n").length, 1, reason);
    assert.match(reason, /^needs build switch, which failed in row first: make .*make\.log$/);
  }
  for (const d of [repo, cacheDir, runDir]) await Deno.remove(d, { recursive: true });
});
