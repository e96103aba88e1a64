/**
 * Packages stage: the Debian packages a user installs, built with
 * dpkg-buildpackage (debhelper, dh-dkms) in the packaging root, each checked
 * with lintian:
 *
 * - `cnuas-nic-modules`, `cnuas-gpu-modules`: DKMS packages (arch all) of the
 *   module sources, under `/usr/src/<name>-<version>/` with their dkms.conf;
 *   DKMS builds them on the machine they are installed on, per kernel.
 * - `ibverbs-providers-cnuas`: the provider stage's `libcnuas-rdmav34.so` and
 *   its `.driver` file where Debian's libibverbs looks.
 * - `libcnuasdev1`, `libcnuasdev-dev`: the cnuasdev stage's install tree.
 *
 * The user-space packages carry the bytes those stages built — the ones the
 * rows validate — rather than compiling a second time. Each source package
 * is its own cache entry keyed by what goes into it, so a driver edit
 * rebuilds only the package holding that driver. A lintian error fails the
 * stage; every finding is in the build log and in the result.
 */
import { basename, dirname, join } from "node:path";
import { cached, hashInputs, hashTree } from "../cache.ts";
import type { Config } from "../config.ts";
import { HilError } from "../errors.ts";
import { exec } from "../exec.ts";
import type { ModuleName } from "../matrix/row.ts";
import { progress } from "../progress.ts";
import { buildCnuasdev, CNUASDEV_LAYOUT } from "./cnuasdev.ts";
import { type DebianSource, joinedVersion, renderDebianDir } from "./debian.ts";
import { buildPackagingRoot, inPackagingRoot, type PackagingRoot } from "./packaging_root.ts";
import { buildProvider, PROVIDER_GUEST_PATHS } from "./provider.ts";
import { MODULE_SOURCE_DIRS, readLibraryVersion, readModuleVersion } from "./versions.ts";

/** The DKMS packages: which modules each ships (its version's order) and their licence. */
export const DKMS_PACKAGES = [
  {
    name: "cnuas-nic-modules",
    modules: ["cnuas_net", "cnuas_ib"],
    licence: "GPL-2 or Expat",
    synopsis: "Cnuas RDMA NIC kernel modules (DKMS source)",
    description: [
      "cnuas_net drives the cnuas-vnic PCI function (1af4:10f0) as a network interface; cnuas_ib registers it with ib_core as an RDMA device (RoCEv2 or native InfiniBand).",
      "This package holds the module sources; DKMS builds and installs them for each installed kernel that has its headers.",
    ],
  },
  {
    name: "cnuas-gpu-modules",
    modules: ["cnuasgpu", "cnuasgpu_host"],
    licence: "GPL-2",
    synopsis: "Cnuas accelerator kernel modules (DKMS source)",
    description: [
      "cnuasgpu drives the cnuasgpu accelerator PCI function (1af4:10f1) as /dev/cnuasgpuN; cnuasgpu_host provides host-backed /dev/cnuasgpu_hostN nodes without a PCI function.",
      "This package holds the module sources; DKMS builds and installs them for each installed kernel that has its headers.",
    ],
  },
] as const satisfies readonly {
  name: string;
  modules: readonly ModuleName[];
  licence: DebianSource["licence"];
  synopsis: string;
  description: readonly string[];
}[];

/** Every binary package the stage builds, by source package. */
export const PACKAGE_NAMES = {
  "cnuas-nic-modules": ["cnuas-nic-modules"],
  "cnuas-gpu-modules": ["cnuas-gpu-modules"],
  "ibverbs-providers-cnuas": ["ibverbs-providers-cnuas"],
  "libcnuasdev": ["libcnuasdev1", "libcnuasdev-dev"],
} as const;

/** One lintian finding (`E: pkg: tag detail`). */
export interface LintianFinding {
  /** E error, W warning, I info, P pedantic, X experimental, O overridden, M masked. */
  severity: string;
  package: string;
  tag: string;
  detail: string;
}

/** A built source package. */
export interface BuiltPackage {
  source: string;
  version: string;
  /** The `.deb` files, one per binary package. */
  debs: string[];
  /** lintian's findings over all of them. */
  lintian: LintianFinding[];
}

/** lintian reported errors: the package is not fit to ship. */
export class LintianError extends HilError {}

/** Bump when the recipe below changes in a way the description and sources do not show. */
const RECIPE_VERSION = 2;

/** Parse lintian's output lines (`X: package[ type]: tag [detail]`); other lines are skipped. */
export function parseLintian(text: string): LintianFinding[] {
  const out: LintianFinding[] = [];
  for (const line of text.split("\n")) {
    const m = /^([EWIPXOM]): (\S+)(?: [a-z]+)?: (\S+)\s*(.*)$/.exec(line);
    if (m) out.push({ severity: m[1], package: m[2], tag: m[3], detail: m[4] });
  }
  return out;
}

