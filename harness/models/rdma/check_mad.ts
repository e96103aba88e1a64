/**
 * The checker's management rules over a whole capture: every MAD response
 * pairs with the request it answers, and the subnet management (SMP), subnet
 * administration (SA) and performance management (PMA) answers say what the
 * specification and the fabric's decisions (docs/wire.md, "Management
 * semantics") let them say. Written from IBA vol. 1 ch. 13 (MADs: methods,
 * status, TransactionID), ch. 14 (SMPs, directed route, attributes) and ch. 15
 * (SA), and ch. 16 (PMA).
 *
 * Rules:
 * - `mad-pairing`: a response (method bit 7) answers an earlier request with
 *   the same TransactionID, class and attribute, in the opposite direction
 *   between the same two endpoints (LID or IP, and QP; a directed-route SMP is
 *   paired by its path, the switch ports in its initial path, since its LIDs
 *   are permissive), and no request gets more answers than it was sent; the
 *   response method is the request's with bit 7 set, except Set → GetResp
 *   (0x81) and GetTraceTable → GetTableResp (0x92); a request carries status 0.
 * - `smp-semantics`: SMPs travel QP0 → QP0 and QP0 carries only SMPs; M_Key 0
 *   unless a SubnSet(PortInfo) installed another; directed route: request
 *   D=0, response D=1, equal hop count, DrSLID/DrDLID and return path; a
 *   valid status; attributes of successful answers are sane (NodeInfo,
 *   PortInfo — a Set's answer echoes what was set —, GUIDInfo, P_KeyTable,
 *   SMInfo).
 * - `sa-semantics`: SA MADs go to QP1 and come from QP1 with Q_Key
 *   0x80010000, class version 2; a valid status (SA codes 1..7 in bits
 *   15..8); a PathRecord answers the SGID/DGID/LIDs/P_Key asked for, and its
 *   LIDs belong to ports (assigned by a SubnSet(PortInfo) in the capture, or
 *   the source of some frame); an MCMemberRecord answer names a multicast
 *   MGID and an MLID in 0xC000..0xFFFE and echoes what was asked.
 * - `pma-semantics`: a PortCounters(Extended) answer is for the port asked
 *   (PortSelect), class version 1, valid status.
 *
 * Requests still unanswered when the capture ends are counted (`unanswered`),
 * not reported: an SM retrying a port whose driver is not loaded yet is
 * normal; the row decides what it tolerates. The other edge of a capture
 * likewise: a response of a management class of which no request has been
 * seen yet may answer one sent before the capture started (the switch's SM
 * sweeps all the time); it is counted (`unpairedAtStart`), not reported.
 * Once a class's first request is in the capture, its responses must pair.
 */
import type { RuleId, ViolationLog } from "./check_log.ts";
import { endpoints, frameFlow } from "./check_frame.ts";
import type { Packet } from "./frame.ts";
import { ipv6ToString } from "./ip.ts";
import {
  decodeGuidInfo,
  decodeNodeInfo,
  decodePKeyTable,
  decodePortInfo,
  decodeSmp,
  drDirection,
  drHopCount,
  drHopPointer,
  GSI_QKEY,
  MAD_BYTES,
  MAD_METHOD as M,
  type MadHeader,
  MGMT_CLASS,
  PORT_STATE,
  type PortInfo,
  type Smp,
  SMP_ATTR,
} from "./mad.ts";
import { MULTICAST_LID_MIN, PERMISSIVE_LID } from "./multicast.ts";
import {
  decodeMcMemberRecord,
  decodePathRecord,
  decodeSaMad,
  decodeSmInfo,
  MCM_COMP,
  PATH_COMP,
  PMA_ATTR,
  PMA_DATA_OFFSET,
  SA_ATTR,
} from "./sa.ts";

/** Request methods that are answered, and the method of their answer (Send and Trap are not). */
const RESPONSE_OF: ReadonlyMap<number, number> = new Map([
  [M.GET, M.GET_RESP],
  [M.SET, M.GET_RESP],
  [M.REPORT, M.REPORT_RESP],
  [M.GET_TABLE, M.GET_TABLE_RESP],
  [M.GET_TRACE_TABLE, M.GET_TABLE_RESP],
  [M.GET_MULTI, M.GET_MULTI_RESP],
  [M.DELETE, M.DELETE_RESP],
]);

