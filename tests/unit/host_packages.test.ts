import assert from "node:assert/strict";
import { ensurePackages, type PackageHost } from "../../harness/host.ts";
import type { ExecResult } from "../../harness/exec.ts";
import { setQuiet } from "../../harness/progress.ts";

/** A host where `have` is installed, apt-get installs, and every command takes a tick. */
function fakeHost(have: string[]) {
  const installed = new Set(have);
  const log: string[] = [];
  let inApt = 0;
  const host: PackageHost = {
    root: true,
    async run(argv): Promise<ExecResult> {
      const ok = { code: 0, stdout: "", stderr: "" };
      if (argv[0] === "dpkg-query") {
        const pkgs = argv.slice(4).filter((p) => installed.has(p));
        return { ...ok, stdout: pkgs.map((p) => `${p} installed\n`).join("") };
      }
      if (argv[0] !== "apt-get") return ok; // command -v apt-get
      assert.equal(inApt, 0, "two apt-get at once on one host");
      inApt++;
      log.push(argv.join(" "));
      await new Promise((r) => setTimeout(r, 2));
      if (argv[1] === "install") { for (const p of argv.slice(4)) installed.add(p); }
      inApt--;
      return ok;
    },
  };
  return { host, log };
}

Deno.test("ensurePackages: installs on one host queue; the second finds the first's work done", async () => {
  setQuiet(true);
  const { host, log } = fakeHost(["make"]);
  await Promise.all([
    ensurePackages(["make", "gcc"], "/dev/null", host),
    ensurePackages(["gcc", "meson"], "/dev/null", host),
    ensurePackages(["gcc"], "/dev/null", host),
  ]);
  assert.deepEqual(log, [
    "apt-get update",
    "apt-get install -y --no-install-recommends gcc",
    "apt-get update",
    "apt-get install -y --no-install-recommends meson",
  ]);
});

Deno.test("ensurePackages: a failed install does not stop the next in the queue", async () => {
  setQuiet(true);
  const { host, log } = fakeHost([]);
  const broken: PackageHost = {
    root: true,
    run: (argv, opts) =>
      argv[0] === "apt-get" && argv.includes("bad")
        ? Promise.reject(new Error("E: Unable to locate package bad"))
        : host.run(argv, opts),
  };
  const first = ensurePackages(["bad"], "/dev/null", broken);
  const second = ensurePackages(["gcc"], "/dev/null", broken);
  await assert.rejects(first, /Unable to locate/);
  await second;
  assert.ok(log.includes("apt-get install -y --no-install-recommends gcc"), log.join(" | "));
});
