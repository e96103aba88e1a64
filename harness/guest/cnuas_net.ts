/**
 * Guest-side helpers for rows and benches that drive cnuas_net: load the
 * module, find its interfaces, and read what `ethtool`, `ip` and `dcb` say.
 * The parsers are pure functions of the tools' text output; the helpers
 * that touch a guest do one SSH round trip each where they can (TCG guests
 * make every round trip expensive). What a received frame should move in
 * `ethtool -S` is predicted by harness/models/cnuas_net_rx.ts, not here.
 *
 * @example
 * ```ts
 * const [nic] = await loadCnuasNet(guest);
 * const stats = await ethtoolStats(guest, nic.iface);
 * ```
 */
import { HilError } from "../errors.ts";
import type { Guest } from "../vm/types.ts";
import { modprobeLines } from "./kmod.ts";
import { shq } from "./shell.ts";

/** Module name, as `lsmod`, `ethtool -i` and sysfs spell it. */
export const CNUAS_NET = "cnuas_net";

/** PCI vendor:device of the cnuas-vnic function. */
export const CNUAS_VNIC_PCI_ID = "1af4:10f0";

/** A guest command failed or printed something the helpers cannot read. */
export class NetdevError extends HilError {}

/** One cnuas_net interface: its PCI address and netdev name. */
export interface CnuasNic {
  pci: string;
  iface: string;
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
 * `modprobe cnuas_net` (udev has normally loaded it at boot already: the
 * package installs it, the vnic's modalias names it) and wait until every
 * cnuas-vnic function has its netdev; returns them by PCI address.
 */
export async function loadCnuasNet(g: Guest, expected = 1): Promise<CnuasNic[]> {
  const script = [
    ...modprobeLines(CNUAS_NET),
    // Probing is synchronous, udev renaming is not (net.ifnames=0 keeps ethN).
    `for i in $(seq 50); do n=$( (${LIST_NICS_SH}) | wc -l); [ "$n" -ge ${expected} ] && break; sleep 0.1; done`,
    LIST_NICS_SH,
  ].join("\n");
  const r = await g.run(script, { timeoutSec: 60 });
  if (r.code !== 0) {
    throw new NetdevError(
      `${g.name}: modprobe ${CNUAS_NET} failed (exit ${r.code}): ${r.stderr}`,
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

/**
 * Poll `ethtool -S` until the driver's `link_changes` moved by `want` since
 * `before` (a carrier flap too short to catch in sysfs still counts 2);
 * returns how far it moved, within `timeoutSec`.
 */
export async function waitLinkChanges(
  g: Guest,
  iface: string,
  before: Record<string, number>,
  want: number,
  timeoutSec: number,
): Promise<number> {
  let moved = 0;
  for (let t = 0; t < timeoutSec * 2; t++) {
    moved = (await ethtoolStats(g, iface)).link_changes - before.link_changes;
    if (moved >= want) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  return moved;
}