const METHOD_NAMES: ReadonlyMap<number, string> = new Map(
  Object.entries(M).map(([k, v]) => [v, k]),
);

const ATTR_NAMES: Readonly<Record<number, Readonly<Record<number, string>>>> = {
  [MGMT_CLASS.SUBN_LID_ROUTED]: {
    0x10: "NodeDescription",
    0x11: "NodeInfo",
    0x14: "GUIDInfo",
    0x15: "PortInfo",
    0x16: "P_KeyTable",
    0x20: "SMInfo",
  },
  [MGMT_CLASS.SUBN_ADM]: { 0x01: "ClassPortInfo", 0x35: "PathRecord", 0x38: "MCMemberRecord" },
  [MGMT_CLASS.PERF]: { 0x01: "ClassPortInfo", 0x12: "PortCounters", 0x1d: "PortCountersExtended" },
};

function hex(v: number | bigint, digits: number): string {
  return `0x${v.toString(16).padStart(digits, "0")}`;
}

function methodName(m: number): string {
  return `${METHOD_NAMES.get(m) ?? "method"} (${hex(m, 2)})`;
}

function isSmpClass(c: number): boolean {
  return c === MGMT_CLASS.SUBN_LID_ROUTED || c === MGMT_CLASS.SUBN_DIRECTED_ROUTE;
}

function attrName(h: MadHeader): string {
  const cls = h.mgmtClass === MGMT_CLASS.SUBN_DIRECTED_ROUTE
    ? MGMT_CLASS.SUBN_LID_ROUTED
    : h.mgmtClass;
  const n = ATTR_NAMES[cls]?.[h.attributeId];
  return n ? `${n} (${hex(h.attributeId, 4)})` : `attribute ${hex(h.attributeId, 4)}`;
}

/** The rule a class's semantic problems are reported under. */
function classRule(c: number): RuleId {
  if (isSmpClass(c)) return "smp-semantics";
  if (c === MGMT_CLASS.SUBN_ADM) return "sa-semantics";
  if (c === MGMT_CLASS.PERF) return "pma-semantics";
  return "mad-pairing";
}

/** What is wrong with a response's status word (IBA vol. 1 §13.4.7, table 106; SA table 175). */
export function madStatusProblems(h: MadHeader): string[] {
  const out: string[] = [];
  const s = isSmpClass(h.mgmtClass) && h.mgmtClass === MGMT_CLASS.SUBN_DIRECTED_ROUTE
    ? h.status & 0x7fff
    : h.status;
  if (s & 0x00e0) out.push(`status ${hex(h.status, 4)} has reserved bits 7..5 set`);
  const code = (s >>> 2) & 7;
  if (code >= 4 && code <= 6) {
    out.push(`status ${hex(h.status, 4)} has the reserved invalid-field code ${code}`);
  }
  const classSpecific = s >>> 8;
  if (h.mgmtClass === MGMT_CLASS.SUBN_ADM) {
    if (classSpecific > 7) {
      out.push(`status ${hex(h.status, 4)}: SA status code ${classSpecific} is not one of 1..7`);
    }
  } else if (isSmpClass(h.mgmtClass) || h.mgmtClass === MGMT_CLASS.PERF) {
    if (classSpecific !== 0) {
      out.push(`status ${hex(h.status, 4)} has class-specific bits set, which this class reserves`);
    }
  }
  return out;
}

/** An outstanding transaction: requests sent under one key and the answers seen. */
interface Transaction {
  requests: number;
  answers: number;
  /** The last request, a copy of its 256 bytes. */
  mad: Uint8Array;
  header: MadHeader;
  index: number;
}

/** A PathRecord answer whose LIDs are judged at the end, when every port is known. */
interface PathAnswer {
  index: number;
  flow: string;
  dlid: number;
  slid: number;
  dgid: Uint8Array;
  sgid: Uint8Array;
}

