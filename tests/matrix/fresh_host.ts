/**
 * Row `fresh-host`: the host package list suffices on a machine that has
 * nothing else. In an overlay of a bare Debian root the harness's own installer
 * puts exactly its host packages; then every host command and firmware file
 * must be there, QEMU's pinned source must configure with our flags and
 * models, and the switch must build (harness/build/fresh_host.ts). At the
 * quick depth the install layer of an earlier run with the same apt plan is
 * reused (checked package by package); deep installs again. A package
 * dropped from the list fails the row with what could not be found
 * (`--without-host-package NAME` shows it).
 */
import { checkFreshHost, FreshHostProblem } from "../../harness/build/fresh_host.ts";
import { type Row, type RowContext, RowFailure } from "../../harness/matrix/row.ts";

async function run(ctx: RowContext): Promise<void> {
  const without = ctx.config.freshHostWithout ?? [];
  if (without.length) ctx.log(`left out of the host package list: ${without.join(" ")}`);
  try {
    await checkFreshHost(ctx.config, {
      logDir: ctx.dir,
      without,
      step: (name, fn) =>
        ctx.step(name, async () => {
          try {
            await fn();
          } catch (e) {
            // A missing package is the finding this row exists for: FAIL, not ERROR.
            if (e instanceof FreshHostProblem) throw new RowFailure(`fresh host: ${e.message}`);
            throw e;
          }
        }),
    });
  } finally {
    for await (const e of Deno.readDir(ctx.dir)) {
      if (e.name.startsWith("fresh-host.")) ctx.artifact(e.name);
    }
  }
}

/** The fresh-host row. */
export const row: Row = {
  id: "fresh-host",
  title: "a bare Debian root with only the host package list configures QEMU and builds the switch",
  needs: { guests: 0, builds: [] },
  background: "it judges installs, configures and builds, no time, and its work is host " +
    "commands (apt, dpkg-source, configure, make)",
  timeoutSec: 1200,
  run,
};
