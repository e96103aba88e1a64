/**
 * Directed qtest tests of cnuasgpu's CnuasLink: sends, receives, back-pressure,
 * drops and the connection's life (close, reconnect, backoff), each driving
 * QEMU through registers, BAR1 and the peer's socket only. Identity,
 * interrupts and access sizes are in `gpu_directed.test.ts`.
 */
import assert from "node:assert/strict";
import { GPU_IRQ, GPU_LINK, GPU_REG } from "../../harness/models/gpu.ts";
import { SeqpacketServer } from "../../harness/fabric/seqpacket.ts";
import { armRx, eventually, pattern, ring, sendAndSettle, withGpu } from "./gpu_fixture.ts";

const R = GPU_REG;
const MiB = 1 << 20;

Deno.test("the link is up once connected to a listening peer, and down without cnuaslink_socket", async () => {
  await withGpu({}, async (rig) => {
    assert.ok(rig.conn, "the device connected at realize");
    assert.equal(await rig.gpu.reg(R.LINK_STATUS), GPU_LINK.UP);
  });
  await withGpu({}, async ({ gpu }) => {
    assert.equal(await gpu.reg(R.LINK_STATUS), 0);
    assert.equal(await gpu.reg(R.VENDOR_ID), 0x1af4, "the device otherwise works");
  }, { link: false });
});

Deno.test("send: the bytes at LINK_TX_OFFSET in BAR1 go out as one frame and TX_DONE is raised", async () => {
  await withGpu({ devmem_size: "1M" }, async (rig) => {
    const frame = pattern(65536, 7);
    await rig.gpu.devmemWrite(MiB - 65536, frame);
    await ring(rig, MiB - 65536, 65536);
    assert.deepEqual(rig.conn!.recv(2000), frame);
    assert.equal(await rig.gpu.reg(R.IRQ_STATUS), GPU_IRQ.TX_DONE);
  });
});

Deno.test("send is rejected and logged for length 0, length above 64 KiB, and ranges past BAR1", async () => {
  await withGpu({ devmem_size: "64K" }, async (rig) => {
    const cases: Array<[number, number, number]> = [
      [0, 0, 0],
      [0, 65537, 0],
      [65535, 2, 0],
      [0xffff_ffff, 16, 0xffff_ffff],
      [0, 16, 1],
    ];
    for (const [lo, len, hi] of cases) {
      const logs = rig.gpu.guestErrorCount();
      await ring(rig, lo, len, hi);
      assert.equal(rig.gpu.guestErrorCount(), logs + 1, `offset ${hi}:${lo} len ${len} logged`);
    }
    assert.equal(rig.conn!.tryRecv(), null, "nothing was sent");
    assert.equal(await rig.gpu.reg(R.IRQ_STATUS), 0, "no interrupt");
  });
});

Deno.test("with the link down the doorbell does nothing at all: no frame, no interrupt, no log", async () => {
  await withGpu({ devmem_size: "64K" }, async (rig) => {
    await ring(rig, 0, 16);
    await ring(rig, 0, 0);
    assert.equal(await rig.gpu.reg(R.IRQ_STATUS), 0);
    assert.equal(rig.gpu.guestErrorCount(), 0);
  }, { link: false });
});

Deno.test("receive: a frame lands at the armed offset with LINK_RX_LEN, LINK_STATUS bit 1 and IRQ bit 1", async () => {
  await withGpu({ devmem_size: "64K" }, async (rig) => {
    await armRx(rig, 0x1000, 4096);
    const frame = pattern(1500, 8);
    await sendAndSettle(rig, frame, "deliver");
    assert.equal(await rig.gpu.reg(R.LINK_STATUS), GPU_LINK.UP | GPU_LINK.RX_READY);
    assert.equal(await rig.gpu.reg(R.LINK_RX_LEN), 1500);
    assert.equal(await rig.gpu.reg(R.IRQ_STATUS), GPU_IRQ.RX_READY);
    assert.deepEqual(await rig.gpu.devmemRead(0x1000, 1500), frame);
  });
});

Deno.test("back-pressure: later frames wait in the socket until LINK_RX_CONSUME, which lands the next at once", async () => {
  await withGpu({ devmem_size: "64K" }, async (rig) => {
    await armRx(rig, 0, 4096);
    await sendAndSettle(rig, pattern(100, 1), "deliver");
    rig.conn!.send(pattern(200, 2));
    rig.conn!.send(pattern(300, 3));
    await rig.gpu.qt.sync();
    assert.equal(await rig.gpu.reg(R.LINK_RX_LEN), 100, "the first frame is untouched");
    assert.deepEqual(await rig.gpu.devmemRead(0, 100), pattern(100, 1));
    await rig.gpu.setReg(R.LINK_RX_CONSUME, 1);
    assert.equal(await rig.gpu.reg(R.LINK_RX_LEN), 200);
    assert.deepEqual(await rig.gpu.devmemRead(0, 200), pattern(200, 2));
    await rig.gpu.setReg(R.LINK_RX_CONSUME, 0);
    assert.equal(await rig.gpu.reg(R.LINK_RX_LEN), 200, "writing 0 releases nothing");
    await rig.gpu.setReg(R.LINK_RX_CONSUME, 1);
    assert.deepEqual(await rig.gpu.devmemRead(0, 300), pattern(300, 3));
    await rig.gpu.setReg(R.LINK_RX_CONSUME, 1);
    assert.equal(await rig.gpu.reg(R.LINK_STATUS), GPU_LINK.UP);
  });
});

