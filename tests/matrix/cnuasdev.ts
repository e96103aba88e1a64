/**
 * Row `cnuasdev`: libcnuasdev over its three backends. One guest with one
 * cnuasgpu function. First, with no module loaded and no device node, the
 * no-device smoke ("fake hostdev": selection, capabilities, error paths,
 * Soft-GPU only) runs in the guest — and on the host, from the host build —
 * and the installed library is found by pkg-config and an example built
 * against it. Then cnuasgpu.ko and cnuasgpu_host.ko are loaded and
 * `cnuasdev_suite` runs on each backend, chosen three ways: pcie
 * automatically (first in the selection order), host by CNUASDEV_BACKEND,
 * soft by argument. Every case two backends both ran must print the same
 * line (the differential); cases a backend skips for a capability it lacks
 * are compared only between those that have it. dmesg stays clean and both
 * modules unload.
 *
 * Without cnuasgpu_host.ko in the build the host backend cannot run: the
 * row still runs everything else, then reports MISS naming the module.
 */
import { join } from "node:path";
import { CNUASDEV_PROGRAMS, hostCnuasdevEnv } from "../../harness/build/cnuasdev.ts";
import { exec } from "../../harness/exec.ts";
import { loadCnuasgpu } from "../../harness/guest/cnuasgpu.ts";
import {
  CNUASDEV_FAKE_SMOKE,
  CNUASDEV_LIST_SRC,
  CNUASDEV_SUITE,
  differential,
  loadCnuasgpuHost,
  parseSuite,
  type SuiteRun,
} from "../../harness/guest/cnuasdev.ts";
import { shq } from "../../harness/guest/shell.ts";
import { rmmodIfLoaded } from "../../harness/guest/kmod.ts";
import { cnuasdevGuestNeeds } from "../../harness/matrix/needs.ts";
import { type Row, type RowContext, RowMiss } from "../../harness/matrix/row.ts";
import { LIBRARY_VERSIONS } from "../../harness/report/render.ts";
import type { Guest } from "../../harness/vm/types.ts";

/** Cases each backend must at least run (of 26: pcie has no pins or queue, soft no DMA-BUF or link). */
const MIN_CASES = { pcie: 14, host: 25, soft: 23 } as const;

/** How each backend is chosen: argv of the suite and the environment before it. */
const SELECTIONS = [
  { backend: "pcie", how: "automatically", env: "", arg: "" },
  { backend: "host", how: "by CNUASDEV_BACKEND=host", env: "CNUASDEV_BACKEND=host ", arg: "" },
  { backend: "soft", how: "by argument", env: "", arg: " soft" },
] as const;

/** The no-device smoke's summary line, checked the same way wherever it ran. */
function smokeResult(ctx: RowContext, where: string, code: number, out: string, err: string) {
  ctx.log(out.trim());
  const m = /^smoke=(\w+) checks=(\d+)/m.exec(out);
  ctx.expect(
    code === 0 && m?.[1] === "PASS",
    `no-device smoke ${where} failed (exit ${code}): ${err.trim() || out.trim().slice(-400)}`,
  );
  ctx.measure(`smoke.${where}.checks`, Number(m?.[2] ?? 0), "checks");
}

/**
 * Run the suite on one backend. That the backend was the one chosen is
 * checked here; what the suite's own checks said is returned (the row
 * compares the lines first, so a bug shows as the values that differ).
 */
async function suite(
  ctx: RowContext,
  g: Guest,
  sel: typeof SELECTIONS[number],
): Promise<{ run: SuiteRun; problems: string[] }> {
  const r = await g.run(`${sel.env}${shq(CNUASDEV_SUITE)}${sel.arg}`, { timeoutSec: 600 });
  ctx.log(r.stdout.trim());
  const run = parseSuite(r.stdout);
  ctx.expect(
    run.backend === sel.backend,
    `chosen ${sel.how}, the suite ran on ${run.backend}, not ${sel.backend}: ${r.stderr.trim()}`,
  );
  const cases = run.cases.size;
  ctx.measure(`suite.${sel.backend}.cases`, cases, "cases");
  ctx.measure(`suite.${sel.backend}.skipped`, run.skips.size, "cases");
  const problems: string[] = [];
  if (r.code !== 0) {
    problems.push(
      `suite on ${sel.backend} failed (exit ${r.code}): ${r.stderr.trim().slice(-800)}`,
    );
  }
  if (cases < MIN_CASES[sel.backend] || run.summary.failed !== "0") {
    problems.push(
      `suite on ${sel.backend}: ${cases} cases (at least ${MIN_CASES[sel.backend]}), ` +
        `${run.summary.failed ?? "?"} failed`,
    );
  }
  return { run, problems };
}

