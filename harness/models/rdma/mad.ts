/**
 * Management datagrams (MADs): the 24-byte common header, subnet management
 * packets (SMPs, LID-routed and directed-route) and the attributes the subnet
 * manager and the driver's SMA exchange: NodeInfo, PortInfo, P_KeyTable and
 * GUIDInfo. Layouts per the IBA specification volume 1, chapters 13 (MAD,
 * SMP formats) and 14 (subnet management attributes); constants as in
 * docs/wire.md. A MAD is always 256 bytes, the payload of a UD SEND_ONLY to
 * QP0 (SMI) or QP1 (GSI).
 */
import { checkBytes, checkField, checkField64, need, rd16, rd64, wr16, wr64 } from "./bytes.ts";
import { decodeLayout, encodeLayout, type FieldSpec } from "./bitfield.ts";

/** Bytes in every MAD. */
export const MAD_BYTES = 256;
/** Bytes in the MAD common header. */
export const MAD_HEADER_BYTES = 24;
/** Bytes of the SMP data field (where the attribute lives). */
export const SMP_DATA_BYTES = 64;

/** Management classes. */
export const MGMT_CLASS = {
  SUBN_LID_ROUTED: 0x01,
  SUBN_ADM: 0x03,
  PERF: 0x04,
  CM: 0x07,
  SUBN_DIRECTED_ROUTE: 0x81,
} as const;

/** Methods (the whole method byte; 0x80 is the response bit). */
export const MAD_METHOD = {
  GET: 0x01,
  SET: 0x02,
  SEND: 0x03,
  TRAP: 0x05,
  GET_RESP: 0x81,
  TRAP_REPRESS: 0x07,
  REPORT: 0x06,
  REPORT_RESP: 0x86,
  GET_TABLE: 0x12,
  GET_TABLE_RESP: 0x92,
  GET_TRACE_TABLE: 0x13,
  GET_MULTI: 0x14,
  GET_MULTI_RESP: 0x94,
  DELETE: 0x15,
  DELETE_RESP: 0x95,
} as const;

/** Subnet management attribute IDs. */
export const SMP_ATTR = {
  NODE_DESCRIPTION: 0x0010,
  NODE_INFO: 0x0011,
  GUID_INFO: 0x0014,
  PORT_INFO: 0x0015,
  PKEY_TABLE: 0x0016,
  SM_INFO: 0x0020,
} as const;

/** PortInfo.PortState values. */
export const PORT_STATE = { NO_CHANGE: 0, DOWN: 1, INIT: 2, ARMED: 3, ACTIVE: 4 } as const;

/** Q_Key every GSI (QP1) MAD is sent with. */
export const GSI_QKEY = 0x80010000;

/** The MAD common header. */
export interface MadHeader {
  baseVersion: number;
  mgmtClass: number;
  classVersion: number;
  /** Whole method byte, response bit (0x80) included. */
  method: number;
  /** On directed-route SMPs bit 15 is the D (direction) bit. */
  status: number;
  /** On directed-route SMPs: hop pointer (high byte) and hop count (low byte). */
  classSpecific: number;
  transactionId: bigint;
  attributeId: number;
  reserved: number;
  attributeModifier: number;
}

const MAD_HEADER_LAYOUT: readonly FieldSpec[] = [
  ["baseVersion", 0, 8],
  ["mgmtClass", 8, 8],
  ["classVersion", 16, 8],
  ["method", 24, 8],
  ["status", 32, 16],
  ["classSpecific", 48, 16],
  ["transactionId", 64, 64],
  ["attributeId", 128, 16],
  ["reserved", 144, 16],
  ["attributeModifier", 160, 32],
];

/** Decode a MAD common header at `off`. */
export function decodeMadHeader(b: Uint8Array, off = 0): MadHeader {
  return decodeLayout(
    MAD_HEADER_LAYOUT,
    MAD_HEADER_BYTES,
    "MAD header",
    b,
    off,
  ) as unknown as MadHeader;
}

/** Encode a MAD common header into `out` at `off` (allocated when omitted). */
export function encodeMadHeader(h: MadHeader, out?: Uint8Array, off = 0): Uint8Array {
  return encodeLayout(MAD_HEADER_LAYOUT, MAD_HEADER_BYTES, "MAD header", { ...h }, out, off);
}

/** Any MAD: the common header and the 232 class-specific bytes after it. */
export interface Mad {
  header: MadHeader;
  /** Bytes 24..255, a view into the decoded buffer. */
  data: Uint8Array;
}

/** Decode a 256-byte MAD at `off`. */
export function decodeMad(b: Uint8Array, off = 0): Mad {
  need(b, off, MAD_BYTES, "MAD");
  return {
    header: decodeMadHeader(b, off),
    data: b.subarray(off + MAD_HEADER_BYTES, off + MAD_BYTES),
  };
}

