/**
 * cnuasgpu's saved state (docs/devices.md, "gpu: saved state"): a frame
 * waiting in BAR1 travels with the registers and BAR1's contents, and a
 * frame the peer queued while the state loaded waits in the socket (held
 * until the loaded VM runs, qemu/hw/cnuas_sock.h, then back-pressure: the
 * restored frame is still waiting) until the guest consumes the first.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { GPU_IRQ, GPU_LINK, GPU_REG } from "../../harness/models/gpu.ts";
import { QtestMachine } from "../../harness/qtest/client.ts";
import { GPU_QTEST_BAR0, GPU_QTEST_BAR1, GPU_QTEST_SLOT } from "../../harness/qtest/gpu_rig.ts";
import { SeqpacketServer } from "../../harness/fabric/seqpacket.ts";
import { QmpClient } from "../../harness/vm/qmp.ts";
import { qemuEnv } from "./qemu_env.ts";
import { armRx, eventually, pattern, sendAndSettle, startGpu } from "./gpu_fixture.ts";
import { loadState, qmpArgs, qmpPath, saveState } from "./migrate_fixture.ts";

const RX_OFF = 0x1000;

Deno.test("gpu: a frame waiting in BAR1 travels with the saved state; one queued during the load waits its turn", async () => {
  const env = await qemuEnv();
  const dir = await Deno.makeTempDir({ prefix: "gpu-migrate-" });
  const state = join(dir, "state");
  const closers: (() => unknown)[] = [];
  try {
    const src = await startGpu({}, { extraArgs: qmpArgs(dir, "src") });
    closers.push(() => src.close());
    await src.gpu.setReg(GPU_REG.IRQ_MASK, GPU_IRQ.RX_READY);
    await armRx(src, RX_OFF, 4096);
    const first = pattern(700, 3);
    await sendAndSettle(src, first, "deliver");
    const srcQmp = await QmpClient.connect(qmpPath(dir, "src"));
    closers.push(() => srcQmp.close());
    await saveState(srcQmp, state);
    await src.close();

    const wire = join(dir, "link2.sock");
    const server = SeqpacketServer.listen(wire);
    closers.push(() => server.close());
    const dst = await QtestMachine.start({
      ...env,
      devices: [`cnuasgpu,addr=${GPU_QTEST_SLOT},cnuaslink_socket=${wire}`],
      extraArgs: ["-incoming", "defer", ...qmpArgs(dir, "dst")],
      workDir: join(dir, "dst"),
    });
    closers.push(() => dst.close());
    const peer = server.accept(5000);
    assert.ok(peer, "the destination's device connected at realize");
    closers.push(() => peer.close());
    const second = pattern(1200, 9);
    assert.ok(peer.trySend(second));
    // Main-loop turns in which an unheld socket would read it (and drop it: not armed yet).
    for (let i = 0; i < 4; i++) await dst.sync();
    const dstQmp = await QmpClient.connect(qmpPath(dir, "dst"));
    closers.push(() => dstQmp.close());
    await loadState(dstQmp, state);
    await dst.sync();
    await dst.sync();

    const reg = (off: number) => dst.readl(GPU_QTEST_BAR0 + off);
    const bar1 = (len: number) => dst.memRead(GPU_QTEST_BAR1 + BigInt(RX_OFF), len);
    assert.equal(await reg(GPU_REG.LINK_STATUS), GPU_LINK.UP | GPU_LINK.RX_READY);
    assert.equal(await reg(GPU_REG.LINK_RX_LEN), first.length, "the waiting frame travelled");
    assert.deepEqual(await bar1(first.length), first, "BAR1 travelled");
    assert.equal(await reg(GPU_REG.IRQ_MASK), GPU_IRQ.RX_READY);
    assert.equal(await reg(GPU_REG.IRQ_STATUS) & GPU_IRQ.RX_READY, GPU_IRQ.RX_READY);

    await dst.writel(GPU_QTEST_BAR0 + GPU_REG.IRQ_STATUS, GPU_IRQ.RX_READY);
    await dst.writel(GPU_QTEST_BAR0 + GPU_REG.LINK_RX_CONSUME, 1);
    await eventually(
      "the frame queued during the load to land",
      async () => (await reg(GPU_REG.LINK_STATUS) & GPU_LINK.RX_READY) !== 0,
    );
    assert.equal(await reg(GPU_REG.LINK_RX_LEN), second.length);
    assert.deepEqual(await bar1(second.length), second);
  } finally {
    for (const c of closers.reverse()) await Promise.resolve().then(c).catch(() => {});
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
