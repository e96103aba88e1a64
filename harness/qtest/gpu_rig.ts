/**
 * A cnuasgpu under qtest with the test playing the CnuasLink peer.
 * {@link QtestGpu} starts QEMU with one `cnuasgpu` device, programs its BARs
 * (BAR0 32-bit, BAR1 64-bit) and command register through PCI configuration
 * mechanism #1 (`pci.ts`), and observes its interrupt: INTx through the
 * Interrupt Status bit of the PCI status register, MSI by aiming the message
 * at a word of guest RAM. {@link GpuRig} adds the peer: the listening
 * SEQPACKET socket the device connects to, and the accepted connection. Used
 * by the directed tests and the differential oracle, as `vnic_rig.ts` is for
 * cnuas-vnic. Built on the generic client in `client.ts`.
 *
 * @example
 * ```ts
 * const rig = await GpuRig.start({ binary, firmware, props: { gpu_id: 3 }, accept: true });
 * try {
 *   console.log(await rig.gpu.reg(0x010)); // 3
 * } finally {
 *   await rig.close();
 * }
 * ```
 */
import { HilError } from "../errors.ts";
import { join } from "node:path";
import {
  SeqpacketClosedError,
  SeqpacketServer,
  type SeqpacketSocket,
} from "../fabric/seqpacket.ts";
import { QtestMachine } from "./client.ts";
import { QtestPciDevice } from "./pci.ts";

/** PCI slot the device is placed in (bus 0, function 0). */
export const GPU_QTEST_SLOT = 4;
/** Guest-physical address BAR0 is programmed to. */
export const GPU_QTEST_BAR0 = 0xe000_0000;
/** Guest-physical address BAR1 is programmed to (above 4 GiB: it is a 64-bit BAR). */
export const GPU_QTEST_BAR1 = 0x1_0000_0000n;
/** Guest RAM word MSI messages are written to. */
export const GPU_QTEST_MSI_ADDR = 0x7000;
/** MSI data value the device writes there. */
export const GPU_QTEST_MSI_DATA = 0x4d51;

const PCI_COMMAND = 0x04;
const PCI_STATUS = 0x06;
const PCI_STATUS_INTERRUPT = 0x08;
const PCI_CAP_ID_MSI = 0x05;
const CMD_MEMORY = 0x2;
const CMD_MASTER = 0x4;

/** Device properties, by their QEMU names. */
export type GpuProps = Record<string, string | number>;

/** How to start the machine. */
export interface QtestGpuOptions {
  binary: string;
  firmware?: string[];
  /** `-device cnuasgpu,...` properties besides `addr`. */
  props?: GpuProps;
  /** Directory for sockets and logs (a temp dir when absent). */
  workDir?: string;
  /** Environment QEMU gets besides ours. */
  env?: Record<string, string>;
  /** More QEMU arguments (e.g. `-qmp` for a test that saves the state). */
  extraArgs?: string[];
}

/** The device did not enumerate as expected. */
export class QtestGpuError extends HilError {}

/** One cnuasgpu function in a qtest machine, BARs assigned and decoding. */
export class QtestGpu {
  readonly qt: QtestMachine;
  /** Size of BAR1 as the BAR reports it. */
  readonly bar1Size: bigint;
  #msiCap: number;
  #logOffset = 0;
  #logFile: Deno.FsFile | null = null;
  #logCarry = "";
  #logLines = 0;

  private constructor(qt: QtestMachine, bar1Size: bigint, msiCap: number) {
    this.qt = qt;
    this.bar1Size = bar1Size;
    this.#msiCap = msiCap;
  }

  /** Start QEMU with the device and bring it to a decoding state. */
  static async start(opts: QtestGpuOptions): Promise<QtestGpu> {
    const props = Object.entries(opts.props ?? {}).map(([k, v]) => `,${k}=${v}`).join("");
    const qt = await QtestMachine.start({
      binary: opts.binary,
      firmware: opts.firmware,
      workDir: opts.workDir,
      env: opts.env,
      devices: [`cnuasgpu,addr=${GPU_QTEST_SLOT}${props}`],
      extraArgs: opts.extraArgs,
    });
    try {
      const { bar1Size, msiCap } = await QtestGpu.#program(qt);
      return new QtestGpu(qt, bar1Size, msiCap);
    } catch (e) {
      await qt.close({ keepFiles: true });
      throw e;
    }
  }

