/**
 * The I/O edge of the RDMA wire oracle: read a pcapng capture, run every frame
 * through the conformance checker, and write the findings beside the capture
 * as `<capture>.violations.json`. The rules themselves live in
 * `harness/models/rdma/` and do no I/O.
 *
 * @example
 * ```ts
 * const r = await checkPcapngFile("reports/run/roce-e2e/fabric.pcapng", { pathMtu: 1024 });
 * ctx.measure("framesChecked", r.framesChecked, "frames");
 * if (r.violationCount > 0) throw new RowFailure(`${r.violationCount} wire violations, see ${r.reportPath}`);
 * ```
 */
import {
  type CaptureFrame,
  checkCapture,
  type CheckOptions,
  type CheckResult,
} from "../models/rdma/mod.ts";
import { readPcapng } from "../fabric/pcapng.ts";

/** What {@link checkPcapngFile} found, and where it wrote the report. */
export interface PcapngCheckSummary extends CheckResult {
  /** The capture that was checked. */
  capturePath: string;
  /** The `<capture>.violations.json` written beside it. */
  reportPath: string;
  /** Packets whose captured length is shorter than their wire length (snap length). */
  truncatedFrames: number;
  /** Packets in the file (every one is checked: `framesChecked` counts them too). */
  fileFrames: number;
  /** Ethernet frames carrying IPv4 (ethertype 0x0800), RoCEv2 included. */
  ipv4Frames: number;
}

/** pcapng/libpcap link type of Ethernet. */
const LINKTYPE_ETHERNET = 1;

/** Whether a frame is Ethernet II carrying IPv4 (no VLAN tag: the fabric has none). */
function isIpv4(linkType: number, data: Uint8Array): boolean {
  return linkType === LINKTYPE_ETHERNET && data.length >= 14 && data[12] === 0x08 &&
    data[13] === 0x00;
}

/**
 * Check a pcapng capture and write `<path>.violations.json` beside it (always,
 * so an empty report proves the check ran).
 */
export async function checkPcapngFile(
  path: string,
  opts: CheckOptions = {},
): Promise<PcapngCheckSummary> {
  const bytes = await Deno.readFile(path);
  const onDisk = (await Deno.stat(path)).size;
  // a capture read short (seen once with a 2.15 GB file: 0 frames, no error) must not pass as empty
  if (bytes.length !== onDisk) {
    throw new Error(`${path}: read ${bytes.length} bytes of the ${onDisk} on disk`);
  }
  const { interfaces, packets } = readPcapng(bytes);
  let truncatedFrames = 0;
  let ipv4Frames = 0;
  const frames: CaptureFrame[] = packets.map((p) => {
    if (p.data.length < p.origLen) truncatedFrames++;
    if (isIpv4(interfaces[p.interfaceId].linkType, p.data)) ipv4Frames++;
    return {
      data: p.data,
      linkType: interfaces[p.interfaceId].linkType,
      interfaceId: p.interfaceId,
      timestampNs: p.timestampNs,
    };
  });
  const result = checkCapture(frames, opts);
  const reportPath = `${path}.violations.json`;
  const summary: PcapngCheckSummary = {
    ...result,
    capturePath: path,
    reportPath,
    truncatedFrames,
    fileFrames: packets.length,
    ipv4Frames,
  };
  await Deno.writeTextFile(reportPath, JSON.stringify(summary, null, 2) + "\n");
  return summary;
}
