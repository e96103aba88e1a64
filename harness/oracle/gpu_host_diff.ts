/**
 * The cnuasgpu_host differential check: a seeded op sequence goes to the
 * guest's op runner (drivers/test/cnuasgpu_host_ops), its answers are
 * compared with the reference model's op by op, and a mismatch is cut down
 * to a short sequence that still mismatches (ddmin, harness/oracle/shrink.ts)
 * by replaying candidates on the runner.
 *
 * @example
 * ```ts
 * const run = await fuzzHostLoad(guestRunner(g), cfg, 7, 2000);
 * if (run.divergence) console.log(formatHostFailure(cfg, run));
 * ```
 */
import { GpuHostModel } from "../models/gpu_host.ts";
import { GpuHostModelUsageError } from "../models/gpu_host_mods.ts";
import { formatOp, type HostOp } from "../models/gpu_host_ops.ts";
import { type GpuHostConfig, moduleParams } from "../models/gpu_host_state.ts";
import { shq } from "../guest/shell.ts";
import type { Guest } from "../vm/types.ts";
import { GUEST_PATHS } from "../vm/types.ts";
import { generateHostOps } from "./gpu_host_gen.ts";
import { shrinkOps } from "./shrink.ts";

/** The op runner inside the guest. */
export const HOST_OPS_BIN = `${GUEST_PATHS.bin}/cnuasgpu_host_ops`;

/** Runs op lines on the device and returns the answer lines. */
export type HostOpsExec = (ops: HostOp[]) => Promise<string[]>;

/** Where the runner's answers and the model first disagreed. */
export interface HostDivergence {
  /** Index of the op. */
  opIndex: number;
  /** The op line. */
  op: string;
  /** What the runner answered ("(none)" when it stopped early). */
  got: string;
  /** What the model wanted. */
  want: string;
}

/** What comparing one run found. */
export interface HostCompare {
  /** The first disagreement, or null. */
  divergence: HostDivergence | null;
  /** Ops whose answers were compared. */
  compared: number;
  /** Answers the model took unchecked (too many candidate states). */
  unchecked: number;
}

/** Compare `answers` with the model's expectations for `ops` on a fresh load with `cfg`. */
export function compareHostRun(cfg: GpuHostConfig, ops: HostOp[], answers: string[]): HostCompare {
  const m = new GpuHostModel(cfg);
  for (const [i, op] of ops.entries()) {
    const got = answers[i];
    if (got === undefined) {
      return {
        divergence: { opIndex: i, op: formatOp(op), got: "(none)", want: "an answer" },
        compared: i,
        unchecked: m.unchecked,
      };
    }
    const bad = m.step(op, got);
    if (bad !== null) {
      return {
        divergence: { opIndex: i, op: formatOp(op), got, want: bad },
        compared: i + 1,
        unchecked: m.unchecked,
      };
    }
  }
  if (answers.length > ops.length) {
    const extra = answers[ops.length];
    return {
      divergence: { opIndex: ops.length, op: "(end)", got: extra, want: "no more answers" },
      compared: ops.length,
      unchecked: m.unchecked,
    };
  }
  return { divergence: null, compared: ops.length, unchecked: m.unchecked };
}

/** Run ops with the guest's op runner (node prefix /dev/cnuasgpu_host, `seed` for its bad handles). */
export function guestRunner(g: Guest, seed: number, timeoutSec = 900): HostOpsExec {
  return async (ops) => {
    const r = await g.run(`${shq(HOST_OPS_BIN)} -s ${seed}`, {
      stdin: ops.map(formatOp).join("\n") + "\n",
      timeoutSec,
    });
    if (r.code !== 0) {
      throw new Error(`cnuasgpu_host_ops exited ${r.code}: ${r.stderr.trim().slice(-800)}`);
    }
    return r.stdout.split("\n").filter((l) => l.trim() !== "");
  };
}

/** One fuzz run against one load. */
export interface HostFuzzRun {
  /** The seed of the sequence. */
  seed: number;
  /** Its ops. */
  ops: HostOp[];
  /** The runner's answers. */
  answers: string[];
  /** Ops compared. */
  compared: number;
  /** Answers taken unchecked. */
  unchecked: number;
  /** The first disagreement. */
  divergence: HostDivergence | null;
  /** The shrunk sequence and its own disagreement, when shrinking found one. */
  shrunk?: { ops: HostOp[]; answers: string[]; divergence: HostDivergence; runs: number };
}

/** Whether replaying `ops` on `exec` still disagrees with the model (and how). */
async function replay(
  exec: HostOpsExec,
  cfg: GpuHostConfig,
  ops: HostOp[],
): Promise<{ answers: string[]; divergence: HostDivergence | null }> {
  const answers = await exec(ops);
  try {
    return { answers, divergence: compareHostRun(cfg, ops, answers).divergence };
  } catch (e) {
    // A cut-down sequence the model cannot judge is not a failing one.
    if (e instanceof GpuHostModelUsageError) return { answers, divergence: null };
    throw e;
  }
}

/**
 * Generate `count` ops from `seed` for `cfg`, run them, compare; on a
 * mismatch shrink the prefix up to it (at most `shrinkRuns` replays).
 */
export async function fuzzHostLoad(
  exec: HostOpsExec,
  cfg: GpuHostConfig,
  seed: number,
  count: number,
  shrinkRuns = 60,
): Promise<HostFuzzRun> {
  const ops = generateHostOps(cfg, seed, count);
  const answers = await exec(ops);
  const c = compareHostRun(cfg, ops, answers);
  const run: HostFuzzRun = { seed, ops, answers, ...c };
  if (!c.divergence || shrinkRuns <= 0) return run;
  const prefix = ops.slice(0, c.divergence.opIndex + 1);
  let last: { ops: HostOp[]; answers: string[]; divergence: HostDivergence } | undefined;
  const res = await shrinkOps(prefix, async (cand) => {
    const r = await replay(exec, cfg, cand);
    if (r.divergence) last = { ops: cand, answers: r.answers, divergence: r.divergence };
    return r.divergence !== null;
  }, { maxRuns: shrinkRuns, budgetMs: 600_000 });
  if (last && last.ops.length === res.ops.length) run.shrunk = { ...last, runs: res.runs };
  return run;
}

/** A failure report: the load, the seed, the disagreement, then the shrunk sequence with its answers. */
export function formatHostFailure(cfg: GpuHostConfig, run: HostFuzzRun): string {
  const d = run.divergence;
  if (!d) return "";
  const lines = [
    `cnuasgpu_host ${moduleParams(cfg)}, seed ${run.seed}: op ${d.opIndex} \`${d.op}\``,
    `  runner: ${d.got}`,
    `  model:  ${d.want}`,
  ];
  if (run.shrunk) {
    const s = run.shrunk;
    lines.push(
      `  shrunk to ${s.ops.length} ops (${s.runs} replays), op ${s.divergence.opIndex}: ` +
        `runner ${s.divergence.got}; model ${s.divergence.want}`,
      ...s.ops.map((o, i) => `    ${formatOp(o)}    => ${s.answers[i] ?? "(none)"}`),
    );
  } else {
    lines.push("  (not shrunk: no shorter sequence disagreed again)");
  }
  return lines.join("\n");
}
