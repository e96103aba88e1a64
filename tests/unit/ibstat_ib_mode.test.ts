/**
 * The IB-mode half of the ibstat row's attribute check: what `rdma -d -j link
 * show`, `ibv_devinfo -v`, `ibstat` and sysfs show of cnuas_ib0's port in
 * native InfiniBand mode, compared by attribute with what it must show.
 * The samples follow the tools' own printf formats (iproute2 6.x rdma/link.c,
 * rdma-core 56 libibverbs/examples/devinfo.c and infiniband-diags/ibstat.c)
 * for a port the SM brought up with LID 2, SM LID 1, prefix fe80::/64.
 */
import assert from "node:assert/strict";
import {
  ibModeAttributesCommand,
  parseIbModeAttributes,
  parseRdmaLinks,
  RdmaGuestError,
} from "../../harness/guest/cnuas_ib.ts";
import {
  ibModeAttributeDifferences,
  type IbModeWant,
  normalizeGuid,
  TABLE_4_1,
  TABLE_4_1_COMMON,
  TABLE_4_1_IB,
  tableDifferences,
} from "../../harness/guest/cnuas_ib_attrs.ts";

/** cnuas_ib0's port GUID: the EUI-64 of MAC 02:c7:0a:00:00:01. */
const GUID = "00c70afffe000001";
const WANT: IbModeWant = { lid: 2, smLid: 1 };

/** `rdma -d -j link show` with two devices; the second is not ours. */
const RDMA = JSON.stringify([
  {
    ifindex: 0,
    ifname: "cnuas_ib0",
    port: 1,
    subnet_prefix: "fe80:0000:0000:0000",
    lid: 2,
    sm_lid: 1,
    lmc: 0,
    state: "ACTIVE",
    physical_state: "LINK_UP",
    caps: [
      "NOTICE",
      "TRAP",
      "SM_DISABLED",
      "SYS_IMAGE_GUID",
      "EXTENDED_SPEEDS",
      "CM",
      "CAP_MASK_NOTICE",
      "CLIENT_REG",
    ],
  },
  {
    ifindex: 1,
    ifname: "cnuas_ib1",
    port: 1,
    subnet_prefix: "fe80:0000:0000:0000",
    lid: 3,
    sm_lid: 1,
    lmc: 0,
    state: "INIT",
    physical_state: "LINK_UP",
    caps: [
      "NOTICE",
      "TRAP",
      "SM_DISABLED",
      "SYS_IMAGE_GUID",
      "EXTENDED_SPEEDS",
      "CAP_MASK_NOTICE",
      "CLIENT_REG",
    ],
  },
]);