Deno.test("a frame arriving while LINK_RX_BUF_SIZE is 0 is dropped and logged", async () => {
  await withGpu({ devmem_size: "64K" }, async (rig) => {
    await sendAndSettle(rig, pattern(64, 9), "drop");
    assert.equal(await rig.gpu.reg(R.LINK_STATUS), GPU_LINK.UP);
    await armRx(rig, 0, 4096);
    await rig.gpu.qt.sync();
    assert.equal(
      await rig.gpu.reg(R.LINK_STATUS),
      GPU_LINK.UP,
      "arming later does not resurrect it",
    );
    assert.equal(await rig.gpu.reg(R.IRQ_STATUS), 0);
  });
});

Deno.test("a frame larger than the armed buffer is dropped and logged, with no partial delivery", async () => {
  await withGpu({ devmem_size: "64K" }, async (rig) => {
    await armRx(rig, 0x2000, 100);
    await sendAndSettle(rig, pattern(101, 10), "drop");
    assert.equal(await rig.gpu.reg(R.LINK_STATUS), GPU_LINK.UP);
    assert.deepEqual(await rig.gpu.devmemRead(0x2000, 101), new Uint8Array(101));
    await sendAndSettle(rig, pattern(100, 11), "deliver");
    assert.equal(await rig.gpu.reg(R.LINK_RX_LEN), 100, "a frame of exactly the armed size lands");
  });
});

Deno.test("an armed buffer that does not lie inside BAR1 drops the frame and logs it", async () => {
  await withGpu({ devmem_size: "64K" }, async (rig) => {
    await armRx(rig, 65536 - 64, 128);
    await sendAndSettle(rig, pattern(32, 12), "drop");
    await rig.gpu.setReg(R.LINK_RX_OFFSET_HI, 1);
    await rig.gpu.setReg(R.LINK_RX_BUF_SIZE, 64);
    await sendAndSettle(rig, pattern(32, 13), "drop");
    assert.equal(await rig.gpu.reg(R.LINK_STATUS), GPU_LINK.UP);
    assert.equal(rig.gpu.guestErrorCount(), 2);
  });
});

Deno.test("a received frame above 64 KiB is dropped and logged even with a larger buffer armed", async () => {
  await withGpu({ devmem_size: "1M" }, async (rig) => {
    await armRx(rig, 0, 256 * 1024);
    await sendAndSettle(rig, pattern(65537, 14), "drop");
    await sendAndSettle(rig, pattern(65536, 15), "deliver");
    assert.equal(await rig.gpu.reg(R.LINK_RX_LEN), 65536);
  });
});

Deno.test("an empty datagram from a peer that is still there is dropped and logged; the link stays up", async () => {
  await withGpu({ devmem_size: "64K" }, async (rig) => {
    await armRx(rig, 0, 4096);
    await sendAndSettle(rig, new Uint8Array(0), "drop");
    assert.equal(await rig.gpu.reg(R.LINK_STATUS), GPU_LINK.UP);
  });
});

Deno.test("peer close after 2 s of link tears it down; the device reconnects 100 ms later", async () => {
  await withGpu({ devmem_size: "64K" }, async (rig) => {
    await rig.gpu.qt.clockStep(2_000_000_000);
    rig.conn!.close();
    rig.conn = null;
    await eventually("link down", async () => (await rig.gpu.reg(R.LINK_STATUS)) === 0);
    await rig.gpu.qt.clockStep(99_999_999);
    assert.equal(rig.server!.accept(0), null, "no attempt before 100 ms");
    await rig.gpu.qt.clockStep(1);
    rig.conn = rig.server!.accept(1000);
    assert.ok(rig.conn, "reconnected at 100 ms");
    assert.equal(await rig.gpu.reg(R.LINK_STATUS), GPU_LINK.UP);
  });
});

