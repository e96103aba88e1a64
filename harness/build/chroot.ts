/**
 * Running commands inside a root tree. Every chroot step runs in its own
 * mount namespace (`unshare --mount --propagation private`) with /proc, /sys
 * and /dev mounted there, so the mounts vanish with the process even when it
 * is killed and never leak into the host's namespace.
 */
import { exec, type ExecResult, shq } from "../exec.ts";

/** Options of `inChroot`. */
export interface ChrootOptions {
  logPath?: string;
  env?: Record<string, string>;
  allowFail?: boolean;
  /** Host directories bind-mounted into the root for this step (mount point must exist). */
  binds?: { host: string; inRoot: string }[];
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
  const q = shq(root);
  const outer = [
    "set -e",
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
