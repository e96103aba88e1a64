import type { Guest } from "../../harness/vm/types.ts";
import { GUEST_PATHS } from "../../harness/vm/types.ts";
import { type Row, RowFailure } from "../../harness/matrix/row.ts";
import { rdmaGuestNeeds } from "../../harness/matrix/needs.ts";
import { sh, shq } from "../../harness/guest/shell.ts";
import { loadCnuasIb } from "../../harness/guest/cnuas_ib.ts";
import { TABLE_4_1 } from "./ibstat.ts";

/** The guest program (drivers/test/verbs_limits.c). */
export const VERBS_LIMITS = `${GUEST_PATHS.bin}/verbs_limits`;

/** Objects of the device that exist before the program starts, by kind. */
export interface Held {
  pd: number;
  cq: number;
  qp: number;
  mr: number;
}

const HELD_KINDS = ["pd", "cq", "qp", "mr"] as const;
const SEPARATOR = "==cnuas-held==";

/** A kind of object `rdma resource show` lists. */
export type ResourceKind = "pd" | "cq" | "qp" | "mr" | "srq";

/**
 * The command whose output {@link kernelHeld} and {@link resourceCounts}
 * read: `rdma -j resource show` of each kind (pd, cq, qp, mr by default).
 */
export function heldCommand(kinds: readonly ResourceKind[] = HELD_KINDS): string {
  return kinds.map((k) => `rdma -j resource show ${k}`).join(`; echo ${SEPARATOR}; `);
}

/**
 * How many objects of each kind `ibdev` has, from the output of
 * {@link heldCommand} for the same `kinds`: the kernel's own (entries
 * without a `pid`) with `owner` "kernel", everyone's with "all".
 */
export function resourceCounts(
  out: string,
  ibdev: string,
  kinds: readonly ResourceKind[],
  owner: "kernel" | "all",
): Record<ResourceKind, number> {
  const parts = out.split(`${SEPARATOR}\n`);
  if (parts.length !== kinds.length) {
    throw new RowFailure(
      `rdma resource show: ${parts.length} parts, want ${kinds.length}: ${out}`,
    );
  }
  const counts: Record<ResourceKind, number> = { pd: 0, cq: 0, qp: 0, mr: 0, srq: 0 };
  for (const [i, k] of kinds.entries()) {
    const entries = JSON.parse(parts[i]) as Record<string, unknown>[];
    counts[k] = entries.filter((e) =>
      e.ifname === ibdev && (owner === "all" || !("pid" in e))
    ).length;
  }
  return counts;
}

/**
 * What the kernel holds on `ibdev`, from the output of {@link heldCommand}:
 * the entries of the device without a `pid` (a process's have one). On a
 * RoCE port that is the MAD layer's QP1 (the GSI QP: it counts against
 * max_qp like any other), its CQ and its PD. The MR count adds one per
 * kernel PD: cnuas_ib reports no device-wide local DMA lkey, so
 * ib_alloc_pd gives each kernel PD a DMA MR of its own (get_dma_mr), which
 * counts against max_mr but is not in ib_core's resource tracking.
 */
export function kernelHeld(out: string, ibdev: string): Held {
  const { pd, cq, qp, mr } = resourceCounts(out, ibdev, HELD_KINDS, "kernel");
  return { pd, cq, qp, mr: mr + pd };
}

/** 1st, 2nd, 3rd, 4th, ..., 11th, ..., 257th, as the program prints them. */
export function ordinal(n: number): string {
  const teen = n % 100 >= 11 && n % 100 <= 13;
  const sfx = teen ? "th" : ({ 1: "st", 2: "nd", 3: "rd" } as Record<number, string>)[n % 10] ??
    "th";
  return `${n}${sfx}`;
}

/** A limit of table 4.1 as a number: ibv_devinfo's `field`. */
export function tableLimit(field: string): number {
  const e = TABLE_4_1.find((x) => x.tool === "ibv_devinfo" && x.field === field);
  const n = Number(e?.want);
  if (!e || !Number.isInteger(n)) throw new Error(`table 4.1 has no numeric ${field}`);
  return n;
}

/**
 * The line the program must print for each table 4.1 limit, given what the
 * kernel holds: objects up to the limit, one more refused with ENOMEM;
 * capabilities at the limit, one more refused with EINVAL.
 */
