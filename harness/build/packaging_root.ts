/**
 * The packaging root: the build root with Debian's packaging tools
 * (debhelper, dh-dkms, dkms, lintian) installed with apt — as an overlay
 * layer over the cached guest root, not a copy of it and not in it. Adding
 * the tools to the root itself would change the guest image every row
 * boots; the layer costs ~200 MB once, and every step that uses it runs in
 * a throwaway overlay of its own, so the layer is never written either.
 */
import { join } from "node:path";
import { cached, removeTree } from "../cache.ts";
import type { Config } from "../config.ts";
import type { ExecResult } from "../exec.ts";
import { progress } from "../progress.ts";
import { aptInstallLines, type ChrootOptions, inChroot } from "./chroot.ts";
import { buildGuestRoot, type GuestRoot } from "./guest_root.ts";

/** What building, checking and installing the packages needs besides the build root. */
export const PACKAGING_PACKAGES = [
  "build-essential",
  "debhelper",
  "dh-dkms",
  "dkms",
  "dpkg-dev",
  "fakeroot",
  "lintian",
];

/** Bump when the recipe below changes in a way the package list does not show. */
const RECIPE_VERSION = 1;

/** The build root plus the packaging tools' layer. */
export interface PackagingRoot extends GuestRoot {
  /** The layer (an overlay `upper/`) holding the packaging tools. */
  layer: string;
}

/**
 * Build (or find) the packaging tools' layer over the build root.
 * @example
 * ```ts
 * const p = await buildPackagingRoot(defaultConfig());
 * await inPackagingRoot(p, "/tmp/scratch", "dkms --version");
 * ```
 */
export async function buildPackagingRoot(config: Config): Promise<PackagingRoot> {
  const root = await buildGuestRoot(config);
  const entry = await cached(
    config.cacheDir,
    "pkgroot",
    { root: root.key, packages: PACKAGING_PACKAGES, RECIPE_VERSION },
    async (out, logs) => {
      const log = join(logs, "apt.log");
      progress("pkgroot", `installing ${PACKAGING_PACKAGES.join(" ")} in a layer (log: ${log})`);
      await inChroot(root.root, aptInstallLines(PACKAGING_PACKAGES).join("\n"), {
        logPath: log,
        overlay: { dir: out },
      });
      await removeTree(join(out, "work"));
      await removeTree(join(out, "merged"));
    },
  );
  return { ...root, key: entry.key, layer: join(entry.dir, "upper") };
}

/**
 * Run a script in the packaging root. Its writes land in `scratch/upper`
 * (created if absent; the caller removes `scratch`), so installing packages
 * there leaves the cached trees as they were.
 */
export function inPackagingRoot(
  p: PackagingRoot,
  scratch: string,
  script: string,
  opts: Omit<ChrootOptions, "overlay"> = {},
): Promise<ExecResult> {
  return inChroot(p.root, script, { ...opts, overlay: { dir: scratch, layers: [p.layer] } });
}
