/**
 * Loading our modules the way an installed machine does: they come from
 * their Debian packages (DKMS installs them under
 * `/lib/modules/<kernel>/updates/dkms/`, docs/packages.md) and `modprobe`
 * finds them by name; the PCI ones are already loaded at boot by udev.
 * Nothing here names a `.ko` path.
 */
import { shq } from "./shell.ts";

/** Module parameters as `modprobe NAME key=value ...` takes them. */
export type ModuleParams = Record<string, string | number>;

/**
 * The shell line that unloads `name` if it is loaded. Callers that unload
 * what udev may still be loading (cnuas_ib on cnuas_net's auxiliary
 * device, cnuasgpu at boot) run `udevadm settle` before it.
 */
export function rmmodIfLoaded(name: string): string {
  return `if grep -q '^${name} ' /proc/modules; then rmmod ${name}; fi`;
}

/**
 * Shell lines that leave `name` loaded with `params`: a module already
 * loaded with every parameter as asked (read back from
 * `/sys/module/<name>/parameters/`) stays; one loaded otherwise is removed
 * with `rmmod` (not `modprobe -r`, which would also unload what it depends
 * on, cnuas_net under cnuas_ib) and loaded again with `modprobe`. Exits 3
 * when either fails.
 */
export function modprobeLines(name: string, params: ModuleParams = {}): string[] {
  const args = Object.entries(params).map(([k, v]) => `${k}=${v}`);
  const differs = Object.entries(params).map(([k, v]) =>
    `[ "$(cat /sys/module/${name}/parameters/${k} 2>/dev/null)" != ${shq(String(v))} ]`
  );
  const lines: string[] = [];
  if (differs.length) {
    lines.push(
      `if grep -q '^${name} ' /proc/modules && { ${differs.join(" || ")}; }; then ` +
        `rmmod ${name} || exit 3; fi`,
    );
  }
  lines.push(`modprobe ${[name, ...args.map(shq)].join(" ")} || exit 3`);
  return lines;
}
