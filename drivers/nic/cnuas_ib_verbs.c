// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * cnuas_ib: the ib_device_ops table and the verbs too thin for a file of
 * their own: user contexts, protection domains, address handles, P_Key and
 * GID queries, and the port counters.
 */
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/uverbs_ioctl.h>

#include "cnuas_ib.h"

static int cnuas_ib_alloc_ucontext(struct ib_ucontext *ibuc,
				   struct ib_udata *udata)
{
	struct cnuas_ib_alloc_ucontext_resp resp = {
		.abi_version = CNUAS_IB_ABI_VERSION,
		.max_inline = CNUAS_IB_MAX_INLINE,
		.cqe_size = sizeof(struct cnuas_ib_cqe),
	};

	if (udata->outlen < sizeof(resp))
		return -EINVAL;
	return ib_copy_to_udata(udata, &resp, sizeof(resp));
}

static void cnuas_ib_dealloc_ucontext(struct ib_ucontext *ibuc)
{
}

/*
 * Nothing of ours maps device memory, and ib_core zaps our ring mappings
 * itself; having the op lets rmmod go ahead while processes hold the
 * device.
 */
static void cnuas_ib_disassociate_ucontext(struct ib_ucontext *ibuc)
{
}

static int cnuas_ib_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct cnuas_ib_dev *dev = to_cdev(ibpd->device);

	if (atomic_inc_return(&dev->n_pd) > CNUAS_IB_MAX_PD) {
		atomic_dec(&dev->n_pd);
		return -ENOMEM;
	}
	return 0;
}

static int cnuas_ib_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	atomic_dec(&to_cdev(ibpd->device)->n_pd);
	return 0;
}

/**
 * cnuas_ib_av_from_attr - where packets for @attr go
 * @dev: the device
 * @av: filled in
 * @attr: a RoCE address (GRH with a RoCEv2 source GID; dmac resolved);
 *	  in native IB mode an IB one (cnuas_ib_av_from_attr_ib())
 *
 * Return: 0, -EINVAL for an address we cannot reach.
 */