/** Encode a MAD into a new 256-byte array (or `out` at `off`). */
export function encodeMad(m: Mad, out?: Uint8Array, off = 0): Uint8Array {
  checkBytes("MAD", "data", m.data, MAD_BYTES - MAD_HEADER_BYTES);
  const b = out ?? new Uint8Array(MAD_BYTES);
  need(b, off, MAD_BYTES, "MAD (encode)");
  encodeMadHeader(m.header, b, off);
  b.set(m.data, off + MAD_HEADER_BYTES);
  return b;
}

/** Whether a header belongs to a directed-route SMP. */
export function isDirectedRoute(h: MadHeader): boolean {
  return h.mgmtClass === MGMT_CLASS.SUBN_DIRECTED_ROUTE;
}

/** Directed-route D bit: 0 outbound (SM to target), 1 returning. */
export function drDirection(h: MadHeader): number {
  return h.status >>> 15;
}

/** Directed-route hop pointer. */
export function drHopPointer(h: MadHeader): number {
  return h.classSpecific >>> 8;
}

/** Directed-route hop count. */
export function drHopCount(h: MadHeader): number {
  return h.classSpecific & 0xff;
}

/** `status` and `classSpecific` values for a directed-route SMP header. */
export function drHeaderFields(
  d: number,
  status: number,
  hopPointer: number,
  hopCount: number,
): { status: number; classSpecific: number } {
  checkField("SMP", "D", d, 1);
  checkField("SMP", "status", status, 15);
  checkField("SMP", "hopPointer", hopPointer, 8);
  checkField("SMP", "hopCount", hopCount, 8);
  return { status: (d << 15) | status, classSpecific: (hopPointer << 8) | hopCount };
}

/**
 * A subnet management packet. LID-routed SMPs use only `header`, `mKey` and
 * `data`; directed-route SMPs also `drSlid`, `drDlid`, `initialPath` and
 * `returnPath`. Reserved areas are written as zeros.
 */
export interface Smp {
  header: MadHeader;
  mKey: bigint;
  /** Directed route: LID of the directed-route source (0xFFFF = permissive). */
  drSlid: number;
  /** Directed route: LID of the directed-route destination. */
  drDlid: number;
  /** The attribute, 64 bytes. */
  data: Uint8Array;
  /** Directed route: output port per hop, 64 bytes (entry 0 unused). */
  initialPath: Uint8Array;
  /** Directed route: input port per hop on the way back, 64 bytes. */
  returnPath: Uint8Array;
}

/** Decode a 256-byte SMP at `off`. Byte arrays are views into `b`. */
export function decodeSmp(b: Uint8Array, off = 0): Smp {
  need(b, off, MAD_BYTES, "SMP");
  const header = decodeMadHeader(b, off);
  const dr = isDirectedRoute(header);
  const zero = new Uint8Array(64);
  return {
    header,
    mKey: rd64(b, off + 24),
    drSlid: dr ? rd16(b, off + 32) : 0,
    drDlid: dr ? rd16(b, off + 34) : 0,
    data: b.subarray(off + 64, off + 128),
    initialPath: dr ? b.subarray(off + 128, off + 192) : zero,
    returnPath: dr ? b.subarray(off + 192, off + 256) : zero,
  };
}

/** Encode an SMP into a new 256-byte array (or `out` at `off`). */
export function encodeSmp(s: Smp, out?: Uint8Array, off = 0): Uint8Array {
  checkField64("SMP", "mKey", s.mKey);
  checkField("SMP", "drSlid", s.drSlid, 16);
  checkField("SMP", "drDlid", s.drDlid, 16);
  checkBytes("SMP", "data", s.data, SMP_DATA_BYTES);
  checkBytes("SMP", "initialPath", s.initialPath, 64);
  checkBytes("SMP", "returnPath", s.returnPath, 64);
  const b = out ?? new Uint8Array(MAD_BYTES);
  need(b, off, MAD_BYTES, "SMP (encode)");
  b.fill(0, off, off + MAD_BYTES);
  encodeMadHeader(s.header, b, off);
  wr64(b, off + 24, s.mKey);
  b.set(s.data, off + 64);
  if (isDirectedRoute(s.header)) {
    wr16(b, off + 32, s.drSlid);
    wr16(b, off + 34, s.drDlid);
    b.set(s.initialPath, off + 128);
    b.set(s.returnPath, off + 192);
  }
  return b;
}

/** NodeInfo attribute (40 bytes). */
export interface NodeInfo {
  baseVersion: number;
  classVersion: number;
  /** 1 channel adapter, 2 switch, 3 router. */
  nodeType: number;
  numPorts: number;
  systemImageGuid: bigint;
  nodeGuid: bigint;
  portGuid: bigint;
  partitionCap: number;
  deviceId: number;
  revision: number;
  localPortNum: number;
  vendorId: number;
}

