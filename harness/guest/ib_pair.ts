/**
 * What the native-InfiniBand rows share: guests with cnuas_ib loaded in IB
 * mode (`link_layer=ib`), their ports brought to ACTIVE by the switch's
 * subnet manager, and IPoIB (Debian's ib_ipoib) up on them with an address,
 * which is also the side channel the tools exchange QP numbers over (the
 * vnic's Ethernet interface cannot send in IB mode).
 */
import type { Guest } from "../vm/types.ts";
import type { FabricOps, SmStatus } from "../fabric/client.ts";
import { type RowContext, RowFailure } from "../matrix/row.ts";
import { type CnuasIbDev, loadCnuasIb } from "./cnuas_ib.ts";
import { shq } from "./shell.ts";

/** One guest ready for RDMA over native InfiniBand. */
export interface IbNode {
  /** The guest. */
  g: Guest;
  /** Its cnuas_ib device (IB mode). */
  dev: CnuasIbDev;
  /** Port GUID (= node GUID), 16 lowercase hex digits as the SM reports it. */
  guid: string;
  /** The switch port its vnic is on. */
  swPort: number;
  /** The LID the SM gave it. */
  lid: number;
  /** IPoIB interface (`ib0`, ...) once {@link startIpoib} ran. */
  ipoibIface?: string;
  /** Its IPv4 address on the IPoIB subnet. */
  ip: string;
}

/** The port GUID of an ib_device as the SM prints it (sysfs has `xxxx:xxxx:xxxx:xxxx`). */
export async function nodeGuid(g: Guest, ibdev: string): Promise<string> {
  const r = await g.run(`cat /sys/class/infiniband/${shq(ibdev)}/node_guid`, { timeoutSec: 30 });
  const guid = r.stdout.trim().replaceAll(":", "").toLowerCase();
  if (r.code !== 0 || !/^[0-9a-f]{16}$/.test(guid)) {
    throw new RowFailure(`${g.name}: no node GUID for ${ibdev}: ${r.stdout} ${r.stderr}`);
  }
  return guid;
}

/** The port's state, LID and SM LID as the guest's kernel reports them (sysfs). */
export async function guestPort(
  g: Guest,
  ibdev: string,
): Promise<{ state: string; lid: number; smLid: number; linkLayer: string }> {
  const d = `/sys/class/infiniband/${shq(ibdev)}/ports/1`;
  const r = await g.run(
    `echo "$(cat ${d}/state)|$(cat ${d}/lid)|$(cat ${d}/sm_lid)|$(cat ${d}/link_layer)"`,
    { timeoutSec: 30 },
  );
  const [state, lid, smLid, linkLayer] = r.stdout.trim().split("|");
  return {
    state: (state ?? "").replace(/^\d+:\s*/, ""),
    lid: Number(lid),
    smLid: Number(smLid),
    linkLayer: linkLayer ?? "",
  };
}

/**
 * Poll the SM until every GUID in `guids` is on an ACTIVE port, or
 * `deadlineMs` passes; returns the last status and whether all made it.
 */
