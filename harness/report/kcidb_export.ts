/**
 * `deno task report kcidb <run-dir>`: read a run directory's matrix.json,
 * write it as KCIDB I/O data (the mapping is kcidb.ts's), by default to
 * `<run-dir>/kcidb.json`.
 */
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { UsageError, UserError } from "../errors.ts";
import { exec } from "../exec.ts";
import { checkOrigin, DEFAULT_KCIDB_ORIGIN, type KcidbReport, toKcidb } from "./kcidb.ts";
import { parseMatrixJson } from "./schema.ts";

/** A run directory that cannot be exported (no matrix.json, a bad URL). */
export class KcidbInputError extends UserError {}

/** Options of `exportKcidb`. */
export interface KcidbExportOptions {
  /** Output file; `-` is stdout; default `<runDir>/kcidb.json`. */
  out?: string;
  /** KCIDB origin (default `cnuas_hil`). */
  origin?: string;
  /** Absolute URL the run directory is published under (default its file:// URL). */
  logBaseUrl?: string;
  /** The project's git checkout, to resolve `provenance.project` to a full hash. */
  repoRoot?: string;
}

/**
 * The full hash of the commit a `git describe --always --dirty --tags` names
 * (`459518e`, `v1-3-g459518e-dirty`, a tag), looked up in `repoRoot`; undefined
 * when it is `unknown` or not in that repository.
 */
export async function resolveCommit(
  repoRoot: string,
  describe: string,
): Promise<string | undefined> {
  const clean = describe.replace(/-dirty$/, "");
  if (clean === "" || clean === "unknown") return undefined;
  const rev = /-g([0-9a-f]{4,40})$/.exec(clean)?.[1] ?? clean;
  const r = await exec(
    ["git", "-C", repoRoot, "rev-parse", "--verify", "--quiet", `${rev}^{commit}`],
    { allowFail: true },
  );
  const hash = r.stdout.trim();
  return r.code === 0 && /^[0-9a-f]{40}$/.test(hash) ? hash : undefined;
}

/** The base URL of artifacts: `--log-base-url` checked, or the run directory's file:// URL. */
function baseUrl(runDir: string, given: string | undefined): string {
  if (given === undefined) return `${pathToFileURL(resolve(runDir)).href}/`;
  let url: URL;
  try {
    url = new URL(given);
  } catch {
    throw new KcidbInputError(
      `--log-base-url ${
        JSON.stringify(given)
      } is not an absolute URL (e.g. https://ci.example/runs/<run-id>/)`,
    );
  }
  return url.href.endsWith("/") ? url.href : `${url.href}/`;
}

/** Read `<runDir>/matrix.json`, write it as KCIDB JSON; returns the data and where it went. */
export async function exportKcidb(
  runDir: string,
  opts: KcidbExportOptions = {},
): Promise<{ report: KcidbReport; out: string }> {
  const origin = checkOrigin(opts.origin ?? DEFAULT_KCIDB_ORIGIN);
  const logBaseUrl = baseUrl(runDir, opts.logBaseUrl);
  const path = join(runDir, "matrix.json");
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
    throw new KcidbInputError(
      `${path} does not exist: give a run directory (reports/<run-id>, reports/latest)`,
    );
  }
  const m = parseMatrixJson(text, path);
  const commitHash = opts.repoRoot
    ? await resolveCommit(opts.repoRoot, m.provenance.project)
    : undefined;
  const report = toKcidb(m, { origin, logBaseUrl, ...(commitHash ? { commitHash } : {}) });
  const json = JSON.stringify(report, null, 2) + "\n";
  const out = opts.out ?? join(runDir, "kcidb.json");
  if (out === "-") await Deno.stdout.write(new TextEncoder().encode(json));
  else await Deno.writeTextFile(out, json);
  return { report, out };
}

/** The CLI's `report kcidb <run-dir> [--out F] [--origin O] [--log-base-url U]`. */
export async function reportKcidb(
  args: string[],
  values: Record<string, unknown>,
  repoRoot: string,
): Promise<number> {
  if (args.length !== 1) {
    throw new UsageError(
      "usage: report kcidb <run-dir> [--out <file>|-] [--origin <name>] [--log-base-url <url>]",
    );
  }
  const { report, out } = await exportKcidb(args[0], {
    out: values.out as string | undefined,
    origin: values.origin as string | undefined,
    logBaseUrl: values["log-base-url"] as string | undefined,
    repoRoot,
  });
  if (out !== "-") {
    console.log(
      `KCIDB v${report.version.major}.${report.version.minor}: 1 checkout, ${report.builds.length} build, ${report.tests.length} tests → ${out}`,
    );
  }
  return 0;
}
