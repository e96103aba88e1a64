/**
 * cnuas-vnic's saved state (docs/devices.md, "vnic: saved state"): the
 * registers and the PCI function travel; the destination's socket is held
 * from realize until the loaded VM runs (qemu/hw/cnuas_sock.h), so a frame
 * the switch queued before the load lands where the saved RX_ADDR points,
 * and the link cause is raised as after a reconnect — also when the
 * destination has no switch, so the driver learns that the link it saved as
 * up is down.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { VNIC_IRQ, VNIC_IRQ_ALL, VNIC_REG } from "../../harness/models/vnic.ts";
import { QtestMachine } from "../../harness/qtest/client.ts";
import { VNIC_RIG, VnicRig } from "../../harness/qtest/vnic_rig.ts";
import { SeqpacketServer, type SeqpacketSocket } from "../../harness/fabric/seqpacket.ts";
import { QmpClient } from "../../harness/vm/qmp.ts";
import { inScratch, loadState, qmpArgs, qmpPath, saveState } from "./migrate_fixture.ts";
import { qemuEnv } from "./qemu_env.ts";
import { pattern, RAM } from "./vnic_fixture.ts";

const RX_BUF = RAM.base + 0x2_0000;

/** What a test does with the destination before and after its load. */
interface Migration {
  /** The destination's device, registers at VNIC_RIG.bar. */
  dst: QtestMachine;
  /** Register read on the destination. */
  reg(off: number): Promise<number>;
}

/**
 * A source vnic with RX armed at RX_BUF, every cause enabled, MSI set up and
 * its link up, saved; a destination started with `-incoming defer`, its own
 * switch listening when `withSwitch`; `beforeLoad` runs with the switch's
 * end of the destination's connection, then the state loads and the VM runs.
 */
async function migrate(
  withSwitch: boolean,
  beforeLoad: (peer: SeqpacketSocket | null, dst: QtestMachine) => Promise<void>,
  check: (m: Migration) => Promise<void>,
): Promise<void> {
  const env = await qemuEnv();
  await inScratch("vnic-migrate-", async (dir, defer) => {
    const state = join(dir, "state");
    const src = await VnicRig.start({
      ...env,
      socket: "listening",
      irq: "msi",
      extraArgs: qmpArgs(dir, "src"),
    });
    defer(() => src.close());
    await src.setReg(VNIC_REG.RX_ADDR_LO, RX_BUF);
    await src.setReg(VNIC_REG.RX_ADDR_HI, 0); // RX_BUF is below 4 GiB
    await src.setReg(VNIC_REG.IRQ_MASK, VNIC_IRQ_ALL);
    await src.setReg(VNIC_REG.IRQ_STATUS, VNIC_IRQ_ALL); // whatever the link-up raised
    assert.equal(await src.reg(VNIC_REG.LINK_STATUS) & 1, 1, "the source's link is up");
    await src.qt.memset(RX_BUF, 512, 0xee);
    assert.equal(await src.msiFired(), false);
    const srcQmp = await QmpClient.connect(qmpPath(dir, "src"));
    defer(() => srcQmp.close());
    await saveState(srcQmp, state);
    await src.close();

    const wire = join(dir, "wire2.sock");
    const server = withSwitch ? SeqpacketServer.listen(wire) : null;
    if (server) defer(() => server.close());
    const dst = await QtestMachine.start({
      ...env,
      memory: VNIC_RIG.memory,
      devices: [`cnuas-vnic,addr=0x${VNIC_RIG.slot.toString(16)},socket_path=${wire}`],
      extraArgs: ["-incoming", "defer", ...qmpArgs(dir, "dst")],
      workDir: join(dir, "dst"),
    });
    defer(() => dst.close());
    const peer = server ? server.accept(5000) : null;
    if (server) assert.ok(peer, "the destination's device connected at realize");
    if (peer) defer(() => peer.close());
    await beforeLoad(peer, dst);
    const dstQmp = await QmpClient.connect(qmpPath(dir, "dst"));
    defer(() => dstQmp.close());
    await loadState(dstQmp, state);
    await dst.sync();
    await dst.sync();
    await check({ dst, reg: (off) => dst.readl(VNIC_RIG.bar + BigInt(off)) });
  });
}

Deno.test("device: a frame queued before a saved state loads waits for the VM to run, then lands at the saved RX_ADDR with the link cause", async () => {
  const frame = pattern(300, 7);
  await migrate(
    true,
    async (peer, dst) => {
      assert.ok(peer!.trySend(frame));
      // Main-loop turns in which an unheld socket would read it (and drop it: RX_ADDR is 0 here).
      for (let i = 0; i < 4; i++) await dst.sync();
    },
    async ({ dst, reg }) => {
      assert.equal(
        await reg(VNIC_REG.RX_STATUS),
        1,
        "the queued frame was delivered after the load",
      );
      assert.equal(await reg(VNIC_REG.RX_LEN), frame.length);
      assert.deepEqual(await dst.memRead(RX_BUF, frame.length), frame);
      assert.equal(await reg(VNIC_REG.IRQ_MASK), VNIC_IRQ_ALL, "IRQ_MASK travelled");
      assert.equal(await reg(VNIC_REG.IRQ_STATUS), VNIC_IRQ.RX | VNIC_IRQ.LINK);
      assert.equal(await reg(VNIC_REG.LINK_STATUS) & 1, 1);
      assert.equal(await dst.readl(VNIC_RIG.msiAddr), VNIC_RIG.msiData, "the saved MSI fired");
    },
  );
});

Deno.test("device: loaded where no switch listens, a vnic saved with its link up raises the link cause and reads link down", async () => {
  await migrate(
    false,
    async () => {},
    async ({ dst, reg }) => {
      assert.equal(await reg(VNIC_REG.LINK_STATUS) & 1, 0);
      assert.equal(await reg(VNIC_REG.IRQ_STATUS), VNIC_IRQ.LINK, "the link change is a cause");
      assert.equal(await reg(VNIC_REG.RX_STATUS), 0);
      assert.equal(await dst.readl(VNIC_RIG.msiAddr), VNIC_RIG.msiData, "the saved MSI fired");
    },
  );
});
