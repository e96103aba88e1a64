/**
 * RoCEv2 congestion notification (IBA annex A17, "RoCEv2 congestion
 * management"; RFC 3168 for the IP ECN field): the checker's rule `cnp` and
 * the ECN census of a capture.
 *
 * ECN field (the low two bits of the IPv4 TOS / IPv6 traffic class), RFC 3168
 * §5: 00 Not-ECT, 10 ECT(0), 01 ECT(1), 11 CE (congestion experienced: a
 * switch marked an ECN-capable packet instead of dropping it). Every RoCEv2
 * frame is counted by its ECN codepoint; none is judged by it.
 *
 * A CNP (BTH opcode 0x81, annex A17.9.3) is the notification point's answer
 * to CE-marked packets: it goes back to the sender of those packets, names in
 * its BTH DestQP the QP that sent them, carries BECN = 1, and after the BTH
 * exactly 16 reserved bytes (transmitted as 0) and the ICRC. Rule `cnp`:
 *
 * - format: RoCEv2 only here (native IB congestion control is another
 *   protocol, IBA annex A10; IB frames with opcode 0x81 are counted, not
 *   judged); 16 bytes after the BTH, all zero; PadCnt 0; BECN 1; SE, M,
 *   AckReq and the reserved BTH bits 0;
 * - addressing: DestQP is not QP0, QP1 or the multicast QP, and by the end of
 *   the capture it is a QP the CNP's destination owns: some packet went to
 *   that address with that DestQP, or came from it with that DETH source QP;
 * - cause (when `requireCeBeforeCnp`; off by default, since a switch that
 *   records frames as they arrive never captures the marks it makes later):
 *   a CE-marked frame from the CNP's destination to its source came before it;
 * - rate (when `cnpMinIntervalNs` > 0): two CNPs of one notification point to
 *   one QP (same addresses, UDP source port and DestQP) are at least that far
 *   apart in capture time.
 */
import { qpHex } from "./check_frame.ts";
import type { ViolationLog } from "./check_log.ts";
import type { Packet } from "./frame.ts";
import { MULTICAST_QPN } from "./multicast.ts";

/** Bytes between a CNP's BTH and its ICRC (annex A17.9.3). */
export const CNP_RESERVED_BYTES = 16;

/** RoCEv2 frames by their IP ECN codepoint (RFC 3168 §5). */
export interface EcnCensus {
  /** 00: not ECN-capable. */
  notEct: number;
  /** 10: ECN-capable, ECT(0). */
  ect0: number;
  /** 01: ECN-capable, ECT(1). */
  ect1: number;
  /** 11: congestion experienced (marked by a switch). */
  ce: number;
}

/** Knobs of the CNP rule. */
export interface CnpCheckOptions {
  /**
   * Require a CE-marked frame from the CNP's destination to its source before
   * each CNP (default false: cnuas-switch captures frames as they arrive,
   * before its queues mark them). Turn on for a capture taken after the
   * marking point, or when the sender marks (cnuas_ib `tx_ce_one_in`).
   */
  requireCeBeforeCnp?: boolean;
  /**
   * Shortest legal gap between two CNPs of one notification point to one QP,
   * in capture nanoseconds (default 0: not checked). The interval the sender
   * promises (cnuas_ib: `cnp_interval_us`) less a margin for capture jitter.
   */
  cnpMinIntervalNs?: number;
}

/** The ECN codepoint of a RoCEv2 packet (0 when it has no IP header). */
export function ecnOf(p: Packet): number {
  if (p.ipv4) return p.ipv4.tos & 3;
  if (p.ipv6) return p.ipv6.trafficClass & 3;
  return 0;
}

/** ECN codepoint CE (RFC 3168). */
export const ECN_CE = 3;

/** Counts ECN codepoints and judges CNPs across a capture. */
export class CnpChecker {
  /** RoCEv2 frames by ECN codepoint. */
  readonly ecn: EcnCensus = { notEct: 0, ect0: 0, ect1: 0, ce: 0 };
  /** CNPs seen (RoCEv2 and IB). */
  cnps = 0;
  private readonly requireCe: boolean;
  private readonly minIntervalNs: bigint;
  /** `${src}>${dst}` of CE-marked frames seen so far. */
  private readonly ceFrom = new Set<string>();
  /** `${endpoint}#${qp}`: QP numbers an endpoint owns, as the capture shows them. */
  private readonly owned = new Set<string>();
  /** CNPs whose QP must be owned by the end. */
  private readonly pending: { index: number; flow: string; key: string; qp: number }[] = [];
  private readonly lastCnpNs = new Map<string, bigint>();

