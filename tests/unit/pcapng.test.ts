/**
 * pcapng reader/writer. The hand-built blocks follow the layouts of
 * draft-ietf-opsawg-pcapng (section 4: SHB type 0x0A0D0D0A with byte-order
 * magic 0x1A2B3C4D; IDB type 1 with if_name = 2, if_tsresol = 9,
 * if_tsoffset = 14; EPB type 6; SPB type 3).
 */
import assert from "node:assert/strict";
import {
  PcapngFormatError,
  readPcapng,
  scanPcapngFile,
  writePcapng,
} from "../../harness/fabric/pcapng.ts";
import { prng, randBytes, randInt } from "../../harness/prng.ts";

/** Little helper that writes blocks in either byte order. */
class Blocks {
  private readonly parts: number[] = [];
  constructor(private readonly le: boolean) {}
  u8(...v: number[]): this {
    this.parts.push(...v);
    return this;
  }
  u16(v: number): this {
    return this.le ? this.u8(v & 0xff, v >>> 8) : this.u8(v >>> 8, v & 0xff);
  }
  u32(v: number): this {
    const b = [v >>> 24, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff];
    return this.u8(...(this.le ? b.reverse() : b));
  }
  block(type: number, body: number[]): this {
    const len = 12 + body.length;
    return this.u32(type).u32(len).u8(...body).u32(len);
  }
  body(): Blocks {
    return new Blocks(this.le);
  }
  bytes(): number[] {
    return this.parts;
  }
  build(): Uint8Array {
    return new Uint8Array(this.parts);
  }
}

function shb(le: boolean): number[] {
  const b = new Blocks(le).u32(0x1a2b3c4d).u16(1).u16(0).u32(0xffffffff).u32(0xffffffff);
  return b.bytes();
}

Deno.test("write then read returns the same interfaces, timestamps and bytes", () => {
  const rng = prng(5);
  const interfaces = [{ linkType: 1, name: "port0" }, { linkType: 247 }, {
    linkType: 1,
    name: "p2",
  }];
  const packets = Array.from({ length: 50 }, (_, i) => ({
    interfaceId: randInt(rng, 0, 2),
    timestampNs: 1_700_000_000_000_000_000n + BigInt(i) * 123_456_789n,
    data: randBytes(rng, randInt(rng, 0, 1600)),
  }));
  const r = readPcapng(writePcapng(interfaces, packets));
  assert.deepEqual(r.interfaces, [
    { linkType: 1, name: "port0", tsResolNs: 1n },
    { linkType: 247, tsResolNs: 1n },
    { linkType: 1, name: "p2", tsResolNs: 1n },
  ]);
  assert.deepEqual(r.packets, packets.map((p) => ({ ...p, origLen: p.data.length })));
});

Deno.test("writer emits a little-endian SHB, an IDB with if_tsresol 9 and EPBs padded to 4 bytes", () => {
  const out = writePcapng([{ linkType: 1 }], [{
    interfaceId: 0,
    timestampNs: 0x1_0000_0002n,
    data: new Uint8Array([0xaa]),
  }]);
  const dv = new DataView(out.buffer);
  assert.equal(dv.getUint32(0, true), 0x0a0d0d0a);
  assert.equal(dv.getUint32(8, true), 0x1a2b3c4d);
  // IDB at 28: type 1, length 28 (16 fixed + 8 for if_tsresol + 4 end-of-options)... + trailer
  assert.equal(dv.getUint32(28, true), 1);
  const idbLen = dv.getUint32(32, true);
  assert.equal(idbLen, 32);
  assert.equal(dv.getUint16(28 + 16, true), 9); // option code if_tsresol
  assert.equal(out[28 + 20], 9); // 10^-9
  const epb = 28 + idbLen;
  assert.equal(dv.getUint32(epb, true), 6);
  assert.equal(dv.getUint32(epb + 4, true), 36); // 28 + 4 (1 byte padded) + 4
  assert.equal(dv.getUint32(epb + 12, true), 1); // timestamp high
  assert.equal(dv.getUint32(epb + 16, true), 2); // timestamp low
  assert.equal(out.length, epb + 36);
});

Deno.test("reader accepts a big-endian section with the default microsecond resolution", () => {
  const b = new Blocks(false);
  b.block(0x0a0d0d0a, shb(false));
  b.block(1, b.body().u16(1).u16(0).u32(65535).u32(0).bytes()); // no options: microseconds
  b.block(6, b.body().u32(0).u32(0).u32(1_500_000).u32(4).u32(60).u8(1, 2, 3, 4).bytes());
  const r = readPcapng(b.build());
  assert.deepEqual(r.interfaces, [{ linkType: 1, tsResolNs: 1000n }]);
  assert.equal(r.packets.length, 1);
  assert.equal(r.packets[0].timestampNs, 1_500_000_000n);
  assert.deepEqual([...r.packets[0].data], [1, 2, 3, 4]);
  assert.equal(r.packets[0].origLen, 60);
});

