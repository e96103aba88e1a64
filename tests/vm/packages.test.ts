/**
 * The Debian packages, installed as a user installs them, in a throwaway
 * overlay of the packaging root (the build root: the guest kernel's headers,
 * its libibverbs): the DKMS packages build and install the modules for the
 * guest kernel — not the kernel this host runs — and the kernel hook rebuilds
 * them; the provider package puts its library and `.driver` file where
 * libibverbs looks; the -dev package gives a working pkg-config file that
 * builds and runs the library's example. Builds the build root and the
 * packages first (cached); boots nothing.
 */
import assert from "node:assert/strict";
import { basename, join, relative } from "node:path";
import { CNUASDEV_LAYOUT } from "../../harness/build/cnuasdev.ts";
import { buildCnuasdev } from "../../harness/build/cnuasdev.ts";
import { buildPackages, DKMS_PACKAGES } from "../../harness/build/packages.ts";
import { buildPackagingRoot, inPackagingRoot } from "../../harness/build/packaging_root.ts";
import { PROVIDER_GUEST_PATHS } from "../../harness/build/provider.ts";
import {
  MODULE_SOURCE_DIRS,
  readLibraryVersion,
  readModuleVersion,
} from "../../harness/build/versions.ts";
import { removeTree } from "../../harness/cache.ts";
import { defaultConfig } from "../../harness/config.ts";
import { setQuiet } from "../../harness/progress.ts";

setQuiet(true);
const config = defaultConfig();

/** One section of the script's output: what a command printed and its exit code. */
interface Section {
  out: string;
  rc: number;
}

/**
 * `run NAME cmd...` prints `@@ NAME`, the command's output, then `@@rc N`;
 * the script goes on after a failure (`set +e`) so each check says what failed.
 */
const RUN = 'set +e\nrun() { n=$1; shift; echo "@@ $n"; "$@" 2>&1; echo "@@rc $?"; }';

/** Split the script's output into its sections by name. */
function sections(text: string): Map<string, Section> {
  const out = new Map<string, Section>();
  for (const m of text.matchAll(/^@@ (\S+)\n([\s\S]*?)^@@rc (\d+)$/gm)) {
    out.set(m[1], { out: m[2], rc: Number(m[3]) });
  }
  return out;
}

/** Every file under `dir`, relative to it, as hashTree sees them (dotfiles skipped). */
async function filesUnder(dir: string, base = dir): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    if (e.name.startsWith(".")) continue;
    const p = join(dir, e.name);
    if (e.isDirectory) out.push(...await filesUnder(p, base));
    else out.push(relative(base, p));
  }
  return out.sort();
}

