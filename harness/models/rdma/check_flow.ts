/**
 * One request flow of the checker: the requests a requester sends to one
 * destination QP over one transport, in capture order. It checks legal opcode
 * sequences (FIRST → MIDDLE* → LAST, or ONLY), PSN order in the 24-bit circle
 * (a PSN behind the expected one is a retransmission, not a violation; one
 * ahead is a skip), go-back-N after a NAK, RDMA WRITE lengths against the
 * RETH, and keeps the queue of RC requests still owed a response.
 *
 * The response side (`check_response.ts`) answers that queue: it advances
 * `qHead`, assembles READ responses in `readResp` and remembers answered
 * requests in `answered`, so those fields are shared state, not private.
 */
import { checkPayloadMtu, VALID_MTUS } from "./check_frame.ts";
import type { ViolationLog } from "./check_log.ts";
import type { Packet } from "./frame.ts";
import type { OpcodeInfo, Operation } from "./opcodes.ts";
import { psnAdd, psnDiff } from "./transport.ts";

/** What an RC request asks for, as far as its response is concerned. */
export type EntryKind = "send" | "write" | "read" | "atomic";

/** An RC request awaiting its response. */
export interface Outstanding {
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
export interface ReadAssembly {
  entry: Outstanding;
  nextPsn: number;
  bytes: number;
  frameIndex: number;
}

/** What a flow needs from the checker that owns it. */
export interface FlowContext {
  readonly log: ViolationLog;
  /** Path MTU given to the checker; 0 when it is to be inferred per flow. */
  readonly pathMtu: number;
  /** See `CheckOptions.newConnectionPsnJump`. */
  readonly newConnectionPsnJump: number;
  /** Forget which responses belong to `f`: its QP number now belongs to a new connection. */
  unpair(f: RequestFlow): void;
}

/** State of one request flow (and of the responses to it, once paired). */
export class RequestFlow {
  expectedPsn = -1;
  /** Set while the PSN after a READ of unknown length in packets is still to be seen. */
  pendingRead: Outstanding | null = null;
  msgOp: Operation | null = null;
  msgFrame = -1;
  /**
   * The open message is a resend (it began with a retransmitted packet): an
   * ACK may cut it short at any packet, so at the end of the capture it is
   * not missing its LAST (the first sending was judged whole; what the
   * resend left unacknowledged, ack-coverage reports).
   */
  msgResent = false;
  writeLen = 0;
  writeBytes = 0;
  pmtu: number;
  lastReqPsn = -1;
  readonly queue: Outstanding[] = [];
  qHead = 0;
  readonly answered = new Map<number, Outstanding>();
  readResp: ReadAssembly | null = null;
  fatal = false;
  paired = false;
  lastFrame: number;
  /** After a sequence-error or RNR NAK at PSN n: the requester must go back to n (-1: no NAK pending). */
  restartAt = -1;
  /** Frame of the last request packet that was a retransmission (-1: none). */
  lastRetransmitFrame = -1;

  /**
   * A flow first seen at frame `index`. `pairKey` is the endpoint pair
   * `src>dst` the response pairing looks flows up by.
   */
  constructor(
    readonly name: string,
    readonly responseName: string,
    readonly transport: string,
    readonly pairKey: string,
    private readonly ctx: FlowContext,
    index: number,
  ) {
    this.pmtu = ctx.pathMtu;
    this.lastFrame = index;
  }

