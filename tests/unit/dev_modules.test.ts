/**
 * The developer's loop (`matrix --dev-modules`), its pure parts: which image
 * it runs on, and how the persistent module build tree follows the sources.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { pickImageForDevModules } from "../../harness/build/image.ts";
import { isModuleSource, moduleOrderKos } from "../../harness/build/modules.ts";
import { syncTree } from "../../harness/build/sync_tree.ts";
import { defaultConfig } from "../../harness/config.ts";
import { Lab, modinfoField } from "../../harness/matrix/lab.ts";
import type { Row } from "../../harness/matrix/row.ts";
import { runRow } from "../../harness/matrix/runner.ts";
import { setQuiet } from "../../harness/progress.ts";

setQuiet(true);

const base = { root: "r1", initHash: "i1", IMAGE_VERSION: 3 };

Deno.test("--dev-modules runs on the newest image of this root, init and recipe, any packages", () => {
  const entries = [
    { key: "old", inputs: { ...base, packages: ["a"] }, usedAt: 1 },
    { key: "new", inputs: { ...base, packages: ["b"] }, usedAt: 3 },
    { key: "other-root", inputs: { ...base, root: "r2", packages: [] }, usedAt: 9 },
    { key: "other-init", inputs: { ...base, initHash: "i2", packages: [] }, usedAt: 9 },
    { key: "other-recipe", inputs: { ...base, IMAGE_VERSION: 2, packages: [] }, usedAt: 9 },
    { key: "garbage", inputs: null, usedAt: 9 },
  ];
  assert.equal(pickImageForDevModules(entries, base)?.key, "new");
  assert.equal(pickImageForDevModules(entries.slice(2), base), undefined);
});

Deno.test("module sources vs what Kbuild writes beside them", () => {
  for (
    const f of ["cnuas_net_main.c", "cnuas_net.h", "Kbuild", "uapi/cnuas_ib_abi.h", "Makefile"]
  ) {
    assert.ok(isModuleSource(f), f);
  }
  for (
    const f of [
      "cnuas_net_main.o",
      "cnuas_net.ko",
      "cnuas_net.mod",
      "cnuas_net.mod.c",
      ".cnuas_net_main.o.cmd",
      "Module.symvers",
      "modules.order",
    ]
  ) {
    assert.ok(!isModuleSource(f), f);
  }
});

Deno.test("the build tree is synced by content: only changed files are written", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const src = join(dir, "src");
    const work = join(dir, "work");
    await Deno.mkdir(join(src, "uapi"), { recursive: true });
    await Deno.writeTextFile(join(src, "a.c"), "int a;\n");
    await Deno.writeTextFile(join(src, "b.c"), "int b;\n");
    await Deno.writeTextFile(join(src, "uapi/x.h"), "#define X 1\n");
    assert.deepEqual(await syncTree(src, work, isModuleSource), ["a.c", "b.c", "uapi/x.h"]);
    // a build output beside the sources, and an old mtime on an unchanged file
    await Deno.writeTextFile(join(work, "a.o"), "obj");
    const old = new Date(2000, 0, 1);
    await Deno.utime(join(work, "b.c"), old, old);
    await Deno.writeTextFile(join(src, "a.c"), "int a = 1;\n");
    await Deno.remove(join(src, "uapi/x.h"));
    assert.deepEqual(await syncTree(src, work, isModuleSource), ["a.c", "uapi/x.h"]);
    assert.equal(await Deno.readTextFile(join(work, "a.c")), "int a = 1;\n");
    assert.equal(await Deno.readTextFile(join(work, "a.o")), "obj", "build outputs stay");
    assert.equal((await Deno.stat(join(work, "b.c"))).mtime?.getTime(), old.getTime());
    await assert.rejects(Deno.stat(join(work, "uapi/x.h")));
    assert.deepEqual(await syncTree(src, work, isModuleSource), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("--dev-modules skips a row that checks the packaged modules, and runs the others", async () => {
  const runDir = await Deno.makeTempDir();
  try {
    let ran = 0;
    const row: Row = {
      id: "packaged",
      title: "checks what the packages installed",
      needs: { guests: 0, builds: [] },
      timeoutSec: 30,
      packagedModules: "it checks the packages",
      run: () => {
        ran++;
        return Promise.resolve();
      },
    };
    const dev = new Lab(defaultConfig({ accel: "tcg", devModules: true }));
    const skipped = await runRow(row, dev, runDir);
    assert.equal(skipped.status, "SKIP");
    assert.match(skipped.reason!, /--dev-modules replaces the packaged modules: it checks/);
    assert.equal(ran, 0);
    const plain = await runRow(row, new Lab(defaultConfig({ accel: "tcg" })), runDir);
    assert.equal(plain.status, "PASS", plain.reason);
    assert.equal(ran, 1);
  } finally {
    await Deno.remove(runDir, { recursive: true });
  }
});

Deno.test("only the modules Kbuild's modules.order lists are taken from the build tree", () => {
  assert.deepEqual(moduleOrderKos("/mnt/cnuas/nic/cnuas_net.o\ncnuas_ib.o\n\nold.ko\n"), [
    "cnuas_net.ko",
    "cnuas_ib.ko",
    "old.ko",
  ]);
});

Deno.test("a module's srcversion is read from its .modinfo strings", () => {
  const enc = new TextEncoder();
  const ko = enc.encode("\x7fELF junk\0license=GPL\0srcversion=33FA13C5B97496\0depends=ib_core\0");
  assert.equal(modinfoField(ko, "srcversion"), "33FA13C5B97496");
  assert.equal(modinfoField(ko, "depends"), "ib_core");
  assert.equal(modinfoField(ko, "alias"), undefined);
  assert.equal(modinfoField(enc.encode("xsrcversion=1\0"), "srcversion"), undefined);
});

Deno.test("a source the build-output rules would skip is still synced, not rewritten each time", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const src = join(dir, "src");
    await Deno.mkdir(src);
    await Deno.writeTextFile(join(src, ".gitignore"), "*.o\n");
    assert.deepEqual(await syncTree(src, join(dir, "w"), isModuleSource), [".gitignore"]);
    assert.deepEqual(await syncTree(src, join(dir, "w"), isModuleSource), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