  /** A checker reporting to `log`. */
  constructor(private readonly log: ViolationLog, opts: CnpCheckOptions = {}) {
    this.requireCe = opts.requireCeBeforeCnp ?? false;
    this.minIntervalNs = BigInt(Math.max(0, Math.round(opts.cnpMinIntervalNs ?? 0)));
  }

  /**
   * The next RDMA frame (its bytes, decoded with a BTH and an opcode), with its
   * endpoint ids (`src`, `dst`: numbers unique per address), its flow label
   * (made only when a CNP needs it: this runs for every frame) and its capture
   * time when known.
   */
  onPacket(
    data: Uint8Array,
    p: Packet,
    index: number,
    src: number,
    dst: number,
    flowOf: () => string,
    timestampNs?: bigint,
  ): void {
    const bth = p.bth!;
    const isCnp = p.op!.transport === "CNP";
    if (p.kind === "roce") {
      const ecn = ecnOf(p);
      if (ecn === 0) this.ecn.notEct++;
      else if (ecn === 2) this.ecn.ect0++;
      else if (ecn === 1) this.ecn.ect1++;
      else {
        this.ecn.ce++;
        this.ceFrom.add(`${src}>${dst}`);
      }
    }
    if (!isCnp) {
      if (bth.destQp !== MULTICAST_QPN) this.owned.add(`${dst}#${bth.destQp}`);
      if (p.deth) this.owned.add(`${src}#${p.deth.srcQp}`);
      return;
    }
    this.cnps++;
    if (p.kind !== "roce") return;
    const flow = flowOf();
    this.checkFormat(data, p, index, flow);
    const qp = bth.destQp;
    if (qp === 0 || qp === 1 || qp === MULTICAST_QPN) {
      this.report(index, flow, `CNP to ${qpHex(qp)}: a CNP names the data sender's QP`);
    } else {
      this.pending.push({ index, flow, key: `${dst}#${qp}`, qp });
    }
    if (this.requireCe && !this.ceFrom.has(`${dst}>${src}`)) {
      this.report(
        index,
        flow,
        "CNP before any CE-marked packet came the other way: a notification point answers CE marks",
      );
    }
    if (this.minIntervalNs > 0n && timestampNs !== undefined) {
      const key = `${src}>${dst}:${p.udp?.srcPort ?? 0}:${qp}`;
      const last = this.lastCnpNs.get(key);
      if (last !== undefined && timestampNs - last < this.minIntervalNs) {
        this.report(
          index,
          flow,
          `CNP ${timestampNs - last} ns after the previous one to ${qpHex(qp)}; ` +
            `the notification point sends at most one per ${this.minIntervalNs} ns`,
        );
      }
      this.lastCnpNs.set(key, timestampNs);
    }
  }

  /** End of capture: every CNP's QP must belong to its destination by now. */
  finish(): void {
    for (const c of this.pending) {
      if (!this.owned.has(c.key)) {
        this.report(
          c.index,
          c.flow,
          `CNP to ${
            qpHex(c.qp)
          }, a QP no packet in the capture went to or came from at that address`,
        );
      }
    }
    this.pending.length = 0;
  }

  private checkFormat(data: Uint8Array, p: Packet, index: number, flow: string): void {
    const bth = p.bth!;
    if (p.paddedLength !== CNP_RESERVED_BYTES) {
      this.report(
        index,
        flow,
        `CNP carries ${p.paddedLength} bytes after its BTH; annex A17 gives it ${CNP_RESERVED_BYTES} reserved bytes`,
      );
    } else if (data.subarray(p.payloadOffset, p.payloadOffset + p.paddedLength).some((b) => b)) {
      this.report(index, flow, "CNP's 16 reserved bytes are not all zero");
    }
    if (bth.becn !== 1) this.report(index, flow, "CNP without BECN: a CNP sets BECN");
    const fixed: string[] = [];
    if (bth.se) fixed.push("SE");
    if (bth.migReq) fixed.push("M");
    if (bth.padCnt) fixed.push("PadCnt");
    if (bth.ackReq) fixed.push("AckReq");
    if (bth.reserved6 || bth.reserved7) fixed.push("reserved bits");
    if (fixed.length) this.report(index, flow, `CNP with ${fixed.join(", ")} set; they are 0`);
  }

  private report(index: number, flow: string, message: string): void {
    this.log.report(index, flow, "cnp", message);
  }
}
