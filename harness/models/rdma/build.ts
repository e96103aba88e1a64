/**
 * Building whole frames from header values: RoCEv2 over Ethernet (IPv4 or
 * IPv6) and native InfiniBand. Lengths, the IPv4 header checksum, the pad,
 * the ICRC and the VCRC are filled in unless the spec overrides them, so tests
 * can build a correct frame and then break exactly one thing.
 */
import { wr16 } from "./bytes.ts";
import { encodeEthernet, ETHERTYPE_IPV4, ETHERTYPE_IPV6, type VlanTag } from "./ethernet.ts";
import { decodeFrame, LINKTYPE_ETHERNET, LINKTYPE_INFINIBAND } from "./frame.ts";
import { encodeExtHeaders, type ExtHeaderFields } from "./ext_headers.ts";
import { ibIcrc, ibVcrc, roceIcrc, writeIcrc, writeVcrc } from "./icrc.ts";
import { encodeIpv4, encodeIpv6, IPPROTO_UDP, ipv4HeaderChecksum } from "./ip.ts";
import { opcodeInfo } from "./opcodes.ts";
import {
  encodeGrh,
  encodeLrh,
  GRH_BYTES,
  GRH_NEXT_HEADER_BTH,
  LNH_IBA_GLOBAL,
  LNH_IBA_LOCAL,
  LRH_BYTES,
} from "./route.ts";
import { type Bth, BTH_BYTES, encodeBth, ICRC_BYTES, VCRC_BYTES } from "./transport.ts";
import { encodeUdp, ROCEV2_UDP_PORT, UDP_BYTES } from "./udp.ts";

/** The transport part of a packet: BTH, the extended headers its opcode needs, payload. */
export interface TransportSpec extends ExtHeaderFields {
  /** BTH fields; everything but opcode, destQp and psn defaults (P_Key 0xFFFF, pad as needed). */
  bth: Partial<Bth> & { opcode: number; destQp: number; psn: number };
  payload?: Uint8Array;
  /** Pad bytes appended after the payload (default: up to the next multiple of 4). */
  padBytes?: number;
}

/** A RoCEv2 frame: Ethernet, IP, UDP and the transport part. */
export interface RoceFrameSpec extends TransportSpec {
  srcMac?: number;
  dstMac?: number;
  vlans?: VlanTag[];
  /** IPv4 as a 32-bit number, IPv6 as 16 bytes. */
  srcIp: number | Uint8Array;
  /** Same family as `srcIp`. */
  dstIp: number | Uint8Array;
  /** IPv4 TOS or IPv6 traffic class (default 0). */
  tos?: number;
  /** IPv4 TTL or IPv6 hop limit (default 64). */
  ttl?: number;
  identification?: number;
  flowLabel?: number;
  /** Default 0xC000 (RoCEv2 source ports come from 0xC000..0xFFFF). */
  srcPort?: number;
  /** Default 4791. */
  dstPort?: number;
  /** Default 0 (not computed, as RoCEv2 senders usually leave it). */
  udpChecksum?: number;
}

/** A native InfiniBand frame: LRH, optional GRH and the transport part. */
export interface IbFrameSpec extends TransportSpec {
  lrh: { dlid: number; slid: number; sl?: number; vl?: number };
  grh?: {
    sgid: Uint8Array;
    dgid: Uint8Array;
    tClass?: number;
    flowLabel?: number;
    hopLmt?: number;
  };
}

function transportLength(t: TransportSpec): { hdr: number; pad: number; payload: number } {
  const op = opcodeInfo(t.bth.opcode);
  if (!op) throw new RangeError(`opcode 0x${t.bth.opcode.toString(16)} is not in the opcode table`);
  const payload = t.payload?.length ?? 0;
  const pad = t.padBytes ?? (4 - (payload % 4)) % 4;
  return { hdr: BTH_BYTES + op.headerBytes, pad, payload };
}

/** Write BTH, extended headers, payload and pad at `off`; returns the offset after the pad. */
function writeTransport(b: Uint8Array, off: number, t: TransportSpec): number {
  const op = opcodeInfo(t.bth.opcode)!;
  const { pad } = transportLength(t);
  encodeBth(
    {
      se: 0,
      migReq: 0,
      padCnt: pad & 3,
      tver: 0,
      pkey: 0xffff,
      fecn: 0,
      becn: 0,
      reserved6: 0,
      ackReq: 0,
      reserved7: 0,
      ...t.bth,
    },
    b,
    off,
  );
  const o = encodeExtHeaders(op, t, b, off + BTH_BYTES);
  if (t.payload) b.set(t.payload, o);
  return o + (t.payload?.length ?? 0) + pad;
}

/**
 * Build a RoCEv2 frame with correct lengths, IPv4 header checksum and ICRC.
 *
 * @example
 * ```ts
 * const f = buildRoceFrame({
 *   srcIp: parseIpv4("10.0.0.1"), dstIp: parseIpv4("10.0.0.2"),
 *   bth: { opcode: OP.RC_SEND_ONLY, destQp: 0x11, psn: 0 },
 *   payload: new Uint8Array(8),
 * });
 * ```
 */
