/**
 * The datasheet's table 4.1 (reported device attributes) as `ibv_devinfo -v`
 * and `ibstat` print them, in RoCE mode and in native InfiniBand mode, and
 * the comparison of what a guest shows with it. The table is written once:
 * {@link TABLE_4_1_COMMON} holds what both modes share (docs/devices.md:
 * "Everything else in table 4.1 is the same in both modes"), the two mode
 * tables add the GID table length and the link layer. In IB mode the port
 * must also show what the subnet manager made of it and what the driver's
 * contract says (docs/devices.md, "cnuas_ib in native InfiniBand mode: port
 * and agents"): {@link ibModeAttributeDifferences}.
 *
 * @example
 * ```ts
 * const seen = await readIbModeAttributes(guest, "cnuas_ib0");
 * const diffs = ibModeAttributeDifferences(seen, { lid: 2, smLid: 1 });
 * ```
 */
import type { IbModeAttributes, Ibstat, IbvDevinfo } from "./cnuas_ib.ts";

/**
 * One line of table 4.1 as a tool prints it: (attribute, tool, field).
 * `where` says which part of the output.
 */
export interface TableEntry {
  attribute: string;
  tool: "ibv_devinfo" | "ibstat";
  where: "device" | "port";
  field: string;
  want: string;
}

/** Datasheet table 4.1, what RoCE and native IB mode share, in the words of the tools. */
export const TABLE_4_1_COMMON: readonly TableEntry[] = [
  {
    attribute: "Firmware version",
    tool: "ibv_devinfo",
    where: "device",
    field: "fw_ver",
    want: "0.1.0",
  },
  {
    attribute: "Firmware version",
    tool: "ibstat",
    where: "device",
    field: "Firmware version",
    want: "0.1.0",
  },
  {
    attribute: "Hardware version",
    tool: "ibv_devinfo",
    where: "device",
    field: "hw_ver",
    want: "0x1",
  },
  {
    attribute: "Hardware version",
    tool: "ibstat",
    where: "device",
    field: "Hardware version",
    want: "1",
  },
  {
    attribute: "Maximum queue pairs",
    tool: "ibv_devinfo",
    where: "device",
    field: "max_qp",
    want: "256",
  },
  {
    attribute: "Maximum work requests per queue pair",
    tool: "ibv_devinfo",
    where: "device",
    field: "max_qp_wr",
    want: "4096",
  },
  {
    attribute: "Maximum completion queues",
    tool: "ibv_devinfo",
    where: "device",
    field: "max_cq",
    want: "256",
  },
  {
    attribute: "Maximum completion queue entries",
    tool: "ibv_devinfo",
    where: "device",
    field: "max_cqe",
    want: "4096",
  },
  {
    attribute: "Maximum memory regions",
    tool: "ibv_devinfo",
    where: "device",
    field: "max_mr",
    want: "256",
  },
  {
    attribute: "Maximum protection domains",
    tool: "ibv_devinfo",
    where: "device",
    field: "max_pd",
    want: "64",
  },
  {
    attribute: "Maximum scatter gather entries",
    tool: "ibv_devinfo",
    where: "device",
    field: "max_sge",
    want: "16",
  },
  {
    attribute: "Outstanding read and atomic operations",
    tool: "ibv_devinfo",
    where: "device",
    field: "max_qp_rd_atom",
    want: "16",
  },
  {
    attribute: "Outstanding read and atomic operations",
    tool: "ibv_devinfo",
    where: "device",
    field: "max_qp_init_rd_atom",
    want: "16",
  },
  {
    attribute: "Atomic capability",
    tool: "ibv_devinfo",
    where: "device",
    field: "atomic_cap",
    want: "ATOMIC_HCA (1)",
  },
  {
    attribute: "Partition keys",
    tool: "ibv_devinfo",
    where: "device",
    field: "max_pkeys",
    want: "1",
  },
  {
    attribute: "Partition keys",
    tool: "ibv_devinfo",
    where: "port",
    field: "pkey_tbl_len",
    want: "1",
  },
  {
    attribute: "Multicast groups",
    tool: "ibv_devinfo",
    where: "device",
    field: "max_mcast_grp",
    want: "256",
  },
  {
    attribute: "Queue pairs per multicast group",
    tool: "ibv_devinfo",
    where: "device",
    field: "max_mcast_qp_attach",
    want: "256",
  },
  // Not in the datasheet's table: our own choice, documented in
  // docs/devices.md ("Shared receive queues") and cnuas_ib.h.
  {
    attribute: "Shared receive queues (docs/devices.md)",
    tool: "ibv_devinfo",
    where: "device",
    field: "max_srq",
    want: "256",
  },
  {
    attribute: "Work requests per SRQ (docs/devices.md)",
    tool: "ibv_devinfo",
    where: "device",
    field: "max_srq_wr",
    want: "4096",
  },
  {
    attribute: "Scatter/gather entries per SRQ WR (docs/devices.md)",
    tool: "ibv_devinfo",
    where: "device",
    field: "max_srq_sge",
    want: "16",
  },
  { attribute: "Path MTU", tool: "ibv_devinfo", where: "port", field: "max_mtu", want: "4096 (5)" },
  {
    attribute: "Maximum message size",
    tool: "ibv_devinfo",
    where: "port",
    field: "max_msg_sz",
    want: "0x7fffffff",
  },
  {
    attribute: "Reported speed and width",
    tool: "ibv_devinfo",
    where: "port",
    field: "active_width",
    want: "4X (2)",
  },
  {
    attribute: "Reported speed and width",
    tool: "ibv_devinfo",
    where: "port",
    field: "active_speed",
    want: "25.0 Gbps (32)",
  },
  {
    attribute: "Reported speed and width",
    tool: "ibstat",
    where: "port",
    field: "Rate",
    want: "100",
  },
  {
    attribute: "PCI identity",
    tool: "ibv_devinfo",
    where: "device",
    field: "vendor_id",
    want: "0x1af4",
  },
  {
    attribute: "PCI identity",
    tool: "ibv_devinfo",
    where: "device",
    field: "vendor_part_id",
    want: "4336",
  },
  { attribute: "Ports", tool: "ibv_devinfo", where: "device", field: "phys_port_cnt", want: "1" },
  { attribute: "Ports", tool: "ibstat", where: "device", field: "Number of ports", want: "1" },
];

