/**
 * Guest image stage: the guest root with our Debian packages installed as a
 * user installs them (`dpkg -i`: DKMS builds the modules for the guest
 * kernel, the provider and libcnuasdev land where Debian puts them), plus
 * the init script, fixed SSH host keys and an authorised key generated for
 * the harness, as an ext4 image made with `mkfs.ext4 -d`; kernel and initrd
 * copied out of the root. The PCI modules autoload at boot through their
 * modaliases (the init coldplugs PCI), cnuas_ib on cnuas_net's auxiliary
 * device. Runs never modify the image (QEMU opens it with `snapshot=on`).
 */
import { basename, dirname, join } from "node:path";
import { cached, entryInputs, finishedEntries, hashTree, markUsed, removeTree } from "../cache.ts";
import type { Config } from "../config.ts";
import { exec } from "../exec.ts";
import { progress } from "../progress.ts";
import { inChroot } from "./chroot.ts";
import { buildGuestRoot } from "./guest_root.ts";
import { buildPackages, DKMS_PACKAGES } from "./packages.ts";

/** Files of a guest image entry. */
export interface GuestImage {
  /** Entry directory. */
  dir: string;
  /** Path of the guest kernel (`vmlinuz`). */
  kernel: string;
  /** Path of the guest initrd (`initrd.img`). */
  initrd: string;
  /** Path of the ext4 root file system image (`rootfs.img`). */
  rootfs: string;
  /** Private key the harness logs in with (root). */
  sshKey: string;
  /** Guest kernel release (`uname -r`). */
  kernelRelease: string;
  /** Cache key of the image. */
  key: string;
}

/** Bump when the recipe below changes. */
const IMAGE_VERSION = 9;

/**
 * Files of the guest's initramfs that replace udev's there (see each file):
 * repository path → where the image installs it.
 */
const INITRAMFS_FILES: Record<string, string> = {
  "harness/build/initramfs/init-top-udev": "etc/initramfs-tools/scripts/init-top/udev",
  "harness/build/initramfs/init-bottom-udev": "etc/initramfs-tools/scripts/init-bottom/udev",
  "harness/build/initramfs/hook-no-udev": "etc/initramfs-tools/hooks/cnuas-no-udev",
};

/**
 * Drivers of the q35 machine's own chipset that no row uses: the AHCI
 * controller (no SATA disk: the root is virtio-blk), the LPC bridge, the
 * SMBus and the TCO watchdog. The PCI coldplug of a cold boot loaded them
 * through their modaliases, ~1 s of a TCG vCPU that `udevadm settle`
 * waited for; blacklisted, udev leaves them out (modprobe by name still
 * loads one).
 */
const UNUSED_CHIPSET_DRIVERS = ["ahci", "lpc_ich", "i2c_i801", "iTCO_wdt"];

/** Where the image keeps no copy of the packages: they are staged here for `dpkg -i` only. */
const STAGED_DEBS = "tmp/cnuas-debs";

/** What an image is made of besides its packages. */
interface ImageBase {
  root: string;
  initHash: string;
  IMAGE_VERSION: number;
}

async function imageBase(config: Config) {
  const groot = await buildGuestRoot(config);
  const initHash = await hashTree(config.repoRoot, [
    "harness/build/guest-init.sh",
    ...Object.keys(INITRAMFS_FILES),
  ]);
  return { groot, base: { root: groot.key, initHash, IMAGE_VERSION } satisfies ImageBase };
}

/** A finished image entry as its cache marker records it. */
export interface ImageEntryRecord {
  key: string;
  inputs: unknown;
  /** Last use (the marker's mtime), ms since the epoch. */
  usedAt: number;
}

/**
 * The most recently used entry made from `base` (the same guest root, init
 * and recipe), whatever packages it holds; undefined when there is none.
 */
