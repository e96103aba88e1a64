/**
 * Paths, cache location and timeouts. The only place that knows where things
 * live; `cli.ts` fills it from flags and the environment.
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** Which accelerator QEMU runs guests with. */
export type Accel = "kvm" | "tcg";

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
}

/** Repository root, derived from this file's location. */
export const REPO_ROOT: string = dirname(dirname(fileURLToPath(import.meta.url)));

/** Default cache directory; override with `--cache-dir` or `CNUAS_HIL_CACHE`. */
export const DEFAULT_CACHE_DIR = "/var/cache/cnuas-hil";

/** Default Debian mirror; override with `--mirror` or `CNUAS_HIL_MIRROR`. */
export const DEFAULT_MIRROR = "http://deb.debian.org/debian";

/** A config with defaults, for tests and library users. */
export function defaultConfig(overrides: Partial<Config> = {}): Config {
  return {
    repoRoot: REPO_ROOT,
    cacheDir: Deno.env.get("CNUAS_HIL_CACHE") ?? DEFAULT_CACHE_DIR,
    reportsDir: join(REPO_ROOT, "reports"),
    mirror: Deno.env.get("CNUAS_HIL_MIRROR") ?? DEFAULT_MIRROR,
    accel: "auto",
    verbose: true,
    ...overrides,
  };
}

/**
 * How much slower than KVM a TCG guest is, for scaling timeouts. Measured:
 * TCG boots in ~20 s where KVM takes ~3 s; guest-side work is ~5-10x slower.
 */
export function timeoutScale(accel: Accel): number {
  return accel === "kvm" ? 1 : 4;
}
