/**
 * The lock file of pinned sources (`pins.lock.json`) and verified download
 * into the cache. A file whose checksum differs is refused with both sums; a
 * file the mirror no longer serves names the URL and the re-pin command.
 */
import { UserError } from "./errors.ts";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { stableJson } from "./cache.ts";
import type { Config } from "./config.ts";
import { progress } from "./progress.ts";

/** One pinned file. */
export interface PinnedFile {
  /** File name; the download is stored under this name in the cache. */
  name: string;
  /** Path below the mirror root. */
  path: string;
  /** Size in bytes, as the Sources index gives it. */
  size: number;
  /** Expected sha256 (hex); a download with another sum is refused. */
  sha256: string;
}

/** One pinned source package. */
export interface SourcePin {
  /** Debian source package name. */
  package: string;
  /** Debian suite whose Sources index `repin` reads. */
  suite: string;
  /** Debian version of the pinned source. */
  version: string;
  /** Only the upstream tarball is used (no Debian packaging). */
  origOnly?: boolean;
  /** The pinned files of the source package. */
  files: PinnedFile[];
}

/** The whole lock file. */
export interface PinsFile {
  /** Free text for humans reading the lock file. */
  comment?: string;
  /** Pinned sources by key (e.g. `qemu`, `rdma-core`). */
  sources: Record<string, SourcePin>;
  /** The debootstrap suite and variant of the guest root. */
  guest: { suite: string; variant: string };
}

/** A download failed its checksum. */
export class ChecksumError extends UserError {}

/** A pinned URL could not be fetched. */
export class DownloadError extends UserError {}

/** Path of the lock file in the repo. */
export function pinsPath(config: Config): string {
  return join(config.repoRoot, "pins.lock.json");
}

/** Read the lock file. */
export async function readPins(config: Config): Promise<PinsFile> {
  return JSON.parse(await Deno.readTextFile(pinsPath(config))) as PinsFile;
}

/** sha256 of bytes, hex. */
export function sha256Hex(data: Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

/** Check bytes against a pin; throws ChecksumError naming both sums. */
export function verifyPinned(file: PinnedFile, data: Uint8Array, url: string): void {
  const got = sha256Hex(data);
  if (got !== file.sha256) {
    throw new ChecksumError(
      `checksum mismatch for ${file.name} from ${url}: expected sha256 ${file.sha256}, got ${got}. ` +
        `The download is refused. If the mirror legitimately changed the file, re-pin with ` +
        `'npx -y deno@2.9.6 task repin'.`,
    );
  }
}

/**
 * Return the local path of a pinned file, downloading and verifying it into
 * `<cache>/downloads/<sha256>/<name>` when absent.
 */
export async function fetchPinned(config: Config, file: PinnedFile): Promise<string> {
  const dir = join(config.cacheDir, "downloads", file.sha256);
  const dest = join(dir, file.name);
  try {
    const cached = await Deno.readFile(dest);
    if (sha256Hex(cached) === file.sha256) return dest;
  } catch { /* not cached yet */ }
  const url = `${config.mirror.replace(/\/$/, "")}/${file.path}`;
  progress("pins", `downloading ${url}`);
  let res: Response;
  try {
    res = await fetch(url);
  } catch (e) {
    throw new DownloadError(`cannot reach ${url}: ${(e as Error).message}. Check --mirror.`);
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new DownloadError(
      `${url} answered ${res.status}: the mirror no longer serves ${file.name}. ` +
        `Re-pin to what it serves now with 'npx -y deno@2.9.6 task repin'.`,
    );
  }
  const data = new Uint8Array(await res.arrayBuffer());
  verifyPinned(file, data, url);
  await Deno.mkdir(dir, { recursive: true });
  const tmp = `${dest}.tmp-${Deno.pid}`;
  await Deno.writeFile(tmp, data);
  await Deno.rename(tmp, dest);
  return dest;
}

/** Fetch every file of a source pin; returns name → local path. */
export async function fetchSource(config: Config, pin: SourcePin): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const f of pin.files) out[f.name] = await fetchPinned(config, f);
  return out;
}

/** One stanza of a Debian Sources index. */
interface SourceStanza {
  version: string;
  directory: string;
  files: { name: string; size: number; sha256: string }[];
}

/** Parse the stanzas of a package from a Sources index text. */
export function parseSources(text: string, pkg: string): SourceStanza[] {
  const out: SourceStanza[] = [];
  for (const block of text.split(/\n\n+/)) {
    if (!block.startsWith(`Package: ${pkg}\n`)) continue;
    const version = /^Version: (.+)$/m.exec(block)?.[1];
    const directory = /^Directory: (.+)$/m.exec(block)?.[1];
    const sums = /^Checksums-Sha256:\n((?: .+\n?)+)/m.exec(block)?.[1] ?? "";
    if (!version || !directory) continue;
    const files = sums.trim().split("\n").map((l) => {
      const [sha256, size, name] = l.trim().split(/\s+/);
      return { name, size: Number(size), sha256 };
    });
    out.push({ version, directory, files });
  }
  return out;
}

/**
 * Re-pin every source to what the mirror serves now in its suite, rewriting
 * the lock file. Returns a description of what changed.
 */
export async function repin(config: Config): Promise<string[]> {
  const pins = await readPins(config);
  const changes: string[] = [];
  for (const [key, pin] of Object.entries(pins.sources)) {
    const url = `${config.mirror.replace(/\/$/, "")}/dists/${pin.suite}/main/source/Sources.xz`;
    progress("repin", `reading ${url}`);
    const res = await fetch(url);
    if (!res.ok) throw new DownloadError(`${url} answered ${res.status}`);
    const xz = new Deno.Command("xz", { args: ["-dc"], stdin: "piped", stdout: "piped" }).spawn();
    const body = res.body!;
    const [, text] = await Promise.all([
      body.pipeTo(xz.stdin),
      new Response(xz.stdout).text(),
    ]);
    const stanza = parseSources(text, pin.package).at(-1);
    if (!stanza) throw new DownloadError(`${pin.package} not found in ${url}`);
    const files = stanza.files
      .filter((f) => !pin.origOnly || f.name.includes(".orig."))
      .map((f) => ({ ...f, path: `${stanza.directory}/${f.name}` }));
    if (stanza.version !== pin.version) changes.push(`${key}: ${pin.version} → ${stanza.version}`);
    pins.sources[key] = { ...pin, version: stanza.version, files };
  }
  await Deno.writeTextFile(pinsPath(config), JSON.stringify(pins, null, 2) + "\n");
  return changes;
}

/** Stable text of a pin, for cache keys. */
export function pinKey(pin: SourcePin): string {
  return stableJson(pin.files.map((f) => f.sha256));
}
