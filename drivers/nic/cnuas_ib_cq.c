// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * cnuas_ib: completion queues.  A CQ is a ring (uapi/cnuas_ib_abi.h) the
 * transport produces into; a user CQ's ring is mapped by the provider, so
 * ibv_poll_cq reads completions without a system call.  A kernel CQ's ring
 * is read by poll_cq below, which also keeps the ib_qp of each entry.
 */
#include <linux/mm.h>
#include <linux/vmalloc.h>
#include <rdma/uverbs_ioctl.h>

#include "cnuas_ib.h"

static size_t cnuas_ib_ring_bytes(u32 entries)
{
	return PAGE_ALIGN(sizeof(struct cnuas_ib_cq_ring_hdr) +
			  (size_t)entries * sizeof(struct cnuas_ib_cqe));
}

void cnuas_ib_mmap_free(struct rdma_user_mmap_entry *entry)
{
	struct cnuas_ib_mmap *m = container_of(entry, struct cnuas_ib_mmap,
					       rdma);

	vfree(m->buf);
	kfree(m);
}

int cnuas_ib_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *entry;
	struct cnuas_ib_mmap *m;
	int err;

	entry = rdma_user_mmap_entry_get(uctx, vma);
	if (!entry)
		return -EINVAL;
	m = container_of(entry, struct cnuas_ib_mmap, rdma);
	if (vma->vm_end - vma->vm_start > entry->npages * PAGE_SIZE)
		err = -EINVAL;
	else
		err = remap_vmalloc_range(vma, m->buf, 0);
	rdma_user_mmap_entry_put(entry);
	return err;
}

/**
 * cnuas_ib_user_map - offer a vmalloc_user() buffer for mmap by user space
 * @udata: the command's udata (its ucontext gets the entry)
 * @buf: the buffer
 * @bytes: its size, page aligned
 *
 * On success the entry owns @buf: rdma_user_mmap_entry_remove() frees it
 * after the last unmap (cnuas_ib_mmap_free()).  On failure @buf is still
 * the caller's.
 *
 * Return: the entry (its offset for mmap: rdma_user_mmap_get_offset()),
 * or an ERR_PTR.
 */
struct cnuas_ib_mmap *cnuas_ib_user_map(struct ib_udata *udata, void *buf,
					size_t bytes)
{
	struct cnuas_ib_ucontext *uc = rdma_udata_to_drv_context(udata,
			struct cnuas_ib_ucontext, ibuc);
	struct cnuas_ib_mmap *m;
	int err;

	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return ERR_PTR(-ENOMEM);
	m->buf = buf;
	err = rdma_user_mmap_entry_insert(&uc->ibuc, &m->rdma, bytes);
	if (err) {
		kfree(m);
		return ERR_PTR(err);
	}
	return m;
}

static int cnuas_ib_cq_user_map(struct cnuas_ib_cq *cq, struct ib_udata *udata)
{
	struct cnuas_ib_create_cq_resp resp = {};
	size_t bytes = cnuas_ib_ring_bytes(cq->entries);
	struct cnuas_ib_mmap *m;
	int err;

	if (udata->outlen < sizeof(resp))
		return -EINVAL;
	m = cnuas_ib_user_map(udata, cq->ring, bytes);
	if (IS_ERR(m))
		return PTR_ERR(m);
	/* From here the entry owns the ring; removing it frees both. */
	cq->mmap = m;
	resp.mmap_offset = rdma_user_mmap_get_offset(&m->rdma);
	resp.mmap_len = bytes;
	resp.entries = cq->entries;
	err = ib_copy_to_udata(udata, &resp, sizeof(resp));
	if (err) {
		/* the entry frees the ring */
		cq->mmap = NULL;
		cq->ring = NULL;
		rdma_user_mmap_entry_remove(&m->rdma);
		return err;
	}
	return 0;
}

int cnuas_ib_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		       struct uverbs_attr_bundle *attrs)
{
	struct ib_udata *udata = attrs ? &attrs->driver_udata : NULL;
	struct cnuas_ib_dev *dev = to_cdev(ibcq->device);
	struct cnuas_ib_cq *cq = to_ccq(ibcq);
	struct ib_qp **kqp = NULL;
	int err;

	if (attr->flags)
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > CNUAS_IB_MAX_CQE ||
	    attr->comp_vector >= ibcq->device->num_comp_vectors)
		return -EINVAL;
	if (atomic_inc_return(&dev->n_cq) > CNUAS_IB_MAX_CQ) {
		err = -ENOMEM;
		goto err_count;
	}

	spin_lock_init(&cq->lock);
	cq->entries = roundup_pow_of_two(attr->cqe);
	cq->ring = vmalloc_user(cnuas_ib_ring_bytes(cq->entries));
	if (!cq->ring) {
		err = -ENOMEM;
		goto err_count;
	}
	cq->cqe = (struct cnuas_ib_cqe *)(cq->ring + 1);
	ibcq->cqe = cq->entries;

	if (udata) {
		err = cnuas_ib_cq_user_map(cq, udata);
		if (err)
			goto err_ring;
		return 0;
	}

	kqp = kvcalloc(cq->entries, sizeof(*kqp), GFP_KERNEL);
	if (!kqp) {
		err = -ENOMEM;
		goto err_ring;
	}
	cq->kqp = kqp;
	return 0;

err_ring:
	vfree(cq->ring);
