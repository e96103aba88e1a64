/**
 * Subnet administration (SA, class 0x03) and performance management (PMA,
 * class 0x04) MADs: the SA header after the MAD common header, the SA
 * attributes the fabric's SA serves (ClassPortInfo, PathRecord,
 * MCMemberRecord), the SMInfo SMP attribute and the PMA data offset. Layouts
 * per IBA vol. 1 §15.2.1 (SA MAD format), §15.2.5.16 (PathRecord),
 * §15.2.5.17 (MCMemberRecord), §13.4.8.1 (ClassPortInfo), §14.2.5.13
 * (SMInfo) and §16.1.3 (PMA attributes); constants as in docs/wire.md.
 */
import { checkBytes, checkField64, need, rd64, wr64 } from "./bytes.ts";
import { decodeLayout, encodeLayout, type FieldSpec } from "./bitfield.ts";
import { decodeMadHeader, encodeMadHeader, MAD_BYTES, type MadHeader } from "./mad.ts";

/** SA attribute IDs the fabric's SA answers. */
export const SA_ATTR = {
  CLASS_PORT_INFO: 0x0001,
  PATH_RECORD: 0x0035,
  MC_MEMBER_RECORD: 0x0038,
} as const;

/** PMA attribute IDs. */
export const PMA_ATTR = {
  CLASS_PORT_INFO: 0x0001,
  PORT_COUNTERS: 0x0012,
  PORT_COUNTERS_EXTENDED: 0x001d,
} as const;

/** Offset of the SA data (the attribute) in an SA MAD. */
export const SA_DATA_OFFSET = 56;
/** Bytes of SA data in one (non-RMPP-segmented) SA MAD. */
export const SA_DATA_BYTES = MAD_BYTES - SA_DATA_OFFSET;
/** Offset of the PMA data (the attribute) in a PMA MAD (after 40 reserved bytes). */
export const PMA_DATA_OFFSET = 64;

/** SA class-specific status (bits 15..8 of the MAD status), IBA vol. 1 table 175. */
export const SA_STATUS = {
  ERR_NO_RESOURCES: 1 << 8,
  ERR_REQ_INVALID: 2 << 8,
  ERR_NO_RECORDS: 3 << 8,
  ERR_TOO_MANY_RECORDS: 4 << 8,
  ERR_REQ_INVALID_GID: 5 << 8,
  ERR_REQ_INSUFFICIENT_COMPONENTS: 6 << 8,
  ERR_REQ_DENIED: 7 << 8,
} as const;

/** PathRecord component mask bits (IBA vol. 1 §15.2.5.16; bit n = field n). */
export const PATH_COMP = {
  DGID: 1n << 2n,
  SGID: 1n << 3n,
  DLID: 1n << 4n,
  SLID: 1n << 5n,
  PKEY: 1n << 13n,
} as const;

/** MCMemberRecord component mask bits (IBA vol. 1 §15.2.5.17). */
export const MCM_COMP = {
  MGID: 1n << 0n,
  PORT_GID: 1n << 1n,
  QKEY: 1n << 2n,
  MLID: 1n << 3n,
  PKEY: 1n << 7n,
  JOIN_STATE: 1n << 16n,
} as const;

/** An SA MAD: common header, RMPP header, SM_Key, attribute offset, component mask, data. */
export interface SaMad {
  header: MadHeader;
  /** The 12-byte RMPP header (bytes 24..35), zero for unsegmented MADs. */
  rmpp: Uint8Array;
  smKey: bigint;
  /** Record size in 8-byte words (GetTable responses). */
  attributeOffset: number;
  componentMask: bigint;
  /** The 200 data bytes (a view into the decoded buffer). */
  data: Uint8Array;
}

