/**
 * Guests from a snapshot, the pure parts: what a saved state is keyed by,
 * which guests may start from one, the restore command line, and the
 * identity agent a restored guest answers the host with (run here, over
 * pipes, with the guest's kernel interfaces as files).
 */
import assert from "node:assert/strict";
import { defaultConfig } from "../../harness/config.ts";
import { coldReason } from "../../harness/matrix/guest_start.ts";
import type { Row } from "../../harness/matrix/row.ts";
import { type GuestSpec, qemuArgs, qemuOptValue, vnicMac } from "../../harness/vm/qemu_args.ts";
import { exec, shq } from "../../harness/exec.ts";
import { hostNow } from "../../harness/vm/clock.ts";
import {
  AGENT_LOG,
  AGENT_PATH,
  applyIdentity,
  COLDPLUG_OUR_DEVICES,
  IDENTITY_TTY,
  identityAgentSource,
  patternOf,
  RESEED_BYTES,
  startAgentCommand,
  UNLOAD_OUR_DRIVERS,
} from "../../harness/vm/restore_identity.ts";
import { fileDigest, filesToPush, restoredSpec } from "../../harness/vm/snapshot.ts";
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
    identitySocket: `/run/row/g${i}.identity`,
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
    files: new Map(),
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

Deno.test("the identity line: a second serial port on a socket, its path out of the key", () => {
  const args = qemuArgs(spec(2));
  const at = args.indexOf("socket,id=identity,path=/run/row/g2.identity,server=on,wait=off");
  assert.ok(at > 0);
  assert.equal(args[at + 2], "isa-serial,chardev=identity,index=1");
  const base = qemuArgs(snapshotBaseSpec(spec(2)));
  assert.ok(base.includes("socket,id=identity,path=,server=on,wait=off"));
  // a guest without the line has no agent to answer: it boots cold
  const { identitySocket: _, ...without } = spec(0);
  assert.match(snapshotBlocker(without)!, /no identity line/);
  assert.ok(!qemuArgs(without).includes("isa-serial,chardev=identity,index=1"));
});

Deno.test("identity agent: started on ttyS1 with the coldplug, drivers unloaded last loaded first", () => {
  assert.equal(
    startAgentCommand(),
    `perl ${AGENT_PATH} ${IDENTITY_TTY} ${shq(COLDPLUG_OUR_DEVICES)} ${AGENT_LOG}`,
  );
  // our two PCI functions (docs/devices.md) and nothing else; the pattern quoted from the shell
  assert.equal(
    COLDPLUG_OUR_DEVICES,
    "udevadm trigger --action=add --subsystem-match=pci --attr-match=vendor=0x1af4 " +
      "'--attr-match=device=0x10f[01]' && udevadm settle -t 60",
  );
  assert.equal(patternOf(["0x10f0", "0x10f1", "0x10f1"]), "0x10f[01]");
  assert.equal(patternOf(["ab", "ab"]), "ab");
  assert.throws(() => patternOf(["0x1", "0x10"]), /one length/);
  for (const m of ["cnuas_ib", "cnuas_net", "cnuasgpu_host", "cnuasgpu"]) {
    assert.ok(UNLOAD_OUR_DRIVERS.includes(` ${m} `) || UNLOAD_OUR_DRIVERS.includes(` ${m};`), m);
  }
  assert.ok(UNLOAD_OUR_DRIVERS.indexOf("cnuas_ib") < UNLOAD_OUR_DRIVERS.indexOf("cnuas_net"));
});

/**
 * The agent's program with the guest's kernel interfaces as files in `dir`
 * and settimeofday printing its timeval on stderr; `edit` for more.
 */
async function agentOnHost(dir: string, edit = (s: string) => s): Promise<string> {
  let src = new TextDecoder().decode(await identityAgentSource());
  const swap = (from: string, to: string) => {
    assert.ok(src.includes(from), `the agent no longer has ${from}`);
    src = src.replaceAll(from, to);
  };
  swap("syscall(SYS_SETTIMEOFDAY, ", "settime(");
  swap("ioctl($r, RNDRESEEDCRNG, 0)", "1");
  swap("'/dev/urandom'", `'${dir}/urandom'`);
  swap("'/proc/sys/kernel/hostname'", `'${dir}/hostname'`);
  swap("'/etc/machine-id'", `'${dir}/machine-id'`);
  src = edit(src) +
    'sub settime { print STDERR "settime ", join(".", unpack("l!l!", $_[0])), "\\n"; 0 }\n';
  const path = `${dir}/agent.pl`;
  await Deno.writeTextFile(path, src);
  return path;
}

