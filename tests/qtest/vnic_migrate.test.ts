/**
 * cnuas-vnic's saved state (docs/devices.md, "vnic: saved state"): the
 * registers and the PCI function travel; the destination's socket is held
 * from realize until the loaded VM runs (qemu/hw/cnuas_sock.h), so a frame
 * the switch queued while the state loaded lands where the saved RX_ADDR
 * points, with the link cause raised as after a reconnect.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { VNIC_IRQ, VNIC_IRQ_ALL, VNIC_REG } from "../../harness/models/vnic.ts";
import { QtestMachine } from "../../harness/qtest/client.ts";
import { VNIC_RIG, VnicRig } from "../../harness/qtest/vnic_rig.ts";
import { SeqpacketServer } from "../../harness/fabric/seqpacket.ts";
import { QmpClient } from "../../harness/vm/qmp.ts";
import {
  loadState,
  qmpArgs as qmpArgsIn,
  qmpPath as qmpPathIn,
  saveState,
} from "./migrate_fixture.ts";
import { qemuEnv } from "./qemu_env.ts";
import { pattern, RAM } from "./vnic_fixture.ts";

const RX_BUF = RAM.base + 0x2_0000;

Deno.test("device: a frame queued while a saved state loads waits for the VM to run, then lands at the saved RX_ADDR with the link cause", async () => {
  const env = await qemuEnv();
  const dir = await Deno.makeTempDir({ prefix: "vnic-migrate-" });
  const state = join(dir, "state");
  const qmpPath = (n: string) => qmpPathIn(dir, n);
  const qmpArgs = (n: string) => qmpArgsIn(dir, n);
  const closers: (() => unknown)[] = [];
  try {
    // The source: RX armed, every cause enabled, MSI set up by the rig; then saved.
    const src = await VnicRig.start({
      ...env,
      socket: "listening",
      irq: "msi",
      extraArgs: qmpArgs("src"),
    });
    closers.push(() => src.close());
    await src.setReg(VNIC_REG.RX_ADDR_LO, RX_BUF);
    await src.setReg(VNIC_REG.RX_ADDR_HI, 0); // RX_BUF is below 4 GiB
    await src.setReg(VNIC_REG.IRQ_MASK, VNIC_IRQ_ALL);
    await src.setReg(VNIC_REG.IRQ_STATUS, VNIC_IRQ_ALL); // whatever the link-up raised
    await src.qt.memset(RX_BUF, 512, 0xee);
    assert.equal(await src.msiFired(), false);
    const srcQmp = await QmpClient.connect(qmpPath("src"));
    closers.push(() => srcQmp.close());
    await saveState(srcQmp, state);
    await src.close();

    // The destination: its own switch, which queues a frame before the load starts.
    const wire = join(dir, "wire2.sock");
    const server = SeqpacketServer.listen(wire);
    closers.push(() => server.close());
    const dst = await QtestMachine.start({
      ...env,
      memory: VNIC_RIG.memory,
      devices: [`cnuas-vnic,addr=0x${VNIC_RIG.slot.toString(16)},socket_path=${wire}`],
      extraArgs: ["-incoming", "defer", ...qmpArgs("dst")],
      workDir: join(dir, "dst"),
    });
    closers.push(() => dst.close());
    const peer = server.accept(5000);
    assert.ok(peer, "the destination's device connected at realize");
    closers.push(() => peer.close());
    const frame = pattern(300, 7);
    assert.ok(peer.trySend(frame));
    // Main-loop turns in which an unheld socket would read it (and drop it: RX_ADDR is 0 here).
    for (let i = 0; i < 4; i++) await dst.sync();
    const dstQmp = await QmpClient.connect(qmpPath("dst"));
    closers.push(() => dstQmp.close());
    await loadState(dstQmp, state);
    await dst.sync();
    await dst.sync();

    const reg = (off: number) => dst.readl(VNIC_RIG.bar + BigInt(off));
    assert.equal(await reg(VNIC_REG.RX_STATUS), 1, "the queued frame was delivered after the load");
    assert.equal(await reg(VNIC_REG.RX_LEN), frame.length);
    assert.deepEqual(await dst.memRead(RX_BUF, frame.length), frame);
    assert.equal(await reg(VNIC_REG.IRQ_MASK), VNIC_IRQ_ALL, "IRQ_MASK travelled");
    assert.equal(await reg(VNIC_REG.IRQ_STATUS), VNIC_IRQ.RX | VNIC_IRQ.LINK);
    assert.equal(await reg(VNIC_REG.LINK_STATUS) & 1, 1);
    assert.equal(
      await dst.readl(VNIC_RIG.msiAddr),
      VNIC_RIG.msiData,
      "MSI set up on the source fired",
    );
  } finally {
    for (const c of closers.reverse()) await Promise.resolve().then(c).catch(() => {});
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