/** Datasheet table 4.1 in RoCE mode (`link_layer=eth`). */
export const TABLE_4_1: readonly TableEntry[] = [
  ...TABLE_4_1_COMMON,
  {
    attribute: "GID table length",
    tool: "ibv_devinfo",
    where: "port",
    field: "gid_tbl_len",
    want: "1024",
  },
  {
    attribute: "Link layer",
    tool: "ibv_devinfo",
    where: "port",
    field: "link_layer",
    want: "Ethernet",
  },
  { attribute: "Link layer", tool: "ibstat", where: "port", field: "Link layer", want: "Ethernet" },
];

/** Datasheet table 4.1 in native InfiniBand mode (`link_layer=ib`). */
export const TABLE_4_1_IB: readonly TableEntry[] = [
  ...TABLE_4_1_COMMON,
  {
    attribute: "GID table length",
    tool: "ibv_devinfo",
    where: "port",
    field: "gid_tbl_len",
    want: "1",
  },
  {
    attribute: "Link layer",
    tool: "ibv_devinfo",
    where: "port",
    field: "link_layer",
    want: "InfiniBand",
  },
  {
    attribute: "Link layer",
    tool: "ibstat",
    where: "port",
    field: "Link layer",
    want: "InfiniBand",
  },
];

/** One comparison: `what` (tool and field) printed `got`, `want` was due. */
interface Check {
  attribute: string;
  what: string;
  got: string | undefined;
  want: string;
}

