// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * cnuas_ib: shared receive queues.  An SRQ is a ring of receive work
 * requests, like a QP's receive queue, that the engines of many QPs take
 * from.  A kernel SRQ's ring is the kernel's (post_srq_recv); a user SRQ
 * whose provider asks for it gets its ring in memory the provider maps,
 * the same ring as a user QP's receive queue (uapi/cnuas_ib_abi.h), so
 * ibv_post_srq_recv makes no system call.  Taking from it trusts nothing
 * in it (cnuas_ib_ring_take()).
 *
 * The SRQ limit, as IBTA has it: modify_srq(IB_SRQ_LIMIT) arms it;
 * when a QP takes a receive and fewer than the limit stay posted, the SRQ's
 * event handler gets IB_EVENT_SRQ_LIMIT_REACHED, once, and the limit is
 * disarmed (reads back as 0) until armed again.
 *
 * Resizing (IB_SRQ_MAX_WR) is not supported: EOPNOTSUPP.
 */
#include <linux/vmalloc.h>
#include <rdma/uverbs_ioctl.h>

#include "cnuas_ib.h"

static void cnuas_ib_srq_free_ring(struct cnuas_ib_srq *srq)
{
	kvfree(srq->rq);
	kvfree(srq->sge);
	/* a mapped ring is freed by its mmap entry, after the last unmap */
	if (srq->mmap)
		rdma_user_mmap_entry_remove(&srq->mmap->rdma);
	else
		vfree(srq->ring);
	srq->mmap = NULL;
	srq->ring = NULL;
}

static size_t cnuas_ib_srq_ring_bytes(struct cnuas_ib_srq *srq)
{
	return PAGE_ALIGN(sizeof(struct cnuas_ib_rq_ring_hdr) +
			  (size_t)srq->size * srq->slot_size);
}

/* The kernel's ring: @size slots and their SGE lists. */
static int cnuas_ib_srq_alloc_kring(struct cnuas_ib_srq *srq)
{
	u32 i;

	srq->rq = kvcalloc(srq->size, sizeof(*srq->rq), GFP_KERNEL);
	srq->sge = kvcalloc(srq->size * srq->max_sge, sizeof(*srq->sge),
			    GFP_KERNEL);
	if (!srq->rq || !srq->sge)
		return -ENOMEM;
	for (i = 0; i < srq->size; i++)
		srq->rq[i].sge = &srq->sge[i * srq->max_sge];
	return 0;
}

/* A user SRQ's ring: allocated, offered for mmap, described to the provider. */
static int cnuas_ib_srq_alloc_uring(struct cnuas_ib_srq *srq,
				    struct ib_udata *udata)
{
	struct cnuas_ib_create_srq_resp resp = {};
	struct cnuas_ib_mmap *m;
	size_t bytes;

	srq->slot_size = sizeof(struct cnuas_ib_rq_slot) +
			 srq->max_sge * sizeof(struct cnuas_ib_rq_sge);
	bytes = cnuas_ib_srq_ring_bytes(srq);
	srq->ring = vmalloc_user(bytes);
	if (!srq->ring)
		return -ENOMEM;
	m = cnuas_ib_user_map(udata, srq->ring, bytes);
	if (IS_ERR(m))
		return PTR_ERR(m);
	/* From here the entry owns the ring; removing it frees both. */
	srq->mmap = m;
	resp.flags = CNUAS_IB_SRQ_RING;
	resp.entries = srq->size;
	resp.max_sge = srq->max_sge;
	resp.slot_size = srq->slot_size;
	resp.mmap_offset = rdma_user_mmap_get_offset(&m->rdma);
	resp.mmap_len = bytes;
	return ib_copy_to_udata(udata, &resp, sizeof(resp));
}

int cnuas_ib_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
			struct ib_udata *udata)
{
	struct cnuas_ib_dev *dev = to_cdev(ibsrq->device);
	struct cnuas_ib_srq *srq = to_csrq(ibsrq);
	struct ib_srq_attr *attr = &init->attr;
	int err;

	if (init->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	/* nothing comes in; a ring goes out if the provider has room for it */
	if (udata && udata->inlen)
		return -EINVAL;
	if (!attr->max_wr || attr->max_wr > CNUAS_IB_MAX_SRQ_WR ||
	    attr->max_sge > CNUAS_IB_MAX_SRQ_SGE)
		return -EINVAL;
	if (atomic_inc_return(&dev->n_srq) > CNUAS_IB_MAX_SRQ) {
		err = -ENOMEM;
		goto err_count;
	}

	srq->dev = dev;
	spin_lock_init(&srq->lock);
	/* max_wr <= CNUAS_IB_MAX_SRQ_WR: the rounding cannot overflow */
	srq->size = roundup_pow_of_two(attr->max_wr);
	srq->max_sge = max(attr->max_sge, 1U);
	if (udata && udata->outlen >= sizeof(struct cnuas_ib_create_srq_resp))
		err = cnuas_ib_srq_alloc_uring(srq, udata);
	else
		err = cnuas_ib_srq_alloc_kring(srq);
	if (err)
		goto err_ring;

	/* what was granted; a limit is only armed by modify_srq */
	attr->max_wr = srq->size;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = 0;
	return 0;

err_ring:
	cnuas_ib_srq_free_ring(srq);
err_count:
	atomic_dec(&dev->n_srq);
	return err;
}

int cnuas_ib_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
			enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct cnuas_ib_srq *srq = to_csrq(ibsrq);

