/**
 * The checker's management rules (`mad-pairing`, `smp-semantics`,
 * `sa-semantics`, `pma-semantics`) on synthetic native-IB captures built with
 * buildIbFrame: the SM's directed-route discovery of two ports as docs/wire.md
 * describes it, SA PathRecord and MCMemberRecord exchanges and a PMA query
 * pass; each planted fault is caught by exactly the rule it breaks, with a
 * message naming it. Every test checks the conforming capture first, so a
 * rule that never fires, or fires on everything, fails.
 */
import assert from "node:assert/strict";
import * as r from "../../harness/models/rdma/mod.ts";

const SM_LID = 1;
const PREFIX = 0xfe80_0000_0000_0000n;
/** Two end ports: switch port, port GUID, LID the SM gives it. */
const NODES = [
  { port: 1, guid: 0x0200_00ff_fe00_0001n, lid: 2 },
  { port: 2, guid: 0x0200_00ff_fe00_0002n, lid: 3 },
] as const;

function gid(guid: bigint, prefix = PREFIX): Uint8Array {
  const b = new Uint8Array(16);
  r.wr64(b, 0, prefix);
  r.wr64(b, 8, guid);
  return b;
}

function header(over: Partial<r.MadHeader>): r.MadHeader {
  return {
    baseVersion: 1,
    mgmtClass: r.MGMT_CLASS.SUBN_DIRECTED_ROUTE,
    classVersion: 1,
    method: r.MAD_METHOD.GET,
    status: 0,
    classSpecific: 0,
    transactionId: 1n,
    attributeId: r.SMP_ATTR.NODE_INFO,
    reserved: 0,
    attributeModifier: 0,
    ...over,
  };
}

interface DrOpts {
  method: number;
  attr: number;
  tid: bigint;
  port: number;
  data?: Uint8Array;
  attrMod?: number;
  /** Override D (default: 0 for requests, 1 for responses). */
  d?: number;
  status?: number;
  hopCount?: number;
  mKey?: bigint;
  slid?: number;
}

/** A directed-route SMP one hop out through switch port `port`, as docs/wire.md has it. */
function dr(o: DrOpts): Uint8Array {
  const response = (o.method & 0x80) !== 0;
  const hc = o.hopCount ?? 1;
  const initialPath = new Uint8Array(64);
  initialPath[1] = o.port;
  const data = new Uint8Array(64);
  if (o.data) data.set(o.data);
  const smp = r.encodeSmp({
    header: header({
      method: o.method,
      attributeId: o.attr,
      transactionId: o.tid,
      attributeModifier: o.attrMod ?? 0,
      ...r.drHeaderFields(o.d ?? (response ? 1 : 0), o.status ?? 0, 1, hc),
    }),
    mKey: o.mKey ?? 0n,
    drSlid: 0xffff,
    drDlid: 0xffff,
    data,
    initialPath,
    returnPath: new Uint8Array(64),
  });
  return r.buildIbFrame({
    lrh: { dlid: 0xffff, slid: o.slid ?? 0xffff, vl: 15 },
    bth: { opcode: r.OP.UD_SEND_ONLY, destQp: 0, psn: 0 },
    deth: { qkey: 0, reserved8: 0, srcQp: 0 },
    payload: smp,
  });
}

function nodeInfo(guid: bigint, over: Partial<r.NodeInfo> = {}): Uint8Array {
  return r.encodeNodeInfo({
    baseVersion: 1,
    classVersion: 1,
    nodeType: 1,
    numPorts: 1,
    systemImageGuid: guid,
    nodeGuid: guid,
    portGuid: guid,
    partitionCap: 1,
    deviceId: 0x1234,
    revision: 1,
    localPortNum: 1,
    vendorId: 0x1af4,
    ...over,
  });
}

/** A PortInfo with every field in range; `over` replaces any. */
function portInfo(over: Partial<r.PortInfo> = {}): Uint8Array {
  const zero = r.decodePortInfo(new Uint8Array(64));
  return r.encodePortInfo({
    ...zero,
    gidPrefix: PREFIX,
    portState: r.PORT_STATE.INIT,
    portPhysicalState: 5,
    neighborMtu: 5,
    mtuCap: 5,
    localPortNum: 1,
    ...over,
  });
}