/** One line per failed check: `attribute: what is got, want want`. */
function failed(checks: Check[]): string[] {
  return checks.filter((c) => c.got !== c.want).map((c) =>
    `${c.attribute}: ${c.what} is ${c.got ?? "(absent)"}, want ${c.want}`
  );
}

/** The table's entries as checks against what the tools printed (port 1). */
function tableChecks(table: readonly TableEntry[], devinfo: IbvDevinfo, ibstat: Ibstat): Check[] {
  return table.map((e) => {
    const src = e.tool === "ibv_devinfo"
      ? (e.where === "device" ? devinfo.device : devinfo.ports[0])
      : (e.where === "device" ? ibstat.ca : ibstat.ports[0]);
    return {
      attribute: e.attribute,
      what: `${e.tool} ${e.field}`,
      got: src?.get(e.field),
      want: e.want,
    };
  });
}

/** Every row of `table` whose value differs from what the tools printed. */
export function tableDifferences(
  table: readonly TableEntry[],
  devinfo: IbvDevinfo,
  ibstat: Ibstat,
): string[] {
  return failed(tableChecks(table, devinfo, ibstat));
}

/** What the port must show in IB mode beyond table 4.1: what the SM gave it. */
export interface IbModeWant {
  /** The LID the subnet manager assigned to this port. */
  lid: number;
  /** The subnet manager's own LID. */
  smLid: number;
  /** The subnet prefix the SM set, as rdma prints it. Default `fe80:0000:0000:0000`. */
  subnetPrefix?: string;
  /**
   * The port GUID, 16 hex digits (`00c70afffe000001`). Default: whatever
   * ibstat's Port GUID is (then only its agreement with the others is checked).
   */
  portGuid?: string;
  /** SubnetTimeOut the SM set (docs/switch.md: 18). Default 18. */
  subnetTimeout?: number;
  /** The SM's SL (the SM sends on SL 0). Default 0. */
  smSl?: number;
}

/** A PortInfo CapabilityMask bit: IBA name, value, rdma's name for it. */
interface CapBit {
  name: string;
  bit: number;
  rdma: string;
}

/**
 * The CapabilityMask bits an IB-mode port must have: the driver's own three
 * and the one ib_cm adds with modify_port once it binds.
 */
export const IB_PORT_CAPS_REQUIRED: readonly CapBit[] = [
  { name: "IsSystemImageGUIDSupported", bit: 0x800, rdma: "SYS_IMAGE_GUID" },
  { name: "IsExtendedSpeedsSupported", bit: 0x4000, rdma: "EXTENDED_SPEEDS" },
  { name: "IsConnectionManagementSupported", bit: 0x10000, rdma: "CM" },
  { name: "IsClientReregistrationSupported", bit: 0x2000000, rdma: "CLIENT_REG" },
  // datasheet 4.4: "subnet manager, notice and trap port capabilities" (docs/devices.md)
  { name: "IsNoticeSupported", bit: 0x4, rdma: "NOTICE" },
  { name: "IsTrapSupported", bit: 0x8, rdma: "TRAP" },
  { name: "IsSMDisabled", bit: 0x400, rdma: "SM_DISABLED" },
  { name: "IsCapabilityMaskNoticeSupported", bit: 0x400000, rdma: "CAP_MASK_NOTICE" },
];

/** The bits it must not have: it is not a subnet manager (that lives in the switch). */
export const IB_PORT_CAPS_FORBIDDEN: readonly CapBit[] = [
  { name: "IsSM", bit: 0x2, rdma: "SM" },
];

/** A GUID as printed (`0x00c70afffe000001`, `00c7:0aff:fe00:0001`) as 16 hex digits, or undefined. */
export function normalizeGuid(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const hex = text.trim().toLowerCase().replace(/^0x/, "").replaceAll(":", "");
  return /^[0-9a-f]{1,16}$/.test(hex) ? hex.padStart(16, "0") : undefined;
}

