/**
 * libcnuasdev in a guest and on the host: where its programs are, what
 * `cnuasdev_suite` prints (parsed), and the cross-backend differential —
 * every case two backends both ran must print the same line.
 *
 * @example
 * ```ts
 * const runs = [parseSuite(pcieOut), parseSuite(hostOut), parseSuite(softOut)];
 * const d = differential(runs);
 * if (d.mismatches.length) throw new Error(d.mismatches.join("\n"));
 * ```
 */
import { RowFailure } from "../matrix/row.ts";
import type { Measurement } from "../report/schema.ts";
import { type Guest, GUEST_PATHS } from "../vm/types.ts";
import { shq } from "./shell.ts";

/** The suite and the no-device smoke, as the lab installs them in a guest. */
export const CNUASDEV_SUITE = `${GUEST_PATHS.bin}/cnuasdev_suite`;
export const CNUASDEV_FAKE_SMOKE = `${GUEST_PATHS.bin}/cnuasdev_hostdev_fake_smoke`;
/** The bandwidth and queue bench (`drivers/lib/test/cnuasdev_bench.c`). */
export const CNUASDEV_BENCH = `${GUEST_PATHS.bin}/cnuasdev_bench`;
/** The example's source in a guest, built there with pkg-config. */
export const CNUASDEV_LIST_SRC = `${GUEST_PATHS.src}/cnuasdev_list.c`;

/**
 * modprobe cnuasgpu_host (unless loaded) with `params` (module parameters,
 * `name=value` words) and wait for /dev/cnuasgpu_host0.
 */
export async function loadCnuasgpuHost(g: Guest, params: string[] = []): Promise<void> {
  const r = await g.run(
    [
      `grep -q '^cnuasgpu_host ' /proc/modules || modprobe cnuasgpu_host ${
        params.map(shq).join(" ")
      } || exit 3`,
      "for i in $(seq 50); do [ -c /dev/cnuasgpu_host0 ] && exit 0; sleep 0.1; done",
      "exit 4",
    ].join("\n"),
    { timeoutSec: 60 },
  );
  if (r.code !== 0) {
    throw new RowFailure(
      `${g.name}: modprobe cnuasgpu_host failed (exit ${r.code}): ${r.stderr.trim()}`,
    );
  }
}

/** What one run of `cnuasdev_suite` said. */
export interface SuiteRun {
  /** `info backend=` (pcie, host, soft), or "?" when the suite never said. */
  backend: string;
  /** Case name → its results (the line after `case NAME`). */
  cases: Map<string, string>;
  /** Case name → the capabilities it needed and the device lacked. */
  skips: Map<string, string>;
  /** The `info` lines' key=value pairs. */
  info: Record<string, string>;
  /** The closing `suite` line's key=value pairs (empty when the suite died first). */
  summary: Record<string, string>;
}

/** `key=value` words of a line (words without `=` are ignored). */
export function lineValues(rest: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const w of rest.trim().split(/\s+/)) {
    const i = w.indexOf("=");
    if (i > 0) out[w.slice(0, i)] = w.slice(i + 1);
  }
  return out;
}

/** Parse the suite's stdout. */
export function parseSuite(text: string): SuiteRun {
  const run: SuiteRun = {
    backend: "?",
    cases: new Map(),
    skips: new Map(),
    info: {},
    summary: {},
  };
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    const m = /^(case|skip|info|suite)\s+(\S+)?\s*(.*)$/.exec(line);
    if (!m) continue;
    const [, kind, name = "", rest] = m;
    if (kind === "case") run.cases.set(name, rest);
    else if (kind === "skip") run.skips.set(name, lineValues(rest).needs ?? rest);
    else if (kind === "info") Object.assign(run.info, lineValues(`${name} ${rest}`));
    else run.summary = lineValues(`${name} ${rest}`);
  }
  run.backend = run.info.backend ?? "?";
  return run;
}

/** The comparison of two backends' runs. */
export interface PairResult {
  /** "pcie/host" and the like. */
  pair: string;
  /** Cases both ran (each compared once). */
  compared: number;
  /** Cases one skipped for a capability: not comparable. */
  notComparable: string[];
}

/** What the differential found. */
export interface Differential {
  /** Lines compared, over all pairs. */
  compared: number;
  /** Per pair of backends. */
  pairs: PairResult[];
  /** One message per case whose lines differ, or that one run neither ran nor skipped. */
  mismatches: string[];
}

/** The keys whose values differ between two case lines, as `key: a ≠ b`. */
function differingValues(a: string, b: string): string {
  const va = lineValues(a);
  const vb = lineValues(b);
  const keys = [...new Set([...Object.keys(va), ...Object.keys(vb)])];
  const diffs = keys.filter((k) => va[k] !== vb[k]).map((k) =>
    `${k}: ${va[k] ?? "(none)"} ≠ ${vb[k] ?? "(none)"}`
  );
  return diffs.length ? diffs.join(", ") : `"${a}" ≠ "${b}"`;
}

/**
 * Compare every pair of runs: a case both ran must have printed the same
 * line; a case one of them skipped (the device lacks the capability) is not
 * compared; a case one of them neither ran nor skipped is a mismatch (the
 * suite stopped, or the two suites differ).
 */
