// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * cnuas_ib: module entry, the auxiliary driver that binds to cnuas_net's
 * "rdma" device, ib_device registration and the attributes the device and
 * its port report (datasheet table 4.1).
 */
#include <linux/etherdevice.h>
#include <linux/module.h>
#include <linux/utsname.h>
#include <net/addrconf.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_mad.h>

#include "cnuas_ib.h"

static char *link_layer = "eth";
module_param(link_layer, charp, 0444);
MODULE_PARM_DESC(link_layer,
		 "Link layer of the port: eth (RoCEv2, default) or ib (native InfiniBand, LIDs from the subnet manager)");

/* The port's MTU as the netdev's MTU allows it (RoCEv2 headers taken off). */
static enum ib_mtu cnuas_ib_active_mtu(struct cnuas_ib_dev *dev)
{
	enum ib_mtu mtu = iboe_get_mtu(READ_ONCE(dev->netdev->mtu));

	if (!mtu)
		return IB_MTU_256;
	return min_t(enum ib_mtu, mtu, CNUAS_IB_MAX_MTU);
}

int cnuas_ib_query_device(struct ib_device *ibdev, struct ib_device_attr *a,
			  struct ib_udata *udata)
{
	struct cnuas_ib_dev *dev = to_cdev(ibdev);

	if (udata && (udata->inlen || udata->outlen))
		return -EINVAL;

	memset(a, 0, sizeof(*a));
	a->fw_ver = CNUAS_IB_FW_VER;
	a->sys_image_guid = dev->node_guid;
	a->max_mr_size = U32_MAX;	/* reg_user_mr takes up to 4 GiB - 1 */
	a->page_size_cap = PAGE_SIZE;
	a->vendor_id = CNUAS_IB_VENDOR_ID;
	a->vendor_part_id = CNUAS_IB_VENDOR_PART_ID;
	a->hw_ver = CNUAS_IB_HW_VER;
	a->max_qp = CNUAS_IB_MAX_QP;
	a->max_qp_wr = CNUAS_IB_MAX_QP_WR;
	a->device_cap_flags = IB_DEVICE_RC_RNR_NAK_GEN |
			      IB_DEVICE_SYS_IMAGE_GUID;
	a->max_send_sge = CNUAS_IB_MAX_SGE;
	a->max_recv_sge = CNUAS_IB_MAX_SGE;
	a->max_sge_rd = CNUAS_IB_MAX_SGE;
	a->max_cq = CNUAS_IB_MAX_CQ;
	a->max_cqe = CNUAS_IB_MAX_CQE;
	a->max_mr = CNUAS_IB_MAX_MR;
	a->max_pd = CNUAS_IB_MAX_PD;
	a->max_qp_rd_atom = CNUAS_IB_MAX_RD_ATOM;
	a->max_qp_init_rd_atom = CNUAS_IB_MAX_RD_ATOM;
	a->max_res_rd_atom = CNUAS_IB_MAX_RD_ATOM * CNUAS_IB_MAX_QP;
	a->atomic_cap = IB_ATOMIC_HCA;
	a->masked_atomic_cap = IB_ATOMIC_NONE;
	a->max_mcast_grp = CNUAS_IB_MAX_MCAST_GRP;
	a->max_mcast_qp_attach = CNUAS_IB_MAX_MCAST_QP_ATTACH;
	a->max_total_mcast_qp_attach = CNUAS_IB_MAX_MCAST_GRP *
				       CNUAS_IB_MAX_MCAST_QP_ATTACH;
	a->max_ah = CNUAS_IB_MAX_AH;
	/* not in table 4.1: our own choices (cnuas_ib.h) */
	a->max_srq = CNUAS_IB_MAX_SRQ;
	a->max_srq_wr = CNUAS_IB_MAX_SRQ_WR;
	a->max_srq_sge = CNUAS_IB_MAX_SRQ_SGE;
	a->max_pkeys = CNUAS_IB_MAX_PKEYS;
	a->local_ca_ack_delay = CNUAS_IB_ACK_DELAY;
	return 0;
}

/* Native IB: what the SM made of the port (cnuas_ib_mad.c). */
static void cnuas_ib_query_port_ib(struct cnuas_ib_dev *dev,
				   struct ib_port_attr *a)
{
	struct cnuas_ib_port *p = &dev->port;

