/**
 * `report history` in a terminal: the last runs as columns, rows as lines,
 * each cell a status letter and the row's seconds; flaky rows flagged with
 * why.
 */
import { detectFlaky } from "./flaky.ts";
import { chronological, type HistoryIndex, rowTrends } from "./history_index.ts";
import { STATUS_LETTER } from "./site.ts";

const CELL = 9;

/** The terminal grid of the last `last` matrix runs of `index` (pure). */
export function historyGrid(index: HistoryIndex, last: number, source: string): string {
  const matrix = chronological(index.runs.filter((r) => r.kind === "matrix")).slice(-last);
  const bench = index.runs.filter((r) => r.kind === "bench");
  const out = [
    `${source}: ${index.runs.length} runs (${matrix.length} of the last matrix runs shown, oldest first; ${bench.length} bench runs)`,
  ];
  if (matrix.length === 0) return out.join("\n") + "\n";
  matrix.forEach((r, i) => {
    out.push(
      `  ${String(i + 1).padStart(2)}  ${r.runId.padEnd(30)} ${
        r.startedAt.slice(0, 16).replace("T", " ")
      }  ${r.project.padEnd(14)} ${r.status}${r.shard ? `  (${r.shard})` : ""}`,
    );
  });
  const ids: string[] = [];
  for (const r of matrix) for (const row of r.rows) if (!ids.includes(row.id)) ids.push(row.id);
  const width = Math.max(4, ...ids.map((i) => i.length)) + 2;
  const flaky = detectFlaky(rowTrends(matrix, last), last);
  out.push(
    "",
    ("row".padEnd(width) + matrix.map((_, i) => String(i + 1).padEnd(CELL)).join("")).trimEnd(),
  );
  for (const id of ids) {
    const cells = matrix.map((r) => {
      const row = r.rows.find((x) => x.id === id);
      if (!row) return "·".padEnd(CELL);
      const secs = row.durationSec === undefined ? "" : row.durationSec.toFixed(1);
      return `${STATUS_LETTER[row.status]} ${secs}`.padEnd(CELL);
    }).join("");
    out.push(`${id.padEnd(width)}${cells}${flaky[id] ? `  FLAKY: ${flaky[id]}` : ""}`.trimEnd());
  }
  out.push("", "P PASS, F FAIL, E ERROR, M MISS, D DONE, S SKIP (letter, then seconds); · not run");
  return out.join("\n") + "\n";
}
