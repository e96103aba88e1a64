/**
 * Versions read from the sources themselves: each module's MODULE_VERSION
 * and libcnuasdev's `VERSION` (drivers/lib/Makefile). The packages take
 * their versions from here, and a unit test holds compat.json's constants
 * (`MODULE_VERSIONS`, `LIBRARY_VERSIONS`) to the same reading, so a bump in
 * a driver reaches both or fails a test.
 */
import { join } from "node:path";
import type { ModuleName } from "../matrix/row.ts";

/** The directory of each module's sources (its `<name>_main.c`, its Kbuild). */
export const MODULE_SOURCE_DIRS: Record<ModuleName, string> = {
  cnuas_net: "drivers/nic",
  cnuas_ib: "drivers/nic",
  cnuasgpu: "drivers/gpu",
  cnuasgpu_host: "drivers/gpu",
};

/** `#define NAME "x"` of `name` in a C text, or undefined. */
export function cDefine(text: string, name: string): string | undefined {
  return new RegExp(`^#define\\s+${name}\\s+"([^"]+)"`, "m").exec(text)?.[1];
}

/**
 * A module's MODULE_VERSION: the string literal in `<name>_main.c`, or the
 * macro it names, defined there or in `<name>.h`. Throws naming the file
 * when there is none.
 */
export async function readModuleVersion(repoRoot: string, name: ModuleName): Promise<string> {
  const dir = MODULE_SOURCE_DIRS[name];
  const main = await Deno.readTextFile(join(repoRoot, dir, `${name}_main.c`));
  const arg = /^MODULE_VERSION\((.+)\);/m.exec(main)?.[1];
  if (!arg) throw new Error(`${name}: no MODULE_VERSION in ${dir}/${name}_main.c`);
  if (arg.startsWith('"')) return arg.slice(1, -1);
  const header = await Deno.readTextFile(join(repoRoot, dir, `${name}.h`)).catch(() => "");
  const version = cDefine(`${main}\n${header}`, arg);
  if (!version) throw new Error(`${name}: MODULE_VERSION(${arg}) names no #define with a string`);
  return version;
}

/** libcnuasdev's release: `VERSION := x.y.z` of drivers/lib/Makefile (the `.so.x.y.z`). */
export async function readLibraryVersion(repoRoot: string): Promise<string> {
  const text = await Deno.readTextFile(join(repoRoot, "drivers/lib/Makefile"));
  const version = /^VERSION\s*:=\s*(\S+)$/m.exec(text)?.[1];
  if (!version) throw new Error("drivers/lib/Makefile sets no VERSION");
  return version;
}
