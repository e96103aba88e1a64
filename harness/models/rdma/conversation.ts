/**
 * A synthetic, standard-conforming RC conversation between two endpoints, as a
 * switch would capture it: SENDs and WRITEs segmented at the path MTU, READs
 * with their (multi-packet) responses, atomics with ATOMIC_ACKNOWLEDGE, and
 * ACKs (coalesced when asked). Used by the tests (a clean conversation the
 * checker must accept, then corrupted one way at a time) and by the bench.
 * Frames from endpoint `a` are recorded on interface 0, from `b` on 1.
 */
import { prng, randBytes } from "../../prng.ts";
import { buildIbFrame, buildRoceFrame, type TransportSpec } from "./build.ts";
import { type CaptureFrame, LINKTYPE_ETHERNET, LINKTYPE_INFINIBAND } from "./frame.ts";
import { OP } from "./opcodes.ts";
import { ackSyndrome, nakSyndrome, psnAdd, rnrNakSyndrome } from "./transport.ts";

/** One side of the conversation. */
export interface RcEndpoint {
  mac: number;
  /** IPv4 address as a 32-bit number (RoCEv2). */
  ip: number;
  /** LID (native InfiniBand). */
  lid: number;
  /** This endpoint's QP number (the peer sends to it). */
  qpn: number;
  /** First PSN this endpoint sends with. */
  startPsn: number;
}

/** Knobs of {@link RcConversation}. */
export interface RcConversationOptions {
  /** 1 = RoCEv2 over Ethernet (default), 247 = native InfiniBand. */
  linkType?: number;
  a?: Partial<RcEndpoint>;
  b?: Partial<RcEndpoint>;
  /** Path MTU in bytes (256..4096, default 1024). */
  pmtu?: number;
  /** Seed of the payload bytes. */
  seed?: number;
}

/** Which endpoint acts. */
export type Side = "a" | "b";

/** Per-send knobs. */
export interface MessageOptions {
  /** Immediate data (SEND/WRITE with immediate). */
  imm?: number;
  /** Whether the peer acknowledges right away (default true); otherwise call {@link RcConversation.ack}. */
  ack?: boolean;
}

/** Builds the frames of an RC conversation; read them from `frames`. */
export class RcConversation {
  /** Every frame so far, in capture order. */
  readonly frames: CaptureFrame[] = [];
  readonly pmtu: number;
  readonly linkType: number;
  private readonly ep: Record<Side, RcEndpoint>;
  private readonly nextPsn: Record<Side, number>;
  /** Last request PSN each side has sent (what an ACK from the peer covers). */
  private readonly lastPsn: Record<Side, number>;
  private readonly msn: Record<Side, number> = { a: 0, b: 0 };
  private readonly rng: () => number;
  private va = 0x10000n;
  private ns = 0n;

  /** Start a conversation; nothing is on the wire until an operation is called. */
  constructor(opts: RcConversationOptions = {}) {
    this.linkType = opts.linkType ?? LINKTYPE_ETHERNET;
    this.pmtu = opts.pmtu ?? 1024;
    this.rng = prng(opts.seed ?? 1);
    this.ep = {
      a: { mac: 0x020000000001, ip: 0x0a000001, lid: 1, qpn: 0x11, startPsn: 100, ...opts.a },
      b: { mac: 0x020000000002, ip: 0x0a000002, lid: 2, qpn: 0x12, startPsn: 5000, ...opts.b },
    };
    this.nextPsn = { a: this.ep.a.startPsn, b: this.ep.b.startPsn };
    this.lastPsn = { a: psnAdd(this.ep.a.startPsn, -1), b: psnAdd(this.ep.b.startPsn, -1) };
  }

  /** A SEND of `len` bytes from `from`, segmented at the path MTU. */
  send(from: Side, len: number, o: MessageOptions = {}): this {
    this.message(from, len, "SEND", o);
    return this;
  }

  /** An RDMA WRITE of `len` bytes from `from`, segmented at the path MTU. */
  write(from: Side, len: number, o: MessageOptions = {}): this {
    this.message(from, len, "RDMA_WRITE", o);
    return this;
  }

  /** An RDMA READ of `len` bytes by `from`, and the peer's response packets. */
  read(from: Side, len: number): this {
    const to = peer(from);
    const psn = this.nextPsns(from, Math.max(1, Math.ceil(len / this.pmtu)));
    const reth = { va: this.nextVa(), rkey: 0x1234, dmaLen: len };
    this.emit(from, { bth: { opcode: OP.RC_RDMA_READ_REQUEST, destQp: 0, psn, ackReq: 1 }, reth });
    const n = Math.max(1, Math.ceil(len / this.pmtu));
    this.msn[to] = (this.msn[to] + 1) & 0xffffff;
    for (let i = 0; i < n; i++) {
      const chunk = Math.min(this.pmtu, len - i * this.pmtu);
      const opcode = n === 1
        ? OP.RC_RDMA_READ_RESPONSE_ONLY
        : i === 0
        ? OP.RC_RDMA_READ_RESPONSE_FIRST
        : i === n - 1
        ? OP.RC_RDMA_READ_RESPONSE_LAST
        : OP.RC_RDMA_READ_RESPONSE_MIDDLE;
      const withAeth = opcode !== OP.RC_RDMA_READ_RESPONSE_MIDDLE;
      this.emit(to, {
        bth: { opcode, destQp: 0, psn: psnAdd(psn, i) },
        aeth: withAeth ? { syndrome: ackSyndrome(), msn: this.msn[to] } : undefined,
        payload: randBytes(this.rng, Math.max(0, chunk)),
      });
    }
    return this;
  }

