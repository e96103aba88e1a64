// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * cnuas_ib: the requester.  Turns send work requests into request packets:
 * segmentation at the path MTU, PSN assignment, AckReq, the retransmit
 * store (every RC request frame is kept until its work request
 * completes, and a rewind resends the kept frames from a PSN on), and the
 * retransmit and RNR timers.  A QP that a CNP slowed down sends at its
 * DCQCN rate (cnuas_ib_cc.c).  Runs in the QP's engine with qp->lock held.
 */
#include <rdma/ib_addr.h>

#include "cnuas_ib.h"

/*
 * Retransmit timeout: IBA asks for at least 4.096 us * 2^timeout and at
 * most four times that; we take the top of the range, because a late ACK
 * (a busy or emulated host) is far more common here than a lost one, and
 * each early timeout resends the whole window.  0 means wait for ever.
 */
unsigned long cnuas_ib_retx_jiffies(struct cnuas_ib_qp *qp)
{
	u64 ns;

	if (!qp->attr.timeout)
		return 0;
	ns = 4 * (4096ULL << qp->attr.timeout);
	return msecs_to_jiffies(max_t(u64, CNUAS_IB_MIN_RETX_MS,
				      div_u64(ns, NSEC_PER_MSEC)));
}

/* (Re)start the retransmit timer. */
void cnuas_ib_retx_arm(struct cnuas_ib_qp *qp)
{
	unsigned long t = cnuas_ib_retx_jiffies(qp);

	if (t)
		mod_timer(&qp->retx_timer, jiffies + t);
}

void cnuas_ib_retx_timer_fn(struct timer_list *t)
{
	struct cnuas_ib_qp *qp = from_timer(qp, t, retx_timer);

	spin_lock(&qp->lock);
	qp->req.timeout = true;
	spin_unlock(&qp->lock);
	cnuas_ib_qp_kick(qp);
}

void cnuas_ib_rnr_timer_fn(struct timer_list *t)
{
	struct cnuas_ib_qp *qp = from_timer(qp, t, rnr_timer);

	spin_lock(&qp->lock);
	qp->req.rnr_wait = false;
	spin_unlock(&qp->lock);
	cnuas_ib_qp_kick(qp);
}

/* Resend the kept frames that stand for @psn or later. */
void cnuas_ib_req_rewind(struct cnuas_ib_qp *qp, u32 psn)
{
	if (!qp->req.rewind || cnuas_psn_cmp(psn, qp->req.rewind_psn) < 0) {
		qp->req.rewind = true;
		qp->req.rewind_psn = psn;
	}
}

static struct sk_buff *cnuas_ib_read_tail(struct cnuas_ib_qp *qp,
					  struct sk_buff *req);

static bool cnuas_ib_req_resend(struct cnuas_ib_qp *qp)
{
	struct sk_buff *skb, *clone;

	skb_queue_walk(&qp->retx_q, skb) {
		struct cnuas_txcb *cb = cnuas_txcb(skb);

		/* never resend what the peer has acknowledged */
		if (cnuas_psn_cmp(cb->end_psn, qp->req.rewind_psn) < 0 ||
		    cnuas_psn_cmp(cb->end_psn, qp->req.una) < 0)
			continue;
		/* a paced QP resends at its rate too */
		if (!cnuas_ib_cc_may_send(qp)) {
			qp->req.rewind_psn = cb->psn;
			return false;
		}
		/*
		 * A read whose first responses arrived: ask only for the rest,
		 * from the first missing PSN on, not the whole read again.
		 */
		if (cnuas_psn_cmp(qp->req.una, cb->psn) > 0 &&
		    cb->psn != cb->end_psn)
			clone = cnuas_ib_read_tail(qp, skb);
		else
			clone = skb_clone(skb, GFP_ATOMIC);
		if (clone)
			cnuas_ib_cc_sent(qp, clone->len);
		if (!clone || cnuas_ib_xmit(qp, clone) == -ENOBUFS) {
			qp->req.rewind_psn = cb->psn;
			return false;
		}
		cnuas_stat_inc(qp->dev, CNUAS_STAT_RETRANSMITS);
	}
	qp->req.rewind = false;
	if (!skb_queue_empty(&qp->retx_q))
		cnuas_ib_retx_arm(qp);
	return true;
}

