/**
 * The run's HTML page (`index.html`): a summary (counts by status, what
 * changed since the previous run, provenance), the matrix as a compact grid
 * whose rows open (`<details>`, no script needed) to their steps, transcript
 * excerpts, captures and artifacts, and the history's trends and bench
 * charts. Self-contained: inline CSS and SVG, a few lines of optional
 * script for filtering by status. A pure function of its inputs.
 */
import { esc, fileHref } from "./escape.ts";
import { emptyPageFiles, type PageFiles, type StepExcerpt } from "./page_data.ts";
import {
  emptyPageContext,
  isFailing,
  type MatrixJson,
  type Measurement,
  type PageContext,
  rollUp,
  type RowResult,
  type Status,
  STATUS_PRIORITY,
  type StepResult,
} from "./schema.ts";
import { durationSparkline, lineChart, shortNumber } from "./svg.ts";

/** A symbol per status, so a status never rests on colour alone. */
export const STATUS_SYMBOL: Record<Status, string> = {
  FAIL: "✗",
  ERROR: "⚠",
  MISS: "?",
  PASS: "✓",
  DONE: "●",
  SKIP: "–",
};

/** Trend points drawn per row (the newest). */
const TREND_POINTS = 20;

/** Failing rows whose details open by default; the rest stay closed to keep the page short. */
const OPEN_FAILING_ROWS = 10;

const CSS = `
body{font-family:system-ui,sans-serif;margin:0 2em 2em;color:#1a1a1a;line-height:1.4}
header{border-bottom:1px solid #ccc;margin-bottom:1em}
h1{margin:.6em 0 .2em}h2{margin:1.2em 0 .4em}h3{margin:1em 0 .3em;font-size:1.05em}
.prov{color:#444;margin:.2em 0 .8em}
table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}
thead th{background:#f2f2f2}
#counts td{text-align:right;min-width:3em}
.summary{display:flex;gap:3em;flex-wrap:wrap;align-items:flex-start}
#matrix{width:100%}#matrix>tbody>tr.main>th{white-space:nowrap}
#matrix .title{font-weight:normal;color:#555;font-size:.85em;white-space:normal}
#matrix td.num{text-align:right;white-space:nowrap}
#matrix td.reason{max-width:38em;overflow-wrap:anywhere}
tr.more>td{border-top:none;padding:0 8px 4px 2em;background:#fafafa}
details>summary{cursor:pointer;color:#225}
.st{font-weight:bold;white-space:nowrap}
.st-FAIL{color:#b00020}.st-ERROR{color:#8a3b00}.st-MISS{color:#7a5a00}
.st-PASS{color:#1b6e20}.st-DONE{color:#155e75}.st-SKIP{color:#555}
.flaky{color:#7a3e9d;font-weight:bold;white-space:nowrap}
.trend{white-space:nowrap;font-family:ui-monospace,monospace;font-size:.85em}
.spark{vertical-align:middle;color:#2a6fb0;margin-left:.4em}
table.steps{width:100%;margin:.3em 0}table.steps td.err{overflow-wrap:anywhere}
pre{background:#f6f6f6;border:1px solid #ddd;padding:.4em;white-space:pre-wrap;overflow-wrap:anywhere;max-height:28em;overflow-y:auto;margin:.2em 0;font-size:.85em}
tr.more li,tr.more td{overflow-wrap:anywhere}
ul.arts{columns:3 18em;margin:.3em 0}
.charts{display:flex;flex-wrap:wrap;gap:1.5em}.charts figure{margin:0}
.chart text{font-size:11px;fill:#333}
#filter[hidden]{display:none}#filter label{margin-right:1em}
`;

/** Row filtering by status; the page reads the same without it. */
const SCRIPT = `
(function(){var f=document.getElementById("filter");if(!f)return;f.hidden=false;
function apply(){var on={};f.querySelectorAll("input").forEach(function(i){on[i.value]=i.checked});
document.querySelectorAll("#matrix>tbody.row").forEach(function(b){b.hidden=!on[b.dataset.status]})}
f.addEventListener("change",apply);apply()})();
`;