/** `ibv_devinfo -v -d cnuas_ib0` in IB mode (devinfo.c's layout, tabs as it prints them). */
const DEVINFO = `hca_id:\tcnuas_ib0
\ttransport:\t\t\tInfiniBand (0)
\tfw_ver:\t\t\t\t0.1.0
\tnode_guid:\t\t\t00c7:0aff:fe00:0001
\tsys_image_guid:\t\t\t00c7:0aff:fe00:0001
\tvendor_id:\t\t\t0x1af4
\tvendor_part_id:\t\t\t4336
\thw_ver:\t\t\t\t0x1
\tphys_port_cnt:\t\t\t1
\tmax_mr_size:\t\t\t0xffffffffffffffff
\tpage_size_cap:\t\t\t0xfffff000
\tmax_qp:\t\t\t\t256
\tmax_qp_wr:\t\t\t4096
\tdevice_cap_flags:\t\t0x00001800
\t\t\t\t\tSYS_IMAGE_GUID
\t\t\t\t\tRC_RNR_NAK_GEN
\tmax_sge:\t\t\t16
\tmax_sge_rd:\t\t\t16
\tmax_cq:\t\t\t\t256
\tmax_cqe:\t\t\t4096
\tmax_mr:\t\t\t\t256
\tmax_pd:\t\t\t\t64
\tmax_qp_rd_atom:\t\t\t16
\tmax_ee_rd_atom:\t\t\t0
\tmax_res_rd_atom:\t\t4096
\tmax_qp_init_rd_atom:\t\t16
\tmax_ee_init_rd_atom:\t\t0
\tatomic_cap:\t\t\tATOMIC_HCA (1)
\tmax_ee:\t\t\t\t0
\tmax_rdd:\t\t\t0
\tmax_mw:\t\t\t\t0
\tmax_raw_ipv6_qp:\t\t0
\tmax_raw_ethy_qp:\t\t0
\tmax_mcast_grp:\t\t\t256
\tmax_mcast_qp_attach:\t\t256
\tmax_total_mcast_qp_attach:\t65536
\tmax_ah:\t\t\t\t65536
\tmax_srq:\t\t\t256
\tmax_srq_wr:\t\t\t4096
\tmax_srq_sge:\t\t\t16
\tmax_pkeys:\t\t\t1
\tlocal_ca_ack_delay:\t\t15
\tgeneral_odp_caps:
\trc_odp_caps:
\t\t\t\t\tNO SUPPORT
\tuc_odp_caps:
\t\t\t\t\tNO SUPPORT
\tud_odp_caps:
\t\t\t\t\tNO SUPPORT
\txrc_odp_caps:
\t\t\t\t\tNO SUPPORT
\tcompletion_timestamp_mask not supported
\tcore clock not supported
\tdevice_cap_flags_ex:\t\t0x1800
\ttso_caps:
\t\tmax_tso:\t\t\t0
\trss_caps:
\t\tmax_rwq_indirection_tables:\t\t\t0
\t\tmax_rwq_indirection_table_size:\t\t\t0
\t\trx_hash_function:\t\t\t\t0x0
\t\trx_hash_fields_mask:\t\t\t\t0x0
\tmax_wq_type_rq:\t\t\t0
\tpacket_pacing_caps:
\t\tqp_rate_limit_min:\t0kbps
\t\tqp_rate_limit_max:\t0kbps
\ttag matching not supported
\tnum_comp_vectors:\t\t1
\t\tport:\t1
\t\t\tstate:\t\t\tPORT_ACTIVE (4)
\t\t\tmax_mtu:\t\t4096 (5)
\t\t\tactive_mtu:\t\t4096 (5)
\t\t\tsm_lid:\t\t\t1
\t\t\tport_lid:\t\t2
\t\t\tport_lmc:\t\t0x00
\t\t\tlink_layer:\t\tInfiniBand
\t\t\tmax_msg_sz:\t\t0x7fffffff
\t\t\tport_cap_flags:\t\t0x02414c0c
\t\t\tport_cap_flags2:\t0x0000
\t\t\tmax_vl_num:\t\t1 (1)
\t\t\tbad_pkey_cntr:\t\t0x0
\t\t\tqkey_viol_cntr:\t\t0x0
\t\t\tsm_sl:\t\t\t0
\t\t\tpkey_tbl_len:\t\t1
\t\t\tgid_tbl_len:\t\t1
\t\t\tsubnet_timeout:\t\t18
\t\t\tinit_type_reply:\t0
\t\t\tactive_width:\t\t4X (2)
\t\t\tactive_speed:\t\t25.0 Gbps (32)
\t\t\tphys_state:\t\tLINK_UP (5)
\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:00c7:0aff:fe00:0001

`;

/** `ibstat cnuas_ib0` in IB mode (no hca_type in sysfs: an empty CA type). */
const IBSTAT = `CA 'cnuas_ib0'
\tCA type: 
\tNumber of ports: 1
\tFirmware version: 0.1.0
\tHardware version: 1
\tNode GUID: 0x00c70afffe000001
\tSystem image GUID: 0x00c70afffe000001
\tPort 1:
\t\tState: Active
\t\tPhysical state: LinkUp
\t\tRate: 100
\t\tBase lid: 2
\t\tLMC: 0
\t\tSM lid: 1
\t\tCapability mask: 0x02414c0c
\t\tPort GUID: 0x00c70afffe000001
\t\tLink layer: InfiniBand
`;

