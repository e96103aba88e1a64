/**
 * Kernel modules and guest programs, built in the build root (the guest root
 * as a chroot) against exactly the guest kernel's headers and the guest's
 * libibverbs. Sources are bind-mounted in for the step; the root tree is
 * never written.
 */
import { join } from "node:path";
import { cached, exists, hashTree, removeTree, withWorkTree } from "../cache.ts";
import type { Config } from "../config.ts";
import { exec } from "../exec.ts";
import { progress } from "../progress.ts";
import { inChroot } from "./chroot.ts";
import { buildGuestRoot } from "./guest_root.ts";
import { syncTree } from "./sync_tree.ts";

/** Driver directories that hold a Kbuild file when their module exists. */
export const MODULE_DIRS = ["drivers/nic", "drivers/gpu"];

/** Directories of guest-side C programs (each .c → one binary). */
export const PROGRAM_DIRS = ["drivers/test", "drivers/examples"];

/**
 * Build every module whose directory has a Kbuild; returns the directory of
 * the .ko files. Kbuild runs in a persistent tree per guest root
 * (`<cache>/modules-work/<root key>/`, kept in step with the sources by
 * content: sync_tree.ts), so an edit to one file recompiles that file and
 * relinks its module — the developer's loop (`matrix --dev-modules`) waits
 * seconds, not the whole W=1 build.
 */
export async function buildModules(config: Config): Promise<string> {
  const root = await buildGuestRoot(config);
  const src = await hashTree(config.repoRoot, MODULE_DIRS);
  const entry = await cached(
    config.cacheDir,
    "modules",
    { root: root.key, src },
    async (out, logs) => {
      const log = join(logs, "kbuild.log");
      await withWorkTree(
        config.cacheDir,
        "modules-work",
        root.key,
        async () => {},
        async (work) => {
          for (const d of MODULE_DIRS) {
            const name = d.split("/").pop()!;
            if (!await exists(join(config.repoRoot, d, "Kbuild"))) {
              await removeTree(join(work, name));
              continue;
            }
            const changed = await syncTree(
              join(config.repoRoot, d),
              join(work, name),
              isModuleSource,
            );
            progress(
              "modules",
              `kbuild ${name} against ${root.kernelRelease} (${changed.length} source files ` +
                `changed; log: ${log})`,
            );
            await inChroot(
              root.root,
              `make -C /lib/modules/${root.kernelRelease}/build M=/mnt/cnuas/${name} W=1 modules`,
              { logPath: log, binds: [{ host: work, inRoot: "/mnt/cnuas" }] },
            );
            // Only what this build made: the persistent tree may still hold a
            // module Kbuild no longer lists.
            for (const ko of await builtModules(join(work, name))) {
              await Deno.copyFile(join(work, name, ko), join(out, ko));
            }
          }
        },
      );
    },
  );
  return entry.dir;
}

/** The `.ko` files Kbuild's `modules.order` in `dir` lists (paths relative to `dir`). */
export async function builtModules(dir: string): Promise<string[]> {
  const order = await Deno.readTextFile(join(dir, "modules.order"));
  return moduleOrderKos(order);
}

/** `modules.order` lines (`name.o` or `name.ko`, maybe with a directory) as `name.ko` files. */
export function moduleOrderKos(order: string): string[] {
  return order.split("\n").map((l) => l.trim()).filter(Boolean).map((l) =>
    l.split("/").pop()!.replace(/\.o$/, ".ko")
  );
}

/**
 * Whether a file of a module build tree is a source (synced from the repo)
 * rather than something Kbuild wrote beside it (objects, .cmd files, the
 * module, Module.symvers, ...).
 */
export function isModuleSource(rel: string): boolean {
  const base = rel.split("/").pop()!;
  if (base.startsWith(".")) return false;
  if (/\.(o|ko|mod|mod\.c|a|order|symvers|cmd|d|tmp)$/.test(base)) return false;
  return base !== "Module.symvers" && base !== "modules.order";
}

/** Build every guest program (`drivers/test/*.c`, `drivers/examples/*.c`); returns their directory. */
export async function buildGuestPrograms(config: Config): Promise<string> {
  const root = await buildGuestRoot(config);
  const src = await hashTree(config.repoRoot, [
    ...PROGRAM_DIRS,
    "drivers/gpu/uapi",
    "drivers/nic/uapi",
  ]);
  const entry = await cached(
    config.cacheDir,
    "guestprogs",
    { root: root.key, src },
    async (out, logs) => {
      const log = join(logs, "cc.log");
      const work = join(out, "src");
      await exec(["mkdir", "-p", work]);
      await exec(["cp", "-a", join(config.repoRoot, "drivers"), work]);
      const cmds: string[] = [];
      for (const d of PROGRAM_DIRS) {
        try {
          for await (const e of Deno.readDir(join(config.repoRoot, d))) {
            if (!e.isFile || !e.name.endsWith(".c")) continue;
            const name = e.name.slice(0, -2);
            cmds.push(
              `gcc -O2 -g -Wall -Wextra -Werror -I/mnt/cnuas/drivers/gpu/uapi -I/mnt/cnuas/drivers/nic/uapi ` +
                `-o /mnt/cnuas/bin/${name} /mnt/cnuas/${d}/${e.name} -libverbs -lrdmacm -lpthread`,
            );
          }
        } catch { /* directory absent */ }
      }
      await Deno.mkdir(join(work, "bin"));
      if (cmds.length) {
        progress("guestprogs", `compiling ${cmds.length} programs (log: ${log})`);
        await inChroot(root.root, cmds.join("\n"), {
          logPath: log,
          binds: [{ host: work, inRoot: "/mnt/cnuas" }],
        });
      }
      await exec(["sh", "-c", `cp -a ${work}/bin/. ${out}/ && rm -rf ${work}`]);
    },
  );
  return entry.dir;
}