let tidSeq = 0x100n;

/** The SM's discovery and configuration of one end port (docs/wire.md, ib_common sequence). */
function discover(n: (typeof NODES)[number]): Uint8Array[] {
  const f: Uint8Array[] = [];
  const ex = (attr: number, method: number, req: Uint8Array, resp: Uint8Array, attrMod = 0) => {
    const tid = tidSeq++;
    f.push(dr({ method, attr, tid, port: n.port, data: req, attrMod }));
    f.push(dr({ method: r.MAD_METHOD.GET_RESP, attr, tid, port: n.port, data: resp, attrMod }));
  };
  const G = r.MAD_METHOD.GET;
  const S = r.MAD_METHOD.SET;
  ex(r.SMP_ATTR.NODE_INFO, G, new Uint8Array(0), nodeInfo(n.guid));
  ex(r.SMP_ATTR.NODE_DESCRIPTION, G, new Uint8Array(0), new TextEncoder().encode("guest"));
  ex(r.SMP_ATTR.PORT_INFO, G, new Uint8Array(0), portInfo(), 1);
  const set = { lid: n.lid, masterSmLid: SM_LID, subnetTimeout: 18 };
  ex(r.SMP_ATTR.PORT_INFO, S, portInfo({ ...set, portState: 0 }), portInfo(set), 1);
  const armed = { ...set, portState: r.PORT_STATE.ARMED };
  ex(r.SMP_ATTR.PORT_INFO, S, portInfo(armed), portInfo(armed), 1);
  const active = { ...set, portState: r.PORT_STATE.ACTIVE };
  ex(r.SMP_ATTR.PORT_INFO, S, portInfo(active), portInfo(active), 1);
  ex(
    r.SMP_ATTR.PKEY_TABLE,
    G,
    new Uint8Array(0),
    r.encodePKeyTable([0xffff, ...Array(31).fill(0)]),
  );
  ex(r.SMP_ATTR.GUID_INFO, G, new Uint8Array(0), r.encodeGuidInfo([n.guid, ...Array(7).fill(0n)]));
  return f;
}

interface GsiOpts {
  cls: number;
  method: number;
  attr: number;
  tid: bigint;
  /** Requester LID (the SA is at SM_LID). */
  lid: number;
  data?: Uint8Array;
  mask?: bigint;
  status?: number;
  classVersion?: number;
  srcQp?: number;
  destQp?: number;
  qkey?: number;
}

/** A GSI MAD between a requester at `lid` (QP1) and the SM LID (QP1), direction by method. */
function gsi(o: GsiOpts): Uint8Array {
  const response = (o.method & 0x80) !== 0;
  const h = header({
    mgmtClass: o.cls,
    classVersion: o.classVersion ?? (o.cls === r.MGMT_CLASS.SUBN_ADM ? 2 : 1),
    method: o.method,
    attributeId: o.attr,
    transactionId: o.tid,
    status: o.status ?? 0,
  });
  let mad: Uint8Array;
  if (o.cls === r.MGMT_CLASS.SUBN_ADM) {
    mad = r.encodeSaMad({
      header: h,
      smKey: 0n,
      componentMask: o.mask ?? 0n,
      data: o.data ?? new Uint8Array(0),
    });
  } else {
    mad = new Uint8Array(256);
    r.encodeMadHeader(h, mad, 0);
    if (o.data) mad.set(o.data, r.PMA_DATA_OFFSET);
  }
  return r.buildIbFrame({
    lrh: response ? { dlid: o.lid, slid: SM_LID } : { dlid: SM_LID, slid: o.lid },
    bth: { opcode: r.OP.UD_SEND_ONLY, destQp: o.destQp ?? 1, psn: 0 },
    deth: { qkey: o.qkey ?? r.GSI_QKEY, reserved8: 0, srcQp: o.srcQp ?? 1 },
    payload: mad,
  });
}

function pathRecord(over: Partial<r.PathRecord> = {}): Uint8Array {
  return r.encodePathRecord({
    serviceId: 0n,
    dgid: new Uint8Array(16),
    sgid: new Uint8Array(16),
    dlid: 0,
    slid: 0,
    rawTraffic: 0,
    reserved353: 0,
    flowLabel: 0,
    hopLimit: 0,
    tClass: 0,
    reversible: 0,
    numbPath: 0,
    pkey: 0,
    qosClass: 0,
    sl: 0,
    mtuSelector: 0,
    mtu: 0,
    rateSelector: 0,
    rate: 0,
    packetLifeTimeSelector: 0,
    packetLifeTime: 0,
    preference: 0,
    ...over,
  });
}

