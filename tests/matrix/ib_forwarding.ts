import { pingEach } from "../../harness/guest/ping.ts";
import type { Row, RowContext } from "../../harness/matrix/row.ts";
import { RowFailure } from "../../harness/matrix/row.ts";
import type { FabricHandle } from "../../harness/matrix/row.ts";
import type { Guest } from "../../harness/vm/types.ts";
import {
  type PcapngInterface,
  type PcapngPacket,
  scanPcapngFile,
} from "../../harness/fabric/pcapng.ts";
import { captured } from "../../harness/oracle/wire_capture.ts";
import { checkPcapngFile } from "../../harness/oracle/wire_check.ts";
import {
  type IbFabricTables,
  ibTables,
  ibTablesChanged,
  replayIbCapture,
  switchPort,
} from "../../harness/oracle/switch_replay.ts";
import {
  buildIbFrame,
  decodeMadHeader,
  encodeMadHeader,
  ibVcrc,
  OP,
  writeVcrc,
} from "../../harness/models/rdma/mod.ts";
import { readIbModeAttributes, runPair } from "../../harness/guest/cnuas_ib.ts";
import { waitCarrier } from "../../harness/guest/cnuas_net.ts";
import { ibModeAttributeDifferences } from "../../harness/guest/cnuas_ib_attrs.ts";
import { expectBothExit0, hwCounters, pingpongResult } from "../../harness/guest/roce_pair.ts";
import {
  guestPort,
  type IbNode,
  setupIbNodes,
  startIpoib,
  waitGuestActive,
  waitSmActive,
} from "../../harness/guest/ib_pair.ts";

/** IPoIB addresses of g0, g1 and (joining later) g2. */
const IPS = ["10.78.0.1", "10.78.0.2", "10.78.0.3"];
/** Deadline for the SM to bring ports ACTIVE (after modprobe, after a cable pull). */
const ACTIVE_DEADLINE_MS = 60_000;
/** A LID nobody has: the SM hands out LIDs from 2 upwards, one per node. */
const UNKNOWN_DLID = 0x0fff;
/** A destination QP nobody has (the injected frames need no receiver). */
const NO_QP = 0x00abcd;

function fabricOf(ctx: RowContext): FabricHandle {
  if (!ctx.fabric) throw new RowFailure("ib-forwarding needs its fabric");
  return ctx.fabric;
}

/** A capture's packets over all its files (a rolled-over capture numbers interfaces alike in each). */
async function readCapture(
  paths: string[],
): Promise<{ interfaces: PcapngInterface[]; packets: PcapngPacket[] }> {
  const packets: PcapngPacket[] = [];
  let interfaces: PcapngInterface[] = [];
  for (const path of paths) {
    interfaces = (await scanPcapngFile(path, (p) => packets.push(p))).interfaces;
  }
  return { interfaces, packets };
}

/**
 * Replay a capture through the switch model (see harness/oracle/switch_replay.ts)
 * with the tables read after it; `before`, the tables read before it, must
 * be the same (a multicast join in the middle would have the model forward
 * earlier frames to a member that was not one yet).
 */
function replayInspector(ctx: RowContext, segment: string, before: IbFabricTables) {
  return async (
    paths: string[],
    start: Parameters<typeof replayIbCapture>[2],
    end: typeof start,
  ) => {
    const fabric = fabricOf(ctx);
    const tables = await ibTables(fabric);
    const changed = ibTablesChanged(before, tables);
    if (changed) return [`the switch's tables changed during the capture: ${changed}`];
    const r = replayIbCapture(await readCapture(paths), tables, start, end);
    ctx.log(
      `switch model replay: ${r.summary.inbound} frames in, ${r.summary.forwarded} forwarded, ` +
        `${r.summary.toSwitch} to the SM, ${r.summary.outbound} sent by the SM, drops ` +
        JSON.stringify(r.summary.drops),
    );
    const frames = r.summary.inbound + r.summary.outbound;
    ctx.measure(`switchModel.${segment}.framesReplayed`, frames, "frames");
    return r.differences;
  };
}

