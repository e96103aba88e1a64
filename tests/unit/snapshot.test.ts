/**
 * Guests from a snapshot, the pure parts: what a saved state is keyed by,
 * which guests may start from one, the restore command line, and the
 * identity command a restored guest runs.
 */
import assert from "node:assert/strict";
import { defaultConfig } from "../../harness/config.ts";
import { coldReason } from "../../harness/matrix/guest_start.ts";
import type { Row } from "../../harness/matrix/row.ts";
import { type GuestSpec, qemuArgs, qemuOptValue, vnicMac } from "../../harness/vm/qemu_args.ts";
import { exec } from "../../harness/exec.ts";
import { hostNow, nsToMs } from "../../harness/vm/clock.ts";
import {
  CLOCK_CORRECTION,
  clockAnswer,
  COLDPLUG_PCI,
  identityCommand,
  RESEED_BYTES,
  RNDRESEEDCRNG,
  UNLOAD_OUR_DRIVERS,
  X86_64_SYS_SETTIMEOFDAY,
} from "../../harness/vm/restore_identity.ts";
import { restoredSpec } from "../../harness/vm/snapshot.ts";
import {
  SNAPSHOT_GUEST,
  snapshotBaseSpec,
  snapshotBlocker,
  snapshotKeyInputs,
} from "../../harness/vm/snapshot_key.ts";
import { hashInputs } from "../../harness/cache.ts";

function spec(i: number, over: Partial<GuestSpec> = {}): GuestSpec {
  return {
    name: `g${i}`,
    qemu: "/cache/qemu/abc/qemu-system-x86_64",
    firmware: ["/usr/share/qemu"],
    kernel: "/cache/image/k1/vmlinuz",
    initrd: "/cache/image/k1/initrd.img",
    rootfs: "/cache/image/k1/rootfs.img",
    accel: "tcg",
    memMb: 1024,
    cpus: 1,
    sshPort: 40000 + i,
    qmpSocket: `/run/row/g${i}.qmp`,
    consoleLog: `/run/row/g${i}.console.log`,
    devices: [{ kind: "vnic", mac: vnicMac(i, 0), socketPath: "/run/fabric.sock" }],
    ...over,
  };
}

const key = (s: GuestSpec, image = "img1") => hashInputs(snapshotKeyInputs(s, image));

Deno.test("guests that differ only in name, ports, sockets and MACs share a saved state", () => {
  assert.equal(key(spec(0)), key(spec(1)));
  assert.equal(key(spec(0)), key(spec(3, { devices: [{ kind: "vnic", mac: vnicMac(3, 0) }] })));
});

const gpu = (gpuId: number, smCount: number, devmemMb: number, linkSocket?: string) =>
  spec(0, { devices: [{ kind: "gpu", gpuId, smCount, devmemMb, linkSocket }] });

Deno.test("accelerators that differ only in identity and CnuasLink socket share a saved state", () => {
  // gpu_id and sm_count are properties a restored device reads from its own
  // command line; BAR1 is saved state, so its size is in the key.
  assert.equal(key(gpu(0, 16, 256)), key(gpu(16, 24, 256, "/run/link.sock")));
  assert.notEqual(key(gpu(0, 16, 256)), key(gpu(0, 16, 128)));
  assert.notEqual(key(gpu(0, 16, 256)), key(spec(0)));
  const base = qemuArgs(snapshotBaseSpec(gpu(16, 24, 256, "/run/link.sock"))).join(" ");
  assert.ok(!base.includes("cnuaslink_socket"), "the base guest has no CnuasLink");
  assert.ok(!base.includes("gpu_id=16") && !base.includes("sm_count=24"), base);
});

