// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * cnuas_ib: the completer.  Takes ACKs, NAKs, read responses and atomic
 * acknowledgements for the requests this QP sent, completes work requests
 * in order, and decides retries: sequence NAKs and timeouts rewind the
 * requester (retry_cnt), RNR NAKs wait for the RNR timer (rnr_retry, 7 =
 * for ever), error NAKs fail the request and the QP.  Runs in the QP's
 * engine with qp->lock held.
 */
#include "cnuas_ib.h"

/* RNR NAK timer field -> microseconds (IBA table 45). */
static const u32 cnuas_rnr_usec[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
	1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
	40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

static bool cnuas_wqe_is_rd(const struct cnuas_ib_swqe *wqe)
{
	return wqe->opcode == IB_WR_RDMA_READ ||
	       wqe->opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
	       wqe->opcode == IB_WR_ATOMIC_FETCH_AND_ADD;
}

/**
 * cnuas_ib_comp_retire - post completions of finished requests, in order
 * @qp: qp->lock held
 *
 * Frees the kept frames of each retired request; stops the retransmit
 * timer when nothing is left outstanding.
 */
void cnuas_ib_comp_retire(struct cnuas_ib_qp *qp)
{
	struct sk_buff *skb;

	while (qp->sq_comp != qp->sq_req) {
		struct cnuas_ib_swqe *wqe = cnuas_swqe(qp, qp->sq_comp);

		if (wqe->state != CNUAS_SWQE_DONE)
			break;
		while ((skb = skb_peek(&qp->retx_q)) &&
		       cnuas_txcb(skb)->wqe == qp->sq_comp) {
			__skb_unlink(skb, &qp->retx_q);
			consume_skb(skb);
		}
		if (cnuas_qp_is_rc(qp) && cnuas_wqe_is_rd(wqe) &&
		    qp->req.rd_out)
			qp->req.rd_out--;
		cnuas_ib_complete_swqe(qp, wqe);
		/* the slot is free for post_send only after we are done with it */
		smp_store_release(&qp->sq_comp, qp->sq_comp + 1);
	}
	if (skb_queue_empty(&qp->retx_q))
		del_timer(&qp->retx_timer);
}

/* Forward progress: the retry counters start again. */
static void cnuas_ib_comp_progress(struct cnuas_ib_qp *qp)
{
	qp->req.rd_retried = false;
	qp->req.progress_at = jiffies;
	qp->req.retry_left = qp->attr.retry_cnt;
	qp->req.rnr_left = qp->attr.rnr_retry;
	cnuas_ib_comp_retire(qp);
	if (!skb_queue_empty(&qp->retx_q))
		cnuas_ib_retx_arm(qp);
}

/*
 * One past the last request with packets out: the requester's current one
 * counts when it is part sent.
 */
static u32 cnuas_ib_sq_out_end(struct cnuas_ib_qp *qp)
{
	u32 end = qp->sq_req;

	if (end != READ_ONCE(qp->sq_head) &&
	    cnuas_swqe(qp, end)->state == CNUAS_SWQE_SENDING)
		end++;
	return end;
}

/*
 * A request (@wqe, or the oldest outstanding one) fails with @status; the
 * QP goes to error.
 */
static void cnuas_ib_comp_fail(struct cnuas_ib_qp *qp, struct cnuas_ib_swqe *wqe,
			       enum ib_wc_status status)
{
	if (!wqe) {
		if (qp->sq_comp == cnuas_ib_sq_out_end(qp))
			goto err;
		wqe = cnuas_swqe(qp, qp->sq_comp);
	}
	if (wqe == cnuas_swqe(qp, qp->sq_req) &&
	    wqe->state == CNUAS_SWQE_SENDING)
		qp->sq_req++;
	wqe->status = status;
	wqe->state = CNUAS_SWQE_DONE;
	cnuas_ib_comp_retire(qp);
err:
	cnuas_ib_qp_error(qp);
}

/* Go back to @psn, counting a retry; out of retries fails the request. */
static void cnuas_ib_comp_retry(struct cnuas_ib_qp *qp, u32 psn)
{
	if (qp->req.retry_left <= 0) {
		cnuas_stat_inc(qp->dev, CNUAS_STAT_RETRY_EXCEEDED);
		cnuas_ib_comp_fail(qp, NULL, IB_WC_RETRY_EXC_ERR);
		return;
	}
	qp->req.retry_left--;
	cnuas_ib_req_rewind(qp, psn);
	/* what is acknowledged is never resent: go back no further than una */
	if (cnuas_psn_cmp(qp->req.rewind_psn, qp->req.una) < 0)
		qp->req.rewind_psn = qp->req.una;
	cnuas_ib_retx_arm(qp);
}

/*
 * Responses of a read or atomic are missing from @psn on: ask again, once.
 * The rest of the round already in flight shows the same gap and must not
 * count as more retries; the retransmit timer covers a lost second try.
 */
static void cnuas_ib_comp_rd_retry(struct cnuas_ib_qp *qp, u32 psn)
{
	if (qp->req.rd_retried && qp->req.rd_retry_psn == psn)
		return;
	qp->req.rd_retried = true;
	qp->req.rd_retry_psn = psn;
	cnuas_ib_comp_retry(qp, psn);
}

/*
 * Everything up to and including @psn was received.  A read or atomic
 * before @psn whose responses have not come means they were lost: go back
 * for them.
 */
static void cnuas_ib_ack_upto(struct cnuas_ib_qp *qp, u32 psn)
{
	bool progress = false;
	u32 idx;

	for (idx = qp->sq_comp; idx != qp->sq_req; idx++) {
		struct cnuas_ib_swqe *wqe = cnuas_swqe(qp, idx);

		if (wqe->state == CNUAS_SWQE_DONE)
			continue;
		if (cnuas_wqe_is_rd(wqe)) {
			if (cnuas_psn_cmp(psn, wqe->first_psn) >= 0) {
				if (cnuas_psn_cmp(wqe->resp_psn,
						  qp->req.una) > 0)
					qp->req.una = wqe->resp_psn;
				cnuas_ib_comp_rd_retry(qp, wqe->resp_psn);
				goto out;
			}
			break;
		}
		if (cnuas_psn_cmp(wqe->last_psn, psn) > 0)
			break;
		wqe->state = CNUAS_SWQE_DONE;
		progress = true;
	}
	if (cnuas_psn_cmp(psn, qp->req.una) >= 0) {
		qp->req.una = cnuas_psn_add(psn, 1);
		progress = true;
	}
out:
	if (progress)
		cnuas_ib_comp_progress(qp);
}

/* The outstanding request whose PSNs include @psn, or NULL. */
static struct cnuas_ib_swqe *cnuas_ib_wqe_at(struct cnuas_ib_qp *qp, u32 psn)
{
	u32 end = cnuas_ib_sq_out_end(qp);
	u32 idx;

	for (idx = qp->sq_comp; idx != end; idx++) {
		struct cnuas_ib_swqe *wqe = cnuas_swqe(qp, idx);

		if (wqe->state == CNUAS_SWQE_DONE)
			continue;
		if (cnuas_psn_cmp(psn, wqe->first_psn) >= 0 &&
		    cnuas_psn_cmp(psn, wqe->last_psn) <= 0)
			return wqe;
	}
	return NULL;
}

static void cnuas_ib_comp_ack(struct cnuas_ib_qp *qp, struct sk_buff *skb)
{
	struct cnuas_pkt *pkt = cnuas_pkt(skb);
	struct cnuas_aeth *aeth = cnuas_pkt_hdr(skb, CNUAS_HDR_AETH);
	u8 syn = ntohl(aeth->smsn) >> 24;
	u32 psn = pkt->psn;
	u32 prev = cnuas_psn_add(psn, CNUAS_PSN_MASK);	/* psn - 1 */
	enum ib_wc_status status;

	switch (syn & CNUAS_AETH_TYPE_MASK) {
	case CNUAS_AETH_ACK:
		cnuas_ib_ack_upto(qp, psn);
		return;
	case CNUAS_AETH_RNR_NAK:
		if (cnuas_psn_cmp(psn, qp->req.una) < 0)
			return;
		cnuas_stat_inc(qp->dev, CNUAS_STAT_RNR_NAK_RCVD);
		cnuas_ib_ack_upto(qp, prev);
		if (qp->req.rnr_left <= 0) {
			cnuas_stat_inc(qp->dev, CNUAS_STAT_RNR_RETRY_EXCEEDED);
			cnuas_ib_comp_fail(qp, cnuas_ib_wqe_at(qp, psn),
					   IB_WC_RNR_RETRY_EXC_ERR);
			return;
		}
		if (qp->attr.rnr_retry != 7)
			qp->req.rnr_left--;
		qp->req.rnr_wait = true;
		cnuas_ib_req_rewind(qp, psn);
		del_timer(&qp->retx_timer);
		mod_timer(&qp->rnr_timer,
			  jiffies + usecs_to_jiffies(cnuas_rnr_usec[syn &
						     CNUAS_AETH_CODE_MASK]));
		return;
	case CNUAS_AETH_NAK:
		break;
	default:
		return;
	}

	if (cnuas_psn_cmp(psn, qp->req.una) < 0)
		return;		/* a NAK for something already settled */
	switch (syn & CNUAS_AETH_CODE_MASK) {
	case CNUAS_NAK_PSN_SEQ:
		cnuas_stat_inc(qp->dev, CNUAS_STAT_SEQ_NAK_RCVD);
		cnuas_ib_ack_upto(qp, prev);
		if (qp->state == IB_QPS_ERR)
			return;
		cnuas_ib_comp_retry(qp, psn);
		return;
	case CNUAS_NAK_INV_REQ:
		status = IB_WC_REM_INV_REQ_ERR;
		break;
	case CNUAS_NAK_REM_ACCESS:
		status = IB_WC_REM_ACCESS_ERR;
		break;
	default:
		status = IB_WC_REM_OP_ERR;
		break;
	}
	cnuas_ib_ack_upto(qp, prev);
	if (qp->state == IB_QPS_ERR)
		return;
	cnuas_ib_comp_fail(qp, cnuas_ib_wqe_at(qp, psn), status);
}

/* The oldest outstanding request, when it is a read/atomic expecting @psn. */
static struct cnuas_ib_swqe *cnuas_ib_comp_rd_wqe(struct cnuas_ib_qp *qp,
						  u32 psn, bool atomic)
{
	bool is_read;
	u32 idx;

	for (idx = qp->sq_comp; idx != qp->sq_req; idx++) {
		struct cnuas_ib_swqe *wqe = cnuas_swqe(qp, idx);

		if (wqe->state == CNUAS_SWQE_DONE)
			continue;
		if (!cnuas_wqe_is_rd(wqe))
			continue;	/* implicitly acked below */
		is_read = wqe->opcode == IB_WR_RDMA_READ;
		if (atomic == is_read)
			return NULL;
		return wqe;
	}
	return NULL;
}

static void cnuas_ib_comp_read(struct cnuas_ib_qp *qp, struct sk_buff *skb)
{
	struct cnuas_pkt *pkt = cnuas_pkt(skb);
	struct cnuas_ib_swqe *wqe;
	bool first, last;
	int err;

	wqe = cnuas_ib_comp_rd_wqe(qp, pkt->psn, false);
	if (!wqe || cnuas_psn_cmp(pkt->psn, wqe->first_psn) < 0 ||
	    cnuas_psn_cmp(pkt->psn, wqe->last_psn) > 0)
		return;
	if (cnuas_psn_cmp(pkt->psn, wqe->resp_psn) < 0)
		return;		/* a duplicate */
	/* earlier sends and writes are acknowledged by this response */
	cnuas_ib_ack_upto(qp, cnuas_psn_add(wqe->first_psn, CNUAS_PSN_MASK));
	if (qp->state == IB_QPS_ERR)
		return;
	if (pkt->psn != wqe->resp_psn) {
		/* lost responses: ask for the rest again */
		cnuas_ib_comp_rd_retry(qp, wqe->resp_psn);
		return;
	}
	/*
	 * FIRST opens the responses of a request: the original one, or one
	 * that asked again for the rest (so resp_off need not be 0).
	 */
	first = pkt->mask & CNUAS_OP_FIRST;
	last = pkt->mask & CNUAS_OP_LAST;
	if ((!first && !wqe->resp_off) ||
	    (!last && pkt->paylen != qp->pmtu) ||
	    (last && pkt->paylen != wqe->length - wqe->resp_off) ||
	    pkt->paylen > wqe->length - wqe->resp_off) {
		cnuas_ib_comp_fail(qp, wqe, IB_WC_BAD_RESP_ERR);
		return;
	}
	err = cnuas_ib_sge_copy(qp, wqe->sge, wqe->num_sge, wqe->resp_off,
				cnuas_pkt_payload(skb), pkt->paylen, true);
	if (err) {
		cnuas_ib_comp_fail(qp, wqe, err == -EACCES ?
				   IB_WC_LOC_PROT_ERR : IB_WC_LOC_LEN_ERR);
		return;
	}
	wqe->resp_off += pkt->paylen;
	wqe->resp_psn = cnuas_psn_add(pkt->psn, 1);
	qp->req.una = wqe->resp_psn;
	if (last)
		wqe->state = CNUAS_SWQE_DONE;
	cnuas_ib_comp_progress(qp);
}

static void cnuas_ib_comp_atomic(struct cnuas_ib_qp *qp, struct sk_buff *skb)
{
	struct cnuas_pkt *pkt = cnuas_pkt(skb);
	struct cnuas_atmack *ack = cnuas_pkt_hdr(skb, CNUAS_HDR_ATMACK);
	struct cnuas_ib_swqe *wqe;
	u64 orig;
	int err;

	wqe = cnuas_ib_comp_rd_wqe(qp, pkt->psn, true);
	if (!wqe || pkt->psn != wqe->first_psn)
		return;
	cnuas_ib_ack_upto(qp, cnuas_psn_add(wqe->first_psn, CNUAS_PSN_MASK));
	if (qp->state == IB_QPS_ERR)
		return;
	orig = be64_to_cpu(ack->orig);
	err = cnuas_ib_sge_copy(qp, wqe->sge, wqe->num_sge, 0, &orig,
				sizeof(orig), true);
	if (err) {
		cnuas_ib_comp_fail(qp, wqe, err == -EACCES ?
				   IB_WC_LOC_PROT_ERR : IB_WC_LOC_LEN_ERR);
		return;
	}
	wqe->resp_psn = cnuas_psn_add(pkt->psn, 1);
	qp->req.una = wqe->resp_psn;
	wqe->state = CNUAS_SWQE_DONE;
	cnuas_ib_comp_progress(qp);
}

/**
 * cnuas_ib_completer - handle one response packet
 * @qp: qp->lock held
 * @skb: the packet (consumed)
 */
void cnuas_ib_completer(struct cnuas_ib_qp *qp, struct sk_buff *skb)
{
	struct cnuas_pkt *pkt = cnuas_pkt(skb);

	if (qp->state != IB_QPS_RTS && qp->state != IB_QPS_SQD) {
		cnuas_stat_inc(qp->dev, CNUAS_STAT_RCVD_STATE_ERR);
		goto out;
	}
	if (!cnuas_ib_pkt_from_peer(qp, skb)) {
		cnuas_stat_inc(qp->dev, CNUAS_STAT_RCVD_SRC_ERR);
		goto out;
	}
	/* a response to a PSN never sent: nothing asked for it */
	if (cnuas_psn_cmp(pkt->psn, qp->req.psn) >= 0) {
		cnuas_stat_inc(qp->dev, CNUAS_STAT_RCVD_GHOST_RESP);
		goto out;
	}

	if (pkt->opcode == IB_OPCODE_RC_ACKNOWLEDGE)
		cnuas_ib_comp_ack(qp, skb);
	else if (pkt->opcode == IB_OPCODE_RC_ATOMIC_ACKNOWLEDGE)
		cnuas_ib_comp_atomic(qp, skb);
	else if (pkt->mask & CNUAS_OP_READ)
		cnuas_ib_comp_read(qp, skb);
out:
	consume_skb(skb);
}

/*
 * The retransmit timer fired: go back to the oldest unacknowledged PSN,
 * unless there was progress within the last timeout.  That happens when
 * the whole guest was stopped for a while (a busy or emulated host): the
 * timer then fires first and the ACKs that arrived meanwhile are handled
 * just after; that is a late ACK, not a lost one.
 */
void cnuas_ib_comp_timeout(struct cnuas_ib_qp *qp)
{
	unsigned long t = cnuas_ib_retx_jiffies(qp);

	if (qp->req.rnr_wait || skb_queue_empty(&qp->retx_q))
		return;
	if (t && time_before(jiffies, qp->req.progress_at + t)) {
		mod_timer(&qp->retx_timer, qp->req.progress_at + t);
		return;
	}
	cnuas_ib_comp_retry(qp, qp->req.una);
}