export function buildRoceFrame(s: RoceFrameSpec): Uint8Array {
  const v6 = s.srcIp instanceof Uint8Array;
  const vlans = s.vlans ?? [];
  const ethLen = 14 + 4 * vlans.length;
  const ipLen = v6 ? 40 : 20;
  const tl = transportLength(s);
  const udpLen = UDP_BYTES + tl.hdr + tl.payload + tl.pad + ICRC_BYTES;
  const b = new Uint8Array(ethLen + ipLen + udpLen);
  encodeEthernet(
    {
      dst: s.dstMac ?? 0x020000000002,
      src: s.srcMac ?? 0x020000000001,
      vlans,
      etherType: v6 ? ETHERTYPE_IPV6 : ETHERTYPE_IPV4,
    },
    b,
    0,
  );
  if (v6) {
    if (!(s.dstIp instanceof Uint8Array)) throw new RangeError("srcIp is IPv6 but dstIp is not");
    encodeIpv6(
      {
        version: 6,
        trafficClass: s.tos ?? 0,
        flowLabel: s.flowLabel ?? 0,
        payloadLength: udpLen,
        nextHeader: IPPROTO_UDP,
        hopLimit: s.ttl ?? 64,
        src: s.srcIp as Uint8Array,
        dst: s.dstIp,
      },
      b,
      ethLen,
    );
  } else {
    if (typeof s.dstIp !== "number") throw new RangeError("srcIp is IPv4 but dstIp is not");
    encodeIpv4(
      {
        version: 4,
        ihl: 5,
        tos: s.tos ?? 0,
        totalLength: ipLen + udpLen,
        identification: s.identification ?? 0,
        flags: 2, // DF: RoCEv2 is never fragmented
        fragmentOffset: 0,
        ttl: s.ttl ?? 64,
        protocol: IPPROTO_UDP,
        checksum: 0,
        src: s.srcIp as number,
        dst: s.dstIp,
        options: new Uint8Array(0),
      },
      b,
      ethLen,
    );
    wr16(b, ethLen + 10, ipv4HeaderChecksum(b, ethLen));
  }
  const udpOff = ethLen + ipLen;
  encodeUdp(
    {
      srcPort: s.srcPort ?? 0xc000,
      dstPort: s.dstPort ?? ROCEV2_UDP_PORT,
      length: udpLen,
      checksum: s.udpChecksum ?? 0,
    },
    b,
    udpOff,
  );
  const icrcOff = writeTransport(b, udpOff + UDP_BYTES, s);
  writeIcrc(b, icrcOff, roceIcrc(b, ethLen, udpOff + UDP_BYTES, icrcOff));
  return b;
}

/** Build a native InfiniBand frame with correct PktLen, PayLen, ICRC and VCRC. */
export function buildIbFrame(s: IbFrameSpec): Uint8Array {
  const tl = transportLength(s);
  const grhLen = s.grh ? GRH_BYTES : 0;
  const icrcEnd = LRH_BYTES + grhLen + tl.hdr + tl.payload + tl.pad + ICRC_BYTES;
  if (icrcEnd % 4 !== 0) {
    throw new RangeError(
      `IB packet of ${icrcEnd} bytes is not a whole number of words; fix padBytes`,
    );
  }
  const b = new Uint8Array(icrcEnd + VCRC_BYTES);
  encodeLrh(
    {
      vl: s.lrh.vl ?? 0,
      lver: 0,
      sl: s.lrh.sl ?? 0,
      reserved2: 0,
      lnh: s.grh ? LNH_IBA_GLOBAL : LNH_IBA_LOCAL,
      dlid: s.lrh.dlid,
      reserved5: 0,
      pktLen: icrcEnd / 4,
      slid: s.lrh.slid,
    },
    b,
    0,
  );
  if (s.grh) {
    encodeGrh(
      {
        ipVer: 6,
        tClass: s.grh.tClass ?? 0,
        flowLabel: s.grh.flowLabel ?? 0,
        payLen: icrcEnd - LRH_BYTES - GRH_BYTES,
        nxtHdr: GRH_NEXT_HEADER_BTH,
        hopLmt: s.grh.hopLmt ?? 0xff,
        sgid: s.grh.sgid,
        dgid: s.grh.dgid,
      },
      b,
      LRH_BYTES,
    );
  }
  const icrcOff = writeTransport(b, LRH_BYTES + grhLen, s);
  writeIcrc(b, icrcOff, ibIcrc(b, icrcOff));
  writeVcrc(b, icrcEnd, ibVcrc(b, icrcEnd));
  return b;
}

/**
 * Recompute the ICRC (and on InfiniBand the VCRC) of `frame` in place after
 * its bytes were edited. Frames that do not decode as RDMA are left alone;
 * returns whether anything was rewritten.
 */
export function refreshCrcs(frame: Uint8Array, linkType: number): boolean {
  const p = decodeFrame(frame, linkType, { crc: false, anyUdpPort: true });
  if (!p.bth) return false;
  if (linkType === LINKTYPE_ETHERNET && p.eth && p.udp) {
    const ipOff = 14 + 4 * p.eth.vlans.length;
    const udpOff = ipOff + (p.ipv4 ? p.ipv4.ihl * 4 : 40);
    const icrcOff = udpOff + p.udp.length - ICRC_BYTES;
    writeIcrc(frame, icrcOff, roceIcrc(frame, ipOff, udpOff + UDP_BYTES, icrcOff));
    return true;
  }
  if (linkType === LINKTYPE_INFINIBAND && p.lrh) {
    const icrcEnd = p.lrh.pktLen * 4;
    writeIcrc(frame, icrcEnd - ICRC_BYTES, ibIcrc(frame, icrcEnd - ICRC_BYTES));
    writeVcrc(frame, icrcEnd, ibVcrc(frame, icrcEnd));
    return true;
  }
  return false;
}

/** Recompute the IPv4 header checksum of an Ethernet frame in place (no-op if not IPv4). */
export function refreshIpv4Checksum(frame: Uint8Array): void {
  const p = decodeFrame(frame, LINKTYPE_ETHERNET, { crc: false });
  if (!p.eth || !p.ipv4) return;
  const ipOff = 14 + 4 * p.eth.vlans.length;
  wr16(frame, ipOff + 10, ipv4HeaderChecksum(frame, ipOff));
}
