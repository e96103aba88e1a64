/**
 * RoCEv2 multicast fan-out between two guests with
 * `drivers/test/mcast_fanout.c`: one UD sender on one guest, N member UD
 * QPs attached to the group on the other, every datagram's sequence number
 * and bytes checked, drops counted. Used by the `bench-rdma-perf` row.
 *
 * @example
 * ```ts
 * const f = await runMcastFanout(members, sender, { members: 4 });
 * f.totalFramesPerSec; // datagrams delivered per second, all members together
 * ```
 */
import { RowFailure } from "../matrix/row.ts";
import { type Guest, GUEST_PATHS } from "../vm/types.ts";
import { runPair } from "./cnuas_ib.ts";
import { shq } from "./shell.ts";
import { passFigures } from "./pass_output.ts";

/** The guest program. */
export const MCAST_FANOUT = `${GUEST_PATHS.bin}/mcast_fanout`;

/** What the member side printed. */
export interface McastFanoutFigures {
  members: number;
  /** Datagram payload, bytes. */
  size: number;
  /** Datagrams the sender sent. */
  count: number;
  /** Datagrams posted per second, first post to last completion. */
  senderFramesPerSec: number;
  /** Each member's datagrams received per second of the receive window. */
  memberFramesPerSec: number[];
  /** Each member's datagrams that never arrived. */
  memberDropped: number[];
  /** Datagrams that arrived after a later one, all members. */
  outOfOrder: number;
  /** All members' datagrams per second. */
  totalFramesPerSec: number;
  /** All members' drops. */
  totalDropped: number;
}

/**
 * Parse the member side's key=value output; undefined without PASS (the
 * program fails on a wrong or duplicated datagram, or a member that got
 * nothing). A PASS without a figure is a RowFailure.
 */
export function parseMcastFanout(out: string): McastFanoutFigures | undefined {
  const fig = passFigures("mcast_fanout", out);
  if (fig === undefined) return undefined;
  const need = fig.need;
  const members = need("members");
  const ks = Array.from({ length: members }, (_, k) => k);
  return {
    members,
    size: need("size"),
    count: need("count"),
    senderFramesPerSec: need("sender_frames_per_sec"),
    memberFramesPerSec: ks.map((k) => need(`member${k}_frames_per_sec`)),
    memberDropped: ks.map((k) => need(`member${k}_dropped`)),
    outOfOrder: ks.reduce((n, k) => n + need(`member${k}_out_of_order`), 0),
    totalFramesPerSec: need("total_frames_per_sec"),
    totalDropped: need("total_dropped"),
  };
}

/** One side of a fan-out run: a guest, its RDMA device, RoCEv2 GID index and address. */
export interface FanoutSide {
  g: Guest;
  ibdev: string;
  gid: number;
  ip: string;
}

/** Options of one run. */
export interface McastFanoutOptions {
  /** Member QPs on the member side. */
  members: number;
  /** Datagrams sent (default 20000). */
  count?: number;
  /** Payload bytes (default 64). */
  size?: number;
  /** IPv4 multicast group (default 239.7.8.9). */
  group?: string;
  /** TCP port of the rendezvous (default 18840). */
  port?: number;
  /**
   * Join the group as an IPv4 host on the member side (rdma_rxe needs it:
   * it receives through the kernel's UDP socket).
   */
  ipJoin?: boolean;
}

/** Run the members on `m` and the sender on `s`; anything but a PASS fails the row. */
export async function runMcastFanout(
  m: FanoutSide,
  s: FanoutSide,
  o: McastFanoutOptions,
): Promise<McastFanoutFigures> {
  const port = o.port ?? 18840;
  const common = (x: FanoutSide) =>
    `${MCAST_FANOUT} -d ${shq(x.ibdev)} -g ${x.gid} -p ${port} -G ${o.group ?? "239.7.8.9"}`;
  const server = `${common(m)} -s -m ${o.members}${o.ipJoin ? ` -J ${m.ip}` : ""}`;
  const client = `${common(s)} -n ${o.count ?? 20000} -S ${o.size ?? 64} ${m.ip}`;
  const r = await runPair(m.g, server, s.g, client, port, 300);
  const f = r.serverCode === 0 && r.clientCode === 0 ? parseMcastFanout(r.serverOut) : undefined;
  if (f === undefined) {
    throw new RowFailure(
      `mcast_fanout ${m.ibdev} -m ${o.members}: members exit ${r.serverCode}, sender exit ${r.clientCode}\n` +
        `members: ${r.serverOut.slice(-800)}\nsender: ${r.clientOut.slice(-400)}`,
    );
  }
  return f;
}
