/**
 * Directed tests of cnuas-vnic: one per behaviour line of docs/devices.md (and of
 * the decisions the device and model document). Behaviours of the register
 * interface and the wire run twice, on the QEMU device through qtest and on
 * the reference model; PCI identity, capabilities and logging run on the
 * device only (`vnic_device.test.ts`).
 */
import assert from "node:assert/strict";
import { VNIC_IRQ, VNIC_MAX_FRAME, VNIC_REG } from "../../harness/models/vnic.ts";
import { VNIC_RIG } from "../../harness/qtest/vnic_rig.ts";
import { IMPLS, type NicUnderTest, pattern, RAM, withNic } from "./vnic_fixture.ts";

const TX_BUF = RAM.base + 0x1_0000;
const RX_BUF = RAM.base + 0x4_0000;
const MS = 1_000_000;

async function transmit(nic: NicUnderTest, data: Uint8Array, addr = TX_BUF): Promise<void> {
  await nic.memWrite(addr, data);
  await nic.setReg(VNIC_REG.TX_ADDR_LO, addr);
  await nic.setReg(VNIC_REG.TX_ADDR_HI, 0);
  await nic.setReg(VNIC_REG.TX_LEN, data.length);
  await nic.setReg(VNIC_REG.TX_DOORBELL, 1);
}

async function arm(nic: NicUnderTest, addr = RX_BUF): Promise<void> {
  await nic.setReg(VNIC_REG.RX_ADDR_LO, addr);
  await nic.setReg(VNIC_REG.RX_ADDR_HI, 0);
}

function both(name: string, fn: (nic: NicUnderTest) => Promise<void>, setup = {}): void {
  for (const impl of IMPLS) {
    Deno.test(`${impl.name}: ${name}`, () => withNic(impl.start, setup, fn));
  }
}

// ---- link and identity registers ---------------------------------------------------

both("the link reads up when the device connected at start, with no cause pending", async (nic) => {
  assert.equal(await nic.reg(VNIC_REG.LINK_STATUS), 1);
  assert.equal(await nic.reg(VNIC_REG.IRQ_STATUS), 0);
});

both("without socket_path the link reads down and never comes up", async (nic) => {
  assert.equal(await nic.reg(VNIC_REG.LINK_STATUS), 0);
  assert.equal(await nic.clockStep(10_000 * MS), 0);
  assert.equal(await nic.reg(VNIC_REG.LINK_STATUS), 0);
}, { socket: "none" });

both("MAC_LO and MAC_HI carry the mac property, byte 0 least significant", async (nic) => {
  assert.equal(await nic.reg(VNIC_REG.MAC_LO), 0x0403_0201);
  assert.equal(await nic.reg(VNIC_REG.MAC_HI), 0x0605);
}, { mac: [1, 2, 3, 4, 5, 6] });

both("address and length registers read back what was written", async (nic) => {
  const values: [number, number][] = [
    [VNIC_REG.TX_ADDR_LO, 0xdead_beef],
    [VNIC_REG.TX_ADDR_HI, 0x1234_5678],
    [VNIC_REG.TX_LEN, 0xffff_ffff],
    [VNIC_REG.RX_ADDR_LO, 0x8765_4321],
    [VNIC_REG.RX_ADDR_HI, 0x0000_0001],
  ];
  for (const [off, v] of values) await nic.setReg(off, v);
  for (const [off, v] of values) {
    assert.equal(await nic.reg(off), v, `offset 0x${off.toString(16)}`);
  }
});

both("TX_DOORBELL reads 0", async (nic) => {
  await nic.setReg(VNIC_REG.TX_DOORBELL, 0x55);
  assert.equal(await nic.reg(VNIC_REG.TX_DOORBELL), 0);
});

// ---- transmit -----------------------------------------------------------------------

both(
  "a doorbell sends TX_LEN bytes at TX_ADDR as one datagram and raises TX complete",
  async (nic) => {
    const frame = pattern(60, 7);
    await transmit(nic, frame);
    assert.deepEqual(await nic.framesOut(), [frame]);
    assert.equal(await nic.reg(VNIC_REG.IRQ_STATUS), VNIC_IRQ.TX);
  },
);

