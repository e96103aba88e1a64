/**
 * Conformance checker for captured RDMA traffic (RoCEv2 and native
 * InfiniBand). Every frame is decoded and checked on its own (structure,
 * ICRC, VCRC, IPv4 header checksum, UDP port, pad, payload against the path
 * MTU), then fed to per-flow state machines:
 *
 * - Request flows, keyed by (source address, destination address, destination
 *   QP) and transport: legal opcode sequences (FIRST → MIDDLE* → LAST, or
 *   ONLY), PSN order in the 24-bit circle (a PSN behind the expected one is a
 *   retransmission, not a violation; one ahead is a skip), RDMA WRITE lengths
 *   against the RETH, and every RC request covered by an ACK or NAK by the end
 *   of the capture (an ACK with PSN n covers all requests up to n).
 * - Response flows (ACKNOWLEDGE, READ responses, ATOMIC_ACKNOWLEDGE) are paired
 *   with the request flow they answer (the wire does not carry the requester's
 *   QP, so the pairing is learned from addresses and PSNs): READ responses
 *   must match their request's PSN and DMA length, atomics must be answered
 *   with an AtomicAckETH, and nothing may be acknowledged that was not sent.
 * - Loss recovery is go-back-N, and what it legally puts on the wire passes:
 *   retransmissions, requests in flight across a sequence or RNR NAK
 *   (tentative: answered or not, owed again once resent), going back before
 *   the NAKed PSN, re-reads of a READ's tail, duplicate responses.
 *
 * - UD packets (IBA vol. 1 §9.8) belong to no flow: each is a whole message
 *   within the path MTU, with a DETH whose source QP is checked, any PSN, and
 *   no response. A QP number used with both UD and RC/UC opcodes is a
 *   violation, and multicast (DestQP 0xFFFFFF) must agree with the
 *   destination address, its group MAC and the UD service.
 *
 * - MADs (IBA vol. 1 ch. 13-16) are paired request with response over the
 *   whole capture, and SMP, SA and PMA answers judged (`check_mad.ts`: rules
 *   `mad-pairing`, `smp-semantics`, `sa-semantics`, `pma-semantics`); requests
 *   left unanswered are counted in `unanswered`, not reported.
 *
 * - RoCEv2 congestion notification (annex A17): every RoCEv2 frame is counted
 *   by its IP ECN codepoint, and CNPs are judged (`check_cnp.ts`, rule `cnp`:
 *   format, addressed to a QP of the conversation, after a CE mark, rate).
 *
 * - PFC (IEEE 802.1Qbb MAC Control frames): judged and counted per priority
 *   (`check_pfc.ts`, rule `pfc`).
 *
 * Other non-RDMA frames (ARP, TCP, plain UDP, raw IB) are counted, not judged.
 *
 * This module is the checker's public face and routes each frame; the rules
 * live in `check_frame.ts` (per frame), `check_multicast.ts` (multicast),
 * `check_ud.ts` (DETH), `check_mad.ts` (management), `check_service.ts` (one service per QP),
 * `check_flow.ts` (request flows), `check_response.ts` (response pairing) and
 * `check_copies.ts` (interface copies), all reporting through `check_log.ts`.
 */
import {
  checkOtherFrame,
  checkPayloadMtu,
  checkRdmaFrame,
  endpoints,
  frameFlow,
  qpHex,
  VALID_MTUS,
} from "./check_frame.ts";
import { type FlowContext, FlowIndex, RequestFlow } from "./check_flow.ts";
import { type RuleId, type Violation, ViolationLog } from "./check_log.ts";
import { CnpChecker, type CnpCheckOptions, type EcnCensus } from "./check_cnp.ts";
import { CopyFilter } from "./check_copies.ts";
import { checkMacControl, emptyPfcCensus, type PfcCensus } from "./check_pfc.ts";
import { checkMulticast } from "./check_multicast.ts";
import { QpServiceIndex } from "./check_service.ts";
import { checkDeth } from "./check_ud.ts";
import { MadChecker } from "./check_mad.ts";
import { ResponsePairing } from "./check_response.ts";
import { type CaptureFrame, decodeFrame, LINKTYPE_ETHERNET, type Packet } from "./frame.ts";
import { ipv6ToString } from "./ip.ts";
import { MULTICAST_QPN } from "./multicast.ts";
import type { OpcodeInfo } from "./opcodes.ts";

