/**
 * Bench of native InfiniBand against RoCEv2 on the same two guests, and of
 * the switch's subnet manager (issue 21, "Bench").
 *
 * One row, one pair of VMs, one switch daemon whose mode changes half-way:
 *
 * 1. ib fabric. cnuas_ib `link_layer=ib` on both guests; the SM brings both
 *    ports ACTIVE (setupIbNodes). Then {@link SM_REPS} times: rmmod cnuas_ib
 *    on both, wait until the SM no longer has either port active, modprobe on
 *    both at once and time until the SM and each guest see both ACTIVE.
 * 2. {@link SM_REPS} cable pulls, alternating guests: `link_down` then
 *    `link_up` of the guest's switch port; time until the SM has that GUID
 *    active again, and until the guest's port shows ACTIVE again.
 * 3. IPoIB up, perftest's {@link PERF_CASES} over LIDs (IPoIB addresses as
 *    the side channel).
 * 4. rmmod ib_ipoib cnuas_ib, restart the switch in eth mode (the vnics
 *    reconnect), cnuas_ib in RoCE mode, the same perftest cases over RoCEv2.
 *
 * Both modes run every case at path MTU 1024 (`-m 1024`; RoCE's 1500-byte
 * netdev allows no more), so the comparison is of link layers, not MTUs.
 * The figures: `ib.*`, `roce.*`, `ibOverRoce.*` (above 1: IB faster) and
 * `sm.*` (ms, medians, with budgets and their verdicts).
 */
import type { Config } from "../config.ts";
import type { FabricHandle, Row, RowContext } from "../matrix/row.ts";
import { RowFailure } from "../matrix/row.ts";
import { rdmaPairNeeds } from "../matrix/needs.ts";
import type { Measurement } from "../report/schema.ts";
import { waitCarrier } from "../guest/cnuas_net.ts";
import { CNUAS_IB, configureRoceAddress, loadCnuasIb } from "../guest/cnuas_ib.ts";
import { type IbNode, setupIbNodes, startIpoib } from "../guest/ib_pair.ts";
import type { SmStatus } from "../fabric/client.ts";
import type { Guest } from "../vm/types.ts";
import { hostNow, nsToMs, readGuestClock } from "../vm/clock.ts";
import { shq } from "../guest/shell.ts";
import { measureAll, type Side, speedup } from "./rdma_perf.ts";
import { measuredSoFar, runBenchRow } from "./one_row.ts";
import { median } from "../stats.ts";

/** IPoIB addresses (IB half) and cnuas_net addresses (RoCE half). */
const IB_IPS = ["10.79.0.1", "10.79.0.2"];
const ROCE_IPS = ["10.78.0.1", "10.78.0.2"];

/** Repetitions of each SM measurement; the figure is their median. */
export const SM_REPS = 5;

/** Path MTU of every perftest run, both modes. */
export const PERF_MTU = 1024;

/**
 * Budgets under TCG (ms): modprobe on both guests to both ports ACTIVE as
 * the guests see it, and a cable pull to the port ACTIVE again in the
 * guest. The verdict is recorded (`…budgetPass` 1 or 0), not asserted.
 */
export const SM_BUDGET_MS = { insmodToActive: 10_000, cablePullToActive: 5_000 };

/**
 * The `NAME <ns>` lines the guest-side timing scripts print, by name (the
 * last of each name wins); other lines are ignored.
 */
export function parseStamps(out: string): Record<string, number> {
  const got: Record<string, number> = {};
  for (const l of out.split("\n")) {
    const m = /^(\w+) (\d{10,})\s*$/.exec(l.trim());
    if (m) got[m[1]] = nsToMs(m[2]);
  }
  return got;
}

/**
 * The summary figures of one SM measurement's samples (ms): median, min and
 * max under `prefix`, plus the budget and its verdict when `budgetMs` is
 * given (pass: the median within the budget).
 */
export function smFigures(
  prefix: string,
  samples: readonly number[],
  budgetMs?: number,
): Record<string, Measurement> {
  const r = (v: number) => Math.round(v);
  const med = median(samples);
  const out: Record<string, Measurement> = {
    [`${prefix}.medianMs`]: { value: r(med), unit: "ms" },
    [`${prefix}.minMs`]: { value: r(Math.min(...samples)), unit: "ms" },
    [`${prefix}.maxMs`]: { value: r(Math.max(...samples)), unit: "ms" },
    [`${prefix}.reps`]: { value: samples.length, unit: "runs" },
  };
  if (budgetMs !== undefined) {
    out[`${prefix}.budgetMs`] = { value: budgetMs, unit: "ms" };
    out[`${prefix}.budgetPass`] = { value: med <= budgetMs ? 1 : 0, unit: "bool" };
  }
  return out;
}