/** Node 0 asks the SA for the path to node 1, and gets `answer` (default: the right one). */
function pathQuery(tid: bigint, answer: Partial<r.PathRecord> = {}): Uint8Array[] {
  const [a, b] = NODES;
  const ask = { sgid: gid(a.guid), dgid: gid(b.guid), numbPath: 1, reversible: 1 };
  const mask = r.PATH_COMP.SGID | r.PATH_COMP.DGID;
  const A = r.SA_ATTR.PATH_RECORD;
  const C = r.MGMT_CLASS.SUBN_ADM;
  const good = {
    ...ask,
    dlid: b.lid,
    slid: a.lid,
    pkey: 0xffff,
    mtuSelector: 2,
    mtu: 5,
    rateSelector: 2,
    rate: 16,
    packetLifeTimeSelector: 2,
    packetLifeTime: 18,
  };
  return [
    gsi({
      cls: C,
      method: r.MAD_METHOD.GET,
      attr: A,
      tid,
      lid: a.lid,
      data: pathRecord(ask),
      mask,
    }),
    gsi({
      cls: C,
      method: r.MAD_METHOD.GET_RESP,
      attr: A,
      tid,
      lid: a.lid,
      data: pathRecord({ ...good, ...answer }),
      mask,
    }),
  ];
}

const BCAST_MGID = r.hexToBytes("ff12401bffff000000000000ffffffff");

function mcm(over: Partial<r.McMemberRecord> = {}): Uint8Array {
  return r.encodeMcMemberRecord({
    mgid: BCAST_MGID,
    portGid: gid(NODES[0].guid),
    qkey: 0,
    mlid: 0,
    mtuSelector: 0,
    mtu: 0,
    tClass: 0,
    pkey: 0xffff,
    rateSelector: 0,
    rate: 0,
    packetLifeTimeSelector: 0,
    packetLifeTime: 0,
    sl: 0,
    flowLabel: 0,
    hopLimit: 0,
    scope: 2,
    joinState: 1,
    proxyJoin: 0,
    reserved393: 0,
    ...over,
  });
}

/** Node 0 joins the IPoIB broadcast group and gets `answer` (default: MLID 0xC000). */
function join(tid: bigint, answer: Partial<r.McMemberRecord> = {}): Uint8Array[] {
  const mask = r.MCM_COMP.MGID | r.MCM_COMP.PORT_GID | r.MCM_COMP.JOIN_STATE | r.MCM_COMP.PKEY;
  const base = {
    cls: r.MGMT_CLASS.SUBN_ADM,
    attr: r.SA_ATTR.MC_MEMBER_RECORD,
    tid,
    lid: NODES[0].lid,
    mask,
  };
  return [
    gsi({ ...base, method: r.MAD_METHOD.SET, data: mcm() }),
    gsi({
      ...base,
      method: r.MAD_METHOD.GET_RESP,
      data: mcm({ qkey: 0xb1b, mlid: 0xc000, mtu: 4, rate: 3, ...answer }),
    }),
  ];
}

/** Node 0 reads port 1's PortCounters from the PMA at the SM LID; the answer names `answerPort`. */
function counters(tid: bigint, answerPort = 1): Uint8Array[] {
  const base = { cls: r.MGMT_CLASS.PERF, attr: r.PMA_ATTR.PORT_COUNTERS, tid, lid: NODES[0].lid };
  return [
    gsi({ ...base, method: r.MAD_METHOD.GET, data: new Uint8Array([0, 1]) }),
    gsi({ ...base, method: r.MAD_METHOD.GET_RESP, data: new Uint8Array([0, answerPort]) }),
  ];
}

function check(frames: Uint8Array[]): r.CheckResult {
  return r.checkCapture(frames.map((data) => ({ data, linkType: r.LINKTYPE_INFINIBAND })));
}

function rules(res: r.CheckResult): string[] {
  return [...new Set(res.violations.map((v) => v.rule))].sort();
}

