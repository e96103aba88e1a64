/**
 * Reference model of the cnuasgpu PCI function, written from docs/devices.md
 * (#cnuasgpu) and never from the C device. Pure: no I/O, no clocks of its
 * own. The qtest oracle drives it with the same operations it sends to QEMU
 * and compares what both say.
 *
 * The model sees the CnuasLink socket as the device does: a queue of
 * datagrams (and, once the peer closes, an end-of-file) that the device reads
 * whenever no received frame waits in BAR1. Time is the virtual clock, moved
 * only by `clockStep`.
 *
 * Where the original design left a choice open, the model follows the
 * decision docs/devices.md records (marked "decided here"), as the device does.
 *
 * @example
 * ```ts
 * const gpu = new GpuModel({ ...GPU_DEFAULTS, devmemSize: 65536 }, { listening: true });
 * gpu.write(GPU_REG.LINK_RX_BUF_SIZE, 4096);
 * gpu.peerSend(new Uint8Array(64));
 * gpu.read(GPU_REG.LINK_STATUS).value; // 0b11: link up, a frame waits
 * ```
 */
import { HilError } from "../errors.ts";

/** BAR0 register offsets (docs/devices.md#cnuasgpu). */
export const GPU_REG = {
  VENDOR_ID: 0x000,
  DEVICE_ID: 0x004,
  REVISION: 0x008,
  FW_VERSION: 0x00c,
  GPU_ID: 0x010,
  SM_COUNT: 0x014,
  LANES_PER_SM: 0x018,
  TENSOR_SIZE: 0x01c,
  DEVMEM_SIZE_LO: 0x020,
  DEVMEM_SIZE_HI: 0x024,
  IRQ_STATUS: 0x100,
  IRQ_MASK: 0x104,
  LINK_STATUS: 0x200,
  LINK_TX_OFFSET_LO: 0x204,
  LINK_TX_OFFSET_HI: 0x208,
  LINK_TX_LEN: 0x20c,
  LINK_TX_DOORBELL: 0x210,
  LINK_RX_OFFSET_LO: 0x214,
  LINK_RX_OFFSET_HI: 0x218,
  LINK_RX_BUF_SIZE: 0x21c,
  LINK_RX_LEN: 0x220,
  LINK_RX_CONSUME: 0x224,
} as const;

/** Interrupt causes (IRQ_STATUS / IRQ_MASK bits). */
export const GPU_IRQ = { TX_DONE: 1 << 0, RX_READY: 1 << 1 } as const;

/** LINK_STATUS bits. */
export const GPU_LINK = { UP: 1 << 0, RX_READY: 1 << 1 } as const;

/** PCI identity of the function. */
export const GPU_PCI = {
  vendor: 0x1af4,
  device: 0x10f1,
  classCode: 0x0b40,
  revision: 0x01,
  fwVersion: 0x00010000,
} as const;

/** Size of the BAR0 register window. */
export const GPU_REGS_SIZE = 0x10000;

/** Largest CnuasLink frame, both directions. */
export const GPU_LINK_MTU = 65536;

/** Reconnect delays on the virtual clock, in nanoseconds. */
export const GPU_RECONNECT = {
  minNs: 100_000_000,
  maxNs: 2_000_000_000,
  /** A connection that lived this long resets the delay when it ends. */
  stableNs: 2_000_000_000,
} as const;

/** Device properties the model needs. */
export interface GpuConfig {
  /** `gpu_id` property, read back from GPU_ID. */
  gpuId: number;
  /** `sm_count` property, read back from SM_COUNT. */
  smCount: number;
  /** `lanes_per_sm` property, read back from LANES_PER_SM. */
  lanesPerSm: number;
  /** `tensor_size` property, read back from TENSOR_SIZE. */
  tensorSize: number;
  /** BAR1 size in bytes, a power of two. */
  devmemSize: number;
  /** Whether `cnuaslink_socket` is set (otherwise the link is down for good). */
  linkConfigured: boolean;
}

/** Property defaults (docs/devices.md#gpu-identity-properties-and-bars). */
export const GPU_DEFAULTS: GpuConfig = {
  gpuId: 0,
  smCount: 16,
  lanesPerSm: 32,
  tensorSize: 16,
  devmemSize: 256 * 1024 * 1024,
  linkConfigured: true,
};

