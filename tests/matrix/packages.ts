/**
 * Row `packages`: the modules, the provider and libcnuasdev as a user gets
 * them — the image installed the Debian packages with `dpkg -i` (DKMS built
 * the modules for the guest kernel, harness/build/image.ts) and nothing else
 * puts a module into the guest. A cold boot (a restored snapshot's modules
 * were loaded by another boot) must have loaded the PCI drivers through
 * udev and the modaliases, cnuas_ib on cnuas_net's auxiliary device, and
 * left cnuasgpu_host alone; `ibv_devices` lists the RDMA device through the
 * packaged provider; `dkms status` and `modinfo` agree with the sources;
 * removing and installing the provider package again takes the device
 * from `ibv_devices` and gives it back; `apt-get remove` unloads and removes
 * the NIC modules, and (deep depth: DKMS compiles in the guest, ~8 min
 * under TCG) installing the package again builds them in the guest and
 * brings the device back.
 */
import { basename } from "node:path";
import { REPO_ROOT } from "../../harness/config.ts";
import { DKMS_PACKAGES, PACKAGE_NAMES } from "../../harness/build/packages.ts";
import { MODULE_SOURCE_DIRS, readModuleVersion } from "../../harness/build/versions.ts";
import { sh, shq } from "../../harness/guest/shell.ts";
import {
  type ModuleName,
  type Row,
  type RowContext,
  RowFailure,
} from "../../harness/matrix/row.ts";
import type { Guest } from "../../harness/vm/types.ts";

/** Where the row puts the packages in the guest for the reinstall. */
const DEBS_DIR = "/root/cnuas-debs";

/** Modules udev loads at boot for this row's devices (a vnic and an accelerator). */
export const AUTOLOADED: readonly ModuleName[] = ["cnuas_net", "cnuas_ib", "cnuasgpu"];

/** Packaged but loaded only by hand (the datasheet: it has no device to bind). */
export const NOT_AUTOLOADED: readonly ModuleName[] = ["cnuasgpu_host"];

/** `name_version_arch.deb` → [name, version]. */
export function debNameVersion(path: string): [string, string] {
  const m = /^([^_]+)_([^_]+)_[^_]+\.deb$/.exec(basename(path));
  if (!m) throw new RowFailure(`not a Debian package file name: ${basename(path)}`);
  return [m[1], m[2]];
}

/**
 * `dkms status` lines → module package → its status for `kernel`
 * (`cnuas-nic-modules/0.1.0+0.2.0, 6.12.117+deb13-amd64, x86_64: installed`).
 */
export function parseDkmsStatus(text: string, kernel: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split("\n")) {
    const m = /^([^/\s]+)\/(\S+), ([^,]+), [^:]+: (\S+)/.exec(line.trim());
    if (m && m[3] === kernel) out.set(`${m[1]}/${m[2]}`, m[4]);
  }
  return out;
}

/** Modules of ours in /proc/modules. */
async function loaded(g: Guest): Promise<Set<string>> {
  const r = await g.run("cut -d' ' -f1 /proc/modules");
  return new Set(r.stdout.split("\n").filter((m) => /^cnuas/.test(m)));
}

async function installedVersions(ctx: RowContext, g: Guest, debs: string[]): Promise<void> {
  await ctx.step("every package is installed at the version the build made", async () => {
    const want = new Map(debs.map(debNameVersion));
    const names = Object.values(PACKAGE_NAMES).flat();
    ctx.expect(
      names.every((n) => want.has(n)),
      `the build made ${[...want.keys()].join(", ")}; expected ${names.join(", ")}`,
    );
    const out = await sh(
      g,
      `dpkg-query -W -f='\${Package} \${Version} \${db:Status-Abbrev}\\n' ${names.join(" ")}`,
    );
    for (const n of names) {
      const line = out.split("\n").find((l) => l.startsWith(`${n} `)) ?? "";
      const [, version, status] = line.trim().split(/\s+/);
      ctx.expect(status === "ii", `${n}: dpkg status ${status ?? "(not known)"}, want ii`);
      ctx.expect(version === want.get(n), `${n}: installed ${version}, built ${want.get(n)}`);
    }
  });
}

async function autoloaded(ctx: RowContext, g: Guest): Promise<void> {
  await ctx.step(
    "autoloaded at boot: cnuas_net (vnic), cnuas_ib (auxiliary device), cnuasgpu; not cnuasgpu_host",
    async () => {
      // Nothing names our modules for loading: not the init, not modules-load.d.
      const named = await g.run(
        "grep -lE 'cnuas_(net|ib)|cnuasgpu' /sbin/cnuas-init /etc/modules " +
          "/etc/modules-load.d/* /etc/modprobe.d/* 2>/dev/null",
      );
      ctx.expect(named.stdout.trim() === "", `files that load our modules: ${named.stdout}`);
      await g.run("udevadm settle -t 60", { timeoutSec: 90 });
      const mods = await loaded(g);
      for (const m of AUTOLOADED) ctx.expect(mods.has(m), `${m} was not loaded at boot`);
      for (const m of NOT_AUTOLOADED) ctx.expect(!mods.has(m), `${m} was loaded at boot`);
      const drivers = await sh(
        g,
        "for d in /sys/bus/pci/devices/*; do " +
          'echo "$(cat $d/vendor):$(cat $d/device) $(basename "$(readlink $d/driver)")"; done; ' +
          "ls /sys/bus/auxiliary/drivers/cnuas_ib.ib/ 2>/dev/null | grep '^cnuas_net'",
      );
      ctx.log(drivers);
      ctx.expect(/^0x1af4:0x10f0 cnuas_net$/m.test(drivers), "the vnic is not bound to cnuas_net");
      ctx.expect(
        /^0x1af4:0x10f1 cnuasgpu$/m.test(drivers),
        "the accelerator is not bound to cnuasgpu",
      );
      ctx.expect(/^cnuas_net\.rdma\.\d+$/m.test(drivers), "cnuas_ib bound no auxiliary device");
    },
  );
}