/**
 * IB over RoCE for every figure both modes have, as `ibOverRoce.<name>`
 * (bandwidths and rates divide, latencies invert: above 1, IB is faster).
 */
export function ibOverRoce(
  ib: Record<string, number>,
  roce: Record<string, number>,
): Record<string, Measurement> {
  const out: Record<string, Measurement> = {};
  for (const [name, v] of Object.entries(ib)) {
    if (name in roce) {
      out[`ibOverRoce.${name}`] = { value: speedup(name, v, roce[name]), unit: "x" };
    }
  }
  return out;
}

/** The guest clock's lead over the host's: the best of three round trips. */
async function guestOffset(g: Guest): Promise<number> {
  const best = await readGuestClock(g);
  if (!best) throw new RowFailure(`${g.name}: cannot read its clock`);
  return best.offMs;
}

/**
 * The shell lines that poll the guest's port state every 20 ms until it is
 * (or is not) ACTIVE, exiting 5 when it never gets there (30 s). The verdict
 * is the read that ended the loop, never a second read (the state may have
 * moved on by then).
 */
export function waitState(state: string, active: boolean, tries = 1500): string {
  const [hit, miss] = active ? ["ok=1; break", ":"] : [":", "ok=1; break"];
  return [
    "ok=0",
    `for i in $(seq ${tries}); do read s < ${state} 2>/dev/null || s=; ` +
    `case "$s" in *ACTIVE*) ${hit};; *) ${miss};; esac; sleep 0.02; done`,
    '[ "$ok" = 1 ] || exit 5',
  ].join("\n");
}

/** Poll the SM until `done(sm)` or `deadlineMs`; returns the host time it held, or undefined. */
async function smUntil(
  fabric: FabricHandle,
  done: (sm: SmStatus) => boolean,
  deadlineMs: number,
): Promise<number | undefined> {
  const end = performance.now() + deadlineMs;
  while (performance.now() < end) {
    if (done(await fabric.sm())) return hostNow();
    await new Promise((r) => setTimeout(r, 20));
  }
  return undefined;
}

function activeGuids(sm: SmStatus): Set<string> {
  return new Set(sm.ports.filter((p) => p.state === "active").map((p) => p.guid ?? ""));
}

/**
 * rmmod cnuas_ib on both, wait until the SM has neither port active, then
 * modprobe on both at once; returns when the SM had both active (ms after the
 * host issued the modprobes) and the longer of the guests' own modprobe-to-ACTIVE
 * (guest clock, no offset error).
 */
async function timedInsmod(
  ctx: RowContext,
  fabric: FabricHandle,
  nodes: IbNode[],
): Promise<{ smMs: number; guestMs: number }> {
  for (const n of nodes) await n.g.run(`rmmod ${CNUAS_IB}`, { check: true, timeoutSec: 60 });
  const gone = await smUntil(
    fabric,
    (sm) => nodes.every((n) => !activeGuids(sm).has(n.guid)),
    30_000,
  );
  if (gone === undefined) throw new RowFailure("the SM still has a port active after rmmod");
  const offsets = await Promise.all(nodes.map((n) => guestOffset(n.g)));
  const state = (n: IbNode) => `/sys/class/infiniband/${shq(n.dev.ibdev)}/ports/1/state`;
  const script = (n: IbNode) =>
    [
      `echo "start $(date +%s%N)"`,
      `modprobe ${CNUAS_IB} link_layer=ib || exit 4`,
      `echo "insmod $(date +%s%N)"`,
      waitState(state(n), true),
      `echo "active $(date +%s%N)"`,
    ].join("\n");
  const t0 = hostNow();
  const sm = smUntil(fabric, (s) => nodes.every((n) => activeGuids(s).has(n.guid)), 60_000);
  const runs = await Promise.all(nodes.map((n) => n.g.run(script(n), { timeoutSec: 90 })));
  const smAt = await sm;
  const guestMs: number[] = [];
  for (const [i, r] of runs.entries()) {
    const st = parseStamps(r.stdout);
    if (r.code !== 0 || st.active === undefined || st.start === undefined) {
      throw new RowFailure(`${nodes[i].g.name}: modprobe/ACTIVE failed (${r.code}): ${r.stderr}`);
    }
    guestMs.push(st.active - st.start);
    ctx.log(
      `${nodes[i].g.name}: modprobe took ${(st.insmod - offsets[i] - t0).toFixed(0)} ms ` +
        `after the host issued it, port ACTIVE ${(st.active - st.insmod).toFixed(0)} ms after; ` +
        `ACTIVE in host time ${(st.active - offsets[i] - t0).toFixed(0)} ms after the issue`,
    );
  }
  if (smAt === undefined) throw new RowFailure("the SM did not bring both ports ACTIVE in 60 s");
  return { smMs: smAt - t0, guestMs: Math.max(...guestMs) };
}

