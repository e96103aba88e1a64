/**
 * IPv4 (with the RFC 791/1071 header checksum) and IPv6 fixed headers.
 * IPv4 addresses are unsigned 32-bit integers; IPv6 addresses are 16-byte
 * arrays (views into the frame when decoded, so copy before mutating).
 */
import { checkBytes, checkField, need, rd16, rd32, wr16, wr32 } from "./bytes.ts";

/** IP protocol number of UDP. */
export const IPPROTO_UDP = 17;
/** IP protocol number of TCP. */
export const IPPROTO_TCP = 6;

/** An IPv4 header. */
export interface Ipv4Header {
  /** Always 4 on a well-formed header; kept so a bad one can be reported. */
  version: number;
  /** Header length in 32-bit words (5 without options). */
  ihl: number;
  /** Type of service byte (DSCP << 2 | ECN). */
  tos: number;
  /** Header plus payload, in bytes. */
  totalLength: number;
  identification: number;
  /** 3 flag bits: reserved, DF (2), MF (1). */
  flags: number;
  /** In 8-byte units, 13 bits. */
  fragmentOffset: number;
  ttl: number;
  protocol: number;
  /** Header checksum as found on the wire (or to be written). */
  checksum: number;
  src: number;
  dst: number;
  /** Option bytes, `(ihl - 5) * 4` of them. */
  options: Uint8Array;
}

/** Shared empty option list (most headers have none; saves a view per packet). */
const NO_OPTIONS = new Uint8Array(0);

/** Decode an IPv4 header at `off` (throws TruncatedError if short). */
export function decodeIpv4(b: Uint8Array, off = 0): Ipv4Header {
  need(b, off, 20, "IPv4 header");
  const vihl = b[off];
  const ihl = vihl & 0x0f;
  const hdrLen = Math.max(20, ihl * 4);
  need(b, off, hdrLen, "IPv4 header with options");
  const ff = rd16(b, off + 6);
  return {
    version: vihl >>> 4,
    ihl,
    tos: b[off + 1],
    totalLength: rd16(b, off + 2),
    identification: rd16(b, off + 4),
    flags: ff >>> 13,
    fragmentOffset: ff & 0x1fff,
    ttl: b[off + 8],
    protocol: b[off + 9],
    checksum: rd16(b, off + 10),
    src: rd32(b, off + 12),
    dst: rd32(b, off + 16),
    options: hdrLen === 20 ? NO_OPTIONS : b.subarray(off + 20, off + hdrLen),
  };
}

/**
 * Encode an IPv4 header into `out` at `off` (allocated when omitted), with the
 * checksum exactly as given; use {@link ipv4HeaderChecksum} to compute one.
 */
export function encodeIpv4(h: Ipv4Header, out?: Uint8Array, off = 0): Uint8Array {
  const len = 20 + h.options.length;
  checkField("IPv4", "version", h.version, 4);
  checkField("IPv4", "ihl", h.ihl, 4);
  if (h.ihl * 4 !== len) {
    throw new RangeError(`IPv4: ihl ${h.ihl} disagrees with ${h.options.length} option bytes`);
  }
  checkField("IPv4", "tos", h.tos, 8);
  checkField("IPv4", "totalLength", h.totalLength, 16);
  checkField("IPv4", "identification", h.identification, 16);
  checkField("IPv4", "flags", h.flags, 3);
  checkField("IPv4", "fragmentOffset", h.fragmentOffset, 13);
  checkField("IPv4", "ttl", h.ttl, 8);
  checkField("IPv4", "protocol", h.protocol, 8);
  checkField("IPv4", "checksum", h.checksum, 16);
  checkField("IPv4", "src", h.src, 32);
  checkField("IPv4", "dst", h.dst, 32);
  const b = out ?? new Uint8Array(len);
  need(b, off, len, "IPv4 header (encode)");
  b[off] = (h.version << 4) | h.ihl;
  b[off + 1] = h.tos;
  wr16(b, off + 2, h.totalLength);
  wr16(b, off + 4, h.identification);
  wr16(b, off + 6, (h.flags << 13) | h.fragmentOffset);
  b[off + 8] = h.ttl;
  b[off + 9] = h.protocol;
  wr16(b, off + 10, h.checksum);
  wr32(b, off + 12, h.src);
  wr32(b, off + 16, h.dst);
  b.set(h.options, off + 20);
  return b;
}

/**
 * One's-complement sum of 16-bit big-endian words over `b[start..end)`
 * (RFC 1071), folded to 16 bits but not complemented. An odd trailing byte is
 * padded with zero.
 */