/* Keep a request frame for retransmission and send a copy of it. */
static int cnuas_ib_req_send(struct cnuas_ib_qp *qp, struct sk_buff *skb,
			     u32 psn, u32 end_psn, u32 wqe_idx)
{
	struct cnuas_txcb *cb = cnuas_txcb(skb);
	struct sk_buff *clone;

	cb->psn = psn;
	cb->end_psn = end_psn;
	cb->wqe = wqe_idx;
	__skb_queue_tail(&qp->retx_q, skb);
	if (!timer_pending(&qp->retx_timer))
		cnuas_ib_retx_arm(qp);
	if (qp->req.rewind)
		return -ENOBUFS;
	cnuas_ib_cc_sent(qp, skb->len);
	clone = skb_clone(skb, GFP_ATOMIC);
	if (!clone || cnuas_ib_xmit(qp, clone) == -ENOBUFS) {
		cnuas_ib_req_rewind(qp, psn);
		return -ENOBUFS;
	}
	return 0;
}

static void cnuas_ib_fill_bth(struct cnuas_bth *bth, u32 dqpn, u32 psn,
			      bool ackreq, bool se)
{
	bth->qpn = htonl(dqpn & CNUAS_QPN_MASK);
	bth->apsn = htonl((psn & CNUAS_PSN_MASK) |
			  (ackreq ? CNUAS_BTH_ACKREQ : 0));
	if (se)
		bth->flags |= CNUAS_BTH_SE;
}

static u8 *cnuas_bth_hdr(struct cnuas_bth *bth, enum cnuas_hdr h)
{
	return (u8 *)bth + cnuas_ib_opcode[bth->opcode].off[h];
}

/* Fetch the payload of a packet from the request's buffers. */
static int cnuas_ib_req_payload(struct cnuas_ib_qp *qp,
				struct cnuas_ib_swqe *wqe, u32 off, u8 *dst,
				u32 n)
{
	if (!n)
		return 0;
	if (wqe->send_flags & IB_SEND_INLINE) {
		memcpy(dst, wqe->inline_data + off, n);
		return 0;
	}
	return cnuas_ib_sge_copy(qp, wqe->sge, wqe->num_sge, off, dst, n,
				 false);
}

static u8 cnuas_ib_rc_opcode(bool write, bool first, bool last, bool imm)
{
	if (write) {
		if (first && last)
			return imm ? IB_OPCODE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE :
				     IB_OPCODE_RC_RDMA_WRITE_ONLY;
		if (first)
			return IB_OPCODE_RC_RDMA_WRITE_FIRST;
		if (last)
			return imm ? IB_OPCODE_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE :
				     IB_OPCODE_RC_RDMA_WRITE_LAST;
		return IB_OPCODE_RC_RDMA_WRITE_MIDDLE;
	}
	if (first && last)
		return imm ? IB_OPCODE_RC_SEND_ONLY_WITH_IMMEDIATE :
			     IB_OPCODE_RC_SEND_ONLY;
	if (first)
		return IB_OPCODE_RC_SEND_FIRST;
	if (last)
		return imm ? IB_OPCODE_RC_SEND_LAST_WITH_IMMEDIATE :
			     IB_OPCODE_RC_SEND_LAST;
	return IB_OPCODE_RC_SEND_MIDDLE;
}

/* Read and atomic requests: one packet that stands for all the responses. */
static int cnuas_ib_req_rd_atomic(struct cnuas_ib_qp *qp,
				  struct cnuas_ib_swqe *wqe, u32 idx)
{
	bool atomic = wqe->opcode != IB_WR_RDMA_READ;
	struct cnuas_bth *bth;
	struct sk_buff *skb;
	u8 opcode;
	u32 psn;

	if (!atomic)
		opcode = IB_OPCODE_RC_RDMA_READ_REQUEST;
	else if (wqe->opcode == IB_WR_ATOMIC_CMP_AND_SWP)
		opcode = IB_OPCODE_RC_COMPARE_SWAP;
	else
		opcode = IB_OPCODE_RC_FETCH_ADD;
	skb = cnuas_ib_frame_alloc(qp, &qp->av, opcode, 0, &bth);
	if (!skb)
		return -ENOMEM;

