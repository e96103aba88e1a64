/**
 * What the HTML page shows of a run directory beyond matrix.json: which
 * artifacts exist, each step's transcript lines, each capture's oracle
 * summary. page_files.ts reads it from disk; html.ts draws it (and stays a
 * pure function). The transcript splitting here is pure too.
 */

/** A step's share of its row's transcript. */
export interface StepExcerpt {
  /** Its lines as a file, relative to the run directory (absent when it has none). */
  file?: string;
  /** How many transcript lines the step produced. */
  lineCount: number;
  /** The last lines of a step that did not pass, to show inline (empty for passing steps). */
  tail: string[];
}

/** The RDMA wire oracle's verdict on one capture (`*.violations.json`). */
export interface CaptureSummary {
  /** The `*.violations.json` file, relative to the run directory. */
  report: string;
  /** The capture it judged, relative to the run directory, when that is an artifact. */
  capture?: string;
  /** Frames the oracle checked. */
  framesChecked?: number;
  /** Violations it found. */
  violationCount?: number;
  /** Violations by rule. */
  byRule: Record<string, number>;
  /** Why the file could not be read, when it could not. */
  problem?: string;
}

/** Everything of a run directory the page needs beyond matrix.json and its PageContext. */
export interface PageFiles {
  /** Artifacts (run-relative paths) that exist; undefined: take every artifact as present. */
  present?: Set<string>;
  /** Per row id, one excerpt per entry of the row's `steps`, same order. */
  steps: Record<string, StepExcerpt[]>;
  /** Per row id, its captures' oracle summaries. */
  captures: Record<string, CaptureSummary[]>;
}

/** A page of a run alone, nothing read from disk: every artifact taken as present. */
export function emptyPageFiles(): PageFiles {
  return { steps: {}, captures: {} };
}

/** Lines inlined for a step that did not pass; the rest is in its excerpt file. */
export const INLINE_TAIL_LINES = 30;

/** A transcript line that opens a step: `[12.3s] == step <name>`. */
const STEP_MARK = /^\[[\d.]+s\] == step (.*)$/;

/**
 * Split a transcript into the lines each step produced: from its
 * `== step <name>` line to the next step's. Steps are matched by name and
 * occurrence (matrix.json lists steps as they finished, the transcript as
 * they started, so nested steps differ in order); a step with no marker
 * gets no lines. Returns one array per entry of `stepNames`.
 */
export function splitTranscript(text: string, stepNames: string[]): string[][] {
  const sections = new Map<string, string[][]>();
  let current: string[] | undefined;
  for (const line of text.split("\n")) {
    const mark = STEP_MARK.exec(line);
    if (mark) {
      current = [line];
      const list = sections.get(mark[1]) ?? [];
      list.push(current);
      sections.set(mark[1], list);
    } else if (current) current.push(line);
  }
  const used = new Map<string, number>();
  return stepNames.map((name) => {
    const n = used.get(name) ?? 0;
    used.set(name, n + 1);
    const lines = sections.get(name)?.[n] ?? [];
    while (lines.length && lines[lines.length - 1] === "") lines.pop();
    return lines;
  });
}