/** What one operation made the device do besides its return value. */
export interface GpuEffects {
  /** Guest-error log lines written (one short reason each). */
  logs: string[];
  /** Frames sent to the CnuasLink peer, in order. */
  sent: Uint8Array[];
  /** MSI messages sent. */
  msi: number;
  /** Connections the device opened to the peer's listening socket. */
  connects: number;
}

/** A register read and its effects. */
export interface GpuRead extends GpuEffects {
  /** The value the read returned. */
  value: number;
}

type SocketItem = { kind: "frame"; data: Uint8Array } | { kind: "eof" };

const PAGE = 4096;
const MASK32 = 0xffff_ffff;

function noEffects(): GpuEffects {
  return { logs: [], sent: [], msi: 0, connects: 0 };
}

/** Thrown when the model is asked for something a real environment cannot do. */
export class GpuModelUsageError extends HilError {}

/** The cnuasgpu reference model. */
export class GpuModel {
  /** The device properties this model was built with. */
  readonly config: GpuConfig;

  private irqStatus = 0;
  private irqMask = 0;
  private txOffLo = 0;
  private txOffHi = 0;
  private txLen = 0;
  private rxOffLo = 0;
  private rxOffHi = 0;
  private rxBufSize = 0;
  private rxLen = 0;
  private rxReady = false;

  private msiEnabled = false;
  /** IRQ_STATUS & IRQ_MASK as last signalled. */
  private asserted = 0;

  /** Device side of the link: a connected socket exists. */
  private connected = false;
  /** The peer's end of the current connection is open. */
  private peerOpen = false;
  /** Datagrams (and EOF) queued towards the device on the current connection. */
  private queue: SocketItem[] = [];
  /** The peer listens for connections. */
  private listening: boolean;
  /** Virtual time, ns. */
  private now = 0;
  private retryAt: number | null = null;
  private retryDelay: number = GPU_RECONNECT.minNs;
  private connectedAt = 0;

  private readonly pages = new Map<number, Uint8Array>();
  private fx: GpuEffects = noEffects();

  /**
   * A device just realized at virtual time 0. `listening` says whether the
   * peer's socket accepts connections at that moment.
   */
  constructor(config: GpuConfig, env: { listening: boolean }) {
    if (config.devmemSize < PAGE || (config.devmemSize & (config.devmemSize - 1)) !== 0) {
      throw new GpuModelUsageError(
        `devmemSize ${config.devmemSize} must be a power of two of at least 4096; fix the config`,
      );
    }
    this.config = config;
    this.listening = env.listening;
    if (config.linkConfigured && !this.tryConnect()) {
      this.retryAt = this.now + this.retryDelay;
    }
  }

  /** Effects of the realize-time connect attempt (call once, first). */
  takeInitialEffects(): GpuEffects {
    return this.take();
  }

  // ---- observation ---------------------------------------------------------

  /** Whether the device asserts INTx now. */
  get intx(): boolean {
    return this.asserted !== 0 && !this.msiEnabled;
  }

  /** Whether the device considers the link up. */
  get linkUp(): boolean {
    return this.connected;
  }

  /** The LINK_STATUS value, without side effects. */
  get linkStatus(): number {
    return (this.connected ? GPU_LINK.UP : 0) | (this.rxReady ? GPU_LINK.RX_READY : 0);
  }

  /** Whether the peer's end of the current connection is open and the device holds the other. */
  get peerConnected(): boolean {
    return this.peerOpen;
  }

  /** Datagrams queued towards the device that it has not read yet. */
  get queuedFrames(): number {
    return this.queue.filter((i) => i.kind === "frame").length;
  }

  // ---- BAR0 ----------------------------------------------------------------

  /** A 32-bit read of BAR0 at `offset`. */
  read(offset: number): GpuRead {
    const value = this.readReg(offset) >>> 0;
    return { value, ...this.take() };
  }

  /** A 32-bit write of `value` to BAR0 at `offset`. */
  write(offset: number, value: number): GpuEffects {
    this.writeReg(offset, value >>> 0);
    return this.take();
  }