Deno.test("a connection that ends within 2 s counts as a failed attempt: the next comes 200 ms later", async () => {
  await withGpu({ devmem_size: "64K" }, async (rig) => {
    rig.conn!.close();
    rig.conn = null;
    await eventually("link down", async () => (await rig.gpu.reg(R.LINK_STATUS)) === 0);
    await rig.gpu.qt.clockStep(199_999_999);
    assert.equal(rig.server!.accept(0), null, "no attempt before 200 ms");
    await rig.gpu.qt.clockStep(1);
    rig.conn = rig.server!.accept(1000);
    assert.ok(rig.conn, "reconnected at 200 ms");
  });
});

Deno.test("while the peer does not listen, reconnects back off doubling up to 2 s", async () => {
  await withGpu({ devmem_size: "64K" }, async (rig) => {
    rig.server!.close();
    rig.server = null;
    rig.conn!.close();
    rig.conn = null;
    await eventually("link down", async () => (await rig.gpu.reg(R.LINK_STATUS)) === 0);
    // Delays 200, 400, 800, 1600, 2000, 2000 ms: attempts at 200, 600, 1400, 3000, 5000, 7000.
    await rig.gpu.qt.clockStep(5_500_000_000);
    rig.server = SeqpacketServer.listen(rig.socketPath);
    await rig.gpu.qt.clockStep(1_499_999_999);
    assert.equal(rig.server.accept(0), null, "nothing between 5000 and 7000 ms");
    assert.equal(await rig.gpu.reg(R.LINK_STATUS), 0);
    await rig.gpu.qt.clockStep(1);
    rig.conn = rig.server.accept(1000);
    assert.ok(rig.conn, "attempt at 7000 ms");
    assert.equal(await rig.gpu.reg(R.LINK_STATUS), GPU_LINK.UP);
  });
});

Deno.test("a device whose first connect fails keeps working and connects when the peer appears", async () => {
  await withGpu({ devmem_size: "64K" }, async (rig) => {
    assert.equal(await rig.gpu.reg(R.LINK_STATUS), 0);
    rig.server = SeqpacketServer.listen(rig.socketPath);
    await rig.gpu.qt.clockStep(100_000_000);
    rig.conn = rig.server.accept(1000);
    assert.ok(rig.conn);
    assert.equal(await rig.gpu.reg(R.LINK_STATUS), GPU_LINK.UP);
  }, { listen: false });
});

Deno.test("a frame waiting in BAR1 keeps the socket unread, so a close is seen only after consume", async () => {
  await withGpu({ devmem_size: "64K" }, async (rig) => {
    await armRx(rig, 0, 4096);
    await sendAndSettle(rig, pattern(10, 16), "deliver");
    rig.conn!.close();
    rig.conn = null;
    await rig.gpu.qt.sync();
    assert.equal(await rig.gpu.reg(R.LINK_STATUS), GPU_LINK.UP | GPU_LINK.RX_READY);
    await rig.gpu.setReg(R.LINK_RX_CONSUME, 1);
    assert.equal(await rig.gpu.reg(R.LINK_STATUS), 0);
  });
});

Deno.test("a send that fails because the peer is gone tears the link down without an interrupt", async () => {
  await withGpu({ devmem_size: "64K" }, async (rig) => {
    await armRx(rig, 0, 4096);
    await sendAndSettle(rig, pattern(10, 17), "deliver");
    await rig.gpu.setReg(R.IRQ_STATUS, 3);
    rig.conn!.close();
    rig.conn = null;
    await ring(rig, 0x100, 32);
    assert.equal(
      await rig.gpu.reg(R.LINK_STATUS),
      GPU_LINK.RX_READY,
      "down; the waiting frame stays",
    );
    assert.equal(await rig.gpu.reg(R.IRQ_STATUS), 0);
  });
});

Deno.test("a system reset forgets the waiting frame and unarms receive; queued frames are dropped, the link and BAR1 stay", async () => {
  await withGpu({ devmem_size: "64K" }, async (rig) => {
    const { gpu } = rig;
    await armRx(rig, 0x1000, 4096);
    await gpu.setReg(R.IRQ_MASK, GPU_IRQ.RX_READY);
    const first = pattern(100, 1);
    await sendAndSettle(rig, first, "deliver");
    const logs = gpu.guestErrorCount();
    rig.conn!.send(pattern(200, 2)); // waits behind the delivered frame
    await gpu.systemReset();
    // The queued frame is read with receive unarmed: dropped and logged.
    await eventually("the queued frame to be dropped", () => gpu.guestErrorCount() > logs);
    assert.equal(await gpu.reg(R.LINK_STATUS), GPU_LINK.UP);
    for (const r of [R.IRQ_STATUS, R.IRQ_MASK, R.LINK_RX_BUF_SIZE, R.LINK_RX_LEN]) {
      assert.equal(await gpu.reg(r), 0, `register 0x${r.toString(16)}`);
    }
    assert.equal(await gpu.intx(), false);
    assert.deepEqual(await gpu.devmemRead(0x1000, 100), first);
  });
});
