/**
 * Switch captures of a row's traffic, checked by the RDMA wire oracle
 * (harness/models/rdma/). Every end-to-end row (eth-forwarding, roce-e2e,
 * peermem) records its traffic through {@link WireCapture} — directly, or a
 * segment at a time with {@link captured} — and the same rules fail the row:
 *
 * - `capture_stop` failed (the file may be cut short);
 * - the files hold a different number of frames or bytes than `capture_stop`
 *   said it wrote, or the capture's own count moved differently from the
 *   switch's receive counters over the same interval (frames lost between
 *   the forwarding path and the file);
 * - the capture is empty, or holds no frame of the kind the row checks;
 * - a frame was cut short, or the oracle found a violation.
 *
 * Measurements, the same names and units in every row:
 * `oracle.<segment>.framesChecked` / `.rdmaFrames` / `.switchFrames` (frames),
 * in ib mode `.smFrames` (MADs the switch's SM and SA sent, captured too),
 * `oracle.<segment>.violations` (violations), and the row's running totals
 * `framesChecked` (frames) and `violations` (violations).
 */
import { join } from "node:path";
import type { CaptureFile, FabricOps, PortStatus } from "../fabric/client.ts";
import { type RowContext, RowFailure } from "../matrix/row.ts";
import { checkPcapngFiles, type PcapngCheckSummary } from "./wire_check.ts";

/**
 * The switch rolls a capture over to a next file before one passes this
 * size: a 1 MiB pingpong's 1,000 iterations are over 2 GiB of frames, and
 * single files of that size were twice read back as empty in CI (cause not
 * found; no file reaches 2 GiB since).
 */
export const CAPTURE_FILE_BYTES = 1 << 30;

/**
 * What a row's capture must contain: some RDMA transport frames, some IPv4
 * frames, or — for traffic that must stay inside a host (loopback) — no
 * RDMA frame at all (it may then be empty).
 */
export type CaptureKind = "rdma" | "ipv4" | "no-rdma";

/** The switch's receive total and the capture's live packet count, from one `stats` reply. */
export interface CounterSample {
  /** Frames received over every port since the daemon started (closed connections included). */
  rxFrames: number;
  /** Packets the running capture has recorded so far. */
  packets: number;
  /**
   * ib mode: MADs the switch's SM and SA have sent (`sm` reply, `mads.sent`),
   * unchanged across the `stats` request. They are captured as outbound
   * without being received; absent in the other modes.
   */
  smSent?: number;
  /**
   * eth mode: PFC frames the switch sent (`stats` reply, `pfc_sent`, the
   * same reply as the other two numbers), captured outbound without being
   * received; absent in the other modes.
   */
  pfcSent?: number;
}

/** What the switch said about one capture segment. */
export interface SegmentRecord {
  /** Segment name; the file is `<name>.pcapng` in the row's directory. */
  name: string;
  /** The capture file. */
  path: string;
  /** Sampled right after `capture_start`. */
  start?: CounterSample;
  /** Sampled right before `capture_stop`. */
  end?: CounterSample;
  /** Packets `capture_stop` said it wrote. */
  stopped?: number;
  /** The files `capture_stop` listed, in order. */
  files?: CaptureFile[];
  /** Why `capture_stop` (or a counter sample) failed. */
  stopError?: string;
  /** Port counters at the instant the capture started (the `capture_start` reply). */
  startPorts?: PortStatus[];
  /** Port counters at the instant it stopped (the `capture_stop` reply). */
  endPorts?: PortStatus[];
}

/** The parts of an oracle summary the gate judges. */
export type FileVerdictInput = Pick<
  PcapngCheckSummary,
  | "files"
  | "fileFrames"
  | "rdmaFrames"
  | "ipv4Frames"
  | "truncatedFrames"
  | "violationCount"
  | "byRule"
  | "reportPath"
>;