int cnuas_ib_av_from_attr(struct cnuas_ib_dev *dev, struct cnuas_ib_av *av,
			  const struct rdma_ah_attr *attr)
{
	const struct ib_global_route *grh;
	const struct ib_gid_attr *sgid;

	if (cnuas_ib_is_ib(dev))
		return cnuas_ib_av_from_attr_ib(dev, av, attr);
	if (attr->type != RDMA_AH_ATTR_TYPE_ROCE ||
	    !(rdma_ah_get_ah_flags(attr) & IB_AH_GRH))
		return -EINVAL;
	if (rdma_ah_get_port_num(attr) != 1)
		return -EINVAL;
	grh = rdma_ah_read_grh(attr);
	sgid = grh->sgid_attr;
	if (!sgid || sgid->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return -EINVAL;

	memset(av, 0, sizeof(*av));
	if (rdma_gid_attr_network_type(sgid) == RDMA_NETWORK_IPV4) {
		if (!ipv6_addr_v4mapped((const struct in6_addr *)grh->dgid.raw))
			return -EINVAL;
		av->family = AF_INET;
	} else {
		if (ipv6_addr_v4mapped((const struct in6_addr *)grh->dgid.raw))
			return -EINVAL;
		av->family = AF_INET6;
	}
	memcpy(&av->saddr, sgid->gid.raw, sizeof(av->saddr));
	memcpy(&av->daddr, grh->dgid.raw, sizeof(av->daddr));
	ether_addr_copy(av->dmac, attr->roce.dmac);
	av->tclass = grh->traffic_class;
	av->hop_limit = grh->hop_limit ? grh->hop_limit : 64;
	av->flow_label = grh->flow_label;
	return 0;
}

/**
 * cnuas_ib_av_from_attr_ib - where packets for a native-IB @attr go
 * @dev: the device (link_layer=ib)
 * @av: filled in
 * @attr: an IB address: a DLID (ah_attr.ib.dlid), SL and path bits, and a
 *	  GRH when IB_AH_GRH is set (source GID index 0, our only GID)
 *
 * A unicast DLID (1..0xBFFF) may come with or without a GRH; the permissive
 * LID 0xFFFF is taken (QP0 answers directed-route SMPs there: ib_mad builds
 * its AH from the request's SLID) and refused at post time on other QPs; a
 * multicast DLID (0xC000..0xFFFE) needs a GRH whose DGID is a multicast
 * GID, since receivers find the group by it.  DLID 0 is no address.
 *
 * Return: 0, -EINVAL for an address we cannot reach.
 */
int cnuas_ib_av_from_attr_ib(struct cnuas_ib_dev *dev, struct cnuas_ib_av *av,
			     const struct rdma_ah_attr *attr)
{
	const struct ib_global_route *grh;
	u32 dlid;

	if (attr->type != RDMA_AH_ATTR_TYPE_IB)
		return -EINVAL;
	if (rdma_ah_get_port_num(attr) != 1)
		return -EINVAL;
	dlid = rdma_ah_get_dlid(attr);
	if (!dlid || dlid > CNUAS_LID_PERMISSIVE)
		return -EINVAL;

	memset(av, 0, sizeof(*av));
	av->dlid = dlid;
	av->sl = rdma_ah_get_sl(attr) & 0xf;
	av->path_bits = rdma_ah_get_path_bits(attr);
	if (rdma_ah_get_ah_flags(attr) & IB_AH_GRH) {
		union ib_gid sgid;

		grh = rdma_ah_read_grh(attr);
		if (grh->sgid_index != 0)
			return -EINVAL;
		if (grh->sgid_attr)
			sgid = grh->sgid_attr->gid;
		else
			cnuas_ib_local_gid(dev, &sgid);
		av->grh = true;
		memcpy(&av->saddr, sgid.raw, sizeof(av->saddr));
		memcpy(&av->daddr, grh->dgid.raw, sizeof(av->daddr));
		av->tclass = grh->traffic_class;
		av->hop_limit = grh->hop_limit;
		av->flow_label = grh->flow_label & 0xfffff;
	}
	if (cnuas_ib_lid_is_mcast(dlid) &&
	    (!av->grh || !ipv6_addr_is_multicast(&av->daddr)))
		return -EINVAL;
	return 0;
}

/**
 * cnuas_ib_query_ah - the attributes an IB-mode AH was made from
 * @ibah: the AH
 * @attr: filled in (ib_core has zeroed it and set its type)
 *
 * ib_mad pairs a response with its request by asking the request's AH
 * what it addressed (LID path bits, GRH or not): without this an SA
 * answer never reaches its caller.  IB mode only (cnuas_ib_ib_mode_ops).
 *
 * Return: 0.
 */
int cnuas_ib_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr)
{
	const struct cnuas_ib_av *av = &to_cah(ibah)->av;

	attr->type = RDMA_AH_ATTR_TYPE_IB;
	rdma_ah_set_port_num(attr, 1);
	rdma_ah_set_dlid(attr, av->dlid);
	rdma_ah_set_sl(attr, av->sl);
	rdma_ah_set_path_bits(attr, av->path_bits);
	if (av->grh) {
		union ib_gid dgid;

		memcpy(dgid.raw, &av->daddr, sizeof(dgid.raw));
		rdma_ah_set_grh(attr, &dgid, av->flow_label, 0, av->hop_limit,
				av->tclass);
	}
	return 0;
}

static int cnuas_ib_create_ah(struct ib_ah *ibah,
			      struct rdma_ah_init_attr *init,
			      struct ib_udata *udata)
{
	struct cnuas_ib_dev *dev = to_cdev(ibah->device);
	int err;

	if (atomic_inc_return(&dev->n_ah) > CNUAS_IB_MAX_AH) {
		err = -ENOMEM;
		goto err_count;
	}
	err = cnuas_ib_av_from_attr(dev, &to_cah(ibah)->av, init->ah_attr);
	if (err)
		goto err_count;
	return 0;

err_count:
	atomic_dec(&dev->n_ah);
	return err;
}

static int cnuas_ib_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	atomic_dec(&to_cdev(ibah->device)->n_ah);
	return 0;
}

static int cnuas_ib_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			       u16 *pkey)
{
	if (port != 1 || index >= CNUAS_IB_MAX_PKEYS)
		return -EINVAL;
	*pkey = CNUAS_DEFAULT_PKEY;
	return 0;
}