/** One pingpong over LIDs (no -g), the side channel over IPoIB; --chk checks the data. */
async function pingpong(
  ctx: RowContext,
  [s, c]: IbNode[],
  prog: "ibv_rc_pingpong" | "ibv_ud_pingpong",
  flags: string,
): Promise<void> {
  const what = `${prog} ${flags}`;
  const args = (n: IbNode) => `${prog} -d ${n.dev.ibdev} ${flags} --chk`;
  const r = expectBothExit0(
    what,
    await runPair(s.g, args(s), c.g, `${args(c)} ${s.ip}`, 18515, 300),
  );
  const f = pingpongResult(what, r);
  ctx.log(`${what}: ${f.usecPerIter} us/iter, ${f.mbitPerSec} Mbit/s`);
}

async function ping(from: IbNode, to: IbNode, count = 5): Promise<void> {
  const r = await pingEach(from.g, to.ip, { count });
  if (!r.ok) throw new RowFailure(`IPoIB ping: ${r.why}`);
}

/** Wait (bounded) until IPoIB has its carrier: it joined the broadcast group through the SA. */
async function ipoibCarrier(n: IbNode, timeoutSec = 60): Promise<void> {
  if (!await waitCarrier(n.g, n.ipoibIface!, true, timeoutSec)) {
    throw new RowFailure(
      `${n.g.name}: ${n.ipoibIface} has no carrier (broadcast group not joined)`,
    );
  }
}

/** A UD SEND_ONLY from `slid` to `dlid`, correct in every CRC. */
function udFrame(slid: number, dlid: number): Uint8Array {
  return buildIbFrame({
    lrh: { dlid, slid },
    bth: { opcode: OP.UD_SEND_ONLY, destQp: NO_QP, psn: 1 },
    deth: { qkey: 0x1234, reserved8: 0, srcQp: 0x11 },
    payload: new Uint8Array(64).fill(0x5a),
  });
}

/** Recompute the VCRC after a deliberate change (so only that change is wrong). */
function fixVcrc(f: Uint8Array): Uint8Array {
  writeVcrc(f, f.length - 2, ibVcrc(f, f.length - 2));
  return f;
}

/**
 * Frames the switch must drop, each counted under its reason on the port
 * it came in on, and one it must forward that the receiving HCA drops
 * (bad ICRC): the check happens where IBA puts it.
 */
async function injections(ctx: RowContext, [a, b]: IbNode[]): Promise<void> {
  const fabric = fabricOf(ctx);
  const before = (await fabric.ports()).find((p) => p.port === a.swPort)!;
  const hcaBefore = await hwCounters(b);

  await fabric.inject(a.swPort, udFrame(a.lid, UNKNOWN_DLID));
  const badVcrc = udFrame(a.lid, b.lid);
  badVcrc[badVcrc.length - 1] ^= 0xff;
  await fabric.inject(a.swPort, badVcrc);
  const badLrh = udFrame(a.lid, b.lid);
  badLrh[0] |= 0x01; // LVer 1
  await fabric.inject(a.swPort, fixVcrc(badLrh));
  const badIcrc = udFrame(a.lid, b.lid);
  badIcrc[badIcrc.length - 3] ^= 0xff; // the ICRC's last byte
  await fabric.inject(a.swPort, fixVcrc(badIcrc));

  const after = (await fabric.ports()).find((p) => p.port === a.swPort)!;
  const delta = (r: "bad_dlid" | "bad_vcrc" | "bad_lrh") => after.drops[r] - before.drops[r];
  ctx.expect(delta("bad_dlid") === 1, `bad_dlid rose by ${delta("bad_dlid")}, want 1`);
  ctx.expect(delta("bad_vcrc") === 1, `bad_vcrc rose by ${delta("bad_vcrc")}, want 1`);
  ctx.expect(delta("bad_lrh") === 1, `bad_lrh rose by ${delta("bad_lrh")}, want 1`);
  // the bad-ICRC frame crosses the switch (which checks only the VCRC) and dies at the HCA
  let icrc = 0;
  for (let i = 0; i < 50 && icrc < 1; i++) {
    icrc = (await hwCounters(b)).rcvd_icrc_err - hcaBefore.rcvd_icrc_err;
    if (icrc < 1) await new Promise((r) => setTimeout(r, 100));
  }
  ctx.expect(icrc === 1, `${b.g.name}: rcvd_icrc_err rose by ${icrc}, want 1`);
}

