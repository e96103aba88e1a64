/**
 * The operations of the cnuas-vnic differential oracle: their shape (plain
 * data, printable as JSON), the guards that keep DMA inside the guest memory
 * the model describes, the per-seed start configuration, and the seeded
 * generator that aims sequences at interesting device states.
 *
 * @example
 * ```ts
 * const gen = new VnicOpGenerator(7);
 * const op = gen.next(model); // e.g. { k: "send", len: 60, seed: 123 }
 * ```
 */
import { prng, randInt } from "../prng.ts";
import {
  VNIC_IRQ_ALL,
  VNIC_MAX_FRAME,
  VNIC_REG,
  VnicModel,
  type VnicRegisters,
} from "../models/vnic.ts";
import { SparseMemory } from "../models/guest_memory.ts";
import type { VnicSocketMode } from "../qtest/vnic_rig.ts";

/** Access sizes of an MMIO operation. */
export type AccessSize = 1 | 2 | 4 | 8;

/** One step of a sequence; plain data, printable as JSON. */
export type VnicOp =
  /** MMIO read of BAR0 */
  | { k: "rd"; off: number; size: AccessSize }
  /** MMIO write of BAR0 (value in hex) */
  | { k: "wr"; off: number; size: AccessSize; value: string }
  /** the test writes pseudo-random bytes into guest RAM */
  | { k: "fill"; addr: number; len: number; seed: number }
  /** compare a guest RAM range */
  | { k: "check"; addr: number; len: number }
  /** the peer sends a datagram of pseudo-random bytes */
  | { k: "send"; len: number; seed: number }
  /** the peer closes its connection */
  | { k: "close" }
  /** the peer stops listening */
  | { k: "lclose" }
  /** the peer listens again */
  | { k: "lopen" }
  /** advance the virtual clock, then accept whatever connected */
  | { k: "step"; ns: number }
  /** function-level reset, then the driver's setup again */
  | { k: "flr" }
  /** the driver switches MSI on or off in config space */
  | { k: "msi"; on: boolean };

/** How a seed's machine starts. */
export interface VnicDiffSetup {
  /** How the device's socket starts. */
  socket: VnicSocketMode;
  /** Interrupt delivery the driver sets up: INTx or MSI. */
  irq: "intx" | "msi";
  /** The `mac` property, 6 bytes. */
  mac: number[];
}

// ---- guest-physical layout --------------------------------------------------

/** RAM the model describes and the generator uses. */
export const DIFF_RAM = { lo: 0x20_0000, hi: 0x800_0000 } as const;
/** Unmapped below 4 GiB on q35 with 128 MiB: from the end of RAM to MMCONFIG. */
const LOW_HOLE_END = 0xb000_0000n;
const FOUR_GIB = 1n << 32n;
const U64 = 1n << 64n;
const QUEUE_LIMIT = 8;

/** Whether a DMA range stays where the model knows what happens. */
export function dmaRangeSafe(addr: bigint, len: number): boolean {
  const end = addr + BigInt(len);
  if (addr >= FOUR_GIB) return true;
  return addr >= BigInt(DIFF_RAM.lo) && end <= LOW_HOLE_END;
}

function addrOf(lo: number, hi: number): bigint {
  return BigInt(hi) << 32n | BigInt(lo);
}

/** The guard: false when the op must be skipped on both sides. */
export function vnicOpAllowed(op: VnicOp, model: VnicModel): boolean {
  return vnicOpAllowedIn(op, model, dmaRangeSafe);
}

/**
 * The guard over a given notion of where the model knows what DMA does:
 * `safe(addr, len)` is false for a range whose outcome the model cannot
 * predict, and an op that would DMA there is skipped on both sides.
 */
