import assert from "node:assert/strict";
import { SeqpacketSocket } from "../../harness/fabric/seqpacket.ts";
import { cableCycle, connectPort, sendAndCheck } from "./traffic.ts";
import { withRig } from "./rig.ts";

const BCAST = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff];

function ethFrame(dst: number[], srcPort: number, len = 60): Uint8Array {
  const f = new Uint8Array(len);
  f.set([...dst, 0x02, 0, 0, 0, srcPort, 0, 0x88, 0xb5]);
  return f;
}

Deno.test("control: malformed and invalid requests get error replies and the switch keeps working", async () => {
  await withRig("eth", 2, async (rig) => {
    const bad = [
      "",
      "not json",
      "{",
      '{"op":',
      "[1,2,3]",
      '"stats"',
      "{}",
      '{"op":42}',
      '{"op":"no_such_op"}',
      '{"op":"ports"} trailing',
      '{"op":"link_down","port":0}',
      '{"op":"link_down","port":1.5}',
      '{"op":"link_down","port":"1"}',
      '{"op":"inject","port":1}',
      '{"op":"inject","port":1,"hex":"abc"}',
      '{"op":"inject","port":1,"hex":"zz"}',
      '{"op":"inject","port":1,"base64":"@@@@"}',
      '{"op":"inject","port":1,"hex":"00","base64":"AA=="}',
      '{"op":"inject","port":1,"direction":"sideways","hex":"00"}',
      '{"op":"inject","port":9,"hex":"00"}',
      '{"op":"inject","port":1,"frames":"00"}',
      '{"op":"inject","port":1,"frames":[]}',
      '{"op":"inject","port":1,"frames":[0]}',
      '{"op":"inject","port":1,"frames":["00","abc"]}',
      '{"op":"inject","port":1,"frames":["00"],"hex":"00"}',
      '{"op":"inject","port":1,"frames":[' + '"00",'.repeat(1024) + '"00"]}',
      '{"op":"set_lft","lid":1,"port":1}',
      '{"op":"capture_start"}',
      '{"op":"capture_start","path":"/nonexistent/dir/x.pcapng"}',
      '{"op":"capture_stop"}',
      '{"op":"advance_time","seconds":-1}',
      '{"op":"ping","x":"\\ud800"}',
      "[".repeat(100) + "]".repeat(100),
      '{"op":"ping","pad":"' + "x".repeat(1 << 20) + '"}',
    ];
    for (const line of bad) {
      const reply = await rig.fabric.controlLine(line);
      assert.equal(reply.ok, false, `${line.slice(0, 60)} was accepted`);
      assert.equal(typeof reply.error, "string");
    }
    const ok = await rig.fabric.control({ op: "ping" });
    assert.equal(ok.ok, true);
    const n = await sendAndCheck(rig, 1, [ethFrame(BCAST, 1)], "after bad input");
    assert.equal(n, 1);
  });
});

Deno.test("control: request ids of any JSON type are echoed", async () => {
  await withRig("eth", 0, async (rig) => {
    for (const id of ['"abc"', "7", "null", '{"k":[1,true]}']) {
      const reply = await rig.fabric.controlLine(`{"id":${id},"op":"ping"}`);
      assert.deepEqual(reply.id, JSON.parse(id));
      assert.equal(reply.ok, true);
    }
  });
});

Deno.test("control: link_down closes the device's socket and link_up lets it back onto the same port", async () => {
  await withRig("eth", 4, async (rig) => {
    await cableCycle(rig, 2);
    const n = await sendAndCheck(rig, 2, [ethFrame(BCAST, 2)], "after reconnect");
    assert.equal(n, 3);
  });
});

Deno.test("control: a downed port's slot is reserved; new devices take the next free port", async () => {
  await withRig("eth", 3, async (rig) => {
    await rig.fabric.linkDown(2);
    rig.model.linkDown(2);
    rig.clients.get(2)!.close();
    rig.clients.delete(2);
    assert.equal(await connectPort(rig), 4);
    const states = (await rig.fabric.ports()).map((p) => `${p.port}:${p.state}`);
    assert.deepEqual(states, ["1:up", "2:down", "3:up", "4:up"]);
    const n = await sendAndCheck(rig, 1, [ethFrame(BCAST, 1)], "with port 2 down");
    assert.equal(n, 2, "a downed port gets no floods");
  });
});

