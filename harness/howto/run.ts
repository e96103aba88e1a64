/**
 * Executing a HowTo page in guests, block by block, as a reader would type
 * it: each runnable block ({@link parsePage}) is one step of the row, its
 * output compared with the page's ({@link matchOutput}). A block that exits
 * non-zero (or zero when marked `fails`), or whose output left the page,
 * fails the row with the page line, the expected line and what came instead.
 */
import { type RowContext, RowFailure } from "../matrix/row.ts";
import { collectBackground, inBackground, shq, waitListening } from "../guest/shell.ts";
import type { Guest } from "../vm/types.ts";
import { join } from "node:path";
import { UserError } from "../errors.ts";
import type { FabricMode } from "../fabric/client.ts";
import { matchOutput } from "./expect.ts";
import { parsePageItems, type RunnableBlock } from "./page.ts";

/** Seconds a background block may outlive the next foreground block. */
const BACKGROUND_GRACE_SEC = 30;

/** How a block's script runs: bash, stopping at the first failing command (pipes included). */
function bashCommand(script: string): string {
  return `bash -e -o pipefail -c ${shq(script)}`;
}

/** Check a finished block's status and output against the page. */
function judge(
  page: string,
  b: RunnableBlock,
  code: number,
  out: string,
): void {
  const where = `${page}:${b.line} (${b.guest})`;
  if (b.fails ? code === 0 : code !== 0) {
    throw new RowFailure(
      `${where}: exit ${code}${b.fails ? ", but the page says it fails" : ""}; output:\n${out}`,
    );
  }
  if (!b.expect) return;
  const m = matchOutput(b.expect.text, out);
  if (m) {
    throw new RowFailure(
      `${where}: output differs from ${page}:${b.expect.line}, expected line ${m.expectedLine}\n` +
        `  expected: ${m.expected}\n  got:      ${m.actual}\nwhole output:\n${out}`,
    );
  }
}

/** A background block started and not collected yet. */
interface Pending {
  block: RunnableBlock;
  guest: Guest;
  tag: string;
}

/** Wait for a background block to end, then judge it. */
async function collect(ctx: RowContext, page: string, p: Pending): Promise<void> {
  await ctx.step(
    `${page}:${p.block.line} (${p.guest.name}, background) ends as shown`,
    async () => {
      const r = await collectBackground(p.guest, p.tag, BACKGROUND_GRACE_SEC);
      ctx.log(r.out);
      judge(page, p.block, r.code, r.out);
    },
  );
}

/** What a page may ask of the row besides its guests. */
export interface PageWorld {
  /**
   * Put the fabric in `mode` (a `<!-- howto: fabric=MODE -->` marker); the
   * row knows the mode it is in and does nothing when it already is. A row
   * without it fails at a page's marker.
   */
  setFabric?(mode: FabricMode): Promise<void>;
}

/**
 * Run every runnable block of the page `text` (shown as `page` in steps and
 * errors) in `guests`, by name, in page order, write its `save=` blocks
 * where they say and put the fabric in the mode its markers ask for
 * (`world`); returns the number of items carried out.
 */
export async function runPage(
  ctx: RowContext,
  page: string,
  text: string,
  guests: Map<string, Guest>,
  world: PageWorld = {},
): Promise<number> {
  const items = parsePageItems(page, text);
  let pending: Pending[] = [];
  for (const [i, item] of items.entries()) {
    if (item.kind === "fabric") {
      const c = item.change;
      if (!world.setFabric) {
        throw new RowFailure(`${page}:${c.line}: this row cannot put the fabric in ${c.mode} mode`);
      }
      // a background block started before the change ends before it
      for (const p of pending) await collect(ctx, page, p);
      pending = [];
      await ctx.step(
        `${page}:${c.line} the fabric in ${c.mode} mode`,
        () => world.setFabric!(c.mode),
      );
      continue;
    }
    if (item.kind === "save") {
      const f = item.file;
      const g = guests.get(f.guest);
      if (!g) throw new RowFailure(`${page}:${f.line}: no guest ${f.guest} in this row`);
      await ctx.step(`${page}:${f.line} (${g.name}) save ${f.path}`, async () => {
        await g.run(`mkdir -p "$(dirname ${shq(f.path)})"`, { check: true });
        await g.putFile(f.path, new TextEncoder().encode(f.content));
      });
      continue;
    }
    const b = item.block;
    const g = guests.get(b.guest);
    if (!g) throw new RowFailure(`${page}:${b.line}: no guest ${b.guest} in this row`);
    const first = b.script.split("\n").find((l) => l.trim()) ?? "";
    const name = `${page}:${b.line} (${g.name}${b.background ? ", background" : ""}) ${first}`;
    if (b.background) {
      const tag = `/tmp/howto.${i}`;
      const ready = b.listen === undefined ? "" : `\n${waitListening([b.listen], 300, tag)}`;
      await ctx.step(name, async () => {
        const r = await g.run(`${inBackground(tag, bashCommand(b.script), b.timeoutSec)}${ready}`, {
          timeoutSec: 60,
        });
        if (r.code !== 0) throw new RowFailure(`${page}:${b.line}: nothing listens on ${b.listen}`);
      });
      pending.push({ block: b, guest: g, tag });
      continue;
    }
    await ctx.step(name, async () => {
      const r = await g.run(`timeout ${b.timeoutSec} ${bashCommand(b.script)} 2>&1`, {
        timeoutSec: b.timeoutSec + 30,
      });
      ctx.log(r.stdout);
      judge(page, b, r.code, r.stdout);
    });
    for (const p of pending) await collect(ctx, page, p);
    pending = [];
  }
  for (const p of pending) await collect(ctx, page, p);
  return items.length;
}

/** The HowTo's index and its pages disagree. */
export class HowtoIndexError extends UserError {}

/**
 * The pages of the HowTo in `dir`, in the order its README.md links them;
 * a page the index does not link, or a link to no page, is an error (a page
 * nobody can find, or an index entry that is not executed).
 */
export async function howtoPages(dir: string): Promise<string[]> {
  const index = await Deno.readTextFile(join(dir, "README.md"));
  const linked = [...index.matchAll(/\]\(([a-z0-9-]+\.md)\)/g)].map((m) => m[1]);
  const onDisk: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    if (e.isFile && e.name.endsWith(".md") && e.name !== "README.md") onDisk.push(e.name);
  }
  const unlisted = onDisk.filter((p) => !linked.includes(p));
  const missing = linked.filter((p) => !onDisk.includes(p));
  if (unlisted.length || missing.length) {
    throw new HowtoIndexError(
      `${join(dir, "README.md")}: ${
        unlisted.length ? `does not link ${unlisted.join(", ")}` : ""
      }` +
        `${unlisted.length && missing.length ? "; " : ""}` +
        `${missing.length ? `links missing ${missing.join(", ")}` : ""}`,
    );
  }
  return [...new Set(linked)];
}
