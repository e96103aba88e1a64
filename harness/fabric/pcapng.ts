/**
 * pcapng reader and writer (IETF draft-ietf-opsawg-pcapng): Section Header
 * Blocks, Interface Description Blocks (with `if_name`, `if_tsresol` and
 * `if_tsoffset`) and Enhanced Packet Blocks. The reader accepts sections of
 * either byte order, several sections in one file, and skips Simple Packet
 * Blocks and every block type it does not know. The writer emits one
 * little-endian section with nanosecond timestamps (`if_tsresol` = 9), which
 * Wireshark and tshark open as they are.
 *
 * cnuas-switch writes its captures in this format; its tests read them back
 * with {@link readPcapng} (in memory) or {@link scanPcapngFile} (a block at a
 * time, for captures of any size), so the API below is stable.
 *
 * @example
 * ```ts
 * const bytes = writePcapng([{ linkType: 1, name: "port0" }], [
 *   { interfaceId: 0, timestampNs: 1_000n, data: frame },
 * ]);
 * const { interfaces, packets } = readPcapng(bytes);
 * ```
 */
import { HilError } from "../errors.ts";

/** One capture interface (a switch port). */
export interface PcapngInterface {
  /** pcap link type: 1 = Ethernet, 247 = InfiniBand. */
  linkType: number;
  /** `if_name`, when the file gives one. */
  name?: string;
  /**
   * Nanoseconds per timestamp tick, rounded down (1n for nanosecond files,
   * 1000n for the default microseconds; 0n when ticks are finer than 1 ns).
   */
  tsResolNs: bigint;
}

/** One captured packet. */
export interface PcapngPacket {
  /** Index into `interfaces` (across all sections of the file). */
  interfaceId: number;
  /** Capture time in nanoseconds since the epoch (`if_tsoffset` applied). */
  timestampNs: bigint;
  /** Captured bytes. */
  data: Uint8Array;
  /** Length of the packet on the wire (≥ `data.length` when truncated by the snap length). */
  origLen: number;
  /** `epb_flags` direction bits, when the file gives them (the switch records both). */
  direction?: "inbound" | "outbound";
}

/** A pcapng file that cannot be read; the message says where and why. */
export class PcapngFormatError extends HilError {
  /** `offset` is the byte offset of the offending block. */
  constructor(message: string, readonly offset: number) {
    super(`pcapng: ${message} (at byte ${offset}); is this a complete pcapng capture?`);
    this.name = "PcapngFormatError";
  }
}

const BT_SHB = 0x0a0d0d0a;
const BT_IDB = 0x00000001;
const BT_EPB = 0x00000006;
const BYTE_ORDER_MAGIC = 0x1a2b3c4d;
const OPT_ENDOFOPT = 0;
const OPT_IF_NAME = 2;
const OPT_IF_TSRESOL = 9;
const OPT_IF_TSOFFSET = 14;
const OPT_EPB_FLAGS = 2;

interface IfState {
  /** Ticks per second is 10^exp or 2^exp. */
  base: 10 | 2;
  exp: number;
  offsetNs: bigint;
}

/**
 * Read every interface and packet of a pcapng file held in memory.
 *
 * @throws {PcapngFormatError} when the bytes are not pcapng or a block is cut short.
 */
export function readPcapng(
  bytes: Uint8Array,
): { interfaces: PcapngInterface[]; packets: PcapngPacket[] } {
  const parser = new BlockParser();
  const packets: PcapngPacket[] = [];
  let off = 0;
  while (off < bytes.length) {
    const len = parser.blockLength(bytes, off, off, bytes.length - off);
    const pkt = parser.parseBlock(bytes.subarray(off, off + len), off);
    if (pkt) packets.push(pkt);
    off += len;
  }
  return { interfaces: parser.interfaces, packets };
}

/** What {@link scanPcapngFile} read. */
export interface PcapngScan {
  /** Every interface the file describes, in order. */
  interfaces: PcapngInterface[];
  /** Packets handed to the callback. */
  packets: number;
  /** Bytes read: the whole file, or the scan threw. */
  bytes: number;
}

/** Read size of {@link scanPcapngFile}; a block larger than this grows the buffer. */
const SCAN_CHUNK = 4 << 20;

