/**
 * Row `gpu-host`: cnuasgpu_host.ko in one guest (no PCI function of ours
 * needed; the guest's cnuas-vnic only serves the DMA-BUF registration on
 * cnuas_ib). Loaded with its defaults, with each feature switched off in turn
 * and with non-default sizes (two nodes); for each load the op runner
 * (drivers/test/cnuasgpu_host_ops) runs a seeded sequence compared op by op
 * with the reference model (harness/models/gpu_host.ts; a mismatch is shrunk),
 * and the module's own checks (drivers/test/cnuasgpu_host_test) must PASS.
 * Then: bad parameter values refused with the parameter named in the kernel
 * log; devnode_mode 0600 and 0666 for a non-root user; cnuasgpu.ko and
 * cnuasgpu_host.ko loaded together and unloaded in both orders; a process
 * killed holding pins with ops in flight leaves nothing (sysfs counters back
 * to 0); an export registered with ibv_reg_dmabuf_mr on cnuas_ib; dmesg clean.
 *
 * First, the ABI fuzz of issue 20 (drivers/test/cnuasgpu_abi_fuzz.c) against
 * the guest's cnuasgpu function (/dev/cnuasgpu0) and /dev/cnuasgpu_host0:
 * no violation, no call trace/WARN/BUG in dmesg, the sysfs counters back to
 * their baseline, then both modules unload (refcount 0) and load again.
 *
 * The fuzz seed is random per run (measurement `fuzz.seed`; load k uses
 * seed + k); `CNUAS_HIL_GPU_HOST_SEED` fixes it to replay a run. The ABI
 * fuzz has its own (`gpuAbiFuzz.seed`, `CNUAS_HIL_GPU_ABI_FUZZ_SEED`).
 */
import { join } from "node:path";
import { fuzzSeed } from "../../harness/config.ts";
import { type Row, type RowContext, RowFailure } from "../../harness/matrix/row.ts";
import {
  CNUASGPU_HOST_TEST,
  HOST_IDLE_COUNTERS,
  HOST_OPS_BIN,
  hostLoaded,
  hostSysfs,
  killMidQueueScript,
  loadHost,
  tryBadLoads,
  unloadHost,
} from "../../harness/guest/cnuasgpu_host.ts";
import { configureRoceAddress, loadCnuasIb } from "../../harness/guest/cnuas_ib.ts";
import {
  type GpuAbiFuzzResult,
  loadCnuasgpu,
  readGpuSysfs,
  runGpuAbiFuzz,
} from "../../harness/guest/cnuasgpu.ts";
import { FUZZ_CALLS, FUZZ_DMESG_PATTERNS, fuzzDmesgFindings } from "./fuzz.ts";
import { waitCarrier } from "../../harness/guest/cnuas_net.ts";
import { shq } from "../../harness/guest/shell.ts";
import {
  compareHostRun,
  formatHostFailure,
  formatOp,
  fuzzHostLoad,
  GPU_HOST_DEFAULTS,
  type GpuHostConfig,
  type HostOp,
  type HostOpsExec,
  hostSysfsMismatches,
  moduleParams,
} from "../../harness/oracle/gpu_host_diff.ts";
import { MODULE_VERSIONS } from "../../harness/report/render.ts";

/** Ops into the guest's op runner (`seed` picks its bad handles), its answer lines out. */
function guestRunner(g: RowContext["guests"][number], seed: number): HostOpsExec {
  return async (ops) => {
    const r = await g.run(`${shq(HOST_OPS_BIN)} -s ${seed}`, {
      stdin: ops.map(formatOp).join("\n") + "\n",
      timeoutSec: 900,
    });
    if (r.code !== 0) {
      throw new RowFailure(`cnuasgpu_host_ops exited ${r.code}: ${r.stderr.trim().slice(-800)}`);
    }
    return r.stdout.split("\n").filter((l) => l.trim() !== "");
  };
}