Deno.test({
  name:
    "packages install in the build root: DKMS builds for the guest kernel, provider and pkg-config in place",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const built = await buildPackages(config);
    const proot = await buildPackagingRoot(config);
    const kver = proot.kernelRelease;
    const deb = (name: string) => {
      const d = built.flatMap((p) => p.debs).find((p) => basename(p).startsWith(`${name}_`));
      assert.ok(d, `no ${name} package built`);
      return `/mnt/debs/${basename(d)}`;
    };
    const scratch = await Deno.makeTempDir({ prefix: "cnuas-packages-" });
    try {
      await Deno.mkdir(join(scratch, "debs"));
      for (const d of built.flatMap((p) => p.debs)) {
        await Deno.copyFile(d, join(scratch, "debs", basename(d)));
      }
      const dkms = DKMS_PACKAGES.map((pkg) => ({
        pkg,
        version: built.find((b) => b.source === pkg.name)!.version,
      }));
      const updates = `/lib/modules/${kver}/updates/dkms`;
      const gpu = dkms[1];
      const script = [
        RUN,
        `run install-dkms dpkg -i ${dkms.map((d) => deb(d.pkg.name)).join(" ")}`,
        ...dkms.flatMap(({ pkg, version }) => [
          `run status-${pkg.name} dkms status -m ${pkg.name} -v ${version} -k ${kver}`,
          `run list-${pkg.name} dpkg -L ${pkg.name}`,
          ...pkg.modules.map((m) => `run modinfo-${m} modinfo ${updates}/${m}.ko*`),
        ]),
        // a kernel upgrade: the modules are added but not built for the kernel; its hook builds them
        `run unbuild-gpu dkms unbuild ${gpu.pkg.name}/${gpu.version} -k ${kver}`,
        `run gone-gpu dkms status -m ${gpu.pkg.name} -k ${kver}`,
        `run hook /etc/kernel/postinst.d/dkms ${kver}`,
        `run rebuilt-gpu dkms status -m ${gpu.pkg.name} -v ${gpu.version} -k ${kver}`,
        `run install-provider dpkg -i ${deb("ibverbs-providers-cnuas")}`,
        "run list-provider dpkg -L ibverbs-providers-cnuas",
        `run driver-file cat ${PROVIDER_GUEST_PATHS.driverFile}`,
        `run install-lib dpkg -i ${deb("libcnuasdev1")} ${deb("libcnuasdev-dev")}`,
        "run pkg-config pkg-config --cflags --libs cnuasdev",
        "run modversion pkg-config --modversion cnuasdev",
        "run example sh -ec 'cc -o /tmp/cnuasdev_list /mnt/src/cnuasdev_list.c " +
        "$(pkg-config --cflags --libs cnuasdev); /tmp/cnuasdev_list'",
        `run remove-nic dpkg -r ${dkms[0].pkg.name}`,
        `run after-remove sh -c 'ls ${updates}; dkms status -m ${dkms[0].pkg.name}'`,
      ].join("\n");
      const r = await inPackagingRoot(proot, join(scratch, "root"), script, {
        allowFail: true,
        binds: [
          { host: join(scratch, "debs"), inRoot: "/mnt/debs" },
          {
            host: join(await buildCnuasdev(config), CNUASDEV_LAYOUT.src),
            inRoot: "/mnt/src",
          },
        ],
      });
      const s = sections(r.stdout);
      const get = (name: string): Section => {
        const sec = s.get(name);
        assert.ok(sec, `no section ${name} in:\n${r.stdout}\n${r.stderr}`);
        return sec;
      };
      const ok = (name: string): string => {
        const sec = get(name);
        assert.equal(sec.rc, 0, `${name} exited ${sec.rc}:\n${sec.out}`);
        return sec.out;
      };
      ok("install-dkms");
      for (const { pkg, version } of dkms) {
        const status = `${pkg.name}/${version}, ${kver}, x86_64: installed`;
        assert.ok(ok(`status-${pkg.name}`).split("\n").includes(status), status);
        const listed = new Set(ok(`list-${pkg.name}`).split("\n"));
        const src = `/usr/src/${pkg.name}-${version}`;
        const dir = MODULE_SOURCE_DIRS[pkg.modules[0]];
        for (const f of [...await filesUnder(join(config.repoRoot, dir)), "dkms.conf"]) {
          assert.ok(listed.has(`${src}/${f}`), `${pkg.name} lacks ${src}/${f}`);
        }
        for (const m of pkg.modules) {
          const info = ok(`modinfo-${m}`);
          const field = (f: string) => new RegExp(`^${f}:\\s+(.*)$`, "m").exec(info)?.[1];
          assert.equal(field("filename"), `${updates}/${m}.ko.xz`, m);
          assert.equal(field("version"), await readModuleVersion(config.repoRoot, m), m);
          assert.equal(field("vermagic")?.split(" ")[0], kver, m);
        }
      }
      ok("unbuild-gpu");
      assert.doesNotMatch(ok("gone-gpu"), /installed/);
      const hook = ok("hook");
      assert.match(ok("rebuilt-gpu"), /: installed$/m, hook);

      ok("install-provider");
      const provider = new Set(ok("list-provider").split("\n"));
      for (const p of Object.values(PROVIDER_GUEST_PATHS)) {
        assert.ok(provider.has(p), `ibverbs-providers-cnuas lacks ${p}`);
      }
      assert.equal(ok("driver-file").trim(), "driver cnuas");

      ok("install-lib");
      assert.equal(ok("pkg-config").trim(), "-lcnuasdev");
      const version = await readLibraryVersion(config.repoRoot);
      assert.equal(ok("modversion").trim(), version);
      assert.ok(ok("example").startsWith(`libcnuasdev ${version}: `), get("example").out);

      ok("remove-nic");
      const after = ok("after-remove");
      for (const m of dkms[0].pkg.modules) assert.ok(!after.includes(m), `${m} left: ${after}`);
      assert.ok(!after.includes(": installed"), after);
    } finally {
      await removeTree(scratch);
    }
  },
});
