/**
 * Paths, cache location and timeouts. The only place that knows where things
 * live, and the only place that reads the harness's `CNUAS_HIL_*` settings
 * from the environment (exec.ts reads PATH to spawn tools); `cli.ts` lays its
 * flags over what is here.
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** Which accelerator QEMU runs guests with. */
export type Accel = "kvm" | "tcg";

/**
 * How much each row does (docs/howto.md, "Two depths"). `quick`, the
 * default: every claim of the row checked, with smaller volumes (fewer
 * iterations, shorter transfers). `deep`: the full volumes, for nightly CI.
 */
export type Depth = "quick" | "deep";

/** Every depth, in the order the CLI lists them. */
export const DEPTHS: readonly Depth[] = ["quick", "deep"];

/** Everything a run needs to know about its surroundings. */
export interface Config {
  /** Root of this repository. */
  repoRoot: string;
  /** Content-addressed cache of heavy artifacts (outside the repo). */
  cacheDir: string;
  /** Where `reports/<run-id>/` directories go. */
  reportsDir: string;
  /** Debian mirror base URL used for pinned downloads and debootstrap. */
  mirror: string;
  /** Requested accelerator; `auto` probes. */
  accel: Accel | "auto";
  /** Print progress lines. */
  verbose: boolean;
  /** Host packages the `fresh-host` row leaves out, to show it failing. */
  freshHostWithout?: string[];
  /** Seed of roce-e2e's receive-loss pattern (`--loss-seed`); random when unset. */
  lossSeed?: number;
  /**
   * Start guests from saved VM states where a row allows it (default);
   * `--no-snapshot` boots every guest cold.
   */
  snapshots: boolean;
  /** How much each row does (`--depth`). */
  depth: Depth;
  /**
   * The developer's loop (`--dev-modules`): guests run the kernel modules
   * built from the working tree (the `modules` stage) in place of the
   * packaged ones, on the newest image already built; rows that check the
   * packages are skipped. Never for a published run.
   */
  devModules: boolean;
  /**
   * How many rows that share the cores run at once (`--jobs`); rows that
   * judge timing always run alone (matrix/lanes.ts).
   */
  jobs: number;
}

/** Repository root, derived from this file's location. */
export const REPO_ROOT: string = dirname(dirname(fileURLToPath(import.meta.url)));

/**
 * The environment variables a run reads, each the same as a flag (the flag
 * wins): CI runners set these once instead of editing every command.
 */
export interface EnvironmentSettings {
  /** `CNUAS_HIL_CACHE`, as `--cache-dir`. */
  cacheDir?: string;
  /** `CNUAS_HIL_MIRROR`, as `--mirror`. */
  mirror?: string;
  /** `CNUAS_HIL_ACCEL`, as `--accel` (unchecked: the CLI checks it). */
  accel?: string;
  /** `CNUAS_HIL_LOSS_SEED`, as `--loss-seed` (unchecked: the CLI checks it). */
  lossSeed?: string;
  /** `CNUAS_HIL_DEPTH`, as `--depth` (unchecked: the CLI checks it). */
  depth?: string;
  /** `CNUAS_HIL_JOBS`, as `--jobs` (unchecked: the CLI checks it). */
  jobs?: string;
}

/** Read {@link EnvironmentSettings}; `get` is injectable for tests. */
export function environmentSettings(
  get: (name: string) => string | undefined = (n) => Deno.env.get(n),
): EnvironmentSettings {
  const pick = (name: string) => get(name) || undefined;
  return {
    cacheDir: pick("CNUAS_HIL_CACHE"),
    mirror: pick("CNUAS_HIL_MIRROR"),
    accel: pick("CNUAS_HIL_ACCEL"),
    lossSeed: pick("CNUAS_HIL_LOSS_SEED"),
    depth: pick("CNUAS_HIL_DEPTH"),
    jobs: pick("CNUAS_HIL_JOBS"),
  };
}

/**
 * A row's fuzz seed: the decimal number in environment variable `name`
 * (`CNUAS_HIL_GPU_HOST_SEED`, `CNUAS_HIL_QTEST_FUZZ_SEED`: the seed a report
 * recorded, to replay it), else a random one below 2^31. `get` is
 * injectable for tests.
 */
export function fuzzSeed(
  name: string,
  get: (name: string) => string | undefined = (n) => Deno.env.get(n),
): number {
  const asked = get(name);
  if (asked !== undefined && /^\d+$/.test(asked)) return Number(asked) >>> 0;
  return crypto.getRandomValues(new Uint32Array(1))[0] >>> 1;
}

/** Default cache directory; override with `--cache-dir` or `CNUAS_HIL_CACHE`. */
export const DEFAULT_CACHE_DIR = "/var/cache/cnuas-hil";

/** Default Debian mirror; override with `--mirror` or `CNUAS_HIL_MIRROR`. */
export const DEFAULT_MIRROR = "http://deb.debian.org/debian";

/** A config with defaults, for tests and library users. */
export function defaultConfig(overrides: Partial<Config> = {}): Config {
  const env = environmentSettings();
  return {
    repoRoot: REPO_ROOT,
    cacheDir: env.cacheDir ?? DEFAULT_CACHE_DIR,
    reportsDir: join(REPO_ROOT, "reports"),
    mirror: env.mirror ?? DEFAULT_MIRROR,
    accel: "auto",
    verbose: true,
    snapshots: true,
    depth: "quick",
    devModules: false,
    jobs: defaultJobs(),
    ...overrides,
  };
}

/**
 * Rows sharing the cores that run at once by default: one per core, at
 * least 2 (a 2-core host measured faster with 2 than 3: docs/architecture.md, "The
 * flow of a row") and at most 4 (each guest row holds 1-3 guests of 1 GiB).
 */
export function defaultJobs(cores: number = navigator.hardwareConcurrency): number {
  return Math.max(2, Math.min(4, cores));
}

/**
 * How much slower than KVM a TCG guest is, for scaling timeouts. Measured:
 * TCG boots in ~20 s where KVM takes ~3 s; guest-side work is ~5-10x slower.
 */
export function timeoutScale(accel: Accel): number {
  return accel === "kvm" ? 1 : 4;
}
