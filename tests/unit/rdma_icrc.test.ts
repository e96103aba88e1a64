/**
 * ICRC and VCRC of whole packets. Two public RoCEv2 packets with their ICRCs
 * (from secdev/scapy test/contrib/roce.uts: a CNP captured on a ConnectX-4 Lx,
 * and scapy's UC SEND_ONLY example), then vectors worked out by following the
 * specification's steps by hand (IBA vol. 1 §7.8.1, RoCEv2 annex A17.3.3,
 * docs/wire.md "ICRC: the invariant CRC"): build the masked byte string
 * explicitly and run zlib's CRC-32 (node:zlib, an implementation independent of
 * ours) over it.
 */
import assert from "node:assert/strict";
import * as zlib from "node:zlib";

// zlib's CRC-32 is the independent reference. Deno has it at run time, but
// the Node 18 typings that @types/ssh2 pulls into a shared type check lack
// it, so it is typed here.
const zlibCrc32 = (zlib as unknown as { crc32(data: Uint8Array): number }).crc32;
import * as r from "../../harness/models/rdma/mod.ts";
import { prng, randBytes } from "../../harness/prng.ts";

const rng = prng(31);
const le32 = (v: number) => [v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, (v >>> 24) & 0xff];

const CX4_CNP = r.hexToBytes(`
  e41d 2dab 2bc2 7cfe 9064 3b32 0800 45c2
  003c 718c 4000 4011 9161 0a00 1101 0a00
  1201 0000 12b7 0028 0000 8100 ffff 4000
  0118 0000 0000 0000 0000 0000 0000 0000
  0000 0000 0000 82fd 002a`);

const SCAPY_UC = r.hexToBytes(
  "248a07a8fa22248a07a8fa220800 45010040047840004011b4d5c0a80007c0a80007 c00012b7002caca2" +
    "2460ffff000000d300cf1710 4630818be28935d90e9a95505401be885e500000 78f353f3",
);

Deno.test("ICRC of the CNP captured on a ConnectX-4 Lx is the one on the wire (82 fd 00 2a)", () => {
  // scapy test/contrib/roce.uts, "RoCE CNP captured on ConnectX-4 Lx": pkt.icrc == 0x82fd002a
  // with scapy reading the four wire bytes big-endian, i.e. wire bytes 82 fd 00 2a.
  const p = r.decodeFrame(CX4_CNP, r.LINKTYPE_ETHERNET);
  assert.equal(p.op?.name, "CNP");
  assert.deepEqual([...CX4_CNP.subarray(-4)], le32(p.icrc!.computed));
  assert.equal(p.icrc!.wire, p.icrc!.computed);
});

Deno.test("ICRC of scapy's UC SEND_ONLY example is 78 f3 53 f3 on the wire", () => {
  // scapy test/contrib/roce.uts, "RoCE layer": pkt[BTH].icrc == 0x78f353f3 (read big-endian).
  const p = r.decodeFrame(SCAPY_UC, r.LINKTYPE_ETHERNET);
  assert.equal(p.op?.name, "UC_SEND_ONLY");
  assert.deepEqual([...SCAPY_UC.subarray(-4)], le32(p.icrc!.computed));
  assert.equal(p.ipv4ChecksumOk, true); // scapy asserts chksum 0xb4d5
});

/** RoCEv2 over IPv4, by the annex's steps, from the frame's own bytes. */
function handIcrcRoceV4(f: Uint8Array, ipOff: number): number {
  const ihl = (f[ipOff] & 0xf) * 4;
  const udpOff = ipOff + ihl;
  const udpLen = (f[udpOff + 4] << 8) | f[udpOff + 5];
  const ip = [...f.subarray(ipOff, udpOff)];
  ip[1] = 0xff; // Type of Service
  ip[8] = 0xff; // Time to Live
  ip[10] = 0xff; // Header Checksum
  ip[11] = 0xff;
  const udp = [...f.subarray(udpOff, udpOff + 8)];
  udp[6] = 0xff; // UDP checksum
  udp[7] = 0xff;
  const bth = [...f.subarray(udpOff + 8, udpOff + 20)];
  bth[4] = 0xff; // resv8a (FECN, BECN, reserved)
  const rest = [...f.subarray(udpOff + 20, udpOff + udpLen - 4)];
  const lrh = new Array(8).fill(0xff); // stands in for the LRH RoCEv2 does not have
  return zlibCrc32(new Uint8Array([...lrh, ...ip, ...udp, ...bth, ...rest])) >>> 0;
}

