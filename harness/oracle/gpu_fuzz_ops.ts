/**
 * The hostile flavor of the cnuasgpu oracle (row `qtest-fuzz`): the
 * differential generator's sequences (`gpu_ops.ts`) with bursts a buggy or
 * malicious guest would produce spliced in — transmit and receive windows at
 * the end of BAR1, past it, and wrapping past 2^64 through the `_HI` halves;
 * transmit and receive windows that overlap, so a frame that landed goes out
 * again; doorbells and consumes in loops; and accesses of every width at
 * every offset of the 64 KiB BAR0. The accelerator does no DMA: its frames
 * come from and land in BAR1 itself, so these are its hostile inputs. The
 * model decides each case from docs/devices.md and the device must agree.
 *
 * @example
 * ```ts
 * const res = await runGpuSeed(env, 7, 5000, { generator: gpuHostileGenerator });
 * ```
 */
import { HostileSplicer } from "./hostile_splice.ts";
import { GPU_LINK_MTU, GPU_REG, GPU_REGS_SIZE, type GpuModel } from "../models/gpu.ts";
import { type GpuGeneratorFactory, type GpuOp, GpuOpGenerator } from "./gpu_ops.ts";

/** Frames the peer may have queued towards the device (as the differential generator). */
const MAX_QUEUED = 6;

/** The differential generator with hostile bursts spliced in. */
export class GpuHostileGenerator extends HostileSplicer<GpuOp, GpuModel> {
  constructor(seed: number) {
    super(seed, 0x0bad_9e00, new GpuOpGenerator(seed));
  }

