import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { defaultConfig } from "../../harness/config.ts";
import {
  ChecksumError,
  DownloadError,
  fetchPinned,
  parseSources,
  type PinnedFile,
  verifyPinned,
} from "../../harness/pins.ts";
import { setQuiet } from "../../harness/progress.ts";

setQuiet(true);

const body = new TextEncoder().encode("pinned bytes\n");
const goodSum = createHash("sha256").update(body).digest("hex");

/** A loopback mirror serving one file at /pool/good and 404 elsewhere. */
function mirror(): { url: string; close: () => Promise<void> } {
  const ac = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: ac.signal, onListen: () => {} },
    (req) =>
      new URL(req.url).pathname === "/pool/good"
        ? new Response(body)
        : new Response("no", { status: 404 }),
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    close: async () => {
      ac.abort();
      await server.finished;
    },
  };
}

Deno.test("a download whose checksum differs is refused with both sums", () => {
  const file: PinnedFile = { name: "x", path: "pool/x", size: 1, sha256: "0".repeat(64) };
  assert.throws(
    () => verifyPinned(file, body, "http://m/pool/x"),
    (e: Error) =>
      e instanceof ChecksumError && e.message.includes("0".repeat(64)) &&
      e.message.includes(goodSum),
  );
});

Deno.test("fetchPinned downloads, verifies and caches a good file", async () => {
  const m = mirror();
  const cacheDir = await Deno.makeTempDir();
  try {
    const config = defaultConfig({ cacheDir, mirror: m.url });
    const file = { name: "good", path: "pool/good", size: body.length, sha256: goodSum };
    const path = await fetchPinned(config, file);
    assert.deepEqual(await Deno.readFile(path), body);
    await m.close();
    // Served from the cache now that the mirror is gone.
    assert.equal(await fetchPinned(config, file), path);
  } finally {
    await m.close().catch(() => {});
    await Deno.remove(cacheDir, { recursive: true });
  }
});

Deno.test("fetchPinned refuses a wrong checksum and caches nothing", async () => {
  const m = mirror();
  const cacheDir = await Deno.makeTempDir();
  try {
    const config = defaultConfig({ cacheDir, mirror: m.url });
    const file = { name: "good", path: "pool/good", size: 1, sha256: "f".repeat(64) };
    await assert.rejects(fetchPinned(config, file), ChecksumError);
    await assert.rejects(Deno.stat(`${cacheDir}/downloads/${"f".repeat(64)}/good`));
  } finally {
    await m.close();
    await Deno.remove(cacheDir, { recursive: true });
  }
});

Deno.test("a file the mirror no longer serves names the URL and the re-pin command", async () => {
  const m = mirror();
  const cacheDir = await Deno.makeTempDir();
  try {
    const config = defaultConfig({ cacheDir, mirror: m.url });
    const file = { name: "gone", path: "pool/gone", size: 1, sha256: goodSum };
    await assert.rejects(
      fetchPinned(config, file),
      (e: Error) =>
        e instanceof DownloadError && e.message.includes(`${m.url}/pool/gone`) &&
        e.message.includes("404") && e.message.includes("repin"),
    );
  } finally {
    await m.close();
    await Deno.remove(cacheDir, { recursive: true });
  }
});

Deno.test("an unreachable mirror names the URL that failed", async () => {
  const cacheDir = await Deno.makeTempDir();
  const config = defaultConfig({ cacheDir, mirror: "http://127.0.0.1:9" });
  await assert.rejects(
    fetchPinned(config, { name: "a", path: "pool/a", size: 1, sha256: goodSum }),
    (e: Error) => e instanceof DownloadError && e.message.includes("http://127.0.0.1:9/pool/a"),
  );
  await Deno.remove(cacheDir, { recursive: true });
});

Deno.test("parseSources reads version, directory and sha256 lines of one package", () => {
  const text = [
    "Package: qemu",
    "Version: 1:7.2+dfsg-7+deb12u99",
    "Directory: pool/main/q/qemu",
    "Checksums-Sha256:",
    ` ${"a".repeat(64)} 100 qemu_7.2+dfsg-7+deb12u99.dsc`,
    ` ${"b".repeat(64)} 200 qemu_7.2+dfsg.orig.tar.xz`,
    "Homepage: http://www.qemu.org/",
    "",
    "Package: qemu-web",
    "Version: 1",
    "Directory: pool/main/q/qemu-web",
    "",
  ].join("\n");
  const s = parseSources(text, "qemu");
  assert.equal(s.length, 1);
  assert.equal(s[0].version, "1:7.2+dfsg-7+deb12u99");
  assert.deepEqual(s[0].files.map((f) => [f.name, f.size]), [
    ["qemu_7.2+dfsg-7+deb12u99.dsc", 100],
    ["qemu_7.2+dfsg.orig.tar.xz", 200],
  ]);
});
