/**
 * Whole-frame decoding: Ethernet → IPv4/IPv6 → UDP 4791 → BTH … (RoCEv2) or
 * LRH → (GRH) → BTH … (native InfiniBand), down to the extended transport
 * headers, the payload, the ICRC and (IB) the VCRC. Malformed frames never
 * throw: what could be decoded is returned together with `errors`.
 *
 * This is the checker's hot path, so it reads fields with plain index
 * arithmetic and allocates only the header objects it returns.
 */
import { rd16 } from "./bytes.ts";
import {
  decodeEthernet,
  type EthernetHeader,
  ethernetLength,
  ETHERTYPE_ARP,
  ETHERTYPE_IPV4,
  ETHERTYPE_IPV6,
} from "./ethernet.ts";
import { decodeExtHeaders, type ExtHeaderFields } from "./ext_headers.ts";
import { ibIcrc, ibVcrc, readIcrc, readVcrc, roceIcrc } from "./icrc.ts";
import {
  decodeIpv4,
  decodeIpv6,
  IPPROTO_TCP,
  IPPROTO_UDP,
  ipv4ChecksumValid,
  type Ipv4Header,
  type Ipv6Header,
} from "./ip.ts";
import { decodeMad, type Mad, MAD_BYTES } from "./mad.ts";
import { type OpcodeInfo, opcodeInfo } from "./opcodes.ts";
import {
  decodeGrh,
  decodeLrh,
  type Grh,
  GRH_BYTES,
  GRH_NEXT_HEADER_BTH,
  LNH_IBA_GLOBAL,
  LNH_IBA_LOCAL,
  type Lrh,
  LRH_BYTES,
} from "./route.ts";
import { type Bth, BTH_BYTES, decodeBth, ICRC_BYTES, VCRC_BYTES } from "./transport.ts";
import { decodeUdp, ROCEV2_UDP_PORT, UDP_BYTES, type UdpHeader } from "./udp.ts";

/** pcap/pcapng link type of Ethernet captures. */
export const LINKTYPE_ETHERNET = 1;
/** pcap/pcapng link type of InfiniBand captures (frames start at the LRH). */
export const LINKTYPE_INFINIBAND = 247;

/** One captured frame, as the checker consumes it. */
export interface CaptureFrame {
  data: Uint8Array;
  /** 1 = Ethernet, 247 = InfiniBand. */
  linkType: number;
  /** Capture interface (switch port) the frame was recorded on. */
  interfaceId?: number;
  timestampNs?: bigint;
}

/** What a frame turned out to be. */
export type PacketKind = "roce" | "ib" | "other";

/** A decoded frame. Fields are present as far as decoding got. */
export interface Packet extends ExtHeaderFields {
  linkType: number;
  kind: PacketKind;
  /** For `other` frames: a short label of what it is (`arp`, `ipv4/tcp`, `ib/raw`, …). */
  label?: string;
  eth?: EthernetHeader;
  ipv4?: Ipv4Header;
  /** Whether the IPv4 header checksum is right (set whenever `ipv4` is). */
  ipv4ChecksumOk?: boolean;
  ipv6?: Ipv6Header;
  udp?: UdpHeader;
  lrh?: Lrh;
  grh?: Grh;
  bth?: Bth;
  /** Opcode table entry of `bth.opcode` (absent for opcodes outside RC/UC/UD/CNP). */
  op?: OpcodeInfo;
  /** Management datagram, when a UD packet to QP0/QP1 carries 256 bytes. */
  mad?: Mad;
  /** Frame offset of the first payload byte. */
  payloadOffset: number;
  /** Bytes between the last header and the ICRC: payload plus pad. */
  paddedLength: number;
  /** Payload bytes, pad excluded. */
  payloadLength: number;
  /** ICRC as stored and as computed (absent when decoding stopped before it or `crc` was off). */
  icrc?: { wire: number; computed: number };
  /** VCRC as stored and as computed (native IB only). */
  vcrc?: { wire: number; computed: number };
  /** Everything wrong with the frame's structure; empty for a well-formed frame. */
  errors: string[];
}

