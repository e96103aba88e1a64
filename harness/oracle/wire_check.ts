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
import { CaptureChecker, type CheckOptions, type CheckResult } from "../models/rdma/mod.ts";
import { scanPcapngFile } from "../fabric/pcapng.ts";

/** What {@link checkPcapngFile} found, and where it wrote the report. */
export interface PcapngCheckSummary extends CheckResult {
  /** The capture that was checked (its first file). */
  capturePath: string;
  /** The `<capture>.violations.json` written beside it. */
  reportPath: string;
  /** Packets whose captured length is shorter than their wire length (snap length). */
  truncatedFrames: number;
  /** Packets in the file (every one is checked: `framesChecked` counts them too). */
  fileFrames: number;
  /** Ethernet frames carrying IPv4 (ethertype 0x0800), RoCEv2 included. */
  ipv4Frames: number;
  /** Each file read, in order (one unless the switch rolled the capture over). */
  files: PcapngFileRead[];
}

/** One file of a checked capture. */
export interface PcapngFileRead {
  /** Where it is. */
  path: string;
  /** Packets in it. */
  frames: number;
  /** Its length in bytes (all of it was read). */
  bytes: number;
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
export function checkPcapngFile(
  path: string,
  opts: CheckOptions = {},
): Promise<PcapngCheckSummary> {
  return checkPcapngFiles([path], opts);
}

/**
 * The files of a capture whose first file is `first`: itself, then the files
 * the switch rolled over to (`<stem>.1.pcapng`, `<stem>.2.pcapng`, … while
 * they exist; docs/switch.md, "Capture").
 */
export async function rolledOverFiles(first: string): Promise<string[]> {
  const stem = first.endsWith(".pcapng") ? first.slice(0, -".pcapng".length) : first;
  const ext = stem === first ? "" : ".pcapng";
  const files = [first];
  for (let k = 1;; k++) {
    const next = `${stem}.${k}${ext}`;
    try {
      await Deno.stat(next);
    } catch {
      return files;
    }
    files.push(next);
  }
}

/**
 * Check a capture that the switch rolled over into several files, in the
 * order written, as one frame sequence (flows go on across files), and write
 * `<first>.violations.json`.
 */
export async function checkPcapngFiles(
  paths: string[],
  opts: CheckOptions = {},
): Promise<PcapngCheckSummary> {
  if (paths.length === 0) throw new Error("checkPcapngFiles: no file to check");
  const checker = new CaptureChecker(opts);
  let truncatedFrames = 0;
  let ipv4Frames = 0;
  const files: PcapngFileRead[] = [];
  for (const path of paths) {
    // a block at a time: memory stays flat however large the file
    const scan = await scanPcapngFile(path, (p, interfaces) => {
      const linkType = interfaces[p.interfaceId].linkType;
      if (p.data.length < p.origLen) truncatedFrames++;
      if (isIpv4(linkType, p.data)) ipv4Frames++;
      checker.push({
        data: p.data,
        linkType,
        interfaceId: p.interfaceId,
        timestampNs: p.timestampNs,
      });
    });
    const onDisk = (await Deno.stat(path)).size;
    if (scan.bytes !== onDisk) {
      throw new Error(`${path}: read ${scan.bytes} bytes of the ${onDisk} on disk`);
    }
    files.push({ path, frames: scan.packets, bytes: scan.bytes });
  }
  const result = checker.finish();
  const reportPath = `${paths[0]}.violations.json`;
  const summary: PcapngCheckSummary = {
    ...result,
    capturePath: paths[0],
    reportPath,
    truncatedFrames,
    fileFrames: files.reduce((n, f) => n + f.frames, 0),
    ipv4Frames,
    files,
  };
  await Deno.writeTextFile(reportPath, JSON.stringify(summary, null, 2) + "\n");
  return summary;
}