err_count:
	atomic_dec(&dev->n_cq);
	return err;
}

int cnuas_ib_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct cnuas_ib_cq *cq = to_ccq(ibcq);

	if (cq->mmap)
		rdma_user_mmap_entry_remove(&cq->mmap->rdma);
	else
		vfree(cq->ring);
	kvfree(cq->kqp);
	atomic_dec(&to_cdev(ibcq->device)->n_cq);
	return 0;
}

/**
 * cnuas_ib_cq_post - add a completion
 * @cq: the CQ
 * @cqe: the entry (uverbs values)
 * @ibqp: the QP it belongs to (kept for kernel CQs)
 * @solicited: it satisfies an IB_CQ_SOLICITED arm
 *
 * Any context.  A full ring puts the CQ in error (IB_EVENT_CQ_ERR) and the
 * entry is lost, as on hardware.
 */
void cnuas_ib_cq_post(struct cnuas_ib_cq *cq, const struct cnuas_ib_cqe *cqe,
		      struct ib_qp *ibqp, bool solicited)
{
	unsigned long flags;
	u32 prod, cons;

	spin_lock_irqsave(&cq->lock, flags);
	if (cq->overflow)
		goto out;
	prod = cq->ring->producer;
	cons = READ_ONCE(cq->ring->consumer);
	if (prod - cons >= cq->entries) {
		cq->overflow = true;
		if (cq->ibcq.event_handler) {
			struct ib_event ev = {
				.device = cq->ibcq.device,
				.element.cq = &cq->ibcq,
				.event = IB_EVENT_CQ_ERR,
			};

			cq->ibcq.event_handler(&ev, cq->ibcq.cq_context);
		}
		goto out;
	}
	cq->cqe[prod & (cq->entries - 1)] = *cqe;
	if (cq->kqp)
		cq->kqp[prod & (cq->entries - 1)] = ibqp;
	/* the entry is visible before the producer index that covers it */
	smp_store_release(&cq->ring->producer, prod + 1);

	if (cq->notify == IB_CQ_NEXT_COMP ||
	    (cq->notify == IB_CQ_SOLICITED && solicited)) {
		cq->notify = 0;
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	}
out:
	spin_unlock_irqrestore(&cq->lock, flags);
}

static void cnuas_ib_cqe_to_wc(const struct cnuas_ib_cqe *e,
			       struct ib_qp *qp, struct ib_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = e->wr_id;
	wc->status = e->status;
	wc->opcode = e->opcode;
	wc->vendor_err = e->vendor_err;
	wc->byte_len = e->byte_len;
	wc->qp = qp;
	wc->ex.imm_data = (__force __be32)e->imm_data;
	wc->src_qp = e->src_qp;
	wc->pkey_index = e->pkey_index;
	wc->slid = e->slid;
	wc->sl = e->sl;
	wc->dlid_path_bits = e->dlid_path_bits;
	wc->port_num = 1;
	if (e->flags & CNUAS_IB_CQE_GRH)
		wc->wc_flags |= IB_WC_GRH;
	if (e->flags & CNUAS_IB_CQE_WITH_IMM)
		wc->wc_flags |= IB_WC_WITH_IMM;
	if (e->flags & CNUAS_IB_CQE_WITH_INV)
		wc->wc_flags |= IB_WC_WITH_INVALIDATE;
	if (e->net_type == CNUAS_IB_CQE_NET_IPV4) {
		wc->wc_flags |= IB_WC_WITH_NETWORK_HDR_TYPE;
		wc->network_hdr_type = RDMA_NETWORK_IPV4;
	} else if (e->net_type == CNUAS_IB_CQE_NET_IPV6) {
		wc->wc_flags |= IB_WC_WITH_NETWORK_HDR_TYPE;
		wc->network_hdr_type = RDMA_NETWORK_IPV6;
	}
}

int cnuas_ib_poll_cq(struct ib_cq *ibcq, int n, struct ib_wc *wc)
{
	struct cnuas_ib_cq *cq = to_ccq(ibcq);
	unsigned long flags;
	u32 cons, prod;
	int i = 0;

	/*
	 * A user CQ is polled through its mapping; it keeps no ib_qp per entry
	 * (a destroyed QP's entries may still be in the ring), and wc->qp is
	 * what ib_core's users of poll_cq read.
	 */
	if (!cq->kqp)
		return -EOPNOTSUPP;
	spin_lock_irqsave(&cq->lock, flags);
	cons = cq->ring->consumer;
	prod = cq->ring->producer;
	while (i < n && cons != prod) {
		u32 slot = cons & (cq->entries - 1);

		cnuas_ib_cqe_to_wc(&cq->cqe[slot], cq->kqp[slot], &wc[i++]);
		cons++;
	}
	WRITE_ONCE(cq->ring->consumer, cons);
	spin_unlock_irqrestore(&cq->lock, flags);
	return i;
}

int cnuas_ib_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct cnuas_ib_cq *cq = to_ccq(ibcq);
	unsigned long irqf;
	int ret = 0;

	spin_lock_irqsave(&cq->lock, irqf);
	if (cq->notify != IB_CQ_NEXT_COMP)
		cq->notify = flags & IB_CQ_SOLICITED_MASK;
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) &&
	    READ_ONCE(cq->ring->consumer) != cq->ring->producer)
		ret = 1;
	spin_unlock_irqrestore(&cq->lock, irqf);
	return ret;
}
