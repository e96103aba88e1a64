/**
 * The static pages of a history directory that render.ts does not draw:
 * the front page (`index.html`: runs newest first, a rows × runs status
 * grid, flaky rows) and a bench run's page. Self-contained HTML, no
 * scripts; every status is written as text, colour only repeats it.
 */
import type { BenchJson } from "./bench_json.ts";
import { isBenchError } from "./bench_json.ts";
import { chronological, type HistoryIndex, type RunEntry } from "./history_index.ts";
import type { PageContext, Status } from "./schema.ts";
import { esc } from "./escape.ts";

/** One letter per status, for grids (the page's legend and `report history` spell them out). */
export const STATUS_LETTER: Record<Status, string> = {
  PASS: "P",
  FAIL: "F",
  ERROR: "E",
  MISS: "M",
  DONE: "D",
  SKIP: "S",
};

const BG: Record<Status, string> = {
  PASS: "#dff0d8",
  DONE: "#d9edf7",
  FAIL: "#f2dede",
  ERROR: "#ebccd1",
  MISS: "#fcf8e3",
  SKIP: "#eee",
};

const STYLE =
  "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}" +
  "td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top}td.s{text-align:center;" +
  "font-family:monospace;font-weight:bold}.flaky{font-weight:bold}";

function page(title: string, body: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${
    esc(title)
  }</title><style>${STYLE}</style></head><body>${body}</body></html>\n`;
}

function countsText(run: RunEntry): string {
  const counts = new Map<Status, number>();
  for (const r of run.rows) counts.set(r.status, (counts.get(r.status) ?? 0) + 1);
  return [...counts].map(([s, n]) => `${n} ${s}`).join(", ");
}

function statusGrid(index: HistoryIndex, last: number): string {
  const runs = chronological(index.runs.filter((r) => r.kind === "matrix")).slice(-last);
  if (runs.length === 0) return "<p>No matrix runs yet.</p>";
  const ids: string[] = [];
  for (const r of runs) for (const row of r.rows) if (!ids.includes(row.id)) ids.push(row.id);
  const head = runs.map((r, i) =>
    `<th title="${esc(r.runId)}"><a href="${esc(r.path)}index.html">${i + 1}</a><br>${
      esc(r.startedAt.slice(5, 16).replace("T", " "))
    }</th>`
  ).join("");
  const body = ids.map((id) => {
    const cells = runs.map((r) => {
      const row = r.rows.find((x) => x.id === id);
      if (!row) return `<td class="s" title="not run">·</td>`;
      const secs = row.durationSec === undefined ? "" : ` in ${row.durationSec.toFixed(1)} s`;
      return `<td class="s" style="background:${BG[row.status]}" title="${row.status}${secs}, run ${
        esc(r.runId)
      }">${STATUS_LETTER[row.status]}</td>`;
    }).join("");
    const flaky = index.flaky[id];
    const name = flaky
      ? `<span class="flaky" title="${esc(flaky)}">${esc(id)} ⚠ flaky</span>`
      : esc(id);
    return `<tr><td>${name}</td>${cells}</tr>`;
  }).join("\n");
  return `<table><tr><th>row \\ run (oldest → newest)</th>${head}</tr>\n${body}\n</table>` +
    `<p>P PASS, F FAIL, E ERROR, M MISS, D DONE, S SKIP, · not run.</p>`;
}

function runList(index: HistoryIndex): string {
  const rows = chronological(index.runs).reverse().map((r) => {
    const skipped = r.skipped.length
      ? `<details><summary>${r.skipped.length} not copied</summary><ul>${
        r.skipped.map((s) =>
          `<li>${esc(s.path)}: ${esc(s.reason)}${
            s.bytes === undefined ? "" : ` (${(s.bytes / 1024 / 1024).toFixed(0)} MiB)`
          }</li>`
        ).join("")
      }</ul></details>`
      : "";
    return `<tr><td><a href="${esc(r.path)}index.html">${esc(r.runId)}</a></td><td>${r.kind}</td>` +
      `<td>${esc(r.startedAt)}</td><td>${esc(r.project)}</td><td>${esc(r.host.hostname ?? "")} ${
        esc(r.host.kernel)
      }, ${r.host.cpus} CPUs</td><td style="background:${BG[r.status]}">${r.status}</td>` +
      `<td>${esc(countsText(r))}</td><td>${skipped}</td></tr>`;
  }).join("\n");
  return `<table><tr><th>run</th><th>kind</th><th>started</th><th>project</th><th>host</th>` +
    `<th>status</th><th>rows</th><th>files</th></tr>\n${rows}\n</table>`;
}

/** The history's front page: flaky rows, the status grid of the last `last` matrix runs, every run. */
export function frontPage(index: HistoryIndex, last: number): string {
  const flaky = Object.entries(index.flaky);
  const flakyHtml = flaky.length
    ? `<h2>Flaky rows</h2><ul>${
      flaky.map(([id, why]) => `<li><b>${esc(id)}</b>: ${esc(why)}</li>`).join("")
    }</ul>`
    : "";
  return page(
    "Cnuas HIL validation history",
    `<h1>Cnuas HIL validation history</h1><p>${index.runs.length} runs; updated ${
      esc(index.updatedAt)
    }; <a href="index.json">index.json</a></p>${flakyHtml}<h2>Last ${last} matrix runs</h2>${
      statusGrid(index, last)
    }<h2>Runs, newest first</h2>${runList(index)}`,
  );
}

/** A bench run's page: every figure with its previous value and range over the last runs. */
export function benchPage(runId: string, b: BenchJson, ctx: PageContext): string {
  const rows: string[] = [];
  for (const [bench, result] of Object.entries(b.results)) {
    if (isBenchError(result)) {
      rows.push(`<tr><td>${esc(bench)}</td><td colspan="4">ERROR: ${esc(result.error)}</td></tr>`);
      continue;
    }
    for (const [name, m] of Object.entries(result)) {
      const points = ctx.bench[`${bench}.${name}`]?.points ?? [];
      const values = points.map((p) => p.value);
      const prev = points.length > 1 ? String(points[points.length - 2].value) : "";
      const range = values.length > 1
        ? `${Math.min(...values)} – ${Math.max(...values)} (${values.length} runs)`
        : "";
      rows.push(
        `<tr><td>${esc(bench)}.${esc(name)}</td><td>${m.value}</td><td>${
          esc(m.unit)
        }</td><td>${prev}</td><td>${range}</td></tr>`,
      );
    }
  }
  return page(
    `Cnuas HIL bench ${runId}`,
    `<h1>Cnuas HIL bench ${esc(runId)}</h1><p>at ${esc(b.at)}; project ${esc(b.project)}; host ${
      esc(b.host.kernel)
    }, ${b.host.cpus} CPUs. <a href="../../index.html">history</a>, <a href="bench.json">bench.json</a></p>` +
      `<table><tr><th>figure</th><th>value</th><th>unit</th><th>previous run</th><th>range</th></tr>\n${
        rows.join("\n")
      }\n</table>`,
  );
}
