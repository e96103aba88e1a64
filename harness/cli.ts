/**
 * The command line: the only place that reads argv (the environment is read
 * in config.ts; flags win over it).
 *
 *   setup                       host packages, pinned downloads
 *   build [--only T ...]        build stages (qemu, image, switch, modules, guestprogs,
 *                               provider, cnuasdev, cnuasdev-host, packages; qemu-asan, the
 *                               sanitizer build the qtest-fuzz row uses, only when named)
 *   matrix [--row ID ...] [--list] [--shard i/n] [--history H] [--plan]
 *                               --shard balances by H's row durations (default
 *                               reports/history; round-robin without); --plan prints
 *                               each shard's rows and predicted time, runs nothing
 *       [--without-host-package P]  leave P out of the fresh-host row's package list
 *       [--loss-seed N]             replay roce-e2e's loss pattern (or CNUAS_HIL_LOSS_SEED)
 *       [--no-snapshot]             boot every guest cold (default: rows that allow it
 *                                   restore their guests from a saved state)
 *       [--depth quick|deep]        how much each row does (default quick: every claim, smaller
 *                                   volumes; deep: the full volumes; or CNUAS_HIL_DEPTH)
 *       [--jobs N]                  rows sharing the cores that run at once (default: the
 *                                   cores, 2 to 4; or CNUAS_HIL_JOBS); rows judging timing
 *                                   run alone
 *       [--dev-modules]             while working on a driver: guests run the modules built
 *                                   from the working tree over the newest image's packaged
 *                                   ones (no package/image/state rebuild); rows that check
 *                                   the packages are skipped
 *   test [--depth quick|deep] [--jobs N]  Deno tests, then the matrix as a gate
 *   lab [--guests N] [--fabric eth|ib] [--gpus G]  boot N guests (default 2), each with
 *                               G cnuasgpu functions (default 0), with our builds
 *                               installed, print their SSH commands, hold until Ctrl-C
 *   bench [--fresh] [--only NAME ...]  measurements into reports/bench/<id>/bench.json
 *                               (--fresh adds an empty-cache build + boot row; --only runs
 *                               just the benches named, e.g. benchRdmaPost; `--only matrix`,
 *                               the whole quick matrix timed, runs only when named)
 *   soak --minutes N [--accel A]  RoCEv2 traffic between two guests for N minutes with 1% loss,
 *                               cable pulls and switch restarts; every transfer checked, no
 *                               memory growth (report in reports/soak/<run-id>/)
 *   report merge DIR... --out D merge shard reports
 *   report kcidb DIR [--out F|-] [--origin O] [--log-base-url U]
 *                               the run as KCIDB JSON (docs/kcidb.md), default DIR/kcidb.json
 *   report publish DIR [--to H] [--keep N] [--max-age-days D] [--max-file-mb M]  add a run
 *                               (matrix report or reports/bench/<id>) to the history site H
 *                               (default reports/history; files over M MiB, default 50, are
 *                               listed, not copied), pruning by count and age
 *   report history [--from H] [--last N]  the last N runs per row; flaky rows flagged
 *   report diff A B [--history H] [--markdown]  status changes, measurement deltas judged
 *                               against H's noise (A, B: report dirs or run ids in H)
 *   wirecheck FILE.pcapng...    run captures (from a row, or from real hardware);
 *                               --cnp-gap-us N: CNPs to one QP at least N µs apart;
 *                               --cnp-after-ce: a CE mark (in the capture) before each CNP
 *       [--path-mtu N]          through the RDMA wire oracle; writes FILE.violations.json
 *   repin                       re-pin sources to what the mirror serves
 *   clean [--cache]             remove reports (and the cache)
 */
import { describeError, UsageError } from "./errors.ts";
import { parseArgs } from "node:util";
import { join } from "node:path";
import { removeTree } from "./cache.ts";
import {
  type Accel,
  type Config,
  defaultConfig,
  type Depth,
  DEPTHS,
  environmentSettings,
} from "./config.ts";
import { hostPath } from "./exec.ts";
import { ensureHostPackages, ensurePackages, hostPackageList } from "./host.ts";
import { fabricStarter, Lab } from "./matrix/lab.ts";
import { loadRows, ROW_IDS, shardRows } from "./matrix/registry.ts";
import { checkShard, durationsFromIndex, formatPlan, planShards } from "./matrix/shard_plan.ts";
import { readIndex } from "./report/history.ts";
import { runMatrix } from "./matrix/run.ts";
import { keepFailedRows, transcriptTail } from "./matrix/keep_failed.ts";
import type { BuildTarget, Row } from "./matrix/row.ts";
import { fetchSource, readPins, repin } from "./pins.ts";
import { progress } from "./progress.ts";
import { isFailing } from "./report/schema.ts";
import { mergeReports } from "./report/merge.ts";
import { reportKcidb } from "./report/kcidb_export.ts";
import { HISTORY_SUBCOMMANDS, historyCommand } from "./report/command.ts";
import { runBench } from "./bench/run.ts";
import { minutesFrom, soakCommand } from "./bench/soak.ts";
import { checkPcapngFiles, rolledOverFiles } from "./oracle/wire_check.ts";