/** The description of a DKMS source package, its version from its modules' MODULE_VERSIONs. */
export async function dkmsSource(
  repoRoot: string,
  pkg: typeof DKMS_PACKAGES[number],
): Promise<DebianSource> {
  const version = joinedVersion(
    await Promise.all(pkg.modules.map((m) => readModuleVersion(repoRoot, m))),
  );
  return {
    source: pkg.name,
    version,
    section: "kernel",
    buildDepends: ["dh-sequence-dkms"],
    licence: pkg.licence,
    binaries: [{
      name: pkg.name,
      architecture: "all",
      synopsis: pkg.synopsis,
      description: [...pkg.description],
      install: [["src/*", `usr/src/${pkg.name}-${version}/`]],
      dkms: { name: pkg.name, version, modules: [...pkg.modules] },
    }],
  };
}

/** The provider's package; its version is cnuas_ib's, whose ABI it speaks. */
export function providerSource(version: string): DebianSource {
  return {
    source: "ibverbs-providers-cnuas",
    version,
    section: "net",
    licence: "GPL-2 or Expat",
    binaries: [{
      name: "ibverbs-providers-cnuas",
      architecture: "amd64",
      multiArch: "same",
      synopsis: "User space provider for the Cnuas RDMA NIC (cnuas_ib)",
      description: [
        "The libibverbs provider `cnuas`: lets libibverbs applications use cnuas_ib devices, with the fast paths (posting work requests, polling completions) in user space.",
      ],
      install: [
        [basename(PROVIDER_GUEST_PATHS.library), dirname(PROVIDER_GUEST_PATHS.library).slice(1)],
        [
          basename(PROVIDER_GUEST_PATHS.driverFile),
          dirname(PROVIDER_GUEST_PATHS.driverFile).slice(1),
        ],
      ],
    }],
  };
}

/** libcnuasdev's packages: the runtime library (by soname) and its -dev package. */
export function cnuasdevSource(version: string): DebianSource {
  const lib = "root/usr/lib/x86_64-linux-gnu";
  const soname = version.split(".")[0];
  return {
    source: "libcnuasdev",
    version,
    section: "libs",
    licence: "GPL-2 or Expat",
    binaries: [
      {
        name: `libcnuasdev${soname}`,
        architecture: "amd64",
        multiArch: "same",
        synopsis: "One API over Cnuas accelerators - shared library",
        description: [
          "libcnuasdev drives CnuasGPU accelerators through one API over three backends: the PCI function (cnuasgpu), the host-backed nodes (cnuasgpu_host) and the in-process Soft-GPU.",
        ],
        install: [[`${lib}/libcnuasdev.so.${soname}*`, "usr/lib/x86_64-linux-gnu/"]],
      },
      {
        name: "libcnuasdev-dev",
        architecture: "amd64",
        section: "libdevel",
        multiArch: "same",
        depends: [`libcnuasdev${soname} (= \${binary:Version})`],
        synopsis: "One API over Cnuas accelerators - development files",
        description: [
          "libcnuasdev drives CnuasGPU accelerators through one API over three backends: the PCI function (cnuasgpu), the host-backed nodes (cnuasgpu_host) and the in-process Soft-GPU.",
          "This package holds the header, the link-time library and the pkg-config file (`pkg-config --cflags --libs cnuasdev`).",
        ],
        install: [
          ["root/usr/include/cnuasdev.h", "usr/include/"],
          [`${lib}/libcnuasdev.so`, "usr/lib/x86_64-linux-gnu/"],
          [`${lib}/pkgconfig/cnuasdev.pc`, "usr/lib/x86_64-linux-gnu/pkgconfig/"],
        ],
      },
    ],
  };
}

/**
 * Build one source package from `desc` and a tree `fill` puts its payload
 * into (paths its install lines name), cached by `payloadKey` and `desc`.
 */
