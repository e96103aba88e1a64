import { join } from "node:path";
import { REPO_ROOT } from "../../harness/config.ts";
import { howtoPages, runPage } from "../../harness/howto/run.ts";
import type { Row } from "../../harness/matrix/row.ts";
import { rdmaPairNeeds } from "../../harness/matrix/needs.ts";

/** The HowTo (docs/howto/) executed in two guests, page by page, as a reader types it. */
export const row: Row = {
  id: "docs",
  title: "the HowTo pages run as written: every runnable block, its output as the page shows",
  needs: rdmaPairNeeds("eth", "guestprogs"),
  timeoutSec: 1200,
  modules: ["cnuas_net", "cnuas_ib"],
  async run(ctx) {
    const guests = new Map(ctx.guests.map((g) => [g.name, g]));
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
