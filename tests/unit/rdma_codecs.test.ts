/**
 * Header codecs of the RDMA wire oracle: known bytes from public sources,
 * encode/decode round trips over seeded random headers, and the errors the
 * codecs raise. Layouts: IBA vol. 1 ch. 7 (LRH, GRH) and ch. 9 (BTH, ETHs),
 * docs/wire.md; RFC 791 (IPv4), RFC 8200 (IPv6), RFC 768 (UDP), IEEE 802.1Q.
 */
import assert from "node:assert/strict";
import * as r from "../../harness/models/rdma/mod.ts";
import { prng, randBytes, randInt, randU64 } from "../../harness/prng.ts";

const rng = prng(2024);
const u = (bits: number) => randInt(rng, 0, 2 ** bits - 1);

/** For headers whose every bit is a field: random bytes decode and re-encode unchanged. */
function bytesRoundTrip<T>(
  n: number,
  decode: (b: Uint8Array, off: number) => T,
  encode: (h: T, out?: Uint8Array, off?: number) => Uint8Array,
  fix: (b: Uint8Array) => void = () => {},
) {
  for (let i = 0; i < 200; i++) {
    const b = randBytes(rng, n + 3);
    fix(b.subarray(3));
    const h = decode(b, 3);
    const out = new Uint8Array(n + 3);
    encode(h, out, 3);
    assert.deepEqual(out.subarray(3), b.subarray(3));
    assert.deepEqual(encode(h), b.subarray(3));
  }
}

Deno.test("BTH of a ConnectX-4 Lx CNP decodes field by field", () => {
  // From the CNP captured on ConnectX-4 Lx in scapy's test/contrib/roce.uts (secdev/scapy):
  // BTH bytes 81 00 ffff 40 000118 00 000000.
  const bth = r.decodeBth(r.hexToBytes("8100ffff4000011800000000"));
  assert.deepEqual(bth, {
    opcode: 0x81,
    se: 0,
    migReq: 0,
    padCnt: 0,
    tver: 0,
    pkey: 0xffff,
    fecn: 0,
    becn: 1,
    reserved6: 0,
    destQp: 0x118,
    ackReq: 0,
    reserved7: 0,
    psn: 0,
  });
});

Deno.test("BTH of scapy's UC SEND_ONLY example (MigReq, PadCnt 2, QP 211, PSN 13571856) encodes to its bytes", () => {
  // scapy test/contrib/roce.uts: BTH(opcode='UC_SEND_ONLY', migreq=1, padcount=2, pkey=0xffff,
  // dqpn=211, psn=13571856) is 24 60 ffff 00 0000d3 00 cf1710.
  const b = r.encodeBth({
    opcode: r.OP.UC_SEND_ONLY,
    se: 0,
    migReq: 1,
    padCnt: 2,
    tver: 0,
    pkey: 0xffff,
    fecn: 0,
    becn: 0,
    reserved6: 0,
    destQp: 211,
    ackReq: 0,
    reserved7: 0,
    psn: 13571856,
  });
  assert.equal(r.bytesToHex(b), "2460ffff000000d300cf1710");
});

Deno.test("BTH, RETH, AETH, AtomicETH, AtomicAckETH, DETH, ImmDt, IETH round-trip random bytes", () => {
  bytesRoundTrip(12, r.decodeBth, r.encodeBth);
  bytesRoundTrip(16, r.decodeReth, r.encodeReth);
  bytesRoundTrip(4, r.decodeAeth, r.encodeAeth);
  bytesRoundTrip(28, r.decodeAtomicEth, r.encodeAtomicEth);
  bytesRoundTrip(8, r.decodeAtomicAckEth, r.encodeAtomicAckEth);
  bytesRoundTrip(8, r.decodeDeth, r.encodeDeth);
  bytesRoundTrip(4, r.decodeImmDt, r.encodeImmDt);
  bytesRoundTrip(4, r.decodeIeth, r.encodeIeth);
});

Deno.test("LRH and GRH round-trip random bytes", () => {
  bytesRoundTrip(8, r.decodeLrh, r.encodeLrh);
  bytesRoundTrip(40, r.decodeGrh, r.encodeGrh);
});

