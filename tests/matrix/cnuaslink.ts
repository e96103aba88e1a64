/**
 * Row `cnuaslink`: two accelerators in one guest, connected through the
 * switch in link mode. Frames with payloads of 1 byte .. 64 KiB - 8 go each
 * way and arrive intact, in order and from the sender's gpu_id (the source
 * field of the CnuasLink header); one receiver waits in poll() (POLLIN when a
 * frame is ready, a timeout once none is), the other in a blocking receive
 * (ETIMEDOUT once none is); a link taken down at the switch reads
 * as link_up 0 and sends fail with ENOLINK; after link up the device
 * reconnects (it retries on its own, backing off while refused) and traffic
 * resumes.
 *
 * The switch forwards by learned gpu_id, so each device first sends one
 * broadcast "hello" (receivers skip broadcast frames).
 */
import { type Row, type RowContext, RowFailure } from "../../harness/matrix/row.ts";
import { linkedGpuNeeds } from "../../harness/matrix/needs.ts";
import type { Guest } from "../../harness/vm/types.ts";
import {
  CNUASGPU_LINK,
  gpuNodesById,
  guestGpus,
  loadCnuasgpu,
  nodesFor,
  parseKeyValues,
  readGpuSysfs,
  runGpuProgram,
  waitLinkState,
} from "../../harness/guest/cnuasgpu.ts";
import { shq } from "../../harness/guest/shell.ts";

const FRAMES = 200;
const RESUME_FRAMES = 20;

/** One end of a transfer: its device node and gpu_id. */
interface End {
  node: string;
  gpuId: number;
}

/** How the receiver waits: a blocking LINK_RECV, or poll() then a non-blocking one. */
type Wait = "ioctl" | "poll";

/**
 * `count` frames from `tx` to `rx` while `rx` receives them (waiting the
 * `wait` way); fails unless every frame arrived intact, in order, from `tx`
 * and an idle wait afterwards timed out. Returns the receiver's numbers.
 */
async function transfer(
  ctx: RowContext,
  tx: End,
  rx: End,
  count: number,
  wait: Wait,
): Promise<Record<string, string>> {
  const g = ctx.guests[0];
  const out = `/tmp/cnuaslink-${rx.node}.out`;
  const recv = [CNUASGPU_LINK, "recv", `/dev/${rx.node}`, String(tx.gpuId)];
  const send = [CNUASGPU_LINK, "send", `/dev/${tx.node}`, String(rx.gpuId)];
  const script = [
    `${[...recv, String(count), wait].map(shq).join(" ")} > ${out} 2>&1 & rpid=$!`,
    "sleep 0.2",
    `${[...send, String(count)].map(shq).join(" ")} || { kill $rpid; exit 4; }`,
    "wait $rpid; rc=$?",
    `cat ${out}`,
    "exit $rc",
  ].join("\n");
  const r = await g.run(script, { timeoutSec: 300 });
  const kv = parseKeyValues(r.stdout);
  const what = `${tx.node} -> ${rx.node} (${wait})`;
  if (r.code !== 0) throw new RowFailure(`${what}: exit ${r.code}\n${r.stdout}${r.stderr}`);
  ctx.expect(kv.recv_frames === String(count), `${what}: ${kv.recv_frames} of ${count} verified`);
  ctx.expect(
    kv.recv_src_gpu_id === String(tx.gpuId) && kv.recv_dst_gpu_id === String(rx.gpuId),
    `${what}: frames from gpu_id ${kv.recv_src_gpu_id} to ${kv.recv_dst_gpu_id}`,
  );
  ctx.expect(kv.idle_nonblock === "EAGAIN", `${what}: idle non-blocking recv ${kv.idle_nonblock}`);
  if (wait === "poll") {
    ctx.expect(Number(kv.poll_ready) >= count, `${what}: ${kv.poll_ready} POLLINs for ${count}`);
    ctx.expect(kv.idle_poll === "timeout", `${what}: idle poll() ${kv.idle_poll}`);
  } else {
    ctx.expect(kv.idle_recv === "ETIMEDOUT", `${what}: idle recv ${kv.idle_recv}`);
  }
  return kv;
}

async function hello(g: Guest, names: string[]): Promise<void> {
  for (const n of names) {
    const r = await runGpuProgram(
      g,
      CNUASGPU_LINK,
      ["send", `/dev/${n}`, "4294967295", "1", "8"],
      30,
    );
    if (r.code !== 0) throw new RowFailure(`${n}: hello failed: ${r.stderr.trim()}`);
  }
}

