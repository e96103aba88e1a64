/** The guest image leaves out modules of hardware no guest has, and never one a kept module needs. */
import assert from "node:assert/strict";
import { KEPT_MODULES, modulesToPrune, PRUNED_MODULE_TREES } from "../../harness/build/image.ts";

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
