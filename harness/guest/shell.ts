/**
 * Running shell commands in a guest: the one quoting function and the one
 * `sh` (run, fail on a non-zero exit, return stdout) that rows, benches and
 * the guest helpers share.
 *
 * `shq` itself lives in harness/exec.ts, the bottom layer, because the host
 * (build/chroot.ts) and the SSH transport (vm/ssh.ts) quote for `sh` too and
 * should not depend on guest helpers; it is re-exported here so guest-side
 * code imports both from this file.
 *
 * @example
 * ```ts
 * const out = await sh(guest, `ethtool -S ${shq(iface)}`);
 * ```
 */
import { RowFailure } from "../matrix/row.ts";
import type { Guest } from "../vm/types.ts";

import { shq } from "../exec.ts";

export { shq };

/** Options of {@link sh}. */
export interface ShOptions {
  /** Kill the command after this many seconds. Default 60. */
  timeoutSec?: number;
  /**
   * The error thrown when the command exits non-zero; RowFailure by default,
   * so a failing command fails the row rather than erroring it. Benches that
   * report their own error kind pass it here.
   */
  error?: new (message: string) => Error;
}

/**
 * Run `cmd` in guest `g` and return its stdout; a non-zero exit throws
 * (see {@link ShOptions.error}) naming the guest, the command, the exit code
 * and the tail of stderr. The check is made here rather than through
 * `RunOptions.check`, which only the matrix runner's recording guest honours.
 */
export async function sh(g: Guest, cmd: string, opts: ShOptions = {}): Promise<string> {
  const r = await g.run(cmd, { timeoutSec: opts.timeoutSec ?? 60 });
  if (r.code !== 0) {
    const Err = opts.error ?? RowFailure;
    throw new Err(`${g.name}: '${cmd}' exited ${r.code}: ${r.stderr.trim().slice(-400)}`);
  }
  return r.stdout;
}

/**
 * Shell that starts `cmd` in the background, killed after `timeoutSec`; its
 * output goes to `<tag>.out` and, once it ends, its exit status to
 * `<tag>.rc` (what {@link collectBackground} waits for).
 */
export function inBackground(tag: string, cmd: string, timeoutSec: number): string {
  return `rm -f ${tag}.*; (timeout ${timeoutSec} sh -c ${shq(cmd)} >${tag}.out 2>&1; ` +
    `echo $? >${tag}.rc) >/dev/null 2>&1 &`;
}

/**
 * Shell that waits until something listens on every TCP port of `ports`
 * (IPv4 or IPv6), looking every 0.1 s up to `tries` times: exit 0 once all
 * do — or, with `doneTag`, as soon as `<doneTag>.rc` exists (the background
 * command ended before listening: its status says why) — exit 1 when the
 * tries run out. It reads /proc/net/tcp and tcp6 with the shell's own
 * `read` (state 0A is LISTEN): under TCG a look costs 7 ms this way and
 * 180 ms as `ss -ltn | grep`, and every pair of tools waits this way.
 */
export function waitListening(ports: number[], tries: number, doneTag?: string): string {
  for (const p of ports) {
    if (!Number.isInteger(p) || p < 1 || p > 65535) throw new RangeError(`TCP port ${p}`);
  }
  const hex = ports.map((p) => p.toString(16).toUpperCase().padStart(4, "0"));
  const done = doneTag === undefined ? "" : `[ -f ${doneTag}.rc ] && exit 0; `;
  return `for i in $(seq ${tries}); do l=' '; for t in /proc/net/tcp /proc/net/tcp6; do ` +
    `[ -r $t ] || continue; while read -r _ a _ s _; do [ "$s" = 0A ] && l="$l\${a##*:} "; ` +
    `done <$t; done; n=0; for p in ${hex.join(" ")}; do case "$l" in *" $p "*) n=$((n+1));; ` +
    `esac; done; [ $n = ${ports.length} ] && exit 0; ${done}sleep 0.1; done; exit 1`;
}

/** Wait (up to `timeoutSec`) for a background command's exit; its output and status. */
export async function collectBackground(
  g: Guest,
  tag: string,
  timeoutSec: number,
): Promise<{ code: number; out: string }> {
  const r = await g.run(
    `for i in $(seq ${timeoutSec * 10}); do [ -f ${tag}.rc ] && break; sleep 0.1; done; ` +
      `cat ${tag}.out; exit $(cat ${tag}.rc 2>/dev/null || echo 124)`,
    { timeoutSec: timeoutSec + 30 },
  );
  return { code: r.code, out: r.stdout };
}