async function userSpace(ctx: RowContext, g: Guest): Promise<void> {
  await ctx.step("ibv_devices lists cnuas_ib0 through the packaged provider", async () => {
    const out = await sh(g, "ibv_devices; dpkg -S /etc/libibverbs.d/cnuas.driver");
    ctx.expect(/^\s+cnuas_ib0\s+[0-9a-f]{16}$/m.test(out), `ibv_devices: ${out}`);
    ctx.expect(
      /^ibverbs-providers-cnuas(:amd64)?: \/etc\/libibverbs\.d\/cnuas\.driver$/m.test(out),
      `the provider's .driver file is not the package's: ${out}`,
    );
  });
}

async function dkmsAndModinfo(ctx: RowContext, g: Guest, debs: string[]): Promise<string> {
  const kernel = (await sh(g, "uname -r")).trim();
  await ctx.step("dkms status: both module packages installed for the running kernel", async () => {
    const status = parseDkmsStatus(await sh(g, "dkms status"), kernel);
    ctx.log([...status].map(([k, v]) => `${k}: ${v}`).join("\n"));
    const versions = new Map(debs.map(debNameVersion));
    for (const p of DKMS_PACKAGES) {
      const key = `${p.name}/${versions.get(p.name)}`;
      ctx.expect(status.get(key) === "installed", `${key} for ${kernel}: ${status.get(key)}`);
    }
  });
  await ctx.step("modinfo: each module from updates/dkms, at its MODULE_VERSION", async () => {
    for (const p of DKMS_PACKAGES) {
      for (const m of p.modules) {
        const out = await sh(g, `modinfo -F filename ${m}; modinfo -F version ${m}`);
        const [file, version] = out.trim().split("\n");
        const dir = `/lib/modules/${kernel}/updates/dkms/`;
        ctx.expect(file.startsWith(dir), `${m}: ${file}, not under ${dir}`);
        const want = await readModuleVersion(REPO_ROOT, m);
        ctx.expect(version === want, `${m}: modinfo version ${version}, sources say ${want}`);
        ctx.log(`${m} ${version} ${file} (${MODULE_SOURCE_DIRS[m]})`);
      }
    }
  });
  return kernel;
}

/** The `.deb` the build made for binary package `name`, copied into the guest; its guest path. */
async function pushDeb(g: Guest, debs: string[], name: string): Promise<string> {
  const deb = debs.find((d) => debNameVersion(d)[0] === name);
  if (!deb) throw new RowFailure(`the build made no ${name} package`);
  const path = `${DEBS_DIR}/${basename(deb)}`;
  await g.putFile(path, await Deno.readFile(deb), 0o644);
  return path;
}

async function providerRemoveAndReinstall(ctx: RowContext, g: Guest, debs: string[]) {
  const pkg = "ibverbs-providers-cnuas";
  await ctx.step(
    `apt-get remove ${pkg}: ibv_devices loses cnuas_ib0; reinstalled, it is back`,
    async () => {
      const path = await pushDeb(g, debs, pkg);
      const r = await g.run(
        `apt-get remove -y ${pkg} >/dev/null && ls /usr/lib/x86_64-linux-gnu/libibverbs/; ` +
          `echo "gone: $(ibv_devices 2>/dev/null | grep -c cnuas_ib0)"; ` +
          "IBV_SHOW_WARNINGS=1 ibv_devices 2>&1 | grep -i warning; " +
          `apt-get install -y ${
            shq(path)
          } >/dev/null && echo "back: $(ibv_devices | grep -c cnuas_ib0)"`,
        { timeoutSec: 300 },
      );
      ctx.log(r.stdout + r.stderr);
      // (its .driver file is a conffile: `remove` keeps it, `purge` would not)
      ctx.expect(
        !/^libcnuas-rdmav34\.so$/m.test(r.stdout),
        "the provider library left after the removal",
      );
      ctx.expect(
        /^gone: 0$/m.test(r.stdout),
        "ibv_devices still lists a cnuas device without the provider",
      );
      // the kernel's device is there; user space has no provider for it (the troubleshooting page)
      ctx.expect(
        /no userspace device-specific driver found for cnuas_ib0/.test(r.stdout),
        "libibverbs did not warn of cnuas_ib0 without a provider",
      );
      ctx.expect(/^back: 1$/m.test(r.stdout), `after the reinstall: ${r.stdout} ${r.stderr}`);
    },
  );
}

