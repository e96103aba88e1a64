// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * libcnuas: the libibverbs provider of cnuas_ib.  A match table, the
 * verbs_context_ops table, thin wrappers over ibv_cmd_* and, kept apart at
 * the end, the fast paths: polling the mapped completion ring and posting
 * receives to the mapped receive ring.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cnuas.h"

#define PCI_VENDOR_ID_CNUAS	0x1af4
#define PCI_DEVICE_ID_CNUAS_VNIC 0x10f0

static const struct verbs_match_ent cnuas_match_table[] = {
	VERBS_PCI_MATCH(PCI_VENDOR_ID_CNUAS, PCI_DEVICE_ID_CNUAS_VNIC, NULL),
	{},
};

static int cnuas_query_device(struct ibv_context *ctx,
			      const struct ibv_query_device_ex_input *input,
			      struct ibv_device_attr_ex *attr,
			      size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	uint64_t fw;
	int ret;

	ret = ibv_cmd_query_device_any(ctx, input, attr, attr_size, &resp,
				       &resp_size);
	if (ret)
		return ret;
	/* 0x000100: one byte each of major, minor, sub-minor, as sysfs */
	fw = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%u.%u.%u", (unsigned int)(fw >> 16) & 0xff,
		 (unsigned int)(fw >> 8) & 0xff, (unsigned int)fw & 0xff);
	return 0;
}

static int cnuas_query_port(struct ibv_context *ctx, uint8_t port,
			    struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd;

	return ibv_cmd_query_port(ctx, port, attr, &cmd, sizeof(cmd));
}

static struct ibv_pd *cnuas_alloc_pd(struct ibv_context *ctx)
{
	struct ib_uverbs_alloc_pd_resp resp;
	struct ibv_alloc_pd cmd;
	struct ibv_pd *pd;

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	if (ibv_cmd_alloc_pd(ctx, pd, &cmd, sizeof(cmd), &resp,
			     sizeof(resp))) {
		free(pd);
		return NULL;
	}
	return pd;
}

static int cnuas_dealloc_pd(struct ibv_pd *pd)
{
	int ret = ibv_cmd_dealloc_pd(pd);

	if (!ret)
		free(pd);
	return ret;
}

static struct ibv_mr *cnuas_reg_mr(struct ibv_pd *pd, void *addr,
				   size_t length, uint64_t hca_va, int access)
{
	struct ib_uverbs_reg_mr_resp resp;
	struct ibv_reg_mr cmd;
	struct verbs_mr *vmr;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;
	if (ibv_cmd_reg_mr(pd, addr, length, hca_va, access, vmr, &cmd,
			   sizeof(cmd), &resp, sizeof(resp))) {
		free(vmr);
		return NULL;
	}
	return &vmr->ibv_mr;
}

/* Memory another driver exported as a DMA-BUF (e.g. accelerator memory). */
static struct ibv_mr *cnuas_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
					  size_t length, uint64_t iova, int fd,
					  int access)
{
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;
	ret = ibv_cmd_reg_dmabuf_mr(pd, offset, length, iova, fd, access, vmr,
				    NULL);
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}

static int cnuas_dereg_mr(struct verbs_mr *vmr)
{
	int ret = ibv_cmd_dereg_mr(vmr);

	if (!ret)
		free(vmr);
	return ret;
}

static struct ibv_cq *cnuas_create_cq(struct ibv_context *ctx, int cqe,
				      struct ibv_comp_channel *channel,
				      int comp_vector)
{
	struct cnuas_create_cq_resp resp = {};
	struct cnuas_cq *cq;
	void *map;

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	if (ibv_cmd_create_cq(ctx, cqe, channel, comp_vector, &cq->vcq.cq,
			      NULL, 0, &resp.ibv_resp, sizeof(resp)))
		goto err_free;

	/* the ring must hold what the kernel says, and nothing odd */
	if (!resp.drv.entries ||
	    (resp.drv.entries & (resp.drv.entries - 1)) ||
	    resp.drv.mmap_len < sizeof(struct cnuas_ib_cq_ring_hdr) +
				(uint64_t)resp.drv.entries *
				sizeof(struct cnuas_ib_cqe)) {
		errno = EPROTO;
		goto err_destroy;
	}
	map = mmap(NULL, resp.drv.mmap_len, PROT_READ | PROT_WRITE,
		   MAP_SHARED, ctx->cmd_fd, resp.drv.mmap_offset);
	if (map == MAP_FAILED)
		goto err_destroy;
	cq->ring = map;
	cq->cqe = (struct cnuas_ib_cqe *)(cq->ring + 1);
	cq->entries = resp.drv.entries;
	cq->map_len = resp.drv.mmap_len;
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	return &cq->vcq.cq;

err_destroy:
	ibv_cmd_destroy_cq(&cq->vcq.cq);
err_free:
	free(cq);
	return NULL;
}

