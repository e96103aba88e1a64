/**
 * Frames and steps the QoS tests share: numbered IPv4 (DSCP, ECN), VLAN and
 * plain frames between the fake ports of a rig, MAC learning, sending a
 * burst with a barrier on the daemon's rx counter (so the order in which the
 * daemon saw frames from different ports is the order the test sent them),
 * and telling PFC frames from data.
 */
import { ipv4HeaderChecksum } from "../../harness/models/rdma/ip.ts";
import { decodePfc, type PfcFrame } from "../../harness/models/switch_qos.ts";
import { type Rig, TrafficMismatch } from "./traffic.ts";

/** The MAC of test port `p`: 02:00:00:00:00:p. */
export function macOf(p: number): number[] {
  return [0x02, 0, 0, 0, 0, p];
}

/** The sequence number every test frame carries at byte 50. */
export function seqOf(f: Uint8Array): number {
  return new DataView(f.buffer, f.byteOffset).getUint32(50);
}

function stamp(f: Uint8Array, seq: number): Uint8Array {
  new DataView(f.buffer).setUint32(50, seq);
  return f;
}

/** An IPv4/UDP frame `src` → `dst` with `dscp` and the ECN field `ecn`, checksum right. */
export function ipFrame(
  dst: number,
  src: number,
  dscp: number,
  ecn: number,
  seq: number,
  len = 200,
): Uint8Array {
  const f = new Uint8Array(len);
  f.set([...macOf(dst), ...macOf(src), 0x08, 0x00]);
  const ip = 14, total = f.length - ip;
  f.set([0x45, (dscp << 2) | ecn, total >> 8, total & 0xff, 0, 0, 0x40, 0, 64, 17, 0, 0], ip);
  f.set([10, 0, 0, src, 10, 0, 0, dst], ip + 12);
  const c = ipv4HeaderChecksum(f, ip);
  f[ip + 10] = c >> 8;
  f[ip + 11] = c & 0xff;
  f.set([0x12, 0xb7, 0x12, 0xb7], ip + 20); // UDP 4791 → 4791, as RoCEv2
  return stamp(f, seq);
}

/** A non-IP untagged frame (EtherType 0x88b5): priority 0. */
export function plainFrame(dst: number, src: number, seq: number): Uint8Array {
  const f = new Uint8Array(100);
  f.set([...macOf(dst), ...macOf(src), 0x88, 0xb5]);
  return stamp(f, seq);
}

/** An 802.1Q-tagged frame with priority code point `pcp`. */
export function vlanFrame(dst: number, src: number, pcp: number, seq: number): Uint8Array {
  const f = new Uint8Array(100);
  f.set([...macOf(dst), ...macOf(src), 0x81, 0x00, pcp << 5, 10, 0x88, 0xb5]);
  return stamp(f, seq);
}

/** Wait until the daemon has received `want` frames on `port`. */
export async function waitRx(rig: Rig, port: number, want: number): Promise<void> {
  const deadline = performance.now() + 5000;
  for (;;) {
    const p = (await rig.fabric.ports()).find((x) => x.port === port);
    if (p && p.rxFrames === want) return;
    if (p && p.rxFrames > want) {
      throw new TrafficMismatch(`port ${port} rx ${p.rxFrames} > ${want}`);
    }
    if (performance.now() > deadline) {
      throw new TrafficMismatch(`port ${port} rx stuck at ${p?.rxFrames} of ${want}`);
    }
    await new Promise((r) => setTimeout(r, 1));
  }
}

/** Send `frames` from `port` and wait until the daemon has taken them all in. */
export async function sendBurst(rig: Rig, port: number, frames: Uint8Array[]): Promise<void> {
  const sock = rig.clients.get(port)!;
  for (const f of frames) {
    sock.send(f);
    rig.model.ingress(port, f);
  }
  await waitRx(rig, port, rig.model.counters(port).rxFrames);
}

/** Every port sends one broadcast so the switch learns its MAC; the floods are read away. */
export async function learnAll(rig: Rig): Promise<void> {
  for (const port of rig.clients.keys()) {
    const f = new Uint8Array(64);
    f.set([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, ...macOf(port), 0x88, 0xb5]);
    await sendBurst(rig, port, [f]);
  }
  for (const [port, sock] of rig.clients) {
    for (let i = 0; i < rig.clients.size - 1; i++) {
      if (!sock.recv(2000)) throw new TrafficMismatch(`port ${port} missed a learning flood`);
    }
  }
}

/** Receive exactly `n` data frames on `port` (PFC frames are returned apart). */
export function receive(
  rig: Rig,
  port: number,
  n: number,
  timeoutMs = 5000,
): { data: Uint8Array[]; pfc: Uint8Array[] } {
  const sock = rig.clients.get(port)!;
  const data: Uint8Array[] = [], pfc: Uint8Array[] = [];
  const deadline = performance.now() + timeoutMs;
  while (data.length < n) {
    const f = sock.recv(Math.max(1, deadline - performance.now()));
    if (!f) throw new TrafficMismatch(`port ${port} got ${data.length} of ${n} frames`);
    (decodePfc(f) ? pfc : data).push(f);
  }
  return { data, pfc };
}

/** Everything waiting on `port` now, split into PFC frames (raw) and data. */
export function drainPort(rig: Rig, port: number): { data: Uint8Array[]; pfc: Uint8Array[] } {
  const data: Uint8Array[] = [], pfc: Uint8Array[] = [];
  for (const f of rig.clients.get(port)!.drain()) (decodePfc(f) ? pfc : data).push(f);
  return { data, pfc };
}

/** Decoded PFC frames, consecutive duplicates (XOFF refreshes) collapsed. */
export function pfcSequence(frames: Uint8Array[]): PfcFrame[] {
  const out: PfcFrame[] = [];
  for (const f of frames) {
    const d = decodePfc(f)!;
    const last = out.at(-1);
    if (last && last.vector === d.vector && last.quanta.join() === d.quanta.join()) continue;
    out.push(d);
  }
  return out;
}

/** Byte equality. */
export function same(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
