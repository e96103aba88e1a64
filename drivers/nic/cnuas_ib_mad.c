// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * cnuas_ib: native InfiniBand mode (link_layer=ib) — the port's state and
 * the agents a real HCA runs in firmware, here in the driver:
 *
 *   - the subnet management agent (SMA): answers the SM's SMPs, which
 *     ib_mad hands to process_mad after its directed-route checks
 *     (NodeInfo, NodeDescription, PortInfo Get/Set, GUIDInfo, P_KeyTable;
 *     SMInfo and everything else refused with the MAD status IBA asks for);
 *   - the performance management agent (PMA): ClassPortInfo, PortCounters
 *     and PortCountersExtended, which perfquery and ib_core's sysfs
 *     counters read;
 *   - the port state the SM drives (DOWN, INIT, ARMED, ACTIVE), the LID,
 *     SM LID and subnet prefix, and the events ib_core's cache, ib_sa and
 *     IPoIB follow.
 *
 * The contract is docs/devices.md, "cnuas_ib in native InfiniBand mode";
 * the field layouts are IBA volume 1 chapters 14 and 16 (NodeInfo,
 * PortInfo, PortCounters), as <rdma/ib_smi.h> and <rdma/ib_pma.h> lay
 * them out.
 */
#include <linux/string.h>
#include <linux/unaligned.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_pma.h>
#include <rdma/ib_smi.h>

#include "cnuas_ib.h"

/*
 * What the port always reports in PortInfo.CapabilityMask.  The datasheet
 * (4.4) has IB mode advertise "subnet manager, notice and trap" port
 * capabilities: notices and traps are sent (cnuas_ib_trap_cap_change());
 * no SM runs on the port, its SM being the switch's, so the subnet manager
 * capability is IsSMDisabled, never IsSM (docs/devices.md).
 */
#define CNUAS_IB_PORT_CAPS	(IB_PORT_SYS_IMAGE_GUID_SUP | \
				 IB_PORT_EXTENDED_SPEEDS_SUP | \
				 IB_PORT_CLIENT_REG_SUP | \
				 IB_PORT_SM_DISABLED | \
				 IB_PORT_NOTICE_SUP | \
				 IB_PORT_TRAP_SUP | \
				 IB_PORT_CAP_MASK_NOTICE_SUP)
/* Bits modify_port may set or clear (what ib_core's clients ask for). */
#define CNUAS_IB_PORT_CAPS_MUTABLE	(IB_PORT_CM_SUP | IB_PORT_SM | \
					 IB_PORT_SNMP_TUNNEL_SUP | \
					 IB_PORT_DEVICE_MGMT_SUP | \
					 IB_PORT_VENDOR_CLASS_SUP | \
					 IB_PORT_BOOT_MGMT_SUP)

/* MAD status words, big-endian as they go in the header (IBA 13.4.7). */
#define ST_BAD_VERSION	cpu_to_be16(IB_MGMT_MAD_STATUS_BAD_VERSION)
#define ST_UNSUP_METHOD	cpu_to_be16(IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD)
#define ST_UNSUP_ATTR	cpu_to_be16(IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB)
#define ST_INVALID	cpu_to_be16(IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE)

/* Notice (IBA vol 1, 14.2.5.1): a generic trap from a CA. */
#define NOTICE_GENERIC		0x80
#define NOTICE_TYPE_INFO	4
#define NOTICE_PRODUCER_CA	1
#define TRAP_CAP_MASK_CHANGE	144

/* PortInfo encodings (IBA vol 1, 14.2.5.6). */
#define PI_LINK_WIDTH_4X	0x02
#define PI_LINK_SPEED_SDR_DDR_QDR 0x07	/* supported / enabled */
#define PI_LINK_SPEED_QDR	0x04	/* active: superseded by the ext. speed */
#define PI_LINK_SPEED_EXT_EDR	0x02	/* LinkSpeedExtActive 25.78125 Gb/s */
#define PI_LINK_SPEED_EXT_SUP	0x03	/* FDR and EDR */
#define PI_LINKDOWN_POLLING	0x02
#define PI_VL_CAP_VL0		0x01
#define PI_OPERATIONAL_VLS_1	0x01
#define PI_RESP_TIME_VALUE	18	/* 4.096 us * 2^18, about 1 s */
#define PI_HOQ_LIFE		0x13
#define PI_VL_STALL_COUNT	0x07
/* Byte 62: LinkSpeedExtActive (7:4) and LinkSpeedExtSupported (3:0). */
#define PI_EXT_SPEED_BYTE	62

/* ---- port state ---- */

