/**
 * Multicast addressing as the wire shows it: the multicast QP number of the
 * BTH, multicast IP addresses and GIDs, multicast LIDs, and the Ethernet
 * group MAC an IP multicast address maps to. From IBA volume 1 (§4.1 LID
 * ranges, §9.2 DestQP 0xFFFFFF), RFC 1112 §6.4 (IPv4 → MAC), RFC 2464 §7
 * (IPv6 → MAC) and RFC 4291 §2.7 (IPv6 multicast addresses).
 */
import { rd32 } from "./bytes.ts";

/** BTH DestQP of every packet sent to a multicast group (IBA vol. 1 §9.2). */
export const MULTICAST_QPN = 0xffffff;

/** Lowest multicast LID (IBA vol. 1 §4.1: 0xC000..0xFFFE are multicast LIDs). */
export const MULTICAST_LID_MIN = 0xc000;
/** The permissive LID (not a multicast LID, although it is above 0xC000). */
export const PERMISSIVE_LID = 0xffff;

/** Whether an IPv4 address (32-bit number) is a multicast (class D, 224.0.0.0/4) address (RFC 1112 §4). */
export function isIpv4Multicast(a: number): boolean {
  return a >>> 28 === 0xe;
}

/** Whether a 16-byte IPv6 address or GID is multicast (ff00::/8, RFC 4291 §2.7; IBA GIDs likewise). */
export function isIpv6Multicast(a: Uint8Array): boolean {
  return a[0] === 0xff;
}

/** Whether a LID is a multicast LID (0xC000..0xFFFE; 0xFFFF is the permissive LID). */
export function isMulticastLid(lid: number): boolean {
  return lid >= MULTICAST_LID_MIN && lid < PERMISSIVE_LID;
}

/**
 * The Ethernet group MAC of an IPv4 multicast address (RFC 1112 §6.4):
 * 01:00:5e followed by the low 23 bits of the address, as a 48-bit number.
 */
export function ipv4MulticastMac(a: number): number {
  return 0x01005e000000 + (a & 0x7fffff);
}

/**
 * The Ethernet group MAC of an IPv6 multicast address (RFC 2464 §7): 33:33
 * followed by the last four bytes of the address, as a 48-bit number.
 */
export function ipv6MulticastMac(a: Uint8Array): number {
  return 0x333300000000 + rd32(a, 12);
}

/** Whether a 48-bit MAC is a group (multicast or broadcast) address: I/G bit, the low bit of its first byte. */
export function isGroupMac(mac: number): boolean {
  return Math.floor(mac / 0x10000000000) % 2 === 1;
}
