/**
 * A sparse model of guest-physical memory as a device's DMA sees it: a list of
 * RAM ranges (reads of untouched RAM return zeros, as QEMU's RAM starts zeroed)
 * and nothing else. Pure: no I/O.
 *
 * @example
 * ```ts
 * const mem = new SparseMemory([{ base: 0n, size: 128n << 20n }]);
 * mem.write(0x200000n, new Uint8Array([1, 2, 3]));
 * mem.dmaValid(0x200000n, 3); // true
 * ```
 */
import { HilError } from "../errors.ts";

/** One range of guest RAM. */
export interface RamRange {
  /** First guest-physical address. */
  base: bigint;
  /** Length in bytes. */
  size: bigint;
}

/** What a device model needs of guest memory. */
export interface GuestMemory {
  /** True when every byte of `[addr, addr + len)` is reachable by DMA. */
  dmaValid(addr: bigint, len: number): boolean;
  /** `len` bytes at `addr`; the range must be valid. */
  read(addr: bigint, len: number): Uint8Array;
  /** Store `data` at `addr`; the range must be valid. */
  write(addr: bigint, data: Uint8Array): void;
}

/** A DMA access outside RAM reached the memory model: the caller skipped `dmaValid`. */
export class UnmappedAccessError extends HilError {
  constructor(addr: bigint, len: number) {
    super(
      `guest memory model: [0x${addr.toString(16)}, +${len}) is not RAM; ` +
        "check dmaValid() before touching memory",
    );
  }
}

const PAGE = 4096;
const U64_END = 1n << 64n;

/** Guest RAM as sparse 4 KiB pages over a set of ranges. */
export class SparseMemory implements GuestMemory {
  readonly #ranges: RamRange[];
  readonly #pages = new Map<number, Uint8Array>();

  constructor(ranges: RamRange[]) {
    this.#ranges = ranges.map((r) => ({ ...r }));
  }

  /** The RAM ranges this memory was built with. */
  get ranges(): readonly RamRange[] {
    return this.#ranges;
  }

  dmaValid(addr: bigint, len: number): boolean {
    const end = addr + BigInt(len);
    if (addr < 0n || end > U64_END) return false;
    return this.#ranges.some((r) => addr >= r.base && end <= r.base + r.size);
  }

  read(addr: bigint, len: number): Uint8Array {
    if (!this.dmaValid(addr, len)) throw new UnmappedAccessError(addr, len);
    const out = new Uint8Array(len);
    let a = Number(addr);
    let done = 0;
    while (done < len) {
      const page = Math.floor(a / PAGE);
      const off = a % PAGE;
      const n = Math.min(PAGE - off, len - done);
      const p = this.#pages.get(page);
      if (p) out.set(p.subarray(off, off + n), done);
      done += n;
      a += n;
    }
    return out;
  }

  write(addr: bigint, data: Uint8Array): void {
    if (!this.dmaValid(addr, data.length)) throw new UnmappedAccessError(addr, data.length);
    let a = Number(addr);
    let done = 0;
    while (done < data.length) {
      const page = Math.floor(a / PAGE);
      const off = a % PAGE;
      const n = Math.min(PAGE - off, data.length - done);
      let p = this.#pages.get(page);
      if (!p) {
        p = new Uint8Array(PAGE);
        this.#pages.set(page, p);
      }
      p.set(data.subarray(done, done + n), off);
      done += n;
      a += n;
    }
  }
}