/**
 * cnuas_ib_port_init - the port as it is before any SM has seen it
 * @dev: the device (probe, IB mode, before cnuas_net can call us)
 */
void cnuas_ib_port_init(struct cnuas_ib_dev *dev)
{
	struct cnuas_ib_port *p = &dev->port;

	spin_lock_init(&p->lock);
	p->lid = 0;
	p->sm_lid = 0;
	p->sm_sl = 0;
	p->lmc = 0;
	/* until the carrier is read (cnuas_ib_port_link_change) */
	p->state = IB_PORT_DOWN;
	p->phys_state = IB_PORT_PHYS_STATE_POLLING;
	p->subnet_prefix = cpu_to_be64(CNUAS_IB_DEFAULT_SUBNET_PREFIX);
	p->subnet_timeout = 0;
	p->neighbor_mtu = CNUAS_IB_MAX_MTU;
	p->init_type_reply = 0;
	p->mkey = 0;
	p->mkey_lease = 0;
	p->mkey_prot = 0;
	p->cap_mask = CNUAS_IB_PORT_CAPS;
}

static void cnuas_ib_port_dispatch(struct cnuas_ib_dev *dev,
				   enum ib_event_type type)
{
	struct ib_event ev = {
		.device = &dev->ibdev,
		.element.port_num = 1,
		.event = type,
	};

	ib_dispatch_event(&ev);
}

/**
 * cnuas_ib_port_link_change - the physical link came up or went down
 * @dev: the device
 * @up: the new carrier
 *
 * Down: the port is DOWN (physical state Polling) and an ACTIVE port
 * reports IB_EVENT_PORT_ERR.  Up: the link trained, the port is INIT and
 * waits for the SM; the LID stays as the SM last set it (IBA: PortInfo
 * survives a link retrain), but nothing is sent until the SM activates
 * the port again.  Any context.
 */
void cnuas_ib_port_link_change(struct cnuas_ib_dev *dev, bool up)
{
	struct cnuas_ib_port *p = &dev->port;
	unsigned long flags;
	bool was_active;

	spin_lock_irqsave(&p->lock, flags);
	was_active = p->state == IB_PORT_ACTIVE;
	WRITE_ONCE(p->state, up ? IB_PORT_INIT : IB_PORT_DOWN);
	p->phys_state = up ? IB_PORT_PHYS_STATE_LINK_UP :
			     IB_PORT_PHYS_STATE_POLLING;
	spin_unlock_irqrestore(&p->lock, flags);
	if (was_active)
		cnuas_ib_port_dispatch(dev, IB_EVENT_PORT_ERR);
}

/**
 * cnuas_ib_modify_port - ib_core clients announce capabilities (ib_cm: CM)
 * @ibdev: the device
 * @port: must be 1
 * @mask: IB_PORT_SHUTDOWN, IB_PORT_INIT_TYPE, IB_PORT_RESET_QKEY_CNTR
 * @props: capability bits to set and clear, the InitType
 *
 * Return: 0, or -EINVAL for another port or a bit we cannot claim.
 */
int cnuas_ib_modify_port(struct ib_device *ibdev, u32 port, int mask,
			 struct ib_port_modify *props)
{
	struct cnuas_ib_dev *dev = to_cdev(ibdev);
	struct cnuas_ib_port *p = &dev->port;
	unsigned long flags;
	u32 old, caps;

	if (port != 1)
		return -EINVAL;
	if ((props->set_port_cap_mask | props->clr_port_cap_mask) &
	    ~CNUAS_IB_PORT_CAPS_MUTABLE)
		return -EINVAL;
	if (mask & IB_PORT_SHUTDOWN)
		return -EOPNOTSUPP;
	spin_lock_irqsave(&p->lock, flags);
	old = p->cap_mask;
	p->cap_mask |= props->set_port_cap_mask;
	p->cap_mask &= ~props->clr_port_cap_mask;
	caps = p->cap_mask;
	if (mask & IB_PORT_INIT_TYPE)
		p->init_type_reply = props->init_type & 0xf;
	if (mask & IB_PORT_RESET_QKEY_CNTR)
		p->qkey_violations = 0;
	spin_unlock_irqrestore(&p->lock, flags);
	if (caps != old)
		cnuas_ib_trap_cap_change(dev, caps);
	return 0;
}

/* ---- traps ---- */

static void cnuas_trap_send_done(struct ib_mad_agent *agent,
				 struct ib_mad_send_wc *wc)
{
	rdma_destroy_ah(wc->send_buf->ah, RDMA_DESTROY_AH_SLEEPABLE);
	ib_free_send_mad(wc->send_buf);
}

