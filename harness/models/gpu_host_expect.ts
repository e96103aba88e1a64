/**
 * What the cnuasgpu_host model expects of one runner answer: a check (null
 * when the answer is allowed, else what was wanted), an allowed answer the
 * generator's own copy of the model follows, and how the model follows an
 * allowed answer. Helpers build the usual shapes: skip, one errno, an ok
 * line with exact fields.
 *
 * @example
 * ```ts
 * const e = errno("ENOENT");
 * e.check(parseAnswer("err ENOENT")); // null
 * ```
 */
import type { Answer } from "./gpu_host_ops.ts";

/** The model's expectation of one answer. */
export interface Expect {
  /** Null when `a` is allowed, else what was wanted. */
  check(a: Answer): string | null;
  /** An allowed answer. */
  nominal: string;
  /** Follow an allowed answer (the only place the model's state changes). */
  then?(a: Answer): void;
}

/** The runner must not have called anything. */
export const SKIP: Expect = {
  check: (a) => (a.status === "skip" ? null : "want skip"),
  nominal: "skip",
};

/** The call must fail with `e`. */
export function errno(e: string): Expect {
  return {
    check: (a) => (a.status === "err" && a.errno === e ? null : `want err ${e}`),
    nominal: `err ${e}`,
  };
}

/**
 * The call must succeed with exactly these fields (in any order, none
 * besides); `extra` checks fields the model does not predict exactly, and
 * `extraNominal` gives allowed values of them.
 */
export function okFields(
  fields: Record<string, string>,
  then?: (a: Answer) => void,
  extra?: { check(a: Answer): string | null; nominal: Record<string, string> },
): Expect {
  const all = { ...fields, ...(extra?.nominal ?? {}) };
  const nominal = ["ok", ...Object.entries(all).map(([k, v]) => `${k}=${v}`)].join(" ");
  return {
    nominal,
    then,
    check(a) {
      if (a.status !== "ok") return `want ${nominal}`;
      for (const [k, v] of Object.entries(fields)) {
        if (a.kv.get(k) !== v) return `want ${nominal} (${k})`;
      }
      for (const k of a.kv.keys()) if (!(k in all)) return `want ${nominal} (no ${k})`;
      for (const k of Object.keys(all)) if (!a.kv.has(k)) return `want ${nominal} (${k} missing)`;
      return extra ? extra.check(a) : null;
    },
  };
}

/** Either of two expectations (the first that allows the answer is followed). */
export function either(x: Expect, y: Expect): Expect {
  return {
    nominal: x.nominal,
    check: (a) => {
      const bx = x.check(a);
      if (bx === null) return null;
      return y.check(a) === null ? null : `${bx}, or ${y.nominal}`;
    },
    then: (a) => (x.check(a) === null ? x.then?.(a) : y.then?.(a)),
  };
}
