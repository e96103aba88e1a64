/**
 * The matrix runner: for each row, bring up what it asked for (builds,
 * fabric, guests with artifacts installed), run it under its timeout, apply
 * the dmesg guard, and collect status, measurements and artifacts. Which
 * rows run at once is lanes.ts's plan; a `background` row's host commands run
 * at idle priority (priority.ts); shards spread rows across runners.
 */
import { HilError } from "../errors.ts";
import { join, relative } from "node:path";
import type { Accel, Config } from "../config.ts";
import { timeoutScale } from "../config.ts";
import { exists } from "../cache.ts";
import { failure, progress } from "../progress.ts";
import { atIdlePriority, IDLE_PRIORITY_PREFIX } from "../priority.ts";
import type { GuestStart, Measurement, RowResult, Status, StepResult } from "../report/schema.ts";
import { BootTimeoutError, GuestDiedError } from "../vm/guest.ts";
import type { Guest, RunOptions, RunResult } from "../vm/types.ts";
import { dmesgViolations } from "./dmesg_guard.ts";
import { type Lab, LabError } from "./lab.ts";
import { type FabricHandle, type Row, type RowContext, RowFailure, RowMiss } from "./row.ts";

/** A wait for the cache this long or longer is in the row's result (`buildWaitSec`). */
const BUILD_WAIT_REPORTED_SEC = 0.1;

/** The row exceeded its timeout. */
export class RowTimeoutError extends HilError {}

/**
 * Run one row to a result; never throws. A row declaring `background` or
 * `filler` runs with its host commands at idle CPU and I/O priority.
 */
export function runRow(row: Row, lab: Lab, runDir: string): Promise<RowResult> {
  return row.background || row.filler
    ? atIdlePriority(() => runRowNow(row, lab, runDir))
    : runRowNow(row, lab, runDir);
}

async function runRowNow(row: Row, lab: Lab, runDir: string): Promise<RowResult> {
  const t0 = performance.now();
  const startedAt = new Date().toISOString();
  const dir = join(runDir, "rows", row.id);
  await Deno.mkdir(dir, { recursive: true });
  const transcriptPath = join(dir, "transcript.log");
  // Written line by line, so a long row can be followed with `tail -f`.
  await Deno.writeTextFile(transcriptPath, "");
  const artifacts = new Set<string>([relative(runDir, transcriptPath)]);
  const measurements: Record<string, Measurement> = {};
  const steps: StepResult[] = [];
  let starts: GuestStart[] = [];
  let buildWaitSec = 0;
  const result = (status: Status, reason?: string): RowResult => ({
    id: row.id,
    title: row.title,
    status,
    durationSec: (performance.now() - t0) / 1000,
    ...(buildWaitSec >= BUILD_WAIT_REPORTED_SEC
      ? { buildWaitSec: Number(buildWaitSec.toFixed(1)) }
      : {}),
    startedAt,
    ...(reason ? { reason } : {}),
    measurements,
    artifacts: [...artifacts],
    steps,
    ...(starts.length ? { guests: starts } : {}),
  });
  const log = (line: string) =>
    Deno.writeTextFileSync(
      transcriptPath,
      `[${((performance.now() - t0) / 1000).toFixed(1)}s] ${line}\n`,
      { append: true },
    );

  if (!row.run) {
    log(`MISS: ${row.missReason ?? "not implemented"}`);
    return result("MISS", row.missReason ?? "not implemented");
  }

  if (lab.config.devModules && row.packagedModules) {
    const why = `--dev-modules replaces the packaged modules: ${row.packagedModules}`;
    log(`SKIP: ${why}`);
    progress(row.id, `SKIP: ${why}`);
    return result("SKIP", why);
  }

  progress(row.id, "starting");
  const idleBeside = row.background
    ? `the rows that run alone: ${row.background}`
    : row.filler
    ? `the sharing rows, in the cycles they leave: ${row.filler}`
    : undefined;
  if (idleBeside) {
    log(
      `its host commands run at idle CPU and I/O priority (${IDLE_PRIORITY_PREFIX.join(" ")}) ` +
        `beside ${idleBeside}`,
    );
  }
  const controller = new AbortController();
  let setup: Awaited<ReturnType<Lab["bringUp"]>> | undefined;
  let status: Status = "PASS";
  let reason: string | undefined;
  try {
    setup = await lab.bringUp(row, dir, log);
    starts = setup.starts;
    buildWaitSec = setup.buildWaitSec;
    if (buildWaitSec >= BUILD_WAIT_REPORTED_SEC) {
      log(`waited ${buildWaitSec.toFixed(1)} s for the cache (builds, saved guest states)`);
    }
    for (const g of setup.guests) artifacts.add(relative(runDir, g.consoleLog));
    const scale = setup.guests.length ? timeoutScale(lab.accel ?? "tcg") : 1;
    const limitSec = row.timeoutSec * scale;
    const ctx = makeContext(row, lab.config, lab.accel ?? "tcg", setup, dir, runDir, {
      log,
      artifacts,
      measurements,
      steps,
      signal: controller.signal,
    });
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      row.run(ctx),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          controller.abort();
          reject(new RowTimeoutError(`row timed out after ${limitSec} s`));
        }, limitSec * 1000);
      }),
    ]).finally(() => clearTimeout(timer));
  } catch (e) {
    [status, reason] = classify(e);
    log(`${status}: ${reason}`);
  }
  if (setup) {
    // The dmesg guard runs after every row, whatever its outcome.
    for (const g of setup.guests) {
      try {
        const text = await g.dmesg();
        const p = join(dir, `${g.name}.dmesg.txt`);
        await Deno.writeTextFile(p, text);
        artifacts.add(relative(runDir, p));
        const bad = dmesgViolations(text);
        if (bad.length && status === "PASS") {
          status = "FAIL";
          reason = `dmesg guard on ${g.name}: ${bad.slice(0, 3).join(" | ")}`;
          log(reason);
        }
      } catch (e) {
        if (status === "PASS") [status, reason] = classify(e);
      }
    }
    for (const a of await setup.close()) artifacts.add(relative(runDir, a));
  }
  // A row may delete what it attached once it proved clean (large captures):
  // the report lists only files that are there.
  for (const a of [...artifacts]) {
    if (!await exists(join(runDir, a))) artifacts.delete(a);
  }
  const r = result(status, reason);
  if (status === "PASS" || status === "DONE") {
    progress(row.id, `${status} in ${r.durationSec.toFixed(1)} s`);
  } else failure(row.id, `${status}: ${reason}`, transcriptPath);
  return r;
}

