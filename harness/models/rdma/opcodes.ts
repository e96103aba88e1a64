/**
 * The BTH opcode table as data: for every opcode of the RC, UC and UD
 * transports, its operation, its place in a message (FIRST/MIDDLE/LAST/ONLY),
 * and the extended transport headers it carries, in wire order. From the IBA
 * specification volume 1, section 9.2 (opcode field) and 9.3 (which headers
 * each packet carries); opcode values as listed in docs/wire.md. Plus the
 * RoCEv2 congestion notification packet (CNP, opcode 0x81, RoCEv2 annex A17),
 * which carries 16 reserved bytes after the BTH.
 */

/** Transport service selected by the opcode's top three bits. */
export type Transport = "RC" | "UC" | "UD" | "CNP";

/** Operation an opcode belongs to. */
export type Operation =
  | "SEND"
  | "RDMA_WRITE"
  | "RDMA_READ_REQUEST"
  | "RDMA_READ_RESPONSE"
  | "ACKNOWLEDGE"
  | "ATOMIC_ACKNOWLEDGE"
  | "COMPARE_SWAP"
  | "FETCH_ADD"
  | "CNP";

/** Place of a packet in its message. */
export type Position = "FIRST" | "MIDDLE" | "LAST" | "ONLY";

/** Extended transport headers, named as in the IBA specification. */
export type ExtHeader = "DETH" | "RETH" | "AtomicETH" | "AETH" | "AtomicAckETH" | "ImmDt" | "IETH";

/** Everything the wire format says about one opcode. */
export interface OpcodeInfo {
  opcode: number;
  /** E.g. `RC_SEND_FIRST`. */
  name: string;
  transport: Transport;
  operation: Operation;
  position: Position;
  /** Extended headers after the BTH, in wire order. */
  headers: readonly ExtHeader[];
  /** Total bytes of those headers. */
  headerBytes: number;
  /** Whether a payload may follow the headers. */
  hasPayload: boolean;
  /** Sent by a requester (true) or a responder (false). */
  isRequest: boolean;
}

/** Transport bases (opcode bits 7..5). */
export const TRANSPORT_BASE = { RC: 0x00, UC: 0x20, RD: 0x40, UD: 0x60, CNP: 0x80 } as const;

/** Bytes of each extended header. */
export const EXT_HEADER_BYTES: Readonly<Record<ExtHeader, number>> = {
  DETH: 8,
  RETH: 16,
  AtomicETH: 28,
  AETH: 4,
  AtomicAckETH: 8,
  ImmDt: 4,
  IETH: 4,
};

/** One row of the operation table: low five opcode bits and what they mean. */
interface OpRow {
  code: number;
  op: string;
  operation: Operation;
  position: Position;
  headers: readonly ExtHeader[];
  hasPayload: boolean;
  isRequest: boolean;
  /** Transports that define this operation code. */
  transports: readonly ("RC" | "UC" | "UD")[];
}

const RC_UC = ["RC", "UC"] as const;
const RC = ["RC"] as const;
const UD = ["UD"] as const;

/** IBA volume 1 table 35 ("OpCode field") and 9.3's header rules, one row per operation code. */
const OPERATIONS: readonly OpRow[] = [
  row(0x00, "SEND_FIRST", "SEND", "FIRST", [], true, true, RC_UC),
  row(0x01, "SEND_MIDDLE", "SEND", "MIDDLE", [], true, true, RC_UC),
  row(0x02, "SEND_LAST", "SEND", "LAST", [], true, true, RC_UC),
  row(0x03, "SEND_LAST_WITH_IMMEDIATE", "SEND", "LAST", ["ImmDt"], true, true, RC_UC),
  row(0x04, "SEND_ONLY", "SEND", "ONLY", [], true, true, RC_UC),
  row(0x05, "SEND_ONLY_WITH_IMMEDIATE", "SEND", "ONLY", ["ImmDt"], true, true, RC_UC),
  row(0x06, "RDMA_WRITE_FIRST", "RDMA_WRITE", "FIRST", ["RETH"], true, true, RC_UC),
  row(0x07, "RDMA_WRITE_MIDDLE", "RDMA_WRITE", "MIDDLE", [], true, true, RC_UC),
  row(0x08, "RDMA_WRITE_LAST", "RDMA_WRITE", "LAST", [], true, true, RC_UC),
  row(0x09, "RDMA_WRITE_LAST_WITH_IMMEDIATE", "RDMA_WRITE", "LAST", ["ImmDt"], true, true, RC_UC),
  row(0x0a, "RDMA_WRITE_ONLY", "RDMA_WRITE", "ONLY", ["RETH"], true, true, RC_UC),
  row(
    0x0b,
    "RDMA_WRITE_ONLY_WITH_IMMEDIATE",
    "RDMA_WRITE",
    "ONLY",
    ["RETH", "ImmDt"],
    true,
    true,
    RC_UC,
  ),
  row(0x0c, "RDMA_READ_REQUEST", "RDMA_READ_REQUEST", "ONLY", ["RETH"], false, true, RC),
  row(0x0d, "RDMA_READ_RESPONSE_FIRST", "RDMA_READ_RESPONSE", "FIRST", ["AETH"], true, false, RC),
  row(0x0e, "RDMA_READ_RESPONSE_MIDDLE", "RDMA_READ_RESPONSE", "MIDDLE", [], true, false, RC),
  row(0x0f, "RDMA_READ_RESPONSE_LAST", "RDMA_READ_RESPONSE", "LAST", ["AETH"], true, false, RC),
  row(0x10, "RDMA_READ_RESPONSE_ONLY", "RDMA_READ_RESPONSE", "ONLY", ["AETH"], true, false, RC),
  row(0x11, "ACKNOWLEDGE", "ACKNOWLEDGE", "ONLY", ["AETH"], false, false, RC),
  row(
    0x12,
    "ATOMIC_ACKNOWLEDGE",
    "ATOMIC_ACKNOWLEDGE",
    "ONLY",
    ["AETH", "AtomicAckETH"],
    false,
    false,
    RC,
  ),
  row(0x13, "COMPARE_SWAP", "COMPARE_SWAP", "ONLY", ["AtomicETH"], false, true, RC),
  row(0x14, "FETCH_ADD", "FETCH_ADD", "ONLY", ["AtomicETH"], false, true, RC),
  row(0x16, "SEND_LAST_WITH_INVALIDATE", "SEND", "LAST", ["IETH"], true, true, RC),
  row(0x17, "SEND_ONLY_WITH_INVALIDATE", "SEND", "ONLY", ["IETH"], true, true, RC),
  // UD: every packet is a whole message and carries a DETH (IBA 9.3.2).
  row(0x04, "SEND_ONLY", "SEND", "ONLY", ["DETH"], true, true, UD),
  row(0x05, "SEND_ONLY_WITH_IMMEDIATE", "SEND", "ONLY", ["DETH", "ImmDt"], true, true, UD),
];

