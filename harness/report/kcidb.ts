/**
 * A run's matrix.json as KCIDB I/O data (schema v5.3, kernelci/kcidb-io), so a
 * KernelCI-style dashboard can ingest it. Pure mapping, no I/O; the mapping is
 * documented in docs/kcidb.md and decided here once:
 *
 *   checkout  one per run, id `<origin>:<runId>`
 *   build     one per run, id `<origin>:<runId>:build`: the project built with
 *             the run's QEMU, rdma-core and guest-kernel pins
 *   tests     one per row (`cnuas_hil.<row>`), one per step
 *             (`cnuas_hil.<row>.<step>`), one per measurement
 *             (`cnuas_hil.<row>.measurements.<name>`, status DONE, `number`);
 *             id `<origin>:<runId>:<path without the cnuas_hil. root>`
 *
 * The same matrix.json and options give the same JSON, byte for byte.
 */
import { posix } from "node:path";
import { UserError } from "../errors.ts";
import type { MatrixJson, Measurement, Provenance, RowResult, Status } from "./schema.ts";

/** The schema version the output declares (the latest kcidb-io publishes). */
export const KCIDB_VERSION = { major: 5, minor: 3 } as const;

/** The schema's origin pattern (`$defs.checkout.properties.origin.pattern`). */
export const KCIDB_ORIGIN_PATTERN = /^[a-z0-9_]+$/;

/** The origin used when none is given. */
export const DEFAULT_KCIDB_ORIGIN = "cnuas_hil";

/** The root of every test path: the suite, whoever submits it. */
export const KCIDB_TEST_ROOT = "cnuas_hil";

/** The schema's limit on `log_excerpt`. */
const LOG_EXCERPT_MAX = 16384;

/**
 * The guest architecture: the harness builds only `qemu-system-x86_64` and an
 * amd64 guest image (harness/build/qemu.ts, guest_root.ts).
 */
const GUEST_ARCHITECTURE = "x86_64";

/** A named remote resource (`$defs.resource`). */
export interface KcidbResource {
  /** A file name, no `/`. */
  name: string;
  /** Where to download it. */
  url: string;
}

/** `$defs.checkout`, the fields this export fills. */
export interface KcidbCheckout {
  /** `<origin>:<runId>`. */
  id: string;
  /** Who submitted it. */
  origin: string;
  /** The project's `git describe`. */
  git_commit_name?: string;
  /** The full commit hash, when it could be resolved. */
  git_commit_hash?: string;
  /** When the run started. */
  start_time: string;
  /** The run happened, so its checkout was good. */
  valid: boolean;
  /** One line for a person. */
  comment: string;
  /** Run id, shard, a dirty tree. */
  misc: Record<string, unknown>;
}

/** `$defs.build`, the fields this export fills. */
export interface KcidbBuild {
  /** `<origin>:<runId>:build`. */
  id: string;
  /** The checkout it was built from. */
  checkout_id: string;
  /** Who submitted it. */
  origin: string;
  /** When the run (and its builds) started. */
  start_time: string;
  /** The guest architecture. */
  architecture: string;
  /** The pins, for a person. */
  comment: string;
  /** The pins, one field each. */
  misc: Record<string, unknown>;
}

/** `$defs.test`, the fields this export fills. */
export interface KcidbTest {
  /** `<origin>:<runId>:<path without the root>`. */
  id: string;
  /** The run's build. */
  build_id: string;
  /** Who submitted it. */
  origin: string;
  /** Dot-separated, under `cnuas_hil`. */
  path: string;
  /** The row title, step name or measurement name. */
  comment: string;
  /** KCIDB status (the harness uses the same set). */
  status: Status;
  /** Seconds, when known. */
  duration?: number;
  /** When the row started, when the report records it. */
  start_time?: string;
  /** The row's transcript. */
  log_url?: string;
  /** Why it did not pass. */
  log_excerpt?: string;
  /** The row's other artifacts. */
  output_files?: KcidbResource[];
  /** A measurement's value. */
  number?: { value: number; unit?: string };
  /** Where it ran. */
  environment: { comment: string; misc: Record<string, unknown> };
  /** Row id and what else has no field. */
  misc: Record<string, unknown>;
}

