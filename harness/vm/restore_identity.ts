/**
 * What makes a guest restored from a saved state its own machine: every
 * guest from one state starts with the same clock, hostname, machine-id and
 * kernel CRNG state. One clock reading and one SSH command put each right
 * (docs/architecture.md, "Guests from a snapshot").
 */
import { HilError } from "../errors.ts";
import { type ClockReading, readGuestClock } from "./clock.ts";
import type { Guest } from "./types.ts";

/** `_IO('R', 0x07)`: reseed the CRNG from the input pool now (CAP_SYS_ADMIN). */
export const RNDRESEEDCRNG = 0x5207;

/** What the guest's init does at boot to let udev load the PCI drivers (harness/build/guest-init.sh). */
export const COLDPLUG_PCI =
  "udevadm trigger --action=add --subsystem-match=pci && udevadm settle -t 60";

/**
 * Before a guest's state is saved: our drivers out (those udev loaded at
 * boot), last loaded first, so that each restored guest's udev probes its
 * own devices ({@link identityCommand}).
 */
export const UNLOAD_OUR_DRIVERS = "for m in cnuas_ib cnuas_net cnuasgpu_host cnuasgpu; do " +
  'if grep -q "^$m " /proc/modules; then rmmod "$m" || exit 1; fi; done';

/** Bytes of host randomness each restored guest's input pool gets. */
export const RESEED_BYTES = 64;

/**
 * The command that moves the guest's clock back by `offMs` (its measured
 * lead over the host's), relative to its own reading when it runs: how late
 * the command starts does not matter, unlike stepping to an absolute time
 * (late by the command's start, which on a loaded host is seconds).
 */
export function clockCorrection(offMs: number): string {
  const o = (offMs / 1000).toFixed(3);
  return `date -u -s @$(awk -v o=${o} 'BEGIN { "date +%s.%N" | getline t; ` +
    `printf "%.3f", t - o }') >/dev/null`;
}

/**
 * The shell command that gives a restored guest its identity, the guest's
 * clock measured `offMs` ahead of the host's; its standard input must be
 * RESEED_BYTES bytes from the host's CSPRNG.
 *
 * - The clock: the saved state's clock is the time it was saved.
 * - The CRNG: the host's bytes are mixed into the input pool and the CRNG
 *   reseeded from it at once (a write alone only mixes; the kernel would
 *   reseed on its own schedule, up to a minute later). The vmgenid device
 *   already made the kernel reseed at resume; this does not depend on it.
 * - Hostname and machine-id after the reseed: the machine-id is drawn from
 *   the CRNG.
 * - The PCI coldplug of the boot, again: the state was saved with our
 *   drivers unloaded ({@link UNLOAD_OUR_DRIVERS}), because they read each
 *   device's identity (the vnic's MAC) when they probe, and a restored
 *   guest has its own devices; udev loads them now through the modaliases,
 *   as at boot. Left out with `coldplug` false, for a caller that installs
 *   other modules first and runs the coldplug itself (`--dev-modules`):
 *   loading the image's modules only to unload them costs ~2 s under TCG.
 */
export function identityCommand(name: string, offMs: number, coldplug = true): string {
  if (!/^[a-z0-9][a-z0-9-]*$/.test(name)) throw new Error(`not a guest name: ${name}`);
  return [
    clockCorrection(offMs),
    `head -c ${RESEED_BYTES} >/dev/urandom`,
    `perl -e 'open(my $f, "<", "/dev/urandom") or die; ` +
    `ioctl($f, ${RNDRESEEDCRNG}, 0) or die "RNDRESEEDCRNG: $!\\n"'`,
    `hostname ${name}`,
    "tr -d - </proc/sys/kernel/random/uuid >/etc/machine-id",
    ...(coldplug ? [COLDPLUG_PCI] : []),
  ].join(" && ");
}

/** RESEED_BYTES fresh bytes from the host's CSPRNG. */
export function reseedBytes(): Uint8Array {
  return crypto.getRandomValues(new Uint8Array(RESEED_BYTES));
}

/**
 * Give a restored guest its identity (see `identityCommand`): its clock is
 * read once (right to half the round trip), then corrected by what was
 * read. Returns that reading; throws when any part fails. `coldplug` as for
 * {@link identityCommand}.
 */
export async function applyIdentity(g: Guest, coldplug = true): Promise<ClockReading> {
  const clock = await readGuestClock(g, 1);
  if (!clock) throw new HilError(`${g.name}: cannot read the restored guest's clock`);
  const r = await g.run(identityCommand(g.name, clock.offMs, coldplug), {
    stdin: reseedBytes(),
    timeoutSec: 30,
  });
  if (r.code !== 0) {
    throw new HilError(`${g.name}: giving the restored guest its identity: ${r.stderr.trim()}`);
  }
  return clock;
}
