import assert from "node:assert/strict";
import { readPcapng } from "../../harness/fabric/pcapng.ts";
import { prng, randBytes, randInt } from "../../harness/prng.ts";
import { compareDeliveries, connectPort, ibFrame, sendAndCheck } from "./traffic.ts";
import { withRig } from "./rig.ts";

const LINKTYPE_ETHERNET = 1;
const LINKTYPE_INFINIBAND = 247;

async function tempFile(name: string): Promise<{ path: string; cleanup: () => Promise<void> }> {
  const dir = await Deno.makeTempDir({ prefix: "sw-cap-" });
  return { path: `${dir}/${name}`, cleanup: () => Deno.remove(dir, { recursive: true }) };
}

/** Packets of a capture grouped by interface name, in file order. */
function byPort(bytes: Uint8Array): Map<string, { data: Uint8Array; origLen: number }[]> {
  const cap = readPcapng(bytes);
  const out = new Map<string, { data: Uint8Array; origLen: number }[]>();
  for (const p of cap.packets) {
    const name = cap.interfaces[p.interfaceId].name ?? `#${p.interfaceId}`;
    out.set(name, [...(out.get(name) ?? []), { data: p.data, origLen: p.origLen }]);
  }
  return out;
}

Deno.test("capture: every frame received is recorded once on its port's interface, in order", async () => {
  const { path, cleanup } = await tempFile("eth.pcapng");
  try {
    await withRig("eth", 4, async (rig) => {
      await rig.fabric.startCapture(path);
      const rng = prng(0xca9);
      const sent = new Map<string, Uint8Array[]>();
      const record = (port: number, f: Uint8Array) =>
        sent.set(`port${port}`, [...(sent.get(`port${port}`) ?? []), f]);
      for (let i = 0; i < 300; i++) {
        const port = randInt(rng, 1, 4);
        const f = randBytes(rng, randInt(rng, 0, 300));
        if (f.length > 6) f[6] &= 0xfe;
        await sendAndCheck(rig, port, [f], `frame ${i}`);
        record(port, f);
      }
      const injected = randBytes(rng, 60);
      const d = rig.model.ingress(2, injected);
      await rig.fabric.inject(2, injected, "ingress");
      compareDeliveries(rig, new Map(d.egress.map((p) => [p, [injected]])), "ingress injection");
      record(2, injected);
      const out = randBytes(rng, 60);
      await rig.fabric.inject(3, out, "egress");
      rig.model.egress(3, out);
      compareDeliveries(rig, new Map([[3, [out]]]), "egress injection");
      record(3, out);
      // A port that joins during the capture gets its interface on the way.
      const late = await connectPort(rig);
      const lateFrame = randBytes(rng, 64);
      await sendAndCheck(rig, late, [lateFrame], "late port");
      record(late, lateFrame);
      const stopped = await rig.fabric.stopCapture();
      assert.equal(stopped.packets, 303);

      const bytes = await Deno.readFile(path);
      const cap = readPcapng(bytes);
      assert.deepEqual(cap.interfaces.map((i) => i.name), [
        "port1",
        "port2",
        "port3",
        "port4",
        "port5",
      ]);
      for (const i of cap.interfaces) {
        assert.equal(i.linkType, LINKTYPE_ETHERNET);
        assert.equal(i.tsResolNs, 1n);
      }
      const got = byPort(bytes);
      for (const [name, frames] of sent) {
        const g = got.get(name) ?? [];
        assert.equal(g.length, frames.length, `${name}: packet count`);
        frames.forEach((f, k) => assert.deepEqual(g[k].data, f, `${name} packet ${k}`));
      }
      // epb_flags: the egress injection is the one outbound packet, the rest inbound
      const outbound = cap.packets.filter((p) => p.direction === "outbound");
      assert.equal(outbound.length, 1, "one outbound packet");
      assert.deepEqual(outbound[0].data, out);
      assert.equal(cap.packets.filter((p) => p.direction === "inbound").length, 302);
      // the counters in the capture_stop reply are the ports' at that instant
      const now = await rig.fabric.ports();
      for (const p of stopped.ports) {
        assert.equal(p.rxFrames, now.find((q) => q.port === p.port)?.rxFrames);
      }
      for (let k = 1; k < cap.packets.length; k++) {
        assert.ok(cap.packets[k].timestampNs >= cap.packets[k - 1].timestampNs, "time order");
      }
    });
  } finally {
    await cleanup();
  }
});

Deno.test("capture: an oversize frame is recorded truncated with its original length", async () => {
  const { path, cleanup } = await tempFile("big.pcapng");
  try {
    await withRig("eth", 2, async (rig) => {
      await rig.fabric.startCapture(path);
      await sendAndCheck(rig, 1, [new Uint8Array(9300)], "oversize");
      await rig.fabric.stopCapture();
      const [p] = readPcapng(await Deno.readFile(path)).packets;
      assert.equal(p.origLen, 9300);
      assert.ok(p.data.length < 9300 && p.data.length > 9216);
    });
  } finally {
    await cleanup();
  }
});

