import assert from "node:assert/strict";
import { join } from "node:path";
import {
  isReport,
  reportSummary,
  sanitizerEnv,
  sanitizerReports,
} from "../../harness/qtest/sanitizer.ts";

const NOTE = "==42==WARNING: ASan doesn't fully support makecontext/swapcontext functions and " +
  "may produce false positives in some cases!\n";

Deno.test("the swapcontext note alone is not a report; an ASan or UBSan error is", () => {
  assert.equal(isReport(`${NOTE}\n\n`), false);
  assert.equal(isReport(`${NOTE}==42==ERROR: AddressSanitizer: heap-buffer-overflow`), true);
  assert.equal(isReport("../hw/cnuas/cnuas_vnic.c:9:1: runtime error: shift exponent 40"), true);
});

Deno.test("reports are read from the directory the environment names; notes are left out", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const env = sanitizerEnv(dir);
    assert.match(env.ASAN_OPTIONS, /halt_on_error=1/);
    assert.ok(env.ASAN_OPTIONS.includes(`log_path="${join(dir, "asan")}"`));
    assert.ok(env.UBSAN_OPTIONS.includes(`log_path="${join(dir, "ubsan")}"`));
    await Deno.writeTextFile(join(dir, "asan.1"), NOTE);
    await Deno.writeTextFile(join(dir, "asan.2"), `${NOTE}==2==ERROR: AddressSanitizer: SEGV`);
    await Deno.writeTextFile(join(dir, "other.3"), "==3==ERROR: not ours");
    const reports = await sanitizerReports(dir);
    assert.deepEqual(reports.map((r) => r.path), [join(dir, "asan.2")]);
    assert.deepEqual(await sanitizerReports(join(dir, "missing")), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a report is named by its SUMMARY line, else its first line that is not a note", () => {
  const asan = `${NOTE}==7==ERROR: AddressSanitizer: heap-buffer-overflow\n    #0 recv\n` +
    "SUMMARY: AddressSanitizer: heap-buffer-overflow in __interceptor_recv\n";
  assert.equal(
    reportSummary(asan),
    "SUMMARY: AddressSanitizer: heap-buffer-overflow in __interceptor_recv",
  );
  assert.equal(
    reportSummary(`${NOTE}x.c:1:2: runtime error: overflow\n`),
    "x.c:1:2: runtime error: overflow",
  );
});

Deno.test("a real ASan report lands in a reports directory with ':' and ' ' in its path", async () => {
  const top = await Deno.makeTempDir();
  const dir = join(top, "run:1 of 2");
  await Deno.mkdir(dir);
  try {
    const src = join(dir, "overflow.c");
    await Deno.writeTextFile(
      src,
      "#include <stdlib.h>\nint main(int c, char **v) { char *p = malloc(4); " +
        "p[c + 3] = 1; return p[0]; }\n",
    );
    const exe = join(dir, "overflow");
    const cc = await new Deno.Command("cc", {
      args: ["-fsanitize=address", "-g", "-o", exe, src],
    }).output();
    assert.equal(cc.code, 0, new TextDecoder().decode(cc.stderr));
    const run = await new Deno.Command(exe, { env: sanitizerEnv(dir) }).output();
    assert.notEqual(run.code, 0);
    const reports = await sanitizerReports(dir);
    assert.equal(reports.length, 1, `reports in ${dir}: ${reports.map((r) => r.path)}`);
    assert.match(
      reportSummary(reports[0].text),
      /^SUMMARY: AddressSanitizer: heap-buffer-overflow/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a sanitizer log path with a double quote is refused", () => {
  assert.throws(() => sanitizerEnv('/tmp/a"b'), /may not contain/);
});