/** One load of the module. */
export interface HostLoad {
  /** Short name (steps, artifacts). */
  name: string;
  /** Its parameters. */
  cfg: GpuHostConfig;
  /** The modprobe arguments (empty: the module's defaults). */
  params: string;
  /** Ops of the fuzz against this load. */
  ops: number;
}

function load(name: string, over: Partial<GpuHostConfig>, ops: number, plain = false): HostLoad {
  const cfg = { ...GPU_HOST_DEFAULTS, ...over };
  return { name, cfg, params: plain ? "" : moduleParams(cfg), ops };
}

/** The loads, in order: defaults, each feature off, non-default sizes. */
export const GPU_HOST_LOADS: HostLoad[] = [
  load("defaults", {}, 2500, true),
  load("zerocopy=0", { zerocopy: false }, 1500),
  load("pinned=0", { pinned: false }, 1500),
  load("dmabuf=0", { dmabuf: false }, 1500),
  load("async=0", { async: false }, 1500),
  load("sizes", { devices: 2, devmemMb: 3, pinnedMaxMb: 1, queueDepth: 8, batchMax: 5 }, 2500),
];

/** Ops compared over all loads, at least. */
export const FUZZ_FLOOR = 10_000;

/** Parameter values the module must refuse, and the parameter the kernel log must name. */
export const BAD_PARAMS: [string, string][] = [
  ["devices=0", "devices"],
  ["devices=17", "devices"],
  ["devices=-1", "devices"],
  ["devmem_mb=0", "devmem_mb"],
  ["devmem_mb=4097", "devmem_mb"],
  ["pinned_max_mb=0", "pinned_max_mb"],
  ["queue_depth=0", "queue_depth"],
  ["queue_depth=4097", "queue_depth"],
  ["batch_max=0", "batch_max"],
  ["queue_depth=8 batch_max=9", "batch_max"],
  ["devnode_mode=01000", "devnode_mode"],
  ["async=maybe", "async"],
];

/** The -F argument of cnuasgpu_host_test for `cfg`. */
export function testFeatures(cfg: GpuHostConfig): string {
  const on = (["zerocopy", "pinned", "dmabuf", "async"] as const).filter((f) => cfg[f]);
  return on.length ? on.join(",") : "none";
}

