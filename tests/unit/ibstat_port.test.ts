/** The ibstat row's reading of the port state: every tool must agree with the link. */
import assert from "node:assert/strict";
import { parsePortSample, portStateDifferences } from "../matrix/ibstat.ts";

/** One sample as the guest prints it (cnuas_ib0 on eth1, rdma-core 56.1), link up or down. */
function sample(up: boolean): string {
  const sep = "==cnuas-port-sample==\n";
  const rdma = JSON.stringify([{
    ifindex: 1,
    ifname: "cnuas_ib0",
    port: 1,
    state: up ? "ACTIVE" : "DOWN",
    physical_state: up ? "LINK_UP" : "DISABLED",
    netdev: "eth1",
    netdev_index: 3,
  }]);
  const devinfo = `hca_id:\tcnuas_ib0
\ttransport:\t\t\tInfiniBand (0)
\tfw_ver:\t\t\t\t0.1.0
\t\tport:\t1
\t\t\tstate:\t\t\t${up ? "PORT_ACTIVE (4)" : "PORT_DOWN (1)"}
\t\t\tmax_mtu:\t\t4096 (5)
\t\t\tphys_state:\t\t${up ? "LINK_UP (5)" : "DISABLED (3)"}
`;
  const ibstat = `CA 'cnuas_ib0'
\tCA type: cnuas-vnic
\tNumber of ports: 1
\tPort 1:
\t\tState: ${up ? "Active" : "Down"}
\t\tPhysical state: ${up ? "LinkUp" : "Disabled"}
\t\tRate: 100
`;
  return `${up ? 1 : 0}\n${sep}${rdma}\n${sep}${devinfo}${sep}${ibstat}`;
}

Deno.test("a port sample that matches the link has no difference", () => {
  for (const up of [true, false]) {
    const s = parsePortSample(sample(up), "cnuas_ib0");
    assert.deepEqual(portStateDifferences(s, up, "eth1"), []);
  }
});

Deno.test("a port that stays ACTIVE after a cable pull is reported by every tool", () => {
  const s = parsePortSample(sample(true), "cnuas_ib0");
  assert.deepEqual(portStateDifferences(s, false, "eth1"), [
    "carrier is 1, want 0",
    "rdma link state is ACTIVE, want DOWN",
    "rdma link physical_state is LINK_UP, want DISABLED",
    "ibv_devinfo state is PORT_ACTIVE (4), want PORT_DOWN (1)",
    "ibv_devinfo phys_state is LINK_UP (5), want DISABLED (3)",
    "ibstat State is Active, want Down",
    "ibstat Physical state is LinkUp, want Disabled",
  ]);
});

Deno.test("one tool disagreeing is enough; a missing rdma link entry is absent", () => {
  const s = parsePortSample(sample(true).replace("State: Active", "State: Down"), "cnuas_ib0");
  assert.deepEqual(portStateDifferences(s, true, "eth1"), ["ibstat State is Down, want Active"]);
  const none = parsePortSample(sample(true), "cnuas_ib1");
  assert.deepEqual(portStateDifferences(none, true, "eth1"), [
    "rdma link netdev is (absent), want eth1",
    "rdma link state is (absent), want ACTIVE",
    "rdma link physical_state is (absent), want LINK_UP",
  ]);
});
