/**
 * `ping` as a delivery check that only a lost frame fails, however slow the
 * guests are. With `-c N` alone, once a reply has come ping waits for the
 * last one only max(2 RTT, interval): a guest stalled longer on a shared
 * host counts as loss. With a deadline (`-w`) it waits until N probes are
 * answered, sending more meanwhile, so its own loss figure counts the extra
 * probes still in flight. The verdict is therefore by sequence number: each
 * of probes 1..N was answered before the deadline.
 */
import type { Guest } from "../vm/types.ts";

/** What `ping` is asked to do. */
export interface PingOptions {
  /** Probes that must each be answered. */
  count: number;
  /** Seconds between probes (ping's `-i`; 0.2 is the least a non-root user may ask). */
  intervalSec?: number;
  /** ICMP payload bytes (`-s`). */
  size?: number;
  /** Forbid fragmentation (`-M do`): the payload must fit the path MTU. */
  dontFragment?: boolean;
  /** Seconds until ping gives up (`-w`); default: the probes' time plus 15 s. */
  deadlineSec?: number;
}

function deadlineSec(o: PingOptions): number {
  return o.deadlineSec ?? Math.ceil(o.count * (o.intervalSec ?? 0.2)) + 15;
}

/** The ping command line for `to`. */
export function pingCommand(to: string, o: PingOptions): string {
  return [
    `ping -n -c ${o.count} -i ${o.intervalSec ?? 0.2} -w ${deadlineSec(o)}`,
    ...(o.dontFragment ? ["-M do"] : []),
    ...(o.size !== undefined ? [`-s ${o.size}`] : []),
    to,
  ].join(" ");
}

/** What a ping run's output says. */
export interface PingVerdict {
  /** Probes among 1..count with no reply. */
  missing: number[];
  /** Average round trip in ms, from the summary line. */
  rttAvgMs?: number;
}

/** Judge ping's output: which of probes 1..`count` got no reply. */
export function pingVerdict(out: string, count: number): PingVerdict {
  const answered = new Set<number>();
  for (const m of out.matchAll(/bytes from .*icmp_seq=(\d+)/g)) answered.add(Number(m[1]));
  const missing = Array.from({ length: count }, (_, k) => k + 1).filter((s) => !answered.has(s));
  const rtt = /= [\d.]+\/([\d.]+)\//.exec(out);
  return { missing, ...(rtt ? { rttAvgMs: Number(rtt[1]) } : {}) };
}

/** A ping run and its verdict. */
export interface PingResult extends PingVerdict {
  /** Each of probes 1..count answered. */
  ok: boolean;
  /** What went wrong, for a failure message (empty when ok). */
  why: string;
}

/** Ping `to` from `g` and judge it ({@link pingVerdict}). */
export async function pingEach(g: Guest, to: string, o: PingOptions): Promise<PingResult> {
  const cmd = pingCommand(to, o);
  const r = await g.run(cmd, { timeoutSec: deadlineSec(o) + 30 });
  const out = r.stdout + r.stderr;
  const v = pingVerdict(out, o.count);
  const ok = v.missing.length === 0;
  const why = ok ? "" : `${g.name}: ${cmd}: no reply to icmp_seq ${v.missing.join(", ")}: ` +
    out.trim().split("\n").slice(-3).join(" | ");
  return { ...v, ok, why };
}
