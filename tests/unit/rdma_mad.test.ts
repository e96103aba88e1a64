/**
 * MAD codecs: the common header, SMPs (LID-routed and directed-route) and the
 * NodeInfo, PortInfo, P_KeyTable and GUIDInfo attributes. Byte positions are
 * from IBA vol. 1 §13.4.3 (MAD common header), §14.2.1 (SMP formats) and
 * §14.2.5 (attributes); the PortInfo positions also match the kernel's
 * `struct ib_port_info` in include/rdma/ib_smi.h (lid at byte 16,
 * linkspeed_portstate at 32, neighbormtu_mastersmsl at 36,
 * inittypereply_mtucap at 41).
 */
import assert from "node:assert/strict";
import * as r from "../../harness/models/rdma/mod.ts";
import { layoutCoversExactly } from "../../harness/models/rdma/bitfield.ts";
import { prng, randBytes, randInt, randU64 } from "../../harness/prng.ts";

const rng = prng(99);

/** A directed-route SubnGet(NodeInfo) from the SM one hop out, written byte by byte. */
function handBuiltDrSmp(): Uint8Array {
  const b = new Uint8Array(256);
  b.set([0x01, 0x81, 0x01, 0x01], 0); // base version 1, class 0x81, class version 1, method Get
  b.set([0x00, 0x00], 4); // D = 0, status 0
  b.set([0x00, 0x01], 6); // hop pointer 0, hop count 1
  b.set([0, 0, 0, 0, 0x12, 0x34, 0x56, 0x78], 8); // transaction ID
  b.set([0x00, 0x11], 16); // attribute NodeInfo
  b.set([0, 0, 0, 0], 20); // attribute modifier
  b.set([0, 0, 0, 0, 0, 0, 0, 0x2a], 24); // M_Key
  b.set([0xff, 0xff, 0xff, 0xff], 32); // DrSLID, DrDLID permissive
  b[128 + 1] = 3; // initial path: leave through port 3 at hop 1
  return b;
}

Deno.test("a hand-built directed-route SubnGet(NodeInfo) decodes with its DR fields", () => {
  const smp = r.decodeSmp(handBuiltDrSmp());
  assert.equal(smp.header.mgmtClass, r.MGMT_CLASS.SUBN_DIRECTED_ROUTE);
  assert.equal(smp.header.method, r.MAD_METHOD.GET);
  assert.equal(smp.header.attributeId, r.SMP_ATTR.NODE_INFO);
  assert.equal(smp.header.transactionId, 0x12345678n);
  assert.ok(r.isDirectedRoute(smp.header));
  assert.equal(r.drDirection(smp.header), 0);
  assert.equal(r.drHopPointer(smp.header), 0);
  assert.equal(r.drHopCount(smp.header), 1);
  assert.equal(smp.mKey, 0x2an);
  assert.equal(smp.drSlid, 0xffff);
  assert.equal(smp.drDlid, 0xffff);
  assert.equal(smp.initialPath[1], 3);
  assert.deepEqual(r.encodeSmp(smp), handBuiltDrSmp());
});

Deno.test("a returning DR GetResp has D set in bit 15 of the status word", () => {
  const f = r.drHeaderFields(1, 0, 1, 1);
  assert.deepEqual(f, { status: 0x8000, classSpecific: 0x0101 });
  const h: r.MadHeader = {
    baseVersion: 1,
    mgmtClass: 0x81,
    classVersion: 1,
    method: r.MAD_METHOD.GET_RESP,
    ...f,
    transactionId: 1n,
    attributeId: r.SMP_ATTR.PORT_INFO,
    reserved: 0,
    attributeModifier: 1,
  };
  const b = r.encodeMadHeader(h);
  assert.equal(r.bytesToHex(b.subarray(0, 8)), "0181018180000101");
  assert.equal(r.drDirection(r.decodeMadHeader(b)), 1);
});

Deno.test("a LID-routed SMP keeps its data at byte 64 and writes no DR fields", () => {
  const data = randBytes(rng, 64);
  const smp: r.Smp = {
    header: r.decodeMadHeader(
      r.hexToBytes("0101018100000000000000000000000100150000" + "00000001"),
    ),
    mKey: 5n,
    drSlid: 0,
    drDlid: 0,
    data,
    initialPath: new Uint8Array(64),
    returnPath: new Uint8Array(64),
  };
  const b = r.encodeSmp(smp);
  assert.deepEqual(b.subarray(64, 128), data);
  assert.deepEqual(b.subarray(32, 64), new Uint8Array(32));
  assert.deepEqual(r.decodeSmp(b), smp);
});