	spin_lock_irq(&p->lock);
	a->state = p->state;
	a->phys_state = p->phys_state;
	a->lid = p->lid;
	a->sm_lid = p->sm_lid;
	a->sm_sl = p->sm_sl;
	a->lmc = p->lmc;
	a->subnet_timeout = p->subnet_timeout;
	a->init_type_reply = p->init_type_reply;
	a->port_cap_flags = p->cap_mask;
	a->bad_pkey_cntr = p->pkey_violations;
	a->qkey_viol_cntr = p->qkey_violations;
	a->active_mtu = min_t(enum ib_mtu, p->neighbor_mtu, CNUAS_IB_MAX_MTU);
	a->subnet_prefix = be64_to_cpu(p->subnet_prefix);
	spin_unlock_irq(&p->lock);
	a->max_mtu = CNUAS_IB_MAX_MTU;
	a->phys_mtu = ib_mtu_enum_to_int(CNUAS_IB_MAX_MTU);
	a->gid_tbl_len = CNUAS_IB_GID_TBL_IB;
	a->max_msg_sz = CNUAS_IB_MAX_MSG_SZ;
	a->pkey_tbl_len = CNUAS_IB_MAX_PKEYS;
	a->max_vl_num = 1;
	a->active_width = CNUAS_IB_ACTIVE_WIDTH;
	a->active_speed = CNUAS_IB_ACTIVE_SPEED;
}

int cnuas_ib_query_port(struct ib_device *ibdev, u32 port,
			struct ib_port_attr *a)
{
	struct cnuas_ib_dev *dev = to_cdev(ibdev);
	bool up = cnuas_net_link_up(dev->net) && netif_running(dev->netdev);

	if (port != 1)
		return -EINVAL;
	if (cnuas_ib_is_ib(dev)) {
		cnuas_ib_query_port_ib(dev, a);
		return 0;
	}
	a->state = up ? IB_PORT_ACTIVE : IB_PORT_DOWN;
	a->phys_state = up ? IB_PORT_PHYS_STATE_LINK_UP :
			     IB_PORT_PHYS_STATE_DISABLED;
	a->max_mtu = CNUAS_IB_MAX_MTU;
	a->active_mtu = cnuas_ib_active_mtu(dev);
	a->phys_mtu = ib_mtu_enum_to_int(CNUAS_IB_MAX_MTU);
	a->gid_tbl_len = CNUAS_IB_GID_TBL_ROCE;
	a->ip_gids = 1;
	a->port_cap_flags = IB_PORT_CM_SUP;
	a->max_msg_sz = CNUAS_IB_MAX_MSG_SZ;
	a->pkey_tbl_len = CNUAS_IB_MAX_PKEYS;
	a->max_vl_num = 1;
	a->active_width = CNUAS_IB_ACTIVE_WIDTH;
	a->active_speed = CNUAS_IB_ACTIVE_SPEED;
	return 0;
}

int cnuas_ib_get_port_immutable(struct ib_device *ibdev, u32 port,
				struct ib_port_immutable *im)
{
	struct ib_port_attr attr = {};
	int err;

	err = ib_query_port(ibdev, port, &attr);
	if (err)
		return err;
	im->pkey_tbl_len = attr.pkey_tbl_len;
	im->gid_tbl_len = attr.gid_tbl_len;
	im->core_cap_flags = cnuas_ib_is_ib(to_cdev(ibdev)) ?
			     RDMA_CORE_PORT_IBA_IB :
			     RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	im->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

enum rdma_link_layer cnuas_ib_get_link_layer(struct ib_device *ibdev,
					     u32 port)
{
	return cnuas_ib_is_ib(to_cdev(ibdev)) ? IB_LINK_LAYER_INFINIBAND :
						 IB_LINK_LAYER_ETHERNET;
}

/* 0x000100: one byte each of major, minor and sub-minor. */
void cnuas_ib_get_fw_str(struct ib_device *ibdev, char *str)
{
	snprintf(str, IB_FW_VERSION_NAME_MAX, "%u.%u.%u",
		 (unsigned int)(CNUAS_IB_FW_VER >> 16) & 0xff,
		 (unsigned int)(CNUAS_IB_FW_VER >> 8) & 0xff,
		 (unsigned int)CNUAS_IB_FW_VER & 0xff);
}

static ssize_t hw_rev_show(struct device *device,
			   struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", CNUAS_IB_HW_VER);
}
static DEVICE_ATTR_RO(hw_rev);

static ssize_t board_id_show(struct device *device,
			     struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "CNUAS-VNIC\n");
}
static DEVICE_ATTR_RO(board_id);

static ssize_t hca_type_show(struct device *device,
			     struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "cnuas-vnic\n");
}
static DEVICE_ATTR_RO(hca_type);

