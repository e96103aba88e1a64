/**
 * The subnet manager against fake end nodes (fake_sma.ts): discovery and
 * LIDs as the model's LID plan predicts, the LFT, a cable pull, a node that
 * never answers, a late node, a driver reload caught by the light sweep, SA
 * PathRecord / MCMemberRecord / errors, garbage to the SM, and the capture
 * holding every SMP. Throws SmScenarioError at the first difference.
 */
import type { SmStatus } from "../../harness/fabric/client.ts";
import type { Fabric } from "../../harness/fabric/switch.ts";
import { readPcapng } from "../../harness/fabric/pcapng.ts";
import { SmLidPlan } from "../../harness/models/switch.ts";
import { rd16, rd32, wr64 } from "../../harness/models/rdma/bytes.ts";
import { FakeNode } from "./fake_sma.ts";
import { ibFrame } from "./traffic.ts";

/** A difference between the SM and what the spec / model says. */
export class SmScenarioError extends Error {
  override name = "SmScenarioError";
}

function expect(ok: boolean, what: string): void {
  if (!ok) throw new SmScenarioError(what);
}

const PREFIX = 0xfe80000000000000n;
const BCAST_MGID = "ff12:401b:ffff:0000:0000:0000:ffff:ffff";

function gid(guid: bigint): Uint8Array {
  const g = new Uint8Array(16);
  wr64(g, 0, PREFIX);
  wr64(g, 8, guid);
  return g;
}

function mgidBytes(text: string): Uint8Array {
  const g = new Uint8Array(16);
  text.split(":").forEach((h, i) => {
    g[2 * i] = parseInt(h, 16) >> 8;
    g[2 * i + 1] = parseInt(h, 16) & 0xff;
  });
  return g;
}

const hex16 = (g: bigint) => g.toString(16).padStart(16, "0");

/** What the scenario measured. */
export interface SmScenarioResult {
  /** ms from a node's connection to its port ACTIVE (first node). */
  firstActiveMs: number;
  /** ms from link_up (reconnect) to ACTIVE again. */
  resweepMs: number;
  /** SMPs the fake nodes answered. */
  smpsAnswered: number;
  /** SA requests checked. */
  saChecked: number;
}

/**
 * Run the scenario on `fabric` (ib mode, SM on, default LID start and
 * prefix, nothing connected). `capturePath` gets a capture of the run.
 */
