/**
 * Row `cnuaslink`: two accelerators in one guest, connected through the
 * switch in link mode. Frames with payloads of 1 byte .. 64 KiB - 8 go each
 * way and arrive intact and in order; a link taken down at the switch reads
 * as link_up 0 and sends fail with ENOLINK; after link up the device
 * reconnects (it retries on its own, backing off while refused) and traffic
 * resumes.
 *
 * The switch forwards by learned gpu_id, so each device first sends one
 * broadcast "hello" (receivers skip broadcast frames).
 */
import {
  type FabricHandle,
  type Row,
  type RowContext,
  RowFailure,
} from "../../harness/matrix/row.ts";
import type { Guest } from "../../harness/vm/types.ts";
import {
  CNUASGPU_SMOKE,
  gpuNodesById,
  loadCnuasgpu,
  readGpuSysfs,
  runSmoke,
  shq,
} from "./gpu_guest.ts";

const FRAMES = 200;
const RESUME_FRAMES = 20;

/** Wait until `name`'s link_up reads `want`. */
async function waitLink(g: Guest, name: string, want: 0 | 1, timeoutSec: number): Promise<void> {
  const r = await g.run(
    `for i in $(seq ${timeoutSec * 10}); do ` +
      `[ "$(cat /sys/class/cnuasgpu/${name}/link_up)" = ${want} ] && exit 0; sleep 0.1; done; exit 1`,
    { timeoutSec: timeoutSec + 10 },
  );
  if (r.code !== 0) {
    throw new RowFailure(`${name}: link_up did not become ${want} within ${timeoutSec} s`);
  }
}

/** Receive `count` frames on `rx` while `tx` sends them to `dstId`; returns the receiver's numbers. */
async function transfer(
  g: Guest,
  tx: string,
  rx: string,
  dstId: number,
  count: number,
): Promise<Record<string, string>> {
  const out = `/tmp/cnuaslink-${rx}.out`;
  const script = [
    `${shq(CNUASGPU_SMOKE)} link-recv /dev/${rx} ${count} > ${out} 2>&1 & rpid=$!`,
    "sleep 0.2",
    `${shq(CNUASGPU_SMOKE)} link-send /dev/${tx} ${dstId} ${count} || { kill $rpid; exit 4; }`,
    "wait $rpid; rc=$?",
    `cat ${out}`,
    "exit $rc",
  ].join("\n");
  const r = await g.run(script, { timeoutSec: 300 });
  if (r.code !== 0) {
    throw new RowFailure(`${tx} -> ${rx}: exit ${r.code}\n${r.stdout}${r.stderr}`);
  }
  const kv: Record<string, string> = {};
  for (const line of r.stdout.split("\n")) {
    const m = /^([a-z_]+)=(.*)$/.exec(line.trim());
    if (m) kv[m[1]] = m[2];
  }
  return kv;
}

/** A control request that must succeed. */
async function control(fabric: FabricHandle, req: Record<string, unknown>): Promise<void> {
  const reply = await fabric.control(req);
  if (reply.ok !== true) throw new RowFailure(`switch ${String(req.op)}: ${JSON.stringify(reply)}`);
}

async function hello(g: Guest, names: string[]): Promise<void> {
  for (const n of names) {
    const r = await g.run(`${shq(CNUASGPU_SMOKE)} link-send /dev/${n} 4294967295 1 8`, {
      timeoutSec: 30,
    });
    if (r.code !== 0) throw new RowFailure(`${n}: hello failed: ${r.stderr.trim()}`);
  }
}

async function run(ctx: RowContext): Promise<void> {
  const g = ctx.guests[0];
  const fabric = ctx.fabric;
  if (!fabric) throw new RowFailure("the runner did not start the link fabric");
  const names = await ctx.step("insmod cnuasgpu", () => loadCnuasgpu(g, 2));
  const byId = await gpuNodesById(g, names);
  const a = byId.get(0);
  const b = byId.get(1);
  if (!a || !b) throw new RowFailure(`gpu_ids ${[...byId.keys()].join(", ")}, expected 0 and 1`);

  await ctx.step("both links up", async () => {
    await waitLink(g, a, 1, 10);
    await waitLink(g, b, 1, 10);
  });
  await ctx.step("each device announces its gpu_id", () => hello(g, [a, b]));

  let frames = 0;
  let bytes = 0;
  let secs = 0;
  for (const [tx, rx, dst] of [[a, b, 1], [b, a, 0]] as const) {
    await ctx.step(
      `${FRAMES} frames of 1 B .. 64 KiB ${tx} -> ${rx}, intact and in order`,
      async () => {
        const kv = await transfer(g, tx, rx, dst, FRAMES);
        ctx.expect(kv.recv_frames === String(FRAMES), `${rx} received ${kv.recv_frames}`);
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

  const ports = await fabric.control({ op: "ports" }) as {
    ports?: Array<{ port: number; gpu_id?: number }>;
  };
  const portB = ports.ports?.find((p) => p.gpu_id === 1)?.port;
  if (portB === undefined) {
    throw new RowFailure(`the switch learned no port for gpu_id 1: ${JSON.stringify(ports)}`);
  }

  // A device whose port is down reconnects into the lowest free slot; reserving every free slot
  // keeps it out (the switch refuses it) until its own port comes back.
  const stats = await fabric.control({ op: "stats" }) as { max_ports?: number };
  const taken = new Set((ports.ports ?? []).map((p) => p.port));
  const reserved: number[] = [];
  for (let p = 1; p <= (stats.max_ports ?? 0); p++) if (!taken.has(p)) reserved.push(p);

  await ctx.step(
    `link down at the switch (port ${portB}): link_up 0, sends fail cleanly`,
    async () => {
      for (const p of reserved) await control(fabric, { op: "link_down", port: p });
      await control(fabric, { op: "link_down", port: portB });
      await waitLink(g, b, 0, 10);
      const r = await runSmoke(g, ["link-down", `/dev/${b}`, "0"]);
      ctx.expect(
        r.code === 0,
        `${b}: send with the link down did not fail with ENOLINK: ${r.stderr.trim()}`,
      );
      const kv = await readGpuSysfs(g, a);
      ctx.expect(kv.link_up === "1", `${a} lost its link too`);
    },
  );

  await ctx.step("link up again: the device reconnects and traffic resumes both ways", async () => {
    await control(fabric, { op: "link_up", port: portB });
    for (const p of reserved) await control(fabric, { op: "link_up", port: p });
    await waitLink(g, b, 1, 20);
    await hello(g, [b]);
    await transfer(g, a, b, 1, RESUME_FRAMES);
    await transfer(g, b, a, 0, RESUME_FRAMES);
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
  needs: {
    guests: 1,
    fabric: "link",
    builds: ["qemu", "image", "modules", "guestprogs"],
    devices: { gpu: 2 },
  },
  timeoutSec: 600,
  run,
};
