import { type Row, type RowContext, RowFailure } from "../../harness/matrix/row.ts";
import { rdmaPairNeeds } from "../../harness/matrix/needs.ts";
import { captured } from "../../harness/oracle/wire_capture.ts";
import { buildRoceFrame, OP } from "../../harness/models/rdma/mod.ts";
import { GUEST_PATHS } from "../../harness/vm/types.ts";
import { rpingDataErrors, startPair } from "../../harness/guest/cnuas_ib.ts";
import {
  expectBothExit0,
  hwCounters,
  measurePerftest,
  pair,
  pairBoth,
  pingpongResult,
  type RoceNode as Node,
  setupRoceNodes,
} from "../../harness/guest/roce_pair.ts";

/** Addresses of g0 (server side) and g1 on the fabric. */
const IPS = ["10.77.0.1", "10.77.0.2"];

/** ibv_rc_pingpong message sizes: 1 B to 1 MiB. */
export const PINGPONG_SIZES = [1, 64, 1024, 4096, 65536, 1048576];
/** Iterations of each pingpong (the issue asks for 1,000). */
export const PINGPONG_ITERS = 1000;

/** perftest programs the row runs, each exiting 0 with its figures recorded. */
export const PERFTESTS = [
  "ib_send_bw",
  "ib_write_bw",
  "ib_read_bw",
  "ib_atomic_bw",
  "ib_send_lat",
  "ib_write_lat",
  "ib_read_lat",
];

async function setup(ctx: RowContext): Promise<Node[]> {
  return await setupRoceNodes(ctx, IPS);
}

/** One ibv_rc_pingpong pair run, its figures recorded under `key`. */
async function pingpong(
  ctx: RowContext,
  nodes: Node[],
  opts: { size: number; iters: number; events: boolean; mtu: number },
): Promise<void> {
  const [s, c] = nodes;
  // --chk: the tool's own data check (see pingpongDataErrors for what it covers)
  const flags = `-s ${opts.size} -n ${opts.iters} -m ${opts.mtu}${opts.events ? " -e" : ""} --chk`;
  await ctx.step(`ibv_rc_pingpong ${flags}`, async () => {
    const args = (n: Node) => `ibv_rc_pingpong -d ${n.dev.ibdev} -g ${n.gid} ${flags}`;
    const what = `ibv_rc_pingpong ${flags}`;
    const r = await pairBoth(what, nodes, args(s), `${args(c)} ${s.ip}`, 18515, 900);
    const f = pingpongResult(what, r);
    const key = `pingpong.mtu${opts.mtu}.${opts.events ? "events." : ""}${opts.size}`;
    ctx.measure(`${key}.usecPerIter`, f!.usecPerIter, "us");
    ctx.measure(`${key}.mbitPerSec`, f!.mbitPerSec, "Mbit/s");
  });
}

/** Set the netdev MTU of both guests (the port's active MTU follows it). */
async function setMtu(nodes: Node[], mtu: number): Promise<void> {
  for (const n of nodes) {
    await n.g.run(`ip link set dev ${n.dev.iface} mtu ${mtu}`, { check: true, timeoutSec: 30 });
  }
}

/**
 * perftest has no check of the data it moves (it measures; no option makes
 * it compare buffers): its runs here prove completion and speed, and the
 * wire oracle checks every frame of them. Payload is checked by the
 * pingpongs (--chk), rping (-V), the examples and peermem.
 */
async function perftests(ctx: RowContext, nodes: Node[]): Promise<void> {
  for (const [i, prog] of PERFTESTS.entries()) {
    await measurePerftest(ctx, nodes, prog, 18600 + i);
  }
}

/** Each frame either guest's cnuas_ib receives is dropped with probability 1/N in the loss step. */
export const LOSS_ONE_IN = 100;

const counters = hwCounters;

async function setLoss(nodes: Node[], every: number): Promise<void> {
  for (const n of nodes) {
    await n.g.run(
      `echo ${every} >/sys/module/cnuas_ib/parameters/rx_drop_one_in`,
      {
        check: true,
        timeoutSec: 30,
      },
    );
  }
}

/** The loss pattern's seed: the one asked for (`--loss-seed`), else a random uint32. */
export function lossSeed(asked: number | undefined): number {
  return asked ?? crypto.getRandomValues(new Uint32Array(1))[0];
}