/**
 * The agent on the host, its stdin and stdout behind a unix socket that
 * `applyIdentity` connects to as to QEMU's chardev: one connection at a
 * time, and what the agent writes while none is open is lost.
 */
async function agentBehindSocket(dir: string, edit?: (s: string) => string) {
  const agent = new Deno.Command("perl", {
    args: [await agentOnHost(dir, edit), "-", `touch ${dir}/coldplug`],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const path = `${dir}/identity.sock`;
  const listener = Deno.listen({ transport: "unix", path });
  let current: Deno.UnixConn | undefined;
  const out = (async () => {
    for await (const c of agent.stdout) await current?.write(c).catch(() => {});
  })();
  const toAgent = agent.stdin.getWriter();
  const serve = (async () => {
    for await (const conn of listener) {
      current = conn;
      try {
        for await (const c of conn.readable) await toAgent.write(c);
      } catch { /* the host closed */ }
      current = undefined;
    }
  })().catch(() => {});
  const stop = async () => {
    listener.close();
    await serve;
    // end of input: the agent (not on a tty) exits
    await toAgent.close();
    const status = await agent.status;
    await out;
    return { status, stderr: await agent.stderr.text() };
  };
  return { path, stop };
}

Deno.test("identity agent run here: clock, reseed bytes, hostname, machine-id, coldplug; then again", async () => {
  const dir = await Deno.makeTempDir();
  const agent = await agentBehindSocket(dir);
  try {
    const t0 = hostNow();
    const first = await applyIdentity("g7", agent.path, true, 20);
    // the agent's clock is this host's: the lead is within the round trip
    assert.ok(Math.abs(first.clock.offMs) <= first.clock.rttMs / 2 + 5, JSON.stringify(first));
    assert.ok(first.doneAt >= t0);
    const seed = await Deno.readFile(`${dir}/urandom`);
    assert.equal(seed.length, RESEED_BYTES);
    assert.equal(await Deno.readTextFile(`${dir}/hostname`), "g7");
    const id1 = await Deno.readTextFile(`${dir}/machine-id`);
    assert.match(id1, /^[0-9a-f]{32}\n$/);
    await Deno.stat(`${dir}/coldplug`);
    // the agent waits for the next exchange; without the coldplug this time
    await Deno.remove(`${dir}/coldplug`);
    await applyIdentity("g8", agent.path, false, 20);
    assert.equal(await Deno.readTextFile(`${dir}/hostname`), "g8");
    assert.notEqual(await Deno.readTextFile(`${dir}/machine-id`), id1);
    assert.notDeepEqual(await Deno.readFile(`${dir}/urandom`), seed);
    await assert.rejects(Deno.stat(`${dir}/coldplug`));
    await assert.rejects(applyIdentity("g8; reboot", agent.path, false, 20), /not a guest name/);
  } finally {
    const { status, stderr } = await agent.stop();
    assert.equal(status.code, 0, stderr);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("identity agent run here: a failing step is reported as fail, and nothing after it runs", async () => {
  const dir = await Deno.makeTempDir();
  const agent = await agentBehindSocket(
    dir,
    (s) => s.replace("system('/bin/sh', '-c', $coldplug)", "system('false')"),
  );
  try {
    await Deno.mkdir(`${dir}/hostname`);
    await assert.rejects(
      applyIdentity("g7", agent.path, true, 20),
      /g7: the identity agent failed: .*hostname: Is a directory/,
    );
    await assert.rejects(Deno.stat(`${dir}/machine-id`));
    await Deno.remove(`${dir}/hostname`);
    await assert.rejects(
      applyIdentity("g7", agent.path, true, 20),
      /g7: the identity agent failed: coldplug: exit 1$/,
    );
    assert.equal(await Deno.readTextFile(`${dir}/hostname`), "g7");
  } finally {
    const { status, stderr } = await agent.stop();
    assert.equal(status.code, 0, stderr);
    await Deno.remove(dir, { recursive: true });
  }
});

/** Run the agent here on `input`, its clock fixed at 100.250000 s. */
async function fixedClockAgent(input: string) {
  const dir = await Deno.makeTempDir();
  try {
    const path = await agentOnHost(
      dir,
      (s) => s.replaceAll("Time::HiRes::gettimeofday()", "(100, 250000)"),
    );
    return await exec(["perl", path, "-", "true"], {
      stdin: new TextEncoder().encode(input),
      allowFail: true,
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("clock correction: relative to the agent's own reading, so a late answer costs nothing", async () => {
  const seed = "ab".repeat(RESEED_BYTES);
  const ahead = await fixedClockAgent(`hello g1 0\ntime\nlead -7412600 ${seed}\n`);
  // its reading first, then 100.250000 - (-7.412600)
  assert.equal(ahead.stdout, "ready\nclock 100250000000\ndone\n");
  assert.match(ahead.stderr, /^settime 107\.662600$/m);
  const behind = await fixedClockAgent(`hello g1 0\ntime\nlead 250000 ${seed}\n`);
  assert.match(behind.stderr, /^settime 100\.0$/m); // 100.250000 - 0.250000
  // noise before a hello is ignored; a wrong answer within an exchange fails it
  const wrong = await fixedClockAgent(`noise\nhello g1 0\ntime\nlead soon\nhello g1 0\nnope\n`);
  assert.equal(
    wrong.stdout,
    "ready\nclock 100250000000\nfail expected lead US SEED, got 'lead soon'\n" +
      "ready\nfail expected time, got 'nope'\n",
  );
  const short = await fixedClockAgent(`hello g1 0\ntime\nlead 1 ${seed.slice(2)}\n`);
  assert.match(short.stdout, /fail expected lead US SEED/);
  assert.doesNotMatch(short.stderr, /settime/);
});

Deno.test("a state's files: only those it lacks or holds in another version are pushed", () => {
  const bytes = (t: string) => new TextEncoder().encode(t);
  const prog = { path: "/opt/cnuas/bin/verbs_limits", data: bytes("v1"), mode: 0o755 };
  const src = { path: "/opt/cnuas/src/example.c", data: bytes("int main;"), mode: 0o644 };
  const held = new Map([prog, src].map((f) => [f.path, fileDigest(f)]));
  assert.deepEqual(filesToPush([prog, src], held), []);
  const edited = { ...prog, data: bytes("v2") };
  const chmodded = { ...src, mode: 0o755 };
  const added = { path: "/opt/cnuas/bin/new_test", data: bytes("v1"), mode: 0o755 };
  assert.deepEqual(filesToPush([edited, chmodded, added], held), [edited, chmodded, added]);
  // a state made without files (or before they were kept) holds none
  assert.deepEqual(filesToPush([prog], new Map()), [prog]);
  // same bytes at another path are another file
  assert.deepEqual(filesToPush([{ ...prog, path: "/opt/cnuas/bin/copy" }], held).length, 1);
});

Deno.test("paths with commas reach QEMU's option lists with each comma doubled", () => {
  const args = qemuArgs(spec(0, {
    rootfs: "/c,1/rootfs.img",
    qmpSocket: "/runs,tcg/g0.qmp",
    identitySocket: "/runs,tcg/g0.identity",
    consoleLog: "/runs,tcg/g0.console.log",
    devices: [
      { kind: "vnic", mac: vnicMac(0, 0), socketPath: "/tmp/a,b/fabric.sock" },
      { kind: "gpu", gpuId: 1, smCount: 8, devmemMb: 64, linkSocket: "/tmp/a,b/link.sock" },
    ],
  }));
  assert.ok(args.includes("file=/c,,1/rootfs.img,if=none,id=root,format=raw,snapshot=on"));
  assert.ok(args.includes("unix:/runs,,tcg/g0.qmp,server=on,wait=off"));
  assert.ok(args.includes("file,id=con,path=/runs,,tcg/g0.console.log"));
  assert.ok(args.includes("socket,id=identity,path=/runs,,tcg/g0.identity,server=on,wait=off"));
  assert.ok(args.some((a) => a.endsWith("socket_path=/tmp/a,,b/fabric.sock")));
  assert.ok(args.some((a) => a.endsWith("cnuaslink_socket=/tmp/a,,b/link.sock")));
  assert.equal(qemuOptValue("no commas"), "no commas");
});
