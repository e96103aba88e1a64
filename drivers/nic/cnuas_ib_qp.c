// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * cnuas_ib: queue pairs.  Creation and destruction, the state machine of
 * modify_qp, posting work requests, completions of work requests, and the
 * per-QP engine (a work item) that runs the completer, the responder and
 * the requester in turn.
 */
#include <linux/mm.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <rdma/ib_addr.h>
#include <rdma/uverbs_ioctl.h>

#include "cnuas_ib.h"

void cnuas_ib_qp_kick(struct cnuas_ib_qp *qp)
{
	if (!READ_ONCE(qp->dying))
		queue_work(qp->dev->wq, &qp->work);
}

void cnuas_ib_qp_event(struct cnuas_ib_qp *qp, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = qp->ibqp.device,
		.element.qp = &qp->ibqp,
		.event = type,
	};

	if (qp->ibqp.event_handler)
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
}

/*
 * Tell the provider whether the QP is in the error state (the @error word
 * of a mapped receive ring).  The full barrier orders the store before the
 * flush's read of the producer index: the provider stores the producer,
 * issues a full barrier and reads @error, so either the flush sees a
 * receive posted meanwhile or the provider sees @error and asks the kernel
 * to flush again (a POST_RECV command without work requests).
 */
static void cnuas_ib_rq_ring_state(struct cnuas_ib_qp *qp)
{
	if (!qp->rq_ring)
		return;
	WRITE_ONCE(qp->rq_ring->error, qp->state == IB_QPS_ERR);
	/* the error word before any later read of the producer index */
	smp_mb();
}

/* Move to the error state; the engine flushes the queues.  qp->lock held. */
void cnuas_ib_qp_error(struct cnuas_ib_qp *qp)
{
	qp->state = IB_QPS_ERR;
	qp->attr.qp_state = IB_QPS_ERR;
	cnuas_ib_rq_ring_state(qp);
	cnuas_ib_qp_kick(qp);
}

static enum ib_wc_opcode cnuas_wc_opcode(enum ib_wr_opcode op)
{
	switch (op) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return IB_WC_RDMA_WRITE;
	case IB_WR_RDMA_READ:
		return IB_WC_RDMA_READ;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return IB_WC_COMP_SWAP;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return IB_WC_FETCH_ADD;
	default:
		return IB_WC_SEND;
	}
}

/* Post the completion of a send WQE if it is signalled or failed. */
void cnuas_ib_complete_swqe(struct cnuas_ib_qp *qp, struct cnuas_ib_swqe *wqe)
{
	struct cnuas_ib_cqe cqe = {};

	if (wqe->status == IB_WC_SUCCESS && !qp->sig_all &&
	    !(wqe->send_flags & IB_SEND_SIGNALED))
		return;
	cqe.wr_id = wqe->wr_id;
	cqe.status = wqe->status;
	cqe.opcode = cnuas_wc_opcode(wqe->opcode);
	cqe.byte_len = wqe->length;
	cqe.qp_num = qp->ibqp.qp_num;
	cnuas_ib_cq_post(qp->scq, &cqe, &qp->ibqp, false);
}

/* Post the completion of a receive WQE; @cqe has status and what arrived. */
void cnuas_ib_complete_rwqe(struct cnuas_ib_qp *qp,
			    const struct cnuas_ib_rwqe *wqe,
			    struct cnuas_ib_cqe *cqe, bool solicited)
{
	cqe->wr_id = wqe->wr_id;
	cqe->qp_num = qp->ibqp.qp_num;
	cnuas_ib_cq_post(qp->rcq, cqe, &qp->ibqp, solicited);
}

/*
 * Where the SGE list of the receive the QP has taken is kept: the block
 * after the ring's (@rq_held).  The ring slot is free for post_recv once
 * taken, so a receive still being filled (a multi-packet SEND) must not
 * point into it.
 */
static struct cnuas_ib_sge *cnuas_ib_rq_held_sge(struct cnuas_ib_qp *qp)
{
	return qp->rq_held;
}

/*
 * Take the oldest receive from a receive ring in user memory (a user QP's
 * or a user SRQ's), its owner's lock held.  The whole ring is
 * user-writable, so nothing in it is trusted: the producer index is read
 * once (acquire: the slots it covers were written before it), a distance
 * of more than @entries from what was consumed (*@tail) is refused, and
 * the slot is copied once, field by field, into @out and @held (room for
 * @max_sge SGEs); only that copy is looked at after.  num_sge is unsigned
 * in the ABI: a negative count is a huge one and fails the same bound.
 * The SGEs' keys, lengths and addresses are checked against the MR on
 * every use by cnuas_ib_sge_copy() (cnuas_ib_mr_get(): key, PD, access,
 * range), as for the kernel's own rings.  *@posted is what stays posted.
 */
enum cnuas_ring_take cnuas_ib_ring_take(struct cnuas_ib_rq_ring_hdr *hdr,
					u32 entries, u32 slot_size,
					u32 max_sge, u32 *tail,
					struct cnuas_ib_rwqe *out,
					struct cnuas_ib_sge *held, u32 *posted)
{
	const struct cnuas_ib_rq_slot *slot;
	u32 prod, num, i;
	u64 total = 0;

	/* pairs with the provider's release: the slots are written */
	prod = smp_load_acquire(&hdr->producer);
	if (prod == *tail)
		return CNUAS_RING_EMPTY;
	if (prod - *tail > entries)
		return CNUAS_RING_BAD_PRODUCER;
	slot = (void *)(hdr + 1) + (size_t)(*tail & (entries - 1)) * slot_size;
	out->wr_id = READ_ONCE(slot->wr_id);
	num = READ_ONCE(slot->num_sge);
	out->num_sge = 0;
	out->length = 0;
	out->sge = held;
	if (num <= max_sge) {
		for (i = 0; i < num; i++) {
			held[i].addr = READ_ONCE(slot->sge[i].addr);
			held[i].length = READ_ONCE(slot->sge[i].length);
			held[i].lkey = READ_ONCE(slot->sge[i].lkey);
			/* at most CNUAS_IB_MAX_SGE u32 lengths: no wrap */
			total += held[i].length;
		}
	}
	(*tail)++;
	*posted = prod - *tail;
	/* the slot is copied (before the index): the provider may reuse it */
	smp_store_release(&hdr->consumer, *tail);
	/* what post_recv would have refused with EINVAL */
	if (num > max_sge || total > CNUAS_IB_MAX_MSG_SZ)
		return CNUAS_RING_BAD_SLOT;
	out->num_sge = num;
	out->length = total;
	return CNUAS_RING_GOT;
}

