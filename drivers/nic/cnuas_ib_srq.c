// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * cnuas_ib: shared receive queues.  An SRQ is a ring of receive work
 * requests, like a QP's receive queue, that the engines of many QPs take
 * from.  It lives in the kernel for kernel and user SRQs alike: user space
 * posts through the uverbs POST_SRQ_RECV command (a ring the provider maps
 * is a later step).
 *
 * The SRQ limit, as IBTA has it: modify_srq(IB_SRQ_LIMIT) arms it;
 * when a QP takes a receive and fewer than the limit stay posted, the SRQ's
 * event handler gets IB_EVENT_SRQ_LIMIT_REACHED, once, and the limit is
 * disarmed (reads back as 0) until armed again.
 *
 * Resizing (IB_SRQ_MAX_WR) is not supported: EOPNOTSUPP.
 */
#include <rdma/uverbs_ioctl.h>

#include "cnuas_ib.h"

static void cnuas_ib_srq_free_ring(struct cnuas_ib_srq *srq)
{
	kvfree(srq->rq);
	kvfree(srq->sge);
}

int cnuas_ib_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
			struct ib_udata *udata)
{
	struct cnuas_ib_dev *dev = to_cdev(ibsrq->device);
	struct cnuas_ib_srq *srq = to_csrq(ibsrq);
	struct ib_srq_attr *attr = &init->attr;
	u32 i;
	int err;

	if (init->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	/* no driver data either way: a mapped ring is a later step */
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
	srq->rq = kvcalloc(srq->size, sizeof(*srq->rq), GFP_KERNEL);
	srq->sge = kvcalloc(srq->size * srq->max_sge, sizeof(*srq->sge),
			    GFP_KERNEL);
	if (!srq->rq || !srq->sge) {
		err = -ENOMEM;
		goto err_ring;
	}
	for (i = 0; i < srq->size; i++)
		srq->rq[i].sge = &srq->sge[i * srq->max_sge];

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

/**
 * cnuas_ib_srq_take - take the oldest posted receive of an SRQ
 * @srq: the SRQ
 * @out: the receive; its SGE list is copied to @sge (the slot is free for
 *	 new receives once taken)
 * @sge: room for @srq->max_sge entries
 *
 * Called from a QP's engine (that QP's lock held).  Raises the SRQ limit
 * event when the take leaves fewer than an armed limit posted.
 *
 * Return: false when nothing is posted.
 */
bool cnuas_ib_srq_take(struct cnuas_ib_srq *srq, struct cnuas_ib_rwqe *out,
		       struct cnuas_ib_sge *sge)
{
	const struct cnuas_ib_rwqe *rwqe;
	bool limit = false;
	unsigned long flags;

	spin_lock_irqsave(&srq->lock, flags);
	if (srq->tail == srq->head) {
		spin_unlock_irqrestore(&srq->lock, flags);
		return false;
	}
	rwqe = &srq->rq[srq->tail & (srq->size - 1)];
	out->wr_id = rwqe->wr_id;
	out->num_sge = rwqe->num_sge;
	out->length = rwqe->length;
	out->sge = sge;
	memcpy(sge, rwqe->sge, rwqe->num_sge * sizeof(*sge));
	srq->tail++;
	if (srq->limit && srq->head - srq->tail < srq->limit) {
		srq->limit = 0;
		limit = true;
	}
	spin_unlock_irqrestore(&srq->lock, flags);

	if (limit)
		cnuas_ib_srq_event(srq, IB_EVENT_SRQ_LIMIT_REACHED);
	return true;
}