/** The node's counters are back to 0 (within a few seconds: ops may still be finishing). */
async function expectIdle(ctx: RowContext, nodes: number, what: string): Promise<void> {
  const g = ctx.guests[0];
  for (let n = 0; n < nodes; n++) {
    let kv: Record<string, string> = {};
    for (let i = 0; i < 50; i++) {
      kv = await hostSysfs(g, n);
      if (HOST_IDLE_COUNTERS.every((c) => kv[c] === "0")) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const left = HOST_IDLE_COUNTERS.filter((c) => kv[c] !== "0").map((c) => `${c}=${kv[c]}`);
    ctx.expect(left.length === 0, `${what}: node ${n} still has ${left.join(" ")}`);
  }
}

/** Run cnuasgpu_host_test with `args`; fail unless it says PASS. */
async function moduleTest(ctx: RowContext, args: string[]): Promise<string> {
  const r = await ctx.guests[0].run([CNUASGPU_HOST_TEST, ...args].map(shq).join(" "), {
    timeoutSec: 600,
  });
  ctx.log(r.stdout.trim());
  const failed = r.stdout.split("\n").filter((l) => /: FAIL/.test(l));
  ctx.expect(
    r.code === 0 && /^PASS$/m.test(r.stdout),
    `cnuasgpu_host_test ${args.join(" ")}: exit ${r.code}; ${failed.join("; ") || r.stderr.trim()}`,
  );
  return r.stdout;
}

/**
 * Each load: modprobe, the fuzz, the module's checks, counters back to 0,
 * rmmod. A fuzz mismatch does not stop the other loads; the reports are
 * returned so the row fails with all of them at its end.
 */
async function fuzzLoads(ctx: RowContext, hasTest: boolean): Promise<string[]> {
  const mismatches: string[] = [];
  const g = ctx.guests[0];
  const seed = fuzzSeed("CNUAS_HIL_GPU_HOST_SEED");
  ctx.measure("fuzz.seed", seed, "seed");
  let compared = 0, unchecked = 0;
  for (const [k, l] of GPU_HOST_LOADS.entries()) {
    await ctx.step(
      `${l.name}: modprobe cnuasgpu_host ${l.params || "(defaults)"}; sysfs`,
      async () => {
        await loadHost(g, l.cfg.devices, l.params);
        for (let n = 0; n < l.cfg.devices; n++) {
          const bad = hostSysfsMismatches(await hostSysfs(g, n), l.cfg);
          ctx.expect(bad.length === 0, `cnuasgpu_host${n}: ${bad.join("; ")}`);
        }
        const v = (await g.run("cat /sys/module/cnuasgpu_host/version")).stdout.trim();
        ctx.expect(
          v === MODULE_VERSIONS.cnuasgpu_host,
          `module version ${v}, compat.json credits ${MODULE_VERSIONS.cnuasgpu_host}`,
        );
      },
    );
    await ctx.step(`${l.name}: ${l.ops} ops against the model (seed ${seed + k})`, async () => {
      const r = await fuzzHostLoad(guestRunner(g, seed + k), l.cfg, seed + k, l.ops);
      const file = join(ctx.dir, `ops.${l.name.replace(/[^a-z0-9]+/g, "_")}.txt`);
      await Deno.writeTextFile(
        file,
        r.ops.map((o, i) => `${formatOp(o)}\n  => ${r.answers[i] ?? "(none)"}`).join("\n") + "\n",
      );
      ctx.artifact(file);
      compared += r.compared;
      unchecked += r.unchecked;
      if (r.divergence) {
        const report = formatHostFailure(l.cfg, r);
        ctx.log(`MISMATCH (the row fails at its end):\n${report}`);
        mismatches.push(report);
      }
    });
    // cnuasgpu_host_test assumes the default arena (its queue cases allocate more than 3 MiB).
    if (hasTest && l.cfg.devmemMb === GPU_HOST_DEFAULTS.devmemMb) {
      await ctx.step(`${l.name}: cnuasgpu_host_test -F ${testFeatures(l.cfg)}`, async () => {
        await moduleTest(ctx, ["-F", testFeatures(l.cfg)]);
      });
    }
    await ctx.step(`${l.name}: counters back to 0, rmmod`, async () => {
      await expectIdle(ctx, l.cfg.devices, l.name);
      await unloadHost(g);
    });
  }
  ctx.measure("opsCompared", compared, "ops");
  ctx.measure("uncheckedAnswers", unchecked, "answers");
  // (a mismatch ends its load's comparison: the floor counts when all agreed)
  ctx.expect(
    mismatches.length > 0 || compared >= FUZZ_FLOOR,
    `only ${compared} ops compared (floor ${FUZZ_FLOOR})`,
  );
  return mismatches;
}

/** Refuse each of BAD_PARAMS; returns the kernel lines the refusals printed. */
async function badParams(ctx: RowContext): Promise<Set<string>> {
  const said = new Set<string>();
  await ctx.step(`${BAD_PARAMS.length} bad parameter values refused, each named`, async () => {
    const results = await tryBadLoads(ctx.guests[0], BAD_PARAMS.map(([params]) => params));
    for (const [i, [params, name]] of BAD_PARAMS.entries()) {
      const r = results[i];
      ctx.log(`modprobe ${params}: exit ${r.code}\n${r.dmesg}`);
      for (const l of r.dmesg.split("\n")) said.add(l.replace(/^\[[^\]]*\]\s*/, ""));
      ctx.expect(r.code !== 0 && !r.loaded, `modprobe ${params} was not refused`);
      ctx.expect(
        new RegExp(`\\b${name}\\b`).test(r.dmesg),
        `modprobe ${params}: the kernel log does not name ${name}: ${
          r.dmesg.trim() || "(nothing)"
        }`,
      );
    }
  });
  return said;
}