both("a 9216-byte frame goes out whole", async (nic) => {
  const frame = pattern(VNIC_MAX_FRAME, 3);
  await transmit(nic, frame);
  assert.deepEqual(await nic.framesOut(), [frame]);
});

both("TX_LEN 0 is rejected: nothing sent, no TX complete", async (nic) => {
  await transmit(nic, new Uint8Array(0));
  assert.deepEqual(await nic.framesOut(), []);
  assert.equal(await nic.reg(VNIC_REG.IRQ_STATUS), 0);
});

both("TX_LEN above 9216 is rejected: nothing sent, no TX complete", async (nic) => {
  await transmit(nic, pattern(VNIC_MAX_FRAME + 1));
  assert.deepEqual(await nic.framesOut(), []);
  assert.equal(await nic.reg(VNIC_REG.IRQ_STATUS), 0);
});

both("a frame DMA cannot read in full is rejected: nothing sent, no TX complete", async (nic) => {
  await nic.setReg(VNIC_REG.TX_ADDR_LO, RAM.end - 16); // runs past the end of RAM
  await nic.setReg(VNIC_REG.TX_LEN, 64);
  await nic.setReg(VNIC_REG.TX_DOORBELL, 1);
  await nic.setReg(VNIC_REG.TX_ADDR_LO, 0x9000_0000); // nothing mapped there
  await nic.setReg(VNIC_REG.TX_DOORBELL, 1);
  assert.deepEqual(await nic.framesOut(), []);
  assert.equal(await nic.reg(VNIC_REG.IRQ_STATUS), 0);
});

both("with the link down a frame is dropped but TX complete is still raised", async (nic) => {
  await transmit(nic, pattern(100));
  assert.equal(await nic.reg(VNIC_REG.IRQ_STATUS), VNIC_IRQ.TX);
}, { socket: "none" });

both("a send to a peer that has gone drops the link and still raises TX complete", async (nic) => {
  await arm(nic);
  await nic.peerSend(pattern(10)); // RX busy: the device stops reading, so it has not seen the close
  await nic.peerClose();
  assert.equal(await nic.reg(VNIC_REG.LINK_STATUS), 1);
  await transmit(nic, pattern(20));
  assert.equal(await nic.reg(VNIC_REG.LINK_STATUS), 0);
  assert.equal(await nic.reg(VNIC_REG.IRQ_STATUS), VNIC_IRQ.RX | VNIC_IRQ.TX | VNIC_IRQ.LINK);
});

// ---- receive ------------------------------------------------------------------------

both(
  "an armed NIC lands a datagram at RX_ADDR and sets RX_LEN, RX_STATUS and RX available",
  async (nic) => {
    await arm(nic);
    const frame = pattern(1500, 9);
    assert.equal(await nic.peerSend(frame), "sent");
    assert.equal(await nic.reg(VNIC_REG.RX_STATUS), 1);
    assert.equal(await nic.reg(VNIC_REG.RX_LEN), 1500);
    assert.equal(await nic.reg(VNIC_REG.IRQ_STATUS), VNIC_IRQ.RX);
    assert.deepEqual(await nic.memRead(RX_BUF, 1500), frame);
  },
);

both(
  "an unarmed NIC (RX_ADDR 0) drops datagrams; arming later does not bring them back",
  async (nic) => {
    await nic.peerSend(pattern(64));
    assert.equal(await nic.reg(VNIC_REG.RX_STATUS), 0);
    assert.equal(await nic.reg(VNIC_REG.IRQ_STATUS), 0);
    await arm(nic);
    await nic.setReg(VNIC_REG.RX_STATUS, 0);
    assert.equal(await nic.reg(VNIC_REG.RX_STATUS), 0);
    assert.deepEqual(await nic.memRead(RX_BUF, 64), new Uint8Array(64));
  },
);