static struct attribute *cnuas_ib_attrs[] = {
	&dev_attr_hw_rev.attr,
	&dev_attr_hca_type.attr,
	&dev_attr_board_id.attr,
	NULL,
};

const struct attribute_group cnuas_ib_attr_group = {
	.attrs = cnuas_ib_attrs,
};

static void cnuas_ib_port_event(struct cnuas_ib_dev *dev, bool up)
{
	struct ib_event ev = {
		.device = &dev->ibdev,
		.element.port_num = 1,
		.event = up ? IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR,
	};

	ib_dispatch_event(&ev);
}

/*
 * RoCE: the port is ACTIVE whenever the link is up.  Native IB: the link
 * only takes it to INIT; the SM does the rest (cnuas_ib_mad.c).
 */
static void cnuas_ib_link_change(void *ctx, bool up)
{
	struct cnuas_ib_dev *dev = ctx;

	if (cnuas_ib_is_ib(dev))
		cnuas_ib_port_link_change(dev, up);
	else
		cnuas_ib_port_event(dev, up);
}

static const struct cnuas_net_rdma_ops cnuas_ib_net_ops = {
	.rx = cnuas_ib_rx,
	.link_change = cnuas_ib_link_change,
	.tx_wake = cnuas_ib_tx_wake,
};

static int cnuas_ib_probe(struct auxiliary_device *adev,
			  const struct auxiliary_device_id *id)
{
	struct cnuas_net_adev *nadev = to_cnuas_net_adev(adev);
	struct cnuas_ib_dev *dev;
	enum cnuas_link_layer layer;
	struct ib_device *ibdev;
	u8 guid[8];
	int err;

	if (!strcmp(link_layer, "eth")) {
		layer = CNUAS_LL_ETH;
	} else if (!strcmp(link_layer, "ib")) {
		layer = CNUAS_LL_IB;
	} else {
		dev_err(&adev->dev, "link_layer=%s: takes eth or ib\n",
			link_layer);
		return -EINVAL;
	}

	dev = ib_alloc_device(cnuas_ib_dev, ibdev);
	if (!dev)
		return -ENOMEM;
	ibdev = &dev->ibdev;
	dev->nadev = nadev;
	dev->net = nadev->net;
	dev->netdev = nadev->netdev;
	dev->layer = layer;
	xa_init_flags(&dev->qps, XA_FLAGS_ALLOC);
	xa_init_flags(&dev->mrs, XA_FLAGS_ALLOC1);
	dev->next_qpn = 16;
	get_random_bytes(&dev->key_gen, sizeof(dev->key_gen));
	spin_lock_init(&dev->atomic_lock);
	spin_lock_init(&dev->txwait_lock);
	INIT_LIST_HEAD(&dev->txwait);
	cnuas_ib_rx_drop_init(dev);
	skb_queue_head_init(&dev->loop_q);
	INIT_WORK(&dev->loop_work, cnuas_ib_loop_work);
	spin_lock_init(&dev->mcast_lock);
	INIT_LIST_HEAD(&dev->mcast_groups);

	dev->wq = alloc_workqueue("cnuas_ib/%s", WQ_HIGHPRI | WQ_UNBOUND, 0,
				  dev_name(&adev->dev));
	if (!dev->wq) {
		err = -ENOMEM;
		goto err_dealloc;
	}

	addrconf_addr_eui48(guid, dev->netdev->dev_addr);
	memcpy(&dev->node_guid, guid, sizeof(guid));
	ibdev->node_guid = dev->node_guid;
	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = 1;
	ibdev->dev.parent = &nadev->pdev->dev;
	/*
	 * Not POLL_CQ: the provider reads the mapped ring, and ib_core's
	 * command would read the ib_qp of each entry, which a user CQ does
	 * not keep (cnuas_ib_poll_cq refuses user CQs).
	 */
	ibdev->uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND) |
				  BIT_ULL(IB_USER_VERBS_CMD_POST_RECV) |
				  BIT_ULL(IB_USER_VERBS_CMD_POST_SRQ_RECV) |
				  BIT_ULL(IB_USER_VERBS_CMD_REQ_NOTIFY_CQ);
	ib_set_device_ops(ibdev, &cnuas_ib_dev_ops);
	if (layer == CNUAS_LL_IB) {
		/*
		 * what the SM reads in NodeDescription: host and device, cut at
		 * its 64 bytes for a long host name (scnprintf: cut on purpose)
		 */
		scnprintf(ibdev->node_desc, sizeof(ibdev->node_desc),
			  "%s cnuas_ib InfiniBand", utsname()->nodename);
		ib_set_device_ops(ibdev, &cnuas_ib_ib_mode_ops);
	} else {
		strscpy(ibdev->node_desc, "cnuas_ib RoCEv2",
			sizeof(ibdev->node_desc));
	}
	/*
	 * The datasheet names the device cnuas_ib<n>; without this rdma-core's
	 * udev rule (rdma_rename NAME_FALLBACK) renames it rocep<bus>s<slot>.
	 */
	ib_mark_name_assigned_by_user(ibdev);

	/*
	 * RoCE: ib_core builds the GID table from the netdev's addresses.
	 * Native IB has no netdev (IPoIB makes its own); the one GID is ours.
	 */
	if (layer == CNUAS_LL_ETH) {
		err = ib_device_set_netdev(ibdev, dev->netdev, 1);
		if (err)
			goto err_wq;
	}

	cnuas_ib_port_init(dev);	/* RoCE mode keeps it at its defaults */
	err = cnuas_net_register_rdma(dev->net, &cnuas_ib_net_ops, dev, layer);
	if (err)
		goto err_netdev;
	/* the carrier now: read after registering, so no change is lost */
	if (layer == CNUAS_LL_IB)
		cnuas_ib_port_link_change(dev, cnuas_net_link_up(dev->net));

	err = ib_register_device(ibdev, "cnuas_ib%d", NULL);
	if (err)
		goto err_unreg_net;

	/* traps are best effort (IBA): a device without the agent still works */
	if (layer == CNUAS_LL_IB && cnuas_ib_trap_init(dev))
		dev_warn(&adev->dev, "no QP0 agent: traps will not be sent\n");
	auxiliary_set_drvdata(adev, dev);
	dev_info(&adev->dev, "%s on %s (%s)\n", dev_name(&ibdev->dev),
		 netdev_name(dev->netdev),
		 layer == CNUAS_LL_IB ? "native InfiniBand" : "RoCEv2");
	return 0;

