/**
 * The report page in a real browser: writeReport renders a real run (a
 * fixture copied from reports/), an all-FAIL/ERROR run, a run with no rows
 * and a 200-row synthetic run with trends, flaky rows and bench series;
 * headless Chromium loads each page, and its DOM must hold the counts of
 * matrix.json, every row, and only links that resolve to files beside the
 * page. Screenshots at 1400 px stay in reports/page-test/<case>/page.png; a probe page
 * measures the layout at 1400 px with every row open (no sideways scroll,
 * no step column squeezed to a strip).
 * Needs Debian's `chromium` (host package group `report`): without it the
 * test fails, naming the package.
 */
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { REPO_ROOT } from "../../harness/config.ts";
import { HOST_PACKAGES, missingPackages } from "../../harness/host.ts";
import { writeReport } from "../../harness/report/write.ts";
import {
  type BenchSeries,
  emptyPageContext,
  isFailing,
  type MatrixJson,
  type PageContext,
  parseMatrixJson,
  type RowResult,
  type Status,
  STATUS_PRIORITY,
  type TrendPoint,
} from "../../harness/report/schema.ts";
import { INLINE_TAIL_LINES } from "../../harness/report/page_data.ts";

const OUT = join(REPO_ROOT, "reports", "page-test");
const FIXTURE = join(REPO_ROOT, "tests", "fixtures", "report", "real");

/** Chromium's path; fails (never skips) when the package is missing. */
async function chromium(): Promise<string> {
  const missing = await missingPackages(HOST_PACKAGES.report);
  assert.deepEqual(
    missing,
    [],
    `the page test needs Debian's ${missing.join(" ")} package (host package group "report"): ` +
      `apt-get install ${missing.join(" ")}, or run deno task setup as root`,
  );
  return "chromium";
}

