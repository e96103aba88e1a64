/** The fresh-host check's one-line findings, from the logs the tools really write. */
import assert from "node:assert/strict";
import {
  explainLog,
  HOST_COMMANDS,
  parseInstallPlan,
  unmetPlan,
} from "../../harness/build/fresh_host.ts";
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

Deno.test("apt's install plan is read from its simulation: each Inst line, name=version, sorted", () => {
  const sim = [
    "NOTE: This is only a simulation!",
    "Inst zlib1g-dev (1:1.2.13.dfsg-1 Debian:12.12/stable [amd64])",
    "Inst libc6 [2.36-9+deb12u10] (2.36-9+deb12u14 Debian:12.12/stable [amd64])",
    "Inst gcc-12 (12.2.0-14+deb12u1 Debian:12.12/stable [amd64]) []",
    "Conf zlib1g-dev (1:1.2.13.dfsg-1 Debian:12.12/stable [amd64])",
  ].join("\n");
  assert.deepEqual(parseInstallPlan(sim), [
    "gcc-12=12.2.0-14+deb12u1",
    "libc6=2.36-9+deb12u14",
    "zlib1g-dev=1:1.2.13.dfsg-1",
  ]);
  assert.deepEqual(parseInstallPlan("0 upgraded, 0 newly installed\n"), []);
});

Deno.test("a plan is met only by each package installed at exactly its planned version", () => {
  const plan = ["gcc-12=12.2.0-14", "libc6=2.36-9+deb12u14", "zlib1g-dev=1:1.2.13.dfsg-1"];
  const dpkg = [
    "gcc-12 12.2.0-14 installed",
    "libc6 2.36-9+deb12u10 installed",
    "zlib1g-dev 1:1.2.13.dfsg-1 half-configured",
  ].join("\n");
  assert.deepEqual(unmetPlan(plan, dpkg), [
    "libc6=2.36-9+deb12u14 (found: 2.36-9+deb12u10)",
    "zlib1g-dev=1:1.2.13.dfsg-1 (found: 1:1.2.13.dfsg-1 half-configured)",
  ]);
  assert.deepEqual(unmetPlan(["make=4.3-4.1"], ""), ["make=4.3-4.1 (found: none)"]);
  assert.deepEqual(unmetPlan(plan.slice(0, 1), dpkg), []);
});