/** 16 hex digits in ibv_devinfo's four groups: `00c7:0aff:fe00:0001`. */
function guidGroups(guid: string): string {
  return guid.match(/.{4}/g)!.join(":");
}

/** The CapabilityMask checks of one printed mask (hex) or list of rdma names. */
function capChecks(what: string, printed: string | string[] | undefined): Check[] {
  const attribute = "Capability mask";
  const all = [...IB_PORT_CAPS_REQUIRED, ...IB_PORT_CAPS_FORBIDDEN];
  if (Array.isArray(printed)) {
    return all.map((c) => {
      const want = IB_PORT_CAPS_REQUIRED.includes(c) ? "present" : "absent";
      return {
        attribute,
        what: `${what} ${c.rdma}`,
        got: printed.includes(c.rdma) ? "present" : "absent",
        want,
      };
    });
  }
  const n = printed !== undefined && /^0x[0-9a-f]{1,8}$/i.test(printed.trim())
    ? parseInt(printed.trim(), 16)
    : undefined;
  if (n === undefined) {
    const want = `a mask with ${IB_PORT_CAPS_REQUIRED.map((c) => c.name).join(", ")} set and ` +
      `${IB_PORT_CAPS_FORBIDDEN.map((c) => c.name).join(", ")} clear`;
    return [{ attribute, what, got: printed, want }];
  }
  return all.map((c) => ({
    attribute,
    what: `${what} ${printed} bit ${c.name} (0x${c.bit.toString(16)})`,
    got: (n & c.bit) ? "set" : "clear",
    want: IB_PORT_CAPS_REQUIRED.includes(c) ? "set" : "clear",
  }));
}

/**
 * Every way what a guest shows of its port in native InfiniBand mode
 * differs from what it must show, by attribute, one line each naming the
 * attribute, the tool and field, what it showed and what is due:
 *
 * - table 4.1 in IB mode ({@link TABLE_4_1_IB}): GID table length 1, link
 *   layer InfiniBand, the rest as in RoCE mode;
 * - the port the SM brought up: State Active, Physical state LinkUp, Base
 *   lid = `want.lid`, SM lid = `want.smLid`, LMC 0, SM SL, subnet timeout,
 *   active MTU 4096 — in each tool that prints it;
 * - GIDs: exactly one, subnet prefix : port GUID; rdma's subnet prefix;
 * - GUIDs: port GUID = node GUID = system image GUID, in both tools;
 * - CapabilityMask: IsSystemImageGUIDSupported, IsExtendedSpeedsSupported,
 *   IsConnectionManagementSupported, IsClientReregistrationSupported set,
 *   IsSM clear — in ibstat, ibv_devinfo and rdma's caps;
 * - P_Key table entry 0 is 0xffff (its length 1 is in the table);
 * - no net_device bound to the ib_device (rdma link shows none).
 */
