import { join } from "node:path";
import { REPO_ROOT } from "../../harness/config.ts";
import { howtoPages, runPage } from "../../harness/howto/run.ts";
import { type FabricMode, type Row, RowFailure } from "../../harness/matrix/row.ts";
import { rdmaGpuPairNeeds } from "../../harness/matrix/needs.ts";

/**
 * The HowTo (docs/howto/) executed in two guests, page by page, as a reader
 * types it. Each guest has a vnic on an eth-mode switch and a cnuasgpu
 * function; the image has our packages installed (modules, provider,
 * libcnuasdev) and udev loaded the drivers at boot; a page's `<!-- howto: fabric=MODE -->`
 * marker restarts the switch in that mode (the vnics reconnect), as
 * starting a subnet manager does on a real fabric.
 */
export const row: Row = {
  id: "docs",
  title: "the HowTo pages run as written: every runnable block, its output as the page shows",
  needs: (() => {
    const needs = rdmaGpuPairNeeds("eth");
    needs.builds.push("cnuasdev");
    return needs;
  })(),
  sharesCores:
    "the HowTo's expected outputs hold no figure a slower guest could change (wildcards)",
  timeoutSec: 1200,
  modules: ["cnuas_net", "cnuas_ib", "cnuasgpu", "cnuasgpu_host"],
  libraries: ["libcnuasdev"],
  async run(ctx) {
    const guests = new Map(ctx.guests.map((g) => [g.name, g]));
    const dir = join(REPO_ROOT, "docs", "howto");
    let blocks = 0;
    const pages = await howtoPages(dir);
    let mode: FabricMode | undefined = ctx.fabric?.mode;
    const setFabric = async (want: FabricMode) => {
      if (want === mode) return;
      if (!ctx.fabric) throw new RowFailure("the docs row has no fabric");
      await ctx.fabric.restart("SIGTERM", want);
      mode = want;
    };
    for (const page of pages) {
      blocks += await runPage(
        ctx,
        `docs/howto/${page}`,
        await Deno.readTextFile(join(dir, page)),
        guests,
        { setFabric },
      );
    }
    ctx.measure("pages", pages.length, "pages");
    ctx.measure("blocks", blocks, "blocks");
  },
};