/** Re-exported so checker users need only this module. */
export type { CaptureFrame } from "./frame.ts";
/** Rule names and the violation record. */
export type { RuleId, Violation } from "./check_log.ts";

/** Knobs of the checker (the CNP rule's included). */
export interface CheckOptions extends CnpCheckOptions {
  /**
   * Path MTU in bytes (256, 512, 1024, 2048 or 4096). When absent it is
   * inferred per flow from the first FIRST/MIDDLE packet (which must carry
   * exactly one path MTU of payload), else 4096 is the ceiling.
   */
  pathMtu?: number;
  /** Violations kept in the result (default 10,000; all are counted). */
  maxViolations?: number;
  /**
   * Recognise the same frame recorded on several capture interfaces (ingress
   * and egress copies) and check it once (default true).
   */
  dedupeCopies?: boolean;
  /** Check the IPv4 header checksum of non-RDMA frames too (default true). */
  ipv4ChecksumAllFrames?: boolean;
  /**
   * A request PSN this far (or further) from the expected one, on a flow with
   * nothing outstanding, starts a new connection on a reused QP number rather
   * than being a skip (default 2048).
   */
  newConnectionPsnJump?: number;
}

/** What a capture check found. */
export interface CheckResult {
  /** Frames looked at (copies included). */
  framesChecked: number;
  /** RoCEv2 and IB transport frames among them. */
  rdmaFrames: number;
  /** Non-RDMA frames (counted, not judged). */
  otherFrames: number;
  /** Frames skipped as copies of a frame recorded on another interface. */
  duplicateCopies: number;
  /** Request flows seen. */
  flows: number;
  /** The violations (at most `maxViolations`), in capture order within each rule pass. */
  violations: Violation[];
  /** All violations, including those not kept. */
  violationCount: number;
  /** Violation counts by rule. */
  byRule: Partial<Record<RuleId, number>>;
  /** MAD requests of answerable methods (Get, Set, GetTable, Delete, …) seen. */
  madRequests: number;
  /** MAD responses seen. */
  madResponses: number;
  /**
   * MAD transactions (TID, class, attribute, endpoints) requested and never
   * answered by the end of the capture: a count, not a violation (an SM
   * probing a port whose driver is not up yet retries into silence).
   */
  unanswered: number;
  /**
   * MAD responses at the capture's start answering requests sent before it
   * (no request of their class seen yet): a count, not judged.
   */
  unpairedAtStart: number;
  /** RoCEv2 frames by IP ECN codepoint (CE: marked by a switch). */
  ecn: EcnCensus;
  /** Congestion notification packets (opcode 0x81) seen. */
  cnps: number;
  /** PFC frames per priority, XOFF and XON. */
  pfc: PfcCensus;
}

/** Streaming checker: `push` every frame in capture order, then `finish`. */
export class CaptureChecker {
  private readonly opts:
    & Required<Omit<CheckOptions, "pathMtu" | keyof CnpCheckOptions>>
    & { pathMtu: number };
  private readonly log: ViolationLog;
  private readonly copies = new CopyFilter();
  private readonly pairing: ResponsePairing;
  private readonly flowContext: FlowContext;
  private framesChecked = 0;
  private rdmaFrames = 0;
  private otherFrames = 0;
  private duplicateCopies = 0;
  private readonly flows = new FlowIndex();
  private readonly services: QpServiceIndex;
  private readonly mads: MadChecker;
  private readonly cnp: CnpChecker;
  private readonly pfc = emptyPfcCensus();
  private unanswered = 0;
  private readonly flowList: RequestFlow[] = [];
  private readonly flowsByPair = new Map<string, RequestFlow[]>();
  private readonly ipv6Ids = new Map<string, number>();
  private finished = false;
  /** Endpoint ids of the frame being checked: IPv4 address, 2^32 + LID, or an interned IPv6 id. */
  private srcId = 0;
  private dstId = 0;