export async function smScenario(fabric: Fabric, capturePath: string): Promise<SmScenarioResult> {
  const nodes: FakeNode[] = [];
  const plan = new SmLidPlan(1);
  const serve = () => nodes.forEach((n) => n.serve());
  const until = async (what: string, pred: (s: SmStatus) => boolean, ms = 5000) => {
    const deadline = performance.now() + ms;
    for (;;) {
      serve();
      const s = await fabric.sm();
      if (pred(s)) return s;
      if (performance.now() > deadline) {
        throw new SmScenarioError(`${what} within ${ms} ms; sm: ${JSON.stringify(s)}`);
      }
      await new Promise((r) => setTimeout(r, 2));
    }
  };
  const portOf = (s: SmStatus, p: number) => s.ports.find((x) => x.port === p);
  const active = (s: SmStatus, p: number) => portOf(s, p)?.state === "active";
  const saWait = async (n: FakeNode, tid: bigint) => {
    const deadline = performance.now() + 3000;
    for (;;) {
      serve();
      const a = n.saAnswers.get(tid);
      if (a) return a;
      if (performance.now() > deadline) throw new SmScenarioError(`no SA answer to TID ${tid}`);
      await new Promise((r) => setTimeout(r, 2));
    }
  };
  try {
    const s0 = await fabric.sm();
    expect(s0.enabled && s0.lid === 1, `SM enabled with LID 1: ${JSON.stringify(s0)}`);
    expect(s0.subnetPrefix === "fe80:0000:0000:0000", `prefix ${s0.subnetPrefix}`);
    expect(
      s0.groups.length === 1 && s0.groups[0].mgid === BCAST_MGID && s0.groups[0].mlid === 0xc000 &&
        s0.groups[0].qkey === 0xb1b && s0.groups[0].ports.length === 0,
      `the IPoIB broadcast group exists from the start: ${JSON.stringify(s0.groups)}`,
    );
    await fabric.startCapture(capturePath);

    // Three nodes, one at a time so the plan's discovery order is fixed.
    const guids = [0x0002c90300a0b001n, 0x0002c90300a0b002n, 0x0002c90300a0b003n];
    let firstActiveMs = 0;
    for (const [i, g] of guids.entries()) {
      const t0 = performance.now();
      nodes.push(new FakeNode(fabric.socketPath, g, `fake node ${i + 1} HCA-1`));
      const port = i + 1;
      await until(`port ${port} active`, (s) => active(s, port));
      if (i === 0) firstActiveMs = performance.now() - t0;
      const lid = plan.discovered(g, port);
      const p = portOf(await fabric.sm(), port)!;
      expect(p.lid === lid, `port ${port}: LID ${p.lid}, the plan says ${lid}`);
      expect(p.guid === hex16(g), `port ${port}: GUID ${p.guid}`);
      expect(p.nodeDesc === `fake node ${i + 1} HCA-1`, `port ${port}: desc ${p.nodeDesc}`);
      const pi = nodes[i].portInfo;
      expect(
        pi.lid === lid && pi.masterSmLid === 1 && pi.gidPrefix === PREFIX && pi.portState === 4 &&
          pi.neighborMtu === 5 && pi.subnetTimeout === 18 && pi.lmc === 0,
        `node ${i + 1}'s PortInfo after the SM: ${JSON.stringify(pi, (_, v) => String(v))}`,
      );
    }

    // A node that never answers: retried, then unresponsive; the others stay.
    const silent = new FakeNode(fabric.socketPath, 0xdeadn, "silent", { silent: true });
    nodes.push(silent);
    const before = await fabric.sm();
    const s1 = await until("port 4 unresponsive", (s) => portOf(s, 4)?.state === "unresponsive");
    expect(
      s1.mads.timeouts - before.mads.timeouts >= 4 && s1.mads.retries - before.mads.retries >= 3,
      `4 timeouts and 3 retries before unresponsive: ${JSON.stringify(s1.mads)}`,
    );
    expect(silent.received.length >= 4, `the silent node got ${silent.received.length} SMPs`);
    for (const p of [1, 2, 3]) expect(active(s1, p), `port ${p} still active`);

    const lftOk = async (what: string) => {
      const t = await fabric.table();
      const got = (t.lft as { lid: number; port: number }[]).map((e) => `${e.lid}:${e.port}`);
      const want = [...plan.lft()].sort((a, b) => a[0] - b[0]).map(([l, p]) => `${l}:${p}`);
      expect(got.join() === want.join(), `${what}: LFT ${got}, the plan says ${want}`);
    };
    await lftOk("after discovery");

    // Cable pull on port 2: down, back with the same LID.
    await fabric.linkDown(2);
    expect(nodes[1].waitClosed(3000), "link_down closes node 2's socket");
    const sd = await fabric.sm();
    expect(portOf(sd, 2)?.state === "down" && portOf(sd, 2)?.lid === 3, "port 2 down, LID kept");
    await fabric.linkUp(2);
    const t1 = performance.now();
    nodes[1] = new FakeNode(fabric.socketPath, guids[1], "fake node 2 HCA-1");
    await until("port 2 active again", (s) => active(s, 2) && portOf(s, 2)?.lid === 3);
    const resweepMs = performance.now() - t1;
    plan.discovered(guids[1], 2);

    // A late node: port 5 (4 is the silent one), next LID, nobody else moves.
    const late = 0x0002c90300a0b00fn;
    nodes.push(new FakeNode(fabric.socketPath, late, "late node"));
    const s2 = await until("port 5 active", (s) => active(s, 5));
    const lateLid = plan.discovered(late, 5);
    expect(portOf(s2, 5)?.lid === lateLid, `late node LID ${portOf(s2, 5)?.lid} != ${lateLid}`);
    for (const [i, g] of guids.entries()) {
      expect(portOf(s2, i + 1)?.lid === plan.lidOf(g), `port ${i + 1} kept its LID`);
    }
    await lftOk("after the late node");

    // A driver reload without a link change: the light sweep notices.
    nodes[0].reset();
    await until("port 1 reconfigured by the light sweep", () => nodes[0].lid === 2, 3000);
    await until("port 1 active", (s) => active(s, 1) && nodes[0].portInfo.portState === 4);

    // The SA, from node 1 (LID 2).
    const a = nodes[0];
    let saChecked = 0;
    const sa = async (method: number, attr: number, mask: bigint, rec: Uint8Array, cv = 2) => {
      const tid = a.saRequest(1, method, attr, mask, rec, cv);
      const r = await saWait(a, tid);
      saChecked++;
      expect(rd16(r, 16) === attr, "SA answer echoes the attribute");
      return { status: rd16(r, 4), method: r[3], rec: r.subarray(56) };
    };
    let r = await sa(0x01, 0x0001, 0n, new Uint8Array(0));
    expect(
      r.status === 0 && r.method === 0x81 && r.rec[1] === 2 && (rd32(r.rec, 4) & 0x1f) === 18,
      `ClassPortInfo: ${JSON.stringify(r)}`,
    );
    // PathRecord node 1 -> node 3 by GIDs (mask DGID | SGID).
    const pr = new Uint8Array(64);
    pr.set(gid(guids[2]), 8);
    pr.set(gid(guids[0]), 24);
    r = await sa(0x01, 0x0035, (1n << 2n) | (1n << 3n), pr);
    expect(
      r.status === 0 && rd16(r.rec, 40) === plan.lidOf(guids[2]) &&
        rd16(r.rec, 42) === plan.lidOf(guids[0]) && r.rec[54] === 0x85 && r.rec[55] === 0x90 &&
        rd16(r.rec, 50) === 0xffff && r.rec[49] === 0x81,
      `PathRecord 1 -> 3: status ${r.status.toString(16)}`,
    );
    // To the silent node's GID: no records.
    pr.set(gid(0xdeadn), 8);
    r = await sa(0x01, 0x0035, (1n << 2n) | (1n << 3n), pr);
    expect(r.status === 0x0300, `PathRecord to an unknown port: status ${r.status.toString(16)}`);
    // Unknown attribute, unknown method, wrong class version.
    r = await sa(0x01, 0x00ee, 0n, new Uint8Array(0));
    expect(r.status === 0x000c, `unknown attribute: status ${r.status.toString(16)}`);
    r = await sa(0x14, 0x0035, 0n, new Uint8Array(0));
    expect(r.status === 0x0008, `unknown method: status ${r.status.toString(16)}`);
    r = await sa(0x01, 0x0001, 0n, new Uint8Array(0), 1);
    expect(r.status === 0x0004, `class version 1: status ${r.status.toString(16)}`);

    // Joins of the broadcast group: nodes 1 and 3 (node 3 asks itself).
    const join = (g: Uint8Array, port: bigint, state = 1) => {
      const m = new Uint8Array(52);
      m.set(g, 0);
      m.set(gid(port), 16);
      m[48] = state;
      return m;
    };
    const joinMask = (1n << 0n) | (1n << 1n) | (1n << 16n);
    r = await sa(0x02, 0x0038, joinMask, join(mgidBytes(BCAST_MGID), guids[0]));
    expect(
      r.status === 0 && rd16(r.rec, 36) === 0xc000 && rd32(r.rec, 32) === 0xb1b &&
        (r.rec[38] & 0x3f) === 4 && (r.rec[42] & 0x3f) === 3 && (r.rec[48] & 0xf) === 1,
      `broadcast join: status ${r.status.toString(16)} mlid ${rd16(r.rec, 36).toString(16)}`,
    );
    const c = nodes[2];
    const tidC = c.saRequest(1, 0x02, 0x0038, joinMask, join(mgidBytes(BCAST_MGID), guids[2]));
    expect(rd16(await saWait(c, tidC), 4) === 0, "node 3 joins too");
    const mc = async () => (await fabric.table()).mcast as { mlid: number; ports: number[] }[];
    expect(
      JSON.stringify(await mc()) === JSON.stringify([{ mlid: 0xc000, ports: [1, 3] }]),
      `MFT after joins: ${JSON.stringify(await mc())}`,
    );
    // A new group needs Q_Key, P_Key, SL, FlowLabel, TClass: first without, then with.
    const newMgid = mgidBytes("ff12:601b:ffff:0000:0000:0000:0000:0042");
    r = await sa(0x02, 0x0038, joinMask, join(newMgid, guids[0]));
    expect(r.status === 0x0600, `create without components: ${r.status.toString(16)}`);
    const full = joinMask | (1n << 2n) | (1n << 7n) | (1n << 12n) | (1n << 13n) | (1n << 6n);
    const rec = join(newMgid, guids[0]);
    rec.set([0, 0, 0x12, 0x34], 32);
    rec.set([0xff, 0xff], 40);
    r = await sa(0x02, 0x0038, full, rec);
    expect(
      r.status === 0 && rd16(r.rec, 36) === 0xc001 && rd32(r.rec, 32) === 0x1234,
      `create: status ${r.status.toString(16)} mlid ${rd16(r.rec, 36).toString(16)}`,
    );
    // Get by MGID.
    r = await sa(0x01, 0x0038, 1n, join(newMgid, 0n, 0));
    expect(r.status === 0 && rd16(r.rec, 36) === 0xc001, "MCMemberRecord Get by MGID");
    // Leave: node 1 leaves both; the new group goes away, the broadcast one stays.
    r = await sa(0x15, 0x0038, joinMask, join(newMgid, guids[0]));
    expect(r.status === 0 && r.method === 0x95, `leave: ${r.status.toString(16)} ${r.method}`);
    r = await sa(0x15, 0x0038, joinMask, join(mgidBytes(BCAST_MGID), guids[0]));
    expect(r.status === 0, "leave broadcast");
    r = await sa(0x15, 0x0038, joinMask, join(mgidBytes(BCAST_MGID), guids[0]));
    expect(r.status === 0x0200, `leave again: ${r.status.toString(16)}`);
    r = await sa(0x01, 0x0038, 1n, join(newMgid, 0n, 0));
    expect(r.status === 0x0300, `the emptied group is gone: ${r.status.toString(16)}`);
    expect(
      JSON.stringify(await mc()) === JSON.stringify([{ mlid: 0xc000, ports: [3] }]),
      `MFT after leaves: ${JSON.stringify(await mc())}`,
    );
    // A member's cable pull removes it from its groups.
    await fabric.linkDown(3);
    expect(nodes[2].waitClosed(3000), "link_down closes node 3's socket");
    const s3 = await fabric.sm();
    expect(
      s3.groups.length === 1 && s3.groups[0].ports.length === 0 && (await mc()).length === 0,
      `port 3 left every group: ${JSON.stringify(s3.groups)}`,
    );
    await fabric.linkUp(3);
    nodes[2] = new FakeNode(fabric.socketPath, guids[2], "fake node 3 HCA-1");
    await until("port 3 active again", (s) => active(s, 3) && portOf(s, 3)?.lid === 4);

    // Garbage to the SM: counted bad, nothing else changes.
    const b0 = (await fabric.sm()).mads.bad;
    a.sendRaw(ibFrame(0xffff, 34, { slid: 2 })); // valid LRH/VCRC, no MAD
    a.sendRaw(ibFrame(1, 130, { slid: 2, body: new Uint8Array(128).fill(0x5a) }));
    const s4 = await until("2 bad MADs counted", (s) => s.mads.bad >= b0 + 2);
    expect(s4.ports.filter((p) => p.state === "active").length === 4, "4 ports still active");

    // Every SMP a node received is in the capture (outbound on its port);
    // every frame a fake node refused is a failure.
    serve();
    await fabric.stopCapture();
    const cap = readPcapng(await Deno.readFile(capturePath));
    const captured = new Set(cap.packets.map((p) => Array.from(p.data).join(",")));
    let smps = 0;
    for (const n of nodes) {
      expect(n.rejected === 0, `node ${hex16(n.guid)} refused ${n.rejected} frames`);
      for (const f of n.received) {
        expect(captured.has(Array.from(f).join(",")), "a frame the SM sent is not in the capture");
      }
      smps += n.answered;
    }
    return { firstActiveMs, resweepMs, smpsAnswered: smps, saChecked };
  } finally {
    for (const n of nodes) n.close();
  }
}