/**
 * Everything wrong with one segment, as messages naming the segment; empty
 * when it is clean. `file` is undefined when the file could not be read.
 *
 * The two counter samples come from single `stats` replies, each holding the
 * switch's receive total and the capture's packet count at the same instant,
 * so no frame can fall between the two numbers of a sample: over the
 * interval the capture must have grown by exactly the frames the switch
 * received, plus in ib mode the MADs its SM and SA sent (SMPs of the
 * periodic sweep, SA answers: captured as outbound, never received), in eth
 * mode plus the PFC frames the switch sent (also outbound, never received).
 * (Frames injected `egress` are captured without being received; rows
 * inject outside their captures.)
 */
export function segmentProblems(
  seg: SegmentRecord,
  kind: CaptureKind,
  file: FileVerdictInput | undefined,
  readError?: string,
): string[] {
  const n = seg.name;
  const out: string[] = [];
  if (seg.stopError !== undefined) out.push(`${n}: ${seg.stopError}`);
  if (!seg.start || !seg.end) {
    out.push(`${n}: the switch's counters were not sampled at start and stop`);
  } else {
    const received = seg.end.rxFrames - seg.start.rxFrames;
    const recorded = seg.end.packets - seg.start.packets;
    const smSent = (seg.end.smSent ?? 0) - (seg.start.smSent ?? 0);
    const pfcSent = (seg.end.pfcSent ?? 0) - (seg.start.pfcSent ?? 0);
    if (received + smSent + pfcSent !== recorded) {
      out.push(
        `${n}: the switch received ${received} frames ` +
          `${smSent ? `and its SM sent ${smSent} ` : ""}` +
          `${pfcSent ? `and it sent ${pfcSent} PFC frames ` : ""}while the capture ran, ` +
          `the capture recorded ${recorded}`,
      );
    }
  }
  if (!file) {
    out.push(`${n}: the capture file cannot be read: ${readError ?? "unknown error"}`);
    return out;
  }
  if (seg.stopped !== undefined && file.fileFrames !== seg.stopped) {
    out.push(`${n}: the file holds ${file.fileFrames} frames, the switch wrote ${seg.stopped}`);
  }
  if (seg.files) {
    const read = file.files.map((f) => `${f.path} (${f.frames} frames, ${f.bytes} bytes)`);
    const wrote = seg.files.map((f) => `${f.path} (${f.packets} frames, ${f.bytes} bytes)`);
    if (read.join() !== wrote.join()) {
      out.push(
        `${n}: the files read were ${read.join(", ")}; the switch wrote ${wrote.join(", ")}`,
      );
    }
  }
  if (kind === "no-rdma") {
    if (file.rdmaFrames > 0) {
      out.push(`${n}: ${file.rdmaFrames} RDMA frames reached the wire, want none`);
    }
  } else if (file.fileFrames === 0) out.push(`${n}: the capture is empty`);
  else if (kind === "rdma" && file.rdmaFrames === 0) {
    out.push(`${n}: the capture holds no RDMA frame`);
  } else if (kind === "ipv4" && file.ipv4Frames === 0) {
    out.push(`${n}: the capture holds no IPv4 frame`);
  }
  if (file.truncatedFrames > 0) out.push(`${n}: ${file.truncatedFrames} frames cut short`);
  if (file.violationCount > 0) {
    out.push(
      `${n}: ${file.violationCount} wire violations (${JSON.stringify(file.byRule)}), ` +
        `see ${file.reportPath}`,
    );
  }
  return out;
}

/** Oracle totals over a row's captures (recorded as `framesChecked` and `violations`). */
const oracleTotals = new WeakMap<RowContext, { frames: number; violations: number }>();

/** Options of a {@link WireCapture}. */
export interface WireCaptureOptions {
  /** The frames the capture must hold some of. */
  kind: CaptureKind;
  /**
   * A further check of a stopped segment's file, run with the port
   * counters of its first and last instant; the problems it returns fail
   * the segment like the oracle's (e.g. replaying it through the switch model).
   */
  inspect?: (paths: string[], start: PortStatus[], end: PortStatus[]) => Promise<string[]>;
}