/** A directed-route SMP as the SM sends it (hop count 1, hop pointer 1). */
function drSmp(
  tid: bigint,
  method: number,
  attributeId: number,
  attrMod: number,
  data?: Uint8Array,
  hopPointer = 1,
  mKey = 0n,
): Uint8Array {
  const mad = new Uint8Array(256);
  encodeMadHeader(
    {
      baseVersion: 1,
      mgmtClass: 0x81,
      classVersion: 1,
      method,
      status: 0,
      classSpecific: (hopPointer << 8) | 1,
      transactionId: tid,
      attributeId,
      reserved: 0,
      attributeModifier: attrMod,
    },
    mad,
    0,
  );
  new DataView(mad.buffer).setBigUint64(24, mKey);
  mad[32] = 0xff; // DrSLID, DrDLID permissive
  mad[33] = 0xff;
  mad[34] = 0xff;
  mad[35] = 0xff;
  if (data) mad.set(data, 64);
  return mad;
}

function smpFrame(mad: Uint8Array, vl = 15): Uint8Array {
  return buildIbFrame({
    lrh: { dlid: 0xffff, slid: 0xffff, vl },
    bth: { opcode: OP.UD_SEND_ONLY, destQp: 0, psn: 7 },
    deth: { qkey: 0, reserved8: 0, srcQp: 0 },
    payload: mad,
  });
}

/** TIDs of the hostile SMPs; their answers are looked for in the capture. */
const TID = {
  unknownAttr: 0xc0ffee01n,
  badState: 0xc0ffee02n,
  badHop: 0xc0ffee03n,
  setMkey: 0xc0ffee06n,
  wrongMkey: 0xc0ffee07n,
  rightMkey: 0xc0ffee08n,
  clearMkey: 0xc0ffee09n,
};
/** What the wire oracle must say of them: the three malformed ones, nothing else. */
const HOSTILE_VIOLATIONS = [
  "management: QP0 (SMI) traffic must use VL15, got VL0",
  "management: a MAD to QP0 is 256 bytes, got 100",
  "smp-semantics: hop pointer 5 beyond hop count 1 + 1",
];
/** The M_Key a rogue SM installs for a moment (protection bits 2: Gets need it too). */
const MKEY = 0x1122334455667788n;

/**
 * SMPs a real SM never sends, straight at one node's QP0: the SMA answers
 * what it can with the right status and the port stays as it was; what
 * ib_mad or the driver must drop gets no answer. The dmesg guard after the
 * row catches any oops.
 */
async function hostileSmps(ctx: RowContext, n: IbNode): Promise<Uint8Array[]> {
  const fabric = fabricOf(ctx);
  const sent = [
    smpFrame(drSmp(TID.unknownAttr, 0x01, 0x00fe, 0)),
    // PortInfo Set with PortState INIT (2): not a state an SM may set
    smpFrame(drSmp(TID.badState, 0x02, 0x0015, 1, portInfoWithState(n, 2))),
    // hop pointer 5 with hop count 1: IBA C14-9 says discard
    smpFrame(drSmp(TID.badHop, 0x01, 0x0011, 0, undefined, 5)),
    // a MAD cut to 100 bytes
    smpFrame(drSmp(0xc0ffee04n, 0x01, 0x0011, 0).subarray(0, 100)),
    // an SMP on VL 0: only VL15 carries QP0
    smpFrame(drSmp(0xc0ffee05n, 0x01, 0x0011, 0), 0),
    // M_Key (IBA 14.2.4), back to back so the SM's sweeps barely notice: install
    // one with protection 2, a Get without it (no answer), one with it, then clear it
    smpFrame(drSmp(TID.setMkey, 0x02, 0x0015, 1, portInfoWithState(n, 0, MKEY, 2))),
    smpFrame(drSmp(TID.wrongMkey, 0x01, 0x0011, 0)),
    smpFrame(drSmp(TID.rightMkey, 0x01, 0x0015, 1, undefined, 1, MKEY)),
    smpFrame(drSmp(TID.clearMkey, 0x02, 0x0015, 1, portInfoWithState(n, 0), 1, MKEY)),
  ];
  for (const f of sent) await fabric.inject(n.swPort, f, "egress");
  await new Promise((r) => setTimeout(r, 2000));
  const view = await guestPort(n.g, n.dev.ibdev);
  ctx.expect(
    view.state === "ACTIVE" && view.lid === n.lid,
    `${n.g.name}: after the hostile SMPs the port is ${JSON.stringify(view)}`,
  );
  return sent;
}