/** The pieces of one reading; a test changes one of them. */
interface Pieces {
  rdma: string;
  devinfo: string;
  ibstat: string;
  pkey: string;
}

const GOOD: Pieces = { rdma: RDMA, devinfo: DEVINFO, ibstat: IBSTAT, pkey: "0xffff\n" };

/** What the guest prints for {@link ibModeAttributesCommand}: each output, then its marker. */
function output(p: Partial<Pieces> = {}, rcs = [0, 0, 0, 0]): string {
  const q = { ...GOOD, ...p };
  return [q.rdma + "\n", q.devinfo, q.ibstat, q.pkey]
    .map((o, i) => `${o}\n==cnuas-ib-attrs rc=${rcs[i]}\n`).join("");
}

function diffs(p: Partial<Pieces> = {}, want: IbModeWant = WANT): string[] {
  return ibModeAttributeDifferences(parseIbModeAttributes(output(p), "cnuas_ib0"), want);
}

/** `s` with `from` replaced by `to`; `from` must occur exactly once. */
function plant(s: string, from: string, to: string): string {
  assert.equal(s.split(from).length, 2, `${JSON.stringify(from)} occurs once`);
  return s.replace(from, to);
}

Deno.test("the helper's one command runs the four readers, each followed by its marker", () => {
  const cmd = ibModeAttributesCommand("cnuas_ib0");
  for (
    const c of [
      "rdma -d -j link show",
      "ibv_devinfo -v -d 'cnuas_ib0'",
      "ibstat 'cnuas_ib0'",
      "cat /sys/class/infiniband/'cnuas_ib0'/ports/1/pkeys/0",
    ]
  ) assert.ok(cmd.includes(`${c}; printf`), `${c} in ${cmd}`);
  assert.equal(cmd.split("==cnuas-ib-attrs rc=%d").length, 5);
});

Deno.test("the reading is split into the tools' outputs and our port's rdma entry", () => {
  const a = parseIbModeAttributes(output(), "cnuas_ib0");
  assert.equal(a.rdma?.lid, 2);
  assert.deepEqual(a.rdma?.caps, [
    "NOTICE",
    "TRAP",
    "SM_DISABLED",
    "SYS_IMAGE_GUID",
    "EXTENDED_SPEEDS",
    "CM",
    "CAP_MASK_NOTICE",
    "CLIENT_REG",
  ]);
  assert.equal(a.devinfo.hcaId, "cnuas_ib0");
  assert.equal(a.devinfo.ports[0].get("port_lid"), "2");
  assert.equal(a.devinfo.ports[0].get("subnet_timeout"), "18");
  assert.equal(a.devinfo.gids[0].get(0), "fe80:0000:0000:0000:00c7:0aff:fe00:0001");
  assert.equal(a.ibstat.ca.get("CA type"), "");
  assert.equal(a.ibstat.ca.get("System image GUID"), "0x00c70afffe000001");
  assert.equal(a.ibstat.ports[0].get("Capability mask"), "0x02414c0c");
  assert.equal(a.pkey0, "0xffff");
  assert.equal(parseIbModeAttributes(output(), "cnuas_ib1").rdma?.state, "INIT");
});

Deno.test("a tool that fails or output cut short is named, not read as absent", () => {
  assert.throws(
    () => parseIbModeAttributes(output({}, [0, 0, 255, 0]), "cnuas_ib0"),
    (e: Error) => e instanceof RdmaGuestError && /'ibstat 'cnuas_ib0'' exited 255/.test(e.message),
  );
  const sep = "==cnuas-ib-attrs rc=0\n";
  const cut = output().split(sep).slice(0, 3).join(sep) + sep; // no P_Key part
  assert.throws(
    () => parseIbModeAttributes(cut, "cnuas_ib0"),
    (e: Error) => e instanceof RdmaGuestError && /pkeys\/0' printed no end marker/.test(e.message),
  );
  assert.throws(() => parseRdmaLinks("rdma: unknown option"), RdmaGuestError);
  assert.throws(() => parseRdmaLinks("{}"), RdmaGuestError);
});