	if (atomic) {
		struct cnuas_atmeth *a =
			(void *)cnuas_bth_hdr(bth, CNUAS_HDR_ATMETH);

		a->va = cpu_to_be64(wqe->remote_addr);
		a->rkey = cpu_to_be32(wqe->rkey);
		if (wqe->opcode == IB_WR_ATOMIC_CMP_AND_SWP) {
			a->swap_add = cpu_to_be64(wqe->swap);
			a->compare = cpu_to_be64(wqe->compare_add);
		} else {
			a->swap_add = cpu_to_be64(wqe->compare_add);
		}
	} else {
		struct cnuas_reth *r = (void *)cnuas_bth_hdr(bth, CNUAS_HDR_RETH);

		r->va = cpu_to_be64(wqe->remote_addr);
		r->rkey = cpu_to_be32(wqe->rkey);
		r->len = cpu_to_be32(wqe->length);
	}
	psn = qp->req.psn;
	cnuas_ib_fill_bth(bth, qp->attr.dest_qp_num, psn, true, false);
	cnuas_ib_frame_finish(qp, skb);

	qp->req.psn = cnuas_psn_add(wqe->last_psn, 1);
	qp->req.rd_out++;
	qp->req.pkts_since_ack = 0;
	wqe->state = CNUAS_SWQE_WAIT;
	return cnuas_ib_req_send(qp, skb, psn, wqe->last_psn, idx);
}

/*
 * A read request for what a part-answered read (@req, the kept request)
 * still lacks: from its first missing response PSN and byte on.
 */
static struct sk_buff *cnuas_ib_read_tail(struct cnuas_ib_qp *qp,
					  struct sk_buff *req)
{
	struct cnuas_ib_swqe *wqe = cnuas_swqe(qp, cnuas_txcb(req)->wqe);
	struct cnuas_reth *r;
	struct cnuas_bth *bth;
	struct sk_buff *skb;

	if (wqe->opcode != IB_WR_RDMA_READ || wqe->resp_off >= wqe->length)
		return skb_clone(req, GFP_ATOMIC);
	skb = cnuas_ib_frame_alloc(qp, &qp->av, IB_OPCODE_RC_RDMA_READ_REQUEST,
				   0, &bth);
	if (!skb)
		return NULL;
	r = (void *)cnuas_bth_hdr(bth, CNUAS_HDR_RETH);
	r->va = cpu_to_be64(wqe->remote_addr + wqe->resp_off);
	r->rkey = cpu_to_be32(wqe->rkey);
	r->len = cpu_to_be32(wqe->length - wqe->resp_off);
	cnuas_ib_fill_bth(bth, qp->attr.dest_qp_num, wqe->resp_psn, true, false);
	cnuas_ib_frame_finish(qp, skb);
	return skb;
}

/* The next packet of a SEND or RDMA WRITE. */
static int cnuas_ib_req_send_write(struct cnuas_ib_qp *qp,
				   struct cnuas_ib_swqe *wqe, u32 idx)
{
	bool write = wqe->opcode == IB_WR_RDMA_WRITE ||
		     wqe->opcode == IB_WR_RDMA_WRITE_WITH_IMM;
	bool imm = wqe->opcode == IB_WR_SEND_WITH_IMM ||
		   wqe->opcode == IB_WR_RDMA_WRITE_WITH_IMM;
	u32 off = wqe->sent;
	u32 n = min(qp->pmtu, wqe->length - off);
	bool first = off == 0;
	bool last = off + n == wqe->length;
	struct cnuas_bth *bth;
	struct sk_buff *skb;
	u8 opcode;
	bool ackreq;
	u32 psn;
	int err;

	opcode = cnuas_ib_rc_opcode(write, first, last, imm);
	skb = cnuas_ib_frame_alloc(qp, &qp->av, opcode, n, &bth);
	if (!skb)
		return -ENOMEM;
	err = cnuas_ib_req_payload(qp, wqe, off, (u8 *)bth +
				   cnuas_ib_opcode[opcode].hdr_len, n);
	if (err) {
		kfree_skb(skb);
		return err;
	}
	if (write && first) {
		struct cnuas_reth *r = (void *)cnuas_bth_hdr(bth, CNUAS_HDR_RETH);

		r->va = cpu_to_be64(wqe->remote_addr);
		r->rkey = cpu_to_be32(wqe->rkey);
		r->len = cpu_to_be32(wqe->length);
	}
	if (imm && last)
		memcpy(cnuas_bth_hdr(bth, CNUAS_HDR_IMMDT), &wqe->imm,
		       sizeof(wqe->imm));

