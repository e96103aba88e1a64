import { type Guest, GUEST_PATHS } from "../../harness/vm/types.ts";
import { type Row, type RowContext, RowFailure } from "../../harness/matrix/row.ts";
import { rdmaGuestNeeds } from "../../harness/matrix/needs.ts";
import { parseKeyValues } from "../../harness/guest/cnuas_net.ts";
import {
  collectBackground,
  inBackground,
  sh,
  shq,
  waitListening,
} from "../../harness/guest/shell.ts";
import {
  CNUAS_IB,
  type CnuasIbDev,
  configureRoceAddress,
  type IbvDevinfo,
  loadCnuasIb,
  parseIbstat,
  parseIbvDevinfo,
} from "../../harness/guest/cnuas_ib.ts";
import { pollCqFilterExit, runPollCqBench, SIGSYS_EXIT } from "../../harness/guest/poll_cq.ts";
import { TABLE_4_1, tableDifferences } from "../../harness/guest/cnuas_ib_attrs.ts";

// table 4.1 lives with the IB-mode half of the check; re-exported for the rows that read it here
export { TABLE_4_1, tableDifferences };

async function devinfo(g: Guest, dev: CnuasIbDev): Promise<IbvDevinfo> {
  return parseIbvDevinfo(await sh(g, `ibv_devinfo -v -d ${shq(dev.ibdev)}`));
}

async function checkTable(ctx: RowContext, g: Guest, dev: CnuasIbDev): Promise<void> {
  await ctx.step("ibv_devices lists the device with its node GUID", async () => {
    const out = await sh(g, "ibv_devices");
    const guid = (await sh(g, `cat /sys/class/infiniband/${dev.ibdev}/node_guid`)).trim()
      .replaceAll(":", "");
    ctx.expect(
      new RegExp(`^\\s*${dev.ibdev}\\s+${guid}\\s*$`, "m").test(out),
      `ibv_devices does not list ${dev.ibdev} ${guid}: ${out}`,
    );
  });
  await ctx.step("ibv_devinfo -v and ibstat show every table 4.1 attribute", async () => {
    const info = await devinfo(g, dev);
    const stat = parseIbstat(await sh(g, `ibstat ${shq(dev.ibdev)}`));
    ctx.expect(info.hcaId === dev.ibdev, `ibv_devinfo hca_id ${info.hcaId}`);
    const diffs = tableDifferences(TABLE_4_1, info, stat);
    ctx.expect(diffs.length === 0, diffs.join("; "));
  });
  await ctx.step("rdma dev show: a CA with firmware 0.1.0", async () => {
    const devs = JSON.parse(await sh(g, "rdma -j dev show")) as Record<string, unknown>[];
    const d = devs.find((x) => x.ifname === dev.ibdev);
    ctx.expect(d !== undefined, `rdma dev show lacks ${dev.ibdev}: ${JSON.stringify(devs)}`);
    ctx.expect(d!.node_type === "ca", `rdma dev show node_type ${d!.node_type}`);
    ctx.expect(d!.fw === "0.1.0", `rdma dev show fw ${d!.fw}`);
  });
}

/** The port state each tool must show with the link up (`true`) or down. */
export function expectedPortState(up: boolean) {
  return up
    ? {
      carrier: "1",
      devinfo: "PORT_ACTIVE (4)",
      phys: "LINK_UP (5)",
      rdma: "ACTIVE",
      rphys: "LINK_UP",
      ibstat: "Active",
      ibstatPhys: "LinkUp",
    }
    : {
      carrier: "0",
      devinfo: "PORT_DOWN (1)",
      phys: "DISABLED (3)",
      rdma: "DOWN",
      rphys: "DISABLED",
      ibstat: "Down",
      ibstatPhys: "Disabled",
    };
}

/** What the netdev and the three tools said about the port, read in one guest command. */
export interface PortSample {
  carrier: string;
  /** `rdma -j link show` entry of the device's port 1 (undefined: not listed). */
  rdma?: { netdev?: string; state?: string; physical_state?: string };
  devinfo: IbvDevinfo;
  ibstat: { ca: Map<string, string>; ports: Map<string, string>[] };
}

