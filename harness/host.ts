/**
 * Host packages: installed with apt only when missing; without root or apt,
 * a message that names the packages and stops.
 */
import { exec } from "./exec.ts";
import { progress } from "./progress.ts";

/** Debian packages the host needs, by what needs them. */
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
    "flex",
    "bison",
    "libglib2.0-dev",
    "libpixman-1-dev",
    "libslirp-dev",
    "libfdt-dev",
    "zlib1g-dev",
    "seabios",
    "ipxe-qemu",
    "qemu-system-data",
  ],
  switch: ["gcc", "make", "libc6-dev"],
};

/** Raised when packages are missing and cannot be installed here. */
export class HostSetupError extends Error {
  override name = "HostSetupError";
}

/** Packages from `wanted` that dpkg does not report as installed. */
export async function missingPackages(wanted: string[]): Promise<string[]> {
  const r = await exec(["dpkg-query", "-W", "-f", "${Package} ${db:Status-Status}\\n", ...wanted], {
    allowFail: true,
  });
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
 * Make sure every package of the given groups is installed; runs
 * `apt-get update` before the first install (a fresh machine's lists are empty).
 */
export async function ensureHostPackages(groups: string[], logPath: string): Promise<void> {
  const wanted = groups.flatMap((g) => HOST_PACKAGES[g] ?? []);
  const missing = await missingPackages(wanted);
  if (missing.length === 0) return;
  if (!isRoot()) {
    throw new HostSetupError(
      `missing host packages: ${missing.join(" ")}. Run as root, or install them with: ` +
        `sudo apt-get install -y ${missing.join(" ")}`,
    );
  }
  try {
    await exec(["which", "apt-get"]);
  } catch {
    throw new HostSetupError(
      `missing host packages: ${missing.join(" ")}; this host has no apt-get — install them ` +
        `with its package manager`,
    );
  }
  progress("setup", `installing host packages: ${missing.join(" ")}`);
  const env = { DEBIAN_FRONTEND: "noninteractive" };
  await exec(["apt-get", "update"], { env, logPath });
  await exec(["apt-get", "install", "-y", "--no-install-recommends", ...missing], { env, logPath });
}