  /**
   * A system reset through the ICH9 reset control register (0xcf9), then the
   * BARs, command register and MSI target programmed again: the reset
   * clears config space (MSI ends disabled).
   */
  async systemReset(): Promise<void> {
    await this.qt.out(0xcf9, 1, 0x06);
    // The reset runs between main-loop iterations: a round trip after the
    // write's answer arrives in a later iteration, so it sees the reset done.
    await this.qt.sync();
    await QtestGpu.#program(this.qt);
  }

  /** Check the identity, place BAR0 and BAR1, enable decoding, aim MSI at RAM. */
  static async #program(qt: QtestMachine): Promise<{ bar1Size: bigint; msiCap: number }> {
    const id = await cfgRead(qt, 0x00, 4);
    if (id !== 0x10f1_1af4) {
      throw new QtestGpuError(
        `no cnuasgpu at 00:${GPU_QTEST_SLOT}.0 (id 0x${
          id.toString(16)
        }); is it compiled into this QEMU?`,
      );
    }
    // BAR0: 32-bit memory.
    await cfgWrite(qt, 0x10, 4, 0xffff_ffff);
    const bar0Mask = await cfgRead(qt, 0x10, 4);
    await cfgWrite(qt, 0x10, 4, GPU_QTEST_BAR0);
    if ((bar0Mask & 0x7) !== 0 || ((~(bar0Mask & ~0xf) + 1) >>> 0) !== 0x10000) {
      throw new QtestGpuError(
        `BAR0 is not a 64 KiB 32-bit memory BAR (0x${bar0Mask.toString(16)})`,
      );
    }
    // BAR1: 64-bit prefetchable memory, sized through both halves.
    await cfgWrite(qt, 0x14, 4, 0xffff_ffff);
    await cfgWrite(qt, 0x18, 4, 0xffff_ffff);
    const lo = await cfgRead(qt, 0x14, 4);
    const hi = await cfgRead(qt, 0x18, 4);
    if ((lo & 0xf) !== 0xc) {
      throw new QtestGpuError(`BAR1 is not 64-bit prefetchable memory (0x${lo.toString(16)})`);
    }
    const mask = (BigInt(hi) << 32n) | BigInt((lo & ~0xf) >>> 0);
    const bar1Size = ((~mask) & 0xffff_ffff_ffff_ffffn) + 1n;
    await cfgWrite(qt, 0x14, 4, Number(GPU_QTEST_BAR1 & 0xffff_ffffn));
    await cfgWrite(qt, 0x18, 4, Number(GPU_QTEST_BAR1 >> 32n));
    await cfgWrite(qt, PCI_COMMAND, 2, CMD_MEMORY | CMD_MASTER);
    const msiCap = await findCap(qt, PCI_CAP_ID_MSI);
    if (msiCap === 0) throw new QtestGpuError("no MSI capability");
    // Aim MSI at a RAM word (64-bit capability: addr lo, addr hi, data at +0xc).
    await cfgWrite(qt, msiCap + 4, 4, GPU_QTEST_MSI_ADDR);
    await cfgWrite(qt, msiCap + 8, 4, 0);
    await cfgWrite(qt, msiCap + 12, 2, GPU_QTEST_MSI_DATA);
    await qt.writel(GPU_QTEST_MSI_ADDR, 0);
    return { bar1Size, msiCap };
  }

  /** Read PCI config space of the device. */
  cfgRead(off: number, size: 1 | 2 | 4): Promise<number> {
    return cfgRead(this.qt, off, size);
  }

  /** Write PCI config space of the device. */
  cfgWrite(off: number, size: 1 | 2 | 4, value: number): Promise<void> {
    return cfgWrite(this.qt, off, size, value);
  }

  /** Offset of capability `id` in config space (0 when absent). */
  findCap(id: number): Promise<number> {
    return findCap(this.qt, id);
  }

  /** 32-bit read of a BAR0 register. */
  reg(off: number): Promise<number> {
    return this.qt.readl(GPU_QTEST_BAR0 + off);
  }

  /** 32-bit write of a BAR0 register. */
  setReg(off: number, value: number): Promise<void> {
    return this.qt.writel(GPU_QTEST_BAR0 + off, value >>> 0);
  }

  /** An access of any size to BAR0 (for the sizes the device refuses); a write when `value` is given. */
  regAccess(off: number, size: 1 | 2 | 4 | 8, value?: number | bigint): Promise<bigint | void> {
    const addr = GPU_QTEST_BAR0 + off;
    return value === undefined ? this.qt.read(addr, size) : this.qt.write(addr, size, value);
  }

  /** Read BAR1 bytes. */
  devmemRead(off: number, len: number): Promise<Uint8Array> {
    return this.qt.memRead(GPU_QTEST_BAR1 + BigInt(off), len);
  }

  /** Write BAR1 bytes. */
  devmemWrite(off: number, data: Uint8Array): Promise<void> {
    return this.qt.memWrite(GPU_QTEST_BAR1 + BigInt(off), data);
  }

  /** Enable or disable MSI in the capability's control word. */
  async setMsi(enabled: boolean): Promise<void> {
    const ctl = await this.cfgRead(this.#msiCap + 2, 2);
    await this.cfgWrite(this.#msiCap + 2, 2, enabled ? ctl | 1 : ctl & ~1);
  }

  /** Whether INTx is asserted (PCI status Interrupt Status bit). */
  async intx(): Promise<boolean> {
    return ((await this.cfgRead(PCI_STATUS, 2)) & PCI_STATUS_INTERRUPT) !== 0;
  }

  /**
   * Whether an MSI message arrived since the last call (the RAM word holds the
   * data value); clears the word.
   */
  async takeMsi(): Promise<boolean> {
    const v = await this.qt.readl(GPU_QTEST_MSI_ADDR);
    if (v === 0) return false;
    await this.qt.writel(GPU_QTEST_MSI_ADDR, 0);
    if (v !== GPU_QTEST_MSI_DATA) {
      throw new QtestGpuError(
        `MSI word holds 0x${v.toString(16)}, expected 0x${GPU_QTEST_MSI_DATA.toString(16)}`,
      );
    }
    return true;
  }

  /**
   * Number of `cnuasgpu` guest-error lines in QEMU's log so far (read
   * incrementally: the log only grows).
   */
  guestErrorCount(): number {
    this.#logFile ??= (() => {
      try {
        return Deno.openSync(this.qt.logPath, { read: true });
      } catch {
        return null;
      }
    })();
    if (!this.#logFile) return 0;
    const buf = new Uint8Array(1 << 16);
    for (;;) {
      this.#logFile.seekSync(this.#logOffset, Deno.SeekMode.Start);
      const n = this.#logFile.readSync(buf);
      if (!n) break;
      this.#logOffset += n;
      const text = this.#logCarry + new TextDecoder().decode(buf.subarray(0, n));
      const lines = text.split("\n");
      this.#logCarry = lines.pop() ?? "";
      for (const l of lines) if (l.startsWith("cnuasgpu ")) this.#logLines++;
    }
    return this.#logLines;
  }

  /** Stop QEMU. */
  async close(opts: { keepFiles?: boolean } = {}): Promise<void> {
    this.#logFile?.close();
    this.#logFile = null;
    await this.qt.close(opts);
  }
}