static int cnuas_destroy_cq(struct ibv_cq *ibcq)
{
	struct cnuas_cq *cq = to_ccq(ibcq);
	int ret;

	ret = ibv_cmd_destroy_cq(ibcq);
	if (ret)
		return ret;
	munmap(cq->ring, cq->map_len);
	pthread_spin_destroy(&cq->lock);
	free(cq);
	return 0;
}

static int cnuas_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	return ibv_cmd_req_notify_cq(ibcq, solicited_only);
}

/*
 * Map a receive ring the kernel described (a QP's or an SRQ's), after
 * checking its geometry.
 */
static int cnuas_map_rq(struct ibv_context *ctx, struct cnuas_rq *rq,
			uint32_t entries, uint32_t max_sge, uint32_t slot_size,
			uint64_t offset, uint64_t len)
{
	void *map;

	if (!entries || (entries & (entries - 1)) || !max_sge ||
	    slot_size < sizeof(struct cnuas_ib_rq_slot) +
			(uint64_t)max_sge * sizeof(struct cnuas_ib_rq_sge) ||
	    len < sizeof(struct cnuas_ib_rq_ring_hdr) +
		  (uint64_t)entries * slot_size)
		return EPROTO;
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
		   ctx->cmd_fd, offset);
	if (map == MAP_FAILED)
		return errno;
	rq->ring = map;
	rq->slots = (uint8_t *)(rq->ring + 1);
	rq->head = rq->ring->producer;
	rq->entries = entries;
	rq->max_sge = max_sge;
	rq->slot_size = slot_size;
	rq->map_len = len;
	return 0;
}

/*
 * attr->srq, if set, goes to the kernel with the command (its handle).
 * Asking for the whole response is asking for a mapped receive ring: the
 * kernel gives one to a user RC or UD QP without an SRQ, and says so.
 * With CNUAS_NO_RQ_RING=1 in the environment the provider asks for the
 * response as it was before the ring (what an older provider does), and
 * posts receives with the POST_RECV command: to compare the two paths.
 */
static struct ibv_qp *cnuas_create_qp(struct ibv_pd *pd,
				      struct ibv_qp_init_attr *attr)
{
	struct cnuas_create_qp_resp resp = {};
	struct ibv_create_qp cmd = {};
	size_t resp_size = sizeof(resp);
	struct cnuas_qp *qp;
	int ret;

	if (to_cctx(pd->context)->no_rq_ring)
		resp_size = offsetof(struct cnuas_create_qp_resp, drv.flags);
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	ret = ibv_cmd_create_qp(pd, &qp->vqp.qp, attr, &cmd, sizeof(cmd),
				&resp.ibv_resp, resp_size);
	if (ret) {
		free(qp);
		errno = ret;
		return NULL;
	}
	if (resp.drv.flags & CNUAS_IB_QP_RQ_RING) {
		ret = cnuas_map_rq(pd->context, &qp->rq, resp.drv.rq_entries,
				   resp.drv.rq_max_sge, resp.drv.rq_slot_size,
				   resp.drv.rq_mmap_offset,
				   resp.drv.rq_mmap_len);
		if (ret) {
			ibv_cmd_destroy_qp(&qp->vqp.qp);
			free(qp);
			errno = ret;
			return NULL;
		}
	}
	pthread_spin_init(&qp->rq.lock, PTHREAD_PROCESS_PRIVATE);
	return &qp->vqp.qp;
}

static int cnuas_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			  int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct ibv_query_qp cmd;

	return ibv_cmd_query_qp(qp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}

static int cnuas_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			   int attr_mask)
{
	struct ibv_modify_qp cmd = {};

	return ibv_cmd_modify_qp(qp, attr, attr_mask, &cmd, sizeof(cmd));
}

static int cnuas_destroy_qp(struct ibv_qp *ibqp)
{
	struct cnuas_qp *qp = to_cqp(ibqp);
	int ret = ibv_cmd_destroy_qp(ibqp);

	if (ret)
		return ret;
	if (qp->rq.ring)
		munmap(qp->rq.ring, qp->rq.map_len);
	pthread_spin_destroy(&qp->rq.lock);
	free(qp);
	return 0;
}

/*
 * One system call per ibv_post_send, however long the chain:
 * ibv_cmd_post_send marshals every request and its SGEs into one
 * POST_SEND command, written once.
 */
