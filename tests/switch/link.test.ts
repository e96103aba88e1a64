import assert from "node:assert/strict";
import { runTraffic, sendAndCheck } from "./traffic.ts";
import { withRig } from "./rig.ts";

function linkFrame(dst: number, src: number, len = 16): Uint8Array {
  const f = new Uint8Array(len);
  const v = new DataView(f.buffer);
  v.setUint32(0, dst, true);
  v.setUint32(4, src, true);
  return f;
}

Deno.test("link: seeded random traffic on 8 ports matches the model frame for frame", async () => {
  await withRig("link", 8, async (rig) => {
    const r = await runTraffic(rig, { seed: 0x11, steps: 1500, events: true });
    assert.ok(r.framesSent > 2000, `only ${r.framesSent} frames sent`);
    assert.ok(r.deliveriesChecked > 1000, `only ${r.deliveriesChecked} deliveries checked`);
  });
});

Deno.test("link: a port's gpu_id is learned from the source field and routes replies", async () => {
  await withRig("link", 3, async (rig) => {
    await sendAndCheck(rig, 2, [linkFrame(0xffffffff, 42)], "announce 42");
    const ports = await rig.fabric.ports();
    assert.equal(ports.find((p) => p.port === 2)!.gpuId, 42);
    assert.deepEqual((await rig.fabric.table()).gpu_ids, [{ gpu_id: 42, port: 2 }]);
    const f = linkFrame(42, 7, 65536);
    rig.model.ingress(1, f);
    rig.clients.get(1)!.send(f);
    assert.deepEqual(rig.clients.get(2)!.recv(2000), f, "a 64 KiB frame arrives whole");
  });
});

Deno.test("link: frames to an unknown gpu_id and frames under 8 bytes are dropped", async () => {
  await withRig("link", 2, async (rig) => {
    const n = await sendAndCheck(rig, 1, [linkFrame(99, 1), new Uint8Array(7)], "drops");
    assert.equal(n, 0);
    const p1 = (await rig.fabric.ports()).find((p) => p.port === 1)!;
    assert.equal(p1.drops.unknown_gpu, 1);
    assert.equal(p1.drops.runt, 1);
  });
});
