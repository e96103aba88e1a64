/**
 * Directed qtest tests of cnuasgpu: one test per behaviour line of
 * docs/devices.md (cnuasgpu) and of the choices the device documents, each driving
 * QEMU through registers, BAR1 and the CnuasLink socket only. This file has
 * identity, properties, BAR1, interrupts and access sizes; the link's
 * behaviour is in `gpu_link.test.ts`.
 */
import assert from "node:assert/strict";
import { GPU_IRQ, GPU_LINK, GPU_REG } from "../../harness/models/gpu.ts";
import { QtestError, QtestMachine } from "../../harness/qtest/client.ts";
import { armRx, type GpuRig, pattern, ring, sendAndSettle, withGpu } from "./gpu_fixture.ts";
import { qemuEnv } from "./qemu_env.ts";

const R = GPU_REG;
const MiB = 1 << 20;

Deno.test("identification registers read the fixed identity and the device properties", async () => {
  await withGpu({
    gpu_id: 0x1234,
    sm_count: 40,
    lanes_per_sm: 64,
    tensor_size: 8,
    devmem_size: "8G",
  }, async ({ gpu }) => {
    assert.deepEqual(
      await Promise.all([
        R.VENDOR_ID,
        R.DEVICE_ID,
        R.REVISION,
        R.FW_VERSION,
        R.GPU_ID,
        R.SM_COUNT,
        R.LANES_PER_SM,
        R.TENSOR_SIZE,
        R.DEVMEM_SIZE_LO,
        R.DEVMEM_SIZE_HI,
      ].map((r) => gpu.reg(r))),
      [0x1af4, 0x10f1, 0x01, 0x00010000, 0x1234, 40, 64, 8, 0, 2],
    );
  });
});

Deno.test("property defaults: 16 SMs, 32 lanes, tensor 16, 256 MiB of device memory", async () => {
  await withGpu({}, async ({ gpu }) => {
    assert.deepEqual(
      await Promise.all(
        [R.SM_COUNT, R.LANES_PER_SM, R.TENSOR_SIZE, R.DEVMEM_SIZE_LO, R.DEVMEM_SIZE_HI].map((r) =>
          gpu.reg(r)
        ),
      ),
      [16, 32, 16, 256 * MiB, 0],
    );
    assert.equal(gpu.bar1Size, 256n * BigInt(MiB));
  });
});

Deno.test("PCI identity is 1af4:10f1, class 0x0b40, revision 1, interrupt pin A", async () => {
  await withGpu({}, async ({ gpu }) => {
    assert.equal(await gpu.cfgRead(0x00, 4), 0x10f1_1af4);
    assert.equal(await gpu.cfgRead(0x08, 4), 0x0b40_0001);
    assert.equal(await gpu.cfgRead(0x3d, 1), 1);
  });
});

Deno.test("BAR0 is a 64 KiB register window and BAR1 a 64-bit prefetchable memory BAR of devmem_size", async () => {
  await withGpu({ devmem_size: "1M" }, async ({ gpu }) => {
    assert.equal((await gpu.cfgRead(0x10, 4)) & 0xf, 0);
    assert.equal((await gpu.cfgRead(0x14, 4)) & 0xf, 0xc);
    assert.equal(gpu.bar1Size, BigInt(MiB));
  });
});

Deno.test("the function has an MSI capability with one vector", async () => {
  await withGpu({}, async ({ gpu }) => {
    const cap = await gpu.findCap(0x05);
    assert.notEqual(cap, 0);
    assert.equal(
      ((await gpu.cfgRead(cap + 2, 2)) >> 1) & 0x7,
      0,
      "Multiple Message Capable = 1 vector",
    );
  });
});

Deno.test("x-speed and x-width are advertised in the PCIe link capabilities (32 GT/s x16 by default)", async () => {
  await withGpu({}, async ({ gpu }) => {
    const exp = await gpu.findCap(0x10);
    assert.notEqual(exp, 0);
    const lnkcap = await gpu.cfgRead(exp + 0x0c, 4);
    assert.equal(lnkcap & 0xf, 5, "Max Link Speed 32 GT/s");
    assert.equal((lnkcap >> 4) & 0x3f, 16, "Max Link Width x16");
  });
  await withGpu({ "x-speed": "8", "x-width": 4 }, async ({ gpu }) => {
    const lnkcap = await gpu.cfgRead((await gpu.findCap(0x10)) + 0x0c, 4);
    assert.deepEqual([lnkcap & 0xf, (lnkcap >> 4) & 0x3f], [3, 4]);
  });
});

