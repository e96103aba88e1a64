/**
 * A HowTo page (docs/howto/*.md) as the `docs` row executes it: its runnable
 * shell blocks in page order, each with the expected output shown after it.
 *
 * The marking (docs/howto/README.md, "How a page is executed") stays plain
 * Markdown, so every forge renders it: the info string's first word is the
 * language, the rest are attributes a renderer ignores.
 *
 * ````
 * ```sh run=g0 [background] [listen=PORT] [fails] [timeout=SEC]
 * commands
 * ```
 *
 * ```text expect
 * output, with `...` lines and `{...}` parts for what varies
 * ```
 * ````
 *
 * A block of any language marked `save=g0:/root/first.c` is written to that
 * file in that guest when the page reaches it (a program the page shows and
 * then builds). A `sh` block without `run=` is shown, not run.
 *
 * A line `<!-- howto: fabric=ib -->` (an HTML comment: renderers show
 * nothing) says that from there on the page needs the fabric in that mode
 * (`eth`, `ib`): the row puts it so before the next block, and it stays so
 * for the pages after (each page starts in the state the one before left).
 * The prose around it tells the reader what that is on their fabric
 * (e.g. "start the subnet manager").
 *
 * An `expect` block belongs to the runnable block right before it; one that
 * follows anything else is a page error, as is an unknown attribute.
 */
import { UserError } from "../errors.ts";
import type { FabricMode } from "../fabric/client.ts";

/** A page's marking is wrong: names the file and line. */
export class HowtoPageError extends UserError {}

/** One runnable block of a page. */
export interface RunnableBlock {
  /** 1-based line of the opening fence. */
  line: number;
  /** The guest it runs in (`g0`, `g1`, ...). */
  guest: string;
  /** The shell text, as shown on the page. */
  script: string;
  /**
   * Runs in the background: the page goes on at once; the block must end by
   * the time the page's next foreground block has ended (its output is then
   * compared).
   */
  background: boolean;
  /** Background only: the page goes on once this TCP port listens in the guest. */
  listen?: number;
  /** The block must exit non-zero (a troubleshooting symptom reproduced). */
  fails: boolean;
  /** Seconds before the block is killed (default {@link DEFAULT_BLOCK_TIMEOUT_SEC}). */
  timeoutSec: number;
  /** The output shown after it, if any. */
  expect?: { line: number; text: string };
}

/** A block the page shows and the row writes into a guest (`save=guest:path`). */
export interface SavedFile {
  /** 1-based line of the opening fence. */
  line: number;
  /** The guest it is written in. */
  guest: string;
  /** Absolute path in the guest. */
  path: string;
  /** The block's text (with a final newline). */
  content: string;
}

/** A page's requirement on the fabric from its line on (`<!-- howto: fabric=MODE -->`). */
export interface FabricChange {
  /** 1-based line of the marker. */
  line: number;
  /** The mode the fabric must be in from there on. */
  mode: FabricMode;
}

/** What a page does, in page order. */
export type PageItem =
  | { kind: "run"; block: RunnableBlock }
  | { kind: "save"; file: SavedFile }
  | { kind: "fabric"; change: FabricChange };

/** The fabric modes a page may ask for. */
const PAGE_FABRIC_MODES: readonly FabricMode[] = ["eth", "ib"];

/** A marker line: `<!-- howto: ... -->`. */
const MARKER = /^<!--\s*howto:(.*?)-->\s*$/;

/** Parse a marker's words (`fabric=ib`) into the change it asks for. */
function marker(file: string, line: number, body: string): FabricChange {
  const words = body.trim().split(/\s+/).filter(Boolean);
  const m = words.length === 1 ? /^fabric=(\w+)$/.exec(words[0]) : null;
  if (!m || !PAGE_FABRIC_MODES.includes(m[1] as FabricMode)) {
    throw new HowtoPageError(
      `${file}:${line}: a howto marker is <!-- howto: fabric=MODE --> with MODE one of ` +
        `${PAGE_FABRIC_MODES.join(", ")}, got "${body.trim()}"`,
    );
  }
  return { line, mode: m[1] as FabricMode };
}

/** Default per-block timeout. */
export const DEFAULT_BLOCK_TIMEOUT_SEC = 120;

