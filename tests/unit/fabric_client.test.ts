/**
 * The typed switch operations, without a daemon: each builds the request
 * docs/switch.md documents and reads the reply's fields into camelCase.
 */
import assert from "node:assert/strict";
import { FabricClient, FabricControlError } from "../../harness/fabric/client.ts";
import { readLines } from "../../harness/exec.ts";

/** Records every request and answers from a table keyed by op. */
class FakeSwitch extends FabricClient {
  readonly sent: Record<string, unknown>[] = [];
  constructor(readonly replies: Record<string, Record<string, unknown>>) {
    super();
  }
  override control(request: Record<string, unknown>): Promise<Record<string, unknown>> {
    this.sent.push(request);
    return Promise.resolve(this.replies[String(request.op)] ?? { ok: true });
  }
}

Deno.test("fabric client: link_down and link_up name the port they were given", async () => {
  const sw = new FakeSwitch({});
  await sw.linkDown(3);
  await sw.linkUp(3);
  assert.deepEqual(sw.sent, [{ op: "link_down", port: 3 }, { op: "link_up", port: 3 }]);
});

Deno.test("fabric client: ports and stats come back camelCase, drops complete", async () => {
  const sw = new FakeSwitch({
    ports: {
      ok: true,
      ports: [
        { port: 2, state: "up", queue_len: 1, gpu_id: 17, rx_frames: 5, drops: { loopback: 1 } },
        { port: 4, state: "down" },
      ],
    },
    stats: { ok: true, mode: "link", max_ports: 64, ports_up: 1, capture: { active: false } },
  });
  const [a, b] = await sw.ports();
  assert.equal(a.gpuId, 17);
  assert.equal(a.queueLen, 1);
  assert.equal(a.rxFrames, 5);
  assert.equal(a.drops.loopback, 1);
  assert.equal(a.drops.runt, 0);
  assert.equal(b.gpuId, undefined);
  assert.equal(b.state, "down");
  const stats = await sw.stats();
  assert.equal(stats.maxPorts, 64);
  assert.equal(stats.portsUp, 1);
});

Deno.test("fabric client: a refused request throws FabricControlError with the reply", async () => {
  const sw = new FakeSwitch({ link_down: { ok: false, error: "port 99 out of range" } });
  const e = await sw.linkDown(99).catch((x: unknown) => x);
  assert.ok(e instanceof FabricControlError);
  assert.equal(e.reply.error, "port 99 out of range");
  assert.match(e.message, /link_down: port 99 out of range/);
});

Deno.test("fabric client: inject sends the frame as lowercase hex", async () => {
  const sw = new FakeSwitch({});
  await sw.inject(1, new Uint8Array([0x0a, 0xff]), "egress");
  assert.deepEqual(sw.sent, [{ op: "inject", port: 1, direction: "egress", hex: "0aff" }]);
});

Deno.test("readLines: lines split across chunks, UTF-8 split mid-character, tail dropped", async () => {
  const bytes = new TextEncoder().encode('{"a":"é"}\n\nsecond\nunfinished');
  // Cut inside the two-byte "é" and inside the first newline-delimited line.
  const cuts = [3, 7, 12, bytes.length];
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      let from = 0;
      for (const to of cuts) {
        c.enqueue(bytes.slice(from, to));
        from = to;
      }
      c.close();
    },
  });
  const lines: string[] = [];
  for await (const l of readLines(stream)) lines.push(l);
  assert.deepEqual(lines, ['{"a":"é"}', "", "second"]);
});

Deno.test("fabric client: sm() reads ports, groups and MAD counters into camelCase", async () => {
  const sw = new FakeSwitch({
    sm: {
      ok: true,
      enabled: true,
      lid: 1,
      subnet_prefix: "fe80:0000:0000:0000",
      sweeps: 7,
      ports: [
        { port: 1, state: "active", guid: "0002c90300a0b001", lid: 2, node_desc: "n1" },
        { port: 4, state: "unresponsive" },
      ],
      groups: [{
        mgid: "ff12:401b:ffff:0000:0000:0000:ffff:ffff",
        mlid: 0xc000,
        qkey: 0xb1b,
        ports: [1],
      }],
      mads: { sent: 9, received: 8, timeouts: 4, retries: 3, bad: 1, sa_requests: 2, sa_errors: 1 },
    },
  });
  const s = await sw.sm();
  assert.deepEqual(sw.sent, [{ op: "sm" }]);
  assert.equal(s.subnetPrefix, "fe80:0000:0000:0000");
  assert.deepEqual(s.ports[0], {
    port: 1,
    state: "active",
    guid: "0002c90300a0b001",
    lid: 2,
    nodeDesc: "n1",
  });
  assert.equal(s.ports[1].lid, undefined);
  assert.equal(s.groups[0].mlid, 0xc000);
  assert.equal(s.mads.saRequests, 2);
  assert.equal(s.mads.saErrors, 1);
});