/** The seed and ratio of the last "rx loss injection" line of a kernel log. */
export function lastLossLine(dmesg: string): { oneIn: number; seed: number } | undefined {
  const all = [...dmesg.matchAll(/cnuas_ib: rx loss injection 1\/(\d+) seed (\d+)\s*$/gm)];
  const m = all.at(-1);
  return m ? { oneIn: Number(m[1]), seed: Number(m[2]) } : undefined;
}

/**
 * Seed the loss pattern, then switch loss on (the seed first: the driver
 * re-seeds on each write and says so in dmesg once N is set); check that
 * each guest's kernel says it drops 1 in `every` with that seed.
 */
async function startLoss(
  ctx: RowContext,
  nodes: Node[],
  every: number,
  seed: number,
): Promise<void> {
  const p = "/sys/module/cnuas_ib/parameters";
  for (const n of nodes) {
    await n.g.run(`echo ${seed} >${p}/rx_drop_seed && echo ${every} >${p}/rx_drop_one_in`, {
      check: true,
      timeoutSec: 30,
    });
    const said = lastLossLine((await n.g.run("dmesg", { timeoutSec: 30 })).stdout);
    ctx.expect(
      said?.oneIn === every && said?.seed === seed,
      `${n.g.name}: dmesg says ${
        said ? `1/${said.oneIn} seed ${said.seed}` : "nothing"
      } about rx loss injection, want 1/${every} seed ${seed}`,
    );
  }
}

/**
 * ibv_rc_pingpong --chk under loss. Its server exits once its own work is
 * done, so a lost ACK of the client's last SEND would leave the client
 * retrying into a QP that is gone (RETRY_EXC_ERR, on any RDMA device). So
 * loss is switched off while the run is still going: every frame before is
 * exposed to loss, the final exchange is not. The run must still be going
 * on both ends when loss goes off, or the step fails (make it longer).
 */
export const LOSS_PINGPONG = {
  size: 65536,
  iters: 2000,
  mtu: 1024,
  /** Frames each guest must have dropped before loss goes off. */
  minDrops: 20,
  /** How long to wait for those drops. */
  dropWaitSec: 120,
};

/** rx_drop_injected of each guest since `before`. */
async function dropsSince(nodes: Node[], before: Record<string, number>[]): Promise<number[]> {
  const now = await Promise.all(nodes.map(counters));
  return now.map((a, i) => (a.rx_drop_injected ?? 0) - (before[i].rx_drop_injected ?? 0));
}

async function pingpongUnderLoss(ctx: RowContext, nodes: Node[]): Promise<void> {
  const [s, c] = nodes;
  const { size, iters, mtu, minDrops, dropWaitSec } = LOSS_PINGPONG;
  const flags = `-s ${size} -n ${iters} -m ${mtu} --chk`;
  const what = `ibv_rc_pingpong ${flags} under loss`;
  await ctx.step(
    `loss 1/${LOSS_ONE_IN}: ibv_rc_pingpong ${flags}, loss off before its end`,
    async () => {
      const args = (n: Node) => `ibv_rc_pingpong -d ${n.dev.ibdev} -g ${n.gid} -p 18516 ${flags}`;
      const before = await Promise.all(nodes.map(counters));
      const run = await startPair(s.g, args(s), c.g, `${args(c)} ${s.ip}`, 18516, 900);
      const deadline = performance.now() + dropWaitSec * 1000;
      let drops = await dropsSince(nodes, before);
      while (drops.some((d) => d < minDrops) && performance.now() < deadline) {
        const st = await run.running();
        if (!st.server || !st.client) break;
        await new Promise((r) => setTimeout(r, 500));
        drops = await dropsSince(nodes, before);
      }
      await setLoss(nodes, 0);
      const st = await run.running();
      const r = await run.wait();
      ctx.log(`${what}: ${drops.join(" + ")} frames dropped before loss went off`);
      ctx.measure("loss.pingpong.rxDropInjected", drops[0] + drops[1], "frames");
      ctx.expect(
        st.server && st.client,
        `${what}: it ended (server ${st.server ? "running" : "done"}, client ` +
          `${st.client ? "running" : "done"}) before loss went off; give it more iterations`,
      );
      ctx.expect(
        drops.every((d) => d >= minDrops),
        `${what}: ${drops.join(" and ")} frames dropped in ${dropWaitSec} s, want ${minDrops} each`,
      );
      const f = pingpongResult(what, expectBothExit0(what, r));
      ctx.measure("loss.pingpong.usecPerIter", f.usecPerIter, "us");
    },
  );
}