function row(
  code: number,
  op: string,
  operation: Operation,
  position: Position,
  headers: readonly ExtHeader[],
  hasPayload: boolean,
  isRequest: boolean,
  transports: readonly ("RC" | "UC" | "UD")[],
): OpRow {
  return { code, op, operation, position, headers, hasPayload, isRequest, transports };
}

/** CNP opcode of RoCEv2 (annex A17). */
export const CNP_OPCODE = 0x81;

function buildTable(): readonly (OpcodeInfo | undefined)[] {
  const t: (OpcodeInfo | undefined)[] = new Array(256).fill(undefined);
  for (const r of OPERATIONS) {
    for (const tr of r.transports) {
      const opcode = TRANSPORT_BASE[tr] | r.code;
      t[opcode] = Object.freeze({
        opcode,
        name: `${tr}_${r.op}`,
        transport: tr,
        operation: r.operation,
        position: r.position,
        headers: r.headers,
        headerBytes: r.headers.reduce((n, h) => n + EXT_HEADER_BYTES[h], 0),
        hasPayload: r.hasPayload,
        isRequest: r.isRequest,
      });
    }
  }
  t[CNP_OPCODE] = Object.freeze({
    opcode: CNP_OPCODE,
    name: "CNP",
    transport: "CNP",
    operation: "CNP",
    position: "ONLY",
    headers: [],
    headerBytes: 0,
    hasPayload: true,
    isRequest: false,
  });
  return Object.freeze(t);
}

/** Indexed by opcode; `undefined` for opcodes this oracle does not accept (RD, reserved). */
export const OPCODES: readonly (OpcodeInfo | undefined)[] = buildTable();

/** The table entry of `opcode`, or undefined if it is not an RC/UC/UD/CNP opcode. */
export function opcodeInfo(opcode: number): OpcodeInfo | undefined {
  return OPCODES[opcode & 0xff];
}

/** Opcode numbers by name, for building packets (the table above is the authority). */
export const OP = {
  RC_SEND_FIRST: 0x00,
  RC_SEND_MIDDLE: 0x01,
  RC_SEND_LAST: 0x02,
  RC_SEND_LAST_WITH_IMMEDIATE: 0x03,
  RC_SEND_ONLY: 0x04,
  RC_SEND_ONLY_WITH_IMMEDIATE: 0x05,
  RC_RDMA_WRITE_FIRST: 0x06,
  RC_RDMA_WRITE_MIDDLE: 0x07,
  RC_RDMA_WRITE_LAST: 0x08,
  RC_RDMA_WRITE_LAST_WITH_IMMEDIATE: 0x09,
  RC_RDMA_WRITE_ONLY: 0x0a,
  RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE: 0x0b,
  RC_RDMA_READ_REQUEST: 0x0c,
  RC_RDMA_READ_RESPONSE_FIRST: 0x0d,
  RC_RDMA_READ_RESPONSE_MIDDLE: 0x0e,
  RC_RDMA_READ_RESPONSE_LAST: 0x0f,
  RC_RDMA_READ_RESPONSE_ONLY: 0x10,
  RC_ACKNOWLEDGE: 0x11,
  RC_ATOMIC_ACKNOWLEDGE: 0x12,
  RC_COMPARE_SWAP: 0x13,
  RC_FETCH_ADD: 0x14,
  RC_SEND_LAST_WITH_INVALIDATE: 0x16,
  RC_SEND_ONLY_WITH_INVALIDATE: 0x17,
  UC_SEND_FIRST: 0x20,
  UC_SEND_MIDDLE: 0x21,
  UC_SEND_LAST: 0x22,
  UC_SEND_LAST_WITH_IMMEDIATE: 0x23,
  UC_SEND_ONLY: 0x24,
  UC_SEND_ONLY_WITH_IMMEDIATE: 0x25,
  UC_RDMA_WRITE_FIRST: 0x26,
  UC_RDMA_WRITE_MIDDLE: 0x27,
  UC_RDMA_WRITE_LAST: 0x28,
  UC_RDMA_WRITE_LAST_WITH_IMMEDIATE: 0x29,
  UC_RDMA_WRITE_ONLY: 0x2a,
  UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE: 0x2b,
  UD_SEND_ONLY: 0x64,
  UD_SEND_ONLY_WITH_IMMEDIATE: 0x65,
  CNP: 0x81,
} as const;
