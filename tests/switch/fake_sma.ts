/**
 * A fake InfiniBand end node for the switch's subnet manager: one HCA port
 * behind a SEQPACKET connection, with a subnet management agent written from
 * IBA vol. 1 ch. 13-14 (not from the switch's C). It answers directed-route
 * SubnGet/SubnSet of NodeInfo, NodeDescription and PortInfo with a D=1
 * GetResp to DLID 0xFFFF, honours PortInfo Set the way an SMA does (LID, SM
 * LID, prefix, state transitions INIT → ARMED → ACTIVE only), and can send SA
 * requests from its QP1. Every frame it gets is checked (LRH, VCRC, ICRC,
 * directed-route hop fields); anything wrong is counted in `rejected` and
 * not answered, as a real HCA would drop it.
 */
import { SeqpacketClosedError, SeqpacketSocket } from "../../harness/fabric/seqpacket.ts";
import {
  ibIcrc,
  ibVcrc,
  readIcrc,
  readVcrc,
  writeIcrc,
  writeVcrc,
} from "../../harness/models/rdma/icrc.ts";
import {
  decodePortInfo,
  encodeNodeInfo,
  GSI_QKEY,
  MAD_BYTES,
  PORT_STATE,
} from "../../harness/models/rdma/mad.ts";
import { rd16, rd24, rd32, rd64, wr16, wr24, wr32, wr64 } from "../../harness/models/rdma/bytes.ts";

/** Addressing of one UD packet carrying a MAD. */
export interface UdAddress {
  vl: number;
  dlid: number;
  slid: number;
  dqp: number;
  sqp: number;
  qkey: number;
}

/** LRH + BTH + DETH + MAD + ICRC + VCRC (no GRH). */
export const MAD_FRAME_BYTES = 8 + 12 + 8 + MAD_BYTES + 4 + 2;

/** Build a UD SEND_ONLY frame around a 256-byte MAD (docs/switch.md, "The frames"). */
export function madFrame(a: UdAddress, mad: Uint8Array, psn = 0): Uint8Array {
  const f = new Uint8Array(MAD_FRAME_BYTES);
  f[0] = a.vl << 4;
  f[1] = 2;
  wr16(f, 2, a.dlid);
  wr16(f, 4, (MAD_FRAME_BYTES - 2) / 4);
  wr16(f, 6, a.slid);
  f[8] = 0x64;
  wr16(f, 10, 0xffff);
  wr24(f, 13, a.dqp);
  wr24(f, 17, psn & 0xffffff);
  wr32(f, 20, a.qkey);
  wr24(f, 25, a.sqp);
  f.set(mad, 28);
  const icrcOff = MAD_FRAME_BYTES - 6;
  writeIcrc(f, icrcOff, ibIcrc(f, icrcOff));
  writeVcrc(f, MAD_FRAME_BYTES - 2, ibVcrc(f, MAD_FRAME_BYTES - 2));
  return f;
}

/** Parse a MAD frame; null when any check fails. */
export function parseMadFrame(f: Uint8Array): { a: UdAddress; mad: Uint8Array } | null {
  if (f.length !== MAD_FRAME_BYTES || (f[1] & 3) !== 2 || (f[0] & 0xf) !== 0) return null;
  if ((rd16(f, 4) & 0x7ff) * 4 + 2 !== f.length) return null;
  if (readVcrc(f, f.length - 2) !== ibVcrc(f, f.length - 2)) return null;
  if (readIcrc(f, f.length - 6) !== ibIcrc(f, f.length - 6)) return null;
  if (f[8] !== 0x64 || (f[9] & 0x3f) !== 0 || rd16(f, 10) !== 0xffff) return null;
  return {
    a: {
      vl: f[0] >> 4,
      dlid: rd16(f, 2),
      slid: rd16(f, 6),
      dqp: rd24(f, 13),
      qkey: rd32(f, 20),
      sqp: rd24(f, 25),
    },
    mad: f.slice(28, 28 + MAD_BYTES),
  };
}

/** Options of a fake node. */
export interface FakeNodeOptions {
  /** Never answer anything (a vnic whose guest has not loaded the driver). */
  silent?: boolean;
}

const NODE_DESC = 0x0010, NODE_INFO = 0x0011, PORT_INFO = 0x0015;