static int cnuas_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			   struct ibv_send_wr **bad_wr)
{
	return ibv_cmd_post_send(qp, wr, bad_wr);
}

/* post_recv is at the end, with the other fast path */
static int cnuas_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
			   struct ibv_recv_wr **bad_wr);

/*
 * Shared receive queues.  Asking for the driver's response is asking for a
 * mapped ring, as for a QP's receive queue (CNUAS_NO_RQ_RING=1: the
 * kernel's ring and POST_SRQ_RECV commands).
 */
static struct ibv_srq *cnuas_create_srq(struct ibv_pd *pd,
					struct ibv_srq_init_attr *attr)
{
	struct cnuas_create_srq_resp resp = {};
	size_t resp_size = sizeof(resp);
	struct ibv_create_srq cmd;
	struct cnuas_srq *srq;
	int ret;

	if (to_cctx(pd->context)->no_rq_ring)
		resp_size = sizeof(resp.ibv_resp);
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;
	ret = ibv_cmd_create_srq(pd, &srq->vsrq.srq, attr, &cmd, sizeof(cmd),
				 &resp.ibv_resp, resp_size);
	if (ret) {
		free(srq);
		errno = ret;
		return NULL;
	}
	if (resp.drv.flags & CNUAS_IB_SRQ_RING) {
		ret = cnuas_map_rq(pd->context, &srq->rq, resp.drv.entries,
				   resp.drv.max_sge, resp.drv.slot_size,
				   resp.drv.mmap_offset, resp.drv.mmap_len);
		if (ret) {
			ibv_cmd_destroy_srq(&srq->vsrq.srq);
			free(srq);
			errno = ret;
			return NULL;
		}
	}
	pthread_spin_init(&srq->rq.lock, PTHREAD_PROCESS_PRIVATE);
	return &srq->vsrq.srq;
}

static int cnuas_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
			    int attr_mask)
{
	struct ibv_modify_srq cmd;

	return ibv_cmd_modify_srq(srq, attr, attr_mask, &cmd, sizeof(cmd));
}

static int cnuas_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd;

	return ibv_cmd_query_srq(srq, attr, &cmd, sizeof(cmd));
}

static int cnuas_destroy_srq(struct ibv_srq *ibsrq)
{
	struct cnuas_srq *srq = to_csrq(ibsrq);
	int ret = ibv_cmd_destroy_srq(ibsrq);

	if (ret)
		return ret;
	if (srq->rq.ring)
		munmap(srq->rq.ring, srq->rq.map_len);
	pthread_spin_destroy(&srq->rq.lock);
	free(srq);
	return 0;
}

/* post_srq_recv is at the end, with the other fast paths */
static int cnuas_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			       struct ibv_recv_wr **bad_wr);

static struct ibv_ah *cnuas_create_ah(struct ibv_pd *pd,
				      struct ibv_ah_attr *attr)
{
	struct ib_uverbs_create_ah_resp resp;
	struct ibv_ah *ah;
	int ret;

	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return NULL;
	ret = ibv_cmd_create_ah(pd, ah, attr, &resp, sizeof(resp));
	if (ret) {
		free(ah);
		errno = ret;
		return NULL;
	}
	return ah;
}

static int cnuas_destroy_ah(struct ibv_ah *ah)
{
	int ret = ibv_cmd_destroy_ah(ah);

	if (!ret)
		free(ah);
	return ret;
}

/*
 * An empty poll tells the CPU the caller is spinning (PAUSE on x86), as a
 * spin-wait loop should: a busy-polling ibv_poll_cq loop is one.  Under a
 * hypervisor that is the cue to run another vCPU (KVM's pause-loop
 * exiting; under TCG, our QEMU yields the host thread on a user-mode
 * PAUSE, docs/architecture.md "A spinning vCPU yields"), so the guest
 * whose completion this one waits for gets the host core.
 */