function classify(e: unknown): [Status, string] {
  const err = e as Error;
  if (e instanceof RowFailure) return ["FAIL", err.message];
  if (e instanceof RowMiss) return ["MISS", err.message];
  if (e instanceof GuestDiedError) return ["ERROR", `guest died: ${err.message}`];
  if (e instanceof BootTimeoutError) return ["ERROR", err.message];
  if (e instanceof RowTimeoutError) return ["ERROR", err.message];
  if (e instanceof LabError) return ["ERROR", err.message];
  return ["ERROR", `${err?.name ?? "Error"}: ${err?.message ?? String(e)}`];
}

interface Sinks {
  log: (line: string) => void;
  artifacts: Set<string>;
  measurements: Record<string, Measurement>;
  steps: StepResult[];
  signal: AbortSignal;
}

function makeContext(
  row: Row,
  config: Config,
  accel: Accel,
  setup: { guests: Guest[]; fabric?: FabricHandle; builds: RowContext["builds"] },
  dir: string,
  runDir: string,
  s: Sinks,
): RowContext {
  return {
    id: row.id,
    dir,
    config,
    accel,
    builds: setup.builds,
    guests: setup.guests.map((g) => recordingGuest(g, s.log)),
    fabric: setup.fabric,
    signal: s.signal,
    async step<T>(name: string, fn: () => Promise<T>): Promise<T> {
      const t = performance.now();
      progress(row.id, name);
      s.log(`== step ${name}`);
      try {
        const v = await fn();
        s.steps.push({ name, status: "PASS", durationSec: (performance.now() - t) / 1000 });
        return v;
      } catch (e) {
        const [status, reason] = classify(e);
        s.steps.push({ name, status, durationSec: (performance.now() - t) / 1000, error: reason });
        throw e;
      }
    },
    measure(name: string, value: number, unit: string) {
      s.measurements[name] = { value, unit };
      s.log(`measure ${name} = ${value} ${unit}`);
    },
    artifact(path: string) {
      s.artifacts.add(relative(runDir, path.startsWith("/") ? path : join(dir, path)));
    },
    log: s.log,
    expect(cond: boolean, message: string): void {
      if (!cond) throw new RowFailure(message);
    },
  };
}

/** A Guest whose every command lands in the transcript with exit code and duration. */
function recordingGuest(g: Guest, log: (line: string) => void): Guest {
  return {
    name: g.name,
    consoleLog: g.consoleLog,
    bootToSshSec: g.bootToSshSec,
    startToSshSec: g.startToSshSec,
    startedFrom: g.startedFrom,
    async run(cmd: string, opts?: RunOptions): Promise<RunResult> {
      const r = await g.run(cmd, opts);
      log(
        `${g.name}$ ${cmd}\n  → exit ${r.code} in ${r.durationSec.toFixed(2)} s` +
          (r.stdout ? `\n  stdout: ${indent(r.stdout)}` : "") +
          (r.stderr ? `\n  stderr: ${indent(r.stderr)}` : ""),
      );
      if (opts?.check && r.code !== 0) {
        throw new RowFailure(
          `${g.name}: '${cmd}' exited ${r.code}: ${r.stderr.trim().slice(-400)}`,
        );
      }
      return r;
    },
    putFile: (p, d, m) => {
      log(`${g.name}: put ${p} (${d.length} bytes)`);
      return g.putFile(p, d, m);
    },
    getFile: (p) => {
      log(`${g.name}: get ${p}`);
      return g.getFile(p);
    },
    dmesg: () => g.dmesg(),
    qmp: (c, a) => {
      log(`${g.name}: qmp ${c} ${a ? JSON.stringify(a) : ""}`);
      return g.qmp(c, a);
    },
  };
}

function indent(s: string): string {
  const t = s.length > 4000 ? s.slice(0, 2000) + "\n…\n" + s.slice(-2000) : s;
  return t.trimEnd().replaceAll("\n", "\n    ");
}
