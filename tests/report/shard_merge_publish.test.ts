/**
 * End to end, on this machine: shard runs of the rows that need no guests
 * (`switch`, `qtest-vnic`, `qtest-gpu`; their builds come from the cache),
 * merged with `report merge`, published twice into one history, read back
 * with `report history`, `report diff` and index.json. About 1.5 minutes
 * with a warm cache.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { REPO_ROOT } from "../../harness/config.ts";
import { readIndex } from "../../harness/report/history.ts";
import { parseMatrixJson } from "../../harness/report/schema.ts";

/** Run the CLI; returns its stdout, failing the test with its output when it exits non-zero. */
async function cli(...args: string[]): Promise<string> {
  const r = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--no-check", "harness/cli.ts", ...args],
    cwd: REPO_ROOT,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const out = new TextDecoder().decode(r.stdout), err = new TextDecoder().decode(r.stderr);
  assert.equal(r.code, 0, `cli ${args.join(" ")} exited ${r.code}:\n${out}\n${err}`);
  return out;
}

/** Three shards of `rows` into `<dir>/s<i>`, merged into `<dir>/merged`; returns the merged dir. */
async function shardAndMerge(dir: string, rows: string[]): Promise<string> {
  const shards: string[] = [];
  for (const i of [1, 2, 3]) {
    const reports = join(dir, `s${i}`);
    await cli(
      "matrix",
      ...rows.flatMap((r) => ["--row", r]),
      "--shard",
      `${i}/3`,
      "--reports-dir",
      reports,
    );
    shards.push(join(reports, "latest"));
  }
  const merged = join(dir, "merged");
  await cli("report", "merge", ...shards, "--out", merged);
  return merged;
}

Deno.test("shard → merge → publish twice → history, diff and index.json show both runs", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "cnuas-hil-history-e2e-" });
  const site = join(tmp, "site");
  try {
    const first = await shardAndMerge(join(tmp, "round1"), ["switch", "qtest-vnic", "qtest-gpu"]);
    // the second round leaves shards 2/3 and 3/3 without rows: they must still merge
    const second = await shardAndMerge(join(tmp, "round2"), ["switch"]);
    const m1 = parseMatrixJson(await Deno.readTextFile(join(first, "matrix.json")));
    const m2 = parseMatrixJson(await Deno.readTextFile(join(second, "matrix.json")));
    assert.deepEqual(m1.rows.map((r) => r.id).sort(), ["qtest-gpu", "qtest-vnic", "switch"]);
    assert.deepEqual(m2.rows.map((r) => r.id), ["switch"]);
    assert.match(m1.provenance.shard!, /^merged from 1\/3, 2\/3, 3\/3$/);

    assert.match(await cli("report", "publish", first, "--to", site), /published merged-/);
    assert.match(await cli("report", "publish", second, "--to", site), /published merged-/);
    const before = await Deno.readTextFile(join(site, "index.json"));
    assert.match(await cli("report", "publish", first, "--to", site), /nothing changed/);
    assert.equal(await Deno.readTextFile(join(site, "index.json")), before);

    const idx = await readIndex(site);
    const id1 = m1.provenance.runId, id2 = m2.provenance.runId;
    assert.deepEqual(idx.runs.map((r) => r.runId), [id2, id1]);
    assert.deepEqual(
      idx.runs[1].rows.map((r) => [r.id, r.status]),
      m1.rows.map((r) => [r.id, r.status]),
    );
    // the merged report's artifacts (in its shards, outside its directory) were copied
    const published = parseMatrixJson(
      await Deno.readTextFile(join(site, "runs", id1, "matrix.json")),
    );
    for (const r of published.rows) {
      assert.ok(r.artifacts.includes(`rows/${r.id}/transcript.log`), r.id);
      await Deno.stat(join(site, "runs", id1, "rows", r.id, "transcript.log"));
    }
    await Deno.stat(join(site, "runs", id1, "index.html"));

    const grid = await cli("report", "history", "--from", site);
    assert.match(grid, new RegExp(`1\\s+${id1}`));
    assert.match(grid, new RegExp(`2\\s+${id2}`));
    const status = (id: string) => m1.rows.find((r) => r.id === id)!.status[0];
    assert.match(grid, new RegExp(`^switch\\s+${status("switch")} [\\d.]+\\s+\\S \\d`, "m"));
    assert.match(grid, new RegExp(`^qtest-gpu\\s+${status("qtest-gpu")} [\\d.]+\\s+·`, "m"));

    const diff = await cli("report", "diff", id1, id2, "--history", site);
    assert.match(diff, /REMOVED\s+qtest-vnic/);
    assert.match(diff, /REMOVED\s+qtest-gpu/);
    const front = await Deno.readTextFile(join(site, "index.html"));
    assert.ok(front.includes(`runs/${id1}/index.html`) && front.includes(`runs/${id2}/index.html`));
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});
