/**
 * The KCIDB export: a real run and a synthetic one with every status are
 * validated against kcidb-io's published schema (v5.3, vendored under
 * tests/fixtures/kcidb/) with Ajv in draft-07 mode with format checks, as
 * kcidb-io itself validates (jsonschema.Draft7Validator with its FORMAT_CHECKER).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Ajv, type ValidateFunction } from "ajv";
import ajvFormats from "ajv-formats";
import { main } from "../../harness/cli.ts";
import { exec } from "../../harness/exec.ts";
import { REPO_ROOT } from "../../harness/config.ts";
import {
  KCIDB_ORIGIN_PATTERN,
  KCIDB_VERSION,
  KcidbOriginError,
  type KcidbReport,
  slug,
  toKcidb,
} from "../../harness/report/kcidb.ts";
import { exportKcidb, KcidbInputError, resolveCommit } from "../../harness/report/kcidb_export.ts";
import {
  type MatrixJson,
  type Measurement,
  parseMatrixJson,
  STATUS_PRIORITY,
} from "../../harness/report/schema.ts";

const FIXTURES = new URL("../fixtures/", import.meta.url);
const SCHEMA_PATH = new URL("kcidb/kcidb-io.schema.v5.3.json", FIXTURES);
const REAL_RUN = new URL("report/run-20261201T215632-cde51a.matrix.json", FIXTURES);

interface SchemaDoc {
  properties: { version: { properties: { major: { const: number }; minor: { maximum: number } } } };
  $defs: Record<string, { pattern?: string; properties: Record<string, { pattern?: string }> }>;
}

const schema: SchemaDoc = JSON.parse(await Deno.readTextFile(SCHEMA_PATH));

function validator(): ValidateFunction {
  // Ajv's default class is draft-07, the draft kcidb-io validates with.
  const ajv = new Ajv({ allErrors: true, strict: true });
  // the CommonJS module itself is the plugin; `.default` is the same function, typed
  ajvFormats.default(ajv);
  return ajv.compile(schema);
}
const validate = validator();

/** Assert the document is valid KCIDB, showing the first errors when not. */
function assertValid(doc: unknown): void {
  const ok = validate(doc);
  assert.ok(ok, `not valid KCIDB v5.3: ${JSON.stringify(validate.errors?.slice(0, 5), null, 1)}`);
}

async function realRun(): Promise<MatrixJson> {
  return parseMatrixJson(await Deno.readTextFile(REAL_RUN), REAL_RUN.pathname);
}

/** A run with every status on rows and steps, and names the mapping must slug. */
function syntheticRun(): MatrixJson {
  return {
    provenance: {
      runId: "20261130T120000-abcdef",
      startedAt: "2026-11-30T12:00:00.000Z",
      project: "v0.1-3-g1234abc-dirty",
      host: { kernel: "6.1.0", hostname: "lab host", cpus: 2 },
      shard: "2/3",
    },
    rows: STATUS_PRIORITY.map((status, i) => ({
      id: i === 1 ? "qtest.vnic" : `row-${status.toLowerCase()}`,
      title: `a ${status} row\0 with a NUL`,
      status,
      durationSec: i * 1.5,
      ...(i % 2 ? { startedAt: `2026-11-30T12:0${i}:00.000Z` } : {}),
      ...(status === "PASS" || status === "DONE" ? {} : { reason: `why ${status} <&>` }),
      measurements: i === 0 ? {} as Record<string, Measurement> : {
        "boot.to ssh.sec": { value: 14.25, unit: "s" },
        "boot.to-ssh.sec": { value: 15, unit: "" },
        "perf.ib_send_bw.BW peak": { value: 1.6e-7, unit: "MiB/s" },
      },
      artifacts: i === 0 ? [] : [
        `rows/r${i}/transcript.log`,
        `rows/r${i}/g0 console.log`,
        `../shard-1/rows/r${i}/g0 console.log`,
        `rows/r${i}/caps/ünï.pcapng`,
      ],
      steps: STATUS_PRIORITY.map((s, j) => ({
        name: j < 2 ? "ibv_rc_pingpong -s 1 --chk" : `step ${s}: ${"x".repeat(j * 30)}`,
        status: s,
        durationSec: j / 10,
        ...(s === "PASS" ? {} : { error: `step failed: ${s}` }),
      })),
    })),
  };
}