/** Seconds as people read them: `12.3 s`, `2 min 09 s`. */
export function duration(sec: number): string {
  if (sec < 60) return `${sec.toFixed(1)} s`;
  const m = Math.floor(sec / 60);
  return `${m} min ${String(Math.round(sec - m * 60)).padStart(2, "0")} s`;
}

function statusText(s: Status): string {
  return `<span class="st st-${s}">${STATUS_SYMBOL[s]} ${s}</span>`;
}

function measurementText(name: string, m: Measurement): string {
  return `${name} = ${shortNumber(m.value)} ${m.unit}`;
}

/** A row's key measurement: its `framesChecked` when it has one, else its first. */
export function keyMeasurement(r: RowResult): [string, Measurement] | undefined {
  if (r.measurements.framesChecked) return ["framesChecked", r.measurements.framesChecked];
  return Object.entries(r.measurements)[0];
}

/** `id` as an HTML id. */
function rowAnchor(id: string): string {
  return `row-${id.replace(/[^A-Za-z0-9_-]/g, "_")}`;
}

function provenanceLine(m: MatrixJson): string {
  const p = m.provenance;
  const parts = [
    `run <strong>${esc(p.runId)}</strong>`,
    `started ${esc(p.startedAt)}`,
    `project ${esc(p.project)}`,
    `guest kernel ${esc(p.guestKernel ?? "n/a")}`,
    `QEMU ${esc(p.qemu ?? "n/a")}`,
    `rdma-core ${esc(p.rdmaCore ?? "n/a")}`,
    `accelerator ${esc(p.accel ?? "n/a")}${p.accelReason ? ` (${esc(p.accelReason)})` : ""}`,
    `host ${esc(p.host.hostname)}, kernel ${esc(p.host.kernel)}, ${p.host.cpus} CPUs`,
    ...(p.shard ? [`shard ${esc(p.shard)}`] : []),
    `depth ${esc(p.depth ?? "n/a")}`,
    ...(p.devModules ? ["modules from the working tree (--dev-modules)"] : []),
  ];
  return `<p class="prov" id="provenance">${parts.join(" · ")}</p>`;
}

function countsTable(m: MatrixJson): string {
  const body = STATUS_PRIORITY.map((s) => {
    const n = m.rows.filter((r) => r.status === s).length;
    return `<tr data-status="${s}"><th scope="row">${statusText(s)}</th>` +
      `<td data-count="${s}">${n}</td></tr>`;
  }).join("");
  return `<table id="counts"><caption>Rows by status</caption><thead><tr>` +
    `<th scope="col">status</th><th scope="col">rows</th></tr></thead><tbody>${body}</tbody>` +
    `<tfoot><tr><th scope="row">all</th><td data-count="all">${m.rows.length}</td></tr></tfoot>` +
    `</table>`;
}

function rowLink(id: string): string {
  return `<a href="#${rowAnchor(id)}">${esc(id)}</a>`;
}

/** "What changed since the previous run": new failures first, then other status changes. */
function changesSection(m: MatrixJson, previous: MatrixJson | undefined): string {
  if (!previous) {
    return `<section id="changes"><h3>Since the previous run</h3><p>No previous run in the ` +
      `history: nothing to compare.</p></section>`;
  }
  const before = new Map(previous.rows.map((r) => [r.id, r.status]));
  const now = new Set(m.rows.map((r) => r.id));
  const newFailures: string[] = [];
  const other: string[] = [];
  for (const r of m.rows) {
    const was = before.get(r.id);
    if (was === r.status) continue;
    const item = `${rowLink(r.id)}: ${was ? statusText(was) : "not run"} → ${statusText(r.status)}${
      r.reason ? ` — ${esc(oneLine(r.reason))}` : ""
    }`;
    if (isFailing(r.status) && (!was || !isFailing(was))) newFailures.push(item);
    else other.push(item);
  }
  const gone = previous.rows.filter((r) => !now.has(r.id)).map((r) =>
    `${esc(r.id)}: ${statusText(r.status)} → not run`
  );
  other.push(...gone);
  const head = `<h3>Since the previous run (${esc(previous.provenance.runId)})</h3>`;
  if (!newFailures.length && !other.length) {
    return `<section id="changes">${head}<p>No status changed.</p></section>`;
  }
  return `<section id="changes">${head}` +
    (newFailures.length
      ? changeList("new-failures", "New failures", newFailures)
      : `<p>No new failures.</p>`) +
    (other.length ? changeList("other-changes", "Other status changes", other) : "") +
    `</section>`;
}

