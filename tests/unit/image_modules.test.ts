/**
 * The guest image: it leaves out modules of hardware no guest has, and never one a kept module
 * needs; its initramfs runs no udev; its init says when sshd runs.
 */
import assert from "node:assert/strict";
import { KEPT_MODULES, modulesToPrune, PRUNED_MODULE_TREES } from "../../harness/build/image.ts";
import { SSHD_MARKER } from "../../harness/vm/guest.ts";
import { exec } from "../../harness/exec.ts";

const DEP = [
  "kernel/sound/core/snd.ko: kernel/sound/soundcore.ko",
  "kernel/sound/soundcore.ko:",
  "kernel/drivers/usb/core/usbcore.ko: kernel/drivers/usb/common/usb-common.ko",
  "kernel/drivers/usb/common/usb-common.ko:",
  "kernel/drivers/input/mouse/bcm5974.ko: kernel/drivers/usb/core/usbcore.ko " +
  "kernel/drivers/usb/common/usb-common.ko",
  "kernel/drivers/input/mouse/psmouse.ko:",
  "kernel/drivers/infiniband/core/ib_core.ko:",
  "kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko: kernel/drivers/infiniband/core/ib_core.ko",
  "updates/dkms/cnuas_ib.ko.xz: kernel/drivers/infiniband/core/ib_core.ko",
  "",
].join("\n");

Deno.test("a pruned tree's modules go, and every module that depends on one of them", () => {
  assert.deepEqual(modulesToPrune(DEP, PRUNED_MODULE_TREES), [
    "kernel/sound/core/snd.ko",
    "kernel/sound/soundcore.ko",
    "kernel/drivers/usb/core/usbcore.ko",
    "kernel/drivers/usb/common/usb-common.ko",
    "kernel/drivers/input/mouse/bcm5974.ko",
  ]);
  // a tree is a directory: kernel/drivers/usbip is not under kernel/drivers/usb
  assert.deepEqual(
    modulesToPrune("kernel/drivers/usbip/usbip-core.ko:\n", ["kernel/drivers/usb"]),
    [],
  );
});

Deno.test("no tree pruned holds the RDMA core, rxe, IPoIB or virtio", () => {
  for (const t of PRUNED_MODULE_TREES) {
    assert.ok(!/infiniband\/(core|sw|ulp)|virtio|\/net\/core/.test(t), t);
  }
  assert.ok(KEPT_MODULES.includes("rdma_rxe") && KEPT_MODULES.includes("ib_ipoib"));
});

Deno.test("a tree that would take a module the rows load fails the build, naming it", () => {
  assert.throws(
    () => modulesToPrune(DEP, [...PRUNED_MODULE_TREES, "kernel/drivers/infiniband/sw"]),
    /would remove rdma_rxe$/,
  );
  // ib_core taken: everything that needs it goes too, our own cnuas_ib among them
  assert.throws(
    () => modulesToPrune(DEP, ["kernel/drivers/infiniband/core"], ["cnuas_ib"]),
    /would remove cnuas_ib$/,
  );
});

const BUILD = new URL("../../harness/build/", import.meta.url).pathname;
const INITRAMFS = `${BUILD}initramfs`;

/** Run `script` with sh, DESTDIR in its environment. */
function runHookScript(script: string, args: string[], destdir = "") {
  return exec(["sh", script, ...args], { env: { DESTDIR: destdir }, allowFail: true });
}

Deno.test("the initramfs hook takes udev out and leaves the rest", async () => {
  const d = await Deno.makeTempDir();
  try {
    const gone = [
      "usr/lib/udev/hwdb.bin",
      "usr/lib/udev/rules.d/80-drivers.rules",
      "usr/bin/udevadm",
      "usr/lib/systemd/systemd-udevd",
      "etc/udev/udev.conf",
      "usr/lib/x86_64-linux-gnu/systemd/libsystemd-shared-257.so",
    ];
    const kept = ["usr/bin/kmod", "usr/lib/x86_64-linux-gnu/libc.so.6", "scripts/init-top/udev"];
    for (const f of [...gone, ...kept]) {
      await Deno.mkdir(`${d}/${f.slice(0, f.lastIndexOf("/"))}`, { recursive: true });
      await Deno.writeTextFile(`${d}/${f}`, f);
    }
    // asked for its prerequisites, a hook does nothing else
    const pre = await runHookScript(`${INITRAMFS}/hook-no-udev`, ["prereqs"], d);
    assert.equal(pre.code, 0);
    for (const f of gone) await Deno.stat(`${d}/${f}`);
    assert.equal((await runHookScript(`${INITRAMFS}/hook-no-udev`, [], d)).code, 0);
    for (const f of gone) await assert.rejects(Deno.stat(`${d}/${f}`), f);
    for (const f of kept) assert.equal(await Deno.readTextFile(`${d}/${f}`), f);
    // without DESTDIR it stops before it removes anything (checked by reading: a broken guard
    // run here would remove the host's own files)
    const hook = await Deno.readTextFile(`${INITRAMFS}/hook-no-udev`);
    const guard = hook.indexOf(': "${DESTDIR:?');
    assert.ok(guard > 0 && guard < hook.indexOf("rm -rf"), "DESTDIR checked before rm");
  } finally {
    await Deno.remove(d, { recursive: true });
  }
});

Deno.test("udev's initramfs scripts' replacements are sh, answer prereqs, keep moving /dev", async () => {
  for (const f of ["init-top-udev", "init-bottom-udev", "hook-no-udev"]) {
    const p = `${INITRAMFS}/${f}`;
    assert.equal((await exec(["sh", "-n", p], { allowFail: true })).code, 0, p);
    const r = await runHookScript(p, ["prereqs"]);
    assert.equal(r.code, 0, p);
    assert.equal(r.stdout.trim(), "", p);
  }
  const bottom = await Deno.readTextFile(`${INITRAMFS}/init-bottom-udev`);
  assert.match(bottom, /mount -n -o move \/dev "\$\{rootmnt:\?\}\/dev"/);
  assert.doesNotMatch(bottom + await Deno.readTextFile(`${INITRAMFS}/init-top-udev`), /udevadm/);
});

Deno.test("the guests' init says on the console when sshd runs, after starting it", async () => {
  const init = await Deno.readTextFile(`${BUILD}guest-init.sh`);
  const started = init.indexOf("/usr/sbin/sshd ");
  const said = init.indexOf(`echo "${SSHD_MARKER} `);
  assert.ok(started > 0 && said > started, "sshd started, then the marker");
});