async function modulesRemoveAndReinstall(
  ctx: RowContext,
  g: Guest,
  debs: string[],
  kernel: string,
): Promise<void> {
  const nic = DKMS_PACKAGES[0];
  await ctx.step(
    `apt-get remove ${nic.name}: modules unloaded, files and DKMS entry gone`,
    async () => {
      const r = await g.run(`apt-get remove -y ${nic.name}`, { timeoutSec: 300 });
      ctx.log(r.stdout + r.stderr);
      ctx.expect(r.code === 0, `apt-get remove exited ${r.code}: ${r.stderr}`);
      const mods = await loaded(g);
      for (const m of nic.modules) ctx.expect(!mods.has(m), `${m} still loaded after the removal`);
      ctx.expect(mods.has("cnuasgpu"), "removing the NIC package unloaded cnuasgpu");
      const left = await g.run(
        `ls /lib/modules/${kernel}/updates/dkms/; dkms status -m ${nic.name}; ` +
          `ls -d /usr/src/${nic.name}-* 2>/dev/null; modprobe cnuas_net; echo "modprobe=$?"; ` +
          "ibv_devices",
      );
      ctx.log(left.stdout + left.stderr);
      for (const m of nic.modules) {
        ctx.expect(!left.stdout.includes(`${m}.ko`), `${m}.ko left in updates/dkms`);
      }
      ctx.expect(!left.stdout.includes(`${nic.name}/`), `dkms still lists ${nic.name}`);
      ctx.expect(
        !left.stdout.includes(`/usr/src/${nic.name}-`),
        "its sources are left in /usr/src",
      );
      ctx.expect(/^modprobe=1$/m.test(left.stdout), "modprobe cnuas_net still finds a module");
      ctx.expect(!left.stdout.includes("cnuas_ib0"), "ibv_devices still lists cnuas_ib0");
    },
  );
  if (ctx.config.depth !== "deep") {
    // DKMS compiles both modules inside the guest: ~8 min under TCG
    ctx.log(`quick depth: ${nic.name} is not installed again (deep only)`);
    return;
  }
  await ctx.step(
    `apt-get install ./${nic.name}_*.deb: DKMS builds it in the guest; modprobe brings cnuas_ib0 back (deep)`,
    async () => {
      const path = await pushDeb(g, debs, nic.name);
      const t0 = performance.now();
      const r = await g.run(`apt-get install -y ${shq(path)}`, { timeoutSec: 1200 });
      const sec = (performance.now() - t0) / 1000;
      ctx.measure("reinstall.sec", Number(sec.toFixed(1)), "s");
      ctx.log(r.stdout + r.stderr);
      ctx.expect(r.code === 0, `apt-get install exited ${r.code}: ${r.stderr}`);
      const back = await g.run(
        "modprobe cnuas_net && udevadm settle -t 60 && " +
          "for i in $(seq 100); do ibv_devices | grep -q cnuas_ib0 && break; sleep 0.1; done; " +
          `ibv_devices; dkms status -m ${nic.name} -k ${kernel}`,
        { timeoutSec: 120 },
      );
      ctx.log(back.stdout + back.stderr);
      ctx.expect(back.code === 0, `modprobe after the reinstall: exit ${back.code} ${back.stderr}`);
      ctx.expect(
        /cnuas_ib0/.test(back.stdout),
        "no cnuas_ib0 after the reinstall (udev: cnuas_ib)",
      );
      ctx.expect(/: installed$/m.test(back.stdout), `dkms status: ${back.stdout}`);
    },
  );
}

/** The packages as a user gets them: installed, autoloaded, removed and installed again. */
export const row: Row = {
  id: "packages",
  title: "Debian packages: installed in the image, PCI modules autoload, dkms, remove, reinstall",
  needs: {
    guests: 1,
    fabric: "eth",
    builds: ["qemu", "image", "packages"],
    devices: { vnic: 1, gpu: 1 },
  },
  coldBoot: "autoloading is a boot's work: a restored guest's modules were loaded by another boot",
  packagedModules: "it checks what the packages installed (DKMS, modinfo, remove, reinstall)",
  sharesCores: "it judges installs, autoloading, DKMS state and removals, no rate or time " +
    "(the deep reinstall's seconds are recorded, not judged)",
  timeoutSec: 1800,
  modules: ["cnuas_net", "cnuas_ib", "cnuasgpu", "cnuasgpu_host"],
  async run(ctx) {
    const g = ctx.guests[0];
    const debs = ctx.builds.packages ?? [];
    if (!debs.length) throw new RowFailure("no packages were built");
    await installedVersions(ctx, g, debs);
    await autoloaded(ctx, g);
    await userSpace(ctx, g);
    const kernel = await dkmsAndModinfo(ctx, g, debs);
    await providerRemoveAndReinstall(ctx, g, debs);
    await modulesRemoveAndReinstall(ctx, g, debs, kernel);
  },
};
