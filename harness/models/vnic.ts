/**
 * Reference model of the cnuas-vnic PCI function, written from docs/devices.md
 * (#cnuas-vnic and #both-devices). Pure: guest memory
 * comes in through {@link GuestMemory}, the socket peer through method calls,
 * time through {@link VnicModel.clockStep}; no I/O.
 *
 * Where the original design left a choice open, the model follows the
 * decision docs/devices.md records (marked "decided here"), as the device does.
 *
 * @example
 * ```ts
 * const mem = new SparseMemory([{ base: 0n, size: 128n << 20n }]);
 * const nic = new VnicModel({ mac: [0x52, 0x54, 0, 1, 2, 3], socketPath: true,
 *   listening: true, memory: mem });
 * nic.peerAccept();
 * nic.mmioWrite(VNIC_REG.IRQ_MASK, 4, 7n);
 * ```
 */
import { HilError } from "../errors.ts";
import type { GuestMemory } from "./guest_memory.ts";

/** BAR0 register offsets. */
export const VNIC_REG = {
  TX_ADDR_LO: 0x00,
  TX_ADDR_HI: 0x04,
  TX_LEN: 0x08,
  TX_DOORBELL: 0x0c,
  RX_ADDR_LO: 0x10,
  RX_ADDR_HI: 0x14,
  RX_LEN: 0x18,
  RX_STATUS: 0x1c,
  IRQ_STATUS: 0x20,
  IRQ_MASK: 0x24,
  LINK_STATUS: 0x28,
  MAC_LO: 0x2c,
  MAC_HI: 0x30,
} as const;

/** Interrupt cause bits of IRQ_STATUS / IRQ_MASK. */
export const VNIC_IRQ = { RX: 1, TX: 2, LINK: 4 } as const;

/** All defined cause bits. */
export const VNIC_IRQ_ALL = 7;

/** Largest frame in either direction. */
export const VNIC_MAX_FRAME = 9216;

/** BAR0 size in bytes. */
export const VNIC_BAR_SIZE = 0x1000;

/** PCI identity; class 0x0280 is the datasheet's "Network, other". */
export const VNIC_PCI = { vendor: 0x1af4, device: 0x10f0, classCode: 0x0280, revision: 0 } as const;

/** Reconnect backoff on the virtual clock. */
export const VNIC_RECONNECT = { firstMs: 100, maxMs: 2000 } as const;

const NS_PER_MS = 1_000_000;

/** Outcome of the peer sending one datagram. */
export type PeerSendResult =
  /** queued towards the device */
  | "sent"
  /** the device end is closed: the send fails (EPIPE) */
  | "broken"
  /** the peer holds no connection */
  | "none";

/** End of the connection in the device's receive queue. */
const EOF = Symbol("eof");

interface Connection {
  toDevice: Array<Uint8Array | typeof EOF>;
  toPeer: Uint8Array[];
  deviceOpen: boolean;
  peerOpen: boolean;
}

/** How the model starts (the device just realized and reset). */
export interface VnicModelOptions {
  /** The `mac` property, 6 bytes. */
  mac: ArrayLike<number>;
  /** Whether `socket_path` is set. */
  socketPath: boolean;
  /** Whether something listens at `socket_path` when QEMU starts. */
  listening: boolean;
  /**
   * Guest memory as the device's DMA sees it: its `dmaValid` is true for RAM
   * only, since DMA reaches nothing else (docs/devices.md, "vnic: DMA reaches
   * RAM only").
   */
  memory: GuestMemory;
  /** Virtual time at realize in ns (qtest starts at 0). */
  startNs?: number;
}