Deno.test("control: a device that disconnects frees its port without disturbing the others", async () => {
  await withRig("eth", 4, async (rig) => {
    await sendAndCheck(rig, 3, [ethFrame(BCAST, 3)], "learn 3");
    rig.clients.get(3)!.close();
    rig.clients.delete(3);
    rig.model.disconnect(3);
    for (let i = 0; i < 500 && (await rig.fabric.ports()).length !== 3; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.deepEqual((await rig.fabric.ports()).map((p) => p.port), [1, 2, 4]);
    // Its MAC is forgotten: a frame to it floods to the remaining ports.
    const n = await sendAndCheck(rig, 1, [ethFrame([0x02, 0, 0, 0, 3, 0], 1)], "after leave");
    assert.equal(n, 2);
  });
});

Deno.test("control: connections beyond --max-ports are refused and counted", async () => {
  await withRig("eth", 2, async (rig) => {
    const extra = SeqpacketSocket.connect(rig.fabric.socketPath);
    try {
      assert.equal(extra.waitClosed(5000), true);
      assert.equal((await rig.fabric.stats()).refused, 1);
    } finally {
      extra.close();
    }
  }, { maxPorts: 2 });
});

Deno.test("control: an ingress injection is forwarded as if the port had sent it", async () => {
  await withRig("eth", 3, async (rig) => {
    const f = ethFrame(BCAST, 1);
    rig.model.ingress(1, f);
    await rig.fabric.inject(1, f, "ingress");
    assert.deepEqual(rig.clients.get(2)!.recv(2000), f);
    assert.deepEqual(rig.clients.get(3)!.recv(2000), f);
    assert.equal(rig.clients.get(1)!.recv(0), null);
    const p1 = (await rig.fabric.ports()).find((p) => p.port === 1)!;
    assert.equal(p1.rxFrames, 1);
  });
});

Deno.test("control: an egress injection reaches only that port, whatever its bytes", async () => {
  await withRig("ib", 3, async (rig) => {
    const f = new Uint8Array([1, 2, 3]); // a runt on ingress; egress does not judge
    await rig.fabric.inject(2, f, "egress");
    assert.deepEqual(rig.clients.get(2)!.recv(2000), f);
    assert.equal(rig.clients.get(1)!.recv(0), null);
    assert.equal(rig.clients.get(3)!.recv(0), null);
    const p2 = (await rig.fabric.ports()).find((p) => p.port === 2)!;
    assert.equal(p2.txFrames, 1);
    assert.equal(p2.rxFrames, 0);
  });
});

Deno.test("control: pipelined requests (not awaited one by one) each get their own reply, in order", async () => {
  await withRig("ib", 2, async (rig) => {
    const frames = Array.from({ length: 200 }, (_, i) => new Uint8Array([i & 0xff, i >> 8, 0xee]));
    // ids are checked against each reply by control(); a ports request in
    // the middle must get the ports reply, not an inject's
    const sent = frames.map((f) => rig.fabric.inject(2, f, "egress"));
    const ports = rig.fabric.ports();
    const more = frames.map((f) => rig.fabric.inject(2, f, "egress"));
    await Promise.all([...sent, ...more]);
    assert.ok((await ports).some((p) => p.port === 2));
    for (const f of [...frames, ...frames]) assert.deepEqual(rig.clients.get(2)!.recv(2000), f);
    assert.equal(rig.clients.get(2)!.recv(0), null);
  });
});

Deno.test("control: one inject request carries many frames, sent in order", async () => {
  await withRig("ib", 3, async (rig) => {
    const frames = Array.from(
      { length: 300 },
      (_, i) => new Uint8Array([i & 0xff, i >> 8, 0xee, i % 7]),
    );
    const r = await rig.fabric.injectFrames(2, frames, "egress");
    assert.deepEqual(r, { frames: 300, bytes: 1200, queueLen: r.queueLen });
    assert.ok(r.queueLen >= 0 && r.queueLen <= 300, `queue_len ${r.queueLen}`);
    for (const f of frames) assert.deepEqual(rig.clients.get(2)!.recv(2000), f);
    assert.equal(rig.clients.get(2)!.recv(0), null);
    assert.equal(rig.clients.get(1)!.recv(0), null);
    assert.equal((await rig.fabric.ports()).find((p) => p.port === 2)!.txFrames, 300);
  });
});

Deno.test("control: a batch with one bad frame anywhere sends none of them", async () => {
  await withRig("eth", 2, async (rig) => {
    const ok = ethFrame(BCAST, 1).toHex();
    for (const bad of ["zz", "abc", "00".repeat(9217)]) {
      const r = await rig.fabric.control({
        op: "inject",
        port: 1,
        direction: "egress",
        frames: [ok, ok, bad, ok],
      });
      assert.equal(r.ok, false, `frames[2] = ${bad.slice(0, 8)}… was accepted`);
      assert.match(String(r.error), /frames\[2\]|frame 2/);
    }
    assert.equal(rig.clients.get(1)!.recv(0), null);
    assert.equal((await rig.fabric.ports()).find((p) => p.port === 1)!.txFrames, 0);
  });
});

Deno.test("control: a batch injected ingress is forwarded frame by frame", async () => {
  await withRig("eth", 2, async (rig) => {
    const frames = [ethFrame(BCAST, 1), ethFrame(BCAST, 1, 100), new Uint8Array(5)];
    for (const f of frames) rig.model.ingress(1, f);
    const r = await rig.fabric.injectFrames(1, frames, "ingress");
    assert.equal(r.frames, 3);
    assert.deepEqual(rig.clients.get(2)!.recv(2000), frames[0]);
    assert.deepEqual(rig.clients.get(2)!.recv(2000), frames[1]);
    assert.equal(rig.clients.get(2)!.recv(0), null); // the runt was dropped
    const p1 = (await rig.fabric.ports()).find((p) => p.port === 1)!;
    assert.equal(p1.rxFrames, 3);
    assert.equal(p1.drops.runt, 1);
  });
});

Deno.test("control: base64 injections decode like hex ones", async () => {
  await withRig("link", 2, async (rig) => {
    const f = new Uint8Array([0xff, 0xff, 0xff, 0xff, 5, 0, 0, 0, 0xaa]);
    const b64 = f.toBase64();
    const r = await rig.fabric.control({ op: "inject", port: 1, base64: b64 });
    assert.equal(r.ok, true);
    assert.deepEqual(rig.clients.get(2)!.recv(2000), f);
  });
});