/**
 * Read a pcapng file a block at a time, handing each packet to `onPacket`
 * with the interfaces described so far — memory stays at one read buffer
 * however large the file (a 1 MiB pingpong's capture is over 2 GiB).
 *
 * @throws {PcapngFormatError} as {@link readPcapng}, or what `onPacket` throws.
 */
export async function scanPcapngFile(
  path: string,
  onPacket: (pkt: PcapngPacket, interfaces: readonly PcapngInterface[]) => void,
): Promise<PcapngScan> {
  const parser = new BlockParser();
  const file = await Deno.open(path, { read: true });
  try {
    const size = (await file.stat()).size;
    let buf = new Uint8Array(SCAN_CHUNK);
    let head = 0; // buf[head..tail) is unparsed file content starting at file offset `at`
    let tail = 0;
    let at = 0;
    let packets = 0;
    /** Make buf hold `need` unparsed bytes, or as many as remain; returns how many it holds. */
    const fill = async (need: number): Promise<number> => {
      if (tail - head >= need) return tail - head;
      buf.copyWithin(0, head, tail);
      tail -= head;
      head = 0;
      if (need > buf.length) {
        const bigger = new Uint8Array(Math.max(need, buf.length * 2));
        bigger.set(buf.subarray(0, tail));
        buf = bigger;
      }
      while (tail < need) {
        const n = await file.read(buf.subarray(tail));
        if (n === null) break;
        tail += n;
      }
      return tail - head;
    };
    while ((await fill(28)) > 0) {
      const len = parser.blockLength(buf.subarray(head, tail), 0, at, size - at);
      if ((await fill(len)) < len) {
        throw new PcapngFormatError("the file ends inside a block (it changed while read?)", at);
      }
      const pkt = parser.parseBlock(buf.subarray(head, head + len), at);
      if (pkt) {
        packets++;
        onPacket(pkt, parser.interfaces);
      }
      head += len;
      at += len;
    }
    return { interfaces: parser.interfaces, packets, bytes: at };
  } finally {
    file.close();
  }
}

/**
 * The block-by-block state of a pcapng reader: the current section's byte
 * order and first interface, and every interface so far.
 */
class BlockParser {
  readonly interfaces: PcapngInterface[] = [];
  readonly #ifStates: IfState[] = [];
  #le = true;
  #sectionBase = -1; // index in `interfaces` of the current section's interface 0