const WRITE_PAYLOAD = randBytes(rng, 13);

function sendFrame(extra: Partial<r.RoceFrameSpec> = {}): Uint8Array {
  return r.buildRoceFrame({
    srcIp: r.parseIpv4("192.168.1.10"),
    dstIp: r.parseIpv4("192.168.1.20"),
    tos: 0x68,
    ttl: 61,
    identification: 0x1234,
    udpChecksum: 0x5555,
    bth: {
      opcode: r.OP.RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,
      destQp: 0x1a2b3c,
      psn: 0xfffffe,
      becn: 1,
    },
    reth: { va: 0x7f00_1234_5678n, rkey: 0xabcdef01, dmaLen: 13 },
    immDt: 0xcafebabe,
    payload: WRITE_PAYLOAD,
    ...extra,
  });
}

Deno.test("RoCEv2/IPv4 ICRC equals the hand-masked CRC-32 and is stored least significant byte first", () => {
  const f = sendFrame();
  const want = handIcrcRoceV4(f, 14);
  assert.deepEqual([...f.subarray(-4)], le32(want));
  const p = r.decodeFrame(f, r.LINKTYPE_ETHERNET);
  assert.equal(p.icrc!.computed, want);
});

Deno.test("RoCEv2 ICRC ignores VLAN tags: the CRC starts at the IP header", () => {
  const f = sendFrame({ vlans: [{ tpid: 0x8100, pcp: 3, dei: 0, vid: 7 }] });
  assert.deepEqual([...f.subarray(-4)], le32(handIcrcRoceV4(f, 18)));
  assert.deepEqual(f.subarray(-4), sendFrame().subarray(-4));
});

Deno.test("RoCEv2/IPv6 ICRC masks traffic class, flow label and hop limit", () => {
  const src = r.hexToBytes("fe800000000000000200000000000001");
  const dst = r.hexToBytes("fe800000000000000200000000000002");
  const f = r.buildRoceFrame({
    srcIp: src,
    dstIp: dst,
    tos: 0xb8,
    flowLabel: 0xabcde,
    ttl: 3,
    bth: { opcode: r.OP.RC_SEND_ONLY, destQp: 7, psn: 9 },
    payload: randBytes(rng, 30),
  });
  const ipOff = 14;
  const ip = [...f.subarray(ipOff, ipOff + 40)];
  ip[0] = 0x6f; // version 6 kept, traffic class high nibble as ones
  ip[1] = 0xff; // rest of traffic class and flow label
  ip[2] = 0xff;
  ip[3] = 0xff;
  ip[7] = 0xff; // hop limit
  const udp = [...f.subarray(54, 62)];
  udp[6] = udp[7] = 0xff;
  const bth = [...f.subarray(62, 74)];
  bth[4] = 0xff;
  const want = zlibCrc32(
    new Uint8Array([...new Array(8).fill(0xff), ...ip, ...udp, ...bth, ...f.subarray(74, -4)]),
  ) >>>
    0;
  assert.deepEqual([...f.subarray(-4)], le32(want));
  const p = r.decodeFrame(f, r.LINKTYPE_ETHERNET);
  assert.equal(p.kind, "roce");
  assert.equal(p.icrc!.wire, want);
});

Deno.test("RoCEv2 ICRC does not change when a router rewrites TTL, TOS, checksums or ECN bits", () => {
  const f = sendFrame();
  const before = r.decodeFrame(f, 1).icrc!.computed;
  const g = f.slice();
  g[14 + 1] = 0x03; // TOS (ECN CE)
  g[14 + 8] = 1; // TTL
  r.refreshIpv4Checksum(g);
  g[34 + 6] = 0; // UDP checksum
  g[34 + 7] = 0;
  g[42 + 4] = 0x80; // FECN
  assert.equal(r.decodeFrame(g, 1).icrc!.computed, before);
});

Deno.test("RoCEv2 ICRC changes when any covered byte changes", () => {
  const f = sendFrame();
  const before = r.decodeFrame(f, 1).icrc!.computed;
  for (
    const off of [14 + 12, 14 + 9, 34 + 0, 34 + 2, 42 + 0, 42 + 5, 42 + 11, 54 + 3, f.length - 5]
  ) {
    const g = f.slice();
    g[off] ^= 0x01;
    assert.notEqual(
      r.decodeFrame(g, 1, { anyUdpPort: true }).icrc?.computed,
      before,
      `byte ${off}`,
    );
  }
});