/** A user that is not root: nobody when the image has it, else one made here. */
async function unprivilegedUser(ctx: RowContext): Promise<string> {
  const r = await ctx.guests[0].run(
    "id -u nobody >/dev/null 2>&1 && echo nobody || " +
      "{ id -u cnuas >/dev/null 2>&1 || useradd -M -r -s /usr/sbin/nologin cnuas; echo cnuas; }",
    { check: true },
  );
  return r.stdout.trim().split("\n").pop() ?? "nobody";
}

const SMALL_RUN: HostOp[] = [
  { op: "open", f: 0, node: 0 },
  { op: "alloc", f: 0, size: 8192n, align: 0n, out: 1 },
  { op: "copy_to", f: 0, h: "$1", off: 100n, len: 4000n, seed: 5 },
  { op: "copy_from", f: 0, h: "$1", off: 0n, len: 8192n },
  { op: "pin", f: 0, npages: 4, out: 2 },
  {
    op: "submit",
    f: 0,
    ops: [{ k: "pto", h: "$1", off: 0n, len: 4096n, p: "$2", poff: 0n, ud: 1n }],
  },
  { op: "wait", f: 0, seq: "last", max: 8, timeoutMs: 10000 },
  { op: "close", f: 0 },
];

async function devnodeMode(ctx: RowContext, hasTest: boolean): Promise<void> {
  const g = ctx.guests[0];
  const user = await unprivilegedUser(ctx);
  const asUser = `setpriv --reuid=${user} --regid=$(id -g ${user}) --clear-groups ${HOST_OPS_BIN}`;
  for (const mode of ["0600", "0666"]) {
    await ctx.step(`devnode_mode=${mode}: /dev/cnuasgpu_host0 mode, and ${user}`, async () => {
      const cfg = GPU_HOST_DEFAULTS;
      await loadHost(g, 1, mode === "0600" ? "" : `devnode_mode=${mode}`);
      const st = (await g.run("stat -c %a /dev/cnuasgpu_host0", { check: true })).stdout.trim();
      ctx.expect(st === mode.slice(1), `/dev/cnuasgpu_host0 has mode ${st}, want ${mode}`);
      const ops = mode === "0600" ? SMALL_RUN.slice(0, 1) : SMALL_RUN;
      const r = await g.run(asUser, { stdin: ops.map(formatOp).join("\n") + "\n" });
      const answers = r.stdout.split("\n").filter((l) => l.trim());
      ctx.log(`${user}, mode ${mode}:\n${answers.join("\n")}`);
      if (mode === "0600") {
        ctx.expect(answers[0] === "err EACCES", `${user} opened a 0600 node: ${answers[0]}`);
      } else {
        const c = compareHostRun(cfg, ops, answers);
        ctx.expect(
          c.divergence === null,
          `${user} on a 0666 node: ${JSON.stringify(c.divergence)}`,
        );
        if (hasTest) await moduleTest(ctx, ["-m", mode]);
      }
      await expectIdle(ctx, 1, `devnode_mode=${mode}`);
      await unloadHost(g);
    });
  }
}

async function bothModules(ctx: RowContext): Promise<void> {
  const g = ctx.guests[0];
  const small = SMALL_RUN.map(formatOp).join("\n") + "\n";
  const works = async (what: string) => {
    const answers = (await g.run(HOST_OPS_BIN, { stdin: small })).stdout.split("\n").filter((
      l,
    ) => l.trim());
    const c = compareHostRun(GPU_HOST_DEFAULTS, SMALL_RUN, answers);
    ctx.expect(c.divergence === null, `${what}: ${JSON.stringify(c.divergence)}`);
  };
  const mods = async () => (await g.run("grep -o '^cnuasgpu[a-z_]* ' /proc/modules")).stdout;
  for (const first of ["cnuasgpu", "cnuasgpu_host"]) {
    await ctx.step(
      `cnuasgpu and cnuasgpu_host together; ${first} unloaded first`,
      async () => {
        await g.run("modprobe cnuasgpu", { check: true });
        await loadHost(g, 1, "");
        await works("both loaded");
        await g.run(`rmmod ${first}`, { check: true });
        const left = await mods();
        const other = first === "cnuasgpu" ? "cnuasgpu_host" : "cnuasgpu";
        ctx.expect(left.trim() === other, `after rmmod ${first}: /proc/modules has ${left.trim()}`);
        if (first === "cnuasgpu") await works(`${first} unloaded`);
        await g.run(`rmmod ${other}`, { check: true });
        ctx.expect((await mods()).trim() === "", `modules left: ${await mods()}`);
      },
    );
  }
}