static inline void cnuas_spin_hint(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/*
 * The fast path: read completions straight from the ring the kernel
 * produces into.  The producer index is read with acquire semantics so
 * the entries it covers are complete; the consumer index is published
 * with release semantics once the entries have been copied out.  An empty
 * ring is answered without the lock (the common case of a busy poll): a
 * completion landing meanwhile is seen by the next call.
 */
static int cnuas_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	struct cnuas_cq *cq = to_ccq(ibcq);
	uint32_t cons, prod;
	int n = 0;

	if (__atomic_load_n(&cq->ring->producer, __ATOMIC_ACQUIRE) ==
	    __atomic_load_n(&cq->ring->consumer, __ATOMIC_RELAXED)) {
		cnuas_spin_hint();
		return 0;
	}

	pthread_spin_lock(&cq->lock);
	cons = cq->ring->consumer;
	prod = __atomic_load_n(&cq->ring->producer, __ATOMIC_ACQUIRE);
	for (; n < ne && cons != prod; n++, cons++) {
		const struct cnuas_ib_cqe *e =
			&cq->cqe[cons & (cq->entries - 1)];
		struct ibv_wc *w = &wc[n];

		w->wr_id = e->wr_id;
		w->status = e->status;
		w->opcode = e->opcode;
		w->vendor_err = e->vendor_err;
		w->byte_len = e->byte_len;
		w->imm_data = e->imm_data;
		w->qp_num = e->qp_num;
		w->src_qp = e->src_qp;
		w->wc_flags = e->flags;
		w->pkey_index = e->pkey_index;
		w->slid = e->slid;
		w->sl = e->sl;
		w->dlid_path_bits = e->dlid_path_bits;
	}
	if (n)
		__atomic_store_n(&cq->ring->consumer, cons, __ATOMIC_RELEASE);
	pthread_spin_unlock(&cq->lock);
	return n;
}

/*
 * The other fast path: post receives by writing slots of a mapped receive
 * ring (a QP's or an SRQ's) and publishing the producer index (release:
 * the slots are complete before the kernel can see the index that covers
 * them).  The consumer index is read with acquire: the kernel is done
 * copying a slot before the index that frees it.  A full ring (ENOMEM) and
 * a request the queue cannot hold (EINVAL) are refused here, with *bad_wr
 * set to the first request not posted, those before it posted.  Returns
 * whether anything was published in *published.
 */
static int cnuas_ring_post(struct cnuas_rq *rq, struct ibv_recv_wr *wr,
			   struct ibv_recv_wr **bad_wr, bool *published)
{
	uint32_t prod, cons;
	int ret = 0, i;

	pthread_spin_lock(&rq->lock);
	prod = rq->head;
	cons = __atomic_load_n(&rq->ring->consumer, __ATOMIC_ACQUIRE);
	for (; wr; wr = wr->next) {
		struct cnuas_ib_rq_slot *slot;
		uint64_t total = 0;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > rq->max_sge) {
			ret = EINVAL;
			break;
		}
		for (i = 0; i < wr->num_sge; i++)
			total += wr->sg_list[i].length;
		if (total > 0x7fffffffU) {	/* the largest message */
			ret = EINVAL;
			break;
		}
		if (prod - cons >= rq->entries) {
			cons = __atomic_load_n(&rq->ring->consumer,
					       __ATOMIC_ACQUIRE);
			if (prod - cons >= rq->entries) {
				ret = ENOMEM;
				break;
			}
		}
		slot = (struct cnuas_ib_rq_slot *)
			(rq->slots + (size_t)(prod & (rq->entries - 1)) *
				     rq->slot_size);
		slot->wr_id = wr->wr_id;
		slot->num_sge = wr->num_sge;
		for (i = 0; i < wr->num_sge; i++) {
			slot->sge[i].addr = wr->sg_list[i].addr;
			slot->sge[i].length = wr->sg_list[i].length;
			slot->sge[i].lkey = wr->sg_list[i].lkey;
		}
		prod++;
	}
	*published = prod != rq->head;
	if (*published) {
		rq->head = prod;
		__atomic_store_n(&rq->ring->producer, prod, __ATOMIC_RELEASE);
	}
	pthread_spin_unlock(&rq->lock);
	if (ret)
		*bad_wr = wr;
	return ret;
}

/*
 * A receive posted in the error state must complete as flushed (IBTA);
 * the kernel flushes when the QP runs.  So after publishing, a full
 * barrier, then the ring's error word: if the QP is in error, a POST_RECV
 * command with no work request has the kernel run the flush.  The kernel
 * writes the error word, issues a full barrier and then reads the
 * producer index, so a receive is never missed by both sides.  The
 * command is the only system call, and only in the error state.
 */
static int cnuas_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
			   struct ibv_recv_wr **bad_wr)
{
	struct cnuas_rq *rq = &to_cqp(ibqp)->rq;
	struct ibv_recv_wr *none;
	bool published;
	int ret;

	if (!rq->ring)
		return ibv_cmd_post_recv(ibqp, wr, bad_wr);
	if (ibqp->state == IBV_QPS_RESET) {
		*bad_wr = wr;
		return EINVAL;
	}
	ret = cnuas_ring_post(rq, wr, bad_wr, &published);
	if (published) {
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (__atomic_load_n(&rq->ring->error, __ATOMIC_RELAXED))
			ibv_cmd_post_recv(ibqp, NULL, &none);
	}
	return ret;
}