async function run(ctx: RowContext): Promise<void> {
  const g = ctx.guests[0];

  await ctx.step("no-device smoke on the host (host build, Soft-GPU only)", async () => {
    const dir = ctx.builds.cnuasdevHost!;
    const r = await exec([join(dir, CNUASDEV_PROGRAMS[1])], {
      env: hostCnuasdevEnv(dir),
      allowFail: true,
    });
    smokeResult(ctx, "host", r.code, r.stdout, r.stderr);
  });

  await ctx.step("no-device smoke in the guest, cnuasgpu (loaded at boot) unloaded", async () => {
    const r = await g.run(
      `udevadm settle -t 30; ${rmmodIfLoaded("cnuasgpu")}; ` +
        `! grep -qE '^cnuasgpu(_host)? ' /proc/modules && ${shq(CNUASDEV_FAKE_SMOKE)}`,
      { timeoutSec: 300 },
    );
    smokeResult(ctx, "guest", r.code, r.stdout, r.stderr);
  });

  await ctx.step("pkg-config finds libcnuasdev; the example builds against it", async () => {
    const r = await g.run(
      [
        "set -e",
        "pkg-config --modversion cnuasdev",
        "pkg-config --cflags --libs cnuasdev",
        `gcc -Wall -Wextra -Werror -o /tmp/cnuasdev_list ${shq(CNUASDEV_LIST_SRC)} ` +
        "$(pkg-config --cflags --libs cnuasdev)",
        "ldd /tmp/cnuasdev_list | grep libcnuasdev",
        "/tmp/cnuasdev_list",
      ].join("\n"),
      { timeoutSec: 180 },
    );
    ctx.expect(r.code === 0, `building against the installed library failed: ${r.stderr}`);
    const [version, flags] = r.stdout.split("\n");
    ctx.expect(
      version === LIBRARY_VERSIONS.libcnuasdev,
      `pkg-config --modversion cnuasdev: ${version}, expected ${LIBRARY_VERSIONS.libcnuasdev}`,
    );
    ctx.expect(/-lcnuasdev\b/.test(flags), `pkg-config --libs cnuasdev: ${flags}`);
    ctx.expect(
      /libcnuasdev\.so\.1 => (\/usr)?\/lib\/x86_64-linux-gnu\/libcnuasdev\.so\.1 /.test(r.stdout),
      "the example does not load libcnuasdev.so.1 from /usr/lib/x86_64-linux-gnu",
    );
    ctx.expect(/^soft:0 - opens=OK/m.test(r.stdout), "cnuasdev_list does not list soft:0");
  });

  await ctx.step("modprobe cnuasgpu: /dev/cnuasgpu0", () => loadCnuasgpu(g, 1));
  // installed by cnuas-gpu-modules when drivers/gpu has its sources
  const hostKo = (await g.run("modinfo -n cnuasgpu_host")).code === 0;
  if (hostKo) {
    await ctx.step("modprobe cnuasgpu_host: /dev/cnuasgpu_host0", () => loadCnuasgpuHost(g));
  } else {
    ctx.log("cnuasgpu_host is not installed (not built): the host backend cannot run");
  }

  await ctx.step("cnuasdev_list: the devices, in the selection order", async () => {
    const r = await g.run("/tmp/cnuasdev_list", { timeoutSec: 60 });
    const names = [...r.stdout.matchAll(/^(\w+:\d+) \S+ opens=OK/gm)].map((m) => m[1]);
    const want = hostKo ? ["pcie:0", "host:0", "soft:0"] : ["pcie:0", "soft:0"];
    ctx.expect(
      names.join(" ") === want.join(" "),
      `cnuasdev_list opened ${names.join(" ")}, expected ${want.join(" ")}`,
    );
  });

  const runs: SuiteRun[] = [];
  const problems: string[] = [];
  for (const sel of SELECTIONS) {
    if (sel.backend === "host" && !hostKo) continue;
    const r = await ctx.step(
      `suite on ${sel.backend}, chosen ${sel.how}`,
      () => suite(ctx, g, sel),
    );
    runs.push(r.run);
    problems.push(...r.problems);
  }

  await ctx.step("differential: every case two backends both ran, the same line", () => {
    const d = differential(runs);
    for (const p of d.pairs) {
      ctx.log(
        `${p.pair}: ${p.compared} lines compared; not comparable (a capability missing): ${
          p.notComparable.join(", ") || "none"
        }`,
      );
      ctx.measure(`differential.${p.pair.replace("/", "_")}.compared`, p.compared, "lines");
    }
    ctx.measure("differential.compared", d.compared, "lines");
    ctx.expect(
      d.mismatches.length === 0,
      `the backends disagree:\n${d.mismatches.join("\n")}`,
    );
    ctx.expect(d.compared > 0, "no line was compared");
    return Promise.resolve();
  });

  await ctx.step("every suite passed its own checks", () => {
    ctx.expect(problems.length === 0, problems.join("\n"));
    return Promise.resolve();
  });

  await ctx.step("dmesg has no warnings or errors from the GPU modules", async () => {
    const r = await g.run("dmesg --level=emerg,alert,crit,err,warn", { check: true });
    const bad = r.stdout.split("\n").filter((l) =>
      /cnuasgpu|BUG|WARNING|Oops/.test(l) && !/out-of-tree module taints kernel/.test(l)
    );
    ctx.expect(bad.length === 0, `dmesg:\n${bad.join("\n")}`);
  });

  await ctx.step("both modules unload", async () => {
    const r = await g.run(
      `${hostKo ? "rmmod cnuasgpu_host && " : ""}rmmod cnuasgpu && ` +
        "! grep -qE '^cnuasgpu(_host)? ' /proc/modules",
    );
    ctx.expect(r.code === 0, `unload failed: ${r.stdout}${r.stderr}`);
  });

  if (!hostKo) {
    throw new RowMiss(
      "cnuasgpu_host.ko is not built (no cnuasgpu_host sources in drivers/gpu): the host " +
        "backend's suite and its part of the differential did not run; pcie and soft did",
    );
  }
}

/** The libcnuasdev row. */
export const row: Row = {
  id: "cnuasdev",
  title: "libcnuasdev: suite on pcie, host and soft, cross-backend differential, no-device smoke",
  needs: cnuasdevGuestNeeds("cnuasdev-host"),
  sharesCores: "it judges results and the cross-backend differential, whose lines hold no times",
  timeoutSec: 600,
  modules: ["cnuasgpu", "cnuasgpu_host"],
  libraries: ["libcnuasdev"],
  run,
};