  /**
   * A BAR0 access of `size` bytes at `offset`: a read when `value` is absent,
   * else a write. The contract (docs/devices.md#register-access) makes
   * registers 32-bit: an aligned 32-bit access is `read`/`write`; any other
   * size, or an unaligned offset, is one guest error that reads 0 and changes
   * nothing — an 8-byte access is not two 32-bit ones.
   */
  access(offset: number, size: 1 | 2 | 4 | 8, value?: bigint): GpuRead {
    if (size === 4 && offset % 4 === 0) {
      if (value === undefined) return this.read(offset);
      return { value: 0, ...this.write(offset, Number(value & 0xffff_ffffn)) };
    }
    this.log(`${size}-byte ${value === undefined ? "read" : "write"} refused`);
    return { value: 0, ...this.take() };
  }

  // ---- BAR1 ----------------------------------------------------------------

  /** Read `len` bytes of device memory at `offset` (the guest's view of BAR1). */
  readMem(offset: number, len: number): Uint8Array {
    this.checkMemRange(offset, len);
    const out = new Uint8Array(len);
    let done = 0;
    while (done < len) {
      const at = offset + done;
      const page = this.pages.get(Math.floor(at / PAGE));
      const inPage = at % PAGE;
      const n = Math.min(PAGE - inPage, len - done);
      if (page) out.set(page.subarray(inPage, inPage + n), done);
      done += n;
    }
    return out;
  }

  /** Write bytes into device memory at `offset` (the guest writing BAR1). */
  writeMem(offset: number, data: Uint8Array): void {
    this.checkMemRange(offset, data.length);
    let done = 0;
    while (done < data.length) {
      const at = offset + done;
      const index = Math.floor(at / PAGE);
      let page = this.pages.get(index);
      if (!page) {
        page = new Uint8Array(PAGE);
        this.pages.set(index, page);
      }
      const inPage = at % PAGE;
      const n = Math.min(PAGE - inPage, data.length - done);
      page.set(data.subarray(done, done + n), inPage);
      done += n;
    }
  }

  // ---- PCI -----------------------------------------------------------------

  /**
   * A system reset (docs/devices.md#gpu-reset): IRQ_STATUS, IRQ_MASK and every
   * CnuasLink register cleared, a waiting frame forgotten (its bytes stay),
   * INTx deasserted, MSI off (config space is reset too); the link and BAR1
   * stay, and reading the socket resumes with receive unarmed.
   */
  reset(): GpuEffects {
    this.irqStatus = 0;
    this.irqMask = 0;
    this.txOffLo = 0;
    this.txOffHi = 0;
    this.txLen = 0;
    this.rxOffLo = 0;
    this.rxOffHi = 0;
    this.rxBufSize = 0;
    this.rxLen = 0;
    this.rxReady = false;
    this.asserted = 0;
    this.msiEnabled = false;
    this.poll();
    return this.take();
  }

  /** The guest enables or disables MSI in config space. */
  setMsiEnabled(enabled: boolean): GpuEffects {
    this.msiEnabled = enabled;
    return this.take();
  }

  // ---- the CnuasLink peer ----------------------------------------------------

  /** The peer sends one datagram on the current connection. */
  peerSend(frame: Uint8Array): GpuEffects {
    if (!this.peerOpen) {
      throw new GpuModelUsageError("peerSend without an open peer connection; connect first");
    }
    this.queue.push({ kind: "frame", data: frame.slice() });
    this.poll();
    return this.take();
  }

  /** The peer closes its end of the current connection. */
  peerClose(): GpuEffects {
    if (!this.peerOpen) {
      throw new GpuModelUsageError("peerClose without an open peer connection");
    }
    this.peerOpen = false;
    this.queue.push({ kind: "eof" });
    this.poll();
    return this.take();
  }

  /** The peer starts or stops listening for connections. */
  setListening(listening: boolean): GpuEffects {
    this.listening = listening;
    return this.take();
  }

  /** Advance the virtual clock by `ns`, running reconnect attempts that fall due. */
  clockStep(ns: number): GpuEffects {
    const end = this.now + ns;
    while (this.retryAt !== null && this.retryAt <= end) {
      this.now = this.retryAt;
      this.retryAt = null;
      if (!this.connected && !this.tryConnect()) {
        this.retryDelay = Math.min(this.retryDelay * 2, GPU_RECONNECT.maxNs);
        this.retryAt = this.now + this.retryDelay;
      }
    }
    this.now = end;
    return this.take();
  }