async function run(ctx: RowContext): Promise<void> {
  const g = ctx.guests[0];
  const fabric = ctx.fabric;
  if (!fabric) throw new RowFailure("the runner did not start the link fabric");
  const props = guestGpus(0, 2);
  const names = await ctx.step("modprobe cnuasgpu", () => loadCnuasgpu(g, 2));
  const [a, b]: End[] = nodesFor(await gpuNodesById(g, names), props).map((node, k) => ({
    node,
    gpuId: props[k].gpuId,
  }));

  await ctx.step("both links up", () => waitLinkState(g, [a.node, b.node], 1, 10));
  await ctx.step("each device announces its gpu_id", () => hello(g, [a.node, b.node]));

  let frames = 0;
  let bytes = 0;
  let secs = 0;
  // One direction waits in poll(), the other in a blocking receive: both paths of the driver.
  for (const [tx, rx, wait] of [[a, b, "poll"], [b, a, "ioctl"]] as const) {
    await ctx.step(
      `${FRAMES} frames of 1 B .. 64 KiB ${tx.node} -> ${rx.node} (${wait}), intact, in order, ` +
        `from gpu_id ${tx.gpuId}; then an idle wait times out`,
      async () => {
        const kv = await transfer(ctx, tx, rx, FRAMES, wait);
        frames += Number(kv.recv_frames);
        bytes += Number(kv.recv_bytes);
        secs += Number(kv.recv_sec);
      },
    );
  }
  ctx.measure("linkFramesPerSec", Math.round(frames / Math.max(secs, 1e-3)), "frames/s");
  ctx.measure(
    "linkMiBPerSec",
    Number((bytes / 1048576 / Math.max(secs, 1e-3)).toFixed(2)),
    "MiB/s",
  );

  const ports = await fabric.ports();
  const portB = ports.find((p) => p.gpuId === b.gpuId)?.port;
  if (portB === undefined) {
    throw new RowFailure(
      `the switch learned no port for gpu_id ${b.gpuId}: ${JSON.stringify(ports)}`,
    );
  }

  // A device whose port is down reconnects into the lowest free slot; reserving every free slot
  // keeps it out (the switch refuses it) until its own port comes back.
  const { maxPorts } = await fabric.stats();
  const taken = new Set(ports.map((p) => p.port));
  const reserved: number[] = [];
  for (let p = 1; p <= maxPorts; p++) if (!taken.has(p)) reserved.push(p);

  await ctx.step(
    `link down at the switch (port ${portB}): link_up 0, sends fail cleanly`,
    async () => {
      for (const p of reserved) await fabric.linkDown(p);
      await fabric.linkDown(portB);
      await waitLinkState(g, [b.node], 0, 10);
      const r = await runGpuProgram(g, CNUASGPU_LINK, ["down", `/dev/${b.node}`, String(a.gpuId)]);
      ctx.expect(
        r.code === 0,
        `${b.node}: send with the link down did not fail with ENOLINK: ${r.stderr.trim()}`,
      );
      const kv = await readGpuSysfs(g, a.node);
      ctx.expect(kv.link_up === "1", `${a.node} lost its link too`);
    },
  );

  await ctx.step("link up again: the device reconnects and traffic resumes both ways", async () => {
    await fabric.linkUp(portB);
    for (const p of reserved) await fabric.linkUp(p);
    await waitLinkState(g, [b.node], 1, 20);
    await hello(g, [b.node]);
    await transfer(ctx, a, b, RESUME_FRAMES, "ioctl");
    await transfer(ctx, b, a, RESUME_FRAMES, "poll");
  });

  await ctx.step("dmesg has no warnings or errors", async () => {
    const r = await g.run("dmesg --level=emerg,alert,crit,err,warn", { check: true });
    const bad = r.stdout.split("\n").filter((l) =>
      /cnuasgpu|BUG|WARNING|Oops/.test(l) && !/out-of-tree module taints kernel/.test(l)
    );
    ctx.expect(bad.length === 0, `dmesg:\n${bad.join("\n")}`);
  });
}

/** The CnuasLink row. */
export const row: Row = {
  id: "cnuaslink",
  title: "two accelerators exchange frames over CnuasLink through the switch",
  needs: linkedGpuNeeds(),
  sharesCores: "it judges frames and link states; the frame rates are recorded, not judged",
  timeoutSec: 600,
  modules: ["cnuasgpu"],
  run,
};
