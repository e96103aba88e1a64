/**
 * What changed between two runs: status changes (new failures first) and
 * measurement deltas judged against the noise of that measurement in the
 * history. Pure; command.ts loads the runs and prints.
 *
 * The noise rule: a delta b − a of a row's measurement is *beyond noise*
 * when |b − a| exceeds the measurement's noise band, computed from its
 * values in the last runs of the history (run b excluded, at least
 * `minPoints` values): threshold = max(k · 1.4826 · MAD, relFloor · |median|),
 * k = 3 by default. MAD (the median absolute deviation from the median),
 * scaled by 1.4826, estimates the standard deviation of normal noise but is
 * not moved by the one outlier run a history of TCG timings always has; the
 * 1 % floor keeps a measurement that never varied (MAD 0) from flagging a
 * last-digit change, while a count that was always exactly 0 (violations)
 * still flags any change. With too few values the delta is listed as not
 * judged; with no history at all none is judged, and the output says so.
 */
import type { MatrixJson, Measurement, Status } from "./schema.ts";
import { isFailing } from "./schema.ts";
import { median } from "../stats.ts";

/** How deltas are judged. */
export interface NoiseRule {
  /** Scaled MADs a delta must exceed (default 3). */
  k: number;
  /** Fewest history values that make a band (default 3). */
  minPoints: number;
  /** The band is at least this share of |median| (default 0.01). */
  relFloor: number;
}

/** The defaults of NoiseRule. */
export const DEFAULT_NOISE: NoiseRule = { k: 3, minPoints: 3, relFloor: 0.01 };

/** A measurement's noise over past runs. */
export interface NoiseBand {
  /** Median of the values. */
  median: number;
  /** Median absolute deviation from the median. */
  mad: number;
  /** |delta| above this is beyond noise. */
  threshold: number;
  /** How many values it comes from. */
  points: number;
}

/** The noise band of `values`, or undefined with fewer than `rule.minPoints`. */
export function noiseBand(
  values: number[],
  rule: NoiseRule = DEFAULT_NOISE,
): NoiseBand | undefined {
  if (values.length < rule.minPoints) return undefined;
  const med = median(values);
  const mad = median(values.map((v) => Math.abs(v - med)));
  return {
    median: med,
    mad,
    threshold: Math.max(rule.k * 1.4826 * mad, rule.relFloor * Math.abs(med)),
    points: values.length,
  };
}

/** How a delta was judged. */
export type Judgement = "beyond noise" | "within noise" | "not judged";

/** A changed measurement of a row present in both runs. */
export interface MeasurementDelta {
  /** Row id. */
  row: string;
  /** Measurement name (`durationSec` is the row's wall time). */
  name: string;
  /** Unit. */
  unit: string;
  /** Value in run a. */
  a: number;
  /** Value in run b. */
  b: number;
  /** b − a. */
  delta: number;
  /** The judgement. */
  judgement: Judgement;
  /** The band it was judged against. */
  band?: NoiseBand;
}

/** What happened to a row's status. */
export type ChangeKind = "new failure" | "fixed" | "changed" | "added" | "removed";

/** A row whose status differs (or that is in one run only). */
export interface StatusChange {
  /** Row id. */
  row: string;
  /** What kind of change. */
  kind: ChangeKind;
  /** Status in run a (absent: not in a). */
  a?: Status;
  /** Status in run b (absent: not in b). */
  b?: Status;
  /** b's reason, for a new failure. */
  reason?: string;
}

/** The diff of two runs. */
export interface RunDiff {
  /** Run a's id and project. */
  a: { runId: string; project: string };
  /** Run b's id and project. */
  b: { runId: string; project: string };
  /** Ordered: new failures, fixed, changed, added, removed. */
  statusChanges: StatusChange[];
  /** Every non-zero delta, beyond noise first (largest |delta|/threshold first). */
  deltas: MeasurementDelta[];
  /** History runs the bands come from; 0 when no history was given. */
  historyRuns: number;
  /** The rule used. */
  rule: NoiseRule;
}

