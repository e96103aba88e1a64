import assert from "node:assert/strict";
import { SeqpacketSocket } from "../../harness/seqpacket.ts";
import { withRig } from "./rig.ts";

const FRAMES = 6000;
const SIZE = 1000;

function numbered(i: number): Uint8Array {
  const f = new Uint8Array(SIZE);
  f.set([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 1, 0, 0x88, 0xb5]);
  new DataView(f.buffer).setUint32(14, i);
  return f;
}

Deno.test("slow port: a port that stops reading does not stall the others, and its overflow is counted", async () => {
  await withRig("eth", 3, async (rig) => {
    // Port 4 never reads: a small receive buffer fills at once.
    const stuck = SeqpacketSocket.connect(rig.fabric.socketPath, { bufferBytes: 16384 });
    try {
      await rig.fabric.waitForPorts(4);
      const sender = rig.clients.get(1)!;
      const readers = [rig.clients.get(2)!, rig.clients.get(3)!];
      const got = readers.map(() => 0);
      for (let i = 0; i < FRAMES; i++) {
        sender.send(numbered(i));
        for (const [k, r] of readers.entries()) {
          for (const f of r.drain()) {
            assert.equal(new DataView(f.buffer).getUint32(14), got[k], `reader ${k + 2} order`);
            got[k]++;
          }
        }
      }
      for (const [k, r] of readers.entries()) {
        while (got[k] < FRAMES) {
          const f = r.recv(5000);
          assert.ok(f, `port ${k + 2} stalled at frame ${got[k]} of ${FRAMES}`);
          assert.equal(new DataView(f.buffer).getUint32(14), got[k]);
          got[k]++;
        }
      }
      const p4 = (await rig.fabric.ports()).find((p) => p.port === 4)!;
      assert.ok(p4.drops.queue_full > 0, "the stuck port overflowed its queue");
      assert.equal(p4.queueLen, 16);
      assert.equal(p4.txFrames + p4.queueLen + p4.drops.queue_full, FRAMES);
      // When it reads again it gets the frames that fitted, oldest first, nothing else.
      const delivered = p4.txFrames + p4.queueLen;
      for (let i = 0; i < delivered; i++) {
        const f = stuck.recv(5000);
        assert.ok(f, `stuck port got only ${i} of ${delivered} frames`);
        assert.equal(new DataView(f.buffer).getUint32(14), i);
      }
      assert.equal(stuck.recv(100), null);
    } finally {
      stuck.close();
    }
  }, { queueDepth: 16 });
});
