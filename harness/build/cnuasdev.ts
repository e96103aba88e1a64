/**
 * libcnuasdev stages (`drivers/lib`), both with the library's own Makefile:
 *
 * - `cnuasdev`: in the build root (the guest's compiler and headers), `make
 *   install` into a staging tree laid out as Debian lays out a library —
 *   `/usr/lib/<multiarch>/libcnuasdev.so.1.0.0` and its links, the `.pc`
 *   beside it under `pkgconfig/`, the header in `/usr/include` — which the
 *   lab copies into each guest; plus the test programs and the example's
 *   source.
 * - `cnuasdev-host`: the same sources with the host's cc, so the Soft-GPU
 *   backend and its no-device smoke run here, without a guest.
 */
import { dirname, join } from "node:path";
import { cached, hashTree } from "../cache.ts";
import type { Config } from "../config.ts";
import { exec } from "../exec.ts";
import { ensureHostPackages } from "../host.ts";
import { progress } from "../progress.ts";
import { inChroot } from "./chroot.ts";
import { buildGuestRoot } from "./guest_root.ts";

/** The uapi headers the library's kernel backends include. */
const UAPI = "drivers/gpu/uapi";

/**
 * What the library's build reads: `drivers/lib` but for an in-tree `make`'s
 * `build/` (which must not change the cache key), and the uapi headers.
 */
export async function cnuasdevSources(repoRoot: string): Promise<string[]> {
  const out = [UAPI];
  for await (const e of Deno.readDir(join(repoRoot, "drivers/lib"))) {
    if (e.name !== "build" && !e.name.startsWith(".")) out.push(`drivers/lib/${e.name}`);
  }
  return out.sort();
}

/** Test programs the Makefile builds beside the library (`drivers/lib/test`). */
export const CNUASDEV_PROGRAMS = [
  "cnuasdev_suite",
  "cnuasdev_hostdev_fake_smoke",
  "cnuasdev_bench",
] as const;

/** Where things are inside a `cnuasdev` entry. */
export const CNUASDEV_LAYOUT = {
  /** The install tree: copy every file and link under it to the same path in a guest. */
  root: "root",
  /** Test programs (and the example, built), linked against the installed library. */
  bin: "bin",
  /** Example sources, for building in a guest with pkg-config. */
  src: "src",
} as const;

/** Bump when the recipe below changes in a way the sources do not show. */
const RECIPE_VERSION = 2;

/**
 * Build libcnuasdev in the build root; returns the entry directory (see
 * `CNUASDEV_LAYOUT`). A compiler error fails the stage with the log's path.
 * @example
 * ```ts
 * const dir = await buildCnuasdev(defaultConfig());
 * // dir/root/usr/lib/x86_64-linux-gnu/libcnuasdev.so.1.0.0, dir/bin/cnuasdev_suite
 * ```
 */
export async function buildCnuasdev(config: Config): Promise<string> {
  const root = await buildGuestRoot(config);
  const sources = await cnuasdevSources(config.repoRoot);
  const src = await hashTree(config.repoRoot, sources);
  const entry = await cached(
    config.cacheDir,
    "cnuasdev",
    { root: root.key, src, RECIPE_VERSION },
    async (out, logs) => {
      const log = join(logs, "make.log");
      const work = join(out, "work");
      for (const d of sources) {
        await exec(["mkdir", "-p", dirname(join(work, d))]);
        await exec(["cp", "-a", join(config.repoRoot, d), join(work, d)]);
      }
      progress("cnuasdev", `make install in the build root (log: ${log})`);
      await inChroot(
        root.root,
        "make -C /mnt/cnuas/drivers/lib O=/mnt/cnuas/build DESTDIR=/mnt/cnuas/root install",
        { logPath: log, binds: [{ host: work, inRoot: "/mnt/cnuas" }] },
      );
      await exec(["mv", join(work, "root"), join(out, CNUASDEV_LAYOUT.root)]);
      await Deno.mkdir(join(out, CNUASDEV_LAYOUT.bin));
      for (const p of [...CNUASDEV_PROGRAMS, "cnuasdev_list"]) {
        await Deno.copyFile(join(work, "build", p), join(out, CNUASDEV_LAYOUT.bin, p));
        await Deno.chmod(join(out, CNUASDEV_LAYOUT.bin, p), 0o755);
      }
      await exec(["cp", "-a", join(work, "drivers/lib/examples"), join(out, CNUASDEV_LAYOUT.src)]);
      await exec(["rm", "-rf", work]);
    },
  );
  return entry.dir;
}

/**
 * Build libcnuasdev and its programs with the host's cc (host packages of
 * group `lib`); returns the build directory: `libcnuasdev.so*`, the
 * programs, run with `LD_LIBRARY_PATH` set to it (see `hostCnuasdevEnv`).
 */
export async function buildCnuasdevHost(config: Config): Promise<string> {
  const src = await hashTree(config.repoRoot, await cnuasdevSources(config.repoRoot));
  const entry = await cached(
    config.cacheDir,
    "cnuasdev-host",
    { src, RECIPE_VERSION },
    async (out, logs) => {
      await ensureHostPackages(["lib"], join(logs, "host-packages.log"));
      await exec(["make", "-C", join(config.repoRoot, "drivers/lib"), `O=${out}`], {
        logPath: join(logs, "make.log"),
      });
      // Objects are not needed once the library is linked.
      await exec(["sh", "-c", `rm -f ${out}/*.o`]);
    },
  );
  return entry.dir;
}

/** The environment a host-built program of `dir` runs with (its library first). */
export function hostCnuasdevEnv(dir: string): Record<string, string> {
  return { LD_LIBRARY_PATH: dir };
}