export function onesComplementSum(b: Uint8Array, start: number, end: number, acc = 0): number {
  let sum = acc;
  let i = start;
  for (; i + 1 < end; i += 2) sum += (b[i] << 8) | b[i + 1];
  if (i < end) sum += b[i] << 8;
  while (sum > 0xffff) sum = (sum & 0xffff) + Math.floor(sum / 0x10000);
  return sum;
}

/**
 * The header checksum an IPv4 header at `off` should carry: the complement of
 * the one's-complement sum of the header with the checksum field taken as 0.
 */
export function ipv4HeaderChecksum(b: Uint8Array, off: number): number {
  const len = (b[off] & 0x0f) * 4;
  let sum = onesComplementSum(b, off, off + 10);
  sum = onesComplementSum(b, off + 12, off + len, sum);
  return ~sum & 0xffff;
}

/** Whether the IPv4 header at `off` carries a correct checksum (the whole header sums to 0xFFFF). */
export function ipv4ChecksumValid(b: Uint8Array, off: number): boolean {
  const len = (b[off] & 0x0f) * 4;
  if (len < 20 || off + len > b.length) return false;
  return onesComplementSum(b, off, off + len) === 0xffff;
}

/** `10.0.0.1` form of an IPv4 address. */
export function ipv4ToString(a: number): string {
  return `${a >>> 24}.${(a >>> 16) & 0xff}.${(a >>> 8) & 0xff}.${a & 0xff}`;
}

/** Parse a dotted-quad IPv4 address into an unsigned 32-bit integer. */
export function parseIpv4(s: string): number {
  const p = s.split(".");
  if (p.length !== 4 || p.some((x) => !/^\d{1,3}$/.test(x) || Number(x) > 255)) {
    throw new RangeError(`parseIpv4: "${s}" is not a dotted-quad address like 10.0.0.1`);
  }
  return ((Number(p[0]) << 24) | (Number(p[1]) << 16) | (Number(p[2]) << 8) | Number(p[3])) >>> 0;
}

/** The fixed IPv6 header (extension headers are not followed). */
export interface Ipv6Header {
  /** Always 6 on a well-formed header. */
  version: number;
  trafficClass: number;
  /** 20 bits. */
  flowLabel: number;
  /** Bytes after this 40-byte header. */
  payloadLength: number;
  nextHeader: number;
  hopLimit: number;
  /** 16 bytes. */
  src: Uint8Array;
  /** 16 bytes. */
  dst: Uint8Array;
}

/** Bytes in the fixed IPv6 header. */
export const IPV6_BYTES = 40;

/** Decode the fixed IPv6 header at `off` (throws TruncatedError if short). */
export function decodeIpv6(b: Uint8Array, off = 0): Ipv6Header {
  need(b, off, IPV6_BYTES, "IPv6 header");
  const w = rd32(b, off);
  return {
    version: w >>> 28,
    trafficClass: (w >>> 20) & 0xff,
    flowLabel: w & 0xfffff,
    payloadLength: rd16(b, off + 4),
    nextHeader: b[off + 6],
    hopLimit: b[off + 7],
    src: b.subarray(off + 8, off + 24),
    dst: b.subarray(off + 24, off + 40),
  };
}

/** Encode the fixed IPv6 header into `out` at `off` (allocated when omitted). */
export function encodeIpv6(h: Ipv6Header, out?: Uint8Array, off = 0): Uint8Array {
  checkField("IPv6", "version", h.version, 4);
  checkField("IPv6", "trafficClass", h.trafficClass, 8);
  checkField("IPv6", "flowLabel", h.flowLabel, 20);
  checkField("IPv6", "payloadLength", h.payloadLength, 16);
  checkField("IPv6", "nextHeader", h.nextHeader, 8);
  checkField("IPv6", "hopLimit", h.hopLimit, 8);
  checkBytes("IPv6", "src", h.src, 16);
  checkBytes("IPv6", "dst", h.dst, 16);
  const b = out ?? new Uint8Array(IPV6_BYTES);
  need(b, off, IPV6_BYTES, "IPv6 header (encode)");
  wr32(b, off, ((h.version << 28) | (h.trafficClass << 20) | h.flowLabel) >>> 0);
  wr16(b, off + 4, h.payloadLength);
  b[off + 6] = h.nextHeader;
  b[off + 7] = h.hopLimit;
  b.set(h.src, off + 8);
  b.set(h.dst, off + 24);
  return b;
}

/** Compressed-free textual form (eight groups of four hex digits) of a 16-byte address. */
export function ipv6ToString(a: Uint8Array): string {
  const g: string[] = [];
  for (let i = 0; i < 16; i += 2) g.push(rd16(a, i).toString(16).padStart(4, "0"));
  return g.join(":");
}
