/**
 * Guest-side helpers for rows and benches that drive cnuas_net: load the
 * module, find its interfaces, and read what `ethtool`, `ip` and `dcb` say.
 * The parsers are pure functions of the tools' text output; the helpers
 * that touch a guest do one SSH round trip each where they can (TCG guests
 * make every round trip expensive).
 *
 * @example
 * ```ts
 * const [nic] = await loadCnuasNet(guest);
 * const stats = await ethtoolStats(guest, nic.iface);
 * ```
 */
import { GUEST_PATHS } from "./vm/types.ts";
import type { Guest } from "./vm/types.ts";

/** Module name, as `lsmod`, `ethtool -i` and sysfs spell it. */
export const CNUAS_NET = "cnuas_net";

/** Where the runner installs the module inside a guest. */
export const CNUAS_NET_KO = `${GUEST_PATHS.modules}/${CNUAS_NET}.ko`;

/** PCI vendor:device of the cnuas-vnic function. */
export const CNUAS_VNIC_PCI_ID = "1af4:10f0";

/** A guest command failed or printed something the helpers cannot read. */
export class NetdevError extends Error {
  override name = "NetdevError";
}

/** One cnuas_net interface: its PCI address and netdev name. */
export interface CnuasNic {
  pci: string;
  iface: string;
}

/** Quote a string for a POSIX shell. */
export function shq(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/**
 * `key: value` lines (ethtool -i, --show-priv-flags, modinfo) as a map;
 * keys and values trimmed, lines without a colon ignored.
 */
export function parseKeyValues(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split("\n")) {
    const i = line.indexOf(":");
    if (i <= 0) continue;
    out.set(line.slice(0, i).trim(), line.slice(i + 1).trim());
  }
  return out;
}

/** `ethtool -S` output as counter name → value. */
export function parseEthtoolStats(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split("\n")) {
    const m = /^\s+([\w.-]+):\s+(\d+)\s*$/.exec(line);
    if (m) out[m[1]] = Number(m[2]);
  }
  return out;
}

/** The link facts of plain `ethtool <iface>`. */
export interface EthtoolLink {
  speed?: string;
  duplex?: string;
  linkDetected?: boolean;
}

/** Parse plain `ethtool <iface>` output. */
export function parseEthtoolLink(text: string): EthtoolLink {
  const kv = parseKeyValues(text);
  const link = kv.get("Link detected");
  return {
    speed: kv.get("Speed"),
    duplex: kv.get("Duplex"),
    linkDetected: link === undefined ? undefined : link === "yes",
  };
}

/** Parse `ethtool --show-priv-flags` into flag → on. */
export function parsePrivFlags(text: string): Record<string, boolean> {
  const out: Record<string, boolean> = {};
  for (const [k, v] of parseKeyValues(text)) {
    if (v === "on" || v === "off") out[k] = v === "on";
  }
  return out;
}

/**
 * Lines `<pci> <iface>` (the output of the discovery script below) as NICs,
 * sorted by PCI address.
 */
export function parseNicList(text: string): CnuasNic[] {
  const nics: CnuasNic[] = [];
  for (const line of text.trim().split("\n")) {
    const [pci, iface] = line.trim().split(/\s+/);
    if (pci && iface) nics.push({ pci, iface });
  }
  return nics.sort((a, b) => a.pci.localeCompare(b.pci));
}

/** Counter deltas `after - before` for the names in `after`. */
export function statsDelta(
  before: Record<string, number>,
  after: Record<string, number>,
): Record<string, number> {
  return Object.fromEntries(
    Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)]),
  );
}

/** Shell that prints `<pci> <iface>` for every device bound to cnuas_net. */
export const LIST_NICS_SH = `for d in /sys/bus/pci/drivers/${CNUAS_NET}/0000:*; do ` +
  `[ -d "$d/net" ] && echo "$(basename "$d") $(ls "$d/net" | head -n1)"; done; true`;

/**
 * insmod cnuas_net (unless loaded) and wait until every cnuas-vnic function
 * has its netdev; returns them by PCI address.
 */
export async function loadCnuasNet(g: Guest, expected = 1): Promise<CnuasNic[]> {
  const script = [
    `grep -q '^${CNUAS_NET} ' /proc/modules || insmod ${CNUAS_NET_KO} || exit 3`,
    // Probing is synchronous, udev renaming is not (net.ifnames=0 keeps ethN).
    `for i in $(seq 50); do n=$( (${LIST_NICS_SH}) | wc -l); [ "$n" -ge ${expected} ] && break; sleep 0.1; done`,
    LIST_NICS_SH,
  ].join("\n");
  const r = await g.run(script, { timeoutSec: 60 });
  if (r.code !== 0) {
    throw new NetdevError(
      `${g.name}: loading ${CNUAS_NET_KO} failed (exit ${r.code}): ${r.stderr}`,
    );
  }
  const nics = parseNicList(r.stdout);
  if (nics.length < expected) {
    throw new NetdevError(
      `${g.name}: ${nics.length} cnuas_net interfaces, expected ${expected}; see dmesg`,
    );
  }
  return nics;
}