/* The SM's TrapRepress, matched to our trap by its TID: nothing to do. */
static void cnuas_trap_recv(struct ib_mad_agent *agent,
			    struct ib_mad_send_buf *send_buf,
			    struct ib_mad_recv_wc *wc)
{
	ib_free_recv_mad(wc);
}

/**
 * cnuas_ib_trap_init - the QP0 agent traps go out through
 * @dev: the device, registered with ib_core (IB mode only)
 *
 * Return: 0 or an errno; without the agent no trap is sent.
 */
int cnuas_ib_trap_init(struct cnuas_ib_dev *dev)
{
	struct ib_mad_agent *agent;

	agent = ib_register_mad_agent(&dev->ibdev, 1, IB_QPT_SMI, NULL, 0,
				      cnuas_trap_send_done, cnuas_trap_recv,
				      dev, 0);
	if (IS_ERR(agent))
		return PTR_ERR(agent);
	dev->trap_agent = agent;
	return 0;
}

/* Before ib_unregister_device: ib_mad waits for sends in flight. */
void cnuas_ib_trap_exit(struct cnuas_ib_dev *dev)
{
	if (dev->trap_agent)
		ib_unregister_mad_agent(dev->trap_agent);
	dev->trap_agent = NULL;
}

/*
 * Trap 144 (IBA 14.2.5.1, "CapabilityMask changed"): a LID-routed
 * SubnTrap(Notice) from QP0 to the SM's LID, as a CA sends when a client
 * sets or clears a port capability (ib_cm loading or leaving).  Sent only
 * while the port is ACTIVE and knows its SM; best effort, as IBA allows
 * (the SM's TrapRepress ends it; we do not resend).  Process context.
 */
void cnuas_ib_trap_cap_change(struct cnuas_ib_dev *dev, u32 caps)
{
	struct cnuas_ib_port *p = &dev->port;
	struct rdma_ah_attr attr = {};
	struct ib_mad_send_buf *buf;
	u16 lid, sm_lid;
	struct ib_smp *smp;
	struct ib_ah *ah;
	u8 *n, sm_sl;

	if (!cnuas_ib_is_ib(dev) || !dev->trap_agent)
		return;
	spin_lock_irq(&p->lock);
	lid = p->lid;
	sm_lid = p->sm_lid;
	sm_sl = p->sm_sl;
	if (p->state != IB_PORT_ACTIVE || !sm_lid)
		sm_lid = 0;
	spin_unlock_irq(&p->lock);
	if (!sm_lid)
		return;

	attr.type = RDMA_AH_ATTR_TYPE_IB;
	rdma_ah_set_dlid(&attr, sm_lid);
	rdma_ah_set_sl(&attr, sm_sl);
	rdma_ah_set_port_num(&attr, 1);
	ah = rdma_create_ah(dev->trap_agent->qp->pd, &attr,
			    RDMA_CREATE_AH_SLEEPABLE);
	if (IS_ERR(ah))
		return;
	buf = ib_create_send_mad(dev->trap_agent, 0, 0, 0, IB_MGMT_MAD_HDR,
				 IB_MGMT_MAD_DATA, GFP_KERNEL,
				 IB_MGMT_BASE_VERSION);
	if (IS_ERR(buf)) {
		rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
		return;
	}
	buf->ah = ah;
	smp = buf->mad;
	smp->base_version = IB_MGMT_BASE_VERSION;
	smp->mgmt_class = IB_MGMT_CLASS_SUBN_LID_ROUTED;
	smp->class_version = 1;
	smp->method = IB_MGMT_METHOD_TRAP;
	smp->tid = cpu_to_be64(((u64)dev->trap_agent->hi_tid << 32) |
			       (u32)atomic_inc_return(&dev->trap_tid));
	smp->attr_id = IB_SMP_ATTR_NOTICE;
	n = smp->data;
	n[0] = NOTICE_GENERIC | NOTICE_TYPE_INFO;
	n[3] = NOTICE_PRODUCER_CA;	/* ProducerType, 24 bits */
	put_unaligned_be16(TRAP_CAP_MASK_CHANGE, n + 4);
	put_unaligned_be16(lid, n + 6);		/* IssuerLID */
	put_unaligned_be16(lid, n + 12);	/* DataDetails: LIDADDR */
	put_unaligned_be32(caps, n + 16);	/* the new CapabilityMask */
	if (ib_post_send_mad(buf, NULL)) {
		rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
		ib_free_send_mad(buf);
	}
}

/* ---- the SMA ---- */

