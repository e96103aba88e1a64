/**
 * The cnuasgpu reference model on its own (no QEMU): the behaviours the qtest
 * oracle relies on it for, each stated once.
 */
import assert from "node:assert/strict";
import {
  GPU_DEFAULTS,
  GPU_IRQ,
  GPU_LINK,
  GPU_REG as R,
  type GpuConfig,
  GpuModel,
} from "../../harness/models/gpu.ts";

const CONFIG: GpuConfig = { ...GPU_DEFAULTS, gpuId: 9, devmemSize: 65536 };

function connected(config = CONFIG): GpuModel {
  const m = new GpuModel(config, { listening: true });
  assert.equal(m.takeInitialEffects().connects, 1);
  return m;
}

function bytes(n: number, salt = 0): Uint8Array {
  return Uint8Array.from({ length: n }, (_, i) => (i + salt) & 0xff);
}

function arm(m: GpuModel, off: number, size: number): void {
  m.write(R.LINK_RX_OFFSET_LO, off);
  m.write(R.LINK_RX_BUF_SIZE, size);
}

function ring(m: GpuModel, off: number, len: number) {
  m.write(R.LINK_TX_OFFSET_LO, off);
  m.write(R.LINK_TX_LEN, len);
  return m.write(R.LINK_TX_DOORBELL, 1);
}

Deno.test("identification registers reflect the configuration", () => {
  const m = connected({ ...CONFIG, devmemSize: 8 * 2 ** 30 });
  assert.deepEqual(
    [
      R.VENDOR_ID,
      R.DEVICE_ID,
      R.REVISION,
      R.FW_VERSION,
      R.GPU_ID,
      R.DEVMEM_SIZE_LO,
      R.DEVMEM_SIZE_HI,
    ]
      .map((r) => m.read(r).value),
    [0x1af4, 0x10f1, 1, 0x10000, 9, 0, 2],
  );
});

Deno.test("a doorbell sends the BAR1 bytes and raises TX_DONE", () => {
  const m = connected();
  m.writeMem(100, bytes(20, 3));
  const fx = ring(m, 100, 20);
  assert.deepEqual(fx.sent, [bytes(20, 3)]);
  assert.equal(m.read(R.IRQ_STATUS).value, GPU_IRQ.TX_DONE);
});

Deno.test("a doorbell with length 0, above 64 KiB or past BAR1 logs and sends nothing", () => {
  const m = connected();
  for (const [off, len] of [[0, 0], [0, 65537], [65535, 2]]) {
    const fx = ring(m, off, len);
    assert.equal(fx.sent.length, 0);
    assert.equal(fx.logs.length, 1);
  }
  assert.equal(m.read(R.IRQ_STATUS).value, 0);
});

Deno.test("with the link down a doorbell does nothing, not even a log line", () => {
  const m = new GpuModel(CONFIG, { listening: false });
  const fx = ring(m, 0, 0);
  assert.deepEqual([fx.sent.length, fx.logs.length, m.read(R.IRQ_STATUS).value], [0, 0, 0]);
});

Deno.test("received frames land one at a time; consume lands the next at once", () => {
  const m = connected();
  arm(m, 0x100, 4096);
  m.peerSend(bytes(10, 1));
  m.peerSend(bytes(30, 2));
  assert.equal(m.read(R.LINK_STATUS).value, GPU_LINK.UP | GPU_LINK.RX_READY);
  assert.equal(m.read(R.LINK_RX_LEN).value, 10);
  assert.equal(m.queuedFrames, 1);
  m.write(R.LINK_RX_CONSUME, 1);
  assert.equal(m.read(R.LINK_RX_LEN).value, 30);
  assert.deepEqual(m.readMem(0x100, 30), bytes(30, 2));
});

Deno.test("unarmed, oversize, too-large and out-of-BAR1 frames are dropped with one log each", () => {
  const m = connected();
  assert.equal(m.peerSend(bytes(8)).logs.length, 1);
  arm(m, 0, 16);
  assert.equal(m.peerSend(bytes(17)).logs.length, 1);
  assert.equal(m.peerSend(bytes(65537)).logs.length, 1);
  arm(m, 65536 - 8, 16);
  assert.equal(m.peerSend(bytes(4)).logs.length, 1);
  assert.equal(m.read(R.LINK_STATUS).value, GPU_LINK.UP);
});

Deno.test("a peer close behind a waiting frame is seen only after consume", () => {
  const m = connected();
  arm(m, 0, 4096);
  m.peerSend(bytes(10));
  m.peerClose();
  assert.equal(m.linkStatus, GPU_LINK.UP | GPU_LINK.RX_READY);
  m.write(R.LINK_RX_CONSUME, 1);
  assert.equal(m.linkStatus, 0);
});

Deno.test("a connection that lived 2 s is retried after 100 ms, a shorter one after 200 ms", () => {
  const stable = connected();
  stable.clockStep(2e9);
  stable.peerClose();
  assert.equal(stable.nextRetryInNs, 100e6);
  const brief = connected();
  brief.peerClose();
  assert.equal(brief.nextRetryInNs, 200e6);
  assert.equal(brief.clockStep(200e6).connects, 1);
});