/**
 * The switch's capture of a row, in segments (a row stops it around injected
 * frames and across a switch restart). Each segment is checked by
 * {@link WireCapture.check}; a clean file is deleted (its
 * `.violations.json` stays as the proof the check ran), a file with a
 * problem is kept beside its report.
 */
export class WireCapture {
  readonly #ctx: RowContext;
  readonly #kind: CaptureKind;
  readonly #inspect?: WireCaptureOptions["inspect"];
  readonly #pending: SegmentRecord[] = [];
  #active?: SegmentRecord;
  /** The fabric runs in ib mode (learnt from the first `stats` reply). */
  #ib = false;

  /** A capture of the row `ctx` runs; the row must have a fabric. */
  constructor(ctx: RowContext, opts: WireCaptureOptions) {
    this.#ctx = ctx;
    this.#kind = opts.kind;
    this.#inspect = opts.inspect;
  }

  #client(): FabricOps {
    if (!this.#ctx.fabric) throw new RowFailure(`${this.#ctx.id}: capturing needs a fabric`);
    return this.#ctx.fabric;
  }

  /**
   * One `stats` reply: the receive total and the running capture's packets;
   * in ib mode also the SM's sent MADs, read before and after it and taken
   * only when both reads agree (the daemon answers one request at a time,
   * so then no MAD left between the two numbers).
   */
  async #sample(): Promise<CounterSample> {
    const fabric = this.#client();
    for (let tries = 0;; tries++) {
      const sent0 = this.#ib ? (await fabric.sm()).mads.sent : undefined;
      const s = await fabric.stats();
      if (!s.capture?.active) throw new RowFailure("the switch has no capture running");
      this.#ib = s.mode === "ib";
      const sample = { rxFrames: s.rxFrames, packets: s.capture.packets ?? 0 };
      if (s.mode === "eth") return { ...sample, pfcSent: s.pfcSent };
      if (!this.#ib) return sample;
      const sent1 = (await fabric.sm()).mads.sent;
      if (sent0 === sent1) return { ...sample, smSent: sent1 };
      if (tries >= 20) {
        throw new RowFailure("the SM kept sending while the switch's counters were sampled");
      }
    }
  }