Deno.test("a port the SM brought up as the driver's contract says has no difference", () => {
  assert.deepEqual(diffs(), []);
  assert.deepEqual(diffs({}, { ...WANT, portGuid: GUID, subnetPrefix: "fe80:0000:0000:0000" }), []);
  assert.deepEqual(diffs({}, { ...WANT, portGuid: "0x00c70afffe000001" }), []);
});

/** [what is planted, the pieces changed, the one line it must give]. */
const PLANTED: [string, Partial<Pieces>, string][] = [
  [
    "ibstat State Initializing (the SM never set ACTIVE)",
    { ibstat: plant(IBSTAT, "State: Active", "State: Initializing") },
    "State: ibstat State is Initializing, want Active",
  ],
  [
    "ibv_devinfo state PORT_INIT",
    { devinfo: plant(DEVINFO, "PORT_ACTIVE (4)", "PORT_INIT (2)") },
    "State: ibv_devinfo state is PORT_INIT (2), want PORT_ACTIVE (4)",
  ],
  [
    "rdma state ARMED",
    { rdma: plant(RDMA, '"state":"ACTIVE"', '"state":"ARMED"') },
    "State: rdma link state is ARMED, want ACTIVE",
  ],
  [
    "ibstat Physical state Polling",
    { ibstat: plant(IBSTAT, "Physical state: LinkUp", "Physical state: Polling") },
    "Physical state: ibstat Physical state is Polling, want LinkUp",
  ],
  [
    "ibv_devinfo phys_state POLLING",
    { devinfo: plant(DEVINFO, "LINK_UP (5)", "POLLING (2)") },
    "Physical state: ibv_devinfo phys_state is POLLING (2), want LINK_UP (5)",
  ],
  [
    "ibstat Base lid 0 (no LID assigned)",
    { ibstat: plant(IBSTAT, "Base lid: 2", "Base lid: 0") },
    "Base lid: ibstat Base lid is 0, want 2",
  ],
  [
    "ibv_devinfo port_lid 0",
    { devinfo: plant(DEVINFO, "port_lid:\t\t2", "port_lid:\t\t0") },
    "Base lid: ibv_devinfo port_lid is 0, want 2",
  ],
  [
    "rdma lid 0",
    { rdma: plant(RDMA, '"lid":2', '"lid":0') },
    "Base lid: rdma link lid is 0, want 2",
  ],
  [
    "ibstat SM lid 3",
    { ibstat: plant(IBSTAT, "SM lid: 1", "SM lid: 3") },
    "SM lid: ibstat SM lid is 3, want 1",
  ],
  [
    "ibv_devinfo sm_lid 0",
    { devinfo: plant(DEVINFO, "sm_lid:\t\t\t1", "sm_lid:\t\t\t0") },
    "SM lid: ibv_devinfo sm_lid is 0, want 1",
  ],
  [
    "rdma sm_lid 0",
    {
      rdma: plant(
        RDMA,
        '"sm_lid":1,"lmc":0,"state":"ACTIVE"',
        '"sm_lid":0,"lmc":0,"state":"ACTIVE"',
      ),
    },
    "SM lid: rdma link sm_lid is 0, want 1",
  ],
  [
    "ibstat LMC 1",
    { ibstat: plant(IBSTAT, "LMC: 0", "LMC: 1") },
    "LMC: ibstat LMC is 1, want 0",
  ],
  [
    "ibv_devinfo port_lmc 0x01",
    { devinfo: plant(DEVINFO, "port_lmc:\t\t0x00", "port_lmc:\t\t0x01") },
    "LMC: ibv_devinfo port_lmc is 0x01, want 0x00",
  ],
  [
    "ibv_devinfo sm_sl 1",
    { devinfo: plant(DEVINFO, "sm_sl:\t\t\t0", "sm_sl:\t\t\t1") },
    "SM SL: ibv_devinfo sm_sl is 1, want 0",
  ],
  [
    "ibv_devinfo subnet_timeout 0 (never set by the SM)",
    { devinfo: plant(DEVINFO, "subnet_timeout:\t\t18", "subnet_timeout:\t\t0") },
    "Subnet timeout: ibv_devinfo subnet_timeout is 0, want 18",
  ],
  [
    "ibv_devinfo link_layer Ethernet",
    { devinfo: plant(DEVINFO, "link_layer:\t\tInfiniBand", "link_layer:\t\tEthernet") },
    "Link layer: ibv_devinfo link_layer is Ethernet, want InfiniBand",
  ],
  [
    "ibstat Link layer Ethernet",
    { ibstat: plant(IBSTAT, "Link layer: InfiniBand", "Link layer: Ethernet") },
    "Link layer: ibstat Link layer is Ethernet, want InfiniBand",
  ],
  [
    "a second GID",
    {
      devinfo: plant(
        DEVINFO,
        "0000:00c7:0aff:fe00:0001\n",
        "0000:00c7:0aff:fe00:0001\n\t\t\tGID[  1]:\t\tfe80:0000:0000:0000:00c7:0aff:fe00:0002\n",
      ),
    },
    "GID table: ibv_devinfo GID line count is 2, want 1",
  ],
  [
    "gid_tbl_len 1024 (the RoCE table)",
    { devinfo: plant(DEVINFO, "gid_tbl_len:\t\t1", "gid_tbl_len:\t\t1024") },
    "GID table length: ibv_devinfo gid_tbl_len is 1024, want 1",
  ],
  [
    "GID[0] with the wrong subnet prefix",
    { devinfo: plant(DEVINFO, "fe80:0000:0000:0000:00c7", "fec0:0000:0000:0000:00c7") },
    "GID table: ibv_devinfo GID[0] is fec0:0000:0000:0000:00c7:0aff:fe00:0001, " +
    "want fe80:0000:0000:0000:00c7:0aff:fe00:0001",
  ],
  [
    "GID[0] with another interface ID than the port GUID",
    { devinfo: plant(DEVINFO, "0000:00c7:0aff:fe00:0001", "0000:00c7:0aff:fe00:0009") },
    "GID table: ibv_devinfo GID[0] is fe80:0000:0000:0000:00c7:0aff:fe00:0009, " +
    "want fe80:0000:0000:0000:00c7:0aff:fe00:0001",
  ],
  [
    "rdma subnet_prefix fec0:...",
    {
      rdma: plant(
        RDMA,
        '"subnet_prefix":"fe80:0000:0000:0000","lid":2',
        '"subnet_prefix":"fec0:0000:0000:0000","lid":2',
      ),
    },
    "GID table: rdma link subnet_prefix is fec0:0000:0000:0000, want fe80:0000:0000:0000",
  ],
  [
    "ibstat Node GUID other than the port GUID",
    { ibstat: plant(IBSTAT, "Node GUID: 0x00c70afffe000001", "Node GUID: 0x00c70afffe000002") },
    "Node GUID: ibstat Node GUID is 0x00c70afffe000002, want 0x00c70afffe000001",
  ],
  [
    "ibstat System image GUID 0",
    { ibstat: plant(IBSTAT, "image GUID: 0x00c70afffe000001", "image GUID: 0x0000000000000000") },
    "System image GUID: ibstat System image GUID is 0x0000000000000000, want 0x00c70afffe000001",
  ],
  [
    "ibv_devinfo node_guid other than the port GUID",
    { devinfo: plant(DEVINFO, "node_guid:\t\t\t00c7", "node_guid:\t\t\t02c7") },
    "Node GUID: ibv_devinfo node_guid is 02c7:0aff:fe00:0001, want 00c7:0aff:fe00:0001",
  ],
  [
    "ibv_devinfo sys_image_guid other than the port GUID",
    { devinfo: plant(DEVINFO, "sys_image_guid:\t\t\t00c7", "sys_image_guid:\t\t\t0000") },
    "System image GUID: ibv_devinfo sys_image_guid is 0000:0aff:fe00:0001, want 00c7:0aff:fe00:0001",
  ],
  [
    "ibstat Rate 40 (QDR)",
    { ibstat: plant(IBSTAT, "Rate: 100", "Rate: 40") },
    "Reported speed and width: ibstat Rate is 40, want 100",
  ],
  [
    "ibv_devinfo active_mtu 2048",
    { devinfo: plant(DEVINFO, "active_mtu:\t\t4096 (5)", "active_mtu:\t\t2048 (4)") },
    "Path MTU: ibv_devinfo active_mtu is 2048 (4), want 4096 (5)",
  ],
  [
    "ibv_devinfo max_mtu 2048",
    { devinfo: plant(DEVINFO, "max_mtu:\t\t4096 (5)", "max_mtu:\t\t2048 (4)") },
    "Path MTU: ibv_devinfo max_mtu is 2048 (4), want 4096 (5)",
  ],
  [
    "IsSM in ibstat's Capability mask",
    { ibstat: plant(IBSTAT, "0x02414c0c", "0x02414c0e") },
    "Capability mask: ibstat Capability mask 0x02414c0e bit IsSM (0x2) is set, want clear",
  ],
  [
    "IsSM in ibv_devinfo's port_cap_flags",
    { devinfo: plant(DEVINFO, "0x02414c0c", "0x02414c0e") },
    "Capability mask: ibv_devinfo port_cap_flags 0x02414c0e bit IsSM (0x2) is set, want clear",
  ],
  [
    "SM in rdma's caps",
    {
      rdma: plant(
        RDMA,
        '["NOTICE","TRAP","SM_DISABLED","SYS_IMAGE_GUID","EXTENDED_SPEEDS","CM",',
        '["SM","NOTICE","TRAP","SM_DISABLED","SYS_IMAGE_GUID","EXTENDED_SPEEDS","CM",',
      ),
    },
    "Capability mask: rdma link caps SM is present, want absent",
  ],
  [
    "no IsConnectionManagementSupported (ib_cm not bound)",
    { ibstat: plant(IBSTAT, "0x02414c0c", "0x02404c0c") },
    "Capability mask: ibstat Capability mask 0x02404c0c bit IsConnectionManagementSupported " +
    "(0x10000) is clear, want set",
  ],
  [
    "no IsClientReregistrationSupported",
    { devinfo: plant(DEVINFO, "0x02414c0c", "0x00414c0c") },
    "Capability mask: ibv_devinfo port_cap_flags 0x00414c0c bit IsClientReregistrationSupported " +
    "(0x2000000) is clear, want set",
  ],
  [
    "no IsSystemImageGUIDSupported",
    { ibstat: plant(IBSTAT, "0x02414c0c", "0x0241440c") },
    "Capability mask: ibstat Capability mask 0x0241440c bit IsSystemImageGUIDSupported (0x800) " +
    "is clear, want set",
  ],
  [
    "no IsExtendedSpeedsSupported",
    { devinfo: plant(DEVINFO, "0x02414c0c", "0x02410c0c") },
    "Capability mask: ibv_devinfo port_cap_flags 0x02410c0c bit IsExtendedSpeedsSupported " +
    "(0x4000) is clear, want set",
  ],
  [
    "no EXTENDED_SPEEDS in rdma's caps",
    { rdma: plant(RDMA, '"SYS_IMAGE_GUID","EXTENDED_SPEEDS","CM"', '"SYS_IMAGE_GUID","CM"') },
    "Capability mask: rdma link caps EXTENDED_SPEEDS is absent, want present",
  ],
  [
    "P_Key table entry 0x7fff (limited member)",
    { pkey: "0x7fff\n" },
    "P_Key table: sysfs ports/1/pkeys/0 is 0x7fff, want 0xffff",
  ],
  [
    "pkey_tbl_len 2",
    { devinfo: plant(DEVINFO, "pkey_tbl_len:\t\t1", "pkey_tbl_len:\t\t2") },
    "Partition keys: ibv_devinfo pkey_tbl_len is 2, want 1",
  ],
  [
    "a net_device bound to the ib_device",
    {
      rdma: plant(
        RDMA,
        '"state":"ACTIVE","physical_state":"LINK_UP","caps"',
        '"state":"ACTIVE","physical_state":"LINK_UP","netdev":"eth1","netdev_index":3,"caps"',
      ),
    },
    "Net device: rdma link netdev is eth1, want (none)",
  ],
  [
    "max_qp 128 (the rest of table 4.1 holds in IB mode too)",
    { devinfo: plant(DEVINFO, "max_qp:\t\t\t\t256", "max_qp:\t\t\t\t128") },
    "Maximum queue pairs: ibv_devinfo max_qp is 128, want 256",
  ],
  [
    "ibstat Firmware version 0.0.0",
    { ibstat: plant(IBSTAT, "Firmware version: 0.1.0", "Firmware version: 0.0.0") },
    "Firmware version: ibstat Firmware version is 0.0.0, want 0.1.0",
  ],
];