  /** Check request packet `p` (frame `index`) and book what it leaves owed. */
  onRequest(p: Packet, op: OpcodeInfo, index: number): void {
    const psn = p.bth!.psn;
    const idle = this.msgOp === null && this.qHead === this.queue.length &&
      this.readResp === null && this.pendingRead === null;
    let retransmission = false;
    // Went on after an ACK that covered the rest of a go-back: a resumption
    // at whatever packet this is, as a retransmission is.
    let resumed = false;

    // PSN order.
    if (this.pendingRead !== null && this.pmtu > 0) this.sizePendingRead(); // MTU learned meanwhile
    if (this.pendingRead !== null) {
      retransmission = this.resolvePendingRead(psn, index);
    } else if (this.expectedPsn >= 0) {
      const d = psnDiff(psn, this.expectedPsn);
      if (d !== 0 && idle && Math.abs(d) >= this.ctx.newConnectionPsnJump) {
        this.reset(); // a new QP took this number: its PSNs start anywhere
      } else if (d > 0 && this.skipAcknowledged(psn)) {
        resumed = true;
      } else if (d > 0) {
        this.ctx.log.report(
          index,
          this.name,
          "psn-order",
          `PSN ${psn} skips ${d} PSN(s): expected ${this.expectedPsn}`,
        );
      } else if (d < 0) {
        retransmission = true;
      }
    }
    if (retransmission) this.lastRetransmitFrame = index;
    // Sent before the NAK reached the requester: the responder discards it
    // unless the NAKed PSN reached it again first, so it is owed no answer
    // until it is resent.
    const sentBeforeNak = this.restartAt >= 0 && psn !== this.restartAt &&
      psn === this.expectedPsn;
    if (this.restartAt >= 0 && (psn === this.restartAt || psn !== this.expectedPsn)) {
      // Packets already in flight when the NAK came continue in order; the first
      // one that does not continue goes back to the NAKed PSN or before it: the
      // capture is taken before the receiver's losses, so the requester may have
      // lost that NAK or earlier ACKs and atomic/READ responses, and then
      // retries from its oldest unanswered request (the responder answers the
      // duplicates). Resuming after the NAKed PSN loses packets.
      if (psnDiff(psn, this.restartAt) > 0) {
        this.ctx.log.report(
          index,
          this.name,
          "psn-order",
          `after the NAK of PSN ${this.restartAt} the requester resumed at PSN ${psn}`,
        );
      }
      this.restartAt = -1;
    }
    this.lastFrame = index;

    // Opcode sequence.
    this.checkSequence(p, op, retransmission || resumed, index);
    checkPayloadMtu(this.ctx.log, p, op, this.pmtu, index, this.name, this);

    // Next expected PSN, and what stays outstanding until answered.
    let span = 1;
    let unknownSpan = false;
    if (op.operation === "RDMA_READ_REQUEST") {
      const len = p.reth ? p.reth.dmaLen : 0;
      if (this.pmtu > 0) span = Math.max(1, Math.ceil(len / this.pmtu));
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
      this.pendingRead = entry;
      this.expectedPsn = -1;
    } else {
      this.expectedPsn = psnAdd(psn, span);
    }
    if (this.transport !== "RC" || this.fatal) return;
    const isNew = this.lastReqPsn < 0 || psnDiff(psn, this.lastReqPsn) > 0;
    if (isNew) {
      if (sentBeforeNak) entry.tentative = true;
      this.queue.push(entry);
      this.lastReqPsn = unknownSpan ? psn : entry.psnEnd;
    } else if (entry.kind === "read") {
      this.onReadRetransmission(entry);
    } else {
      this.resentRequest(psn);
    }
  }

  /** End of capture: a message still open never ended. */
  finishMessage(): void {
    if (this.msgOp !== null && !this.msgResent) {
      this.ctx.log.report(
        this.msgFrame,
        this.name,
        "opcode-sequence",
        `the ${this.msgOp} message begun at frame ${this.msgFrame} never ends (no LAST)`,
      );
    }
  }

  /**
   * A requester going back over what it sent before (a timeout, a NAK) may
   * stop going back once an ACK covers the rest: it then goes on after the
   * last acknowledged PSN (IBA 9.7.5.1.2: an ACK acknowledges every request
   * up to its PSN). A jump forward is legal when it reaches no further than
   * one past the newest request ever sent and nothing before it is still
   * owed an answer (a request sent before a NAK, discarded by the responder,
   * is still owed: skipping it loses it).
   */
  private skipAcknowledged(psn: number): boolean {
    if (this.lastReqPsn < 0 || psnDiff(psn, psnAdd(this.lastReqPsn, 1)) > 0) return false;
    const h = this.head();
    return h === undefined || psnDiff(h.psnStart, psn) >= 0;
  }

  // ---- the outstanding queue ------------------------------------------------------------------

  /** The oldest request still owed a response. */
  head(): Outstanding | undefined {
    return this.qHead < this.queue.length ? this.queue[this.qHead] : undefined;
  }

  /** Whether the newest outstanding request is a READ whose PSN span is not known yet. */
  hasOpenRead(): boolean {
    const last = this.queue.length > this.qHead ? this.queue[this.queue.length - 1] : undefined;
    return last !== undefined && last.kind === "read" && last.psnEnd < 0;
  }

