/**
 * PCI helpers over a qtest machine: configuration space through the legacy
 * 0xcf8/0xcfc ports, BAR placement, command bits, capabilities, MSI and FLR —
 * what firmware and a driver would do, so a device can be driven through its
 * registers alone.
 *
 * @example
 * ```ts
 * const dev = await QtestPciDevice.find(qt, 0x1af4, 0x10f0);
 * await dev!.mapBar(0, 0xe000_0000n);
 * await dev!.enable({ memory: true, busMaster: true });
 * ```
 */
import { HilError } from "../errors.ts";
import type { QtestMachine } from "./client.ts";

/** Bus/slot/function of a PCI function. */
export interface PciAddress {
  bus: number;
  slot: number;
  fn: number;
}

/** Standard configuration-space offsets and bits used here. */
export const PCI_CFG = {
  VENDOR_ID: 0x00,
  DEVICE_ID: 0x02,
  COMMAND: 0x04,
  STATUS: 0x06,
  REVISION: 0x08,
  CLASS_PROG: 0x09,
  HEADER_TYPE: 0x0e,
  BAR0: 0x10,
  CAP_PTR: 0x34,
  INTERRUPT_PIN: 0x3d,
  COMMAND_IO: 0x1,
  COMMAND_MEMORY: 0x2,
  COMMAND_MASTER: 0x4,
  COMMAND_INTX_DISABLE: 0x400,
  STATUS_CAP_LIST: 0x10,
  CAP_ID_MSI: 0x05,
  CAP_ID_EXP: 0x10,
} as const;

/** A device was not where a test expected it. */
export class PciError extends HilError {}

/** Read `size` bytes of configuration space at `off`. */
export function configRead(
  qt: QtestMachine,
  a: PciAddress,
  off: number,
  size: 1 | 2 | 4,
): Promise<number> {
  return qt.configRead(a, off, size);
}

/** Write `size` bytes of configuration space at `off`. */
export function configWrite(
  qt: QtestMachine,
  a: PciAddress,
  off: number,
  size: 1 | 2 | 4,
  value: number,
): Promise<void> {
  return qt.configWrite(a, off, size, value);
}

/**
 * GSI that INTx pin `pin` (1 = A) of a function in `slot` on q35's root bus
 * reaches in APIC mode: ICH9 routes slots below 25 to PIRQ[E-H] by
 * (slot + pin - 1) mod 4, and PIRQ n to GSI 16 + n.
 */
export function q35IntxGsi(slot: number, pin: number): number {
  if (slot >= 25) throw new PciError(`q35IntxGsi: slots 25..31 use chipset routing, not modelled`);
  return 16 + 4 + (slot + pin - 1) % 4;
}

/** One PCI function seen through qtest. */
export class QtestPciDevice {
  constructor(readonly qt: QtestMachine, readonly addr: PciAddress) {}

  /** The first function on bus 0 with this vendor and device id. */
  static async find(
    qt: QtestMachine,
    vendor: number,
    device: number,
  ): Promise<QtestPciDevice | null> {
    for (let slot = 0; slot < 32; slot++) {
      for (let fn = 0; fn < 8; fn++) {
        const a = { bus: 0, slot, fn };
        const id = await configRead(qt, a, 0, 4);
        if (id === 0xffff_ffff || id === 0) {
          if (fn === 0) break;
          continue;
        }
        if ((id & 0xffff) === vendor && id >>> 16 === device) return new QtestPciDevice(qt, a);
        if (fn === 0 && !((await configRead(qt, a, PCI_CFG.HEADER_TYPE, 1)) & 0x80)) break;
      }
    }
    return null;
  }

  /** Configuration read. */
  read(off: number, size: 1 | 2 | 4): Promise<number> {
    return configRead(this.qt, this.addr, off, size);
  }

  /** Configuration write. */
  write(off: number, size: 1 | 2 | 4, value: number): Promise<void> {
    return configWrite(this.qt, this.addr, off, size, value);
  }

  /** Place memory BAR `index` at `base` (both halves for a 64-bit BAR). */
  async mapBar(index: number, base: bigint): Promise<void> {
    const off = PCI_CFG.BAR0 + 4 * index;
    const cur = await this.read(off, 4);
    await this.write(off, 4, Number(base & 0xffff_fff0n));
    if ((cur & 0x6) === 0x4) await this.write(off + 4, 4, Number(base >> 32n));
  }

  /** Set the command register's memory, I/O, bus-master and INTx-disable bits. */
  async enable(
    bits: { memory?: boolean; io?: boolean; busMaster?: boolean; intxDisable?: boolean },
  ): Promise<void> {
    const cmd = (bits.memory ? PCI_CFG.COMMAND_MEMORY : 0) | (bits.io ? PCI_CFG.COMMAND_IO : 0) |
      (bits.busMaster ? PCI_CFG.COMMAND_MASTER : 0) |
      (bits.intxDisable ? PCI_CFG.COMMAND_INTX_DISABLE : 0);
    await this.write(PCI_CFG.COMMAND, 2, cmd);
  }

  /** Offset of the first capability with `id` in the standard list, or 0. */
  async capability(id: number): Promise<number> {
    if (!((await this.read(PCI_CFG.STATUS, 2)) & PCI_CFG.STATUS_CAP_LIST)) return 0;
    let ptr = (await this.read(PCI_CFG.CAP_PTR, 1)) & 0xfc;
    for (let guard = 0; ptr && guard < 48; guard++) {
      if ((await this.read(ptr, 1)) === id) return ptr;
      ptr = (await this.read(ptr + 1, 1)) & 0xfc;
    }
    return 0;
  }

  /** Enable MSI (one vector) with the message going to `address` carrying `data`. */
  async enableMsi(address: bigint, data: number): Promise<void> {
    const cap = await this.capability(PCI_CFG.CAP_ID_MSI);
    if (!cap) throw new PciError(`function ${fmt(this.addr)} has no MSI capability`);
    const ctrl = await this.read(cap + 2, 2);
    const is64 = (ctrl & 0x80) !== 0;
    await this.write(cap + 4, 4, Number(address & 0xffff_fffcn));
    if (is64) await this.write(cap + 8, 4, Number(address >> 32n));
    await this.write(cap + (is64 ? 12 : 8), 2, data & 0xffff);
    await this.write(cap + 2, 2, (ctrl & ~0x70) | 0x1);
  }

  /** Disable MSI. */
  async disableMsi(): Promise<void> {
    const cap = await this.capability(PCI_CFG.CAP_ID_MSI);
    if (!cap) return;
    const ctrl = await this.read(cap + 2, 2);
    await this.write(cap + 2, 2, ctrl & ~0x1);
  }

  /**
   * Function-level reset through the PCIe capability. Afterwards BARs, the
   * command register and MSI are cleared, as on hardware.
   */
  async flr(): Promise<void> {
    const cap = await this.capability(PCI_CFG.CAP_ID_EXP);
    if (!cap) throw new PciError(`function ${fmt(this.addr)} has no PCIe capability`);
    if (!((await this.read(cap + 4, 4)) & 0x1000_0000)) {
      throw new PciError(`function ${fmt(this.addr)} does not advertise FLR`);
    }
    const devctl = await this.read(cap + 8, 2);
    await this.write(cap + 8, 2, devctl | 0x8000);
  }
}

function fmt(a: PciAddress): string {
  return `${a.bus.toString(16).padStart(2, "0")}:${a.slot.toString(16).padStart(2, "0")}.${a.fn}`;
}