/** The recovery paths: sequence NAKs, timeouts, duplicates, lost read responses. */
async function lossRecovery(ctx: RowContext, nodes: Node[]): Promise<void> {
  const [s, c] = nodes;
  const before = await Promise.all(nodes.map(counters));
  const seed = lossSeed(ctx.config.lossSeed);
  ctx.log(`loss seed ${seed} (replay this pattern with --loss-seed ${seed})`);
  ctx.measure("loss.seed", seed, "seed");
  await startLoss(ctx, nodes, LOSS_ONE_IN, seed);
  try {
    // perftest holds both QPs until a final handshake over TCP, so loss
    // stays on to its end; it checks no data (see perftests). The pingpong
    // after them checks data under loss (see LOSS_PINGPONG).
    const runs: [string, (n: Node) => string, number][] = [
      [
        "ib_send_bw -s 65536 -n 200",
        (n) => `ib_send_bw -d ${n.dev.ibdev} -x ${n.gid} -p 18903 -s 65536 -n 200 -F`,
        18903,
      ],
      [
        "ib_write_bw -s 65536 -n 200",
        (n) => `ib_write_bw -d ${n.dev.ibdev} -x ${n.gid} -p 18900 -s 65536 -n 200 -F`,
        18900,
      ],
      [
        "ib_read_bw -s 65536 -n 200",
        (n) => `ib_read_bw -d ${n.dev.ibdev} -x ${n.gid} -p 18901 -s 65536 -n 200 -F`,
        18901,
      ],
      [
        "ib_atomic_bw -n 500",
        (n) => `ib_atomic_bw -d ${n.dev.ibdev} -x ${n.gid} -p 18902 -n 500 -F`,
        18902,
      ],
    ];
    for (const [name, cmd, port] of runs) {
      await ctx.step(`loss 1/${LOSS_ONE_IN}: ${name}`, async () => {
        await pair(`${name} with loss`, nodes, cmd(s), `${cmd(c)} ${s.ip}`, port);
      });
    }
    // last: it switches loss off itself before its end
    await pingpongUnderLoss(ctx, nodes);
  } finally {
    await setLoss(nodes, 0);
  }
  const after = await Promise.all(nodes.map(counters));
  const delta = (k: string) =>
    after.reduce((sum, a, i) => sum + (a[k] ?? 0) - (before[i][k] ?? 0), 0);
  for (
    const k of [
      "rx_drop_injected",
      "retransmits",
      "send_seq_nak",
      "rcvd_seq_nak",
      "duplicate_request",
    ]
  ) {
    ctx.measure(`loss.${k}`, delta(k), "count");
  }
  ctx.expect(
    delta("rx_drop_injected") > 0,
    "no frame was dropped: the loss knob did nothing",
  );
  ctx.expect(
    delta("retransmits") > 0,
    "frames were lost but nothing was retransmitted",
  );
  ctx.expect(delta("send_seq_nak") > 0, "no sequence NAK was sent for a gap");
}

/** Frames of each kind the ICRC step sends to g1 from the switch. */
export const ICRC_FRAMES = { bad: 7, good: 5 };

/** A QP number no QP of the row has (cnuas_ib hands out small ones). */
const NO_SUCH_QP = 0xabcde;

/** A MAC address "aa:bb:..." as a 48-bit number. */
function macNumber(mac: string): number {
  return parseInt(mac.replaceAll(":", ""), 16);
}

/** An IPv4 address "a.b.c.d" as a 32-bit number. */
function ipNumber(ip: string): number {
  return ip.split(".").reduce((n, o) => n * 256 + Number(o), 0);
}

/**
 * ICRC: frames built by the TypeScript model (IBTA/RoCEv2 ICRC) are sent to
 * g1 from its switch port, outside any capture: those with one ICRC bit
 * flipped must be dropped and counted as rcvd_icrc_err; those with the
 * model's ICRC must pass the check (and be dropped later, counted as
 * rcvd_drop, for want of a QP). Exact counts both ways.
 */
