/**
 * What makes a guest restored from a saved state its own machine: every
 * guest from one state starts with the same clock, hostname, machine-id and
 * kernel CRNG state. The guest's side is `identity_agent.pl`, started in the
 * base guest before its state is saved and waiting on the guest's second
 * serial line; the host talks to it through that line's chardev socket
 * while the SSH connection is still being made (docs/architecture.md,
 * "Guests from a snapshot").
 */
import { HilError } from "../errors.ts";
import { readLines, shq } from "../exec.ts";
import { GPU_PCI } from "../models/gpu.ts";
import { bytesToHex } from "../models/rdma/bytes.ts";
import { VNIC_PCI } from "../models/vnic.ts";
import { clockOffsetMs, type ClockReading, hostNow } from "./clock.ts";

/** The identity agent did not answer, or answered that it failed. */
export class IdentityError extends HilError {}

/**
 * One shell pattern that matches each of `words` (all of one length): a
 * bracket class where they differ, e.g. 0x10f0 and 0x10f1 → `0x10f[01]`.
 */
export function patternOf(words: string[]): string {
  const n = words[0]?.length ?? 0;
  if (!words.length || words.some((w) => w.length !== n)) {
    throw new Error(`not words of one length: ${words.join(", ")}`);
  }
  return Array.from({ length: n }, (_, i) => {
    const cs = [...new Set(words.map((w) => w[i]))];
    return cs.length === 1 ? cs[0] : `[${cs.join("")}]`;
  }).join("");
}

const hexId = (id: number) => `0x${id.toString(16).padStart(4, "0")}`;

/**
 * The boot's PCI coldplug again, for our devices only (the vnic's and the
 * accelerator's ids, docs/devices.md): udev loads our drivers for them
 * through the modaliases, as at boot. Every other device kept its driver
 * through the save; replaying all of the guest's PCI devices cost a
 * restored TCG guest ~0.2 s of events that change nothing.
 */
export const COLDPLUG_OUR_DEVICES = (() => {
  const vendors = new Set([VNIC_PCI.vendor, GPU_PCI.vendor]);
  if (vendors.size !== 1) throw new Error("our PCI functions have one vendor id");
  const devices = patternOf([VNIC_PCI.device, GPU_PCI.device].map(hexId));
  return `udevadm trigger --action=add --subsystem-match=pci --attr-match=vendor=${
    hexId(VNIC_PCI.vendor)
  } '--attr-match=device=${devices}' && udevadm settle -t 60`;
})();

/**
 * Before a guest's state is saved: our drivers out (those udev loaded at
 * boot), last loaded first, so that each restored guest's udev probes its
 * own devices (the agent's coldplug).
 */
export const UNLOAD_OUR_DRIVERS = "for m in cnuas_ib cnuas_net cnuasgpu_host cnuasgpu; do " +
  'if grep -q "^$m " /proc/modules; then rmmod "$m" || exit 1; fi; done';

/**
 * Before the state of a guest with an RDMA NIC is saved: the kernel's RDMA
 * connection manager and its user-space access loaded (rdma_ucm brings
 * rdma_cm, iw_cm and ib_cm; ib_core and ib_uverbs stay from the boot's
 * cnuas_ib), as rdma-core's rdma-load-modules@rdma.service loads them on a
 * real host once an RDMA device appears. Every RoCE and IB row loads them
 * first (~0.25 s of an idle guest, more beside another row); a restored
 * guest now has them. Rows that unload them (ib-forwarding's ib_cm) still do.
 */
export const LOAD_RDMA_CM = "modprobe -a ib_uverbs rdma_ucm";

/** Bytes of host randomness each restored guest's input pool gets (the agent's RESEED_BYTES). */
export const RESEED_BYTES = 64;

/** The guest's end of the identity line: the second serial port (`qemu_args.ts`). */
export const IDENTITY_TTY = "/dev/ttyS1";

/** Where the agent's program and its standard error live in the guest (tmpfs: saved with the state). */
export const AGENT_PATH = "/run/cnuas-identity-agent.pl";
/** The agent's standard error in the guest: why it stopped, if it did. */
export const AGENT_LOG = "/run/cnuas-identity-agent.log";

/** The agent's program, as the guest runs it. */
export function identityAgentSource(): Promise<Uint8Array> {
  return Deno.readFile(new URL("./identity_agent.pl", import.meta.url));
}