  /** Drop consumed queue slots now and then so the queue does not grow with the capture. */
  compactQueue(): void {
    if (this.qHead === this.queue.length) {
      this.queue.length = 0;
      this.qHead = 0;
    } else if (this.qHead > 1024) {
      this.queue.splice(0, this.qHead);
      this.qHead = 0;
    }
  }

  /** Forget the oldest answered request once enough are remembered for duplicates. */
  trimAnswered(): void {
    if (this.answered.size > 256) {
      const oldest = this.answered.keys().next().value;
      if (oldest !== undefined) this.answered.delete(oldest);
    }
  }

  // ---- requests -------------------------------------------------------------------------------

  /** A request sent again: if it was tentative (see Outstanding), it is owed an answer again. */
  private resentRequest(psn: number): void {
    for (let i = this.qHead; i < this.queue.length; i++) {
      const q = this.queue[i];
      if (q.psnStart === psn) {
        q.tentative = false;
        return;
      }
    }
  }

  /** Forget the flow's history: its QP number now belongs to a new connection. */
  private reset(): void {
    this.expectedPsn = -1;
    this.pendingRead = null;
    this.msgOp = null;
    this.queue.length = 0;
    this.qHead = 0;
    this.lastReqPsn = -1;
    this.answered.clear();
    this.readResp = null;
    this.fatal = false;
    this.restartAt = -1;
    this.pmtu = this.ctx.pathMtu;
    this.ctx.unpair(this);
  }

  /**
   * A retransmitted READ, whole or for the tail of an earlier one (IBA: a READ
   * retried from a PSN inside the response carries the VA and length of the
   * rest). The responder answers it as a duplicate, with a response starting
   * (FIRST/ONLY) at the new PSN; the response to the earlier READ may still be
   * in flight and is judged against that earlier READ, not this one.
   */
  private onReadRetransmission(e: Outstanding): void {
    for (let i = this.qHead; i < this.queue.length; i++) {
      const q = this.queue[i];
      if (q.kind !== "read") continue;
      if (q.psnStart === e.psnStart) {
        q.frameIndex = e.frameIndex;
        q.tentative = false;
        this.answered.set(e.psnStart, e); // its response may also come twice
        return;
      }
      if (
        q.psnEnd >= 0 && psnDiff(e.psnStart, q.psnStart) > 0 && psnDiff(e.psnStart, q.psnEnd) <= 0
      ) {
        e.reReadOf = q;
        q.tentative = false;
        this.answered.set(e.psnStart, e);
        return;
      }
    }
    this.answered.set(e.psnStart, e); // a duplicate of an answered READ: its response is a duplicate too
  }

  /** The path MTU became known (from a response) after a READ of unknown span: size it now. */
  private sizePendingRead(): void {
    const r = this.pendingRead!;
    this.pendingRead = null;
    r.psnEnd = psnAdd(r.psnStart, Math.max(1, Math.ceil(r.dmaLen / this.pmtu)) - 1);
    this.expectedPsn = psnAdd(r.psnEnd, 1);
    this.extendLastRequest(r);
  }

  /**
   * The PSN after a READ whose packet count is unknown (path MTU not yet
   * known): it must be the READ's PSN plus ceil(len / MTU) for some IB MTU.
   * Returns whether the PSN is a retransmission.
   */
  private resolvePendingRead(psn: number, index: number): boolean {
    const r = this.pendingRead!;
    this.pendingRead = null;
    const d = psnDiff(psn, r.psnStart);
    if (d <= 0) {
      this.expectedPsn = -1;
      return true;
    }
    const fits = VALID_MTUS.filter((m) => Math.max(1, Math.ceil(r.dmaLen / m)) === d);
    if (fits.length === 0) {
      this.ctx.log.report(
        index,
        this.name,
        "psn-order",
        `PSN ${psn} follows a READ of ${r.dmaLen} bytes at PSN ${r.psnStart}; ` +
          `no path MTU makes that READ consume ${d} PSN(s)`,
      );
    } else {
      if (fits.length === 1) this.pmtu = fits[0];
      r.psnEnd = psnAdd(psn, -1);
      this.extendLastRequest(r);
    }
    return false;
  }

  /** A READ booked as the last request before its span was known now ends at its `psnEnd`. */
  private extendLastRequest(r: Outstanding): void {
    if (this.transport === "RC" && !this.fatal && r.psnStart === this.lastReqPsn) {
      this.lastReqPsn = r.psnEnd;
    }
  }