for (const [what, pieces, line] of PLANTED) {
  Deno.test(`planted: ${what} gives exactly its line`, () => {
    assert.deepEqual(diffs(pieces), [line]);
  });
}

Deno.test("the LIDs are the SM's: a port showing another LID differs in every tool", () => {
  assert.deepEqual(diffs({}, { lid: 3, smLid: 1 }), [
    "Base lid: ibv_devinfo port_lid is 2, want 3",
    "Base lid: ibstat Base lid is 2, want 3",
    "Base lid: rdma link lid is 2, want 3",
  ]);
  assert.deepEqual(diffs({}, { lid: 2, smLid: 5 }), [
    "SM lid: ibv_devinfo sm_lid is 1, want 5",
    "SM lid: ibstat SM lid is 1, want 5",
    "SM lid: rdma link sm_lid is 1, want 5",
  ]);
});

Deno.test("a given port GUID is checked against every tool's GUIDs and the GID", () => {
  const d = diffs({}, { ...WANT, portGuid: "00c70afffe0000ff" });
  assert.deepEqual(d, [
    "Port GUID: ibstat Port GUID is 0x00c70afffe000001, want 0x00c70afffe0000ff",
    "Node GUID: ibstat Node GUID is 0x00c70afffe000001, want 0x00c70afffe0000ff",
    "Node GUID: ibv_devinfo node_guid is 00c7:0aff:fe00:0001, want 00c7:0aff:fe00:00ff",
    "System image GUID: ibstat System image GUID is 0x00c70afffe000001, want 0x00c70afffe0000ff",
    "System image GUID: ibv_devinfo sys_image_guid is 00c7:0aff:fe00:0001, " +
    "want 00c7:0aff:fe00:00ff",
    "GID table: ibv_devinfo GID[0] is fe80:0000:0000:0000:00c7:0aff:fe00:0001, " +
    "want fe80:0000:0000:0000:00c7:0aff:fe00:00ff",
  ]);
});

