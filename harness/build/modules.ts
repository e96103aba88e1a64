/**
 * Kernel modules and guest programs, built in the build root (the guest root
 * as a chroot) against exactly the guest kernel's headers and the guest's
 * libibverbs. Sources are bind-mounted in for the step; the root tree is
 * never written.
 */
import { join } from "node:path";
import { cached, exists, hashTree } from "../cache.ts";
import type { Config } from "../config.ts";
import { exec } from "../exec.ts";
import { progress } from "../progress.ts";
import { inChroot } from "./chroot.ts";
import { buildGuestRoot } from "./guest_root.ts";

/** Driver directories that hold a Kbuild file when their module exists. */
export const MODULE_DIRS = ["drivers/nic", "drivers/gpu"];

/** Directories of guest-side C programs (each .c → one binary). */
export const PROGRAM_DIRS = ["drivers/test", "drivers/examples"];

/** Build every module whose directory has a Kbuild; returns the directory of the .ko files. */
export async function buildModules(config: Config): Promise<string> {
  const root = await buildGuestRoot(config);
  const src = await hashTree(config.repoRoot, MODULE_DIRS);
  const entry = await cached(
    config.cacheDir,
    "modules",
    { root: root.key, src },
    async (out, logs) => {
      const log = join(logs, "kbuild.log");
      const work = join(out, "src");
      await Deno.mkdir(work);
      for (const d of MODULE_DIRS) {
        if (!await exists(join(config.repoRoot, d, "Kbuild"))) continue;
        await exec(["cp", "-a", join(config.repoRoot, d), join(work, d.split("/").pop()!)]);
      }
      for await (const e of Deno.readDir(work)) {
        progress("modules", `kbuild ${e.name} against ${root.kernelRelease} (log: ${log})`);
        await inChroot(
          root.root,
          `make -C /lib/modules/${root.kernelRelease}/build M=/mnt/cnuas/${e.name} W=1 modules`,
          { logPath: log, binds: [{ host: work, inRoot: "/mnt/cnuas" }] },
        );
        await exec(["sh", "-c", `cp ${join(work, e.name)}/*.ko ${out}/`], { logPath: log });
      }
      await exec(["rm", "-rf", work]);
    },
  );
  return entry.dir;
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
