/**
 * Keep a persistent build tree's copy of a source directory in step with it
 * by content: a file is written only when its bytes differ (so its mtime
 * moves and make rebuilds what depends on it), files gone from the source
 * are removed, and everything else keeps the mtime its build outputs are
 * newer than. mtimes are not trusted: `git checkout` of an older file can
 * leave it older than an object built from the newer one.
 */
import { join } from "node:path";

/** Whether two byte arrays are equal. */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** A source file's bytes keyed by its path relative to the directory. */
async function readTree(dir: string, prefix = ""): Promise<Map<string, Uint8Array>> {
  const files = new Map<string, Uint8Array>();
  for await (const e of Deno.readDir(join(dir, prefix))) {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory) {
      for (const [k, v] of await readTree(dir, rel)) files.set(k, v);
    } else if (e.isFile) files.set(rel, await Deno.readFile(join(dir, rel)));
  }
  return files;
}

/**
 * Make `to` hold `from`'s files: write those that differ, remove files
 * `from` no longer has that `isSource` calls sources (build outputs beside
 * them are left). Returns the relative paths written or removed.
 */
export async function syncTree(
  from: string,
  to: string,
  isSource: (rel: string) => boolean,
): Promise<string[]> {
  const wanted = await readTree(from);
  const changed: string[] = [];
  await Deno.mkdir(to, { recursive: true });
  for (const [rel, old] of await readTree(to)) {
    const want = wanted.get(rel);
    if (want !== undefined) {
      if (bytesEqual(old, want)) wanted.delete(rel);
    } else if (isSource(rel)) {
      await Deno.remove(join(to, rel));
      changed.push(rel);
    }
  }
  for (const [rel, data] of wanted) {
    const dest = join(to, rel);
    await Deno.mkdir(join(dest, ".."), { recursive: true });
    await Deno.writeFile(dest, data);
    changed.push(rel);
  }
  return changed.sort();
}