const SAMPLE_SEPARATOR = "==cnuas-port-sample==";

/** The command that reads one {@link PortSample}. */
function portSampleCommand(dev: CnuasIbDev): string {
  const d = shq(dev.ibdev);
  return [
    `cat /sys/class/net/${shq(dev.iface)}/carrier 2>/dev/null || echo 0`,
    "rdma -j link show",
    `ibv_devinfo -v -d ${d}`,
    `ibstat ${d}`,
  ].join(`; echo ${SAMPLE_SEPARATOR}; `);
}

/** Parse the output of {@link portSampleCommand}. */
export function parsePortSample(out: string, ibdev: string): PortSample {
  const parts = out.split(`${SAMPLE_SEPARATOR}\n`);
  if (parts.length !== 4) throw new RowFailure(`port sample has ${parts.length} parts: ${out}`);
  const links = JSON.parse(parts[1]) as Record<string, unknown>[];
  const l = links.find((x) => x.ifname === ibdev && x.port === 1);
  return {
    carrier: parts[0].trim(),
    rdma: l as PortSample["rdma"],
    devinfo: parseIbvDevinfo(parts[2]),
    ibstat: parseIbstat(parts[3]),
  };
}

/** Every way `sample` differs from the state of a link that is up (or down). */
export function portStateDifferences(sample: PortSample, up: boolean, iface: string): string[] {
  const want = expectedPortState(up);
  const port = sample.devinfo.ports[0];
  const ib = sample.ibstat.ports[0];
  const checks: [string, string | undefined, string][] = [
    ["carrier", sample.carrier, want.carrier],
    ["rdma link netdev", sample.rdma?.netdev, iface],
    ["rdma link state", sample.rdma?.state, want.rdma],
    ["rdma link physical_state", sample.rdma?.physical_state, want.rphys],
    ["ibv_devinfo state", port?.get("state"), want.devinfo],
    ["ibv_devinfo phys_state", port?.get("phys_state"), want.phys],
    ["ibstat State", ib?.get("State"), want.ibstat],
    ["ibstat Physical state", ib?.get("Physical state"), want.ibstatPhys],
  ];
  return checks.filter(([, got, w]) => got !== w).map(([what, got, w]) =>
    `${what} is ${got ?? "(absent)"}, want ${w}`
  );
}

/**
 * Sample the port until it shows the state of a link that is up (or down)
 * everywhere, for at most `timeoutSec` (the link settles asynchronously:
 * the device reconnects, the driver sees the interrupt, ib_core the
 * carrier); the differences of the last sample, empty once settled.
 */