  /**
   * Check the header of the block at `bytes[off]` (its first `avail` bytes
   * up to 28 are there; `remaining` bytes are left in the file from it) and
   * return its total length, which fits in `remaining`. A section header
   * switches the byte order here. `fileOff` places errors in the file.
   */
  blockLength(bytes: Uint8Array, off: number, fileOff: number, remaining: number): number {
    const avail = bytes.length - off;
    if (avail < 12) throw new PcapngFormatError("file ends inside a block header", fileOff);
    const dv = new DataView(bytes.buffer, bytes.byteOffset + off, Math.min(avail, 28));
    if (dv.getUint32(0, true) === BT_SHB) {
      // The byte-order magic decides how this section (this block included) is read.
      if (avail < 28) throw new PcapngFormatError("section header block cut short", fileOff);
      if (dv.getUint32(8, true) === BYTE_ORDER_MAGIC) this.#le = true;
      else if (dv.getUint32(8, false) === BYTE_ORDER_MAGIC) this.#le = false;
      else {
        throw new PcapngFormatError(
          "section header without the byte-order magic 0x1A2B3C4D",
          fileOff,
        );
      }
      const major = dv.getUint16(12, this.#le);
      if (major !== 1) {
        throw new PcapngFormatError(`unsupported pcapng major version ${major}`, fileOff);
      }
      this.#sectionBase = this.interfaces.length;
    } else if (this.#sectionBase < 0) {
      throw new PcapngFormatError("file does not start with a section header block", fileOff);
    }
    const type = dv.getUint32(0, this.#le);
    const len = dv.getUint32(4, this.#le);
    if (len < 12 || len % 4 !== 0) {
      throw new PcapngFormatError(
        `block of type 0x${type.toString(16)} has invalid length ${len}`,
        fileOff,
      );
    }
    if (len > remaining) {
      throw new PcapngFormatError(
        `block of type 0x${type.toString(16)} (${len} bytes) runs past the end of the file`,
        fileOff,
      );
    }
    return len;
  }

  /** Parse one whole block (`block` is exactly its bytes, checked by blockLength); a packet block gives its packet. */
  parseBlock(block: Uint8Array, off: number): PcapngPacket | undefined {
    const le = this.#le;
    const dv = new DataView(block.buffer, block.byteOffset, block.byteLength);
    const len = block.length;
    const type = dv.getUint32(0, le);
    if (dv.getUint32(len - 4, le) !== len) {
      throw new PcapngFormatError(
        `block of type 0x${type.toString(16)}: trailing length differs from leading length`,
        off,
      );
    }
    const body = 8;
    const end = len - 4;
    if (type === BT_IDB) {
      if (end - body < 8) throw new PcapngFormatError("interface description block too short", off);
      const linkType = dv.getUint16(body, le);
      const st: IfState = { base: 10, exp: 6, offsetNs: 0n };
      let name: string | undefined;
      forEachOption(dv, body + 8, end, le, off, (code, vo, vl) => {
        if (code === OPT_IF_NAME) name = new TextDecoder().decode(block.subarray(vo, vo + vl));
        else if (code === OPT_IF_TSRESOL && vl >= 1) {
          const r = block[vo];
          st.base = r & 0x80 ? 2 : 10;
          st.exp = r & 0x7f;
        } else if (code === OPT_IF_TSOFFSET && vl >= 8) {
          st.offsetNs = dv.getBigInt64(vo, le) * 1_000_000_000n;
        }
      });
      this.#ifStates.push(st);
      this.interfaces.push({
        linkType,
        ...(name !== undefined ? { name } : {}),
        tsResolNs: nsPerTick(st),
      });
      return undefined;
    }
    // SHB handled in blockLength; SPB, name resolution, statistics and unknown blocks are skipped.
    if (type !== BT_EPB) return undefined;
    if (end - body < 20) throw new PcapngFormatError("enhanced packet block too short", off);
    const local = dv.getUint32(body, le);
    const id = this.#sectionBase + local;
    if (id >= this.interfaces.length) {
      throw new PcapngFormatError(
        `packet names interface ${local}, which this section does not describe`,
        off,
      );
    }
    const ticks = (BigInt(dv.getUint32(body + 4, le)) << 32n) |
      BigInt(dv.getUint32(body + 8, le));
    const capLen = dv.getUint32(body + 12, le);
    const origLen = dv.getUint32(body + 16, le);
    if (body + 20 + capLen > end) {
      throw new PcapngFormatError(
        `packet claims ${capLen} captured bytes but its block holds fewer`,
        off,
      );
    }
    const pkt: PcapngPacket = {
      interfaceId: id,
      timestampNs: ticksToNs(ticks, this.#ifStates[id]),
      data: block.slice(body + 20, body + 20 + capLen),
      origLen,
    };
    // options follow the packet data, padded to 32 bits
    forEachOption(dv, body + 20 + ((capLen + 3) & ~3), end, le, off, (code, v, vlen) => {
      if (code !== OPT_EPB_FLAGS || vlen !== 4) return;
      const dir = dv.getUint32(v, le) & 3;
      if (dir === 1) pkt.direction = "inbound";
      if (dir === 2) pkt.direction = "outbound";
    });
    return pkt;
  }
}

function forEachOption(
  dv: DataView,
  start: number,
  end: number,
  le: boolean,
  blockOff: number,
  fn: (code: number, valueOff: number, valueLen: number) => void,
): void {
  let o = start;
  while (o + 4 <= end) {
    const code = dv.getUint16(o, le);
    const vl = dv.getUint16(o + 2, le);
    if (code === OPT_ENDOFOPT) return;
    if (o + 4 + vl > end) {
      throw new PcapngFormatError(`option ${code} runs past its block`, blockOff);
    }
    fn(code, o + 4, vl);
    o += 4 + ((vl + 3) & ~3);
  }
}

function nsPerTick(st: IfState): bigint {
  if (st.base === 10) return st.exp <= 9 ? 10n ** BigInt(9 - st.exp) : 0n;
  return 1_000_000_000n / (1n << BigInt(st.exp));
}

function ticksToNs(ticks: bigint, st: IfState): bigint {
  let ns: bigint;
  if (st.base === 10) {
    ns = st.exp <= 9 ? ticks * 10n ** BigInt(9 - st.exp) : ticks / 10n ** BigInt(st.exp - 9);
  } else {
    ns = (ticks * 1_000_000_000n) / (1n << BigInt(st.exp));
  }
  return ns + st.offsetNs;
}

/**
 * Write one little-endian pcapng section: the interfaces (nanosecond
 * timestamps) and then the packets as Enhanced Packet Blocks, in the order given.
 *
 * @throws {RangeError} when a packet names an interface that is not in `interfaces`.
 */
export function writePcapng(
  interfaces: { linkType: number; name?: string }[],
  packets: { interfaceId: number; timestampNs: bigint; data: Uint8Array }[],
): Uint8Array {
  const enc = new TextEncoder();
  const names = interfaces.map((i) => (i.name !== undefined ? enc.encode(i.name) : undefined));
  let size = 28;
  names.forEach((n) => (size += 20 + 8 + (n ? 4 + pad4(n.length) : 0) + 4));
  for (const p of packets) size += 32 + pad4(p.data.length);
  const out = new Uint8Array(size);
  const dv = new DataView(out.buffer);
  let o = 0;
  // Section Header Block: no options, section length unknown (-1).
  dv.setUint32(o, BT_SHB, true);
  dv.setUint32(o + 4, 28, true);
  dv.setUint32(o + 8, BYTE_ORDER_MAGIC, true);
  dv.setUint16(o + 12, 1, true);
  dv.setUint16(o + 14, 0, true);
  dv.setBigInt64(o + 16, -1n, true);
  dv.setUint32(o + 24, 28, true);
  o += 28;
  interfaces.forEach((itf, i) => {
    const n = names[i];
    const len = 20 + 8 + (n ? 4 + pad4(n.length) : 0) + 4;
    dv.setUint32(o, BT_IDB, true);
    dv.setUint32(o + 4, len, true);
    dv.setUint16(o + 8, itf.linkType, true);
    dv.setUint16(o + 10, 0, true);
    dv.setUint32(o + 12, 0, true); // snap length 0: no limit
    let q = o + 16;
    if (n) {
      dv.setUint16(q, OPT_IF_NAME, true);
      dv.setUint16(q + 2, n.length, true);
      out.set(n, q + 4);
      q += 4 + pad4(n.length);
    }
    dv.setUint16(q, OPT_IF_TSRESOL, true);
    dv.setUint16(q + 2, 1, true);
    out[q + 4] = 9; // 10^-9 s: nanoseconds
    q += 8;
    dv.setUint32(q, 0, true); // opt_endofopt
    dv.setUint32(o + len - 4, len, true);
    o += len;
  });
  for (const p of packets) {
    if (
      !Number.isInteger(p.interfaceId) || p.interfaceId < 0 || p.interfaceId >= interfaces.length
    ) {
      throw new RangeError(
        `writePcapng: packet names interface ${p.interfaceId} but only ${interfaces.length} are described`,
      );
    }
    if (p.timestampNs < 0n || p.timestampNs > 0xffff_ffff_ffff_ffffn) {
      throw new RangeError(`writePcapng: timestamp ${p.timestampNs} ns does not fit 64 bits`);
    }
    const len = 32 + pad4(p.data.length);
    dv.setUint32(o, BT_EPB, true);
    dv.setUint32(o + 4, len, true);
    dv.setUint32(o + 8, p.interfaceId, true);
    dv.setUint32(o + 12, Number(p.timestampNs >> 32n), true);
    dv.setUint32(o + 16, Number(p.timestampNs & 0xffff_ffffn), true);
    dv.setUint32(o + 20, p.data.length, true);
    dv.setUint32(o + 24, p.data.length, true);
    out.set(p.data, o + 28);
    dv.setUint32(o + len - 4, len, true);
    o += len;
  }
  return out;
}

function pad4(n: number): number {
  return (n + 3) & ~3;
}
