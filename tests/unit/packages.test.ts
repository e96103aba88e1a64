/**
 * The packages' descriptions, without a build root: versions derived from
 * the sources and ordered as dpkg orders them, dkms.conf naming every module
 * Kbuild makes, control fields, lintian's output parsed. The packages
 * themselves are built and installed in tests/vm/packages.test.ts.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { REPO_ROOT } from "../../harness/config.ts";
import { exec } from "../../harness/exec.ts";
import {
  joinedVersion,
  renderControl,
  renderDebianDir,
  renderDkmsConf,
  renderDkmsPrerm,
} from "../../harness/build/debian.ts";
import {
  cnuasdevSource,
  DKMS_PACKAGES,
  dkmsSource,
  PACKAGE_NAMES,
  parseLintian,
  providerSource,
} from "../../harness/build/packages.ts";
import { MODULE_VERSIONS } from "../../harness/report/render.ts";
import { MODULES } from "../../harness/matrix/row.ts";
import { MODULE_SOURCE_DIRS } from "../../harness/build/versions.ts";

const hasDpkg = (await exec(["sh", "-c", "command -v dpkg"], { allowFail: true })).code === 0;

Deno.test({
  name: "a joined version sorts higher, by dpkg, when any one module's version is raised",
  ignore: !hasDpkg,
  async fn() {
    const gt = async (a: string, b: string) =>
      (await exec(["dpkg", "--compare-versions", a, "gt", b], { allowFail: true })).code === 0;
    const base = ["0.1.0", "0.2.0"];
    for (const bumped of [["0.1.1", "0.2.0"], ["0.1.0", "0.2.1"], ["0.1.0", "0.10.0"]]) {
      assert.ok(await gt(joinedVersion(bumped), joinedVersion(base)), bumped.join(" "));
    }
    // the highest of the two would not have moved: 0.2.0 both times
    assert.ok(!await gt("0.2.0", "0.2.0"));
  },
});

Deno.test("a version dpkg cannot take is refused", () => {
  assert.throws(() => joinedVersion(["0.1.0", "v0.2 beta"]), /not usable/);
});

Deno.test("each DKMS package ships every module its Kbuild makes, versioned from the sources", async () => {
  const shipped: string[] = [];
  for (const pkg of DKMS_PACKAGES) {
    const desc = await dkmsSource(REPO_ROOT, pkg);
    assert.equal(desc.version, pkg.modules.map((m) => MODULE_VERSIONS[m]).join("+"));
    const bin = desc.binaries[0];
    assert.equal(bin.architecture, "all");
    assert.deepEqual(bin.install, [["src/*", `usr/src/${pkg.name}-${desc.version}/`]]);
    const dir = MODULE_SOURCE_DIRS[pkg.modules[0]];
    assert.ok(
      pkg.modules.every((m) => MODULE_SOURCE_DIRS[m] === dir),
      `${pkg.name}: one directory`,
    );
    const kbuild = await Deno.readTextFile(join(REPO_ROOT, dir, "Kbuild"));
    const made = [...kbuild.matchAll(/^obj-m \+= (\S+)\.o$/gm)].map((m) => m[1]);
    assert.deepEqual([...pkg.modules].sort(), made.sort(), pkg.name);
    const conf = renderDkmsConf(bin.dkms!).split("\n");
    assert.ok(conf.includes(`PACKAGE_NAME="${pkg.name}"`), pkg.name);
    assert.ok(conf.includes(`PACKAGE_VERSION="${desc.version}"`), pkg.name);
    pkg.modules.forEach((m, i) => assert.ok(conf.includes(`BUILT_MODULE_NAME[${i}]="${m}"`), m));
    shipped.push(...pkg.modules);
  }
  assert.deepEqual(shipped.sort(), [...MODULES].sort());
});

Deno.test("the control files name the packages the stage promises, -dev tied to its library", () => {
  const provider = renderControl(providerSource("0.2.0"));
  assert.match(provider, /^Package: ibverbs-providers-cnuas\nArchitecture: amd64\n/m);
  assert.match(provider, /^Depends: \$\{shlibs:Depends\}, \$\{misc:Depends\}$/m);
  const lib = cnuasdevSource("1.0.0");
  assert.deepEqual(lib.binaries.map((b) => b.name), [...PACKAGE_NAMES.libcnuasdev]);
  assert.match(renderControl(lib), /^Depends: .*libcnuasdev1 \(= \$\{binary:Version\}\)$/m);
  assert.deepEqual(providerSource("0.2.0").binaries[0].install, [
    ["libcnuas-rdmav34.so", "usr/lib/x86_64-linux-gnu/libibverbs"],
    ["cnuas.driver", "etc/libibverbs.d"],
  ]);
});

Deno.test("lintian's lines parse into severity, package, tag and detail; other lines are skipped", () => {
  const text = [
    "E: cnuas-nic-modules: bad-distribution-in-changes-file unstable",
    "W: libcnuasdev1: no-symbols-control-file usr/lib/x86_64-linux-gnu/libcnuasdev.so.1.0.0",
    "I: libcnuasdev source: some-tag",
    "N:",
    "N:   An explanation.",
  ].join("\n");
  assert.deepEqual(parseLintian(text), [
    {
      severity: "E",
      package: "cnuas-nic-modules",
      tag: "bad-distribution-in-changes-file",
      detail: "unstable",
    },
    {
      severity: "W",
      package: "libcnuasdev1",
      tag: "no-symbols-control-file",
      detail: "usr/lib/x86_64-linux-gnu/libcnuasdev.so.1.0.0",
    },
    { severity: "I", package: "libcnuasdev", tag: "some-tag", detail: "" },
  ]);
});

Deno.test("a DKMS package's prerm unloads its modules, last loaded first, on remove only", async () => {
  const nic = DKMS_PACKAGES[0];
  const prerm = renderDkmsPrerm({ name: nic.name, version: "0.1.0", modules: [...nic.modules] });
  assert.match(prerm, /^#!\/bin\/sh\nset -e\n/);
  assert.match(prerm, /\tfor m in cnuas_ib cnuas_net; do\n/);
  assert.match(prerm, /^if \[ "\$1" = remove \]; then$/m);
  assert.match(prerm, /^#DEBHELPER#$/m);
  const files = renderDebianDir(await dkmsSource(REPO_ROOT, nic), new Date(0));
  assert.equal(
    files[`${nic.name}.prerm`],
    renderDkmsPrerm(
      (await dkmsSource(REPO_ROOT, nic)).binaries[0].dkms!,
    ),
  );
  const syntax = await exec(["sh", "-n", "-c", prerm], { allowFail: true });
  assert.equal(syntax.code, 0, syntax.stderr);
});