	if (udata && udata->inlen)
		return -EINVAL;
	if (mask & ~(IB_SRQ_MAX_WR | IB_SRQ_LIMIT))
		return -EINVAL;
	/* resizing a ring other QPs are taking from: not supported */
	if (mask & IB_SRQ_MAX_WR)
		return -EOPNOTSUPP;
	if (mask & IB_SRQ_LIMIT) {
		if (attr->srq_limit > srq->size)
			return -EINVAL;
		spin_lock_irq(&srq->lock);
		srq->limit = attr->srq_limit;
		spin_unlock_irq(&srq->lock);
	}
	return 0;
}

int cnuas_ib_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct cnuas_ib_srq *srq = to_csrq(ibsrq);

	attr->max_wr = srq->size;
	attr->max_sge = srq->max_sge;
	spin_lock_irq(&srq->lock);
	attr->srq_limit = srq->limit;
	spin_unlock_irq(&srq->lock);
	return 0;
}

/*
 * ib_core destroys an SRQ only when no QP uses it (usecnt), so no engine
 * takes from it any more.
 */
int cnuas_ib_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct cnuas_ib_srq *srq = to_csrq(ibsrq);

	cnuas_ib_srq_free_ring(srq);
	atomic_dec(&srq->dev->n_srq);
	return 0;
}

/*
 * Post receives.  Each request is checked whole (its SGE count against the
 * SRQ's, its total length against the largest message) before its slot is
 * taken; the first one refused stops the list and is *@bad.
 */
int cnuas_ib_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			   const struct ib_recv_wr **bad)
{
	struct cnuas_ib_srq *srq = to_csrq(ibsrq);
	unsigned long flags;
	int err = 0;

	/* the provider posts into a mapped ring itself; there is no other */
	if (srq->ring) {
		*bad = wr;
		return -EINVAL;
	}
	for (; wr; wr = wr->next) {
		struct cnuas_ib_rwqe *rwqe;
		u32 total;

		err = cnuas_ib_recv_wr_len(wr, srq->max_sge, &total);
		if (err)
			break;
		spin_lock_irqsave(&srq->lock, flags);
		if (srq->head - srq->tail >= srq->size) {
			spin_unlock_irqrestore(&srq->lock, flags);
			err = -ENOMEM;
			break;
		}
		rwqe = &srq->rq[srq->head & (srq->size - 1)];
		cnuas_ib_rwqe_fill(rwqe, wr, total);
		srq->head++;
		spin_unlock_irqrestore(&srq->lock, flags);
	}
	if (err)
		*bad = wr;
	return err;
}

static void cnuas_ib_srq_event(struct cnuas_ib_srq *srq,
			       enum ib_event_type type)
{
	struct ib_event ev = {
		.device = srq->ibsrq.device,
		.element.srq = &srq->ibsrq,
		.event = type,
	};

	if (srq->ibsrq.event_handler)
		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
}

/* A user SRQ's ring the provider cannot have written: the SRQ is in error. */
static void cnuas_ib_srq_ring_bad(struct cnuas_ib_srq *srq)
{
	unsigned long flags;
	bool first;

	spin_lock_irqsave(&srq->lock, flags);
	first = !srq->ring_bad;
	srq->ring_bad = true;
	spin_unlock_irqrestore(&srq->lock, flags);
	if (first)
		cnuas_ib_srq_event(srq, IB_EVENT_SRQ_ERR);
}

/**
 * cnuas_ib_srq_take - take the oldest posted receive of an SRQ
 * @srq: the SRQ
 * @out: the receive; its SGE list is copied to @sge (the slot is free for
 *	 new receives once taken)
 * @sge: room for @srq->max_sge entries
 *
 * Called from a QP's engine (that QP's lock held).  Raises the SRQ limit
 * event when the take leaves fewer than an armed limit posted.  For a
 * user SRQ's ring, what cnuas_ib_ring_take() found: a bad slot is the
 * caller's to complete (CNUAS_RING_BAD_SLOT); a bad producer index puts
 * the SRQ in error here, and it is empty from then on.
 *
 * Return: CNUAS_RING_GOT, CNUAS_RING_EMPTY or CNUAS_RING_BAD_SLOT.
 */
enum cnuas_ring_take cnuas_ib_srq_take(struct cnuas_ib_srq *srq,
				       struct cnuas_ib_rwqe *out,
				       struct cnuas_ib_sge *sge)
{
	enum cnuas_ring_take r = CNUAS_RING_EMPTY;
	const struct cnuas_ib_rwqe *rwqe;
	unsigned long flags;
	bool limit = false;
	u32 posted = 0;

	spin_lock_irqsave(&srq->lock, flags);
	if (srq->ring) {
		if (!srq->ring_bad)
			r = cnuas_ib_ring_take(srq->ring, srq->size,
					       srq->slot_size, srq->max_sge,
					       &srq->tail, out, sge, &posted);
	} else if (srq->tail != srq->head) {
		rwqe = &srq->rq[srq->tail & (srq->size - 1)];
		out->wr_id = rwqe->wr_id;
		out->num_sge = rwqe->num_sge;
		out->length = rwqe->length;
		out->sge = sge;
		memcpy(sge, rwqe->sge, rwqe->num_sge * sizeof(*sge));
		srq->tail++;
		posted = srq->head - srq->tail;
		r = CNUAS_RING_GOT;
	}
	if (r != CNUAS_RING_EMPTY && r != CNUAS_RING_BAD_PRODUCER &&
	    srq->limit && posted < srq->limit) {
		srq->limit = 0;
		limit = true;
	}
	spin_unlock_irqrestore(&srq->lock, flags);

	if (limit)
		cnuas_ib_srq_event(srq, IB_EVENT_SRQ_LIMIT_REACHED);
	if (r == CNUAS_RING_BAD_PRODUCER) {
		cnuas_ib_srq_ring_bad(srq);
		r = CNUAS_RING_EMPTY;
	}
	return r;
}