/** Every `report` subcommand, for its usage error. */
const REPORT_USAGE = [
  "usage: report merge <report-dir>... --out <dir>",
  "       report publish <run-dir> [--to <dir>] [--keep N] [--max-age-days D] [--max-file-mb M]",
  "       report history [--from <dir>] [--last N]",
  "       report diff <run-a> <run-b> [--history <dir>] [--markdown]",
  "       report kcidb <run-dir> [--out <file>|-] [--origin O] [--log-base-url U]",
].join("\n");

const BUILD_TARGETS: BuildTarget[] = [
  "qemu",
  "image",
  "switch",
  "modules",
  "guestprogs",
  "provider",
  "cnuasdev",
  "cnuasdev-host",
  "packages",
];

/** Targets built only when named (`--only`) or when a row needs them. */
const ON_DEMAND_TARGETS: BuildTarget[] = ["qemu-asan"];

function configFrom(values: Record<string, unknown>): Config {
  const env = environmentSettings();
  const accel = (values.accel as string | undefined) ?? env.accel ?? "auto";
  if (!["kvm", "tcg", "auto"].includes(accel)) {
    throw new UsageError(`--accel takes kvm, tcg or auto, not ${accel}`);
  }
  return defaultConfig({
    ...(values["cache-dir"] ? { cacheDir: values["cache-dir"] as string } : {}),
    ...(values.mirror ? { mirror: values.mirror as string } : {}),
    ...(values["reports-dir"] ? { reportsDir: values["reports-dir"] as string } : {}),
    accel: accel as Accel | "auto",
    ...(values["without-host-package"]
      ? { freshHostWithout: values["without-host-package"] as string[] }
      : {}),
    ...lossSeedFrom((values["loss-seed"] as string | undefined) ?? env.lossSeed),
    ...(values["no-snapshot"] ? { snapshots: false } : {}),
    ...(values["dev-modules"] ? { devModules: true } : {}),
    depth: depthFrom((values.depth as string | undefined) ?? env.depth),
    ...jobsFrom((values.jobs as string | undefined) ?? env.jobs),
  });
}

/** `--jobs N` (or CNUAS_HIL_JOBS): a whole number from 1; the default (config.ts) without. */
export function jobsFrom(value: string | undefined): { jobs?: number } {
  if (value === undefined || value === "") return {};
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > 64) {
    throw new UsageError(`--jobs wants a whole number from 1 to 64, not ${value}`);
  }
  return { jobs: Number(value) };
}

/** `--depth quick|deep` (or CNUAS_HIL_DEPTH); quick without either. */
export function depthFrom(value: string | undefined): Depth {
  if (value === undefined || value === "") return "quick";
  if (!DEPTHS.includes(value as Depth)) {
    throw new UsageError(`--depth takes ${DEPTHS.join(" or ")}, not ${value}`);
  }
  return value as Depth;
}

/** `--loss-seed N` (or CNUAS_HIL_LOSS_SEED): a decimal uint32, the seed a report recorded. */
export function lossSeedFrom(value: string | undefined): { lossSeed?: number } {
  if (value === undefined || value === "") return {};
  if (!/^\d+$/.test(value) || Number(value) > 0xffffffff) {
    throw new UsageError(`--loss-seed wants a decimal number below 2^32, not ${value}`);
  }
  return { lossSeed: Number(value) };
}

/** `--shard i/n` as numbers (1/1 without it). */
function shardOf(values: Record<string, unknown>): { index: number; count: number } {
  if (!values.shard) return { index: 1, count: 1 };
  const m = /^(\d+)\/(\d+)$/.exec(values.shard as string);
  if (!m) throw new UsageError(`--shard wants i/n (e.g. 1/3), not ${values.shard}`);
  checkShard(Number(m[1]), Number(m[2]));
  return { index: Number(m[1]), count: Number(m[2]) };
}

