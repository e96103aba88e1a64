import assert from "node:assert/strict";
import { join } from "node:path";
import {
  type CompatJson,
  LIBRARY_VERSIONS,
  MODULE_VERSIONS,
  toCompat,
  toHtml,
  toJunit,
  toMarkdown,
} from "../../harness/report/render.ts";
import { libraryCredits, loadRows, moduleCredits } from "../../harness/matrix/registry.ts";
import { REPO_ROOT } from "../../harness/config.ts";
import { MODULES } from "../../harness/matrix/row.ts";
import {
  type MatrixJson,
  parseMatrixJson,
  ReportFormatError,
  rollUp,
} from "../../harness/report/schema.ts";
import { MergeConflictError, mergeReports } from "../../harness/report/merge.ts";
import { writeReport } from "../../harness/report/write.ts";
import { keyMeasurement } from "../../harness/report/html.ts";
import { splitTranscript } from "../../harness/report/page_data.ts";
import { cDefine, readLibraryVersion, readModuleVersion } from "../../harness/build/versions.ts";

function sample(runId: string, ids: string[]): MatrixJson {
  return {
    provenance: {
      runId,
      startedAt: "2026-11-29T00:00:00.000Z",
      project: "abc123",
      guestKernel: "6.12.117+deb13-amd64",
      qemu: "1:7.2+dfsg-7+deb12u18",
      rdmaCore: "56.1-1",
      accel: "tcg",
      host: { kernel: "6.1", hostname: "h", cpus: 2 },
      shard: runId,
    },
    rows: ids.map((id, i) => ({
      id,
      title: `${id} title`,
      status: (["PASS", "FAIL", "MISS", "ERROR"] as const)[i % 4],
      durationSec: i + 0.5,
      ...(i % 4 ? { reason: `why <${id}>` } : {}),
      measurements: { bootToSshSec: { value: 14.25, unit: "s" } },
      artifacts: [`rows/${id}/transcript.log`],
      steps: [{ name: "step & more", status: "PASS", durationSec: 0.1 }],
    })),
  };
}

Deno.test("roll-up follows KCIDB priority FAIL > ERROR > MISS > PASS > DONE > SKIP", () => {
  assert.equal(rollUp(["PASS", "MISS", "ERROR"]), "ERROR");
  assert.equal(rollUp(["PASS", "FAIL", "ERROR"]), "FAIL");
  assert.equal(rollUp(["DONE", "PASS"]), "PASS");
  assert.equal(rollUp(["SKIP", "DONE"]), "DONE");
  assert.equal(rollUp([]), "SKIP");
});