	ackreq = last || ++qp->req.pkts_since_ack >= CNUAS_IB_ACKREQ_EVERY;
	if (ackreq)
		qp->req.pkts_since_ack = 0;
	psn = qp->req.psn;
	cnuas_ib_fill_bth(bth, qp->attr.dest_qp_num, psn, ackreq,
			  last && (wqe->send_flags & IB_SEND_SOLICITED) &&
			  (!write || imm));
	cnuas_ib_frame_finish(qp, skb);

	qp->req.psn = cnuas_psn_add(psn, 1);
	wqe->sent += n;
	wqe->state = last ? CNUAS_SWQE_WAIT : CNUAS_SWQE_SENDING;
	return cnuas_ib_req_send(qp, skb, psn, psn, idx);
}

/* A UD send: one packet, complete once it is on its way. */
static int cnuas_ib_req_ud(struct cnuas_ib_qp *qp, struct cnuas_ib_swqe *wqe)
{
	bool imm = wqe->opcode == IB_WR_SEND_WITH_IMM;
	u32 mtu = cnuas_ib_ud_mtu(qp->dev);
	struct cnuas_deth *deth;
	struct cnuas_bth *bth;
	struct sk_buff *skb;
	u8 opcode;
	u32 qkey;
	int err;

	if (wqe->length > mtu)
		return -EINVAL;
	opcode = imm ? IB_OPCODE_UD_SEND_ONLY_WITH_IMMEDIATE :
		       IB_OPCODE_UD_SEND_ONLY;
	skb = cnuas_ib_frame_alloc(qp, &wqe->av, opcode, wqe->length, &bth);
	if (!skb)
		return -ENOMEM;
	err = cnuas_ib_req_payload(qp, wqe, 0, (u8 *)bth +
				   cnuas_ib_opcode[opcode].hdr_len,
				   wqe->length);
	if (err) {
		kfree_skb(skb);
		return err;
	}
	deth = (void *)cnuas_bth_hdr(bth, CNUAS_HDR_DETH);
	/*
	 * QP1 always sends the well-known GSI Q_Key, QP0 (native IB) 0: the
	 * SMI's receivers ignore it; elsewhere a Q_Key with the high bit set
	 * means "use the QP's own" (ib_mad sends with that).
	 */
	if (qp->type == IB_QPT_GSI)
		qkey = CNUAS_GSI_QKEY;
	else if (qp->type == IB_QPT_SMI)
		qkey = 0;
	else if (wqe->remote_qkey & 0x80000000U)
		qkey = qp->attr.qkey;
	else
		qkey = wqe->remote_qkey;
	deth->qkey = cpu_to_be32(qkey);
	deth->sqp = cpu_to_be32(qp->ibqp.qp_num & CNUAS_QPN_MASK);
	if (imm)
		memcpy(cnuas_bth_hdr(bth, CNUAS_HDR_IMMDT), &wqe->imm,
		       sizeof(wqe->imm));
	cnuas_ib_fill_bth(bth, wqe->remote_qpn, qp->req.psn, false,
			  wqe->send_flags & IB_SEND_SOLICITED);
	cnuas_ib_frame_finish(qp, skb);
	cnuas_ib_cc_sent(qp, skb->len);
	err = cnuas_ib_xmit(qp, skb);
	if (err)
		return err;
	qp->req.psn = cnuas_psn_add(qp->req.psn, 1);
	wqe->state = CNUAS_SWQE_DONE;
	return 0;
}

/* First look at a work request: where its PSNs go; false to wait. */
static bool cnuas_ib_req_start(struct cnuas_ib_qp *qp,
			       struct cnuas_ib_swqe *wqe)
{
	bool rd = wqe->opcode == IB_WR_RDMA_READ ||
		  wqe->opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
		  wqe->opcode == IB_WR_ATOMIC_FETCH_AND_ADD;
	u32 max_rd = max_t(u32, qp->attr.max_rd_atomic, 1);
	u32 npkts;