/*
 * A mapped ring the provider cannot have written: a slot that is not a
 * receive completes with a local QP operation error; the QP then goes to
 * the error state (IB_EVENT_QP_FATAL), where the receives behind a bad
 * slot flush.  A producer index more than the ring's size ahead of the
 * consumer moves the QP to the error state too, rather than clamping it:
 * a clamped index would have the kernel take slots forever (up to 2^32)
 * that no post_recv filled; in the error state the flush takes nothing
 * while the index stays bogus.  qp->lock held (the engine).
 */
static void cnuas_ib_ring_fatal(struct cnuas_ib_qp *qp,
				struct cnuas_ib_rwqe *bad)
{
	if (bad) {
		struct cnuas_ib_cqe cqe = { .status = IB_WC_LOC_QP_OP_ERR,
					    .opcode = IB_WC_RECV };

		cnuas_ib_complete_rwqe(qp, bad, &cqe, false);
	}
	if (qp->state == IB_QPS_ERR) {
		/* a flush stopped at the bad slot: the rest flush next run */
		if (bad)
			cnuas_ib_qp_kick(qp);
		return;
	}
	cnuas_ib_qp_error(qp);
	cnuas_ib_qp_event(qp, IB_EVENT_QP_FATAL);
}

/* Take the oldest receive posted to the QP's own receive queue. */
static bool cnuas_ib_qp_rq_take(struct cnuas_ib_qp *qp,
				struct cnuas_ib_rwqe *out)
{
	struct cnuas_ib_sge *held = cnuas_ib_rq_held_sge(qp);
	const struct cnuas_ib_rwqe *slot;
	enum cnuas_ring_take r;
	unsigned long flags;
	bool got = false;
	u32 posted;

	if (qp->rq_ring) {
		spin_lock_irqsave(&qp->rq_lock, flags);
		r = cnuas_ib_ring_take(qp->rq_ring, qp->rq_size,
				       qp->rq_slot_size, qp->rq_max_sge,
				       &qp->rq_tail, out, held, &posted);
		spin_unlock_irqrestore(&qp->rq_lock, flags);
		if (r == CNUAS_RING_GOT)
			return true;
		if (r != CNUAS_RING_EMPTY)
			cnuas_ib_ring_fatal(qp, r == CNUAS_RING_BAD_SLOT ?
						out : NULL);
		return false;
	}
	spin_lock_irqsave(&qp->rq_lock, flags);
	if (qp->rq_tail != qp->rq_head) {
		slot = &qp->rq[qp->rq_tail & (qp->rq_size - 1)];
		*out = *slot;
		memcpy(held, slot->sge, slot->num_sge * sizeof(*held));
		out->sge = held;
		qp->rq_tail++;
		got = true;
	}
	spin_unlock_irqrestore(&qp->rq_lock, flags);
	return got;
}

/*
 * Take the oldest posted receive, from the QP's SRQ if it has one, else
 * from its own receive queue; false when there is none.
 */
bool cnuas_ib_rq_take(struct cnuas_ib_qp *qp, struct cnuas_ib_rwqe *out)
{
	enum cnuas_ring_take r;

	if (!qp->srq)
		return cnuas_ib_qp_rq_take(qp, out);
	r = cnuas_ib_srq_take(qp->srq, out, cnuas_ib_rq_held_sge(qp));
	/* a user SRQ's bad slot is this QP's to complete, as its own ring's */
	if (r == CNUAS_RING_BAD_SLOT)
		cnuas_ib_ring_fatal(qp, out);
	return r == CNUAS_RING_GOT;
}

/*
 * Drop the frames queued for a QP that cannot receive them (in the error
 * state, or not yet ready): each counts in rcvd_state_err, as one the
 * responder or the completer finds in a wrong state does.
 */
static void cnuas_ib_qp_drop_rx(struct cnuas_ib_qp *qp)
{
	struct sk_buff *skb;

	while ((skb = skb_dequeue(&qp->req_q)) ||
	       (skb = skb_dequeue(&qp->resp_q))) {
		cnuas_stat_inc(qp->dev, CNUAS_STAT_RCVD_STATE_ERR);
		kfree_skb(skb);
	}
}

/*
 * Error state: complete everything posted with a flush error.  A QP with
 * an SRQ flushes only the receive it holds (taken, not completed): what
 * is still posted to the SRQ belongs to the other QPs as much as to this
 * one.  Once that is done it raises IB_EVENT_QP_LAST_WQE_REACHED, once
 * per entry to the error state, so the consumer knows no receive of the
 * SRQ will complete on this QP any more.
 */
