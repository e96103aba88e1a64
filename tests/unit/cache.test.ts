import assert from "node:assert/strict";
import { join } from "node:path";
import {
  cached,
  COMPLETE_MARKER,
  hashInputs,
  hashTree,
  KEEP_PER_STAGE,
  pruneStage,
  removeTree,
} from "../../harness/cache.ts";
import { setQuiet } from "../../harness/progress.ts";

setQuiet(true);

Deno.test("hashInputs is independent of key order and changes with any value", () => {
  assert.equal(hashInputs({ a: 1, b: [1, 2] }), hashInputs({ b: [1, 2], a: 1 }));
  assert.notEqual(hashInputs({ a: 1, b: [1, 2] }), hashInputs({ a: 1, b: [2, 1] }));
  assert.notEqual(hashInputs({ a: 1 }), hashInputs({ a: 2 }));
});

Deno.test("hashTree changes when a file is edited, added or renamed, and only then", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.mkdir(join(dir, "hw"));
  await Deno.writeTextFile(join(dir, "hw", "a.c"), "int a;\n");
  const h1 = await hashTree(dir, ["hw"]);
  assert.equal(await hashTree(dir, ["hw"]), h1, "same tree, same hash");
  await Deno.writeTextFile(join(dir, "hw", "a.c"), "int b;\n");
  const h2 = await hashTree(dir, ["hw"]);
  assert.notEqual(h2, h1);
  await Deno.rename(join(dir, "hw", "a.c"), join(dir, "hw", "b.c"));
  const h3 = await hashTree(dir, ["hw"]);
  assert.notEqual(h3, h2);
  await Deno.writeTextFile(join(dir, "hw", "c.c"), "");
  assert.notEqual(await hashTree(dir, ["hw"]), h3);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("cached builds once per input and again when the input changes", async () => {
  const dir = await Deno.makeTempDir();
  let builds = 0;
  const build = async (out: string) => {
    builds++;
    await Deno.writeTextFile(join(out, "artifact"), String(builds));
  };
  const a = await cached(dir, "stage", { v: 1 }, build);
  const b = await cached(dir, "stage", { v: 1 }, build);
  assert.equal(builds, 1);
  assert.equal(a.dir, b.dir);
  assert.ok(a.built && !b.built);
  const c = await cached(dir, "stage", { v: 2 }, build);
  assert.equal(builds, 2);
  assert.notEqual(c.dir, a.dir);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a failing build publishes nothing and keeps its log directory", async () => {
  const dir = await Deno.makeTempDir();
  let logDirSeen = "";
  await assert.rejects(
    cached(dir, "stage", { v: 1 }, async (_out, logDir) => {
      logDirSeen = logDir;
      await Deno.writeTextFile(join(logDir, "build.log"), "compiler said no\n");
      throw new Error("boom");
    }),
    /boom/,
  );
  assert.equal(await Deno.readTextFile(join(logDirSeen, "build.log")), "compiler said no\n");
  const entries = [...Deno.readDirSync(join(dir, "stage"))].map((e) => e.name);
  assert.ok(!entries.some((n) => /^[0-9a-f]{64}$/.test(n)), `published: ${entries}`);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a partial entry without its marker is rebuilt, never used", async () => {
  const dir = await Deno.makeTempDir();
  const first = await cached(dir, "stage", { v: 1 }, async (out) => {
    await Deno.writeTextFile(join(out, "artifact"), "good");
  });
  await Deno.remove(join(first.dir, COMPLETE_MARKER));
  await Deno.writeTextFile(join(first.dir, "artifact"), "truncated");
  const again = await cached(dir, "stage", { v: 1 }, async (out) => {
    await Deno.writeTextFile(join(out, "artifact"), "rebuilt");
  });
  assert.ok(again.built);
  assert.equal(await Deno.readTextFile(join(again.dir, "artifact")), "rebuilt");
  await Deno.remove(dir, { recursive: true });
});

Deno.test("two concurrent builders of one entry build it once", async () => {
  const dir = await Deno.makeTempDir();
  let builds = 0;
  const build = async (out: string) => {
    builds++;
    await new Promise((r) => setTimeout(r, 50));
    await Deno.writeTextFile(join(out, "artifact"), "x");
  };
  const [a, b] = await Promise.all([
    cached(dir, "stage", { v: 1 }, build),
    cached(dir, "stage", { v: 1 }, build),
  ]);
  assert.equal(builds, 1);
  assert.equal(a.dir, b.dir);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("removeTree refuses a tree with a mount inside", async () => {
  const fake = "/proc";
  await assert.rejects(removeTree(fake), /still mounted/);
});

Deno.test("pruning keeps the most recently used entries of a stage", async () => {
  const dir = await Deno.makeTempDir();
  const made: string[] = [];
  for (let v = 0; v < KEEP_PER_STAGE + 2; v++) {
    const e = await cached(dir, "stage", { v }, async (out) => {
      await Deno.writeTextFile(join(out, "artifact"), String(v));
    });
    made.push(e.dir);
    await new Promise((r) => setTimeout(r, 15)); // distinct marker times
  }
  // Every entry is fresh: within the grace period none goes.
  assert.equal(entriesOf(dir).length, KEEP_PER_STAGE + 2);
  // Using the oldest stamps it: it is now among the most recently used.
  await cached(dir, "stage", { v: 0 }, () => Promise.reject(new Error("must not rebuild")));
  const removed = await pruneStage(dir, "stage", KEEP_PER_STAGE, undefined, 0);
  assert.deepEqual(removed.sort(), [made[1], made[2]].sort());
  assert.deepEqual(entriesOf(dir), [made[0], ...made.slice(-2)].sort());
  await Deno.remove(dir, { recursive: true });
});

function entriesOf(cacheDir: string): string[] {
  return [...Deno.readDirSync(join(cacheDir, "stage"))]
    .filter((e) => /^[0-9a-f]{64}$/.test(e.name))
    .map((e) => join(cacheDir, "stage", e.name))
    .sort();
}