/** Bytes in a NodeInfo attribute. */
export const NODE_INFO_BYTES = 40;

const NODE_INFO_LAYOUT: readonly FieldSpec[] = [
  ["baseVersion", 0, 8],
  ["classVersion", 8, 8],
  ["nodeType", 16, 8],
  ["numPorts", 24, 8],
  ["systemImageGuid", 32, 64],
  ["nodeGuid", 96, 64],
  ["portGuid", 160, 64],
  ["partitionCap", 224, 16],
  ["deviceId", 240, 16],
  ["revision", 256, 32],
  ["localPortNum", 288, 8],
  ["vendorId", 296, 24],
];

/** Decode NodeInfo at `off` (usually an SMP's `data`). */
export function decodeNodeInfo(b: Uint8Array, off = 0): NodeInfo {
  return decodeLayout(NODE_INFO_LAYOUT, NODE_INFO_BYTES, "NodeInfo", b, off) as unknown as NodeInfo;
}

/** Encode NodeInfo into `out` at `off` (allocated when omitted). */
export function encodeNodeInfo(v: NodeInfo, out?: Uint8Array, off = 0): Uint8Array {
  return encodeLayout(NODE_INFO_LAYOUT, NODE_INFO_BYTES, "NodeInfo", { ...v }, out, off);
}

/** PortInfo attribute (64 bytes); every bit is a field, reserved ones included. */
export interface PortInfo {
  mKey: bigint;
  gidPrefix: bigint;
  lid: number;
  masterSmLid: number;
  capabilityMask: number;
  diagCode: number;
  mKeyLeasePeriod: number;
  localPortNum: number;
  linkWidthEnabled: number;
  linkWidthSupported: number;
  linkWidthActive: number;
  linkSpeedSupported: number;
  /** See {@link PORT_STATE}. */
  portState: number;
  portPhysicalState: number;
  linkDownDefaultState: number;
  mKeyProtectBits: number;
  reserved274: number;
  lmc: number;
  linkSpeedActive: number;
  linkSpeedEnabled: number;
  /** 1 = 256, 2 = 512, 3 = 1024, 4 = 2048, 5 = 4096 bytes. */
  neighborMtu: number;
  masterSmSl: number;
  vlCap: number;
  initType: number;
  vlHighLimit: number;
  vlArbitrationHighCap: number;
  vlArbitrationLowCap: number;
  initTypeReply: number;
  mtuCap: number;
  vlStallCount: number;
  hoqLife: number;
  operationalVls: number;
  partitionEnforcementInbound: number;
  partitionEnforcementOutbound: number;
  filterRawInbound: number;
  filterRawOutbound: number;
  mKeyViolations: number;
  pKeyViolations: number;
  qKeyViolations: number;
  guidCap: number;
  clientReregister: number;
  multicastPKeyTrapSuppression: number;
  subnetTimeout: number;
  reserved416: number;
  respTimeValue: number;
  localPhyErrors: number;
  overrunErrors: number;
  maxCreditHint: number;
  reserved448: number;
  linkRoundTripLatency: number;
  capabilityMask2: number;
  linkSpeedExtActive: number;
  linkSpeedExtSupported: number;
  reserved504: number;
  linkSpeedExtEnabled: number;
}

/** Bytes in a PortInfo attribute. */
export const PORT_INFO_BYTES = 64;

