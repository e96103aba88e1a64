/**
 * The checker's multicast rules (rule `multicast`), per frame:
 *
 * - DestQP 0xFFFFFF if and only if the packet goes to a multicast group: on
 *   RoCEv2 a multicast destination IP (IPv4 224.0.0.0/4, IPv6 ff00::/8; annex
 *   A17 lets the IP header stand for the GRH, whose DGID is then a multicast
 *   GID); on native IB a multicast DLID (IBA vol. 1 §4.1, 0xC000..0xFFFE) and,
 *   with a GRH, a multicast DGID. IBA vol. 1 §9.2 reserves DestQP 0xFFFFFF for
 *   multicast, and a multicast packet is delivered to every QP attached to the
 *   group, so it can name no single QP.
 * - Multicast only with UD opcodes: only UD (and raw datagram) QPs may be
 *   attached to a multicast group (IBA vol. 1 ch. 10, multicast, and the
 *   Attach QP to Multicast Group verb of ch. 11); raw datagrams never reach
 *   this oracle.
 * - The Ethernet destination of an IP multicast frame is the group MAC the
 *   address maps to (RFC 1112 §6.4 for IPv4, RFC 2464 §7 for IPv6): a switch
 *   or NIC filters on that MAC, so any other MAC loses the frame.
 * - No source is a group address: not the source IP (RFC 1112 §4, RFC 4291
 *   §2.7), not the source MAC (IEEE 802: the I/G bit of a source is 0), not
 *   the SLID or SGID (IBA vol. 1 §4.1: multicast LIDs and GIDs are
 *   destinations only).
 */
import type { ViolationLog } from "./check_log.ts";
import { frameFlow } from "./check_frame.ts";
import { macToString } from "./ethernet.ts";
import type { Packet } from "./frame.ts";
import { ipv4ToString, ipv6ToString } from "./ip.ts";
import {
  ipv4MulticastMac,
  ipv6MulticastMac,
  isGroupMac,
  isIpv4Multicast,
  isIpv6Multicast,
  isMulticastLid,
  MULTICAST_QPN,
} from "./multicast.ts";
import type { OpcodeInfo } from "./opcodes.ts";

/** The multicast rules of one RoCEv2 or IB transport frame with a known opcode. */
export function checkMulticast(log: ViolationLog, p: Packet, op: OpcodeInfo, index: number): void {
  const mcQp = p.bth!.destQp === MULTICAST_QPN;
  if (mcQp && op.transport !== "UD") {
    report(log, p, index, `${op.name} to the multicast QP 0xffffff; only UD sends are multicast`);
  }
  const dest = multicastDestination(p);
  if (dest !== undefined && dest.multicast !== mcQp) {
    report(
      log,
      p,
      index,
      mcQp
        ? `DestQP 0xffffff (multicast) but the destination ${dest.label} is unicast`
        : `destination ${dest.label} is multicast but DestQP is 0x${
          p.bth!.destQp.toString(16).padStart(6, "0")
        }, not 0xffffff`,
    );
  }
  if (p.grh && isIpv6Multicast(p.grh.dgid) !== mcQp) {
    report(
      log,
      p,
      index,
      `GRH DGID ${ipv6ToString(p.grh.dgid)} is ${mcQp ? "unicast" : "multicast"} but DestQP says ${
        mcQp ? "multicast" : "unicast"
      }`,
    );
  }
  checkGroupMac(log, p, index);
  checkSources(log, p, index);
}

/** The routing destination that decides multicast: the IP destination (RoCEv2) or the DLID (IB). */
function multicastDestination(p: Packet): { multicast: boolean; label: string } | undefined {
  if (p.ipv4) return { multicast: isIpv4Multicast(p.ipv4.dst), label: ipv4ToString(p.ipv4.dst) };
  if (p.ipv6) return { multicast: isIpv6Multicast(p.ipv6.dst), label: ipv6ToString(p.ipv6.dst) };
  if (p.lrh) {
    return { multicast: isMulticastLid(p.lrh.dlid), label: `DLID 0x${p.lrh.dlid.toString(16)}` };
  }
  return undefined;
}

/** RFC 1112 §6.4 / RFC 2464 §7: an IP multicast datagram goes to its group MAC. */
function checkGroupMac(log: ViolationLog, p: Packet, index: number): void {
  if (!p.eth) return;
  let want: number | undefined;
  if (p.ipv4 && isIpv4Multicast(p.ipv4.dst)) want = ipv4MulticastMac(p.ipv4.dst);
  else if (p.ipv6 && isIpv6Multicast(p.ipv6.dst)) want = ipv6MulticastMac(p.ipv6.dst);
  if (want !== undefined && p.eth.dst !== want) {
    report(
      log,
      p,
      index,
      `Ethernet destination ${macToString(p.eth.dst)} is not ${
        macToString(want)
      }, the group MAC of the multicast destination IP`,
    );
  }
}

/** A group address is never a source (IP, MAC, LID, GID). */
function checkSources(log: ViolationLog, p: Packet, index: number): void {
  if (p.ipv4 && isIpv4Multicast(p.ipv4.src)) {
    report(log, p, index, `source IP ${ipv4ToString(p.ipv4.src)} is a multicast address`);
  }
  if (p.ipv6 && isIpv6Multicast(p.ipv6.src)) {
    report(log, p, index, `source IP ${ipv6ToString(p.ipv6.src)} is a multicast address`);
  }
  if (p.eth && isGroupMac(p.eth.src)) {
    report(log, p, index, `source MAC ${macToString(p.eth.src)} is a group address`);
  }
  if (p.lrh && isMulticastLid(p.lrh.slid)) {
    report(log, p, index, `SLID 0x${p.lrh.slid.toString(16)} is a multicast LID`);
  }
  if (p.grh && isIpv6Multicast(p.grh.sgid)) {
    report(log, p, index, `SGID ${ipv6ToString(p.grh.sgid)} is a multicast GID`);
  }
}

function report(log: ViolationLog, p: Packet, index: number, message: string): void {
  log.report(index, frameFlow(p), "multicast", message);
}
