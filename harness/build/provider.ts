/**
 * Provider stage: the libibverbs provider `cnuas` is built inside rdma-core
 * 56.1's own tree (providers use libibverbs' private ABI, whose headers are
 * in no -dev package), in the build root so it matches the guest's
 * libibverbs exactly. The configured tree is kept per rdma-core pin in
 * `<cache>/rdma-work/<key>`; only the provider's files change between builds.
 */
import { HilError } from "../errors.ts";
import { join } from "node:path";
import { cached, exists, hashInputs, hashTree, removeTree, withWorkTree } from "../cache.ts";
import type { Config } from "../config.ts";
import { exec } from "../exec.ts";
import { fetchSource, pinKey, readPins } from "../pins.ts";
import { progress } from "../progress.ts";
import { inChroot } from "./chroot.ts";
import { buildGuestRoot } from "./guest_root.ts";

/** Where the provider's files go in the guest. */
export const PROVIDER_GUEST_PATHS = {
  library: "/usr/lib/x86_64-linux-gnu/libibverbs/libcnuas-rdmav34.so",
  driverFile: "/etc/libibverbs.d/cnuas.driver",
};

/** The provider sources are not written yet. */
export class NoProviderError extends HilError {}

/** Bump when the tree preparation changes. */
const GLUE_VERSION = 1;

/** Bump when the build step below changes (the prepared tree is kept). */
const BUILD_VERSION = 2;

/** Build the provider; returns a directory with libcnuas-rdmav34.so and cnuas.driver. */
export async function buildProvider(config: Config): Promise<string> {
  if (!await exists(join(config.repoRoot, "drivers/provider/CMakeLists.txt"))) {
    throw new NoProviderError("drivers/provider/CMakeLists.txt does not exist yet");
  }
  const root = await buildGuestRoot(config);
  const pin = (await readPins(config)).sources["rdma-core"];
  const treeKey = hashInputs({ pin: pinKey(pin), root: root.key, GLUE_VERSION });
  const src = await hashTree(config.repoRoot, ["drivers/provider", "drivers/nic/uapi"]);
  const entry = await cached(config.cacheDir, "provider", {
    treeKey,
    src,
    BUILD_VERSION,
  }, async (out, logs) => {
    const log = join(logs, "provider.log");
    await withWorkTree(config.cacheDir, "rdma-work", treeKey, async (work) => {
      await Deno.mkdir(join(work, "src"));
      const files = await fetchSource(config, pin);
      progress("provider", `extracting rdma-core ${pin.version}`);
      await exec([
        "tar",
        "-xzf",
        Object.values(files)[0],
        "-C",
        join(work, "src"),
        "--strip-components=1",
      ], {
        logPath: log,
      });
      const top = join(work, "src", "CMakeLists.txt");
      const text = await Deno.readTextFile(top);
      const anchor = "add_subdirectory(providers/rxe)";
      if (!text.includes(anchor)) throw new Error(`${top} has no '${anchor}' to add ours after`);
      await Deno.writeTextFile(
        top,
        text.replace(anchor, `${anchor}\nadd_subdirectory(providers/cnuas)`),
      );
      await Deno.mkdir(join(work, "build"));
    }, async (work) => {
      // Our sources replace providers/cnuas wholesale; the uapi headers ride along.
      const dest = join(work, "src", "providers", "cnuas");
      await removeTree(dest);
      await exec(["cp", "-a", join(config.repoRoot, "drivers/provider"), dest]);
      if (await exists(join(config.repoRoot, "drivers/nic/uapi"))) {
        await exec(["cp", "-a", join(config.repoRoot, "drivers/nic/uapi"), join(dest, "uapi")]);
      }
      progress("provider", `cmake + ninja in rdma-core's tree (log: ${log})`);
      await inChroot(
        root.root,
        [
          "cd /mnt/rdma/build",
          // No RUNPATH: the build tree's lib/ (cmake's default for in-tree use)
          // does not exist where the library is installed.
          "cmake -GNinja -DNO_MAN_PAGES=1 -DNO_PYVERBS=1 -DCMAKE_BUILD_TYPE=RelWithDebInfo " +
          "-DCMAKE_SKIP_RPATH=ON ../src",
          "ninja cnuas-rdmav34",
        ].join("\n"),
        { logPath: log, binds: [{ host: work, inRoot: "/mnt/rdma" }] },
      );
      await Deno.copyFile(
        join(work, "build", "lib", "libcnuas-rdmav34.so"),
        join(out, "libcnuas-rdmav34.so"),
      );
      await Deno.writeTextFile(join(out, "cnuas.driver"), "driver cnuas\n");
    });
  });
  return entry.dir;
}