/**
 * The guest command that starts the agent (its program already at
 * AGENT_PATH): it makes the line raw, then returns and serves in the
 * background, in a session of its own.
 */
export function startAgentCommand(): string {
  return `perl ${AGENT_PATH} ${IDENTITY_TTY} ${shq(COLDPLUG_OUR_DEVICES)} ${AGENT_LOG}`;
}

/** RESEED_BYTES fresh bytes from the host's CSPRNG. */
export function reseedBytes(): Uint8Array {
  return crypto.getRandomValues(new Uint8Array(RESEED_BYTES));
}

/**
 * The host's answer to the agent's clock line (`clockLine`, read now; the
 * question was sent at `askedAt`, host ms): `lead US SEED` — the guest
 * clock's lead in µs, and fresh reseed bytes in hex — and the reading the
 * lead comes from, right to half that round trip.
 */
export function clockAnswer(
  clockLine: string,
  askedAt: number,
): { reading: ClockReading; line: string } {
  const m = /^clock (\d{10,})$/.exec(clockLine);
  if (!m) throw new IdentityError(`expected the agent's clock, got ${JSON.stringify(clockLine)}`);
  const now = hostNow();
  const reading = { rttMs: now - askedAt, offMs: clockOffsetMs(askedAt, m[1], now) };
  return {
    reading,
    line: `lead ${Math.round(reading.offMs * 1000)} ${bytesToHex(reseedBytes())}`,
  };
}

/** What {@link applyIdentity} measured. */
export interface IdentityResult {
  /** The guest clock's lead before it was corrected, and the round trip it was read in. */
  clock: ClockReading;
  /** Host ms (hostNow) when the agent said done. */
  doneAt: number;
}

/**
 * Give a restored guest its identity through its agent on the chardev
 * socket `socketPath`: its clock read (right to half the round trip) and
 * corrected by what was read, 64 bytes of host randomness mixed in and the
 * CRNG reseeded from them, hostname `name`, a new machine-id drawn from the
 * CRNG, and with `coldplug` {@link COLDPLUG_OUR_DEVICES} (left out for a
 * caller that installs other modules first and runs it itself:
 * `--dev-modules`). Throws IdentityError when the agent fails or does not
 * answer within `timeoutSec`.
 */
export async function applyIdentity(
  name: string,
  socketPath: string,
  coldplug: boolean,
  timeoutSec = 90,
): Promise<IdentityResult> {
  if (!/^[a-z0-9][a-z0-9-]*$/.test(name)) throw new IdentityError(`not a guest name: ${name}`);
  let conn: Deno.UnixConn;
  try {
    conn = await Deno.connect({ transport: "unix", path: socketPath });
  } catch (e) {
    throw new IdentityError(`${name}: the identity line ${socketPath}: ${(e as Error).message}`);
  }
  const enc = new TextEncoder();
  const send = (line: string) => conn.write(enc.encode(`${line}\n`));
  const lines = readLines(conn.readable);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(
        new IdentityError(
          `${name}: no answer from the identity agent within ${timeoutSec} s ` +
            `(${socketPath}; its log in the guest: ${AGENT_LOG})`,
        ),
      );
    }, timeoutSec * 1000);
  });
  const next = async (what: string): Promise<string> => {
    const r = await Promise.race([lines.next(), expired]);
    if (r.done) throw new IdentityError(`${name}: the identity line closed before ${what}`);
    const line = r.value.replace(/\r$/, "");
    if (line.startsWith("fail ")) {
      throw new IdentityError(`${name}: the identity agent failed: ${line.slice(5)}`);
    }
    return line;
  };
  try {
    await send(`hello ${name} ${coldplug ? 1 : 0}`);
    const ready = await next("ready");
    if (ready !== "ready") throw new IdentityError(`${name}: expected ready, got ${ready}`);
    const askedAt = hostNow();
    await send("time");
    const answer = clockAnswer(await next("its clock"), askedAt);
    await send(answer.line);
    const done = await next("done");
    if (done !== "done") throw new IdentityError(`${name}: expected done, got ${done}`);
    return { clock: answer.reading, doneAt: hostNow() };
  } finally {
    clearTimeout(timer);
    expired.catch(() => {});
    conn.close();
  }
}