/*
 * ib_core keeps a RoCE port's GID table itself, from the netdev's
 * addresses; this answers for the one GID a native IB port has: the
 * subnet prefix the SM set (fe80:: until then) and the port GUID.
 */
static int cnuas_ib_query_gid(struct ib_device *ibdev, u32 port, int index,
			      union ib_gid *gid)
{
	struct cnuas_ib_dev *dev = to_cdev(ibdev);

	if (port != 1 || index != 0)
		return -EINVAL;
	spin_lock_irq(&dev->port.lock);
	gid->global.subnet_prefix = dev->port.subnet_prefix;
	spin_unlock_irq(&dev->port.lock);
	gid->global.interface_id = dev->node_guid;
	return 0;
}

static const struct rdma_stat_desc cnuas_ib_stat_desc[CNUAS_STAT_NUM] = {
	[CNUAS_STAT_SENT_PKTS] = { .name = "sent_pkts" },
	[CNUAS_STAT_RCVD_PKTS] = { .name = "rcvd_pkts" },
	[CNUAS_STAT_RCVD_ICRC_ERR] = { .name = "rcvd_icrc_err" },
	[CNUAS_STAT_RCVD_DROP] = { .name = "rcvd_drop" },
	[CNUAS_STAT_RETRANSMITS] = { .name = "retransmits" },
	[CNUAS_STAT_RETRY_EXCEEDED] = { .name = "retry_exceeded_err" },
	[CNUAS_STAT_RNR_RETRY_EXCEEDED] = { .name = "retry_rnr_exceeded_err" },
	[CNUAS_STAT_RNR_NAK_SENT] = { .name = "send_rnr_nak" },
	[CNUAS_STAT_RNR_NAK_RCVD] = { .name = "rcvd_rnr_nak" },
	[CNUAS_STAT_SEQ_NAK_SENT] = { .name = "send_seq_nak" },
	[CNUAS_STAT_SEQ_NAK_RCVD] = { .name = "rcvd_seq_nak" },
	[CNUAS_STAT_DUP_REQ] = { .name = "duplicate_request" },
	[CNUAS_STAT_REM_ACCESS_ERR] = { .name = "send_rem_access_nak" },
	[CNUAS_STAT_REM_INV_REQ] = { .name = "send_inv_req_nak" },
	[CNUAS_STAT_ACKS_SENT] = { .name = "sent_acks" },
	[CNUAS_STAT_TX_BUSY] = { .name = "tx_busy" },
	[CNUAS_STAT_RX_DROP_INJECTED] = { .name = "rx_drop_injected" },
	[CNUAS_STAT_RCVD_QKEY_ERR] = { .name = "rcvd_qkey_err" },
	[CNUAS_STAT_LOOPBACK_PKTS] = { .name = "loopback_pkts" },
	[CNUAS_STAT_RCVD_MCAST_PKTS] = { .name = "rcvd_mcast_pkts" },
	[CNUAS_STAT_RCVD_VCRC_ERR] = { .name = "rcvd_vcrc_err" },
	[CNUAS_STAT_TX_PORT_NOT_ACTIVE] = { .name = "tx_port_not_active" },
	[CNUAS_STAT_SENT_KERNEL_PKTS] = { .name = "sent_kernel_pkts" },
	[CNUAS_STAT_NP_ECN_MARKED] = { .name = "np_ecn_marked_roce_packets" },
	[CNUAS_STAT_NP_CNP_SENT] = { .name = "np_cnp_sent" },
	[CNUAS_STAT_RP_CNP_HANDLED] = { .name = "rp_cnp_handled" },
	[CNUAS_STAT_RP_CNP_IGNORED] = { .name = "rp_cnp_ignored" },
	[CNUAS_STAT_RCVD_HDR_ERR] = { .name = "rcvd_hdr_err" },
	[CNUAS_STAT_RCVD_PKEY_ERR] = { .name = "rcvd_pkey_err" },
	[CNUAS_STAT_RCVD_QPN_ERR] = { .name = "rcvd_qpn_err" },
	[CNUAS_STAT_RCVD_RXQ_FULL] = { .name = "rcvd_rxq_full" },
	[CNUAS_STAT_RCVD_STATE_ERR] = { .name = "rcvd_state_err" },
	[CNUAS_STAT_RCVD_SRC_ERR] = { .name = "rcvd_src_err" },
	[CNUAS_STAT_RCVD_PSN_ERR] = { .name = "rcvd_psn_err" },
	[CNUAS_STAT_RCVD_GHOST_RESP] = { .name = "rcvd_ghost_resp" },
	[CNUAS_STAT_RCVD_ADDR_ERR] = { .name = "rcvd_addr_err" },
	[CNUAS_STAT_RCVD_MCAST_NO_MEMBER] = { .name = "rcvd_mcast_no_member" },
	[CNUAS_STAT_RCVD_NO_RECV] = { .name = "rcvd_no_recv" },
};

