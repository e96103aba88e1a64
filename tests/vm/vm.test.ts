/**
 * The VM layer against real QEMU and a real booted guest: QMP, the SSH
 * runner's exit codes, stderr and timeout, and that no QEMU outlives a row
 * that throws or hangs. Builds QEMU and the image first (cached).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { defaultConfig } from "../../harness/config.ts";
import { Lab } from "../../harness/matrix/lab.ts";
import type { Row, RowContext } from "../../harness/matrix/row.ts";
import { runRow } from "../../harness/matrix/runner.ts";
import { setQuiet } from "../../harness/progress.ts";
import { BootTimeoutError, descendantsOf, GuestVm } from "../../harness/vm/guest.ts";
import { freePort } from "../../harness/vm/ports.ts";
import { QmpClient } from "../../harness/vm/qmp.ts";
import { pidAlive, release, track } from "../../harness/vm/reaper.ts";

setQuiet(true);
const config = defaultConfig({ accel: "tcg" });
const lab = new Lab(config);
const opts = { sanitizeOps: false, sanitizeResources: false };

/** PIDs of processes whose command line mentions `needle`. */
function pidsMentioning(needle: string): number[] {
  const out: number[] = [];
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const cmd = Deno.readTextFileSync(`/proc/${e.name}/cmdline`);
      if (cmd.includes(needle) && Number(e.name) !== Deno.pid) out.push(Number(e.name));
    } catch { /* exited */ }
  }
  return out;
}

Deno.test("QMP: a paused QEMU reports paused, runs after cont, exits on quit", opts, async () => {
  const { qemu } = await lab.ensureBuilds(["qemu"]);
  const dir = await Deno.makeTempDir();
  const sock = join(dir, "qmp.sock");
  const child = new Deno.Command(qemu!, {
    args: [
      "-S",
      "-machine",
      "q35",
      "-accel",
      "tcg",
      "-nodefaults",
      "-display",
      "none",
      "-qmp",
      `unix:${sock},server=on,wait=off`,
    ],
    stdout: "null",
    stderr: "null",
  }).spawn();
  track(child.pid, "qmp test");
  try {
    const qmp = await QmpClient.connect(sock);
    assert.deepEqual(await qmp.execute("query-status"), {
      running: false,
      singlestep: false,
      status: "prelaunch",
    });
    await qmp.execute("cont");
    const st = await qmp.execute("query-status") as { running: boolean };
    assert.equal(st.running, true);
    await assert.rejects(qmp.execute("no-such-command"), /CommandNotFound/);
    await qmp.execute("quit").catch(() => {});
    const status = await child.status;
    assert.equal(status.success, true);
    qmp.close();
  } finally {
    try {
      child.kill("SIGKILL");
    } catch { /* exited */ }
    release(child.pid);
    await Deno.remove(dir, { recursive: true });
  }
});

function testRow(id: string, run: (ctx: RowContext) => Promise<void>, timeoutSec = 120): Row {
  return { id, title: id, needs: { guests: 1, builds: ["qemu", "image"] }, timeoutSec, run };
}

