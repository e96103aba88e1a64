/**
 * Byte contents the cnuasgpu_host model tracks: an allocation, a pin's user
 * buffer or the op runner's host buffer. Sparse (pages never written read as
 * zeros) and with an "unknown" mask for bytes whose value the model cannot
 * know (an op cancelled by close, two writers racing): a read that touches an
 * unknown byte has no predicted digest.
 *
 * @example
 * ```ts
 * const m = new SparseMem(3 * 4096);
 * m.write(4090, new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]));
 * m.read(4094, 2); // [5, 6]
 * ```
 */

const PAGE = 4096;

/** Sparse bytes with an unknown mask. */
export class SparseMem {
  private pages = new Map<number, Uint8Array>();
  private unknown = new Map<number, Uint8Array>();

  /** Memory of `size` bytes, all zero and known. */
  constructor(readonly size: number) {}

  /** Write `bytes` at `off` (the bytes become known). */
  write(off: number, bytes: Uint8Array): void {
    this.each(off, bytes.length, (pg, at, n, done) => {
      let p = this.pages.get(pg);
      if (!p) this.pages.set(pg, p = new Uint8Array(PAGE));
      p.set(bytes.subarray(done, done + n), at);
      this.unknown.get(pg)?.fill(0, at, at + n);
    });
  }

  /** Set `len` bytes at `off` to `value`. */
  fill(off: number, len: number, value: number): void {
    this.write(off, new Uint8Array(len).fill(value));
  }

  /** The `len` bytes at `off` (unknown ones as whatever was last known). */
  read(off: number, len: number): Uint8Array {
    const out = new Uint8Array(len);
    this.each(off, len, (pg, at, n, done) => {
      const p = this.pages.get(pg);
      if (p) out.set(p.subarray(at, at + n), done);
    });
    return out;
  }

  /** Mark `len` bytes at `off` unknown. */
  markUnknown(off: number, len: number): void {
    this.each(off, len, (pg, at, n) => {
      let u = this.unknown.get(pg);
      if (!u) this.unknown.set(pg, u = new Uint8Array(PAGE));
      u.fill(1, at, at + n);
    });
  }

  /** Whether any of the `len` bytes at `off` is unknown. */
  hasUnknown(off: number, len: number): boolean {
    let any = false;
    this.each(off, len, (pg, at, n) => {
      const u = this.unknown.get(pg);
      if (u && !any) any = u.subarray(at, at + n).includes(1);
    });
    return any;
  }

  /** A deep copy. */
  clone(): SparseMem {
    const c = new SparseMem(this.size);
    for (const [k, v] of this.pages) c.pages.set(k, v.slice());
    for (const [k, v] of this.unknown) c.unknown.set(k, v.slice());
    return c;
  }

  private each(
    off: number,
    len: number,
    fn: (page: number, at: number, n: number, done: number) => void,
  ): void {
    if (off < 0 || len < 0 || off + len > this.size) {
      throw new RangeError(`SparseMem: ${len} bytes at ${off} outside ${this.size}`);
    }
    let done = 0;
    while (done < len) {
      const a = off + done;
      const pg = Math.floor(a / PAGE);
      const at = a % PAGE;
      const n = Math.min(PAGE - at, len - done);
      fn(pg, at, n, done);
      done += n;
    }
  }
}
