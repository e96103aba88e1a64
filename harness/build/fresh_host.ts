/**
 * The fresh-host check: proves the host package list on a machine that has
 * nothing else. Over a bare Debian root (debootstrap minbase, cached like
 * every stage, never written: each step runs in an overlay of it) the
 * harness's own installer (`ensurePackages`) puts exactly the host package
 * list; then, inside it,
 * every host command and firmware file the harness uses must be there,
 * QEMU's pinned source must extract and configure with our flags and
 * models, the switch must build, and libcnuasdev must build and pass its
 * no-device smoke. Nothing of the machine running the check is used but
 * the kernel, debootstrap and the cache.
 */
import { HilError } from "../errors.ts";
import { basename, dirname, join } from "node:path";
import { cached, entryBuiltAt, entryDir, hashTree, markUsed, removeTree } from "../cache.ts";
import type { Config } from "../config.ts";
import { exec, type ExecOptions, type ExecResult, shq } from "../exec.ts";
import {
  APT_ENV,
  aptInstallArgv,
  ensureHostPackages,
  ensurePackages,
  hostPackageList,
  missingPackages,
  type PackageHost,
} from "../host.ts";
import { fetchSource, readPins } from "../pins.ts";
import { progress } from "../progress.ts";
import { type ChrootOptions, inChroot } from "./chroot.ts";
import { cnuasdevSources } from "./cnuasdev.ts";
import { debootstrap } from "./guest_root.ts";
import {
  addCnuasGlue,
  cnuasPatches,
  patchCommand,
  QEMU_CONFIGURE_FLAGS,
  QEMU_FIRMWARE_DIRS,
  syncModels,
} from "./qemu.ts";

/** The bare host the check stands for: the oldest Debian the README supports. */
export const FRESH_HOST_SUITE = "bookworm";

/** Bump when the bare root's recipe changes. */
const RECIPE_VERSION = 1;

/** Commands the harness runs on the host (build stages, chroot steps, image, the page test's browser). */
export const HOST_COMMANDS = [
  "apt-get",
  "dpkg-query",
  "dpkg-source",
  // our QEMU patches (qemu/patches); dpkg-dev depends on it
  "patch",
  "debootstrap",
  "unshare",
  "chroot",
  "mount",
  "mkfs.ext4",
  "cpio",
  "xz",
  "zstd",
  "ssh-keygen",
  "meson",
  "ninja",
  "pkg-config",
  "python3",
  "cc",
  "strip",
  "make",
  "chromium",
];

/** Firmware QEMU loads to boot a guest with `-kernel` (searched in QEMU_FIRMWARE_DIRS). */
export const HOST_FIRMWARE = ["bios-256k.bin", "linuxboot_dma.bin", "kvmvapic.bin"];

/** A step of the check failed; the message says what was missing, in one line. */
export class FreshHostProblem extends HilError {}

/** Runs one named step of the check (a row passes its `ctx.step`). */
export type StepRunner = (name: string, fn: () => Promise<void>) => Promise<void>;

/** Options of `checkFreshHost`. */
export interface FreshHostOptions {
  /** Where the steps' logs go (a row's directory). */
  logDir: string;
  /** Packages left out of the list, to prove the check fails without them. */
  without?: string[];
  /** Runs each step (default: just calls it). */
  step?: StepRunner;
}

/** The cached bare root: `debootstrap --variant=minbase bookworm`, nothing added. */
export async function buildBareRoot(config: Config): Promise<string> {
  const inputs = { suite: FRESH_HOST_SUITE, variant: "minbase", RECIPE_VERSION };
  const entry = await cached(config.cacheDir, "bare-root", inputs, async (out, logs) => {
    await ensureHostPackages(["guest"], join(logs, "host-packages.log"));
    const log = join(logs, "debootstrap.log");
    progress("bare-root", `debootstrap --variant=minbase ${FRESH_HOST_SUITE} (log: ${log})`);
    await debootstrap(FRESH_HOST_SUITE, "minbase", join(out, "root"), config.mirror, log);
  });
  return join(entry.dir, "root");
}

