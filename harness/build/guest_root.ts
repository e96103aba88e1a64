/**
 * Guest root stage: `debootstrap --variant=minbase trixie`, then the guest's
 * tools and the build packages installed with apt inside it. The same tree
 * is the build root (a chroot whose kernel headers, compiler and libibverbs
 * match the guest exactly) and the source of the guest image.
 */
import { join } from "node:path";
import { cached } from "../cache.ts";
import type { Config } from "../config.ts";
import { exec } from "../exec.ts";
import { ensureHostPackages } from "../host.ts";
import { readPins } from "../pins.ts";
import { progress } from "../progress.ts";
import { aptInstallLines, inChroot } from "./chroot.ts";

/** The unmodified tools the matrix runs, plus what boots the guest. */
export const GUEST_PACKAGES = [
  "linux-image-amd64",
  "initramfs-tools",
  "udev",
  "kmod",
  "openssh-server",
  "iproute2",
  "iputils-ping",
  "ethtool",
  "pciutils",
  "procps",
  "netcat-openbsd",
  "rdma-core",
  "ibverbs-utils",
  "ibverbs-providers",
  "infiniband-diags",
  "perftest",
  "rdmacm-utils",
  "python3-pyverbs",
  "strace",
  // the module packages are DKMS packages: dkms builds them at install and
  // answers `dkms status` (docs/packages.md)
  "dkms",
];

/** What building modules, the provider and guest programs needs. */
export const BUILD_PACKAGES = [
  "linux-headers-amd64",
  "gcc",
  "libc6-dev",
  "make",
  "cmake",
  "ninja-build",
  "pkg-config",
  "libnl-3-dev",
  "libnl-route-3-dev",
  "libudev-dev",
  "libibverbs-dev",
  "librdmacm-dev",
  "python3",
];

/** Bump when the recipe below changes in a way the package lists do not show. */
const RECIPE_VERSION = 1;

/** The built root tree. */
export interface GuestRoot {
  /** Directory of the root tree. */
  root: string;
  /** Cache key of the tree (feeds downstream keys). */
  key: string;
  /** `uname -r` of the installed guest kernel. */
  kernelRelease: string;
}

/**
 * Build (or find) the guest/build root tree.
 */
export async function buildGuestRoot(config: Config): Promise<GuestRoot> {
  const pins = await readPins(config);
  const inputs = {
    suite: pins.guest.suite,
    variant: pins.guest.variant,
    guest: GUEST_PACKAGES,
    build: BUILD_PACKAGES,
    RECIPE_VERSION,
  };
  const entry = await cached(config.cacheDir, "rootfs", inputs, async (out, logs) => {
    await ensureHostPackages(["guest"], join(logs, "host-packages.log"));
    const root = join(out, "root");
    const log = join(logs, "debootstrap.log");
    progress("rootfs", `debootstrap ${pins.guest.suite} (log: ${log})`);
    const t0 = performance.now();
    await debootstrap(pins.guest.suite, pins.guest.variant, root, config.mirror, log);
    progress("rootfs", `debootstrap done in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    const aptLog = join(logs, "apt.log");
    progress("rootfs", `installing guest tools and build packages (log: ${aptLog})`);
    await inChroot(root, aptInstallLines([...GUEST_PACKAGES, ...BUILD_PACKAGES]).join("\n"), {
      logPath: aptLog,
    });
    progress("rootfs", `packages installed in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  });
  const root = join(entry.dir, "root");
  return { root, key: entry.key, kernelRelease: await kernelReleaseOf(root) };
}

/** The kernel release installed in a root tree (from /lib/modules). */
export async function kernelReleaseOf(root: string): Promise<string> {
  const releases: string[] = [];
  for await (const e of Deno.readDir(join(root, "lib", "modules"))) {
    if (e.isDirectory) releases.push(e.name);
  }
  if (releases.length !== 1) {
    throw new Error(`expected one kernel in ${root}/lib/modules, found: ${releases.join(", ")}`);
  }
  return releases[0];
}

/**
 * `debootstrap --variant=<variant> <suite> <root> <mirror>` in a private mount
 * namespace, so the /proc and /sys it mounts inside the root never show in
 * the host's.
 */
export async function debootstrap(
  suite: string,
  variant: string,
  root: string,
  mirror: string,
  logPath: string,
): Promise<void> {
  await exec([
    "unshare",
    "--mount",
    "--propagation",
    "private",
    "debootstrap",
    `--variant=${variant}`,
    suite,
    root,
    mirror,
  ], { logPath });
}