  /** A checker with the given options. */
  constructor(opts: CheckOptions = {}) {
    if (opts.pathMtu !== undefined && !VALID_MTUS.includes(opts.pathMtu)) {
      throw new RangeError(
        `pathMtu ${opts.pathMtu} is not an IB MTU; use one of ${VALID_MTUS.join(", ")}`,
      );
    }
    this.opts = {
      pathMtu: opts.pathMtu ?? 0,
      maxViolations: opts.maxViolations ?? 10_000,
      dedupeCopies: opts.dedupeCopies ?? true,
      ipv4ChecksumAllFrames: opts.ipv4ChecksumAllFrames ?? true,
      newConnectionPsnJump: opts.newConnectionPsnJump ?? 2048,
    };
    this.log = new ViolationLog(this.opts.maxViolations);
    this.services = new QpServiceIndex(this.log);
    this.mads = new MadChecker(this.log);
    this.cnp = new CnpChecker(this.log, opts);
    const pairing = new ResponsePairing(this.log, this.flowsByPair);
    this.pairing = pairing;
    this.flowContext = {
      log: this.log,
      pathMtu: this.opts.pathMtu,
      newConnectionPsnJump: this.opts.newConnectionPsnJump,
      unpair: (f) => pairing.unpair(f),
    };
  }

  /** Check the next frame of the capture. */
  push(frame: CaptureFrame): void {
    if (this.finished) throw new Error("CaptureChecker: push after finish; create a new checker");
    const index = this.framesChecked++;
    // MAC Control is never forwarded, so no capture holds two copies of one;
    // identical PFC frames (the same XOFF to two ports at once, a refresh)
    // are each a frame of their own and counted before the copy filter
    if (
      frame.linkType === LINKTYPE_ETHERNET &&
      checkMacControl(this.log, this.pfc, frame.data, index)
    ) {
      this.otherFrames++;
      return;
    }
    if (this.opts.dedupeCopies && this.copies.isCopy(frame)) {
      this.duplicateCopies++;
      return;
    }
    const p = decodeFrame(frame.data, frame.linkType);
    if (p.kind === "other") {
      this.otherFrames++;
      checkOtherFrame(this.log, frame, p, index, this.opts.ipv4ChecksumAllFrames);
      return;
    }
    this.rdmaFrames++;
    checkRdmaFrame(this.log, p, index);
    if (p.bth && p.op) {
      this.endpointIds(p);
      this.cnp.onPacket(
        frame.data,
        p,
        index,
        this.srcId,
        this.dstId,
        () => frameFlow(p),
        frame.timestampNs,
      );
    }
    if (p.bth && p.op && p.op.transport !== "CNP") {
      checkMulticast(this.log, p, p.op, index);
      this.services.onPacket(p, p.op, index, this.srcId, this.dstId);
      this.mads.onPacket(frame.data, p, index);
      this.checkFlows(p, p.op, index);
    }
  }

  /** End of capture: report everything still unanswered, and return the result. */
  finish(): CheckResult {
    if (!this.finished) {
      this.finished = true;
      for (const f of this.flowList) {
        f.finishMessage();
        this.pairing.finishFlow(f);
      }
      this.unanswered = this.mads.finish();
      this.cnp.finish();
    }
    return {
      framesChecked: this.framesChecked,
      rdmaFrames: this.rdmaFrames,
      otherFrames: this.otherFrames,
      duplicateCopies: this.duplicateCopies,
      flows: this.flowList.length,
      violations: this.log.violations,
      violationCount: this.log.count,
      byRule: { ...this.log.byRule },
      madRequests: this.mads.requests,
      madResponses: this.mads.responses,
      unanswered: this.unanswered,
      unpairedAtStart: this.mads.unpairedAtStart,
      ecn: { ...this.cnp.ecn },
      cnps: this.cnp.cnps,
      pfc: { ...this.pfc, xoff: [...this.pfc.xoff], xon: [...this.pfc.xon] },
    };
  }

