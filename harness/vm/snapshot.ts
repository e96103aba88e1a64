/**
 * Saved guests in the cache: a guest booted once per key to the harness's
 * ready point (SSH answers), its whole VM state saved next to the copy of
 * the root image it ran on; a restored guest opens that copy with
 * `snapshot=on`, so its page cache and its disk are the same instant
 * (docs/architecture.md, "Guests from a snapshot").
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import { cached } from "../cache.ts";
import { exec } from "../exec.ts";
import { progress } from "../progress.ts";
import { GuestVm } from "./guest.ts";
import { freePort } from "./ports.ts";
import type { GuestSpec } from "./qemu_args.ts";
import {
  AGENT_PATH,
  identityAgentSource,
  LOAD_RDMA_CM,
  startAgentCommand,
  UNLOAD_OUR_DRIVERS,
} from "./restore_identity.ts";
import { snapshotBaseSpec, snapshotKeyInputs } from "./snapshot_key.ts";
import type { TarFile } from "./tar.ts";

/** The saved state in an entry. */
export const STATE_FILE = "state";

/** The root image copy in an entry, as the saved guest left it. */
export const DISK_FILE = "rootfs.img";

/**
 * The base guest's kernel log up to the save, kept beside the state: the
 * log is cleared before the save, so a restored guest's `dmesg` is its own
 * (not the stand-in MAC and accelerator identity the base guest's drivers
 * logged before they were unloaded). It must pass the caller's check (the
 * dmesg guard) or the save fails: the rows' guards no longer see it.
 */
export const BASE_DMESG_FILE = "base-dmesg.txt";

/**
 * What the base guest was given before the save (`SaveOptions.files`): each
 * file's absolute guest path and {@link fileDigest}, as JSON. A restored
 * guest already has these; the lab pushes only what differs.
 */
export const FILES_MANIFEST = "files.json";

/** Seconds the save itself may take (a few hundred MiB through a pipe). */
const SAVE_TIMEOUT_SEC = 120;

/** A saved guest in the cache. */
export interface SavedGuest {
  /** The cache key. */
  key: string;
  /** The saved VM state (`-incoming exec:cat` reads it). */
  state: string;
  /** The root image copy the state belongs with (open it with `snapshot=on`). */
  rootfs: string;
  /** Seconds this call spent making it; 0 when it was in the cache. */
  saveSec: number;
  /**
   * The files the state holds beyond the image ({@link FILES_MANIFEST}):
   * absolute guest path to {@link fileDigest}.
   */
  files: ReadonlyMap<string, string>;
}

/** What making a saved guest needs besides the spec. */
export interface SaveOptions {
  /** Cache directory. */
  cacheDir: string;
  /** The guest image's cache key. */
  imageKey: string;
  /** Private key text for root. */
  sshKey: string;
  /** Seconds the base guest gets to answer SSH. */
  bootTimeoutSec: number;
  /**
   * What is wrong in the base guest's kernel log (the dmesg guard's
   * violations); anything makes the save fail, as it would fail a row.
   */
  checkKernelLog: (text: string) => string[];
  /**
   * Files (absolute guest paths) put into the base guest before the save,
   * so restored guests have them without a push: the test programs and
   * libcnuasdev's, which most rows need and which change far less often
   * than a state is restored. Not in the cache key: a state made with older
   * ones stays usable, the lab pushes what changed ({@link filesToPush}).
   * Called only when a state is made.
   */
  files?: () => Promise<TarFile[]>;
}

/** sha256 of a file's mode and bytes: what says a guest's copy is this file. */
export function fileDigest(f: TarFile): string {
  return createHash("sha256").update(`${f.mode.toString(8)}\0`).update(f.data).digest("hex");
}

/**
 * The files of `files` a guest restored from a state holding `held` (path to
 * digest) lacks or has in another version: what still has to be pushed.
 */
export function filesToPush(files: TarFile[], held: ReadonlyMap<string, string>): TarFile[] {
  return files.filter((f) => held.get(f.path) !== fileDigest(f));
}

