import assert from "node:assert/strict";
import { join } from "node:path";
import { REPO_ROOT } from "../../harness/config.ts";
import { matchOutput } from "../../harness/howto/expect.ts";
import { howtoPages, runPage } from "../../harness/howto/run.ts";
import type { FabricMode } from "../../harness/fabric/client.ts";
import { type RowContext, RowFailure } from "../../harness/matrix/row.ts";
import type { Guest } from "../../harness/vm/types.ts";
import { HowtoPageError, parsePage, parsePageItems } from "../../harness/howto/page.ts";

const PAGE = [
  "# A page",
  "",
  "```sh",
  "shown, not run",
  "```",
  "",
  "```sh run=g0 background listen=18515",
  "ibv_rc_pingpong -d cnuas_ib0 -g 1",
  "```",
  "",
  "```sh run=g1 timeout=30",
  "ibv_rc_pingpong -d cnuas_ib0 -g 1 10.77.0.1",
  "```",
  "",
  "```text expect",
  "...",
  "{...} iters in {...} seconds = {...}",
  "```",
  "",
  "````sh run=g0 fails",
  "ibv_devinfo -d nosuch",
  "````",
].join("\n");

Deno.test("howto page: runnable blocks in page order, attributes, expect attached to its block", () => {
  const b = parsePage("p.md", PAGE);
  assert.equal(b.length, 3);
  assert.deepEqual(
    b.map((x) => [x.line, x.guest, x.background, x.listen, x.fails, x.timeoutSec]),
    [
      [7, "g0", true, 18515, false, 120],
      [11, "g1", false, undefined, false, 30],
      [20, "g0", false, undefined, true, 120],
    ],
  );
  assert.equal(b[1].script, "ibv_rc_pingpong -d cnuas_ib0 -g 1 10.77.0.1");
  assert.equal(b[1].expect?.line, 15);
  assert.equal(b[0].expect, undefined);
});

Deno.test("howto page: marking errors name the file and line", () => {
  const cases: [string, RegExp][] = [
    ["```sh run=h1\nx\n```", /p\.md:1: run= names a guest/],
    ["```sh run=g0 bogus\nx\n```", /p\.md:1: unknown attribute "bogus"/],
    ["```sh run=g0 listen=80\nx\n```", /listen= is for background/],
    ["```sh run=g0 timeout=0\nx\n```", /timeout= wants an integer/],
    ["text\n\n```text expect\nx\n```", /p\.md:3: an expect block must follow/],
    ["```sh run=g0\nx\n```\nprose\n```text expect\ny\n```", /p\.md:5: an expect block must follow/],
    ["```sh run=g0\nx\n", /p\.md:1: unclosed/],
    ["```sh background\nx\n```", /attributes without run=/],
  ];
  for (const [text, re] of cases) {
    assert.throws(
      () => parsePage("p.md", text),
      (e: unknown) => e instanceof HowtoPageError && re.test(e.message),
      text,
    );
  }
});

Deno.test("howto expect: exact lines, ... for any lines, {...} for any text in a line", () => {
  assert.equal(matchOutput("a\nb", "a\nb\n"), undefined);
  assert.equal(matchOutput("a  \n\nb", "\na\n\nb  "), undefined);
  assert.equal(matchOutput("...\nlast", "x\ny\nlast"), undefined);
  assert.equal(matchOutput("first\n...", "first"), undefined);
  assert.equal(matchOutput("port {...}: PORT_ACTIVE", "port 1: PORT_ACTIVE"), undefined);
  assert.equal(matchOutput("a.b", "axb")?.expected, "a.b"); // regex characters are literal
  assert.equal(matchOutput("x {...} y", "x  y"), undefined);
  const m = matchOutput("state: PORT_ACTIVE\nmtu: 4096", "state: PORT_DOWN\nmtu: 4096");
  assert.deepEqual(m, {
    expectedLine: 1,
    expected: "state: PORT_ACTIVE",
    actual: "state: PORT_DOWN",
  });
  assert.equal(matchOutput("a", "a\nextra")?.actual, "extra");
  assert.equal(matchOutput("a\nb", "a")?.actual, "(end of output)");
  // the furthest reading of `...` is the one reported
  assert.deepEqual(matchOutput("...\nPASS\ndone", "x\nPASS\nfailed"), {
    expectedLine: 3,
    expected: "done",
    actual: "failed",
  });
});