Deno.test("everything the saved state depends on changes the key", () => {
  const k = key(spec(0));
  const changed: [string, string][] = [
    ["memory", key(spec(0, { memMb: 2048 }))],
    ["cpus", key(spec(0, { cpus: 2 }))],
    ["accelerator", key(spec(0, { accel: "kvm" }))],
    ["QEMU build", key(spec(0, { qemu: "/cache/qemu/def/qemu-system-x86_64" }))],
    ["kernel", key(spec(0, { kernel: "/cache/image/k2/vmlinuz" }))],
    ["initrd", key(spec(0, { initrd: "/cache/image/k2/initrd.img" }))],
    ["root image", key(spec(0, { rootfs: "/cache/image/k2/rootfs.img" }))],
    ["image key", key(spec(0), "img2")],
    ["kernel command line", key(spec(0, { append: ["quiet"] }))],
    ["no vnic", key(spec(0, { devices: [] }))],
    [
      "two vnics",
      key(spec(0, {
        devices: [{ kind: "vnic", mac: vnicMac(0, 0) }, { kind: "vnic", mac: vnicMac(0, 1) }],
      })),
    ],
  ];
  for (const [what, other] of changed) assert.notEqual(other, k, `${what} left the key unchanged`);
  assert.equal(new Set(changed.map(([, v]) => v)).size, changed.length);
});

Deno.test("the base spec replaces what differs between guests with fixed stand-ins", () => {
  const b = snapshotBaseSpec(spec(1));
  assert.equal(b.name, SNAPSHOT_GUEST);
  assert.equal(b.sshPort, 0);
  assert.deepEqual(b.devices, snapshotBaseSpec(spec(0)).devices);
  assert.ok(!qemuArgs(b).join(" ").includes("socket_path"), "the base guest has no fabric");
});

Deno.test("guests with the virtio-net baseline cannot be restored; with an accelerator they can", () => {
  assert.equal(snapshotBlocker(spec(0)), undefined);
  assert.equal(snapshotBlocker(gpu(0, 16, 256, "/run/link.sock")), undefined);
  assert.match(
    snapshotBlocker(spec(0, {
      devices: [{ kind: "virtio-socket", mode: "listen", port: 1, mac: vnicMac(0, 0x80) }],
    }))!,
    /virtio-net/,
  );
});

Deno.test("coldReason: --no-snapshot, a row that opts out, fault injection, devices", () => {
  const row: Row = { id: "r", title: "r", needs: { guests: 1, builds: [] }, timeoutSec: 1 };
  const on = defaultConfig({ snapshots: true });
  assert.equal(coldReason(row, on, spec(0)), undefined);
  assert.equal(coldReason(row, defaultConfig({ snapshots: false }), spec(0)), "--no-snapshot");
  assert.match(
    coldReason({ ...row, coldBoot: "measures a boot" }, on, spec(0))!,
    /measures a boot/,
  );
  assert.match(coldReason(row, on, spec(0, { append: ["init=/bin/false"] }))!, /command line/);
  assert.match(
    coldReason(
      row,
      on,
      spec(0, {
        devices: [{ kind: "virtio-socket", mode: "listen", port: 1, mac: vnicMac(0, 0x80) }],
      }),
    )!,
    /virtio-net/,
  );
});

Deno.test("a restored guest: -incoming exec:cat of the state, the saved disk under snapshot=on", () => {
  const saved = {
    key: "k",
    state: "/c/snapshot/k/state",
    rootfs: "/c/snapshot/k/rootfs.img",
    saveSec: 0,
  };
  const args = qemuArgs(restoredSpec(spec(1), saved));
  const inc = args.indexOf("-incoming");
  assert.ok(inc > 0);
  assert.equal(args[inc + 1], "exec:cat '/c/snapshot/k/state'");
  assert.ok(args.includes("file=/c/snapshot/k/rootfs.img,if=none,id=root,format=raw,snapshot=on"));
  assert.ok(args.includes("-S"), "paused: the harness continues it once loaded");
  assert.ok(args.includes("user,id=mgmt,hostfwd=tcp:127.0.0.1:40001-:22"));
  assert.ok(args.some((a) => a.includes(`mac=${vnicMac(1, 0)}`) && a.includes("socket_path=")));
  assert.ok(args.includes("vmgenid,guid=auto"));
});