  // ---- opcode sequence ------------------------------------------------------------------------

  private checkSequence(p: Packet, op: OpcodeInfo, retrans: boolean, index: number): void {
    const pos = op.position;
    const msgOp = op.operation === "SEND" || op.operation === "RDMA_WRITE" ? op.operation : null;
    if (retrans) {
      // Go-back-N resumes at any packet of a message: take the state the packet implies.
      this.msgOp = msgOp !== null && (pos === "FIRST" || pos === "MIDDLE") ? msgOp : null;
      this.msgResent = true;
      if (pos === "FIRST") this.startMessage(p);
      else this.writeLen = -1; // resumed mid-message: the bytes sent before are not known here
      this.msgFrame = index;
      return;
    }
    if (pos === "FIRST") {
      this.closeOpenMessage(op, index);
      this.msgResent = false;
      this.msgOp = msgOp;
      this.msgFrame = index;
      this.startMessage(p);
    } else if (pos === "MIDDLE" || pos === "LAST") {
      if (this.msgOp !== msgOp) {
        this.ctx.log.report(
          index,
          this.name,
          "opcode-sequence",
          this.msgOp === null
            ? `${op.name} without a FIRST (no message is open)`
            : `${op.name} inside a ${this.msgOp} message begun at frame ${this.msgFrame}`,
        );
        this.writeLen = -1; // length unknown: skip the WRITE length check for this message
      } else {
        this.writeBytes += p.payloadLength;
      }
      this.msgOp = pos === "MIDDLE" ? msgOp : null;
      if (pos === "LAST" && msgOp === "RDMA_WRITE") this.checkWriteLength(index);
    } else {
      this.closeOpenMessage(op, index);
      if (op.operation === "RDMA_WRITE" && p.reth && p.reth.dmaLen !== p.payloadLength) {
        this.ctx.log.report(
          index,
          this.name,
          "write-length",
          `${op.name} carries ${p.payloadLength} bytes but its RETH DMA length is ${p.reth.dmaLen}`,
        );
      }
      if ((op.operation === "COMPARE_SWAP" || op.operation === "FETCH_ADD") && p.atomicEth) {
        if ((p.atomicEth.va & 7n) !== 0n) {
          this.ctx.log.report(
            index,
            this.name,
            "transport",
            `${op.name} address 0x${p.atomicEth.va.toString(16)} is not 8-byte aligned`,
          );
        }
      }
    }
  }

  /** A FIRST or ONLY packet `op` starts a message: one still open lacks its LAST. */
  private closeOpenMessage(op: OpcodeInfo, index: number): void {
    if (this.msgOp === null) return;
    this.ctx.log.report(
      index,
      this.name,
      "opcode-sequence",
      `${op.name} while the ${this.msgOp} message begun at frame ${this.msgFrame} has no LAST yet`,
    );
    this.msgOp = null;
  }

  private startMessage(p: Packet): void {
    this.writeLen = p.reth ? p.reth.dmaLen : -1;
    this.writeBytes = p.payloadLength;
  }

  private checkWriteLength(index: number): void {
    if (this.writeLen >= 0 && this.writeBytes !== this.writeLen) {
      this.ctx.log.report(
        index,
        this.name,
        "write-length",
        `RDMA WRITE begun at frame ${this.msgFrame} carried ${this.writeBytes} bytes but its RETH DMA length is ${this.writeLen}`,
      );
    }
  }
}

/** Flows keyed by three numbers (two endpoint ids and a QP key), without a string per lookup. */
export class FlowIndex {
  private readonly m = new Map<number, Map<number, Map<number, RequestFlow>>>();

  /** The flow under (a, b, c), if any. */
  get(a: number, b: number, c: number): RequestFlow | undefined {
    return this.m.get(a)?.get(b)?.get(c);
  }

  /** File `f` under (a, b, c). */
  set(a: number, b: number, c: number, f: RequestFlow): void {
    let mb = this.m.get(a);
    if (mb === undefined) this.m.set(a, mb = new Map());
    let mc = mb.get(b);
    if (mc === undefined) mb.set(b, mc = new Map());
    mc.set(c, f);
  }

  /** Remove every key `f` is filed under. */
  delete(f: RequestFlow): void {
    for (const mb of this.m.values()) {
      for (const mc of mb.values()) for (const [k, x] of mc) if (x === f) mc.delete(k);
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
