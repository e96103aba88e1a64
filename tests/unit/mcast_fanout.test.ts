/** Parsing mcast_fanout's member-side output. */
import assert from "node:assert/strict";
import { parseMcastFanout } from "../../harness/guest/mcast_fanout.ts";
import { RowFailure } from "../../harness/matrix/row.ts";

/** rxe, 4 members, as the member side printed it. */
const FOUR = `members=4 size=64 count=20000
sender_sent=20000 sender_ns=1889693017
sender_frames_per_sec=10584
window_ns=1844255402
member0_received=14500 member0_dropped=5500 member0_out_of_order=0
member0_frames_per_sec=7862
member1_received=12892 member1_dropped=7108 member1_out_of_order=2
member1_frames_per_sec=6990
member2_received=10400 member2_dropped=9600 member2_out_of_order=0
member2_frames_per_sec=5639
member3_received=14954 member3_dropped=5046 member3_out_of_order=1
member3_frames_per_sec=8108
total_received=52746 total_dropped=27254
total_frames_per_sec=28600
bad=0 duplicates=0
PASS
`;

Deno.test("mcast_fanout output with PASS gives every member's figures", () => {
  assert.deepEqual(parseMcastFanout(FOUR), {
    members: 4,
    size: 64,
    count: 20000,
    senderFramesPerSec: 10584,
    memberFramesPerSec: [7862, 6990, 5639, 8108],
    memberDropped: [5500, 7108, 9600, 5046],
    outOfOrder: 3,
    totalFramesPerSec: 28600,
    totalDropped: 27254,
  });
});

Deno.test("mcast_fanout output without PASS gives nothing", () => {
  assert.equal(parseMcastFanout(FOUR.replace("PASS", "")), undefined);
  assert.equal(parseMcastFanout("FAIL: member 0 received nothing\n"), undefined);
});

Deno.test("a PASS missing a member's figure is refused", () => {
  assert.throws(
    () => parseMcastFanout(FOUR.replace("member3_frames_per_sec=8108", "")),
    (e: unknown) => e instanceof RowFailure && e.message.includes("member3_frames_per_sec"),
  );
});
