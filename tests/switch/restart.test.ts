import assert from "node:assert/strict";
import { Fabric } from "../../harness/fabric/switch.ts";
import { SeqpacketClosedError, SeqpacketSocket } from "../../harness/fabric/seqpacket.ts";
import { pidAlive } from "../../harness/vm/reaper.ts";
import { switchBinary } from "./rig.ts";

const BCAST = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff];

function frame(src: number): Uint8Array {
  const f = new Uint8Array(60);
  f.set([...BCAST, 0x02, 0, 0, 0, 0, src, 0x88, 0xb5]);
  return f;
}

/** Connect a client and wait until the switch lists `n` ports up. */
async function connect(fabric: Fabric, n: number): Promise<SeqpacketSocket> {
  const s = SeqpacketSocket.connect(fabric.socketPath);
  await fabric.waitForPorts(n);
  return s;
}

Deno.test("restart: a killed switch closes every device socket, comes back on the same path and forwards", async () => {
  const fabric = await Fabric.start({ binary: await switchBinary(), mode: "eth" });
  try {
    const a = await connect(fabric, 1);
    const b = await connect(fabric, 2);
    const oldPid = fabric.pid;
    await fabric.restart();
    assert.notEqual(fabric.pid, oldPid);
    assert.equal(pidAlive(oldPid), false, "the old daemon is gone");
    for (const s of [a, b]) {
      assert.throws(() => s.recv(2000), SeqpacketClosedError, "device saw its socket close");
      s.close();
    }
    assert.deepEqual(await fabric.ports(), [], "no port survives a restart");
    const c = await connect(fabric, 1);
    const d = await connect(fabric, 2);
    c.send(frame(1));
    assert.deepEqual(d.recv(2000), frame(1), "the restarted switch floods a broadcast");
    c.close();
    d.close();
  } finally {
    await fabric.close();
  }
});

Deno.test("restart in another mode: an ib switch comes back as eth on the same path (bench ib-perf)", async () => {
  const fabric = await Fabric.start({ binary: await switchBinary(), mode: "ib" });
  try {
    assert.equal(fabric.mode, "ib");
    assert.equal((await fabric.sm()).enabled, true, "the ib daemon runs its SM");
    await fabric.restart("SIGKILL", "eth");
    assert.equal(fabric.mode, "eth");
    const c = await connect(fabric, 1);
    const d = await connect(fabric, 2);
    c.send(frame(1));
    assert.deepEqual(d.recv(2000), frame(1), "the eth switch floods a broadcast");
    assert.deepEqual((await fabric.macs()).map((m) => m.port), [1], "and learns its source");
    c.close();
    d.close();
    await fabric.restart();
    assert.equal(fabric.mode, "eth", "a plain restart keeps the mode");
  } finally {
    await fabric.close();
  }
});