/**
 * The arena of the kill step, MiB, and the size of each of its fills: the
 * queue must still be running when the shell reads the counters, however
 * slowly it gets there on busy cores. With 32 MiB fills a run beside other
 * rows once found 63 of 64 ops done (typically 52-56 were in flight); each
 * fill is 4 times that now, so the 32 fills ahead of the pinned ops take
 * seconds. The kill cancels what is queued: only the running op finishes.
 */
const KILL_DEVMEM_MB = 256;
const KILL_FILL_BYTES = 128 << 20;

async function killMidQueue(ctx: RowContext): Promise<void> {
  const big = KILL_FILL_BYTES;
  const fills = (n: number) =>
    Array.from({ length: n }, (_, i) => `fill $1 0 ${big} ${i + 1} ${i}`).join(" ; ");
  const pinned = Array.from({ length: 32 }, (_, i) => `pto $1 0 262144 $2 0 ${100 + i}`).join(
    " ; ",
  );
  const batch = [
    "open 0 0",
    `alloc 0 ${big} 0 $1`,
    "pin 0 64 $2",
    "pin 0 16 $3",
    `submit 0 : ${fills(32)}`,
    `submit 0 : ${pinned}`,
    "unpin 0 $2",
    "free 0 $1",
  ];
  await ctx.step(
    "a process killed holding pins, with 64 ops in flight, leaves nothing",
    async () => {
      const g = ctx.guests[0];
      await loadHost(g, 1, `devmem_mb=${KILL_DEVMEM_MB}`);
      const r = await g.run(killMidQueueScript(HOST_OPS_BIN, batch), { timeoutSec: 180 });
      ctx.log(r.stdout.trim());
      const kv: Record<string, string> = {};
      for (const m of r.stdout.matchAll(/^(\w+)=(\d+)$/gm)) kv[m[1]] = m[2];
      const answers = r.stdout.split("\n").filter((l) => l.startsWith("answer: "));
      ctx.expect(
        answers.length === batch.length && answers.every((a) => /^answer: ok/.test(a)),
        `the runner's answers: ${answers.join(" | ")}`,
      );
      ctx.expect(
        Number(kv.before_inflight) > 0,
        `no op in flight at the kill (${kv.before_inflight})`,
      );
      ctx.expect(
        Number(kv.before_pinned_used) === 80 * 4096,
        `pinned_used ${kv.before_pinned_used}`,
      );
      const left = HOST_IDLE_COUNTERS.filter((c) => kv[`after_${c}`] !== "0");
      ctx.expect(
        left.length === 0,
        `after the kill: ${left.map((c) => `${c}=${kv[`after_${c}`]}`)}`,
      );
      ctx.measure("kill.inflightAtKill", Number(kv.before_inflight ?? 0), "ops");
      await unloadHost(g);
    },
  );
}

async function dmabufIb(ctx: RowContext, hasTest: boolean): Promise<void> {
  if (!hasTest) return;
  const g = ctx.guests[0];
  const dev = await ctx.step("cnuas_net and cnuas_ib, a RoCE v2 address", () => loadCnuasIb(g));
  const gid = await configureRoceAddress(g, dev, "10.78.0.1/24");
  ctx.expect(await waitCarrier(g, dev.iface, true), `${dev.iface}: no carrier`);
  await ctx.step(`an export registered with ibv_reg_dmabuf_mr on ${dev.ibdev}`, async () => {
    await loadHost(g, 1, "");
    const out = await moduleTest(ctx, ["-i", `${dev.ibdev}:${gid}`]);
    ctx.expect(/^dmabuf_ib_mr: ok$/m.test(out), "dmabuf_ib_mr did not say ok");
    await unloadHost(g);
  });
}