export async function waitSmActive(
  fabric: FabricOps,
  guids: string[],
  deadlineMs: number,
): Promise<{ sm: SmStatus; ok: boolean; ms: number }> {
  const t0 = performance.now();
  for (;;) {
    const sm = await fabric.sm();
    const ok = guids.every((guid) => sm.ports.some((p) => p.guid === guid && p.state === "active"));
    const ms = performance.now() - t0;
    if (ok || ms > deadlineMs) return { sm, ok, ms };
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Load cnuas_ib with `link_layer=ib` on `guests` (side by side, each in its
 * own shell), wait until the SM has every port ACTIVE, and check
 * each guest's own view agrees (state ACTIVE, the SM's LID and SM LID).
 * Records `sm.insmodToActive.sec`.
 */
export async function setupIbNodes(
  ctx: RowContext,
  fabric: FabricOps,
  guests: Guest[],
  ips: string[],
  deadlineMs = 60_000,
): Promise<IbNode[]> {
  const t0 = performance.now();
  const loaded: { g: Guest; dev: CnuasIbDev; guid: string }[] = await Promise.all(
    guests.map(async (g) => {
      const dev = await ctx.step(
        `${g.name}: load cnuas_net and cnuas_ib link_layer=ib`,
        () => loadCnuasIb(g, "ib"),
      );
      return { g, dev, guid: await nodeGuid(g, dev.ibdev) };
    }),
  );
  return await ctx.step(
    `the subnet manager brings ${guests.map((g) => g.name).join(", ")} to ACTIVE`,
    async () => {
      const w = await waitSmActive(fabric, loaded.map((l) => l.guid), deadlineMs);
      const sec = (performance.now() - t0) / 1000;
      if (!w.ok) {
        throw new RowFailure(
          `not every port ACTIVE within ${deadlineMs / 1000} s of loading cnuas_ib: ` +
            JSON.stringify(w.sm.ports),
        );
      }
      ctx.measure("sm.insmodToActive.sec", sec, "s");
      const nodes: IbNode[] = await Promise.all(loaded.map(async (l, i) => {
        const p = w.sm.ports.find((sp) => sp.guid === l.guid)!;
        const view = await waitGuestActive(l.g, l.dev.ibdev, 30);
        ctx.expect(
          view.state === "ACTIVE" && view.lid === p.lid && view.smLid === w.sm.lid &&
            view.linkLayer === "InfiniBand",
          `${l.g.name}: the port shows ${JSON.stringify(view)}; the SM has LID ${p.lid}, ` +
            `SM LID ${w.sm.lid}`,
        );
        ctx.log(
          `${l.g.name}: ${l.dev.ibdev} GUID ${l.guid} on switch port ${p.port}, LID ${p.lid}`,
        );
        return { g: l.g, dev: l.dev, guid: l.guid, swPort: p.port, lid: p.lid!, ip: ips[i] };
      }));
      const lids = new Set(nodes.map((n) => n.lid));
      ctx.expect(lids.size === nodes.length, `LIDs not distinct: ${[...lids].join(", ")}`);
      return nodes;
    },
  );
}

/**
 * The guest's port reaches ACTIVE in its own view (ib_core hears the SM's
 * Set through events, a moment after the SM saw the answer).
 */
export async function waitGuestActive(
  g: Guest,
  ibdev: string,
  timeoutSec: number,
): Promise<{ state: string; lid: number; smLid: number; linkLayer: string }> {
  const st = `/sys/class/infiniband/${shq(ibdev)}/ports/1/state`;
  await g.run(
    `for i in $(seq ${timeoutSec * 10}); do grep -q ACTIVE ${st} && break; sleep 0.1; done`,
    { timeoutSec: timeoutSec + 30 },
  );
  return await guestPort(g, ibdev);
}

/**
 * Load ib_ipoib, find the IPoIB interface (ARPHRD_INFINIBAND; each guest
 * has one IB device), give it the node's address /24 and bring it up
 * (datagram mode, ipoib's default). `ipv6: false` turns IPv6 off on the
 * interface before it comes up: no link-local address and no IPv6
 * multicast (MLD reports, router and neighbour solicitations), so none of
 * the SA groups ipoib joins only to send to: it attaches no QP to those,
 * yet the switch, like OpenSM, forwards the group's traffic to every
 * member's port, where cnuas_ib counts it in `rcvd_mcast_no_member`.
 */
export async function startIpoib(n: IbNode, opts: { ipv6?: boolean } = {}): Promise<string> {
  // the guest has one InfiniBand device: the one ARPHRD_INFINIBAND (32) interface is its
  const script = [
    "modprobe ib_ipoib || exit 3",
    "for i in $(seq 100); do",
    "  for d in /sys/class/net/*; do",
    '    [ "$(cat $d/type 2>/dev/null)" = 32 ] && { echo "${d##*/}"; exit 0; }',
    "  done; sleep 0.1",
    "done; exit 4",
  ].join("\n");
  const r = await n.g.run(script, { timeoutSec: 60 });
  const iface = r.stdout.trim().split("\n").pop() ?? "";
  if (r.code !== 0 || !iface) {
    throw new RowFailure(`${n.g.name}: no IPoIB interface (exit ${r.code}): ${r.stderr}`);
  }
  const v6 = `/proc/sys/net/ipv6/conf/${iface}/disable_ipv6`;
  const noV6 = opts.ipv6 === false ? `{ [ ! -e ${shq(v6)} ] || echo 1 > ${shq(v6)}; } && ` : "";
  const up = await n.g.run(
    `${noV6}ip addr add ${n.ip}/24 dev ${iface} && ip link set ${iface} up`,
    { timeoutSec: 30 },
  );
  if (up.code !== 0) throw new RowFailure(`${n.g.name}: ${iface} up: ${up.stderr}`);
  n.ipoibIface = iface;
  return iface;
}
