/**
 * The checker's response pairing. Responses (ACKNOWLEDGE, READ responses,
 * ATOMIC_ACKNOWLEDGE) are paired with the request flow they answer — the wire
 * does not carry the requester's QP, so the pairing is learned from addresses
 * and PSNs — and then matched against that flow's outstanding requests: an
 * ACK with PSN n covers all requests up to n, READ responses must match their
 * request's PSN and DMA length, atomics must be answered with an
 * AtomicAckETH, and nothing may be acknowledged that was not sent. What loss
 * recovery legally puts on the wire passes: requests in flight across a
 * sequence or RNR NAK (tentative), re-reads of a READ's tail, duplicate
 * responses.
 */
import { checkPayloadMtu, endpoints, qpHex } from "./check_frame.ts";
import { FlowIndex, type Outstanding, type ReadAssembly, type RequestFlow } from "./check_flow.ts";
import type { ViolationLog } from "./check_log.ts";
import type { Packet } from "./frame.ts";
import type { OpcodeInfo } from "./opcodes.ts";
import { aethKind, NAK_CODES, psnAdd, psnDiff } from "./transport.ts";

/** Pairs responses with request flows and matches them against what those flows have outstanding. */
export class ResponsePairing {
  /** Request flows by (responder id, requester id, destination QP of the responses). */
  private readonly byResponse = new FlowIndex();

  /**
   * Pairing that reports to `log` and finds candidate flows in `flowsByPair`
   * (request flows by their `src>dst` endpoint key, kept up to date by the checker).
   */
  constructor(
    private readonly log: ViolationLog,
    private readonly flowsByPair: ReadonlyMap<string, readonly RequestFlow[]>,
  ) {}

  /** Forget the responses paired with `f` (its QP number now belongs to a new connection). */
  unpair(f: RequestFlow): void {
    if (f.paired) {
      this.byResponse.delete(f);
      f.paired = false;
    }
  }

