/**
 * Row `gpu-smoke`: one guest with two cnuasgpu functions. cnuasgpu.ko probes
 * both; /dev/cnuasgpu0 and /dev/cnuasgpu1 appear; INFO and sysfs match each
 * device's properties; the smoke program (alloc, copies with patterns, mmap,
 * free) passes on both; devmem_used follows allocations; an ioctl fuzz of
 * 10,000 calls per device gets errors and leaves dmesg clean; unload and
 * reload are clean.
 */
import { type Row, type RowContext } from "../../harness/matrix/row.ts";
import {
  GPU_SYSFS_ATTRS,
  gpuNodesById,
  loadCnuasgpu,
  readGpuSysfs,
  runSmoke,
} from "./gpu_guest.ts";

const GPUS = 2;
const FUZZ_CALLS = 10_000;
/** Property defaults of the device (DEVICES.md). */
const DEFAULTS = {
  sm_count: "16",
  lanes_per_sm: "32",
  tensor_size: "16",
  fw_version: "0x00010000",
};
const DEVMEM = String(256 * 1024 * 1024);

async function run(ctx: RowContext): Promise<void> {
  const g = ctx.guests[0];
  const names = await ctx.step("insmod cnuasgpu: two class devices", () => loadCnuasgpu(g, GPUS));
  await ctx.step("/dev/cnuasgpu0 and /dev/cnuasgpu1 exist", async () => {
    const r = await g.run("ls -l /dev/cnuasgpu0 /dev/cnuasgpu1");
    ctx.expect(r.code === 0, `device nodes missing: ${r.stderr.trim()}`);
  });
  const byId = await gpuNodesById(g, names);
  ctx.expect(
    byId.has(0) && byId.has(1),
    `gpu_ids ${[...byId.keys()].join(", ")}, expected 0 and 1`,
  );

  for (const [gpuId, name] of byId) {
    await ctx.step(`${name}: sysfs attributes`, async () => {
      const kv = await readGpuSysfs(g, name);
      for (const a of GPU_SYSFS_ATTRS) ctx.expect(a in kv && kv[a] !== "", `${name}: no ${a}`);
      ctx.expect(kv.gpu_id === String(gpuId), `${name}: gpu_id ${kv.gpu_id}`);
      ctx.expect(kv.sm_count === DEFAULTS.sm_count, `${name}: sm_count ${kv.sm_count}`);
      ctx.expect(kv.devmem_size === DEVMEM, `${name}: devmem_size ${kv.devmem_size}`);
      ctx.expect(kv.devmem_used === "0", `${name}: devmem_used ${kv.devmem_used} before use`);
      ctx.expect(kv.link_up === "0", `${name}: link_up ${kv.link_up} with no link socket`);
    });
    await ctx.step(`${name}: smoke (info, alloc, copy, mmap, free)`, async () => {
      const r = await runSmoke(g, ["smoke", `/dev/${name}`]);
      ctx.log(r.stdout.trim());
      ctx.expect(r.code === 0, `${name}: smoke failed (exit ${r.code}): ${r.stderr.trim()}`);
      ctx.expect(r.kv.gpu_id === String(gpuId), `${name}: INFO gpu_id ${r.kv.gpu_id}`);
      for (const [k, v] of Object.entries(DEFAULTS)) {
        ctx.expect(r.kv[k] === v, `${name}: INFO ${k} ${r.kv[k]}, expected ${v}`);
      }
      ctx.expect(r.kv.devmem_size === DEVMEM, `${name}: INFO devmem_size ${r.kv.devmem_size}`);
    });
    await ctx.step(`${name}: devmem_used back to 0 after the program closed`, async () => {
      const kv = await readGpuSysfs(g, name);
      ctx.expect(kv.devmem_used === "0", `${name}: devmem_used ${kv.devmem_used}`);
    });
  }

  await ctx.step("devmem_used follows an allocation held by another process", async () => {
    const name = byId.get(0)!;
    // The smoke program checks devmem_used through INFO; here sysfs is read while it holds memory.
    const r = await g.run(
      `python3 - <<'EOF'
import fcntl, os, struct
fd = os.open("/dev/${name}", os.O_RDWR)
# CNUASGPU_IOC_ALLOC = _IOWR(0xC7, 1, 32 bytes)
req = bytearray(struct.pack("<QQIIQ", 5 * 4096 + 1, 0, 0, 0, 0))
fcntl.ioctl(fd, (3 << 30) | (32 << 16) | (0xC7 << 8) | 1, req)
print(open("/sys/class/cnuasgpu/${name}/devmem_used").read().strip())
os.close(fd)
print(open("/sys/class/cnuasgpu/${name}/devmem_used").read().strip())
EOF`,
    );
    const [held, after] = r.stdout.trim().split("\n");
    ctx.expect(r.code === 0, `allocation helper failed: ${r.stderr.trim()}`);
    ctx.expect(held === String(6 * 4096), `devmem_used ${held} while 6 pages are held`);
    ctx.expect(after === "0", `devmem_used ${after} after close`);
  });

  let fuzzCalls = 0;
  for (const [gpuId, name] of byId) {
    await ctx.step(`${name}: ioctl fuzz, ${FUZZ_CALLS} calls`, async () => {
      const r = await runSmoke(
        g,
        ["fuzz", `/dev/${name}`, String(FUZZ_CALLS), String(gpuId + 1)],
        600,
      );
      ctx.expect(r.code === 0, `${name}: fuzz failed (exit ${r.code}): ${r.stderr.trim()}`);
      ctx.expect(r.kv.fuzz_wrong === "0", `${name}: ${r.kv.fuzz_wrong} invalid calls succeeded`);
      fuzzCalls += Number(r.kv.fuzz_calls ?? 0);
    });
  }
  ctx.measure("fuzzCalls", fuzzCalls, "calls");

  await ctx.step("dmesg has no warnings or errors from the fuzz", async () => {
    const r = await g.run("dmesg --level=emerg,alert,crit,err,warn", { check: true });
    const bad = r.stdout.split("\n").filter((l) =>
      /cnuasgpu|BUG|WARNING|Oops/.test(l) && !/out-of-tree module taints kernel/.test(l)
    );
    ctx.expect(bad.length === 0, `dmesg:\n${bad.join("\n")}`);
  });

  await ctx.step("rmmod removes the class and the nodes; insmod brings them back", async () => {
    const r = await g.run(
      "rmmod cnuasgpu && ! ls /dev/cnuasgpu0 2>/dev/null && ! ls /sys/class/cnuasgpu 2>/dev/null",
    );
    ctx.expect(r.code === 0, `unload left something behind: ${r.stdout}${r.stderr}`);
    await loadCnuasgpu(g, GPUS);
    const again = await runSmoke(g, ["smoke", "/dev/cnuasgpu0"]);
    ctx.expect(again.code === 0, `smoke after reload failed: ${again.stderr.trim()}`);
  });
}

/** The cnuasgpu guest smoke row. */
export const row: Row = {
  id: "gpu-smoke",
  title: "cnuasgpu.ko probes; info, alloc, copy, free, mmap of BAR1, sysfs",
  needs: { guests: 1, builds: ["qemu", "image", "modules", "guestprogs"], devices: { gpu: GPUS } },
  timeoutSec: 600,
  run,
};