Deno.test("random header values survive encode then decode", () => {
  for (let i = 0; i < 200; i++) {
    const bth: r.Bth = {
      opcode: u(8),
      se: u(1),
      migReq: u(1),
      padCnt: u(2),
      tver: u(4),
      pkey: u(16),
      fecn: u(1),
      becn: u(1),
      reserved6: u(6),
      destQp: u(24),
      ackReq: u(1),
      reserved7: u(7),
      psn: u(24),
    };
    assert.deepEqual(r.decodeBth(r.encodeBth(bth)), bth);
    const reth = { va: randU64(rng), rkey: u(32), dmaLen: u(32) };
    assert.deepEqual(r.decodeReth(r.encodeReth(reth)), reth);
    const at = { va: randU64(rng), rkey: u(32), swapAdd: randU64(rng), compare: randU64(rng) };
    assert.deepEqual(r.decodeAtomicEth(r.encodeAtomicEth(at)), at);
    const lrh: r.Lrh = {
      vl: u(4),
      lver: u(4),
      sl: u(4),
      reserved2: u(2),
      lnh: u(2),
      dlid: u(16),
      reserved5: u(5),
      pktLen: u(11),
      slid: u(16),
    };
    assert.deepEqual(r.decodeLrh(r.encodeLrh(lrh)), lrh);
    const deth = { qkey: u(32), reserved8: u(8), srcQp: u(24) };
    assert.deepEqual(r.decodeDeth(r.encodeDeth(deth)), deth);
  }
});

Deno.test("LRH fields sit where IBA puts them: VL/LVer, SL/LNH, DLID, PktLen, SLID", () => {
  const b = r.encodeLrh({
    vl: 15,
    lver: 0,
    sl: 3,
    reserved2: 0,
    lnh: 2,
    dlid: 0x1234,
    reserved5: 0,
    pktLen: 0x7ff,
    slid: 0xbeef,
  });
  assert.equal(r.bytesToHex(b), "f032123407ffbeef");
});

Deno.test("IPv4 header checksum of the classic example header is 0xB861", () => {
  // Worked example of the IPv4 header checksum (RFC 1071 method) from Wikipedia's
  // "Internet checksum" / "IPv4 header checksum" articles: 4500 0073 0000 4000 4011 [b861] c0a8 0001 c0a8 00c7.
  const h = r.hexToBytes("45000073000040004011b861c0a80001c0a800c7");
  assert.equal(r.ipv4HeaderChecksum(h, 0), 0xb861);
  assert.ok(r.ipv4ChecksumValid(h, 0));
  h[8] = 0x3f; // TTL changed, checksum not
  assert.ok(!r.ipv4ChecksumValid(h, 0));
});

Deno.test("IPv4, IPv6, UDP and Ethernet round-trip random bytes", () => {
  bytesRoundTrip(20, r.decodeIpv4, r.encodeIpv4, (b) => (b[0] = 0x45));
  bytesRoundTrip(40, r.decodeIpv6, r.encodeIpv6);
  bytesRoundTrip(8, r.decodeUdp, r.encodeUdp);
  bytesRoundTrip(14, r.decodeEthernet, r.encodeEthernet, (b) => (b[12] = 0x08));
});

Deno.test("IPv4 with options keeps them and decodes addresses as dotted quads", () => {
  const h = r.hexToBytes("46000018000000004011 0000 0a000001 0a000002 01010100");
  h.set([0, 0], 10);
  const v = r.decodeIpv4(h);
  assert.equal(v.ihl, 6);
  assert.deepEqual([...v.options], [1, 1, 1, 0]);
  assert.equal(r.ipv4ToString(v.src), "10.0.0.1");
  assert.equal(r.parseIpv4("10.0.0.2"), v.dst);
  assert.deepEqual(r.encodeIpv4(v), h);
});

Deno.test("802.1Q and 802.1ad tags decode with PCP, DEI and VID, and re-encode", () => {
  // dst, src, 88a8 (S-tag: PCP 5, DEI 1, VID 0x123), 8100 (C-tag: PCP 3, VID 100), 0800.
  const b = r.hexToBytes("020000000002 020000000001 88a8 b123 8100 6064 0800");
  const e = r.decodeEthernet(b);
  assert.deepEqual(e.vlans, [
    { tpid: 0x88a8, pcp: 5, dei: 1, vid: 0x123 },
    { tpid: 0x8100, pcp: 3, dei: 0, vid: 100 },
  ]);
  assert.equal(e.etherType, 0x0800);
  assert.equal(r.ethernetLength(e), 22);
  assert.equal(r.macToString(e.dst), "02:00:00:00:00:02");
  assert.deepEqual(r.encodeEthernet(e), b);
});