static void cnuas_ib_qp_flush(struct cnuas_ib_qp *qp)
{
	struct cnuas_ib_rwqe rwqe;
	u32 head, n;

	cnuas_ib_comp_retire(qp);
	/* pairs with post_send's release: the slots up to head are filled */
	head = smp_load_acquire(&qp->sq_head);
	while (qp->sq_comp != head) {
		struct cnuas_ib_swqe *wqe = cnuas_swqe(qp, qp->sq_comp);

		if (wqe->state != CNUAS_SWQE_DONE)
			wqe->status = IB_WC_WR_FLUSH_ERR;
		wqe->state = CNUAS_SWQE_DONE;
		/* a flushed request completes whether signalled or not */
		wqe->send_flags |= IB_SEND_SIGNALED;
		cnuas_ib_complete_swqe(qp, wqe);
		qp->sq_comp++;
	}
	qp->sq_req = qp->sq_comp;
	qp->req.rd_out = 0;
	__skb_queue_purge(&qp->retx_q);

	if (qp->resp.have_wqe) {
		struct cnuas_ib_cqe cqe = { .status = IB_WC_WR_FLUSH_ERR,
					    .opcode = IB_WC_RECV };

		qp->resp.have_wqe = false;
		cnuas_ib_complete_rwqe(qp, &qp->resp.wqe, &cqe, false);
	}
	if (qp->srq) {
		if (!qp->last_wqe_sent) {
			qp->last_wqe_sent = true;
			cnuas_ib_qp_event(qp, IB_EVENT_QP_LAST_WQE_REACHED);
		}
	} else {
		/* see cnuas_ib_rq_ring_state(): the state before the producer */
		smp_mb();
		/*
		 * At most a ring's worth: a user may post while the flush
		 * runs.  What is posted after is flushed by the run its
		 * post_recv asks for, seeing the error state.
		 */
		n = qp->rq_size;
		while (n-- && cnuas_ib_qp_rq_take(qp, &rwqe)) {
			struct cnuas_ib_cqe cqe = {
				.status = IB_WC_WR_FLUSH_ERR,
				.opcode = IB_WC_RECV,
			};

			cnuas_ib_complete_rwqe(qp, &rwqe, &cqe, false);
		}
	}
	qp->resp.rd.active = false;
	cnuas_ib_qp_drop_rx(qp);
}

static bool cnuas_ib_qp_can_send(struct cnuas_ib_qp *qp)
{
	return qp->state == IB_QPS_RTS || qp->state == IB_QPS_SQD;
}

static bool cnuas_ib_qp_can_recv(struct cnuas_ib_qp *qp)
{
	return qp->state >= IB_QPS_RTR && qp->state <= IB_QPS_SQE;
}

/*
 * The engine: everything the transport of this QP does happens here, with
 * qp->lock held and bottom halves off.  A run handles at most
 * CNUAS_IB_BUDGET packets, then queues the work item so one busy QP cannot
 * starve the others.
 */
static void cnuas_ib_qp_engine(struct cnuas_ib_qp *qp)
{
	int budget = CNUAS_IB_BUDGET;
	struct sk_buff *skb;
	bool more;

	if (qp->dying)
		return;
	do {
		more = false;
		if (qp->state == IB_QPS_ERR) {
			cnuas_ib_qp_flush(qp);
			break;
		}
		if (!cnuas_ib_qp_can_recv(qp)) {
			cnuas_ib_qp_drop_rx(qp);
			break;
		}

		while (budget > 0 && (skb = skb_dequeue(&qp->resp_q))) {
			if (cnuas_pkt(skb)->ce)
				cnuas_ib_np_ce(qp, skb);
			cnuas_ib_completer(qp, skb);
			budget--;
			more = true;
		}
		if (qp->req.timeout) {
			qp->req.timeout = false;
			cnuas_ib_comp_timeout(qp);
		}
		if (qp->state == IB_QPS_ERR)
			continue;

		more |= cnuas_ib_resp_pending(qp, &budget);
		while (budget > 0 && !qp->resp.rd.active &&
		       !READ_ONCE(qp->tx_blocked) &&
		       (skb = skb_dequeue(&qp->req_q))) {
			if (cnuas_pkt(skb)->ce)
				cnuas_ib_np_ce(qp, skb);
			cnuas_ib_responder(qp, skb);
			budget--;
			more = true;
			if (qp->state == IB_QPS_ERR)
				break;
		}
		if (qp->state == IB_QPS_ERR)
			continue;
		more |= cnuas_ib_resp_pending(qp, &budget);
		cnuas_ib_resp_flush_ack(qp);

		if (cnuas_ib_qp_can_send(qp))
			more |= cnuas_ib_requester(qp, &budget);
	} while (more && budget > 0);

	if (budget <= 0)
		cnuas_ib_qp_kick(qp);
}

static void cnuas_ib_qp_work(struct work_struct *work)
{
	struct cnuas_ib_qp *qp = container_of(work, struct cnuas_ib_qp, work);

	spin_lock_bh(&qp->lock);
	cnuas_ib_qp_engine(qp);
	spin_unlock_bh(&qp->lock);
}

/**
 * cnuas_ib_qp_run - run the engine now, in the caller's context
 * @qp: the QP
 *
 * Posting and receiving run the engine inline, as the hardware would act
 * at once: deferring to the work item would leave a packet waiting for a
 * scheduler tick whenever a process busy-polls its CQ on the same CPU.
 * Where that cannot be done (hard interrupt context, interrupts off, or
 * the engine already running: a completion handler that posts again) the
 * work item takes over.
 */
void cnuas_ib_qp_run(struct cnuas_ib_qp *qp)
{
	if (in_hardirq() || irqs_disabled()) {
		cnuas_ib_qp_kick(qp);
		return;
	}
	local_bh_disable();
	if (spin_trylock(&qp->lock)) {
		cnuas_ib_qp_engine(qp);
		spin_unlock(&qp->lock);
	} else {
		cnuas_ib_qp_kick(qp);
	}
	local_bh_enable();
}

/* The receive capabilities are ignored (not checked) with an SRQ. */
static int cnuas_ib_qp_check_cap(struct ib_qp_init_attr *init)
{
	struct ib_qp_cap *cap = &init->cap;

	if (cap->max_send_wr > CNUAS_IB_MAX_QP_WR ||
	    cap->max_send_sge > CNUAS_IB_MAX_SGE ||
	    cap->max_inline_data > CNUAS_IB_MAX_INLINE)
		return -EINVAL;
	if (!init->srq && (cap->max_recv_wr > CNUAS_IB_MAX_QP_WR ||
			   cap->max_recv_sge > CNUAS_IB_MAX_SGE))
		return -EINVAL;
	return 0;
}

static void cnuas_ib_qp_free_queues(struct cnuas_ib_qp *qp)
{
	kvfree(qp->sq);
	kvfree(qp->sq_sge);
	kvfree(qp->sq_inline);
	kvfree(qp->rq);
	kvfree(qp->rq_sge);
	/* a mapped ring is freed by its mmap entry, after the last unmap */
	if (qp->rq_mmap)
		rdma_user_mmap_entry_remove(&qp->rq_mmap->rdma);
	else
		vfree(qp->rq_ring);
	qp->rq_mmap = NULL;
	qp->rq_ring = NULL;
}

