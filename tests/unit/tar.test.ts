/**
 * The in-memory ustar writer, checked by the host's own tar: what it lists
 * and extracts must be exactly the files given, modes included.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { tarArchive } from "../../harness/vm/tar.ts";

Deno.test("host tar extracts every file with its bytes and mode", async () => {
  const long = `${"d".repeat(60)}/${"e".repeat(60)}/f.c`;
  const files = [
    { path: "bin/prog", data: new Uint8Array(1000).map((_, i) => i * 7), mode: 0o755 },
    { path: "empty", data: new Uint8Array(0), mode: 0o644 },
    { path: "block", data: new Uint8Array(512).fill(1), mode: 0o600 },
    { path: long, data: new TextEncoder().encode("int x;\n"), mode: 0o644 },
  ];
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeFile(join(dir, "a.tar"), tarArchive(files, 1_700_000_000));
    const out = join(dir, "out");
    await Deno.mkdir(out);
    const r = await new Deno.Command("tar", { args: ["-x", "-f", join(dir, "a.tar"), "-C", out] })
      .output();
    assert.equal(r.code, 0, new TextDecoder().decode(r.stderr));
    for (const f of files) {
      assert.deepEqual(await Deno.readFile(join(out, f.path)), f.data, f.path);
      assert.equal((await Deno.stat(join(out, f.path))).mode! & 0o777, f.mode, f.path);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("paths that would leave the directory, or cannot be stored, are refused", () => {
  const data = new Uint8Array(1);
  for (const path of ["/etc/passwd", "../x", "a/../../x", "", "x".repeat(101)]) {
    assert.throws(() => tarArchive([{ path, data, mode: 0o644 }]), /tar:/, path);
  }
});
