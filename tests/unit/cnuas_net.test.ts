import assert from "node:assert/strict";
import {
  parseEthtoolLink,
  parseEthtoolStats,
  parseKeyValues,
  parseNicList,
  parsePrivFlags,
  statsDelta,
} from "../../harness/guest/cnuas_net.ts";

Deno.test("ethtool -S output parses into counters, header line ignored", () => {
  const s = parseEthtoolStats("NIC statistics:\n     rx_packets: 12\n     rx_pfc_prio3: 0\n");
  assert.deepEqual(s, { rx_packets: 12, rx_pfc_prio3: 0 });
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