  /** A compare-and-swap (`cas`) or fetch-and-add (`fadd`) by `from`, and its ATOMIC_ACKNOWLEDGE. */
  atomic(from: Side, kind: "cas" | "fadd"): this {
    const to = peer(from);
    const psn = this.nextPsns(from, 1);
    this.emit(from, {
      bth: {
        opcode: kind === "cas" ? OP.RC_COMPARE_SWAP : OP.RC_FETCH_ADD,
        destQp: 0,
        psn,
        ackReq: 1,
      },
      atomicEth: { va: this.nextVa() & ~7n, rkey: 0x1234, swapAdd: 5n, compare: 0n },
    });
    this.msn[to] = (this.msn[to] + 1) & 0xffffff;
    this.emit(to, {
      bth: { opcode: OP.RC_ATOMIC_ACKNOWLEDGE, destQp: 0, psn },
      aeth: { syndrome: ackSyndrome(), msn: this.msn[to] },
      atomicAckEth: { origRemoteData: 42n },
    });
    return this;
  }

  /** `by` acknowledges everything the peer has sent so far with one (coalesced) ACK. */
  ack(by: Side): this {
    const from = peer(by);
    this.emit(by, {
      bth: { opcode: OP.RC_ACKNOWLEDGE, destQp: 0, psn: this.lastPsn[from] },
      aeth: { syndrome: ackSyndrome(), msn: this.msn[by] },
    });
    return this;
  }

  /** `by` NAKs PSN `psn` of the peer's requests with a NAK code (or an RNR NAK when `rnr`). */
  nak(by: Side, psn: number, code: number, rnr = false): this {
    this.emit(by, {
      bth: { opcode: OP.RC_ACKNOWLEDGE, destQp: 0, psn },
      aeth: { syndrome: rnr ? rnrNakSyndrome(code) : nakSyndrome(code), msn: this.msn[by] },
    });
    return this;
  }

  /** PSN the side will send next. */
  psnOf(side: Side): number {
    return this.nextPsn[side];
  }

  /** Rewind a side's next PSN (a retransmission starts from here). */
  rewind(side: Side, psn: number): this {
    this.nextPsn[side] = psn & 0xffffff;
    return this;
  }

  /** Emit one raw packet from `from` to the peer's QP (destQp is filled in). */
  emit(from: Side, t: TransportSpec): this {
    const to = peer(from);
    const spec: TransportSpec = { ...t, bth: { ...t.bth, destQp: this.ep[to].qpn } };
    const data = this.linkType === LINKTYPE_INFINIBAND
      ? buildIbFrame({ ...spec, lrh: { slid: this.ep[from].lid, dlid: this.ep[to].lid } })
      : buildRoceFrame({
        ...spec,
        srcMac: this.ep[from].mac,
        dstMac: this.ep[to].mac,
        srcIp: this.ep[from].ip,
        dstIp: this.ep[to].ip,
        srcPort: 0xc000 | (this.ep[from].qpn & 0x3fff),
      });
    this.ns += 1000n;
    this.frames.push({
      data,
      linkType: this.linkType,
      interfaceId: from === "a" ? 0 : 1,
      timestampNs: this.ns,
    });
    return this;
  }

  private message(from: Side, len: number, kind: "SEND" | "RDMA_WRITE", o: MessageOptions): void {
    const to = peer(from);
    const n = Math.max(1, Math.ceil(len / this.pmtu));
    const psn = this.nextPsns(from, n);
    const reth = { va: this.nextVa(), rkey: 0x1234, dmaLen: len };
    const imm = o.imm !== undefined;
    for (let i = 0; i < n; i++) {
      const chunk = Math.min(this.pmtu, len - i * this.pmtu);
      const pos = n === 1 ? "ONLY" : i === 0 ? "FIRST" : i === n - 1 ? "LAST" : "MIDDLE";
      const withImm = imm && (pos === "LAST" || pos === "ONLY");
      const name = `RC_${kind}_${pos}${withImm ? "_WITH_IMMEDIATE" : ""}` as keyof typeof OP;
      const withReth = kind === "RDMA_WRITE" && (pos === "FIRST" || pos === "ONLY");
      this.emit(from, {
        bth: { opcode: OP[name], destQp: 0, psn: psnAdd(psn, i), ackReq: i === n - 1 ? 1 : 0 },
        reth: withReth ? reth : undefined,
        immDt: withImm ? o.imm : undefined,
        payload: randBytes(this.rng, Math.max(0, chunk)),
      });
    }
    this.msn[to] = (this.msn[to] + 1) & 0xffffff;
    if (o.ack !== false) this.ack(to);
  }

  /**
   * Reserve `n` PSNs for a request from `side` (for hand-made packets sent
   * with {@link emit}); returns the first. A later {@link ack} covers them.
   */
  nextPsns(side: Side, n: number): number {
    const psn = this.nextPsn[side];
    this.nextPsn[side] = psnAdd(psn, n);
    this.lastPsn[side] = psnAdd(psn, n - 1);
    return psn;
  }

  private nextVa(): bigint {
    this.va += 0x1000n;
    return this.va;
  }
}

function peer(s: Side): Side {
  return s === "a" ? "b" : "a";
}