static void cnuas_sma_node_info(struct cnuas_ib_dev *dev, u8 *data)
{
	struct ib_node_info *ni = (struct ib_node_info *)data;

	ni->base_version = IB_MGMT_BASE_VERSION;
	ni->class_version = 1;	/* of the SM class */
	ni->node_type = RDMA_NODE_IB_CA;
	ni->num_ports = 1;
	ni->sys_guid = dev->node_guid;
	ni->node_guid = dev->node_guid;
	ni->port_guid = dev->node_guid;	/* one port: its GUID is the node's */
	ni->partition_cap = cpu_to_be16(CNUAS_IB_MAX_PKEYS);
	ni->device_id = cpu_to_be16(CNUAS_IB_VENDOR_PART_ID);
	ni->revision = cpu_to_be32(CNUAS_IB_HW_VER);
	ni->local_port_num = 1;
	/* a 24-bit IEEE OUI; the PCI vendor ID stands in for it */
	ni->vendor_id[0] = (CNUAS_IB_VENDOR_ID >> 16) & 0xff;
	ni->vendor_id[1] = (CNUAS_IB_VENDOR_ID >> 8) & 0xff;
	ni->vendor_id[2] = CNUAS_IB_VENDOR_ID & 0xff;
}

/* PortInfo of port 1 as it is now; under the port lock. */
static void cnuas_sma_port_info(struct cnuas_ib_dev *dev, u8 *data,
				bool hide_mkey)
{
	const struct cnuas_ib_port *p = &dev->port;
	struct ib_port_info *pi = (struct ib_port_info *)data;

	memset(data, 0, IB_SMP_DATA_SIZE);
	pi->mkey = hide_mkey ? 0 : cpu_to_be64(p->mkey);
	pi->gid_prefix = p->subnet_prefix;
	pi->lid = cpu_to_be16(p->lid);
	pi->sm_lid = cpu_to_be16(p->sm_lid);
	pi->cap_mask = cpu_to_be32(p->cap_mask);
	pi->mkey_lease_period = cpu_to_be16(p->mkey_lease);
	pi->local_port_num = 1;
	pi->link_width_enabled = PI_LINK_WIDTH_4X;
	pi->link_width_supported = PI_LINK_WIDTH_4X;
	pi->link_width_active = PI_LINK_WIDTH_4X;
	pi->linkspeed_portstate = (PI_LINK_SPEED_SDR_DDR_QDR << 4) | p->state;
	pi->portphysstate_linkdown = (p->phys_state << 4) | PI_LINKDOWN_POLLING;
	pi->mkeyprot_resv_lmc = (p->mkey_prot << 6) | p->lmc;
	pi->linkspeedactive_enabled = (PI_LINK_SPEED_QDR << 4) |
				      PI_LINK_SPEED_SDR_DDR_QDR;
	pi->neighbormtu_mastersmsl = (p->neighbor_mtu << 4) | p->sm_sl;
	pi->vlcap_inittype = PI_VL_CAP_VL0 << 4;
	pi->inittypereply_mtucap = (p->init_type_reply << 4) |
				   CNUAS_IB_MAX_MTU;
	pi->vlstallcnt_hoqlife = (PI_VL_STALL_COUNT << 5) | PI_HOQ_LIFE;
	pi->operationalvl_pei_peo_fpi_fpo = PI_OPERATIONAL_VLS_1 << 4;
	pi->mkey_violations = cpu_to_be16(p->mkey_violations);
	pi->pkey_violations = cpu_to_be16(p->pkey_violations);
	pi->qkey_violations = cpu_to_be16(p->qkey_violations);
	pi->guid_cap = CNUAS_IB_GID_TBL_IB;
	pi->clientrereg_resv_subnetto = p->subnet_timeout & 0x1f;
	pi->resv_resptimevalue = PI_RESP_TIME_VALUE;
	data[PI_EXT_SPEED_BYTE] = (PI_LINK_SPEED_EXT_EDR << 4) |
				  PI_LINK_SPEED_EXT_SUP;
}

/* What a PortInfo Set changed, for the events that follow it. */
struct cnuas_pi_change {
	bool lid, sm, prefix, active, inactive, rereg;
};

/*
 * Apply a PortInfo Set (under the port lock).  Every field is checked
 * before any is applied: a Set that fails changes nothing, and the answer
 * is the attribute as it stands with status 0x1C (docs/devices.md).
 *
 * Return: 0 or ST_INVALID.
 */
