/**
 * A cnuas-vnic under qtest with the test playing the switch end of its wire:
 * QEMU with one device at 00:04.0, BAR0 placed, bus mastering on, INTx or MSI
 * set up the way a driver would, and the listening SEQPACKET socket plus the
 * accepted connection held here. Used by the directed tests, the differential
 * oracle and the bench.
 *
 * MSI detection: the message address points at guest RAM (`MSI_ADDR`), so an
 * MSI is a dword write of `MSI_DATA` there; `msiFired()` reads and clears it.
 * INTx: the IOAPIC's inputs are intercepted, and the device's pin A reaches
 * GSI `q35IntxGsi(4, 1)`.
 *
 * @example
 * ```ts
 * const rig = await VnicRig.start({ binary, firmware, socket: "listening", irq: "intx" });
 * try {
 *   console.log(await rig.reg(VNIC_REG.LINK_STATUS));
 * } finally {
 *   await rig.close();
 * }
 * ```
 */
import { join } from "node:path";
import { QtestMachine } from "./client.ts";
import { qemuOptValue } from "../vm/qemu_args.ts";
import { PciError, q35IntxGsi, QtestPciDevice } from "./pci.ts";
import {
  SeqpacketClosedError,
  SeqpacketServer,
  type SeqpacketSocket,
} from "../fabric/seqpacket.ts";
import { VNIC_PCI } from "../models/vnic.ts";

/** Where the rig places things in the guest-physical address space. */
export const VNIC_RIG = {
  /** PCI slot of the device. */
  slot: 4,
  /** BAR0 base (free space in q35's 32-bit PCI window). */
  bar: 0xe000_0000n,
  /** Guest RAM dword the MSI message lands in. */
  msiAddr: 0x10_0000n,
  /** MSI data value (16 bits). */
  msiData: 0x4d5a,
  /** Guest RAM given to QEMU. */
  memory: "128M",
} as const;

/** How the device's socket starts. */
export type VnicSocketMode =
  /** `socket_path` set and the rig listening before QEMU starts */
  | "listening"
  /** `socket_path` set but nothing listening yet */
  | "absent"
  /** no `socket_path` property */
  | "none";

/** Options of `VnicRig.start`. */
export interface VnicRigOptions {
  binary: string;
  firmware?: string[];
  socket: VnicSocketMode;
  irq: "intx" | "msi";
  /** `mac` property (6 bytes); QEMU's default when absent. */
  mac?: ArrayLike<number>;
  /** Extra `-device` properties, e.g. `x-speed=16,x-width=8`. */
  deviceProps?: string;
  /** Directory for sockets and logs (a temp dir when absent). */
  workDir?: string;
  /** Environment QEMU gets besides ours. */
  env?: Record<string, string>;
  /** More QEMU arguments (e.g. `-qmp` for a test that saves the state). */
  extraArgs?: string[];
}

/** Result of a peer send. */
export type RigSendResult = "sent" | "broken" | "none";

/** What the peer socket held. */
export interface RigDrain {
  frames: Uint8Array[];
  /** The device end of the peer's connection is closed. */
  closed: boolean;
}

/** Format 6 MAC bytes as QEMU's `mac=` value. */
export function macString(mac: ArrayLike<number>): string {
  return Array.from(mac, (b) => b.toString(16).padStart(2, "0")).join(":");
}

/** One QEMU with one cnuas-vnic, driven through qtest. */
export class VnicRig {
  /** The qtest connection. */
  readonly qt: QtestMachine;
  /** The device's PCI function. */
  readonly pci: QtestPciDevice;
  /** Path of the device's socket. */
  readonly socketPath: string;
  /** Interrupt mode. */
  readonly irq: "intx" | "msi";
  /** GSI of the device's INTx pin. */
  readonly gsi: number;
  #server: SeqpacketServer | null;
  #peer: SeqpacketSocket | null = null;
  #ownsWorkDir: boolean;
  #workDir: string;

  private constructor(
    qt: QtestMachine,
    pci: QtestPciDevice,
    socketPath: string,
    server: SeqpacketServer | null,
    irq: "intx" | "msi",
    workDir: string,
    ownsWorkDir: boolean,
  ) {
    this.qt = qt;
    this.pci = pci;
    this.socketPath = socketPath;
    this.#server = server;
    this.irq = irq;
    this.gsi = q35IntxGsi(VNIC_RIG.slot, 1);
    this.#workDir = workDir;
    this.#ownsWorkDir = ownsWorkDir;
  }