static size_t cnuas_ib_rq_ring_bytes(struct cnuas_ib_qp *qp)
{
	return PAGE_ALIGN(sizeof(struct cnuas_ib_rq_ring_hdr) +
			  (size_t)qp->rq_size * qp->rq_slot_size);
}

/*
 * Map a user QP's receive ring (rdma_user_mmap_entry, as a CQ's ring) and
 * describe it in @resp.
 */
static int cnuas_ib_rq_ring_map(struct cnuas_ib_qp *qp, struct ib_udata *udata,
				struct cnuas_ib_create_qp_resp *resp)
{
	size_t bytes = cnuas_ib_rq_ring_bytes(qp);
	struct cnuas_ib_mmap *m;

	m = cnuas_ib_user_map(udata, qp->rq_ring, bytes);
	if (IS_ERR(m))
		return PTR_ERR(m);
	/* From here the entry owns the ring; removing it frees both. */
	qp->rq_mmap = m;
	resp->flags |= CNUAS_IB_QP_RQ_RING;
	resp->rq_entries = qp->rq_size;
	resp->rq_max_sge = qp->rq_max_sge;
	resp->rq_slot_size = qp->rq_slot_size;
	resp->rq_mmap_offset = rdma_user_mmap_get_offset(&m->rdma);
	resp->rq_mmap_len = bytes;
	return 0;
}

static int cnuas_ib_qp_alloc_queues(struct cnuas_ib_qp *qp,
				    struct ib_qp_init_attr *init, bool ring)
{
	struct ib_qp_cap *cap = &init->cap;
	u32 i;

	qp->sq_size = roundup_pow_of_two(max(cap->max_send_wr, 1U));
	qp->sq_max_sge = max(cap->max_send_sge, 1U);
	qp->max_inline = cap->max_inline_data;
	if (qp->srq) {
		/* no receive queue: room for the SGEs of one taken receive */
		qp->rq_size = 0;
		qp->rq_max_sge = qp->srq->max_sge;
	} else {
		qp->rq_size = roundup_pow_of_two(max(cap->max_recv_wr, 1U));
		qp->rq_max_sge = max(cap->max_recv_sge, 1U);
	}

	qp->sq = kvcalloc(qp->sq_size, sizeof(*qp->sq), GFP_KERNEL);
	qp->sq_sge = kvcalloc(qp->sq_size * qp->sq_max_sge,
			      sizeof(*qp->sq_sge), GFP_KERNEL);
	if (ring) {
		/* the ring is in user memory; kept here: the taken receive */
		qp->rq_slot_size = sizeof(struct cnuas_ib_rq_slot) +
				   qp->rq_max_sge *
				   sizeof(struct cnuas_ib_rq_sge);
		qp->rq_ring = vmalloc_user(cnuas_ib_rq_ring_bytes(qp));
		qp->rq_sge = kvcalloc(qp->rq_max_sge, sizeof(*qp->rq_sge),
				      GFP_KERNEL);
		qp->rq_held = qp->rq_sge;
	} else {
		if (qp->rq_size)
			qp->rq = kvcalloc(qp->rq_size, sizeof(*qp->rq),
					  GFP_KERNEL);
		/* the ring's SGEs, then those of the one taken receive */
		qp->rq_sge = kvcalloc((qp->rq_size + 1) * qp->rq_max_sge,
				      sizeof(*qp->rq_sge), GFP_KERNEL);
		if (qp->rq_sge)
			qp->rq_held = &qp->rq_sge[qp->rq_size *
						  qp->rq_max_sge];
	}
	if (qp->max_inline)
		qp->sq_inline = kvcalloc(qp->sq_size, qp->max_inline,
					 GFP_KERNEL);
	if (!qp->sq || !qp->sq_sge || (qp->rq_size && !ring && !qp->rq) ||
	    (ring && !qp->rq_ring) || !qp->rq_sge ||
	    (qp->max_inline && !qp->sq_inline)) {
		cnuas_ib_qp_free_queues(qp);
		return -ENOMEM;
	}
	for (i = 0; i < qp->sq_size; i++) {
		qp->sq[i].sge = &qp->sq_sge[i * qp->sq_max_sge];
		if (qp->sq_inline)
			qp->sq[i].inline_data =
				&qp->sq_inline[i * qp->max_inline];
	}
	for (i = 0; qp->rq && i < qp->rq_size; i++)
		qp->rq[i].sge = &qp->rq_sge[i * qp->rq_max_sge];

	cap->max_send_wr = qp->sq_size;
	cap->max_send_sge = qp->sq_max_sge;
	cap->max_recv_wr = qp->rq_size;
	cap->max_recv_sge = qp->srq ? 0 : qp->rq_max_sge;
	cap->max_inline_data = qp->max_inline;
	return 0;
}

