/** harness/matrix/keep_failed.ts: failing rows' logs copied out of the checkout, old runs pruned. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { KEEP_RUNS, keepFailedRows, transcriptTail } from "../../harness/matrix/keep_failed.ts";

async function fakeReport(root: string, id: string, rows: string[]): Promise<string> {
  const dir = join(root, "reports", id);
  for (const r of rows) {
    await Deno.mkdir(join(dir, "rows", r), { recursive: true });
    await Deno.writeTextFile(join(dir, "rows", r, "transcript.log"), `a\nb\n${r} failed\n`);
  }
  await Deno.writeTextFile(join(dir, "matrix.json"), "{}");
  return dir;
}

Deno.test("the failing rows and matrix.json are copied; passing rows are not", async () => {
  const root = await Deno.makeTempDir();
  try {
    const dir = await fakeReport(root, "20261203T010000-aaaaaa", ["peermem", "boot"]);
    const cache = join(root, "cache");
    const kept = await keepFailedRows(cache, dir, ["peermem"]);
    assert.equal(kept, join(cache, "failed-rows", "20261203T010000-aaaaaa"));
    const names = [...Deno.readDirSync(kept!)].map((e) => e.name).sort();
    assert.deepEqual(names, ["matrix.json", "peermem"]);
    assert.match(await Deno.readTextFile(join(kept!, "peermem", "transcript.log")), /failed/);
    assert.equal(await keepFailedRows(cache, dir, []), undefined);
    assert.deepEqual(await transcriptTail(dir, "peermem", 2), ["b", "peermem failed"]);
    assert.deepEqual(await transcriptTail(dir, "no-such-row", 2), []);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test(`only the newest ${KEEP_RUNS} runs are kept`, async () => {
  const root = await Deno.makeTempDir();
  try {
    const cache = join(root, "cache");
    const ids = Array.from({ length: KEEP_RUNS + 2 }, (_, i) => `2026120${i}T000000-abcdef`);
    for (const id of ids) await keepFailedRows(cache, await fakeReport(root, id, ["x"]), ["x"]);
    const left = [...Deno.readDirSync(join(cache, "failed-rows"))].map((e) => e.name).sort();
    assert.deepEqual(left, ids.slice(2));
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