/** Pairs MAD requests with their responses and judges SMP, SA and PMA semantics. */
export class MadChecker {
  private readonly txns = new Map<string, Transaction>();
  /** Every key a TID was requested under, for the diagnosis of an unpaired response. */
  private readonly keysByTid = new Map<bigint, string[]>();
  private readonly mKeys = new Set<bigint>([0n]);
  private readonly seenLids = new Set<number>();
  private readonly assignedLids = new Set<number>();
  private readonly guidByRoute = new Map<string, bigint>();
  private readonly lidByRoute = new Map<string, number>();
  private readonly lidByGuid = new Map<bigint, number>();
  private readonly pathAnswers: PathAnswer[] = [];
  /** MAD requests seen (answerable methods only). */
  requests = 0;
  /** MAD responses seen. */
  responses = 0;
  /** Responses at the capture's start, before any request of their class (not judged). */
  unpairedAtStart = 0;
  /** Management classes of which a request has been seen. */
  private readonly requestClasses = new Set<number>();

  /** A checker reporting into `log`. */
  constructor(private readonly log: ViolationLog) {}

  /** Look at an RDMA packet `p` of frame `index` (`data` is the frame's bytes). */
  onPacket(data: Uint8Array, p: Packet, index: number): void {
    if (p.lrh && p.lrh.slid !== PERMISSIVE_LID && p.lrh.slid !== 0) this.seenLids.add(p.lrh.slid);
    if (!p.mad || !p.deth || !p.bth || p.mad.header.baseVersion !== 1) return;
    const full = data.slice(p.payloadOffset, p.payloadOffset + MAD_BYTES);
    const h = p.mad.header;
    const flow = frameFlow(p);
    this.checkPlacement(p, h, index, flow);
    const isResponse = (h.method & 0x80) !== 0;
    const smp = isSmpClass(h.mgmtClass) ? decodeSmp(full) : undefined;
    if (smp) this.checkSmp(smp, isResponse, index, flow);
    if (isResponse) this.onResponse(p, full, h, smp, index, flow);
    else if (RESPONSE_OF.has(h.method)) this.onRequest(p, full, h, smp, index, flow);
  }

  /** End of capture: judge the deferred PathRecord LIDs; returns the unanswered transactions. */
  finish(): number {
    for (const [route, guid] of this.guidByRoute) {
      const lid = this.lidByRoute.get(route);
      if (lid !== undefined) this.lidByGuid.set(guid, lid);
    }
    const known = new Set([...this.seenLids, ...this.assignedLids]);
    for (const a of this.pathAnswers) {
      for (
        const [what, lid, gid] of [["DLID", a.dlid, a.dgid], ["SLID", a.slid, a.sgid]] as const
      ) {
        if (!known.has(lid)) {
          this.log.report(
            a.index,
            a.flow,
            "sa-semantics",
            `PathRecord ${what} ${lid}: no port has that LID (none was assigned by a ` +
              `SubnSet(PortInfo) and no frame came from it)`,
          );
          continue;
        }
        const guid = gidGuid(gid);
        const want = this.lidByGuid.get(guid);
        if (want !== undefined && want !== lid) {
          this.log.report(
            a.index,
            a.flow,
            "sa-semantics",
            `PathRecord ${what} ${lid}, but ${ipv6ToString(gid)} is the port with LID ${want}`,
          );
        }
      }
    }
    let unanswered = 0;
    for (const t of this.txns.values()) if (t.answers === 0) unanswered++;
    return unanswered;
  }