/** Decode an SA MAD at `off`. */
export function decodeSaMad(b: Uint8Array, off = 0): SaMad {
  need(b, off, MAD_BYTES, "SA MAD");
  return {
    header: decodeMadHeader(b, off),
    rmpp: b.subarray(off + 24, off + 36),
    smKey: rd64(b, off + 36),
    attributeOffset: (b[off + 44] << 8) | b[off + 45],
    componentMask: rd64(b, off + 48),
    data: b.subarray(off + SA_DATA_OFFSET, off + MAD_BYTES),
  };
}

/** Encode an SA MAD into a new 256-byte array; `data` may be shorter than 200 bytes. */
export function encodeSaMad(
  m: Omit<SaMad, "rmpp" | "attributeOffset"> & {
    rmpp?: Uint8Array;
    attributeOffset?: number;
  },
): Uint8Array {
  checkField64("SA MAD", "smKey", m.smKey);
  checkField64("SA MAD", "componentMask", m.componentMask);
  if (m.data.length > SA_DATA_BYTES) {
    throw new RangeError(`SA MAD: data is ${m.data.length} bytes, at most ${SA_DATA_BYTES}`);
  }
  const b = new Uint8Array(MAD_BYTES);
  encodeMadHeader(m.header, b, 0);
  if (m.rmpp) {
    checkBytes("SA MAD", "rmpp", m.rmpp, 12);
    b.set(m.rmpp, 24);
  }
  wr64(b, 36, m.smKey);
  const ao = m.attributeOffset ?? 0;
  b[44] = ao >>> 8;
  b[45] = ao & 0xff;
  wr64(b, 48, m.componentMask);
  b.set(m.data, SA_DATA_OFFSET);
  return b;
}

/** PathRecord (64 bytes); GIDs as 16-byte arrays, the rest as numbers. */
export interface PathRecord {
  serviceId: bigint;
  dgid: Uint8Array;
  sgid: Uint8Array;
  dlid: number;
  slid: number;
  rawTraffic: number;
  reserved353: number;
  flowLabel: number;
  hopLimit: number;
  tClass: number;
  reversible: number;
  numbPath: number;
  pkey: number;
  qosClass: number;
  sl: number;
  mtuSelector: number;
  /** 1 = 256 … 5 = 4096. */
  mtu: number;
  rateSelector: number;
  /** IB rate enum (16 = 100 Gb/s). */
  rate: number;
  packetLifeTimeSelector: number;
  packetLifeTime: number;
  preference: number;
}

/** Bytes in a PathRecord. */
export const PATH_RECORD_BYTES = 64;

/** Fields after the two GIDs (bit offsets from the start of the record). */
const PATH_TAIL: readonly FieldSpec[] = [
  ["dlid", 320, 16],
  ["slid", 336, 16],
  ["rawTraffic", 352, 1],
  ["reserved353", 353, 3],
  ["flowLabel", 356, 20],
  ["hopLimit", 376, 8],
  ["tClass", 384, 8],
  ["reversible", 392, 1],
  ["numbPath", 393, 7],
  ["pkey", 400, 16],
  ["qosClass", 416, 12],
  ["sl", 428, 4],
  ["mtuSelector", 432, 2],
  ["mtu", 434, 6],
  ["rateSelector", 440, 2],
  ["rate", 442, 6],
  ["packetLifeTimeSelector", 448, 2],
  ["packetLifeTime", 450, 6],
  ["preference", 456, 8],
];

/** Decode a PathRecord at `off` (GIDs are copies). */
export function decodePathRecord(b: Uint8Array, off = 0): PathRecord {
  need(b, off, PATH_RECORD_BYTES, "PathRecord");
  const tail = decodeLayout(PATH_TAIL, PATH_RECORD_BYTES, "PathRecord", b, off);
  return {
    serviceId: rd64(b, off),
    dgid: b.slice(off + 8, off + 24),
    sgid: b.slice(off + 24, off + 40),
    ...tail,
  } as unknown as PathRecord;
}