Deno.test("a different subnet prefix given by the SM is what the GID and rdma must show", () => {
  const prefix = "fec0:0000:0000:0001";
  assert.deepEqual(diffs({}, { ...WANT, subnetPrefix: prefix }), [
    "GID table: rdma link subnet_prefix is fe80:0000:0000:0000, want fec0:0000:0000:0001",
    "GID table: ibv_devinfo GID[0] is fe80:0000:0000:0000:00c7:0aff:fe00:0001, " +
    "want fec0:0000:0000:0001:00c7:0aff:fe00:0001",
  ]);
});

Deno.test("absent port lines, a missing rdma entry and no caps are named as absent", () => {
  const noCaps = JSON.stringify(
    JSON.parse(RDMA).map((l: Record<string, unknown>) => {
      delete l.caps;
      return l;
    }),
  );
  assert.deepEqual(diffs({ rdma: noCaps }), [
    "Capability mask: rdma link caps is (absent), want a mask with IsSystemImageGUIDSupported, " +
    "IsExtendedSpeedsSupported, IsConnectionManagementSupported, IsClientReregistrationSupported, " +
    "IsNoticeSupported, IsTrapSupported, IsSMDisabled, IsCapabilityMaskNoticeSupported " +
    "set and IsSM clear",
  ]);
  const a = parseIbModeAttributes(output(), "cnuas_ib9");
  const d = ibModeAttributeDifferences(a, WANT);
  assert.ok(d.includes("State: rdma link state is (absent), want ACTIVE"), d.join("\n"));
  assert.ok(d.includes("GID table: rdma link subnet_prefix is (absent), want fe80:0000:0000:0000"));
  assert.ok(!d.some((l) => /^Net device/.test(l)), "no rdma entry means no netdev either");
  assert.equal(d.filter((l) => / rdma link /.test(l)).length, d.length);
  const noPortGuid = diffs({ ibstat: plant(IBSTAT, "\t\tPort GUID: 0x00c70afffe000001\n", "") });
  assert.deepEqual(noPortGuid, [
    "Port GUID: ibstat Port GUID is (absent), want a non-zero GUID",
  ]);
});