export function expectedLines(held: Held): string[] {
  const objects = (["pd", "cq", "mr", "qp"] as const).map((k) => {
    const n = tableLimit(`max_${k}`);
    return `max_${k}: ${n} ok (${held[k]} held by the kernel), ${
      ordinal(n + 1)
    } ENOMEM, after free ok`;
  });
  const cqe = tableLimit("max_cqe");
  const caps = (["max_sge", "max_qp_wr"] as const).map((f) => {
    const n = tableLimit(f);
    return `${f}: ${n} ok, ${n + 1} send EINVAL, ${n + 1} receive EINVAL`;
  });
  return [...objects, `max_cqe: ${cqe} ok, ${cqe + 1} EINVAL`, ...caps];
}

/** What the program's output says, checked against table 4.1. */
export interface LimitsVerdict {
  /** Every way the output differs from what it must be; empty when it passes. */
  differences: string[];
  /** The inline limit it found (not in table 4.1), when it printed one. */
  maxInline?: number;
}

/**
 * Compare the program's output with {@link expectedLines} line by line
 * (matched by the name before the colon); the inline limit, not in table
 * 4.1, must be some N > 0 with N + 1 refused with EINVAL. The output must
 * end in PASS.
 */
export function checkLimits(out: string, held: Held): LimitsVerdict {
  const lines = out.split("\n").map((l) => l.trim()).filter((l) => l !== "");
  const byName = (name: string) => lines.find((l) => l.startsWith(`${name}:`));
  const differences: string[] = [];
  for (const want of expectedLines(held)) {
    const name = want.slice(0, want.indexOf(":"));
    const got = byName(name);
    if (got !== want) differences.push(`${name}: got "${got ?? "(no line)"}", want "${want}"`);
  }
  const inl = byName("max_inline");
  const m = /^max_inline: (\d+) ok, (\d+) EINVAL$/.exec(inl ?? "");
  const maxInline = m ? Number(m[1]) : undefined;
  if (!m || maxInline! < 1 || Number(m[2]) !== maxInline! + 1) {
    differences.push(`max_inline: got "${inl ?? "(no line)"}", want "N ok, N+1 EINVAL" (N > 0)`);
  }
  if (lines.at(-1) !== "PASS") differences.push(`last line "${lines.at(-1) ?? ""}", want PASS`);
  return { differences, maxInline };
}

/**
 * Run the program against `ibdev`, told what the kernel holds; exit 0 or 1
 * (a failed case, which {@link checkLimits} names) is returned, anything
 * else fails the row.
 */
export async function runVerbsLimits(
  g: Guest,
  ibdev: string,
  held: Held,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const k = HELD_KINDS.map((x) => `${x}=${held[x]}`).join(",");
  const r = await g.run(`${VERBS_LIMITS} -d ${shq(ibdev)} -k ${k}`, { timeoutSec: 180 });
  // 1 is a failed case, which the comparison names; anything else is a crash
  if (r.code !== 0 && r.code !== 1) {
    throw new RowFailure(`verbs_limits exited ${r.code}: ${r.stdout} ${r.stderr}`);
  }
  return r;
}

/** The datasheet's limits reached through verbs, and one past each refused. */
export const row: Row = {
  id: "verbs-limits",
  title: "table 4.1's limits reached through verbs; one past each refused with ENOMEM/EINVAL",
  needs: rdmaGuestNeeds(),
  sharesCores: "it judges counts and error codes only",
  timeoutSec: 300,
  modules: ["cnuas_net", "cnuas_ib"],
  async run(ctx) {
    const g = ctx.guests[0];
    const dev = await ctx.step("load cnuas_net and cnuas_ib", () => loadCnuasIb(g));
    ctx.log(`${dev.ibdev} on ${dev.iface} (${dev.pci})`);
    const held = await ctx.step("what the kernel holds on the device", async () => {
      const h = kernelHeld(await sh(g, heldCommand()), dev.ibdev);
      ctx.log(`held by the kernel: ${JSON.stringify(h)}`);
      return h;
    });
    await ctx.step("verbs_limits: each limit reached, one more refused", async () => {
      const r = await runVerbsLimits(g, dev.ibdev, held);
      const v = checkLimits(r.stdout, held);
      if (v.maxInline !== undefined) ctx.measure("maxInline", v.maxInline, "bytes");
      ctx.expect(v.differences.length === 0, v.differences.join("; "));
      ctx.expect(r.code === 0, `verbs_limits exited ${r.code}: ${r.stderr.trim()}`);
    });
  },
};