/** PortInfo fields with their bit offsets (IBA vol. 1 table 146 "PortInfo"). */
export const PORT_INFO_LAYOUT: readonly FieldSpec[] = [
  ["mKey", 0, 64],
  ["gidPrefix", 64, 64],
  ["lid", 128, 16],
  ["masterSmLid", 144, 16],
  ["capabilityMask", 160, 32],
  ["diagCode", 192, 16],
  ["mKeyLeasePeriod", 208, 16],
  ["localPortNum", 224, 8],
  ["linkWidthEnabled", 232, 8],
  ["linkWidthSupported", 240, 8],
  ["linkWidthActive", 248, 8],
  ["linkSpeedSupported", 256, 4],
  ["portState", 260, 4],
  ["portPhysicalState", 264, 4],
  ["linkDownDefaultState", 268, 4],
  ["mKeyProtectBits", 272, 2],
  ["reserved274", 274, 3],
  ["lmc", 277, 3],
  ["linkSpeedActive", 280, 4],
  ["linkSpeedEnabled", 284, 4],
  ["neighborMtu", 288, 4],
  ["masterSmSl", 292, 4],
  ["vlCap", 296, 4],
  ["initType", 300, 4],
  ["vlHighLimit", 304, 8],
  ["vlArbitrationHighCap", 312, 8],
  ["vlArbitrationLowCap", 320, 8],
  ["initTypeReply", 328, 4],
  ["mtuCap", 332, 4],
  ["vlStallCount", 336, 3],
  ["hoqLife", 339, 5],
  ["operationalVls", 344, 4],
  ["partitionEnforcementInbound", 348, 1],
  ["partitionEnforcementOutbound", 349, 1],
  ["filterRawInbound", 350, 1],
  ["filterRawOutbound", 351, 1],
  ["mKeyViolations", 352, 16],
  ["pKeyViolations", 368, 16],
  ["qKeyViolations", 384, 16],
  ["guidCap", 400, 8],
  ["clientReregister", 408, 1],
  ["multicastPKeyTrapSuppression", 409, 2],
  ["subnetTimeout", 411, 5],
  ["reserved416", 416, 3],
  ["respTimeValue", 419, 5],
  ["localPhyErrors", 424, 4],
  ["overrunErrors", 428, 4],
  ["maxCreditHint", 432, 16],
  ["reserved448", 448, 8],
  ["linkRoundTripLatency", 456, 24],
  ["capabilityMask2", 480, 16],
  ["linkSpeedExtActive", 496, 4],
  ["linkSpeedExtSupported", 500, 4],
  ["reserved504", 504, 3],
  ["linkSpeedExtEnabled", 507, 5],
];

/** Decode PortInfo at `off` (usually an SMP's `data`). */
export function decodePortInfo(b: Uint8Array, off = 0): PortInfo {
  return decodeLayout(PORT_INFO_LAYOUT, PORT_INFO_BYTES, "PortInfo", b, off) as unknown as PortInfo;
}

/** Encode PortInfo into `out` at `off` (allocated when omitted). */
export function encodePortInfo(v: PortInfo, out?: Uint8Array, off = 0): Uint8Array {
  return encodeLayout(PORT_INFO_LAYOUT, PORT_INFO_BYTES, "PortInfo", { ...v }, out, off);
}

/** Entries in one P_KeyTable block (the attribute modifier selects the block). */
export const PKEY_BLOCK_ENTRIES = 32;

/** Decode one P_KeyTable block (32 16-bit P_Keys, membership bit 15 included). */
export function decodePKeyTable(b: Uint8Array, off = 0): number[] {
  need(b, off, 2 * PKEY_BLOCK_ENTRIES, "P_KeyTable");
  const out: number[] = [];
  for (let i = 0; i < PKEY_BLOCK_ENTRIES; i++) out.push(rd16(b, off + 2 * i));
  return out;
}

/** Encode one P_KeyTable block (exactly 32 entries). */
export function encodePKeyTable(keys: readonly number[], out?: Uint8Array, off = 0): Uint8Array {
  if (keys.length !== PKEY_BLOCK_ENTRIES) {
    throw new RangeError(
      `P_KeyTable: a block has ${PKEY_BLOCK_ENTRIES} entries, got ${keys.length}`,
    );
  }
  const b = out ?? new Uint8Array(2 * PKEY_BLOCK_ENTRIES);
  need(b, off, 2 * PKEY_BLOCK_ENTRIES, "P_KeyTable (encode)");
  keys.forEach((k, i) => {
    checkField("P_KeyTable", `entry${i}`, k, 16);
    wr16(b, off + 2 * i, k);
  });
  return b;
}

/** Entries in one GUIDInfo block. */
export const GUID_BLOCK_ENTRIES = 8;

/** Decode one GUIDInfo block (8 64-bit GUIDs). */
export function decodeGuidInfo(b: Uint8Array, off = 0): bigint[] {
  need(b, off, 8 * GUID_BLOCK_ENTRIES, "GUIDInfo");
  const out: bigint[] = [];
  for (let i = 0; i < GUID_BLOCK_ENTRIES; i++) out.push(rd64(b, off + 8 * i));
  return out;
}

/** Encode one GUIDInfo block (exactly 8 entries). */
export function encodeGuidInfo(guids: readonly bigint[], out?: Uint8Array, off = 0): Uint8Array {
  if (guids.length !== GUID_BLOCK_ENTRIES) {
    throw new RangeError(
      `GUIDInfo: a block has ${GUID_BLOCK_ENTRIES} entries, got ${guids.length}`,
    );
  }
  const b = out ?? new Uint8Array(8 * GUID_BLOCK_ENTRIES);
  need(b, off, 8 * GUID_BLOCK_ENTRIES, "GUIDInfo (encode)");
  guids.forEach((g, i) => {
    checkField64("GUIDInfo", `entry${i}`, g);
    wr64(b, off + 8 * i, g);
  });
  return b;
}
