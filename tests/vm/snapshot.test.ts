/**
 * Guests from a snapshot against real QEMU: two guests restored from one
 * saved state are two machines (hostname, machine-id, CRNG output, NIC MAC
 * all their own; the kernel reseeded its CRNG at resume), their clocks are
 * the host's, their NICs are on the fabric, and the disk they restored onto
 * is the one their page cache belongs to (files written, dropped from the
 * cache and read back intact; no file system error in the kernel log).
 * Builds QEMU, the image, the switch and the modules first (cached).
 */
import assert from "node:assert/strict";
import { loadCnuasNet } from "../../harness/guest/cnuas_net.ts";
import { defaultConfig } from "../../harness/config.ts";
import { fabricStarter, Lab } from "../../harness/matrix/lab.ts";
import type { Row, RowContext } from "../../harness/matrix/row.ts";
import { runRow } from "../../harness/matrix/runner.ts";
import { setQuiet } from "../../harness/progress.ts";
import { vnicMac } from "../../harness/vm/qemu_args.ts";
import type { Guest } from "../../harness/vm/types.ts";

setQuiet(true);
const opts = { sanitizeOps: false, sanitizeResources: false };

/** Largest accepted difference between a restored guest's clock and the host's. */
const CLOCK_SLACK_MS = 3000;

interface Seen {
  machineId: string;
  hostname: string;
  random: string;
  clockOffsetMs: number;
  mac: string;
  diskOk: string;
  fsErrors: string;
  log: string;
}

async function observe(g: Guest): Promise<Omit<Seen, "mac" | "diskOk" | "fsErrors" | "log">> {
  const before = Date.now();
  const r = await g.run(
    "date +%s%N; hostname; cat /etc/machine-id; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n'",
    { timeoutSec: 30 },
  );
  const after = Date.now();
  assert.equal(r.code, 0, r.stderr);
  const [ns, hostname, machineId, random] = r.stdout.trim().split("\n");
  const guestMs = Number(BigInt(ns) / 1_000_000n);
  return { hostname, machineId, random, clockOffsetMs: guestMs - (before + after) / 2 };
}

/**
 * Write 8 MiB of fresh bytes, flush them, drop the page cache, read them
 * back: on a disk that is not the one the saved page cache belongs to, ext4
 * allocates over live blocks or reads stale metadata.
 */
async function diskRoundTrip(g: Guest): Promise<string> {
  const r = await g.run(
    "set -e; head -c 8388608 /dev/urandom > /root/blob; a=$(md5sum < /root/blob); sync; " +
      "echo 3 > /proc/sys/vm/drop_caches; b=$(md5sum < /root/blob); " +
      "find /usr/lib/x86_64-linux-gnu -maxdepth 1 -type f -name 'lib*.so*' -exec cat {} + " +
      '| wc -c >/dev/null; [ "$a" = "$b" ] && echo same',
    { timeoutSec: 120 },
  );
  return r.code === 0 ? r.stdout.trim() : `exit ${r.code}: ${r.stderr.trim()}`;
}

function twoGuestRow(seen: Seen[]): Row {
  return {
    id: "snapshot-pair",
    title: "two guests from one saved state",
    needs: { guests: 2, fabric: "eth", builds: ["qemu", "image"], devices: { vnic: 1 } },
    timeoutSec: 240,
    async run(ctx: RowContext) {
      const first = await Promise.all(ctx.guests.map(observe));
      await ctx.fabric!.waitForPorts(2, 20_000);
      for (const [i, g] of ctx.guests.entries()) {
        const [nic] = await loadCnuasNet(g);
        const link = await g.run(`cat /sys/class/net/${nic.iface}/address`, { check: true });
        const diskOk = await diskRoundTrip(g);
        const log = await g.dmesg();
        const fsErrors = log.split("\n")
          .filter((l) => /EXT4-fs (error|warning)|I\/O error|corrupt|JBD2:.*(error|abort)/i.test(l))
          .join("\n");
        seen.push({ ...first[i], mac: link.stdout.trim(), diskOk, fsErrors, log });
      }
    },
  };
}

Deno.test(
  "two guests restored from one saved state are distinct, on time, on the fabric, on a sound disk",
  opts,
  async () => {
    const config = defaultConfig({ accel: "tcg", snapshots: true });
    const runDir = await Deno.makeTempDir();
    const seen: Seen[] = [];
    // The state is saved first when the cache has none; the guests are restored either way.
    const r = await runRow(twoGuestRow(seen), new Lab(config, fabricStarter), runDir);
    assert.equal(r.status, "PASS", r.reason);
    assert.deepEqual(r.guests?.map((g) => [g.name, g.start]), [["g0", "snapshot"], [
      "g1",
      "snapshot",
    ]]);
    assert.equal(seen.length, 2);
    const [a, b] = seen;
    assert.deepEqual([a.hostname, b.hostname], ["g0", "g1"]);
    assert.match(a.machineId, /^[0-9a-f]{32}$/);
    assert.notEqual(a.machineId, b.machineId, "both guests have one machine-id");
    assert.match(a.random, /^[0-9a-f]{64}$/);
    assert.notEqual(a.random, b.random, "both guests' /dev/urandom gave the same bytes");
    for (const s of seen) {
      assert.ok(
        Math.abs(s.clockOffsetMs) < CLOCK_SLACK_MS,
        `${s.hostname}'s clock is ${(s.clockOffsetMs / 1000).toFixed(1)} s off the host's`,
      );
      assert.equal(s.diskOk, "same", `${s.hostname}: disk round trip: ${s.diskOk}`);
      assert.equal(s.fsErrors, "", `${s.hostname}: kernel log: ${s.fsErrors}`);
      // The kernel's own reseed at resume (vmgenid), before anything in the
      // guest drew a random number: the CRNG's periodic reseed would make
      // two guests' output differ soon enough, but not before sshd's first keys.
      assert.match(
        s.log,
        /crng reseeded due to virtual machine fork/,
        `${s.hostname}: the kernel did not reseed at resume (vmgenid)`,
      );
    }
    assert.deepEqual([a.mac, b.mac], [vnicMac(0, 0), vnicMac(1, 0)]);
    await Deno.remove(runDir, { recursive: true });
  },
);