Deno.test("a devmem_size that is not a power of two is refused at realize with an error naming it", async () => {
  const env = await qemuEnv();
  await assert.rejects(
    QtestMachine.start({
      binary: env.binary,
      firmware: env.firmware,
      devices: ["cnuasgpu,devmem_size=3M"],
    }),
    (e: Error) => e instanceof QtestError && /devmem_size/.test(e.message),
  );
});

Deno.test("an unknown x-speed is refused at realize", async () => {
  const env = await qemuEnv();
  await assert.rejects(
    QtestMachine.start({
      binary: env.binary,
      firmware: env.firmware,
      devices: ["cnuasgpu,x-speed=7"],
    }),
    (e: Error) => e instanceof QtestError && /x-speed/.test(e.message),
  );
});

Deno.test("BAR1 is RAM: bytes written anywhere in 256 MiB read back", async () => {
  await withGpu({}, async ({ gpu }) => {
    const a = pattern(4096, 1);
    const b = pattern(777, 2);
    await gpu.devmemWrite(0, a);
    await gpu.devmemWrite(256 * MiB - b.length, b);
    assert.deepEqual(await gpu.devmemRead(0, a.length), a);
    assert.deepEqual(await gpu.devmemRead(256 * MiB - b.length, b.length), b);
  });
});

Deno.test("IRQ_STATUS is write-1-to-clear and IRQ_MASK keeps only bits 0 and 1", async () => {
  await withGpu({ devmem_size: "64K" }, async (rig) => {
    const { gpu } = rig;
    await gpu.setReg(R.IRQ_MASK, 0xffff_ffff);
    assert.equal(await gpu.reg(R.IRQ_MASK), 3);
    await gpu.devmemWrite(0, pattern(16, 3));
    await ring(rig, 0, 16);
    assert.equal(await gpu.reg(R.IRQ_STATUS), GPU_IRQ.TX_DONE);
    await gpu.setReg(R.IRQ_STATUS, 0);
    assert.equal(await gpu.reg(R.IRQ_STATUS), GPU_IRQ.TX_DONE, "writing 0 clears nothing");
    await gpu.setReg(R.IRQ_STATUS, GPU_IRQ.TX_DONE);
    assert.equal(await gpu.reg(R.IRQ_STATUS), 0);
  });
});

Deno.test("INTx is asserted exactly while IRQ_STATUS & IRQ_MASK is non-zero", async () => {
  await withGpu({ devmem_size: "64K" }, async (rig) => {
    const { gpu } = rig;
    await gpu.devmemWrite(0, pattern(8, 4));
    await ring(rig, 0, 8);
    assert.equal(await gpu.intx(), false, "cause pending but masked");
    await gpu.setReg(R.IRQ_MASK, GPU_IRQ.RX_READY);
    assert.equal(await gpu.intx(), false, "other cause enabled");
    await gpu.setReg(R.IRQ_MASK, GPU_IRQ.TX_DONE);
    assert.equal(await gpu.intx(), true);
    await gpu.setReg(R.IRQ_STATUS, GPU_IRQ.TX_DONE);
    assert.equal(await gpu.intx(), false);
  });
});

Deno.test("with MSI enabled a newly pending enabled cause sends one message and INTx stays low", async () => {
  await withGpu({ devmem_size: "64K" }, async (rig) => {
    const { gpu } = rig;
    await gpu.setMsi(true);
    await gpu.setReg(R.IRQ_MASK, 3);
    await gpu.devmemWrite(0, pattern(8, 5));
    await ring(rig, 0, 8);
    assert.equal(await gpu.takeMsi(), true);
    assert.equal(await gpu.intx(), false);
    await ring(rig, 0, 8);
    assert.equal(await gpu.takeMsi(), false, "TX_DONE was still pending: nothing new");
    await armRx(rig, 0x100, 64);
    await sendAndSettle(rig, pattern(8, 6), "deliver");
    assert.equal(await gpu.takeMsi(), true, "RX_READY is new although TX_DONE is pending");
  });
});