Deno.test("the vendored schema is kcidb-io v5.3 and the exporter's constants agree with it", () => {
  assert.equal(schema.properties.version.properties.major.const, KCIDB_VERSION.major);
  assert.equal(schema.properties.version.properties.minor.maximum, KCIDB_VERSION.minor);
  assert.equal(
    schema.$defs.checkout.properties.origin.pattern,
    KCIDB_ORIGIN_PATTERN.source,
  );
  // what a slug produces must be a path component the schema accepts
  const path = new RegExp(schema.$defs.path.pattern ?? "no pattern");
  for (const name of ["ibv_rc_pingpong -s 1 --chk", "..", "", "ÜBER", "a.b c", "-x-"]) {
    assert.match(`cnuas_hil.${slug(name)}`, path);
  }
});

Deno.test("a real run exports to valid KCIDB: a checkout, a build, a test per row, step and measurement", async () => {
  const m = await realRun();
  const doc = toKcidb(m, { logBaseUrl: "https://ci.example/runs/20261201T215632-cde51a/" });
  assertValid(doc);
  assert.deepEqual(doc.version, { major: 5, minor: 3 });
  assert.equal(doc.checkouts[0].id, "cnuas_hil:20261201T215632-cde51a");
  assert.equal(doc.checkouts[0].git_commit_name, "459518e");
  assert.equal(doc.checkouts[0].start_time, "2026-12-01T21:56:32.068Z");
  assert.equal(doc.builds[0].checkout_id, doc.checkouts[0].id);
  assert.deepEqual(doc.builds[0].misc, {
    qemu: "1:7.2+dfsg-7+deb12u18",
    rdma_core: "56.1-1",
    guest_kernel: "6.12.117+deb13-amd64",
  });
  const steps = m.rows.reduce((n, r) => n + r.steps.length, 0);
  const measurements = m.rows.reduce((n, r) => n + Object.keys(r.measurements).length, 0);
  assert.equal(doc.tests.length, m.rows.length + steps + measurements);
  for (const r of m.rows) {
    const t = doc.tests.find((t) => t.path === `cnuas_hil.${r.id}`);
    assert.ok(t, r.id);
    assert.equal(t.status, r.status);
    assert.equal(t.duration, r.durationSec);
    assert.equal(
      t.log_url,
      `https://ci.example/runs/20261201T215632-cde51a/rows/${r.id}/transcript.log`,
    );
    assert.equal(t.output_files?.length ?? 0, r.artifacts.length - 1);
    assert.equal(t.log_excerpt, r.reason);
  }
  const peermem = doc.tests.find((t) => t.path === "cnuas_hil.peermem");
  assert.equal(peermem?.status, "ERROR");
  assert.match(peermem?.log_excerpt ?? "", /did not answer SSH/);
  const drain = doc.tests.find((t) =>
    t.path === "cnuas_hil.ibstat.measurements.pollcq.drainnspercompletion"
  );
  assert.deepEqual(drain?.number, { value: 113.9, unit: "ns" });
  assert.equal(drain?.status, "DONE");
  assert.equal(
    doc.tests.find((t) => t.path === "cnuas_hil.roce-e2e.ibv_rc_pingpong-s-1-n-1000-m-1024-chk")
      ?.status,
    "PASS",
  );
});

Deno.test("a synthetic run with every status, odd names and merged artifacts exports to valid KCIDB", () => {
  const m = syntheticRun();
  const doc = toKcidb(m, { origin: "my_lab", logBaseUrl: "https://ci.example/r/x" });
  assertValid(doc);
  const rowTests = doc.tests.filter((t) => t.path.split(".").length === 2);
  assert.deepEqual(rowTests.map((t) => t.status), [...STATUS_PRIORITY]);
  assert.deepEqual(rowTests.map((t) => t.path), [
    "cnuas_hil.row-fail",
    "cnuas_hil.qtest-vnic",
    "cnuas_hil.row-miss",
    "cnuas_hil.row-pass",
    "cnuas_hil.row-done",
    "cnuas_hil.row-skip",
  ]);
  assert.equal(rowTests[1].start_time, "2026-11-30T12:01:00.000Z");
  assert.equal(rowTests[0].start_time, undefined);
  assert.equal(rowTests[0].log_url, undefined);
  // two steps with the same name, two measurements that slug alike: still apart
  const ids = doc.tests.map((t) => t.id);
  assert.equal(new Set(ids).size, ids.length, "test ids are unique");
  assert.ok(ids.includes("my_lab:20261130T120000-abcdef:row-pass.ibv_rc_pingpong-s-1-chk-2"));
  assert.ok(ids.includes("my_lab:20261130T120000-abcdef:row-pass.measurements.boot.to-ssh.sec-2"));
  assert.equal(
    rowTests[1].output_files?.map((f) => f.url).join(" "),
    "https://ci.example/r/x/rows/r1/g0%20console.log" +
      " https://ci.example/r/shard-1/rows/r1/g0%20console.log" +
      " https://ci.example/r/x/rows/r1/caps/%C3%BCn%C3%AF.pcapng",
  );
  assert.deepEqual(rowTests[1].output_files?.map((f) => f.name), [
    "g0 console.log",
    "g0 console.log-2",
    "ünï.pcapng",
  ]);
  assert.equal(doc.checkouts[0].git_commit_hash, undefined);
  assert.deepEqual(doc.checkouts[0].misc, {
    run_id: "20261130T120000-abcdef",
    shard: "2/3",
    dirty: true,
  });
});

