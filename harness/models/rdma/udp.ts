/** The UDP header, and its checksum over an IPv4 pseudo-header (RFC 768). */
import { checkField, need, rd16, wr16 } from "./bytes.ts";
import { onesComplementSum } from "./ip.ts";

/** UDP destination port of RoCEv2 (IANA). */
export const ROCEV2_UDP_PORT = 4791;
/** Bytes in a UDP header. */
export const UDP_BYTES = 8;

/** A UDP header. */
export interface UdpHeader {
  srcPort: number;
  dstPort: number;
  /** Header plus payload, in bytes. */
  length: number;
  /** 0 means "not computed" over IPv4. */
  checksum: number;
}

/** Decode a UDP header at `off` (throws TruncatedError if short). */
export function decodeUdp(b: Uint8Array, off = 0): UdpHeader {
  need(b, off, UDP_BYTES, "UDP header");
  return {
    srcPort: rd16(b, off),
    dstPort: rd16(b, off + 2),
    length: rd16(b, off + 4),
    checksum: rd16(b, off + 6),
  };
}

/** Encode a UDP header into `out` at `off` (allocated when omitted). */
export function encodeUdp(h: UdpHeader, out?: Uint8Array, off = 0): Uint8Array {
  checkField("UDP", "srcPort", h.srcPort, 16);
  checkField("UDP", "dstPort", h.dstPort, 16);
  checkField("UDP", "length", h.length, 16);
  checkField("UDP", "checksum", h.checksum, 16);
  const b = out ?? new Uint8Array(UDP_BYTES);
  need(b, off, UDP_BYTES, "UDP header (encode)");
  wr16(b, off, h.srcPort);
  wr16(b, off + 2, h.dstPort);
  wr16(b, off + 4, h.length);
  wr16(b, off + 6, h.checksum);
  return b;
}

/**
 * The checksum a UDP datagram at `udpOff` (length taken from its header)
 * inside an IPv4 packet at `ipOff` should carry: the complement of the
 * one's-complement sum over the pseudo-header (source, destination, protocol,
 * UDP length) and the datagram with its checksum field as 0; a result of 0 is
 * sent as 0xFFFF.
 */
export function udpChecksumIpv4(b: Uint8Array, ipOff: number, udpOff: number): number {
  const len = rd16(b, udpOff + 4);
  let sum = onesComplementSum(b, ipOff + 12, ipOff + 20); // source and destination
  sum = onesComplementSum(new Uint8Array([0, 17, len >>> 8, len & 0xff]), 0, 4, sum);
  sum = onesComplementSum(b, udpOff, udpOff + 6, sum);
  sum = onesComplementSum(b, udpOff + 8, udpOff + len, sum);
  const c = ~sum & 0xffff;
  return c === 0 ? 0xffff : c;
}
