/** The I/O edge of the wire oracle: a pcapng file in, a violations report beside it. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { checkPcapngFile } from "../../harness/oracle/wire_check.ts";
import { writePcapng } from "../../harness/fabric/pcapng.ts";
import { checkCapture, RcConversation } from "../../harness/models/rdma/mod.ts";
import { syntheticRoceCapture } from "../../harness/bench/rdma.ts";

function capture(conv: RcConversation): Uint8Array {
  return writePcapng(
    [{ linkType: conv.linkType, name: "port0" }, { linkType: conv.linkType, name: "port1" }],
    conv.frames.map((f) => ({
      interfaceId: f.interfaceId ?? 0,
      timestampNs: f.timestampNs ?? 0n,
      data: f.data,
    })),
  );
}

Deno.test("checkPcapngFile writes an empty report beside a clean capture", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = join(dir, "fabric.pcapng");
    const conv = new RcConversation().send("a", 5000).read("b", 3000).atomic("a", "cas");
    await Deno.writeFile(path, capture(conv));
    const s = await checkPcapngFile(path);
    assert.equal(s.framesChecked, conv.frames.length);
    assert.equal(s.violationCount, 0);
    assert.equal(s.reportPath, `${path}.violations.json`);
    const report = JSON.parse(await Deno.readTextFile(s.reportPath));
    assert.deepEqual(report.violations, []);
    assert.equal(report.framesChecked, conv.frames.length);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("checkPcapngFile lists each violation of a native IB capture in the report", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = join(dir, "ib.pcapng");
    const conv = new RcConversation({ linkType: 247 }).send("a", 100);
    const psn = conv.psnOf("a");
    conv.send("a", 100, { ack: false }).rewind("a", psn).send("a", 100, { ack: false });
    conv.frames[0].data[conv.frames[0].data.length - 1] ^= 0x80; // VCRC
    await Deno.writeFile(path, capture(conv));
    const s = await checkPcapngFile(path);
    const report = JSON.parse(await Deno.readTextFile(s.reportPath));
    assert.deepEqual(report.violations.map((v: { rule: string }) => v.rule).sort(), [
      "ack-coverage",
      "vcrc",
    ]);
    assert.equal(report.violationCount, 2);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the bench's mixed synthetic RoCEv2 capture (20k frames, four QP pairs) is clean", () => {
  const frames = syntheticRoceCapture(20_000, 3);
  const res = checkCapture(frames);
  assert.deepEqual(res.violations, []);
  assert.ok(res.framesChecked >= 20_000);
  assert.equal(res.flows, 8);
});