  /** Which QPs, Q_Keys and class versions each class travels with. */
  private checkPlacement(p: Packet, h: MadHeader, index: number, flow: string): void {
    const dst = p.bth!.destQp;
    const src = p.deth!.srcQp;
    const isResponse = (h.method & 0x80) !== 0;
    if (isSmpClass(h.mgmtClass)) {
      if (dst !== 0 || src !== 0) {
        this.log.report(
          index,
          flow,
          "smp-semantics",
          `SMP (class ${hex(h.mgmtClass, 2)}) from QP${src} to QP${dst}; SMPs go from QP0 to QP0`,
        );
      }
      if (h.classVersion !== 1) {
        this.log.report(index, flow, "smp-semantics", `SMP class version ${h.classVersion}, not 1`);
      }
    } else if (dst === 0) {
      this.log.report(
        index,
        flow,
        "smp-semantics",
        `QP0 carries only SMPs (class 0x01/0x81), got class ${hex(h.mgmtClass, 2)}`,
      );
      return; // what else is wrong with it follows from being on QP0
    }
    if (h.mgmtClass === MGMT_CLASS.SUBN_ADM) {
      const qp = isResponse ? src : dst;
      if (qp !== 1) {
        this.log.report(
          index,
          flow,
          "sa-semantics",
          `SA ${isResponse ? "response from" : "request to"} QP${qp}; the SA is on QP1`,
        );
      }
      if (dst !== 1 && p.deth!.qkey !== GSI_QKEY) {
        // QP1's own Q_Key is the management rule's.
        this.log.report(
          index,
          flow,
          "sa-semantics",
          `SA MAD with Q_Key ${hex(p.deth!.qkey, 8)}; GSI MADs use 0x80010000`,
        );
      }
      if (h.classVersion !== 2) {
        this.log.report(index, flow, "sa-semantics", `SA class version ${h.classVersion}, not 2`);
      }
    }
    if (h.mgmtClass === MGMT_CLASS.PERF && h.classVersion !== 1) {
      this.log.report(index, flow, "pma-semantics", `PMA class version ${h.classVersion}, not 1`);
    }
  }

  /** M_Key and the directed-route fields every SMP must get right on its own. */
  private checkSmp(smp: Smp, isResponse: boolean, index: number, flow: string): void {
    const h = smp.header;
    if (!this.mKeys.has(smp.mKey)) {
      this.log.report(
        index,
        flow,
        "smp-semantics",
        `SMP with M_Key ${hex(smp.mKey, 16)}; the SM set no such M_Key (M_Key 0 otherwise)`,
      );
    }
    if (h.mgmtClass !== MGMT_CLASS.SUBN_DIRECTED_ROUTE) return;
    const d = drDirection(h);
    if (d !== (isResponse ? 1 : 0)) {
      this.log.report(
        index,
        flow,
        "smp-semantics",
        `directed-route ${isResponse ? "response" : "request"} ${
          methodName(h.method)
        } with D=${d}; ` +
          `requests go out with D=0, responses return with D=1`,
      );
    }
    if (drHopCount(h) > 63) {
      this.log.report(index, flow, "smp-semantics", `hop count ${drHopCount(h)} exceeds 63`);
    }
    if (drHopPointer(h) > drHopCount(h) + 1) {
      this.log.report(
        index,
        flow,
        "smp-semantics",
        `hop pointer ${drHopPointer(h)} beyond hop count ${drHopCount(h)} + 1`,
      );
    }
  }

  /** The transaction key of a MAD: class, attribute, TID and who talks to whom. */
  private key(p: Packet, h: MadHeader, smp: Smp | undefined, isResponse: boolean): string {
    return `${h.mgmtClass}|${h.attributeId}|${h.transactionId}|${this.route(p, smp, isResponse)}`;
  }

  /**
   * Who the transaction is between, as the request sees it. A directed-route
   * SMP is named by its path (the switch output ports of its initial path):
   * its LRH LIDs are permissive, so they name nobody.
   */
  private route(p: Packet, smp: Smp | undefined, isResponse: boolean): string {
    if (smp && smp.header.mgmtClass === MGMT_CLASS.SUBN_DIRECTED_ROUTE) return drRoute(smp);
    const [s, d] = endpoints(p);
    const src = `${s} QP${p.deth!.srcQp}`;
    const dst = `${d} QP${p.bth!.destQp}`;
    return isResponse ? `${dst} > ${src}` : `${src} > ${dst}`;
  }

  /** The responder's identity for what is learned about ports (GUIDs, LIDs). */
  private responder(p: Packet, smp: Smp | undefined): string {
    if (smp && smp.header.mgmtClass === MGMT_CLASS.SUBN_DIRECTED_ROUTE) return drRoute(smp);
    return endpoints(p)[0];
  }

