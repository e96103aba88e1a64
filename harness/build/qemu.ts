/**
 * QEMU stage: Debian's qemu 7.2 source package (verified, `dpkg-source -x`,
 * Debian patches applied) plus our `qemu/hw` models → `qemu-system-x86_64`.
 *
 * The configured build tree is kept per upstream source in
 * `<cache>/qemu-work/<key>` so a change to our models recompiles two files,
 * not QEMU; the binary is published into the content-addressed entry
 * `<cache>/qemu/<key of source + qemu/hw>`.
 *
 * A second variant, `asan` (build target `qemu-asan`), configures the same
 * source with `--enable-sanitizers` (AddressSanitizer and UBSan) for the
 * device-model fuzz row: its own work tree and its own cache stage
 * (`<cache>/qemu-asan/<key>`), built only when a row asks for it.
 */
import { join } from "node:path";
import { cached, hashInputs, hashTree, withWorkTree } from "../cache.ts";
import type { Config } from "../config.ts";
import { exec } from "../exec.ts";
import { ensureHostPackages } from "../host.ts";
import { fetchSource, pinKey, readPins } from "../pins.ts";
import { progress } from "../progress.ts";
import { bytesEqual } from "./sync_tree.ts";

/** Firmware directories from the host's Debian packages (seabios, ipxe-qemu, qemu-system-data). */
export const QEMU_FIRMWARE_DIRS = ["/usr/share/qemu", "/usr/share/seabios", "/usr/lib/ipxe/qemu"];

/** configure flags: a minimal x86_64 system emulator with user-mode networking. */
export const QEMU_CONFIGURE_FLAGS = [
  "--target-list=x86_64-softmmu",
  `--firmwarepath=${QEMU_FIRMWARE_DIRS.join(":")}`,
  "--meson=/usr/bin/meson",
  "--disable-docs",
  "--disable-werror",
  "--enable-slirp",
  "--disable-gtk",
  "--disable-sdl",
  "--disable-vnc",
  "--disable-opengl",
  "--disable-virglrenderer",
  "--disable-spice",
  "--disable-xen",
  "--disable-tools",
  "--disable-guest-agent",
];

/** The builds of QEMU: the normal one, and one with ASan and UBSan compiled in. */
export type QemuVariant = "plain" | "asan";

/** What each variant adds to {@link QEMU_CONFIGURE_FLAGS}, and the cache stage it lives in. */
const VARIANTS: Record<QemuVariant, { flags: string[]; stage: string }> = {
  plain: { flags: [], stage: "qemu" },
  asan: { flags: ["--enable-sanitizers"], stage: "qemu-asan" },
};

/** configure flags of a variant. */
export function qemuConfigureFlags(variant: QemuVariant): string[] {
  return [...QEMU_CONFIGURE_FLAGS, ...VARIANTS[variant].flags];
}

/** Bump when the way the tree is prepared changes. */
const GLUE_VERSION = 1;

/** What the QEMU stage produces. */
export interface QemuBuild {
  /** Absolute path of `qemu-system-x86_64`. */
  binary: string;
  /** Directories for `-L`. */
  firmware: string[];
  /** The pinned Debian version. */
  version: string;
}

/**
 * Build (or find in the cache) QEMU with the current `qemu/hw` models, as
 * `variant` configures it (default the normal build).
 * @example
 * ```ts
 * const { binary } = await buildQemu(defaultConfig());
 * const asan = await buildQemu(defaultConfig(), "asan");
 * ```
 */
