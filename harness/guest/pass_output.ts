/**
 * The output of the guest test programs that print `key=value` figures and
 * a last `PASS` line (poll_cq_bench, post_bench, mcast_fanout): parsed once
 * here, so each parser only names its figures.
 */
import { RowFailure } from "../matrix/row.ts";

/** The figures of a run that printed PASS. */
export interface PassFigures {
  /** The number printed as `key=`; a missing or non-numeric one is a RowFailure. */
  need(key: string): number;
  /** The text printed as `key=`, if any. */
  text(key: string): string | undefined;
}

/**
 * `out` of program `prog` as its figures; undefined when it did not print
 * PASS (the program found a failure, and said so in `out`).
 */
export function passFigures(prog: string, out: string): PassFigures | undefined {
  if (!/^PASS$/m.test(out)) return undefined;
  const kv = new Map<string, string>();
  for (const m of out.matchAll(/(\w+)=(\S+)/g)) kv.set(m[1], m[2]);
  return {
    need(key: string): number {
      const v = Number(kv.get(key));
      if (!kv.has(key) || !Number.isFinite(v)) {
        throw new RowFailure(`${prog} printed PASS without ${key}: ${out.slice(-800)}`);
      }
      return v;
    },
    text: (key: string) => kv.get(key),
  };
}
