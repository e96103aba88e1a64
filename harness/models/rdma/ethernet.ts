/**
 * Ethernet II framing with any number of 802.1Q / 802.1ad VLAN tags.
 * MAC addresses are 48-bit integers (exact in a JS number) so decoding needs
 * no string building; {@link macToString} formats one for humans.
 */
import { checkField, need, rd16, rd32, wr16, wr32 } from "./bytes.ts";

/** EtherType of IPv4. */
export const ETHERTYPE_IPV4 = 0x0800;
/** EtherType of ARP. */
export const ETHERTYPE_ARP = 0x0806;
/** EtherType of IPv6. */
export const ETHERTYPE_IPV6 = 0x86dd;
/** TPID of an 802.1Q customer VLAN tag. */
export const TPID_8021Q = 0x8100;
/** TPID of an 802.1ad service VLAN tag (QinQ). */
export const TPID_8021AD = 0x88a8;

/** One VLAN tag as it appears on the wire. */
export interface VlanTag {
  /** 0x8100 (802.1Q) or 0x88a8 (802.1ad). */
  tpid: number;
  /** Priority code point, 3 bits. */
  pcp: number;
  /** Drop eligible indicator, 1 bit. */
  dei: number;
  /** VLAN identifier, 12 bits. */
  vid: number;
}

/** An Ethernet II header. */
export interface EthernetHeader {
  /** Destination MAC as a 48-bit integer. */
  dst: number;
  /** Source MAC as a 48-bit integer. */
  src: number;
  /** VLAN tags, outermost first (empty when untagged). */
  vlans: VlanTag[];
  /** EtherType of what follows the last tag. */
  etherType: number;
}

/** Bytes the header occupies: 14 plus 4 per VLAN tag. */
export function ethernetLength(h: EthernetHeader): number {
  return 14 + 4 * h.vlans.length;
}

function rdMac(b: Uint8Array, o: number): number {
  return rd16(b, o) * 0x1_0000_0000 + rd32(b, o + 2);
}

function wrMac(b: Uint8Array, o: number, v: number): void {
  wr16(b, o, Math.floor(v / 0x1_0000_0000));
  wr32(b, o + 2, v % 0x1_0000_0000);
}

/** Decode an Ethernet header at `off` (throws TruncatedError if short). */
export function decodeEthernet(b: Uint8Array, off = 0): EthernetHeader {
  need(b, off, 14, "Ethernet header");
  const vlans: VlanTag[] = [];
  let o = off + 12;
  let type = rd16(b, o);
  while (type === TPID_8021Q || type === TPID_8021AD) {
    need(b, o, 6, "VLAN tag");
    const tci = rd16(b, o + 2);
    vlans.push({ tpid: type, pcp: tci >>> 13, dei: (tci >>> 12) & 1, vid: tci & 0xfff });
    o += 4;
    type = rd16(b, o);
  }
  return { dst: rdMac(b, off), src: rdMac(b, off + 6), vlans, etherType: type };
}

/**
 * Encode an Ethernet header into `out` at `off` (allocated when omitted).
 * Returns the buffer written to.
 */
export function encodeEthernet(h: EthernetHeader, out?: Uint8Array, off = 0): Uint8Array {
  const len = ethernetLength(h);
  const b = out ?? new Uint8Array(len);
  checkField("Ethernet", "dst", h.dst, 48);
  checkField("Ethernet", "src", h.src, 48);
  checkField("Ethernet", "etherType", h.etherType, 16);
  need(b, off, len, "Ethernet header (encode)");
  wrMac(b, off, h.dst);
  wrMac(b, off + 6, h.src);
  let o = off + 12;
  for (const v of h.vlans) {
    checkField("VlanTag", "tpid", v.tpid, 16);
    checkField("VlanTag", "pcp", v.pcp, 3);
    checkField("VlanTag", "dei", v.dei, 1);
    checkField("VlanTag", "vid", v.vid, 12);
    wr16(b, o, v.tpid);
    wr16(b, o + 2, (v.pcp << 13) | (v.dei << 12) | v.vid);
    o += 4;
  }
  wr16(b, o, h.etherType);
  return b;
}

/** `02:00:00:00:00:01` form of a 48-bit MAC. */
export function macToString(mac: number): string {
  const parts: string[] = [];
  for (let i = 5; i >= 0; i--) {
    parts.push((Math.floor(mac / 2 ** (8 * i)) % 256).toString(16).padStart(2, "0"));
  }
  return parts.join(":");
}

/** Parse `02:00:00:00:00:01` (or with dashes) into a 48-bit integer. */
export function parseMac(s: string): number {
  const parts = s.split(/[:-]/);
  if (parts.length !== 6 || parts.some((p) => !/^[0-9a-f]{1,2}$/i.test(p))) {
    throw new RangeError(`parseMac: "${s}" is not a MAC like 02:00:00:00:00:01`);
  }
  return parts.reduce((acc, p) => acc * 256 + parseInt(p, 16), 0);
}
