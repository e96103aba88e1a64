/**
 * Priority-based flow control frames (IEEE 802.1Qbb, carried as MAC Control
 * per IEEE 802.3 clause 31 and annex 31D) in a capture: decoded, judged
 * (rule `pfc`) and counted per priority, so a row can hold the switch's and
 * the hosts' pause counters against what was on the wire.
 *
 * A PFC frame: destination 01:80:c2:00:00:01 (the MAC Control address),
 * EtherType 0x8808, opcode 0x0101, a 16-bit class-enable vector whose upper
 * octet is reserved (0), eight 16-bit pause times, the rest of the minimum
 * frame reserved (transmitted as 0); 60 bytes without the FCS. A time for a
 * priority whose vector bit is clear is ignored by the receiver, so it is not
 * judged. Quanta 0 for an enabled priority is an XON (resume), anything else
 * an XOFF. Other MAC Control opcodes (802.3x PAUSE 0x0001 among them) are
 * counted, not judged.
 */
import type { ViolationLog } from "./check_log.ts";
import { macToString } from "./ethernet.ts";

/** EtherType of MAC Control frames. */
export const ETHERTYPE_MAC_CONTROL = 0x8808;
/** MAC Control opcode of PFC. */
export const OPCODE_PFC = 0x0101;
/** The MAC Control destination address, 01:80:c2:00:00:01. */
export const MAC_CONTROL_DST = 0x0180c2000001;
/** A PFC frame's length without the FCS (the Ethernet minimum). */
export const PFC_FRAME_LEN = 60;
/** Priorities a PFC frame carries. */
export const PFC_PRIOS = 8;

/** PFC frames of a capture, per priority (index 0..7). */
export interface PfcCensus {
  /** PFC frames seen (judged, well formed or not). */
  frames: number;
  /** Frames naming priority N with a non-zero pause time (XOFF, refreshes included). */
  xoff: number[];
  /** Frames naming priority N with pause time 0 (XON). */
  xon: number[];
  /** MAC Control frames with another opcode (802.3x PAUSE and unknown ones). */
  otherMacControl: number;
}

/** A decoded PFC frame. */
export interface PfcFrame {
  /** Destination and source MAC as 48-bit integers. */
  dst: number;
  src: number;
  /** The class-enable vector (16 bits as sent). */
  classEnable: number;
  /** The eight pause times, in quanta. */
  quanta: number[];
}

/** Decode the PFC part of an untagged MAC Control frame; undefined if it is not PFC. */
export function decodePfc(f: Uint8Array): PfcFrame | undefined {
  if (f.length < 16 || ((f[12] << 8) | f[13]) !== ETHERTYPE_MAC_CONTROL) return undefined;
  if (((f[14] << 8) | f[15]) !== OPCODE_PFC) return undefined;
  const mac = (o: number) =>
    ((f[o] << 8) | f[o + 1]) * 0x1_0000_0000 +
    ((f[o + 2] << 24) >>> 0) + ((f[o + 3] << 16) | (f[o + 4] << 8) | f[o + 5]);
  const word = (o: number) => o + 1 < f.length ? (f[o] << 8) | f[o + 1] : 0;
  return {
    dst: mac(0),
    src: mac(6),
    classEnable: word(16),
    quanta: Array.from({ length: PFC_PRIOS }, (_, i) => word(18 + 2 * i)),
  };
}

/** An empty census. */
export function emptyPfcCensus(): PfcCensus {
  return {
    frames: 0,
    xoff: new Array(PFC_PRIOS).fill(0),
    xon: new Array(PFC_PRIOS).fill(0),
    otherMacControl: 0,
  };
}

/**
 * Judge one frame with EtherType 0x8808 (frame index `index`) and count it
 * in `census`. Returns false for frames that are not MAC Control.
 */
export function checkMacControl(
  log: ViolationLog,
  census: PfcCensus,
  f: Uint8Array,
  index: number,
): boolean {
  if (f.length < 14 || ((f[12] << 8) | f[13]) !== ETHERTYPE_MAC_CONTROL) return false;
  const p = decodePfc(f);
  if (!p) {
    census.otherMacControl++;
    return true;
  }
  census.frames++;
  const flow = `${macToString(p.src)} → ${macToString(p.dst)} (PFC)`;
  const bad = (msg: string) => log.report(index, flow, "pfc", msg);
  if (f.length < PFC_FRAME_LEN) {
    bad(`PFC frame of ${f.length} bytes; the minimum frame is ${PFC_FRAME_LEN} without FCS`);
  }
  if (p.dst !== MAC_CONTROL_DST) {
    bad(`PFC frame to ${macToString(p.dst)}; MAC Control goes to 01:80:c2:00:00:01`);
  }
  if (Math.floor(p.src / 0x100_0000_0000) & 1) {
    bad(`PFC frame from the group address ${macToString(p.src)}`);
  }
  if (p.classEnable >> 8) {
    bad(`class-enable vector 0x${p.classEnable.toString(16)}: its upper octet is reserved (0)`);
  }
  for (let o = 34; o < Math.min(f.length, PFC_FRAME_LEN); o++) {
    if (f[o] !== 0) {
      bad(`reserved byte ${o} is 0x${f[o].toString(16)}, not 0`);
      break;
    }
  }
  for (let prio = 0; prio < PFC_PRIOS; prio++) {
    if (!(p.classEnable & (1 << prio))) continue;
    if (p.quanta[prio]) census.xoff[prio]++;
    else census.xon[prio]++;
  }
  return true;
}