int cnuas_ib_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		       struct ib_udata *udata)
{
	struct cnuas_ib_dev *dev = to_cdev(ibqp->device);
	struct cnuas_ib_qp *qp = to_cqp(ibqp);
	struct cnuas_ib_create_qp_resp resp = {};
	bool ring;
	u32 qpn;
	int err;

	switch (init->qp_type) {
	case IB_QPT_RC:
	case IB_QPT_UD:
	case IB_QPT_GSI:
		break;
	case IB_QPT_SMI:
		/* QP0, the SMI: native IB only (RoCE has none), kernel only */
		if (!cnuas_ib_is_ib(dev) || udata)
			return -EOPNOTSUPP;
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (init->create_flags)
		return -EOPNOTSUPP;
	/* the SRQ's receives are checked against the QP's PD */
	if (init->srq && (init->srq->srq_type != IB_SRQT_BASIC ||
			  init->srq->pd != ibqp->pd))
		return -EINVAL;
	err = cnuas_ib_qp_check_cap(init);
	if (err)
		return err;
	if (udata && udata->outlen < offsetofend(struct cnuas_ib_create_qp_resp,
						 max_inline))
		return -EINVAL;
	/*
	 * A user RC or UD QP without an SRQ gets its receive queue as a ring
	 * the provider maps, if the provider asks for the longer response.
	 */
	ring = udata && !init->srq && init->qp_type != IB_QPT_GSI &&
	       udata->outlen >= sizeof(resp);
	if (atomic_inc_return(&dev->n_qp) > CNUAS_IB_MAX_QP) {
		err = -ENOMEM;
		goto err_count;
	}

	qp->dev = dev;
	qp->type = init->qp_type;
	qp->user = !!udata;
	qp->sig_all = init->sq_sig_type == IB_SIGNAL_ALL_WR;
	qp->scq = to_ccq(init->send_cq);
	qp->rcq = to_ccq(init->recv_cq);
	qp->srq = init->srq ? to_csrq(init->srq) : NULL;
	qp->state = IB_QPS_RESET;
	qp->attr.qp_state = IB_QPS_RESET;
	qp->attr.path_mtu = IB_MTU_1024;
	qp->pmtu = ib_mtu_enum_to_int(IB_MTU_1024);
	spin_lock_init(&qp->lock);
	spin_lock_init(&qp->sq_lock);
	spin_lock_init(&qp->rq_lock);
	INIT_WORK(&qp->work, cnuas_ib_qp_work);
	INIT_LIST_HEAD(&qp->txwait);
	skb_queue_head_init(&qp->retx_q);
	skb_queue_head_init(&qp->req_q);
	skb_queue_head_init(&qp->resp_q);
	timer_setup(&qp->retx_timer, cnuas_ib_retx_timer_fn, 0);
	timer_setup(&qp->rnr_timer, cnuas_ib_rnr_timer_fn, 0);
	cnuas_ib_cc_init(qp);

	err = cnuas_ib_qp_alloc_queues(qp, init, ring);
	if (err)
		goto err_count;

	if (qp->type == IB_QPT_GSI || qp->type == IB_QPT_SMI) {
		qpn = qp->type == IB_QPT_GSI ? 1 : 0;
		err = xa_insert(&dev->qps, qpn, NULL, GFP_KERNEL);
	} else {
		err = xa_alloc_cyclic(&dev->qps, &qpn, NULL,
				      XA_LIMIT(16, CNUAS_QPN_MASK - 1),
				      &dev->next_qpn, GFP_KERNEL);
		if (err > 0)
			err = 0;
	}
	if (err)
		goto err_queues;
	ibqp->qp_num = qpn;
	/* UD: the source port is per QP (RC sets it from the flow at RTR) */
	qp->sport = rdma_get_udp_sport(0, qpn, qpn);

	if (udata) {
		resp.qpn = qpn;
		resp.max_inline = qp->max_inline;
		if (ring) {
			err = cnuas_ib_rq_ring_map(qp, udata, &resp);
			if (err)
				goto err_qpn;
		}
		err = ib_copy_to_udata(udata, &resp,
				       min(udata->outlen, sizeof(resp)));
		if (err)
			goto err_qpn;
	}
	/* visible to the receive path from here */
	xa_store(&dev->qps, qpn, qp, GFP_KERNEL);
	return 0;

err_qpn:
	xa_erase(&dev->qps, qpn);
err_queues:
	cnuas_ib_qp_free_queues(qp);
err_count:
	atomic_dec(&dev->n_qp);
	return err;
}

int cnuas_ib_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct cnuas_ib_qp *qp = to_cqp(ibqp);
	struct cnuas_ib_dev *dev = qp->dev;

	spin_lock_bh(&qp->lock);
	WRITE_ONCE(qp->dying, true);
	spin_unlock_bh(&qp->lock);

	xa_erase(&dev->qps, ibqp->qp_num);
	cnuas_ib_mcast_qp_gone(dev, ibqp->qp_num);
	/* no receive path is still looking at the QP after this */
	synchronize_rcu();
	timer_shutdown_sync(&qp->retx_timer);
	timer_shutdown_sync(&qp->rnr_timer);
	cnuas_ib_cc_destroy(qp);
	cnuas_ib_txwait_del(qp);
	cancel_work_sync(&qp->work);

	skb_queue_purge(&qp->req_q);
	skb_queue_purge(&qp->resp_q);
	skb_queue_purge(&qp->retx_q);
	cnuas_ib_qp_free_queues(qp);
	atomic_dec(&dev->n_qp);
	return 0;
}

/* Back to RESET: forget every posted request and all transport state. */
static void cnuas_ib_qp_reset(struct cnuas_ib_qp *qp)
{
	unsigned long flags;

	spin_lock_irqsave(&qp->sq_lock, flags);
	qp->sq_head = 0;
	qp->sq_req = 0;
	qp->sq_comp = 0;
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	spin_lock_irqsave(&qp->rq_lock, flags);
	qp->rq_head = 0;
	qp->rq_tail = 0;
	if (qp->rq_ring) {
		/* forget what is posted: consumed up to the producer */
		qp->rq_tail = READ_ONCE(qp->rq_ring->producer);
		/* pairs with post_recv's acquire of the consumer index */
		smp_store_release(&qp->rq_ring->consumer, qp->rq_tail);
	}
	spin_unlock_irqrestore(&qp->rq_lock, flags);
	qp->last_wqe_sent = false;
	memset(&qp->req, 0, sizeof(qp->req));
	memset(&qp->resp, 0, sizeof(qp->resp));
	__skb_queue_purge(&qp->retx_q);
	skb_queue_purge(&qp->req_q);
	skb_queue_purge(&qp->resp_q);
	del_timer(&qp->retx_timer);
	del_timer(&qp->rnr_timer);
	cnuas_ib_cc_reset(qp);
}

static int cnuas_ib_modify_check(struct cnuas_ib_qp *qp,
				 struct ib_qp_attr *attr, int mask)
{
	enum ib_qp_state cur, next;

