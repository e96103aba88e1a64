/**
 * What makes a guest restored from a saved state its own machine: every
 * guest from one state starts with the same clock, hostname, machine-id and
 * kernel CRNG state. One SSH command reads the clock and puts each right
 * (docs/architecture.md, "Guests from a snapshot").
 */
import { HilError } from "../errors.ts";
import { clockOffsetMs, type ClockReading, hostNow } from "./clock.ts";
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
 * settimeofday(2)'s number on x86_64, the guests' only architecture
 * (qemu-system-x86_64, q35). Perl's `syscall.ph` would name it, but
 * loading it parses dozens of generated headers: ~40 ms natively, many
 * times that under TCG, on every restore.
 */
export const X86_64_SYS_SETTIMEOFDAY = 164;

/**
 * The Perl program that reads the guest's clock for the host and moves it
 * back by the lead the host answers with: it prints its clock (`date
 * +%s%N`'s form) as its first line, then reads the lead in microseconds
 * as a line on stdin, and corrects relative to its own second reading,
 * with no process between that reading and the setting: how late the
 * answer comes does not matter, unlike stepping to an absolute time (late
 * by the round trip, which on a loaded host is seconds).
 */
export const CLOCK_CORRECTION = "$| = 1; my ($s0, $us0) = Time::HiRes::gettimeofday(); " +
  'printf("%d%06d000\\n", $s0, $us0); ' +
  "my $lead = <STDIN>; defined($lead) and $lead =~ /^(-?\\d+)$/ " +
  'or die "clock: no lead from the host\\n"; my $lead_us = $1; ' +
  "my ($s, $us) = Time::HiRes::gettimeofday(); my $t = $s * 1000000 + $us - $lead_us; " +
  `syscall(${X86_64_SYS_SETTIMEOFDAY}, pack("l!l!", int($t / 1000000), $t % 1000000), 0) == 0 ` +
  'or die "settimeofday: $!\\n"; ';

/**
 * The shell command that gives a restored guest its identity. It prints
 * the guest's clock as its first line; its standard input must then be the
 * guest clock's lead over the host's in microseconds as a line, followed by
 * RESEED_BYTES bytes from the host's CSPRNG ({@link applyIdentity}). One
 * Perl process does all but the coldplug (a process start costs ~30 ms of
 * a TCG guest alone, an SSH command ~0.4 s and over 1 s beside other rows;
 * a separate `date` command, `awk`, `head`, `hostname` and `tr` were seven).
 *
 * - The clock: the saved state's clock is the time it was saved.
 * - The CRNG: the host's bytes are mixed into the input pool and the CRNG
 *   reseeded from it at once (a write alone only mixes; the kernel would
 *   reseed on its own schedule, up to a minute later). The vmgenid device
 *   already made the kernel reseed at resume; this does not depend on it.
 * - Hostname and machine-id after the reseed: the machine-id is drawn from
 *   the CRNG (the kernel's random UUID, without its dashes).
 * - The PCI coldplug of the boot, again: the state was saved with our
 *   drivers unloaded ({@link UNLOAD_OUR_DRIVERS}), because they read each
 *   device's identity (the vnic's MAC) when they probe, and a restored
 *   guest has its own devices; udev loads them now through the modaliases,
 *   as at boot. Left out with `coldplug` false, for a caller that installs
 *   other modules first and runs the coldplug itself (`--dev-modules`):
 *   loading the image's modules only to unload them costs ~2 s under TCG.
 */
export function identityCommand(name: string, coldplug = true): string {
  if (!/^[a-z0-9][a-z0-9-]*$/.test(name)) throw new Error(`not a guest name: ${name}`);
  const perl = CLOCK_CORRECTION +
    `read(STDIN, my $seed, ${RESEED_BYTES}) == ${RESEED_BYTES} ` +
    'or die "reseed: fewer bytes on stdin\\n"; ' +
    'open(my $r, ">", "/dev/urandom") or die "/dev/urandom: $!\\n"; ' +
    `syswrite($r, $seed) == ${RESEED_BYTES} or die "/dev/urandom: $!\\n"; ` +
    `ioctl($r, ${RNDRESEEDCRNG}, 0) or die "RNDRESEEDCRNG: $!\\n"; ` +
    `put("/proc/sys/kernel/hostname", "${name}"); ` +
    'open(my $u, "<", "/proc/sys/kernel/random/uuid") or die "uuid: $!\\n"; ' +
    "my $id = <$u>; $id =~ tr/-//d; " +
    'put("/etc/machine-id", $id); ' +
    'sub put { open(my $f, ">", $_[0]) or die "$_[0]: $!\\n"; print $f $_[1]; ' +
    'close($f) or die "$_[0]: $!\\n" }';
  return [
    `perl -MTime::HiRes -e '${perl}'`,
    ...(coldplug ? [COLDPLUG_PCI] : []),
  ].join(" && ");
}

/** RESEED_BYTES fresh bytes from the host's CSPRNG. */
export function reseedBytes(): Uint8Array {
  return crypto.getRandomValues(new Uint8Array(RESEED_BYTES));
}

/**
 * The host's answer to the identity command's clock line (`firstLine`,
 * read now; the command was sent at `sentAt`, host ms): the guest clock's
 * lead in µs as a line, then the reseed bytes; and the reading the lead
 * comes from, right to half that round trip.
 */
export function clockAnswer(
  firstLine: string,
  sentAt: number,
): { reading: ClockReading; stdin: Uint8Array } {
  const now = hostNow();
  const reading = { rttMs: now - sentAt, offMs: clockOffsetMs(sentAt, firstLine, now) };
  const lead = new TextEncoder().encode(`${Math.round(reading.offMs * 1000)}\n`);
  const stdin = new Uint8Array(lead.length + RESEED_BYTES);
  stdin.set(lead);
  stdin.set(reseedBytes(), lead.length);
  return { reading, stdin };
}

/**
 * Give a restored guest its identity (see `identityCommand`) in one SSH
 * command: its clock is read (right to half the round trip) and corrected
 * by what was read. Returns that reading; throws when any part fails.
 * `coldplug` as for {@link identityCommand}.
 */
export async function applyIdentity(g: Guest, coldplug = true): Promise<ClockReading> {
  let clock: ClockReading | undefined;
  const sentAt = hostNow();
  const r = await g.run(identityCommand(g.name, coldplug), {
    answer: (line) => {
      const a = clockAnswer(line, sentAt);
      clock = a.reading;
      return a.stdin;
    },
    timeoutSec: 30,
  });
  if (r.code !== 0 || !clock) {
    throw new HilError(
      `${g.name}: giving the restored guest its identity (exit ${r.code}): ${r.stderr.trim()}`,
    );
  }
  return clock;
}