  /** Start capturing into `<name>.pcapng` in the row's directory. */
  async start(name: string): Promise<void> {
    if (this.#active) throw new RowFailure(`capture ${this.#active.name} is still running`);
    const path = join(this.#ctx.dir, `${name}.pcapng`);
    const startPorts = await this.#client().startCapture(path, { fileBytes: CAPTURE_FILE_BYTES });
    const seg: SegmentRecord = { name, path, startPorts };
    this.#active = seg;
    this.#pending.push(seg);
    this.#ctx.artifact(path);
    seg.start = await this.#sample();
  }

  /**
   * Stop the running capture (if any). A failed `capture_stop` does not
   * throw here: it is recorded and fails the segment's check.
   */
  async stop(): Promise<void> {
    const seg = this.#active;
    if (!seg) return;
    this.#active = undefined;
    try {
      seg.end = await this.#sample();
    } catch (e) {
      seg.stopError = `counters before capture_stop: ${(e as Error).message}`;
    }
    try {
      const st = await this.#client().stopCapture();
      seg.stopped = st.packets;
      seg.files = st.files;
      seg.endPorts = st.ports;
      const where = st.files.length > 1 ? `${st.files.length} files from ${seg.path}` : seg.path;
      this.#ctx.log(`capture ${seg.name}: the switch wrote ${seg.stopped} frames to ${where}`);
    } catch (e) {
      seg.stopError = `capture_stop failed: ${(e as Error).message}`;
      this.#ctx.log(`capture ${seg.name}: ${seg.stopError}`);
    }
  }

  /**
   * Check every stopped segment not checked yet, each in its own step;
   * returns the oracle's summary of each, in order (a row reads its
   * censuses: ECN marks, CNPs, PFC frames per priority).
   */
  async check(): Promise<PcapngCheckSummary[]> {
    if (this.#active) await this.stop();
    const out: PcapngCheckSummary[] = [];
    for (const seg of this.#pending.splice(0)) {
      const file = await this.#ctx.step(
        `${seg.name}: the capture passes the RDMA wire oracle`,
        () => this.#checkOne(seg),
      );
      if (file) out.push(file);
    }
    return out;
  }

  async #checkOne(seg: SegmentRecord): Promise<PcapngCheckSummary | undefined> {
    const ctx = this.#ctx;
    let file: PcapngCheckSummary | undefined;
    let readError: string | undefined;
    const paths = seg.files?.map((f) => f.path) ?? [seg.path];
    const t0 = performance.now();
    try {
      file = await checkPcapngFiles(paths);
    } catch (e) {
      readError = (e as Error).message;
    }
    if (seg.start && seg.end) {
      const received = seg.end.rxFrames - seg.start.rxFrames;
      ctx.measure(`oracle.${seg.name}.switchFrames`, received, "frames");
      if (seg.start.smSent !== undefined && seg.end.smSent !== undefined) {
        const sent = seg.end.smSent - seg.start.smSent;
        ctx.measure(`oracle.${seg.name}.smFrames`, sent, "frames");
      }
    }
    if (file) {
      ctx.artifact(file.reportPath);
      ctx.log(
        `${seg.name}: ${file.fileFrames} frames in the file (${file.rdmaFrames} RDMA, ` +
          `${file.ipv4Frames} IPv4), ${file.violationCount} violations, checked in ` +
          `${(performance.now() - t0).toFixed(0)} ms`,
      );
      ctx.measure(`oracle.${seg.name}.framesChecked`, file.framesChecked, "frames");
      ctx.measure(`oracle.${seg.name}.rdmaFrames`, file.rdmaFrames, "frames");
      ctx.measure(`oracle.${seg.name}.violations`, file.violationCount, "violations");
      if (file.pfc.frames || file.pfc.otherMacControl) {
        ctx.measure(`oracle.${seg.name}.pfcFrames`, file.pfc.frames, "frames");
      }
      const total = oracleTotals.get(ctx) ?? { frames: 0, violations: 0 };
      total.frames += file.framesChecked;
      total.violations += file.violationCount;
      oracleTotals.set(ctx, total);
      ctx.measure("framesChecked", total.frames, "frames");
      ctx.measure("violations", total.violations, "violations");
    }
    const problems = segmentProblems(seg, this.#kind, file, readError);
    if (this.#inspect && seg.startPorts && seg.endPorts && !seg.stopError) {
      try {
        problems.push(...await this.#inspect(paths, seg.startPorts, seg.endPorts));
      } catch (e) {
        problems.push(`${seg.name}: inspecting the capture failed: ${(e as Error).message}`);
      }
    }
    // A clean capture can be hundreds of MB: its .violations.json stays as
    // the proof the check ran; one with a problem is kept for inspection.
    if (problems.length === 0) {
      for (const p of paths) await Deno.remove(p);
    }
    ctx.expect(problems.length === 0, problems.join("; "));
    return file;
  }
}

/**
 * Run `fn` with the switch capturing every frame into `<name>.pcapng`, then
 * check that segment (see {@link WireCapture}); returns the oracle's summary
 * (undefined when the file could not be read: the check has failed then).
 * When `fn` throws, the capture is stopped, kept, and the error goes on
 * unchanged.
 */
export async function captured(
  ctx: RowContext,
  name: string,
  fn: () => Promise<void>,
  opts: WireCaptureOptions = { kind: "rdma" },
): Promise<PcapngCheckSummary | undefined> {
  const cap = new WireCapture(ctx, opts);
  await cap.start(name);
  try {
    await fn();
  } finally {
    await cap.stop();
  }
  return (await cap.check())[0];
}