static __be16 cnuas_sma_set_port_info(struct cnuas_ib_dev *dev,
				      const u8 *data,
				      struct cnuas_pi_change *chg)
{
	const struct ib_port_info *pi = (const struct ib_port_info *)data;
	struct cnuas_ib_port *p = &dev->port;
	u16 lid = be16_to_cpu(pi->lid);
	u16 sm_lid = be16_to_cpu(pi->sm_lid);
	u8 state = pi->linkspeed_portstate & 0xf;
	u8 phys = pi->portphysstate_linkdown >> 4;
	u8 lmc = pi->mkeyprot_resv_lmc & 0x7;
	u8 mtu = pi->neighbormtu_mastersmsl >> 4;
	u8 new_state = p->state;

	/* LIDs: unicast only, 0 means "not assigned" only for the SM LID */
	if (!lid || lid >= be16_to_cpu(IB_MULTICAST_LID_BASE))
		return ST_INVALID;
	if (sm_lid >= be16_to_cpu(IB_MULTICAST_LID_BASE))
		return ST_INVALID;
	if (lmc)	/* one LID per port: LMC 0 only */
		return ST_INVALID;
	if (mtu && (mtu < IB_MTU_256 || mtu > CNUAS_IB_MAX_MTU))
		return ST_INVALID;
	/* PortPhysicalState: no change, or Polling (a retrain we skip) */
	if (phys && phys != IB_PORT_PHYS_STATE_POLLING)
		return ST_INVALID;
	switch (state) {
	case IB_PORT_NOP:
		break;
	case IB_PORT_DOWN:
		/* the link retrains at once: back to INIT */
		if (p->state != IB_PORT_DOWN)
			new_state = IB_PORT_INIT;
		break;
	case IB_PORT_ARMED:
		if (p->state != IB_PORT_INIT && p->state != IB_PORT_ARMED)
			return ST_INVALID;
		new_state = IB_PORT_ARMED;
		break;
	case IB_PORT_ACTIVE:
		if (p->state != IB_PORT_ARMED && p->state != IB_PORT_ACTIVE)
			return ST_INVALID;
		new_state = IB_PORT_ACTIVE;
		break;
	default:	/* INIT cannot be set; 5..15 are reserved */
		return ST_INVALID;
	}

	chg->lid = lid != p->lid;
	chg->sm = sm_lid != p->sm_lid ||
		  (pi->neighbormtu_mastersmsl & 0xf) != p->sm_sl;
	chg->prefix = pi->gid_prefix != p->subnet_prefix;
	chg->active = new_state == IB_PORT_ACTIVE &&
		      p->state != IB_PORT_ACTIVE;
	chg->inactive = new_state != IB_PORT_ACTIVE &&
			p->state == IB_PORT_ACTIVE;
	chg->rereg = !!(pi->clientrereg_resv_subnetto & 0x80);

	p->mkey = be64_to_cpu(pi->mkey);
	p->subnet_prefix = pi->gid_prefix;
	WRITE_ONCE(p->lid, lid);
	p->sm_lid = sm_lid;
	p->sm_sl = pi->neighbormtu_mastersmsl & 0xf;
	p->mkey_lease = be16_to_cpu(pi->mkey_lease_period);
	p->mkey_prot = pi->mkeyprot_resv_lmc >> 6;
	if (mtu)
		p->neighbor_mtu = mtu;
	p->subnet_timeout = pi->clientrereg_resv_subnetto & 0x1f;
	WRITE_ONCE(p->state, new_state);
	return 0;
}

static void cnuas_sma_events(struct cnuas_ib_dev *dev,
			     const struct cnuas_pi_change *chg)
{
	if (chg->inactive)
		cnuas_ib_port_dispatch(dev, IB_EVENT_PORT_ERR);
	if (chg->lid)
		cnuas_ib_port_dispatch(dev, IB_EVENT_LID_CHANGE);
	if (chg->prefix)
		cnuas_ib_port_dispatch(dev, IB_EVENT_GID_CHANGE);
	if (chg->sm)
		cnuas_ib_port_dispatch(dev, IB_EVENT_SM_CHANGE);
	if (chg->active)
		cnuas_ib_port_dispatch(dev, IB_EVENT_PORT_ACTIVE);
	if (chg->rereg)
		cnuas_ib_port_dispatch(dev, IB_EVENT_CLIENT_REREGISTER);
}

/*
 * M_Key check (IBA 14.2.4): with a nonzero M_Key a Set must carry it, and
 * so must a Get when the protection bits are 2 or 3.  A failed check gets
 * no answer; it is counted in PortInfo.M_KeyViolations.  Under the lock.
 */
