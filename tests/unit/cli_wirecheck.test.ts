/** `wirecheck`: captures through the wire oracle from the command line. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { main } from "../../harness/cli.ts";
import { RcConversation } from "../../harness/models/rdma/mod.ts";
import { writePcapng } from "../../harness/fabric/pcapng.ts";

async function capture(dir: string, name: string, corrupt: boolean): Promise<string> {
  const conv = new RcConversation({ pmtu: 1024 }).send("a", 3000).read("a", 5000);
  const frames = conv.frames.map((f, i) => ({
    interfaceId: 0,
    timestampNs: BigInt(i) * 1000n,
    data: f.data,
  }));
  if (corrupt) frames[1].data[frames[1].data.length - 1] ^= 0xff; // the ICRC of one frame
  const path = join(dir, name);
  await Deno.writeFile(path, writePcapng([{ linkType: 1 }], frames));
  return path;
}

Deno.test("wirecheck: 0 for a clean capture, 1 when one has a violation; reports written", async () => {
  const dir = await Deno.makeTempDir();
  const clean = await capture(dir, "clean.pcapng", false);
  const bad = await capture(dir, "bad.pcapng", true);
  assert.equal(await main(["wirecheck", clean]), 0);
  assert.equal(await main(["wirecheck", clean, bad]), 1);
  const report = JSON.parse(await Deno.readTextFile(`${bad}.violations.json`));
  assert.equal(report.violationCount, 1);
  assert.equal(report.byRule.icrc, 1);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("wirecheck: no file, a missing file, a non-capture, a bad MTU are clear errors", async () => {
  await assert.rejects(() => main(["wirecheck"]), /usage: wirecheck/);
  await assert.rejects(() => main(["wirecheck", "/nonexistent.pcapng"]), /nonexistent\.pcapng/);
  await assert.rejects(
    () => main(["wirecheck", new URL(import.meta.url).pathname]),
    /section header block/,
  );
  await assert.rejects(() => main(["wirecheck", "--path-mtu", "1500", "x"]), /256, 512/);
});

Deno.test("wirecheck: a rolled-over capture is checked as one, its later files found beside it", async () => {
  const dir = await Deno.makeTempDir();
  const conv = new RcConversation({ pmtu: 1024 }).send("a", 3000).read("a", 5000);
  const frames = conv.frames.map((f, i) => ({
    interfaceId: 0,
    timestampNs: BigInt(i) * 1000n,
    data: f.data,
  }));
  const half = frames.length >> 1;
  const first = join(dir, "roll.pcapng");
  await Deno.writeFile(first, writePcapng([{ linkType: 1 }], frames.slice(0, half)));
  await Deno.writeFile(
    join(dir, "roll.1.pcapng"),
    writePcapng([{ linkType: 1 }], frames.slice(half)),
  );
  assert.equal(await main(["wirecheck", first, join(dir, "roll.1.pcapng")]), 0);
  const report = JSON.parse(await Deno.readTextFile(`${first}.violations.json`));
  assert.equal(report.framesChecked, frames.length);
  assert.deepEqual(report.files.map((f: { frames: number }) => f.frames), [
    half,
    frames.length - half,
  ]);
  await Deno.remove(dir, { recursive: true });
});