  /**
   * The flow rules of a transport packet. UD packets belong to no flow: each
   * is a whole message (IBA vol. 1 §9.8), its PSN is not checked by the
   * responder and nothing answers it, so only their own rules apply (payload
   * within the path MTU, the DETH); RC and UC requests and responses go to
   * their flows.
   */
  private checkFlows(p: Packet, op: OpcodeInfo, index: number): void {
    if (op.transport === "UD") {
      checkPayloadMtu(this.log, p, op, this.opts.pathMtu || 4096, index, p);
      checkDeth(this.log, p, index);
      return;
    }
    // A connected opcode to the multicast QP is the multicast rule's; as a
    // flow it would only add unanswerable requests.
    if (p.bth!.destQp === MULTICAST_QPN) return;
    if (op.isRequest) this.requestFlow(p, op, index).onRequest(p, op, index);
    else this.pairing.onResponse(p, op, index, this.srcId, this.dstId);
  }

  /** Numeric ids of the current frame's endpoints, set in `srcId`/`dstId` (no strings per frame). */
  private endpointIds(p: Packet): void {
    if (p.ipv4) {
      this.srcId = p.ipv4.src;
      this.dstId = p.ipv4.dst;
    } else if (p.lrh) {
      this.srcId = 0x1_0000_0000 + p.lrh.slid;
      this.dstId = 0x1_0000_0000 + p.lrh.dlid;
    } else if (p.ipv6) {
      this.srcId = this.ipv6Id(p.ipv6.src);
      this.dstId = this.ipv6Id(p.ipv6.dst);
    }
  }

  private ipv6Id(a: Uint8Array): number {
    const s = ipv6ToString(a);
    let id = this.ipv6Ids.get(s);
    if (id === undefined) {
      id = 0x2_0000_0000 + this.ipv6Ids.size;
      this.ipv6Ids.set(s, id);
    }
    return id;
  }

  /** The request flow of packet `p` by (source, destination, QP and transport), created on first sight. */
  private requestFlow(p: Packet, op: OpcodeInfo, index: number): RequestFlow {
    const qpKey = p.bth!.destQp * 4 + (op.transport === "RC" ? 0 : 1);
    let f = this.flows.get(this.srcId, this.dstId, qpKey);
    if (f === undefined) {
      const ep = endpoints(p);
      const qp = qpHex(p.bth!.destQp);
      f = new RequestFlow(
        `${ep[0]} → ${ep[1]} QP ${qp} (${op.transport} requests)`,
        `${ep[1]} → ${ep[0]} (responses to QP ${qp})`,
        op.transport,
        `${this.srcId}>${this.dstId}`,
        this.flowContext,
        index,
      );
      this.flows.set(this.srcId, this.dstId, qpKey, f);
      this.flowList.push(f);
      const list = this.flowsByPair.get(f.pairKey);
      if (list) list.push(f);
      else this.flowsByPair.set(f.pairKey, [f]);
    }
    return f;
  }
}

/**
 * Check a whole capture.
 *
 * @example
 * ```ts
 * const r = checkCapture(frames, { pathMtu: 1024 });
 * if (r.violations.length) console.log(r.violations[0].message);
 * ```
 */
export function checkCapture(frames: Iterable<CaptureFrame>, opts: CheckOptions = {}): CheckResult {
  const c = new CaptureChecker(opts);
  for (const f of frames) c.push(f);
  return c.finish();
}
