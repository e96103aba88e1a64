/**
 * Comparing a command's output with the output a HowTo page shows
 * (docs/howto/README.md, "How a page is executed"):
 *
 * - lines are compared with trailing blanks removed, and blank lines at the
 *   start and end of either side ignored;
 * - a line that is exactly `...` matches any number of lines (none too);
 * - `{...}` inside a line matches any text within that one line
 *   (addresses, figures, times).
 *
 * Everything else must be equal, so a page whose output changed fails.
 */

/** The first place the output left the page. */
export interface Mismatch {
  /** 1-based line within the expected block (the page line is the block's + this). */
  expectedLine: number;
  /** The expected line, or "(end of expected output)". */
  expected: string;
  /** The output line there, or "(end of output)". */
  actual: string;
}

const ANY_LINES = "...";
const ANY_TEXT = "{...}";

/** Trim trailing blanks per line and blank lines at both ends. */
function normalise(text: string): string[] {
  const lines = text.replaceAll("\r\n", "\n").split("\n").map((l) => l.trimEnd());
  while (lines.length && !lines[0]) lines.shift();
  while (lines.length && !lines[lines.length - 1]) lines.pop();
  return lines;
}

/** A pattern line as a regular expression. */
function lineRegex(pattern: string): RegExp {
  const parts = pattern.split(ANY_TEXT).map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(`^${parts.join(".*")}$`);
}

/**
 * Whether `actual` matches `expected`; undefined when it does, else where it
 * first did not (the furthest point any reading of the `...` lines reached).
 */
export function matchOutput(expected: string, actual: string): Mismatch | undefined {
  const want = normalise(expected);
  const got = normalise(actual);
  const regexes = want.map((l) => (l === ANY_LINES ? undefined : lineRegex(l)));
  let furthest: { w: number; g: number } = { w: 0, g: 0 };
  const seen = new Set<string>();
  // depth-first over the `...` choices; memoised, so at most want × got states
  const walk = (w: number, g: number): boolean => {
    const key = `${w},${g}`;
    if (seen.has(key)) return false;
    seen.add(key);
    if (w > furthest.w || (w === furthest.w && g > furthest.g)) furthest = { w, g };
    if (w === want.length) return g === got.length;
    const re = regexes[w];
    if (!re) return walk(w + 1, g) || (g < got.length && walk(w, g + 1));
    return g < got.length && re.test(got[g]) && walk(w + 1, g + 1);
  };
  if (walk(0, 0)) return undefined;
  const { w, g } = furthest;
  return {
    expectedLine: w + 1,
    expected: w < want.length ? want[w] : "(end of expected output)",
    actual: g < got.length ? got[g] : "(end of output)",
  };
}