/** Kernel lines the ABI fuzz must not cause. */
const ABI_FUZZ_DMESG: RegExp[] = [
  ...FUZZ_DMESG_PATTERNS,
  /WARNING:/,
  /\bBUG[: ]/,
  /Oops/,
  /general protection fault/,
  /KASAN|UBSAN/,
  // a split PFN mapping of BAR1 (partial munmap) freeing a PAT memtype it never reserved
  /x86\/PAT: .*(freeing invalid memtype|conflicting memory types)/,
];

/**
 * The ABI fuzz (issue 20) of /dev/cnuasgpu0 and /dev/cnuasgpu_host0, then
 * rmmod and modprobe of both. Leaves cnuasgpu loaded, cnuasgpu_host not.
 */
async function abiFuzz(ctx: RowContext): Promise<void> {
  const g = ctx.guests[0];
  const seed = fuzzSeed("CNUAS_HIL_GPU_ABI_FUZZ_SEED");
  const calls = FUZZ_CALLS[ctx.config.depth];
  ctx.measure("gpuAbiFuzz.seed", seed, "seed");
  let marker = 0;
  await ctx.step("ABI fuzz: cnuasgpu (1 function) and cnuasgpu_host loaded", async () => {
    await loadCnuasgpu(g, 1);
    await loadHost(g, 1, "");
    marker = (await g.dmesg()).split("\n").length;
  });
  let made = 0, violations = 0;
  const results: GpuAbiFuzzResult[] = [];
  for (const node of ["/dev/cnuasgpu0", "/dev/cnuasgpu_host0"]) {
    await ctx.step(`ABI fuzz ${node}: ${calls} calls (seed ${seed})`, async () => {
      const r = await runGpuAbiFuzz(g, node, calls, seed);
      const file = `abi_fuzz.${node.slice(5)}.txt`;
      await Deno.writeTextFile(join(ctx.dir, file), r.stdout + r.stderr);
      ctx.artifact(file);
      results.push(r);
      made += r.calls;
      violations += Math.max(0, r.violations);
      ctx.log(
        `${node}: ${r.calls} calls, ${r.violations} violations, exit ${r.code}` +
          (r.violationLines.length ? `\n${r.violationLines.join("\n")}` : ""),
      );
      ctx.expect(
        r.code === 0 && r.violations === 0,
        `cnuasgpu_abi_fuzz ${node} ${calls} ${seed}: exit ${r.code}, ${r.violations} ` +
          `violations: ${r.violationLines.join(" | ") || r.stderr.trim().slice(-400)}`,
      );
      ctx.expect(r.calls >= calls, `${node}: only ${r.calls} calls (at least ${calls})`);
      const back = Object.keys(r.counters).filter((k) => k.startsWith("baseline_"))
        .map((k) => k.slice(9)).filter((c) =>
          r.counters[`final_${c}`] !== r.counters[`baseline_${c}`]
        );
      ctx.expect(
        back.length === 0 && Object.keys(r.counters).length > 0,
        `${node}: counters not back to baseline: ${
          back.map((c) => `${c} ${r.counters[`baseline_${c}`]} -> ${r.counters[`final_${c}`]}`)
            .join(", ") || "(none reported)"
        }`,
      );
    });
  }
  ctx.measure("gpuAbiFuzz.callsMade", made, "calls");
  ctx.measure("gpuAbiFuzz.violations", violations, "violations");
  await ctx.step("ABI fuzz: dmesg has no call trace, WARN or BUG", async () => {
    const log = (await g.dmesg()).split("\n").slice(Math.max(0, marker - 1)).join("\n");
    const bad = fuzzDmesgFindings(log, ABI_FUZZ_DMESG);
    ctx.expect(bad.length === 0, `dmesg: ${[...new Set(bad)].slice(0, 8).join(" | ")}`);
  });
  await ctx.step("ABI fuzz: sysfs counters of both nodes at baseline", async () => {
    await expectIdle(ctx, 1, "cnuasgpu_host0 after the ABI fuzz");
    const pcie = results[0]?.counters ?? {};
    const kv = await readGpuSysfs(g, "cnuasgpu0");
    for (const c of ["devmem_used", "exports"]) {
      ctx.expect(
        Number(kv[c]) === pcie[`baseline_${c}`],
        `cnuasgpu0 ${c} is ${kv[c]}, ${pcie[`baseline_${c}`]} before the fuzz`,
      );
    }
  });
  await ctx.step(
    "ABI fuzz: rmmod cnuasgpu_host and cnuasgpu (refcount 0), modprobe again",
    async () => {
      const refs = await g.run("grep -E '^cnuasgpu(_host)? ' /proc/modules | cut -d' ' -f1,3");
      ctx.log(refs.stdout.trim());
      await unloadHost(g);
      const r = await g.run("rmmod cnuasgpu && ! ls /dev/cnuasgpu0 2>/dev/null", {
        timeoutSec: 60,
      });
      ctx.expect(r.code === 0, `rmmod cnuasgpu: ${r.stdout}${r.stderr}`);
      await loadCnuasgpu(g, 1);
      await loadHost(g, 1, "");
      await unloadHost(g);
    },
  );
}