export function vnicOpAllowedIn(
  op: VnicOp,
  model: VnicModel,
  safe: (addr: bigint, len: number) => boolean,
): boolean {
  const rxSafe = (addr: bigint, len: number) => addr === 0n || safe(addr, len);
  const r: VnicRegisters = model.registers;
  switch (op.k) {
    case "wr":
      if (op.size !== 4 || op.off % 4 !== 0) return true;
      if (op.off === VNIC_REG.TX_DOORBELL) {
        const len = r.txLen;
        return len === 0 || len > VNIC_MAX_FRAME || safe(addrOf(r.txAddrLo, r.txAddrHi), len);
      }
      if (op.off === VNIC_REG.RX_STATUS && BigInt(op.value) === 0n && r.rxStatus === 1) {
        return rxSafe(addrOf(r.rxAddrLo, r.rxAddrHi), VNIC_MAX_FRAME);
      }
      return true;
    case "fill":
    case "check":
      return op.addr >= DIFF_RAM.lo && op.addr + op.len <= DIFF_RAM.hi;
    case "send":
      if (model.queuedToDevice >= QUEUE_LIMIT) return false;
      return rxSafe(addrOf(r.rxAddrLo, r.rxAddrHi), op.len);
    default:
      return true;
  }
}

/**
 * The reference model of a machine started as `setup` says, over the guest
 * RAM the oracle uses: its socket, its MSI enable, and the connection a
 * listening peer accepted while QEMU started.
 */
export function vnicModelForSetup(setup: VnicDiffSetup): { model: VnicModel; mem: SparseMemory } {
  const mem = new SparseMemory([{
    base: BigInt(DIFF_RAM.lo),
    size: BigInt(DIFF_RAM.hi - DIFF_RAM.lo),
  }]);
  const model = new VnicModel({
    mac: setup.mac,
    socketPath: setup.socket !== "none",
    listening: setup.socket === "listening",
    memory: mem,
  });
  model.setMsiEnabled(setup.irq === "msi");
  if (setup.socket === "listening") model.peerAccept();
  return { model, mem };
}

/** What a run of the vnic oracle is made of besides the device and the model. */
export interface VnicOracleFlavor {
  /** Name, for progress lines and reports. */
  name: string;
  /** A fresh generator for `seed`. */
  generator(seed: number): { next(model: VnicModel): VnicOp };
  /** The guard: false when the op must be skipped on both sides. */
  allowed(op: VnicOp, model: VnicModel): boolean;
}

/** The differential oracle's flavor: {@link VnicOpGenerator} and {@link vnicOpAllowed}. */
export const VNIC_DIFF_FLAVOR: VnicOracleFlavor = {
  name: "differential",
  generator: (seed) => new VnicOpGenerator(seed),
  allowed: vnicOpAllowed,
};

/** Start configuration of a seed: mostly listening, some without a listener or path, half MSI. */
export function vnicSetupForSeed(seed: number): VnicDiffSetup {
  const rng = prng(seed ^ 0x5eed_0001);
  const pick = randInt(rng, 0, 9);
  const socket: VnicSocketMode = pick === 0 ? "absent" : pick === 1 ? "none" : "listening";
  const mac = [
    0x52,
    0x54,
    randInt(rng, 0, 255),
    randInt(rng, 0, 255),
    randInt(rng, 0, 255),
    randInt(rng, 0, 255),
  ];
  return { socket, irq: seed % 2 === 0 ? "intx" : "msi", mac };
}

// ---- generator ----------------------------------------------------------------

const REG_OFFSETS = Object.values(VNIC_REG);

/** Produces operations from a seed, looking at the model to aim at interesting states. */
export class VnicOpGenerator {
  readonly #rng: () => number;
  #queue: VnicOp[] = [];
  #recent: { addr: number; len: number }[] = [];

  constructor(seed: number) {
    this.#rng = prng(seed);
  }

  #int(lo: number, hi: number): number {
    return randInt(this.#rng, lo, hi);
  }