  #write(off: number, val: number): void {
    this.queue.push({ op: "write", off, val: val >>> 0 });
  }

  /** A window `[offset, +len)` of BAR1 at or past its end, or wrapping past 2^64. */
  #window(size: number, len: number): { lo: number; hi: number } {
    const l = Math.max(len, 1);
    switch (this.int(0, 5)) {
      case 0: // ends exactly at the end of BAR1 (fits)
        return { lo: Math.max(0, size - l), hi: 0 };
      case 1: // one byte too far
        return { lo: Math.max(0, size - l + 1), hi: 0 };
      case 2: // starts at or just past the end
        return { lo: size + this.int(0, 8), hi: 0 };
      case 3: // the high half set: far beyond any BAR1
        return { lo: this.int(0, size - 1), hi: this.pick([1, 0x8000_0000, this.rng()]) };
      case 4: // wraps past 2^64
        return { lo: (0x1_0000_0000 - this.int(1, l)) >>> 0, hi: 0xffff_ffff };
      default: // the low half past 4 GiB of a small BAR, the high half 0
        return { lo: this.rng(), hi: 0 };
    }
  }

  /** A length around the edges: 0, 1, the MTU and one past it, or anything. */
  #len(size: number): number {
    const r = this.int(0, 5);
    if (r === 0) return this.pick([0, 1, GPU_LINK_MTU, GPU_LINK_MTU + 1, 0xffff_ffff]);
    if (r === 1) return size;
    if (r === 2) return this.rng();
    return this.int(1, Math.min(size, 4096));
  }

  protected plan(model: GpuModel): void {
    const q = this.queue;
    const size = model.config.devmemSize;
    switch (this.int(0, 6)) {
      case 0: { // transmit from a hostile window
        const len = this.#len(size);
        const w = this.#window(size, len);
        this.#write(GPU_REG.LINK_TX_OFFSET_LO, w.lo);
        this.#write(GPU_REG.LINK_TX_OFFSET_HI, w.hi);
        this.#write(GPU_REG.LINK_TX_LEN, len);
        this.#write(GPU_REG.LINK_TX_DOORBELL, this.rng() | 1);
        break;
      }
      case 1: { // arm a hostile receive window, then frames arrive
        const buf = this.#len(size);
        const w = this.#window(size, buf);
        this.#write(GPU_REG.LINK_RX_OFFSET_LO, w.lo);
        this.#write(GPU_REG.LINK_RX_OFFSET_HI, w.hi);
        this.#write(GPU_REG.LINK_RX_BUF_SIZE, buf);
        this.#write(GPU_REG.LINK_RX_CONSUME, 1);
        if (!model.peerConnected) break;
        for (let i = Math.min(this.int(1, 3), MAX_QUEUED - model.queuedFrames); i > 0; i--) {
          const len = Math.min(Math.max(buf, 1), GPU_LINK_MTU, this.int(1, 4096));
          q.push({ op: "send", len, seed: this.rng() });
        }
        q.push({ op: "read", off: GPU_REG.LINK_STATUS });
        break;
      }
      case 2: { // overlapping windows: what landed goes out again, shifted
        const len = this.int(1, Math.min(size, 2048));
        const rx = this.int(0, size - len);
        this.#write(GPU_REG.LINK_RX_OFFSET_LO, rx);
        this.#write(GPU_REG.LINK_RX_OFFSET_HI, 0);
        this.#write(GPU_REG.LINK_RX_BUF_SIZE, len);
        this.#write(GPU_REG.LINK_RX_CONSUME, 1);
        if (model.peerConnected && model.queuedFrames < MAX_QUEUED) {
          q.push({ op: "send", len, seed: this.rng() });
        }
        const tx = Math.max(0, Math.min(size - 1, rx + this.int(-64, len)));
        this.#write(GPU_REG.LINK_TX_OFFSET_LO, tx);
        this.#write(GPU_REG.LINK_TX_LEN, this.int(1, size - tx));
        this.#write(GPU_REG.LINK_TX_DOORBELL, 1);
        q.push({ op: "memRead", off: rx, len });
        break;
      }
      case 3: { // doorbells and consumes in a loop, acknowledging now and then
        for (let i = this.int(2, 32); i > 0; i--) {
          const off = this.chance(0.7) ? GPU_REG.LINK_TX_DOORBELL : GPU_REG.LINK_RX_CONSUME;
          this.#write(off, this.chance(0.9) ? this.rng() : 0);
          if (this.chance(0.1)) this.#write(GPU_REG.IRQ_STATUS, 0xffff_ffff);
        }
        q.push({ op: "read", off: GPU_REG.IRQ_STATUS });
        break;
      }
      case 4: { // reset while frames wait: in BAR1, behind it in the socket, a send mid-way
        if (model.peerConnected) {
          for (let i = Math.min(this.int(0, 3), MAX_QUEUED - model.queuedFrames); i > 0; i--) {
            q.push({ op: "send", len: this.int(1, 2048), seed: this.rng() });
          }
        }
        if (this.chance(0.5)) this.#write(GPU_REG.LINK_TX_DOORBELL, 1);
        q.push({ op: "reset" });
        q.push({ op: "read", off: GPU_REG.LINK_STATUS });
        if (this.chance(0.5)) this.#write(GPU_REG.LINK_TX_DOORBELL, 1);
        break;
      }
      case 5: { // any width at any offset of BAR0, any value
        for (let i = this.int(1, 16); i > 0; i--) {
          const size = this.pick([1, 2, 4, 8] as const);
          const off = this.int(0, GPU_REGS_SIZE - size);
          if (size === 4 && off % 4 === 0) {
            if (this.chance(0.5)) q.push({ op: "read", off });
            else this.#write(off, this.rng());
          } else if (this.chance(0.5)) {
            q.push({ op: "odd", off, size });
          } else {
            const val = BigInt(this.rng()) << 32n | BigInt(this.rng());
            q.push({ op: "odd", off, size, val: `0x${val.toString(16)}` });
          }
        }
        break;
      }
      default: { // aligned writes of anything to every register
        for (let i = this.int(1, 16); i > 0; i--) {
          this.#write(this.int(0, GPU_REG.LINK_RX_CONSUME / 4) * 4, this.rng());
        }
        q.push({ op: "read", off: GPU_REG.IRQ_STATUS });
        break;
      }
    }
  }
}

/** The hostile flavor's generator, for `runGpuSeed`'s `generator` option. */
export const gpuHostileGenerator: GpuGeneratorFactory = (seed) => new GpuHostileGenerator(seed);
