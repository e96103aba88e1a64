/**
 * What rows run in a guest to see cnuas_net's DCB act (docs/devices.md,
 * "cnuas_net: DCB (PFC and ETS)"): a traffic generator with one flow per
 * DSCP, and how to tell its frames and PFC frames apart in a capture.
 *
 * ```ts
 * const flows = await startFlows(g, "eth0", { secs: 6, size: 1000, dscps: [0, 26] });
 * // ... inject, read counters ...
 * await flows.stop(); // or flows.done(), which waits the 6 s out
 * ```
 */
import type { PcapngPacket } from "../fabric/pcapng.ts";
import type { Guest } from "../vm/types.ts";
import { shq } from "./shell.ts";

/** Where the flows write their process group's id (they run in a session of their own). */
const FLOWS_PGID = "/tmp/cnuas_flows.pgid";

/**
 * One process per DSCP sends broadcast IPv4/UDP frames of `size` bytes with
 * that DSCP through an AF_PACKET socket (through the qdisc, so the driver's
 * ndo_select_queue classifies them) for `secs` seconds, as fast as the
 * socket takes them, then prints what it sent. SIGTERM to its process group
 * (its id in FLOWS_PGID) ends every flow early, each still printing.
 */
const FLOWS_PY = `
import os, signal, socket, struct, sys, time
iface, secs, size = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
dscps = [int(d) for d in sys.argv[4:]]
stopped = []
signal.signal(signal.SIGTERM, lambda sig, frame: stopped.append(sig))
open("${FLOWS_PGID}", "w").write("%d\\n" % os.getpgrp())
src = bytes.fromhex(open("/sys/class/net/%s/address" % iface).read().strip().replace(":", ""))
def frame(dscp):
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, dscp << 2, size - 14, 0, 0x4000, 64, 17, 0,
                     bytes([10, 9, 0, 1]), bytes([10, 9, 255, 255]))
    udp = struct.pack("!HHHH", 40000 + dscp, 9, size - 34, 0)
    return b"\\xff" * 6 + src + b"\\x08\\x00" + ip + udp + bytes(size - 42)
pids = []
for d in dscps:
    pid = os.fork()
    if pid == 0:
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        s.bind((iface, 0))
        f = frame(d)
        end = time.monotonic() + secs
        n = err = 0
        while time.monotonic() < end and not stopped:
            try:
                s.send(f)
                n += 1
            except OSError:
                err += 1
        print("dscp %d sent %d refused %d" % (d, n, err), flush=True)
        os._exit(0)
    pids.append(pid)
for p in pids:
    os.waitpid(p, 0)
print("done", flush=True)
`;

/** Where the flows' output goes in the guest. */
const FLOWS_OUT = "/tmp/cnuas_flows.out";

/** What {@link startFlows} sends. */
export interface FlowSpec {
  /** How long each flow sends. */
  secs: number;
  /** Frame length in bytes (60..1514). */
  size: number;
  /** One flow per DSCP value (0..63). */
  dscps: number[];
}

/** Flows running in the background of a guest. */
export interface Flows {
  /** Wait for them to end; resolves to their report (one line per flow). */
  done(): Promise<string>;
  /** End them now (SIGTERM to their process group), then as {@link Flows.done}. */
  stop(): Promise<string>;
}

/** Start one flow per DSCP out of `iface` in the background; resolves once they run. */
export async function startFlows(g: Guest, iface: string, spec: FlowSpec): Promise<Flows> {
  if (spec.size < 60 || spec.size > 1514) throw new RangeError(`flow frames of ${spec.size} bytes`);
  const args = [iface, String(spec.secs), String(spec.size), ...spec.dscps.map(String)];
  await g.run(
    `rm -f ${FLOWS_OUT} ${FLOWS_PGID}; setsid python3 -c ${shq(FLOWS_PY)} ${
      args.map(shq).join(" ")
    } ` +
      `</dev/null >${FLOWS_OUT} 2>&1 & ` +
      // returns once python runs (the group's id is written just before the first fork)
      `for i in $(seq 100); do [ -s ${FLOWS_PGID} ] && exit 0; sleep 0.1; done; ` +
      `echo "the flows did not start: $(cat ${FLOWS_OUT})" >&2; exit 1`,
    { check: true },
  );
  const done = async (): Promise<string> => {
    const deadline = Date.now() + (spec.secs + 60) * 1000;
    for (;;) {
      const r = await g.run(`cat ${FLOWS_OUT}`);
      if (/^done$/m.test(r.stdout)) return r.stdout.trim();
      if (Date.now() > deadline) throw new Error(`flows did not end: ${r.stdout}${r.stderr}`);
      await new Promise((res) => setTimeout(res, 200));
    }
  };
  return {
    done,
    async stop(): Promise<string> {
      // flows that already ran their time out are gone: nothing to stop (ESRCH)
      await g.run(`kill -TERM -$(cat ${FLOWS_PGID}) 2>/dev/null; true`, { check: true });
      return await done();
    },
  };
}

/** The DSCP of an untagged IPv4 frame, or undefined for anything else. */
export function frameDscp(f: Uint8Array): number | undefined {
  if (f.length < 34 || f[12] !== 0x08 || f[13] !== 0x00 || f[14] >> 4 !== 4) return undefined;
  return f[15] >> 2;
}

/** Whether a frame is an 802.1Qbb PFC frame. */
export function isPfcFrame(f: Uint8Array): boolean {
  return f.length >= 34 && f[12] === 0x88 && f[13] === 0x08 && f[14] === 0x01 && f[15] === 0x01;
}

/** The frames `src` sent with `dscp`, by capture time (ns). */
export function flowTimes(packets: PcapngPacket[], src: Uint8Array, dscp: number): bigint[] {
  return packets
    .filter((k) =>
      k.data.length >= 14 && src.every((b, i) => k.data[6 + i] === b) && frameDscp(k.data) === dscp
    )
    .map((k) => k.timestampNs);
}

/** A silence of one flow after an instant: from the instant (or a later frame) to its next frame. */
export interface Silence {
  fromNs: bigint;
  toNs: bigint;
  /** Its length in ms. */
  ms: number;
}

/**
 * The longest silence of `times` that begins at `atNs` or at a frame of
 * `times` up to `withinNs` later, and ends at the next frame. A silence
 * that began before `atNs` counts from `atNs`.
 */
export function silenceAfter(times: bigint[], atNs: bigint, withinNs: bigint): Silence {
  let best: Silence = { fromNs: atNs, toNs: atNs, ms: 0 };
  for (let i = 1; i < times.length; i++) {
    if (times[i] <= atNs || times[i - 1] > atNs + withinNs) continue;
    const from = times[i - 1] > atNs ? times[i - 1] : atNs;
    const ms = Number(times[i] - from) / 1e6;
    if (ms > best.ms) best = { fromNs: from, toNs: times[i], ms };
  }
  return best;
}

/** How many of `times` fall inside [fromNs, toNs). */
export function countIn(times: bigint[], fromNs: bigint, toNs: bigint): number {
  return times.filter((t) => t >= fromNs && t < toNs).length;
}