static bool cnuas_sma_mkey_ok(struct cnuas_ib_dev *dev,
			      const struct ib_smp *smp, int mad_flags)
{
	struct cnuas_ib_port *p = &dev->port;

	if ((mad_flags & IB_MAD_IGNORE_MKEY) || !p->mkey ||
	    be64_to_cpu(smp->mkey) == p->mkey)
		return true;
	if (smp->method == IB_MGMT_METHOD_GET && p->mkey_prot < 2)
		return true;
	if (p->mkey_violations != U16_MAX)
		p->mkey_violations++;
	return false;
}

/* The one port's number from an attribute modifier (0: the receiving port). */
static bool cnuas_sma_port_ok(const struct ib_smp *smp)
{
	u32 port = be32_to_cpu(smp->attr_mod);

	return port == 0 || port == 1;
}

static int cnuas_sma(struct cnuas_ib_dev *dev, int mad_flags,
		     const struct ib_smp *in, struct ib_smp *out)
{
	struct cnuas_pi_change chg = {};
	struct cnuas_ib_port *p = &dev->port;
	__be16 status = 0;
	bool hide_mkey;
	u8 *data;

	/* answers and traps from elsewhere are not ours to handle */
	if (in->method & IB_MGMT_METHOD_RESP ||
	    in->method == IB_MGMT_METHOD_TRAP_REPRESS)
		return IB_MAD_RESULT_SUCCESS;

	memcpy(out, in, sizeof(*out));
	data = out->data;
	out->method = IB_MGMT_METHOD_GET_RESP;
	out->status = 0;

	spin_lock_irq(&p->lock);
	if (!cnuas_sma_mkey_ok(dev, in, mad_flags)) {
		spin_unlock_irq(&p->lock);
		return IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_CONSUMED;
	}
	hide_mkey = p->mkey_prot == 1 && !(mad_flags & IB_MAD_IGNORE_MKEY) &&
		    be64_to_cpu(in->mkey) != p->mkey;

	if (in->class_version != 1) {
		status = ST_BAD_VERSION;
	} else if (in->method != IB_MGMT_METHOD_GET &&
		   in->method != IB_MGMT_METHOD_SET) {
		status = ST_UNSUP_METHOD;
	} else {
		switch (in->attr_id) {
		case IB_SMP_ATTR_NODE_DESC:
			if (in->method != IB_MGMT_METHOD_GET)
				status = ST_UNSUP_ATTR;
			else if (in->attr_mod)
				status = ST_INVALID;
			else
				memcpy(data, dev->ibdev.node_desc,
				       IB_DEVICE_NODE_DESC_MAX);
			break;
		case IB_SMP_ATTR_NODE_INFO:
			if (in->method != IB_MGMT_METHOD_GET)
				status = ST_UNSUP_ATTR;
			else if (in->attr_mod)
				status = ST_INVALID;
			else
				cnuas_sma_node_info(dev, data);
			break;
		case IB_SMP_ATTR_PORT_INFO:
			if (!cnuas_sma_port_ok(in)) {
				status = ST_INVALID;
				break;
			}
			if (in->method == IB_MGMT_METHOD_SET)
				status = cnuas_sma_set_port_info(dev, in->data,
								 &chg);
			cnuas_sma_port_info(dev, data, hide_mkey);
			break;
		case IB_SMP_ATTR_GUID_INFO:
			/* one GUID, in block 0; the SM may not add any */
			if (in->method != IB_MGMT_METHOD_GET) {
				status = ST_UNSUP_ATTR;
			} else if (in->attr_mod) {
				status = ST_INVALID;
			} else {
				memset(data, 0, IB_SMP_DATA_SIZE);
				memcpy(data, &dev->node_guid, 8);
			}
			break;
		case IB_SMP_ATTR_PKEY_TABLE:
			/* one P_Key, the default, fixed (datasheet 4.1) */
			if (in->method != IB_MGMT_METHOD_GET) {
				status = ST_UNSUP_ATTR;
			} else if (in->attr_mod & cpu_to_be32(0xffff)) {
				status = ST_INVALID;
			} else {
				memset(data, 0, IB_SMP_DATA_SIZE);
				put_unaligned_be16(CNUAS_DEFAULT_PKEY, data);
			}
			break;
		case IB_SMP_ATTR_SM_INFO:
			/* not an SM: IBA 14.4.1, "unsupported attribute" */
		default:
			status = ST_UNSUP_ATTR;
			break;
		}
	}
	spin_unlock_irq(&p->lock);

	out->status = status;
	if (in->mgmt_class == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE)
		out->status |= IB_SMP_DIRECTION;
	if (!status)
		cnuas_sma_events(dev, &chg);
	return IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_REPLY;
}

/* ---- the PMA ---- */