Deno.test("matrix.json written to disk parses back to the same report", async () => {
  const dir = await Deno.makeTempDir();
  const m = sample("r1", ["boot", "switch", "ibstat", "peermem"]);
  await writeReport(join(dir, "r1"), m, dir);
  const back = parseMatrixJson(await Deno.readTextFile(join(dir, "latest", "matrix.json")));
  assert.deepEqual(back, m);
  const compat = JSON.parse(
    await Deno.readTextFile(join(dir, "latest", "compat.json")),
  ) as CompatJson;
  assert.deepEqual(compat.libraries.map((l) => l.name), ["libcnuasdev"]);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("junit has one testcase per row with failure, error and skipped mapped", () => {
  const x = toJunit(sample("r1", ["boot", "switch", "ibstat", "peermem"]));
  assert.equal((x.match(/<testcase /g) ?? []).length, 4);
  assert.match(x, /tests="4" failures="1" errors="1" skipped="1"/);
  assert.match(x, /name="switch"[^]*?<failure message="why &lt;switch&gt;"/);
  assert.match(x, /name="peermem"[^]*?<error /);
  assert.match(x, /name="ibstat"[^]*?<skipped /);
  assert.match(x, /<property name="bootToSshSec" value="14.25" unit="s"\/>/);
});

Deno.test("markdown and html show every row, its status and its measurements", () => {
  const m = sample("r1", ["boot", "switch"]);
  const md = toMarkdown(m);
  assert.match(md, /\| boot \| PASS \| 0\.5 \| bootToSshSec=14\.250 s \|/);
  assert.match(md, /\| switch \| FAIL \|/);
  assert.match(md, /Overall: \*\*FAIL\*\*/);
  const html = toHtml(m);
  assert.ok(!/<link|<script src/.test(html), "self-contained");
  assert.match(html, /why &lt;switch&gt;/);
  assert.match(html, /step &amp; more/);
  assert.ok(!/Ran beside/.test(html), "no row ran beside another");
});

Deno.test("the page says which rows ran beside a row, sharing the cores", () => {
  const m = sample("r1", ["docs", "qtest-vnic"]);
  m.rows[0].ranBeside = ["qtest-vnic"];
  assert.match(toHtml(m), /Ran beside qtest-vnic, sharing the host's cores/);
});

Deno.test("compat.json lists module versions with the rows that validated them", async () => {
  const c = toCompat(sample("r1", ["driver-load"]), await moduleCredits(), await libraryCredits());
  const net = c.modules.find((m) => m.name === "cnuas_net")!;
  assert.equal(net.version, "0.1.0");
  assert.deepEqual(net.rows, ["driver-load:PASS"]);
  assert.equal(c.guestKernel, "6.12.117+deb13-amd64");
  assert.equal(c.modules.find((m) => m.name === "cnuas_ib")!.status, "SKIP");
});

Deno.test("compat.json credits peermem to the modules the row declares, not cnuasgpu_host", async () => {
  const credits = await moduleCredits();
  assert.deepEqual([...credits["peermem"]].sort(), ["cnuas_ib", "cnuas_net", "cnuasgpu"]);
  const c = toCompat(sample("r1", ["peermem", "gpu-host"]), credits, await libraryCredits());
  const rows = (name: string) => c.modules.find((m) => m.name === name)!.rows;
  for (const name of ["cnuas_net", "cnuas_ib"]) {
    assert.deepEqual(rows(name), ["peermem:PASS"], name);
  }
  // gpu-host loads both GPU modules (together, unloaded in both orders)
  assert.deepEqual(rows("cnuasgpu"), ["peermem:PASS", "gpu-host:FAIL"]);
  assert.deepEqual(rows("cnuasgpu_host"), ["gpu-host:FAIL"]);
});

Deno.test("compat.json credits cnuasgpu_host and libcnuasdev with the rows that ran them", async () => {
  const c = toCompat(
    sample("r1", ["gpu-host", "cnuasdev", "gpu-smoke", "boot"]),
    await moduleCredits(),
    await libraryCredits(),
  );
  const mod = (name: string) => c.modules.find((m) => m.name === name)!;
  assert.deepEqual(mod("cnuasgpu_host"), {
    name: "cnuasgpu_host",
    version: "0.1.0",
    rows: ["gpu-host:PASS", "cnuasdev:FAIL"],
    status: "FAIL",
  });
  // gpu-host loads cnuasgpu.ko too (both GPU modules together, either unload order)
  assert.deepEqual(mod("cnuasgpu").rows, ["gpu-host:PASS", "cnuasdev:FAIL", "gpu-smoke:MISS"]);
  assert.deepEqual(c.libraries, [
    { name: "libcnuasdev", version: "1.0.0", rows: ["cnuasdev:FAIL"], status: "FAIL" },
  ]);
  // a run without the library's row: listed, not validated
  const none = toCompat(sample("r2", ["boot"]), await moduleCredits(), await libraryCredits());
  assert.deepEqual(none.libraries, [
    { name: "libcnuasdev", version: "1.0.0", rows: [], status: "SKIP" },
  ]);
});

Deno.test("a row declares libcnuasdev exactly when it has the library installed", async () => {
  for (const r of await loadRows()) {
    const installs = r.needs.builds.includes("cnuasdev");
    assert.equal(r.libraries?.includes("libcnuasdev") ?? false, installs, r.id);
  }
  assert.deepEqual((await libraryCredits())["cnuasdev"], ["libcnuasdev"]);
});

Deno.test("compat.json's versions are the sources': MODULE_VERSION, the library's VERSION", async () => {
  const read = (p: string) => Deno.readTextFile(join(REPO_ROOT, p));
  for (const name of MODULES) {
    assert.equal(MODULE_VERSIONS[name], await readModuleVersion(REPO_ROOT, name), name);
  }
  const lib = LIBRARY_VERSIONS.libcnuasdev;
  assert.equal(await readLibraryVersion(REPO_ROOT), lib);
  assert.equal(cDefine(await read("drivers/lib/cnuasdev_priv.h"), "CNUASDEV_VERSION_STRING"), lib);
  const h = await read("drivers/lib/include/cnuasdev.h");
  const part = (p: string) =>
    new RegExp(`^#define\\s+CNUASDEV_VERSION_${p}\\s+(\\d+)`, "m").exec(h)?.[1];
  assert.equal(`${part("MAJOR")}.${part("MINOR")}.${part("PATCH")}`, lib);
});

Deno.test("every row that loads one of our modules declares it", async () => {
  const credits = await moduleCredits();
  for (const id of ["driver-load", "eth-forwarding", "ibstat", "roce-e2e", "gpu-smoke"]) {
    assert.ok(credits[id].length > 0, id);
  }
  for (const id of ["boot", "qtest-vnic", "switch", "qtest-gpu"]) {
    assert.deepEqual(credits[id], [], id);
  }
});

Deno.test("a malformed matrix.json is rejected naming the file", () => {
  assert.throws(
    () => parseMatrixJson("{", "x.json"),
    (e: Error) => e instanceof ReportFormatError && e.message.startsWith("x.json"),
  );
  assert.throws(
    () => parseMatrixJson(JSON.stringify({ provenance: {}, rows: [{ id: "a", status: "OK" }] })),
    ReportFormatError,
  );
});

Deno.test("merge combines shards' rows and rewrites artifact paths", async () => {
  const dir = await Deno.makeTempDir();
  await writeReport(join(dir, "s1"), sample("s1", ["boot", "switch"]));
  await Deno.mkdir(join(dir, "s2", "rows", "ibstat"), { recursive: true });
  await Deno.writeTextFile(
    join(dir, "s2", "rows", "ibstat", "transcript.log"),
    "[1.0s] == step step & more\n[1.1s] a line\n",
  );
  await writeReport(join(dir, "s2"), sample("s2", ["ibstat"]));
  const out = join(dir, "merged");
  const m = await mergeReports([join(dir, "s1"), join(dir, "s2")], out);
  assert.deepEqual(m.rows.map((r) => r.id), ["boot", "switch", "ibstat"]);
  assert.equal(m.rows[2].artifacts[0], "../s2/rows/ibstat/transcript.log");
  assert.match(m.provenance.shard!, /s1, s2/);
  const onDisk = parseMatrixJson(await Deno.readTextFile(join(out, "matrix.json")));
  assert.equal(onDisk.rows.length, 3);
  // the merged page's step excerpts live under the merged directory, the shard's stay its own
  const page = await Deno.readTextFile(join(out, "index.html"));
  assert.match(page, /href="rows\/ibstat\/steps\/1\.txt"/);
  assert.match(await Deno.readTextFile(join(out, "rows/ibstat/steps/1.txt")), /a line/);
  assert.match(page, /href="\.\.\/s2\/rows\/ibstat\/transcript\.log"/);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("merge refuses two shards that both ran a row", async () => {
  const dir = await Deno.makeTempDir();
  await writeReport(join(dir, "s1"), sample("s1", ["boot"]));
  await writeReport(join(dir, "s2"), sample("s2", ["boot"]));
  await assert.rejects(
    mergeReports([join(dir, "s1"), join(dir, "s2")], join(dir, "m")),
    MergeConflictError,
  );
  await Deno.remove(dir, { recursive: true });
});

Deno.test("merge refuses shards of different depths (a quick row is not a deep one)", async () => {
  const dir = await Deno.makeTempDir();
  const at = (runId: string, ids: string[], depth: "quick" | "deep"): MatrixJson => {
    const m = sample(runId, ids);
    return { ...m, provenance: { ...m.provenance, depth } };
  };
  await writeReport(join(dir, "s1"), at("s1", ["boot"], "quick"));
  await writeReport(join(dir, "s2"), at("s2", ["ibstat"], "deep"));
  await assert.rejects(
    mergeReports([join(dir, "s1"), join(dir, "s2")], join(dir, "m")),
    /different depths \(quick, deep\)/,
  );
  await writeReport(join(dir, "s3"), at("s3", ["ibstat"], "quick"));
  const m = await mergeReports([join(dir, "s1"), join(dir, "s3")], join(dir, "m"));
  assert.equal(m.provenance.depth, "quick");
  assert.match(await Deno.readTextFile(join(dir, "m", "index.html")), /depth quick/);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a transcript splits into the lines of each step, by name and occurrence", () => {
  const text = [
    "[0.1s] before any step",
    "[1.0s] == step outer",
    "[1.1s] outer 1",
    "[2.0s] == step inner",
    "[2.1s] inner 1",
    "g0$ multi",
    "  → exit 0",
    "[3.0s] == step outer",
    "[3.1s] second outer",
    "",
  ].join("\n");
  // matrix.json lists steps as they finished: inner before outer
  const [inner, outer1, outer2, none] = splitTranscript(text, ["inner", "outer", "outer", "x"]);
  assert.deepEqual(inner, ["[2.0s] == step inner", "[2.1s] inner 1", "g0$ multi", "  → exit 0"]);
  assert.deepEqual(outer1, ["[1.0s] == step outer", "[1.1s] outer 1"]);
  assert.deepEqual(outer2, ["[3.0s] == step outer", "[3.1s] second outer"]);
  assert.deepEqual(none, []);
});

Deno.test("the page escapes every text and shows status as text, not colour alone", () => {
  const m = sample("r<1>", ["boot", "sw<itch>"]);
  const html = toHtml(m);
  assert.doesNotMatch(html, /<itch>|r<1>|why <switch>/);
  assert.match(html, /✗ FAIL<\/span>/);
  assert.match(html, /data-count="FAIL">1</);
  assert.equal(keyMeasurement(m.rows[0])?.[0], "bootToSshSec");
  assert.match(toHtml({ ...m, rows: [] }), /This run has no rows/);
});

Deno.test("artifact links are relative file paths: a scheme-like or #-holding name stays a file", () => {
  const m = sample("links", ["boot"]);
  m.rows[0].artifacts = ["rows/boot/javascript:alert(1)", "rows/boot/a #b?.txt", "../shard/x.log"];
  const html = toHtml(m);
  assert.match(html, /href="rows\/boot\/javascript%3Aalert\(1\)"/);
  assert.match(html, /href="rows\/boot\/a%20%23b%3F\.txt"/);
  assert.match(html, /href="\.\.\/shard\/x\.log"/);
  assert.doesNotMatch(html, /href="javascript:/);
});

Deno.test("merge refuses a --dev-modules run (modules from a working tree, not the matrix's)", async () => {
  const dir = await Deno.makeTempDir();
  const m = sample("s2", ["ibstat"]);
  await writeReport(join(dir, "s1"), sample("s1", ["boot"]));
  await writeReport(join(dir, "s2"), { ...m, provenance: { ...m.provenance, devModules: true } });
  await assert.rejects(
    mergeReports([join(dir, "s1"), join(dir, "s2")], join(dir, "m")),
    /--dev-modules/,
  );
  await Deno.remove(dir, { recursive: true });
});
