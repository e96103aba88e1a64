/**
 * The cnuas_net receive oracle: what one frame delivered to a cnuas-vnic
 * moves in the driver's `ethtool -S` counters, and whether a window of
 * counters is explained by the frames delivered in it. Pure (no I/O): the
 * rows that inject frames and read counters live in harness/guest/.
 *
 * @example
 * ```ts
 * const preds = frames.map((f) => predictRx(f, 1500));
 * // statsDelta: harness/guest/cnuas_net.ts
 * const verdict = explainRxDelta(preds, statsDelta(before, after));
 * ```
 */
// The device's frame limit (docs/devices.md#vnic-identity-and-properties) is
// taken from the device model so the two cannot disagree about it.
import { HilError } from "../errors.ts";
import { VNIC_MAX_FRAME } from "./vnic.ts";

/*
 * The receive oracle below states the acceptance rule of
 * docs/devices.md#cnuas_net-which-received-frames-are-accepted,
 * and nothing else: not the driver's C or headers, which it checks. The
 * contract takes the length limits from the device (docs/devices.md; frames
 * of 1..9216 bytes, MTU up to 9202), decides the driver's rules there (no
 * destination filter, length before content, counter names), and cites the
 * standards it leans on:
 * - IEEE 802.3: clause 3.2.3 reserves the first bit of the source address
 *   (a group source is malformed); a frame longer than the maximum is a
 *   MAC-level error (frameTooLong) rejected before any field is interpreted;
 *   clause 31 MAC Control frames (EtherType 0x8808) are consumed by the MAC
 *   Control sublayer, never passed to the client, are minFrameSize long (64
 *   bytes with FCS, 60 on this FCS-less wire) and unsupported opcodes are
 *   discarded; Annex 31B PAUSE is opcode 0x0001 with a 2-byte pause time.
 * - IEEE 802.1Qbb PFC: opcode 0x0101, a 16-bit class-enable vector whose
 *   bit n (n = 0..7, counted from the least significant bit) enables
 *   priority n (the upper 8 bits are reserved), then eight 2-byte times.
 * Where the contract leaves the outcome to the implementation the prediction
 * is `open` and lists the outcomes it allows (see `predictRx`).
 */

/** EtherType of IEEE 802.3 clause 31 MAC Control frames. */
const MAC_CONTROL_TYPE = 0x8808;
/** 802.3 minFrameSize (64 bytes) less the FCS this wire does not carry. */
const MAC_CONTROL_LEN = 60;
/** Annex 31B PAUSE opcode; the frame needs opcode and pause time (14 + 2 + 2 bytes). */
const PAUSE_OPCODE = 0x0001;
const PAUSE_MIN_LEN = 18;
/** 802.1Qbb PFC opcode; the frame needs opcode, class-enable vector and 8 times (14 + 2 + 2 + 16). */
const PFC_OPCODE = 0x0101;
const PFC_MIN_LEN = 34;
/** Ethernet header: destination, source, EtherType. */
const ETH_HLEN = 14;
/** What MTU + 18 allows beyond the MTU: the header and one 802.1Q tag. */
const ETH_OVERHEAD = 18;

/** Counter increments, name → amount (`rx_bytes` in bytes, the rest in frames). */
export type Counters = Record<string, number>;

/**
 * What one received frame does to cnuas_net's `ethtool -S` counters: either
 * exactly known, or `open` when the contract allows several outcomes (each
 * listed; exactly one of them happens).
 */
export type RxPrediction =
  | { kind: "exact"; counters: Counters }
  | { kind: "open"; outcomes: Counters[]; why: string };

/** `expectedRxCounters` was asked about a frame the contract does not decide. */
export class UnpredictableFrameError extends HilError {}

function exact(counters: Counters): RxPrediction {
  return { kind: "exact", counters };
}

function outcomesOf(p: RxPrediction): Counters[] {
  return p.kind === "exact" ? [p.counters] : p.outcomes;
}

/** `p`, or one of the `alternatives`: an open prediction naming why. */
function either(p: RxPrediction, alternatives: Counters[], why: string): RxPrediction {
  const outcomes = [...outcomesOf(p)];
  for (const a of alternatives) {
    if (!outcomes.some((o) => sameCounters(o, a))) outcomes.push(a);
  }
  return outcomes.length === 1 ? exact(outcomes[0]) : { kind: "open", outcomes, why };
}

function sameCounters(a: Counters, b: Counters): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys].every((k) => (a[k] ?? 0) === (b[k] ?? 0));
}