  private onRequest(
    p: Packet,
    full: Uint8Array,
    h: MadHeader,
    smp: Smp | undefined,
    index: number,
    flow: string,
  ): void {
    this.requests++;
    this.requestClasses.add(h.mgmtClass);
    const status = h.mgmtClass === MGMT_CLASS.SUBN_DIRECTED_ROUTE ? h.status & 0x7fff : h.status;
    if (status !== 0) {
      this.log.report(
        index,
        flow,
        "mad-pairing",
        `request ${methodName(h.method)} ${attrName(h)} carries status ${hex(h.status, 4)}; ` +
          `requests carry status 0`,
      );
    }
    if (smp && h.method === M.SET && h.attributeId === SMP_ATTR.PORT_INFO) {
      const pi = decodePortInfo(smp.data);
      if (pi.mKey !== 0n) this.mKeys.add(pi.mKey);
    }
    const key = this.key(p, h, smp, false);
    const t = this.txns.get(key);
    if (t) {
      t.requests++;
      t.mad = full;
      t.header = h;
      t.index = index;
    } else {
      this.txns.set(key, { requests: 1, answers: 0, mad: full, header: h, index });
      const keys = this.keysByTid.get(h.transactionId);
      if (keys) keys.push(key);
      else this.keysByTid.set(h.transactionId, [key]);
    }
  }

  private onResponse(
    p: Packet,
    full: Uint8Array,
    h: MadHeader,
    smp: Smp | undefined,
    index: number,
    flow: string,
  ): void {
    this.responses++;
    const what = `${methodName(h.method)} ${attrName(h)} TID ${hex(h.transactionId, 16)}`;
    const t = this.txns.get(this.key(p, h, smp, true));
    if (!t && !this.requestClasses.has(h.mgmtClass)) {
      this.unpairedAtStart++;
      return;
    }
    if (!t) {
      const others = this.keysByTid.get(h.transactionId);
      this.log.report(
        index,
        flow,
        "mad-pairing",
        `${what} answers no earlier request ` +
          (others
            ? `of that class and attribute between these endpoints (requests with this TID: ${
              others.map(describeKey).join("; ")
            })`
            : "(no request had this TransactionID)"),
      );
      return;
    }
    if (t.answers >= t.requests) {
      this.log.report(
        index,
        flow,
        "mad-pairing",
        `${what} answers a request already answered (${t.requests} sent, ${t.answers + 1} answers)`,
      );
    }
    t.answers++;
    const req = t.header;
    const want = RESPONSE_OF.get(req.method)!;
    if (h.method !== want) {
      this.log.report(
        index,
        flow,
        "mad-pairing",
        `${methodName(h.method)} answers ${methodName(req.method)}; its answer is ${
          methodName(want)
        }`,
      );
    }
    const rule = classRule(h.mgmtClass);
    const statusProblems = madStatusProblems(h);
    for (const s of statusProblems) this.log.report(index, flow, rule, `${what}: ${s}`);
    if (smp) {
      const reqSmp = decodeSmp(t.mad);
      this.checkSmpPair(reqSmp, smp, index, flow);
      const status = h.mgmtClass === MGMT_CLASS.SUBN_DIRECTED_ROUTE ? h.status & 0x7fff : h.status;
      if (status === 0 && statusProblems.length === 0) {
        this.checkSmpAttribute(p, reqSmp, smp, index, flow);
      }
    } else if (h.status === 0) {
      if (h.mgmtClass === MGMT_CLASS.SUBN_ADM) this.checkSaAnswer(t.mad, full, index, flow);
      if (h.mgmtClass === MGMT_CLASS.PERF) this.checkPmaAnswer(t.mad, full, index, flow);
    }
  }

