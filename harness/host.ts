/**
 * Host packages: installed with apt only when missing; without root or apt,
 * a message that names the packages and stops. The same installer runs
 * against a bare Debian root in the `fresh-host` row, so the list below is
 * proven on a machine that has nothing else.
 */
import { UserError } from "./errors.ts";
import { exec, type ExecOptions, type ExecResult } from "./exec.ts";
import { progress } from "./progress.ts";

/**
 * Debian packages the host needs, by what needs them. Firmware: QEMU boots
 * guests with `-kernel` (SeaBIOS's bios-256k.bin, qemu-system-data's
 * linuxboot_dma.bin and kvmvapic.bin); NICs get `romfile=`, so no iPXE ROM.
 */
export const HOST_PACKAGES: Record<string, string[]> = {
  guest: ["debootstrap", "e2fsprogs", "cpio", "xz-utils", "zstd", "openssh-client"],
  qemu: [
    "dpkg-dev",
    "meson",
    "ninja-build",
    "pkg-config",
    "python3",
    "gcc",
    "make",
    "libglib2.0-dev",
    "libpixman-1-dev",
    "libslirp-dev",
    "libfdt-dev",
    "zlib1g-dev",
    "seabios",
    "qemu-system-data",
  ],
  switch: ["gcc", "make", "libc6-dev"],
  /** libcnuasdev's host build (Soft-GPU and its no-device smoke); libc6-dev brings the uapi headers. */
  lib: ["gcc", "make", "libc6-dev"],
  /** The report page's browser test renders pages in headless Chromium (tests/report). */
  report: ["chromium"],
};

/** Every host package of the given groups (all groups by default), each once. */
export function hostPackageList(groups: string[] = Object.keys(HOST_PACKAGES)): string[] {
  return [...new Set(groups.flatMap((g) => HOST_PACKAGES[g] ?? []))];
}

/** Raised when packages are missing and cannot be installed here. */
export class HostSetupError extends UserError {}

/**
 * Where packages are looked up and installed: this machine, or a root tree
 * (the fresh-host check runs the same installer inside a bare Debian root).
 */
export interface PackageHost {
  /** Run a command there. */
  run(argv: string[], opts?: ExecOptions): Promise<ExecResult>;
  /** Whether commands there run as root. */
  root: boolean;
}

/** This machine. */
export const THIS_HOST: PackageHost = {
  run: (argv, opts) => exec(argv, opts),
  get root() {
    return isRoot();
  },
};

/** Packages from `wanted` that dpkg does not report as installed on `on`. */
export async function missingPackages(
  wanted: string[],
  on: PackageHost = THIS_HOST,
): Promise<string[]> {
  const r = await on.run(
    ["dpkg-query", "-W", "-f", "${Package} ${db:Status-Status}\\n", ...wanted],
    { allowFail: true },
  );
  const installed = new Set(
    r.stdout.split("\n").filter((l) => l.endsWith(" installed")).map((l) => l.split(" ")[0]),
  );
  return [...new Set(wanted)].filter((p) => !installed.has(p));
}

/** Whether this process runs as root. */
export function isRoot(): boolean {
  return Deno.uid() === 0;
}

/**
 * Make sure every package of the given groups is installed on this machine;
 * runs `apt-get update` before the first install (a fresh machine's lists
 * are empty).
 */
export function ensureHostPackages(groups: string[], logPath: string): Promise<void> {
  return ensurePackages(hostPackageList(groups), logPath);
}

/**
 * One install at a time per host: rows run beside each other (run.ts) may
 * both find packages missing, and a second apt-get would fail on dpkg's lock.
 */
const installing = new WeakMap<PackageHost, Promise<void>>();

/** Install what of `wanted` is missing on `on` (apt-get update first). */
export function ensurePackages(
  wanted: string[],
  logPath: string,
  on: PackageHost = THIS_HOST,
): Promise<void> {
  const next = (installing.get(on) ?? Promise.resolve()).catch(() => {})
    .then(() => installMissing(wanted, logPath, on));
  installing.set(on, next);
  return next;
}

async function installMissing(
  wanted: string[],
  logPath: string,
  on: PackageHost,
): Promise<void> {
  const missing = await missingPackages(wanted, on);
  if (missing.length === 0) return;
  if (!on.root) {
    throw new HostSetupError(
      `missing host packages: ${missing.join(" ")}. Run as root, or install them with: ` +
        `sudo apt-get install -y ${missing.join(" ")}`,
    );
  }
  if ((await on.run(["sh", "-c", "command -v apt-get"], { allowFail: true })).code !== 0) {
    throw new HostSetupError(
      `missing host packages: ${missing.join(" ")}; this host has no apt-get — install them ` +
        `with its package manager`,
    );
  }
  progress("setup", `installing host packages: ${missing.join(" ")}`);
  await on.run(["apt-get", "update"], { env: APT_ENV, logPath });
  await on.run(aptInstallArgv(missing), { env: APT_ENV, logPath });
}

/** apt-get's environment: no questions. */
export const APT_ENV = { DEBIAN_FRONTEND: "noninteractive" };

/**
 * The apt-get command line the installer installs `packages` with (no
 * recommends); `simulate` adds `-s`: what it would install, nothing done
 * (the fresh-host check keys its install layer on that plan).
 */
export function aptInstallArgv(packages: string[], simulate = false): string[] {
  return [
    "apt-get",
    "install",
    ...(simulate ? ["-s"] : []),
    "-y",
    "--no-install-recommends",
    ...packages,
  ];
}
