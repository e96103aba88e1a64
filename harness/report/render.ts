/**
 * Renderings of a matrix.json: JUnit XML, Markdown, a self-contained HTML
 * page (html.ts, re-exported here), and compat.json. Pure functions of the report.
 */
import { LIBRARIES, type LibraryName, type ModuleName, MODULES } from "../matrix/row.ts";
import type { MatrixJson, RowResult } from "./schema.ts";
import { rollUp } from "./schema.ts";
import { esc } from "./escape.ts";

export { toHtml } from "./html.ts";

function measurementsText(r: RowResult): string {
  return Object.entries(r.measurements)
    .map(([k, m]) => `${k}=${Number.isInteger(m.value) ? m.value : m.value.toFixed(3)} ${m.unit}`)
    .join(", ");
}

/** JUnit XML: one testcase per row; FAIL → failure, ERROR → error, MISS/SKIP → skipped. */
export function toJunit(m: MatrixJson): string {
  const count = (s: string) => m.rows.filter((r) => r.status === s).length;
  const total = m.rows.reduce((a, r) => a + r.durationSec, 0);
  const cases = m.rows.map((r) => {
    const head = `  <testcase classname="cnuas-hil.matrix" name="${esc(r.id)}" time="${
      r.durationSec.toFixed(3)
    }">`;
    const why = esc(r.reason ?? "");
    let body = "";
    if (r.status === "FAIL") body = `\n    <failure message="${why}">${why}</failure>`;
    else if (r.status === "ERROR") body = `\n    <error message="${why}">${why}</error>`;
    else if (r.status === "MISS" || r.status === "SKIP") {
      body = `\n    <skipped message="${esc(r.status + ": " + (r.reason ?? ""))}"/>`;
    }
    const props = Object.entries(r.measurements).map(([k, v]) =>
      `\n      <property name="${esc(k)}" value="${v.value}" unit="${esc(v.unit)}"/>`
    ).join("");
    const propsXml = props ? `\n    <properties>${props}\n    </properties>` : "";
    return `${head}${propsXml}${body}\n  </testcase>`;
  }).join("\n");
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="cnuas-hil-matrix" tests="${m.rows.length}" failures="${
    count("FAIL")
  }" errors="${count("ERROR")}" skipped="${count("MISS") + count("SKIP")}" time="${
    total.toFixed(3)
  }" timestamp="${m.provenance.startedAt}">\n${cases}\n</testsuite>\n`;
}

/** Markdown: provenance and one table row per matrix row. */
export function toMarkdown(m: MatrixJson): string {
  const p = m.provenance;
  const lines = [
    `# Cnuas HIL validation matrix — ${p.runId}`,
    "",
    `Overall: **${rollUp(m.rows.map((r) => r.status))}**`,
    "",
    `- project: ${p.project}`,
    `- guest kernel: ${p.guestKernel ?? "n/a"}; QEMU: ${p.qemu ?? "n/a"}; rdma-core: ${
      p.rdmaCore ?? "n/a"
    }`,
    `- accelerator: ${p.accel ?? "n/a"}${p.accelReason ? ` (${p.accelReason})` : ""}`,
    `- depth: ${p.depth ?? "n/a"}`,
    ...(p.devModules
      ? ["- modules: the working tree's, over the image's packaged ones (`--dev-modules`)"]
      : []),
    `- host: ${p.host.hostname}, kernel ${p.host.kernel}, ${p.host.cpus} CPUs${
      p.shard ? `; shard ${p.shard}` : ""
    }`,
    "",
    "| row | status | seconds | measurements | reason |",
    "|---|---|---|---|---|",
    ...m.rows.map((r) =>
      `| ${r.id} | ${r.status} | ${r.durationSec.toFixed(1)} | ${measurementsText(r)} | ${
        (r.reason ?? "").replaceAll("|", "\\|").replaceAll("\n", " ")
      } |`
    ),
    "",
  ];
  return lines.join("\n");
}

/** One module or library in compat.json. */
export interface CompatEntry {
  /** `cnuasgpu_host`, `libcnuasdev`. */
  name: string;
  /** Its version: a module's MODULE_VERSION, a library's release (`.so` and pkg-config). */
  version: string;
  /** The rows that declare it, as `id:STATUS`. */
  rows: string[];
  /** Their roll-up; SKIP when no row of the run declares it. */
  status: string;
}

/** Module and library versions of ours validated against a kernel (from the rows that ran them). */
export interface CompatJson {
  /** The guest kernel release the modules ran on. */
  guestKernel?: string;
  /** The run this comes from. */
  runId: string;
  /** Per kernel module (`Row.modules`). */
  modules: CompatEntry[];
  /** Per user-space library (`Row.libraries`). */
  libraries: CompatEntry[];
}

/**
 * Module versions: each module's MODULE_VERSION in drivers/ (a unit test
 * holds the two together).
 */
export const MODULE_VERSIONS: Record<ModuleName, string> = {
  cnuas_net: "0.1.0",
  cnuas_ib: "0.2.0",
  cnuasgpu: "0.1.0",
  cnuasgpu_host: "0.1.0",
};

/**
 * Library versions: libcnuasdev's release, `VERSION` of drivers/lib/Makefile
 * (the `.so.1.0.0` and the pkg-config Version; a unit test holds them together).
 */
export const LIBRARY_VERSIONS: Record<LibraryName, string> = {
  libcnuasdev: "1.0.0",
};

/** One compat.json entry: `name` credited with the rows of `m` whose declared list holds it. */
function credit<N extends string>(
  m: MatrixJson,
  name: N,
  version: string,
  declared: Record<string, readonly N[]>,
): CompatEntry {
  const ran = m.rows.filter((r) => declared[r.id]?.includes(name));
  return {
    name,
    version,
    rows: ran.map((r) => `${r.id}:${r.status}`),
    status: ran.length ? rollUp(ran.map((r) => r.status)) : "SKIP",
  };
}

/**
 * compat.json: which module and library versions were validated against
 * which kernel. `rowModules` and `rowLibraries` map a row id to the modules
 * and libraries it declares (`Row.modules`, `Row.libraries`; see
 * `moduleCredits`, `libraryCredits`): each is credited with exactly the rows
 * that declare it.
 */
export function toCompat(
  m: MatrixJson,
  rowModules: Record<string, readonly ModuleName[]>,
  rowLibraries: Record<string, readonly LibraryName[]>,
): CompatJson {
  return {
    guestKernel: m.provenance.guestKernel,
    runId: m.provenance.runId,
    modules: MODULES.map((name) => credit(m, name, MODULE_VERSIONS[name], rowModules)),
    libraries: LIBRARIES.map((name) => credit(m, name, LIBRARY_VERSIONS[name], rowLibraries)),
  };
}