/** The history whose row durations balance the shards: `--history`, else reports/history. */
async function shardDurations(config: Config, values: Record<string, unknown>) {
  const source = (values.history as string | undefined) ?? join(config.reportsDir, "history");
  return { source, durations: durationsFromIndex(await readIndex(source)) };
}

async function selectRows(config: Config, values: Record<string, unknown>): Promise<Row[]> {
  const rows = await loadRows((values.row as string[] | undefined) ?? []);
  if (!values.shard) return rows;
  const { index, count } = shardOf(values);
  return shardRows(rows, index, count, (await shardDurations(config, values)).durations);
}

/** `matrix --plan`: which rows each shard runs and its predicted time; runs nothing. */
async function printPlan(config: Config, values: Record<string, unknown>): Promise<void> {
  const rows = await loadRows((values.row as string[] | undefined) ?? []);
  const { index, count } = shardOf(values);
  const { source, durations } = await shardDurations(config, values);
  const plan = planShards(rows.map((r) => r.id), count, durations);
  for (const line of formatPlan(plan, source, values.shard ? index : undefined)) console.log(line);
}

/** Run the matrix; returns the number of failing rows and the counts. */
async function matrix(config: Config, values: Record<string, unknown>) {
  const rows = await selectRows(config, values);
  const { report, dir } = await runMatrix(config, rows, {
    shard: values.shard as string | undefined,
    fabricStarter,
  });
  console.log(`\nreport: ${dir}/index.html (matrix.json, matrix.md, junit.xml beside it)`);
  for (const r of report.rows) {
    console.log(
      `  ${r.status.padEnd(5)} ${r.id.padEnd(15)} ${r.durationSec.toFixed(1).padStart(6)} s  ${
        r.buildWaitSec ? `(${r.buildWaitSec.toFixed(1)} s of it waiting for the cache) ` : ""
      }${r.reason ?? ""}`,
    );
  }
  const failed = report.rows.filter((r) => isFailing(r.status)).map((r) => r.id);
  const kept = await keepFailedRows(config.cacheDir, dir, failed);
  for (const id of failed) {
    console.log(`\n${id}: the end of its transcript`);
    for (const l of await transcriptTail(dir, id, 8)) console.log(`  ${l.slice(0, 400)}`);
  }
  if (kept) console.log(`\nthe failing rows' logs are kept in ${kept}`);
  const passing = report.rows.filter((r) => r.status === "PASS" || r.status === "DONE").length;
  return { failing: failed.length, passing, dir };
}

/** The Deno test directories `task test` runs (the matrix rows run after them). */
const TEST_DIRS = ["tests/unit", "tests/qtest", "tests/switch", "tests/vm", "tests/report"];

