/** The history store: publish, idempotence, concurrent publishers, the lock, pruning, bad input. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadHistory, LOCK_FILE, publishRun, readIndex } from "../../harness/report/history.ts";
import { HistoryFormatError } from "../../harness/report/history_index.ts";
import { LockHeldError } from "../../harness/report/lock.ts";
import { NotAReportError } from "../../harness/report/run_source.ts";
import { parseMatrixJson } from "../../harness/report/schema.ts";
import {
  logLines,
  sampleMatrix,
  snapshotTree,
  writeBenchDir,
  writeRunDir,
} from "./history_fixture.ts";

const ROWS = [
  { id: "switch", status: "PASS" as const, measurements: { frames: 100 } },
  { id: "qtest-vnic", status: "FAIL" as const },
];

Deno.test("publish copies the report and artifacts, renders pages, indexes the run", async () => {
  const tmp = await Deno.makeTempDir();
  const run = await writeRunDir(tmp, sampleMatrix("r1", "2026-12-01T10:00:00Z", "c1", ROWS));
  const site = join(tmp, "site");
  const { log } = logLines();
  const r = await publishRun(run, site, { log });
  assert.equal(r.published, true);
  for (
    const f of [
      "index.html",
      "index.json",
      "runs/r1/index.html",
      "runs/r1/matrix.json",
      "runs/r1/junit.xml",
      "runs/r1/rows/switch/transcript.log",
    ]
  ) assert.ok((await Deno.stat(join(site, f))).isFile, f);
  const idx = await readIndex(site);
  assert.equal(idx.runs.length, 1);
  const e = idx.runs[0];
  assert.deepEqual(
    [e.runId, e.kind, e.path, e.project, e.status, e.host.hostname],
    ["r1", "matrix", "runs/r1/", "c1", "FAIL", "h"],
  );
  assert.deepEqual(e.rows.map((x) => [x.id, x.status, x.durationSec]), [
    ["switch", "PASS", 1],
    ["qtest-vnic", "FAIL", 1],
  ]);
  assert.deepEqual(e.rows[0].measurements, { frames: { value: 100, unit: "u" } });
  const front = await Deno.readTextFile(join(site, "index.html"));
  assert.match(front, /href="runs\/r1\/index.html"/);
  assert.match(front, />F<\/td>/); // status as a letter, not colour alone
});

Deno.test("publishing the same run again changes nothing and says so", async () => {
  const tmp = await Deno.makeTempDir();
  const run = await writeRunDir(tmp, sampleMatrix("r1", "2026-12-01T10:00:00Z", "c1", ROWS));
  const site = join(tmp, "site");
  await publishRun(run, site, { log: () => {} });
  const before = await snapshotTree(site);
  const { lines, log } = logLines();
  const again = await publishRun(run, site, { log, keep: 1 });
  assert.equal(again.published, false);
  assert.match(lines.join("\n"), /r1 is already in .*nothing changed/);
  assert.deepEqual(await snapshotTree(site), before);
});

Deno.test("two publishers racing in one process both land, each once", async () => {
  const tmp = await Deno.makeTempDir();
  const site = join(tmp, "site");
  const runs = await Promise.all(
    ["a", "b", "c"].map((id, i) =>
      writeRunDir(tmp, sampleMatrix(id, `2026-12-01T1${i}:00:00Z`, "c1", ROWS))
    ),
  );
  const results = await Promise.all(runs.map((r) => publishRun(r, site, { log: () => {} })));
  assert.deepEqual(results.map((r) => r.published), [true, true, true]);
  const idx = await readIndex(site);
  assert.deepEqual(idx.runs.map((r) => r.runId), ["c", "b", "a"]); // newest first
  const left = [...Deno.readDirSync(site)].map((e) => e.name).sort();
  assert.deepEqual(left, ["index.html", "index.json", "runs"]); // no lock, no temp files left
});

Deno.test("a lock held by a live process is waited for, then refused; nothing changes", async () => {
  const tmp = await Deno.makeTempDir();
  const site = join(tmp, "site");
  await publishRun(
    await writeRunDir(tmp, sampleMatrix("r1", "2026-12-01T10:00:00Z", "c1", ROWS)),
    site,
    { log: () => {} },
  );
  const holder = new Deno.Command("sleep", { args: ["30"] }).spawn();
  try {
    await Deno.writeTextFile(
      join(site, LOCK_FILE),
      JSON.stringify({ pid: holder.pid, host: Deno.hostname(), at: "then", token: "t" }),
    );
    const before = await snapshotTree(site);
    const run2 = await writeRunDir(tmp, sampleMatrix("r2", "2026-12-01T11:00:00Z", "c1", ROWS));
    await assert.rejects(
      () => publishRun(run2, site, { log: () => {}, lock: { timeoutMs: 300, pollMs: 20 } }),
      (e: unknown) => e instanceof LockHeldError && e.message.includes(`pid ${holder.pid}`),
    );
    assert.deepEqual(await snapshotTree(site), before);
  } finally {
    holder.kill();
    await holder.status;
  }
});

Deno.test("a stale lock of a dead process on this host is taken over, with a message", async () => {
  const tmp = await Deno.makeTempDir();
  const site = join(tmp, "site");
  await Deno.mkdir(site);
  const gone = new Deno.Command("true").spawn();
  await gone.status;
  await Deno.writeTextFile(
    join(site, LOCK_FILE),
    JSON.stringify({ pid: gone.pid, host: Deno.hostname(), at: "then", token: "old" }),
  );
  const { lines, log } = logLines();
  const run = await writeRunDir(tmp, sampleMatrix("r1", "2026-12-01T10:00:00Z", "c1", ROWS));
  const r = await publishRun(run, site, { log, lock: { timeoutMs: 2000 } });
  assert.equal(r.published, true);
  assert.match(lines.join("\n"), new RegExp(`stale lock of pid ${gone.pid}`));
  await assert.rejects(() => Deno.stat(join(site, LOCK_FILE)), Deno.errors.NotFound);
});

Deno.test("--keep prunes the oldest runs of each kind; --max-age-days the old ones; dirs go too", async () => {
  const tmp = await Deno.makeTempDir();
  const site = join(tmp, "site");
  const now = new Date("2026-12-10T00:00:00Z");
  for (const [id, day] of [["d1", "01"], ["d5", "05"], ["d8", "08"], ["d9", "09"]]) {
    const run = await writeRunDir(tmp, sampleMatrix(id, `2026-12-${day}T00:00:00Z`, "c1", ROWS));
    await publishRun(run, site, { log: () => {}, now });
  }
  for (const [id, at] of [["b0", "2026-11-30T00:00:00Z"], ["b1", "2026-12-07T00:00:00Z"]]) {
    await publishRun(await writeBenchDir(tmp, id, at, { x: 1 }), site, { log: () => {}, now });
  }
  const r = await publishRun(
    await writeRunDir(tmp, sampleMatrix("d9b", "2026-12-09T12:00:00Z", "c1", ROWS)),
    site,
    { log: () => {}, now, keep: 3, maxAgeDays: 7 },
  );
  // keep 3 of each kind: d1, d5 go; both bench runs are within 3, but b0 is older than 7 days
  assert.deepEqual(r.pruned.sort(), ["b0", "d1", "d5"]);
  const idx = await readIndex(site);
  assert.deepEqual(idx.runs.map((x) => x.runId), ["d9b", "d9", "d8", "b1"]);
  const dirs = [...Deno.readDirSync(join(site, "runs"))].map((e) => e.name).sort();
  assert.deepEqual(dirs, ["b1", "d8", "d9", "d9b"]);
});

Deno.test("bad input: a missing dir, a non-report, a corrupt index.json: clear errors, nothing lost", async () => {
  const tmp = await Deno.makeTempDir();
  const site = join(tmp, "site");
  await assert.rejects(
    () => publishRun(join(tmp, "nope"), site),
    (e: unknown) => e instanceof NotAReportError && /no such directory/.test(e.message),
  );
  await Deno.mkdir(join(tmp, "empty"));
  await assert.rejects(
    () => publishRun(join(tmp, "empty"), site),
    (e: unknown) => e instanceof NotAReportError && /not a report directory/.test(e.message),
  );
  const bad = join(tmp, "bad");
  await Deno.mkdir(bad);
  await Deno.writeTextFile(join(bad, "matrix.json"), "{ not json");
  await assert.rejects(() => publishRun(bad, site), /not JSON/);
  // a corrupt index: the publish stops before writing anything, the index stays as it was
  const run = await writeRunDir(tmp, sampleMatrix("r1", "2026-12-01T10:00:00Z", "c1", ROWS));
  await publishRun(run, site, { log: () => {} });
  const garbled = (await Deno.readTextFile(join(site, "index.json"))).slice(0, 40);
  await Deno.writeTextFile(join(site, "index.json"), garbled);
  const before = await snapshotTree(site);
  const run2 = await writeRunDir(tmp, sampleMatrix("r2", "2026-12-01T11:00:00Z", "c1", ROWS));
  await assert.rejects(
    () => publishRun(run2, site, { log: () => {} }),
    (e: unknown) => e instanceof HistoryFormatError && /nothing was changed/.test(e.message),
  );
  assert.deepEqual(await snapshotTree(site), before);
  await assert.rejects(() => Deno.stat(join(site, LOCK_FILE)), Deno.errors.NotFound);
  // a run directory removed by hand: named, nothing written
  const site2 = join(tmp, "site2");
  await publishRun(run, site2, { log: () => {} });
  await Deno.remove(join(site2, "runs/r1/matrix.json"));
  const before2 = await snapshotTree(site2);
  await assert.rejects(
    () => publishRun(run2, site2, { log: () => {} }),
    (e: unknown) => e instanceof HistoryFormatError && /matrix.json is missing/.test(e.message),
  );
  assert.deepEqual(await snapshotTree(site2), before2);
});

Deno.test("files over the size limit and missing artifacts are listed, not copied", async () => {
  const tmp = await Deno.makeTempDir();
  const m = sampleMatrix("r1", "2026-12-01T10:00:00Z", "c1", ROWS);
  m.rows[0].artifacts.push("rows/switch/big.pcapng", "rows/switch/gone.log");
  const run = await writeRunDir(tmp, m);
  await Deno.writeFile(join(run, "rows/switch/big.pcapng"), new Uint8Array(4096));
  const site = join(tmp, "site");
  const r = await publishRun(run, site, { log: () => {}, maxFileBytes: 1024 });
  assert.deepEqual(r.skipped.map((s) => [s.path, s.bytes, s.reason]), [
    ["rows/switch/big.pcapng", 4096, "over 1024 bytes"],
    ["rows/switch/gone.log", undefined, "missing"],
  ]);
  await assert.rejects(() => Deno.stat(join(site, "runs/r1/rows/switch/big.pcapng")));
  assert.deepEqual((await readIndex(site)).runs[0].skipped.length, 2);
  const published = parseMatrixJson(await Deno.readTextFile(join(site, "runs/r1/matrix.json")));
  assert.deepEqual(published.rows[0].artifacts, ["rows/switch/transcript.log"]);
});

Deno.test("a merged report's artifacts outside its directory are copied under rows/<row>/", async () => {
  const tmp = await Deno.makeTempDir();
  const shard = await writeRunDir(tmp, sampleMatrix("s1", "2026-12-01T10:00:00Z", "c1", ROWS));
  const merged = sampleMatrix("merged-s1", "2026-12-01T10:00:00Z", "c1", ROWS);
  merged.rows[0].artifacts = ["../s1/rows/switch/transcript.log"];
  const dir = join(tmp, "merged");
  await Deno.mkdir(dir);
  await Deno.writeTextFile(join(dir, "matrix.json"), JSON.stringify(merged));
  assert.ok(shard);
  const site = join(tmp, "site");
  await publishRun(dir, site, { log: () => {} });
  const got = parseMatrixJson(await Deno.readTextFile(join(site, "runs/merged-s1/matrix.json")));
  assert.deepEqual(got.rows[0].artifacts, ["rows/switch/transcript.log"]);
  assert.equal(
    await Deno.readTextFile(join(site, "runs/merged-s1/rows/switch/transcript.log")),
    "switch transcript\n",
  );
});

Deno.test("bench runs publish beside matrix runs and give the pages series", async () => {
  const tmp = await Deno.makeTempDir();
  const site = join(tmp, "site");
  await publishRun(
    await writeBenchDir(tmp, "b1", "2026-12-01T09:00:00Z", { "cnuas_ib.bw": 10 }),
    site,
    { log: () => {} },
  );
  await publishRun(
    await writeBenchDir(tmp, "b2", "2026-12-01T10:00:00Z", { "cnuas_ib.bw": 12 }),
    site,
    { log: () => {} },
  );
  const h = await loadHistory(site);
  const b2 = h.index.runs.find((r) => r.runId === "b2")!;
  assert.equal(b2.kind, "bench");
  assert.deepEqual(b2.rows.map((r) => [r.id, r.status]), [
    ["benchRdmaPerf", "PASS"],
    ["benchNet", "ERROR"],
  ]);
  const page = await Deno.readTextFile(join(site, "runs/b2/index.html"));
  assert.match(page, /benchRdmaPerf\.cnuas_ib\.bw<\/td><td>12<\/td><td>MiB\/s<\/td><td>10<\/td>/);
  assert.match(page, /ERROR: guest did not boot/);
});

Deno.test("publish refuses a --dev-modules run and leaves the history as it was", async () => {
  const tmp = await Deno.makeTempDir();
  const m = sampleMatrix("dev1", "2026-12-01T10:00:00Z", "c1", ROWS);
  const run = await writeRunDir(tmp, { ...m, provenance: { ...m.provenance, devModules: true } });
  const site = join(tmp, "site");
  await assert.rejects(publishRun(run, site, { log: () => {} }), /--dev-modules/);
  assert.deepEqual((await readIndex(site)).runs, []);
  await Deno.remove(tmp, { recursive: true });
});
