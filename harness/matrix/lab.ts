/**
 * The strategy layer: takes a row's needs to a state — builds present, a
 * fabric running, guests booted with our artifacts installed — and tears it
 * all down again. Rows never boot or build anything themselves.
 */
import { HilError } from "../errors.ts";
import { basename, join } from "node:path";
import { buildCnuasdev, buildCnuasdevHost, CNUASDEV_LAYOUT } from "../build/cnuasdev.ts";
import { buildImage, type GuestImage, imageForDevModules } from "../build/image.ts";
import { buildGuestPrograms, buildModules } from "../build/modules.ts";
import { buildPackages } from "../build/packages.ts";
import { buildProvider } from "../build/provider.ts";
import { buildQemu, type QemuBuild } from "../build/qemu.ts";
import { type Accel, type Config, timeoutScale } from "../config.ts";
import { exec } from "../exec.ts";
import { Fabric } from "../fabric/switch.ts";
import { progress } from "../progress.ts";
import { type AccelChoice, chooseAccel } from "../vm/accel.ts";
import { hostNow } from "../vm/clock.ts";
import { GuestVm } from "../vm/guest.ts";
import { freePort } from "../vm/ports.ts";
import { gpuProps, type GuestDevice, type GuestSpec, vnicMac } from "../vm/qemu_args.ts";
import { COLDPLUG_OUR_DEVICES, UNLOAD_OUR_DRIVERS } from "../vm/restore_identity.ts";
import { ensureSaved, filesToPush, restoredSpec } from "../vm/snapshot.ts";
import { tarArchive, type TarFile } from "../vm/tar.ts";
import { GUEST_PATHS } from "../vm/types.ts";
import type { GuestStart } from "../report/schema.ts";
import { dmesgViolations } from "./dmesg_guard.ts";
import { coldReason } from "./guest_start.ts";
import type { BuildOutputs, BuildTarget, FabricHandle, FabricMode, Row } from "./row.ts";

/** Bringing a row's state up failed (a build, the fabric, a boot). */
export class LabError extends HilError {}

/** Seconds a guest gets from `cont` to SSH under KVM; scaled for TCG. */
export const BOOT_TIMEOUT_SEC = 30;

/**
 * Starts a fabric of the given mode from the built daemon `binary`, its log
 * in the row's directory `dir`; `close()` returns its log and captures.
 */
export type FabricStarter = (
  binary: string,
  mode: FabricMode,
  dir: string,
) => Promise<FabricHandle & { close(): Promise<string[]> }>;

/**
 * The real starter: a cnuas-switch daemon. The lab builds the binary (build
 * target `switch`) and hands it over, so the fabric module builds nothing.
 */
export const fabricStarter: FabricStarter = async (binary, mode, dir): Promise<Fabric> => {
  await Deno.mkdir(dir, { recursive: true });
  return await Fabric.start({ binary, mode, logPath: join(dir, `switch-${mode}.log`) });
};

/** What `bringUp` hands back. */
export interface RowSetup {
  /** The booted guests, SSH answering and artifacts installed. */
  guests: GuestVm[];
  /** The row's fabric, when it asked for one. */
  fabric?: FabricHandle;
  /** Paths of the builds the row (and its guests) needed. */
  builds: BuildOutputs;
  /** How each guest started, in guest order. */
  starts: GuestStart[];
  /**
   * Seconds the bring-up waited for the cache: builds and the saved guest
   * state the row needed (near 0 when all were cached; a first run's cost,
   * not the row's own).
   */
  buildWaitSec: number;
  /** Tear down; returns artifact paths produced (captures, logs). */
  close(): Promise<string[]>;
}

/** Shared across the rows of one run: memoised builds and the accelerator choice. */
export class Lab {
  /** Run configuration. */
  readonly config: Config;
  /** The accelerator guests run under, once the first guest row chose it. */
  accel?: Accel;
  /** Why that accelerator was chosen (for the report's provenance). */
  accelReason?: string;
  /** The QEMU build, once a row needed it. */
  qemu?: QemuBuild;
  /** The guest image, once a row needed it. */
  image?: GuestImage;
  /** Extra kernel command line words for every guest (fault injection in tests). */
  bootAppend: string[] = [];
  /**
   * Seconds a guest gets to answer SSH; default BOOT_TIMEOUT_SEC scaled by the
   * accelerator and, beyond two guests booting together, by their number.
   */
  bootTimeoutSec?: number;
  #builds = new Map<BuildTarget, Promise<Partial<BuildOutputs>>>();
  #buildFailures = new Map<BuildTarget, { row: string; firstLine: string }>();
  #fabricStarter?: FabricStarter;
  #accelChoice?: Promise<AccelChoice>;

