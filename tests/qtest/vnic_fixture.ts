/**
 * Shared set-up of the cnuas-vnic directed tests: one interface — a NIC under
 * test — implemented by the QEMU device (a {@link VnicRig}) and by the
 * reference model (set up as the differential oracle sets it up), so every
 * directed test states a behaviour of the spec once and checks it on both.
 */
import type { SparseMemory } from "../../harness/models/guest_memory.ts";
import type { VnicModel } from "../../harness/models/vnic.ts";
import { DIFF_RAM, vnicModelForSetup } from "../../harness/oracle/vnic_ops.ts";
import {
  type RigSendResult,
  VNIC_RIG,
  VnicRig,
  type VnicSocketMode,
} from "../../harness/qtest/vnic_rig.ts";
import { qemuEnv } from "./qemu_env.ts";

/** Guest RAM the tests use: what the model describes, as in the differential oracle. */
export const RAM = { base: DIFF_RAM.lo, end: DIFF_RAM.hi } as const;

/** How a NIC under test starts. */
export interface NicSetup {
  socket?: VnicSocketMode;
  irq?: "intx" | "msi";
  mac?: number[];
}

/** The surface a directed test drives: guest registers and memory, the wire, time, reset. */
export interface NicUnderTest {
  /** "device" or "model". */
  readonly kind: string;
  reg(off: number): Promise<number>;
  setReg(off: number, value: number): Promise<void>;
  /** An MMIO access of another size (1, 2 or 8 bytes) or at an unaligned offset. */
  rawRead(off: number, size: 1 | 2 | 4 | 8): Promise<bigint>;
  rawWrite(off: number, size: 1 | 2 | 4 | 8, value: bigint): Promise<void>;
  memWrite(addr: number, data: Uint8Array): Promise<void>;
  memRead(addr: number, len: number): Promise<Uint8Array>;
  /** INTx level (MSI disabled). */
  intx(): Promise<boolean>;
  /** Whether an MSI arrived since the last call. */
  msiFired(): Promise<boolean>;
  /** The driver switches MSI on or off in config space (the message target stays the rig's). */
  setMsi(on: boolean): Promise<void>;
  peerSend(frame: Uint8Array): Promise<RigSendResult>;
  peerClose(): Promise<void>;
  /** Frames the device has put on the wire since the last call. */
  framesOut(): Promise<Uint8Array[]>;
  listenerClose(): Promise<void>;
  listenerOpen(): Promise<void>;
  /** Advance virtual time, then accept what connected; returns accepted count. */
  clockStep(ns: number): Promise<number>;
  /** Function-level reset (and the driver's setup again). */
  reset(): Promise<void>;
  close(): Promise<void>;
}

const DEFAULT_MAC = [0x52, 0x54, 0x00, 0xc0, 0xff, 0xee];

class DeviceNic implements NicUnderTest {
  readonly kind = "device";
  constructor(readonly rig: VnicRig) {}
  reg(off: number) {
    return this.rig.reg(off);
  }
  setReg(off: number, value: number) {
    return this.rig.setReg(off, value >>> 0);
  }
  rawRead(off: number, size: 1 | 2 | 4 | 8) {
    return this.rig.qt.read(VNIC_RIG.bar + BigInt(off), size);
  }
  rawWrite(off: number, size: 1 | 2 | 4 | 8, value: bigint) {
    return this.rig.qt.write(VNIC_RIG.bar + BigInt(off), size, value);
  }
  memWrite(addr: number, data: Uint8Array) {
    return this.rig.qt.memWrite(addr, data);
  }
  memRead(addr: number, len: number) {
    return this.rig.qt.memRead(addr, len);
  }
  async intx() {
    await this.rig.qt.sync();
    return this.rig.intx;
  }
  msiFired() {
    return this.rig.msiFired();
  }
  setMsi(on: boolean) {
    return on
      ? this.rig.pci.enableMsi(VNIC_RIG.msiAddr, VNIC_RIG.msiData)
      : this.rig.pci.disableMsi();
  }
  async peerSend(frame: Uint8Array) {
    const r = this.rig.peerSend(frame);
    await this.rig.barrier();
    return r;
  }
  async peerClose() {
    this.rig.peerClose();
    await this.rig.barrier();
  }
  async framesOut() {
    await this.rig.qt.sync();
    return this.rig.drain().frames;
  }
  async listenerClose() {
    this.rig.listenerClose();
    await this.rig.barrier();
  }
  async listenerOpen() {
    this.rig.listenerOpen();
    await this.rig.barrier();
  }
  async clockStep(ns: number) {
    await this.rig.qt.clockStep(ns);
    let n = 0;
    while (this.rig.acceptPending()) n++;
    await this.rig.barrier();
    return n;
  }
  reset() {
    return this.rig.flr();
  }
  close() {
    return this.rig.close();
  }
}