Deno.test("howto page: save= blocks are written where they say, in page order", () => {
  const items = parsePageItems(
    "p.md",
    "```c save=g1:/root/first.c\nint main(void) { return 0; }\n```\n\n```sh run=g1\ncc first.c\n```",
  );
  assert.deepEqual(items.map((i) => i.kind), ["save", "run"]);
  assert.deepEqual(items[0], {
    kind: "save",
    file: {
      line: 1,
      guest: "g1",
      path: "/root/first.c",
      content: "int main(void) { return 0; }\n",
    },
  });
  assert.throws(() => parsePageItems("p.md", "```c save=g1:rel.c\nx\n```"), /save= wants guest/);
  assert.throws(
    () => parsePageItems("p.md", "```c save=g1:/a.c\nx\n```\n```text expect\nx\n```"),
    /must follow/,
  );
});

Deno.test("howto page: a fabric marker is an item in page order; a wrong one names its line", () => {
  const items = parsePageItems(
    "p.md",
    "```sh run=g0\nibstat\n```\n\n<!-- howto: fabric=ib -->\n\n```sh run=g0\nibstat\n```",
  );
  assert.deepEqual(items.map((i) => i.kind), ["run", "fabric", "run"]);
  assert.deepEqual(items[1], { kind: "fabric", change: { line: 5, mode: "ib" } });
  // an ordinary comment is prose
  assert.equal(parsePageItems("p.md", "<!-- a note -->").length, 0);
  for (const bad of ["fabric=link", "fabric=", "sm=off", "fabric=ib fabric=eth"]) {
    assert.throws(
      () => parsePageItems("p.md", `text\n<!-- howto: ${bad} -->`),
      /p\.md:2: a howto marker is/,
      bad,
    );
  }
  // an expect block cannot follow a marker
  assert.throws(
    () =>
      parsePageItems(
        "p.md",
        "```sh run=g0\nx\n```\n<!-- howto: fabric=ib -->\n```text expect\ny\n```",
      ),
    /must follow/,
  );
});

Deno.test("docs/howto: the index links every page, and every page's marking parses", async () => {
  const dir = join(REPO_ROOT, "docs", "howto");
  const pages = await howtoPages(dir);
  assert.ok(pages.length >= 6, pages.join(", "));
  for (const p of pages) {
    const items = parsePageItems(p, await Deno.readTextFile(join(dir, p)));
    assert.ok(items.some((i) => i.kind === "run"), `${p} runs nothing`);
  }
});

Deno.test("howto run: a fabric marker calls the row's setFabric between the blocks around it", async () => {
  const calls: string[] = [];
  const guest = {
    name: "g0",
    run: (cmd: string) => {
      calls.push(`run ${/echo (\w)/.exec(cmd)?.[1]}`);
      return Promise.resolve({ code: 0, stdout: "", stderr: "" });
    },
  } as unknown as Guest;
  const ctx = {
    step: <T>(_name: string, fn: () => Promise<T>) => fn(),
    log: () => {},
  } as unknown as RowContext;
  const page =
    "```sh run=g0\necho a\n```\n\n<!-- howto: fabric=ib -->\n\n```sh run=g0\necho b\n```";
  const guests = new Map([["g0", guest]]);
  const setFabric = (mode: FabricMode) => {
    calls.push(`fabric ${mode}`);
    return Promise.resolve();
  };
  assert.equal(await runPage(ctx, "p.md", page, guests, { setFabric }), 3);
  assert.deepEqual(calls, ["run a", "fabric ib", "run b"]);
  calls.length = 0;
  await assert.rejects(
    () => runPage(ctx, "p.md", page, guests),
    (e: Error) =>
      e instanceof RowFailure && /p\.md:5: this row cannot put the fabric in ib/.test(e.message),
  );
  assert.deepEqual(calls, ["run a"]);
});