/** A MAC Control frame (EtherType 0x8808) of a valid length with a unicast source. */
function macControl(frame: Uint8Array): RxPrediction {
  const len = frame.length;
  const malformed = { rx_drop_bad_mac_ctrl: 1 };
  if (len < ETH_HLEN + 2) return exact(malformed); // no opcode
  const op = (frame[14] << 8) | frame[15];
  let counted: Counters;
  if (op === PAUSE_OPCODE && len >= PAUSE_MIN_LEN) {
    counted = { rx_pause: 1 };
  } else if (op === PFC_OPCODE && len >= PFC_MIN_LEN) {
    counted = {};
    for (let p = 0; p < 8; p++) if (frame[17] & (1 << p)) counted[`rx_pfc_prio${p}`] = 1;
  } else {
    // An unsupported opcode, or a PAUSE/PFC too short for its fields.
    return exact(malformed);
  }
  if (len === MAC_CONTROL_LEN) return exact(counted);
  return either(
    exact(counted),
    [malformed],
    `a ${op === PAUSE_OPCODE ? "PAUSE" : "PFC"} frame of ${len} bytes: 802.3 makes MAC ` +
      `Control frames ${MAC_CONTROL_LEN} bytes long and the contract does not say whether ` +
      `another length is honoured or counted as malformed`,
  );
}

/**
 * Predict what one frame delivered by the switch to a cnuas-vnic moves in
 * `ethtool -S`, with no RDMA consumer registered, the interface at `mtu` and
 * administratively `up` (or down). The rule is docs/devices.md, section
 * "cnuas_net: which received frames are accepted"; in order:
 * - empty or above 9216 bytes: the device drops it, no counter moves;
 * - the destination address is never looked at: unicast to this or another
 *   host, multicast and broadcast frames are all accepted (no filter, no
 *   promiscuous switch);
 * - shorter than 14 bytes: `rx_drop_runt`; longer than MTU + 18 (capped at
 *   9216): `rx_drop_oversize` — length before content;
 * - a group (multicast) source address: `rx_drop_bad_src`;
 * - EtherType 0x8808: a 60-byte PAUSE counts `rx_pause`, a 60-byte PFC frame
 *   `rx_pfc_prioN` for each enabled priority N (no counter when none is
 *   enabled); no opcode, an unsupported one, or a PAUSE/PFC too short for its
 *   fields: `rx_drop_bad_mac_ctrl`. MAC Control frames never reach the stack,
 *   so they move neither `rx_packets` nor `rx_bytes`;
 * - any other frame goes up the stack: `rx_packets` +1 and `rx_bytes` + its
 *   length; on a down interface `rx_drop_down` instead.
 *
 * Left open by the contract (the prediction lists each allowed outcome):
 * - a PAUSE/PFC frame with all its fields but not 60 bytes long (honoured or
 *   malformed);
 * - a MAC Control frame with a group source (which of the two rules wins);
 * - on a down interface, any frame that would not go up the stack: whether
 *   the driver judges it or drops it as `rx_drop_down` first.
 * Never predicted to move: `rx_drop_bad_len` (a length the device does not
 * deliver), `rx_drop_nomem` (memory pressure), `rx_rdma_*` (no consumer).
 */
export function predictRx(frame: Uint8Array, mtu: number, up = true): RxPrediction {
  const len = frame.length;
  if (len === 0 || len > VNIC_MAX_FRAME) return exact({});
  let p: RxPrediction;
  const groupSource = len >= 12 && (frame[6] & 1) === 1;
  const macCtrl = len >= ETH_HLEN && ((frame[12] << 8) | frame[13]) === MAC_CONTROL_TYPE;
  if (len < ETH_HLEN) p = exact({ rx_drop_runt: 1 });
  else if (len > Math.min(mtu + ETH_OVERHEAD, VNIC_MAX_FRAME)) p = exact({ rx_drop_oversize: 1 });
  else if (macCtrl && groupSource) {
    p = either(
      macControl(frame),
      [{ rx_drop_bad_src: 1 }],
      "a MAC Control frame with a group source: the contract does not order the two rules",
    );
  } else if (groupSource) p = exact({ rx_drop_bad_src: 1 });
  else if (macCtrl) p = macControl(frame);
  else return exact(up ? { rx_packets: 1, rx_bytes: len } : { rx_drop_down: 1 });
  if (up) return p;
  return either(
    p,
    [{ rx_drop_down: 1 }],
    "a frame that does not go up the stack, on a down interface: the contract does not say " +
      "whether it is judged or dropped as rx_drop_down first",
  );
}

/**
 * The counters one frame moves, for frames whose outcome the contract
 * decides (`predictRx` gives `exact`); throws UnpredictableFrameError
 * otherwise.
 */
export function expectedRxCounters(frame: Uint8Array, mtu: number, up = true): Counters {
  const p = predictRx(frame, mtu, up);
  if (p.kind === "open") {
    throw new UnpredictableFrameError(
      `${frame.length}-byte frame: ${p.why}; use predictRx and explainRxDelta for such frames`,
    );
  }
  return p.counters;
}

/** Sum counter increments (`expectedRxCounters` of many frames). */
export function addCounters(into: Counters, more: Counters): Counters {
  for (const [k, v] of Object.entries(more)) into[k] = (into[k] ?? 0) + v;
  return into;
}