  /** A directed-route answer retraces its request; any SMP answer keeps its attribute modifier. */
  private checkSmpPair(req: Smp, resp: Smp, index: number, flow: string): void {
    const bad = (m: string) => this.log.report(index, flow, "smp-semantics", m);
    if (resp.header.attributeModifier !== req.header.attributeModifier) {
      bad(
        `${attrName(resp.header)} answer has attribute modifier ${
          hex(resp.header.attributeModifier, 8)
        }, its request ${hex(req.header.attributeModifier, 8)}`,
      );
    }
    if (resp.header.mgmtClass !== MGMT_CLASS.SUBN_DIRECTED_ROUTE) return;
    const hc = drHopCount(resp.header);
    if (hc !== drHopCount(req.header)) {
      bad(`directed-route answer has hop count ${hc}, its request ${drHopCount(req.header)}`);
    }
    if (resp.drSlid !== req.drSlid || resp.drDlid !== req.drDlid) {
      bad(
        `directed-route answer has DrSLID/DrDLID ${resp.drSlid}/${resp.drDlid}, ` +
          `its request ${req.drSlid}/${req.drDlid}`,
      );
    }
    for (let i = 1; i <= Math.min(hc, 63); i++) {
      if (req.returnPath[i] !== 0 && resp.returnPath[i] !== req.returnPath[i]) {
        bad(
          `directed-route answer's return path hop ${i} is port ${resp.returnPath[i]}, ` +
            `its request recorded port ${req.returnPath[i]}`,
        );
        break;
      }
    }
  }

  private checkSmpAttribute(p: Packet, req: Smp, resp: Smp, index: number, flow: string): void {
    const h = resp.header;
    const problems: string[] = [];
    const route = this.responder(p, resp);
    switch (h.attributeId) {
      case SMP_ATTR.NODE_INFO: {
        const ni = decodeNodeInfo(resp.data);
        if (ni.baseVersion !== 1 || ni.classVersion !== 1) {
          problems.push(`BaseVersion/ClassVersion ${ni.baseVersion}/${ni.classVersion}, not 1/1`);
        }
        if (ni.nodeType === 1) {
          if (ni.numPorts !== 1) {
            problems.push(`a channel adapter with NumPorts ${ni.numPorts}, not 1`);
          }
          if (ni.localPortNum < 1 || ni.localPortNum > ni.numPorts) {
            problems.push(`LocalPortNum ${ni.localPortNum} is not one of its ${ni.numPorts} ports`);
          }
        } else if (ni.nodeType === 2) {
          if (ni.numPorts < 1) problems.push(`a switch with NumPorts ${ni.numPorts}`);
        } else {
          problems.push(`NodeType ${ni.nodeType} (1 = channel adapter, 2 = switch)`);
        }
        if (ni.nodeGuid === 0n) problems.push("NodeGUID 0");
        if (ni.portGuid === 0n) problems.push("PortGUID 0");
        if (problems.length === 0) {
          this.guidByRoute.set(route, ni.portGuid);
          if (h.mgmtClass === MGMT_CLASS.SUBN_LID_ROUTED && p.lrh) {
            this.lidByGuid.set(ni.portGuid, p.lrh.slid);
          }
        }
        break;
      }
      case SMP_ATTR.PORT_INFO:
        problems.push(...this.portInfoProblems(req, resp, route));
        break;
      case SMP_ATTR.GUID_INFO: {
        if (h.attributeModifier !== 0) break;
        const g0 = decodeGuidInfo(resp.data)[0];
        const port = this.guidByRoute.get(route);
        if (g0 === 0n) problems.push("block 0 entry 0 (the port GUID) is 0");
        else if (port !== undefined && g0 !== port) {
          problems.push(`entry 0 is ${hex(g0, 16)}, but NodeInfo said PortGUID ${hex(port, 16)}`);
        }
        break;
      }
      case SMP_ATTR.PKEY_TABLE: {
        if (h.attributeModifier !== 0) break;
        const k0 = decodePKeyTable(resp.data)[0];
        if ((k0 & 0x7fff) !== 0x7fff) {
          problems.push(`entry 0 is ${hex(k0, 4)}, not the default partition 0xffff/0x7fff`);
        }
        break;
      }
      case SMP_ATTR.SM_INFO: {
        const si = decodeSmInfo(resp.data);
        if (si.guid === 0n) problems.push("GUID 0");
        if (si.smState > 3) problems.push(`SMState ${si.smState} (0..3)`);
        break;
      }
    }
    for (const m of problems) {
      this.log.report(index, flow, "smp-semantics", `${attrName(h)} GetResp: ${m}`);
    }
  }

