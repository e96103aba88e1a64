/** The fresh-host check's one-line findings, from the logs the tools really write. */
import assert from "node:assert/strict";
import { explainLog, HOST_COMMANDS } from "../../harness/build/fresh_host.ts";
import { hostPackageList } from "../../harness/host.ts";

Deno.test("meson's missing library is the finding, not configure's generic line", () => {
  const log = [
    "Library fdt found: NO",
    "",
    "../src/meson.build:2768:2: ERROR: Problem encountered: fdt not available but required by " +
    "targets x86_64-softmmu",
    "",
    "A full log can be found at /build/qemu/build/meson-logs/meson-log.txt",
    "",
    "ERROR: meson setup failed",
  ].join("\n");
  assert.equal(
    explainLog(log, "/l"),
    "ERROR: fdt not available but required by targets x86_64-softmmu (see /l)",
  );
});

Deno.test("configure's own error, a compiler's missing header and apt's refusal are findings", () => {
  assert.equal(
    explainLog("ERROR: Cannot find Ninja\n", "/l"),
    "ERROR: Cannot find Ninja (see /l)",
  );
  assert.equal(
    explainLog("main.c:1:10: fatal error: stdio.h: No such file or directory\n", "/l"),
    "main.c:1:10: fatal error: stdio.h: No such file or directory (see /l)",
  );
  assert.equal(
    explainLog("E: Unable to locate package libfdt-devv\n", "/l"),
    "E: Unable to locate package libfdt-devv (see /l)",
  );
  assert.equal(explainLog("make: cc: not found\n", "/l"), "make: cc: not found (see /l)");
  assert.equal(explainLog("all fine\n", "/l"), undefined);
});

Deno.test("the host package list has each package once and the probes name real commands", () => {
  const list = hostPackageList();
  assert.equal(new Set(list).size, list.length);
  assert.ok(list.includes("libfdt-dev"), "QEMU 7.2 needs libfdt for x86_64-softmmu");
  assert.ok(HOST_COMMANDS.every((c) => /^[\w.+-]+$/.test(c)));
});
