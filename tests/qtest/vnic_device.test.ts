/**
 * Directed tests of cnuas-vnic that only the QEMU device can answer: PCI
 * identity and capabilities, properties, guest-error logging and socket
 * buffers (`vnic_directed.test.ts` has the ones device and model share).
 */
import assert from "node:assert/strict";
import { VNIC_MAX_FRAME, VNIC_PCI, VNIC_REG } from "../../harness/models/vnic.ts";
import { QtestMachine } from "../../harness/qtest/client.ts";
import { PCI_CFG, QtestPciDevice } from "../../harness/qtest/pci.ts";
import { VnicRig } from "../../harness/qtest/vnic_rig.ts";
import { qemuEnv } from "./qemu_env.ts";
import { pattern, RAM } from "./vnic_fixture.ts";

const TX_BUF = RAM.base + 0x1_0000;

async function rig(opts: Partial<Parameters<typeof VnicRig.start>[0]> = {}): Promise<VnicRig> {
  const env = await qemuEnv();
  return await VnicRig.start({ ...env, socket: "listening", irq: "intx", ...opts });
}

Deno.test("device: PCI identity is 1af4:10f0, class 0x0280 (network, other), revision 0, interrupt pin A", async () => {
  const r = await rig();
  try {
    assert.equal(await r.pci.read(PCI_CFG.VENDOR_ID, 2), 0x1af4);
    assert.equal(await r.pci.read(PCI_CFG.DEVICE_ID, 2), 0x10f0);
    assert.equal(await r.pci.read(PCI_CFG.REVISION, 1), 0);
    // Base class 0x02, subclass 0x80, programming interface 0 (datasheet: "Network, other").
    assert.equal((await r.pci.read(PCI_CFG.REVISION, 4)) >>> 8, 0x02_80_00);
    assert.equal(VNIC_PCI.classCode, 0x0280, "the model states the same class");
    assert.equal(await r.pci.read(PCI_CFG.INTERRUPT_PIN, 1), 1);
  } finally {
    await r.close();
  }
});

Deno.test("device: BAR0 is a 4 KiB 32-bit memory BAR", async () => {
  const r = await rig();
  try {
    await r.pci.enable({});
    await r.pci.write(PCI_CFG.BAR0, 4, 0xffff_ffff);
    assert.equal(await r.pci.read(PCI_CFG.BAR0, 4), 0xffff_f000);
  } finally {
    await r.close();
  }
});

Deno.test("device: one MSI vector with 64-bit addresses", async () => {
  const r = await rig();
  try {
    const cap = await r.pci.capability(PCI_CFG.CAP_ID_MSI);
    assert.notEqual(cap, 0);
    const ctrl = await r.pci.read(cap + 2, 2);
    assert.equal((ctrl >> 1) & 7, 0, "multiple message capable: 1 vector");
    assert.equal(ctrl & 0x80, 0x80, "64-bit address capable");
  } finally {
    await r.close();
  }
});

Deno.test("device: x-speed and x-width set the PCIe link capability and status", async () => {
  const env = await qemuEnv();
  for (const [props, speed, width] of [["", 3, 16], ["x-speed=16,x-width=4", 4, 4]] as const) {
    const r = await VnicRig.start({
      ...env,
      socket: "none",
      irq: "intx",
      deviceProps: props || undefined,
    });
    try {
      const cap = await r.pci.capability(PCI_CFG.CAP_ID_EXP);
      const lnkcap = await r.pci.read(cap + 0x0c, 4);
      const lnksta = await r.pci.read(cap + 0x12, 2);
      assert.equal(lnkcap & 0xf, speed, `LNKCAP speed (${props || "defaults"})`);
      assert.equal((lnkcap >> 4) & 0x3f, width, `LNKCAP width (${props || "defaults"})`);
      assert.equal(lnksta & 0xf, speed, "LNKSTA speed");
      assert.equal((lnksta >> 4) & 0x3f, width, "LNKSTA width");
    } finally {
      await r.close();
    }
  }
});

Deno.test("device: instances without a mac property get different MACs", async () => {
  const env = await qemuEnv();
  const qt = await QtestMachine.start({
    ...env,
    devices: ["cnuas-vnic,addr=0x4", "cnuas-vnic,addr=0x5"],
  });
  try {
    const macs: number[] = [];
    for (const [slot, bar] of [[4, 0xe000_0000n], [5, 0xe000_1000n]] as const) {
      const dev = new QtestPciDevice(qt, { bus: 0, slot, fn: 0 });
      await dev.mapBar(0, bar);
      await dev.enable({ memory: true });
      macs.push(
        await qt.readl(bar + BigInt(VNIC_REG.MAC_HI)) * 2 ** 32 +
          await qt.readl(bar + BigInt(VNIC_REG.MAC_LO)),
      );
    }
    assert.notEqual(macs[0], macs[1]);
  } finally {
    await qt.close();
  }
});

Deno.test("device: guest mistakes are logged as guest errors and QEMU keeps running", async () => {
  const r = await rig();
  try {
    await r.setReg(VNIC_REG.TX_LEN, 0);
    await r.setReg(VNIC_REG.TX_DOORBELL, 1);
    await r.setReg(VNIC_REG.TX_LEN, VNIC_MAX_FRAME + 1);
    await r.setReg(VNIC_REG.TX_DOORBELL, 1);
    await r.setReg(VNIC_REG.TX_ADDR_LO, 0x9000_0000);
    await r.setReg(VNIC_REG.TX_LEN, 64);
    await r.setReg(VNIC_REG.TX_DOORBELL, 1);
    await r.setReg(0x200, 1);
    await r.qt.read(0xe000_0000n, 1);
    await r.setReg(VNIC_REG.RX_ADDR_LO, 0x9000_0000);
    r.peerSend(pattern(10));
    await r.barrier();
    assert.equal(r.qt.alive, true);
    assert.equal(await r.reg(VNIC_REG.LINK_STATUS), 1);
    const log = await r.qt.readLog();
    for (
      const what of [
        /TX_LEN 0 outside/,
        /TX_LEN 9217 outside/,
        /TX frame 0x90000000\+64 is not readable/,
        /write to unknown register 0x200/,
        /1-byte read at 0x0/,
        /RX buffer 0x90000000\+10 is not writable/,
      ]
    ) {
      assert.match(log, what);
    }
  } finally {
    await r.close();
  }
});

Deno.test("device: enlarged socket buffers hold a burst of 200 jumbo frames the peer has not read yet", async () => {
  const r = await rig();
  try {
    const frame = pattern(VNIC_MAX_FRAME);
    await r.qt.memWrite(TX_BUF, frame);
    await r.setReg(VNIC_REG.TX_ADDR_LO, TX_BUF);
    await r.setReg(VNIC_REG.TX_LEN, VNIC_MAX_FRAME);
    const rings = [];
    for (let i = 0; i < 200; i++) rings.push(r.setReg(VNIC_REG.TX_DOORBELL, 1));
    await Promise.all(rings);
    const { frames } = r.drain();
    assert.equal(frames.length, 200);
  } finally {
    await r.close();
  }
});
