/**
 * What the lossless row takes from a flow on a lossy priority (PFC off, or
 * a violator's): only a server that gave up on its last message after the
 * client got everything.
 */
import assert from "node:assert/strict";
import { lastAckLost } from "../../harness/guest/incast.ts";

const figures =
  "3145728 bytes in 5.13 seconds = 4.90 Mbit/sec\n6 iters in 5.13 seconds = 855549.69 usec/iter\n";
const gaveUp =
  "Failed status transport retry counter exceeded (12) for wr_id 2\nparse WC failed 2\n";

Deno.test("a server that gave up after its client finished lost its last ACK", () => {
  assert.equal(
    lastAckLost({ serverCode: 1, serverOut: gaveUp, clientCode: 0, clientOut: figures }),
    true,
  );
});

Deno.test("anything else from a lossy flow is not", () => {
  const cases = [
    { serverCode: 1, serverOut: gaveUp, clientCode: 1, clientOut: gaveUp }, // the client failed too
    { serverCode: 1, serverOut: gaveUp, clientCode: 0, clientOut: "" }, // no figures: not finished
    {
      serverCode: 1,
      serverOut: "Failed status local protection error",
      clientCode: 0,
      clientOut: figures,
    },
    { serverCode: 0, serverOut: "", clientCode: 0, clientOut: figures }, // nothing to excuse
  ];
  for (const c of cases) assert.equal(lastAckLost(c), false, JSON.stringify(c));
});