	cur = (mask & IB_QP_CUR_STATE) ? attr->cur_qp_state : qp->state;
	next = (mask & IB_QP_STATE) ? attr->qp_state : cur;
	if (!ib_modify_qp_is_ok(cur, next, qp->type, mask))
		return -EINVAL;
	if ((mask & IB_QP_PORT) && attr->port_num != 1)
		return -EINVAL;
	if ((mask & IB_QP_PKEY_INDEX) &&
	    attr->pkey_index >= CNUAS_IB_MAX_PKEYS)
		return -EINVAL;
	if (mask & IB_QP_PATH_MTU) {
		enum ib_mtu active = cnuas_ib_port_mtu(qp->dev);

		if (attr->path_mtu < IB_MTU_256 ||
		    attr->path_mtu > CNUAS_IB_MAX_MTU ||
		    attr->path_mtu > active)
			return -EINVAL;
	}
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > CNUAS_IB_MAX_RD_ATOM)
		return -EINVAL;
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > CNUAS_IB_MAX_RD_ATOM)
		return -EINVAL;
	if ((mask & IB_QP_RETRY_CNT) && attr->retry_cnt > 7)
		return -EINVAL;
	if ((mask & IB_QP_RNR_RETRY) && attr->rnr_retry > 7)
		return -EINVAL;
	if ((mask & IB_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & IB_QP_TIMEOUT) && attr->timeout > 31)
		return -EINVAL;
	if ((mask & IB_QP_ACCESS_FLAGS) &&
	    (attr->qp_access_flags & ~(IB_ACCESS_REMOTE_WRITE |
				       IB_ACCESS_REMOTE_READ |
				       IB_ACCESS_REMOTE_ATOMIC |
				       IB_ACCESS_LOCAL_WRITE)))
		return -EINVAL;
	if (mask & (IB_QP_ALT_PATH | IB_QP_PATH_MIG_STATE))
		return -EOPNOTSUPP;
	return 0;
}

int cnuas_ib_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		       struct ib_udata *udata)
{
	struct cnuas_ib_qp *qp = to_cqp(ibqp);
	struct cnuas_ib_av av = {};
	int err;

	if (udata && udata->inlen)
		return -EOPNOTSUPP;
	if (mask & ~IB_QP_ATTR_STANDARD_BITS)
		return -EOPNOTSUPP;
	if ((mask & IB_QP_AV) && cnuas_qp_is_rc(qp)) {
		err = cnuas_ib_av_from_attr(qp->dev, &av, &attr->ah_attr);
		if (err)
			return err;
	}

	spin_lock_bh(&qp->lock);
	err = cnuas_ib_modify_check(qp, attr, mask);
	if (err)
		goto out;

	if (mask & IB_QP_ACCESS_FLAGS)
		qp->attr.qp_access_flags = attr->qp_access_flags;
	if (mask & IB_QP_PKEY_INDEX)
		qp->attr.pkey_index = attr->pkey_index;
	if (mask & IB_QP_PORT)
		qp->attr.port_num = attr->port_num;
	if (mask & IB_QP_QKEY)
		qp->attr.qkey = attr->qkey;
	if ((mask & IB_QP_AV) && cnuas_qp_is_rc(qp)) {
		qp->av = av;
		qp->attr.ah_attr = attr->ah_attr;
		/* ib_core owns the sgid_attr reference; we keep addresses */
		qp->attr.ah_attr.grh.sgid_attr = NULL;
	}
	if (mask & IB_QP_PATH_MTU) {
		qp->attr.path_mtu = attr->path_mtu;
		qp->pmtu = ib_mtu_enum_to_int(attr->path_mtu);
	}
	if (mask & IB_QP_TIMEOUT)
		qp->attr.timeout = attr->timeout;
	if (mask & IB_QP_RETRY_CNT) {
		qp->attr.retry_cnt = attr->retry_cnt;
		qp->req.retry_left = attr->retry_cnt;
	}
	if (mask & IB_QP_RNR_RETRY) {
		qp->attr.rnr_retry = attr->rnr_retry;
		qp->req.rnr_left = attr->rnr_retry;
	}
	if (mask & IB_QP_RQ_PSN) {
		qp->attr.rq_psn = attr->rq_psn & CNUAS_PSN_MASK;
		qp->resp.epsn = qp->attr.rq_psn;
	}
	if (mask & IB_QP_MIN_RNR_TIMER)
		qp->attr.min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_SQ_PSN) {
		qp->attr.sq_psn = attr->sq_psn & CNUAS_PSN_MASK;
		qp->req.psn = qp->attr.sq_psn;
		qp->req.una = qp->attr.sq_psn;
	}
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		qp->attr.max_rd_atomic = attr->max_rd_atomic;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		qp->attr.max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IB_QP_DEST_QPN)
		qp->attr.dest_qp_num = attr->dest_qp_num & CNUAS_QPN_MASK;
	if (mask & IB_QP_EN_SQD_ASYNC_NOTIFY)
		qp->attr.en_sqd_async_notify = attr->en_sqd_async_notify;

	if (mask & IB_QP_STATE) {
		enum ib_qp_state next = attr->qp_state;

		if (next == IB_QPS_RESET)
			cnuas_ib_qp_reset(qp);
		if (next == IB_QPS_RTR && cnuas_qp_is_rc(qp))
			qp->sport = rdma_get_udp_sport(qp->av.flow_label,
						       ibqp->qp_num,
						       qp->attr.dest_qp_num);
		qp->state = next;
		qp->attr.qp_state = next;
		qp->attr.cur_qp_state = next;
		cnuas_ib_rq_ring_state(qp);
		if (next == IB_QPS_ERR || next == IB_QPS_RTS)
			cnuas_ib_qp_kick(qp);
	}
out:
	spin_unlock_bh(&qp->lock);
	return err;
}

