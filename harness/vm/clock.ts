/**
 * A guest's clock against the host's: read over SSH between two host
 * readings (bench ib-perf compares guest timestamps with the host's; a
 * guest restored from a saved state is stepped to the host's time).
 */
import type { Guest } from "./types.ts";

/**
 * The guest clock's lead over the host's (ms), from a guest timestamp
 * (`date +%s%N`) taken between two host readings (ms since the epoch):
 * the guest read is assumed at the midpoint, so the error is at most half
 * the round trip.
 */
export function clockOffsetMs(hostBeforeMs: number, guestNs: string, hostAfterMs: number): number {
  return nsToMs(guestNs) - (hostBeforeMs + hostAfterMs) / 2;
}

/** `date +%s%N` output as ms since the epoch (exact to the µs). */
export function nsToMs(ns: string): number {
  const t = ns.trim();
  if (!/^\d{10,}$/.test(t)) throw new Error(`not a nanosecond timestamp: ${JSON.stringify(ns)}`);
  return Number(BigInt(t) / 1000n) / 1000;
}

/** Host wall clock, ms since the epoch, sub-ms. */
export function hostNow(): number {
  return performance.timeOrigin + performance.now();
}

/** A guest clock reading: its lead over the host's and the round trip it was read in (ms). */
export interface ClockReading {
  /** The guest clock's lead over the host's, ms (negative: behind). */
  offMs: number;
  /** The round trip of the reading, ms; the offset is right to half of it. */
  rttMs: number;
}

/** The best (shortest round trip) of `tries` readings, or undefined when none succeeded. */
export async function readGuestClock(g: Guest, tries = 3): Promise<ClockReading | undefined> {
  let best: ClockReading | undefined;
  for (let i = 0; i < tries; i++) {
    const t0 = hostNow();
    const r = await g.run("date +%s%N", { timeoutSec: 30 });
    const t1 = hostNow();
    if (r.code === 0 && (!best || t1 - t0 < best.rttMs)) {
      best = { rttMs: t1 - t0, offMs: clockOffsetMs(t0, r.stdout, t1) };
    }
  }
  return best;
}