Deno.test(
  "SSH runner: exit codes, stdout, stderr, timeout and file transfer on a booted guest",
  opts,
  async () => {
    const runDir = await Deno.makeTempDir();
    const seen: Record<string, unknown> = {};
    const r = await runRow(
      testRow("ssh-runner", async (ctx) => {
        const g = ctx.guests[0];
        seen.exit3 = (await g.run("echo out; echo err >&2; exit 3")).code;
        const both = await g.run("echo out; echo err >&2; exit 3");
        seen.stdout = both.stdout;
        seen.stderr = both.stderr;
        const t0 = performance.now();
        seen.timeout = (await g.run("sleep 61 & sleep 60", { timeoutSec: 2 })).code;
        seen.timeoutSec = (performance.now() - t0) / 1000;
        // the command and what it left in the background are gone (TERM at the timeout)
        seen.left = (await g.run("sleep 1; pgrep -af 'sleep 6[01]'")).stdout;
        const data = new Uint8Array(70_000).map((_, i) => (i * 7) & 0xff);
        await g.putFile("/tmp/blob", data, 0o600);
        seen.back = await g.getFile("/tmp/blob");
        seen.data = data;
        seen.mode = (await g.run("stat -c %a /tmp/blob")).stdout.trim();
        seen.checkFails = await g.run("false", { check: true }).then(
          () => "no",
          (e: Error) => e.name,
        );
      }),
      lab,
      runDir,
    );
    assert.equal(r.status, "PASS", r.reason);
    assert.equal(seen.exit3, 3);
    assert.equal(seen.stdout, "out\n");
    assert.equal(seen.stderr, "err\n");
    assert.equal(seen.timeout, 124);
    assert.equal(seen.left, "");
    assert.deepEqual(seen.back, seen.data);
    assert.equal(seen.mode, "600");
    assert.equal(seen.checkFails, "RowFailure");
    await Deno.remove(runDir, { recursive: true });
  },
);

Deno.test("a row that throws is ERROR and leaves no QEMU running", opts, async () => {
  const runDir = await Deno.makeTempDir();
  let pids: number[] = [];
  const r = await runRow(
    testRow("throws", async (ctx) => {
      pids = pidsMentioning(join(runDir, "rows", "throws"));
      await ctx.guests[0].run("true");
      throw new Error("row body blew up");
    }),
    lab,
    runDir,
  );
  assert.equal(r.status, "ERROR");
  assert.match(r.reason!, /row body blew up/);
  assert.ok(pids.length >= 1, "the row saw its QEMU");
  for (const p of pids) assert.equal(pidAlive(p), false, `QEMU ${p} still alive`);
  await Deno.remove(runDir, { recursive: true });
});

Deno.test(
  "a row that hangs is ERROR after its timeout and leaves no QEMU running",
  opts,
  async () => {
    const runDir = await Deno.makeTempDir();
    let pids: number[] = [];
    const r = await runRow(
      testRow("hangs", async (ctx) => {
        pids = pidsMentioning(join(runDir, "rows", "hangs"));
        await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
        await new Promise(() => {}); // never returns
      }, 2),
      lab,
      runDir,
    );
    assert.equal(r.status, "ERROR");
    assert.match(r.reason!, /timed out after 8 s/);
    assert.ok(pids.length >= 1, "the row saw its QEMU");
    for (const p of pids) assert.equal(pidAlive(p), false, `QEMU ${p} still alive`);
    await Deno.remove(runDir, { recursive: true });
  },
);

Deno.test(
  "a guest that panics during a row is ERROR (guest died) with the panic line",
  opts,
  async () => {
    const runDir = await Deno.makeTempDir();
    let after = "not reached";
    const r = await runRow(
      testRow("panics", async (ctx) => {
        const g = ctx.guests[0];
        await g.run("echo 1 >/proc/sys/kernel/sysrq; echo c >/proc/sysrq-trigger", {
          timeoutSec: 20,
        });
        after = "the crashing command returned instead of throwing";
      }),
      lab,
      runDir,
    );
    assert.equal(r.status, "ERROR");
    assert.match(r.reason!, /guest died/);
    assert.match(r.reason!, /Kernel panic|sysrq/i);
    assert.equal(after, "not reached");
    await Deno.remove(runDir, { recursive: true });
  },
);

