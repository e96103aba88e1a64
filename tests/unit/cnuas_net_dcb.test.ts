import assert from "node:assert/strict";
import { countIn, frameDscp, isPfcFrame, silenceAfter } from "../../harness/guest/cnuas_net_dcb.ts";
import { pfcFrame } from "../../harness/models/cnuas_net_rx.ts";

/** An untagged IPv4 frame with `tos` in its header. */
function ipv4(tos: number): Uint8Array {
  const f = new Uint8Array(60);
  f.set([0x08, 0x00, 0x45, tos], 12);
  return f;
}

Deno.test("frameDscp reads the DSCP of an untagged IPv4 frame (the top six TOS bits)", () => {
  assert.equal(frameDscp(ipv4(26 << 2)), 26);
  assert.equal(frameDscp(ipv4((26 << 2) | 1)), 26);
  assert.equal(frameDscp(ipv4(0)), 0);
});

Deno.test("frameDscp ignores anything that is not IPv4", () => {
  const f = ipv4(26 << 2);
  f[14] = 0x65; // version 6 in an IPv4 EtherType
  assert.equal(frameDscp(f), undefined);
  assert.equal(frameDscp(pfcFrame("02:00:00:00:00:01", [3])), undefined);
  assert.equal(frameDscp(new Uint8Array(20)), undefined);
});

Deno.test("isPfcFrame is true for 802.1Qbb frames only, not 802.3x PAUSE", () => {
  assert.equal(isPfcFrame(pfcFrame("02:00:00:00:00:01", [3], 0)), true);
  const pause = pfcFrame("02:00:00:00:00:01", []);
  pause[15] = 0x01;
  pause[14] = 0x00;
  assert.equal(isPfcFrame(pause), false);
  assert.equal(isPfcFrame(ipv4(0)), false);
});

Deno.test("silenceAfter measures a silence from the instant when it began before it", () => {
  const t = [0n, 10n, 100n, 110n].map((x) => x * 1_000_000n);
  assert.equal(silenceAfter(t, 40_000_000n, 5_000_000n).ms, 60);
  assert.equal(silenceAfter(t, 5_000_000n, 5_000_000n).ms, 90);
});

Deno.test("silenceAfter ignores silences that begin after the window", () => {
  const t = [0n, 1n, 2n, 100n].map((x) => x * 1_000_000n);
  assert.equal(silenceAfter(t, 0n, 1_500_000n).ms, 1);
  assert.equal(silenceAfter([], 0n, 1n).ms, 0);
});

Deno.test("countIn counts a half-open window", () => {
  assert.equal(countIn([1n, 2n, 3n, 4n], 2n, 4n), 2);
});
