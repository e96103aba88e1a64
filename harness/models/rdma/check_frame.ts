/**
 * The checker's per-frame rules: what a single frame must get right whatever
 * flow it belongs to (structure, ICRC, VCRC, IPv4 header checksum, UDP port,
 * TVer, pad, management QPs and VL15, payload against the path MTU), and the
 * labels violations name frames and flows by.
 */
import type { ViolationLog } from "./check_log.ts";
import { type CaptureFrame, decodeFrame, LINKTYPE_ETHERNET, type Packet } from "./frame.ts";
import { ipv4ToString, ipv6ToString } from "./ip.ts";
import { GSI_QKEY, MAD_BYTES } from "./mad.ts";
import type { OpcodeInfo } from "./opcodes.ts";
import { ROCEV2_UDP_PORT } from "./udp.ts";

/** The path MTUs InfiniBand defines (RoCEv2 uses the same). */
export const VALID_MTUS: readonly number[] = [256, 512, 1024, 2048, 4096];

/** Source and destination endpoint labels of an RDMA packet. */
export function endpoints(p: Packet): [string, string] {
  if (p.ipv4) return [ipv4ToString(p.ipv4.src), ipv4ToString(p.ipv4.dst)];
  if (p.ipv6) return [ipv6ToString(p.ipv6.src), ipv6ToString(p.ipv6.dst)];
  if (p.lrh) return [`LID ${p.lrh.slid}`, `LID ${p.lrh.dlid}`];
  return ["?", "?"];
}

/** The flow label of a frame judged on its own: endpoints, and the QP when it has a BTH. */
export function frameFlow(p: Packet): string {
  const [s, d] = endpoints(p);
  if (p.bth) return `${s} → ${d} QP ${qpHex(p.bth.destQp)}`;
  return `${s} → ${d}`;
}

/** A QP number as the 24-bit hex the IBA tools print. */
export function qpHex(qp: number): string {
  return `0x${qp.toString(16).padStart(6, "0")}`;
}

function hex32(v: number): string {
  return `0x${v.toString(16).padStart(8, "0")}`;
}

/**
 * Rules for a frame that is not RoCEv2 or IB transport: its decode errors, its
 * IPv4 header checksum (when `ipv4ChecksumAllFrames`), and RoCEv2 hiding
 * behind a wrong UDP port.
 */
export function checkOtherFrame(
  log: ViolationLog,
  frame: CaptureFrame,
  p: Packet,
  index: number,
  ipv4ChecksumAllFrames: boolean,
): void {
  for (const e of p.errors) log.report(index, frameFlow(p), "decode", e);
  if (p.ipv4 && p.ipv4ChecksumOk === false && ipv4ChecksumAllFrames) {
    reportIpv4Checksum(log, p, index);
  }
  if (p.udp && p.udp.dstPort !== ROCEV2_UDP_PORT && frame.linkType === LINKTYPE_ETHERNET) {
    // RoCEv2 sent to the wrong port: a UDP payload that is a BTH with a known
    // opcode and a correct ICRC is no accident (the ICRC alone is a 2^-32 chance).
    const q = decodeFrame(frame.data, frame.linkType, { anyUdpPort: true });
    if (q.op && q.errors.length === 0 && q.icrc && q.icrc.wire === q.icrc.computed) {
      log.report(
        index,
        frameFlow(q),
        "udp-port",
        `RoCEv2 packet (${q.op.name}, valid ICRC) sent to UDP port ${p.udp.dstPort}; RoCEv2 uses 4791`,
      );
    }
  }
}

function reportIpv4Checksum(log: ViolationLog, p: Packet, index: number): void {
  log.report(
    index,
    frameFlow(p),
    "ipv4-checksum",
    `IPv4 header checksum 0x${p.ipv4!.checksum.toString(16).padStart(4, "0")} is wrong`,
  );
}

