/**
 * Row `gpu-smoke`: one guest with two cnuasgpu functions whose properties
 * differ (gpu_id, sm_count, devmem_size: see `gpuProps`). cnuasgpu.ko probes
 * both; /dev/cnuasgpu0 and /dev/cnuasgpu1 appear; INFO and sysfs of each match
 * that device's own properties; the smoke program (alloc, copies with
 * patterns, mmap, free, the whole allocator region) passes on both;
 * devmem_used follows allocations; an ioctl fuzz of at least 10,000 calls per
 * device (double frees of real allocations among them) ends every call as
 * documented and leaves dmesg clean; unbinding a device through sysfs while
 * copies run ends them with ENODEV (no crash, no hang, no success after it),
 * and after binding it again the device works; unload and reload are clean.
 */
import { type Row, type RowContext } from "../../harness/matrix/row.ts";
import {
  CNUASGPU_FUZZ,
  CNUASGPU_SMOKE,
  expectedInfo,
  expectedSysfs,
  GPU_SYSFS_ATTRS,
  gpuNodesById,
  type GpuProps,
  guestGpus,
  loadCnuasgpu,
  mismatches,
  nodesFor,
  readGpuSysfs,
  runGpuProgram,
  unbindProblems,
  unbindUnderCopies,
} from "../../harness/guest/cnuasgpu.ts";

const GPUS = 2;
/** Calls (ioctl and mmap) the fuzz must make on each device. */
const FUZZ_CALLS = 10_000;
/** Kinds of calls the fuzz makes (`fuzz_calls_KIND` lines); each must have run. */
const FUZZ_KINDS = [
  "garbage",
  "alloc",
  "free",
  "double_free",
  "copy_range",
  "copy_fault",
  "copy_handle",
  "link_send",
  "link_recv",
  "mmap",
  "export",
] as const;
/** The link buffers the driver carves out of BAR1 take at most this much. */
const MAX_LINK_RESERVE = 1024 * 1024;

/** sysfs of `name` matches `p` and shows an idle device with no link. */
async function checkSysfs(ctx: RowContext, name: string, p: GpuProps): Promise<void> {
  const kv = await readGpuSysfs(ctx.guests[0], name);
  const missing = GPU_SYSFS_ATTRS.filter((a) => !(a in kv) || kv[a] === "");
  const bad = [
    ...missing.map((a) => `${name}: no ${a}`),
    ...mismatches(`${name} sysfs`, kv, {
      ...expectedSysfs(p),
      devmem_used: "0",
      link_up: "0",
    }),
  ];
  ctx.expect(bad.length === 0, bad.join("\n"));
}