/** The whole conforming fabric bring-up: both ports discovered, a path, a join, a counter read. */
function fabric(): Uint8Array[] {
  return [
    ...discover(NODES[0]),
    ...discover(NODES[1]),
    ...pathQuery(0x900n),
    ...join(0x901n),
    ...counters(0x902n),
  ];
}

/** `good` passes clean; `bad` breaks exactly `rule`, and some message matches `msg`. */
function goodThenBad(
  good: Uint8Array[],
  bad: Uint8Array[],
  rule: string,
  msg: RegExp,
): r.CheckResult {
  const g = check(good);
  assert.deepEqual(g.violations, [], "the conforming capture must pass");
  const res = check(bad);
  assert.deepEqual(rules(res), [rule], JSON.stringify(res.violations, null, 1));
  assert.ok(
    res.violations.some((v) => msg.test(v.message)),
    `no message matches ${msg}: ${res.violations.map((v) => v.message).join(" | ")}`,
  );
  return res;
}

/** Frame `i` of `frames` replaced by `f`. */
function replaced(frames: Uint8Array[], i: number, f: Uint8Array): Uint8Array[] {
  return frames.map((x, j) => (j === i ? f : x));
}

// ---- conforming traffic -----------------------------------------------------------------------

Deno.test("the SM's discovery of two ports, a PathRecord, a broadcast join and a PMA read are clean", () => {
  const frames = fabric();
  const res = check(frames);
  assert.deepEqual(res.violations, []);
  assert.equal(res.madRequests, frames.length / 2);
  assert.equal(res.madResponses, frames.length / 2);
  assert.equal(res.unanswered, 0);
});

Deno.test("a request never answered is counted as unanswered, not reported; a retry answered once is answered", () => {
  const f = discover(NODES[0]);
  const lone = dr({ method: r.MAD_METHOD.GET, attr: r.SMP_ATTR.NODE_INFO, tid: 0x77n, port: 5 });
  const res = check([lone, lone, lone, ...f]);
  assert.deepEqual(res.violations, []);
  assert.equal(res.unanswered, 1);
  // The first request of node 0 sent three times (a retried SMP keeps its TID), answered once.
  const retried = check([f[0], f[0], ...f]);
  assert.deepEqual(retried.violations, []);
  assert.equal(retried.unanswered, 0);
});

// ---- mad-pairing --------------------------------------------------------------------------------

Deno.test("mad-pairing: a response with a wrong TID answers nothing, and its request stays unanswered", () => {
  const good = discover(NODES[0]);
  const wrong = dr({
    method: r.MAD_METHOD.GET_RESP,
    attr: r.SMP_ATTR.NODE_INFO,
    tid: 0xdeadn,
    port: 1,
    data: nodeInfo(NODES[0].guid),
  });
  const res = goodThenBad(
    good,
    replaced(good, 1, wrong),
    "mad-pairing",
    /TID 0x000000000000dead answers no earlier request \(no request had this TransactionID\)/,
  );
  assert.equal(res.unanswered, 1);
});

Deno.test("mad-pairing: a GetResp to nothing, and a GetResp through another switch port, are unpaired", () => {
  const good = discover(NODES[0]);
  const stray = dr({
    method: r.MAD_METHOD.GET_RESP,
    attr: r.SMP_ATTR.NODE_INFO,
    tid: 0x5n,
    port: 1,
    data: nodeInfo(1n),
  });
  goodThenBad(good, [...good, stray], "mad-pairing", /answers no earlier request/);
  // Same TID, but it comes back from switch port 2: the diagnosis names the request's route.
  const tid = r.decodeMadHeader(good[0], 8 + 12 + 8).transactionId;
  const other = dr({
    method: r.MAD_METHOD.GET_RESP,
    attr: r.SMP_ATTR.NODE_INFO,
    tid,
    port: 2,
    data: nodeInfo(1n),
  });
  goodThenBad(
    good,
    replaced(good, 1, other),
    "mad-pairing",
    /requests with this TID: .*directed route \[1\]/,
  );
});