async function icrc(ctx: RowContext, nodes: Node[]): Promise<void> {
  const [src, dst] = nodes;
  await ctx.step(
    `ICRC: ${ICRC_FRAMES.bad} frames with a bad ICRC counted and dropped, ` +
      `${ICRC_FRAMES.good} with a good one pass the check`,
    async () => {
      const mac = async (n: Node) =>
        (await n.g.run(`cat /sys/class/net/${n.dev.iface}/address`, { check: true })).stdout
          .trim();
      const [srcMac, dstMac] = [await mac(src), await mac(dst)];
      const fabric = ctx.fabric!;
      const port = await fabric.macPort(dstMac);
      if (port === undefined) throw new RowFailure(`the switch has not learned ${dstMac}`);
      const frame = (psn: number) =>
        buildRoceFrame({
          srcMac: macNumber(srcMac),
          dstMac: macNumber(dstMac),
          srcIp: ipNumber(src.ip),
          dstIp: ipNumber(dst.ip),
          bth: { opcode: OP.RC_SEND_ONLY, destQp: NO_SUCH_QP, psn },
          payload: new Uint8Array(32).fill(psn & 0xff),
        });
      const inject = (f: Uint8Array) => fabric.inject(port, f, "egress");
      const before = await counters(dst);
      for (let i = 0; i < ICRC_FRAMES.bad; i++) {
        const f = frame(100 + i);
        f[f.length - 1 - (i % 4)] ^= 1 << (i % 8); // one bit of the ICRC
        await inject(f);
      }
      for (let i = 0; i < ICRC_FRAMES.good; i++) {
        await inject(frame(200 + i));
      }
      let d = { icrc: 0, drop: 0 };
      for (let t = 0; t < 40; t++) {
        const after = await counters(dst);
        const delta = (k: string) => (after[k] ?? 0) - (before[k] ?? 0);
        d = { icrc: delta("rcvd_icrc_err"), drop: delta("rcvd_drop") };
        if (d.icrc >= ICRC_FRAMES.bad && d.drop >= ICRC_FRAMES.good) break;
        await new Promise((r) => setTimeout(r, 250));
      }
      ctx.measure("icrc.rcvd_icrc_err", d.icrc, "count");
      ctx.expect(
        d.icrc === ICRC_FRAMES.bad,
        `rcvd_icrc_err rose by ${d.icrc}, want ${ICRC_FRAMES.bad}`,
      );
      ctx.expect(
        d.drop === ICRC_FRAMES.good,
        `rcvd_drop rose by ${d.drop}, want ${ICRC_FRAMES.good} (good ICRC, no such QP)`,
      );
    },
  );
}

async function examples(ctx: RowContext, nodes: Node[]): Promise<void> {
  const [s, c] = nodes;
  for (const [i, ex] of ["roce_send_recv", "roce_rdma_write"].entries()) {
    await ctx.step(`example ${ex}`, async () => {
      const port = 18700 + i;
      const bin = `${GUEST_PATHS.bin}/${ex}`;
      const out = await pair(
        ex,
        nodes,
        `${bin} -d ${s.dev.ibdev} -g ${s.gid} -p ${port}`,
        `${bin} -d ${c.dev.ibdev} -g ${c.gid} -p ${port} ${s.ip}`,
        port,
      );
      ctx.expect(
        /PASS/.test(out),
        `${ex} did not report PASS: ${out.slice(-1500)}`,
      );
    });
  }
}

/** rdma_cm over RoCEv2: address and route resolution, CM MADs on QP1, then RC traffic. */
async function rping(ctx: RowContext, nodes: Node[]): Promise<void> {
  const s = nodes[0];
  await ctx.step("rping -V (rdma_cm: CM over the GSI QP, then RDMA READ/WRITE)", async () => {
    // -V: the client compares what the server wrote back with what it sent
    const out = await pair(
      "rping",
      nodes,
      `rping -s -a ${s.ip} -p 18850 -C 20 -S 1024 -v -V`,
      `rping -c -a ${s.ip} -p 18850 -C 20 -S 1024 -v -V`,
      0,
    );
    const bad = rpingDataErrors(out);
    ctx.expect(bad.length === 0, `rping -V found wrong data: ${bad.join("; ")}`);
    const pings = out.split("\n").filter((l) => /ping data:/.test(l)).length;
    ctx.expect(pings === 20, `rping printed ${pings} of 20 pings: ${out.slice(-800)}`);
  });
}