both(
  "while RX_STATUS is 1 datagrams wait; each release delivers the next one at once",
  async (nic) => {
    await arm(nic);
    const frames = [pattern(100, 1), pattern(200, 2), pattern(300, 3)];
    for (const f of frames) assert.equal(await nic.peerSend(f), "sent");
    for (const f of frames) {
      assert.equal(await nic.reg(VNIC_REG.RX_STATUS), 1);
      assert.equal(await nic.reg(VNIC_REG.RX_LEN), f.length);
      assert.deepEqual(await nic.memRead(RX_BUF, f.length), f);
      await nic.setReg(VNIC_REG.RX_STATUS, 0);
    }
    assert.equal(await nic.reg(VNIC_REG.RX_STATUS), 0);
  },
);

both("releasing keeps RX_LEN until the next delivery", async (nic) => {
  await arm(nic);
  await nic.peerSend(pattern(77));
  await nic.setReg(VNIC_REG.RX_STATUS, 0);
  assert.equal(await nic.reg(VNIC_REG.RX_STATUS), 0);
  assert.equal(await nic.reg(VNIC_REG.RX_LEN), 77);
});

both("writing a non-zero value to RX_STATUS does not release the frame", async (nic) => {
  await arm(nic);
  await nic.peerSend(pattern(10, 1));
  await nic.peerSend(pattern(20, 2));
  await nic.setReg(VNIC_REG.RX_STATUS, 1);
  await nic.setReg(VNIC_REG.RX_STATUS, 0xffff_ffff);
  assert.equal(await nic.reg(VNIC_REG.RX_STATUS), 1);
  assert.equal(await nic.reg(VNIC_REG.RX_LEN), 10);
});

both("a datagram above 9216 bytes is dropped and the next one lands", async (nic) => {
  await arm(nic);
  await nic.peerSend(pattern(VNIC_MAX_FRAME + 1));
  assert.equal(await nic.reg(VNIC_REG.RX_STATUS), 0);
  await nic.peerSend(pattern(VNIC_MAX_FRAME, 5));
  assert.equal(await nic.reg(VNIC_REG.RX_LEN), VNIC_MAX_FRAME);
  assert.deepEqual(await nic.memRead(RX_BUF, VNIC_MAX_FRAME), pattern(VNIC_MAX_FRAME, 5));
});

both("an empty datagram is dropped and the link stays up", async (nic) => {
  await arm(nic);
  await nic.peerSend(new Uint8Array(0));
  assert.equal(await nic.reg(VNIC_REG.RX_STATUS), 0);
  assert.equal(await nic.reg(VNIC_REG.LINK_STATUS), 1);
});

both(
  "a landing range DMA cannot write in full drops the frame and leaves memory alone",
  async (nic) => {
    await arm(nic, RAM.end - 50);
    await nic.peerSend(pattern(100));
    assert.equal(await nic.reg(VNIC_REG.RX_STATUS), 0);
    assert.deepEqual(await nic.memRead(RAM.end - 50, 50), new Uint8Array(50));
  },
);

// ---- DMA reaches RAM only --------------------------------------------------------------

const BAR0 = Number(VNIC_RIG.bar);

both(
  "a frame landing on the NIC's own BAR0 is dropped: its tail on TX_DOORBELL rings nothing",
  async (nic) => {
    await nic.memWrite(TX_BUF, pattern(60, 3));
    await nic.setReg(VNIC_REG.TX_ADDR_LO, TX_BUF);
    await nic.setReg(VNIC_REG.TX_LEN, 60);
    // 8 bytes refused as one access, then a 4-byte write at TX_DOORBELL.
    await arm(nic, BAR0 + VNIC_REG.TX_DOORBELL - 8);
    await nic.peerSend(pattern(12, 4));
    assert.equal(await nic.reg(VNIC_REG.RX_STATUS), 0);
    assert.deepEqual(await nic.framesOut(), []);
    assert.equal(await nic.reg(VNIC_REG.IRQ_STATUS), 0);
  },
);