Deno.test("UDP checksum over the IPv4 pseudo-header matches scapy's 0xACA2 for its RoCE example", () => {
  // scapy test/contrib/roce.uts asserts pkt[UDP].chksum == 0xaca2 for this packet.
  const f = r.hexToBytes(
    "248a07a8fa22248a07a8fa220800 45010040047840004011b4d5c0a80007c0a80007 c00012b7002caca2" +
      "2460ffff000000d300cf1710 4630818be28935d90e9a95505401be885e500000 78f353f3",
  );
  assert.equal(r.udpChecksumIpv4(f, 14, 34), 0xaca2);
});

Deno.test("encoders refuse values that do not fit, naming header and field", () => {
  const bth = r.decodeBth(new Uint8Array(12));
  assert.throws(
    () => r.encodeBth({ ...bth, psn: 1 << 24 }),
    (e: unknown) => e instanceof r.FieldRangeError && e.message.includes("BTH.psn"),
  );
  assert.throws(() => r.encodeDeth({ qkey: -1, reserved8: 0, srcQp: 0 }), r.FieldRangeError);
  assert.throws(
    () => r.encodeGrh({ ...r.decodeGrh(new Uint8Array(40)), sgid: new Uint8Array(15) }),
    r.FieldRangeError,
  );
});

Deno.test("decoders throw TruncatedError on too few bytes", () => {
  assert.throws(() => r.decodeBth(new Uint8Array(11)), r.TruncatedError);
  assert.throws(() => r.decodeReth(new Uint8Array(20), 5), r.TruncatedError);
  assert.throws(() => r.decodeGrh(new Uint8Array(39)), r.TruncatedError);
});

Deno.test("opcode table: every named opcode maps to the entry of that name", () => {
  for (const [name, code] of Object.entries(r.OP)) assert.equal(r.opcodeInfo(code)?.name, name);
  const count = (t: string) => r.OPCODES.filter((o) => o?.transport === t).length;
  assert.deepEqual([count("RC"), count("UC"), count("UD"), count("CNP")], [23, 12, 2, 1]);
});

Deno.test("opcode table carries the IBA header rules for representative opcodes", () => {
  const h = (code: number) => r.opcodeInfo(code)?.headers;
  assert.deepEqual(h(r.OP.RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE), ["RETH", "ImmDt"]);
  assert.deepEqual(h(r.OP.RC_RDMA_WRITE_MIDDLE), []);
  assert.deepEqual(h(r.OP.RC_RDMA_READ_RESPONSE_MIDDLE), []);
  assert.deepEqual(h(r.OP.RC_RDMA_READ_RESPONSE_LAST), ["AETH"]);
  assert.deepEqual(h(r.OP.RC_ATOMIC_ACKNOWLEDGE), ["AETH", "AtomicAckETH"]);
  assert.deepEqual(h(r.OP.RC_FETCH_ADD), ["AtomicETH"]);
  assert.deepEqual(h(r.OP.RC_SEND_ONLY_WITH_INVALIDATE), ["IETH"]);
  assert.deepEqual(h(r.OP.UD_SEND_ONLY_WITH_IMMEDIATE), ["DETH", "ImmDt"]);
  assert.equal(r.opcodeInfo(r.OP.RC_RDMA_READ_REQUEST)?.hasPayload, false);
  assert.equal(r.opcodeInfo(r.OP.RC_RDMA_READ_RESPONSE_FIRST)?.isRequest, false);
  assert.equal(r.opcodeInfo(0x2c), undefined); // UC has no READ
  assert.equal(r.opcodeInfo(0x40), undefined); // RD is not accepted
  assert.equal(r.opcodeInfo(0x15), undefined); // reserved
});

Deno.test("AETH syndromes classify as ACK, RNR NAK and NAK by their top bits", () => {
  assert.equal(r.aethKind(r.ackSyndrome(31)), "ack");
  assert.equal(r.aethKind(r.rnrNakSyndrome(14)), "rnr-nak");
  assert.equal(r.aethKind(r.nakSyndrome(r.NAK_CODES.REMOTE_ACCESS_ERROR)), "nak");
  assert.equal(r.nakSyndrome(r.NAK_CODES.PSN_SEQUENCE_ERROR), 0x60);
  assert.equal(r.aethKind(0x40), "reserved");
});

Deno.test("PSN arithmetic wraps at 2^24", () => {
  assert.equal(r.psnAdd(0xffffff, 1), 0);
  assert.equal(r.psnDiff(0, 0xffffff), 1);
  assert.equal(r.psnDiff(0xffffff, 0), -1);
  assert.equal(r.psnDiff(5, 3), 2);
  assert.equal(r.psnDiff(0x800000, 0), -0x800000);
});