Deno.test("failed connects double the delay up to 2 s", () => {
  const m = new GpuModel(CONFIG, { listening: false });
  const delays: number[] = [];
  for (let i = 0; i < 6; i++) {
    const d = m.nextRetryInNs!;
    delays.push(d);
    m.clockStep(d);
  }
  assert.deepEqual(delays, [100e6, 200e6, 400e6, 800e6, 1600e6, 2000e6]);
});

Deno.test("with MSI a newly pending enabled cause sends one message, a repeated one none", () => {
  const m = connected();
  m.setMsiEnabled(true);
  m.write(R.IRQ_MASK, 0xffff_ffff);
  assert.equal(m.read(R.IRQ_MASK).value, 3);
  assert.equal(ring(m, 0, 8).msi, 1);
  assert.equal(ring(m, 0, 8).msi, 0);
  arm(m, 0, 64);
  assert.equal(m.peerSend(bytes(8)).msi, 1);
  assert.equal(m.intx, false);
});

Deno.test("INTx follows IRQ_STATUS & IRQ_MASK while MSI is off", () => {
  const m = connected();
  ring(m, 0, 8);
  assert.equal(m.intx, false);
  m.write(R.IRQ_MASK, GPU_IRQ.TX_DONE);
  assert.equal(m.intx, true);
  m.write(R.IRQ_STATUS, GPU_IRQ.TX_DONE);
  assert.equal(m.intx, false);
});

Deno.test("switching MSI off with a cause pending asserts INTx; ack and mask deassert it", () => {
  const m = connected();
  m.setMsiEnabled(true);
  m.write(R.IRQ_MASK, GPU_IRQ.TX_DONE);
  assert.equal(ring(m, 0, 8).msi, 1);
  assert.equal(m.intx, false, "MSI on");
  m.setMsiEnabled(false);
  assert.equal(m.intx, true, "MSI off, TX_DONE pending and enabled");
  m.write(R.IRQ_STATUS, GPU_IRQ.TX_DONE);
  assert.equal(m.intx, false, "acknowledged");
  ring(m, 0, 8);
  m.write(R.IRQ_MASK, 0);
  assert.equal(m.intx, false, "masked");
  m.write(R.IRQ_MASK, GPU_IRQ.TX_DONE);
  assert.equal(m.setMsiEnabled(true).msi, 0, "no message for a cause already pending");
  assert.equal(m.intx, false, "MSI on again");
});

/** Every register's value, in GPU_REG order. */
function registers(m: GpuModel): number[] {
  return Object.values(R).map((off) => m.read(off).value);
}

Deno.test("an 8-byte access is refused whole: reads 0, writes nothing, rings nothing, one log", () => {
  const m = connected();
  m.writeMem(0x100, bytes(32, 4));
  m.write(R.LINK_TX_OFFSET_LO, 0x100);
  m.write(R.IRQ_MASK, GPU_IRQ.RX_READY);
  const before = registers(m);
  for (const off of [R.VENDOR_ID, R.DEVICE_ID, R.IRQ_STATUS, R.LINK_TX_OFFSET_LO, R.LINK_TX_LEN]) {
    const rd = m.access(off, 8);
    assert.deepEqual([rd.value, rd.logs.length], [0, 1], `8-byte read at 0x${off.toString(16)}`);
    // As two 32-bit writes this would set LINK_TX_LEN to 32 and ring.
    const wr = m.access(off, 8, 1n << 32n | 32n);
    assert.deepEqual(
      [wr.sent.length, wr.logs.length],
      [0, 1],
      `8-byte write at 0x${off.toString(16)}`,
    );
  }
  assert.deepEqual(registers(m), before);
});

Deno.test("1- and 2-byte and unaligned 32-bit accesses read 0 and write nothing; aligned 32-bit ones reach the register", () => {
  const m = connected();
  for (const [off, size] of [[R.IRQ_MASK, 1], [R.IRQ_MASK + 2, 2], [R.IRQ_MASK + 1, 4]] as const) {
    assert.equal(m.access(off, size).value, 0);
    assert.equal(m.access(off, size, 3n).logs.length, 1);
  }
  assert.equal(m.read(R.IRQ_MASK).value, 0);
  assert.equal(m.access(R.IRQ_MASK, 4, 3n).logs.length, 0);
  assert.equal(m.access(R.IRQ_MASK, 4).value, 3);
});

Deno.test("a reset forgets the waiting frame, unarms receive and drops what was queued behind it", () => {
  const m = connected();
  arm(m, 0x100, 4096);
  m.write(R.IRQ_MASK, GPU_IRQ.RX_READY);
  m.peerSend(bytes(10, 1));
  m.peerSend(bytes(20, 2)); // waits in the socket
  assert.equal(m.intx, true);
  const fx = m.reset();
  assert.equal(fx.logs.length, 1, "the queued frame is read unarmed and dropped");
  assert.equal(m.linkStatus, GPU_LINK.UP);
  assert.equal(m.intx, false);
  for (const r of [R.IRQ_STATUS, R.IRQ_MASK, R.LINK_RX_BUF_SIZE, R.LINK_RX_LEN]) {
    assert.equal(m.read(r).value, 0);
  }
  assert.deepEqual(m.readMem(0x100, 10), bytes(10, 1), "BAR1 keeps its bytes");
});
