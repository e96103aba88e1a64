/**
 * RDMA accelerator to accelerator (`drivers/test/peermem.c`), what the
 * `peermem` row (RoCEv2) and the `ib-e2e` row (native InfiniBand, by LID)
 * both run: each guest's cnuasgpu memory exported as a DMA-BUF, registered
 * with `ibv_reg_dmabuf_mr` on cnuas_ib, then READ, WRITE and SEND into it, a
 * refused out-of-bounds WRITE and the DMA-BUF lifetime rule, every result
 * checked through the cnuasgpu copy ioctls. The first node is the server,
 * the second the client, which reaches the server at its `ip`.
 */
import { type RowContext, RowFailure } from "../matrix/row.ts";
import { type Guest, GUEST_PATHS } from "../vm/types.ts";
import { runPair } from "./cnuas_ib.ts";
import { loadCnuasgpu } from "./cnuasgpu.ts";
import { addrFlag, hwCounters, type RdmaNode } from "./roce_pair.ts";

/** Device memory each end registers (the program's default is 1 MiB). */
export const PEERMEM_BYTES = 4 << 20;

/** The lines drivers/test/peermem.c prints for its checks, each must say "ok". */
export const PEERMEM_CHECKS = {
  client: [
    "READ: the server's device memory into ours",
    "WRITE: ours into the server's device memory",
    "SEND: into a receive posted in the server's device memory",
    "WRITE past the end of the server's DMA-BUF MR: remote access error, no byte changed",
    "the server's DMA-BUF lifetime checks",
  ],
  server: [
    "device memory after the client's READ and WRITE",
    "device memory after the client's SEND",
    "device memory after the refused WRITE",
    "one export while registered",
    "freed while exported and registered: still reserved",
    "fd closed, MR still registered: still reserved",
    "MR deregistered, last reference gone: released",
  ],
};

/**
 * Which expected check lines are missing or not "ok" in `out`, each with
 * what the program printed after its name (a mismatch says why).
 */
export function failedChecks(out: string, expected: string[]): string[] {
  const lines = out.split("\n").map((l) => l.trim());
  return expected.flatMap((e) => {
    const line = lines.find((l) => l.startsWith(`${e}: `));
    const verdict = line?.slice(e.length + 2) ?? "not printed";
    return verdict === "ok" ? [] : [`${e}: ${verdict}`];
  });
}

/** The lines where a peermem end gave up (`FAIL: ...`, drivers/test/verbs_util.h's DIE). */
export function dieLines(out: string): string[] {
  return out.split("\n").filter((l) => l.startsWith("FAIL: "));
}

/**
 * The counters that say why a transfer failed, those that are not zero
 * (`retry_exceeded=1 rcvd_psn_err=3`): what a failing peermem run adds to
 * its failure so that one that happens once in a while explains itself.
 */
export function errorCounters(c: Record<string, number>): string {
  const quiet = /^(sent_pkts|rcvd_pkts|sent_acks|sent_kernel_pkts|loopback_pkts|rcvd_mcast_pkts)$/;
  return Object.entries(c)
    .filter(([k, v]) => v !== 0 && !quiet.test(k))
    .map(([k, v]) => `${k}=${v}`)
    .join(" ") || "none";
}

/** What a failing run leaves in the transcript: each end's counters and kernel log tail. */
async function failureEvidence(ctx: RowContext, nodes: PeermemNode[]): Promise<string> {
  const said: string[] = [];
  for (const n of nodes) {
    const counters = errorCounters(await hwCounters(n));
    const dmesg = await n.g.run("dmesg | tail -n 30", { timeoutSec: 30 });
    ctx.log(`${n.g.name} dmesg tail:\n${dmesg.stdout}`);
    said.push(`${n.g.name} counters: ${counters}`);
  }
  return said.join("; ");
}

/** An RDMA node whose guest has one cnuasgpu, for peermem. */
export interface PeermemNode extends RdmaNode {
  /** The accelerator's device node (`/dev/cnuasgpu0`). */
  gpu: string;
}

/**
 * Load cnuasgpu on `g` (one function) and check it offers its memory to
 * RDMA (`peer_rdma`); its device node.
 */
async function loadPeerGpu(ctx: RowContext, g: Guest): Promise<string> {
  const [name] = await ctx.step(`${g.name}: load cnuasgpu`, () => loadCnuasgpu(g, 1));
  const peer = (await g.run(`cat /sys/class/cnuasgpu/${name}/peer_rdma`)).stdout.trim();
  ctx.expect(peer === "1", `${g.name}: ${name}/peer_rdma is ${peer}, want 1`);
  return `/dev/${name}`;
}

/** `nodes`, RoCE or native IB, each with its guest's cnuasgpu loaded and named. */
export async function withPeerGpus<T extends RdmaNode>(
  ctx: RowContext,
  nodes: T[],
): Promise<(T & PeermemNode)[]> {
  const out: (T & PeermemNode)[] = [];
  for (const n of nodes) out.push({ ...n, gpu: await loadPeerGpu(ctx, n.g) });
  return out;
}

/**
 * peermem between the nodes, by GID on RoCE and by LID on native
 * InfiniBand (no `gid`: {@link addrFlag}); fails the row unless both ends
 * exit 0 with every check "ok" and DMA-BUF MRs refuse remote atomics.
 */
export async function peermem(ctx: RowContext, nodes: PeermemNode[]): Promise<void> {
  const [s, c] = nodes;
  const over = s.gid === undefined ? "native InfiniBand (by LID)" : "RoCEv2";
  await ctx.step(
    `accelerator to accelerator over ${over}: READ, WRITE, SEND into device memory; ` +
      "bounds; DMA-BUF lifetime",
    async () => {
      const bin = `${GUEST_PATHS.bin}/peermem`;
      const args = (n: PeermemNode) =>
        `${bin} -d ${n.dev.ibdev}${addrFlag(n, "-g")} -p 18870 -G ${n.gpu} -s ${PEERMEM_BYTES}`;
      const r = await runPair(s.g, args(s), c.g, `${args(c)} ${s.ip}`, 18870, 300);
      ctx.log(`server:\n${r.serverOut}\nclient:\n${r.clientOut}`);
      const bad = [
        ...dieLines(r.serverOut).map((x) => `server: ${x}`),
        ...dieLines(r.clientOut).map((x) => `client: ${x}`),
        ...failedChecks(r.serverOut, PEERMEM_CHECKS.server).map((x) => `server: ${x}`),
        ...failedChecks(r.clientOut, PEERMEM_CHECKS.client).map((x) => `client: ${x}`),
      ];
      if (r.serverCode !== 0 || r.clientCode !== 0 || bad.length) {
        const evidence = await failureEvidence(ctx, nodes);
        throw new RowFailure(
          `peermem: server exit ${r.serverCode}, client exit ${r.clientCode}; ` +
            (bad.length ? bad.join("; ") : r.clientOut.slice(-600)) + `; ${evidence}`,
        );
      }
      ctx.expect(
        /remote atomics on a DMA-BUF MR: refused \(EOPNOTSUPP\)/.test(r.serverOut),
        "remote atomics on a DMA-BUF MR were not refused with EOPNOTSUPP",
      );
      ctx.measure("peermem.bytes", PEERMEM_BYTES, "bytes");
    },
  );
}