Deno.test("PortInfo layout covers its 64 bytes exactly, one field per bit", () => {
  assert.ok(layoutCoversExactly(r.PORT_INFO_LAYOUT, r.PORT_INFO_BYTES));
});

Deno.test("PortInfo fields land on the bytes IBA and ib_smi.h give them", () => {
  const zero = r.decodePortInfo(new Uint8Array(64));
  const b = r.encodePortInfo({
    ...zero,
    lid: 0x0102,
    masterSmLid: 0x0001,
    portState: r.PORT_STATE.ACTIVE,
    linkSpeedSupported: 1,
    neighborMtu: 5,
    mtuCap: 5,
    lmc: 7,
    capabilityMask: 0x02510868,
    subnetTimeout: 18,
    clientReregister: 1,
  });
  assert.equal(r.bytesToHex(b.subarray(16, 24)), "0102000102510868");
  assert.equal(b[32], 0x14); // LinkSpeedSupported 1 | PortState 4 (Active)
  assert.equal(b[34], 0x07); // LMC in the low 3 bits
  assert.equal(b[36], 0x50); // NeighborMTU 5 (4096) | MasterSMSL 0
  assert.equal(b[41], 0x05); // InitTypeReply 0 | MTUCap 5
  assert.equal(b[51], 0x92); // ClientReregister | SubnetTimeOut 18
});

Deno.test("PortInfo and NodeInfo round-trip random bytes", () => {
  for (let i = 0; i < 100; i++) {
    const p = randBytes(rng, 64);
    assert.deepEqual(r.encodePortInfo(r.decodePortInfo(p)), p);
    const n = randBytes(rng, 40);
    assert.deepEqual(r.encodeNodeInfo(r.decodeNodeInfo(n)), n);
    const h = randBytes(rng, 24);
    assert.deepEqual(r.encodeMadHeader(r.decodeMadHeader(h)), h);
    const m = randBytes(rng, 256);
    assert.deepEqual(r.encodeMad(r.decodeMad(m)), m);
  }
});

Deno.test("NodeInfo of a channel adapter encodes GUIDs and vendor where IBA puts them", () => {
  const ni: r.NodeInfo = {
    baseVersion: 1,
    classVersion: 1,
    nodeType: 1,
    numPorts: 1,
    systemImageGuid: 0x0002c90300000001n,
    nodeGuid: 0x0002c90300000002n,
    portGuid: 0x0002c90300000003n,
    partitionCap: 1,
    deviceId: 0x10f0,
    revision: 0,
    localPortNum: 1,
    vendorId: 0x1af4,
  };
  const b = r.encodeNodeInfo(ni);
  assert.equal(
    r.bytesToHex(b),
    "01010101" + "0002c90300000001" + "0002c90300000002" + "0002c90300000003" + "0001" + "10f0" +
      "00000000" +
      "01" + "001af4",
  );
  assert.deepEqual(r.decodeNodeInfo(b), ni);
});

Deno.test("P_KeyTable and GUIDInfo blocks round-trip random entries", () => {
  const keys = Array.from({ length: 32 }, () => randInt(rng, 0, 0xffff));
  assert.deepEqual(r.decodePKeyTable(r.encodePKeyTable(keys)), keys);
  const guids = Array.from({ length: 8 }, () => randU64(rng));
  assert.deepEqual(r.decodeGuidInfo(r.encodeGuidInfo(guids)), guids);
  assert.equal(
    r.bytesToHex(r.encodePKeyTable([0xffff, ...new Array(31).fill(0)]).subarray(0, 4)),
    "ffff0000",
  );
});

Deno.test("attribute encoders refuse wrong block sizes and out-of-range fields", () => {
  assert.throws(() => r.encodePKeyTable([1, 2, 3]), RangeError);
  assert.throws(() => r.encodeGuidInfo([1n]), RangeError);
  const zero = r.decodePortInfo(new Uint8Array(64));
  assert.throws(() => r.encodePortInfo({ ...zero, portState: 16 }), r.FieldRangeError);
});
