/**
 * Flaky rows: a pure judgement over a row's recent runs (oldest first), with
 * a sentence saying why. Two rules (docs/howto.md, "Publish runs"):
 *
 * 1. Same commit: within the window the row both passed (PASS/DONE) and
 *    failed (FAIL/ERROR) on one clean commit — a `provenance.project` that
 *    names a commit (not `unknown`, not `…-dirty`, whose working tree may
 *    differ between runs).
 * 2. Flip-flop: the row's outcome flipped and flipped back (PASS→FAIL→PASS
 *    or FAIL→PASS→FAIL) with the same `project` on every run from the first
 *    flip to the flip back — no code change between the flips. This is what
 *    rule 1 cannot see on dirty or unknown trees; a single flip there is
 *    most likely the edit under test, so it takes the flip back.
 *
 * MISS and SKIP say nothing about flakiness (a row not implemented, not
 * run) and are left out of both rules.
 */
import type { Status, TrendPoint } from "./schema.ts";

/** Runs of a row the rules look at: the last this many (the default of `--last`). */
export const FLAKY_WINDOW = 10;

type Outcome = "pass" | "fail";

function outcome(s: Status): Outcome | undefined {
  if (s === "PASS" || s === "DONE") return "pass";
  if (s === "FAIL" || s === "ERROR") return "fail";
  return undefined;
}

/** Whether a `project` string names one commit's tree exactly. */
export function isCleanCommit(project: string): boolean {
  return project !== "" && project !== "unknown" && !project.endsWith("-dirty");
}

function sameCommitReason(points: TrendPoint[]): string | undefined {
  const byProject = new Map<string, TrendPoint[]>();
  for (const p of points) {
    if (!isCleanCommit(p.project)) continue;
    byProject.set(p.project, [...(byProject.get(p.project) ?? []), p]);
  }
  for (const [project, ps] of byProject) {
    const pass = ps.find((p) => outcome(p.status) === "pass");
    const fail = ps.find((p) => outcome(p.status) === "fail");
    if (pass && fail) {
      return `it passed and failed on the same commit ${project}: ${pass.status} in run ${pass.runId}, ${fail.status} in run ${fail.runId}`;
    }
  }
  return undefined;
}

function flipFlopReason(points: TrendPoint[]): string | undefined {
  const judged = points.filter((p) => outcome(p.status) !== undefined);
  // indices in `judged` where the outcome differs from the run before
  const flips: number[] = [];
  for (let i = 1; i < judged.length; i++) {
    if (outcome(judged[i].status) !== outcome(judged[i - 1].status)) flips.push(i);
  }
  for (let f = 1; f < flips.length; f++) {
    const first = flips[f - 1], back = flips[f];
    const span = judged.slice(first, back + 1);
    if (span.every((p) => p.project === span[0].project)) {
      const before = judged[first - 1], mid = judged[first], after = judged[back];
      return `it flipped ${before.status}→${mid.status}→${after.status} with no code change between the flips (project ${mid.project}, runs ${mid.runId} to ${after.runId})`;
    }
  }
  return undefined;
}

/**
 * Why a row's runs (oldest first) look flaky, or undefined. Only the last
 * `window` runs count.
 */
export function flakyReason(points: TrendPoint[], window = FLAKY_WINDOW): string | undefined {
  const recent = points.slice(-window);
  return sameCommitReason(recent) ?? flipFlopReason(recent);
}

/** The rows among `trends` (row id → runs, oldest first) that look flaky, each with why. */
export function detectFlaky(
  trends: Record<string, TrendPoint[]>,
  window = FLAKY_WINDOW,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [id, points] of Object.entries(trends)) {
    const why = flakyReason(points, window);
    if (why) out[id] = why;
  }
  return out;
}
