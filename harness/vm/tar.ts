/**
 * A POSIX ustar archive of regular files, built in memory: how the harness
 * copies many files into a guest in one SSH command (`tar -x` on the guest)
 * instead of one command per file, each a round trip of ~0.3 s under TCG.
 * Only what that needs: regular files, relative paths, modes; no links.
 */

/** One regular file of an archive. */
export interface TarFile {
  /** Relative path inside the archive (`a/b.c`); at most 100 bytes, or 255 split at a `/`. */
  path: string;
  data: Uint8Array;
  mode: number;
}

const BLOCK = 512;
const enc = new TextEncoder();

/** `value` as `width - 1` octal digits and a NUL, as ustar numeric fields are. */
function octal(value: number, width: number): string {
  const s = value.toString(8);
  if (s.length > width - 1) throw new Error(`tar: ${value} does not fit ${width} bytes`);
  return s.padStart(width - 1, "0") + "\0";
}

/** The ustar name and prefix fields for `path`. */
function splitPath(path: string): { name: string; prefix: string } {
  if (path === "" || path.startsWith("/") || path.split("/").includes("..")) {
    throw new Error(`tar: not a relative path inside the archive: ${path}`);
  }
  if (enc.encode(path).length <= 100) return { name: path, prefix: "" };
  const cut = path.lastIndexOf("/", 155);
  const name = path.slice(cut + 1);
  if (cut <= 0 || enc.encode(name).length > 100 || enc.encode(path.slice(0, cut)).length > 155) {
    throw new Error(`tar: path too long for ustar: ${path}`);
  }
  return { name, prefix: path.slice(0, cut) };
}

function header(f: TarFile, mtimeSec: number): Uint8Array {
  const h = new Uint8Array(BLOCK);
  const put = (offset: number, s: string) => h.set(enc.encode(s), offset);
  const { name, prefix } = splitPath(f.path);
  put(0, name);
  put(100, octal(f.mode & 0o7777, 8));
  put(108, octal(0, 8));
  put(116, octal(0, 8));
  put(124, octal(f.data.length, 12));
  put(136, octal(mtimeSec, 12));
  put(148, "        "); // the checksum counts its own field as spaces
  put(156, "0");
  put(257, "ustar\0");
  put(263, "00");
  put(345, prefix);
  const sum = h.reduce((a, b) => a + b, 0);
  put(148, octal(sum, 7) + " ");
  return h;
}

/** The archive of `files`, each stamped with `mtimeSec`, ended by two zero blocks. */
export function tarArchive(files: TarFile[], mtimeSec = Math.floor(Date.now() / 1000)): Uint8Array {
  const padded = (n: number) => Math.ceil(n / BLOCK) * BLOCK;
  const size = files.reduce((a, f) => a + BLOCK + padded(f.data.length), 2 * BLOCK);
  const out = new Uint8Array(size);
  let at = 0;
  for (const f of files) {
    out.set(header(f, mtimeSec), at);
    out.set(f.data, at + BLOCK);
    at += BLOCK + padded(f.data.length);
  }
  return out;
}
