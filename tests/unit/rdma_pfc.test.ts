/**
 * The checker's PFC rule and census (IEEE 802.1Qbb, 802.3 annex 31D): a
 * well-formed XOFF and XON are counted per priority and pass; each broken
 * field is caught by rule `pfc` and by nothing else; other MAC Control
 * opcodes are counted, not judged.
 */
import assert from "node:assert/strict";
import * as r from "../../harness/models/rdma/mod.ts";

/** A PFC frame from 02:00:00:00:00:05 naming `prios` with `quanta` (60 bytes). */
function pfcFrame(prios: number[], quanta: number): Uint8Array {
  const f = new Uint8Array(r.PFC_FRAME_LEN);
  f.set([0x01, 0x80, 0xc2, 0x00, 0x00, 0x01, 0x02, 0, 0, 0, 0, 0x05, 0x88, 0x08, 0x01, 0x01]);
  let cev = 0;
  for (const p of prios) {
    cev |= 1 << p;
    r.wr16(f, 18 + 2 * p, quanta);
  }
  r.wr16(f, 16, cev);
  return f;
}

function check(...frames: Uint8Array[]): r.CheckResult {
  return r.checkCapture(frames.map((data, i) => ({ data, linkType: 1, timestampNs: BigInt(i) })));
}

Deno.test("pfc: an XOFF for 3 and 5 and an XON for 3 pass and are counted per priority", () => {
  const res = check(pfcFrame([3, 5], 0xffff), pfcFrame([3], 0));
  assert.equal(res.violationCount, 0, JSON.stringify(res.violations));
  assert.equal(res.pfc.frames, 2);
  assert.deepEqual(res.pfc.xoff, [0, 0, 0, 1, 0, 1, 0, 0]);
  assert.deepEqual(res.pfc.xon, [0, 0, 0, 1, 0, 0, 0, 0]);
  assert.equal(res.otherFrames, 2);
});

Deno.test("pfc: a time for a priority outside the vector is ignored, as the receiver does", () => {
  const f = pfcFrame([3], 100);
  r.wr16(f, 18 + 2 * 6, 0x1234);
  const res = check(f);
  assert.equal(res.violationCount, 0);
  assert.equal(res.pfc.xoff[6], 0);
});

Deno.test("pfc: each broken field is a pfc violation, and only that", () => {
  const cases: [string, (f: Uint8Array) => Uint8Array][] = [
    ["short", (f) => f.slice(0, 40)],
    ["unicast destination", (f) => (f[5] = 0x02, f)],
    ["group source", (f) => (f[6] = 0x03, f)],
    ["reserved vector octet", (f) => (f[16] = 0x01, f)],
    ["reserved pad byte", (f) => (f[59] = 0x7f, f)],
  ];
  for (const [what, mutate] of cases) {
    const res = check(mutate(pfcFrame([3], 0xffff)));
    assert.deepEqual(Object.keys(res.byRule), ["pfc"], what);
    assert.equal(res.byRule.pfc, 1, what);
  }
});

Deno.test("pfc: 802.3x PAUSE and unknown MAC Control opcodes are counted, not judged", () => {
  const pause = pfcFrame([], 0);
  pause[15] = 0x01;
  pause[14] = 0x00;
  const unknown = pfcFrame([], 0);
  unknown[15] = 0x07;
  const res = check(pause, unknown);
  assert.equal(res.violationCount, 0);
  assert.equal(res.pfc.frames, 0);
  assert.equal(res.pfc.otherMacControl, 2);
});

Deno.test("pfc: identical PFC frames (one XOFF to two ports, a refresh) each count", () => {
  const f = pfcFrame([3], 0xffff);
  const res = check(f, f.slice(), f.slice());
  assert.equal(res.pfc.frames, 3);
  assert.equal(res.pfc.xoff[3], 3);
  assert.equal(res.duplicateCopies, 0);
});