Deno.test("mad-pairing: an answer in the request's own direction pairs with nothing", () => {
  const good = pathQuery(0x900n);
  const [q, a] = good;
  // The request reflected back: SA LID 1 → node, but as a request-shaped key it matches nothing.
  const p = r.decodeFrame(a, r.LINKTYPE_INFINIBAND);
  const same = r.buildIbFrame({
    lrh: { dlid: SM_LID, slid: NODES[0].lid },
    bth: { opcode: r.OP.UD_SEND_ONLY, destQp: 1, psn: 0 },
    deth: { qkey: r.GSI_QKEY, reserved8: 0, srcQp: 1 },
    payload: r.packetPayload(a, p).slice(),
  });
  goodThenBad(
    [...discover(NODES[0]), ...discover(NODES[1]), q, a],
    [...discover(NODES[0]), ...discover(NODES[1]), q, same],
    "mad-pairing",
    /answers no earlier request/,
  );
});

Deno.test("mad-pairing: a second answer to one request, and a Set answered with 0x82, are wrong", () => {
  const good = discover(NODES[0]);
  goodThenBad(good, [...good, good[1]], "mad-pairing", /already answered \(1 sent, 2 answers\)/);
  // frames 6/7 are the first SubnSet(PortInfo) and its GetResp.
  const h = r.decodeSmp(r.packetPayload(good[7], r.decodeFrame(good[7], 247)));
  const bad = dr({
    method: 0x82,
    attr: r.SMP_ATTR.PORT_INFO,
    tid: h.header.transactionId,
    port: 1,
    attrMod: 1,
    data: h.data,
  });
  goodThenBad(
    good,
    replaced(good, 7, bad),
    "mad-pairing",
    /answers SET \(0x02\); its answer is GET_RESP \(0x81\)/,
  );
});

// ---- smp-semantics ------------------------------------------------------------------------------

Deno.test("smp-semantics: a directed-route answer without the D bit", () => {
  const good = discover(NODES[0]);
  const tid = r.decodeMadHeader(good[1], 28).transactionId;
  const noD = dr({
    method: r.MAD_METHOD.GET_RESP,
    attr: r.SMP_ATTR.NODE_INFO,
    tid,
    port: 1,
    d: 0,
    data: nodeInfo(NODES[0].guid),
  });
  goodThenBad(good, replaced(good, 1, noD), "smp-semantics", /response GET_RESP \(0x81\) with D=0/);
});

Deno.test("smp-semantics: a directed-route answer with another hop count or attribute modifier", () => {
  const good = discover(NODES[0]);
  const tid = r.decodeMadHeader(good[5], 28).transactionId;
  const answer = (o: Partial<DrOpts>) =>
    dr({
      method: r.MAD_METHOD.GET_RESP,
      attr: r.SMP_ATTR.PORT_INFO,
      tid,
      port: 1,
      attrMod: 1,
      data: portInfo(),
      ...o,
    });
  assert.deepEqual(check(replaced(good, 5, answer({}))).violations, []);
  goodThenBad(
    good,
    replaced(good, 5, answer({ hopCount: 2 })),
    "mad-pairing",
    /answers no earlier request/,
  );
  goodThenBad(
    good,
    replaced(good, 5, answer({ attrMod: 2 })),
    "smp-semantics",
    /attribute modifier 0x00000002, its request 0x00000001/,
  );
});

Deno.test("smp-semantics: a NodeInfo with NumPorts 0, NodeType 7 or a zero GUID", () => {
  const good = discover(NODES[0]);
  const tid = r.decodeMadHeader(good[1], 28).transactionId;
  const ni = (over: Partial<r.NodeInfo>) =>
    dr({
      method: r.MAD_METHOD.GET_RESP,
      attr: r.SMP_ATTR.NODE_INFO,
      tid,
      port: 1,
      data: nodeInfo(NODES[0].guid, over),
    });
  goodThenBad(good, replaced(good, 1, ni({ numPorts: 0 })), "smp-semantics", /NumPorts 0, not 1/);
  goodThenBad(good, replaced(good, 1, ni({ nodeType: 7 })), "smp-semantics", /NodeType 7/);
  goodThenBad(good, replaced(good, 1, ni({ nodeGuid: 0n })), "smp-semantics", /NodeGUID 0/);
});