both("a frame is not sent from MMIO: the NIC's own registers, the IOAPIC", async (nic) => {
  for (const addr of [BAR0 + VNIC_REG.LINK_STATUS, 0xfec0_0000]) {
    await nic.setReg(VNIC_REG.TX_ADDR_LO, addr);
    await nic.setReg(VNIC_REG.TX_LEN, 4);
    await nic.setReg(VNIC_REG.TX_DOORBELL, 1);
  }
  assert.deepEqual(await nic.framesOut(), []);
  assert.equal(await nic.reg(VNIC_REG.IRQ_STATUS), 0);
});

// ---- interrupts ---------------------------------------------------------------------

both("IRQ_STATUS is write-one-to-clear", async (nic) => {
  await arm(nic);
  await nic.peerSend(pattern(10));
  await transmit(nic, pattern(10));
  assert.equal(await nic.reg(VNIC_REG.IRQ_STATUS), VNIC_IRQ.RX | VNIC_IRQ.TX);
  await nic.setReg(VNIC_REG.IRQ_STATUS, VNIC_IRQ.TX);
  assert.equal(await nic.reg(VNIC_REG.IRQ_STATUS), VNIC_IRQ.RX);
  await nic.setReg(VNIC_REG.IRQ_STATUS, 0);
  assert.equal(await nic.reg(VNIC_REG.IRQ_STATUS), VNIC_IRQ.RX);
});

both("IRQ_MASK keeps the three cause bits", async (nic) => {
  await nic.setReg(VNIC_REG.IRQ_MASK, 0xffff_ffff);
  assert.equal(await nic.reg(VNIC_REG.IRQ_MASK), 7);
});

both("INTx is asserted exactly while IRQ_STATUS & IRQ_MASK is non-zero", async (nic) => {
  await transmit(nic, pattern(10));
  assert.equal(await nic.intx(), false, "TX pending but masked");
  await nic.setReg(VNIC_REG.IRQ_MASK, VNIC_IRQ.TX);
  assert.equal(await nic.intx(), true, "TX pending and enabled");
  await nic.setReg(VNIC_REG.IRQ_MASK, VNIC_IRQ.RX | VNIC_IRQ.LINK);
  assert.equal(await nic.intx(), false, "TX pending, only other causes enabled");
  await nic.setReg(VNIC_REG.IRQ_MASK, VNIC_IRQ.TX);
  await nic.setReg(VNIC_REG.IRQ_STATUS, VNIC_IRQ.TX);
  assert.equal(await nic.intx(), false, "acknowledged");
});

both(
  "an MSI is sent when a cause becomes pending and enabled, not again while it stays pending",
  async (nic) => {
    await nic.setReg(VNIC_REG.IRQ_MASK, 7);
    await transmit(nic, pattern(10));
    assert.equal(await nic.msiFired(), true);
    await transmit(nic, pattern(10));
    assert.equal(await nic.msiFired(), false, "TX still pending");
    await nic.setReg(VNIC_REG.IRQ_STATUS, VNIC_IRQ.TX);
    await transmit(nic, pattern(10));
    assert.equal(await nic.msiFired(), true);
  },
  { irq: "msi" },
);

both("unmasking a pending cause sends an MSI", async (nic) => {
  await transmit(nic, pattern(10));
  assert.equal(await nic.msiFired(), false, "masked");
  await nic.setReg(VNIC_REG.IRQ_MASK, VNIC_IRQ.TX);
  assert.equal(await nic.msiFired(), true);
}, { irq: "msi" });

both("a second cause arriving while one is pending sends another MSI", async (nic) => {
  await nic.setReg(VNIC_REG.IRQ_MASK, 7);
  await arm(nic);
  await transmit(nic, pattern(10));
  assert.equal(await nic.msiFired(), true);
  await nic.peerSend(pattern(10));
  assert.equal(await nic.msiFired(), true);
}, { irq: "msi" });