export function pickImageForDevModules(
  entries: ImageEntryRecord[],
  base: ImageBase,
): ImageEntryRecord | undefined {
  const same = (i: unknown) => {
    const r = i as Partial<ImageBase> | null;
    return r?.root === base.root && r.initHash === base.initHash &&
      r.IMAGE_VERSION === base.IMAGE_VERSION;
  };
  return entries.filter((e) => same(e.inputs)).sort((a, b) => b.usedAt - a.usedAt)[0];
}

/**
 * The image for `matrix --dev-modules`: the newest one already built from
 * this guest root, even if its packages hold older drivers — the run puts
 * the working tree's modules over them in each guest — so a driver edit
 * costs no package, image or saved-state rebuild. Built as usual when the
 * cache has none.
 */
export async function imageForDevModules(config: Config): Promise<GuestImage> {
  const { groot, base } = await imageBase(config);
  const entries: ImageEntryRecord[] = [];
  for (const e of await finishedEntries(config.cacheDir, "image")) {
    const inputs = await entryInputs(e.dir).catch(() => undefined);
    entries.push({ key: e.key, inputs, usedAt: e.usedAt });
  }
  const pick = pickImageForDevModules(entries, base);
  if (!pick) return await buildImage(config);
  const dir = join(config.cacheDir, "image", pick.key);
  await markUsed(dir);
  progress("image", `--dev-modules: image ${pick.key.slice(0, 12)} (its packages may be older)`);
  return imageFiles(dir, pick.key, groot.kernelRelease);
}

function imageFiles(dir: string, key: string, kernelRelease: string): GuestImage {
  return {
    dir,
    kernel: join(dir, "vmlinuz"),
    initrd: join(dir, "initrd.img"),
    rootfs: join(dir, "rootfs.img"),
    sshKey: join(dir, "id_ed25519"),
    kernelRelease,
    key,
  };
}