/** A KCIDB I/O document. */
export interface KcidbReport {
  /** Schema version. */
  version: { major: number; minor: number };
  /** One checkout. */
  checkouts: KcidbCheckout[];
  /** One build. */
  builds: KcidbBuild[];
  /** Rows, steps and measurements. */
  tests: KcidbTest[];
}

/** Options of `toKcidb`. */
export interface KcidbOptions {
  /** The submitting CI system's name; must match `KCIDB_ORIGIN_PATTERN`. */
  origin?: string;
  /**
   * Absolute URL under which the run directory is published; artifact paths
   * (relative to the run directory) are resolved against it.
   */
  logBaseUrl: string;
  /** The full hash of `provenance.project`'s commit, when known. */
  commitHash?: string;
}

/** An origin that the KCIDB schema would refuse. */
export class KcidbOriginError extends UserError {}

/** Check an origin name against the schema's pattern; returns it. */
export function checkOrigin(origin: string): string {
  if (!KCIDB_ORIGIN_PATTERN.test(origin)) {
    throw new KcidbOriginError(
      `--origin ${JSON.stringify(origin)}: KCIDB origins are lower-case letters, digits and _` +
        ` (e.g. ${DEFAULT_KCIDB_ORIGIN})`,
    );
  }
  return origin;
}

/**
 * A path component for a free-text name: lower case, runs of anything outside
 * `[a-z0-9_]` become one `-` (the schema allows `[a-zA-Z0-9_-]`), at most 64
 * characters; `_` when nothing is left.
 */
export function slug(name: string): string {
  const s = name.toLowerCase().replace(/[^a-z0-9_]+/g, "-").replace(/^-+|-+$/g, "")
    .slice(0, 64).replace(/-+$/, "");
  return s || "_";
}

/** Hands out names unique within one scope: a repeat gets `-2`, `-3`, ... */
class UniqueNames {
  #seen = new Set<string>();

