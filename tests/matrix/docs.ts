import { join } from "node:path";
import { REPO_ROOT } from "../../harness/config.ts";
import { howtoPages, runPage } from "../../harness/howto/run.ts";
import { type Row, RowFailure } from "../../harness/matrix/row.ts";
import { rdmaGpuPairNeeds } from "../../harness/matrix/needs.ts";
import type { FabricMode } from "../../harness/matrix/row.ts";
import { GUEST_PATHS } from "../../harness/vm/types.ts";

/** The modules `cnuas-nic-modules` and `cnuas-gpu-modules` install. */
const PACKAGED_MODULES = ["cnuas_net", "cnuas_ib", "cnuasgpu", "cnuasgpu_host"];

/**
 * Where the modules go: where the packages' DKMS install puts them
 * (docs/packages.md), so `modprobe` finds them as on an installed machine;
 * then the accelerator's PCI function announced again, so udev loads
 * `cnuasgpu` for its modalias as it does at boot on an installed machine
 * (the NIC's drivers are loaded by the first page; `cnuasgpu_host` is not
 * autoloaded at all).
 */
const INSTALL_MODULES = [
  "dir=/lib/modules/$(uname -r)/updates/dkms",
  'mkdir -p "$dir"',
  `cp ${PACKAGED_MODULES.map((m) => `${GUEST_PATHS.modules}/${m}.ko`).join(" ")} "$dir"/`,
  "depmod -a",
  "udevadm trigger --action=add --subsystem-match=pci --attr-match=vendor=0x1af4 " +
  "--attr-match=device=0x10f1",
  "udevadm settle -t 60",
].join("\n");

/**
 * The HowTo (docs/howto/) executed in two guests, page by page, as a reader
 * types it. Each guest has a vnic on an eth-mode switch and a cnuasgpu
 * function, libcnuasdev installed; a page's `<!-- howto: fabric=MODE -->`
 * marker restarts the switch in that mode (the vnics reconnect), as
 * starting a subnet manager does on a real fabric.
 */
export const row: Row = {
  id: "docs",
  title: "the HowTo pages run as written: every runnable block, its output as the page shows",
  needs: (() => {
    const needs = rdmaGpuPairNeeds("eth");
    needs.builds.push("cnuasdev");
    return needs;
  })(),
  timeoutSec: 1200,
  modules: ["cnuas_net", "cnuas_ib", "cnuasgpu", "cnuasgpu_host"],
  libraries: ["libcnuasdev"],
  async run(ctx) {
    const guests = new Map(ctx.guests.map((g) => [g.name, g]));
    // depmod reads every module of the kernel: about a minute per guest under TCG, so both at once
    await ctx.step(
      "the modules where the package installs them, depmod (both guests)",
      async () => {
        await Promise.all(ctx.guests.map(async (g) => {
          const r = await g.run(INSTALL_MODULES, { timeoutSec: 300 });
          if (r.code !== 0) {
            throw new RowFailure(`${g.name}: exit ${r.code}: ${r.stdout}${r.stderr}`);
          }
        }));
      },
    );
    const dir = join(REPO_ROOT, "docs", "howto");
    let blocks = 0;
    const pages = await howtoPages(dir);
    let mode: FabricMode | undefined = ctx.fabric?.mode;
    const setFabric = async (want: FabricMode) => {
      if (want === mode) return;
      if (!ctx.fabric) throw new RowFailure("the docs row has no fabric");
      await ctx.fabric.restart("SIGTERM", want);
      mode = want;
    };
    for (const page of pages) {
      blocks += await runPage(
        ctx,
        `docs/howto/${page}`,
        await Deno.readTextFile(join(dir, page)),
        guests,
        { setFabric },
      );
    }
    ctx.measure("pages", pages.length, "pages");
    ctx.measure("blocks", blocks, "blocks");
  },
};