/** Rules every RoCEv2 or IB transport frame meets on its own, before any flow looks at it. */
export function checkRdmaFrame(log: ViolationLog, p: Packet, index: number): void {
  for (const e of p.errors) log.report(index, frameFlow(p), "decode", e);
  if (p.ipv4 && p.ipv4ChecksumOk === false) reportIpv4Checksum(log, p, index);
  if (p.icrc && p.icrc.wire !== p.icrc.computed) {
    log.report(
      index,
      frameFlow(p),
      "icrc",
      `ICRC on the wire is ${hex32(p.icrc.wire)} but the packet's ICRC is ${
        hex32(p.icrc.computed)
      }`,
    );
  }
  if (p.vcrc && p.vcrc.wire !== p.vcrc.computed) {
    log.report(
      index,
      frameFlow(p),
      "vcrc",
      `VCRC on the wire is 0x${
        p.vcrc.wire.toString(16).padStart(4, "0")
      } but the packet's VCRC is ` +
        `0x${p.vcrc.computed.toString(16).padStart(4, "0")}`,
    );
  }
  const bth = p.bth;
  const op = p.op;
  if (!bth || !op) return;
  if (bth.tver !== 0) {
    log.report(index, frameFlow(p), "transport", `BTH TVer is ${bth.tver}, must be 0`);
  }
  if (op.transport === "CNP") return;
  // Pad: payload and pad together fill whole 4-byte words; nothing but payload is padded.
  if (p.paddedLength % 4 !== 0) {
    log.report(
      index,
      frameFlow(p),
      "pad-count",
      `payload ${p.payloadLength} + pad ${bth.padCnt} = ${p.paddedLength} bytes, not a multiple of 4`,
    );
  }
  if (!op.hasPayload && p.paddedLength !== 0) {
    log.report(
      index,
      frameFlow(p),
      "transport",
      `${op.name} carries no payload, but ${p.paddedLength} bytes follow its headers`,
    );
  }
  if (bth.padCnt !== 0 && (op.position === "FIRST" || op.position === "MIDDLE")) {
    log.report(
      index,
      frameFlow(p),
      "pad-count",
      `${op.name} must not be padded (PadCnt ${bth.padCnt})`,
    );
  }
  checkManagement(log, p, op, index);
}

/**
 * QP0/QP1 take only 256-byte UD MADs (QP1 with the GSI Q_Key), VL15 only
 * QP0, and RoCE has no QP0 at all: annexes A16/A17 leave subnet management
 * (the SMI, QP0) out of RoCE, so a RoCEv2 packet to or from QP0 is wrong
 * whatever it carries.
 */
function checkManagement(log: ViolationLog, p: Packet, op: OpcodeInfo, index: number): void {
  const qp = p.bth!.destQp;
  const vl15 = p.lrh !== undefined && p.lrh.vl === 15;
  if (p.kind === "roce" && (qp === 0 || (p.deth !== undefined && p.deth.srcQp === 0))) {
    log.report(
      index,
      frameFlow(p),
      "management",
      `${op.name} ${qp === 0 ? "to" : "from"} QP0: RoCE has no QP0 (SMI), IBA annexes A16/A17`,
    );
    return;
  }
  if (qp === 0 || qp === 1) {
    if (op.transport !== "UD") {
      log.report(
        index,
        frameFlow(p),
        "management",
        `QP${qp} only takes UD traffic, got ${op.name}`,
      );
      return;
    }
    if (p.payloadLength !== MAD_BYTES) {
      log.report(
        index,
        frameFlow(p),
        "management",
        `a MAD to QP${qp} is ${MAD_BYTES} bytes, got ${p.payloadLength}`,
      );
    }
    if (qp === 1 && p.deth && p.deth.qkey !== GSI_QKEY) {
      log.report(
        index,
        frameFlow(p),
        "management",
        `QP1 MAD with Q_Key ${hex32(p.deth.qkey)}, must be 0x80010000`,
      );
    }
    if (p.lrh && qp === 0 && !vl15) {
      log.report(
        index,
        frameFlow(p),
        "management",
        `QP0 (SMI) traffic must use VL15, got VL${p.lrh.vl}`,
      );
    }
  }
  if (vl15 && qp !== 0) {
    log.report(
      index,
      frameFlow(p),
      "management",
      `VL15 carries only QP0 (SMI) traffic, got QP ${qp}`,
    );
  }
}

/**
 * Payload against the path MTU: FIRST/MIDDLE carry exactly one MTU, LAST/ONLY
 * at most one. `pmtu` 0 means not yet known: then a FIRST/MIDDLE must carry a
 * valid MTU, and `learn` (the flow) takes it as its path MTU. `where` is the
 * flow label, or the packet to label when no flow owns it (UD).
 */
export function checkPayloadMtu(
  log: ViolationLog,
  p: Packet,
  op: OpcodeInfo,
  pmtu: number,
  index: number,
  where: string | Packet,
  learn?: { pmtu: number },
): void {
  if (!op.hasPayload) return;
  // Labelled only when reported: building the label costs more than the check.
  const flow = (): string => (typeof where === "string" ? where : frameFlow(where));
  const len = p.payloadLength;
  if (op.position === "FIRST" || op.position === "MIDDLE") {
    if (pmtu === 0) {
      if (!VALID_MTUS.includes(len)) {
        log.report(
          index,
          flow(),
          "payload-mtu",
          `${op.name} carries ${len} bytes, which is no path MTU (256..4096)`,
        );
        return;
      }
      if (learn) learn.pmtu = len;
    } else if (len !== pmtu) {
      log.report(
        index,
        flow(),
        "payload-mtu",
        `${op.name} carries ${len} bytes; FIRST/MIDDLE carry exactly the path MTU ${pmtu}`,
      );
    }
  } else if (len > (pmtu || 4096)) {
    log.report(
      index,
      flow(),
      "payload-mtu",
      `${op.name} carries ${len} bytes, more than the path MTU ${pmtu || 4096}`,
    );
  }
}