Deno.test("capture: InfiniBand fabrics record with LINKTYPE_INFINIBAND", async () => {
  const { path, cleanup } = await tempFile("ib.pcapng");
  try {
    await withRig("ib", 2, async (rig) => {
      await rig.fabric.startCapture(path);
      const lrh = ibFrame(9, 18);
      await sendAndCheck(rig, 1, [lrh], "ib frame");
      await rig.fabric.stopCapture();
      const cap = readPcapng(await Deno.readFile(path));
      assert.deepEqual(cap.interfaces.map((i) => i.linkType), [
        LINKTYPE_INFINIBAND,
        LINKTYPE_INFINIBAND,
      ]);
      assert.deepEqual(cap.packets.map((p) => p.data), [lrh]);
    });
  } finally {
    await cleanup();
  }
});

Deno.test("capture: SIGTERM flushes a running capture to a complete file", async () => {
  const { path, cleanup } = await tempFile("term.pcapng");
  try {
    const frames: Uint8Array[] = [];
    await withRig("link", 2, async (rig) => {
      await rig.fabric.startCapture(path);
      for (let i = 0; i < 50; i++) {
        const f = new Uint8Array(100).fill(i);
        frames.push(f);
        await sendAndCheck(rig, 1 + (i % 2), [f], `frame ${i}`);
      }
    }); // closes the fabric with SIGTERM, capture still running
    const cap = readPcapng(await Deno.readFile(path));
    assert.deepEqual(cap.packets.map((p) => p.data), frames);
  } finally {
    await cleanup();
  }
});

Deno.test("capture: starting a second capture is refused while one runs", async () => {
  const { path, cleanup } = await tempFile("one.pcapng");
  try {
    await withRig("eth", 1, async (rig) => {
      await rig.fabric.startCapture(path);
      const r = await rig.fabric.control({ op: "capture_start", path: path + ".2" });
      assert.equal(r.ok, false);
      assert.match(String(r.error), /capture_stop/);
      await rig.fabric.stopCapture();
    });
  } finally {
    await cleanup();
  }
});

Deno.test("capture: with a file limit it rolls over to numbered files, no frame lost or doubled", async () => {
  const { path, cleanup } = await tempFile("roll.pcapng");
  const limit = 64 << 10;
  try {
    await withRig("eth", 3, async (rig) => {
      await rig.fabric.startCapture(path, { fileBytes: limit });
      const rng = prng(0x7011);
      const sent: { port: string; data: Uint8Array }[] = [];
      for (let i = 0; i < 120; i++) {
        const port = randInt(rng, 1, 3);
        const f = randBytes(rng, randInt(rng, 1000, 3000));
        f[0] &= 0xfe; // unicast: one frame in per frame sent
        await sendAndCheck(rig, port, [f], `frame ${i}`);
        sent.push({ port: `port${port}`, data: f });
      }
      // a port that joins in a later file gets its interface there, the earlier ids unchanged
      const late = await connectPort(rig);
      const lateFrame = randBytes(rng, 64);
      await sendAndCheck(rig, late, [lateFrame], "late port");
      sent.push({ port: `port${late}`, data: lateFrame });
      const stopped = await rig.fabric.stopCapture();

      const stem = path.slice(0, -".pcapng".length);
      assert.ok(stopped.files.length >= 4, `${stopped.files.length} files for ~240 KB`);
      assert.deepEqual(
        stopped.files.map((f) => f.path),
        [path, ...stopped.files.slice(1).map((_, k) => `${stem}.${k + 1}.pcapng`)],
      );
      assert.equal(stopped.packets, sent.length);
      const got: { port: string; data: Uint8Array }[] = [];
      for (const f of stopped.files) {
        const bytes = await Deno.readFile(f.path);
        assert.equal(bytes.length, f.bytes, `${f.path}: the size the switch reported`);
        assert.ok(f.bytes <= limit, `${f.path}: ${f.bytes} bytes, over the ${limit} limit`);
        const cap = readPcapng(bytes);
        assert.equal(cap.packets.length, f.packets, `${f.path}: packets`);
        assert.ok(cap.packets.length > 0, `${f.path}: empty`);
        assert.deepEqual(
          cap.interfaces.map((i) => i.name),
          ["port1", "port2", "port3", `port${late}`].slice(0, cap.interfaces.length),
          `${f.path}: interfaces in id order`,
        );
        for (const p of cap.packets) {
          got.push({ port: cap.interfaces[p.interfaceId].name ?? "?", data: p.data });
        }
      }
      assert.deepEqual(got, sent);
    });
  } finally {
    await cleanup();
  }
});

Deno.test("capture: a file limit below 64 KiB is refused and nothing starts", async () => {
  const { path, cleanup } = await tempFile("small.pcapng");
  try {
    await withRig("eth", 1, async (rig) => {
      const r = await rig.fabric.control({ op: "capture_start", path, file_bytes: 1000 });
      assert.equal(r.ok, false);
      assert.match(String(r.error), /file_bytes/);
      assert.equal((await rig.fabric.stats()).capture?.active, false);
    });
  } finally {
    await cleanup();
  }
});