err_unreg_net:
	cnuas_net_unregister_rdma(dev->net);
err_netdev:
	if (layer == CNUAS_LL_ETH)
		ib_device_set_netdev(ibdev, NULL, 1);
err_wq:
	destroy_workqueue(dev->wq);
err_dealloc:
	ib_dealloc_device(ibdev);
	return err;
}

static void cnuas_ib_remove(struct auxiliary_device *adev)
{
	struct cnuas_ib_dev *dev = auxiliary_get_drvdata(adev);

	cnuas_ib_trap_exit(dev);
	/* Destroys every object, user ones through disassociate. */
	ib_unregister_device(&dev->ibdev);
	cnuas_net_unregister_rdma(dev->net);
	destroy_workqueue(dev->wq);
	cancel_work_sync(&dev->loop_work);
	skb_queue_purge(&dev->loop_q);
	cnuas_ib_mcast_cleanup(dev);
	WARN_ON(!xa_empty(&dev->qps));
	WARN_ON(!xa_empty(&dev->mrs));
	xa_destroy(&dev->qps);
	xa_destroy(&dev->mrs);
	ib_dealloc_device(&dev->ibdev);
}

static const struct auxiliary_device_id cnuas_ib_id_table[] = {
	{ .name = CNUAS_NET_ADEV_MATCH },
	{}
};
MODULE_DEVICE_TABLE(auxiliary, cnuas_ib_id_table);

static struct auxiliary_driver cnuas_ib_driver = {
	.name = "ib",
	.probe = cnuas_ib_probe,
	.remove = cnuas_ib_remove,
	.id_table = cnuas_ib_id_table,
};

static int __init cnuas_ib_init(void)
{
	cnuas_ib_opcode_init();
	cnuas_ib_vcrc_init();
	return auxiliary_driver_register(&cnuas_ib_driver);
}

static void __exit cnuas_ib_exit(void)
{
	auxiliary_driver_unregister(&cnuas_ib_driver);
}

module_init(cnuas_ib_init);
module_exit(cnuas_ib_exit);

MODULE_AUTHOR("Cnuas HIL");
MODULE_DESCRIPTION("cnuas_ib: RDMA transport on cnuas-vnic, RoCEv2 or native InfiniBand");
MODULE_LICENSE("Dual MIT/GPL");
MODULE_IMPORT_NS(DMA_BUF);
MODULE_VERSION(CNUAS_IB_DRV_VERSION);