/** The stage of the cached install layers (an overlay `upper/` over the bare root, per install plan). */
const INSTALL_STAGE = "fresh-host-install";

/** The installer's code: a change to it installs again, whatever the plan. */
const INSTALLER_SOURCES = ["harness/host.ts", "harness/build/chroot.ts"];

/** Bump when how the install layer is made changes in a way INSTALLER_SOURCES do not show. */
const INSTALL_LAYER_VERSION = 1;

/** Where a check's commands run: an overlay of the bare root, its writes in `dir/upper`. */
interface OverlayRoot {
  /** Run a script inside the root. */
  run(script: string, opts?: Omit<ChrootOptions, "overlay">): Promise<ExecResult>;
  /** The host path where files written into the root go (the overlay's upper layer). */
  files: string;
}

/** An overlay of `bare` (over `layers`, lowest first) whose writes land in `dir/upper`. */
function overlayRoot(bare: string, dir: string, layers: string[] = []): OverlayRoot {
  return {
    run: (script, opts = {}) => inChroot(bare, script, { ...opts, overlay: { dir, layers } }),
    files: join(dir, "upper"),
  };
}

/**
 * An overlay root as a package host. `binds` keep apt's downloads in the
 * cache across runs (a cache, never required: an empty one only costs time).
 */
function packageHost(root: OverlayRoot, binds: { host: string; inRoot: string }[]): PackageHost {
  return {
    root: true,
    run: (argv: string[], opts: ExecOptions = {}) =>
      root.run(argv.map(shq).join(" "), {
        logPath: opts.logPath,
        allowFail: opts.allowFail,
        env: opts.env,
        binds,
      }),
  };
}

/**
 * What apt would install for the packages, from `apt-get install -s`'s
 * `Inst NAME [OLD] (VERSION ...)` lines: `NAME=VERSION` each, sorted. Two
 * equal plans install the same files into the same bare root. Exported for
 * its unit test.
 */
export function parseInstallPlan(simulation: string): string[] {
  const plan: string[] = [];
  for (const line of simulation.split("\n")) {
    const m = /^Inst (\S+) (?:\[[^\]]*\] )?\((\S+) /.exec(line);
    if (m) plan.push(`${m[1]}=${m[2]}`);
  }
  return plan.sort();
}

/**
 * apt's install plan for `wanted` in `host`, against today's archive
 * (apt-get update first). Every wanted package not yet installed must be in
 * it: a plan that misses one (apt's output read wrongly) would key the
 * install layer on too little.
 */
async function planInstall(host: PackageHost, wanted: string[], log: string): Promise<string[]> {
  // Each run updates an overlay of the bare root, which keeps nothing: without
  // the translations (package descriptions, which no install plan reads) that
  // is bookworm's InRelease, not 6 MB more (12 s of a run, at ~500 kB/s). The
  // installer's own update, on the machine it sets up, leaves that machine's
  // lists as its apt is configured.
  await host.run(["apt-get", "-o", "Acquire::Languages=none", "update"], {
    env: APT_ENV,
    logPath: log,
  });
  const missing = await missingPackages(wanted, host);
  const r = await host.run(aptInstallArgv(wanted, true), { env: APT_ENV, allowFail: true });
  const plan = parseInstallPlan(r.stdout);
  await Deno.writeTextFile(
    log,
    `${r.stdout}${r.stderr}\ninstall plan (${plan.length}):\n${plan.join("\n")}\n`,
    { append: true },
  );
  if (r.code !== 0) {
    throw new FreshHostProblem(
      explainLog(r.stdout + r.stderr, log) ?? `apt-get -s exited ${r.code} (see ${log})`,
    );
  }
  const named = new Set(plan.map((p) => p.split("=")[0]));
  const unplanned = missing.filter((p) => !named.has(p));
  if (unplanned.length) {
    throw new FreshHostProblem(
      `apt's install plan leaves out ${unplanned.join(" ")}, which the root lacks (see ${log})`,
    );
  }
  return plan;
}