/** `ethtool -S` counters of an interface. */
export async function ethtoolStats(g: Guest, iface: string): Promise<Record<string, number>> {
  const r = await g.run(`ethtool -S ${shq(iface)}`, { timeoutSec: 30 });
  if (r.code !== 0) throw new NetdevError(`${g.name}: ethtool -S ${iface}: ${r.stderr}`);
  return parseEthtoolStats(r.stdout);
}

/**
 * Wait (in the guest, one round trip) until the carrier of `iface` is `up`;
 * false when it did not get there within `timeoutSec`.
 */
export async function waitCarrier(
  g: Guest,
  iface: string,
  up: boolean,
  timeoutSec = 30,
): Promise<boolean> {
  const want = up ? "1" : "0";
  const tries = Math.ceil(timeoutSec * 10);
  const r = await g.run(
    `for i in $(seq ${tries}); do ` +
      `[ "$(cat /sys/class/net/${iface}/carrier 2>/dev/null)" = ${want} ] && exit 0; ` +
      `sleep 0.1; done; exit 1`,
    { timeoutSec: timeoutSec + 30 },
  );
  return r.code === 0;
}

/** Largest frame the device moves (DEVICES.md). */
export const VNIC_MAX_FRAME = 9216;

/**
 * The `ethtool -S` counters one received Ethernet frame moves in cnuas_net
 * with no RDMA consumer, as name → increment (bytes included). This is the
 * driver's documented receive filter (cnuas_net.h, cnuas_net_main.c):
 * shorter than 14 bytes is a runt; longer than MTU + 18 is oversize; a
 * multicast source is malformed; EtherType 0x8808 is MAC control (PAUSE
 * opcode 1 counts rx_pause, PFC opcode 0x101 counts rx_prioN_pause per bit of
 * its class-enable vector, anything else or too short is malformed); every
 * other frame goes up the stack (rx_packets, rx_bytes). `up` false: frames
 * for the stack are dropped as rx_drop_down.
 */
export function expectedRxCounters(
  frame: Uint8Array,
  mtu: number,
  up = true,
): Record<string, number> {
  const len = frame.length;
  if (len === 0 || len > VNIC_MAX_FRAME) return { rx_drop_bad_len: 1 };
  if (len < 14) return { rx_drop_runt: 1 };
  if (len > Math.min(mtu + 18, VNIC_MAX_FRAME)) return { rx_drop_oversize: 1 };
  if (frame[6] & 1) return { rx_drop_bad_src: 1 };
  if (frame[12] === 0x88 && frame[13] === 0x08) {
    const op = len >= 16 ? (frame[14] << 8) | frame[15] : -1;
    if (op === 0x0001 && len >= 18) return { rx_pause: 1 };
    if (op === 0x0101 && len >= 34) {
      const cev = (frame[16] << 8) | frame[17];
      const out: Record<string, number> = {};
      for (let p = 0; p < 8; p++) if (cev & (1 << p)) out[`rx_prio${p}_pause`] = 1;
      return out;
    }
    return { rx_drop_bad_mac_ctrl: 1 };
  }
  return up ? { rx_packets: 1, rx_bytes: len } : { rx_drop_down: 1 };
}

/** Sum counter increments (`expectedRxCounters` of many frames). */
export function addCounters(
  into: Record<string, number>,
  more: Record<string, number>,
): Record<string, number> {
  for (const [k, v] of Object.entries(more)) into[k] = (into[k] ?? 0) + v;
  return into;
}

/** Parse `aa:bb:cc:dd:ee:ff` into 6 bytes. */
export function macBytes(mac: string): Uint8Array {
  const parts = mac.split(":");
  if (parts.length !== 6 || parts.some((p) => !/^[0-9a-fA-F]{2}$/.test(p))) {
    throw new RangeError(`not a MAC address: ${mac}`);
  }
  return Uint8Array.from(parts.map((p) => parseInt(p, 16)));
}

/**
 * An IEEE 802.1Qbb PFC frame (60 bytes, padded) from `src` naming the
 * priorities in `prios`, each with `quanta` pause quanta.
 */
export function pfcFrame(src: string, prios: number[], quanta = 0xffff): Uint8Array {
  const f = new Uint8Array(60);
  f.set([0x01, 0x80, 0xc2, 0x00, 0x00, 0x01], 0);
  f.set(macBytes(src), 6);
  f.set([0x88, 0x08, 0x01, 0x01], 12);
  let cev = 0;
  for (const p of prios) cev |= 1 << p;
  f[16] = cev >> 8;
  f[17] = cev & 0xff;
  for (const p of prios) {
    f[18 + 2 * p] = quanta >> 8;
    f[19 + 2 * p] = quanta & 0xff;
  }
  return f;
}