async function buildOne(
  config: Config,
  proot: PackagingRoot,
  desc: DebianSource,
  payloadKey: string,
  fill: (srcDir: string) => Promise<void>,
): Promise<BuiltPackage> {
  const entry = await cached(
    config.cacheDir,
    `deb-${desc.source}`,
    // the rendered debian/ directory (at a fixed date), so a change to what
    // debian.ts writes — a maintainer script — makes a new package
    {
      root: proot.key,
      desc,
      debian: renderDebianDir(desc, new Date(0)),
      payloadKey,
      RECIPE_VERSION,
    },
    async (out, logs) => {
      const log = join(logs, "dpkg-buildpackage.log");
      const top = join(out, "work", `${desc.source}-${desc.version}`);
      await Deno.mkdir(top, { recursive: true });
      await fill(top);
      for (const [path, text] of Object.entries(renderDebianDir(desc, new Date()))) {
        await Deno.mkdir(dirname(join(top, "debian", path)), { recursive: true });
        await Deno.writeTextFile(join(top, "debian", path), text);
      }
      await Deno.chmod(join(top, "debian/rules"), 0o755);
      const dir = `/mnt/cnuas/${basename(top)}`;
      progress("packages", `dpkg-buildpackage ${desc.source} ${desc.version} (log: ${log})`);
      // DEB_BUILD_OPTIONS=noddebs: no -dbgsym packages; nobody installs them here.
      await inPackagingRoot(
        proot,
        join(out, "scratch"),
        `cd ${dir} && DEB_BUILD_OPTIONS=noddebs dpkg-buildpackage -b -us -uc`,
        { logPath: log, binds: [{ host: join(out, "work"), inRoot: "/mnt/cnuas" }] },
      );
      const debs: string[] = [];
      for await (const e of Deno.readDir(join(out, "work"))) {
        if (e.name.endsWith(".deb")) debs.push(e.name);
      }
      debs.sort();
      const lintianLog = join(logs, "lintian.log");
      progress("packages", `lintian ${debs.join(" ")} (log: ${lintianLog})`);
      // lintian exits non-zero on errors; the findings decide below, with their text.
      // It runs as nobody: it unpacks what it checks and wants no root for that.
      const r = await inPackagingRoot(
        proot,
        join(out, "scratch"),
        `cd /mnt/cnuas && runuser -u nobody -- env HOME=/tmp lintian --pedantic --display-info ` +
          `--tag-display-limit 0 ${debs.join(" ")} 2>&1`,
        { allowFail: true, binds: [{ host: join(out, "work"), inRoot: "/mnt/cnuas" }] },
      );
      if (r.code !== 0 && r.code !== 2) {
        throw new Error(`lintian exited ${r.code} on ${desc.source}:\n${r.stdout}${r.stderr}`);
      }
      await Deno.writeTextFile(lintianLog, r.stdout);
      const lintian = parseLintian(r.stdout);
      for (const d of debs) await Deno.rename(join(out, "work", d), join(out, d));
      await Deno.writeTextFile(
        join(out, "package.json"),
        JSON.stringify({ source: desc.source, version: desc.version, debs, lintian }, null, 2),
      );
      await exec(["rm", "-rf", join(out, "work"), join(out, "scratch")]);
      const errors = lintian.filter((f) => f.severity === "E");
      if (errors.length) {
        throw new LintianError(
          `lintian: ${errors.length} errors in ${desc.source} (see ${lintianLog}):\n` +
            errors.map((f) => `  ${f.package}: ${f.tag} ${f.detail}`).join("\n"),
        );
      }
    },
  );
  // package.json holds the .deb names; the entry's directory makes them paths
  const manifest: BuiltPackage = JSON.parse(
    await Deno.readTextFile(join(entry.dir, "package.json")),
  );
  return { ...manifest, debs: manifest.debs.map((d) => join(entry.dir, d)) };
}

/**
 * Build every package (each cached on its own); returns them in the order
 * of `PACKAGE_NAMES`.
 * @example
 * ```ts
 * for (const p of await buildPackages(defaultConfig())) console.log(p.debs, p.lintian.length);
 * ```
 */
export async function buildPackages(config: Config): Promise<BuiltPackage[]> {
  const proot = await buildPackagingRoot(config);
  const out: BuiltPackage[] = [];
  for (const pkg of DKMS_PACKAGES) {
    const dir = MODULE_SOURCE_DIRS[pkg.modules[0]];
    out.push(
      await buildOne(
        config,
        proot,
        await dkmsSource(config.repoRoot, pkg),
        await hashTree(config.repoRoot, [dir]),
        (top) => exec(["cp", "-a", join(config.repoRoot, dir), join(top, "src")]).then(() => {}),
      ),
    );
  }
  const provider = await buildProvider(config);
  out.push(
    await buildOne(
      config,
      proot,
      providerSource(await readModuleVersion(config.repoRoot, "cnuas_ib")),
      // the stage's entry is named by its inputs' hash
      hashInputs({ provider: basename(provider) }),
      async (top) => {
        for (const p of Object.values(PROVIDER_GUEST_PATHS)) {
          await Deno.copyFile(join(provider, basename(p)), join(top, basename(p)));
        }
      },
    ),
  );
  const cnuasdev = await buildCnuasdev(config);
  out.push(
    await buildOne(
      config,
      proot,
      cnuasdevSource(await readLibraryVersion(config.repoRoot)),
      hashInputs({ cnuasdev: basename(cnuasdev) }),
      (top) =>
        exec(["cp", "-a", join(cnuasdev, CNUASDEV_LAYOUT.root), join(top, "root")]).then(() => {}),
    ),
  );
  return out;
}