both(
  "MSI switched off with a cause pending asserts INTx at once; ack and mask deassert it",
  async (nic) => {
    await nic.setReg(VNIC_REG.IRQ_MASK, VNIC_IRQ.TX);
    await transmit(nic, pattern(10));
    assert.equal(await nic.msiFired(), true);
    assert.equal(await nic.intx(), false, "MSI on: INTx stays low");
    await nic.setMsi(false);
    assert.equal(await nic.intx(), true, "MSI off, TX pending and enabled");
    await nic.setReg(VNIC_REG.IRQ_STATUS, VNIC_IRQ.TX);
    assert.equal(await nic.intx(), false, "acknowledged");
    await transmit(nic, pattern(10));
    assert.equal(await nic.intx(), true, "TX pending again");
    await nic.setReg(VNIC_REG.IRQ_MASK, 0);
    assert.equal(await nic.intx(), false, "masked");
    await nic.setReg(VNIC_REG.IRQ_MASK, VNIC_IRQ.TX);
    assert.equal(await nic.intx(), true, "unmasked");
    await nic.setMsi(true);
    assert.equal(await nic.intx(), false, "MSI on again: INTx deasserted");
    assert.equal(await nic.msiFired(), false, "no message for a cause already pending");
  },
  { irq: "msi" },
);

// ---- link changes and reconnects ----------------------------------------------------

both("a peer close drops the link and raises link changed", async (nic) => {
  await nic.setReg(VNIC_REG.IRQ_MASK, VNIC_IRQ.LINK);
  await nic.peerClose();
  assert.equal(await nic.reg(VNIC_REG.LINK_STATUS), 0);
  assert.equal(await nic.reg(VNIC_REG.IRQ_STATUS), VNIC_IRQ.LINK);
  assert.equal(await nic.intx(), true);
});

both("while RX_STATUS is 1 a peer close is noticed only after the queued frames", async (nic) => {
  await arm(nic);
  await nic.peerSend(pattern(10, 1));
  await nic.peerSend(pattern(20, 2));
  await nic.peerClose();
  assert.equal(await nic.reg(VNIC_REG.LINK_STATUS), 1);
  await nic.setReg(VNIC_REG.RX_STATUS, 0);
  assert.equal(await nic.reg(VNIC_REG.RX_LEN), 20, "the queued frame still lands");
  assert.equal(await nic.reg(VNIC_REG.LINK_STATUS), 1);
  await nic.setReg(VNIC_REG.RX_STATUS, 0);
  assert.equal(await nic.reg(VNIC_REG.LINK_STATUS), 0);
});

both(
  "after a loss the device reconnects at 100 ms of virtual time and raises link changed",
  async (nic) => {
    await nic.peerClose();
    await nic.setReg(VNIC_REG.IRQ_STATUS, VNIC_IRQ.LINK);
    assert.equal(await nic.clockStep(100 * MS - 1), 0);
    assert.equal(await nic.reg(VNIC_REG.LINK_STATUS), 0);
    assert.equal(await nic.clockStep(1), 1);
    assert.equal(await nic.reg(VNIC_REG.LINK_STATUS), 1);
    assert.equal(await nic.reg(VNIC_REG.IRQ_STATUS), VNIC_IRQ.LINK);
  },
);

both("reconnect attempts back off 100, 200, 400, 800, 1600 ms, then every 2000 ms", async (nic) => {
  await nic.listenerClose();
  await nic.peerClose();
  // attempts at +100, +300, +700, +1500, +3100, +5100, +7100 ms all fail
  assert.equal(await nic.clockStep(7100 * MS), 0);
  await nic.listenerOpen();
  assert.equal(await nic.clockStep(2000 * MS - 1), 0, "next attempt is 2000 ms after the last");
  assert.equal(await nic.clockStep(1), 1);
  assert.equal(await nic.reg(VNIC_REG.LINK_STATUS), 1);
});

both("a device that found no listener at start connects once one appears", async (nic) => {
  assert.equal(await nic.reg(VNIC_REG.LINK_STATUS), 0);
  await nic.listenerOpen();
  assert.equal(await nic.clockStep(100 * MS), 1);
  assert.equal(await nic.reg(VNIC_REG.LINK_STATUS), 1);
  assert.equal(await nic.reg(VNIC_REG.IRQ_STATUS), VNIC_IRQ.LINK);
}, { socket: "absent" });