const ORDER: ChangeKind[] = ["new failure", "fixed", "changed", "added", "removed"];

function changeKind(a: Status | undefined, b: Status | undefined): ChangeKind | undefined {
  if (a === b) return undefined;
  if (b !== undefined && isFailing(b) && (a === undefined || !isFailing(a))) return "new failure";
  if (a === undefined) return "added";
  if (b === undefined) return "removed";
  if (isFailing(a) && (b === "PASS" || b === "DONE")) return "fixed";
  return "changed";
}

function measurementsOf(r: MatrixJson["rows"][number]): Record<string, Measurement> {
  return { ...r.measurements, durationSec: { value: r.durationSec, unit: "s" } };
}

/**
 * Diff run a against run b. `history`: earlier runs of the same kind (any
 * order; b is left out by run id) whose values make the noise bands;
 * undefined when there is no history.
 */
export function diffRuns(
  a: MatrixJson,
  b: MatrixJson,
  history?: MatrixJson[],
  rule: NoiseRule = DEFAULT_NOISE,
): RunDiff {
  const rowsA = new Map(a.rows.map((r) => [r.id, r]));
  const rowsB = new Map(b.rows.map((r) => [r.id, r]));
  const ids = [...new Set([...rowsA.keys(), ...rowsB.keys()])];
  const statusChanges: StatusChange[] = [];
  for (const id of ids) {
    const ra = rowsA.get(id), rb = rowsB.get(id);
    const kind = changeKind(ra?.status, rb?.status);
    if (!kind) continue;
    statusChanges.push({
      row: id,
      kind,
      ...(ra ? { a: ra.status } : {}),
      ...(rb ? { b: rb.status } : {}),
      ...(kind === "new failure" && rb?.reason ? { reason: rb.reason } : {}),
    });
  }
  statusChanges.sort((x, y) => ORDER.indexOf(x.kind) - ORDER.indexOf(y.kind));
  const past = (history ?? []).filter((m) => m.provenance.runId !== b.provenance.runId);
  const deltas: MeasurementDelta[] = [];
  for (const [id, rb] of rowsB) {
    const ra = rowsA.get(id);
    if (!ra) continue;
    const ma = measurementsOf(ra), mb = measurementsOf(rb);
    for (const [name, vb] of Object.entries(mb)) {
      const va = ma[name];
      if (!va || typeof va.value !== "number" || typeof vb.value !== "number") continue;
      const delta = vb.value - va.value;
      if (delta === 0) continue;
      const values = past.flatMap((m) => {
        const r = m.rows.find((x) => x.id === id);
        const v = r ? measurementsOf(r)[name]?.value : undefined;
        return typeof v === "number" && Number.isFinite(v) ? [v] : [];
      });
      const band = history ? noiseBand(values, rule) : undefined;
      deltas.push({
        row: id,
        name,
        unit: vb.unit,
        a: va.value,
        b: vb.value,
        delta,
        judgement: !band
          ? "not judged"
          : Math.abs(delta) > band.threshold
          ? "beyond noise"
          : "within noise",
        ...(band ? { band } : {}),
      });
    }
  }
  const weight = (d: MeasurementDelta) =>
    d.judgement === "beyond noise" ? 2 + Math.abs(d.delta) / (d.band!.threshold || 1e-300) : 0;
  deltas.sort((x, y) => weight(y) - weight(x));
  return {
    a: { runId: a.provenance.runId, project: a.provenance.project },
    b: { runId: b.provenance.runId, project: b.provenance.project },
    statusChanges,
    deltas,
    historyRuns: history ? past.length : 0,
    rule,
  };
}

function num(v: number): string {
  return Number.isInteger(v) ? String(v) : v.toPrecision(4).replace(/\.?0+$/, "");
}