Deno.test("reader skips simple packet blocks and unknown block types", () => {
  const b = new Blocks(true);
  b.block(0x0a0d0d0a, shb(true));
  b.block(1, b.body().u16(247).u16(0).u32(0).u16(9).u16(1).u8(9, 0, 0, 0).u32(0).bytes());
  b.block(3, b.body().u32(4).u8(9, 9, 9, 9).bytes()); // SPB
  b.block(0x0bad, b.body().u32(0xdeadbeef).bytes()); // unknown
  b.block(6, b.body().u32(0).u32(0).u32(42).u32(2).u32(2).u8(7, 8, 0, 0).bytes());
  const r = readPcapng(b.build());
  assert.equal(r.packets.length, 1);
  assert.equal(r.packets[0].timestampNs, 42n);
  assert.deepEqual([...r.packets[0].data], [7, 8]);
  assert.equal(r.interfaces[0].linkType, 247);
});

Deno.test("reader applies power-of-two resolution, if_tsoffset and per-section interface numbering", () => {
  const b = new Blocks(true);
  b.block(0x0a0d0d0a, shb(true));
  b.block(1, b.body().u16(1).u16(0).u32(0).bytes());
  // Second section, big-endian, resolution 2^-10 s, offset 5 s.
  const be = new Blocks(false);
  be.block(0x0a0d0d0a, shb(false));
  be.block(
    1,
    be.body().u16(247).u16(0).u32(0).u16(9).u16(1).u8(0x8a, 0, 0, 0).u16(14).u16(8).u32(0).u32(5)
      .u16(0).u16(0)
      .bytes(),
  );
  be.block(6, be.body().u32(0).u32(0).u32(1024).u32(0).u32(0).bytes());
  const r = readPcapng(new Uint8Array([...b.bytes(), ...be.bytes()]));
  assert.equal(r.interfaces.length, 2);
  assert.equal(r.interfaces[1].tsResolNs, 976562n); // 10^9 / 1024, rounded down
  assert.equal(r.packets[0].interfaceId, 1); // interface 0 of section 2 is interface 1 overall
  assert.equal(r.packets[0].timestampNs, 6_000_000_000n); // 1024 ticks = 1 s, plus 5 s
});

Deno.test("reader rejects a file cut inside a block, naming the offset", () => {
  const full = writePcapng([{ linkType: 1 }], [{
    interfaceId: 0,
    timestampNs: 1n,
    data: new Uint8Array(40),
  }]);
  assert.throws(() => readPcapng(full.subarray(0, full.length - 10)), PcapngFormatError);
  assert.throws(
    () => readPcapng(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12])),
    PcapngFormatError,
  );
});

Deno.test("reader rejects a packet that names an undescribed interface", () => {
  const b = new Blocks(true);
  b.block(0x0a0d0d0a, shb(true));
  b.block(6, b.body().u32(3).u32(0).u32(0).u32(0).u32(0).bytes());
  assert.throws(() => readPcapng(b.build()), /interface 3/);
});

Deno.test("writer refuses a packet on an interface it was not given", () => {
  assert.throws(
    () =>
      writePcapng([{ linkType: 1 }], [{
        interfaceId: 1,
        timestampNs: 0n,
        data: new Uint8Array(1),
      }]),
    RangeError,
  );
});

Deno.test("scanPcapngFile reads a file larger than its buffer as readPcapng reads it whole", async () => {
  const rng = prng(0x5ca9);
  const interfaces = [{ linkType: 1, name: "port1" }, { linkType: 247, name: "port2" }];
  const packets = [];
  let t = 0n;
  // ~10 MiB: blocks straddle the 4 MiB reads, and one packet (5 MiB) is larger than a read
  for (let i = 0; i < 700; i++) {
    const len = i === 350 ? 5 << 20 : randInt(rng, 0, 9000);
    packets.push({
      interfaceId: randInt(rng, 0, 1),
      timestampNs: t += 7n,
      data: randBytes(rng, len),
    });
  }
  const bytes = writePcapng(interfaces, packets);
  const path = await Deno.makeTempFile({ suffix: ".pcapng" });
  try {
    await Deno.writeFile(path, bytes);
    const whole = readPcapng(bytes);
    const seen: typeof whole.packets = [];
    const scan = await scanPcapngFile(path, (p) => seen.push(p));
    assert.equal(scan.bytes, bytes.length);
    assert.equal(scan.packets, packets.length);
    assert.deepEqual(scan.interfaces, whole.interfaces);
    assert.deepEqual(seen, whole.packets);

    // cut inside a packet's block: an error naming the block's offset, not a short read
    await Deno.writeFile(path, bytes.subarray(0, bytes.length - 100));
    await assert.rejects(() => scanPcapngFile(path, () => {}), PcapngFormatError);
    // a length field larger than the file: refused before any buffer of that size
    const huge = bytes.slice(0, 200);
    new DataView(huge.buffer).setUint32(huge.length - 200 + 28 + 4, 0xfffffff0, true);
    await Deno.writeFile(path, huge);
    await assert.rejects(() => scanPcapngFile(path, () => {}), /runs past the end of the file/);
  } finally {
    await Deno.remove(path);
  }
});
