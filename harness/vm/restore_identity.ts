/**
 * What makes a guest restored from a saved state its own machine: every
 * guest from one state starts with the same clock, hostname, machine-id and
 * kernel CRNG state. One SSH command puts each right (docs/architecture.md,
 * "Guests from a snapshot").
 */
import { HilError } from "../errors.ts";
import { type ClockReading, readGuestClock } from "./clock.ts";
import type { Guest } from "./types.ts";

/** `_IO('R', 0x07)`: reseed the CRNG from the input pool now (CAP_SYS_ADMIN). */
export const RNDRESEEDCRNG = 0x5207;

/** Bytes of host randomness each restored guest's input pool gets. */
export const RESEED_BYTES = 64;

/**
 * The shell command that gives a restored guest its identity; its standard
 * input must be RESEED_BYTES bytes from the host's CSPRNG.
 *
 * - The clock first, so the time spent on the rest does not add to its
 *   error: the saved state's clock is the time it was saved.
 * - The CRNG: the host's bytes are mixed into the input pool and the CRNG
 *   reseeded from it at once (a write alone only mixes; the kernel would
 *   reseed on its own schedule, up to a minute later). The vmgenid device
 *   already made the kernel reseed at resume; this does not depend on it.
 * - Hostname and machine-id after the reseed: the machine-id is drawn from
 *   the CRNG.
 *
 * `nowMs` is the host's wall clock in ms since the epoch.
 */
export function identityCommand(name: string, nowMs: number): string {
  if (!/^[a-z0-9][a-z0-9-]*$/.test(name)) throw new Error(`not a guest name: ${name}`);
  const sec = (nowMs / 1000).toFixed(3);
  return [
    `date -u -s @${sec} >/dev/null`,
    `head -c ${RESEED_BYTES} >/dev/urandom`,
    `perl -e 'open(my $f, "<", "/dev/urandom") or die; ` +
    `ioctl($f, ${RNDRESEEDCRNG}, 0) or die "RNDRESEEDCRNG: $!\\n"'`,
    `hostname ${name}`,
    "tr -d - </proc/sys/kernel/random/uuid >/etc/machine-id",
  ].join(" && ");
}

/** RESEED_BYTES fresh bytes from the host's CSPRNG. */
export function reseedBytes(): Uint8Array {
  return crypto.getRandomValues(new Uint8Array(RESEED_BYTES));
}

/**
 * Error a restored guest's clock may keep beyond half the round trip it is
 * read in (ms).
 */
export const CLOCK_TOLERANCE_MS = 250;

/** Readings (and corrections) before giving up on a guest's clock. */
const CLOCK_ROUNDS = 3;

/**
 * The command that moves the guest's clock back by `offMs` (its measured
 * lead), relative to its own reading when it runs: how late the command
 * starts does not matter, unlike an absolute time.
 */
export function clockCorrection(offMs: number): string {
  const o = (offMs / 1000).toFixed(3);
  return `date -u -s @$(awk -v o=${o} 'BEGIN { "date +%s.%N" | getline t; ` +
    `printf "%.3f", t - o }') >/dev/null`;
}

/**
 * Give a restored guest its identity (see `identityCommand`), then read its
 * clock and correct it until it is within CLOCK_TOLERANCE_MS of the host's:
 * the absolute step is late by however long the command took to start,
 * which on a loaded host is seconds. Throws when any part fails.
 */
export async function applyIdentity(g: Guest): Promise<ClockReading> {
  const r = await g.run(identityCommand(g.name, Date.now()), {
    stdin: reseedBytes(),
    timeoutSec: 30,
  });
  if (r.code !== 0) {
    throw new HilError(`${g.name}: giving the restored guest its identity: ${r.stderr.trim()}`);
  }
  for (let i = 0; i < CLOCK_ROUNDS; i++) {
    const c = await readGuestClock(g, 1);
    if (!c) break;
    if (Math.abs(c.offMs) <= CLOCK_TOLERANCE_MS + c.rttMs / 2) return c;
    const fix = await g.run(clockCorrection(c.offMs), { timeoutSec: 30 });
    if (fix.code !== 0) throw new HilError(`${g.name}: stepping the clock: ${fix.stderr.trim()}`);
  }
  throw new HilError(`${g.name}: the restored guest's clock could not be set to the host's`);
}