  /** Check RC response packet `p` (frame `index`) sent from endpoint `srcId` to `dstId`. */
  onResponse(p: Packet, op: OpcodeInfo, index: number, srcId: number, dstId: number): void {
    const f = this.pair(p, index, srcId, dstId);
    if (f === undefined) return;
    const psn = p.bth!.psn;
    const name = f.responseName;
    // A response at or past the NAKed PSN: a copy of that PSN reached the
    // responder after all, so the requester need not go back to it. (A new
    // NAK sets restartAt again below.)
    if (f.restartAt >= 0 && psnDiff(psn, f.restartAt) >= 0) f.restartAt = -1;
    if (
      f.lastReqPsn >= 0 && psnDiff(psn, f.lastReqPsn) > 0 && f.pendingRead === null &&
      !f.hasOpenRead()
    ) {
      this.log.report(
        index,
        name,
        "ack-psn",
        `${op.name} with PSN ${psn} is beyond the last request PSN ${f.lastReqPsn}`,
      );
    }
    if (op.operation !== "RDMA_READ_RESPONSE" && f.readResp !== null) {
      const r = f.readResp;
      this.log.report(
        index,
        name,
        "read-response",
        `${op.name} interrupts the response to the READ at PSN ${r.entry.psnStart} (frame ${r.entry.frameIndex})`,
      );
      f.readResp = null;
    }
    checkPayloadMtu(this.log, p, op, f.pmtu, index, name, f);
    const kind = p.aeth ? aethKind(p.aeth.syndrome) : "ack";
    if (p.aeth && kind === "reserved") {
      this.log.report(
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
          this.log.report(
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
          this.log.report(index, name, "read-response", `${op.name} carries a ${kind} syndrome`);
        }
        this.onReadResponse(f, p, op, psn, index);
        break;
    }
  }

  /** End of capture: a READ response still open, and every RC request never answered. */
  finishFlow(f: RequestFlow): void {
    if (f.readResp !== null) {
      const r = f.readResp;
      this.log.report(
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
        this.log.report(
          e.frameIndex,
          f.name,
          "read-response",
          `the READ at PSN ${e.psnStart} (${e.dmaLen} bytes) is never answered`,
        );
      } else if (e.kind === "atomic") {
        this.log.report(
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
    // SEND/WRITE packets left unacknowledged at the end are owed an ACK only
    // when the requester sent some of them again: it was waiting for the
    // ACK. Otherwise an application destroyed its QPs with a message in
    // flight (ibv_srq_pingpong's last SENDs do this), which is legal and
    // looks the same on the wire as a capture stopped mid-flight. A later
    // response from the responder proves nothing: the switch sees it after
    // the tail went, but the responder may have sent it before the tail
    // reached it. (docs/wire.md, "ack-coverage at the end of a capture")
    const alive = firstUnacked !== undefined &&
      f.lastRetransmitFrame > firstUnacked.frameIndex;
    if (firstUnacked && alive) {
      this.log.report(
        firstUnacked.frameIndex,
        f.name,
        "ack-coverage",
        `${unacked} request packet(s) from PSN ${firstUnacked.psnStart} on are never acknowledged (no ACK or NAK covers them)`,
      );
    }
  }

  /**
   * The request flow a response answers: the one already paired with its
   * (responder, requester, QP), else the most recently active unpaired RC flow
   * the other way whose outstanding PSN window holds the response's PSN.
   */
  private pair(p: Packet, index: number, srcId: number, dstId: number): RequestFlow | undefined {
    const qp = p.bth!.destQp;
    const known = this.byResponse.get(srcId, dstId, qp);
    if (known) return known;
    const candidates = (this.flowsByPair.get(`${dstId}>${srcId}`) ?? []).filter((f) =>
      f.transport === "RC" && !f.paired
    );
    const psn = p.bth!.psn;
    let best: RequestFlow | undefined;
    for (const f of candidates) {
      if (f.lastReqPsn < 0) continue;
      const head = f.qHead < f.queue.length ? f.queue[f.qHead].psnStart : f.lastReqPsn;
      const inWindow = psnDiff(psn, psnAdd(head, -1)) >= 0 &&
        (psnDiff(psn, f.lastReqPsn) <= 0 || f.pendingRead !== null || f.hasOpenRead());
      if (inWindow && (best === undefined || f.lastFrame > best.lastFrame)) best = f;
    }
    if (best === undefined) {
      const ep = endpoints(p);
      this.log.report(
        index,
        `${ep[0]} → ${ep[1]} QP ${qpHex(qp)}`,
        "ack-psn",
        `${p.op!.name} with PSN ${psn} answers no RC request sent from ${ep[1]} to ${ep[0]}`,
      );
      return undefined;
    }
    best.paired = true;
    this.byResponse.set(srcId, dstId, qp, best);
    return best;
  }

  /** Pop everything answered up to and including `psn`; READs/atomics passed over are violations. */
  private coverTo(f: RequestFlow, psn: number, index: number, by: string): void {
    while (f.qHead < f.queue.length) {
      const e = f.queue[f.qHead];
      const end = e.psnEnd >= 0 ? e.psnEnd : e.psnStart;
      if (psnDiff(end, psn) > 0) break;
      if (e.kind === "read" || e.kind === "atomic") {
        this.log.report(
          index,
          f.responseName,
          e.kind === "read" ? "read-response" : "atomic-response",
          `${by} passes over the ${e.kind === "read" ? "READ" : "atomic"} at PSN ${e.psnStart} ` +
            `(frame ${e.frameIndex}) before it was answered`,
        );
      }
      f.qHead++;
    }
    f.compactQueue();
  }

  private onAck(f: RequestFlow, psn: number, index: number): void {
    const h = f.head();
    if (h && h.kind === "atomic" && h.psnStart === psn) {
      this.log.report(
        index,
        f.responseName,
        "atomic-response",
        `the atomic at PSN ${psn} (frame ${h.frameIndex}) is answered by a plain ACKNOWLEDGE without AtomicAckETH`,
      );
      f.qHead++;
    }
    this.coverTo(f, psn, index, `ACK ${psn}`);
  }

  private onNak(f: RequestFlow, psn: number, kind: string, code: number, index: number): void {
    this.coverTo(f, psnAdd(psn, -1), index, `${kind.toUpperCase()} ${psn}`);
    const fatal = kind === "nak" && code !== NAK_CODES.PSN_SEQUENCE_ERROR;
    if (fatal) {
      // The requester's QP goes to the error state: nothing after is owed.
      f.queue.length = f.qHead;
      f.compactQueue();
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

  private onAtomicAck(f: RequestFlow, psn: number, index: number): void {
    this.coverTo(f, psnAdd(psn, -1), index, `ATOMIC_ACKNOWLEDGE ${psn}`);
    const h = f.head();
    if (h && h.kind === "atomic" && h.psnStart === psn) {
      f.qHead++;
      f.answered.set(psn, h);
      f.trimAnswered();
      return;
    }
    const dup = f.answered.get(psn);
    if (dup && dup.kind === "atomic") return; // response to a retransmitted atomic
    this.log.report(
      index,
      f.responseName,
      "atomic-response",
      `ATOMIC_ACKNOWLEDGE with PSN ${psn} answers no atomic request`,
    );
  }

  private onReadResponse(
    f: RequestFlow,
    p: Packet,
    op: OpcodeInfo,
    psn: number,
    index: number,
  ): void {
    const pos = op.position;
    if (pos === "FIRST" || pos === "ONLY") {
      if (f.readResp !== null && !restartsRead(f, f.readResp, psn)) {
        const r = f.readResp;
        this.log.report(
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
      const h = f.head();
      if (h && h.kind === "read" && h.psnStart === psn) {
        entry = h;
      } else {
        const dup = f.answered.get(psn);
        if (dup && dup.kind === "read") entry = dup;
      }
      if (entry === undefined) {
        this.log.report(
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
      this.log.report(
        index,
        f.responseName,
        "opcode-sequence",
        `${op.name} with PSN ${psn} without a READ response FIRST`,
      );
      return;
    }
    if (psn !== r.nextPsn) {
      this.log.report(
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

  private finishRead(f: RequestFlow, lastPsn: number, index: number): void {
    const r = f.readResp!;
    f.readResp = null;
    const e = r.entry;
    if (r.bytes !== e.dmaLen) {
      this.log.report(
        index,
        f.responseName,
        "read-response",
        `READ response carried ${r.bytes} bytes; the READ at PSN ${e.psnStart} (frame ${e.frameIndex}) asked for ${e.dmaLen}`,
      );
    }
    if (e.psnEnd >= 0 && e.psnEnd !== lastPsn) {
      this.log.report(
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
    const h = f.head();
    // The tail re-read answers what is left of the READ it re-reads.
    if (h === e || (h !== undefined && h === e.reReadOf)) f.qHead++;
    f.compactQueue();
    f.answered.set(e.psnStart, e);
    f.trimAnswered();
  }
}

/**
 * Whether a READ response FIRST/ONLY at `psn` legally abandons the response
 * `r` in progress: the requester asked again, after that response began,
 * for the data from `psn` on, a PSN the abandoned response had reached.
 */
function restartsRead(f: RequestFlow, r: ReadAssembly, psn: number): boolean {
  const again = f.answered.get(psn);
  if (again === undefined || again.kind !== "read" || again.frameIndex <= r.frameIndex) {
    return false;
  }
  return psnDiff(psn, r.entry.psnStart) >= 0 && psnDiff(psn, r.nextPsn) < 0;
}