/** `deno test` over everything under tests/ except the matrix rows; returns counts. */
async function denoTests(config: Config): Promise<{ passed: number; failed: number }> {
  progress("test", "deno test (unit, qtest, switch, vm, report)");
  // the builds install their own host packages; the page test's browser is the tests' own
  await ensureHostPackages(["report"], join(config.cacheDir, "logs", "test-host-packages.log"));
  const dirs = TEST_DIRS.filter((d) => {
    try {
      return Deno.statSync(join(config.repoRoot, d)).isDirectory;
    } catch {
      return false;
    }
  });
  const child = new Deno.Command(Deno.execPath(), {
    args: ["test", "-A", "--no-check", ...dirs],
    cwd: config.repoRoot,
    env: { PATH: hostPath(), CNUAS_HIL_CACHE: config.cacheDir, NO_COLOR: "1" },
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  let text = "";
  const dec = new TextDecoder();
  for await (const chunk of child.stdout) {
    const s = dec.decode(chunk);
    text += s;
    await Deno.stdout.write(chunk);
  }
  const status = await child.status;
  // deno prints "ok | 12 passed | 0 failed" or "FAILED | 3 passed | 1 failed".
  const m = /(?:ok|FAILED) \| (\d+) passed(?: \((\d+) steps?\))? \| (\d+) failed/.exec(
    text,
  );
  if (!m) return { passed: 0, failed: status.success ? 0 : 1 };
  return { passed: Number(m[1]), failed: Number(m[3]) || (status.success ? 0 : 1) };
}

/**
 * Check captures with the RDMA wire oracle; prints one line per capture and
 * its first violations. A capture the switch rolled over is checked as one
 * (its first file named, the rest found beside it). Returns 1 when any
 * capture has a violation.
 */
async function wirecheck(
  files: string[],
  pathMtu: string | undefined,
  cnpGapUs: string | undefined,
  cnpAfterCe = false,
): Promise<number> {
  if (files.length === 0) {
    throw new UsageError(
      "usage: wirecheck <capture.pcapng>... [--path-mtu 256..4096] [--cnp-gap-us N] [--cnp-after-ce]",
    );
  }
  const mtu = pathMtu === undefined ? undefined : Number(pathMtu);
  if (mtu !== undefined && ![256, 512, 1024, 2048, 4096].includes(mtu)) {
    throw new UsageError(`--path-mtu takes 256, 512, 1024, 2048 or 4096, not ${pathMtu}`);
  }
  const gap = cnpGapUs === undefined ? 0 : Number(cnpGapUs);
  if (!Number.isFinite(gap) || gap < 0 || gap > 1_000_000) {
    throw new UsageError(`--cnp-gap-us takes 0..1000000 microseconds, not ${cnpGapUs}`);
  }
  const opts = {
    ...(mtu === undefined ? {} : { pathMtu: mtu }),
    cnpMinIntervalNs: gap * 1000,
    requireCeBeforeCnp: cnpAfterCe,
  };
  let dirty = 0;
  const done = new Set<string>();
  for (const f of files) {
    if (done.has(f)) continue;
    let r;
    try {
      const series = await rolledOverFiles(f);
      series.forEach((s) => done.add(s));
      r = await checkPcapngFiles(series, opts);
    } catch (e) {
      throw new UsageError(`${f}: ${(e as Error).message}`);
    }
    const more = r.files.length > 1 ? ` (and ${r.files.length - 1} rolled-over files)` : "";
    console.log(
      `${f}${more}: ${r.framesChecked} frames (${r.rdmaFrames} RDMA), ${r.violationCount} violations` +
        (r.violationCount ? ` ${JSON.stringify(r.byRule)}` : "") +
        `; ECN: ${r.ecn.ect0} ECT(0), ${r.ecn.ce} CE, ${r.ecn.notEct} Not-ECT; ${r.cnps} CNPs` +
        ` — ${r.reportPath}`,
    );
    for (const v of r.violations.slice(0, 5)) {
      console.log(`  frame ${v.frameIndex} ${v.rule}: ${v.flow}: ${v.message}`);
    }
    if (r.violationCount) dirty++;
  }
  return dirty ? 1 : 0;
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      row: { type: "string", multiple: true },
      list: { type: "boolean" },
      plan: { type: "boolean" },
      shard: { type: "string" },
      only: { type: "string", multiple: true },
      accel: { type: "string" },
      "cache-dir": { type: "string" },
      "reports-dir": { type: "string" },
      mirror: { type: "string" },
      out: { type: "string" },
      origin: { type: "string" },
      "log-base-url": { type: "string" },
      cache: { type: "boolean" },
      fresh: { type: "boolean" },
      "path-mtu": { type: "string" },
      "cnp-gap-us": { type: "string" },
      "cnp-after-ce": { type: "boolean" },
      "without-host-package": { type: "string", multiple: true },
      "loss-seed": { type: "string" },
      "no-snapshot": { type: "boolean" },
      "dev-modules": { type: "boolean" },
      depth: { type: "string" },
      jobs: { type: "string" },
      minutes: { type: "string" },
      guests: { type: "string" },
      fabric: { type: "string" },
      gpus: { type: "string" },
      to: { type: "string" },
      from: { type: "string" },
      history: { type: "string" },
      keep: { type: "string" },
      "max-age-days": { type: "string" },
      "max-file-mb": { type: "string" },
      last: { type: "string" },
      markdown: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  const [cmd, ...rest] = positionals;
  if (values.help || !cmd) {
    console.log(
      await Deno.readTextFile(new URL(import.meta.url)).then((t) =>
        t.slice(t.indexOf("/**") + 3, t.indexOf("*/")).replace(/^ \* ?/gm, "")
      ),
    );
    return cmd ? 0 : 2;
  }
  // only report and wirecheck take words after the command
  if (rest.length > 0 && cmd !== "report" && cmd !== "wirecheck") {
    throw new UsageError(
      `${cmd}: unexpected ${rest.map((w) => `'${w}'`).join(" ")}` +
        " (several values of an option are given as --only a --only b)",
    );
  }
  if (values["dev-modules"] && cmd !== "matrix") {
    // a gate (test) or a measurement (bench) must run the packaged modules
    throw new UsageError(`--dev-modules is for matrix (a developer's run), not ${cmd}`);
  }
  const config = configFrom(values);
  switch (cmd) {
    case "setup": {
      await ensurePackages(hostPackageList(), join(config.cacheDir, "logs", "setup.log"));
      const pins = await readPins(config);
      for (const pin of Object.values(pins.sources)) await fetchSource(config, pin);
      console.log("setup done: host packages present, pinned sources downloaded and verified");
      return 0;
    }
    case "build": {
      const targets = (values.only as string[] | undefined) ?? BUILD_TARGETS;
      const known = [...BUILD_TARGETS, ...ON_DEMAND_TARGETS];
      const bad = targets.filter((t) => !known.includes(t as BuildTarget));
      if (bad.length) {
        throw new UsageError(
          `unknown build target ${bad.join(", ")}; targets: ${known.join(", ")}`,
        );
      }
      const out = await new Lab(config).ensureBuilds(targets as BuildTarget[]);
      for (const [k, v] of Object.entries(out)) {
        console.log(`${k}: ${Array.isArray(v) ? v.join(":") : v}`);
      }
      return 0;
    }
    case "matrix": {
      if (values.plan) {
        await printPlan(config, values);
        return 0;
      }
      if (values.list) {
        for (const r of await selectRows(config, values)) {
          console.log(`${r.id.padEnd(15)} ${r.run ? "" : "(MISS) "}${r.title}`);
        }
        return 0;
      }
      const { failing } = await matrix(config, values);
      return failing ? 1 : 0;
    }
    case "test": {
      const unit = await denoTests(config);
      const m = await matrix(config, values);
      const passed = unit.passed + m.passing;
      const failed = unit.failed + m.failing;
      console.log(
        `\ndeno tests: ${unit.passed} passed, ${unit.failed} failed; matrix rows: ${m.passing} passed, ${m.failing} failed (MISS rows do not count)`,
      );
      console.log(`${passed} passed, ${failed} failed`);
      return failed ? 1 : 0;
    }
    case "lab": {
      const fabric = (values.fabric as string | undefined) ?? "eth";
      if (fabric !== "eth" && fabric !== "ib") {
        throw new UsageError(`lab --fabric takes eth or ib, not ${fabric}`);
      }
      const { holdLab } = await import("./matrix/hold.ts");
      await holdLab(config, {
        guests: Number(values.guests ?? "2"),
        fabric,
        gpus: Number(values.gpus ?? "0"),
      });
      return 0;
    }
    case "bench": {
      const path = await runBench(config, {
        fresh: values.fresh as boolean | undefined,
        only: values.only as string[] | undefined,
      });
      console.log(`bench written to ${path}`);
      return 0;
    }
    case "soak": {
      const minutes = minutesFrom(values.minutes as string | undefined);
      const { result, dir } = await soakCommand(config, minutes);
      console.log(`soak ${result.status}${result.reason ? `: ${result.reason}` : ""}`);
      console.log(`report written to ${dir}`);
      return result.status === "PASS" ? 0 : 1;
    }
    case "report": {
      if (rest[0] === "kcidb") return await reportKcidb(rest.slice(1), values, config.repoRoot);
      const sub = HISTORY_SUBCOMMANDS.find((s) => s === rest[0]);
      if (sub) {
        return await historyCommand(sub, rest.slice(1), values, join(config.reportsDir, "history"));
      }
      if (rest[0] !== "merge" || rest.length < 2) throw new UsageError(REPORT_USAGE);
      const out = (values.out as string | undefined) ??
        join(config.reportsDir, `merged-${Date.now()}`);
      const m = await mergeReports(rest.slice(1), out);
      console.log(`merged ${m.rows.length} rows into ${out}`);
      return 0;
    }
    case "wirecheck":
      return await wirecheck(
        rest,
        values["path-mtu"] as string | undefined,
        values["cnp-gap-us"] as string | undefined,
        values["cnp-after-ce"] === true,
      );
    case "repin": {
      const changes = await repin(config);
      console.log(changes.length ? changes.join("\n") : "pins already match the mirror");
      return 0;
    }
    case "clean": {
      await removeTree(config.reportsDir);
      if (values.cache) await removeTree(config.cacheDir);
      console.log(`removed ${config.reportsDir}${values.cache ? ` and ${config.cacheDir}` : ""}`);
      return 0;
    }
    default:
      throw new UsageError(
        `unknown command ${cmd}; commands: setup build matrix test bench soak report wirecheck repin clean`,
      );
  }
}

if (import.meta.main) {
  try {
    Deno.exit(await main(Deno.args));
  } catch (e) {
    console.error(describeError(e));
    Deno.exit(2);
  }
}

export { main, ROW_IDS };