/** How a window of receive counters compares with the predictions of its frames. */
export interface RxDeltaVerdict {
  /** True when one allowed outcome per frame adds up to the delta exactly. */
  ok: boolean;
  /** Frames whose outcome the contract decides. */
  exactFrames: number;
  /** Frames with several allowed outcomes. */
  openFrames: number;
  /** What the exact frames add up to. */
  expected: Counters;
  /** What differed, one line each (empty when ok). */
  problems: string[];
}

/** Open frames the search below may consider before it gives up (it is exponential in them). */
const OPEN_SEARCH_BUDGET = 200_000;

/**
 * Compare a delta of `ethtool -S` counters over a window with the
 * predictions for the frames delivered in it. Every receive counter (`rx_*`)
 * is compared, so one the predictions do not name must not move. Exact
 * frames must add up to the delta exactly; open frames must be explainable
 * by picking one allowed outcome each. Transmit and other counters are
 * ignored: the stack may answer received frames.
 */
export function explainRxDelta(predictions: RxPrediction[], delta: Counters): RxDeltaVerdict {
  const expected: Counters = {};
  const open: Counters[][] = [];
  for (const p of predictions) {
    if (p.kind === "exact") addCounters(expected, p.counters);
    else open.push(p.outcomes);
  }
  const keys = new Set(Object.keys(delta).filter((k) => k.startsWith("rx_")));
  for (const k of Object.keys(expected)) keys.add(k);
  for (const o of open.flat()) for (const k of Object.keys(o)) keys.add(k);
  const names = [...keys].sort();
  const residual = names.map((k) => (delta[k] ?? 0) - (expected[k] ?? 0));
  const verdict = {
    exactFrames: predictions.length - open.length,
    openFrames: open.length,
    expected,
  };
  if (open.length === 0) {
    const problems = names.filter((_, i) => residual[i] !== 0).map((k) =>
      `${k} moved by ${delta[k] ?? 0}, expected ${expected[k] ?? 0}`
    );
    return { ok: problems.length === 0, ...verdict, problems };
  }
  const vectors = open.map((outs) => outs.map((o) => names.map((k) => o[k] ?? 0)));
  const found = searchOutcomes(vectors, residual);
  if (found === true) return { ok: true, ...verdict, problems: [] };
  const rest = names.map((k, i) => [k, residual[i]] as const).filter(([, v]) => v !== 0);
  return {
    ok: false,
    ...verdict,
    problems: [
      found === false
        ? `after the ${verdict.exactFrames} exactly predicted frames the counters still moved by ` +
          `${JSON.stringify(Object.fromEntries(rest))}, which no choice of allowed outcomes for ` +
          `the ${open.length} open frames explains`
        : `${open.length} open frames are too many to search; inject fewer unpredictable frames`,
    ],
  };
}

/**
 * Can one outcome per open frame (vectors over the same counter names) add
 * up to `residual` exactly? `undefined` when the search budget ran out.
 */
function searchOutcomes(frames: number[][][], residual: number[]): boolean | undefined {
  const dead = new Set<string>();
  let budget = OPEN_SEARCH_BUDGET;
  const go = (i: number, r: number[]): boolean | undefined => {
    if (i === frames.length) return r.every((v) => v === 0);
    const key = `${i}:${r.join(",")}`;
    if (dead.has(key)) return false;
    if (--budget < 0) return undefined;
    for (const o of frames[i]) {
      const next = r.map((v, k) => v - o[k]);
      if (next.some((v) => v < 0)) continue;
      const sub = go(i + 1, next);
      if (sub !== false) return sub;
    }
    dead.add(key);
    return false;
  };
  return go(0, residual);
}

/** Parse `aa:bb:cc:dd:ee:ff` into 6 bytes. */
export function macBytes(mac: string): Uint8Array {
  const parts = mac.split(":");
  if (parts.length !== 6 || parts.some((p) => !/^[0-9a-fA-F]{2}$/.test(p))) {
    throw new RangeError(`not a MAC address: ${mac}`);
  }
  return Uint8Array.from(parts.map((p) => parseInt(p, 16)));
}

/**
 * An IEEE 802.1Qbb PFC frame (60 bytes, padded) from `src` naming the
 * priorities in `prios`, each with `quanta` pause quanta.
 */
export function pfcFrame(src: string, prios: number[], quanta = 0xffff): Uint8Array {
  const f = new Uint8Array(60);
  f.set([0x01, 0x80, 0xc2, 0x00, 0x00, 0x01], 0);
  f.set(macBytes(src), 6);
  f.set([0x88, 0x08, 0x01, 0x01], 12);
  let cev = 0;
  for (const p of prios) cev |= 1 << p;
  f[16] = cev >> 8;
  f[17] = cev & 0xff;
  for (const p of prios) {
    f[18 + 2 * p] = quanta >> 8;
    f[19 + 2 * p] = quanta & 0xff;
  }
  return f;
}
