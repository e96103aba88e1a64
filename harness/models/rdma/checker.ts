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
 * Non-RDMA frames (ARP, TCP, plain UDP, raw IB) are counted, not judged.
 */
import { type CaptureFrame, decodeFrame, LINKTYPE_ETHERNET, type Packet } from "./frame.ts";
import { ipv4ToString, ipv6ToString } from "./ip.ts";
import { GSI_QKEY, MAD_BYTES } from "./mad.ts";
import type { OpcodeInfo, Operation } from "./opcodes.ts";
import { aethKind, NAK_CODES, psnAdd, psnDiff } from "./transport.ts";
import { ROCEV2_UDP_PORT } from "./udp.ts";

/** Re-exported so checker users need only this module. */
export type { CaptureFrame } from "./frame.ts";

/** Rule names a violation can carry. */
export type RuleId =
  | "decode"
  | "icrc"
  | "vcrc"
  | "ipv4-checksum"
  | "udp-port"
  | "transport"
  | "pad-count"
  | "payload-mtu"
  | "opcode-sequence"
  | "psn-order"
  | "ack-coverage"
  | "ack-psn"
  | "read-response"
  | "atomic-response"
  | "write-length"
  | "management";

/** One broken rule. */
export interface Violation {
  /** Index of the offending frame in the capture (0-based). */
  frameIndex: number;
  /** Human-readable flow, e.g. `10.0.0.1 → 10.0.0.2 QP 0x000012 (RC requests)`. */
  flow: string;
  /** The rule broken. */
  rule: RuleId;
  /** What was wrong, in words. */
  message: string;
}

/** Knobs of the checker. */
export interface CheckOptions {
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
}

const VALID_MTUS = [256, 512, 1024, 2048, 4096];

type EntryKind = "send" | "write" | "read" | "atomic";

/** An RC request awaiting its response. */
interface Outstanding {
  kind: EntryKind;
  psnStart: number;
  /** Last PSN the request consumes; -1 while unknown (a READ before the path MTU is known). */
  psnEnd: number;
  frameIndex: number;
  dmaLen: number;
  /** For a READ re-issued for the tail of an earlier one: that earlier READ. */
  reReadOf?: Outstanding;
  /**
   * Sent before (or in flight across) a sequence/RNR NAK at or before its PSN:
   * the responder may have discarded it, or — when a copy of the NAKed PSN was
   * already on the wire — answer it after the NAK. It may go unanswered until
   * the requester sends it again.
   */
  tentative?: boolean;
}

/** A READ response being assembled. */
interface ReadAssembly {
  entry: Outstanding;
  nextPsn: number;
  bytes: number;
  frameIndex: number;
}

/** State of one request flow (and of the responses to it, once paired). */
interface Flow {
  name: string;
  responseName: string;
  transport: string;
  /** Endpoint pair key `src>dst`. */
  pairKey: string;
  expectedPsn: number;
  /** Set while the PSN after a READ of unknown length in packets is still to be seen. */
  pendingRead: Outstanding | null;
  msgOp: Operation | null;
  msgFrame: number;
  writeLen: number;
  writeBytes: number;
  pmtu: number;
  lastReqPsn: number;
  queue: Outstanding[];
  qHead: number;
  answered: Map<number, Outstanding>;
  readResp: ReadAssembly | null;
  fatal: boolean;
  paired: boolean;
  lastFrame: number;
  /** After a sequence-error or RNR NAK at PSN n: the requester must go back to n (-1: no NAK pending). */
  restartAt: number;
}