/*
 * An SRQ has no error state that flushes (its receives stay for the other
 * QPs), so posting is the ring and nothing else: no system call at all.
 */
static int cnuas_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			       struct ibv_recv_wr **bad_wr)
{
	struct cnuas_rq *rq = &to_csrq(ibsrq)->rq;
	bool published;

	if (!rq->ring)
		return ibv_cmd_post_srq_recv(ibsrq, wr, bad_wr);
	return cnuas_ring_post(rq, wr, bad_wr, &published);
}

/* Multicast membership lives in the kernel: the receive path delivers. */
static int cnuas_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			      uint16_t lid)
{
	return ibv_cmd_attach_mcast(qp, gid, lid);
}

static int cnuas_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			      uint16_t lid)
{
	return ibv_cmd_detach_mcast(qp, gid, lid);
}

static void cnuas_free_context(struct ibv_context *ibctx);

static const struct verbs_context_ops cnuas_ctx_ops = {
	.alloc_pd = cnuas_alloc_pd,
	.attach_mcast = cnuas_attach_mcast,
	.create_ah = cnuas_create_ah,
	.create_cq = cnuas_create_cq,
	.create_qp = cnuas_create_qp,
	.create_srq = cnuas_create_srq,
	.dealloc_pd = cnuas_dealloc_pd,
	.dereg_mr = cnuas_dereg_mr,
	.destroy_ah = cnuas_destroy_ah,
	.destroy_cq = cnuas_destroy_cq,
	.destroy_qp = cnuas_destroy_qp,
	.destroy_srq = cnuas_destroy_srq,
	.detach_mcast = cnuas_detach_mcast,
	.free_context = cnuas_free_context,
	.modify_qp = cnuas_modify_qp,
	.modify_srq = cnuas_modify_srq,
	.poll_cq = cnuas_poll_cq,
	.post_recv = cnuas_post_recv,
	.post_send = cnuas_post_send,
	.post_srq_recv = cnuas_post_srq_recv,
	.query_device_ex = cnuas_query_device,
	.query_port = cnuas_query_port,
	.query_qp = cnuas_query_qp,
	.query_srq = cnuas_query_srq,
	.reg_dmabuf_mr = cnuas_reg_dmabuf_mr,
	.reg_mr = cnuas_reg_mr,
	.req_notify_cq = cnuas_req_notify_cq,
};

static struct verbs_context *cnuas_alloc_context(struct ibv_device *ibdev,
						 int cmd_fd,
						 void *private_data)
{
	struct cnuas_get_context_resp resp = {};
	struct ibv_get_context cmd = {};
	struct cnuas_context *ctx;
	const char *env;

	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, ibv_ctx,
					   RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;
	if (ibv_cmd_get_context(&ctx->ibv_ctx, &cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp)))
		goto err;
	if (resp.drv.abi_version != CNUAS_IB_ABI_VERSION ||
	    resp.drv.cqe_size != sizeof(struct cnuas_ib_cqe)) {
		verbs_err(&ctx->ibv_ctx,
			  "cnuas: kernel ABI %u (cqe %u bytes), provider %u\n",
			  resp.drv.abi_version, resp.drv.cqe_size,
			  CNUAS_IB_ABI_VERSION);
		errno = EPROTO;
		goto err;
	}
	ctx->max_inline = resp.drv.max_inline;
	env = getenv("CNUAS_NO_RQ_RING");
	ctx->no_rq_ring = env && !strcmp(env, "1");
	verbs_set_ops(&ctx->ibv_ctx, &cnuas_ctx_ops);
	return &ctx->ibv_ctx;

err:
	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
	return NULL;
}

static void cnuas_free_context(struct ibv_context *ibctx)
{
	struct cnuas_context *ctx = to_cctx(ibctx);

	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
}

static struct verbs_device *cnuas_device_alloc(struct verbs_sysfs_dev *sdev)
{
	struct cnuas_device *dev;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	return &dev->ibv_dev;
}

static void cnuas_device_free(struct verbs_device *vdev)
{
	free(container_of(vdev, struct cnuas_device, ibv_dev));
}

static const struct verbs_device_ops cnuas_dev_ops = {
	.name = "cnuas",
	.match_min_abi_version = CNUAS_IB_ABI_VERSION,
	.match_max_abi_version = CNUAS_IB_ABI_VERSION,
	.match_table = cnuas_match_table,
	.alloc_device = cnuas_device_alloc,
	.uninit_device = cnuas_device_free,
	.alloc_context = cnuas_alloc_context,
};

PROVIDER_DRIVER(cnuas, cnuas_dev_ops);