  /** Start QEMU, set the function up, and accept the device's first connection. */
  static async start(opts: VnicRigOptions): Promise<VnicRig> {
    const ownsWorkDir = !opts.workDir;
    const workDir = opts.workDir ?? await Deno.makeTempDir({ prefix: "vnic-" });
    const socketPath = join(workDir, "wire.sock");
    const server = opts.socket === "listening" ? SeqpacketServer.listen(socketPath) : null;
    const props = [`cnuas-vnic`, `addr=0x${VNIC_RIG.slot.toString(16)}`];
    if (opts.socket !== "none") props.push(`socket_path=${qemuOptValue(socketPath)}`);
    if (opts.mac) props.push(`mac=${macString(opts.mac)}`);
    if (opts.deviceProps) props.push(opts.deviceProps);
    let qt: QtestMachine;
    try {
      qt = await QtestMachine.start({
        binary: opts.binary,
        firmware: opts.firmware,
        memory: VNIC_RIG.memory,
        devices: [props.join(",")],
        workDir: join(workDir, "qemu"),
        env: opts.env,
        extraArgs: opts.extraArgs,
      });
    } catch (e) {
      server?.close();
      if (ownsWorkDir) await Deno.remove(workDir, { recursive: true }).catch(() => {});
      throw e;
    }
    const pci = new QtestPciDevice(qt, { bus: 0, slot: VNIC_RIG.slot, fn: 0 });
    const rig = new VnicRig(qt, pci, socketPath, server, opts.irq, workDir, ownsWorkDir);
    try {
      const id = await pci.read(0, 4);
      if (id !== (VNIC_PCI.vendor | VNIC_PCI.device << 16)) {
        throw new PciError(`00:04.0 reads id 0x${id.toString(16)}, not cnuas-vnic`);
      }
      await qt.irqInterceptIn("ioapic");
      await rig.setupPci();
      if (server) rig.#peer = server.accept(2000);
    } catch (e) {
      await rig.close();
      throw e;
    }
    return rig;
  }

  /** What a driver does at probe (and after FLR): BAR0, memory + bus master, interrupts. */
  async setupPci(): Promise<void> {
    await this.pci.mapBar(0, VNIC_RIG.bar);
    await this.pci.enable({ memory: true, busMaster: true });
    await this.qt.writel(VNIC_RIG.msiAddr, 0);
    if (this.irq === "msi") await this.pci.enableMsi(VNIC_RIG.msiAddr, VNIC_RIG.msiData);
  }

  /** The QEMU log (guest errors). */
  get logPath(): string {
    return this.qt.logPath;
  }

  /** Aligned 32-bit register read. */
  reg(off: number): Promise<number> {
    return this.qt.readl(VNIC_RIG.bar + BigInt(off));
  }

  /** Aligned 32-bit register write. */
  setReg(off: number, value: number | bigint): Promise<void> {
    return this.qt.writel(VNIC_RIG.bar + BigInt(off), value);
  }

  /** Level of the INTx line as of the last response. */
  get intx(): boolean {
    return this.qt.irqLevel(this.gsi);
  }

  /** Whether an MSI landed since the last call (reads and clears the MSI dword). */
  async msiFired(): Promise<boolean> {
    const v = this.qt.readl(VNIC_RIG.msiAddr);
    const c = this.qt.writel(VNIC_RIG.msiAddr, 0);
    const fired = (await v) === VNIC_RIG.msiData;
    await c;
    return fired;
  }

  /** Function-level reset, then the driver's setup again. */
  async flr(): Promise<void> {
    await this.pci.flr();
    await this.setupPci();
  }

  /**
   * Two round trips: the first orders everything after it behind socket
   * events that were ready when it was sent; the second carries any IRQ
   * lines those events produced.
   */
  async barrier(): Promise<void> {
    await this.qt.sync();
    await this.qt.sync();
  }

  /** Whether the rig holds an accepted connection. */
  get peerConnected(): boolean {
    return this.#peer !== null;
  }

  /** Whether the rig listens at the socket path. */
  get listening(): boolean {
    return this.#server !== null;
  }

  /** Accept a connection waiting in the backlog (closing the old one); false if none. */
  acceptPending(timeoutMs = 0): boolean {
    if (!this.#server) return false;
    const s = this.#server.accept(timeoutMs);
    if (!s) return false;
    this.#peer?.close();
    this.#peer = s;
    return true;
  }

  /** The peer sends one datagram without blocking. */
  peerSend(frame: Uint8Array): RigSendResult {
    if (!this.#peer) return "none";
    try {
      if (!this.#peer.trySend(frame)) {
        throw new Error(`peer socket full sending ${frame.length} bytes; keep fewer frames queued`);
      }
      return "sent";
    } catch (e) {
      if (e instanceof SeqpacketClosedError) return "broken";
      throw e;
    }
  }

  /** The peer closes its connection. */
  peerClose(): void {
    this.#peer?.close();
    this.#peer = null;
  }

  /** Stop listening (the socket file goes away, connects fail). */
  listenerClose(): void {
    this.#server?.close();
    this.#server = null;
  }

  /** Listen at the socket path again. */
  listenerOpen(): void {
    this.#server ??= SeqpacketServer.listen(this.socketPath);
  }

  /** Every frame queued at the peer now, and whether the device end has closed. */
  drain(): RigDrain {
    const frames: Uint8Array[] = [];
    if (!this.#peer) return { frames, closed: false };
    try {
      for (let f = this.#peer.tryRecv(); f; f = this.#peer.tryRecv()) frames.push(f);
    } catch (e) {
      if (e instanceof SeqpacketClosedError) return { frames, closed: true };
      throw e;
    }
    return { frames, closed: false };
  }

  /** Remove the rig's own work dir (after `close({ keepFiles: true })`). */
  async removeFiles(): Promise<void> {
    if (this.#ownsWorkDir) await Deno.remove(this.#workDir, { recursive: true }).catch(() => {});
  }

  /** Kill QEMU and close every socket; the work dir goes unless `keepFiles`. */
  async close(opts: { keepFiles?: boolean } = {}): Promise<void> {
    await this.qt.close({ keepFiles: opts.keepFiles });
    this.#peer?.close();
    this.#peer = null;
    this.#server?.close();
    this.#server = null;
    if (this.#ownsWorkDir && !opts.keepFiles) {
      await Deno.remove(this.#workDir, { recursive: true }).catch(() => {});
    }
  }
}