// ---- guest mistakes and reset -------------------------------------------------------

both("accesses other than aligned 32-bit read 0 and write nothing", async (nic) => {
  assert.equal(await nic.rawRead(VNIC_REG.MAC_LO, 1), 0n);
  assert.equal(await nic.rawRead(VNIC_REG.MAC_LO, 2), 0n);
  assert.equal(await nic.rawRead(VNIC_REG.MAC_LO, 8), 0n);
  assert.equal(await nic.rawRead(VNIC_REG.MAC_LO + 1, 4), 0n);
  await nic.rawWrite(VNIC_REG.IRQ_MASK, 1, 7n);
  await nic.rawWrite(VNIC_REG.TX_ADDR_LO, 8, 0x1111_2222_3333_4444n);
  await nic.rawWrite(VNIC_REG.RX_ADDR_LO + 2, 4, 0x5555_6666n);
  assert.equal(await nic.reg(VNIC_REG.IRQ_MASK), 0);
  assert.equal(await nic.reg(VNIC_REG.TX_ADDR_LO), 0);
  assert.equal(await nic.reg(VNIC_REG.TX_ADDR_HI), 0);
  assert.equal(await nic.reg(VNIC_REG.RX_ADDR_LO), 0);
}, { mac: [1, 2, 3, 4, 5, 6] });

/** Registers with a value in both halves of every 8-byte window the tests below touch. */
async function fillRegisters(nic: NicUnderTest): Promise<void> {
  await nic.setReg(VNIC_REG.TX_ADDR_LO, 0x1111_1111);
  await nic.setReg(VNIC_REG.TX_ADDR_HI, 0x2222_2222);
  await nic.setReg(VNIC_REG.TX_LEN, 60);
  await nic.setReg(VNIC_REG.RX_ADDR_LO, 0x3333_3333);
  await nic.setReg(VNIC_REG.RX_ADDR_HI, 0x4444_4444);
  await nic.setReg(VNIC_REG.IRQ_MASK, VNIC_IRQ.RX);
}

const EIGHT_BYTE_OFFSETS = [
  VNIC_REG.TX_ADDR_LO, // the TX address pair
  VNIC_REG.TX_ADDR_HI, // 4-aligned only: TX_ADDR_HI and TX_LEN
  VNIC_REG.TX_LEN, // TX_LEN and TX_DOORBELL
  VNIC_REG.RX_ADDR_LO, // the RX address pair
  VNIC_REG.RX_LEN, // RX_LEN and RX_STATUS
  VNIC_REG.IRQ_STATUS, // IRQ_STATUS and IRQ_MASK
  VNIC_REG.MAC_LO, // the MAC
];

both("an 8-byte read reads 0 at every offset, never two registers", async (nic) => {
  await fillRegisters(nic);
  for (const off of EIGHT_BYTE_OFFSETS) {
    assert.equal(await nic.rawRead(off, 8), 0n, `8-byte read at 0x${off.toString(16)}`);
  }
}, { mac: [1, 2, 3, 4, 5, 6] });

both("an 8-byte write changes no register and rings no doorbell, at every offset", async (nic) => {
  await fillRegisters(nic);
  await nic.memWrite(TX_BUF, pattern(60));
  const before = await Promise.all(Object.values(VNIC_REG).map((off) => nic.reg(off)));
  // Were an 8-byte write split in two 32-bit ones, these would point TX at
  // the frame and ring with a valid length, and enable every cause.
  const value = (off: number): bigint =>
    off === VNIC_REG.TX_ADDR_LO
      ? BigInt(TX_BUF)
      : off === VNIC_REG.TX_LEN
      ? 1n << 32n | 60n
      : 0x7_0000_0007n;
  for (const off of EIGHT_BYTE_OFFSETS) await nic.rawWrite(off, 8, value(off));
  const after = await Promise.all(Object.values(VNIC_REG).map((off) => nic.reg(off)));
  assert.deepEqual(after, before);
  assert.deepEqual(await nic.framesOut(), [], "no frame went out");
  assert.equal(await nic.intx(), false);
});