/**
 * The packages of `plan` that dpkg in `host` does not report installed at
 * their planned version, as `NAME=VERSION (found: ...)`. Exported for its
 * unit test.
 */
export function unmetPlan(plan: string[], dpkgQuery: string): string[] {
  const found = new Map<string, string>();
  for (const line of dpkgQuery.split("\n")) {
    const [name, version, status] = line.split(" ");
    if (name && version) found.set(name, status === "installed" ? version : `${version} ${status}`);
  }
  return plan.filter((p) => {
    const [name, version] = p.split("=");
    return found.get(name) !== version;
  }).map((p) => `${p} (found: ${found.get(p.split("=")[0]) ?? "none"})`);
}

/** Check that every package of `plan` is installed in `host` at its planned version. */
async function checkPlanInstalled(host: PackageHost, plan: string[], log: string): Promise<void> {
  const r = await host.run(
    [
      "dpkg-query",
      "-W",
      "-f",
      "${Package} ${Version} ${db:Status-Status}\\n",
      ...plan.map((p) => p.split("=")[0]),
    ],
    { allowFail: true },
  );
  await Deno.writeTextFile(log, `$ dpkg-query -W (the plan's packages)\n${r.stdout}${r.stderr}`, {
    append: true,
  });
  const unmet = unmetPlan(plan, r.stdout);
  if (unmet.length) {
    throw new FreshHostProblem(
      `${unmet.length} of apt's plan not installed as planned: ${unmet.slice(0, 5).join(", ")} ` +
        `(see ${log})`,
    );
  }
}

/**
 * Run the check, step by step; the first failed step throws a
 * FreshHostProblem naming what was missing and where its log is. Every
 * step runs in an overlay of the cached bare root, which is never written.
 * The install goes into a layer of its own, kept in the cache under its
 * install plan (apt's `NAME=VERSION` list against today's archive), the
 * bare root's build time and the installer's code: at the quick depth an
 * equal key reuses the layer the harness's installer wrote for it — the
 * same packages at the same versions into the same bare root by the same
 * code — after dpkg confirms each of them there (a layer that fails that
 * is dropped); the deep depth always installs again and replaces it. A run
 * with packages left out (`without`) installs for real and keeps nothing.
 * Never leaves the scratch overlays behind.
 */