/**
 * A PortInfo attribute holding this node's LID, SM LID 1, the given
 * PortState (0: no change) and M_Key with its protection bits.
 */
function portInfoWithState(n: IbNode, state: number, mKey = 0n, prot = 0): Uint8Array {
  const pi = new Uint8Array(64);
  new DataView(pi.buffer).setBigUint64(0, mKey);
  pi[34] = prot << 6;
  pi[8] = 0xfe; // GID prefix fe80::
  pi[9] = 0x80;
  pi[16] = n.lid >> 8;
  pi[17] = n.lid & 0xff;
  pi[19] = 1; // SM LID 1
  pi[32] = state;
  return pi;
}

/** One answer of the SMA; `mKeyViolations` read as if the attribute were a PortInfo. */
interface SmaAnswer {
  status: number;
  method: number;
  mKeyViolations: number;
}

/** The SMA's answers to the hostile SMPs, from the capture (inbound on the node's port). */
function smaAnswers(
  cap: { interfaces: PcapngInterface[]; packets: PcapngPacket[] },
  port: number,
): Map<bigint, SmaAnswer> {
  const out = new Map<bigint, SmaAnswer>();
  for (const p of cap.packets) {
    if (switchPort(cap.interfaces, p) !== port || p.direction !== "inbound") continue;
    const f = p.data;
    if ((f[1] & 3) !== 2 || f.length < 8 + 12 + 8 + 256) continue;
    const mad = f.subarray(28, 28 + 256);
    const h = decodeMadHeader(mad, 0);
    if (h.mgmtClass !== 0x81 || (h.method & 0x80) === 0) continue;
    const data = mad.subarray(64, 128);
    out.set(h.transactionId, {
      status: h.status,
      method: h.method,
      mKeyViolations: (data[44] << 8) | data[45],
    });
  }
  return out;
}

/** Trap 144s (CapabilityMask changed) a port sent, and the SM's TrapRepresses, from a capture. */
function traps(
  cap: { interfaces: PcapngInterface[]; packets: PcapngPacket[] },
  port: number,
): { caps: number[]; represses: number } {
  const caps: number[] = [];
  let represses = 0;
  for (const p of cap.packets) {
    if (switchPort(cap.interfaces, p) !== port) continue;
    if ((p.data[1] & 3) !== 2 || p.data.length < 28 + 256) continue;
    const mad = p.data.subarray(28, 28 + 256);
    const h = decodeMadHeader(mad, 0);
    if (h.mgmtClass !== 0x01 || h.attributeId !== 0x0002) continue;
    const notice = mad.subarray(64, 128);
    if (p.direction === "inbound" && h.method === 0x05 && ((notice[4] << 8) | notice[5]) === 144) {
      caps.push(new DataView(notice.buffer, notice.byteOffset).getUint32(16));
    }
    if (p.direction === "outbound" && h.method === 0x07) represses++;
  }
  return { caps, represses };
}

