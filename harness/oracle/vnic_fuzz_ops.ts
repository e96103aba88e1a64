/**
 * The hostile flavor of the cnuas-vnic oracle (row `qtest-fuzz`): the
 * differential generator's sequences (`vnic_ops.ts`) with bursts a buggy or
 * malicious guest would produce spliced in — descriptor addresses at the
 * device's own BAR0, at other MMIO (interrupt controllers, HPET, MMCONFIG),
 * beyond RAM, straddling the ends of RAM and of the BAR, wrapping past 2^64;
 * transmit and receive buffers that overlap; doorbells in loops; a function
 * reset while frames wait; and writes and reads of every width at every
 * offset of the BAR. The model decides each (docs/devices.md, "vnic: DMA
 * reaches RAM only"), so the device must agree on every access, not only
 * survive it.
 *
 * @example
 * ```ts
 * const report = await runVnicDiff({ ...env, seeds: [1], opsPerSeed: 5000, flavor: VNIC_FUZZ_FLAVOR });
 * ```
 */
import { HostileSplicer } from "./hostile_splice.ts";
import { VNIC_BAR_SIZE, VNIC_MAX_FRAME, VNIC_REG, type VnicModel } from "../models/vnic.ts";
import { VNIC_RIG } from "../qtest/vnic_rig.ts";
import {
  type AccessSize,
  DIFF_RAM,
  type VnicOp,
  vnicOpAllowedIn,
  VnicOpGenerator,
  type VnicOracleFlavor,
} from "./vnic_ops.ts";

const U64 = 1n << 64n;
const MIB2 = 0x20_0000n;
/** The firmware ROM at the top of the 32-bit space: readable, contents not modelled. */
const ROM_START = 0xff00_0000n;
const FOUR_GIB = 1n << 32n;

/**
 * Where the model knows what a DMA range does: everywhere but guest RAM
 * below 2 MiB (the MSI word, legacy ranges: contents it does not follow)
 * and the firmware ROM (readable by DMA, contents it does not hold). Every
 * other address is either the RAM it holds or not RAM, which DMA does not
 * reach; a range past 2^64 is refused whole.
 */
export function hostileRangeKnown(addr: bigint, len: number): boolean {
  const end = addr + BigInt(len);
  if (end > U64) return true;
  const overlaps = (lo: bigint, hi: bigint) => addr < hi && end > lo;
  return !overlaps(0n, MIB2) && !overlaps(ROM_START, FOUR_GIB);
}

/** MMIO the rig's machine has besides the device's own BAR (q35, no firmware run). */
const OTHER_MMIO = [
  0xfec0_0000n, // IOAPIC
  0xfed0_0000n, // HPET
  0xfee0_0000n, // local APIC / MSI window
  0xb000_0000n, // MMCONFIG (the function's own config space at +0x20000)
  0xb002_0000n,
] as const;

/** The differential generator with hostile bursts spliced in. */
export class VnicHostileGenerator extends HostileSplicer<VnicOp, VnicModel> {
  constructor(seed: number) {
    super(seed, 0x0bad_f00d, new VnicOpGenerator(seed));
  }

