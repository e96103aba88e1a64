/**
 * The wire fuzz of issue 20 in a guest: wire_victim (drivers/test) sets up
 * the QPs and the MR the frames aim at, the switch injects the frames of
 * harness/models/rdma/wire_fuzz.ts at the guest's port, and wire_victim's
 * report afterwards says what the frames did to the QPs and the memory.
 *
 * ```ts
 * const v = await startVictim(g, dev, gid, FAKE_PEER, 8);
 * // ... inject ...
 * const report = await stopVictim(g);
 * ```
 */
import { GUEST_PATHS } from "../vm/types.ts";
import type { Guest } from "../vm/types.ts";
import { type FabricOps, INJECT_MAX_FRAMES } from "../fabric/client.ts";
import type { CnuasIbDev } from "./cnuas_ib.ts";
import { RdmaGuestError } from "./cnuas_ib.ts";
import { collectBackground, inBackground } from "./shell.ts";

/** The guest program. */
export const WIRE_VICTIM = `${GUEST_PATHS.bin}/wire_victim`;

/** Where the program runs in the background (`<tag>.out`, `<tag>.rc`) and the file that stops it. */
const TAG = "/tmp/wire_victim";
const STOP = "/tmp/wire_victim.stop";

/**
 * The peer the victims are connected to: nobody has it, the fuzz speaks
 * for it. RoCEv2: by `ip` (with `mac` as its neighbour entry); native
 * InfiniBand: by `lid`.
 */
export type FakePeer =
  & {
    /** The victims' remote QPN base (QP i: base + i); no QP on the wire has it. */
    qpnBase: number;
  }
  & ({ ip: string; mac: string; lid?: undefined } | { lid: number; ip?: undefined });

/** What wire_victim printed when ready. */
export interface VictimSetup {
  mr: { va: bigint; rkey: number; len: number };
  qps: { qpn: number; rqPsn: number; sqPsn: number }[];
  /** Its UD QP, with no receive ever posted, and the QP's Q_Key. */
  ud: { qpn: number; qkey: number };
}

/** What wire_victim printed when stopped. */
export interface VictimReport {
  /** ibv_qp_state of each QP (3 RTS, 6 ERR). */
  states: number[];
  /** ibv_qp_state of the UD QP. */
  udState: number;
  /** Completions found on its CQ (no WR was posted: 0). */
  cqes: number;
  /** Bytes changed in the unregistered memory on both sides of the MR. */
  canaryOutside: number;
  /** Bytes changed in the MR's second half beyond what the model allows (see the row). */
  canaryInside: number;
  /** The MR's first half. */
  window: Uint8Array;
}

/** wire_victim printed something other than its lines. */
export class WireVictimError extends RdmaGuestError {}

/** Read wire_victim's setup lines. */
export function parseVictimSetup(out: string): VictimSetup {
  const mr = /^mr va (0x[0-9a-f]+) rkey (0x[0-9a-f]+) len (\d+)$/m.exec(out);
  const qps = [
    ...out.matchAll(/^qp (\d+) qpn (0x[0-9a-f]+) rq_psn (0x[0-9a-f]+) sq_psn (0x[0-9a-f]+)$/gm),
  ]
    .map((m) => ({ qpn: Number(m[2]), rqPsn: Number(m[3]), sqPsn: Number(m[4]) }));
  const ud = /^ud qpn (0x[0-9a-f]+) qkey (0x[0-9a-f]+)$/m.exec(out);
  if (!mr || !qps.length || !ud || !/^ready$/m.test(out)) {
    throw new WireVictimError(`wire_victim did not get ready: ${out.slice(-1500)}`);
  }
  return {
    mr: { va: BigInt(mr[1]), rkey: Number(mr[2]), len: Number(mr[3]) },
    qps,
    ud: { qpn: Number(ud[1]), qkey: Number(ud[2]) },
  };
}