/** Changes listed in full up to this many; a longer list opens on demand. */
const CHANGES_SHOWN = 12;

function changeList(id: string, title: string, items: string[]): string {
  const head = `<h4>${title} (${items.length})</h4>`;
  const li = (xs: string[]) => xs.map((x) => `<li data-change="${id}">${x}</li>`).join("");
  if (items.length <= CHANGES_SHOWN) return `${head}<ul id="${id}">${li(items)}</ul>`;
  return `${head}<ul id="${id}">${li(items.slice(0, CHANGES_SHOWN))}</ul><details><summary>${
    items.length - CHANGES_SHOWN
  } more</summary><ul>${li(items.slice(CHANGES_SHOWN))}</ul></details>`;
}

function oneLine(s: string, max = 300): string {
  const line = s.replaceAll("\n", " ");
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

function trendCell(r: RowResult, context: PageContext): string {
  const points = (context.trends[r.id] ?? []).slice(-TREND_POINTS);
  if (!points.length) return `<td class="trend">—</td>`;
  const marks = points.map((p) =>
    `<span class="st-${p.status}" title="${
      esc(`${p.runId}: ${p.status}, ${duration(p.durationSec)}`)
    }">${STATUS_SYMBOL[p.status]}</span>`
  ).join("");
  return `<td class="trend"><span class="marks" role="img" aria-label="${
    esc(`last ${points.length} statuses: ${points.map((p) => p.status).join(", ")}`)
  }">${marks}</span>${durationSparkline(points.map((p) => p.durationSec))}</td>`;
}

function stepRows(r: RowResult, excerpts: StepExcerpt[] | undefined): string {
  return r.steps.map((s: StepResult, i) => {
    const ex = excerpts?.[i];
    const lines = ex?.file
      ? `<a href="${fileHref(ex.file)}">${ex.lineCount} line${ex.lineCount === 1 ? "" : "s"}</a>`
      : "none";
    const main = `<tr data-step-status="${s.status}"><td class="num">${i + 1}</td>` +
      `<td>${esc(s.name)}</td><td>${statusText(s.status)}</td>` +
      `<td class="num">${duration(s.durationSec)}</td><td class="err">${
        esc(s.error ?? "")
      }</td><td>${lines}</td></tr>`;
    if (!ex?.tail.length) return main;
    return main +
      `<tr class="tail"><td></td><td colspan="5">last ${ex.tail.length} of ${ex.lineCount} transcript lines of step ${
        i + 1
      }:<pre>${esc(ex.tail.join("\n"))}</pre></td></tr>`;
  }).join("");
}

function detailsBody(r: RowResult, context: PageContext, files: PageFiles): string {
  const parts: string[] = [];
  const flaky = context.flaky[r.id];
  if (flaky) parts.push(`<p><span class="flaky">⚑ flaky</span>: ${esc(flaky)}</p>`);
  if (r.reason) parts.push(`<p><strong>Reason:</strong> ${esc(r.reason)}</p>`);
  if (r.buildWaitSec) {
    parts.push(
      `<p class="beside">Of its ${r.durationSec.toFixed(1)} s, ${
        r.buildWaitSec.toFixed(1)
      } s went to waiting for the cache (a build or a saved guest state it needed first).</p>`,
    );
  }
  if (r.ranBeside?.length) {
    parts.push(
      `<p class="beside">Ran beside ${
        esc(r.ranBeside.join(", "))
      }, sharing the host's cores: its times were taken that way.</p>`,
    );
  }
  if (r.steps.length) {
    parts.push(
      `<table class="steps"><caption>Steps of ${esc(r.id)}</caption><thead><tr>` +
        `<th scope="col">#</th><th scope="col">step</th><th scope="col">status</th>` +
        `<th scope="col">duration</th><th scope="col">error</th>` +
        `<th scope="col">transcript</th></tr></thead><tbody>${
          stepRows(r, files.steps[r.id])
        }</tbody></table>`,
    );
  } else parts.push(`<p>No steps recorded.</p>`);
  const ms = Object.entries(r.measurements);
  if (ms.length) {
    parts.push(
      `<h3>Measurements</h3><ul class="arts">${
        ms.map(([k, v]) => `<li>${esc(measurementText(k, v))}</li>`).join("")
      }</ul>`,
    );
  }
  const caps = files.captures[r.id] ?? [];
  if (caps.length) {
    const body = caps.map((c) => {
      const name = c.capture
        ? `<a href="${fileHref(c.capture)}">${esc(baseName(c.capture))}</a>`
        : esc(baseName(c.report.replace(/\.violations\.json$/, "")));
      const rules = Object.entries(c.byRule).map(([k, n]) => `${esc(k)}: ${n}`).join(", ");
      const verdict = c.problem
        ? `unreadable: ${esc(c.problem)}`
        : c.violationCount === 0
        ? `${STATUS_SYMBOL.PASS} none`
        : `${STATUS_SYMBOL.FAIL} ${c.violationCount ?? "?"}`;
      return `<tr><td>${name}</td><td class="num">${c.framesChecked ?? "?"}</td>` +
        `<td>${verdict}</td><td>${rules || "—"}</td>` +
        `<td><a href="${fileHref(c.report)}">${esc(baseName(c.report))}</a></td></tr>`;
    }).join("");
    parts.push(
      `<table class="steps captures"><caption>Captures and the wire oracle's verdict</caption>` +
        `<thead><tr><th scope="col">capture</th><th scope="col">frames checked</th>` +
        `<th scope="col">violations</th><th scope="col">by rule</th>` +
        `<th scope="col">report</th></tr></thead><tbody>${body}</tbody></table>`,
    );
  }
  if (r.artifacts.length) {
    const items = r.artifacts.map((a) =>
      !files.present || files.present.has(a)
        ? `<li><a href="${fileHref(a)}">${esc(baseName(a))}</a></li>`
        : `<li>${esc(baseName(a))} (missing)</li>`
    ).join("");
    parts.push(`<h3>Artifacts</h3><ul class="arts">${items}</ul>`);
  }
  return parts.join("");
}

function baseName(p: string): string {
  return p.split("/").pop() ?? p;
}

function matrixRow(
  r: RowResult,
  context: PageContext,
  files: PageFiles,
  open: boolean,
): string {
  const key = keyMeasurement(r);
  const flaky = context.flaky[r.id];
  const caps = files.captures[r.id]?.length ?? 0;
  const summary = [
    `${r.steps.length} step${r.steps.length === 1 ? "" : "s"}`,
    `${r.artifacts.length} artifact${r.artifacts.length === 1 ? "" : "s"}`,
    ...(caps ? [`${caps} capture${caps === 1 ? "" : "s"}`] : []),
  ].join(" · ");
  return `<tbody class="row" id="${rowAnchor(r.id)}" data-status="${r.status}">` +
    `<tr class="main"><th scope="row">${esc(r.id)}<div class="title">${
      esc(r.title)
    }</div></th><td>${statusText(r.status)}${
      flaky ? ` <span class="flaky" title="${esc(flaky)}">⚑ flaky</span>` : ""
    }</td><td class="num">${duration(r.durationSec)}</td><td>${
      key ? esc(measurementText(key[0], key[1])) : "—"
    }</td>${trendCell(r, context)}<td class="reason">${esc(oneLine(r.reason ?? ""))}</td></tr>` +
    `<tr class="more"><td colspan="6"><details${open ? " open" : ""}><summary>details of ${
      esc(r.id)
    }: ${summary}</summary>${detailsBody(r, context, files)}</details></td></tr></tbody>`;
}

function matrixSection(m: MatrixJson, context: PageContext, files: PageFiles): string {
  if (!m.rows.length) {
    return `<section aria-labelledby="matrix-h"><h2 id="matrix-h">Matrix</h2>` +
      `<p id="no-rows">This run has no rows.</p></section>`;
  }
  let openLeft = OPEN_FAILING_ROWS;
  const rows = m.rows.map((r) => {
    const open = isFailing(r.status) && openLeft-- > 0;
    return matrixRow(r, context, files, open);
  }).join("\n");
  const present = STATUS_PRIORITY.filter((s) => m.rows.some((r) => r.status === s));
  const filter = `<form id="filter" hidden aria-label="show rows by status">Show: ${
    present.map((s) =>
      `<label><input type="checkbox" value="${s}" checked> ${STATUS_SYMBOL[s]} ${s}</label>`
    ).join("")
  }</form>`;
  return `<section aria-labelledby="matrix-h"><h2 id="matrix-h">Matrix (${m.rows.length} row${
    m.rows.length === 1 ? "" : "s"
  })</h2>` +
    filter +
    `<table id="matrix"><thead><tr><th scope="col">row</th><th scope="col">status</th>` +
    `<th scope="col">duration</th><th scope="col">key measurement</th>` +
    `<th scope="col">last runs</th><th scope="col">reason</th></tr></thead>\n${rows}\n</table>` +
    `</section>`;
}

function benchSection(context: PageContext): string {
  const names = Object.keys(context.bench).sort();
  if (!names.length) return "";
  const charts = names.map((name) => {
    const s = context.bench[name];
    const chart = lineChart(
      name,
      s.unit,
      s.points.map((p) => ({ label: `${p.runId} (${p.project})`, value: p.value })),
    );
    const last = s.points[s.points.length - 1];
    return `<figure data-bench="${esc(name)}">${chart}<figcaption>${esc(name)} (${esc(s.unit)})${
      last ? `: latest ${esc(shortNumber(last.value))} ${esc(s.unit)}` : ""
    }</figcaption></figure>`;
  }).join("");
  return `<section aria-labelledby="bench-h"><h2 id="bench-h">Bench over runs</h2>` +
    `<div class="charts">${charts}</div></section>`;
}

function overallLine(m: MatrixJson): string {
  if (!m.rows.length) return `<p class="overall">No rows ran.</p>`;
  const overall = rollUp(m.rows.map((r) => r.status));
  const counts = STATUS_PRIORITY.map((s) => [s, m.rows.filter((r) => r.status === s).length])
    .filter(([, n]) => n).map(([s, n]) => `${n} ${s}`).join(", ");
  const failing = m.rows.filter((r) => isFailing(r.status)).length;
  return `<p class="overall">Overall ${statusText(overall)}: ${counts} of ${m.rows.length} row${
    m.rows.length === 1 ? "" : "s"
  }${failing ? `; ${failing} break the gate` : ""}.</p>`;
}

/**
 * The page of run `m`, with its history (`context`) and what its run
 * directory holds (`files`: present artifacts, step excerpts, oracle
 * summaries; page_files.ts reads them).
 */
export function toHtml(
  m: MatrixJson,
  context: PageContext = emptyPageContext(),
  files: PageFiles = emptyPageFiles(),
): string {
  const p = m.provenance;
  const flakyIds = Object.keys(context.flaky).filter((id) => m.rows.some((r) => r.id === id));
  return `<!doctype html><html lang="en"><head><meta charset="utf-8">` +
    `<meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<title>Cnuas HIL ${esc(p.runId)}: ${
      m.rows.length ? rollUp(m.rows.map((r) => r.status)) : "no rows"
    }</title><style>${CSS}</style></head><body>` +
    `<header><h1>Cnuas HIL validation matrix</h1>${provenanceLine(m)}</header><main>` +
    `<section aria-labelledby="summary-h"><h2 id="summary-h">Summary</h2>${overallLine(m)}` +
    `<div class="summary">${countsTable(m)}<div>${changesSection(m, context.previous)}${
      flakyIds.length
        ? `<h3>Flaky rows (${flakyIds.length})</h3><ul id="flaky">${
          flakyIds.map((id) => `<li>${rowLink(id)}: ${esc(context.flaky[id])}</li>`).join("")
        }</ul>`
        : ""
    }</div></div></section>` +
    matrixSection(m, context, files) + benchSection(context) +
    `</main><footer><p>matrix.json, matrix.md and junit.xml beside this page hold the same run.</p>` +
    `</footer><script>${SCRIPT}</script></body></html>\n`;
}