async function run(ctx: RowContext): Promise<void> {
  const g = ctx.guests[0];
  const hasTest = await ctx.step(
    "the module (packaged) and the op runner are in the guest",
    async () => {
      const r = await g.run(`modinfo -n cnuasgpu_host && ls ${shq(HOST_OPS_BIN)}`);
      if (r.code !== 0) throw new RowFailure(`missing: ${r.stderr.trim()}`);
      if (await hostLoaded(g)) await unloadHost(g);
      return (await g.run(`test -x ${shq(CNUASGPU_HOST_TEST)}`)).code === 0;
    },
  );
  if (!hasTest) ctx.log("drivers/test/cnuasgpu_host_test is not built: its steps are left out");
  await abiFuzz(ctx);
  const mismatches = await fuzzLoads(ctx, hasTest);
  const refusals = await badParams(ctx);
  await devnodeMode(ctx, hasTest);
  await bothModules(ctx);
  await killMidQueue(ctx);
  await dmabufIb(ctx, hasTest);
  await ctx.step(
    "dmesg: no warning or error from cnuasgpu_host but the refused loads'",
    async () => {
      const r = await g.run("dmesg --level=emerg,alert,crit,err,warn", { check: true });
      const bad = r.stdout.split("\n").filter((l) =>
        /cnuasgpu|BUG|WARNING|Oops/.test(l) && !/out-of-tree module taints kernel/.test(l) &&
        !refusals.has(l.replace(/^\[[^\]]*\]\s*/, ""))
      );
      ctx.expect(bad.length === 0, `dmesg:\n${bad.join("\n")}`);
    },
  );
  ctx.expect(
    mismatches.length === 0,
    `${mismatches.length} of ${GPU_HOST_LOADS.length} loads disagreed with the model:\n` +
      mismatches.join("\n\n"),
  );
}

/** cnuasgpu_host.ko: zero-copy, pinned, DMA-BUF, async queues, ABI validators */
export const row: Row = {
  id: "gpu-host",
  title: "cnuasgpu_host.ko: zero-copy, pinned, DMA-BUF, async queues, ABI validators",
  needs: {
    guests: 1,
    fabric: "eth",
    builds: ["qemu", "image", "provider", "guestprogs"],
    // the gpu: the ABI fuzz's /dev/cnuasgpu0
    devices: { vnic: 1, gpu: 1 },
  },
  sharesCores: "it judges results against the model; the waits it checks are 1 s and more",
  timeoutSec: 1200,
  // Both GPU modules (issue 15); cnuas_ib only imports an export here.
  modules: ["cnuasgpu_host", "cnuasgpu"],
  run,
};