both("1- and 2-byte accesses and unaligned 32-bit ones read 0 and write nothing", async (nic) => {
  await fillRegisters(nic);
  for (const off of [VNIC_REG.TX_ADDR_LO, VNIC_REG.RX_ADDR_HI, VNIC_REG.IRQ_MASK]) {
    for (let b = 0; b < 4; b++) {
      assert.equal(await nic.rawRead(off + b, 1), 0n, `1-byte read at 0x${(off + b).toString(16)}`);
      if (b % 2 === 0) {
        assert.equal(
          await nic.rawRead(off + b, 2),
          0n,
          `2-byte read at 0x${(off + b).toString(16)}`,
        );
      }
      if (b > 0) {
        assert.equal(
          await nic.rawRead(off + b, 4),
          0n,
          `4-byte read at 0x${(off + b).toString(16)}`,
        );
      }
      await nic.rawWrite(off + b, 1, 0xffn);
      if (b % 2 === 0) await nic.rawWrite(off + b, 2, 0xffffn);
      if (b > 0) await nic.rawWrite(off + b, 4, 0xffff_ffffn);
    }
  }
  assert.equal(await nic.reg(VNIC_REG.TX_ADDR_LO), 0x1111_1111);
  assert.equal(await nic.reg(VNIC_REG.RX_ADDR_HI), 0x4444_4444);
  assert.equal(await nic.reg(VNIC_REG.IRQ_MASK), VNIC_IRQ.RX);
});

both("unknown offsets read 0 and ignore writes", async (nic) => {
  for (const off of [0x34, 0x100, 0xffc]) {
    await nic.setReg(off, 0xffff_ffff);
    assert.equal(await nic.reg(off), 0);
  }
  assert.equal(await nic.reg(VNIC_REG.IRQ_STATUS), 0);
});

both("read-only registers ignore writes", async (nic) => {
  for (const off of [VNIC_REG.RX_LEN, VNIC_REG.LINK_STATUS, VNIC_REG.MAC_LO, VNIC_REG.MAC_HI]) {
    const before = await nic.reg(off);
    await nic.setReg(off, 0xa5a5_a5a5);
    assert.equal(await nic.reg(off), before, `offset 0x${off.toString(16)}`);
  }
});

both("a reset clears every register but keeps the MAC and the link", async (nic) => {
  await arm(nic);
  await nic.setReg(VNIC_REG.IRQ_MASK, 7);
  await nic.peerSend(pattern(33));
  await transmit(nic, pattern(10));
  await nic.reset();
  for (
    const off of [
      VNIC_REG.TX_ADDR_LO,
      VNIC_REG.TX_ADDR_HI,
      VNIC_REG.TX_LEN,
      VNIC_REG.RX_ADDR_LO,
      VNIC_REG.RX_ADDR_HI,
      VNIC_REG.RX_LEN,
      VNIC_REG.RX_STATUS,
      VNIC_REG.IRQ_STATUS,
      VNIC_REG.IRQ_MASK,
    ]
  ) {
    assert.equal(await nic.reg(off), 0, `offset 0x${off.toString(16)}`);
  }
  assert.equal(await nic.reg(VNIC_REG.MAC_LO), 0x0403_0201);
  assert.equal(await nic.reg(VNIC_REG.MAC_HI), 0x0605);
  assert.equal(await nic.reg(VNIC_REG.LINK_STATUS), 1);
}, { mac: [1, 2, 3, 4, 5, 6] });

both("a reset drops datagrams that waited behind a delivered frame", async (nic) => {
  await arm(nic);
  await nic.peerSend(pattern(10, 1));
  await nic.peerSend(pattern(20, 2));
  await nic.reset();
  await arm(nic);
  assert.equal(await nic.reg(VNIC_REG.RX_STATUS), 0);
  await nic.peerSend(pattern(30, 3));
  assert.equal(await nic.reg(VNIC_REG.RX_LEN), 30);
});