async function browser(args: string[]): Promise<string> {
  const out = await new Deno.Command(await chromium(), {
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stdout = new TextDecoder().decode(out.stdout);
  assert.ok(
    out.success,
    `chromium ${args.join(" ")} failed: ${new TextDecoder().decode(out.stderr)}`,
  );
  return stdout;
}

/**
 * A page beside index.html that loads it in a 1400 px frame, opens every
 * `<details>` and measures the layout: the page must not scroll sideways and
 * no step column may shrink to a strip.
 */
const PROBE = `<!doctype html><meta charset="utf-8"><body style="margin:0">
<iframe id="f" src="index.html" style="width:1400px;height:2000px;border:0"></iframe>
<pre id="probe"></pre><script>
document.getElementById("f").addEventListener("load", function () {
  var d = this.contentDocument, e = d.documentElement, out = {};
  out.closedWidth = e.scrollWidth;
  d.querySelectorAll("details").forEach(function (x) { x.open = true; });
  out.openWidth = e.scrollWidth;
  out.viewWidth = e.clientWidth;
  var w = Array.prototype.map.call(
    d.querySelectorAll("table.steps tr[data-step-status] > td:nth-child(2)"),
    function (c) { return c.getBoundingClientRect().width; });
  out.narrowestStep = w.length ? Math.min.apply(null, w) : null;
  var box = d.querySelector("#filter input");
  if (box) {
    box.checked = false;
    box.dispatchEvent(new this.contentWindow.Event("change", { bubbles: true }));
    out.unchecked = box.value;
    out.hidden = d.querySelectorAll("#matrix>tbody.row[hidden]").length;
    out.hiddenOthers = d.querySelectorAll(
      '#matrix>tbody.row[hidden]:not([data-status="' + box.value + '"])').length;
  }
  document.getElementById("probe").textContent = JSON.stringify(out);
});
</script>`;

/** What the probe measured. */
interface Layout {
  closedWidth: number;
  openWidth: number;
  viewWidth: number;
  narrowestStep: number | null;
  /** The status the probe unchecked in the filter, and the rows it hid then. */
  unchecked?: Status;
  hidden?: number;
  hiddenOthers?: number;
}

/** Narrowest a step's name column may get at 1400 px. */
const MIN_STEP_COLUMN_PX = 150;

/**
 * The page's DOM after load (scripts ran), a 1400 px screenshot beside it,
 * and its layout with every row open.
 */
async function load(dir: string): Promise<{ dom: string; layout: Layout }> {
  const url = pathToFileURL(join(dir, "index.html")).href;
  const dom = await browser(["--dump-dom", url]);
  await browser([`--screenshot=${join(dir, "page.png")}`, "--window-size=1400,2000", url]);
  await Deno.writeTextFile(join(dir, "probe.html"), PROBE);
  const probed = await browser([
    "--allow-file-access-from-files",
    "--window-size=1440,2100",
    "--dump-dom",
    pathToFileURL(join(dir, "probe.html")).href,
  ]);
  const json = /<pre id="probe">([^<]*)<\/pre>/.exec(probed)?.[1];
  assert.ok(json, `the layout probe measured nothing: ${probed.slice(0, 300)}`);
  return { dom, layout: JSON.parse(unescape(json)) as Layout };
}

/**
 * At 1400 px, with every row open: no sideways scrolling, no narrow step
 * strips; unchecking a status in the filter hides exactly its rows.
 */
function checkLayout(layout: Layout, m: MatrixJson): void {
  if (m.rows.length) {
    assert.ok(layout.unchecked, "the status filter is missing");
    assert.equal(layout.hidden, m.rows.filter((r) => r.status === layout.unchecked).length);
    assert.equal(layout.hiddenOthers, 0, "the filter hid rows of other statuses");
  }
  assert.ok(
    layout.openWidth <= layout.viewWidth && layout.closedWidth <= layout.viewWidth,
    `the page scrolls sideways at 1400 px: ${JSON.stringify(layout)}`,
  );
  if (layout.narrowestStep !== null) {
    assert.ok(
      layout.narrowestStep >= MIN_STEP_COLUMN_PX,
      `a step column shrank to ${layout.narrowestStep} px`,
    );
  }
}

function unescape(s: string): string {
  return s.replaceAll("&quot;", '"').replaceAll("&#39;", "'").replaceAll("&lt;", "<")
    .replaceAll("&gt;", ">").replaceAll("&amp;", "&");
}

/** Every check a page of `m` must pass in the browser's DOM. */
async function checkPage(dir: string, m: MatrixJson, dom: string): Promise<void> {
  assert.match(dom, /<main>/);
  for (const s of STATUS_PRIORITY) {
    const shown = new RegExp(`data-count="${s}">(\\d+)<`).exec(dom);
    assert.ok(shown, `no count for ${s}`);
    assert.equal(Number(shown[1]), m.rows.filter((r) => r.status === s).length, `${s} count`);
  }
  assert.equal(Number(/data-count="all">(\d+)</.exec(dom)?.[1]), m.rows.length, "all count");
  const shownRows = [...dom.matchAll(/<tbody class="row" id="row-([^"]+)" data-status="(\w+)"/g)]
    .map((x) => `${x[1]}:${x[2]}`);
  assert.deepEqual(shownRows, m.rows.map((r) => `${r.id}:${r.status}`), "rows in order");
  const page = pathToFileURL(join(dir, "index.html"));
  const ids = new Set([...dom.matchAll(/ id="([^"]+)"/g)].map((x) => unescape(x[1])));
  for (const [, raw] of dom.matchAll(/<a [^>]*href="([^"]*)"/g)) {
    const href = unescape(raw);
    if (href.startsWith("#")) {
      assert.ok(ids.has(href.slice(1)), `anchor ${href} has no element`);
      continue;
    }
    const target = new URL(href, page);
    assert.equal(target.protocol, "file:", `link ${href} leaves the page's directory`);
    const st = await Deno.stat(fileURLToPath(target)).catch(() => undefined);
    assert.ok(st?.isFile, `link ${href} resolves to no file`);
  }
  assert.doesNotMatch(dom, /(src|href)="(https?:)?\/\//, "no external resource");
  for (const [, pre] of dom.matchAll(/<pre>([^]*?)<\/pre>/g)) {
    assert.ok(pre.split("\n").length <= INLINE_TAIL_LINES, "inline excerpt over the limit");
  }
  // the optional script ran: the status filter is shown
  if (m.rows.length) assert.match(dom, /<form id="filter" aria-label/);
}

/** How many changes of a kind ("new-failures", "other-changes") the page lists. */
function changes(dom: string, kind: string): number {
  return (dom.match(new RegExp(`<li data-change="${kind}">`, "g")) ?? []).length;
}

async function fresh(name: string): Promise<string> {
  const dir = join(OUT, name);
  await Deno.remove(dir, { recursive: true }).catch(() => {});
  await Deno.mkdir(dir, { recursive: true });
  return dir;
}

const provenance = (runId: string): MatrixJson["provenance"] => ({
  runId,
  startedAt: "2026-12-02T05:00:00.000Z",
  project: "abc1234",
  guestKernel: "6.12.117+deb13-amd64",
  qemu: "1:7.2+dfsg-7+deb12u18",
  rdmaCore: "56.1-1",
  accel: "tcg",
  host: { kernel: "6.1", hostname: "h<&>", cpus: 2 },
});

/**
 * A synthetic row with a transcript on disk: `lines` lines per step; a
 * failing row's last step fails.
 */
async function syntheticRow(
  dir: string,
  id: string,
  status: Status,
  lines: number,
): Promise<RowResult> {
  const broke = (i: number) => i === 2 && ["FAIL", "ERROR", "MISS"].includes(status);
  const steps = ["boot <g0>", "load & check", "traffic"].map((name, i) => ({
    name,
    status: (broke(i) ? status : "PASS") as Status,
    durationSec: 1 + i,
    ...(broke(i) ? { error: `step failed: <${id}> "quoted"` } : {}),
  }));
  const rowDir = join(dir, "rows", id);
  await Deno.mkdir(rowDir, { recursive: true });
  const text = ["[0.1s] setup line"];
  steps.forEach((s, i) => {
    text.push(`[${i + 1}.0s] == step ${s.name}`);
    for (let k = 0; k < lines; k++) text.push(`  ${id} step ${i + 1} line ${k} <tag> & "x"`);
    // a long unbroken line, as guests print them (sysfs paths, hex dumps)
    text.push(`  stdout: /sys/class/infiniband/${"cnuas_ib0/ports/1/".repeat(30)}state`);
  });
  await Deno.writeTextFile(join(rowDir, "transcript.log"), text.join("\n") + "\n");
  await Deno.writeTextFile(
    join(rowDir, "c.pcapng.violations.json"),
    JSON.stringify({ framesChecked: 40, violationCount: 1, byRule: { "icrc-valid": 1 } }),
  );
  return {
    id,
    title: `${id} <title> & more`,
    status,
    durationSec: 10 + id.length,
    ...(status !== "PASS" ? { reason: `${status} because <${id}>` } : {}),
    measurements: { framesChecked: { value: 40, unit: "frames" } },
    artifacts: [
      `rows/${id}/transcript.log`,
      `rows/${id}/c.pcapng.violations.json`,
      `rows/${id}/gone.log`,
    ],
    steps,
  };
}

Deno.test("a real run's page: counts, its row, steps and links resolve", async () => {
  const dir = await fresh("real");
  await Deno.mkdir(dir, { recursive: true });
  await new Deno.Command("cp", { args: ["-a", `${FIXTURE}/.`, dir] }).output();
  const m = parseMatrixJson(await Deno.readTextFile(join(dir, "matrix.json")));
  await writeReport(dir, m);
  const { dom, layout } = await load(dir);
  await checkPage(dir, m, dom);
  checkLayout(layout, m);
  const row = m.rows[0];
  // every step links its transcript lines, and the captures show the oracle's frames
  assert.equal([...dom.matchAll(/href="rows\/[^"]+\/steps\/\d+\.txt"/g)].length, row.steps.length);
  assert.match(dom, /<td class="num">52<\/td>/, "traps.pcapng's framesChecked");
});

Deno.test("an all-FAIL/ERROR run: every row a new failure, failing steps inline", async () => {
  const dir = await fresh("all-fail");
  const rows = await Promise.all(
    ["a", "b", "c", "d"].map((id, i) => syntheticRow(dir, id, i % 2 ? "ERROR" : "FAIL", 50)),
  );
  const m: MatrixJson = { provenance: provenance("all-fail"), rows };
  const previous: MatrixJson = {
    provenance: provenance("before"),
    rows: rows.map((r) => ({ ...r, status: "PASS" })),
  };
  await writeReport(dir, m, undefined, { ...emptyPageContext(), previous });
  const { dom, layout } = await load(dir);
  await checkPage(dir, m, dom);
  checkLayout(layout, m);
  assert.equal(changes(dom, "new-failures"), 4);
  assert.equal((dom.match(/<pre>/g) ?? []).length, 4, "one inline excerpt per failing step");
  assert.match(dom, /gone\.log \(missing\)/);
  assert.doesNotMatch(dom, /<tag>|<a>|<title> &/, "escaped");
  assert.match(dom, /a &lt;title&gt; &amp; more/);
});

Deno.test("a run with no rows says so", async () => {
  const dir = await fresh("empty");
  const m: MatrixJson = { provenance: provenance("empty"), rows: [] };
  await writeReport(dir, m);
  const { dom, layout } = await load(dir);
  await checkPage(dir, m, dom);
  checkLayout(layout, m);
  assert.match(dom, /This run has no rows/);
});

Deno.test("200 rows with trends, flaky rows and bench charts", async () => {
  const dir = await fresh("big");
  const statuses: Status[] = ["PASS", "PASS", "PASS", "FAIL", "MISS", "ERROR", "DONE", "SKIP"];
  const rows = await Promise.all(
    Array.from(
      { length: 200 },
      (_, i) =>
        syntheticRow(dir, `row-${String(i).padStart(3, "0")}`, statuses[i % 8], i % 50 ? 5 : 2000),
    ),
  );
  const m: MatrixJson = { provenance: provenance("big"), rows };
  const trends: Record<string, TrendPoint[]> = {};
  for (const [i, r] of rows.entries()) {
    trends[r.id] = Array.from({ length: 12 }, (_, k) => ({
      runId: `run-${k}`,
      project: `p${k}`,
      startedAt: "2026-12-01T00:00:00.000Z",
      status: k === 11 ? r.status : statuses[(i + k) % 8],
      durationSec: 10 + ((i * k) % 7),
    }));
  }
  const bench: Record<string, BenchSeries> = {
    "perf.cnuas_ib.ib_send_bw.MBps": {
      unit: "MB/s",
      points: Array.from({ length: 15 }, (_, k) => ({
        runId: `run-${k}`,
        startedAt: "2026-12-01T00:00:00.000Z",
        project: `p${k}`,
        value: 900 + 30 * Math.sin(k),
      })),
    },
    "boot.toSsh.sec": { unit: "s", points: [] },
  };
  // the previous run: rows 150.. not run yet, row-000 failed, row-003 passed
  const previous: MatrixJson = {
    provenance: provenance("before"),
    rows: rows.slice(0, 150).map((r) => ({
      ...r,
      status: r.id === "row-000" ? "FAIL" : r.id === "row-003" ? "PASS" : r.status,
    })),
  };
  const before = new Map(previous.rows.map((r) => [r.id, r.status]));
  const newFailures = rows.filter((r) => {
    const was = before.get(r.id);
    return isFailing(r.status) && (!was || !isFailing(was));
  });
  const changed = rows.filter((r) => before.get(r.id) !== r.status);
  const context: PageContext = {
    previous,
    trends,
    flaky: { "row-001": "PASS, FAIL, PASS over the last 5 runs on one commit" },
    bench,
  };
  const t = performance.now();
  await writeReport(dir, m, undefined, context);
  const writeMs = performance.now() - t;
  const t2 = performance.now();
  const { dom, layout } = await load(dir);
  checkLayout(layout, m);
  const loadMs = performance.now() - t2;
  console.log(
    `200 rows: writeReport ${
      writeMs.toFixed(0)
    } ms, three browser runs (DOM, screenshot, layout probe) ${loadMs.toFixed(0)} ms, page ${
      (await Deno.stat(join(dir, "index.html"))).size
    } bytes`,
  );
  await checkPage(dir, m, dom);
  assert.equal((dom.match(/<svg class="spark"/g) ?? []).length, 200, "a sparkline per row");
  assert.equal(changes(dom, "new-failures"), newFailures.length);
  assert.equal(changes(dom, "other-changes"), changed.length - newFailures.length);
  assert.match(dom, /id="new-failures"><li data-change="new-failures"><a href="#row-row-003">/);
  assert.equal((dom.match(/<figure data-bench=/g) ?? []).length, 2);
  assert.match(dom, /<span class="flaky" title="PASS, FAIL, PASS/);
  // a 2000-line step is a file, not inline
  const long = await Deno.readTextFile(join(dir, "rows", "row-000", "steps", "1.txt"));
  assert.equal(long.trimEnd().split("\n").length, 2002, "marker, 2000 lines, the long one");
  assert.ok((await Deno.stat(join(dir, "index.html"))).size < 4_000_000, "page stays small");
  assert.ok(writeMs < 10_000, `writeReport took ${writeMs} ms`);
  assert.equal(dirname(join(dir, "page.png")), dir);
});