int cnuas_ib_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		      struct ib_qp_init_attr *init)
{
	struct cnuas_ib_qp *qp = to_cqp(ibqp);

	spin_lock_bh(&qp->lock);
	*attr = qp->attr;
	attr->cur_qp_state = qp->state;
	attr->qp_state = qp->state;
	attr->sq_psn = qp->req.psn;
	attr->rq_psn = qp->resp.epsn;
	spin_unlock_bh(&qp->lock);

	attr->cap.max_send_wr = qp->sq_size;
	attr->cap.max_recv_wr = qp->rq_size;
	attr->cap.max_send_sge = qp->sq_max_sge;
	attr->cap.max_recv_sge = qp->srq ? 0 : qp->rq_max_sge;
	attr->cap.max_inline_data = qp->max_inline;

	memset(init, 0, sizeof(*init));
	init->qp_type = qp->type;
	init->send_cq = &qp->scq->ibcq;
	init->recv_cq = &qp->rcq->ibcq;
	init->srq = qp->srq ? &qp->srq->ibsrq : NULL;
	init->cap = attr->cap;
	init->sq_sig_type = qp->sig_all ? IB_SIGNAL_ALL_WR : IB_SIGNAL_REQ_WR;
	return 0;
}

/* The send flags this transport implements; any other bit is refused. */
#define CNUAS_IB_SEND_FLAGS (IB_SEND_FENCE | IB_SEND_SIGNALED | \
			     IB_SEND_SOLICITED | IB_SEND_INLINE)

/* The opcode and its operands on an RC QP; @total is the SGE sum. */
static int cnuas_ib_check_rc_wr(const struct ib_send_wr *wr, u64 total)
{
	switch (wr->opcode) {
	case IB_WR_SEND:
	case IB_WR_SEND_WITH_IMM:
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return 0;
	case IB_WR_RDMA_READ:
		/* the local buffers are written: no inline source */
		return (wr->send_flags & IB_SEND_INLINE) ? -EINVAL : 0;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		if (total != sizeof(u64) ||
		    !IS_ALIGNED(atomic_wr(wr)->remote_addr, sizeof(u64)) ||
		    (wr->send_flags & IB_SEND_INLINE))
			return -EINVAL;
		return 0;
	default:
		return -EINVAL;
	}
}

/*
 * A UD (or GSI) request: a one-packet SEND to the address handle's
 * destination.  A user QP may only name an AH of its own PD (uverbs
 * checks the handle's type and owner, not its PD).
 */
static int cnuas_ib_check_ud_wr(struct cnuas_ib_qp *qp,
				const struct ib_send_wr *wr, u64 total)
{
	const struct ib_ah *ah = ud_wr(wr)->ah;

	if (wr->opcode != IB_WR_SEND && wr->opcode != IB_WR_SEND_WITH_IMM)
		return -EINVAL;
	/* the port MTU bounds it; the requester checks the current one */
	if (total > ib_mtu_enum_to_int(CNUAS_IB_MAX_MTU))
		return -EINVAL;
	if (!ah || ah->device != qp->ibqp.device)
		return -EINVAL;
	if (qp->user && ah->pd != qp->ibqp.pd)
		return -EINVAL;
	/* native IB: the permissive DLID is for QP0's SMPs only */
	if (to_cah(ud_wr(wr)->ah)->av.dlid == CNUAS_LID_PERMISSIVE &&
	    qp->type != IB_QPT_SMI)
		return -EINVAL;
	return 0;
}

/*
 * Is @wr something this QP can carry?  Every field that sizes a copy or
 * indexes a queue is checked here, for every QP type, before anything is
 * copied or queued: a refused request consumes no slot and sends nothing.
 * *@len is the message length on success.
 */
static int cnuas_ib_check_send_wr(struct cnuas_ib_qp *qp,
				  const struct ib_send_wr *wr, u32 *len)
{
	u64 total = 0;
	int i, err;

	if (wr->send_flags & ~CNUAS_IB_SEND_FLAGS)
		return -EINVAL;
	if (wr->num_sge < 0 || wr->num_sge > qp->sq_max_sge)
		return -EINVAL;
	/* at most CNUAS_IB_MAX_SGE u32 lengths: the u64 sum cannot wrap */
	for (i = 0; i < wr->num_sge; i++)
		total += wr->sg_list[i].length;
	if (total > CNUAS_IB_MAX_MSG_SZ)
		return -EINVAL;
	/* the inline bytes land in a slot of max_inline bytes */
	if ((wr->send_flags & IB_SEND_INLINE) && total > qp->max_inline)
		return -EINVAL;
	if (cnuas_qp_is_rc(qp))
		err = cnuas_ib_check_rc_wr(wr, total);
	else
		err = cnuas_ib_check_ud_wr(qp, wr, total);
	if (err)
		return err;
	*len = total;
	return 0;
}

/*
 * Copy inline data into @dst (@size bytes): user QPs give user addresses
 * (copied before any lock, it may fault), kernel QPs kernel addresses.
 * cnuas_ib_check_send_wr() bounded the total; the copy checks each SGE
 * against the room left all the same, so no path can overrun @dst.
 */
static int cnuas_ib_copy_inline(struct cnuas_ib_qp *qp,
				const struct ib_send_wr *wr, u8 *dst,
				u32 size)
{
	u32 left = size;
	int i;

	for (i = 0; i < wr->num_sge; i++) {
		const struct ib_sge *sge = &wr->sg_list[i];

		if (sge->length > left)
			return -EINVAL;
		if (qp->user) {
			if (copy_from_user(dst,
					   u64_to_user_ptr(sge->addr),
					   sge->length))
				return -EFAULT;
		} else {
			memcpy(dst, (void *)(uintptr_t)sge->addr, sge->length);
		}
		dst += sge->length;
		left -= sge->length;
	}
	return 0;
}