/** Build (or find) the guest image. */
export async function buildImage(config: Config): Promise<GuestImage> {
  const { groot, base } = await imageBase(config);
  const debs = (await buildPackages(config)).flatMap((p) => p.debs);
  const entry = await cached(config.cacheDir, "image", {
    ...base,
    // each package's cache entry is named by its inputs' hash
    packages: debs.map((d) => `${basename(dirname(d))}/${basename(d)}`),
  }, async (out, logs) => {
    const log = join(logs, "image.log");
    const staging = join(out, "staging");
    progress("image", `staging a copy of the guest root (log: ${log})`);
    await exec(["cp", "-a", "--reflink=auto", groot.root, staging], { logPath: log });
    try {
      await Deno.copyFile(
        join(config.repoRoot, "harness/build/guest-init.sh"),
        join(staging, "sbin/cnuas-init"),
      );
      await Deno.chmod(join(staging, "sbin/cnuas-init"), 0o755);
      await installPackages(staging, debs, groot.kernelRelease, log);
      await pruneKernelModules(staging, groot.kernelRelease, log);
      await decompressKernelModules(staging, groot.kernelRelease, log);
      // No package lists or apt caches, as in a container image: the guests have no network to
      // fetch from, and apt parsed the lists' 88 MB again on every call, 8 s under TCG (three
      // calls in the packages row). apt-get install ./file.deb and apt-get remove need none.
      await inChroot(staging, "rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin", {
        logPath: log,
      });
      // Host keys generated once into the image: ssh-keygen -A at boot costs
      // seconds under TCG. These guests are throwaway test machines.
      await exec(["ssh-keygen", "-A", "-f", staging], { logPath: log });
      await exec([
        "ssh-keygen",
        "-q",
        "-t",
        "ed25519",
        "-N",
        "",
        "-C",
        "cnuas-hil",
        "-f",
        join(out, "id_ed25519"),
      ], { logPath: log });
      await Deno.mkdir(join(staging, "root/.ssh"), { recursive: true, mode: 0o700 });
      await Deno.copyFile(join(out, "id_ed25519.pub"), join(staging, "root/.ssh/authorized_keys"));
      // No PAM: its session stack (pam_motd's update-motd.d scripts, limits,
      // env, loginuid) ran on every connection, ~130 ms of an idle TCG guest
      // per connect, and more right after a restore; the harness's sessions
      // need none of it (limits.d sets only core dumps, /etc/environment and
      // /etc/default/locale are empty or absent).
      await Deno.writeTextFile(
        join(staging, "etc/ssh/sshd_config.d/cnuas.conf"),
        "PermitRootLogin prohibit-password\nUseDNS no\nPasswordAuthentication no\nUsePAM no\n",
      );
      // Root's login shell is dash: the harness's every command is the login
      // shell's `-c` (vm/ssh.ts), and bash took ~30 ms more to start under TCG.
      const passwd = join(staging, "etc/passwd");
      const users = await Deno.readTextFile(passwd);
      const rootBash = /^root:([^:\n]*:){5}\/bin\/bash$/m;
      if (!rootBash.test(users)) throw new Error(`${passwd}: no root entry with /bin/bash`);
      await Deno.writeTextFile(
        passwd,
        users.replace(rootBash, (line) => line.replace(/\/bin\/bash$/, "/bin/sh")),
      );
      await Deno.writeTextFile(join(staging, "etc/fstab"), "/dev/vda / ext4 rw 0 1\n");
      await Deno.writeTextFile(
        join(staging, "etc/modprobe.d/cnuas-unused-chipset.conf"),
        UNUSED_CHIPSET_DRIVERS.map((m) => `blacklist ${m}\n`).join(""),
      );
      // A small initramfs: only what mounts a virtio-blk ext4 root, no udev.
      // Debian's MODULES=most image spends seconds unpacking and probing under TCG.
      for (const [from, to] of Object.entries(INITRAMFS_FILES)) {
        await Deno.mkdir(dirname(join(staging, to)), { recursive: true });
        await Deno.copyFile(join(config.repoRoot, from), join(staging, to));
        await Deno.chmod(join(staging, to), 0o755);
      }
      await Deno.writeTextFile(
        join(staging, "etc/initramfs-tools/conf.d/cnuas.conf"),
        "MODULES=list\nCOMPRESS=gzip\n",
      );
      await Deno.writeTextFile(
        join(staging, "etc/initramfs-tools/modules"),
        "virtio_pci\nvirtio_blk\next4\ncrc32c_generic\n",
      );
      progress("image", "update-initramfs (MODULES=list)");
      await inChroot(staging, `update-initramfs -c -k ${groot.kernelRelease}`, { logPath: log });
      const boot = join(staging, "boot");
      for await (const e of Deno.readDir(boot)) {
        if (e.name.startsWith("vmlinuz-")) {
          await Deno.copyFile(join(boot, e.name), join(out, "vmlinuz"));
        }
        if (e.name.startsWith("initrd.img-")) {
          await Deno.copyFile(join(boot, e.name), join(out, "initrd.img"));
        }
      }
      const du = await exec(["du", "-sm", staging]);
      const sizeMb = Number(du.stdout.split(/\s/)[0]) + 768;
      progress("image", `mkfs.ext4 -d (${sizeMb} MiB)`);
      await exec([
        "mkfs.ext4",
        "-q",
        "-F",
        "-L",
        "cnuasroot",
        "-d",
        staging,
        join(out, "rootfs.img"),
        `${sizeMb}M`,
      ], { logPath: log });
    } finally {
      await removeTree(staging);
    }
    await Deno.writeTextFile(
      join(out, "manifest.json"),
      JSON.stringify({ kernelRelease: groot.kernelRelease }, null, 2),
    );
  });
  return imageFiles(entry.dir, entry.key, groot.kernelRelease);
}

