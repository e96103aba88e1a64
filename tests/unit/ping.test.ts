import assert from "node:assert/strict";
import { pingCommand, pingVerdict } from "../../harness/guest/ping.ts";

const reply = (seq: number, ms = 0.5) =>
  `64 bytes from 10.0.0.1: icmp_seq=${seq} ttl=64 time=${ms} ms`;
const summary = (sent: number, got: number) =>
  `--- 10.0.0.1 ping statistics ---\n${sent} packets transmitted, ${got} received, ` +
  `${Math.round(100 * (sent - got) / sent)}% packet loss, time 900ms\n` +
  `rtt min/avg/max/mdev = 0.400/0.612/1.100/0.200 ms`;

Deno.test("pingCommand: a deadline, so a late reply is waited for", () => {
  assert.equal(pingCommand("10.0.0.1", { count: 5 }), "ping -n -c 5 -i 0.2 -w 16 10.0.0.1");
  assert.equal(
    pingCommand("10.0.0.2", { count: 3, intervalSec: 1, size: 8972, dontFragment: true }),
    "ping -n -c 3 -i 1 -w 18 -M do -s 8972 10.0.0.2",
  );
});

Deno.test("pingVerdict: late replies and the extra probes in flight are not loss", () => {
  // probe 2 answered after 3 s: ping sent probes 6..8 meanwhile and left with them unanswered
  const out = [1, 3, 4, 5].map((s) => reply(s)).join("\n") + "\n" + reply(2, 3000) + "\n" +
    summary(8, 5);
  const v = pingVerdict(out, 5);
  assert.deepEqual(v.missing, []);
  assert.equal(v.rttAvgMs, 0.612);
});

Deno.test("pingVerdict: a lost probe is named, though later probes made the count up", () => {
  const out = [1, 2, 4, 5, 6].map((s) => reply(s)).join("\n") + "\n" + summary(6, 5);
  assert.deepEqual(pingVerdict(out, 5).missing, [3]);
  assert.deepEqual(pingVerdict("ping: connect: Network is unreachable", 2).missing, [1, 2]);
});