static void cnuas_ib_fill_swqe(struct cnuas_ib_qp *qp,
			       struct cnuas_ib_swqe *wqe,
			       const struct ib_send_wr *wr, u32 len,
			       const u8 *inl)
{
	int i;

	wqe->wr_id = wr->wr_id;
	wqe->opcode = wr->opcode;
	wqe->send_flags = wr->send_flags;
	wqe->imm = wr->ex.imm_data;
	wqe->length = len;
	wqe->state = CNUAS_SWQE_POSTED;
	wqe->status = IB_WC_SUCCESS;
	wqe->sent = 0;
	wqe->resp_off = 0;
	wqe->num_sge = wr->num_sge;
	for (i = 0; i < wr->num_sge; i++) {
		wqe->sge[i].addr = wr->sg_list[i].addr;
		wqe->sge[i].length = wr->sg_list[i].length;
		wqe->sge[i].lkey = wr->sg_list[i].lkey;
	}
	if ((wr->send_flags & IB_SEND_INLINE) && len)
		memcpy(wqe->inline_data, inl, len);

	switch (wr->opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_RDMA_READ:
		wqe->remote_addr = rdma_wr(wr)->remote_addr;
		wqe->rkey = rdma_wr(wr)->rkey;
		break;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		wqe->remote_addr = atomic_wr(wr)->remote_addr;
		wqe->rkey = atomic_wr(wr)->rkey;
		wqe->compare_add = atomic_wr(wr)->compare_add;
		wqe->swap = atomic_wr(wr)->swap;
		break;
	default:
		break;
	}
	if (qp->type != IB_QPT_RC) {
		wqe->av = to_cah(ud_wr(wr)->ah)->av;
		wqe->remote_qpn = ud_wr(wr)->remote_qpn;
		wqe->remote_qkey = ud_wr(wr)->remote_qkey;
	}
}

int cnuas_ib_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		       const struct ib_send_wr **bad)
{
	struct cnuas_ib_qp *qp = to_cqp(ibqp);
	u8 inl[CNUAS_IB_MAX_INLINE];
	unsigned long flags;
	int err = 0;

	for (; wr; wr = wr->next) {
		enum ib_qp_state state = READ_ONCE(qp->state);
		u32 len;

		if (state == IB_QPS_RESET || state == IB_QPS_INIT ||
		    state == IB_QPS_RTR) {
			err = -EINVAL;
			break;
		}
		err = cnuas_ib_check_send_wr(qp, wr, &len);
		if (err)
			break;
		if (wr->send_flags & IB_SEND_INLINE) {
			err = cnuas_ib_copy_inline(qp, wr, inl,
						   min_t(u32, qp->max_inline,
							 sizeof(inl)));
			if (err)
				break;
		}
		spin_lock_irqsave(&qp->sq_lock, flags);
		if (qp->sq_head - READ_ONCE(qp->sq_comp) >= qp->sq_size) {
			spin_unlock_irqrestore(&qp->sq_lock, flags);
			err = -ENOMEM;
			break;
		}
		cnuas_ib_fill_swqe(qp, cnuas_swqe(qp, qp->sq_head), wr, len,
				   inl);
		/* the engine reads the slot only after it sees the new head */
		smp_store_release(&qp->sq_head, qp->sq_head + 1);
		spin_unlock_irqrestore(&qp->sq_lock, flags);
	}
	if (err)
		*bad = wr;
	cnuas_ib_qp_run(qp);
	return err;
}

/**
 * cnuas_ib_recv_wr_len - check a receive work request's SGE list
 * @wr: the request (its num_sge is the poster's: checked first)
 * @max_sge: the queue's SGEs per receive
 * @total: set to the sum of the lengths
 *
 * Return: 0, or -EINVAL for a bad count or a total above the largest
 * message.  At most CNUAS_IB_MAX_SGE u32 lengths are summed into a u64:
 * no wrap.
 */
int cnuas_ib_recv_wr_len(const struct ib_recv_wr *wr, u32 max_sge, u32 *total)
{
	u64 sum = 0;
	int i;

	if (wr->num_sge < 0 || wr->num_sge > max_sge)
		return -EINVAL;
	for (i = 0; i < wr->num_sge; i++)
		sum += wr->sg_list[i].length;
	if (sum > CNUAS_IB_MAX_MSG_SZ)
		return -EINVAL;
	*total = sum;
	return 0;
}

/* Store a receive checked by cnuas_ib_recv_wr_len() in a ring slot. */
void cnuas_ib_rwqe_fill(struct cnuas_ib_rwqe *rwqe,
			const struct ib_recv_wr *wr, u32 total)
{
	int i;

	rwqe->wr_id = wr->wr_id;
	rwqe->num_sge = wr->num_sge;
	rwqe->length = total;
	for (i = 0; i < wr->num_sge; i++) {
		rwqe->sge[i].addr = wr->sg_list[i].addr;
		rwqe->sge[i].length = wr->sg_list[i].length;
		rwqe->sge[i].lkey = wr->sg_list[i].lkey;
	}
}

int cnuas_ib_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad)
{
	struct cnuas_ib_qp *qp = to_cqp(ibqp);
	unsigned long flags;
	bool kick = false;
	int err = 0;

	/* a QP with an SRQ has no receive queue: post to the SRQ */
	if (qp->srq) {
		*bad = wr;
		return -EINVAL;
	}
	/*
	 * A mapped ring is posted to by the provider; the command comes
	 * without work requests, from a provider that saw the QP in the
	 * error state after posting: run the flush.
	 */
	if (qp->rq_ring) {
		if (wr) {
			*bad = wr;
			return -EINVAL;
		}
		if (READ_ONCE(qp->state) == IB_QPS_ERR)
			cnuas_ib_qp_run(qp);
		return 0;
	}
	for (; wr; wr = wr->next) {
		struct cnuas_ib_rwqe *rwqe;
		u32 total;

		if (READ_ONCE(qp->state) == IB_QPS_RESET) {
			err = -EINVAL;
			break;
		}
		err = cnuas_ib_recv_wr_len(wr, qp->rq_max_sge, &total);
		if (err)
			break;
		spin_lock_irqsave(&qp->rq_lock, flags);
		if (qp->rq_head - qp->rq_tail >= qp->rq_size) {
			spin_unlock_irqrestore(&qp->rq_lock, flags);
			err = -ENOMEM;
			break;
		}
		rwqe = &qp->rq[qp->rq_head & (qp->rq_size - 1)];
		cnuas_ib_rwqe_fill(rwqe, wr, total);
		qp->rq_head++;
		spin_unlock_irqrestore(&qp->rq_lock, flags);
		kick = true;
	}
	if (err)
		*bad = wr;
	/* the engine flushes receives posted in the error state */
	if (kick && READ_ONCE(qp->state) == IB_QPS_ERR)
		cnuas_ib_qp_kick(qp);
	return err;
}