/**
 * `dpkg -i` every built package in the staged root, as a user would; the
 * DKMS packages' postinst builds and installs the modules for the guest
 * kernel (natively here, not under TCG). Fails unless `dkms status` then
 * says each DKMS package is installed for that kernel.
 */
async function installPackages(
  staging: string,
  debs: string[],
  kernelRelease: string,
  log: string,
): Promise<void> {
  const dir = join(staging, STAGED_DEBS);
  await Deno.mkdir(dir, { recursive: true });
  for (const d of debs) await Deno.copyFile(d, join(dir, basename(d)));
  progress(
    "image",
    `dpkg -i ${debs.map((d) => basename(d)).join(" ")} (DKMS builds for ${kernelRelease})`,
  );
  await inChroot(
    staging,
    [
      "set -e",
      `dpkg -i /${STAGED_DEBS}/*.deb`,
      `rm -rf /${STAGED_DEBS}`,
      `dkms status -k ${kernelRelease}`,
      `test "$(dkms status -k ${kernelRelease} | grep -c ': installed')" -eq ${DKMS_PACKAGES.length}`,
    ].join("\n"),
    { logPath: log },
  );
}

/**
 * Module trees (under `/lib/modules/<release>/`) of hardware no guest has:
 * sound, cameras and TV, GPUs, Wi-Fi and Bluetooth, industrial sensors and
 * staging drivers, physical Ethernet NICs and HCAs, USB and what hangs off
 * it, CAN, ISDN, ATM, NFC, flash, Thunderbolt, FireWire, 1-Wire, hwmon,
 * LEDs, framebuffers, SD cards, joysticks and touchscreens. The guests are
 * q35 machines with virtio disks and NICs, the emulated PCI devices and
 * nothing else (vm/qemu_args.ts). Left out, depmod — which reads every
 * module, and DKMS runs it at each install and removal — reads 1,736 of
 * the 4,234 (with ours): 6.7 s cold under TCG instead of ~18 s
 * (docs/packages.md, "The image").
 */
export const PRUNED_MODULE_TREES = [
  "kernel/sound",
  "kernel/drivers/media",
  "kernel/drivers/gpu",
  "kernel/drivers/net/wireless",
  "kernel/net/wireless",
  "kernel/net/mac80211",
  "kernel/drivers/bluetooth",
  "kernel/net/bluetooth",
  "kernel/drivers/iio",
  "kernel/drivers/staging",
  "kernel/drivers/comedi",
  "kernel/drivers/net/ethernet",
  "kernel/drivers/infiniband/hw",
  "kernel/drivers/usb",
  "kernel/drivers/net/usb",
  "kernel/drivers/hid",
  "kernel/drivers/net/can",
  "kernel/net/can",
  "kernel/drivers/isdn",
  "kernel/drivers/atm",
  "kernel/net/atm",
  "kernel/drivers/nfc",
  "kernel/net/nfc",
  "kernel/drivers/mtd",
  "kernel/drivers/thunderbolt",
  "kernel/drivers/firewire",
  "kernel/drivers/w1",
  "kernel/drivers/hwmon",
  "kernel/drivers/leds",
  "kernel/drivers/video",
  "kernel/drivers/mmc",
  "kernel/drivers/net/wwan",
  "kernel/drivers/net/ieee802154",
  "kernel/net/ieee802154",
  "kernel/drivers/input/joystick",
  "kernel/drivers/input/touchscreen",
  "kernel/drivers/input/tablet",
];

/**
 * Modules the rows, the docs and the lab load by name (ours, and the
 * kernel's they use; udmabuf and vmgenid are built into Debian's kernel
 * today): pruning one of them, or one they depend on, fails the image
 * build instead of a row. Soft dependencies and request_module() are not
 * in modules.dep; none of these has one into a pruned tree.
 */