export function differential(runs: SuiteRun[]): Differential {
  const out: Differential = { compared: 0, pairs: [], mismatches: [] };
  for (let i = 0; i < runs.length; i++) {
    for (let j = i + 1; j < runs.length; j++) {
      const a = runs[i];
      const b = runs[j];
      const pair = `${a.backend}/${b.backend}`;
      const result: PairResult = { pair, compared: 0, notComparable: [] };
      const names = new Set([
        ...a.cases.keys(),
        ...b.cases.keys(),
        ...a.skips.keys(),
        ...b.skips.keys(),
      ]);
      for (const name of names) {
        const la = a.cases.get(name);
        const lb = b.cases.get(name);
        if (la !== undefined && lb !== undefined) {
          result.compared++;
          if (la !== lb) out.mismatches.push(`${pair} ${name}: ${differingValues(la, lb)}`);
        } else if (a.skips.has(name) || b.skips.has(name)) {
          result.notComparable.push(name);
        } else {
          const missing = la === undefined ? a.backend : b.backend;
          out.mismatches.push(`${pair} ${name}: ${missing} neither ran nor skipped it`);
        }
      }
      out.compared += result.compared;
      out.pairs.push(result);
    }
  }
  return out;
}

/** What one run of `cnuasdev_bench` said. */
export interface DevBenchRun {
  /** `info backend=` (pcie, host, soft), or "?" when the bench never said. */
  backend: string;
  /** The `info` line's key=value pairs. */
  info: Record<string, string>;
  /** Checked figures by the bench's name (`copyToDev.64k`, `async.b32`), in the order printed. */
  figures: Map<string, Measurement>;
  /** Mode (`zerocopy`, `pinned`, `async`) → the capabilities it needed and the device lacked. */
  skips: Map<string, string>;
  /** The bench printed its closing `PASS` (every check passed). */
  passed: boolean;
}

/** The units `cnuasdev_bench` prints, as they end a figure's name in bench.json. */
const UNIT_SUFFIX: Record<string, string> = { "MiB/s": "MiBps", "ops/s": "opsPerSec" };

/**
 * Parse `cnuasdev_bench`'s stdout: `info`, `bench NAME VALUE UNIT ...`,
 * `skip MODE needs=...` and `PASS` lines; anything else (a malformed figure,
 * a unit it does not print) is ignored, so it shows as a missing figure.
 */
export function parseDevBench(text: string): DevBenchRun {
  const run: DevBenchRun = {
    backend: "?",
    info: {},
    figures: new Map(),
    skips: new Map(),
    passed: false,
  };
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    const b = /^bench ([a-z][A-Za-z0-9]*\.[A-Za-z0-9]+) ([0-9]+(?:\.[0-9]+)?) (\S+)(?: |$)/
      .exec(line);
    if (b && UNIT_SUFFIX[b[3]] !== undefined) {
      run.figures.set(b[1], { value: Number(b[2]), unit: b[3] });
      continue;
    }
    const m = /^(info|skip)\s+(\S+)\s*(.*)$/.exec(line);
    if (m?.[1] === "info") Object.assign(run.info, lineValues(`${m[2]} ${m[3]}`));
    else if (m?.[1] === "skip") run.skips.set(m[2], lineValues(m[3]).needs ?? m[3]);
    else if (line === "PASS") run.passed = true;
  }
  run.backend = run.info.backend ?? "?";
  return run;
}

/**
 * A figure's name in bench.json: backend, the bench's name, the unit —
 * `pcie.copyToDev.64k.MiBps`, `host.async.b32.opsPerSec`.
 */
export function devBenchName(backend: string, name: string, unit: string): string {
  return `${backend}.${name}.${UNIT_SUFFIX[unit] ?? unit.replace(/\W/g, "")}`;
}

/** Transfer sizes of `cnuasdev_bench`'s copy points, as they appear in its names. */
export const DEV_BENCH_SIZES = ["4k", "64k", "1M"] as const;
/** Its copy modes; every one but `copy` is skipped on a device without its capabilities. */
export const DEV_BENCH_MODES = ["copy", "zerocopy", "pinned"] as const;

/**
 * The figures a run should have printed and did not: every copy mode that
 * was not skipped at every size in both directions, and, unless `async` was
 * skipped, `async.b1` and `async.b<batch_max>`.
 */
export function missingDevBenchFigures(run: DevBenchRun): string[] {
  const want: string[] = [];
  for (const mode of DEV_BENCH_MODES) {
    if (run.skips.has(mode)) continue;
    for (const size of DEV_BENCH_SIZES) {
      for (const dir of ["ToDev", "FromDev"]) want.push(`${mode}${dir}.${size}`);
    }
  }
  if (!run.skips.has("async")) {
    const bm = Number(run.info.batch_max);
    want.push("async.b1");
    if (!(bm > 0)) want.push("async.b<batch_max>");
    else if (bm > 1) want.push(`async.b${bm}`);
  }
  return want.filter((n) => !run.figures.has(n));
}
