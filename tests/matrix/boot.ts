import { join } from "node:path";
import type { Row } from "../../harness/matrix/row.ts";

/**
 * The pipeline itself: two guests boot at the same time, answer SSH, run the
 * kernel the image was built with, and log nothing the dmesg guard flags.
 */
export const row: Row = {
  id: "boot",
  title: "guests boot, answer SSH, dmesg clean, boot time measured",
  needs: { guests: 2, builds: ["qemu", "image"] },
  coldBoot: "it measures a real boot",
  timeoutSec: 120,
  async run(ctx) {
    const manifest = JSON.parse(
      await Deno.readTextFile(join(ctx.builds.image!, "manifest.json")),
    ) as { kernelRelease: string };
    for (const g of ctx.guests) {
      ctx.measure(`bootToSshSec.${g.name}`, Number(g.bootToSshSec.toFixed(2)), "s");
      await ctx.step(`${g.name} reports its kernel`, async () => {
        const r = await g.run("uname -r", { check: true });
        ctx.expect(
          r.stdout.trim() === manifest.kernelRelease,
          `${g.name} runs kernel ${r.stdout.trim()}, the image was built with ${manifest.kernelRelease}`,
        );
      });
      await ctx.step(`${g.name} booted through the harness init`, async () => {
        const r = await g.run("cat /proc/cmdline; hostname", { check: true });
        ctx.expect(r.stdout.includes("init=/sbin/cnuas-init"), `${g.name} cmdline: ${r.stdout}`);
        ctx.expect(
          r.stdout.trim().endsWith(g.name),
          `${g.name} hostname is not ${g.name}: ${r.stdout}`,
        );
      });
    }
    const worst = Math.max(...ctx.guests.map((g) => g.bootToSshSec));
    ctx.measure("bootToSshSecMax", Number(worst.toFixed(2)), "s");
  },
};