/** Knobs of {@link decodeFrame}. */
export interface DecodeOptions {
  /** Compute ICRC/VCRC (default true). */
  crc?: boolean;
  /** Treat UDP to any port as RoCEv2 (used to recognise RoCE sent to a wrong port). */
  anyUdpPort?: boolean;
}

/**
 * Every field is present from the start (undefined until decoded) so all
 * packets share one hidden class and the checker's property loads stay
 * monomorphic.
 */
function newPacket(linkType: number): Packet {
  return {
    linkType,
    kind: "other",
    label: undefined,
    eth: undefined,
    ipv4: undefined,
    ipv4ChecksumOk: undefined,
    ipv6: undefined,
    udp: undefined,
    lrh: undefined,
    grh: undefined,
    bth: undefined,
    op: undefined,
    reth: undefined,
    aeth: undefined,
    atomicEth: undefined,
    atomicAckEth: undefined,
    deth: undefined,
    immDt: undefined,
    ieth: undefined,
    mad: undefined,
    payloadOffset: 0,
    paddedLength: 0,
    payloadLength: 0,
    icrc: undefined,
    vcrc: undefined,
    errors: [],
  };
}

/**
 * Decode one captured frame of the given pcap link type (1 = Ethernet,
 * 247 = InfiniBand).
 *
 * @example
 * ```ts
 * const p = decodeFrame(bytes, LINKTYPE_ETHERNET);
 * if (p.kind === "roce" && p.icrc && p.icrc.wire !== p.icrc.computed) console.log("bad ICRC");
 * ```
 */
export function decodeFrame(data: Uint8Array, linkType: number, opts: DecodeOptions = {}): Packet {
  const p = newPacket(linkType);
  if (linkType === LINKTYPE_ETHERNET) decodeEthernetFrame(data, p, opts);
  else if (linkType === LINKTYPE_INFINIBAND) decodeIbFrame(data, p, opts);
  else p.label = `linktype-${linkType}`;
  return p;
}

function decodeEthernetFrame(b: Uint8Array, p: Packet, opts: DecodeOptions): void {
  if (b.length < 14) {
    p.errors.push(`Ethernet frame of ${b.length} bytes is shorter than its 14-byte header`);
    return;
  }
  let eth: EthernetHeader;
  try {
    eth = decodeEthernet(b, 0);
  } catch {
    p.errors.push(`Ethernet frame of ${b.length} bytes ends inside a VLAN tag`);
    return;
  }
  p.eth = eth;
  const ipOff = ethernetLength(eth);
  if (eth.etherType === ETHERTYPE_IPV4) decodeIpv4Part(b, ipOff, p, opts);
  else if (eth.etherType === ETHERTYPE_IPV6) decodeIpv6Part(b, ipOff, p, opts);
  else if (eth.etherType === ETHERTYPE_ARP) p.label = "arp";
  else p.label = `ethertype-0x${eth.etherType.toString(16).padStart(4, "0")}`;
}

function decodeIpv4Part(b: Uint8Array, ipOff: number, p: Packet, opts: DecodeOptions): void {
  if (b.length < ipOff + 20) {
    p.label = "ipv4";
    p.errors.push(`IPv4 header truncated: ${b.length - ipOff} bytes after the Ethernet header`);
    return;
  }
  const ihl = b[ipOff] & 0x0f;
  if (b[ipOff] >>> 4 !== 4 || ihl < 5 || b.length < ipOff + ihl * 4) {
    p.label = "ipv4";
    p.errors.push(`IPv4 header invalid: version ${b[ipOff] >>> 4}, IHL ${ihl}`);
    return;
  }
  const ip = decodeIpv4(b, ipOff);
  p.ipv4 = ip;
  p.ipv4ChecksumOk = ipv4ChecksumValid(b, ipOff);
  const hdrLen = ihl * 4;
  const ipEnd = ipOff + ip.totalLength;
  if (ip.totalLength < hdrLen || ipEnd > b.length) {
    p.label = "ipv4";
    p.errors.push(
      `IPv4 total length ${ip.totalLength} does not fit the ${
        b.length - ipOff
      } bytes after the Ethernet header`,
    );
    return;
  }
  if (ip.protocol !== IPPROTO_UDP) {
    p.label = ip.protocol === IPPROTO_TCP ? "ipv4/tcp" : `ipv4/proto-${ip.protocol}`;
    return;
  }
  const fragmented = (ip.flags & 1) !== 0 || ip.fragmentOffset !== 0;
  decodeUdpPart(b, ipOff, ipOff + hdrLen, ipEnd, p, opts, fragmented, "ipv4");
}