  /** Nanoseconds until the next reconnect attempt, or null when none is due. */
  get nextRetryInNs(): number | null {
    return this.retryAt === null ? null : this.retryAt - this.now;
  }

  // ---- internals -------------------------------------------------------------

  /** Hand over the effects gathered so far and start a fresh set. */
  private take(): GpuEffects {
    const fx = this.fx;
    this.fx = noEffects();
    return fx;
  }

  /** Record a guest-error log line. */
  private log(reason: string): void {
    this.fx.logs.push(reason);
  }

  /** Refuse BAR1 accesses past device memory: the guest cannot make them. */
  private checkMemRange(offset: number, len: number): void {
    if (offset < 0 || len < 0 || offset + len > this.config.devmemSize) {
      throw new GpuModelUsageError(
        `BAR1 access ${offset}+${len} outside ${this.config.devmemSize} bytes; the guest cannot reach it`,
      );
    }
  }

  /** Recompute the asserted causes; with MSI enabled, a newly asserted one sends an MSI. */
  private updateIrq(): void {
    const pending = this.irqStatus & this.irqMask;
    if (this.msiEnabled && (pending & ~this.asserted) !== 0) this.fx.msi++;
    this.asserted = pending;
  }

  /** Set an interrupt cause in IRQ_STATUS. */
  private raise(cause: number): void {
    this.irqStatus |= cause;
    this.updateIrq();
  }

  /** Connect to the peer if it is listening; false when it is not. */
  private tryConnect(): boolean {
    if (!this.listening) return false;
    this.connected = true;
    this.peerOpen = true;
    this.queue = [];
    this.connectedAt = this.now;
    this.fx.connects++;
    return true;
  }

  /** Drop the connection and schedule the next reconnect with backoff. */
  private linkDown(): void {
    if (!this.connected) return;
    this.connected = false;
    // The device closed its socket: whatever the peer still holds is a dead end.
    this.peerOpen = false;
    this.queue = [];
    this.retryDelay = this.now - this.connectedAt >= GPU_RECONNECT.stableNs
      ? GPU_RECONNECT.minNs
      : Math.min(this.retryDelay * 2, GPU_RECONNECT.maxNs);
    this.retryAt = this.config.linkConfigured ? this.now + this.retryDelay : null;
  }

  /** The device reads its socket until a frame waits, the queue is empty, or EOF. */
  private poll(): void {
    while (this.connected && !this.rxReady && this.queue.length > 0) {
      const item = this.queue.shift()!;
      if (item.kind === "eof" || (item.data.length === 0 && !this.peerOpen)) {
        this.linkDown();
        return;
      }
      if (item.data.length === 0) {
        this.log("empty frame");
        continue;
      }
      this.deliver(item.data);
    }
  }

  /** Land a received frame in the armed buffer, or log why it cannot. */
  private deliver(frame: Uint8Array): void {
    const offset = (BigInt(this.rxOffHi) << 32n) | BigInt(this.rxOffLo);
    const size = BigInt(this.config.devmemSize);
    if (frame.length > GPU_LINK_MTU) return this.log("received frame larger than 64 KiB");
    if (this.rxBufSize === 0) return this.log("frame while receive not armed");
    if (frame.length > this.rxBufSize) return this.log("frame larger than the armed buffer");
    if (offset > size || BigInt(this.rxBufSize) > size - offset) {
      return this.log("armed receive buffer outside device memory");
    }
    this.writeMem(Number(offset), frame);
    this.rxLen = frame.length;
    this.rxReady = true;
    this.raise(GPU_IRQ.RX_READY);
  }

  /** LINK_TX_DOORBELL: send the transmit range to the peer, or log why not. */
  private doorbell(): void {
    if (!this.connected) return;
    if (this.txLen === 0 || this.txLen > GPU_LINK_MTU) {
      return this.log("LINK_TX_LEN outside 1..65536");
    }
    const offset = (BigInt(this.txOffHi) << 32n) | BigInt(this.txOffLo);
    const size = BigInt(this.config.devmemSize);
    if (offset > size || BigInt(this.txLen) > size - offset) {
      return this.log("transmit range outside device memory");
    }
    if (!this.peerOpen) {
      // The peer is gone but the device has not read the EOF yet: the send fails.
      this.linkDown();
      return;
    }
    this.fx.sent.push(this.readMem(Number(offset), this.txLen));
    this.raise(GPU_IRQ.TX_DONE);
  }