/** The register file, for generators and failure messages. */
export interface VnicRegisters {
  /** TX_ADDR_LO: low half of the transmit source address. */
  txAddrLo: number;
  /** TX_ADDR_HI: high half of the transmit source address. */
  txAddrHi: number;
  /** TX_LEN: bytes the next doorbell sends. */
  txLen: number;
  /** RX_ADDR_LO: low half of the receive landing address. */
  rxAddrLo: number;
  /** RX_ADDR_HI: high half of the receive landing address. */
  rxAddrHi: number;
  /** RX_LEN: length of the last delivered frame. */
  rxLen: number;
  /** RX_STATUS: 1 while a delivered frame waits to be released. */
  rxStatus: number;
  /** IRQ_STATUS: pending interrupt causes (write 1 to clear). */
  irqStatus: number;
  /** IRQ_MASK: enabled interrupt causes. */
  irqMask: number;
}

/** What happened so far, by outcome (for coverage reports). */
export interface VnicCounters {
  /** Frames sent to the peer. */
  txSent: number;
  /** Valid doorbells whose frame was dropped: link down, or the peer had hung up. */
  txDroppedLinkDown: number;
  /** Doorbells rejected: bad TX_LEN or a source range DMA cannot read. */
  txRejected: number;
  /** Datagrams landed in guest memory. */
  rxDelivered: number;
  /** Datagrams dropped because RX_ADDR was 0. */
  rxDroppedUnarmed: number;
  /** Datagrams dropped because the landing range was not writable in full. */
  rxDroppedDma: number;
  /** Datagrams dropped for their size (empty or above 9216 bytes). */
  rxDroppedSize: number;
  /** Times the connection was lost. */
  linkLost: number;
  /** Reconnect attempts that succeeded. */
  linkUp: number;
  /** Reconnect attempts that found nothing listening. */
  reconnectFailed: number;
  /** Device resets. */
  resets: number;
}

/** A datagram outside 1..9216 bytes or another argument the model cannot take. */
export class VnicModelError extends HilError {}