const FENCE = /^(`{3,}|~{3,})(.*)$/;

/** Parse the attributes after a `sh` info string's language. */
function attributes(file: string, line: number, words: string[]):
  | Omit<
    RunnableBlock,
    "line" | "script" | "expect"
  >
  | undefined {
  let guest: string | undefined;
  let background = false;
  let fails = false;
  let listen: number | undefined;
  let timeoutSec = DEFAULT_BLOCK_TIMEOUT_SEC;
  const bad = (why: string) => new HowtoPageError(`${file}:${line}: ${why}`);
  for (const w of words) {
    const [key, value] = w.includes("=")
      ? [w.slice(0, w.indexOf("=")), w.slice(w.indexOf("=") + 1)]
      : [w, ""];
    const int = (min: number, max: number): number => {
      if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
        throw bad(`${key}= wants an integer in ${min}..${max}, got "${value}"`);
      }
      return Number(value);
    };
    if (key === "run") {
      if (!/^g\d+$/.test(value)) throw bad(`run= names a guest (g0, g1, ...), got "${value}"`);
      guest = value;
    } else if (key === "background" && !value) background = true;
    else if (key === "fails" && !value) fails = true;
    else if (key === "listen") listen = int(1, 65535);
    else if (key === "timeout") timeoutSec = int(1, 3600);
    else throw bad(`unknown attribute "${w}" (run=, background, listen=, fails, timeout=)`);
  }
  if (!guest) {
    if (words.length) throw bad(`attributes without run=: ${words.join(" ")}`);
    return undefined;
  }
  if (listen !== undefined && !background) throw bad("listen= is for background blocks");
  if (fails && background) throw bad("a background block cannot be marked fails");
  return { guest, background, listen, fails, timeoutSec };
}

/** The runnable blocks of page `text` (named `file` in errors), in page order. */
export function parsePage(file: string, text: string): RunnableBlock[] {
  return parsePageItems(file, text).flatMap((i) => i.kind === "run" ? [i.block] : []);
}

/** Runnable blocks and saved files of page `text` (named `file` in errors), in page order. */
export function parsePageItems(file: string, text: string): PageItem[] {
  const lines = text.split("\n");
  const items: PageItem[] = [];
  const blocks: RunnableBlock[] = [];
  let last: "runnable" | "other" = "other";
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]);
    if (!open) {
      const mark = MARKER.exec(lines[i].trim());
      if (mark) items.push({ kind: "fabric", change: marker(file, i + 1, mark[1]) });
      if (lines[i].trim()) last = "other";
      continue;
    }
    const fence = open[1];
    const info = open[2].trim().split(/\s+/).filter(Boolean);
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length; i++) {
      if (
        lines[i].startsWith(fence[0].repeat(fence.length)) && !lines[i].slice(fence.length).trim()
      ) {
        break;
      }
      body.push(lines[i]);
    }
    if (i >= lines.length) throw new HowtoPageError(`${file}:${start + 1}: unclosed code block`);
    const [lang, ...words] = info;
    if (words.includes("expect")) {
      if (words.length !== 1) {
        throw new HowtoPageError(`${file}:${start + 1}: an expect block takes no other attribute`);
      }
      if (last !== "runnable") {
        throw new HowtoPageError(
          `${file}:${start + 1}: an expect block must follow a runnable block (sh run=...)`,
        );
      }
      blocks[blocks.length - 1].expect = { line: start + 1, text: body.join("\n") };
      last = "other";
      continue;
    }
    const save = words.find((w) => w.startsWith("save="));
    if (save) {
      const m = /^save=(g\d+):(\/[^\s]+)$/.exec(save);
      if (!m || words.length !== 1) {
        throw new HowtoPageError(
          `${file}:${start + 1}: save= wants guest:/absolute/path and no other attribute`,
        );
      }
      const content = body.join("\n") + "\n";
      items.push({ kind: "save", file: { line: start + 1, guest: m[1], path: m[2], content } });
      last = "other";
      continue;
    }
    const attrs = lang === "sh" || lang === "console"
      ? attributes(file, start + 1, words)
      : undefined;
    if (!attrs) {
      last = "other";
      continue;
    }
    const block = { line: start + 1, script: body.join("\n"), ...attrs };
    blocks.push(block);
    items.push({ kind: "run", block });
    last = "runnable";
  }
  return items;
}