Deno.test("the guest a state is saved from writes its own disk; cold guests never write theirs", () => {
  const cold = qemuArgs(spec(0));
  assert.ok(cold.some((a) => a.endsWith("format=raw,snapshot=on")));
  assert.ok(!cold.includes("-incoming"));
  const base = qemuArgs({
    ...snapshotBaseSpec(spec(0)),
    rootfs: "/x/rootfs.img",
    rootfsWritable: true,
  });
  assert.ok(base.includes("file=/x/rootfs.img,if=none,id=root,format=raw"));
  assert.equal(snapshotBlocker({ ...spec(0), rootfsWritable: true }) !== undefined, true);
});

Deno.test("identity: one Perl program (clock, reseed, hostname, machine-id), then the PCI coldplug", () => {
  const cmd = identityCommand("g1");
  const [perl, ...rest] = cmd.split(" && ");
  assert.match(perl, /^perl -MTime::HiRes -e '[^']*'$/);
  const prog = perl.slice(perl.indexOf("'") + 1, -1);
  // the clock first; the reseed before the hostname and machine-id (drawn from the CRNG)
  assert.ok(prog.startsWith(CLOCK_CORRECTION));
  const at = (what: string) => {
    const i = prog.indexOf(what);
    assert.ok(i >= 0, what);
    return i;
  };
  assert.ok(at(`ioctl($r, ${RNDRESEEDCRNG}, 0)`) < at('put("/proc/sys/kernel/hostname", "g1")'));
  assert.equal(RNDRESEEDCRNG, 0x5207);
  assert.ok(at("/proc/sys/kernel/hostname") < at('put("/etc/machine-id"'));
  // our drivers probe the restored guest's own devices (saved unloaded), after the rest
  assert.equal(rest.join(" && "), COLDPLUG_PCI);
  assert.match(COLDPLUG_PCI, /^udevadm trigger --action=add --subsystem-match=pci /);
  for (const m of ["cnuas_ib", "cnuas_net", "cnuasgpu_host", "cnuasgpu"]) {
    assert.ok(UNLOAD_OUR_DRIVERS.includes(` ${m} `) || UNLOAD_OUR_DRIVERS.includes(` ${m};`), m);
  }
  assert.ok(UNLOAD_OUR_DRIVERS.indexOf("cnuas_ib") < UNLOAD_OUR_DRIVERS.indexOf("cnuas_net"));
  assert.throws(() => identityCommand("g1; reboot"), /not a guest name/);
  // --dev-modules runs the coldplug itself, after installing the working tree's modules
  assert.equal(identityCommand("g1", false), perl);
});

/** Run a shell command here, `stdin` on its standard input. */
function sh(cmd: string, stdin?: Uint8Array) {
  return exec(["sh", "-c", cmd], { stdin, allowFail: true });
}

/** The identity program with the guest's kernel interfaces as files in `dir`; the clock only read. */
function onHost(cmd: string, dir: string): string {
  // gettimeofday (96) fills the buffer settimeofday would read; a file takes no ioctl
  return cmd.replace(`syscall(${X86_64_SYS_SETTIMEOFDAY},`, "syscall(96,")
    .replace(`ioctl($r, ${RNDRESEEDCRNG}, 0)`, "1")
    .replaceAll("/dev/urandom", `${dir}/urandom`)
    .replace("/proc/sys/kernel/hostname", `${dir}/hostname`)
    .replace("/etc/machine-id", `${dir}/machine-id`);
}

