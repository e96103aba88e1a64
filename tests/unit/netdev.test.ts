import assert from "node:assert/strict";
import {
  addCounters,
  expectedRxCounters,
  macBytes,
  parseEthtoolLink,
  parseEthtoolStats,
  parseKeyValues,
  parseNicList,
  parsePrivFlags,
  pfcFrame,
  statsDelta,
} from "../../harness/netdev.ts";

/** A frame of `len` bytes to a unicast MAC from a unicast MAC with EtherType `type`. */
function frame(len: number, type = 0x0800, src0 = 0x02): Uint8Array {
  const f = new Uint8Array(len);
  f.set([0x02, 0xc7, 0x0a, 0, 1, 0], 0);
  if (len >= 12) f.set([src0, 0xc7, 0x0a, 0, 0, 0], 6);
  if (len >= 14) f.set([type >> 8, type & 0xff], 12);
  return f;
}

Deno.test("ethtool -S output parses into counters, header line ignored", () => {
  const s = parseEthtoolStats("NIC statistics:\n     rx_packets: 12\n     rx_prio3_pause: 0\n");
  assert.deepEqual(s, { rx_packets: 12, rx_prio3_pause: 0 });
});

Deno.test("ethtool -i key/value lines keep values with colons and empty values", () => {
  const kv = parseKeyValues("driver: cnuas_net\nbus-info: 0000:00:04.0\nfirmware-version: \n");
  assert.equal(kv.get("driver"), "cnuas_net");
  assert.equal(kv.get("bus-info"), "0000:00:04.0");
  assert.equal(kv.get("firmware-version"), "");
});

Deno.test("plain ethtool output gives speed, duplex and link detection", () => {
  const l = parseEthtoolLink(
    "Settings for eth1:\n\tSpeed: 100000Mb/s\n\tDuplex: Full\n\tLink detected: no\n",
  );
  assert.deepEqual(l, { speed: "100000Mb/s", duplex: "Full", linkDetected: false });
});

Deno.test("private flags parse with ethtool's padded names", () => {
  const f = parsePrivFlags("Private flags for eth1:\nroce_mode: on\nib_mode  : off\n");
  assert.deepEqual(f, { roce_mode: true, ib_mode: false });
});

Deno.test("the NIC list is sorted by PCI address and skips blank lines", () => {
  const n = parseNicList("0000:00:05.0 eth2\n\n0000:00:04.0 eth1\n");
  assert.deepEqual(n, [{ pci: "0000:00:04.0", iface: "eth1" }, {
    pci: "0000:00:05.0",
    iface: "eth2",
  }]);
});

Deno.test("statsDelta subtracts per name and treats new names as starting at 0", () => {
  assert.deepEqual(statsDelta({ a: 5 }, { a: 7, b: 2 }), { a: 2, b: 2 });
});

Deno.test("a frame shorter than the Ethernet header is a runt", () => {
  assert.deepEqual(expectedRxCounters(frame(13), 1500), { rx_drop_runt: 1 });
});

Deno.test("a frame longer than MTU + 18 is oversize, MTU + 18 itself is accepted", () => {
  assert.deepEqual(expectedRxCounters(frame(1519), 1500), { rx_drop_oversize: 1 });
  assert.deepEqual(expectedRxCounters(frame(1518), 1500), { rx_packets: 1, rx_bytes: 1518 });
});

Deno.test("a multicast source address is a malformed frame", () => {
  assert.deepEqual(expectedRxCounters(frame(64, 0x0800, 0x01), 1500), { rx_drop_bad_src: 1 });
});

Deno.test("a PFC frame counts each priority of its class-enable vector, nothing else", () => {
  const f = pfcFrame("02:c7:0a:ff:00:01", [3, 5]);
  assert.equal(f.length, 60);
  assert.deepEqual(expectedRxCounters(f, 1500), { rx_prio3_pause: 1, rx_prio5_pause: 1 });
});

Deno.test("802.3x PAUSE counts rx_pause; an unknown MAC control opcode is malformed", () => {
  const pause = frame(60, 0x8808);
  pause.set([0x00, 0x01], 14);
  assert.deepEqual(expectedRxCounters(pause, 1500), { rx_pause: 1 });
  const odd = frame(60, 0x8808);
  odd.set([0x0f, 0x0f], 14);
  assert.deepEqual(expectedRxCounters(odd, 1500), { rx_drop_bad_mac_ctrl: 1 });
});

Deno.test("a stack frame on a down interface is counted as rx_drop_down", () => {
  assert.deepEqual(expectedRxCounters(frame(100), 1500, false), { rx_drop_down: 1 });
});

Deno.test("addCounters sums increments into the accumulator", () => {
  const acc = addCounters({ rx_packets: 1 }, { rx_packets: 2, rx_bytes: 100 });
  assert.deepEqual(acc, { rx_packets: 3, rx_bytes: 100 });
});

Deno.test("macBytes rejects text that is not six hex octets", () => {
  assert.deepEqual(Array.from(macBytes("02:c7:0a:00:01:ff")), [2, 0xc7, 0x0a, 0, 1, 0xff]);
  assert.throws(() => macBytes("02:c7:0a:00:01"), RangeError);
  assert.throws(() => macBytes("02:c7:0a:00:01:zz"), RangeError);
});
