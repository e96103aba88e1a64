/**
 * The `debian/` directory of a source package, rendered from a description
 * (pure functions; harness/build/packages.ts says what each package holds
 * and runs dpkg-buildpackage on the result). Packages are native (format
 * `3.0 (native)`, no Debian revision): the project is its own upstream.
 */

/** A licence a package's files are under (debian/copyright, DEP-5). */
export type Licence = "GPL-2" | "GPL-2 or Expat";

/** One binary package of a source package. */
export interface DebianBinary {
  /** Package name, e.g. `cnuas-nic-modules`. */
  name: string;
  /** `all` for DKMS sources, the build's architecture for compiled code. */
  architecture: "all" | "amd64";
  /** Section when it differs from the source's (a -dev package's `libdevel`). */
  section?: string;
  /** `same` for a shared library and its -dev package. */
  multiArch?: "same";
  /** Depends beyond `${misc:Depends}` (and `${shlibs:Depends}` for compiled code). */
  depends?: string[];
  /** The one-line synopsis. */
  synopsis: string;
  /** The long description, one string per paragraph. */
  description: string[];
  /** `debian/<name>.install` lines: a path (glob) in the source tree, then its directory in the package. */
  install: [string, string][];
  /** DKMS packages: the dkms.conf, written as `debian/<name>.dkms` for dh_dkms. */
  dkms?: DkmsConf;
}

/** A source package. */
export interface DebianSource {
  /** Source package name. */
  source: string;
  /** The version (native: no revision). */
  version: string;
  section: string;
  /** Build-Depends beyond `debhelper-compat (= 13)`. */
  buildDepends?: string[];
  licence: Licence;
  binaries: DebianBinary[];
}

/** What dkms.conf says: the package's name and version, and its modules. */
export interface DkmsConf {
  name: string;
  version: string;
  /** Module names (the `.ko` files Kbuild makes at the top of the source tree). */
  modules: string[];
}

/** Who the packages are from. */
export const MAINTAINER = "Cnuas HIL <cnuas-hil@lists.cnuas.dev>";

/** Standards-Version the control files claim (trixie's debian-policy). */
const STANDARDS_VERSION = "4.7.2";

/**
 * A package version from the versions of the modules it ships, in the
 * package's module order, joined with `+`: `0.1.0+0.2.0`. dpkg compares the
 * first one first, so raising any one module's version with the others
 * unchanged always sorts higher — which picking the highest would not.
 */
export function joinedVersion(versions: string[]): string {
  for (const v of versions) {
    if (!/^[0-9][0-9A-Za-z.~]*$/.test(v)) throw new Error(`not usable in a package version: ${v}`);
  }
  return versions.join("+");
}

/** dkms.conf: DKMS builds with its default `make` (Kbuild at the top) into updates/dkms. */
export function renderDkmsConf(c: DkmsConf): string {
  return [
    `PACKAGE_NAME="${c.name}"`,
    `PACKAGE_VERSION="${c.version}"`,
    ...c.modules.flatMap((m, i) => [
      `BUILT_MODULE_NAME[${i}]="${m}"`,
      `DEST_MODULE_LOCATION[${i}]="/updates/dkms"`,
    ]),
    // a kernel upgrade rebuilds them (dkms's kernel postinst hook)
    'AUTOINSTALL="yes"',
    "",
  ].join("\n");
}

/** debian/control. */
export function renderControl(s: DebianSource): string {
  const compiled = s.binaries.some((b) => b.architecture !== "all");
  const paragraphs = [
    [
      `Source: ${s.source}`,
      `Section: ${s.section}`,
      "Priority: optional",
      `Maintainer: ${MAINTAINER}`,
      `Build-Depends: ${["debhelper-compat (= 13)", ...(s.buildDepends ?? [])].join(", ")}`,
      `Standards-Version: ${STANDARDS_VERSION}`,
      "Rules-Requires-Root: no",
    ],
    ...s.binaries.map((b) => [
      `Package: ${b.name}`,
      `Architecture: ${b.architecture}`,
      ...(b.section ? [`Section: ${b.section}`] : []),
      ...(b.multiArch ? [`Multi-Arch: ${b.multiArch}`] : []),
      `Depends: ${
        [...(compiled ? ["${shlibs:Depends}"] : []), "${misc:Depends}", ...(b.depends ?? [])]
          .join(", ")
      }`,
      `Description: ${b.synopsis}`,
      ...b.description.map((p) => wrap(p).map((l) => ` ${l}`).join("\n")).join("\n .\n")
        .split("\n"),
    ]),
  ];
  return paragraphs.map((p) => p.join("\n")).join("\n\n") + "\n";
}

