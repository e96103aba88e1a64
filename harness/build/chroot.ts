/**
 * Running commands inside a root tree. Every chroot step runs in its own
 * mount namespace (`unshare --mount --propagation private`) with /proc, /sys
 * and /dev mounted there, so the mounts vanish with the process even when it
 * is killed and never leak into the host's namespace. A step may run in an
 * overlay of the root instead, so that what it installs lands in a layer of
 * its own and the cached root tree is never written.
 */
import { exec, type ExecResult, shq } from "../exec.ts";

/** Options of `inChroot`. */
export interface ChrootOptions {
  logPath?: string;
  env?: Record<string, string>;
  allowFail?: boolean;
  /** Host directories bind-mounted into the root for this step (mount point must exist). */
  binds?: { host: string; inRoot: string }[];
  /** Run in an overlay of the root: its writes go to `overlay.dir/upper`, never to the root. */
  overlay?: Overlay;
}

/**
 * The script lines that install `packages` with apt inside a root: no daemon
 * may start inside the chroot while they install (policy-rc.d refuses every
 * start), and apt's downloaded archives are dropped afterwards.
 */
export function aptInstallLines(packages: readonly string[]): string[] {
  return [
    "printf '#!/bin/sh\\nexit 101\\n' > /usr/sbin/policy-rc.d",
    "chmod 755 /usr/sbin/policy-rc.d",
    "apt-get update",
    `apt-get install -y --no-install-recommends ${packages.join(" ")}`,
    "apt-get clean",
    "rm -f /usr/sbin/policy-rc.d",
  ];
}

/**
 * An overlay mount for one chroot step: `dir/upper` (created if absent)
 * receives every write, over `layers` (read-only, lowest first) over the
 * root. `dir/work` and `dir/merged` are overlayfs's scratch directory and the
 * mount point; the caller removes them (or all of `dir`) when done.
 */
export interface Overlay {
  /** Directory holding `upper/`, `work/` and `merged/`; on the same file system as the layers. */
  dir: string;
  /** Earlier steps' `upper/` directories to stack over the root, lowest first. */
  layers?: string[];
}

/** The shell lines that mount `overlay` over `root`; returns them and the mount point. */
function overlayMount(root: string, overlay: Overlay): { lines: string[]; mountPoint: string } {
  const lower = [...(overlay.layers ?? [])].reverse().concat(root);
  const bad = [...lower, overlay.dir].find((p) => /[:,]/.test(p));
  // overlayfs splits its options on ',' and lowerdir on ':'
  if (bad) throw new Error(`an overlay path may not contain ':' or ',': ${bad}`);
  const d = (name: string) => shq(`${overlay.dir}/${name}`);
  return {
    lines: [
      `mkdir -p ${d("upper")} ${d("work")} ${d("merged")}`,
      `mount -t overlay overlay -o ${
        shq(
          `lowerdir=${lower.join(":")},upperdir=${overlay.dir}/upper,workdir=${overlay.dir}/work`,
        )
      } ${d("merged")}`,
    ],
    mountPoint: `${overlay.dir}/merged`,
  };
}

/**
 * Run a shell script as root inside `root`.
 * @example
 * ```ts
 * await inChroot("/var/cache/cnuas-hil/rootfs/<key>/root", "uname -r");
 * ```
 */
export function inChroot(
  root: string,
  script: string,
  opts: ChrootOptions = {},
): Promise<ExecResult> {
  const ov = opts.overlay ? overlayMount(root, opts.overlay) : undefined;
  const q = shq(ov?.mountPoint ?? root);
  const outer = [
    "set -e",
    ...(ov?.lines ?? []),
    `mount -t proc proc ${q}/proc`,
    `mount -t sysfs sys ${q}/sys`,
    `mount --rbind /dev ${q}/dev`,
    ...(opts.binds ?? []).map((b) =>
      `mkdir -p ${q}${shq(b.inRoot)} && mount --bind ${shq(b.host)} ${q}${shq(b.inRoot)}`
    ),
    `exec chroot ${q} /bin/sh -ec ${shq(script)}`,
  ].join("\n");
  return exec(["unshare", "--mount", "--propagation", "private", "sh", "-c", outer], {
    logPath: opts.logPath,
    allowFail: opts.allowFail,
    env: {
      DEBIAN_FRONTEND: "noninteractive",
      LC_ALL: "C.UTF-8",
      HOME: "/root",
      ...opts.env,
    },
  });
}