  /** Without a fabric starter, rows that need a fabric fail with LabError. */
  constructor(config: Config, fabricStarter?: FabricStarter) {
    this.config = config;
    this.#fabricStarter = fabricStarter;
  }

  /**
   * Build (or find) what the targets need; each target once per run. A
   * failed build is told in full once, to the row that first needed it;
   * every later row gets one line pointing there.
   */
  async ensureBuilds(targets: BuildTarget[], forRow = "build"): Promise<BuildOutputs> {
    const out: BuildOutputs = {};
    for (const t of targets) {
      const failed = this.#buildFailures.get(t);
      if (failed) {
        throw new LabError(
          `needs build ${t}, which failed in row ${failed.row}: ${failed.firstLine}`,
        );
      }
      if (!this.#builds.has(t)) this.#builds.set(t, this.#build(t));
      try {
        Object.assign(out, await this.#builds.get(t));
      } catch (e) {
        const message = (e as Error).message;
        const firstLine = message.split("\n")[0];
        // Stages under two targets (the root under image and modules) fail
        // with the same first line: said in full the first time only.
        const earlier = [...this.#buildFailures.values()].find((f) => f.firstLine === firstLine);
        this.#buildFailures.set(t, { row: earlier?.row ?? forRow, firstLine });
        if (earlier) {
          throw new LabError(
            `needs build ${t}, whose stage failed in row ${earlier.row}: ${firstLine}`,
          );
        }
        throw new LabError(`build ${t} failed: ${message}`);
      }
    }
    return out;
  }

  async #build(t: BuildTarget): Promise<Partial<BuildOutputs>> {
    switch (t) {
      case "qemu": {
        this.qemu = await buildQemu(this.config);
        return { qemu: this.qemu.binary, qemuFirmware: this.qemu.firmware };
      }
      case "qemu-asan": {
        const q = await buildQemu(this.config, "asan");
        return { qemuAsan: q.binary, qemuFirmware: q.firmware };
      }
      case "image": {
        this.image = this.config.devModules
          ? await imageForDevModules(this.config)
          : await buildImage(this.config);
        return { image: this.image.dir };
      }
      case "modules":
        return { modules: await buildModules(this.config) };
      case "guestprogs":
        return { guestPrograms: await buildGuestPrograms(this.config) };
      case "switch": {
        const { buildSwitch } = await import("../build/switch.ts");
        return { switch: await buildSwitch(this.config) };
      }
      case "provider":
        return { provider: await buildProvider(this.config) };
      case "cnuasdev":
        return { cnuasdev: await buildCnuasdev(this.config) };
      case "cnuasdev-host":
        return { cnuasdevHost: await buildCnuasdevHost(this.config) };
      case "packages":
        return { packages: (await buildPackages(this.config)).flatMap((p) => p.debs) };
    }
  }

  /** The accelerator for guests (probed once per run in auto mode). */
  async resolveAccel(): Promise<Accel> {
    if (!this.#accelChoice) {
      const q = this.qemu!;
      const img = this.image!;
      this.#accelChoice = chooseAccel(this.config, {
        qemu: q.binary,
        firmware: q.firmware,
        kernel: img.kernel,
        initrd: img.initrd,
        rootfs: img.rootfs,
        imageKey: img.key,
      });
      const c = await this.#accelChoice;
      this.accel = c.accel;
      this.accelReason = c.reason;
      progress("accel", `${c.accel.toUpperCase()}: ${c.reason}`);
    }
    return (await this.#accelChoice).accel;
  }

  /** Bring a row's world up. */
  async bringUp(row: Row, dir: string, log: (l: string) => void): Promise<RowSetup> {
    const n = row.needs.guests;
    const targets = new Set<BuildTarget>(row.needs.builds);
    if (n > 0) ["qemu", "image"].forEach((t) => targets.add(t as BuildTarget));
    if (row.needs.fabric) targets.add("switch");
    // --dev-modules: the modules build (a few seconds of Kbuild) runs while the guests restore;
    // it is awaited before their install, and a failure there fails the row like any build's.
    const devModulesBuild = n > 0 && this.config.devModules
      ? this.ensureBuilds(["modules"], row.id)
      : undefined;
    devModulesBuild?.catch(() => {}); // awaited below; not unhandled if the guests fail first
    let buildWaitMs = 0;
    const waited = async <T>(p: Promise<T>): Promise<T> => {
      const t = performance.now();
      try {
        return await p;
      } finally {
        buildWaitMs += performance.now() - t;
      }
    };
    const builds = await waited(this.ensureBuilds([...targets], row.id));
    const closers: (() => Promise<string[]>)[] = [];
    const close = async () => {
      const arts: string[] = [];
      for (const c of closers.reverse()) arts.push(...await c().catch(() => []));
      return arts;
    };
    try {
      let fabric: (FabricHandle & { close(): Promise<string[]> }) | undefined;
      if (row.needs.fabric) {
        if (!this.#fabricStarter) throw new LabError("no fabric implementation is wired in");
        if (!builds.switch) throw new LabError("the switch build gave no binary");
        fabric = await this.#fabricStarter(builds.switch, row.needs.fabric, dir);
        closers.push(() => fabric!.close());
        log(`fabric ${row.needs.fabric} at ${fabric.socketPath}`);
      }
      const guests: GuestVm[] = [];
      const starts: GuestStart[] = [];
      if (n > 0) {
        const accel = await this.resolveAccel();
        const img = this.image!;
        const q = this.qemu!;
        // The guests boot at once and share the host's cores: beyond two
        // (what the budget was measured with) each gets proportionally longer.
        const bootTimeout = this.bootTimeoutSec ??
          BOOT_TIMEOUT_SEC * timeoutScale(accel) * Math.max(1, n / 2);
        const virtioPort = freePort();
        const specs = Array.from({ length: n }, (_, i) => {
          const name = `g${i}`;
          const devices: GuestDevice[] = [];
          for (let v = 0; v < (row.needs.devices?.vnic ?? 0); v++) {
            devices.push({ kind: "vnic", mac: vnicMac(i, v), socketPath: fabric?.socketPath });
          }
          if (row.needs.devices?.virtioSocketNet) {
            devices.push({
              kind: "virtio-socket",
              mode: i === 0 ? "listen" : "connect",
              port: virtioPort,
              mac: vnicMac(i, 0x80),
            });
          }
          for (let k = 0; k < (row.needs.devices?.gpu ?? 0); k++) {
            devices.push({
              kind: "gpu",
              ...gpuProps(i, k),
              linkSocket: row.needs.fabric === "link" ? fabric?.socketPath : undefined,
            });
          }
          return {
            name,
            qemu: q.binary,
            firmware: q.firmware,
            kernel: img.kernel,
            initrd: img.initrd,
            rootfs: img.rootfs,
            accel,
            memMb: 1024,
            cpus: 1,
            sshPort: freePort(),
            qmpSocket: join(dir, `${name}.qmp`),
            identitySocket: join(dir, `${name}.identity`),
            consoleLog: join(dir, `${name}.console.log`),
            devices,
            append: this.bootAppend,
          };
        });
        const key = await Deno.readTextFile(img.sshKey);
        // a state not yet saved is made here (a boot and a save): waiting for the cache
        const plan = await waited(this.#startPlan(row, specs, key, bootTimeout, log));
        progress(
          row.id,
          `${plan.cold ? "booting" : "restoring"} ${n} guest${n > 1 ? "s" : ""} (${accel})`,
        );
        for (const s of plan.specs) {
          const vm = await GuestVm.start(s, {
            sshKeyPath: img.sshKey,
            bootTimeoutSec: bootTimeout,
            logDir: dir,
          });
          guests.push(vm);
          closers.push(async () => {
            await vm.close();
            return [vm.qemuLog];
          });
        }
        await Promise.all(
          guests.map(async (g, i) => {
            // A restored guest's agent answers while SSH is still being made.
            // --dev-modules: #installDevModules runs the coldplug, with the working tree's modules
            const [, identity] = await Promise.all([
              g.waitForSsh(specs[i].sshPort, key, bootTimeout),
              g.startedFrom === "snapshot" ? g.applyIdentity(!this.config.devModules) : undefined,
            ]);
            const readySec = g.sinceSpawnSec();
            starts[i] = {
              name: g.name,
              start: g.startedFrom,
              startToSshSec: Number(readySec.toFixed(2)),
              ...(plan.cold ? { coldReason: plan.cold } : {}),
            };
            const identitySec = identity ? readySec - (hostNow() - identity.doneAt) / 1000 : NaN;
            const coldplugged = this.config.devModules ? "" : ", our devices' coldplug";
            log(
              identity
                ? `${g.name}: restored; state loaded and running ${g.resumeSec.toFixed(1)} s, ` +
                  `SSH answered ${g.startToSshSec.toFixed(1)} s and identity (clock, CRNG, ` +
                  `hostname, machine-id${coldplugged}) done ` +
                  `${identitySec.toFixed(1)} s after QEMU started; its clock was ` +
                  `${identity.clock.offMs.toFixed(0)} ms off the host's (read in ` +
                  `${identity.clock.rttMs.toFixed(0)} ms) and is corrected`
                : `${g.name}: booted cold (${plan.cold}); SSH answered ` +
                  `${g.bootToSshSec.toFixed(1)} s after cont`,
            );
          }),
        );
        if (devModulesBuild) {
          const built = await waited(devModulesBuild);
          builds.modules = built.modules;
          const mods = await devModules(built.modules!);
          await Promise.all(guests.map((g) => this.#installDevModules(g, mods, log)));
        }
        const files = await guestFiles(builds);
        await Promise.all(guests.map((g) => this.#install(g, files, plan.held)));
      }
      return { guests, fabric, builds, starts, close, buildWaitSec: buildWaitMs / 1000 };
    } catch (e) {
      await close();
      throw e;
    }
  }

  /**
   * The specs the row's guests start with: restored from the saved state
   * for their configuration (made first when the cache has none), or as
   * they are with the reason they boot cold. A save that fails leaves the
   * row booting cold, the failure in its reason.
   */
  async #startPlan(
    row: Row,
    specs: GuestSpec[],
    sshKey: string,
    bootTimeoutSec: number,
    log: (l: string) => void,
  ): Promise<{ specs: GuestSpec[]; cold?: string; held?: ReadonlyMap<string, string> }> {
    const cold = coldReason(row, this.config, specs[0]);
    if (cold) return { specs, cold };
    try {
      // Every state holds the test programs and libcnuasdev's files, whichever row made it
      // (both builds are cached, seconds on a fresh machine): pushed once at the save, not at
      // each restore (~1 s of an idle guest for their 2 MiB).
      const saved = await ensureSaved(specs[0], {
        cacheDir: this.config.cacheDir,
        imageKey: this.image!.key,
        sshKey,
        bootTimeoutSec,
        checkKernelLog: dmesgViolations,
        files: async () => guestFiles(await this.ensureBuilds(["guestprogs", "cnuasdev"], row.id)),
      });
      log(
        `guest state ${saved.key.slice(0, 12)}: ` +
          (saved.saveSec ? `saved now in ${saved.saveSec.toFixed(1)} s` : "from the cache") +
          ` (holding ${saved.files.size} test program and libcnuasdev files)`,
      );
      return { specs: specs.map((s) => restoredSpec(s, saved)), held: saved.files };
    } catch (e) {
      const why = `saving a guest state failed: ${(e as Error).message.split("\n")[0]}`;
      progress(row.id, `${why}; booting cold`);
      return { specs, cold: why };
    }
  }

  /**
   * `--dev-modules`: our drivers out, the working tree's modules in place of
   * the packaged ones in updates/dkms, then the boot's PCI coldplug again, so
   * udev loads them for the guest's devices as it loaded the packaged ones.
   * They go in as DKMS installs its own (debug info stripped, xz, the same
   * file names), so modules.dep still names them; depmod — 2-7 s under TCG,
   * it reads every module of the kernel (docs/packages.md, "The image") —
   * runs only when a module's dependencies, soft dependencies or aliases
   * differ from the packaged one's. Then each installed file, and each of
   * them the coldplug loaded, must carry the srcversion of the working
   * tree's build.
   */
  async #installDevModules(
    g: GuestVm,
    mods: DevModules,
    log: (l: string) => void,
  ): Promise<void> {
    const release = this.image!.kernelRelease;
    const names = mods.files.map((f) => f.path.replace(/\.ko\.xz$/, ""));
    const dir = `/lib/modules/${release}/updates/dkms`;
    // One modinfo per module (each one decompresses the module: ~0.2 s under TCG): what depmod
    // depends on, and the srcversion, which says which build the file is.
    const info = `for m in ${names.join(" ")}; do f=${dir}/$m.ko.xz; ` +
      `if [ -e "$f" ]; then modinfo "$f" | grep -E '^(depends|softdep|alias|srcversion):' | ` +
      `sort | sed "s/^/$m /"; else echo "$m absent"; fi; done`;
    const withoutSrcversion = "grep -v ' srcversion:' || true";
    const report =
      `printf '%s\\n' "$new" | awk '$2 == "srcversion:" { print "file", $1, $3 }' && ` +
      `for m in ${names.join(" ")}; do ` +
      `if [ -e /sys/module/$m/srcversion ]; then ` +
      `echo "loaded $m $(cat /sys/module/$m/srcversion)"; fi; done`;
    const r = await g.run(
      [
        UNLOAD_OUR_DRIVERS,
        `info() { ${info}; }`,
        `old=$(info | ${withoutSrcversion})`,
        `mkdir -p ${dir}`,
        `tar -x --no-same-owner -m -C ${dir}`,
        "new=$(info)",
        `if [ "$old" != "$(printf '%s\\n' "$new" | ${withoutSrcversion})" ]; then ` +
        `echo depmod; depmod -a ${release}; fi`,
        COLDPLUG_OUR_DEVICES,
        report,
      ].join(" && "),
      { stdin: tarArchive(mods.files), timeoutSec: 180 },
    );
    if (r.code !== 0) {
      throw new HilError(`${g.name}: installing the working tree's modules: ${r.stderr.trim()}`);
    }
    const wrong: string[] = [];
    const loaded: string[] = [];
    const installed = new Set<string>();
    for (const line of r.stdout.split("\n")) {
      const m = /^(file|loaded) (\S+) ?(\S*)$/.exec(line.trim());
      if (!m) continue;
      if (m[1] === "loaded") loaded.push(m[2]);
      else installed.add(m[2]);
      if (m[3] !== mods.srcversion.get(m[2])) {
        wrong.push(
          `${m[1]} ${m[2]}: srcversion ${m[3] || "none"}, built ${mods.srcversion.get(m[2])}`,
        );
      }
    }
    wrong.push(...names.filter((n) => !installed.has(n)).map((n) => `file ${n}: not installed`));
    if (wrong.length) {
      throw new HilError(
        `${g.name}: --dev-modules did not take: ${wrong.join("; ")}`,
      );
    }
    log(
      `${g.name}: --dev-modules: ${names.join(", ")} from the working tree ` +
        `(${mods.key}) in ${dir}; loaded by the coldplug with the built srcversion: ` +
        `${loaded.join(", ") || "none"}` +
        (r.stdout.includes("depmod") ? "; depmod ran (dependencies or aliases changed)" : ""),
    );
  }

  /**
   * Give a guest `files`, the test programs and libcnuasdev's files its row
   * needs (small files: SSH beats an image rebuild). A restored guest has those of
   * the state it came from (`held`: path to digest) and gets only what
   * differs, usually nothing; its identity agent already waited for udev. The
   * modules, the provider and libcnuasdev itself are not pushed: the image
   * has them installed from their Debian packages (harness/build/image.ts);
   * with `--dev-modules` the modules come from #installDevModules.
   */
  async #install(
    g: GuestVm,
    files: TarFile[],
    held?: ReadonlyMap<string, string>,
  ): Promise<void> {
    const push = held && g.startedFrom === "snapshot" ? filesToPush(files, held) : files;
    if (push.length) await g.putFiles(push);
    if (g.startedFrom !== "snapshot") {
      await g.run("udevadm settle -t 30 || true", { timeoutSec: 60 });
    }
  }
}

/**
 * The files of the test programs' and libcnuasdev's builds in `builds` (those
 * absent give none), at their absolute guest paths.
 */
async function guestFiles(builds: BuildOutputs): Promise<TarFile[]> {
  const files: TarFile[] = [];
  if (builds.guestPrograms) {
    for await (const e of Deno.readDir(builds.guestPrograms)) {
      if (!e.isFile || e.name.startsWith(".")) continue;
      const data = await Deno.readFile(join(builds.guestPrograms, e.name));
      files.push({ path: `${GUEST_PATHS.bin}/${e.name}`, data, mode: 0o755 });
    }
  }
  if (builds.cnuasdev) files.push(...await cnuasdevFiles(builds.cnuasdev));
  return files;
}

/** A modules build made ready for guests (`--dev-modules`). */
interface DevModules {
  /** `<module>.ko.xz` files as DKMS installs them. */
  files: TarFile[];
  /** Each module's srcversion, from its `.modinfo`. */
  srcversion: Map<string, string>;
  /** The build's cache key, short. */
  key: string;
}

/**
 * The `.ko` files of a modules build as DKMS installs them: debug info
 * stripped (the build's are ~10x larger) and xz-compressed with CRC32 (what
 * the kernel's decompressor takes), named `<module>.ko.xz`; with each
 * module's srcversion, which the guest must then report.
 */
async function devModules(modulesDir: string): Promise<DevModules> {
  const tmp = await Deno.makeTempDir({ prefix: "cnuas-dev-modules-" });
  try {
    const files: TarFile[] = [];
    const srcversion = new Map<string, string>();
    for await (const e of Deno.readDir(modulesDir)) {
      if (!e.isFile || !e.name.endsWith(".ko")) continue;
      const ko = join(modulesDir, e.name);
      const sv = modinfoField(await Deno.readFile(ko), "srcversion");
      if (!sv) throw new HilError(`${ko}: no srcversion in its .modinfo`);
      srcversion.set(e.name.replace(/\.ko$/, ""), sv);
      const out = join(tmp, e.name);
      await exec(["strip", "--strip-debug", "-o", out, ko]);
      await exec(["xz", "--check=crc32", "--lzma2=dict=1MiB", out]);
      files.push({ path: `${e.name}.xz`, data: await Deno.readFile(`${out}.xz`), mode: 0o644 });
    }
    files.sort((a, b) => a.path.localeCompare(b.path));
    return { files, srcversion, key: basename(modulesDir).slice(0, 12) };
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
}

/**
 * A `name=value` string of a kernel module's `.modinfo` section, found in
 * the module's bytes (the section is NUL-separated strings); undefined when
 * absent.
 */
export function modinfoField(ko: Uint8Array, name: string): string | undefined {
  const text = new TextDecoder("latin1").decode(ko);
  const m = new RegExp(`(?:^|\\0)${name}=([^\\0]*)\\0`).exec(text);
  return m?.[1];
}

/**
 * libcnuasdev's test programs for GUEST_PATHS.bin and its example sources for
 * GUEST_PATHS.src; the library itself comes from its packages in the image.
 */
async function cnuasdevFiles(dir: string): Promise<TarFile[]> {
  const files: TarFile[] = [];
  const walk = async (from: string, to: string): Promise<void> => {
    for await (const e of Deno.readDir(from)) {
      const src = join(from, e.name);
      const dst = `${to}/${e.name}`;
      if (e.isDirectory) await walk(src, dst);
      else if (e.isFile) files.push({ path: dst, data: await Deno.readFile(src), mode: 0o644 });
    }
  };
  await walk(join(dir, CNUASDEV_LAYOUT.src), GUEST_PATHS.src);
  for await (const e of Deno.readDir(join(dir, CNUASDEV_LAYOUT.bin))) {
    const data = await Deno.readFile(join(dir, CNUASDEV_LAYOUT.bin, e.name));
    files.push({ path: `${GUEST_PATHS.bin}/${e.name}`, data, mode: 0o755 });
  }
  return files;
}
