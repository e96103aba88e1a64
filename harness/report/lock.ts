/**
 * The publish lock of a history directory: one publisher at a time.
 *
 * The lock is a file created exclusively: its content (pid, host, a token)
 * is written to a private file first and hard-linked into place, so a lock
 * that exists always says who holds it. A lock whose holder is a dead
 * process on this host is stale and taken over (with a message); one held
 * by a live process, or by another host (whose processes we cannot see),
 * is waited for up to a timeout.
 */
import { basename, dirname, join } from "node:path";
import { UserError } from "../errors.ts";

/** The lock is held by someone else and was not released in time. */
export class LockHeldError extends UserError {}

/** What a lock file says. */
export interface LockOwner {
  /** The holder's process id. */
  pid: number;
  /** The holder's hostname. */
  host: string;
  /** When it was taken, ISO 8601. */
  at: string;
  /** Unique per acquisition, so a release removes only its own lock. */
  token: string;
}

/** How to wait for a lock. */
export interface LockOptions {
  /** Give up after this long (default 120 s). */
  timeoutMs?: number;
  /** Look again this often (default 100 ms). */
  pollMs?: number;
  /** Where messages go (a stale lock taken over). */
  log?: (line: string) => void;
}

/** A held lock. */
export interface HeldLock {
  /** What the lock file says. */
  owner: LockOwner;
  /** Remove the lock if it is still ours. */
  release(): Promise<void>;
}

/** Whether a process of this host is alive (Linux: its /proc entry exists). */
export function pidAlive(pid: number): boolean {
  try {
    Deno.statSync(`/proc/${pid}`);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    return true; // cannot tell: assume alive, never steal a live lock
  }
}

async function readOwner(path: string): Promise<LockOwner | undefined> {
  try {
    const o = JSON.parse(await Deno.readTextFile(path)) as LockOwner;
    return typeof o.pid === "number" && typeof o.token === "string" ? o : undefined;
  } catch {
    return undefined;
  }
}

/** Link `content` into `path` exclusively; false when `path` exists. */
async function createExclusive(path: string, content: string): Promise<boolean> {
  const tmp = join(dirname(path), `.${basename(path)}.${crypto.randomUUID()}`);
  await Deno.writeTextFile(tmp, content);
  try {
    await Deno.link(tmp, path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.AlreadyExists) return false;
    throw e;
  } finally {
    await Deno.remove(tmp).catch(() => {});
  }
}

/**
 * Take a stale lock away: rename it aside (only one taker wins the rename),
 * check it is the one judged stale, drop it. A lock that changed hands in
 * between is put back.
 */
async function takeOver(path: string, stale: LockOwner): Promise<boolean> {
  const aside = `${path}.stale-${crypto.randomUUID()}`;
  try {
    await Deno.rename(path, aside);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
  const got = await readOwner(aside);
  if (got?.token === stale.token) {
    await Deno.remove(aside);
    return true;
  }
  await Deno.link(aside, path).catch(() => {});
  await Deno.remove(aside).catch(() => {});
  return false;
}

/** Acquire the lock file `path`, waiting and taking over stale locks as described above. */
export async function acquireLock(path: string, opts: LockOptions = {}): Promise<HeldLock> {
  const timeoutMs = opts.timeoutMs ?? 120_000;
  const pollMs = opts.pollMs ?? 100;
  const log = opts.log ?? ((l: string) => console.error(l));
  const host = Deno.hostname();
  const owner: LockOwner = {
    pid: Deno.pid,
    host,
    at: new Date().toISOString(),
    token: crypto.randomUUID(),
  };
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await createExclusive(path, JSON.stringify(owner) + "\n")) {
      return {
        owner,
        async release() {
          if ((await readOwner(path))?.token === owner.token) await Deno.remove(path);
        },
      };
    }
    const held = await readOwner(path);
    if (held && held.host === host && held.pid !== Deno.pid && !pidAlive(held.pid)) {
      if (await takeOver(path, held)) {
        log(
          `${path}: taking over a stale lock of pid ${held.pid} on ${held.host} (since ${held.at}; that process is gone)`,
        );
      }
      continue;
    }
    if (Date.now() >= deadline) {
      const who = held ? `pid ${held.pid} on ${held.host} since ${held.at}` : "an unreadable owner";
      throw new LockHeldError(
        `${path} is held by ${who}; waited ${
          Math.round(timeoutMs / 1000)
        } s. If that publisher is gone (another host's process cannot be checked from here), remove the file and publish again`,
      );
    }
    await new Promise((r) => setTimeout(r, pollMs));
  }
}