/** Read wire_victim's report lines. */
export function parseVictimReport(out: string): VictimReport {
  const num = (re: RegExp) => {
    const m = re.exec(out);
    if (!m) throw new WireVictimError(`wire_victim's report lacks ${re}: ${out.slice(-800)}`);
    return Number(m[1]);
  };
  const states = [...out.matchAll(/^qp \d+ state (\d+)$/gm)].map((m) => Number(m[1]));
  const w = /^window ([0-9a-f]*)$/m.exec(out);
  if (!w || !/^done$/m.test(out)) {
    throw new WireVictimError(`wire_victim printed no window/done: ${out.slice(-800)}`);
  }
  const window = new Uint8Array(w[1].length / 2);
  for (let i = 0; i < window.length; i++) window[i] = parseInt(w[1].slice(2 * i, 2 * i + 2), 16);
  return {
    states,
    udState: num(/^ud state (\d+)$/m),
    cqes: num(/^cqes (\d+)$/m),
    canaryOutside: num(/^canary_outside_changed (\d+)$/m),
    canaryInside: num(/^canary_inside_changed (\d+)$/m),
    window,
  };
}

/**
 * RoCEv2: give `dev`'s interface a permanent neighbour entry for the fake
 * peer. Start wire_victim with `nqp` QPs connected to it; resolves once
 * ready.
 */
export async function startVictim(
  g: Guest,
  dev: CnuasIbDev,
  gidIndex: number,
  peer: FakePeer,
  nqp: number,
): Promise<VictimSetup> {
  if (peer.ip !== undefined) {
    await g.run(
      `ip neigh replace ${peer.ip} lladdr ${peer.mac} dev ${dev.iface} nud permanent`,
      { check: true },
    );
  }
  const to = peer.ip !== undefined ? `-r ${peer.ip}` : `-l ${peer.lid}`;
  const cmd = `${WIRE_VICTIM} -d ${dev.ibdev} -g ${gidIndex} ${to} -q ${peer.qpnBase} ` +
    `-n ${nqp} -f ${STOP}`;
  const r = await g.run(
    `rm -f ${STOP}; ${inBackground(TAG, cmd, 3600)}\n` +
      `for i in $(seq 300); do grep -q '^ready$' ${TAG}.out 2>/dev/null && break; ` +
      `[ -f ${TAG}.rc ] && break; sleep 0.1; done; cat ${TAG}.out`,
    { timeoutSec: 60 },
  );
  return parseVictimSetup(r.stdout);
}

/** Tell wire_victim to report and wait for it. */
export async function stopVictim(g: Guest): Promise<{ report: VictimReport; code: number }> {
  await g.run(`touch ${STOP}`, { check: true });
  const r = await collectBackground(g, TAG, 60);
  return { report: parseVictimReport(r.out), code: r.code };
}

/** Frame bytes in one paced inject request: their hex stays well inside the switch's 1 MiB line. */
const INJECT_CHUNK_BYTES = 128 * 1024;

/**
 * Inject `frames` out of switch port `port` towards its device, in requests
 * of up to `batch` frames, keeping the port's egress queue short (a request
 * starts only when the queue holds at most `maxQueue` frames, as the last
 * request's reply or a `ports` read says) so that no frame, injected or
 * live, is dropped at the switch. Resolves to the frames injected.
 */
export async function injectPaced(
  fabric: FabricOps,
  port: number,
  frames: Iterable<Uint8Array>,
  opts: { batch?: number; maxQueue?: number } = {},
): Promise<number> {
  const batch = Math.min(opts.batch ?? 64, INJECT_MAX_FRAMES), maxQueue = opts.maxQueue ?? 32;
  let n = 0, chunk: Uint8Array[] = [], bytes = 0;
  const send = async () => {
    const r = await fabric.injectFrames(port, chunk, "egress");
    n += r.frames;
    if (r.frames !== chunk.length) {
      throw new Error(`switch port ${port} went down after ${n} injected frames`);
    }
    chunk = [];
    bytes = 0;
    // the port's whole queue (ports(): both link layers; qosStats is Ethernet only)
    let queued = r.queueLen;
    while (queued > maxQueue) {
      await new Promise((r) => setTimeout(r, 2));
      queued = (await fabric.ports()).find((p) => p.port === port)?.queueLen ?? 0;
    }
  };
  for (const f of frames) {
    if (chunk.length === batch || (chunk.length && bytes + f.length > INJECT_CHUNK_BYTES)) {
      await send();
    }
    chunk.push(f);
    bytes += f.length;
  }
  if (chunk.length) await send();
  return n;
}