export async function checkFreshHost(config: Config, opts: FreshHostOptions): Promise<void> {
  const bare = await buildBareRoot(config);
  const bareBuiltAt = await entryBuiltAt(dirname(bare));
  const work = join(config.cacheDir, "fresh-host", `work-${Deno.pid}`);
  const aptCache = join(config.cacheDir, "fresh-host", "apt-archives");
  await removeTree(work);
  await Deno.mkdir(join(aptCache, "partial"), { recursive: true });
  await Deno.mkdir(work, { recursive: true });
  const runStep: StepRunner = opts.step ?? ((_name, fn) => fn());
  const step = (id: string, name: string, fn: (log: string) => Promise<void>) =>
    runStep(name, async () => {
      const log = join(opts.logDir, `fresh-host.${id}.log`);
      try {
        await fn(log);
      } catch (e) {
        if (e instanceof FreshHostProblem) throw e;
        throw new FreshHostProblem(`${name}: ${await explainFailure(log, (e as Error).message)}`);
      }
    });
  try {
    const fresh = overlayRoot(bare, join(work, "install"));
    // debootstrap copied the resolver config of its day; apt needs today's (a reused layer keeps
    // its first run's: nothing after the install uses the network).
    await Deno.mkdir(join(fresh.files, "etc"), { recursive: true });
    await Deno.copyFile("/etc/resolv.conf", join(fresh.files, "etc/resolv.conf")).catch(() => {});
    const installer = packageHost(fresh, [{ host: aptCache, inRoot: "/var/cache/apt/archives" }]);
    const without = opts.without ?? [];
    const wanted = hostPackageList().filter((p) => !without.includes(p));
    let plan: string[] = [];
    await step(
      "plan",
      `apt plans the install of the ${wanted.length} host packages in a bare ${FRESH_HOST_SUITE}`,
      async (log) => {
        plan = await planInstall(installer, wanted, log);
      },
    );
    const inputs = {
      suite: FRESH_HOST_SUITE,
      bareBuiltAt,
      plan,
      installer: await hashTree(config.repoRoot, INSTALLER_SOURCES),
      INSTALL_LAYER_VERSION,
    };
    const proven = entryDir(config.cacheDir, INSTALL_STAGE, inputs);
    // A run without some packages is a diagnosis: it neither reuses a layer nor leaves one.
    const keep = without.length === 0;
    let layer = fresh.files;
    if (keep && config.depth === "quick" && await markUsed(proven)) {
      layer = join(proven, "upper");
      await step(
        "install",
        `the ${wanted.length} host packages: the layer the harness's installer wrote for this ` +
          `same apt plan (${plan.length} packages) is reused, dpkg has each at its planned ` +
          `version (--depth deep installs again)`,
        async (log) => {
          await Deno.writeTextFile(
            log,
            `reused: ${layer}, written ${await entryBuiltAt(proven)}\n`,
          );
          const reused = packageHost(overlayRoot(bare, join(work, "check"), [layer]), []);
          try {
            await checkPlanInstalled(reused, plan, log);
            const missing = await missingPackages(wanted, reused);
            if (missing.length) {
              throw new FreshHostProblem(
                `the reused layer lacks ${missing.join(" ")} (see ${log})`,
              );
            }
          } catch (e) {
            // Not what it claims to hold: the next run installs again.
            await removeTree(proven);
            throw e;
          }
        },
      );
    } else {
      await step(
        "install",
        `the harness installs its ${wanted.length} host packages in a bare ${FRESH_HOST_SUITE}`,
        async (log) => {
          await ensurePackages(wanted, log, installer);
          await checkPlanInstalled(installer, plan, log);
          if (!keep) return;
          // For the next quick run with the same plan; a deep run's install replaces the last.
          if (config.depth === "deep") await removeTree(proven);
          const entry = await cached(config.cacheDir, INSTALL_STAGE, inputs, async (out) => {
            await Deno.rename(fresh.files, join(out, "upper"));
          });
          if (entry.built) layer = join(entry.dir, "upper");
        },
      );
    }
    const root = overlayRoot(bare, join(work, "run"), [layer]);
    await step(
      "probe",
      "every host command and firmware file is there",
      (log) => probeTools(root, log),
    );
    await step(
      "qemu-configure",
      "QEMU's pinned source extracts and configures",
      (log) => configureQemu(config, root, log),
    );
    await step("switch-make", "the switch builds", (log) => buildSwitchIn(config, root, log));
    await step(
      "lib-make",
      "libcnuasdev builds and its no-device smoke passes",
      (log) => buildLibIn(config, root, log),
    );
  } finally {
    await removeTree(work);
  }
}

async function probeTools(root: OverlayRoot, log: string): Promise<void> {
  const fw = HOST_FIRMWARE.map((f) =>
    `found=; for d in ${QEMU_FIRMWARE_DIRS.join(" ")}; do [ -f "$d/${f}" ] && found=1; done; ` +
    `[ -n "$found" ] || echo "firmware ${f}"`
  );
  const script = [
    ...HOST_COMMANDS.map((c) => `command -v ${c} >/dev/null || echo "command ${c}"`),
    ...fw,
  ].join("\n");
  const r = await root.run(script, { allowFail: true });
  await Deno.writeTextFile(log, `$ ${script}\n${r.stdout}${r.stderr}`);
  const missing = r.stdout.split("\n").filter((l) => /^(command|firmware) \S+$/.test(l));
  if (missing.length) {
    throw new FreshHostProblem(`missing on the bare host: ${missing.join(", ")} (see ${log})`);
  }
}

