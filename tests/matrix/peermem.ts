import { type Row, RowFailure } from "../../harness/matrix/row.ts";
import { loadCnuasgpu } from "../../harness/guest/cnuasgpu.ts";
import { waitCarrier } from "../../harness/guest/cnuas_net.ts";
import { captured } from "../../harness/oracle/wire_capture.ts";
import { configureRoceAddress, loadCnuasIb, runPair } from "../../harness/guest/cnuas_ib.ts";
import { GUEST_PATHS } from "../../harness/vm/types.ts";

/** Addresses of g0 (server) and g1 on the fabric. */
const IPS = ["10.79.0.1", "10.79.0.2"];

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

/** Which expected check lines are missing or not "ok" in `out`. */
export function failedChecks(out: string, expected: string[]): string[] {
  const lines = new Map<string, string>();
  for (const l of out.split("\n")) {
    const i = l.lastIndexOf(": ");
    if (i > 0) lines.set(l.slice(0, i), l.slice(i + 2).trim());
  }
  return expected.filter((e) => lines.get(e) !== "ok").map((e) =>
    `${e}: ${lines.get(e) ?? "not printed"}`
  );
}

/** DMA-BUF export of accelerator memory, ibv_reg_dmabuf_mr on cnuas_ib, RDMA into it */
export const row: Row = {
  id: "peermem",
  title: "DMA-BUF export of accelerator memory, ibv_reg_dmabuf_mr on cnuas_ib, RDMA into it",
  needs: {
    guests: 2,
    fabric: "eth",
    builds: ["qemu", "image", "modules", "provider", "guestprogs"],
    devices: { vnic: 1, gpu: 1 },
  },
  timeoutSec: 600,
  modules: ["cnuasgpu", "cnuas_net", "cnuas_ib"],
  async run(ctx) {
    const nodes = [];
    for (const [i, g] of ctx.guests.entries()) {
      const gpu = await ctx.step(`${g.name}: load cnuasgpu`, () => loadCnuasgpu(g, 1));
      const dev = await ctx.step(`${g.name}: load cnuas_net and cnuas_ib`, () => loadCnuasIb(g));
      const gid = await ctx.step(
        `${g.name}: ${IPS[i]} on ${dev.iface}, its RoCE v2 GID`,
        () => configureRoceAddress(g, dev, `${IPS[i]}/24`),
      );
      ctx.expect(await waitCarrier(g, dev.iface, true), `${g.name}: no carrier`);
      const peer = (await g.run(`cat /sys/class/cnuasgpu/${gpu[0]}/peer_rdma`)).stdout.trim();
      ctx.expect(peer === "1", `${g.name}: ${gpu[0]}/peer_rdma is ${peer}, want 1`);
      nodes.push({ g, dev, gid, node: `/dev/${gpu[0]}`, ip: IPS[i] });
    }
    const [s, c] = nodes;
    await ctx.guests[1].run(`ping -c 2 -W 5 ${s.ip}`, { timeoutSec: 60 });
    await captured(ctx, "peermem", async () => {
      await ctx.step(
        "accelerator to accelerator over RoCEv2: READ, WRITE, SEND into device memory; " +
          "bounds; DMA-BUF lifetime",
        async () => {
          const bin = `${GUEST_PATHS.bin}/peermem`;
          const args = (n: typeof s) =>
            `${bin} -d ${n.dev.ibdev} -g ${n.gid} -p 18870 -G ${n.node} -s ${PEERMEM_BYTES}`;
          const r = await runPair(s.g, args(s), c.g, `${args(c)} ${s.ip}`, 18870, 300);
          ctx.log(`server:\n${r.serverOut}\nclient:\n${r.clientOut}`);
          const bad = [
            ...failedChecks(r.serverOut, PEERMEM_CHECKS.server).map((x) => `server: ${x}`),
            ...failedChecks(r.clientOut, PEERMEM_CHECKS.client).map((x) => `client: ${x}`),
          ];
          if (r.serverCode !== 0 || r.clientCode !== 0 || bad.length) {
            throw new RowFailure(
              `peermem: server exit ${r.serverCode}, client exit ${r.clientCode}; ` +
                (bad.length ? bad.join("; ") : r.clientOut.slice(-600)),
            );
          }
          ctx.expect(
            /remote atomics on a DMA-BUF MR: refused \(EOPNOTSUPP\)/.test(r.serverOut),
            "remote atomics on a DMA-BUF MR were not refused with EOPNOTSUPP",
          );
          ctx.measure("peermem.bytes", PEERMEM_BYTES, "bytes");
        },
      );
    });
  },
};