static struct rdma_hw_stats *cnuas_ib_alloc_port_stats(struct ib_device *ibdev,
						       u32 port)
{
	return rdma_alloc_hw_stats_struct(cnuas_ib_stat_desc, CNUAS_STAT_NUM,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

static int cnuas_ib_get_hw_stats(struct ib_device *ibdev,
				 struct rdma_hw_stats *stats, u32 port,
				 int index)
{
	struct cnuas_ib_dev *dev = to_cdev(ibdev);
	int i;

	for (i = 0; i < CNUAS_STAT_NUM; i++)
		stats->value[i] = atomic64_read(&dev->stats[i]);
	return CNUAS_STAT_NUM;
}

const struct ib_device_ops cnuas_ib_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = CNUAS_IB_ABI_VERSION,

	.device_group = &cnuas_ib_attr_group,

	.alloc_hw_port_stats = cnuas_ib_alloc_port_stats,
	.alloc_pd = cnuas_ib_alloc_pd,
	.alloc_ucontext = cnuas_ib_alloc_ucontext,
	.attach_mcast = cnuas_ib_attach_mcast,
	.create_ah = cnuas_ib_create_ah,
	.create_cq = cnuas_ib_create_cq,
	.create_qp = cnuas_ib_create_qp,
	.create_srq = cnuas_ib_create_srq,
	.create_user_ah = cnuas_ib_create_ah,
	.dealloc_pd = cnuas_ib_dealloc_pd,
	.dealloc_ucontext = cnuas_ib_dealloc_ucontext,
	.dereg_mr = cnuas_ib_dereg_mr,
	.destroy_ah = cnuas_ib_destroy_ah,
	.destroy_cq = cnuas_ib_destroy_cq,
	.destroy_qp = cnuas_ib_destroy_qp,
	.destroy_srq = cnuas_ib_destroy_srq,
	.detach_mcast = cnuas_ib_detach_mcast,
	.disassociate_ucontext = cnuas_ib_disassociate_ucontext,
	.get_dev_fw_str = cnuas_ib_get_fw_str,
	.get_dma_mr = cnuas_ib_get_dma_mr,
	.get_hw_stats = cnuas_ib_get_hw_stats,
	.get_link_layer = cnuas_ib_get_link_layer,
	.get_port_immutable = cnuas_ib_get_port_immutable,
	.mmap = cnuas_ib_mmap,
	.mmap_free = cnuas_ib_mmap_free,
	.modify_qp = cnuas_ib_modify_qp,
	.modify_srq = cnuas_ib_modify_srq,
	.poll_cq = cnuas_ib_poll_cq,
	.post_recv = cnuas_ib_post_recv,
	.post_send = cnuas_ib_post_send,
	.post_srq_recv = cnuas_ib_post_srq_recv,
	.query_device = cnuas_ib_query_device,
	.query_gid = cnuas_ib_query_gid,
	.query_pkey = cnuas_ib_query_pkey,
	.query_port = cnuas_ib_query_port,
	.query_qp = cnuas_ib_query_qp,
	.query_srq = cnuas_ib_query_srq,
	.reg_user_mr = cnuas_ib_reg_user_mr,
	.reg_user_mr_dmabuf = cnuas_ib_reg_user_mr_dmabuf,
	.req_notify_cq = cnuas_ib_req_notify_cq,

	INIT_RDMA_OBJ_SIZE(ib_ah, cnuas_ib_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, cnuas_ib_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_pd, cnuas_ib_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, cnuas_ib_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, cnuas_ib_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, cnuas_ib_ucontext, ibuc),
};