export async function buildQemu(
  config: Config,
  variant: QemuVariant = "plain",
): Promise<QemuBuild> {
  const pins = await readPins(config);
  const pin = pins.sources.qemu;
  const flags = qemuConfigureFlags(variant);
  // Our patches to QEMU itself are part of the source: a change to them prepares a new tree.
  const patches = await hashTree(config.repoRoot, [QEMU_PATCH_DIR]);
  const srcKey = hashInputs({ pin: pinKey(pin), flags, GLUE_VERSION, patches });
  const hwHash = await hashTree(config.repoRoot, ["qemu/hw"]);
  const stage = VARIANTS[variant].stage;
  const entry = await cached(config.cacheDir, stage, { srcKey, hwHash }, async (out, logs) => {
    await ensureHostPackages(["qemu"], join(logs, "host-packages.log"));
    await withWorkTree(
      config.cacheDir,
      "qemu-work",
      srcKey,
      (work) => prepareTree(config, work, flags),
      async (work) => {
        await syncModels(config, work);
        const log = join(work, "build.log");
        progress(stage, `compiling (ninja, log: ${log})`);
        const t0 = performance.now();
        await exec(["ninja", "-C", join(work, "build"), "qemu-system-x86_64"], { logPath: log });
        progress(stage, `compiled in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
        await Deno.copyFile(
          join(work, "build", "qemu-system-x86_64"),
          join(out, "qemu-system-x86_64"),
        );
        await Deno.chmod(join(out, "qemu-system-x86_64"), 0o755);
      },
    );
  });
  return {
    binary: join(entry.dir, "qemu-system-x86_64"),
    firmware: QEMU_FIRMWARE_DIRS,
    version: pin.version,
  };
}

/** Extract the pinned source with Debian's patches, add our glue, configure with `flags`. */
async function prepareTree(config: Config, work: string, flags: string[]): Promise<void> {
  const pins = await readPins(config);
  const files = await fetchSource(config, pins.sources.qemu);
  // dpkg-source wants the .dsc and its files side by side.
  const dl = join(work, "dl");
  await Deno.mkdir(dl);
  for (const [name, path] of Object.entries(files)) await Deno.symlink(path, join(dl, name));
  const dsc = join(dl, Object.keys(files).find((n) => n.endsWith(".dsc"))!);
  const log = join(work, "prepare.log");
  progress("qemu", `extracting ${pins.sources.qemu.version} (dpkg-source -x)`);
  await exec(["dpkg-source", "--no-check", "-x", dsc, join(work, "src")], { logPath: log });
  await applyCnuasPatches(config, join(work, "src"), log);
  await addCnuasGlue(join(work, "src"));
  await Deno.mkdir(join(work, "build"));
  progress("qemu", `configuring (log: ${log})`);
  await exec(["../src/configure", ...flags], {
    cwd: join(work, "build"),
    logPath: log,
  });
}

/**
 * Our changes to QEMU outside `hw/cnuas/`, one patch a file, applied in
 * name order after Debian's (docs/architecture.md, "Decisions").
 */
export const QEMU_PATCH_DIR = "qemu/patches";

/** The patch files of {@link QEMU_PATCH_DIR}, in the order they apply. */
export async function cnuasPatches(repoRoot: string): Promise<string[]> {
  const names: string[] = [];
  try {
    for await (const e of Deno.readDir(join(repoRoot, QEMU_PATCH_DIR))) {
      if (e.isFile && e.name.endsWith(".patch")) names.push(e.name);
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  return names.sort().map((n) => join(repoRoot, QEMU_PATCH_DIR, n));
}

/** The command that applies patch file `patch` to the tree `src` (fails if it does not apply). */
export function patchCommand(src: string, patch: string): string[] {
  return ["patch", "-p1", "--forward", "--batch", "-d", src, "-i", patch];
}

/** Apply {@link cnuasPatches} to the extracted tree `src`. */
async function applyCnuasPatches(config: Config, src: string, log: string): Promise<void> {
  for (const p of await cnuasPatches(config.repoRoot)) {
    progress("qemu", `applying ${p.slice(config.repoRoot.length + 1)}`);
    await exec(patchCommand(src, p), { logPath: log });
  }
}

/**
 * Hook `hw/cnuas/` into an extracted QEMU tree's meson and Kconfig. An empty
 * qemu/hw still has to configure: stand-in glue that adds nothing until
 * `syncModels` copies the models in.
 */
export async function addCnuasGlue(src: string): Promise<void> {
  await Deno.mkdir(join(src, "hw", "cnuas"), { recursive: true });
  await Deno.writeTextFile(join(src, "hw", "meson.build"), "subdir('cnuas')\n", { append: true });
  await Deno.writeTextFile(join(src, "hw", "Kconfig"), "source cnuas/Kconfig\n", { append: true });
  await Deno.writeTextFile(join(src, "hw", "cnuas", "meson.build"), "");
  await Deno.writeTextFile(join(src, "hw", "cnuas", "Kconfig"), "");
}

/**
 * Copy `qemu/hw/*` into the tree's `hw/cnuas/`, touching only changed files so
 * ninja recompiles only them; when the set of files changes, meson.build is
 * touched so meson re-reads which models exist.
 */
export async function syncModels(config: Config, work: string): Promise<void> {
  const from = join(config.repoRoot, "qemu", "hw");
  const to = join(work, "src", "hw", "cnuas");
  const wanted = new Map<string, Uint8Array>();
  try {
    for await (const e of Deno.readDir(from)) {
      if (e.isFile && !e.name.startsWith(".")) {
        wanted.set(e.name, await Deno.readFile(join(from, e.name)));
      }
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  if (!wanted.has("meson.build")) wanted.set("meson.build", new Uint8Array());
  if (!wanted.has("Kconfig")) wanted.set("Kconfig", new Uint8Array());
  let setChanged = false;
  for await (const e of Deno.readDir(to)) {
    if (e.isFile && !wanted.has(e.name)) {
      await Deno.remove(join(to, e.name));
      setChanged = true;
    }
  }
  for (const [name, data] of wanted) {
    const dest = join(to, name);
    const old = await Deno.readFile(dest).catch(() => undefined);
    if (old === undefined) setChanged = true;
    if (old === undefined || !bytesEqual(old, data)) await Deno.writeFile(dest, data);
  }
  if (setChanged) {
    const now = new Date();
    await Deno.utime(join(to, "meson.build"), now, now);
  }
}
