/**
 * The ICRC and VCRC models against real native-IB wire frames: Wireshark's
 * sample capture `infiniband.pcap` (an Endace DAG ERF capture of a
 * two-port InfiniBand link, 2008: directed-route SMInfo SMPs on VL15,
 * IPoIB multicast with a GRH, CM MADs, an SA PathRecord, RC SEND/ACK).
 * Every one of its 43 frames must carry exactly the ICRC `ibIcrc()` computes
 * (local and global masking) and the VCRC `ibVcrc()` computes, stored least
 * significant byte first; and the whole capture must pass the checker.
 *
 * The capture is public material fetched for the proof, not part of this
 * repository (docs/wire.md, "VCRC: the variant CRC", says where it comes
 * from and its SHA-256): point CNUAS_IB_SAMPLE_PCAP at a copy to run this
 * test; without one it is reported as ignored, not passed.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import * as r from "../../harness/models/rdma/mod.ts";

const SHA256 = "4aff5a8d5c37e6176cd75e477eefae2075f68b3498fbf9735a4ccef0796f5444";
const PATH = Deno.env.get("CNUAS_IB_SAMPLE_PCAP") ?? "";

function load(): Uint8Array | undefined {
  if (!PATH) return undefined;
  try {
    return Deno.readFileSync(PATH);
  } catch {
    return undefined;
  }
}

const file = load();

/** The ERF InfiniBand records (type 0x15) of a pcap with link type 197 (ERF). */
function erfIbFrames(b: Uint8Array): { data: Uint8Array; port: number }[] {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  assert.equal(dv.getUint32(0, true), 0xa1b2c3d4, "little-endian pcap");
  assert.equal(dv.getUint32(20, true), 197, "link type ERF");
  const out: { data: Uint8Array; port: number }[] = [];
  for (let o = 24; o + 16 <= b.length;) {
    const incl = dv.getUint32(o + 8, true);
    const rec = b.subarray(o + 16, o + 16 + incl);
    o += 16 + incl;
    assert.equal(rec[8] & 0x7f, 0x15, "ERF type 21, InfiniBand");
    assert.equal(rec[9] & 0x10, 0, "no RX error flagged by the capture card");
    const wlen = (rec[14] << 8) | rec[15];
    out.push({ data: rec.slice(16, 16 + wlen), port: rec[9] & 3 });
  }
  return out;
}

Deno.test({
  name: "real IB frames (Wireshark's infiniband.pcap): ICRC and VCRC (LSB first) match on all 43",
  ignore: file === undefined,
  fn() {
    const b = file!;
    assert.equal(createHash("sha256").update(b).digest("hex"), SHA256, "the documented capture");
    const frames = erfIbFrames(b);
    assert.equal(frames.length, 43);
    let global = 0;
    let vl15 = 0;
    let vcrcBigEndianWouldMatch = 0;
    for (const [i, { data: f }] of frames.entries()) {
      const end = ((f[4] & 7) * 256 + f[5]) * 4;
      assert.equal(f.length, end + 2, `frame ${i + 1}: PktLen*4 + VCRC`);
      if ((f[1] & 3) === r.LNH_IBA_GLOBAL) global++;
      if (f[0] >>> 4 === 15) vl15++;
      assert.equal(r.ibIcrc(f, end - 4), r.readIcrc(f, end - 4), `frame ${i + 1} ICRC`);
      const v = r.ibVcrc(f, end);
      assert.equal(v, r.readVcrc(f, end), `frame ${i + 1} VCRC, least significant byte first`);
      assert.deepEqual([...f.subarray(end)], [v & 0xff, v >>> 8]);
      if (v === ((f[end] << 8) | f[end + 1])) vcrcBigEndianWouldMatch++;
    }
    assert.equal(global, 6, "GRH frames exercise the global ICRC masking");
    assert.equal(vl15, 6, "VL15 SMPs exercise the VL masking");
    assert.equal(vcrcBigEndianWouldMatch, 0, "the other byte order matches no frame");
  },
});

Deno.test({
  name:
    "real IB frames: the whole capture passes the checker, MADs paired (SMInfo DR SMPs, PathRecord)",
  ignore: file === undefined,
  fn() {
    const frames = erfIbFrames(file!).map(({ data, port }) => ({
      data,
      linkType: r.LINKTYPE_INFINIBAND,
      interfaceId: port,
    }));
    const res = r.checkCapture(frames, { dedupeCopies: false });
    assert.deepEqual(res.violations, []);
    assert.equal(res.rdmaFrames, 43);
    assert.equal(res.madRequests, 4);
    assert.equal(res.madResponses, 4);
    assert.equal(res.unanswered, 0);
  },
});