async function run(ctx: RowContext): Promise<void> {
  const g = ctx.guests[0];
  const props = guestGpus(0, GPUS);
  const names = await ctx.step("modprobe cnuasgpu: two class devices", () => loadCnuasgpu(g, GPUS));
  await ctx.step("/dev/cnuasgpu0 and /dev/cnuasgpu1 exist", async () => {
    const r = await g.run("ls -l /dev/cnuasgpu0 /dev/cnuasgpu1");
    ctx.expect(r.code === 0, `device nodes missing: ${r.stderr.trim()}`);
  });
  const nodes = nodesFor(await gpuNodesById(g, names), props);

  for (const [k, p] of props.entries()) {
    const name = nodes[k];
    await ctx.step(
      `${name}: sysfs says gpu_id ${p.gpuId}, ${p.smCount} SMs, ${p.devmemMb} MiB`,
      () => checkSysfs(ctx, name, p),
    );
    await ctx.step(`${name}: smoke (info, alloc, copy, mmap, free, whole region)`, async () => {
      const r = await runGpuProgram(g, CNUASGPU_SMOKE, [`/dev/${name}`]);
      ctx.log(r.stdout.trim());
      ctx.expect(r.code === 0, `${name}: smoke failed (exit ${r.code}): ${r.stderr.trim()}`);
      const bad = mismatches(`${name} INFO`, r.kv, { ...expectedInfo(p), devmem_used: "0" });
      ctx.expect(bad.length === 0, bad.join("\n"));
      const size = Number(r.kv.devmem_size);
      const limit = Number(r.kv.alloc_limit);
      ctx.expect(
        limit <= size && limit >= size - MAX_LINK_RESERVE,
        `${name}: alloc_limit ${r.kv.alloc_limit} is not within 1 MiB below devmem_size ${size}`,
      );
      ctx.expect(
        r.kv.alloc_full === r.kv.alloc_limit,
        `${name}: an allocation of all of alloc_limit gave ${r.kv.alloc_full} bytes`,
      );
    });
    await ctx.step(`${name}: devmem_used back to 0 after the program closed`, async () => {
      const kv = await readGpuSysfs(g, name);
      ctx.expect(kv.devmem_used === "0", `${name}: devmem_used ${kv.devmem_used}`);
    });
  }

  await ctx.step("devmem_used follows an allocation held by another process", async () => {
    const name = nodes[0];
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
  for (const [k, p] of props.entries()) {
    const name = nodes[k];
    await ctx.step(`${name}: ioctl fuzz, at least ${FUZZ_CALLS} calls`, async () => {
      const r = await runGpuProgram(
        g,
        CNUASGPU_FUZZ,
        [`/dev/${name}`, String(FUZZ_CALLS), String(p.gpuId + 1)],
        600,
      );
      ctx.log(r.stdout.trim());
      ctx.expect(r.code === 0, `${name}: fuzz failed (exit ${r.code}): ${r.stderr.trim()}`);
      ctx.expect(r.kv.fuzz_wrong === "0", `${name}: ${r.kv.fuzz_wrong} calls not as documented`);
      const made = Number(r.kv.fuzz_calls);
      ctx.expect(made >= FUZZ_CALLS, `${name}: the fuzz made ${r.kv.fuzz_calls} calls`);
      const idle = FUZZ_KINDS.filter((kind) => !(Number(r.kv[`fuzz_calls_${kind}`]) > 0));
      ctx.expect(idle.length === 0, `${name}: the fuzz made no ${idle.join(", ")} calls`);
      ctx.expect(r.kv.devmem_used === "0", `${name}: devmem_used ${r.kv.devmem_used} after`);
      fuzzCalls += made;
    });
  }
  ctx.measure("fuzzCalls", fuzzCalls, "calls");

  // The second device goes away under a process copying to and from it.
  await ctx.step(
    `${nodes[1]}: unbind while copies run (they end with ENODEV), bind again, smoke`,
    async () => {
      const r = await unbindUnderCopies(g, nodes[1]);
      ctx.log(r.stdout.trim());
      const bad = unbindProblems(r.kv);
      ctx.expect(bad.length === 0, bad.join("\n"));
      ctx.measure("unbind.copiesBeforeUnbind", Number(r.kv.copies_ok ?? "0"), "copies");
      if (bad.length > 0) return;
      const smoke = await runGpuProgram(g, CNUASGPU_SMOKE, [`/dev/${r.kv.rebound}`]);
      ctx.log(smoke.stdout.trim());
      ctx.expect(smoke.code === 0, `smoke after bind failed: ${smoke.stderr.trim()}`);
      const info = mismatches(`${r.kv.rebound} INFO after bind`, smoke.kv, {
        ...expectedInfo(props[1]),
        devmem_used: "0",
      });
      ctx.expect(info.length === 0, info.join("\n"));
    },
  );

  await ctx.step("dmesg has no warnings or errors from the fuzz or the unbind", async () => {
    const r = await g.run("dmesg --level=emerg,alert,crit,err,warn", { check: true });
    const bad = r.stdout.split("\n").filter((l) =>
      /cnuasgpu|BUG|WARNING|Oops/.test(l) && !/out-of-tree module taints kernel/.test(l)
    );
    ctx.expect(bad.length === 0, `dmesg:\n${bad.join("\n")}`);
  });

  await ctx.step("rmmod removes the class and the nodes; modprobe brings them back", async () => {
    const r = await g.run(
      "rmmod cnuasgpu && ! ls /dev/cnuasgpu0 2>/dev/null && ! ls /sys/class/cnuasgpu 2>/dev/null",
    );
    ctx.expect(r.code === 0, `unload left something behind: ${r.stdout}${r.stderr}`);
    const again = nodesFor(await gpuNodesById(g, await loadCnuasgpu(g, GPUS)), props);
    for (const [k, p] of props.entries()) await checkSysfs(ctx, again[k], p);
    const smoke = await runGpuProgram(g, CNUASGPU_SMOKE, [`/dev/${again[0]}`]);
    ctx.expect(smoke.code === 0, `smoke after reload failed: ${smoke.stderr.trim()}`);
  });
}

/** The cnuasgpu guest smoke row. */
export const row: Row = {
  id: "gpu-smoke",
  title: "cnuasgpu.ko probes; info, alloc, copy, free, mmap of BAR1, sysfs",
  needs: { guests: 1, builds: ["qemu", "image", "guestprogs"], devices: { gpu: GPUS } },
  sharesCores: "it judges data and states; the fuzz call count is recorded, not judged",
  timeoutSec: 600,
  modules: ["cnuasgpu"],
  run,
};
