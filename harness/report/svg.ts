/**
 * Inline SVG for the report page: a row's duration sparkline and a bench
 * figure's line chart over runs. Pure string builders; every text escaped.
 */
import { esc } from "./escape.ts";

/** A number short enough for an axis label. */
export function shortNumber(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a >= 100 || Number.isInteger(v)) return String(Math.round(v));
  if (a >= 10) return v.toFixed(1);
  return v.toPrecision(3);
}

function scale(values: number[], lo: number, hi: number): (v: number) => number {
  const min = Math.min(...values);
  const max = Math.max(...values);
  const span = max - min || 1;
  return (v) => hi - ((v - min) / span) * (hi - lo);
}

/**
 * A row's durations over its last runs as a small polyline, the last point
 * marked; its label names the range in words (screen readers, no colour).
 */
export function durationSparkline(durations: number[]): string {
  if (durations.length === 0) return "";
  const w = 96, h = 20, pad = 2;
  const y = scale(durations, pad, h - pad);
  const step = durations.length > 1 ? (w - 2 * pad) / (durations.length - 1) : 0;
  const pts = durations.map((d, i) => `${(pad + i * step).toFixed(1)},${y(d).toFixed(1)}`);
  const last = pts[pts.length - 1].split(",");
  const label = `durations of the last ${durations.length} runs: ${
    durations.map((d) => shortNumber(d)).join(", ")
  } s`;
  return `<svg class="spark" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" role="img" ` +
    `aria-label="${esc(label)}"><title>${esc(label)}</title>` +
    `<polyline fill="none" stroke="currentColor" stroke-width="1.2" points="${pts.join(" ")}"/>` +
    `<circle cx="${last[0]}" cy="${last[1]}" r="2" fill="currentColor"/></svg>`;
}

/** One point of a chart: its value and the run it comes from. */
export interface ChartPoint {
  /** The run (shown in the point's tooltip and on the x axis). */
  label: string;
  /** The measured value. */
  value: number;
}

/**
 * A line chart of one figure over runs: y axis with min/max in the unit,
 * x axis with the first and last run, a tooltip per point.
 */
export function lineChart(title: string, unit: string, points: ChartPoint[]): string {
  const w = 460, h = 180, left = 64, right = 12, top = 12, bottom = 36;
  if (points.length === 0) {
    return `<p>${esc(title)}: no points yet.</p>`;
  }
  const values = points.map((p) => p.value);
  const min = Math.min(...values), max = Math.max(...values);
  const y = scale(values, top, h - bottom);
  const span = w - left - right;
  const x = (i: number) => left + (points.length > 1 ? (i * span) / (points.length - 1) : span / 2);
  const path = points.map((p, i) => `${x(i).toFixed(1)},${y(p.value).toFixed(1)}`).join(" ");
  const dots = points.map((p, i) =>
    `<circle cx="${x(i).toFixed(1)}" cy="${y(p.value).toFixed(1)}" r="3"><title>${
      esc(`${p.label}: ${shortNumber(p.value)} ${unit}`)
    }</title></circle>`
  ).join("");
  const label = `${title}, ${points.length} runs, from ${shortNumber(values[0])} to ${
    shortNumber(values[values.length - 1])
  } ${unit} (min ${shortNumber(min)}, max ${shortNumber(max)})`;
  const axisY = h - bottom;
  return `<svg class="chart" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" role="img" ` +
    `aria-label="${esc(label)}"><title>${esc(label)}</title>` +
    `<line x1="${left}" y1="${top}" x2="${left}" y2="${axisY}" stroke="#555"/>` +
    `<line x1="${left}" y1="${axisY}" x2="${w - right}" y2="${axisY}" stroke="#555"/>` +
    `<text x="${left - 4}" y="${top + 4}" text-anchor="end">${esc(shortNumber(max))}</text>` +
    (min !== max
      ? `<text x="${left - 4}" y="${axisY}" text-anchor="end">${esc(shortNumber(min))}</text>`
      : "") +
    `<text x="12" y="${(top + axisY) / 2}" text-anchor="middle" transform="rotate(-90 12 ${
      (top + axisY) / 2
    })">${esc(unit)}</text>` +
    `<text x="${left}" y="${axisY + 14}" text-anchor="start">${esc(points[0].label)}</text>` +
    (points.length > 1
      ? `<text x="${w - right}" y="${axisY + 14}" text-anchor="end">${
        esc(points[points.length - 1].label)
      }</text>`
      : "") +
    `<text x="${left + span / 2}" y="${h - 4}" text-anchor="middle">run (oldest → newest)</text>` +
    `<polyline fill="none" stroke="#2a6fb0" stroke-width="1.5" points="${path}"/>` +
    `<g fill="#2a6fb0">${dots}</g></svg>`;
}