/** Pull n's cable: its port goes DOWN; plug it back: the SM makes it ACTIVE with its LID. */
async function cablePull(ctx: RowContext, n: IbNode): Promise<void> {
  const fabric = fabricOf(ctx);
  // A vnic whose socket closes reconnects at once into any free slot (docs/switch.md):
  // reserve the free ones, so the pulled port stays dark until it is plugged back.
  const taken = new Set((await fabric.ports()).map((p) => p.port));
  const { maxPorts } = await fabric.stats();
  const reserved: number[] = [];
  for (let p = 1; p <= maxPorts; p++) if (!taken.has(p)) reserved.push(p);
  for (const p of reserved) await fabric.linkDown(p);
  try {
    await pullAndReplug(ctx, n);
  } finally {
    for (const p of reserved) await fabric.linkUp(p);
  }
}

async function pullAndReplug(ctx: RowContext, n: IbNode): Promise<void> {
  const fabric = fabricOf(ctx);
  await fabric.linkDown(n.swPort);
  const down = await n.g.run(
    `for i in $(seq 300); do grep -q DOWN /sys/class/infiniband/${n.dev.ibdev}/ports/1/state && exit 0; sleep 0.1; done; exit 1`,
    { timeoutSec: 60 },
  );
  ctx.expect(down.code === 0, `${n.g.name}: the port did not go DOWN after the cable pull`);
  const sm = await fabric.sm();
  const st = sm.ports.find((p) => p.port === n.swPort);
  ctx.expect(st?.state === "down", `SM: port ${n.swPort} is ${st?.state} after the pull`);
  const t0 = performance.now();
  await fabric.linkUp(n.swPort);
  const w = await waitSmActive(fabric, [n.guid], ACTIVE_DEADLINE_MS);
  ctx.expect(w.ok, `SM: ${n.g.name} not ACTIVE again within ${ACTIVE_DEADLINE_MS / 1000} s`);
  const back = w.sm.ports.find((p) => p.guid === n.guid);
  ctx.expect(
    back?.lid === n.lid && back?.port === n.swPort,
    `SM: ${n.g.name} came back as ${JSON.stringify(back)}, had LID ${n.lid} on port ${n.swPort}`,
  );
  const view = await waitGuestActive(n.g, n.dev.ibdev, 60);
  ctx.measure("sm.resweep.sec", (performance.now() - t0) / 1000, "s");
  ctx.expect(
    view.state === "ACTIVE" && view.lid === n.lid,
    `${n.g.name}: after the pull the port is ${JSON.stringify(view)}`,
  );
}

