/** `report` on the command line: every subcommand in its usage, exit codes of publish/history/diff. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { main } from "../../harness/cli.ts";
import { UsageError, UserError } from "../../harness/errors.ts";
import { sampleMatrix, writeBenchDir, writeRunDir } from "./history_fixture.ts";

/** Run `main` with console.log captured. */
async function run(argv: string[]): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const orig = console.log;
  console.log = (...a: unknown[]) => lines.push(a.join(" "));
  try {
    return { code: await main(argv), out: lines.join("\n") };
  } finally {
    console.log = orig;
  }
}

Deno.test("report without a known subcommand lists every subcommand", async () => {
  for (const argv of [["report"], ["report", "nope"], ["report", "merge"]]) {
    await assert.rejects(
      () => main(argv),
      (e: unknown) =>
        e instanceof UsageError &&
        ["report merge", "report publish", "report history", "report diff"].every((s) =>
          e.message.includes(s)
        ),
    );
  }
  await assert.rejects(() => main(["report", "diff", "only-one"]), /usage: report diff/);
  await assert.rejects(() => main(["report", "publish", "x", "--keep", "0"]), /--keep wants/);
});

Deno.test("publish, history and diff through the CLI; diff exits 0 with differences", async () => {
  const tmp = await Deno.makeTempDir();
  const site = join(tmp, "site");
  const a = await writeRunDir(
    tmp,
    sampleMatrix("ra", "2026-12-01T00:00:00Z", "c1", [
      { id: "switch", status: "PASS", measurements: { fps: 10 } },
    ]),
  );
  const b = await writeRunDir(
    tmp,
    sampleMatrix("rb", "2026-12-02T00:00:00Z", "c2", [
      { id: "switch", status: "FAIL", measurements: { fps: 5 } },
    ]),
  );
  for (const d of [a, b]) {
    assert.equal((await run(["report", "publish", d, "--to", site])).code, 0);
  }
  const small = await run([
    "report",
    "publish",
    a,
    "--to",
    join(tmp, "small"),
    "--max-file-mb",
    "0",
  ]);
  assert.match(small.out, /not copied: rows\/switch\/transcript.log \(over 0 MiB\)/);
  const again = await run(["report", "publish", a, "--to", site]);
  assert.match(again.out, /ra is already in .*nothing changed/);
  const h = await run(["report", "history", "--from", site, "--last", "5"]);
  assert.equal(h.code, 0);
  assert.match(h.out, /^switch\s+P 1\.0\s+F 1\.0/m);
  const byId = await run(["report", "diff", "ra", "rb", "--history", site]);
  assert.equal(byId.code, 0);
  assert.match(byId.out, /NEW FAILURE\s+switch\s+PASS → FAIL/);
  assert.match(byId.out, /not judged \(1\):/); // one earlier run: too little history
  const md = await run(["report", "diff", a, b, "--markdown"]);
  assert.match(md.out, /^### Validation matrix: `ra` → `rb`/);
  await assert.rejects(() => main(["report", "diff", "ra", "rb"]), UserError);
  await assert.rejects(
    () => main(["report", "diff", "ra", "nope", "--history", site]),
    /nope: neither a report directory nor a run of/,
  );
  await assert.rejects(
    () => main(["report", "history", "--from", join(tmp, "none")]),
    /no history here/,
  );
});

Deno.test("bench runs diff figure by figure; a bench and a matrix run do not diff", async () => {
  const tmp = await Deno.makeTempDir();
  const b1 = await writeBenchDir(tmp, "b1", "2026-12-01T00:00:00Z", { "cnuas_ib.bw": 100 });
  const b2 = await writeBenchDir(tmp, "b2", "2026-12-02T00:00:00Z", { "cnuas_ib.bw": 80 });
  const d = await run(["report", "diff", b1, b2]);
  assert.equal(d.code, 0);
  assert.match(d.out, /benchRdmaPerf cnuas_ib\.bw: 100 → 80 MiB\/s \(-20\.0 %\)/);
  const m = await writeRunDir(
    tmp,
    sampleMatrix("m", "2026-12-01T00:00:00Z", "c1", [{ id: "switch", status: "PASS" }]),
  );
  await assert.rejects(() => main(["report", "diff", b1, m]), /cannot diff a bench run/);
});