  /** `name`, or the first `name-N` not handed out yet. */
  take(name: string): string {
    let n = name;
    for (let i = 2; this.#seen.has(n); i++) n = `${name}-${i}`;
    this.#seen.add(n);
    return n;
  }
}

/** A string the schema's `^[^\0]*$` accepts. */
function noNul(s: string): string {
  return s.replaceAll("\0", "");
}

/** The URL of an artifact (a path relative to the run directory, `/`-separated). */
function artifactUrl(base: string, artifact: string): string {
  const rel = artifact.split("/").map(encodeURIComponent).join("/");
  return new URL(rel, base.endsWith("/") ? base : `${base}/`).href;
}

/** The transcript is the log; every other artifact is an output file. */
function rowFiles(r: RowResult, base: string): Pick<KcidbTest, "log_url" | "output_files"> {
  const transcript = r.artifacts.find((a) => posix.basename(a) === "transcript.log");
  const names = new UniqueNames();
  const outputs = r.artifacts.filter((a) => a !== transcript).map((a) => ({
    name: names.take(noNul(posix.basename(a)) || "_"),
    url: artifactUrl(base, a),
  }));
  return {
    ...(transcript ? { log_url: artifactUrl(base, transcript) } : {}),
    ...(outputs.length ? { output_files: outputs } : {}),
  };
}

/** Where the rows ran: the host and the accelerator guests ran under. */
function environment(p: Provenance): KcidbTest["environment"] {
  const accel = p.accel ? `, guests under ${p.accel}` : "";
  return {
    comment: noNul(`${p.host.hostname} (Linux ${p.host.kernel}, ${p.host.cpus} CPUs${accel})`),
    misc: {
      host: p.host,
      ...(p.accel ? { accel: p.accel } : {}),
      ...(p.accelReason ? { accel_reason: p.accelReason } : {}),
    },
  };
}

/** The reason as the schema's excerpt (bounded, no NUL). */
function excerpt(reason: string | undefined): { log_excerpt?: string } {
  return reason ? { log_excerpt: noNul(reason).slice(0, LOG_EXCERPT_MAX) } : {};
}

/** A measurement's path below its row: each dot-separated part slugged. */
function measurementPath(name: string): string {
  return name.split(".").map((part) => slug(part)).join(".");
}

function measurementNumber(m: Measurement): NonNullable<KcidbTest["number"]> {
  return { value: m.value, ...(m.unit ? { unit: noNul(m.unit) } : {}) };
}

/** The checkout: the project at `provenance.project`. */
function checkout(p: Provenance, id: string, origin: string, hash?: string): KcidbCheckout {
  const known = p.project !== "unknown" && p.project !== "";
  return {
    id,
    origin,
    ...(known ? { git_commit_name: noNul(p.project) } : {}),
    ...(hash ? { git_commit_hash: hash } : {}),
    start_time: p.startedAt,
    valid: true,
    comment: noNul(`Cnuas HIL validation matrix run ${p.runId}`),
    misc: {
      run_id: p.runId,
      ...(p.shard ? { shard: p.shard } : {}),
      ...(p.project.endsWith("-dirty") ? { dirty: true } : {}),
    },
  };
}

/** The one build: the project with the run's pins (what the harness built). */
function build(p: Provenance, id: string, checkoutId: string, origin: string): KcidbBuild {
  const pins = [
    p.qemu ? `QEMU ${p.qemu}` : "",
    p.rdmaCore ? `rdma-core ${p.rdmaCore}` : "",
    p.guestKernel ? `guest kernel ${p.guestKernel}` : "",
  ].filter(Boolean);
  return {
    id,
    checkout_id: checkoutId,
    origin,
    start_time: p.startedAt,
    architecture: GUEST_ARCHITECTURE,
    comment: noNul(
      `Cnuas HIL drivers and device models${pins.length ? ` with ${pins.join(", ")}` : ""}`,
    ),
    misc: {
      ...(p.qemu ? { qemu: p.qemu } : {}),
      ...(p.rdmaCore ? { rdma_core: p.rdmaCore } : {}),
      ...(p.guestKernel ? { guest_kernel: p.guestKernel } : {}),
    },
  };
}

/** Convert a run to KCIDB I/O data. */
export function toKcidb(m: MatrixJson, opts: KcidbOptions): KcidbReport {
  const origin = checkOrigin(opts.origin ?? DEFAULT_KCIDB_ORIGIN);
  const p = m.provenance;
  const checkoutId = `${origin}:${noNul(p.runId)}`;
  const buildId = `${checkoutId}:build`;
  const env = environment(p);
  const tests: KcidbTest[] = [];
  const rowNames = new UniqueNames();
  for (const r of m.rows) {
    const rowPath = rowNames.take(slug(r.id));
    const test = (
      sub: string,
      fields: Omit<KcidbTest, "id" | "build_id" | "origin" | "path" | "environment">,
    ) => {
      const path = sub ? `${rowPath}.${sub}` : rowPath;
      tests.push({
        id: `${checkoutId}:${path}`,
        build_id: buildId,
        origin,
        path: `${KCIDB_TEST_ROOT}.${path}`,
        environment: env,
        ...fields,
      });
    };
    const files = rowFiles(r, opts.logBaseUrl);
    const start = r.startedAt ? { start_time: r.startedAt } : {};
    test("", {
      comment: noNul(r.title),
      status: r.status,
      duration: r.durationSec,
      ...start,
      ...files,
      ...excerpt(r.reason),
      misc: { row_id: r.id },
    });
    const stepNames = new UniqueNames();
    r.steps.forEach((s, i) => {
      test(stepNames.take(slug(s.name)), {
        comment: noNul(s.name),
        status: s.status,
        duration: s.durationSec,
        ...(files.log_url ? { log_url: files.log_url } : {}),
        ...excerpt(s.error),
        misc: { row_id: r.id, step: i + 1 },
      });
    });
    const measurementNames = new UniqueNames();
    for (const [name, value] of Object.entries(r.measurements)) {
      test(`measurements.${measurementNames.take(measurementPath(name))}`, {
        comment: noNul(name),
        status: "DONE",
        number: measurementNumber(value),
        ...(files.log_url ? { log_url: files.log_url } : {}),
        misc: { row_id: r.id, measurement: name },
      });
    }
  }
  return {
    version: { ...KCIDB_VERSION },
    checkouts: [checkout(p, checkoutId, origin, opts.commitHash)],
    builds: [build(p, buildId, checkoutId, origin)],
    tests,
  };
}