function decodeIpv6Part(b: Uint8Array, ipOff: number, p: Packet, opts: DecodeOptions): void {
  if (b.length < ipOff + 40 || b[ipOff] >>> 4 !== 6) {
    p.label = "ipv6";
    p.errors.push(`IPv6 header truncated or not version 6 (${b.length - ipOff} bytes)`);
    return;
  }
  const ip = decodeIpv6(b, ipOff);
  p.ipv6 = ip;
  const ipEnd = ipOff + 40 + ip.payloadLength;
  if (ipEnd > b.length) {
    p.label = "ipv6";
    p.errors.push(`IPv6 payload length ${ip.payloadLength} runs past the end of the frame`);
    return;
  }
  if (ip.nextHeader !== IPPROTO_UDP) {
    p.label = ip.nextHeader === IPPROTO_TCP ? "ipv6/tcp" : `ipv6/next-${ip.nextHeader}`;
    return;
  }
  decodeUdpPart(b, ipOff, ipOff + 40, ipEnd, p, opts, false, "ipv6");
}

function decodeUdpPart(
  b: Uint8Array,
  ipOff: number,
  udpOff: number,
  ipEnd: number,
  p: Packet,
  opts: DecodeOptions,
  fragmented: boolean,
  ipName: string,
): void {
  if (ipEnd - udpOff < UDP_BYTES) {
    p.label = `${ipName}/udp`;
    p.errors.push(`UDP header truncated: ${ipEnd - udpOff} bytes of IP payload`);
    return;
  }
  const udp = decodeUdp(b, udpOff);
  p.udp = udp;
  if (udp.dstPort !== ROCEV2_UDP_PORT && !opts.anyUdpPort) {
    p.label = `${ipName}/udp`;
    return;
  }
  p.kind = "roce";
  if (fragmented) p.errors.push("RoCEv2 packet is an IP fragment; RoCEv2 must never be fragmented");
  if (udp.length !== ipEnd - udpOff) {
    p.errors.push(
      `UDP length ${udp.length} disagrees with the IP payload length ${ipEnd - udpOff}`,
    );
    return;
  }
  const bthOff = udpOff + UDP_BYTES;
  const icrcOff = udpOff + udp.length - ICRC_BYTES;
  if (icrcOff < bthOff + BTH_BYTES) {
    p.errors.push(`UDP length ${udp.length} leaves no room for a BTH and an ICRC`);
    return;
  }
  decodeTransport(b, bthOff, icrcOff, p);
  if (opts.crc !== false) {
    p.icrc = { wire: readIcrc(b, icrcOff), computed: roceIcrc(b, ipOff, bthOff, icrcOff) };
  }
}

