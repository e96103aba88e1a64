/**
 * The cnuasgpu_host differential check: a seeded op sequence goes to the
 * guest's op runner (drivers/test/cnuasgpu_host_ops), its answers are
 * compared with the reference model's op by op, and a mismatch is cut down
 * to a short sequence that still mismatches (ddmin, harness/oracle/shrink.ts)
 * by replaying candidates on the runner.
 *
 * @example
 * ```ts
 * const run = await fuzzHostLoad(exec, cfg, 7, 2000); // exec: ops in, the runner's answers out
 * if (run.divergence) console.log(formatHostFailure(cfg, run));
 * ```
 */
import { GpuHostModel } from "../models/gpu_host.ts";
import { CAP } from "../models/gpu_host_mem_ops.ts";
import { GpuHostModelUsageError } from "../models/gpu_host_mods.ts";
import { formatOp, type HostOp } from "../models/gpu_host_ops.ts";
import { type GpuHostConfig, moduleParams } from "../models/gpu_host_state.ts";
import { generateHostOps } from "./gpu_host_gen.ts";
import { shrinkOps } from "./shrink.ts";

export { GPU_HOST_DEFAULTS, type GpuHostConfig, moduleParams } from "../models/gpu_host_state.ts";
export { formatOp, type HostOp } from "../models/gpu_host_ops.ts";

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
  shrinkRuns = 120,
): Promise<HostFuzzRun> {
  const ops = generateHostOps(cfg, seed, count);
  const answers = await exec(ops);
  const c = compareHostRun(cfg, ops, answers);
  const run: HostFuzzRun = { seed, ops, answers, ...c };
  if (!c.divergence || shrinkRuns <= 0) return run;
  // An op the runner skipped did nothing on either side: it can go before shrinking starts.
  const at = c.divergence.opIndex;
  const prefix = ops.slice(0, at + 1).filter((_, i) => i === at || answers[i] !== "skip");
  let last: { ops: HostOp[]; answers: string[]; divergence: HostDivergence } | undefined;
  const res = await shrinkOps(prefix, async (cand) => {
    const r = await replay(exec, cfg, cand);
    if (r.divergence) last = { ops: cand, answers: r.answers, divergence: r.divergence };
    return r.divergence !== null;
  }, { maxRuns: shrinkRuns, budgetMs: 600_000 });
  if (last && last.ops.length === res.ops.length) run.shrunk = { ...last, runs: res.runs };
  // What the last failing replay skipped did nothing: try once without it.
  const s = run.shrunk;
  if (s) {
    const end = s.divergence.opIndex;
    const lean = s.ops.filter((_, i) => i === end || (i < end && s.answers[i] !== "skip"));
    if (lean.length < s.ops.length) {
      const r = await replay(exec, cfg, lean);
      if (r.divergence) {
        run.shrunk = { ops: lean, answers: r.answers, divergence: r.divergence, runs: s.runs + 1 };
      }
    }
  }
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

/** What a node's configuration attributes in sysfs must say for a load with `cfg`. */
export function expectedHostSysfs(cfg: GpuHostConfig): Record<string, string> {
  const caps = (cfg.zerocopy ? CAP.ZEROCOPY : 0) | (cfg.pinned ? CAP.PINNED : 0) |
    (cfg.dmabuf ? CAP.DMABUF | CAP.PEER_RDMA : 0) | (cfg.async ? CAP.ASYNC : 0);
  const features = (["zerocopy", "pinned", "dmabuf", "async"] as const).filter((f) => cfg[f]);
  return {
    devmem_size: String(cfg.devmemMb * 2 ** 20),
    pinned_max: String(cfg.pinned ? cfg.pinnedMaxMb * 2 ** 20 : 0),
    queue_depth: String(cfg.async ? cfg.queueDepth : 0),
    batch_max: String(cfg.async ? cfg.batchMax : 0),
    caps: String(caps),
    features: features.join(" "),
  };
}

/** Lines naming what in `got` (a node's sysfs, `caps` in hex) differs from `cfg`'s expectations. */
export function hostSysfsMismatches(got: Record<string, string>, cfg: GpuHostConfig): string[] {
  const want = expectedHostSysfs(cfg);
  const norm: Record<string, string> = { ...got, caps: String(parseInt(got.caps ?? "", 16)) };
  return Object.entries(want).filter(([k, v]) => norm[k] !== v).map(([k, v]) =>
    `${k} is ${got[k] ?? "(missing)"}, want ${k === "caps" ? `0x${Number(v).toString(16)}` : v}`
  );
}