/* A 32-bit PortCounters counter saturates instead of wrapping. */
static __be32 cnuas_pma_sat32(u64 v)
{
	return cpu_to_be32(min_t(u64, v, U32_MAX));
}

/*
 * The counters as the PMA reports them: data in 4-byte words, packets,
 * less what a PortCounters Set cleared (@pma_base).
 */
static void cnuas_pma_read(struct cnuas_ib_dev *dev,
			   struct cnuas_net_rdma_counters *c)
{
	cnuas_net_rdma_counters(dev->net, c);
	spin_lock_irq(&dev->port.lock);
	c->tx_bytes -= min(c->tx_bytes, dev->pma_base.tx_bytes);
	c->rx_bytes -= min(c->rx_bytes, dev->pma_base.rx_bytes);
	c->tx_packets -= min(c->tx_packets, dev->pma_base.tx_packets);
	c->rx_packets -= min(c->rx_packets, dev->pma_base.rx_packets);
	spin_unlock_irq(&dev->port.lock);
}

/* A PortCounters Set clears the selected counters (the four we count). */
static void cnuas_pma_clear(struct cnuas_ib_dev *dev, bool xd, bool rd,
			    bool xp, bool rp)
{
	struct cnuas_net_rdma_counters now;

	cnuas_net_rdma_counters(dev->net, &now);
	spin_lock_irq(&dev->port.lock);
	if (xd)
		dev->pma_base.tx_bytes = now.tx_bytes;
	if (rd)
		dev->pma_base.rx_bytes = now.rx_bytes;
	if (xp)
		dev->pma_base.tx_packets = now.tx_packets;
	if (rp)
		dev->pma_base.rx_packets = now.rx_packets;
	spin_unlock_irq(&dev->port.lock);
}

static __be16 cnuas_pma_counters(struct cnuas_ib_dev *dev, bool set,
				 const u8 *in, u8 *data)
{
	const struct ib_pma_portcounters *req = (const void *)in;
	struct ib_pma_portcounters *pc = (void *)data;
	struct cnuas_net_rdma_counters c;
	__be16 sel = req->counter_select;
	u8 port_select = req->port_select;

	if (port_select != 1 && port_select != 0xff && port_select != 0)
		return ST_INVALID;
	if (set)
		cnuas_pma_clear(dev, sel & IB_PMA_SEL_PORT_XMIT_DATA,
				sel & IB_PMA_SEL_PORT_RCV_DATA,
				sel & IB_PMA_SEL_PORT_XMIT_PACKETS,
				sel & IB_PMA_SEL_PORT_RCV_PACKETS);
	cnuas_pma_read(dev, &c);
	memset(data, 0, sizeof(*pc));
	pc->port_select = port_select;
	pc->counter_select = sel;
	pc->port_xmit_data = cnuas_pma_sat32(c.tx_bytes / 4);
	pc->port_rcv_data = cnuas_pma_sat32(c.rx_bytes / 4);
	pc->port_xmit_packets = cnuas_pma_sat32(c.tx_packets);
	pc->port_rcv_packets = cnuas_pma_sat32(c.rx_packets);
	return 0;
}

static __be16 cnuas_pma_counters_ext(struct cnuas_ib_dev *dev, bool set,
				     const u8 *in, u8 *data)
{
	const struct ib_pma_portcounters_ext *req = (const void *)in;
	struct ib_pma_portcounters_ext *pc = (void *)data;
	struct cnuas_net_rdma_counters c;
	__be16 sel = req->counter_select;
	u8 port_select = req->port_select;

	if (port_select != 1 && port_select != 0xff && port_select != 0)
		return ST_INVALID;
	if (set)
		cnuas_pma_clear(dev, sel & IB_PMA_SELX_PORT_XMIT_DATA,
				sel & IB_PMA_SELX_PORT_RCV_DATA,
				sel & IB_PMA_SELX_PORT_XMIT_PACKETS,
				sel & IB_PMA_SELX_PORT_RCV_PACKETS);
	cnuas_pma_read(dev, &c);
	memset(data, 0, sizeof(*pc));
	pc->port_select = port_select;
	pc->counter_select = sel;
	pc->port_xmit_data = cpu_to_be64(c.tx_bytes / 4);
	pc->port_rcv_data = cpu_to_be64(c.rx_bytes / 4);
	pc->port_xmit_packets = cpu_to_be64(c.tx_packets);
	pc->port_rcv_packets = cpu_to_be64(c.rx_packets);
	/* the unicast/multicast split is not counted: left 0 (IBA: optional) */
	return 0;
}