Deno.test("smp-semantics: a PortInfo Set whose answer does not echo the LID, the SM LID or the state", () => {
  const good = discover(NODES[0]);
  const tidOf = (i: number) => r.decodeMadHeader(good[i], 28).transactionId;
  const set = { lid: NODES[0].lid, masterSmLid: SM_LID, subnetTimeout: 18 };
  const ans = (i: number, pi: Partial<r.PortInfo>) =>
    dr({
      method: r.MAD_METHOD.GET_RESP,
      attr: r.SMP_ATTR.PORT_INFO,
      tid: tidOf(i),
      port: 1,
      attrMod: 1,
      data: portInfo(pi),
    });
  goodThenBad(
    good,
    replaced(good, 7, ans(7, { ...set, lid: 9 })),
    "smp-semantics",
    /LID is 9 after a Set of 2/,
  );
  goodThenBad(
    good,
    replaced(good, 7, ans(7, { ...set, masterSmLid: 4 })),
    "smp-semantics",
    /MasterSMLID is 4 after a Set of 1/,
  );
  goodThenBad(
    good,
    replaced(good, 11, ans(11, { ...set, portState: r.PORT_STATE.ARMED })),
    "smp-semantics",
    /PortState is 3 after a Set of 4/,
  );
});

Deno.test("smp-semantics: a GUIDInfo that is not NodeInfo's port GUID, and a P_KeyTable without the default P_Key", () => {
  const good = discover(NODES[0]);
  const tidOf = (i: number) => r.decodeMadHeader(good[i], 28).transactionId;
  const guids = dr({
    method: r.MAD_METHOD.GET_RESP,
    attr: r.SMP_ATTR.GUID_INFO,
    tid: tidOf(15),
    port: 1,
    data: r.encodeGuidInfo([0x99n, ...Array(7).fill(0n)]),
  });
  goodThenBad(good, replaced(good, 15, guids), "smp-semantics", /NodeInfo said PortGUID/);
  const pkeys = dr({
    method: r.MAD_METHOD.GET_RESP,
    attr: r.SMP_ATTR.PKEY_TABLE,
    tid: tidOf(13),
    port: 1,
    data: r.encodePKeyTable([0x8001, ...Array(31).fill(0)]),
  });
  goodThenBad(good, replaced(good, 13, pkeys), "smp-semantics", /entry 0 is 0x8001/);
});

Deno.test("smp-semantics: M_Key other than 0 before the SM set one; accepted after a Set installs it", () => {
  const good = discover(NODES[0]);
  const get = (mKey: bigint, tid: bigint) => [
    dr({ method: r.MAD_METHOD.GET, attr: r.SMP_ATTR.NODE_INFO, tid, port: 1, mKey }),
    dr({
      method: r.MAD_METHOD.GET_RESP,
      attr: r.SMP_ATTR.NODE_INFO,
      tid,
      port: 1,
      mKey,
      data: nodeInfo(NODES[0].guid),
    }),
  ];
  goodThenBad(
    good,
    [...good, ...get(0x42n, 0x600n)],
    "smp-semantics",
    /M_Key 0x0000000000000042; the SM set no such M_Key/,
  );
  const set = { lid: NODES[0].lid, masterSmLid: SM_LID, mKey: 0x42n };
  const install = [
    dr({
      method: r.MAD_METHOD.SET,
      attr: r.SMP_ATTR.PORT_INFO,
      tid: 0x601n,
      port: 1,
      attrMod: 1,
      data: portInfo({ ...set, portState: 0 }),
    }),
    dr({
      method: r.MAD_METHOD.GET_RESP,
      attr: r.SMP_ATTR.PORT_INFO,
      tid: 0x601n,
      port: 1,
      attrMod: 1,
      data: portInfo(set),
    }),
  ];
  assert.deepEqual(check([...good, ...install, ...get(0x42n, 0x602n)]).violations, []);
});