  /** A PortInfo answer: sane values, and a Set's answer reflects what was set. */
  private portInfoProblems(req: Smp, resp: Smp, route: string): string[] {
    const out: string[] = [];
    const pi = decodePortInfo(resp.data);
    if (pi.portState < PORT_STATE.DOWN || pi.portState > PORT_STATE.ACTIVE) {
      out.push(`PortState ${pi.portState} (1..4)`);
    }
    if (pi.neighborMtu < 1 || pi.neighborMtu > 5) out.push(`NeighborMTU ${pi.neighborMtu} (1..5)`);
    if (pi.mtuCap < 1 || pi.mtuCap > 5) out.push(`MTUCap ${pi.mtuCap} (1..5)`);
    if (pi.portState >= PORT_STATE.ARMED && (pi.lid === 0 || pi.lid >= MULTICAST_LID_MIN)) {
      out.push(`PortState ${pi.portState} with LID ${pi.lid}, which no unicast port can have`);
    }
    if (req.header.method !== M.SET) return out;
    const set: PortInfo = decodePortInfo(req.data);
    const echo = (name: string, got: number | bigint, want: number | bigint) => {
      if (got !== want) out.push(`${name} is ${got} after a Set of ${want}`);
    };
    echo("LID", pi.lid, set.lid);
    echo("MasterSMLID", pi.masterSmLid, set.masterSmLid);
    echo("SubnetPrefix", pi.gidPrefix, set.gidPrefix);
    echo("LMC", pi.lmc, set.lmc);
    if (set.portState !== PORT_STATE.NO_CHANGE) echo("PortState", pi.portState, set.portState);
    if (out.length === 0) {
      this.lidByRoute.set(route, pi.lid);
      if (pi.lid !== 0) this.assignedLids.add(pi.lid);
      if (pi.masterSmLid !== 0) this.assignedLids.add(pi.masterSmLid);
    }
    return out;
  }