async function configureQemu(config: Config, root: OverlayRoot, log: string): Promise<void> {
  const pins = await readPins(config);
  const files = await fetchSource(config, pins.sources.qemu);
  const build = join(root.files, "build", "qemu");
  await Deno.mkdir(join(build, "dl"), { recursive: true });
  for (const [name, path] of Object.entries(files)) {
    await Deno.copyFile(path, join(build, "dl", name));
  }
  const dsc = Object.keys(files).find((n) => n.endsWith(".dsc"))!;
  await root.run(`dpkg-source --no-check -x /build/qemu/dl/${dsc} /build/qemu/src`, {
    logPath: log,
  });
  await Deno.mkdir(join(build, "patches"));
  for (const p of await cnuasPatches(config.repoRoot)) {
    const name = basename(p);
    await Deno.copyFile(p, join(build, "patches", name));
    await root.run(
      patchCommand("/build/qemu/src", `/build/qemu/patches/${name}`).map(shq).join(" "),
      {
        logPath: log,
      },
    );
  }
  await addCnuasGlue(join(build, "src"));
  await syncModels(config, build);
  await Deno.mkdir(join(build, "build"));
  await root.run(
    `cd /build/qemu/build && ../src/configure ${QEMU_CONFIGURE_FLAGS.map(shq).join(" ")}`,
    { logPath: log },
  );
}

async function buildSwitchIn(config: Config, root: OverlayRoot, log: string): Promise<void> {
  await Deno.mkdir(join(root.files, "build"), { recursive: true });
  await exec([
    "cp",
    "-a",
    join(config.repoRoot, "qemu", "switch"),
    join(root.files, "build", "switch"),
  ]);
  await root.run("make -C /build/switch O=/build/switch-out", { logPath: log });
}

async function buildLibIn(config: Config, root: OverlayRoot, log: string): Promise<void> {
  for (const d of await cnuasdevSources(config.repoRoot)) {
    await exec(["mkdir", "-p", dirname(join(root.files, "build", "cnuas", d))]);
    await exec(["cp", "-a", join(config.repoRoot, d), join(root.files, "build", "cnuas", d)]);
  }
  await root.run("make -C /build/cnuas/drivers/lib O=/build/lib-out check", {
    logPath: log,
  });
}

/**
 * One line saying what a failed step could not find: the configure/meson
 * `ERROR:` lines, a compiler's `fatal error:`, or apt's `E:` lines; else the
 * failure's own message. Exported for its unit test.
 */
export async function explainFailure(logPath: string, fallback: string): Promise<string> {
  const text = await Deno.readTextFile(logPath).catch(() => "");
  return explainLog(text, logPath) ?? `${fallback.split("\n")[0]} (see ${logPath})`;
}

/** A line saying what a build could not find: meson's and configure's, cc's, apt's. */
const FINDING = /(?:^|: )ERROR: |fatal error: |^E: |: not found$/;

/**
 * The lines of a failed build log that name what was missing, or undefined.
 * Meson's specific error comes before configure's generic "meson setup
 * failed", which is dropped when there is one.
 */
export function explainLog(text: string, logPath: string): string | undefined {
  const findings = [
    ...new Set(
      text.split("\n").map((l) => l.trim()).filter((l) => FINDING.test(l))
        // "../src/meson.build:2768:2: ERROR: Problem encountered: x" → "ERROR: x"
        .map((l) => l.replace(/^\S+:\d+:\d+: ERROR: (Problem encountered: )?/, "ERROR: ")),
    ),
  ];
  const specific = findings.filter((l) => l !== "ERROR: meson setup failed");
  const said = specific.length ? specific : findings;
  return said.length ? `${said.slice(0, 3).join(" | ")} (see ${logPath})` : undefined;
}