Deno.test("disabling MSI hands a pending interrupt back to INTx; ack and mask then deassert it", async () => {
  await withGpu({ devmem_size: "64K" }, async (rig) => {
    const { gpu } = rig;
    await gpu.setMsi(true);
    await gpu.setReg(R.IRQ_MASK, GPU_IRQ.TX_DONE);
    await gpu.devmemWrite(0, pattern(8, 5));
    await ring(rig, 0, 8);
    assert.equal(await gpu.takeMsi(), true);
    assert.equal(await gpu.intx(), false, "MSI on: INTx stays low");
    await gpu.setMsi(false);
    assert.equal(await gpu.intx(), true, "MSI off, TX_DONE pending and enabled");
    await gpu.setReg(R.IRQ_STATUS, GPU_IRQ.TX_DONE);
    assert.equal(await gpu.intx(), false, "acknowledged");
    await ring(rig, 0, 8);
    assert.equal(await gpu.intx(), true, "TX_DONE pending again");
    await gpu.setReg(R.IRQ_MASK, 0);
    assert.equal(await gpu.intx(), false, "masked");
    await gpu.setReg(R.IRQ_MASK, GPU_IRQ.TX_DONE);
    assert.equal(await gpu.intx(), true, "unmasked");
    await gpu.setMsi(true);
    assert.equal(await gpu.intx(), false, "MSI on again: INTx deasserted");
    assert.equal(await gpu.takeMsi(), false, "no message for a cause already pending");
  });
});
Deno.test("unknown offsets read 0 and writes to unknown or read-only registers are ignored, each logged", async () => {
  await withGpu({ gpu_id: 5 }, async ({ gpu }) => {
    assert.equal(await gpu.reg(0x300), 0);
    await gpu.setReg(0x300, 0xdead);
    await gpu.setReg(R.GPU_ID, 9);
    await gpu.setReg(R.LINK_STATUS, 0);
    assert.equal(await gpu.reg(R.GPU_ID), 5);
    assert.equal(await gpu.reg(R.LINK_STATUS), GPU_LINK.UP);
    assert.equal(gpu.guestErrorCount(), 4);
  });
});

Deno.test("the write-only doorbells read 0 without a log line", async () => {
  await withGpu({}, async ({ gpu }) => {
    assert.equal(await gpu.reg(R.LINK_TX_DOORBELL), 0);
    assert.equal(await gpu.reg(R.LINK_RX_CONSUME), 0);
    assert.equal(gpu.guestErrorCount(), 0);
  });
});

/** Every register's value, in GPU_REG order. */
function allRegs(rig: GpuRig): Promise<number[]> {
  return Promise.all(Object.values(R).map((off) => rig.gpu.reg(off)));
}

/** Registers with values in both halves of the 8-byte windows below; a frame ready to send. */
async function fillRegisters(rig: GpuRig): Promise<void> {
  await rig.gpu.devmemWrite(0x100, pattern(32, 21));
  await rig.gpu.setReg(R.LINK_TX_OFFSET_LO, 0x1111_1000);
  await rig.gpu.setReg(R.LINK_TX_OFFSET_HI, 0x2222_2222);
  await rig.gpu.setReg(R.LINK_TX_LEN, 0x3333);
  await rig.gpu.setReg(R.LINK_RX_OFFSET_LO, 0x4444_4000);
  await rig.gpu.setReg(R.LINK_RX_OFFSET_HI, 0x5555_5555);
  await rig.gpu.setReg(R.LINK_RX_BUF_SIZE, 0x6666);
  await rig.gpu.setReg(R.IRQ_MASK, GPU_IRQ.RX_READY);
}

/** 8-byte windows over register pairs: 8-aligned and only 4-aligned ones. */
const EIGHT_BYTE_OFFSETS = [
  R.VENDOR_ID,
  R.DEVICE_ID,
  R.GPU_ID,
  R.DEVMEM_SIZE_LO,
  R.IRQ_STATUS,
  R.LINK_STATUS,
  R.LINK_TX_OFFSET_LO,
  R.LINK_TX_LEN,
  R.LINK_RX_OFFSET_LO,
  R.LINK_RX_BUF_SIZE,
  R.LINK_RX_LEN,
];