  /** A BAR0 register's value; unknown offsets log and read 0. */
  private readReg(offset: number): number {
    const c = this.config;
    switch (offset) {
      case GPU_REG.VENDOR_ID:
        return GPU_PCI.vendor;
      case GPU_REG.DEVICE_ID:
        return GPU_PCI.device;
      case GPU_REG.REVISION:
        return GPU_PCI.revision;
      case GPU_REG.FW_VERSION:
        return GPU_PCI.fwVersion;
      case GPU_REG.GPU_ID:
        return c.gpuId;
      case GPU_REG.SM_COUNT:
        return c.smCount;
      case GPU_REG.LANES_PER_SM:
        return c.lanesPerSm;
      case GPU_REG.TENSOR_SIZE:
        return c.tensorSize;
      case GPU_REG.DEVMEM_SIZE_LO:
        return c.devmemSize % 0x1_0000_0000;
      case GPU_REG.DEVMEM_SIZE_HI:
        return Math.floor(c.devmemSize / 0x1_0000_0000);
      case GPU_REG.IRQ_STATUS:
        return this.irqStatus;
      case GPU_REG.IRQ_MASK:
        return this.irqMask;
      case GPU_REG.LINK_STATUS:
        return this.linkStatus;
      case GPU_REG.LINK_TX_OFFSET_LO:
        return this.txOffLo;
      case GPU_REG.LINK_TX_OFFSET_HI:
        return this.txOffHi;
      case GPU_REG.LINK_TX_LEN:
        return this.txLen;
      case GPU_REG.LINK_RX_OFFSET_LO:
        return this.rxOffLo;
      case GPU_REG.LINK_RX_OFFSET_HI:
        return this.rxOffHi;
      case GPU_REG.LINK_RX_BUF_SIZE:
        return this.rxBufSize;
      case GPU_REG.LINK_RX_LEN:
        return this.rxLen;
      case GPU_REG.LINK_TX_DOORBELL:
      case GPU_REG.LINK_RX_CONSUME:
        return 0;
      default:
        this.log("read of an unknown register");
        return 0;
    }
  }

  /** A BAR0 register write and what it sets off. */
  private writeReg(offset: number, value: number): void {
    switch (offset) {
      case GPU_REG.IRQ_STATUS:
        this.irqStatus = (this.irqStatus & ~value) & MASK32;
        this.updateIrq();
        return;
      case GPU_REG.IRQ_MASK:
        this.irqMask = value & (GPU_IRQ.TX_DONE | GPU_IRQ.RX_READY);
        this.updateIrq();
        return;
      case GPU_REG.LINK_TX_OFFSET_LO:
        this.txOffLo = value;
        return;
      case GPU_REG.LINK_TX_OFFSET_HI:
        this.txOffHi = value;
        return;
      case GPU_REG.LINK_TX_LEN:
        this.txLen = value;
        return;
      case GPU_REG.LINK_TX_DOORBELL:
        if (value !== 0) this.doorbell();
        return;
      case GPU_REG.LINK_RX_OFFSET_LO:
        this.rxOffLo = value;
        return;
      case GPU_REG.LINK_RX_OFFSET_HI:
        this.rxOffHi = value;
        return;
      case GPU_REG.LINK_RX_BUF_SIZE:
        this.rxBufSize = value;
        return;
      case GPU_REG.LINK_RX_CONSUME:
        if (value !== 0 && this.rxReady) {
          this.rxReady = false;
          this.poll();
        }
        return;
      case GPU_REG.VENDOR_ID:
      case GPU_REG.DEVICE_ID:
      case GPU_REG.REVISION:
      case GPU_REG.FW_VERSION:
      case GPU_REG.GPU_ID:
      case GPU_REG.SM_COUNT:
      case GPU_REG.LANES_PER_SM:
      case GPU_REG.TENSOR_SIZE:
      case GPU_REG.DEVMEM_SIZE_LO:
      case GPU_REG.DEVMEM_SIZE_HI:
      case GPU_REG.LINK_STATUS:
      case GPU_REG.LINK_RX_LEN:
        this.log("write to a read-only register");
        return;
      default:
        this.log("write to an unknown register");
    }
  }
}
