import { join } from "node:path";
import { REPO_ROOT } from "../../harness/config.ts";
import { howtoPages, runPage } from "../../harness/howto/run.ts";
import { type Row, RowFailure } from "../../harness/matrix/row.ts";
import { rdmaPairNeeds } from "../../harness/matrix/needs.ts";
import { GUEST_PATHS } from "../../harness/vm/types.ts";

/**
 * Where the modules go: where `cnuas-nic-modules`' DKMS install puts them
 * (docs/packages.md), so `modprobe` finds them as on an installed machine.
 */
const INSTALL_MODULES = [
  "dir=/lib/modules/$(uname -r)/updates/dkms",
  'mkdir -p "$dir"',
  `cp ${GUEST_PATHS.modules}/cnuas_net.ko ${GUEST_PATHS.modules}/cnuas_ib.ko "$dir"/`,
  "depmod -a",
].join("\n");

/** The HowTo (docs/howto/) executed in two guests, page by page, as a reader types it. */
export const row: Row = {
  id: "docs",
  title: "the HowTo pages run as written: every runnable block, its output as the page shows",
  needs: rdmaPairNeeds("eth", "guestprogs"),
  timeoutSec: 1200,
  modules: ["cnuas_net", "cnuas_ib"],
  async run(ctx) {
    const guests = new Map(ctx.guests.map((g) => [g.name, g]));
    // depmod reads every module of the kernel: about a minute per guest under TCG, so both at once
    await ctx.step(
      "the modules where the package installs them, depmod (both guests)",
      async () => {
        await Promise.all(ctx.guests.map(async (g) => {
          const r = await g.run(INSTALL_MODULES, { timeoutSec: 300 });
          if (r.code !== 0) {
            throw new RowFailure(`${g.name}: exit ${r.code}: ${r.stdout}${r.stderr}`);
          }
        }));
      },
    );
    const dir = join(REPO_ROOT, "docs", "howto");
    let blocks = 0;
    const pages = await howtoPages(dir);
    for (const page of pages) {
      blocks += await runPage(
        ctx,
        `docs/howto/${page}`,
        await Deno.readTextFile(join(dir, page)),
        guests,
      );
    }
    ctx.measure("pages", pages.length, "pages");
    ctx.measure("blocks", blocks, "blocks");
  },
};