export function ibModeAttributeDifferences(seen: IbModeAttributes, want: IbModeWant): string[] {
  const port = seen.devinfo.ports[0];
  const ib = seen.ibstat.ports[0];
  const rdma = seen.rdma;
  const num = (n: number | undefined) => n === undefined ? undefined : String(n);
  const prefix = want.subnetPrefix ?? "fe80:0000:0000:0000";
  const checks: Check[] = tableChecks(TABLE_4_1_IB, seen.devinfo, seen.ibstat);
  const portCheck = (attribute: string, rows: [string, string | undefined, string][]) => {
    for (const [what, got, w] of rows) checks.push({ attribute, what, got, want: w });
  };
  portCheck("State", [
    ["ibv_devinfo state", port?.get("state"), "PORT_ACTIVE (4)"],
    ["ibstat State", ib?.get("State"), "Active"],
    ["rdma link state", rdma?.state, "ACTIVE"],
  ]);
  portCheck("Physical state", [
    ["ibv_devinfo phys_state", port?.get("phys_state"), "LINK_UP (5)"],
    ["ibstat Physical state", ib?.get("Physical state"), "LinkUp"],
    ["rdma link physical_state", rdma?.physical_state, "LINK_UP"],
  ]);
  portCheck("Base lid", [
    ["ibv_devinfo port_lid", port?.get("port_lid"), String(want.lid)],
    ["ibstat Base lid", ib?.get("Base lid"), String(want.lid)],
    ["rdma link lid", num(rdma?.lid), String(want.lid)],
  ]);
  portCheck("SM lid", [
    ["ibv_devinfo sm_lid", port?.get("sm_lid"), String(want.smLid)],
    ["ibstat SM lid", ib?.get("SM lid"), String(want.smLid)],
    ["rdma link sm_lid", num(rdma?.sm_lid), String(want.smLid)],
  ]);
  portCheck("LMC", [
    ["ibv_devinfo port_lmc", port?.get("port_lmc"), "0x00"],
    ["ibstat LMC", ib?.get("LMC"), "0"],
    ["rdma link lmc", num(rdma?.lmc), "0"],
  ]);
  portCheck("SM SL", [["ibv_devinfo sm_sl", port?.get("sm_sl"), String(want.smSl ?? 0)]]);
  portCheck("Subnet timeout", [
    ["ibv_devinfo subnet_timeout", port?.get("subnet_timeout"), String(want.subnetTimeout ?? 18)],
  ]);
  portCheck("Path MTU", [["ibv_devinfo active_mtu", port?.get("active_mtu"), "4096 (5)"]]);

  // GUIDs: the port's, the node's and the system image's are one
  const ibstatPortGuid = normalizeGuid(ib?.get("Port GUID"));
  const guid = want.portGuid !== undefined ? normalizeGuid(want.portGuid) : ibstatPortGuid;
  if (guid === undefined || /^0+$/.test(guid)) {
    portCheck("Port GUID", [["ibstat Port GUID", ib?.get("Port GUID"), "a non-zero GUID"]]);
  } else {
    const hex = `0x${guid}`;
    const groups = guidGroups(guid);
    if (want.portGuid !== undefined) {
      portCheck("Port GUID", [["ibstat Port GUID", ib?.get("Port GUID"), hex]]);
    }
    portCheck("Node GUID", [
      ["ibstat Node GUID", seen.ibstat.ca.get("Node GUID"), hex],
      ["ibv_devinfo node_guid", seen.devinfo.device.get("node_guid"), groups],
    ]);
    portCheck("System image GUID", [
      ["ibstat System image GUID", seen.ibstat.ca.get("System image GUID"), hex],
      ["ibv_devinfo sys_image_guid", seen.devinfo.device.get("sys_image_guid"), groups],
    ]);
  }

  // the GID table: one entry, subnet prefix : port GUID
  const gids = seen.devinfo.gids[0] ?? new Map<number, string>();
  portCheck("GID table", [
    ["ibv_devinfo GID line count", String(gids.size), "1"],
    ["rdma link subnet_prefix", rdma?.subnet_prefix, prefix],
  ]);
  if (guid !== undefined) {
    portCheck("GID table", [["ibv_devinfo GID[0]", gids.get(0), `${prefix}:${guidGroups(guid)}`]]);
  }

  checks.push(...capChecks("ibstat Capability mask", ib?.get("Capability mask")));
  checks.push(...capChecks("ibv_devinfo port_cap_flags", port?.get("port_cap_flags")));
  checks.push(
    ...capChecks("rdma link caps", rdma?.caps),
  );

  portCheck("P_Key table", [["sysfs ports/1/pkeys/0", seen.pkey0, "0xffff"]]);
  portCheck("Net device", [["rdma link netdev", rdma?.netdev ?? "(none)", "(none)"]]);
  return failed(checks);
}
