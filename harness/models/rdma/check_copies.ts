/**
 * Recognising capture copies: a switch capture records a frame once on its
 * ingress and once on its egress interface, and checking both would report
 * every violation twice and read the second copy as a retransmission.
 */
import type { CaptureFrame } from "./frame.ts";

/** Remembers the last few frames and says which ones are copies recorded on another interface. */
export class CopyFilter {
  private readonly recent: { hash: number; data: Uint8Array; ifaces: number[] }[] = [];
  private multiInterface = false;
  private firstInterface: number | undefined = undefined;

  /**
   * Whether `frame` repeats a recent frame's bytes on an interface that frame
   * was not yet seen on. A repeat on the same interface is a real resend.
   */
  isCopy(frame: CaptureFrame): boolean {
    const iface = frame.interfaceId ?? 0;
    if (this.firstInterface === undefined) this.firstInterface = iface;
    else if (iface !== this.firstInterface) this.multiInterface = true;
    const h = quickHash(frame.data);
    if (this.multiInterface) {
      for (let i = this.recent.length - 1; i >= 0; i--) {
        const r = this.recent[i];
        if (r.hash === h && sameBytes(r.data, frame.data)) {
          if (r.ifaces.includes(iface)) break; // seen on this interface already: a real resend
          r.ifaces.push(iface);
          return true;
        }
      }
    }
    if (this.recent.length >= 16) this.recent.shift();
    this.recent.push({ hash: h, data: frame.data, ifaces: [iface] });
    return false;
  }
}

/** A cheap fingerprint: length, the first 64 and the last 16 bytes. */
function quickHash(b: Uint8Array): number {
  let h = 0x811c9dc5 ^ b.length;
  const n = Math.min(64, b.length);
  for (let i = 0; i < n; i++) h = Math.imul(h ^ b[i], 0x01000193);
  for (let i = Math.max(n, b.length - 16); i < b.length; i++) h = Math.imul(h ^ b[i], 0x01000193);
  return h >>> 0;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