/**
 * One cable pull of `n`'s switch port (`link_down`, `link_up` at once):
 * ms from the pull until the SM has the GUID active again (on whichever
 * port it reconnected to), and from the guest seeing its port leave ACTIVE
 * to seeing it ACTIVE again (guest clock).
 */
async function timedCablePull(
  ctx: RowContext,
  fabric: FabricHandle,
  n: IbNode,
): Promise<{ smMs: number; guestMs?: number; lidKept: boolean }> {
  const state = `/sys/class/infiniband/${shq(n.dev.ibdev)}/ports/1/state`;
  const tag = "/tmp/ib-bench-pull";
  const watcher = [
    `rm -f ${tag}.ready`,
    `: > ${tag}.ready`,
    // the port is down for about the vnic's 100 ms reconnect delay: a guest
    // descheduled that long misses it, and then says so instead of waiting
    `(${waitState(state, false, 250)}) || { echo "missed $(date +%s%N)"; exit 0; }`,
    `echo "down $(date +%s%N)"`,
    waitState(state, true),
    `echo "active $(date +%s%N)"`,
  ].join("\n");
  const off = await guestOffset(n.g);
  await n.g.run(`rm -f ${tag}.ready`, { timeoutSec: 30 });
  const watching = n.g.run(watcher, { timeoutSec: 90 });
  for (let i = 0;; i++) {
    if ((await n.g.run(`test -e ${tag}.ready`, { timeoutSec: 30 })).code === 0) break;
    if (i > 100) throw new RowFailure(`${n.g.name}: the port watcher did not start`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const before = (await fabric.sm()).ports.find((p) => p.guid === n.guid);
  if (!before || before.state !== "active") {
    throw new RowFailure(`${n.g.name}: not active before the pull: ${JSON.stringify(before)}`);
  }
  const t0 = hostNow();
  await fabric.linkDown(before.port);
  await fabric.linkUp(before.port);
  let sawDown = false;
  const smAt = await smUntil(fabric, (sm) => {
    const p = sm.ports.find((q) => q.guid === n.guid && q.state === "active");
    if (!p) sawDown = true;
    return sawDown && p !== undefined;
  }, 60_000);
  const w = await watching;
  const st = parseStamps(w.stdout);
  if (smAt === undefined) {
    throw new RowFailure(`${n.g.name}: the SM did not re-activate it in 60 s`);
  }
  const after = (await fabric.sm()).ports.find((p) => p.guid === n.guid && p.state === "active");
  const lidKept = after?.lid === before.lid;
  if (w.code === 0 && st.missed !== undefined) {
    ctx.log(`${n.g.name}: the guest never saw its port leave ACTIVE (polling every 20 ms)`);
    return { smMs: smAt - t0, lidKept };
  }
  if (w.code !== 0 || st.down === undefined || st.active === undefined) {
    throw new RowFailure(`${n.g.name}: the guest port did not go down and back: ${w.stdout}`);
  }
  ctx.log(
    `${n.g.name}: pull of switch port ${before.port}: guest saw DOWN ` +
      `${(st.down - off - t0).toFixed(0)} ms and ACTIVE ${(st.active - off - t0).toFixed(0)} ms ` +
      `after it (host time, ±half an SSH round trip), back on port ${after?.port} LID ${after?.lid}`,
  );
  return { smMs: smAt - t0, guestMs: st.active - st.down, lidKept };
}

/** The row: SM timings and perftest over IB, then perftest over RoCEv2, same guests. */
export const ibPerfRow: Row = {
  id: "bench-ib-perf",
  title: "perftest over native IB and over RoCEv2 on the same guests; SM activation and re-sweep",
  needs: rdmaPairNeeds("ib", "guestprogs"),
  timeoutSec: 2400,
  async run(ctx) {
    const fabric = ctx.fabric;
    if (!fabric) throw new RowFailure("bench-ib-perf needs a fabric and the runner gave none");
    const nodes = await setupIbNodes(ctx, fabric, ctx.guests, IB_IPS);

    const insmod = { sm: [] as number[], guest: [] as number[] };
    for (let i = 0; i < SM_REPS; i++) {
      await ctx.step(`SM: modprobe on both guests to both ACTIVE, run ${i + 1}`, async () => {
        const r = await timedInsmod(ctx, fabric, nodes);
        insmod.sm.push(r.smMs);
        insmod.guest.push(r.guestMs);
        ctx.log(
          `modprobe to ACTIVE: SM ${r.smMs.toFixed(0)} ms, guests ${r.guestMs.toFixed(0)} ms`,
        );
      });
    }
    const pull = { sm: [] as number[], guest: [] as number[], lidKept: 0, missed: 0 };
    for (let i = 0; i < SM_REPS; i++) {
      const n = nodes[i % nodes.length];
      await ctx.step(`SM: cable pull of ${n.g.name}, run ${i + 1}`, async () => {
        const r = await timedCablePull(ctx, fabric, n);
        pull.sm.push(r.smMs);
        if (r.guestMs === undefined) pull.missed++;
        else pull.guest.push(r.guestMs);
        if (r.lidKept) pull.lidKept++;
        ctx.log(
          `cable pull to ACTIVE: SM ${r.smMs.toFixed(0)} ms, guest ${r.guestMs?.toFixed(0)} ms`,
        );
      });
    }
    const figures: Record<string, Measurement> = {
      ...smFigures("sm.insmodToActive.sm", insmod.sm),
      ...smFigures("sm.insmodToActive.guest", insmod.guest, SM_BUDGET_MS.insmodToActive),
      ...smFigures("sm.cablePullToActive.sm", pull.sm),
      ...(pull.guest.length
        ? smFigures("sm.cablePullToActive.guest", pull.guest, SM_BUDGET_MS.cablePullToActive)
        : {}),
      "sm.cablePullToActive.lidKept": { value: pull.lidKept, unit: "runs" },
      "sm.cablePullToActive.guestMissed": { value: pull.missed, unit: "runs" },
    };
    for (const [k, m] of Object.entries(figures)) ctx.measure(k, m.value, m.unit);
    ctx.expect(pull.lidKept === SM_REPS, `a pulled port came back with another LID`);

    for (const n of nodes) await ctx.step(`${n.g.name}: IPoIB`, () => startIpoib(n));
    const ping = await nodes[1].g.run(`ping -c 2 -W 5 ${nodes[0].ip}`, { timeoutSec: 60 });
    if (ping.code !== 0) throw new RowFailure(`IPoIB ping failed: ${ping.stdout}`);
    const ibSides: Side[] = nodes.map((n) => ({ g: n.g, ibdev: n.dev.ibdev, ip: n.ip }));
    const ib = await measureAll(ctx, "ib", ibSides, `-m ${PERF_MTU}`);

    await ctx.step("switch to RoCEv2: unload, eth fabric, cnuas_ib link_layer=eth", async () => {
      for (const n of nodes) {
        await n.g.run(`rmmod ib_ipoib; rmmod ${CNUAS_IB}`, { check: true, timeoutSec: 60 });
      }
      await fabric.restart("SIGKILL", "eth");
    });
    const roceSides: Side[] = [];
    for (const [i, g] of ctx.guests.entries()) {
      const dev = await ctx.step(`${g.name}: cnuas_ib (RoCE)`, () => loadCnuasIb(g));
      const gid = await configureRoceAddress(g, dev, `${ROCE_IPS[i]}/24`);
      if (!await waitCarrier(g, dev.iface, true)) throw new RowFailure(`${g.name}: no carrier`);
      roceSides.push({ g, ibdev: dev.ibdev, gid, ip: ROCE_IPS[i] });
    }
    await ctx.guests[1].run(`ping -c 2 -W 5 ${ROCE_IPS[0]}`, { timeoutSec: 60 });
    const roce = await measureAll(ctx, "roce", roceSides, `-m ${PERF_MTU}`);
    for (const [k, m] of Object.entries(ibOverRoce(ib, roce))) ctx.measure(k, m.value, m.unit);
  },
};

/** `deno task bench` entry: run the row once and return its measurements. */
export async function benchIbPerf(config: Config): Promise<Record<string, Measurement>> {
  const r = await runBenchRow(config, ibPerfRow);
  if (r.status !== "PASS") {
    throw new Error(`ib perf bench ${r.status}: ${r.reason}${measuredSoFar(r)}`);
  }
  return r.measurements;
}