Deno.test("8-byte reads of BAR0 read 0 at every offset, each logged, never two registers", async () => {
  await withGpu({ gpu_id: 0x11223344, devmem_size: "64K" }, async (rig) => {
    await fillRegisters(rig);
    const logs = rig.gpu.guestErrorCount();
    for (const off of EIGHT_BYTE_OFFSETS) {
      assert.equal(await rig.gpu.regAccess(off, 8), 0n, `8-byte read at 0x${off.toString(16)}`);
    }
    assert.equal(rig.gpu.guestErrorCount(), logs + EIGHT_BYTE_OFFSETS.length);
  });
});

Deno.test("8-byte writes to BAR0 change no register and ring no doorbell, at every offset", async () => {
  await withGpu({ devmem_size: "64K" }, async (rig) => {
    await fillRegisters(rig);
    const before = await allRegs(rig);
    const logs = rig.gpu.guestErrorCount();
    // Were an 8-byte write split in two 32-bit ones, these would point the
    // transmit range at the frame at 0x100 and ring with a valid length, and
    // enable every cause.
    const value = (off: number): bigint =>
      off === R.LINK_TX_OFFSET_LO
        ? 0x100n
        : off === R.LINK_TX_LEN
        ? 1n << 32n | 32n
        : 0x3_0000_0003n;
    for (const off of EIGHT_BYTE_OFFSETS) await rig.gpu.regAccess(off, 8, value(off));
    assert.deepEqual(await allRegs(rig), before);
    assert.equal(rig.conn!.tryRecv(), null, "no frame went out");
    assert.equal(rig.gpu.guestErrorCount(), logs + EIGHT_BYTE_OFFSETS.length);
  });
});

Deno.test("byte, word and unaligned 32-bit accesses to BAR0 read 0 and change nothing, each logged", async () => {
  await withGpu({ gpu_id: 0x11223344, devmem_size: "64K" }, async (rig) => {
    const { gpu } = rig;
    await fillRegisters(rig);
    const before = await allRegs(rig);
    const logs = gpu.guestErrorCount();
    let refused = 0;
    for (const off of [R.GPU_ID, R.IRQ_MASK, R.LINK_TX_OFFSET_LO, R.LINK_RX_BUF_SIZE]) {
      for (let b = 0; b < 4; b++) {
        const at = `0x${(off + b).toString(16)}`;
        assert.equal(await gpu.regAccess(off + b, 1), 0n, `1-byte read at ${at}`);
        await gpu.regAccess(off + b, 1, 0xff);
        refused += 2;
        if (b % 2 === 0) {
          assert.equal(await gpu.regAccess(off + b, 2), 0n, `2-byte read at ${at}`);
          await gpu.regAccess(off + b, 2, 0xffff);
          refused += 2;
        }
        if (b > 0) {
          assert.equal(await gpu.regAccess(off + b, 4), 0n, `4-byte read at ${at}`);
          await gpu.regAccess(off + b, 4, 0xffff_ffff);
          refused += 2;
        }
      }
    }
    assert.deepEqual(await allRegs(rig), before);
    assert.equal(gpu.guestErrorCount(), logs + refused);
  });
});

Deno.test("no register value crashes the device: every BAR0 offset written with hostile values", async () => {
  await withGpu({ devmem_size: "64K" }, async (rig) => {
    const { gpu } = rig;
    const values = [0xffff_ffff, 0x8000_0000, 0x1_0000 + 1];
    const writes: Promise<void>[] = [];
    for (let off = 0; off < 0x10000; off += 4) {
      for (const v of values) writes.push(gpu.setReg(off, v));
    }
    // Doorbells with every offset/length combination that overflows.
    for (const hi of [0, 0xffff_ffff]) {
      writes.push(ring(rig, 0xffff_fff0, 0xffff_ffff, hi));
    }
    await Promise.all(writes);
    assert.equal(gpu.qt.alive, true);
    assert.equal(await gpu.reg(R.VENDOR_ID), 0x1af4);
  });
});