/** One fake end node on one switch port. */
export class FakeNode {
  /** Frames refused by the checks (never answered). */
  rejected = 0;
  /** SMPs answered. */
  answered = 0;
  /** Every frame received from the switch, in order. */
  readonly received: Uint8Array[] = [];
  /** SA answers received, by TID. */
  readonly saAnswers = new Map<bigint, Uint8Array>();
  #sock: SeqpacketSocket;
  #pi: Uint8Array;
  #tid = 1n;
  #closed = false;

  /** Connect to the fabric's socket with port GUID `guid` and NodeDescription `desc`. */
  constructor(
    socketPath: string,
    readonly guid: bigint,
    readonly desc: string,
    readonly opts: FakeNodeOptions = {},
  ) {
    this.#sock = SeqpacketSocket.connect(socketPath);
    this.#pi = FakeNode.#initialPortInfo();
  }

  static #initialPortInfo(): Uint8Array {
    const pi = new Uint8Array(64);
    pi[28] = 1; // LocalPortNum
    pi[29] = 2; // LinkWidthEnabled 4x
    pi[30] = 2; // LinkWidthSupported
    pi[31] = 2; // LinkWidthActive
    pi[32] = 0x10 | PORT_STATE.INIT; // LinkSpeedSupported 1, PortState INIT
    pi[33] = 0x52; // PortPhysicalState LinkUp (5), LinkDownDefault Polling (2)
    pi[35] = 0x11;
    pi[36] = 0x50; // NeighborMTU 4096
    pi[41] = 0x05; // MTUCap 4096
    pi[43] = 0x10; // OperationalVLs 1
    return pi;
  }

  /** The port's PortInfo as the SMA holds it (decoded). */
  get portInfo() {
    return decodePortInfo(this.#pi);
  }

  /** The port's LID (0 until the SM sets one). */
  get lid(): number {
    return rd16(this.#pi, 16);
  }

  /** A driver reload: back to INIT with LID 0, SM LID 0, without the link going down. */
  reset(): void {
    this.#pi = FakeNode.#initialPortInfo();
  }

  /** Answer everything waiting; false once the switch has closed the connection. */
  serve(): boolean {
    if (this.#closed) return false;
    let frames: Uint8Array[];
    try {
      frames = this.#sock.drain();
    } catch (e) {
      if (!(e instanceof SeqpacketClosedError)) throw e;
      this.#closed = true;
      return false;
    }
    for (const f of frames) {
      this.received.push(f);
      if (!this.opts.silent) this.#handle(f);
    }
    return true;
  }

  /** Wait up to `ms` for the switch to close this node's connection. */
  waitClosed(ms: number): boolean {
    this.#closed = this.#sock.waitClosed(ms);
    return this.#closed;
  }

  /** Close the node's connection. */
  close(): void {
    this.#closed = true;
    this.#sock.close();
  }

  #handle(f: Uint8Array): void {
    const p = parseMadFrame(f);
    if (!p) {
      this.rejected++;
      return;
    }
    const { a, mad } = p;
    if (a.dqp === 1 && a.vl !== 15 && mad[1] === 0x03 && (mad[3] & 0x80)) {
      this.saAnswers.set(rd64(mad, 8), mad);
      return;
    }
    if (a.dqp !== 0 || a.vl !== 15 || !this.#smpOk(mad)) {
      this.rejected++;
      return;
    }
    this.#answerSmp(mad);
  }

  /**
   * IBA C14-9: a directed-route SMP arriving at its destination CA has D = 0,
   * hop pointer = hop count (here 1: one switch hop), DrSLID/DrDLID
   * permissive, M_Key 0 (ours), BaseVersion 1, ClassVersion 1, a request
   * method (Get or Set).
   */
  #smpOk(mad: Uint8Array): boolean {
    const hopPtr = mad[6], hopCnt = mad[7];
    return mad[0] === 1 && mad[1] === 0x81 && mad[2] === 1 &&
      (mad[3] === 0x01 || mad[3] === 0x02) && (mad[4] & 0x80) === 0 && hopCnt === 1 &&
      hopPtr === hopCnt && rd64(mad, 24) === 0n && rd16(mad, 32) === 0xffff &&
      rd16(mad, 34) === 0xffff && mad[128 + 1] !== 0;
  }

  #answerSmp(req: Uint8Array): void {
    const r = req.slice();
    const attr = rd16(req, 16), mod = rd32(req, 20), set = req[3] === 0x02;
    let status = 0;
    const data = new Uint8Array(64);
    if (attr === NODE_INFO && !set) {
      encodeNodeInfo({
        baseVersion: 1,
        classVersion: 1,
        nodeType: 1,
        numPorts: 1,
        systemImageGuid: this.guid,
        nodeGuid: this.guid,
        portGuid: this.guid,
        partitionCap: 1,
        deviceId: 0xc0a5,
        revision: 1,
        localPortNum: 1,
        vendorId: 0x0002c9,
      }, data);
    } else if (attr === NODE_DESC && !set) {
      data.set(new TextEncoder().encode(this.desc).subarray(0, 64));
    } else if (attr === PORT_INFO && mod === 1) {
      if (set) status = this.#setPortInfo(req.subarray(64, 128));
      data.set(this.#pi);
    } else {
      status = 0x001c; // invalid attribute or modifier
    }
    r[3] = 0x81; // GetResp
    wr16(r, 4, 0x8000 | status); // D = 1
    r[128 + 64 + 1] = 1; // return path[1]: the port it came in on
    // C14-9:2 advanced the hop pointer to 2 on arrival; C14-13:1 takes it
    // back to 1 as the answer leaves.
    r[6] = 1;
    r.set(data, 64);
    this.answered++;
    this.#send(madFrame({
      vl: 15,
      dlid: 0xffff,
      slid: this.lid || 0xffff,
      dqp: 0,
      sqp: 0,
      qkey: 0,
    }, r));
  }

  /** SubnSet(PortInfo): the fields an SMA honours; a bad state transition is 0x001C. */
  #setPortInfo(d: Uint8Array): number {
    const want = d[32] & 0xf;
    const cur = this.#pi[32] & 0xf;
    const ok = want === 0 || want === cur ||
      (want === PORT_STATE.ARMED && cur === PORT_STATE.INIT) ||
      (want === PORT_STATE.ACTIVE && cur === PORT_STATE.ARMED) || want === PORT_STATE.DOWN;
    if (!ok) return 0x001c;
    const lid = rd16(d, 16);
    if (lid === 0 || lid >= 0xc000) return 0x001c;
    const pi = this.#pi;
    pi.set(d.subarray(0, 8), 0); // M_Key
    pi.set(d.subarray(8, 16), 8); // GidPrefix
    wr16(pi, 16, lid);
    wr16(pi, 18, rd16(d, 18)); // MasterSMLID
    pi[34] = (pi[34] & 0xf8) | (d[34] & 7); // LMC
    if (d[36] >> 4) pi[36] = (d[36] & 0xf0) | (pi[36] & 0xf); // NeighborMTU
    pi[51] = (pi[51] & 0xe0) | (d[51] & 0x1f); // SubnetTimeOut
    if (want && want !== PORT_STATE.DOWN) pi[32] = (pi[32] & 0xf0) | want;
    return 0;
  }

  #send(f: Uint8Array): void {
    if (this.#closed) return;
    try {
      this.#sock.send(f);
    } catch (e) {
      if (!(e instanceof SeqpacketClosedError)) throw e;
      this.#closed = true;
    }
  }

  /**
   * Send an SA request from QP1 to the SM LID: `method`, `attr`, component
   * `mask` and up to 200 bytes of record. Returns the TID to wait for.
   */
  saRequest(
    smLid: number,
    method: number,
    attr: number,
    mask: bigint,
    record: Uint8Array,
    classVersion = 2,
  ): bigint {
    const mad = new Uint8Array(MAD_BYTES);
    mad[0] = 1;
    mad[1] = 0x03;
    mad[2] = classVersion;
    mad[3] = method;
    const tid = (0xfa4en << 32n) | this.#tid++;
    wr64(mad, 8, tid);
    wr16(mad, 16, attr);
    wr64(mad, 48, mask);
    mad.set(record.subarray(0, 200), 56);
    this.#send(madFrame({
      vl: 0,
      dlid: smLid,
      slid: this.lid || 0xffff,
      dqp: 1,
      sqp: 1,
      qkey: GSI_QKEY,
    }, mad));
    return tid;
  }

  /** Send any frame (garbage tests). */
  sendRaw(f: Uint8Array): void {
    this.#send(f);
  }
}