/** Encode a PathRecord into `out` at `off` (allocated when omitted); bytes 58..63 (reserved) as 0. */
export function encodePathRecord(v: PathRecord, out?: Uint8Array, off = 0): Uint8Array {
  checkBytes("PathRecord", "dgid", v.dgid, 16);
  checkBytes("PathRecord", "sgid", v.sgid, 16);
  const b = encodeLayout(
    PATH_TAIL,
    PATH_RECORD_BYTES,
    "PathRecord",
    { ...v } as unknown as Record<string, number>,
    out,
    off,
  );
  wr64(b, off, v.serviceId);
  b.set(v.dgid, off + 8);
  b.set(v.sgid, off + 24);
  b.fill(0, off + 58, off + 64);
  return b;
}

/** MCMemberRecord (52 bytes). */
export interface McMemberRecord {
  mgid: Uint8Array;
  portGid: Uint8Array;
  qkey: number;
  mlid: number;
  mtuSelector: number;
  mtu: number;
  tClass: number;
  pkey: number;
  rateSelector: number;
  rate: number;
  packetLifeTimeSelector: number;
  packetLifeTime: number;
  sl: number;
  flowLabel: number;
  hopLimit: number;
  scope: number;
  /** Bit 0 full member, 1 non-member, 2 send-only non-member. */
  joinState: number;
  proxyJoin: number;
  reserved393: number;
}

/** Bytes in an MCMemberRecord. */
export const MC_MEMBER_RECORD_BYTES = 52;

const MCM_TAIL: readonly FieldSpec[] = [
  ["qkey", 256, 32],
  ["mlid", 288, 16],
  ["mtuSelector", 304, 2],
  ["mtu", 306, 6],
  ["tClass", 312, 8],
  ["pkey", 320, 16],
  ["rateSelector", 336, 2],
  ["rate", 338, 6],
  ["packetLifeTimeSelector", 344, 2],
  ["packetLifeTime", 346, 6],
  ["sl", 352, 4],
  ["flowLabel", 356, 20],
  ["hopLimit", 376, 8],
  ["scope", 384, 4],
  ["joinState", 388, 4],
  ["proxyJoin", 392, 1],
  ["reserved393", 393, 23],
];

/** Decode an MCMemberRecord at `off` (GIDs are copies). */
export function decodeMcMemberRecord(b: Uint8Array, off = 0): McMemberRecord {
  const tail = decodeLayout(MCM_TAIL, MC_MEMBER_RECORD_BYTES, "MCMemberRecord", b, off);
  return {
    mgid: b.slice(off, off + 16),
    portGid: b.slice(off + 16, off + 32),
    ...tail,
  } as unknown as McMemberRecord;
}

/** Encode an MCMemberRecord into `out` at `off` (allocated when omitted). */
export function encodeMcMemberRecord(v: McMemberRecord, out?: Uint8Array, off = 0): Uint8Array {
  checkBytes("MCMemberRecord", "mgid", v.mgid, 16);
  checkBytes("MCMemberRecord", "portGid", v.portGid, 16);
  const b = encodeLayout(
    MCM_TAIL,
    MC_MEMBER_RECORD_BYTES,
    "MCMemberRecord",
    { ...v } as unknown as Record<string, number>,
    out,
    off,
  );
  b.set(v.mgid, off);
  b.set(v.portGid, off + 16);
  return b;
}

/** SMInfo (24 bytes). */
export interface SmInfo {
  guid: bigint;
  smKey: bigint;
  actCount: number;
  priority: number;
  /** 0 not active, 1 discovering, 2 standby, 3 master. */
  smState: number;
}

/** Decode SMInfo at `off`. */
export function decodeSmInfo(b: Uint8Array, off = 0): SmInfo {
  need(b, off, 21, "SMInfo");
  return {
    guid: rd64(b, off),
    smKey: rd64(b, off + 8),
    actCount: ((b[off + 16] << 24) | (b[off + 17] << 16) | (b[off + 18] << 8) | b[off + 19]) >>> 0,
    priority: b[off + 20] >>> 4,
    smState: b[off + 20] & 0x0f,
  };
}
