/**
 * The uverbs ABI fuzzer (drivers/test/uverbs_fuzz.c) in a guest: one run,
 * or several processes at once, and what their output says.
 *
 * ```ts
 * const r = await runUverbsFuzz(guest, "cnuas_ib0", 10_000, 42);
 * if (!r.report.pass) throw new Error(r.report.violationLines.join("\n"));
 * ```
 */
import { GUEST_PATHS } from "../vm/types.ts";
import type { Guest } from "../vm/types.ts";
import { RdmaGuestError } from "./cnuas_ib.ts";
import { shq } from "./shell.ts";

/** The guest program. */
export const UVERBS_FUZZ = `${GUEST_PATHS.bin}/uverbs_fuzz`;

/** What one run of the fuzzer printed. */
export interface UverbsFuzzReport {
  /** The seed it printed (the one it was given). */
  seed: number;
  /** `calls_total`: every verbs call and command it made. */
  callsTotal: number;
  /** `calls_KIND` lines, by kind. */
  calls: Record<string, number>;
  /** `violations N`. */
  violations: number;
  /** The `VIOLATION ...` lines, each a call that had to fail and did not. */
  violationLines: string[];
  /** The last line is PASS. */
  pass: boolean;
}

/** A run of the fuzzer that printed no summary. */
export class UverbsFuzzOutputError extends RdmaGuestError {}

/**
 * Read the fuzzer's output. Throws {@link UverbsFuzzOutputError} when the
 * seed, `calls_total` or `violations` line is missing (the program died
 * before its summary).
 */
export function parseUverbsFuzz(out: string): UverbsFuzzReport {
  const lines = out.split("\n").map((l) => l.trim()).filter((l) => l !== "");
  const num = (re: RegExp): number | undefined => {
    for (const l of lines) {
      const m = re.exec(l);
      if (m) return Number(m[1]);
    }
    return undefined;
  };
  const seed = num(/^seed (\d+)$/);
  const callsTotal = num(/^calls_total (\d+)$/);
  const violations = num(/^violations (\d+)$/);
  if (seed === undefined || callsTotal === undefined || violations === undefined) {
    throw new UverbsFuzzOutputError(
      `uverbs_fuzz printed no summary (seed/calls_total/violations): ${out.slice(-1500)}`,
    );
  }
  const calls: Record<string, number> = {};
  for (const l of lines) {
    const m = /^calls_(\w+) (\d+)$/.exec(l);
    if (m && m[1] !== "total") calls[m[1]] = Number(m[2]);
  }
  return {
    seed,
    callsTotal,
    calls,
    violations,
    violationLines: lines.filter((l) => l.startsWith("VIOLATION")),
    pass: lines.at(-1) === "PASS",
  };
}

/** One finished run: exit code, output, and what the output says. */
export interface UverbsFuzzRun {
  code: number;
  stdout: string;
  stderr: string;
  report: UverbsFuzzReport;
}

/**
 * Run `uverbs_fuzz ibdev calls seed` in `g` and read its summary. A run that
 * printed none (it crashed) throws {@link UverbsFuzzOutputError} with its
 * exit code.
 */
export async function runUverbsFuzz(
  g: Guest,
  ibdev: string,
  calls: number,
  seed: number,
  timeoutSec = 900,
): Promise<UverbsFuzzRun> {
  const r = await g.run(`${UVERBS_FUZZ} ${shq(ibdev)} ${calls} ${seed}`, { timeoutSec });
  try {
    return { ...r, report: parseUverbsFuzz(r.stdout) };
  } catch (e) {
    throw new UverbsFuzzOutputError(
      `uverbs_fuzz ${ibdev} ${calls} ${seed}: exit ${r.code}; ${(e as Error).message}; ` +
        `stderr: ${r.stderr.slice(-800)}`,
    );
  }
}

/**
 * Run `procs` fuzzers at once in `g` on the same device, process `i` with
 * seed `seed + i`; each one's output is read as {@link runUverbsFuzz} does.
 */
export async function runUverbsFuzzTogether(
  g: Guest,
  ibdev: string,
  procs: number,
  calls: number,
  seed: number,
  timeoutSec = 900,
): Promise<UverbsFuzzRun[]> {
  const dir = "/tmp/uverbs_fuzz";
  const script = [
    `rm -rf ${dir}; mkdir -p ${dir}`,
    `for i in $(seq 0 ${procs - 1}); do`,
    `  (${UVERBS_FUZZ} ${shq(ibdev)} ${calls} $((${seed} + i)) >${dir}/$i.out 2>${dir}/$i.err;`,
    `   echo $? >${dir}/$i.rc) &`,
    "done",
    "wait",
  ].join("\n");
  const r = await g.run(script, { timeoutSec });
  if (r.code !== 0) {
    throw new RdmaGuestError(`${procs} uverbs_fuzz at once: exit ${r.code}: ${r.stderr}`);
  }
  const runs: UverbsFuzzRun[] = [];
  for (let i = 0; i < procs; i++) {
    const read = async (f: string) => (await g.run(`cat ${dir}/${i}.${f}`)).stdout;
    const stdout = await read("out");
    const stderr = await read("err");
    const code = Number((await read("rc")).trim());
    try {
      runs.push({ code, stdout, stderr, report: parseUverbsFuzz(stdout) });
    } catch (e) {
      throw new UverbsFuzzOutputError(
        `uverbs_fuzz process ${i} (seed ${seed + i}): exit ${code}; ${(e as Error).message}; ` +
          `stderr: ${stderr.slice(-800)}`,
      );
    }
  }
  return runs;
}
