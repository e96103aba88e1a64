/**
 * cnuasgpu's saved state (docs/devices.md, "gpu: saved state"): a frame
 * waiting in BAR1 travels with the registers and BAR1's contents; the
 * destination's socket is held until the loaded VM runs
 * (qemu/hw/cnuas_sock.h), so a frame the peer queued before the load meets
 * the saved registers: it lands by itself when receive was armed and idle,
 * and waits its turn behind a frame the guest has not consumed.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { GPU_IRQ, GPU_LINK, GPU_REG } from "../../harness/models/gpu.ts";
import { QtestMachine } from "../../harness/qtest/client.ts";
import { GPU_QTEST_BAR0, GPU_QTEST_BAR1, GPU_QTEST_SLOT } from "../../harness/qtest/gpu_rig.ts";
import { SeqpacketServer } from "../../harness/fabric/seqpacket.ts";
import { QmpClient } from "../../harness/vm/qmp.ts";
import { qemuEnv } from "./qemu_env.ts";
import { armRx, eventually, type GpuRig, pattern, sendAndSettle, startGpu } from "./gpu_fixture.ts";
import { inScratch, loadState, qmpArgs, qmpPath, saveState } from "./migrate_fixture.ts";

const RX_OFF = 0x1000;

/** The destination after its load: register reads and BAR1 at RX_OFF. */
interface Loaded {
  dst: QtestMachine;
  reg(off: number): Promise<number>;
  bar1(len: number): Promise<Uint8Array>;
}

/**
 * A source cnuasgpu with receive armed at RX_OFF and RX ready enabled,
 * `prepare`d, saved; a destination (`-incoming defer`) whose peer queues
 * `queued` before the load; then the load, the VM running, and `check`.
 */
async function migrate(
  prepare: (src: GpuRig) => Promise<void>,
  queued: Uint8Array,
  check: (l: Loaded) => Promise<void>,
): Promise<void> {
  const env = await qemuEnv();
  await inScratch("gpu-migrate-", async (dir, defer) => {
    const state = join(dir, "state");
    const src = await startGpu({}, { extraArgs: qmpArgs(dir, "src") });
    defer(() => src.close());
    await src.gpu.setReg(GPU_REG.IRQ_MASK, GPU_IRQ.RX_READY);
    await armRx(src, RX_OFF, 4096);
    await prepare(src);
    const srcQmp = await QmpClient.connect(qmpPath(dir, "src"));
    defer(() => srcQmp.close());
    await saveState(srcQmp, state);
    await src.close();

    const wire = join(dir, "link2.sock");
    const server = SeqpacketServer.listen(wire);
    defer(() => server.close());
    const dst = await QtestMachine.start({
      ...env,
      devices: [`cnuasgpu,addr=${GPU_QTEST_SLOT},cnuaslink_socket=${wire}`],
      extraArgs: ["-incoming", "defer", ...qmpArgs(dir, "dst")],
      workDir: join(dir, "dst"),
    });
    defer(() => dst.close());
    const peer = server.accept(5000);
    assert.ok(peer, "the destination's device connected at realize");
    defer(() => peer.close());
    assert.ok(peer.trySend(queued));
    // Main-loop turns in which an unheld socket would read it (and drop it: not armed yet).
    for (let i = 0; i < 4; i++) await dst.sync();
    const dstQmp = await QmpClient.connect(qmpPath(dir, "dst"));
    defer(() => dstQmp.close());
    await loadState(dstQmp, state);
    await dst.sync();
    await dst.sync();
    await check({
      dst,
      reg: (off) => dst.readl(GPU_QTEST_BAR0 + off),
      bar1: (len) => dst.memRead(GPU_QTEST_BAR1 + BigInt(RX_OFF), len),
    });
  });
}

Deno.test("gpu: a frame waiting in BAR1 travels with the saved state; one queued before the load waits its turn", async () => {
  const first = pattern(700, 3);
  const second = pattern(1200, 9);
  await migrate((src) => sendAndSettle(src, first, "deliver"), second, async (l) => {
    assert.equal(await l.reg(GPU_REG.LINK_STATUS), GPU_LINK.UP | GPU_LINK.RX_READY);
    assert.equal(await l.reg(GPU_REG.LINK_RX_LEN), first.length, "the waiting frame travelled");
    assert.deepEqual(await l.bar1(first.length), first, "BAR1 travelled");
    assert.equal(await l.reg(GPU_REG.IRQ_MASK), GPU_IRQ.RX_READY);
    assert.equal(await l.reg(GPU_REG.IRQ_STATUS) & GPU_IRQ.RX_READY, GPU_IRQ.RX_READY);

    await l.dst.writel(GPU_QTEST_BAR0 + GPU_REG.IRQ_STATUS, GPU_IRQ.RX_READY);
    await l.dst.writel(GPU_QTEST_BAR0 + GPU_REG.LINK_RX_CONSUME, 1);
    await eventually(
      "the frame queued before the load to land",
      async () => (await l.reg(GPU_REG.LINK_STATUS) & GPU_LINK.RX_READY) !== 0,
    );
    assert.equal(await l.reg(GPU_REG.LINK_RX_LEN), second.length);
    assert.deepEqual(await l.bar1(second.length), second);
  });
});

Deno.test("gpu: with receive armed and idle at the save, a frame queued before the load lands by itself once the VM runs", async () => {
  const frame = pattern(900, 5);
  await migrate(async () => {}, frame, async (l) => {
    await eventually(
      "the frame queued before the load to land",
      async () => (await l.reg(GPU_REG.LINK_STATUS) & GPU_LINK.RX_READY) !== 0,
    );
    assert.equal(await l.reg(GPU_REG.LINK_RX_LEN), frame.length);
    assert.deepEqual(await l.bar1(frame.length), frame);
    assert.equal(await l.reg(GPU_REG.IRQ_STATUS) & GPU_IRQ.RX_READY, GPU_IRQ.RX_READY);
  });
});