Deno.test("identity program run here: clock line first, files written, the host's bytes mixed in", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const cmd = onHost(identityCommand("g7", false), dir);
    const t0 = hostNow();
    // what applyIdentity answers: the lead, then the reseed bytes
    const answer = clockAnswer(String(BigInt(Math.round(t0 * 1000)) * 1000n + 1500000000n), t0);
    assert.ok(Math.abs(answer.reading.offMs - 1500) < 1000, `${answer.reading.offMs}`);
    const lead = new TextDecoder().decode(answer.stdin.subarray(0, answer.stdin.indexOf(10)));
    assert.equal(Number(lead), Math.round(answer.reading.offMs * 1000));
    const seed = answer.stdin.subarray(answer.stdin.indexOf(10) + 1);
    assert.equal(seed.length, RESEED_BYTES);
    const r = await sh(cmd, answer.stdin);
    assert.equal(r.code, 0, r.stderr);
    // the first line is the clock, as `date +%s%N` prints it
    const ns = r.stdout.split("\n")[0];
    assert.ok(Math.abs(nsToMs(ns) - hostNow()) < 5000, ns);
    assert.deepEqual(await Deno.readFile(`${dir}/urandom`), seed);
    assert.equal(await Deno.readTextFile(`${dir}/hostname`), "g7");
    assert.match(await Deno.readTextFile(`${dir}/machine-id`), /^[0-9a-f]{32}\n$/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("identity program run here: no lead, or fewer reseed bytes, and it fails saying which", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const cmd = onHost(identityCommand("g7", false), dir);
    const enc = new TextEncoder();
    const none = await sh(cmd);
    assert.notEqual(none.code, 0);
    assert.match(none.stderr, /clock: no lead from the host/);
    const notNumber = await sh(cmd, enc.encode("soon\n"));
    assert.match(notNumber.stderr, /clock: no lead from the host/);
    const short = await sh(cmd, enc.encode(`12\n${"x".repeat(RESEED_BYTES - 1)}`));
    assert.notEqual(short.code, 0);
    assert.match(short.stderr, /reseed: fewer bytes on stdin/);
    // nothing after the failed step was written
    await assert.rejects(Deno.stat(`${dir}/hostname`));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("clock correction: relative to the guest's own reading, so a late answer costs nothing", async () => {
  // the program against a fixed reading (100.250000 s) and a settimeofday that prints its timeval
  const prog = (CLOCK_CORRECTION + 'sub settime { print join(".", unpack("l!l!", $_[0])); 0 }')
    .replaceAll("Time::HiRes::gettimeofday()", "(100, 250000)")
    .replace(`syscall(${X86_64_SYS_SETTIMEOFDAY}, `, "settime(");
  const enc = new TextEncoder();
  const ahead = await sh(`perl -e '${prog}'`, enc.encode("-7412600\n"));
  assert.equal(ahead.code, 0, ahead.stderr);
  // its reading first, then 100.250000 - (-7.412600)
  assert.equal(ahead.stdout, "100250000000\n107.662600");
  const behind = await sh(`perl -e '${prog}'`, enc.encode("250000\n"));
  assert.equal(behind.stdout, "100250000000\n100.0"); // 100.250000 - 0.250000
});

Deno.test("paths with commas reach QEMU's option lists with each comma doubled", () => {
  const args = qemuArgs(spec(0, {
    rootfs: "/c,1/rootfs.img",
    qmpSocket: "/runs,tcg/g0.qmp",
    consoleLog: "/runs,tcg/g0.console.log",
    devices: [
      { kind: "vnic", mac: vnicMac(0, 0), socketPath: "/tmp/a,b/fabric.sock" },
      { kind: "gpu", gpuId: 1, smCount: 8, devmemMb: 64, linkSocket: "/tmp/a,b/link.sock" },
    ],
  }));
  assert.ok(args.includes("file=/c,,1/rootfs.img,if=none,id=root,format=raw,snapshot=on"));
  assert.ok(args.includes("unix:/runs,,tcg/g0.qmp,server=on,wait=off"));
  assert.ok(args.includes("file,id=con,path=/runs,,tcg/g0.console.log"));
  assert.ok(args.some((a) => a.endsWith("socket_path=/tmp/a,,b/fabric.sock")));
  assert.ok(args.some((a) => a.endsWith("cnuaslink_socket=/tmp/a,,b/link.sock")));
  assert.equal(qemuOptValue("no commas"), "no commas");
});