  /** A successful SA answer: ClassPortInfo, PathRecord or MCMemberRecord. */
  private checkSaAnswer(
    reqMad: Uint8Array,
    respMad: Uint8Array,
    index: number,
    flow: string,
  ): void {
    const req = decodeSaMad(reqMad);
    const resp = decodeSaMad(respMad);
    const h = resp.header;
    const problems: string[] = [];
    const asked = (bit: bigint) => (req.componentMask & bit) !== 0n;
    if (h.method === M.GET_TABLE_RESP) return; // RMPP-segmented records: not judged here
    switch (h.attributeId) {
      case SA_ATTR.CLASS_PORT_INFO:
        if (resp.data[0] !== 1 || resp.data[1] !== 2) {
          problems.push(`BaseVersion/ClassVersion ${resp.data[0]}/${resp.data[1]}, not 1/2`);
        }
        break;
      case SA_ATTR.PATH_RECORD: {
        const q = decodePathRecord(req.data);
        const a = decodePathRecord(resp.data);
        const gid = (name: string, bit: bigint, got: Uint8Array, want: Uint8Array) => {
          if (asked(bit) && !sameBytes(got, want)) {
            problems.push(`${name} ${ipv6ToString(got)}, but ${ipv6ToString(want)} was asked`);
          }
        };
        gid("SGID", PATH_COMP.SGID, a.sgid, q.sgid);
        gid("DGID", PATH_COMP.DGID, a.dgid, q.dgid);
        if (asked(PATH_COMP.DLID) && a.dlid !== q.dlid) {
          problems.push(`DLID ${a.dlid}, asked ${q.dlid}`);
        }
        if (asked(PATH_COMP.SLID) && a.slid !== q.slid) {
          problems.push(`SLID ${a.slid}, asked ${q.slid}`);
        }
        if (asked(PATH_COMP.PKEY) && a.pkey !== q.pkey) {
          problems.push(`P_Key ${hex(a.pkey, 4)}, asked ${hex(q.pkey, 4)}`);
        }
        if (a.mtu < 1 || a.mtu > 5) problems.push(`MTU ${a.mtu} (1..5)`);
        if (a.rate < 2 || a.rate > 22) problems.push(`Rate ${a.rate} is no IB rate (2..22)`);
        for (const [w, lid] of [["DLID", a.dlid], ["SLID", a.slid]] as const) {
          if (lid === 0 || lid >= MULTICAST_LID_MIN) problems.push(`${w} ${lid} is no unicast LID`);
        }
        if (problems.length === 0) {
          this.pathAnswers.push({
            index,
            flow,
            dlid: a.dlid,
            slid: a.slid,
            dgid: a.dgid,
            sgid: a.sgid,
          });
        }
        break;
      }
      case SA_ATTR.MC_MEMBER_RECORD: {
        const q = decodeMcMemberRecord(req.data);
        const a = decodeMcMemberRecord(resp.data);
        if (a.mgid[0] !== 0xff) {
          problems.push(`MGID ${ipv6ToString(a.mgid)} is not a multicast GID`);
        }
        if (asked(MCM_COMP.MGID) && q.mgid.some((x) => x !== 0) && !sameBytes(a.mgid, q.mgid)) {
          problems.push(`MGID ${ipv6ToString(a.mgid)}, asked ${ipv6ToString(q.mgid)}`);
        }
        if (asked(MCM_COMP.PORT_GID) && !sameBytes(a.portGid, q.portGid)) {
          problems.push(`PortGID ${ipv6ToString(a.portGid)}, asked ${ipv6ToString(q.portGid)}`);
        }
        if (a.mlid < MULTICAST_LID_MIN || a.mlid === PERMISSIVE_LID) {
          problems.push(`MLID ${hex(a.mlid, 4)} is not a multicast LID (0xc000..0xfffe)`);
        }
        if (asked(MCM_COMP.PKEY) && a.pkey !== q.pkey) {
          problems.push(`P_Key ${hex(a.pkey, 4)}, asked ${hex(q.pkey, 4)}`);
        }
        if (req.header.method === M.SET && a.joinState === 0) {
          problems.push("JoinState 0 after a join");
        }
        break;
      }
    }
    for (const m of problems) {
      this.log.report(index, flow, "sa-semantics", `${attrName(h)} ${methodName(h.method)}: ${m}`);
    }
  }

  /** A successful PortCounters(Extended) answer is for the port that was asked. */
  private checkPmaAnswer(
    reqMad: Uint8Array,
    respMad: Uint8Array,
    index: number,
    flow: string,
  ): void {
    const attr = (respMad[16] << 8) | respMad[17];
    if (attr !== PMA_ATTR.PORT_COUNTERS && attr !== PMA_ATTR.PORT_COUNTERS_EXTENDED) return;
    const want = reqMad[PMA_DATA_OFFSET + 1];
    const got = respMad[PMA_DATA_OFFSET + 1];
    if (got !== want) {
      this.log.report(
        index,
        flow,
        "pma-semantics",
        `${attr === PMA_ATTR.PORT_COUNTERS ? "PortCounters" : "PortCountersExtended"} answer ` +
          `for PortSelect ${got}, but port ${want} was asked`,
      );
    }
  }
}

/** A directed-route SMP's path: the output ports of its initial path, hops 1..hop count. */
function drRoute(smp: Smp): string {
  const hc = Math.min(drHopCount(smp.header), 63);
  return `directed route [${[...smp.initialPath.subarray(1, hc + 1)].join(",")}]`;
}

/** A transaction key in words, for a diagnosis. */
function describeKey(k: string): string {
  const [cls, attr, , route] = k.split("|");
  return `class ${hex(Number(cls), 2)} attribute ${hex(Number(attr), 4)} ${route}`;
}

/** The interface ID (low 64 bits) of a GID. */
function gidGuid(gid: Uint8Array): bigint {
  let v = 0n;
  for (let i = 8; i < 16; i++) v = (v << 8n) | BigInt(gid[i]);
  return v;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
