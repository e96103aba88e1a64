/** The capture gate's verdict on one segment: every way a capture can be wrong fails it. */
import assert from "node:assert/strict";
import {
  type FileVerdictInput,
  segmentProblems,
  type SegmentRecord,
} from "../../harness/oracle/wire_capture.ts";

/** A clean segment: 1000 frames received while capturing, 1004 written in all. */
function seg(over: Partial<SegmentRecord> = {}): SegmentRecord {
  return {
    name: "pingpong",
    path: "/tmp/pingpong.pcapng",
    start: { rxFrames: 5000, packets: 2 },
    end: { rxFrames: 6000, packets: 1002 },
    stopped: 1004,
    ...over,
  };
}

function file(over: Partial<FileVerdictInput> = {}): FileVerdictInput {
  return {
    fileFrames: 1004,
    rdmaFrames: 990,
    ipv4Frames: 1000,
    truncatedFrames: 0,
    violationCount: 0,
    byRule: {},
    reportPath: "/tmp/pingpong.pcapng.violations.json",
    files: [{ path: "/tmp/pingpong.pcapng", frames: 1004, bytes: 200_000 }],
    ...over,
  };
}

Deno.test("a clean segment has no problem", () => {
  assert.deepEqual(segmentProblems(seg(), "rdma", file()), []);
  assert.deepEqual(segmentProblems(seg(), "ipv4", file({ rdmaFrames: 0 })), []);
});

Deno.test("a failed capture_stop fails the segment", () => {
  const p = segmentProblems(
    seg({ stopped: undefined, stopError: "capture_stop failed: disk full" }),
    "rdma",
    file(),
  );
  assert.deepEqual(p, ["pingpong: capture_stop failed: disk full"]);
});

Deno.test("a file with fewer frames than the switch wrote fails the segment", () => {
  const p = segmentProblems(seg(), "rdma", file({ fileFrames: 1003 }));
  assert.deepEqual(p, ["pingpong: the file holds 1003 frames, the switch wrote 1004"]);
});

Deno.test("files that differ from what the switch wrote, in bytes or in number, fail the segment", () => {
  const wrote = [{ path: "/tmp/pingpong.pcapng", packets: 1004, bytes: 200_000 }];
  assert.deepEqual(segmentProblems(seg({ files: wrote }), "rdma", file()), []);
  const short = file({ files: [{ path: "/tmp/pingpong.pcapng", frames: 1004, bytes: 199_996 }] });
  assert.deepEqual(segmentProblems(seg({ files: wrote }), "rdma", short), [
    "pingpong: the files read were /tmp/pingpong.pcapng (1004 frames, 199996 bytes); " +
    "the switch wrote /tmp/pingpong.pcapng (1004 frames, 200000 bytes)",
  ]);
  const rolled = [...wrote, { path: "/tmp/pingpong.1.pcapng", packets: 0, bytes: 120 }];
  assert.equal(segmentProblems(seg({ files: rolled }), "rdma", file()).length, 1);
});

Deno.test("a capture that grew less than the switch's receive counter fails the segment", () => {
  const p = segmentProblems(seg({ end: { rxFrames: 6001, packets: 1002 } }), "rdma", file());
  assert.deepEqual(p, [
    "pingpong: the switch received 1001 frames while the capture ran, the capture recorded 1000",
  ]);
});

Deno.test("ib mode: MADs the SM sent while capturing count as recorded, no more, no less", () => {
  // 990 frames received, 10 SMPs/SA answers sent by the switch's SM: 1000 recorded
  const ib = seg({
    start: { rxFrames: 5000, packets: 2, smSent: 40 },
    end: { rxFrames: 5990, packets: 1002, smSent: 50 },
  });
  assert.deepEqual(segmentProblems(ib, "rdma", file()), []);
  const lost = seg({
    start: { rxFrames: 5000, packets: 2, smSent: 40 },
    end: { rxFrames: 5990, packets: 1001, smSent: 50 },
  });
  assert.deepEqual(segmentProblems(lost, "rdma", file({ fileFrames: 1003 }), undefined), [
    "pingpong: the switch received 990 frames and its SM sent 10 while the capture ran, " +
    "the capture recorded 999",
    "pingpong: the file holds 1003 frames, the switch wrote 1004",
  ]);
});

Deno.test("eth mode: PFC frames the switch sent while capturing count as recorded", () => {
  // 980 frames received, 20 XOFF/XON frames sent by the switch: 1000 recorded
  const eth = seg({
    start: { rxFrames: 5000, packets: 2, pfcSent: 4 },
    end: { rxFrames: 5980, packets: 1002, pfcSent: 24 },
  });
  assert.deepEqual(segmentProblems(eth, "rdma", file()), []);
  const lost = seg({
    start: { rxFrames: 5000, packets: 2, pfcSent: 4 },
    end: { rxFrames: 5980, packets: 1001, pfcSent: 24 },
  });
  assert.deepEqual(segmentProblems(lost, "rdma", file()), [
    "pingpong: the switch received 980 frames and it sent 20 PFC frames while the capture ran, " +
    "the capture recorded 999",
  ]);
});

Deno.test("missing counter samples fail the segment", () => {
  const p = segmentProblems(seg({ end: undefined }), "rdma", file());
  assert.deepEqual(p, ["pingpong: the switch's counters were not sampled at start and stop"]);
});

Deno.test("an empty capture, or one without the row's kind of frame, fails", () => {
  const empty = { fileFrames: 0, rdmaFrames: 0, ipv4Frames: 0 };
  const zero = seg({ start: { rxFrames: 1, packets: 0 }, end: { rxFrames: 1, packets: 0 } });
  assert.deepEqual(segmentProblems({ ...zero, stopped: 0 }, "ipv4", file(empty)), [
    "pingpong: the capture is empty",
  ]);
  assert.deepEqual(segmentProblems(seg(), "rdma", file({ rdmaFrames: 0 })), [
    "pingpong: the capture holds no RDMA frame",
  ]);
  assert.deepEqual(segmentProblems(seg(), "ipv4", file({ ipv4Frames: 0 })), [
    "pingpong: the capture holds no IPv4 frame",
  ]);
});

Deno.test("cut frames, violations and an unreadable file fail the segment", () => {
  assert.deepEqual(segmentProblems(seg(), "rdma", file({ truncatedFrames: 2 })), [
    "pingpong: 2 frames cut short",
  ]);
  const v = segmentProblems(
    seg(),
    "rdma",
    file({ violationCount: 3, byRule: { "psn-order": 3 } }),
  );
  assert.equal(v.length, 1);
  assert.match(v[0], /3 wire violations \(\{"psn-order":3\}\), see .*violations\.json/);
  assert.deepEqual(segmentProblems(seg(), "rdma", undefined, "not a pcapng file"), [
    "pingpong: the capture file cannot be read: not a pcapng file",
  ]);
});

Deno.test("a loopback capture (no-rdma) passes empty and fails on any RDMA frame", () => {
  const zero = seg({ start: { rxFrames: 1, packets: 0 }, end: { rxFrames: 1, packets: 0 } });
  const empty = { fileFrames: 0, rdmaFrames: 0, ipv4Frames: 0 };
  assert.deepEqual(segmentProblems({ ...zero, stopped: 0 }, "no-rdma", file(empty)), []);
  assert.deepEqual(segmentProblems(seg(), "no-rdma", file({ rdmaFrames: 0 })), []);
  assert.deepEqual(segmentProblems(seg(), "no-rdma", file({ rdmaFrames: 3 })), [
    "pingpong: 3 RDMA frames reached the wire, want none",
  ]);
});