function decodeIbFrame(b: Uint8Array, p: Packet, opts: DecodeOptions): void {
  if (b.length < LRH_BYTES) {
    p.label = "ib";
    p.errors.push(`InfiniBand frame of ${b.length} bytes is shorter than its 8-byte LRH`);
    return;
  }
  const lrh = decodeLrh(b, 0);
  p.lrh = lrh;
  if (lrh.lnh !== LNH_IBA_LOCAL && lrh.lnh !== LNH_IBA_GLOBAL) {
    p.label = lrh.lnh === 0 ? "ib/raw" : "ib/ipv6";
    return;
  }
  p.kind = "ib";
  const icrcEnd = lrh.pktLen * 4;
  const icrcOff = icrcEnd - ICRC_BYTES;
  if (b.length !== icrcEnd + VCRC_BYTES) {
    p.errors.push(
      `LRH PktLen ${lrh.pktLen} words means ${icrcEnd + VCRC_BYTES} bytes with the VCRC, ` +
        `but the frame has ${b.length}`,
    );
    if (b.length < icrcEnd + VCRC_BYTES) return;
  }
  let bthOff = LRH_BYTES;
  if (lrh.lnh === LNH_IBA_GLOBAL) {
    if (icrcOff < LRH_BYTES + GRH_BYTES + BTH_BYTES) {
      p.errors.push(`LRH PktLen ${lrh.pktLen} leaves no room for a GRH, a BTH and an ICRC`);
      return;
    }
    const grh = decodeGrh(b, LRH_BYTES);
    p.grh = grh;
    if (grh.nxtHdr !== GRH_NEXT_HEADER_BTH) {
      p.errors.push(`GRH NxtHdr 0x${grh.nxtHdr.toString(16)} is not 0x1b (BTH)`);
      return;
    }
    if (grh.payLen !== icrcEnd - LRH_BYTES - GRH_BYTES) {
      p.errors.push(
        `GRH PayLen ${grh.payLen} disagrees with LRH PktLen (${
          icrcEnd - LRH_BYTES - GRH_BYTES
        } bytes)`,
      );
    }
    bthOff += GRH_BYTES;
  } else if (icrcOff < LRH_BYTES + BTH_BYTES) {
    p.errors.push(`LRH PktLen ${lrh.pktLen} leaves no room for a BTH and an ICRC`);
    return;
  }
  decodeTransport(b, bthOff, icrcOff, p);
  if (opts.crc !== false) {
    p.icrc = { wire: readIcrc(b, icrcOff), computed: ibIcrc(b, icrcOff) };
    p.vcrc = { wire: readVcrc(b, icrcEnd), computed: ibVcrc(b, icrcEnd) };
  }
}

/** Decode BTH, extended headers and payload bounds in `b[bthOff..icrcOff)`. */
function decodeTransport(b: Uint8Array, bthOff: number, icrcOff: number, p: Packet): void {
  const bth = decodeBth(b, bthOff);
  p.bth = bth;
  const op = opcodeInfo(bth.opcode);
  if (op === undefined) {
    p.errors.push(
      `BTH opcode 0x${bth.opcode.toString(16).padStart(2, "0")} is not an RC, UC or UD opcode`,
    );
    return;
  }
  p.op = op;
  let o = bthOff + BTH_BYTES;
  if (o + op.headerBytes > icrcOff) {
    p.errors.push(
      `${op.name} needs ${op.headerBytes} bytes of extended headers; only ${
        icrcOff - o
      } precede the ICRC`,
    );
    return;
  }
  o = decodeExtHeaders(op, b, o, p);
  p.payloadOffset = o;
  p.paddedLength = icrcOff - o;
  p.payloadLength = Math.max(0, p.paddedLength - bth.padCnt);
  if (bth.padCnt > p.paddedLength) {
    p.errors.push(`BTH PadCnt ${bth.padCnt} exceeds the ${p.paddedLength} bytes after the headers`);
  }
  if (
    op.transport === "UD" && (bth.destQp === 0 || bth.destQp === 1) && p.payloadLength >= MAD_BYTES
  ) {
    p.mad = decodeMad(b, o);
  }
}

/** The payload bytes of a decoded packet (a view into `data`, pad excluded). */
export function packetPayload(data: Uint8Array, p: Packet): Uint8Array {
  return data.subarray(p.payloadOffset, p.payloadOffset + p.payloadLength);
}

/** Offset of the IP header in an Ethernet frame (after any VLAN tags), or -1. */
export function ipOffset(data: Uint8Array): number {
  let o = 12;
  while (o + 2 <= data.length) {
    const t = rd16(data, o);
    if (t === 0x8100 || t === 0x88a8) o += 4;
    else return o + 2;
  }
  return -1;
}
