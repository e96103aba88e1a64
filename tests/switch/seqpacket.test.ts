import assert from "node:assert/strict";
import {
  SeqpacketClosedError,
  SeqpacketServer,
  SeqpacketSocket,
  SeqpacketTimeoutError,
} from "../../harness/fabric/seqpacket.ts";

async function withPair(
  fn: (a: SeqpacketSocket, b: SeqpacketSocket) => Promise<void> | void,
): Promise<void> {
  const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "sp-test-" });
  const server = SeqpacketServer.listen(`${dir}/s.sock`);
  const a = SeqpacketSocket.connect(`${dir}/s.sock`);
  const b = server.accept(2000);
  try {
    assert.ok(b, "accept timed out");
    await fn(a, b);
  } finally {
    a.close();
    b?.close();
    server.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("seqpacket: datagram boundaries are kept, empty ones included", async () => {
  await withPair((a, b) => {
    const frames = [new Uint8Array([1]), new Uint8Array(0), new Uint8Array(65536).fill(7)];
    for (const f of frames) a.send(f);
    for (const f of frames) assert.deepEqual(b.recv(1000), f);
    assert.equal(b.recv(0), null);
  });
});

Deno.test("seqpacket: recv returns null on timeout and recvAsync resolves with a frame", async () => {
  await withPair(async (a, b) => {
    assert.equal(b.recv(20), null);
    const pending = b.recvAsync(2000);
    a.send(new Uint8Array([9, 9]));
    assert.deepEqual(await pending, new Uint8Array([9, 9]));
  });
});

Deno.test("seqpacket: the peer's close is reported, not mistaken for an empty frame", async () => {
  await withPair((a, b) => {
    a.send(new Uint8Array([5]));
    a.close();
    assert.deepEqual(b.recv(1000), new Uint8Array([5]));
    assert.throws(() => b.recv(1000), SeqpacketClosedError);
  });
});

Deno.test("seqpacket: send times out with a clear error when the peer does not read", async () => {
  await withPair((a) => {
    const big = new Uint8Array(60000);
    assert.throws(() => {
      for (let i = 0; i < 10000; i++) a.send(big, 50);
    }, SeqpacketTimeoutError);
  });
});

Deno.test("seqpacket: accept returns null when nobody connects in time", async () => {
  const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "sp-test-" });
  const server = SeqpacketServer.listen(`${dir}/s.sock`);
  try {
    assert.equal(server.accept(20), null);
  } finally {
    server.close();
    await Deno.remove(dir, { recursive: true });
  }
});