export const KEPT_MODULES = [
  "cnuas_net",
  "cnuas_ib",
  "cnuasgpu",
  "cnuasgpu_host",
  "udmabuf",
  "vmgenid",
  "ib_core",
  "ib_uverbs",
  "ib_cm",
  "iw_cm",
  "rdma_cm",
  "rdma_ucm",
  "ib_ipoib",
  "rdma_rxe",
  "virtio_net",
  "virtio_rng",
  "virtio_blk",
];

/** A module's name as modprobe takes it, from its path in modules.dep. */
function moduleName(path: string): string {
  return basename(path).replace(/\.ko(\.\w+)?$/, "").replaceAll("-", "_");
}

/**
 * The modules of `modulesDep` (depmod's modules.dep: `PATH: DEP...`, each
 * line naming all of a module's dependencies) that go: those under one of
 * `trees`, and every module depending on one of those, so no module kept
 * needs one that went. Throws when one of `kept` would go. Exported for its
 * unit test.
 */
export function modulesToPrune(
  modulesDep: string,
  trees: readonly string[],
  kept: readonly string[] = KEPT_MODULES,
): string[] {
  const pruned = (m: string) => trees.some((t) => m === t || m.startsWith(`${t}/`));
  const out: string[] = [];
  for (const line of modulesDep.split("\n")) {
    const [field, deps = ""] = line.split(":");
    const path = field.trim();
    if (!path) continue;
    if (pruned(path) || deps.trim().split(/\s+/).some(pruned)) out.push(path);
  }
  const lost = out.map(moduleName).filter((n) => kept.includes(n));
  if (lost.length) throw new Error(`pruning the guest's modules would remove ${lost.join(", ")}`);
  return out;
}

/**
 * Remove the modules of PRUNED_MODULE_TREES and those depending on them;
 * refuses when one of KEPT_MODULES would go. decompressKernelModules
 * rebuilds modules.dep after.
 */
async function pruneKernelModules(
  staging: string,
  kernelRelease: string,
  log: string,
): Promise<void> {
  const dir = join(staging, "lib/modules", kernelRelease);
  const gone = modulesToPrune(
    await Deno.readTextFile(join(dir, "modules.dep")),
    PRUNED_MODULE_TREES,
  );
  progress("image", `leaving out ${gone.length} modules of hardware no guest has`);
  for (const m of gone) await Deno.remove(join(dir, m));
  await Deno.writeTextFile(log, `\npruned ${gone.length} modules:\n${gone.join("\n")}\n`, {
    append: true,
  });
}

/**
 * Store the kernel package's modules uncompressed (`kernel/`; DKMS's own
 * under `updates/dkms` stay as DKMS installed them, so its removal finds
 * the files it recorded) and rebuild modules.dep for them. Under TCG xz is
 * where depmod spends its time: it reads every module, 27 s of xz for the
 * 4,234 of Debian's kernel (before pruneKernelModules), and DKMS runs it on
 * each install and removal; every modprobe of ib_core and friends
 * decompressed too.
 */
async function decompressKernelModules(
  staging: string,
  kernelRelease: string,
  log: string,
): Promise<void> {
  const tree = join(staging, "lib/modules", kernelRelease, "kernel");
  progress("image", `decompressing the kernel's modules (${tree})`);
  // xz removes what it decompressed by itself, zstd only when told
  const tools: [string, string[]][] = [[".ko.xz", ["xz", "-d"]], [".ko.zst", [
    "zstd",
    "-d",
    "-q",
    "--rm",
  ]]];
  for (const [suffix, tool] of tools) {
    await exec(["find", tree, "-name", `*${suffix}`, "-exec", ...tool, "{}", "+"], {
      logPath: log,
    });
  }
  const left = await exec(["find", tree, "-name", "*.ko.*"]);
  if (left.stdout.trim()) {
    throw new Error(`${tree}: modules left compressed: ${left.stdout.slice(0, 400)}`);
  }
  await inChroot(staging, `depmod -a ${kernelRelease}`, { logPath: log });
}