function at(qt: QtestMachine): QtestPciDevice {
  return new QtestPciDevice(qt, { bus: 0, slot: GPU_QTEST_SLOT, fn: 0 });
}

function cfgRead(qt: QtestMachine, off: number, size: 1 | 2 | 4): Promise<number> {
  return at(qt).read(off, size);
}

function cfgWrite(qt: QtestMachine, off: number, size: 1 | 2 | 4, value: number): Promise<void> {
  return at(qt).write(off, size, value);
}

function findCap(qt: QtestMachine, id: number): Promise<number> {
  return at(qt).capability(id);
}

/** Options of {@link GpuRig.start}. */
export interface GpuRigOptions {
  /** `qemu-system-x86_64` with the cnuasgpu device. */
  binary: string;
  /** Firmware directories (`-L` each). */
  firmware?: string[];
  /** `-device cnuasgpu,...` properties besides `addr` and `cnuaslink_socket`. */
  props?: GpuProps;
  /** Give the device a `cnuaslink_socket` (default true). */
  link?: boolean;
  /** Listen on it before QEMU starts (default true). */
  listen?: boolean;
  /** Accept the realize-time connection before returning (default false). */
  accept?: boolean;
  /** Prefix of the temporary work directory. */
  prefix?: string;
  /** Environment QEMU gets besides ours. */
  env?: Record<string, string>;
  /** More QEMU arguments. */
  extraArgs?: string[];
}