	if ((wqe->send_flags & IB_SEND_FENCE) && qp->req.rd_out)
		return false;
	if (rd && qp->req.rd_out >= max_rd)
		return false;
	if (wqe->opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
	    wqe->opcode == IB_WR_ATOMIC_FETCH_AND_ADD)
		npkts = 1;
	else
		npkts = max_t(u32, 1, DIV_ROUND_UP(wqe->length, qp->pmtu));
	wqe->first_psn = qp->req.psn;
	wqe->last_psn = cnuas_psn_add(qp->req.psn, npkts - 1);
	wqe->resp_psn = wqe->first_psn;
	wqe->resp_off = 0;
	wqe->sent = 0;
	wqe->state = CNUAS_SWQE_SENDING;
	return true;
}

static void cnuas_ib_req_fail(struct cnuas_ib_qp *qp,
			      struct cnuas_ib_swqe *wqe, int err)
{
	wqe->status = err == -EACCES ? IB_WC_LOC_PROT_ERR : IB_WC_LOC_LEN_ERR;
	wqe->state = CNUAS_SWQE_DONE;
	qp->sq_req++;
	cnuas_ib_comp_retire(qp);
	cnuas_ib_qp_error(qp);
}

/**
 * cnuas_ib_requester - send what the send queue and the window allow
 * @qp: the QP (RTS or SQD), qp->lock held
 * @budget: packets this run may still send; decremented
 *
 * Return: true when it did something (the engine goes round again).
 */
bool cnuas_ib_requester(struct cnuas_ib_qp *qp, int *budget)
{
	bool progress = false;
	int err;

	if (READ_ONCE(qp->tx_blocked) || qp->req.rnr_wait)
		return false;
	if (qp->req.rewind) {
		if (!cnuas_ib_req_resend(qp))
			return false;
		progress = true;
	}

	while (*budget > 0) {
		/* pairs with post_send's release: slots below head are filled */
		u32 head = smp_load_acquire(&qp->sq_head);
		struct cnuas_ib_swqe *wqe;

		if (qp->sq_req == head)
			break;
		wqe = cnuas_swqe(qp, qp->sq_req);

		if (!cnuas_qp_is_rc(qp)) {
			if (!cnuas_ib_cc_may_send(qp))
				break;
			err = cnuas_ib_req_ud(qp, wqe);
			if (err == -ENOMEM)
				cnuas_ib_qp_kick(qp);
			if (err == -ENOBUFS || err == -ENOMEM)
				break;
			if (err) {
				cnuas_ib_req_fail(qp, wqe, err);
				return true;
			}
			qp->sq_req++;
			cnuas_ib_comp_retire(qp);
			(*budget)--;
			progress = true;
			continue;
		}

		if (wqe->state == CNUAS_SWQE_POSTED &&
		    !cnuas_ib_req_start(qp, wqe))
			break;
		if (cnuas_psn_cmp(qp->req.psn, qp->req.una) >=
		    CNUAS_IB_WINDOW)
			break;
		/* DCQCN pacing: a QP below line rate waits for its tokens */
		if (!cnuas_ib_cc_may_send(qp))
			break;

		if (wqe->opcode == IB_WR_RDMA_READ ||
		    wqe->opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
		    wqe->opcode == IB_WR_ATOMIC_FETCH_AND_ADD)
			err = cnuas_ib_req_rd_atomic(qp, wqe, qp->sq_req);
		else
			err = cnuas_ib_req_send_write(qp, wqe, qp->sq_req);
		if (err == -ENOMEM) {
			/* no frame was made; try again on the next run */
			cnuas_ib_qp_kick(qp);
			break;
		}
		if (err && err != -ENOBUFS) {
			cnuas_ib_req_fail(qp, wqe, err);
			return true;
		}
		if (wqe->state == CNUAS_SWQE_WAIT) {
			qp->sq_req++;
			progress = true;
		}
		(*budget)--;
		if (err)
			break;
		progress = true;
	}
	return progress;
}
