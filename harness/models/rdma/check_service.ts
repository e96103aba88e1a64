/**
 * The checker's service-type rule (rule `qp-service`): a QP is created with
 * one transport service (IBA vol. 1 §11.2.4.1, Create QP) that never changes,
 * and every packet to or from it uses that service's opcodes (IBA vol. 1
 * §9.2.1: the top three OpCode bits name the service; §9.6 header validation
 * drops a packet whose opcode is not of the destination QP's service). So a
 * QP number of one endpoint seen both with UD opcodes and with connected (RC
 * or UC) opcodes is a violation.
 *
 * What the wire shows of a QP: every packet names its destination QP (BTH
 * DestQP, at the destination endpoint), and a UD packet also its source QP
 * (DETH SrcQP, at the source endpoint); an RC or UC packet does not name its
 * sender. QP0/QP1 (the `management` rule's) and the multicast QP 0xFFFFFF
 * (a group, not a QP; the `multicast` rule's) are left out.
 *
 * A QP number freed and reused by a QP of the other service inside one
 * capture looks the same on the wire: it is reported once, at the first
 * packet of the new service, and the new service is adopted from there.
 */
import type { ViolationLog } from "./check_log.ts";
import { endpoints, frameFlow, qpHex } from "./check_frame.ts";
import type { Packet } from "./frame.ts";
import { MULTICAST_QPN } from "./multicast.ts";
import type { OpcodeInfo } from "./opcodes.ts";

/** The two kinds of service the wire tells apart: datagram (UD) and connected (RC, UC). */
type Service = "UD" | "connected";

interface Seen {
  service: Service;
  frameIndex: number;
  opName: string;
}

/** What each (endpoint, QP number) has been used as, and who broke it. */
export class QpServiceIndex {
  /** endpoint id → QP number → service first seen (nested: ids go past 2^32). */
  private readonly m = new Map<number, Map<number, Seen>>();

  /** An index that reports to `log`. */
  constructor(private readonly log: ViolationLog) {}

  /**
   * Note the QPs packet `p` (frame `index`, from endpoint `srcId` to `dstId`)
   * shows, and report any used with the other service before.
   */
  onPacket(p: Packet, op: OpcodeInfo, index: number, srcId: number, dstId: number): void {
    const service: Service = op.transport === "UD" ? "UD" : "connected";
    this.note(p, op, index, dstId, p.bth!.destQp, service, "to");
    if (p.deth) this.note(p, op, index, srcId, p.deth.srcQp, service, "from");
  }

  private note(
    p: Packet,
    op: OpcodeInfo,
    index: number,
    endpoint: number,
    qp: number,
    service: Service,
    dir: "to" | "from",
  ): void {
    if (qp === 0 || qp === 1 || qp === MULTICAST_QPN) return;
    let byQp = this.m.get(endpoint);
    if (byQp === undefined) this.m.set(endpoint, byQp = new Map());
    const seen = byQp.get(qp);
    if (seen === undefined) {
      byQp.set(qp, { service, frameIndex: index, opName: op.name });
      return;
    }
    if (seen.service === service) return;
    const ep = endpoints(p);
    this.log.report(
      index,
      frameFlow(p),
      "qp-service",
      `${op.name} ${dir} QP ${qpHex(qp)} of ${dir === "to" ? ep[1] : ep[0]}, ` +
        `a ${seen.service === "UD" ? "UD" : "connected (RC/UC)"} QP since ${seen.opName} ` +
        `at frame ${seen.frameIndex}`,
    );
    byQp.set(qp, { service, frameIndex: index, opName: op.name });
  }
}