/** A running cnuasgpu and the CnuasLink peer's end of its wire. */
export class GpuRig {
  /** The listening peer socket; null when not listening. */
  server: SeqpacketServer | null;
  /** The connection the device made, once accepted. */
  conn: SeqpacketSocket | null = null;

  private constructor(
    readonly gpu: QtestGpu,
    /** Where the peer listens (`cnuaslink_socket`). */
    readonly socketPath: string,
    /** Sockets and QEMU's log and stderr. */
    readonly workDir: string,
    server: SeqpacketServer | null,
  ) {
    this.server = server;
  }

  /** Start QEMU with the device, the peer listening first unless told otherwise. */
  static async start(opts: GpuRigOptions): Promise<GpuRig> {
    const workDir = await Deno.makeTempDir({ prefix: opts.prefix ?? "gpu-qtest-" });
    const socketPath = join(workDir, "link.sock");
    const link = opts.link !== false;
    const server = opts.listen === false ? null : SeqpacketServer.listen(socketPath);
    let gpu: QtestGpu;
    try {
      gpu = await QtestGpu.start({
        binary: opts.binary,
        firmware: opts.firmware,
        workDir,
        env: opts.env,
        props: { ...(link ? { cnuaslink_socket: socketPath } : {}), ...opts.props },
        extraArgs: opts.extraArgs,
      });
    } catch (e) {
      server?.close();
      await Deno.remove(workDir, { recursive: true }).catch(() => {});
      throw e;
    }
    const rig = new GpuRig(gpu, socketPath, workDir, server);
    if (link && opts.accept) rig.conn = server?.accept(2000) ?? null;
    return rig;
  }

  /** Frames the device sent since the last call. */
  drainFrames(): Uint8Array[] {
    const out: Uint8Array[] = [];
    if (!this.conn) return out;
    try {
      for (let f = this.conn.tryRecv(); f; f = this.conn.tryRecv()) out.push(f);
    } catch (e) {
      if (!(e instanceof SeqpacketClosedError)) throw e;
    }
    return out;
  }

  /** The peer closes its connection. */
  closeConn(): void {
    this.conn?.close();
    this.conn = null;
  }

  /** The peer listens on the socket path (again). */
  listen(): void {
    this.server = SeqpacketServer.listen(this.socketPath);
  }

  /** The peer stops listening. */
  stopListening(): void {
    this.server?.close();
    this.server = null;
  }

  /** Close the peer's sockets, stop QEMU, remove the work directory unless `keepFiles`. */
  async close(opts: { keepFiles?: boolean } = {}): Promise<void> {
    this.closeConn();
    this.stopListening();
    await this.gpu.close({ keepFiles: true });
    if (!opts.keepFiles) await Deno.remove(this.workDir, { recursive: true }).catch(() => {});
  }
}