class ModelNic implements NicUnderTest {
  readonly kind = "model";
  readonly mem: SparseMemory;
  readonly model: VnicModel;
  #msiSeen = 0;
  constructor(setup: Required<NicSetup>) {
    ({ model: this.model, mem: this.mem } = vnicModelForSetup(setup));
  }
  reg(off: number) {
    return Promise.resolve(Number(this.model.mmioRead(off, 4)));
  }
  setReg(off: number, value: number) {
    this.model.mmioWrite(off, 4, BigInt(value >>> 0));
    return Promise.resolve();
  }
  rawRead(off: number, size: 1 | 2 | 4 | 8) {
    return Promise.resolve(this.model.mmioRead(off, size));
  }
  rawWrite(off: number, size: 1 | 2 | 4 | 8, value: bigint) {
    this.model.mmioWrite(off, size, value);
    return Promise.resolve();
  }
  memWrite(addr: number, data: Uint8Array) {
    this.mem.write(BigInt(addr), data);
    return Promise.resolve();
  }
  memRead(addr: number, len: number) {
    return Promise.resolve(this.mem.read(BigInt(addr), len));
  }
  intx() {
    return Promise.resolve(this.model.intx);
  }
  msiFired() {
    const fired = this.model.msiCount > this.#msiSeen;
    this.#msiSeen = this.model.msiCount;
    return Promise.resolve(fired);
  }
  setMsi(on: boolean) {
    this.model.setMsiEnabled(on);
    return Promise.resolve();
  }
  peerSend(frame: Uint8Array) {
    return Promise.resolve(this.model.peerSend(frame));
  }
  peerClose() {
    this.model.peerClose();
    return Promise.resolve();
  }
  framesOut() {
    return Promise.resolve(this.model.takeFrames());
  }
  listenerClose() {
    this.model.listenerClose();
    return Promise.resolve();
  }
  listenerOpen() {
    this.model.listenerOpen();
    return Promise.resolve();
  }
  clockStep(ns: number) {
    this.model.clockStep(ns);
    let n = 0;
    while (this.model.peerAccept()) n++;
    return Promise.resolve(n);
  }
  reset() {
    this.model.reset();
    return Promise.resolve();
  }
  close() {
    return Promise.resolve();
  }
}

function fullSetup(s: NicSetup): Required<NicSetup> {
  return { socket: s.socket ?? "listening", irq: s.irq ?? "intx", mac: s.mac ?? DEFAULT_MAC };
}

/** The QEMU device as a NIC under test. */
export async function startDevice(setup: NicSetup = {}): Promise<NicUnderTest> {
  const env = await qemuEnv();
  const s = fullSetup(setup);
  const rig = await VnicRig.start({ ...env, socket: s.socket, irq: s.irq, mac: s.mac });
  return new DeviceNic(rig);
}

/** The reference model as a NIC under test. */
export function startModel(setup: NicSetup = {}): Promise<NicUnderTest> {
  return Promise.resolve(new ModelNic(fullSetup(setup)));
}

/** Both implementations, for `for (const impl of IMPLS)` loops. */
export const IMPLS: { name: string; start: (s?: NicSetup) => Promise<NicUnderTest> }[] = [
  { name: "device", start: startDevice },
  { name: "model", start: startModel },
];

/** Run `body` on a fresh NIC and always close it. */
export async function withNic(
  start: (s?: NicSetup) => Promise<NicUnderTest>,
  setup: NicSetup,
  body: (nic: NicUnderTest) => Promise<void>,
): Promise<void> {
  const nic = await start(setup);
  try {
    await body(nic);
  } finally {
    await nic.close();
  }
}

/** `n` bytes counting up from `start` (mod 256). */
export function pattern(n: number, start = 0): Uint8Array {
  return Uint8Array.from({ length: n }, (_, i) => (start + i) & 0xff);
}