/** debian/changelog: one entry, this version, `date` in RFC 5322 form. */
export function renderChangelog(s: DebianSource, date: Date): string {
  return [
    `${s.source} (${s.version}) unstable; urgency=medium`,
    "",
    "  * Built by the Cnuas HIL harness from the project's sources.",
    "",
    ` -- ${MAINTAINER}  ${rfc5322(date)}`,
    "",
  ].join("\n");
}

/** debian/rules: plain dh; the DKMS sequence comes from Build-Depends (dh-sequence-dkms). */
export function renderRules(): string {
  return "#!/usr/bin/make -f\n\n%:\n\tdh $@\n";
}

/** debian/copyright in the machine-readable format. */
export function renderCopyright(s: DebianSource): string {
  const gpl = [
    "License: GPL-2",
    " This program is free software; you can redistribute it and/or modify it",
    " under the terms of the GNU General Public License version 2 as published",
    " by the Free Software Foundation.",
    " .",
    " On Debian systems, the full text of the GNU General Public License",
    " version 2 can be found in the file /usr/share/common-licenses/GPL-2.",
  ];
  const expat = [
    "License: Expat",
    " Permission is hereby granted, free of charge, to any person obtaining a",
    ' copy of this software and associated documentation files (the "Software"),',
    " to deal in the Software without restriction, including without limitation",
    " the rights to use, copy, modify, merge, publish, distribute, sublicense,",
    " and/or sell copies of the Software, and to permit persons to whom the",
    " Software is furnished to do so, subject to the following conditions:",
    " .",
    " The above copyright notice and this permission notice shall be included",
    " in all copies or substantial portions of the Software.",
    " .",
    ' THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR',
    " IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,",
    " FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL",
    " THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER",
    " LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING",
    " FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER",
    " DEALINGS IN THE SOFTWARE.",
  ];
  return [
    [
      "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/",
      `Upstream-Name: ${s.source}`,
    ],
    ["Files: *", "Copyright: 2026 The Cnuas HIL project", `License: ${s.licence}`],
    gpl,
    ...(s.licence === "GPL-2 or Expat" ? [expat] : []),
  ].map((p) => p.join("\n")).join("\n\n") + "\n";
}

/**
 * The prerm of a DKMS package: on `remove`, unload its modules (last loaded
 * first) when nothing uses them, so a removed package leaves no module of
 * it running; a module in use stays loaded (until unloaded or a reboot) and
 * the removal says so. dh_dkms's own part (`dkms remove`) goes at
 * `#DEBHELPER#`. An upgrade leaves the running modules alone, as DKMS does.
 */
export function renderDkmsPrerm(c: DkmsConf): string {
  return [
    "#!/bin/sh",
    "set -e",
    "",
    'if [ "$1" = remove ]; then',
    `\tfor m in ${[...c.modules].reverse().join(" ")}; do`,
    '\t\tif grep -q "^$m " /proc/modules 2>/dev/null && ! rmmod "$m" 2>/dev/null; then',
    `\t\t\techo "${c.name}: $m is in use and stays loaded until unloaded or a reboot" >&2`,
    "\t\tfi",
    "\tdone",
    "fi",
    "",
    "#DEBHELPER#",
    "",
    "exit 0",
    "",
  ].join("\n");
}

/** Every file of `debian/`, by path relative to it. */
export function renderDebianDir(s: DebianSource, date: Date): Record<string, string> {
  const files: Record<string, string> = {
    "control": renderControl(s),
    "changelog": renderChangelog(s, date),
    "rules": renderRules(),
    "copyright": renderCopyright(s),
    "source/format": "3.0 (native)\n",
  };
  for (const b of s.binaries) {
    files[`${b.name}.install`] = b.install.map(([from, to]) => `${from} ${to}`).join("\n") + "\n";
    if (b.dkms) {
      files[`${b.name}.dkms`] = renderDkmsConf(b.dkms);
      files[`${b.name}.prerm`] = renderDkmsPrerm(b.dkms);
    }
  }
  return files;
}

/** A paragraph wrapped at 76 columns (control's long description lines). */
function wrap(text: string): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(/\s+/)) {
    if (line && line.length + 1 + word.length > 76) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines;
}

/** `Wed, 02 Dec 2026 11:00:00 +0000`, the form dpkg-parsechangelog wants. */
function rfc5322(d: Date): string {
  const days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
  const months = [
    "Jan",
    "Feb",
    "Mar",
    "Apr",
    "May",
    "Jun",
    "Jul",
    "Aug",
    "Sep",
    "Oct",
    "Nov",
    "Dec",
  ];
  const p = (n: number) => String(n).padStart(2, "0");
  return `${days[d.getUTCDay()]}, ${p(d.getUTCDate())} ${
    months[d.getUTCMonth()]
  } ${d.getUTCFullYear()} ` +
    `${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} +0000`;
}