/** The manifest of a cache entry; empty when the entry has none. */
async function readManifest(dir: string): Promise<Map<string, string>> {
  let text: string;
  try {
    text = await Deno.readTextFile(join(dir, FILES_MANIFEST));
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return new Map();
    throw e;
  }
  const parsed: unknown = JSON.parse(text);
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new Error(`${join(dir, FILES_MANIFEST)}: not an object of path to digest`);
  }
  return new Map(
    Object.entries(parsed).filter((e): e is [string, string] => typeof e[1] === "string"),
  );
}

/** The saved guest for `spec`, made first when the cache has none. */
export async function ensureSaved(spec: GuestSpec, opts: SaveOptions): Promise<SavedGuest> {
  const t0 = performance.now();
  const entry = await cached(
    opts.cacheDir,
    "snapshot",
    snapshotKeyInputs(spec, opts.imageKey),
    (out, logs) => saveGuest(spec, out, logs, opts),
  );
  return {
    key: entry.key,
    state: join(entry.dir, STATE_FILE),
    rootfs: join(entry.dir, DISK_FILE),
    saveSec: entry.built ? (performance.now() - t0) / 1000 : 0,
    files: await readManifest(entry.dir),
  };
}

/** `spec` started from `saved` instead of booting. */
export function restoredSpec(spec: GuestSpec, saved: SavedGuest): GuestSpec {
  return { ...spec, rootfs: saved.rootfs, incoming: saved.state };
}

async function saveGuest(
  spec: GuestSpec,
  out: string,
  logs: string,
  opts: SaveOptions,
): Promise<void> {
  const log = join(logs, "save.log");
  const disk = join(out, DISK_FILE);
  // A private copy the base guest writes; it then stays with the state.
  await exec(["cp", "--sparse=always", "--reflink=auto", spec.rootfs, disk], { logPath: log });
  // The QMP socket in a short temporary path: a unix socket path has 108 bytes.
  const tmp = await Deno.makeTempDir({ prefix: "cnuas-save-" });
  const base: GuestSpec = {
    ...snapshotBaseSpec(spec),
    rootfs: disk,
    rootfsWritable: true,
    savesState: true,
    sshPort: freePort(),
    qmpSocket: join(tmp, "qmp.sock"),
    identitySocket: join(tmp, "identity.sock"),
    consoleLog: join(logs, "console.log"),
  };
  progress("snapshot", `booting a guest to save (log: ${logs})`);
  const vm = await GuestVm.start(base, {
    sshKeyPath: "",
    bootTimeoutSec: opts.bootTimeoutSec,
    logDir: logs,
  });
  try {
    await vm.waitForSsh(base.sshPort, opts.sshKey, opts.bootTimeoutSec);
    const t0 = performance.now();
    // Quiet before the save: init's udev coldplug is still loading modules
    // when SSH first answers, and every restored guest would redo the rest
    // of that work. The vmgenid driver must be bound (a kernel with it as a
    // module would not load it: init coldplugs only PCI), or the new
    // generation ID at resume reaches nobody. With an RDMA NIC, the RDMA CM
    // modules too (LOAD_RDMA_CM). Then everything written so far goes to the
    // disk copy.
    const rdma = base.devices.some((d) => d.kind === "vnic") ? ` && ${LOAD_RDMA_CM}` : "";
    const r = await vm.run(`udevadm settle -t 60 && modprobe vmgenid${rdma} && sync`, {
      timeoutSec: 90,
    });
    if (r.code !== 0) throw new Error(`preparing the saved guest: ${r.stderr.trim()}`);
    // written to the disk copy by the sync after the drivers are unloaded, below
    const files = opts.files ? await opts.files() : [];
    if (files.length) await vm.putFiles(files);
    await Deno.writeTextFile(
      join(out, FILES_MANIFEST),
      JSON.stringify(Object.fromEntries(files.map((f) => [f.path, fileDigest(f)])), null, 1),
    );
    // The identity agent, waiting on ttyS1 when the state is saved; then
    // one exchange with it, as a restored guest's (coldplug included), so
    // it is known to answer and what it runs is in the saved page cache.
    await vm.putFile(AGENT_PATH, await identityAgentSource(), 0o755);
    const a = await vm.run(startAgentCommand(), { timeoutSec: 30 });
    if (a.code !== 0) throw new Error(`starting the identity agent: ${a.stderr.trim()}`);
    await vm.applyIdentity(true);
    const u = await vm.run(`${UNLOAD_OUR_DRIVERS} && sync`, { timeoutSec: 90 });
    if (u.code !== 0) throw new Error(`unloading our drivers before the save: ${u.stderr.trim()}`);
    // read and cleared in one call: nothing logged in between is lost
    const log = await vm.run("dmesg --read-clear", { timeoutSec: 30 });
    if (log.code !== 0) throw new Error(`clearing the kernel log: ${log.stderr.trim()}`);
    await Deno.writeTextFile(join(out, BASE_DMESG_FILE), log.stdout);
    const bad = opts.checkKernelLog(log.stdout);
    if (bad.length) {
      throw new Error(`the base guest's kernel log: ${bad.slice(0, 3).join(" | ")}`);
    }
    await vm.saveState(join(out, STATE_FILE), SAVE_TIMEOUT_SEC);
    const size = (await Deno.stat(join(out, STATE_FILE))).size;
    progress(
      "snapshot",
      `saved ${(size / 2 ** 20).toFixed(0)} MiB of state in ${
        ((performance.now() - t0) / 1000).toFixed(1)
      } s after ${vm.startToSshSec.toFixed(1)} s to SSH`,
    );
  } finally {
    await vm.close();
  }
  try {
    await checkRestore(base, out, logs, tmp, opts);
  } finally {
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
  }
  // Restored guests only ever read these (snapshot=on); nothing may change them.
  await Deno.chmod(disk, 0o444);
  await Deno.chmod(join(out, STATE_FILE), 0o444);
}

