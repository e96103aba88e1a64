/**
 * The checker's DETH rules (rule `deth`): what the source QP of a UD packet
 * may be. The DETH (IBA vol. 1 §9.3) carries the Q_Key and the sending QP.
 *
 * - SrcQP is never 0xFFFFFF: IBA vol. 1 §9.2 reserves that number for the
 *   multicast destination; no QP has it, so none can send from it.
 * - QP0 is the SMI (IBA vol. 1 ch. 14, subnet management): it sends and takes only SMPs,
 *   and SMPs go from one SMI to another, so SrcQP 0 ⇔ DestQP 0. On RoCE
 *   there is no QP0 at all (annexes A16/A17: no subnet management on
 *   Ethernet); the `management` rule reports that, so this one is for native
 *   IB only.
 *
 * What is deliberately not checked (docs/wire.md, "UD and multicast"):
 * - The Q_Key beyond QP1's: a send WR may name any Q_Key for each message
 *   (IBA vol. 1 §11.4.1.1, the UD send's Q_Key modifier), so the Q_Key
 *   between two QPs may change within a capture. A controlled Q_Key (MSB set,
 *   IBA vol. 1 §10.2.4) is legal from any QP whose context a privileged
 *   consumer set to it, which the wire cannot see.
 * - The PSN: a UD responder does not check it (IBA vol. 1 §9.8: every UD
 *   message is one packet, and nothing is retried), so it may be anything.
 * - AckReq: nothing acknowledges a UD packet; a set AckReq is ignored.
 */
import type { ViolationLog } from "./check_log.ts";
import { frameFlow, qpHex } from "./check_frame.ts";
import type { Packet } from "./frame.ts";
import { MULTICAST_QPN } from "./multicast.ts";

/** The DETH rules of one UD packet `p` (frame `index`). */
export function checkDeth(log: ViolationLog, p: Packet, index: number): void {
  const deth = p.deth;
  if (!deth || !p.bth) return;
  const src = deth.srcQp;
  const dst = p.bth.destQp;
  if (src === MULTICAST_QPN) {
    log.report(
      index,
      frameFlow(p),
      "deth",
      "DETH SrcQP is 0xffffff, the multicast QP number; no QP sends from it",
    );
  }
  if (p.kind === "roce") return; // QP0 on RoCE is the management rule's
  if ((src === 0) !== (dst === 0)) {
    log.report(
      index,
      frameFlow(p),
      "deth",
      src === 0
        ? `DETH SrcQP 0 (the SMI) sending to QP ${qpHex(dst)}; the SMI talks only to QP0`
        : `QP0 (the SMI) takes SMPs only from an SMI, but DETH SrcQP is ${qpHex(src)}`,
    );
  }
}