/** Streaming checker: `push` every frame in capture order, then `finish`. */
export class CaptureChecker {
  private readonly opts: Required<Omit<CheckOptions, "pathMtu">> & { pathMtu: number };
  private readonly violations: Violation[] = [];
  private readonly byRule: Partial<Record<RuleId, number>> = {};
  private violationCount = 0;
  private framesChecked = 0;
  private rdmaFrames = 0;
  private otherFrames = 0;
  private duplicateCopies = 0;
  private readonly flows = new Index3<Flow>();
  private readonly flowList: Flow[] = [];
  private readonly flowsByPair = new Map<string, Flow[]>();
  private readonly responseFlows = new Index3<Flow>();
  private readonly ipv6Ids = new Map<string, number>();
  private readonly recent: { hash: number; data: Uint8Array; ifaces: number[] }[] = [];
  private multiInterface = false;
  private firstInterface: number | undefined = undefined;
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
  }

  /** Check the next frame of the capture. */
  push(frame: CaptureFrame): void {
    if (this.finished) throw new Error("CaptureChecker: push after finish; create a new checker");
    const index = this.framesChecked++;
    if (this.opts.dedupeCopies && this.isCopy(frame)) {
      this.duplicateCopies++;
      return;
    }
    const p = decodeFrame(frame.data, frame.linkType);
    if (p.kind === "other") {
      this.otherFrames++;
      this.checkOther(frame, p, index);
      return;
    }
    this.rdmaFrames++;
    this.checkFrame(p, index);
    if (p.bth && p.op) this.checkFlows(p, p.op, index);
  }

  /** End of capture: report everything still unanswered, and return the result. */
  finish(): CheckResult {
    if (!this.finished) {
      this.finished = true;
      for (const f of this.flowList) this.finishFlow(f);
    }
    return {
      framesChecked: this.framesChecked,
      rdmaFrames: this.rdmaFrames,
      otherFrames: this.otherFrames,
      duplicateCopies: this.duplicateCopies,
      flows: this.flowList.length,
      violations: this.violations,
      violationCount: this.violationCount,
      byRule: { ...this.byRule },
    };
  }

  private report(frameIndex: number, flow: string, rule: RuleId, message: string): void {
    this.violationCount++;
    this.byRule[rule] = (this.byRule[rule] ?? 0) + 1;
    if (this.violations.length < this.opts.maxViolations) {
      this.violations.push({ frameIndex, flow, rule, message });
    }
  }

  // ---- capture copies -------------------------------------------------------------------------

  private isCopy(frame: CaptureFrame): boolean {
    const iface = frame.interfaceId ?? 0;
    if (this.firstInterface === undefined) this.firstInterface = iface;
    else if (iface !== this.firstInterface) this.multiInterface = true;
    const h = quickHash(frame.data);
    if (this.multiInterface) {
      for (let i = this.recent.length - 1; i >= 0; i--) {
        const r = this.recent[i];
        if (r.hash === h && sameBytes(r.data, frame.data)) {
          if (r.ifaces.includes(iface)) break; // seen on this interface already: a real resend
          r.ifaces.push(iface);
          return true;
        }
      }
    }
    this.remember(frame.data, iface, h);
    return false;
  }

  private remember(data: Uint8Array, iface: number, hash: number): void {
    if (this.recent.length >= 16) this.recent.shift();
    this.recent.push({ hash, data, ifaces: [iface] });
  }

  // ---- per-frame rules ------------------------------------------------------------------------

  private checkOther(frame: CaptureFrame, p: Packet, index: number): void {
    for (const e of p.errors) this.report(index, frameFlow(p), "decode", e);
    if (p.ipv4 && p.ipv4ChecksumOk === false && this.opts.ipv4ChecksumAllFrames) {
      this.reportIpv4Checksum(p, index);
    }
    if (p.udp && p.udp.dstPort !== ROCEV2_UDP_PORT && frame.linkType === LINKTYPE_ETHERNET) {
      // RoCEv2 sent to the wrong port: a UDP payload that is a BTH with a known
      // opcode and a correct ICRC is no accident (the ICRC alone is a 2^-32 chance).
      const q = decodeFrame(frame.data, frame.linkType, { anyUdpPort: true });
      if (q.op && q.errors.length === 0 && q.icrc && q.icrc.wire === q.icrc.computed) {
        this.report(
          index,
          frameFlow(q),
          "udp-port",
          `RoCEv2 packet (${q.op.name}, valid ICRC) sent to UDP port ${p.udp.dstPort}; RoCEv2 uses 4791`,
        );
      }
    }
  }

  private reportIpv4Checksum(p: Packet, index: number): void {
    this.report(
      index,
      frameFlow(p),
      "ipv4-checksum",
      `IPv4 header checksum 0x${p.ipv4!.checksum.toString(16).padStart(4, "0")} is wrong`,
    );
  }

  private checkFrame(p: Packet, index: number): void {
    for (const e of p.errors) this.report(index, frameFlow(p), "decode", e);
    if (p.ipv4 && p.ipv4ChecksumOk === false) this.reportIpv4Checksum(p, index);
    if (p.icrc && p.icrc.wire !== p.icrc.computed) {
      this.report(
        index,
        frameFlow(p),
        "icrc",
        `ICRC on the wire is ${hex32(p.icrc.wire)} but the packet's ICRC is ${
          hex32(p.icrc.computed)
        }`,
      );
    }
    if (p.vcrc && p.vcrc.wire !== p.vcrc.computed) {
      this.report(
        index,
        frameFlow(p),
        "vcrc",
        `VCRC on the wire is 0x${
          p.vcrc.wire.toString(16).padStart(4, "0")
        } but the packet's VCRC is ` +
          `0x${p.vcrc.computed.toString(16).padStart(4, "0")}`,
      );
    }
    const bth = p.bth;
    const op = p.op;
    if (!bth || !op) return;
    if (bth.tver !== 0) {
      this.report(index, frameFlow(p), "transport", `BTH TVer is ${bth.tver}, must be 0`);
    }
    if (op.transport === "CNP") return;
    // Pad: payload and pad together fill whole 4-byte words; nothing but payload is padded.
    if (p.paddedLength % 4 !== 0) {
      this.report(
        index,
        frameFlow(p),
        "pad-count",
        `payload ${p.payloadLength} + pad ${bth.padCnt} = ${p.paddedLength} bytes, not a multiple of 4`,
      );
    }
    if (!op.hasPayload && p.paddedLength !== 0) {
      this.report(
        index,
        frameFlow(p),
        "transport",
        `${op.name} carries no payload, but ${p.paddedLength} bytes follow its headers`,
      );
    }
    if (bth.padCnt !== 0 && (op.position === "FIRST" || op.position === "MIDDLE")) {
      this.report(
        index,
        frameFlow(p),
        "pad-count",
        `${op.name} must not be padded (PadCnt ${bth.padCnt})`,
      );
    }
    this.checkManagement(p, op, index);
  }

  private checkManagement(p: Packet, op: OpcodeInfo, index: number): void {
    const qp = p.bth!.destQp;
    const vl15 = p.lrh !== undefined && p.lrh.vl === 15;
    if (qp === 0 || qp === 1) {
      if (op.transport !== "UD") {
        this.report(
          index,
          frameFlow(p),
          "management",
          `QP${qp} only takes UD traffic, got ${op.name}`,
        );
        return;
      }
      if (p.payloadLength !== MAD_BYTES) {
        this.report(
          index,
          frameFlow(p),
          "management",
          `a MAD to QP${qp} is ${MAD_BYTES} bytes, got ${p.payloadLength}`,
        );
      }
      if (qp === 1 && p.deth && p.deth.qkey !== GSI_QKEY) {
        this.report(
          index,
          frameFlow(p),
          "management",
          `QP1 MAD with Q_Key ${hex32(p.deth.qkey)}, must be 0x80010000`,
        );
      }
      if (p.lrh && qp === 0 && !vl15) {
        this.report(
          index,
          frameFlow(p),
          "management",
          `QP0 (SMI) traffic must use VL15, got VL${p.lrh.vl}`,
        );
      }
    }
    if (vl15 && qp !== 0) {
      this.report(
        index,
        frameFlow(p),
        "management",
        `VL15 carries only QP0 (SMI) traffic, got QP ${qp}`,
      );
    }
  }

  // ---- flows ----------------------------------------------------------------------------------

  private checkFlows(p: Packet, op: OpcodeInfo, index: number): void {
    if (op.transport === "CNP") return;
    if (op.transport === "UD") {
      this.checkMtu(p, op, this.opts.pathMtu || 4096, index, p);
      return;
    }
    this.endpointIds(p);
    if (op.isRequest) this.onRequest(p, op, index);
    else this.onResponse(p, op, index);
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

  private requestFlow(p: Packet, op: OpcodeInfo, index: number): Flow {
    const qpKey = p.bth!.destQp * 4 + (op.transport === "RC" ? 0 : 1);
    let f = this.flows.get(this.srcId, this.dstId, qpKey);
    if (f === undefined) {
      const ep = endpoints(p);
      const qp = qpHex(p.bth!.destQp);
      f = {
        name: `${ep[0]} → ${ep[1]} QP ${qp} (${op.transport} requests)`,
        responseName: `${ep[1]} → ${ep[0]} (responses to QP ${qp})`,
        transport: op.transport,
        pairKey: `${this.srcId}>${this.dstId}`,
        expectedPsn: -1,
        pendingRead: null,
        msgOp: null,
        msgFrame: -1,
        writeLen: 0,
        writeBytes: 0,
        pmtu: this.opts.pathMtu,
        lastReqPsn: -1,
        queue: [],
        qHead: 0,
        answered: new Map(),
        readResp: null,
        fatal: false,
        paired: false,
        lastFrame: index,
        restartAt: -1,
      };
      this.flows.set(this.srcId, this.dstId, qpKey, f);
      this.flowList.push(f);
      const list = this.flowsByPair.get(f.pairKey);
      if (list) list.push(f);
      else this.flowsByPair.set(f.pairKey, [f]);
    }
    return f;
  }

  private onRequest(p: Packet, op: OpcodeInfo, index: number): void {
    const f = this.requestFlow(p, op, index);
    const psn = p.bth!.psn;
    const idle = f.msgOp === null && f.qHead === f.queue.length && f.readResp === null &&
      f.pendingRead === null;
    let retransmission = false;

    // PSN order.
    if (f.pendingRead !== null && f.pmtu > 0) this.sizePendingRead(f); // MTU learned meanwhile
    if (f.pendingRead !== null) {
      retransmission = this.resolvePendingRead(f, psn, index);
    } else if (f.expectedPsn >= 0) {
      const d = psnDiff(psn, f.expectedPsn);
      if (d !== 0 && idle && Math.abs(d) >= this.opts.newConnectionPsnJump) {
        this.resetFlow(f); // a new QP took this number: its PSNs start anywhere
      } else if (d > 0) {
        this.report(
          index,
          f.name,
          "psn-order",
          `PSN ${psn} skips ${d} PSN(s): expected ${f.expectedPsn}`,
        );
      } else if (d < 0) {
        retransmission = true;
      }
    }
    // Sent before the NAK reached the requester: the responder discards it
    // unless the NAKed PSN reached it again first, so it is owed no answer
    // until it is resent.
    const sentBeforeNak = f.restartAt >= 0 && psn !== f.restartAt && psn === f.expectedPsn;
    if (f.restartAt >= 0 && (psn === f.restartAt || psn !== f.expectedPsn)) {
      // Packets already in flight when the NAK came continue in order; the first
      // one that does not continue goes back to the NAKed PSN or before it: the
      // capture is taken before the receiver's losses, so the requester may have
      // lost that NAK or earlier ACKs and atomic/READ responses, and then
      // retries from its oldest unanswered request (the responder answers the
      // duplicates). Resuming after the NAKed PSN loses packets.
      if (psnDiff(psn, f.restartAt) > 0) {
        this.report(
          index,
          f.name,
          "psn-order",
          `after the NAK of PSN ${f.restartAt} the requester resumed at PSN ${psn}`,
        );
      }
      f.restartAt = -1;
    }
    f.lastFrame = index;

    // Opcode sequence.
    this.checkSequence(f, p, op, retransmission, index);
    this.checkMtu(p, op, f.pmtu, index, f.name, f);

    // Next expected PSN, and what stays outstanding until answered.
    let span = 1;
    let unknownSpan = false;
    if (op.operation === "RDMA_READ_REQUEST") {
      const len = p.reth ? p.reth.dmaLen : 0;
      if (f.pmtu > 0) span = Math.max(1, Math.ceil(len / f.pmtu));
      else if (len <= 256) span = 1;
      else unknownSpan = true;
    }
    const entry: Outstanding = {
      kind: entryKind(op.operation),
      psnStart: psn,
      psnEnd: unknownSpan ? -1 : psnAdd(psn, span - 1),
      frameIndex: index,
      dmaLen: p.reth ? p.reth.dmaLen : 0,
    };
    if (unknownSpan) {
      f.pendingRead = entry;
      f.expectedPsn = -1;
    } else {
      f.expectedPsn = psnAdd(psn, span);
    }
    if (f.transport !== "RC" || f.fatal) return;
    const isNew = f.lastReqPsn < 0 || psnDiff(psn, f.lastReqPsn) > 0;
    if (isNew) {
      if (sentBeforeNak) entry.tentative = true;
      f.queue.push(entry);
      f.lastReqPsn = unknownSpan ? psn : entry.psnEnd;
    } else if (entry.kind === "read") {
      this.onReadRetransmission(f, entry);
    } else {
      this.resentRequest(f, psn);
    }
  }

  /** A request sent again: if it was tentative (see Outstanding), it is owed an answer again. */
  private resentRequest(f: Flow, psn: number): void {
    for (let i = f.qHead; i < f.queue.length; i++) {
      const q = f.queue[i];
      if (q.psnStart === psn) {
        q.tentative = false;
        return;
      }
    }
  }

  /** Forget a flow's history: its QP number now belongs to a new connection. */
  private resetFlow(f: Flow): void {
    f.expectedPsn = -1;
    f.pendingRead = null;
    f.msgOp = null;
    f.queue.length = 0;
    f.qHead = 0;
    f.lastReqPsn = -1;
    f.answered.clear();
    f.readResp = null;
    f.fatal = false;
    f.restartAt = -1;
    f.pmtu = this.opts.pathMtu;
    if (f.paired) {
      this.responseFlows.deleteValue(f);
      f.paired = false;
    }
  }

  /**
   * A retransmitted READ, whole or for the tail of an earlier one (IBA: a READ
   * retried from a PSN inside the response carries the VA and length of the
   * rest). The responder answers it as a duplicate, with a response starting
   * (FIRST/ONLY) at the new PSN; the response to the earlier READ may still be
   * in flight and is judged against that earlier READ, not this one.
   */
  private onReadRetransmission(f: Flow, e: Outstanding): void {
    for (let i = f.qHead; i < f.queue.length; i++) {
      const q = f.queue[i];
      if (q.kind !== "read") continue;
      if (q.psnStart === e.psnStart) {
        q.frameIndex = e.frameIndex;
        q.tentative = false;
        f.answered.set(e.psnStart, e); // its response may also come twice
        return;
      }
      if (
        q.psnEnd >= 0 && psnDiff(e.psnStart, q.psnStart) > 0 && psnDiff(e.psnStart, q.psnEnd) <= 0
      ) {
        e.reReadOf = q;
        q.tentative = false;
        f.answered.set(e.psnStart, e);
        return;
      }
    }
    f.answered.set(e.psnStart, e); // a duplicate of an answered READ: its response is a duplicate too
  }

  /** The path MTU became known (from a response) after a READ of unknown span: size it now. */
  private sizePendingRead(f: Flow): void {
    const r = f.pendingRead!;
    f.pendingRead = null;
    r.psnEnd = psnAdd(r.psnStart, Math.max(1, Math.ceil(r.dmaLen / f.pmtu)) - 1);
    f.expectedPsn = psnAdd(r.psnEnd, 1);
    if (f.transport === "RC" && !f.fatal && r.psnStart === f.lastReqPsn) f.lastReqPsn = r.psnEnd;
  }

  /**
   * The PSN after a READ whose packet count is unknown (path MTU not yet
   * known): it must be the READ's PSN plus ceil(len / MTU) for some IB MTU.
   * Returns whether the PSN is a retransmission.
   */
  private resolvePendingRead(f: Flow, psn: number, index: number): boolean {
    const r = f.pendingRead!;
    f.pendingRead = null;
    const d = psnDiff(psn, r.psnStart);
    if (d <= 0) {
      f.expectedPsn = -1;
      return true;
    }
    const fits = VALID_MTUS.filter((m) => Math.max(1, Math.ceil(r.dmaLen / m)) === d);
    if (fits.length === 0) {
      this.report(
        index,
        f.name,
        "psn-order",
        `PSN ${psn} follows a READ of ${r.dmaLen} bytes at PSN ${r.psnStart}; ` +
          `no path MTU makes that READ consume ${d} PSN(s)`,
      );
    } else {
      if (fits.length === 1) f.pmtu = fits[0];
      r.psnEnd = psnAdd(psn, -1);
      if (f.transport === "RC" && !f.fatal && r.psnStart === f.lastReqPsn) f.lastReqPsn = r.psnEnd;
    }
    return false;
  }

  private checkSequence(f: Flow, p: Packet, op: OpcodeInfo, retrans: boolean, index: number): void {
    const pos = op.position;
    const msgOp = op.operation === "SEND" || op.operation === "RDMA_WRITE" ? op.operation : null;
    if (retrans) {
      // Go-back-N resumes at any packet of a message: take the state the packet implies.
      f.msgOp = msgOp !== null && (pos === "FIRST" || pos === "MIDDLE") ? msgOp : null;
      if (pos === "FIRST") this.startMessage(f, p, index);
      else f.writeLen = -1; // resumed mid-message: the bytes sent before are not known here
      f.msgFrame = index;
      return;
    }
    if (pos === "FIRST") {
      if (f.msgOp !== null) {
        this.report(
          index,
          f.name,
          "opcode-sequence",
          `${op.name} while the ${f.msgOp} message begun at frame ${f.msgFrame} has no LAST yet`,
        );
      }
      f.msgOp = msgOp;
      f.msgFrame = index;
      this.startMessage(f, p, index);
    } else if (pos === "MIDDLE" || pos === "LAST") {
      if (f.msgOp !== msgOp) {
        this.report(
          index,
          f.name,
          "opcode-sequence",
          f.msgOp === null
            ? `${op.name} without a FIRST (no message is open)`
            : `${op.name} inside a ${f.msgOp} message begun at frame ${f.msgFrame}`,
        );
        f.writeLen = -1; // length unknown: skip the WRITE length check for this message
      } else {
        f.writeBytes += p.payloadLength;
      }
      f.msgOp = pos === "MIDDLE" ? msgOp : null;
      if (pos === "LAST" && msgOp === "RDMA_WRITE") this.checkWriteLength(f, index);
    } else {
      if (f.msgOp !== null) {
        this.report(
          index,
          f.name,
          "opcode-sequence",
          `${op.name} while the ${f.msgOp} message begun at frame ${f.msgFrame} has no LAST yet`,
        );
        f.msgOp = null;
      }
      if (op.operation === "RDMA_WRITE" && p.reth && p.reth.dmaLen !== p.payloadLength) {
        this.report(
          index,
          f.name,
          "write-length",
          `${op.name} carries ${p.payloadLength} bytes but its RETH DMA length is ${p.reth.dmaLen}`,
        );
      }
      if ((op.operation === "COMPARE_SWAP" || op.operation === "FETCH_ADD") && p.atomicEth) {
        if ((p.atomicEth.va & 7n) !== 0n) {
          this.report(
            index,
            f.name,
            "transport",
            `${op.name} address 0x${p.atomicEth.va.toString(16)} is not 8-byte aligned`,
          );
        }
      }
    }
  }

  private startMessage(f: Flow, p: Packet, _index: number): void {
    f.writeLen = p.reth ? p.reth.dmaLen : -1;
    f.writeBytes = p.payloadLength;
  }

  private checkWriteLength(f: Flow, index: number): void {
    if (f.writeLen >= 0 && f.writeBytes !== f.writeLen) {
      this.report(
        index,
        f.name,
        "write-length",
        `RDMA WRITE begun at frame ${f.msgFrame} carried ${f.writeBytes} bytes but its RETH DMA length is ${f.writeLen}`,
      );
    }
  }

  /** Payload against the path MTU: FIRST/MIDDLE carry exactly one MTU, LAST/ONLY at most one. */
  private checkMtu(
    p: Packet,
    op: OpcodeInfo,
    pmtu: number,
    index: number,
    where: string | Packet,
    f?: Flow,
  ): void {
    if (!op.hasPayload) return;
    const flow = (): string => (typeof where === "string" ? where : frameFlow(where));
    const len = p.payloadLength;
    if (op.position === "FIRST" || op.position === "MIDDLE") {
      if (pmtu === 0) {
        if (!VALID_MTUS.includes(len)) {
          this.report(
            index,
            flow(),
            "payload-mtu",
            `${op.name} carries ${len} bytes, which is no path MTU (256..4096)`,
          );
          return;
        }
        if (f) f.pmtu = len;
      } else if (len !== pmtu) {
        this.report(
          index,
          flow(),
          "payload-mtu",
          `${op.name} carries ${len} bytes; FIRST/MIDDLE carry exactly the path MTU ${pmtu}`,
        );
      }
    } else if (len > (pmtu || 4096)) {
      this.report(
        index,
        flow(),
        "payload-mtu",
        `${op.name} carries ${len} bytes, more than the path MTU ${pmtu || 4096}`,
      );
    }
  }

  // ---- responses ------------------------------------------------------------------------------

  private pairResponse(p: Packet, index: number): Flow | undefined {
    const qp = p.bth!.destQp;
    const known = this.responseFlows.get(this.srcId, this.dstId, qp);
    if (known) return known;
    const candidates = (this.flowsByPair.get(`${this.dstId}>${this.srcId}`) ?? []).filter((f) =>
      f.transport === "RC" && !f.paired
    );
    const psn = p.bth!.psn;
    let best: Flow | undefined;
    for (const f of candidates) {
      if (f.lastReqPsn < 0) continue;
      const head = f.qHead < f.queue.length ? f.queue[f.qHead].psnStart : f.lastReqPsn;
      const inWindow = psnDiff(psn, psnAdd(head, -1)) >= 0 &&
        (psnDiff(psn, f.lastReqPsn) <= 0 || f.pendingRead !== null || hasOpenRead(f));
      if (inWindow && (best === undefined || f.lastFrame > best.lastFrame)) best = f;
    }
    if (best === undefined) {
      const ep = endpoints(p);
      this.report(
        index,
        `${ep[0]} → ${ep[1]} QP ${qpHex(qp)}`,
        "ack-psn",
        `${p.op!.name} with PSN ${psn} answers no RC request sent from ${ep[1]} to ${ep[0]}`,
      );
      return undefined;
    }
    best.paired = true;
    this.responseFlows.set(this.srcId, this.dstId, qp, best);
    return best;
  }

  private onResponse(p: Packet, op: OpcodeInfo, index: number): void {
    const f = this.pairResponse(p, index);
    if (f === undefined) return;
    const psn = p.bth!.psn;
    const name = f.responseName;
    // A response at or past the NAKed PSN: a copy of that PSN reached the
    // responder after all, so the requester need not go back to it. (A new
    // NAK sets restartAt again below.)
    if (f.restartAt >= 0 && psnDiff(psn, f.restartAt) >= 0) f.restartAt = -1;
    if (
      f.lastReqPsn >= 0 && psnDiff(psn, f.lastReqPsn) > 0 && f.pendingRead === null &&
      !hasOpenRead(f)
    ) {
      this.report(
        index,
        name,
        "ack-psn",
        `${op.name} with PSN ${psn} is beyond the last request PSN ${f.lastReqPsn}`,
      );
    }
    if (op.operation !== "RDMA_READ_RESPONSE" && f.readResp !== null) {
      const r = f.readResp;
      this.report(
        index,
        name,
        "read-response",
        `${op.name} interrupts the response to the READ at PSN ${r.entry.psnStart} (frame ${r.entry.frameIndex})`,
      );
      f.readResp = null;
    }
    this.checkMtu(p, op, f.pmtu, index, name, f);
    const kind = p.aeth ? aethKind(p.aeth.syndrome) : "ack";
    if (p.aeth && kind === "reserved") {
      this.report(
        index,
        name,
        "transport",
        `AETH syndrome 0x${p.aeth.syndrome.toString(16)} is reserved`,
      );
    }
    switch (op.operation) {
      case "ACKNOWLEDGE":
        if (kind === "ack") this.onAck(f, psn, index);
        else this.onNak(f, psn, kind, p.aeth!.syndrome & 0x1f, index);
        break;
      case "ATOMIC_ACKNOWLEDGE":
        if (kind !== "ack") {
          this.report(
            index,
            name,
            "atomic-response",
            `ATOMIC_ACKNOWLEDGE carries a ${kind} syndrome`,
          );
        }
        this.onAtomicAck(f, psn, index);
        break;
      case "RDMA_READ_RESPONSE":
        if (p.aeth && kind !== "ack") {
          this.report(index, name, "read-response", `${op.name} carries a ${kind} syndrome`);
        }
        this.onReadResponse(f, p, op, psn, index);
        break;
    }
  }

  /** Pop everything answered up to and including `psn`; READs/atomics passed over are violations. */
  private coverTo(f: Flow, psn: number, index: number, by: string): void {
    while (f.qHead < f.queue.length) {
      const e = f.queue[f.qHead];
      const end = e.psnEnd >= 0 ? e.psnEnd : e.psnStart;
      if (psnDiff(end, psn) > 0) break;
      if (e.kind === "read" || e.kind === "atomic") {
        this.report(
          index,
          f.responseName,
          e.kind === "read" ? "read-response" : "atomic-response",
          `${by} passes over the ${e.kind === "read" ? "READ" : "atomic"} at PSN ${e.psnStart} ` +
            `(frame ${e.frameIndex}) before it was answered`,
        );
      }
      f.qHead++;
    }
    compactQueue(f);
  }

  private head(f: Flow): Outstanding | undefined {
    return f.qHead < f.queue.length ? f.queue[f.qHead] : undefined;
  }

  private onAck(f: Flow, psn: number, index: number): void {
    const h = this.head(f);
    if (h && h.kind === "atomic" && h.psnStart === psn) {
      this.report(
        index,
        f.responseName,
        "atomic-response",
        `the atomic at PSN ${psn} (frame ${h.frameIndex}) is answered by a plain ACKNOWLEDGE without AtomicAckETH`,
      );
      f.qHead++;
    }
    this.coverTo(f, psn, index, `ACK ${psn}`);
  }

  private onNak(f: Flow, psn: number, kind: string, code: number, index: number): void {
    this.coverTo(f, psnAdd(psn, -1), index, `${kind.toUpperCase()} ${psn}`);
    const fatal = kind === "nak" && code !== NAK_CODES.PSN_SEQUENCE_ERROR;
    if (fatal) {
      // The requester's QP goes to the error state: nothing after is owed.
      f.queue.length = f.qHead;
      compactQueue(f);
      f.lastReqPsn = psnAdd(psn, -1);
      f.fatal = true;
      return;
    }
    // Sequence error or RNR: the requester resends from the NAKed PSN. What was
    // sent before is tentative: a copy of the NAKed PSN may already have been
    // on the wire (a timer retransmission), and then the responder answers it
    // and what follows it even though it sent this NAK.
    for (let i = f.qHead; i < f.queue.length; i++) f.queue[i].tentative = true;
    f.restartAt = psn;
  }

  private onAtomicAck(f: Flow, psn: number, index: number): void {
    this.coverTo(f, psnAdd(psn, -1), index, `ATOMIC_ACKNOWLEDGE ${psn}`);
    const h = this.head(f);
    if (h && h.kind === "atomic" && h.psnStart === psn) {
      f.qHead++;
      f.answered.set(psn, h);
      trimAnswered(f);
      return;
    }
    const dup = f.answered.get(psn);
    if (dup && dup.kind === "atomic") return; // response to a retransmitted atomic
    this.report(
      index,
      f.responseName,
      "atomic-response",
      `ATOMIC_ACKNOWLEDGE with PSN ${psn} answers no atomic request`,
    );
  }

  private onReadResponse(f: Flow, p: Packet, op: OpcodeInfo, psn: number, index: number): void {
    const pos = op.position;
    if (pos === "FIRST" || pos === "ONLY") {
      if (f.readResp !== null && !this.restartsRead(f, f.readResp, psn)) {
        const r = f.readResp;
        this.report(
          index,
          f.responseName,
          "read-response",
          `${op.name} at PSN ${psn} while the response to the READ at PSN ${r.entry.psnStart} ` +
            `(frame ${r.entry.frameIndex}) has no LAST yet`,
        );
      }
      f.readResp = null;
      this.coverTo(f, psnAdd(psn, -1), index, `${op.name} ${psn}`);
      let entry: Outstanding | undefined;
      const h = this.head(f);
      if (h && h.kind === "read" && h.psnStart === psn) {
        entry = h;
      } else {
        const dup = f.answered.get(psn);
        if (dup && dup.kind === "read") entry = dup;
      }
      if (entry === undefined) {
        this.report(
          index,
          f.responseName,
          "read-response",
          `${op.name} with PSN ${psn} answers no READ request`,
        );
        return;
      }
      f.readResp = { entry, nextPsn: psnAdd(psn, 1), bytes: p.payloadLength, frameIndex: index };
      if (pos === "ONLY") this.finishRead(f, psn, index);
      return;
    }
    const r = f.readResp;
    if (r === null) {
      this.report(
        index,
        f.responseName,
        "opcode-sequence",
        `${op.name} with PSN ${psn} without a READ response FIRST`,
      );
      return;
    }
    if (psn !== r.nextPsn) {
      this.report(
        index,
        f.responseName,
        "psn-order",
        `${op.name} with PSN ${psn}; expected ${r.nextPsn}`,
      );
    }
    r.nextPsn = psnAdd(psn, 1);
    r.bytes += p.payloadLength;
    if (pos === "LAST") this.finishRead(f, psn, index);
  }

  /**
   * Whether a READ response FIRST/ONLY at `psn` legally abandons the response
   * `r` in progress: the requester asked again, after that response began,
   * for the data from `psn` on, a PSN the abandoned response had reached.
   */
  private restartsRead(f: Flow, r: ReadAssembly, psn: number): boolean {
    const again = f.answered.get(psn);
    if (again === undefined || again.kind !== "read" || again.frameIndex <= r.frameIndex) {
      return false;
    }
    return psnDiff(psn, r.entry.psnStart) >= 0 && psnDiff(psn, r.nextPsn) < 0;
  }

  private finishRead(f: Flow, lastPsn: number, index: number): void {
    const r = f.readResp!;
    f.readResp = null;
    const e = r.entry;
    if (r.bytes !== e.dmaLen) {
      this.report(
        index,
        f.responseName,
        "read-response",
        `READ response carried ${r.bytes} bytes; the READ at PSN ${e.psnStart} (frame ${e.frameIndex}) asked for ${e.dmaLen}`,
      );
    }
    if (e.psnEnd >= 0 && e.psnEnd !== lastPsn) {
      this.report(
        index,
        f.responseName,
        "read-response",
        `READ response ended at PSN ${lastPsn}; the READ at PSN ${e.psnStart} spans PSNs up to ${e.psnEnd}`,
      );
    }
    if (e.psnEnd < 0) {
      e.psnEnd = lastPsn;
      if (f.lastReqPsn === e.psnStart) f.lastReqPsn = lastPsn;
    }
    const h = this.head(f);
    // The tail re-read answers what is left of the READ it re-reads.
    if (h === e || (h !== undefined && h === e.reReadOf)) f.qHead++;
    compactQueue(f);
    f.answered.set(e.psnStart, e);
    trimAnswered(f);
  }

  // ---- end of capture -------------------------------------------------------------------------

  private finishFlow(f: Flow): void {
    if (f.msgOp !== null) {
      this.report(
        f.msgFrame,
        f.name,
        "opcode-sequence",
        `the ${f.msgOp} message begun at frame ${f.msgFrame} never ends (no LAST)`,
      );
    }
    if (f.readResp !== null) {
      const r = f.readResp;
      this.report(
        r.frameIndex,
        f.responseName,
        "read-response",
        `the response to the READ at PSN ${r.entry.psnStart} never ends (no LAST)`,
      );
    }
    if (f.transport !== "RC" || f.fatal) return;
    let firstUnacked: Outstanding | undefined;
    let unacked = 0;
    for (let i = f.qHead; i < f.queue.length; i++) {
      const e = f.queue[i];
      if (e.tentative) continue;
      if (e.kind === "read") {
        this.report(
          e.frameIndex,
          f.name,
          "read-response",
          `the READ at PSN ${e.psnStart} (${e.dmaLen} bytes) is never answered`,
        );
      } else if (e.kind === "atomic") {
        this.report(
          e.frameIndex,
          f.name,
          "atomic-response",
          `the atomic at PSN ${e.psnStart} is never answered with an AtomicAckETH`,
        );
      } else {
        firstUnacked ??= e;
        unacked++;
      }
    }
    if (firstUnacked) {
      this.report(
        firstUnacked.frameIndex,
        f.name,
        "ack-coverage",
        `${unacked} request packet(s) from PSN ${firstUnacked.psnStart} on are never acknowledged (no ACK or NAK covers them)`,
      );
    }
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

// ---- helpers ----------------------------------------------------------------------------------

/** A map keyed by three numbers, without building a string per lookup. */
class Index3<T> {
  private readonly m = new Map<number, Map<number, Map<number, T>>>();

  get(a: number, b: number, c: number): T | undefined {
    return this.m.get(a)?.get(b)?.get(c);
  }

  set(a: number, b: number, c: number, v: T): void {
    let mb = this.m.get(a);
    if (mb === undefined) this.m.set(a, mb = new Map());
    let mc = mb.get(b);
    if (mc === undefined) mb.set(b, mc = new Map());
    mc.set(c, v);
  }

  deleteValue(v: T): void {
    for (const mb of this.m.values()) {
      for (const mc of mb.values()) for (const [k, x] of mc) if (x === v) mc.delete(k);
    }
  }
}

function entryKind(op: Operation): EntryKind {
  switch (op) {
    case "RDMA_READ_REQUEST":
      return "read";
    case "COMPARE_SWAP":
    case "FETCH_ADD":
      return "atomic";
    case "RDMA_WRITE":
      return "write";
    default:
      return "send";
  }
}

function hasOpenRead(f: Flow): boolean {
  const last = f.queue.length > f.qHead ? f.queue[f.queue.length - 1] : undefined;
  return last !== undefined && last.kind === "read" && last.psnEnd < 0;
}

/** Drop consumed queue slots now and then so the queue does not grow with the capture. */
function compactQueue(f: Flow): void {
  if (f.qHead === f.queue.length) {
    f.queue.length = 0;
    f.qHead = 0;
  } else if (f.qHead > 1024) {
    f.queue.splice(0, f.qHead);
    f.qHead = 0;
  }
}

function trimAnswered(f: Flow): void {
  if (f.answered.size > 256) {
    const oldest = f.answered.keys().next().value;
    if (oldest !== undefined) f.answered.delete(oldest);
  }
}

/** Source and destination endpoint labels of an RDMA packet. */
function endpoints(p: Packet): [string, string] {
  if (p.ipv4) return [ipv4ToString(p.ipv4.src), ipv4ToString(p.ipv4.dst)];
  if (p.ipv6) return [ipv6ToString(p.ipv6.src), ipv6ToString(p.ipv6.dst)];
  if (p.lrh) return [`LID ${p.lrh.slid}`, `LID ${p.lrh.dlid}`];
  return ["?", "?"];
}

function frameFlow(p: Packet): string {
  const [s, d] = endpoints(p);
  if (p.bth) return `${s} → ${d} QP ${qpHex(p.bth.destQp)}`;
  return `${s} → ${d}`;
}

function qpHex(qp: number): string {
  return `0x${qp.toString(16).padStart(6, "0")}`;
}

function hex32(v: number): string {
  return `0x${v.toString(16).padStart(8, "0")}`;
}

/** A cheap fingerprint: length, the first 64 and the last 16 bytes. */
function quickHash(b: Uint8Array): number {
  let h = 0x811c9dc5 ^ b.length;
  const n = Math.min(64, b.length);
  for (let i = 0; i < n; i++) h = Math.imul(h ^ b[i], 0x01000193);
  for (let i = Math.max(n, b.length - 16); i < b.length; i++) h = Math.imul(h ^ b[i], 0x01000193);
  return h >>> 0;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