Deno.test("smp-semantics: reserved status bits, a request with a status, SMPs off QP0, other classes on QP0", () => {
  const good = discover(NODES[0]);
  const tid = r.decodeMadHeader(good[1], 28).transactionId;
  const st = (status: number) =>
    dr({
      method: r.MAD_METHOD.GET_RESP,
      attr: r.SMP_ATTR.NODE_INFO,
      tid,
      port: 1,
      status,
      data: nodeInfo(NODES[0].guid),
    });
  goodThenBad(good, replaced(good, 1, st(0x0020)), "smp-semantics", /reserved bits 7\.\.5/);
  goodThenBad(
    good,
    replaced(good, 1, st(0x0010)),
    "smp-semantics",
    /reserved invalid-field code 4/,
  );
  // An unsupported-attribute answer (0x000C) is a valid status and its attribute is not judged.
  assert.deepEqual(check(replaced(good, 1, st(0x000c))).violations, []);
  const req = dr({
    method: r.MAD_METHOD.GET,
    attr: r.SMP_ATTR.NODE_INFO,
    tid,
    port: 1,
    status: 0x1c,
  });
  goodThenBad(good, replaced(good, 0, req), "mad-pairing", /requests carry status 0/);
  // An SA MAD sent to QP0 on VL15 (so the management rule is content): QP0 carries only SMPs.
  const sa = r.encodeSaMad({
    header: header({ mgmtClass: 3, classVersion: 2, method: 5 }),
    smKey: 0n,
    componentMask: 0n,
    data: new Uint8Array(0),
  });
  const onQp0 = r.buildIbFrame({
    lrh: { dlid: 2, slid: 1, vl: 15 },
    bth: { opcode: r.OP.UD_SEND_ONLY, destQp: 0, psn: 0 },
    deth: { qkey: 0, reserved8: 0, srcQp: 0 },
    payload: sa,
  });
  goodThenBad(good, [...good, onQp0], "smp-semantics", /QP0 carries only SMPs/);
});

// ---- sa-semantics -------------------------------------------------------------------------------

Deno.test("sa-semantics: a PathRecord with a DLID nobody has, or the LID of another port", () => {
  const ports = [...discover(NODES[0]), ...discover(NODES[1])];
  const good = [...ports, ...pathQuery(0x900n)];
  goodThenBad(
    good,
    [...ports, ...pathQuery(0x900n, { dlid: 77 })],
    "sa-semantics",
    /DLID 77: no port has that LID/,
  );
  // LID 2 exists, but it is node 0's, and the DGID is node 1's.
  goodThenBad(
    good,
    [...ports, ...pathQuery(0x900n, { dlid: 2 })],
    "sa-semantics",
    /DLID 2, but fe80:0000:0000:0000:0200:00ff:fe00:0002 is the port with LID 3/,
  );
});

Deno.test("sa-semantics: a PathRecord answering another DGID, with a bad MTU or rate", () => {
  const ports = [...discover(NODES[0]), ...discover(NODES[1])];
  const good = [...ports, ...pathQuery(0x900n)];
  goodThenBad(
    good,
    [...ports, ...pathQuery(0x900n, { dgid: gid(0x1234n) })],
    "sa-semantics",
    /DGID fe80:0000:0000:0000:0000:0000:0000:1234, but .* was asked/,
  );
  goodThenBad(good, [...ports, ...pathQuery(0x900n, { mtu: 6 })], "sa-semantics", /MTU 6/);
  goodThenBad(good, [...ports, ...pathQuery(0x900n, { rate: 0 })], "sa-semantics", /Rate 0/);
});

Deno.test("sa-semantics: an MCMemberRecord join answered with a unicast MLID or another MGID", () => {
  const good = join(0x901n);
  goodThenBad(
    good,
    join(0x901n, { mlid: 5 }),
    "sa-semantics",
    /MLID 0x0005 is not a multicast LID/,
  );
  const other = r.hexToBytes("ff12401bffff00000000000000000001");
  goodThenBad(
    good,
    join(0x901n, { mgid: other }),
    "sa-semantics",
    /MGID ff12:401b:ffff:0000:0000:0000:0000:0001, asked ff12:401b/,
  );
});