Deno.test("a guest that never answers SSH is ERROR with the console tail", opts, async () => {
  const runDir = await Deno.makeTempDir();
  // init=/bin/false: the kernel panics at once; -no-reboot ends QEMU.
  const img = await lab.ensureBuilds(["qemu", "image"]);
  assert.ok(img.image);
  const row: Row = {
    id: "dead",
    title: "dead",
    needs: { guests: 1, builds: ["qemu", "image"] },
    timeoutSec: 60,
    run: () => Promise.resolve(),
  };
  const broken = new Lab(config);
  await broken.ensureBuilds(["qemu", "image"]);
  broken.bootAppend = ["init=/bin/false"];
  const r = await runRow(row, broken, runDir);
  assert.equal(r.status, "ERROR");
  assert.match(r.reason!, /died during boot|did not answer SSH/);
  assert.match(r.reason!, /Kernel panic|Attempted to kill init/);
  await Deno.remove(runDir, { recursive: true });
});

Deno.test(
  "a guest that stays up but never answers SSH is ERROR within its boot deadline, with the console",
  opts,
  async () => {
    const runDir = await Deno.makeTempDir();
    const silent = new Lab(config);
    await silent.ensureBuilds(["qemu", "image"]);
    // The kernel boots, then runs `sleep` as init: no sshd ever starts.
    silent.bootAppend = ["init=/usr/bin/sleep", "--", "infinity"];
    silent.bootTimeoutSec = 25;
    const row: Row = {
      id: "silent",
      title: "silent",
      needs: { guests: 1, builds: ["qemu", "image"] },
      timeoutSec: 120,
      run: () => Promise.reject(new Error("the row must not run without SSH")),
    };
    const r = await runRow(row, silent, runDir);
    assert.equal(r.status, "ERROR");
    assert.match(r.reason!, /did not answer SSH within 25 s/);
    assert.doesNotMatch(r.reason!, /died/, "the guest stayed up");
    assert.match(r.reason!, /init-bottom/, "the console tail shows how far the guest got");
    await Deno.remove(runDir, { recursive: true });
  },
);

Deno.test(
  "a restored guest whose state never arrives is a boot timeout that says what QEMU is doing",
  opts,
  async () => {
    const { qemu, qemuFirmware } = await lab.ensureBuilds(["qemu", "image"]);
    const image = lab.image!;
    const dir = await Deno.makeTempDir({ prefix: "cnuas-never-" });
    // A FIFO nobody writes: `exec:cat` blocks in open, the load never starts.
    const state = join(dir, "state");
    const mk = await new Deno.Command("mkfifo", { args: [state] }).output();
    assert.ok(mk.success);
    const vm = await GuestVm.start({
      name: "never",
      qemu: qemu!,
      firmware: qemuFirmware ?? [],
      kernel: image.kernel,
      initrd: image.initrd,
      rootfs: image.rootfs,
      accel: "tcg",
      memMb: 256,
      cpus: 1,
      sshPort: freePort(),
      qmpSocket: join(dir, "qmp.sock"),
      consoleLog: join(dir, "console.log"),
      devices: [],
      incoming: state,
    }, { sshKeyPath: "", bootTimeoutSec: 5, logDir: dir });
    try {
      // no key: the deadline passes while the guest waits for its state
      const e = await vm.waitForSsh(freePort(), "", 5).then(() => undefined, (e) => e as Error);
      assert.ok(e instanceof BootTimeoutError, String(e));
      assert.match(e.message, /did not answer SSH within 5 s/);
      assert.match(e.message, /its state never ran \(query-status: inmigrate; query-migrate: /);
      assert.match(e.message, /children: [^;]*cat [^;]*state/, "the reader of the state is named");
      assert.match(e.message, /threads: .*CPU 0\/TCG/, "QEMU's threads are listed");
      // the reader blocked on the FIFO outlives QEMU unless close ends it
      const readers = await descendantsOf(vm.pid);
      assert.ok(readers.length >= 1, "QEMU's exec: reader is its child");
      await vm.close();
      for (const r of readers) {
        // gone, or a zombie until PID 1 reaps it
        const stat = await Deno.readTextFile(`/proc/${r.pid}/stat`).catch(() => "gone) X");
        const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
        assert.ok(state === "X" || state === "Z", `QEMU's child ${r.pid} left in state ${state}`);
      }
    } finally {
      await vm.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
);
