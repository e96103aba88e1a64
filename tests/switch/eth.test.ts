import assert from "node:assert/strict";
import { runTraffic, sendAndCheck } from "./traffic.ts";
import { withRig } from "./rig.ts";

const mac = (p: number) => [0x02, 0, 0, 0, p, 0];

function ethFrame(dst: number[], src: number[], len = 64): Uint8Array {
  const f = new Uint8Array(len);
  f.set([...dst, ...src, 0x88, 0xb5]);
  return f;
}

Deno.test("eth: seeded random traffic on 8 ports matches the model frame for frame", async () => {
  await withRig("eth", 8, async (rig) => {
    const r = await runTraffic(rig, { seed: 0xe7, steps: 1500, events: true });
    assert.ok(r.framesSent > 2000, `only ${r.framesSent} frames sent`);
    assert.ok(r.deliveriesChecked > r.framesSent, "floods should deliver more than was sent");
  });
});

Deno.test("eth: a learned destination is forwarded to its port only", async () => {
  await withRig("eth", 4, async (rig) => {
    await sendAndCheck(rig, 2, [ethFrame([0xff, 0xff, 0xff, 0xff, 0xff, 0xff], mac(2))], "learn");
    const f = ethFrame(mac(2), mac(3));
    const got = rig.model.ingress(3, f);
    assert.deepEqual(got.egress, [2]);
    rig.clients.get(3)!.send(f);
    const recv = rig.clients.get(2)!.recv(2000);
    assert.deepEqual(recv, f);
    assert.equal(rig.clients.get(1)!.recv(50), null);
    assert.equal(rig.clients.get(4)!.recv(0), null);
  });
});

Deno.test("eth: aged-out MAC entries make the destination flood again", async () => {
  await withRig("eth", 3, async (rig) => {
    await sendAndCheck(rig, 2, [ethFrame([0xff, 0xff, 0xff, 0xff, 0xff, 0xff], mac(2))], "learn");
    assert.equal(((await rig.fabric.table()).macs as unknown[]).length, 1);
    await rig.fabric.advanceTime(11);
    rig.model.advance(11);
    assert.deepEqual((await rig.fabric.table()).macs, []);
    const n = await sendAndCheck(rig, 1, [ethFrame(mac(2), mac(1))], "after aging");
    assert.equal(n, 2, "the frame for the aged MAC floods to both other ports");
  }, { agingSec: 10 });
});

Deno.test("eth: runt, oversize and same-port frames are dropped and counted", async () => {
  await withRig("eth", 2, async (rig) => {
    await sendAndCheck(rig, 1, [ethFrame(mac(9), mac(1))], "learn 1");
    const frames = [new Uint8Array(13), new Uint8Array(9217), ethFrame(mac(1), mac(1))];
    const n = await sendAndCheck(rig, 1, frames, "drops");
    assert.equal(n, 0);
    const p1 = (await rig.fabric.ports()).find((p) => p.port === 1)!;
    assert.equal(p1.drops.runt, 1);
    assert.equal(p1.drops.oversize, 1);
    assert.equal(p1.drops.filtered, 1);
  });
});