Deno.test("a RoCE-mode port fails the IB-mode check on the link layer and the GID table", () => {
  const roce = {
    devinfo: plant(
      plant(
        plant(DEVINFO, "link_layer:\t\tInfiniBand", "link_layer:\t\tEthernet"),
        "gid_tbl_len:\t\t1\n",
        "gid_tbl_len:\t\t1024\n",
      ),
      "fe80:0000:0000:0000:00c7:0aff:fe00:0001\n",
      "fe80::c7:aff:fe00:1, RoCE v2\n",
    ),
    ibstat: plant(IBSTAT, "Link layer: InfiniBand", "Link layer: Ethernet"),
  };
  const d = diffs(roce);
  for (
    const line of [
      "GID table length: ibv_devinfo gid_tbl_len is 1024, want 1",
      "Link layer: ibv_devinfo link_layer is Ethernet, want InfiniBand",
      "Link layer: ibstat Link layer is Ethernet, want InfiniBand",
      "GID table: ibv_devinfo GID[0] is fe80::c7:aff:fe00:1, want " +
      "fe80:0000:0000:0000:00c7:0aff:fe00:0001",
    ]
  ) assert.ok(d.includes(line), `${line} in\n${d.join("\n")}`);
});

Deno.test("table 4.1 is written once: the two modes differ only in GID table length and link layer", () => {
  const key = (e: { tool: string; field: string }) => `${e.tool} ${e.field}`;
  const common = new Set(TABLE_4_1_COMMON.map(key));
  const extra = (t: typeof TABLE_4_1) =>
    t.filter((e) => !common.has(key(e))).map((e) => `${key(e)}=${e.want}`);
  assert.deepEqual(extra(TABLE_4_1), [
    "ibv_devinfo gid_tbl_len=1024",
    "ibv_devinfo link_layer=Ethernet",
    "ibstat Link layer=Ethernet",
  ]);
  assert.deepEqual(extra(TABLE_4_1_IB), [
    "ibv_devinfo gid_tbl_len=1",
    "ibv_devinfo link_layer=InfiniBand",
    "ibstat Link layer=InfiniBand",
  ]);
  const a = parseIbModeAttributes(output(), "cnuas_ib0");
  assert.deepEqual(tableDifferences(TABLE_4_1_IB, a.devinfo, a.ibstat), []);
});

Deno.test("GUIDs are read in either tool's format", () => {
  assert.equal(normalizeGuid("0x00c70afffe000001"), GUID);
  assert.equal(normalizeGuid("00c7:0aff:fe00:0001"), GUID);
  assert.equal(normalizeGuid("0x1"), "0000000000000001");
  assert.equal(normalizeGuid("zz"), undefined);
  assert.equal(normalizeGuid(undefined), undefined);
});