Deno.test("sa-semantics: SA answers from a QP other than 1, in class version 1, with an SA status beyond 7", () => {
  const good = pathQuery(0x900n);
  const base = {
    cls: r.MGMT_CLASS.SUBN_ADM,
    attr: r.SA_ATTR.PATH_RECORD,
    tid: 0x900n,
    lid: NODES[0].lid,
  };
  const ports = [...discover(NODES[0]), ...discover(NODES[1])];
  const g = [...ports, ...good];
  // From QP2 it is also no answer to the request made to QP1.
  const fromQp2 = check([
    ...ports,
    good[0],
    gsi({ ...base, method: 0x81, srcQp: 2, status: r.SA_STATUS.ERR_NO_RECORDS }),
  ]);
  assert.deepEqual(rules(fromQp2), ["mad-pairing", "sa-semantics"]);
  assert.ok(
    fromQp2.violations.some((v) => /SA response from QP2; the SA is on QP1/.test(v.message)),
  );
  goodThenBad(
    g,
    [
      ...ports,
      good[0],
      gsi({ ...base, method: 0x81, classVersion: 1, status: r.SA_STATUS.ERR_NO_RECORDS }),
    ],
    "sa-semantics",
    /SA class version 1, not 2/,
  );
  goodThenBad(
    g,
    [...ports, good[0], gsi({ ...base, method: 0x81, status: 0x0900 })],
    "sa-semantics",
    /SA status code 9 is not one of 1\.\.7/,
  );
  // ERR_NO_RECORDS itself is a fine answer, and the record is not judged.
  assert.deepEqual(
    check([...ports, good[0], gsi({ ...base, method: 0x81, status: r.SA_STATUS.ERR_NO_RECORDS })])
      .violations,
    [],
  );
});

// ---- pma-semantics ------------------------------------------------------------------------------

Deno.test("pma-semantics: PortCounters answered for another port", () => {
  goodThenBad(
    counters(0x902n),
    counters(0x902n, 2),
    "pma-semantics",
    /PortSelect 2, but port 1 was asked/,
  );
});

// ---- codecs -------------------------------------------------------------------------------------

Deno.test("PathRecord and MCMemberRecord codecs put fields where IBA 15.2.5.16/17 say", () => {
  const pr = pathRecord({
    dlid: 0x1234,
    slid: 0x5678,
    pkey: 0xffff,
    mtuSelector: 2,
    mtu: 5,
    rate: 16,
    reversible: 1,
    numbPath: 1,
    sl: 3,
  });
  assert.equal(pr.length, r.PATH_RECORD_BYTES);
  assert.deepEqual([...pr.subarray(40, 44)], [0x12, 0x34, 0x56, 0x78]); // DLID, SLID
  assert.equal(pr[49], 0x81); // Reversible, NumbPath 1
  assert.deepEqual([...pr.subarray(50, 52)], [0xff, 0xff]); // P_Key
  assert.equal(pr[53] & 0x0f, 3); // SL
  assert.equal(pr[54], 0x85); // MTU selector 2, MTU 5
  assert.equal(pr[55], 16); // rate
  assert.deepEqual(r.decodePathRecord(pr).dlid, 0x1234);
  const m = mcm({ qkey: 0xb1b, mlid: 0xc001, joinState: 1, scope: 2 });
  assert.equal(m.length, r.MC_MEMBER_RECORD_BYTES);
  assert.deepEqual([...m.subarray(32, 38)], [0, 0, 0x0b, 0x1b, 0xc0, 0x01]);
  assert.equal(m[48], 0x21); // scope 2, JoinState 1
  assert.equal(r.decodeMcMemberRecord(m).mlid, 0xc001);
  const sa = r.encodeSaMad({
    header: header({ mgmtClass: 3 }),
    smKey: 0n,
    componentMask: 0x0cn,
    data: pr,
  });
  assert.equal(sa[55], 0x0c);
  assert.deepEqual(sa.subarray(r.SA_DATA_OFFSET, r.SA_DATA_OFFSET + 64), pr);
});

Deno.test("mad-pairing: answers at a capture's start to requests sent before it are counted, not judged", () => {
  const good = discover(NODES[0]);
  // the capture begins with the node's answer: its request went out before the capture started
  const early = good.filter((_, i) => i !== 0);
  const res = check(early);
  assert.deepEqual(res.violations.filter((v) => v.rule === "mad-pairing"), []);
  assert.equal(res.unpairedAtStart, 1);
  // once a request of that class is in the capture, an orphan answer is judged again
  const stray = dr({
    method: r.MAD_METHOD.GET_RESP,
    attr: r.SMP_ATTR.NODE_INFO,
    tid: 0x77n,
    port: 1,
    data: nodeInfo(1n),
  });
  const late = check([...good, stray]);
  assert.equal(late.violations.filter((v) => v.rule === "mad-pairing").length, 1);
});