/** Inline-length cases roce_security runs: RC and UD, each with inline room and with none. */
const INLINE_CASES = 4;

async function security(ctx: RowContext, nodes: Node[]): Promise<void> {
  const [s, c] = nodes;
  const bin = `${GUEST_PATHS.bin}/roce_security`;
  await ctx.step(
    "security and RNR: access flags, foreign PD, bounds, receive not ready, inline lengths",
    async () => {
      const out = await pair(
        "roce_security",
        nodes,
        `${bin} -d ${s.dev.ibdev} -g ${s.gid} -p 18800`,
        `${bin} -d ${c.dev.ibdev} -g ${c.gid} -p 18800 ${s.ip}`,
        18800,
      );
      ctx.log(out);
      // the exit status covers every case; this proves the inline ones ran at all
      const inline = out.split("\n").filter((l) => /^case inline .*: ok$/.test(l)).length;
      ctx.measure("security.inlineCasesOk", inline, "count");
      ctx.expect(
        inline === INLINE_CASES,
        `roce_security: ${inline} of ${INLINE_CASES} inline-length cases ok:\n${out.slice(-1500)}`,
      );
    },
  );
}

/** Unmodified RDMA tools over RoCEv2 between two guests, every frame checked. */
export const row: Row = {
  id: "roce-e2e",
  title: "unmodified RDMA tools over RoCEv2: pingpongs, perftest, rping, the examples",
  needs: rdmaPairNeeds("eth", "guestprogs"),
  timeoutSec: 1200,
  modules: ["cnuas_net", "cnuas_ib"],
  async run(ctx) {
    if (!ctx.fabric) throw new RowFailure("roce-e2e needs the eth fabric and got none");
    const nodes = await setup(ctx);
    const small = PINGPONG_SIZES.filter((n) => n < 1048576);
    await captured(ctx, "pingpong", async () => {
      for (const events of [false, true]) {
        for (const size of small) {
          await pingpong(ctx, nodes, { size, iters: PINGPONG_ITERS, events, mtu: 1024 });
        }
      }
      // segmentation at the smallest path MTU
      await pingpong(ctx, nodes, { size: 65536, iters: 100, events: false, mtu: 256 });
    });
    // larger path MTUs need a larger netdev MTU (the port's active MTU follows it)
    await setMtu(nodes, 9000);
    await captured(ctx, "pingpong-mtu", async () => {
      for (const mtu of [2048, 4096]) {
        await pingpong(ctx, nodes, { size: 65536, iters: 100, events: false, mtu });
      }
    });
    // 1 MiB messages at path MTU 4096: a quarter of the frames of 1024
    for (const events of [false, true]) {
      await captured(
        ctx,
        `pingpong-1MiB${events ? "-events" : ""}`,
        () => pingpong(ctx, nodes, { size: 1048576, iters: PINGPONG_ITERS, events, mtu: 4096 }),
      );
    }
    await setMtu(nodes, 1500);
    await captured(ctx, "perftest", () => perftests(ctx, nodes));
    await captured(ctx, "examples-security-rping", async () => {
      await examples(ctx, nodes);
      await security(ctx, nodes);
      await rping(ctx, nodes);
    });
    await captured(ctx, "loss", () => lossRecovery(ctx, nodes));
    await icrc(ctx, nodes);
    await ctx.step("port counters", async () => {
      for (const n of nodes) {
        const d = `/sys/class/infiniband/${n.dev.ibdev}/ports/1/hw_counters`;
        const r = await n.g.run(`cd ${d} && grep -H . *`, { timeoutSec: 30 });
        for (const line of r.stdout.split("\n")) {
          const m = /^(\w+):(\d+)$/.exec(line.trim());
          if (m) {
            ctx.measure(`counters.${n.g.name}.${m[1]}`, Number(m[2]), "count");
          }
        }
      }
    });
  },
};