  #chance(p: number): boolean {
    return this.#rng() / 0x1_0000_0000 < p;
  }

  #frameLen(): number {
    const r = this.#int(0, 99);
    if (r < 60) return this.#int(1, 128);
    if (r < 85) return this.#int(129, 2048);
    if (r < 95) return this.#int(2049, VNIC_MAX_FRAME);
    if (r < 97) return VNIC_MAX_FRAME;
    return this.#int(1, 64);
  }

  #ramAddr(len: number): number {
    const a = this.#int(DIFF_RAM.lo, DIFF_RAM.hi - Math.max(len, 1));
    return this.#chance(0.5) ? a & ~0xfff : a;
  }

  /** A 64-bit guest address from the interesting classes. */
  #addr(len: number): bigint {
    const r = this.#int(0, 19);
    if (r < 12) return BigInt(this.#ramAddr(len));
    if (r === 12) return BigInt(DIFF_RAM.hi - this.#int(1, Math.max(1, len))); // straddles the end of RAM
    if (r === 13) return BigInt(this.#int(DIFF_RAM.hi, 0xa000_0000)); // unmapped hole
    if (r === 14) {
      return BigInt(this.#int(1, 0xffff_ffff)) << 32n | BigInt(this.#int(0, 0xffff_ffff));
    }
    if (r === 15) return U64 - BigInt(this.#int(1, VNIC_MAX_FRAME)); // wraps past 2^64
    if (r === 16) return BigInt(this.#int(0, 0xffff_ffff)); // raw: the guard decides
    return 0n;
  }

  #wr(off: number, value: number | bigint): VnicOp {
    return { k: "wr", off, size: 4, value: `0x${BigInt(value).toString(16)}` };
  }

  #rd(off: number): VnicOp {
    return { k: "rd", off, size: 4 };
  }

  /** The next operation. */
  next(model: VnicModel): VnicOp {
    while (this.#queue.length === 0) this.#plan(model);
    return this.#queue.shift()!;
  }

  #plan(model: VnicModel): void {
    const q = this.#queue;
    // Bring a lost link back more often than chance would, so most of the
    // sequence runs with the wire up.
    if (!model.linkUp && model.reconnectAtNs !== null && this.#chance(0.25)) {
      // Land just before, on or after the next attempt, so the backoff
      // schedule itself is checked, not only that a reconnect happens.
      const due = model.reconnectAtNs - model.nowNs;
      if (!model.listening && this.#chance(0.6)) q.push({ k: "lopen" });
      const pick = this.#int(0, 3);
      const ns = pick === 0
        ? due
        : pick === 1
        ? Math.max(0, due - 1)
        : pick === 2
        ? due + this.#int(1, 1_000_000)
        : this.#int(0, 2 * due);
      q.push({ k: "step", ns });
      q.push(this.#rd(VNIC_REG.LINK_STATUS));
      return;
    }
    const r = this.#int(0, 999);
    if (r < 170) {
      // transmit
      const roll = this.#int(0, 99);
      const len = roll < 94
        ? this.#frameLen()
        : roll < 96
        ? 0
        : roll < 98
        ? VNIC_MAX_FRAME + this.#int(1, 100)
        : this.#int(0, 0xffff_ffff);
      const addr = this.#addr(Math.min(Math.max(len, 1), VNIC_MAX_FRAME));
      if (
        addr >= BigInt(DIFF_RAM.lo) && addr < BigInt(DIFF_RAM.hi) && len >= 1 &&
        len <= VNIC_MAX_FRAME
      ) {
        const fillLen = Math.min(len, DIFF_RAM.hi - Number(addr));
        q.push({ k: "fill", addr: Number(addr), len: fillLen, seed: this.#int(0, 0xffff_ffff) });
        this.#remember(Number(addr), fillLen);
      }
      q.push(this.#wr(VNIC_REG.TX_ADDR_LO, addr & 0xffff_ffffn));
      q.push(this.#wr(VNIC_REG.TX_ADDR_HI, addr >> 32n));
      q.push(this.#wr(VNIC_REG.TX_LEN, len));
      q.push(this.#wr(VNIC_REG.TX_DOORBELL, this.#int(0, 0xffff_ffff)));
      if (this.#chance(0.5)) q.push(this.#rd(VNIC_REG.IRQ_STATUS));
    } else if (r < 300) {
      // a datagram from the peer
      const roll = this.#int(0, 99);
      const len = roll < 95 ? this.#frameLen() : roll < 98 ? VNIC_MAX_FRAME + this.#int(1, 200) : 0;
      q.push({ k: "send", len, seed: this.#int(0, 0xffff_ffff) });
      q.push(this.#rd(VNIC_REG.RX_STATUS));
      if (this.#chance(0.5)) q.push(this.#rd(VNIC_REG.RX_LEN));
    } else if (r < 380) {
      // arm (or disarm) the receive buffer
      const addr = this.#chance(0.1)
        ? 0n
        : this.#chance(0.5)
        ? BigInt(this.#ramAddr(VNIC_MAX_FRAME))
        : this.#addr(VNIC_MAX_FRAME);
      if (addr >= BigInt(DIFF_RAM.lo) && addr < BigInt(DIFF_RAM.hi)) {
        this.#remember(Number(addr), 64);
      }
      if (this.#chance(0.8)) q.push(this.#wr(VNIC_REG.RX_ADDR_LO, addr & 0xffff_ffffn));
      if (this.#chance(0.8)) q.push(this.#wr(VNIC_REG.RX_ADDR_HI, addr >> 32n));
    } else if (r < 470) {
      // release the received frame
      q.push(this.#wr(VNIC_REG.RX_STATUS, this.#chance(0.9) ? 0 : this.#int(1, 0xffff_ffff)));
      if (this.#chance(0.5)) q.push(this.#rd(VNIC_REG.RX_STATUS));
    } else if (r < 570) {
      // interrupt handler: read causes, acknowledge some or all
      q.push(this.#rd(VNIC_REG.IRQ_STATUS));
      const ack = this.#chance(0.6)
        ? VNIC_IRQ_ALL
        : this.#chance(0.5)
        ? this.#int(0, 7)
        : this.#int(0, 0xffff_ffff);
      q.push(this.#wr(VNIC_REG.IRQ_STATUS, ack));
    } else if (r < 620) {
      q.push(
        this.#wr(
          VNIC_REG.IRQ_MASK,
          this.#chance(0.7) ? this.#int(0, 7) : this.#int(0, 0xffff_ffff),
        ),
      );
    } else if (r < 770) {
      q.push(this.#rd(REG_OFFSETS[this.#int(0, REG_OFFSETS.length - 1)]));
    } else if (r < 830) {
      // the wrong way in: odd sizes, unaligned, unknown offsets, read-only registers
      const sizes: AccessSize[] = [1, 2, 4, 8];
      const size = sizes[this.#int(0, 3)];
      const off = this.#chance(0.5)
        ? REG_OFFSETS[this.#int(0, REG_OFFSETS.length - 1)] +
          (size === 4 ? this.#int(0, 3) : this.#int(0, 1) * size)
        : this.#int(0x34, 0x1000 - size) & ~(size - 1);
      if (this.#chance(0.5)) {
        q.push({ k: "rd", off, size });
      } else {
        const v = BigInt(this.#int(0, 0xffff_ffff)) << 32n | BigInt(this.#int(0, 0xffff_ffff));
        q.push({ k: "wr", off, size, value: `0x${v.toString(16)}` });
      }
      q.push(this.#rd(VNIC_REG.IRQ_STATUS));
    } else if (r < 850) {
      q.push({ k: "close" });
      q.push(this.#rd(VNIC_REG.LINK_STATUS));
    } else if (r < 885) {
      q.push(model.listening ? { k: "lclose" } : { k: "lopen" });
    } else if (r < 945) {
      const pick = this.#int(0, 5);
      const ns = pick === 0
        ? 100_000_000
        : pick === 1
        ? 99_999_999
        : pick === 2
        ? this.#int(1, 1_000_000)
        : pick === 3 && model.reconnectAtNs !== null
        ? Math.max(0, model.reconnectAtNs - model.nowNs)
        : this.#int(1, 3_000_000_000);
      q.push({ k: "step", ns });
      q.push(this.#rd(VNIC_REG.LINK_STATUS));
    } else if (r < 955) {
      q.push({ k: "flr" });
    } else if (r < 970) {
      // MSI on or off, often while a cause is pending: INTx must follow at once.
      q.push({ k: "msi", on: this.#chance(0.5) });
      if (this.#chance(0.5)) q.push(this.#rd(VNIC_REG.IRQ_STATUS));
    } else {
      const pick = this.#recent.length ? this.#recent[this.#int(0, this.#recent.length - 1)] : null;
      const len = this.#int(1, 4096);
      const addr = pick ? Math.min(pick.addr, DIFF_RAM.hi - len) : this.#ramAddr(len);
      q.push({ k: "check", addr, len });
    }
  }

  #remember(addr: number, len: number): void {
    this.#recent.push({ addr, len });
    if (this.#recent.length > 16) this.#recent.shift();
  }
}
