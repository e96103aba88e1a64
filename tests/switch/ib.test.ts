import assert from "node:assert/strict";
import { ibFrame, runTraffic, sendAndCheck } from "./traffic.ts";
import { withRig } from "./rig.ts";

function lrh(dlid: number, len = 34): Uint8Array {
  return ibFrame(dlid, len);
}

Deno.test("ib: seeded random traffic on 8 ports matches the model frame for frame", async () => {
  await withRig("ib", 8, async (rig) => {
    const r = await runTraffic(rig, { seed: 0x1b, steps: 2000, events: true });
    assert.ok(r.framesSent > 2500, `only ${r.framesSent} frames sent`);
    assert.ok(r.deliveriesChecked > 1000, `only ${r.deliveriesChecked} deliveries checked`);
  });
});

Deno.test("ib: a unicast DLID goes out of the port its LFT entry names", async () => {
  await withRig("ib", 3, async (rig) => {
    await rig.fabric.setLft([{ lid: 0x33, port: 3 }]);
    rig.model.setLft(0x33, 3);
    const f = lrh(0x33);
    rig.clients.get(1)!.send(f);
    assert.deepEqual(rig.clients.get(3)!.recv(2000), f);
    assert.equal(rig.clients.get(2)!.recv(50), null);
  });
});

Deno.test("ib: LID 0, unset LIDs and empty multicast groups are dropped as bad_dlid", async () => {
  await withRig("ib", 2, async (rig) => {
    const n = await sendAndCheck(rig, 1, [lrh(0), lrh(0x77), lrh(0xc123)], "bad dlids");
    assert.equal(n, 0);
    const p1 = (await rig.fabric.ports()).find((p) => p.port === 1)!;
    assert.equal(p1.drops.bad_dlid, 3);
  });
});

Deno.test("ib: a multicast LID reaches exactly its subscribed ports", async () => {
  await withRig("ib", 4, async (rig) => {
    for (const p of [1, 2, 4]) {
      await rig.fabric.mcastJoin(0xc010, p);
      rig.model.mcastJoin(0xc010, p);
    }
    const n = await sendAndCheck(rig, 1, [lrh(0xc010)], "mcast");
    assert.equal(n, 2, "ports 2 and 4, never back to 1, not 3");
    const table = await rig.fabric.table();
    assert.deepEqual(table.mcast, [{ mlid: 0xc010, ports: [1, 2, 4] }]);
  });
});

Deno.test("ib: frames for the switch itself are counted as no_sm until an SM exists", async () => {
  await withRig("ib", 2, async (rig) => {
    await rig.fabric.setLft([{ lid: 1, port: 0 }]);
    rig.model.setLft(1, 0);
    await sendAndCheck(rig, 2, [lrh(0xffff), lrh(1)], "to the switch");
    const p2 = (await rig.fabric.ports()).find((p) => p.port === 2)!;
    assert.equal(p2.drops.no_sm, 2);
  });
});

Deno.test("ib: a bad LRH and a bad VCRC are dropped before the DLID is looked at", async () => {
  await withRig("ib", 2, async (rig) => {
    await rig.fabric.setLft([{ lid: 0x33, port: 2 }]);
    rig.model.setLft(0x33, 2);
    const good = lrh(0x33);
    const badVcrc = good.slice();
    badVcrc[good.length - 1] ^= 0x80;
    const swapped = good.slice(); // the VCRC stored most significant byte first
    [swapped[good.length - 2], swapped[good.length - 1]] = [
      swapped[good.length - 1],
      swapped[good.length - 2],
    ];
    const lver = ibFrame(0x33, 34);
    lver[0] |= 1;
    const n = await sendAndCheck(rig, 1, [
      good,
      badVcrc,
      swapped,
      lver,
      ibFrame(0x33, 34, { slid: 0 }),
      ibFrame(0x33, 34, { slid: 0xc001 }),
      ibFrame(0x33, 34, { lnh: 1 }),
      ibFrame(0x33, 34, { vl: 15, lnh: 3 }),
      good.subarray(0, 30),
    ], "bad frames");
    assert.equal(n, 1);
    const p1 = (await rig.fabric.ports()).find((p) => p.port === 1)!;
    assert.equal(p1.drops.bad_vcrc, 2);
    assert.equal(p1.drops.bad_lrh, 6);
  });
});

Deno.test("ib: set_lft with one bad entry changes nothing", async () => {
  await withRig("ib", 1, async (rig) => {
    const reply = await rig.fabric.control({
      op: "set_lft",
      entries: [{ lid: 5, port: 1 }, { lid: 0xc000, port: 1 }],
    });
    assert.equal(reply.ok, false);
    assert.match(String(reply.error), /lid/);
    assert.deepEqual((await rig.fabric.table()).lft, []);
  });
});