/**
 * Restore the state just saved in `out` once, as a row would, before it
 * enters the cache: its identity agent must answer, and SSH, with a clean
 * kernel log. A bad state would otherwise fail every row of its
 * configuration until the cache is cleared (one saved live on a loaded host
 * oopsed at once, every time).
 */
async function checkRestore(
  base: GuestSpec,
  out: string,
  logs: string,
  tmp: string,
  opts: SaveOptions,
): Promise<void> {
  const spec: GuestSpec = {
    ...base,
    rootfs: join(out, DISK_FILE),
    rootfsWritable: false,
    savesState: false,
    incoming: join(out, STATE_FILE),
    sshPort: freePort(),
    qmpSocket: join(tmp, "check.sock"),
    identitySocket: join(tmp, "check-identity.sock"),
    consoleLog: join(logs, "check-console.log"),
  };
  const t0 = performance.now();
  const vm = await GuestVm.start(spec, {
    sshKeyPath: "",
    bootTimeoutSec: opts.bootTimeoutSec,
    logDir: logs,
  });
  try {
    await Promise.all([
      vm.waitForSsh(spec.sshPort, opts.sshKey, opts.bootTimeoutSec),
      vm.applyIdentity(true),
    ]);
    const log = await vm.run("dmesg", { timeoutSec: 30 });
    if (log.code !== 0) throw new Error(`reading the restored guest's kernel log: ${log.stderr}`);
    const bad = opts.checkKernelLog(log.stdout);
    if (bad.length) {
      throw new Error(`the state restored into: ${bad.slice(0, 3).join(" | ")}`);
    }
  } finally {
    await vm.close();
  }
  progress(
    "snapshot",
    `restored once to check it: SSH and a clean kernel log in ${
      ((performance.now() - t0) / 1000).toFixed(1)
    } s`,
  );
}