/** native InfiniBand link layer through the switch, LIDs from its subnet manager */
export const row: Row = {
  id: "ib-forwarding",
  title: "native InfiniBand link layer through the switch, LIDs from its subnet manager",
  needs: {
    guests: 3,
    fabric: "ib",
    builds: ["qemu", "image", "provider"],
    devices: { vnic: 1 },
  },
  sharesCores:
    "it judges forwarding against the model, SMA answers and traps; the SM's times are recorded, " +
    "not judged",
  timeoutSec: 900,
  modules: ["cnuas_net", "cnuas_ib"],
  run: async (ctx) => {
    const fabric = fabricOf(ctx);
    const [g0, g1, g2] = ctx.guests as Guest[];
    const nodes = await setupIbNodes(ctx, fabric, [g0, g1], IPS.slice(0, 2), ACTIVE_DEADLINE_MS);
    const sm = await fabric.sm();

    await ctx.step(
      "every table 4.1 attribute in IB mode (ibstat, ibv_devinfo -v, rdma link)",
      async () => {
        for (const n of nodes) {
          const seen = await readIbModeAttributes(n.g, n.dev.ibdev);
          const diff = ibModeAttributeDifferences(seen, {
            lid: n.lid,
            smLid: sm.lid,
            portGuid: n.guid,
          });
          ctx.expect(diff.length === 0, `${n.g.name}: ${diff.join("; ")}`);
        }
      },
    );

    await ctx.step("the switch's LFT holds the SM's LIDs", async () => {
      const t = await ibTables(fabric);
      const lft = new Map(t.lft.map((e) => [e.lid, e.port]));
      ctx.expect(lft.get(sm.lid) === 0, `LFT: SM LID ${sm.lid} -> ${lft.get(sm.lid)}, want 0`);
      for (const n of nodes) {
        ctx.expect(
          lft.get(n.lid) === n.swPort,
          `LFT: LID ${n.lid} -> ${lft.get(n.lid)}, want port ${n.swPort} (${n.g.name})`,
        );
      }
    });

    let trapped = { caps: [] as number[], represses: 0 };
    await captured(ctx, "traps", async () => {
      await ctx.step(`${nodes[0].g.name}: ib_cm leaves and comes back (rdma_ucm)`, async () => {
        await nodes[0].g.run(
          "modprobe -r rdma_ucm rdma_cm iw_cm ib_cm && modprobe rdma_ucm && sleep 2",
          {
            check: true,
            timeoutSec: 60,
          },
        );
      });
    }, {
      kind: "rdma",
      inspect: async (paths) => {
        trapped = traps(await readCapture(paths), nodes[0].swPort);
        return [];
      },
    });
    await ctx.step("trap 144 to the SM for each capability change, repressed", () => {
      const cm = 0x10000;
      ctx.expect(
        trapped.caps.length === 2 && !(trapped.caps[0] & cm) && !!(trapped.caps[1] & cm),
        `traps 144 with CapabilityMask ${trapped.caps.map((c) => c.toString(16))}, want two: ` +
          `without, then with IsConnectionManagementSupported`,
      );
      ctx.expect(trapped.represses >= 2, `${trapped.represses} TrapRepresses from the SM, want 2`);
      return Promise.resolve();
    });

    await ctx.step("IPoIB (ib_ipoib) comes up on both and they ping", async () => {
      // IPv4 only: IPv6's multicast joins (all-nodes, solicited-node, MLD) go on for a second
      // or more after the link comes up, into the forwarding capture, whose replay needs the
      // multicast table fixed (a CI run: g1 joined a group after g0 had sent to it)
      for (const n of nodes) await startIpoib(n, { ipv6: false });
      for (const n of nodes) await ipoibCarrier(n);
      await ping(nodes[1], nodes[0], 3);
    });

    const forwardingTables = await ibTables(fabric);
    await captured(ctx, "forwarding", async () => {
      await ctx.step(
        "IPoIB ping, ibv_rc_pingpong and ibv_ud_pingpong by LID, forwarded by DLID",
        async () => {
          await ping(nodes[1], nodes[0], 20);
          await pingpong(ctx, nodes, "ibv_rc_pingpong", "-s 4096 -n 200 -m 4096");
          await pingpong(ctx, nodes, "ibv_ud_pingpong", "-s 2048 -n 200");
        },
      );
    }, { kind: "rdma", inspect: replayInspector(ctx, "forwarding", forwardingTables) });

    await ctx.step(
      "unknown DLID, bad VCRC, bad LRH dropped at the switch; bad ICRC at the HCA",
      async () => {
        // its frames are wrong on purpose: the switch model judges this capture, not the
        // wire oracle (which flags exactly these, as the ib-e2e row's ICRC/VCRC steps show)
        const path = `${ctx.dir}/injected.pcapng`;
        const tables = await ibTables(fabric);
        const start = await fabric.startCapture(path);
        ctx.artifact(path);
        try {
          await injections(ctx, nodes);
        } finally {
          const end = (await fabric.stopCapture()).ports;
          const diff = await replayInspector(ctx, "injected", tables)([path], start, end);
          ctx.expect(diff.length === 0, `injected: ${diff.join("; ")}`);
        }
      },
    );

    let hostile = new Map<bigint, SmaAnswer>();
    await ctx.step(`hostile SMPs at ${nodes[1].g.name}'s QP0`, async () => {
      // three of them are wrong on the wire on purpose: the oracle must flag exactly those
      const path = `${ctx.dir}/hostile-smps.pcapng`;
      await fabric.startCapture(path);
      ctx.artifact(path);
      try {
        await hostileSmps(ctx, nodes[1]);
      } finally {
        await fabric.stopCapture();
      }
      hostile = smaAnswers(await readCapture([path]), nodes[1].swPort);
      const oracle = await checkPcapngFile(path);
      ctx.artifact(oracle.reportPath);
      const got = oracle.violations.map((v) => `${v.rule}: ${v.message}`).sort();
      ctx.expect(
        JSON.stringify(got) === JSON.stringify(HOSTILE_VIOLATIONS),
        `hostile-smps: the wire oracle found ${JSON.stringify(got)}, want exactly ` +
          JSON.stringify(HOSTILE_VIOLATIONS),
      );
    });
    await ctx.step("the SMA answered each hostile SMP as IBA says", () => {
      const a = hostile.get(TID.unknownAttr);
      ctx.expect(
        a?.method === 0x81 && a.status === 0x800c,
        `unknown attribute: answer ${JSON.stringify(a)}, want GetResp status 0x000C with D`,
      );
      const b = hostile.get(TID.badState);
      ctx.expect(
        b?.method === 0x81 && b.status === 0x801c,
        `PortState INIT: answer ${JSON.stringify(b)}, want GetResp status 0x001C with D`,
      );
      ctx.expect(!hostile.has(TID.badHop), "a bad hop pointer was answered");
      const ok = (tid: bigint) => hostile.get(tid)?.status === 0x8000;
      ctx.expect(ok(TID.setMkey), `M_Key Set: ${JSON.stringify(hostile.get(TID.setMkey))}`);
      ctx.expect(
        !hostile.has(TID.wrongMkey),
        "a Get without the M_Key (protection 2) was answered",
      );
      const right = hostile.get(TID.rightMkey);
      ctx.expect(
        right?.status === 0x8000 && right.mKeyViolations >= 1,
        `Get with the M_Key: ${
          JSON.stringify(right)
        }, want status 0 and M_KeyViolations >= 1 (an SM sweep in the window may add one)`,
      );
      ctx.expect(ok(TID.clearMkey), `M_Key cleared: ${JSON.stringify(hostile.get(TID.clearMkey))}`);
      // unknown attribute, bad state, M_Key set, right key, cleared; the rest dropped
      // (the SM's own sweeps are answered too: only our transactions count)
      const ours = [...hostile.keys()].filter((t) => t >> 8n === 0xc0ffeen);
      ctx.expect(ours.length === 5, `${ours.length} of our SMPs answered, want 5`);
      return Promise.resolve();
    });

    await ctx.step(
      `cable pull: ${nodes[1].g.name} goes DOWN, comes back ACTIVE with its LID`,
      () => cablePull(ctx, nodes[1]),
    );
    await ctx.step("IPoIB works again after the pull", async () => {
      await ipoibCarrier(nodes[1]);
      await ping(nodes[1], nodes[0], 3);
    });

    const [late] = await setupIbNodes(ctx, fabric, [g2], IPS.slice(2), ACTIVE_DEADLINE_MS);
    await ctx.step(`${g2.name} joins later without disturbing the first two`, async () => {
      const now = await fabric.sm();
      for (const n of nodes) {
        const p = now.ports.find((sp) => sp.guid === n.guid);
        ctx.expect(
          p?.state === "active" && p.lid === n.lid,
          `SM: ${n.g.name} is ${JSON.stringify(p)}, was LID ${n.lid}`,
        );
        const view = await guestPort(n.g, n.dev.ibdev);
        ctx.expect(
          view.state === "ACTIVE" && view.lid === n.lid,
          `${n.g.name}: ${JSON.stringify(view)}`,
        );
      }
      ctx.expect(
        !nodes.some((n) => n.lid === late.lid),
        `${g2.name} got LID ${late.lid}, already taken`,
      );
      await startIpoib(late, { ipv6: false });
      await ipoibCarrier(late);
      await ping(late, nodes[0], 3);
      await ping(nodes[1], nodes[0], 3);
    });
  },
};