function deltaText(d: MeasurementDelta): string {
  const pct = d.a !== 0
    ? ` (${d.delta > 0 ? "+" : ""}${(100 * d.delta / Math.abs(d.a)).toFixed(1)} %)`
    : "";
  const band = d.band ? `; noise ±${num(d.band.threshold)} over ${d.band.points} runs` : "";
  return `${num(d.a)} → ${num(d.b)} ${d.unit}${pct}${band}`;
}

function statusText(c: StatusChange): string {
  return `${c.a ?? "(absent)"} → ${c.b ?? "(absent)"}`;
}

function judgedHeader(d: RunDiff): string {
  if (d.historyRuns === 0 && !d.deltas.some((x) => x.band)) {
    return "measurement deltas, NOT judged (no history to tell noise from change; give --history DIR)";
  }
  return `measurement deltas judged against the last ${d.historyRuns} runs of the history ` +
    `(beyond noise: |Δ| > max(${d.rule.k}·1.4826·MAD, ${
      d.rule.relFloor * 100
    } % of the median); fewer than ${d.rule.minPoints} values: not judged)`;
}

/** The diff as plain text for CI logs. */
export function diffText(d: RunDiff): string {
  const out = [`diff ${d.a.runId} (${d.a.project}) → ${d.b.runId} (${d.b.project})`, ""];
  out.push(`status changes: ${d.statusChanges.length || "none"}`);
  for (const c of d.statusChanges) {
    out.push(
      `  ${c.kind.toUpperCase().padEnd(12)} ${c.row.padEnd(16)} ${statusText(c)}${
        c.reason ? `  — ${c.reason.split("\n")[0]}` : ""
      }`,
    );
  }
  out.push("", judgedHeader(d));
  const groups: [string, MeasurementDelta[]][] = [
    ["beyond noise", d.deltas.filter((x) => x.judgement === "beyond noise")],
    ["not judged", d.deltas.filter((x) => x.judgement === "not judged")],
  ];
  for (const [title, list] of groups) {
    if (!list.length) continue;
    out.push(`  ${title} (${list.length}):`);
    for (const x of list) out.push(`    ${x.row} ${x.name}: ${deltaText(x)}`);
  }
  const within = d.deltas.filter((x) => x.judgement === "within noise").length;
  if (within) out.push(`  within noise: ${within} changed measurements not listed`);
  if (!d.deltas.length) out.push("  no measurement changed");
  return out.join("\n") + "\n";
}

function cell(s: string): string {
  return s.replaceAll("|", "\\|").replaceAll("\n", " ");
}

/** The diff as Markdown, for a pull-request comment. */
export function diffMarkdown(d: RunDiff): string {
  const out = [
    `### Validation matrix: \`${d.a.runId}\` → \`${d.b.runId}\``,
    "",
    `Projects ${d.a.project} → ${d.b.project}.`,
    "",
  ];
  if (d.statusChanges.length) {
    out.push("| change | row | status | reason |", "|---|---|---|---|");
    for (const c of d.statusChanges) {
      const mark = c.kind === "new failure"
        ? "❌ **new failure**"
        : c.kind === "fixed"
        ? "✅ fixed"
        : c.kind;
      out.push(`| ${mark} | ${cell(c.row)} | ${statusText(c)} | ${cell(c.reason ?? "")} |`);
    }
  } else out.push("No status changes.");
  out.push("", judgedHeader(d) + ".", "");
  const shown = d.deltas.filter((x) => x.judgement !== "within noise");
  if (shown.length) {
    out.push("| row | measurement | change | judged |", "|---|---|---|---|");
    for (const x of shown) {
      out.push(`| ${cell(x.row)} | ${cell(x.name)} | ${cell(deltaText(x))} | ${x.judgement} |`);
    }
  }
  const within = d.deltas.length - shown.length;
  if (within) out.push("", `${within} more measurements changed within noise.`);
  if (!d.deltas.length) out.push("No measurement changed.");
  return out.join("\n") + "\n";
}