  #wr(off: number, value: bigint | number, size: AccessSize = 4): VnicOp {
    return { k: "wr", off, size, value: `0x${BigInt(value).toString(16)}` };
  }

  #rd(off: number, size: AccessSize = 4): VnicOp {
    return { k: "rd", off, size };
  }

  /** A length aimed at the device's own registers: 8-byte chunks, then a 4-, 2- and 1-byte tail. */
  #len(): number {
    const r = this.int(0, 9);
    if (r < 3) return this.int(0, 8) * 8 + this.pick([4, 5, 6, 7]);
    if (r < 6) return this.int(1, 256);
    if (r < 8) return this.int(1, VNIC_MAX_FRAME);
    return this.pick([0, VNIC_MAX_FRAME, VNIC_MAX_FRAME + 1, 0xffff_ffff]);
  }

  /** A hostile guest-physical address for a `len`-byte range, as the 64-bit register pair holds it. */
  #addr(len: number): bigint {
    return (this.#rawAddr(len) % U64 + U64) % U64;
  }

  #rawAddr(len: number): bigint {
    // Lengths beyond a frame are rejected before any address matters.
    const l = Math.min(Math.max(len, 1), VNIC_MAX_FRAME);
    const n = BigInt(l);
    switch (this.int(0, 8)) {
      case 0: // the device's own registers, a doorbell or RX_STATUS at the tail
        return VNIC_RIG.bar + BigInt(this.pick([0, VNIC_REG.TX_DOORBELL, VNIC_REG.RX_STATUS])) -
          (n - 4n > 0n ? (n - 4n) & ~7n : 0n);
      case 1: // anywhere in or across the BAR
        return VNIC_RIG.bar + BigInt(this.int(-64, VNIC_BAR_SIZE + 64));
      case 2:
        return this.pick(OTHER_MMIO) + BigInt(this.int(0, 0xfff));
      case 3: // across the end of RAM
        return BigInt(DIFF_RAM.hi) - BigInt(this.int(0, l));
      case 4: // the hole up to MMCONFIG
        return BigInt(this.int(DIFF_RAM.hi, 0xafff_ffff));
      case 5: // above 4 GiB, nothing there
        return BigInt(this.int(1, 0xffff_ffff)) << 32n | BigInt(this.int(0, 0xffff_ffff));
      case 6: // wrapping past 2^64
        return U64 - BigInt(this.int(1, l));
      case 7: // just below the BAR, running into it
        return VNIC_RIG.bar - BigInt(this.int(1, l));
      default: // plain RAM, so hostile bursts also succeed
        return BigInt(this.int(DIFF_RAM.lo, DIFF_RAM.hi - l));
    }
  }

  #setTx(addr: bigint, len: number): void {
    this.queue.push(
      this.#wr(VNIC_REG.TX_ADDR_LO, addr & 0xffff_ffffn),
      this.#wr(VNIC_REG.TX_ADDR_HI, addr >> 32n),
      this.#wr(VNIC_REG.TX_LEN, len),
    );
  }

  #setRx(addr: bigint): void {
    this.queue.push(
      this.#wr(VNIC_REG.RX_ADDR_LO, addr & 0xffff_ffffn),
      this.#wr(VNIC_REG.RX_ADDR_HI, addr >> 32n),
    );
  }

  protected plan(model: VnicModel): void {
    const q = this.queue;
    switch (this.int(0, 6)) {
      case 0: { // transmit from a hostile range
        const len = this.#len();
        this.#setTx(this.#addr(len), len);
        q.push(this.#wr(VNIC_REG.TX_DOORBELL, this.rng()), this.#rd(VNIC_REG.IRQ_STATUS));
        break;
      }
      case 1: { // receive into a hostile range
        const len = Math.min(Math.max(this.#len(), 1), VNIC_MAX_FRAME);
        this.#setRx(this.#addr(len));
        if (model.registers.rxStatus === 1) q.push(this.#wr(VNIC_REG.RX_STATUS, 0));
        for (let i = this.int(1, 3); i > 0; i--) q.push({ k: "send", len, seed: this.rng() });
        q.push(this.#rd(VNIC_REG.RX_STATUS), this.#rd(VNIC_REG.IRQ_STATUS));
        break;
      }
      case 2: { // receive and transmit buffers overlap: what landed goes out again
        const rx = this.int(DIFF_RAM.lo, DIFF_RAM.hi - 2 * VNIC_MAX_FRAME);
        const len = this.int(1, VNIC_MAX_FRAME);
        this.#setRx(BigInt(rx));
        if (model.registers.rxStatus === 1) q.push(this.#wr(VNIC_REG.RX_STATUS, 0));
        q.push({ k: "send", len, seed: this.rng() });
        this.#setTx(BigInt(rx + this.int(-64, len)), this.int(1, VNIC_MAX_FRAME));
        q.push(this.#wr(VNIC_REG.RX_STATUS, 0), this.#wr(VNIC_REG.TX_DOORBELL, 1));
        q.push({ k: "check", addr: rx, len: Math.min(len + 64, DIFF_RAM.hi - rx) });
        break;
      }
      case 3: { // doorbells in a loop, valid or not, acknowledging now and then
        if (this.chance(0.5)) {
          const len = this.#len();
          this.#setTx(this.#addr(len), len);
        }
        for (let i = this.int(2, 48); i > 0; i--) {
          q.push(this.#wr(VNIC_REG.TX_DOORBELL, this.rng()));
          if (this.chance(0.1)) q.push(this.#wr(VNIC_REG.IRQ_STATUS, 0xffff_ffff));
        }
        q.push(this.#rd(VNIC_REG.IRQ_STATUS));
        break;
      }
      case 4: { // reset while frames wait: in the socket, in the buffer, mid-sequence
        for (let i = this.int(0, 4); i > 0; i--) {
          q.push({ k: "send", len: this.int(1, VNIC_MAX_FRAME), seed: this.rng() });
        }
        if (this.chance(0.5)) q.push(this.#wr(VNIC_REG.TX_DOORBELL, 1));
        q.push({ k: "flr" });
        if (this.chance(0.5)) q.push(this.#wr(VNIC_REG.TX_DOORBELL, 1));
        q.push(this.#rd(VNIC_REG.RX_STATUS), this.#rd(VNIC_REG.IRQ_STATUS));
        break;
      }
      case 5: { // any width at any offset of the BAR, any value
        for (let i = this.int(1, 16); i > 0; i--) {
          const size = this.pick([1, 2, 4, 8] as const);
          const off = this.int(0, VNIC_BAR_SIZE - size);
          if (this.chance(0.5)) q.push(this.#rd(off, size));
          else q.push(this.#wr(off, BigInt(this.rng()) << 32n | BigInt(this.rng()), size));
        }
        break;
      }
      default: { // aligned 32-bit writes of anything to every register
        for (let i = this.int(1, 16); i > 0; i--) {
          const off = this.int(0, VNIC_REG.MAC_HI / 4) * 4;
          q.push(this.#wr(off, this.rng()));
        }
        q.push(this.#rd(VNIC_REG.IRQ_STATUS));
        break;
      }
    }
  }
}

/** The hostile flavor: {@link VnicHostileGenerator}, guarded by {@link hostileRangeKnown}. */
export const VNIC_FUZZ_FLAVOR: VnicOracleFlavor = {
  name: "hostile",
  generator: (seed) => new VnicHostileGenerator(seed),
  allowed: (op, model) => vnicOpAllowedIn(op, model, hostileRangeKnown),
};