Deno.test("the same run gives the same JSON, byte for byte", async () => {
  const text = (m: MatrixJson) =>
    JSON.stringify(toKcidb(m, { logBaseUrl: "file:///runs/a/", commitHash: "a".repeat(40) }));
  assert.equal(text(await realRun()), text(await realRun()));
  assert.equal(text(syntheticRun()), text(syntheticRun()));
});

Deno.test("a bad origin is refused with the schema's rule, before anything is written", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.copyFile(REAL_RUN, join(dir, "matrix.json"));
  for (const origin of ["Cnuas", "my-lab", "", "a:b"]) {
    assert.throws(
      () => toKcidb(syntheticRun(), { origin, logBaseUrl: "file:///x/" }),
      KcidbOriginError,
    );
    await assert.rejects(
      () => exportKcidb(dir, { origin }),
      (e: unknown) =>
        e instanceof KcidbOriginError && /lower-case letters, digits and _/.test(e.message),
    );
  }
  await assert.rejects(() => exportKcidb(dir, { logBaseUrl: "runs/x" }), KcidbInputError);
  await assert.rejects(() => Deno.stat(join(dir, "kcidb.json")), Deno.errors.NotFound);
});

Deno.test("a directory without matrix.json is a clear error", async () => {
  const dir = await Deno.makeTempDir();
  await assert.rejects(
    () => exportKcidb(dir),
    (e: unknown) => e instanceof KcidbInputError && /matrix\.json does not exist/.test(e.message),
  );
});

Deno.test("exportKcidb writes DIR/kcidb.json with file:// links and the commit's full hash", async () => {
  const dir = await Deno.makeTempDir();
  const head = (await exec(["git", "-C", REPO_ROOT, "rev-parse", "HEAD"])).stdout.trim();
  const m = await realRun();
  m.provenance.project = `${head.slice(0, 7)}-dirty`;
  await Deno.writeTextFile(join(dir, "matrix.json"), JSON.stringify(m));
  const { out } = await exportKcidb(dir, { repoRoot: REPO_ROOT });
  assert.equal(out, join(dir, "kcidb.json"));
  const doc: KcidbReport = JSON.parse(await Deno.readTextFile(out));
  assertValid(doc);
  assert.equal(doc.checkouts[0].git_commit_hash, head);
  assert.equal(doc.tests[0].log_url, `file://${dir}/rows/ibstat/transcript.log`);
});

Deno.test("resolveCommit: abbreviations, describe output and tags; nothing for unknown", async () => {
  const head = (await exec(["git", "-C", REPO_ROOT, "rev-parse", "HEAD"])).stdout.trim();
  assert.equal(await resolveCommit(REPO_ROOT, head.slice(0, 9)), head);
  assert.equal(await resolveCommit(REPO_ROOT, `v9.9-12-g${head.slice(0, 7)}-dirty`), head);
  assert.equal(await resolveCommit(REPO_ROOT, "unknown"), undefined);
  assert.equal(await resolveCommit(REPO_ROOT, "no-such-tag-at-all"), undefined);
});

Deno.test("deno task report kcidb writes valid KCIDB; a bad --origin is a usage error", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.copyFile(REAL_RUN, join(dir, "matrix.json"));
  const out = join(dir, "out.json");
  const code = await main([
    "report",
    "kcidb",
    dir,
    "--out",
    out,
    "--origin",
    "my_lab",
    "--log-base-url",
    "https://ci.example/runs/1",
  ]);
  assert.equal(code, 0);
  const doc: KcidbReport = JSON.parse(await Deno.readTextFile(out));
  assertValid(doc);
  assert.ok(doc.tests.every((t) => t.origin === "my_lab" && t.id.startsWith("my_lab:")));
  await assert.rejects(
    () => main(["report", "kcidb", dir, "--origin", "My-Lab"]),
    KcidbOriginError,
  );
  await assert.rejects(() => main(["report", "kcidb"]), /usage: report kcidb <run-dir>/);
});