static int cnuas_pma(struct cnuas_ib_dev *dev, const struct ib_mad *in,
		     struct ib_mad *out)
{
	const struct ib_pma_mad *pin = (const struct ib_pma_mad *)in;
	struct ib_pma_mad *pout = (struct ib_pma_mad *)out;
	__be16 status = 0;
	bool set;

	if (in->mad_hdr.method & IB_MGMT_METHOD_RESP ||
	    in->mad_hdr.method == IB_MGMT_METHOD_TRAP_REPRESS)
		return IB_MAD_RESULT_SUCCESS;

	memcpy(out, in, sizeof(*out));
	pout->mad_hdr.method = IB_MGMT_METHOD_GET_RESP;
	set = in->mad_hdr.method == IB_MGMT_METHOD_SET;

	if (in->mad_hdr.class_version != 1) {
		status = ST_BAD_VERSION;
	} else if (in->mad_hdr.method != IB_MGMT_METHOD_GET && !set) {
		status = ST_UNSUP_METHOD;
	} else if (in->mad_hdr.attr_id == IB_PMA_CLASS_PORT_INFO) {
		struct ib_class_port_info *cpi = (void *)pout->data;

		if (set) {
			status = ST_UNSUP_ATTR;
		} else {
			memset(pout->data, 0, sizeof(pout->data));
			cpi->base_version = IB_MGMT_BASE_VERSION;
			cpi->class_version = 1;
			cpi->capability_mask = IB_PMA_CLASS_CAP_EXT_WIDTH;
			ib_set_cpi_resp_time(cpi, PI_RESP_TIME_VALUE);
		}
	} else if (in->mad_hdr.attr_id == IB_PMA_PORT_COUNTERS) {
		status = cnuas_pma_counters(dev, set, pin->data, pout->data);
	} else if (in->mad_hdr.attr_id == IB_PMA_PORT_COUNTERS_EXT) {
		status = cnuas_pma_counters_ext(dev, set, pin->data,
						pout->data);
	} else {
		status = ST_UNSUP_ATTR;
	}
	pout->mad_hdr.status = status;
	return IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_REPLY;
}

/**
 * cnuas_ib_process_mad - the agents a real HCA keeps in firmware
 * @ibdev: the device
 * @mad_flags: IB_MAD_IGNORE_MKEY for ib_core's own requests
 * @port: the receiving port
 * @in_wc: the receive completion (NULL for ib_core's sysfs counters)
 * @in_grh: unused (we answer every source alike)
 * @in: the MAD
 * @out: the answer, when we give one
 * @out_mad_size: sizeof(struct ib_mad)
 * @out_mad_pkey_index: unused (OPA only)
 *
 * SMPs go to the SMA, PerformanceManagement MADs to the PMA; every other
 * class is not ours (IB_MAD_RESULT_SUCCESS lets ib_mad hand it to its
 * agents: the SA client, the CM, umad).
 *
 * Return: IB_MAD_RESULT_* flags.
 */
int cnuas_ib_process_mad(struct ib_device *ibdev, int mad_flags, u32 port,
			 const struct ib_wc *in_wc, const struct ib_grh *in_grh,
			 const struct ib_mad *in, struct ib_mad *out,
			 size_t *out_mad_size, u16 *out_mad_pkey_index)
{
	struct cnuas_ib_dev *dev = to_cdev(ibdev);
	int ret;

	if (!cnuas_ib_is_ib(dev) || port != 1 ||
	    *out_mad_size < sizeof(struct ib_mad) ||
	    in->mad_hdr.base_version != IB_MGMT_BASE_VERSION)
		return IB_MAD_RESULT_SUCCESS;

	switch (in->mad_hdr.mgmt_class) {
	case IB_MGMT_CLASS_SUBN_LID_ROUTED:
	case IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE:
		ret = cnuas_sma(dev, mad_flags, (const struct ib_smp *)in,
				(struct ib_smp *)out);
		break;
	case IB_MGMT_CLASS_PERF_MGMT:
		ret = cnuas_pma(dev, in, out);
		break;
	default:
		return IB_MAD_RESULT_SUCCESS;
	}
	if (ret & IB_MAD_RESULT_REPLY)
		*out_mad_size = sizeof(struct ib_mad);
	if (ret & IB_MAD_RESULT_CONSUMED)
		cnuas_stat_inc(dev, CNUAS_STAT_RCVD_DROP);
	return ret;
}

/* The ops only an IB-mode device has (set on top of cnuas_ib_dev_ops). */
const struct ib_device_ops cnuas_ib_ib_mode_ops = {
	.modify_port = cnuas_ib_modify_port,
	.process_mad = cnuas_ib_process_mad,
	.query_ah = cnuas_ib_query_ah,
};