/** The cnuas-vnic reference model. */
export class VnicModel {
  readonly #mac: Uint8Array;
  readonly #hasSocketPath: boolean;
  readonly #mem: GuestMemory;
  #regs: VnicRegisters = VnicModel.#zeroRegs();
  #asserted = 0;
  #msiEnabled = false;
  #intx = false;
  #msiCount = 0;
  #now: number;
  #device: Connection | null = null;
  #peer: Connection | null = null;
  #backlog: Connection[] = [];
  #listening: boolean;
  #reconnectAt: number | null = null;
  #delayMs: number = VNIC_RECONNECT.firstMs;
  #deliveries = 0;
  #counters: VnicCounters = {
    txSent: 0,
    txDroppedLinkDown: 0,
    txRejected: 0,
    rxDelivered: 0,
    rxDroppedUnarmed: 0,
    rxDroppedDma: 0,
    rxDroppedSize: 0,
    linkLost: 0,
    linkUp: 0,
    reconnectFailed: 0,
    resets: 0,
  };
  #lastDelivery: { addr: bigint; len: number } | null = null;

  /** The device just realized: one connection attempt, a reconnect scheduled if it failed. */
  constructor(opts: VnicModelOptions) {
    if (opts.mac.length !== 6) throw new VnicModelError("mac must have 6 bytes");
    this.#mac = Uint8Array.from(opts.mac);
    this.#hasSocketPath = opts.socketPath;
    this.#listening = opts.listening;
    this.#mem = opts.memory;
    this.#now = opts.startNs ?? 0;
    // realize: one connection attempt, no interrupt (the link was never up);
    // the reset that follows realize would clear the cause anyway.
    if (this.#hasSocketPath && !this.#tryConnect()) this.#scheduleReconnect();
  }

  static #zeroRegs(): VnicRegisters {
    return {
      txAddrLo: 0,
      txAddrHi: 0,
      txLen: 0,
      rxAddrLo: 0,
      rxAddrHi: 0,
      rxLen: 0,
      rxStatus: 0,
      irqStatus: 0,
      irqMask: 0,
    };
  }

  // ---- observation -------------------------------------------------------

  /** A copy of the registers. */
  get registers(): VnicRegisters {
    return { ...this.#regs };
  }

  /** LINK_STATUS bit 0: the device holds a connection. */
  get linkUp(): boolean {
    return this.#device !== null;
  }

  /** Level of the INTx line. */
  get intx(): boolean {
    return this.#intx;
  }

  /** MSI messages sent so far. */
  get msiCount(): number {
    return this.#msiCount;
  }

  /** Virtual time in ns. */
  get nowNs(): number {
    return this.#now;
  }

  /** Virtual time of the next reconnect attempt, or null. */
  get reconnectAtNs(): number | null {
    return this.#reconnectAt;
  }

  /** Datagrams waiting in the device's receive queue (unread by the device). */
  get queuedToDevice(): number {
    return this.#device ? this.#device.toDevice.filter((x) => x !== EOF).length : 0;
  }

  /** Whether the peer holds an accepted connection (open on its side). */
  get peerConnected(): boolean {
    return this.#peer !== null;
  }

  /** Whether the peer's connection still has the device at the other end. */
  get peerConnectionAlive(): boolean {
    return this.#peer !== null && this.#peer.deviceOpen;
  }

  /** Whether something listens at the socket path. */
  get listening(): boolean {
    return this.#listening;
  }

  /** Connections waiting in the listener's backlog. */
  get pendingAccepts(): number {
    return this.#backlog.length;
  }

  /** Outcome counters. */
  get counters(): VnicCounters {
    return { ...this.#counters };
  }

  /** Frames landed in guest memory so far. */
  get deliveries(): number {
    return this.#deliveries;
  }

  /** Where the last frame landed. */
  get lastDelivery(): { addr: bigint; len: number } | null {
    return this.#lastDelivery;
  }

  /** Length of the next datagram the device would read, or null. */
  get nextQueuedLength(): number | null {
    const head = this.#device?.toDevice[0];
    return head === undefined || head === EOF ? null : head.length;
  }

  /** Frames the device sent to the peer's current connection since the last call. */
  takeFrames(): Uint8Array[] {
    if (!this.#peer) return [];
    const out = this.#peer.toPeer;
    this.#peer.toPeer = [];
    return out;
  }

  // ---- guest side --------------------------------------------------------

  /**
   * An MMIO read of `size` bytes at BAR0 `offset`.
   * Only aligned 32-bit reads see a register; everything else reads 0.
   */
  mmioRead(offset: number, size: 1 | 2 | 4 | 8): bigint {
    if (size !== 4 || offset % 4 !== 0) return 0n;
    const r = this.#regs;
    switch (offset) {
      case VNIC_REG.TX_ADDR_LO:
        return BigInt(r.txAddrLo);
      case VNIC_REG.TX_ADDR_HI:
        return BigInt(r.txAddrHi);
      case VNIC_REG.TX_LEN:
        return BigInt(r.txLen);
      case VNIC_REG.RX_ADDR_LO:
        return BigInt(r.rxAddrLo);
      case VNIC_REG.RX_ADDR_HI:
        return BigInt(r.rxAddrHi);
      case VNIC_REG.RX_LEN:
        return BigInt(r.rxLen);
      case VNIC_REG.RX_STATUS:
        return BigInt(r.rxStatus);
      case VNIC_REG.IRQ_STATUS:
        return BigInt(r.irqStatus);
      case VNIC_REG.IRQ_MASK:
        return BigInt(r.irqMask);
      case VNIC_REG.LINK_STATUS:
        return this.#device ? 1n : 0n;
      case VNIC_REG.MAC_LO: {
        const m = this.#mac;
        return BigInt((m[0] | m[1] << 8 | m[2] << 16 | m[3] << 24) >>> 0);
      }
      case VNIC_REG.MAC_HI:
        return BigInt(this.#mac[4] | this.#mac[5] << 8);
      default: // TX_DOORBELL (write-only) and unknown offsets
        return 0n;
    }
  }

  /** An MMIO write of `size` bytes at BAR0 `offset`. */
  mmioWrite(offset: number, size: 1 | 2 | 4 | 8, value: bigint): void {
    if (size !== 4 || offset % 4 !== 0) return;
    const v = Number(value & 0xffff_ffffn);
    const r = this.#regs;
    switch (offset) {
      case VNIC_REG.TX_ADDR_LO:
        r.txAddrLo = v;
        break;
      case VNIC_REG.TX_ADDR_HI:
        r.txAddrHi = v;
        break;
      case VNIC_REG.TX_LEN:
        r.txLen = v;
        break;
      case VNIC_REG.TX_DOORBELL:
        this.#transmit();
        break;
      case VNIC_REG.RX_ADDR_LO:
        r.rxAddrLo = v;
        break;
      case VNIC_REG.RX_ADDR_HI:
        r.rxAddrHi = v;
        break;
      case VNIC_REG.RX_STATUS:
        if (v === 0 && r.rxStatus === 1) {
          r.rxStatus = 0;
          this.#pump();
        }
        break;
      case VNIC_REG.IRQ_STATUS:
        r.irqStatus = (r.irqStatus & ~v) >>> 0;
        break;
      case VNIC_REG.IRQ_MASK:
        r.irqMask = v & VNIC_IRQ_ALL;
        break;
      default: // read-only and unknown registers: ignored
        return;
    }
    this.#updateIrq();
  }

  /** Device reset (system reset or FLR): registers cleared, MAC and link kept. */
  reset(): void {
    this.#counters.resets++;
    this.#regs = VnicModel.#zeroRegs();
    this.#asserted = 0;
    this.#pump();
    this.#updateIrq();
  }

  /**
   * The MSI enable bit in config space changed (a reset of the function
   * switches it off). Contract (docs/devices.md#interrupts-msi-and-intx):
   * while MSI is off INTx is asserted exactly while `IRQ_STATUS & IRQ_MASK`
   * is non-zero, so switching it off with a cause pending and enabled asserts
   * INTx at once; switching it on deasserts INTx and sends no message for
   * causes already pending (only a newly pending one sends one).
   */
  setMsiEnabled(on: boolean): void {
    this.#msiEnabled = on;
    this.#intx = !on && (this.#regs.irqStatus & this.#regs.irqMask) !== 0;
  }

  // ---- peer side ---------------------------------------------------------

  /** The peer sends one datagram on its current connection. */
  peerSend(frame: Uint8Array): PeerSendResult {
    const c = this.#peer;
    if (!c) return "none";
    if (!c.deviceOpen) return "broken";
    c.toDevice.push(frame.slice());
    this.#socketEvent();
    return "sent";
  }

  /** The peer closes its current connection. */
  peerClose(): void {
    const c = this.#peer;
    if (!c) return;
    this.#peer = null;
    this.#hangUp(c);
  }

  /**
   * The peer accepts the oldest pending connection (closing one it still
   * held). Returns whether there was one.
   */
  peerAccept(): boolean {
    const c = this.#backlog.shift();
    if (!c) return false;
    this.peerClose();
    this.#peer = c;
    return true;
  }

  /** The listening socket goes away; un-accepted connections are reset. */
  listenerClose(): void {
    this.#listening = false;
    const pending = this.#backlog;
    this.#backlog = [];
    for (const c of pending) this.#hangUp(c);
  }

  /** Something listens at the socket path again. */
  listenerOpen(): void {
    this.#listening = true;
  }

  // ---- time --------------------------------------------------------------

  /** Advance the virtual clock by `ns`, running reconnect attempts that fall due. */
  clockStep(ns: number): void {
    if (!Number.isSafeInteger(ns) || ns < 0) throw new VnicModelError(`bad clock step ${ns}`);
    const target = this.#now + ns;
    while (this.#reconnectAt !== null && this.#reconnectAt <= target) {
      this.#now = this.#reconnectAt;
      this.#reconnectAt = null;
      this.#reconnectAttempt();
    }
    this.#now = target;
  }

  // ---- internals ---------------------------------------------------------

  #hangUp(c: Connection): void {
    c.peerOpen = false;
    if (c.deviceOpen) {
      c.toDevice.push(EOF);
      this.#socketEvent();
    }
  }

  /** The device's socket became readable. */
  #socketEvent(): void {
    if (this.#regs.rxStatus !== 0) return; // not reading: back-pressure
    this.#pump();
    this.#updateIrq();
  }

  #pump(): void {
    const r = this.#regs;
    while (this.#device && r.rxStatus === 0) {
      const c = this.#device;
      const item = c.toDevice.shift();
      if (item === undefined) break;
      if (item === EOF) {
        this.#linkLost();
        break;
      }
      if (item.length === 0) {
        if (!c.peerOpen) {
          this.#linkLost();
          break;
        }
        this.#counters.rxDroppedSize++;
        continue;
      }
      if (item.length > VNIC_MAX_FRAME) {
        this.#counters.rxDroppedSize++;
        continue;
      }
      this.#deliver(item);
    }
  }

  #deliver(frame: Uint8Array): void {
    const r = this.#regs;
    const addr = BigInt(r.rxAddrHi) << 32n | BigInt(r.rxAddrLo);
    if (addr === 0n) {
      this.#counters.rxDroppedUnarmed++;
      return;
    }
    if (!this.#mem.dmaValid(addr, frame.length)) {
      this.#counters.rxDroppedDma++;
      return;
    }
    this.#counters.rxDelivered++;
    this.#mem.write(addr, frame);
    r.rxLen = frame.length;
    r.rxStatus = 1;
    this.#deliveries++;
    this.#lastDelivery = { addr, len: frame.length };
    r.irqStatus |= VNIC_IRQ.RX;
  }

  #transmit(): void {
    const r = this.#regs;
    const len = r.txLen;
    const addr = BigInt(r.txAddrHi) << 32n | BigInt(r.txAddrLo);
    if (len === 0 || len > VNIC_MAX_FRAME || !this.#mem.dmaValid(addr, len)) {
      this.#counters.txRejected++;
      return;
    }
    const frame = this.#mem.read(addr, len);
    r.irqStatus |= VNIC_IRQ.TX;
    const c = this.#device;
    if (!c || !c.peerOpen) {
      this.#counters.txDroppedLinkDown++;
      if (c) this.#linkLost();
      return;
    }
    this.#counters.txSent++;
    c.toPeer.push(frame);
  }

  #linkLost(): void {
    const c = this.#device;
    if (!c) return;
    this.#counters.linkLost++;
    c.deviceOpen = false;
    c.toDevice = [];
    this.#device = null;
    this.#regs.irqStatus |= VNIC_IRQ.LINK;
    this.#delayMs = VNIC_RECONNECT.firstMs;
    this.#scheduleReconnect();
  }

  #scheduleReconnect(): void {
    this.#reconnectAt = this.#now + this.#delayMs * NS_PER_MS;
  }

  #tryConnect(): boolean {
    if (!this.#listening) return false;
    const c: Connection = { toDevice: [], toPeer: [], deviceOpen: true, peerOpen: true };
    this.#backlog.push(c);
    this.#device = c;
    return true;
  }

  #reconnectAttempt(): void {
    if (this.#device) return;
    if (this.#tryConnect()) {
      this.#counters.linkUp++;
      this.#delayMs = VNIC_RECONNECT.firstMs;
      this.#regs.irqStatus |= VNIC_IRQ.LINK;
      this.#pump();
      this.#updateIrq();
      return;
    }
    this.#counters.reconnectFailed++;
    this.#delayMs = Math.min(this.#delayMs * 2, VNIC_RECONNECT.maxMs);
    this.#scheduleReconnect();
  }

  #updateIrq(): void {
    const pending = this.#regs.irqStatus & this.#regs.irqMask;
    const rising = pending & ~this.#asserted;
    this.#asserted = pending;
    if (this.#msiEnabled) {
      if (rising) this.#msiCount++;
    } else {
      this.#intx = pending !== 0;
    }
  }
}