async function settlePortState(
  g: Guest,
  dev: CnuasIbDev,
  up: boolean,
  timeoutSec: number,
): Promise<string[]> {
  const deadline = performance.now() + timeoutSec * 1000;
  for (;;) {
    const sample = parsePortSample(await sh(g, portSampleCommand(dev)), dev.ibdev);
    const diffs = portStateDifferences(sample, up, dev.iface);
    if (diffs.length === 0 || performance.now() > deadline) return diffs;
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** How long the port may take to follow the link (TCG guest, device reconnect). */
const SETTLE_SEC = 30;

/**
 * The port state follows the link at the switch: ACTIVE with the cable in,
 * DOWN once it is pulled, ACTIVE again after. Pulling it means taking down
 * the device's switch port and every other slot too — otherwise the device
 * just reconnects into a free one (docs/switch.md, link_down).
 */
async function checkPortState(ctx: RowContext, g: Guest, dev: CnuasIbDev): Promise<void> {
  if (!ctx.fabric) throw new RowFailure("ibstat needs the eth fabric and got none");
  const fabric = ctx.fabric;
  const expectState = async (up: boolean, when: string) => {
    const diffs = await settlePortState(g, dev, up, SETTLE_SEC);
    ctx.expect(diffs.length === 0, `${when}, after ${SETTLE_SEC} s: ${diffs.join("; ")}`);
  };
  await ctx.step("the port is ACTIVE/LinkUp with the link up at the switch", async () => {
    await sh(g, `ip link set dev ${shq(dev.iface)} up`);
    await expectState(true, "link up at the switch");
  });
  const { maxPorts } = await fabric.stats();
  const up = (await fabric.ports()).filter((p) => p.state === "up");
  ctx.expect(up.length === 1, `want the guest's one device on the switch: ${JSON.stringify(up)}`);
  const port = up[0].port;
  const slots = Array.from({ length: maxPorts }, (_, i) => i + 1);
  await ctx.step("a cable pull at the switch takes the port DOWN/Disabled", async () => {
    // every other slot first, so the device has nowhere to reconnect to
    for (const p of slots) if (p !== port) await fabric.linkDown(p);
    await fabric.linkDown(port);
    await expectState(false, `port ${port} and every other slot down at the switch`);
  });
  await ctx.step("the cable back in: ACTIVE/LinkUp again", async () => {
    for (const p of slots) await fabric.linkUp(p);
    await expectState(true, "every slot up again at the switch");
  });
}

/** The port checks; returns the GID index of the RoCE v2 GID they configured. */
async function checkPort(ctx: RowContext, g: Guest, dev: CnuasIbDev): Promise<number> {
  await checkPortState(ctx, g, dev);
  const gidIndex = await ctx.step(
    "the GID table gets the RoCE v2 GID of the interface's IPv4 address",
    async () => {
      const idx = await configureRoceAddress(g, dev, "192.168.77.10/24");
      ctx.log(`RoCE v2 GID of 192.168.77.10 at index ${idx}`);
      const info = await devinfo(g, dev);
      ctx.expect(
        info.gids[0]?.get(idx) === "::ffff:192.168.77.10",
        `ibv_devinfo GID[${idx}] is ${info.gids[0]?.get(idx)}`,
      );
      return idx;
    },
  );
  await ctx.step("active_mtu follows the netdev MTU", async () => {
    for (const [mtu, want] of [[9000, "4096 (5)"], [1500, "1024 (3)"], [700, "512 (2)"]] as const) {
      await sh(g, `ip link set dev ${shq(dev.iface)} mtu ${mtu}`);
      const got = (await devinfo(g, dev)).ports[0].get("active_mtu");
      ctx.expect(got === want, `netdev MTU ${mtu}: active_mtu ${got}, want ${want}`);
    }
    await sh(g, `ip link set dev ${shq(dev.iface)} mtu 1500`);
  });
  return gidIndex;
}

/** The TCP port ibv_rc_pingpong listens on when not given `-p`. */
const PINGPONG_PORT = 18515;

async function checkModule(ctx: RowContext, g: Guest, dev: CnuasIbDev): Promise<void> {
  await ctx.step("modinfo: version 0.2.0, licence Dual MIT/GPL", async () => {
    const kv = parseKeyValues(await sh(g, `modinfo ${CNUAS_IB}`));
    ctx.expect(kv.get("version") === "0.2.0", `modinfo version ${kv.get("version")}`);
    ctx.expect(kv.get("license") === "Dual MIT/GPL", `modinfo license ${kv.get("license")}`);
  });
  await ctx.step("rmmod goes through while a process holds the device, reload works", async () => {
    // ibv_rc_pingpong as a server holds a context, PD, MR, CQ and QP until
    // killed; it makes them before it listens for its client on TCP 18515.
    // A server that dies at start ends the wait at once (its status file).
    const tag = "/tmp/held-pp";
    const started = await g.run(
      inBackground(tag, `ibv_rc_pingpong -d ${shq(dev.ibdev)} -g 0`, 300) + "\n" +
        `(${waitListening([PINGPONG_PORT], 300, tag)}) && [ ! -f ${tag}.rc ]`,
      { timeoutSec: 90 },
    );
    if (started.code !== 0) {
      const bg = await collectBackground(g, tag, 1);
      throw new RowFailure(
        `ibv_rc_pingpong (the process holding the device) did not start listening ` +
          `(exit ${bg.code}): ${bg.out.trim().slice(-400)}`,
      );
    }
    await sh(g, "pgrep -x ibv_rc_pingpong >/dev/null");
    const r = await g.run("timeout 30 rmmod cnuas_ib", { timeoutSec: 60 });
    ctx.expect(r.code === 0, `rmmod cnuas_ib with a user holding it: exit ${r.code} ${r.stderr}`);
    await g.run("pkill -x ibv_rc_pingpong; sleep 0.5", { timeoutSec: 30 });
    const again = await loadCnuasIb(g);
    ctx.expect(again.ibdev.startsWith("cnuas_ib"), `reload gave ${again.ibdev}`);
    await sh(g, `ibv_devinfo -d ${shq(again.ibdev)}`);
  });
}

/**
 * The provider's fast path (HiCAIN: the CQ ring mapped into the process):
 * ibv_poll_cq drains real completions under a seccomp filter that kills the
 * process on any system call. The filter's own test comes first, so a
 * filter that does not bite cannot make the check pass.
 */
async function checkPollCq(ctx: RowContext, g: Guest, dev: CnuasIbDev): Promise<void> {
  await ctx.step("the seccomp filter kills a process that makes a system call", async () => {
    const code = await pollCqFilterExit(g, dev.ibdev);
    ctx.expect(
      code === SIGSYS_EXIT,
      `poll_cq_bench -x exited ${code}, want ${SIGSYS_EXIT} (SIGSYS)`,
    );
  });
  await ctx.step("ibv_poll_cq drains 4096 completions without a system call", async () => {
    const f = await runPollCqBench(g, dev.ibdev, { emptyPolls: 100000 });
    ctx.measure("pollCq.drainNsPerCompletion", f.drainNsPerCompletion, "ns");
    ctx.measure("pollCq.emptyPollNs", f.emptyPollNs, "ns");
    ctx.measure("pollCq.getppidSyscallNs", f.getppidSyscallNs, "ns");
  });
}

/**
 * The receive fast path (the RQ ring mapped into the process):
 * `drivers/test/post_recv_bench.c` posts a full receive queue from a thread
 * under a seccomp filter that kills the process on any system call (and
 * checks the full-ring ENOMEM and too-many-SGEs EINVAL there), then, back
 * outside the filter, that every receive flushes in order in the error
 * state, and one posted in the error state too. With `-x` it must die of
 * SIGSYS (the filter bites); with CNUAS_NO_RQ_RING=1 (the POST_RECV
 * command, no filter) it gives the figure to compare with. The same for an
 * SRQ's mapped ring with `-s`: its receives never flush, so a UD QP on the
 * SRQ takes each of them, in order, for datagrams sent to the device's own
 * GID (`gidIndex`).
 */
async function checkPostRecv(
  ctx: RowContext,
  g: Guest,
  dev: CnuasIbDev,
  gidIndex: number,
): Promise<void> {
  const bench = `${GUEST_PATHS.bin}/post_recv_bench -d ${shq(dev.ibdev)}`;
  const run = async (cmd: string) => {
    const r = await g.run(`${cmd} 2>&1; echo "exit=$?"`, { timeoutSec: 300 });
    const code = Number(/exit=(\d+)\s*$/.exec(r.stdout)?.[1] ?? -1);
    const ns = Number(/post_recv_ns=([\d.]+)/.exec(r.stdout)?.[1] ?? NaN);
    return { out: r.stdout, code, ns };
  };
  // the filter's own test: one system call inside it must be fatal
  await ctx.step(
    "the seccomp filter kills a post_recv_bench that makes a system call",
    async () => {
      const x = await run(`${bench} -x -n 16`);
      ctx.expect(x.code === SIGSYS_EXIT, `post_recv_bench -x exited ${x.code}, want SIGSYS`);
    },
  );
  // the SRQ's receives are then taken over loopback, every one in order
  const queues = [
    { verb: "ibv_post_recv", queue: "qp", cmd: bench, figure: "postRecv", command: "POST_RECV" },
    {
      verb: "ibv_post_srq_recv",
      queue: "srq",
      cmd: `${bench} -s -g ${gidIndex}`,
      figure: "postSrqRecv",
      command: "POST_SRQ_RECV",
    },
  ] as const;
  for (const q of queues) {
    await ctx.step(`${q.verb} posts 4096 receives without a system call`, async () => {
      const fast = await run(q.cmd);
      if (fast.code === SIGSYS_EXIT) {
        throw new RowFailure(`${q.verb} on ${dev.ibdev} made a system call (SIGSYS)`);
      }
      const queue = new RegExp(`^queue=${q.queue}$`, "m");
      if (fast.code !== 0 || !/^PASS$/m.test(fast.out) || !queue.test(fast.out)) {
        throw new RowFailure(`${q.cmd}: exit ${fast.code}: ${fast.out.slice(-800)}`);
      }
      const slow = await run(`CNUAS_NO_RQ_RING=1 ${q.cmd} -S`);
      ctx.expect(slow.code === 0, `${q.cmd} -S (${q.command}): ${slow.out.slice(-400)}`);
      ctx.measure(`${q.figure}.ringNs`, fast.ns, "ns");
      ctx.measure(`${q.figure}.commandNs`, slow.ns, "ns");
    });
  }
}

/**
 * The kernel reads a user QP's and a user SRQ's receive ring from
 * user-writable memory: drivers/test/rq_ring_hostile and srq_ring_hostile
 * scribble on them (a producer index far ahead, a slot claiming 0xffffffff
 * SGEs); the kernel must neither crash (the dmesg guard) nor use what it
 * cannot trust, and answer as docs/devices.md says. The SRQ's receives are
 * taken by UD sends to the device's own GID (`gidIndex`), over loopback.
 */
async function checkHostileRing(
  ctx: RowContext,
  g: Guest,
  dev: CnuasIbDev,
  gidIndex: number,
): Promise<void> {
  const cases = [
    ["a QP's", `rq_ring_hostile -d ${shq(dev.ibdev)}`],
    ["an SRQ's", `srq_ring_hostile -d ${shq(dev.ibdev)} -g ${gidIndex}`],
  ] as const;
  for (const [whose, cmd] of cases) {
    const prog = cmd.split(" ")[0];
    await ctx.step(`a scribbled-on receive ring is not trusted: ${whose} (${prog})`, async () => {
      const r = await g.run(`${GUEST_PATHS.bin}/${cmd} 2>&1`, { timeoutSec: 120 });
      ctx.log(r.stdout);
      ctx.expect(
        r.code === 0 && /^PASS$/m.test(r.stdout),
        `${prog} exit ${r.code}: ${r.stdout.slice(-800)}`,
      );
    });
  }
}

/** The datasheet's attributes as ibv_devinfo, ibstat and rdma print them. */
export const row: Row = {
  id: "ibstat",
  title: "ibv_devinfo -v, ibstat, rdma show the datasheet; poll_cq and post_recv are syscall-free",
  // the port state must follow a real link: the device on a switch
  needs: rdmaGuestNeeds(),
  sharesCores:
    "it judges attributes, counters and syscall counts; the poll and post costs are recorded, " +
    "not judged",
  timeoutSec: 300,
  modules: ["cnuas_net", "cnuas_ib"],
  async run(ctx) {
    const g = ctx.guests[0];
    const dev = await ctx.step("load cnuas_net and cnuas_ib", () => loadCnuasIb(g));
    ctx.log(`${dev.ibdev} on ${dev.iface} (${dev.pci})`);
    await checkTable(ctx, g, dev);
    const gidIndex = await checkPort(ctx, g, dev);
    await checkPollCq(ctx, g, dev);
    await checkPostRecv(ctx, g, dev, gidIndex);
    await checkHostileRing(ctx, g, dev, gidIndex);
    await checkModule(ctx, g, dev);
  },
};
