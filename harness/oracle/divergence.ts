/**
 * The vocabulary both differential oracles (cnuas-vnic and cnuasgpu) report
 * in: a {@link Divergence} names the operation after which the QEMU device
 * and its reference model first disagreed, what kind of observation differed
 * and how; {@link shrinkDivergence} cuts the failing sequence down to a short
 * reproduction; {@link opBytes} gives the bytes a seeded fill or send carries,
 * so a printed op replays exactly.
 *
 * @example
 * ```ts
 * const d: Divergence<VnicOp> = { opIndex: 3, op, kind: "read", detail: "device 0x1, model 0x0" };
 * console.log(formatDivergence(d)); // read at op 3 {...}: device 0x1, model 0x0
 * ```
 */
import { prng, randBytes } from "../prng.ts";
import { shrinkOps, type ShrinkOptions } from "./shrink.ts";

/** Where QEMU is. */
export interface OracleEnv {
  /** Path of `qemu-system-x86_64` with the device models. */
  binary: string;
  /** Firmware search directories for `-L`. */
  firmware?: string[];
  /** Environment QEMU runs with besides ours (the sanitizer build's options). */
  qemuEnv?: Record<string, string>;
}

/** Something to run: a generator (fresh sequence of `count` ops) or a fixed list (replay). */
export type OpSource<Op> = { seed: number; count: number } | { list: Op[] };

/** Where the device and the model first disagreed. */
export interface Divergence<Op> {
  /** Index of the operation after which it showed (the sequence length: at the end). */
  opIndex: number;
  /** That operation; null when the difference showed before the first or after the last. */
  op: Op | null;
  /**
   * The observation that differed: read, irq, msi, frames, memory, send,
   * accept, closed, clock, link, logs, connect or crash.
   */
  kind: string;
  /** What was compared, then the device's and the model's side, in words. */
  detail: string;
}

/** A failing sequence after shrinking, with the divergence of its own replay. */
export interface ShrunkDivergence<Op> {
  /** The shortest failing sequence found. */
  ops: Op[];
  /** Its divergence. */
  divergence: Divergence<Op>;
  /** Replays the shrinker made. */
  runs: number;
  /** Removing any single op makes it pass. */
  minimal: boolean;
}

/** One line: kind, operation and detail. */
export function formatDivergence<Op>(d: Divergence<Op>): string {
  return `${d.kind} at op ${d.opIndex} ${JSON.stringify(d.op)}: ${d.detail}`;
}

/**
 * A failure report: the headline (device, seed, start state), the divergence,
 * then the shrunk sequence with its own divergence or, when it was not
 * shrunk, the lines of `unshrunk` (how to replay the original).
 */
export function formatFailure<Op>(
  headline: string,
  divergence: Divergence<Op>,
  shrunk: ShrunkDivergence<Op> | undefined,
  unshrunk: string[],
): string {
  const lines = [headline, `  ${formatDivergence(divergence)}`];
  if (shrunk) {
    lines.push(
      `  shrunk to ${shrunk.ops.length} ops (${shrunk.runs} replays${
        shrunk.minimal ? ", 1-minimal" : ""
      }):`,
      `  ${formatDivergence(shrunk.divergence)}`,
      ...formatOps(shrunk.ops),
    );
  } else {
    lines.push(...unshrunk);
  }
  return lines.join("\n");
}

/** A sequence as numbered lines, one JSON op each, for a failure report. */
export function formatOps<Op>(ops: readonly Op[], indent = "    "): string[] {
  return ops.map((op, i) => `${indent}${String(i).padStart(4)} ${JSON.stringify(op)}`);
}

/** Index of the first byte where `a` and `b` differ (the shorter length when one is a prefix); -1 when equal. */
export function firstDiff(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : n;
}

/** The bytes of a fill, memory write or peer send: a function of the op's seed alone. */
export function opBytes(seed: number, len: number): Uint8Array {
  return randBytes(prng(seed), len);
}

/** `0x` and lower-case hex. */
export function hex(v: bigint | number): string {
  return `0x${v.toString(16)}`;
}

/** Options of {@link shrinkDivergence}. */
export interface ShrinkDivergenceOptions extends ShrinkOptions {
  /** Count a candidate as failing only when it diverges in the same kind (default false). */
  sameKind?: boolean;
}

/**
 * Shrink the operations up to and including the diverging one to a short
 * sequence that still diverges, then replay that once more so the reported
 * divergence is its own (the last one seen while shrinking if the replay
 * passes, which a flaky device can cause).
 */
export async function shrinkDivergence<Op>(
  ops: readonly Op[],
  divergence: Divergence<Op>,
  replay: (ops: Op[]) => Promise<Divergence<Op> | null>,
  opts: ShrinkDivergenceOptions = {},
): Promise<ShrunkDivergence<Op>> {
  const prefix = ops.slice(0, divergence.opIndex + 1);
  let last = divergence;
  const s = await shrinkOps(prefix, async (cand) => {
    const d = await replay(cand);
    if (!d || (opts.sameKind && d.kind !== divergence.kind)) return false;
    last = d;
    return true;
  }, opts);
  const final = await replay(s.ops);
  return { ops: s.ops, divergence: final ?? last, runs: s.runs, minimal: s.minimal };
}