/** Native IB, local packet: the real LRH with VL as ones, BTH resv8a as ones, no 0xFF prefix. */
function handIcrcIbLocal(f: Uint8Array, icrcOff: number): number {
  const lrh = [...f.subarray(0, 8)];
  lrh[0] |= 0xf0; // VL
  const bth = [...f.subarray(8, 20)];
  bth[4] = 0xff;
  return zlibCrc32(new Uint8Array([...lrh, ...bth, ...f.subarray(20, icrcOff)])) >>> 0;
}

Deno.test("native IB local-packet ICRC covers the LRH with VL as ones; VCRC covers LRH..ICRC", () => {
  const f = r.buildIbFrame({
    lrh: { dlid: 0x0002, slid: 0x0001, sl: 5, vl: 3 },
    bth: { opcode: r.OP.RC_SEND_FIRST, destQp: 0x42, psn: 77, fecn: 1 },
    payload: randBytes(rng, 256),
  });
  const icrcOff = f.length - 6;
  assert.deepEqual([...f.subarray(icrcOff, icrcOff + 4)], le32(handIcrcIbLocal(f, icrcOff)));
  assert.equal(r.readVcrc(f, icrcOff + 4), r.crc16Vcrc(f.subarray(0, icrcOff + 4)));
  const p = r.decodeFrame(f, r.LINKTYPE_INFINIBAND);
  assert.equal(p.kind, "ib");
  assert.equal(p.icrc!.wire, p.icrc!.computed);
  assert.equal(p.vcrc!.wire, p.vcrc!.computed);
  assert.equal(p.lrh!.pktLen * 4, icrcOff + 4);
});

Deno.test("a switch changing VL keeps the ICRC but needs a new VCRC", () => {
  const f = r.buildIbFrame({
    lrh: { dlid: 2, slid: 1, vl: 0 },
    bth: { opcode: r.OP.RC_SEND_ONLY, destQp: 9, psn: 1 },
    payload: randBytes(rng, 8),
  });
  const g = f.slice();
  g[0] = (g[0] & 0x0f) | 0x70; // VL 7
  const p = r.decodeFrame(g, r.LINKTYPE_INFINIBAND);
  assert.equal(p.icrc!.wire, p.icrc!.computed);
  assert.notEqual(p.vcrc!.wire, p.vcrc!.computed);
  r.refreshCrcs(g, r.LINKTYPE_INFINIBAND);
  const q = r.decodeFrame(g, r.LINKTYPE_INFINIBAND);
  assert.equal(q.vcrc!.wire, q.vcrc!.computed);
});

Deno.test("native IB global-packet ICRC replaces the whole LRH with ones and masks GRH TClass, FlowLabel, HopLmt", () => {
  // IBA vol. 1 §7.8.1 (and Shanley, "InfiniBand Network Architecture", ch. 25, "Included/Excluded
  // Fields for a Global Packet"): a global packet's ICRC covers the GRH's IPVer, PayLen, NxtHdr,
  // SGID and DGID, not the LRH, which routers rebuild.
  const f = r.buildIbFrame({
    lrh: { dlid: 0x10, slid: 0x20, sl: 1, vl: 1 },
    grh: {
      sgid: r.hexToBytes("fe800000000000000002c90300000001"),
      dgid: r.hexToBytes("fe800000000000000002c90300000002"),
      tClass: 0x12,
      flowLabel: 0x34567,
      hopLmt: 9,
    },
    bth: { opcode: r.OP.UD_SEND_ONLY, destQp: 0x55, psn: 3 },
    deth: { qkey: 0x11111111, reserved8: 0, srcQp: 0x66 },
    payload: randBytes(rng, 40),
  });
  const icrcOff = f.length - 6;
  const grh = [...f.subarray(8, 48)];
  grh[0] |= 0x0f;
  grh[1] = grh[2] = grh[3] = 0xff;
  grh[7] = 0xff;
  const bth = [...f.subarray(48, 60)];
  bth[4] = 0xff;
  const want = zlibCrc32(
    new Uint8Array([...new Array(8).fill(0xff), ...grh, ...bth, ...f.subarray(60, icrcOff)]),
  ) >>> 0;
  assert.deepEqual([...f.subarray(icrcOff, icrcOff + 4)], le32(want));
  const g = f.slice();
  g[3] ^= 0xff; // DLID rewritten by a router: ICRC unchanged
  g[15] = 1; // hop limit decremented
  assert.equal(r.ibIcrc(g, icrcOff), want);
});
