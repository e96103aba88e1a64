// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * cnuas_ib: the responder.  Executes incoming requests in PSN order:
 * SENDs land in posted receives, RDMA WRITEs and READs and atomics go to
 * memory after the rkey, PD, access and bounds checks, and it answers with
 * coalesced ACKs, read responses, atomic acknowledgements and NAKs
 * (sequence, RNR, invalid request, remote access).  Duplicates are
 * re-acknowledged or replayed from the read/atomic history.  Runs in the
 * QP's engine with qp->lock held.
 */
#include <linux/highmem.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <rdma/ib_mad.h>

#include "cnuas_ib.h"

/* An ACK or NAK: AETH with @syn and the current MSN. */
static int cnuas_ib_resp_ack(struct cnuas_ib_qp *qp, u32 psn, u8 syn)
{
	struct cnuas_aeth *aeth;
	struct cnuas_bth *bth;
	struct sk_buff *skb;

	skb = cnuas_ib_frame_alloc(qp, &qp->av, IB_OPCODE_RC_ACKNOWLEDGE, 0,
				   &bth);
	if (!skb)
		return -ENOBUFS;
	bth->qpn = htonl(qp->attr.dest_qp_num);
	bth->apsn = htonl(psn & CNUAS_PSN_MASK);
	aeth = (void *)((u8 *)bth + cnuas_ib_opcode[bth->opcode].off[CNUAS_HDR_AETH]);
	aeth->smsn = htonl((u32)syn << 24 | (qp->resp.msn & CNUAS_PSN_MASK));
	cnuas_ib_frame_finish(qp, skb);
	cnuas_stat_inc(qp->dev, CNUAS_STAT_ACKS_SENT);
	return cnuas_ib_xmit(qp, skb);
}

static int cnuas_ib_resp_atomic_ack(struct cnuas_ib_qp *qp, u32 psn, u64 orig)
{
	const struct cnuas_opcode_info *info =
		&cnuas_ib_opcode[IB_OPCODE_RC_ATOMIC_ACKNOWLEDGE];
	struct cnuas_atmack *ack;
	struct cnuas_aeth *aeth;
	struct cnuas_bth *bth;
	struct sk_buff *skb;

	skb = cnuas_ib_frame_alloc(qp, &qp->av,
				   IB_OPCODE_RC_ATOMIC_ACKNOWLEDGE, 0, &bth);
	if (!skb)
		return -ENOBUFS;
	bth->qpn = htonl(qp->attr.dest_qp_num);
	bth->apsn = htonl(psn & CNUAS_PSN_MASK);
	aeth = (void *)((u8 *)bth + info->off[CNUAS_HDR_AETH]);
	aeth->smsn = htonl((u32)CNUAS_AETH_NO_CREDIT << 24 |
			   (qp->resp.msn & CNUAS_PSN_MASK));
	ack = (void *)((u8 *)bth + info->off[CNUAS_HDR_ATMACK]);
	ack->orig = cpu_to_be64(orig);
	cnuas_ib_frame_finish(qp, skb);
	return cnuas_ib_xmit(qp, skb);
}

/* A NAK that ends the connection: send it, the QP goes to error. */
static void cnuas_ib_resp_fatal(struct cnuas_ib_qp *qp, u32 psn, u8 code)
{
	if (code == CNUAS_NAK_REM_ACCESS)
		cnuas_stat_inc(qp->dev, CNUAS_STAT_REM_ACCESS_ERR);
	else if (code == CNUAS_NAK_INV_REQ)
		cnuas_stat_inc(qp->dev, CNUAS_STAT_REM_INV_REQ);
	cnuas_ib_resp_ack(qp, psn, CNUAS_AETH_NAK | code);
	cnuas_ib_qp_error(qp);
}

/* Complete the receive of the current SEND (or WRITE with immediate). */
static void cnuas_ib_resp_recv_done(struct cnuas_ib_qp *qp,
				    struct sk_buff *skb, u32 opcode,
				    u32 byte_len, enum ib_wc_status status)
{
	struct cnuas_pkt *pkt = cnuas_pkt(skb);
	struct cnuas_ib_cqe cqe = {
		.status = status,
		.opcode = opcode,
		.byte_len = byte_len,
		.src_qp = qp->attr.dest_qp_num,
	};

	if (status == IB_WC_SUCCESS && (pkt->mask & CNUAS_OP_IMMDT)) {
		memcpy(&cqe.imm_data, cnuas_pkt_hdr(skb, CNUAS_HDR_IMMDT), 4);
		cqe.flags |= CNUAS_IB_CQE_WITH_IMM;
	}
	qp->resp.have_wqe = false;
	cnuas_ib_complete_rwqe(qp, &qp->resp.wqe, &cqe, pkt->se);
}

static void cnuas_ib_hist_add(struct cnuas_ib_qp *qp,
			      const struct cnuas_ib_rd_hist *h)
{
	qp->resp.hist[qp->resp.hist_next] = *h;
	qp->resp.hist_next = (qp->resp.hist_next + 1) % CNUAS_IB_MAX_RD_ATOM;
}

static struct cnuas_ib_rd_hist *cnuas_ib_hist_find(struct cnuas_ib_qp *qp,
						   u32 psn, bool atomic)
{
	int i;

	for (i = 0; i < CNUAS_IB_MAX_RD_ATOM; i++) {
		struct cnuas_ib_rd_hist *h = &qp->resp.hist[i];

		if (!h->valid || h->atomic != atomic)
			continue;
		if (cnuas_psn_cmp(psn, h->psn) >= 0 &&
		    cnuas_psn_cmp(psn, cnuas_psn_add(h->psn, h->npkts - 1)) <= 0)
			return h;
	}
	return NULL;
}

/* Start the responses of a read (a new one, or one asked for again). */
static void cnuas_ib_rd_start(struct cnuas_ib_qp *qp,
			      const struct cnuas_ib_rd_hist *h)
{
	struct cnuas_ib_rd_gen *rd = &qp->resp.rd;

	rd->active = true;
	rd->first_psn = h->psn;
	rd->psn = h->psn;
	rd->last_psn = cnuas_psn_add(h->psn, h->npkts - 1);
	rd->va = h->va;
	rd->rkey = h->rkey;
	rd->left = h->len;
}

/**
 * cnuas_ib_resp_pending - send the next read responses
 * @qp: qp->lock held
 * @budget: packets this run may still send
 *
 * Return: true when it sent something.
 */
bool cnuas_ib_resp_pending(struct cnuas_ib_qp *qp, int *budget)
{
	struct cnuas_ib_rd_gen *rd = &qp->resp.rd;
	bool progress = false;

	while (rd->active && *budget > 0 && !READ_ONCE(qp->tx_blocked)) {
		u32 n = min(qp->pmtu, rd->left);
		bool first = rd->psn == rd->first_psn;
		bool last = rd->psn == rd->last_psn;
		struct cnuas_ib_mr *mr = NULL;
		struct cnuas_bth *bth;
		struct sk_buff *skb;
		u8 opcode;

		if (first && last)
			opcode = IB_OPCODE_RC_RDMA_READ_RESPONSE_ONLY;
		else if (first)
			opcode = IB_OPCODE_RC_RDMA_READ_RESPONSE_FIRST;
		else if (last)
			opcode = IB_OPCODE_RC_RDMA_READ_RESPONSE_LAST;
		else
			opcode = IB_OPCODE_RC_RDMA_READ_RESPONSE_MIDDLE;

		if (n) {
			mr = cnuas_ib_mr_get(qp->dev, rd->rkey, qp->ibqp.pd,
					     IB_ACCESS_REMOTE_READ, rd->va, n);
			if (!mr) {
				/* deregistered under us */
				rd->active = false;
				cnuas_ib_resp_fatal(qp, rd->psn,
						    CNUAS_NAK_REM_ACCESS);
				return true;
			}
		}
		skb = cnuas_ib_frame_alloc(qp, &qp->av, opcode, n, &bth);
		if (!skb) {
			if (mr)
				cnuas_ib_mr_put(mr);
			cnuas_ib_qp_kick(qp);
			break;
		}
		if (mr) {
			cnuas_ib_mr_copy(mr, rd->va, (u8 *)bth +
					 cnuas_ib_opcode[opcode].hdr_len, n,
					 false);
			cnuas_ib_mr_put(mr);
		}
		bth->qpn = htonl(qp->attr.dest_qp_num);
		bth->apsn = htonl(rd->psn);
		if (cnuas_ib_opcode[opcode].mask & CNUAS_OP_AETH) {
			struct cnuas_aeth *aeth = (void *)((u8 *)bth +
				cnuas_ib_opcode[opcode].off[CNUAS_HDR_AETH]);

			aeth->smsn = htonl((u32)CNUAS_AETH_NO_CREDIT << 24 |
					   (qp->resp.msn & CNUAS_PSN_MASK));
		}
		cnuas_ib_frame_finish(qp, skb);
		if (cnuas_ib_xmit(qp, skb) == -ENOBUFS)
			break;
		(*budget)--;
		progress = true;
		rd->va += n;
		rd->left -= n;
		if (last)
			rd->active = false;
		else
			rd->psn = cnuas_psn_add(rd->psn, 1);
	}
	return progress;
}

/* A request we have executed before: answer it again. */
static void cnuas_ib_resp_duplicate(struct cnuas_ib_qp *qp,
				    struct sk_buff *skb)
{
	struct cnuas_pkt *pkt = cnuas_pkt(skb);
	struct cnuas_ib_rd_hist *h;

	cnuas_stat_inc(qp->dev, CNUAS_STAT_DUP_REQ);
	if (pkt->mask & CNUAS_OP_READ) {
		h = cnuas_ib_hist_find(qp, pkt->psn, false);
		if (h) {
			/*
			 * Asked again from PSN p inside an earlier read: answer
			 * the rest as a read of its own, FIRST at p.
			 */
			u32 skip = min_t(u32, (u32)cnuas_psn_cmp(pkt->psn, h->psn) *
					 qp->pmtu, h->len);
			struct cnuas_ib_rd_hist rest = *h;

			rest.psn = pkt->psn;
			rest.npkts = h->npkts - (u32)cnuas_psn_cmp(pkt->psn, h->psn);
			rest.va = h->va + skip;
			rest.len = h->len - skip;
			cnuas_ib_rd_start(qp, &rest);
		}
	} else if (pkt->mask & CNUAS_OP_ATOMIC) {
		h = cnuas_ib_hist_find(qp, pkt->psn, true);
		if (h && h->psn == pkt->psn)
			cnuas_ib_resp_atomic_ack(qp, pkt->psn, h->orig);
	} else {
		qp->resp.ack_pending = true;
	}
}

/* Returns true when the packet was taken; false: RNR NAK sent, not taken. */
static bool cnuas_ib_resp_need_wqe(struct cnuas_ib_qp *qp,
				   struct sk_buff *skb)
{
	if (qp->resp.have_wqe)
		return true;
	if (cnuas_ib_rq_take(qp, &qp->resp.wqe)) {
		qp->resp.have_wqe = true;
		qp->resp.recv_off = 0;
		return true;
	}
	/* a mapped receive ring found corrupt: the QP is in error now */
	if (qp->state == IB_QPS_ERR)
		return false;
	cnuas_stat_inc(qp->dev, CNUAS_STAT_RNR_NAK_SENT);
	cnuas_ib_resp_ack(qp, cnuas_pkt(skb)->psn,
			  CNUAS_AETH_RNR_NAK | (qp->attr.min_rnr_timer &
						CNUAS_AETH_CODE_MASK));
	/* what follows in flight is dropped quietly until the retry */
	qp->resp.nak_sent = true;
	return false;
}

static void cnuas_ib_resp_send(struct cnuas_ib_qp *qp, struct sk_buff *skb)
{
	struct cnuas_pkt *pkt = cnuas_pkt(skb);
	int err;

	if ((pkt->mask & CNUAS_OP_FIRST) && !cnuas_ib_resp_need_wqe(qp, skb))
		return;
	err = cnuas_ib_sge_copy(qp, qp->resp.wqe.sge, qp->resp.wqe.num_sge,
				qp->resp.recv_off, cnuas_pkt_payload(skb),
				pkt->paylen, true);
	if (err) {
		cnuas_ib_resp_recv_done(qp, skb, IB_WC_RECV, 0,
					err == -EACCES ? IB_WC_LOC_PROT_ERR :
							 IB_WC_LOC_LEN_ERR);
		cnuas_ib_resp_fatal(qp, pkt->psn, err == -EACCES ?
				    CNUAS_NAK_REM_OP : CNUAS_NAK_INV_REQ);
		return;
	}
	qp->resp.recv_off += pkt->paylen;
	if (pkt->mask & CNUAS_OP_LAST) {
		cnuas_ib_resp_recv_done(qp, skb, IB_WC_RECV,
					qp->resp.recv_off, IB_WC_SUCCESS);
		qp->resp.in_op = 0;
		qp->resp.msn++;
	} else {
		qp->resp.in_op = CNUAS_OP_SEND;
	}
	qp->resp.epsn = cnuas_psn_add(pkt->psn, 1);
	if (pkt->ackreq)
		qp->resp.ack_pending = true;
}

static void cnuas_ib_resp_write(struct cnuas_ib_qp *qp, struct sk_buff *skb)
{
	struct cnuas_pkt *pkt = cnuas_pkt(skb);
	struct cnuas_ib_mr *mr;

	if (pkt->mask & CNUAS_OP_FIRST) {
		struct cnuas_reth *reth = cnuas_pkt_hdr(skb, CNUAS_HDR_RETH);
		u64 va = be64_to_cpu(reth->va);
		u32 rkey = be32_to_cpu(reth->rkey);
		u32 len = be32_to_cpu(reth->len);

		if (len > CNUAS_IB_MAX_MSG_SZ) {
			cnuas_ib_resp_fatal(qp, pkt->psn, CNUAS_NAK_INV_REQ);
			return;
		}
		if (len) {
			mr = cnuas_ib_mr_get(qp->dev, rkey, qp->ibqp.pd,
					     IB_ACCESS_REMOTE_WRITE, va, len);
			if (!mr) {
				cnuas_ib_resp_fatal(qp, pkt->psn,
						    CNUAS_NAK_REM_ACCESS);
				return;
			}
			cnuas_ib_mr_put(mr);
		}
		qp->resp.wr_va = va;
		qp->resp.wr_rkey = rkey;
		qp->resp.wr_left = len;
		qp->resp.wr_len = len;
	}
	if (pkt->paylen > qp->resp.wr_left ||
	    ((pkt->mask & CNUAS_OP_LAST) &&
	     pkt->paylen != qp->resp.wr_left)) {
		cnuas_ib_resp_fatal(qp, pkt->psn, CNUAS_NAK_INV_REQ);
		return;
	}
	/* the receive for the immediate must exist before any byte lands */
	if ((pkt->mask & CNUAS_OP_IMMDT) && !cnuas_ib_resp_need_wqe(qp, skb))
		return;
	if (pkt->paylen) {
		mr = cnuas_ib_mr_get(qp->dev, qp->resp.wr_rkey, qp->ibqp.pd,
				     IB_ACCESS_REMOTE_WRITE, qp->resp.wr_va,
				     pkt->paylen);
		if (!mr) {
			cnuas_ib_resp_fatal(qp, pkt->psn, CNUAS_NAK_REM_ACCESS);
			return;
		}
		cnuas_ib_mr_copy(mr, qp->resp.wr_va, cnuas_pkt_payload(skb),
				 pkt->paylen, true);
		cnuas_ib_mr_put(mr);
	}
	qp->resp.wr_va += pkt->paylen;
	qp->resp.wr_left -= pkt->paylen;
	if (pkt->mask & CNUAS_OP_LAST) {
		if (pkt->mask & CNUAS_OP_IMMDT)
			cnuas_ib_resp_recv_done(qp, skb,
						IB_WC_RECV_RDMA_WITH_IMM,
						qp->resp.wr_len, IB_WC_SUCCESS);
		qp->resp.in_op = 0;
		qp->resp.msn++;
	} else {
		qp->resp.in_op = CNUAS_OP_WRITE;
	}
	qp->resp.epsn = cnuas_psn_add(pkt->psn, 1);
	if (pkt->ackreq)
		qp->resp.ack_pending = true;
}

static void cnuas_ib_resp_read(struct cnuas_ib_qp *qp, struct sk_buff *skb)
{
	struct cnuas_pkt *pkt = cnuas_pkt(skb);
	struct cnuas_reth *reth = cnuas_pkt_hdr(skb, CNUAS_HDR_RETH);
	struct cnuas_ib_rd_hist h = {
		.valid = true,
		.psn = pkt->psn,
		.va = be64_to_cpu(reth->va),
		.rkey = be32_to_cpu(reth->rkey),
		.len = be32_to_cpu(reth->len),
	};
	struct cnuas_ib_mr *mr;

	if (h.len > CNUAS_IB_MAX_MSG_SZ) {
		cnuas_ib_resp_fatal(qp, pkt->psn, CNUAS_NAK_INV_REQ);
		return;
	}
	if (h.len) {
		mr = cnuas_ib_mr_get(qp->dev, h.rkey, qp->ibqp.pd,
				     IB_ACCESS_REMOTE_READ, h.va, h.len);
		if (!mr) {
			cnuas_ib_resp_fatal(qp, pkt->psn, CNUAS_NAK_REM_ACCESS);
			return;
		}
		cnuas_ib_mr_put(mr);
	}
	h.npkts = max_t(u32, 1, DIV_ROUND_UP(h.len, qp->pmtu));
	cnuas_ib_hist_add(qp, &h);
	qp->resp.msn++;
	qp->resp.epsn = cnuas_psn_add(pkt->psn, h.npkts);
	/* a pending ACK covers what came before the read: send it first */
	if (qp->resp.ack_pending &&
	    !cnuas_ib_resp_ack(qp, cnuas_psn_add(pkt->psn, CNUAS_PSN_MASK),
			       CNUAS_AETH_ACK | CNUAS_AETH_NO_CREDIT))
		qp->resp.ack_pending = false;
	cnuas_ib_rd_start(qp, &h);
}

static void cnuas_ib_resp_atomic(struct cnuas_ib_qp *qp, struct sk_buff *skb)
{
	struct cnuas_pkt *pkt = cnuas_pkt(skb);
	struct cnuas_atmeth *a = cnuas_pkt_hdr(skb, CNUAS_HDR_ATMETH);
	struct cnuas_ib_rd_hist h = {
		.valid = true,
		.atomic = true,
		.psn = pkt->psn,
		.npkts = 1,
		.va = be64_to_cpu(a->va),
		.rkey = be32_to_cpu(a->rkey),
		.len = sizeof(u64),
	};
	struct cnuas_ib_mr *mr;
	struct page *page;
	u64 *p;

	if (h.va & 7) {
		cnuas_ib_resp_fatal(qp, pkt->psn, CNUAS_NAK_INV_REQ);
		return;
	}
	mr = cnuas_ib_mr_get(qp->dev, h.rkey, qp->ibqp.pd,
			     IB_ACCESS_REMOTE_ATOMIC, h.va, sizeof(u64));
	if (!mr) {
		cnuas_ib_resp_fatal(qp, pkt->psn, CNUAS_NAK_REM_ACCESS);
		return;
	}
	p = cnuas_ib_mr_atomic_ptr(mr, h.va, &page);
	spin_lock(&qp->dev->atomic_lock);
	h.orig = *p;
	if (pkt->opcode == IB_OPCODE_RC_COMPARE_SWAP) {
		if (h.orig == be64_to_cpu(a->compare))
			*p = be64_to_cpu(a->swap_add);
	} else {
		*p = h.orig + be64_to_cpu(a->swap_add);
	}
	spin_unlock(&qp->dev->atomic_lock);
	if (page) {
		flush_dcache_page(page);
		kunmap_local(p);
	}
	cnuas_ib_mr_put(mr);

	cnuas_ib_hist_add(qp, &h);
	qp->resp.msn++;
	qp->resp.epsn = cnuas_psn_add(pkt->psn, 1);
	if (qp->resp.ack_pending &&
	    !cnuas_ib_resp_ack(qp, cnuas_psn_add(pkt->psn, CNUAS_PSN_MASK),
			       CNUAS_AETH_ACK | CNUAS_AETH_NO_CREDIT))
		qp->resp.ack_pending = false;
	cnuas_ib_resp_atomic_ack(qp, pkt->psn, h.orig);
}

/* Is @pkt allowed here: opcode order, the QP's access, payload length. */
static bool cnuas_ib_resp_valid(struct cnuas_ib_qp *qp, struct cnuas_pkt *pkt)
{
	u32 mask = pkt->mask;
	u32 access = qp->attr.qp_access_flags;

	if (qp->resp.in_op) {
		if (!(mask & qp->resp.in_op) || (mask & CNUAS_OP_FIRST))
			return false;
	} else if (!(mask & CNUAS_OP_FIRST)) {
		return false;
	}
	if ((mask & CNUAS_OP_WRITE) && !(access & IB_ACCESS_REMOTE_WRITE))
		return false;
	if ((mask & CNUAS_OP_READ) && !(access & IB_ACCESS_REMOTE_READ))
		return false;
	if ((mask & CNUAS_OP_ATOMIC) && !(access & IB_ACCESS_REMOTE_ATOMIC))
		return false;
	if (!(mask & CNUAS_OP_PAYLOAD))
		return true;
	if (!(mask & CNUAS_OP_LAST))
		return pkt->paylen == qp->pmtu;
	return pkt->paylen <= qp->pmtu;
}

/*
 * Native IB: may this UD packet reach @qp?  QP0 talks only to QP0 (source
 * QP 0) and ignores the Q_Key; no other QP takes a packet from source QP 0.
 */
static bool cnuas_ib_resp_ud_ib_ok(struct cnuas_ib_qp *qp, u32 src_qp)
{
	if (qp->type == IB_QPT_SMI)
		return src_qp == 0;
	return src_qp != 0;
}

/* A UD (or GSI, or SMI) receive: GRH area, then the payload. */
static void cnuas_ib_resp_ud(struct cnuas_ib_qp *qp, struct sk_buff *skb)
{
	struct cnuas_pkt *pkt = cnuas_pkt(skb);
	struct cnuas_deth *deth = cnuas_pkt_hdr(skb, CNUAS_HDR_DETH);
	struct cnuas_ib_cqe cqe = { .opcode = IB_WC_RECV };
	u32 src_qp = be32_to_cpu(deth->sqp) & CNUAS_QPN_MASK;
	u8 grh[CNUAS_GRH_BYTES] = {};
	struct cnuas_ib_rwqe wqe;
	u32 qkey = be32_to_cpu(deth->qkey);
	int err;

	/* docs/devices.md, "cnuas_ib: receive drop reasons", rules 7 to 7c */
	if (cnuas_ib_is_ib(qp->dev) && !cnuas_ib_resp_ud_ib_ok(qp, src_qp)) {
		cnuas_stat_inc(qp->dev, CNUAS_STAT_RCVD_SRC_ERR);
		return;
	}
	/* IBA 13.4.1: every MAD is 256 bytes; QP0 and QP1 carry nothing else */
	if ((qp->type == IB_QPT_SMI || qp->type == IB_QPT_GSI) &&
	    pkt->paylen != IB_MGMT_MAD_SIZE) {
		cnuas_stat_inc(qp->dev, CNUAS_STAT_RCVD_HDR_ERR);
		cnuas_stat_inc(qp->dev, CNUAS_STAT_RCVD_DROP);
		return;
	}
	if (qp->type == IB_QPT_SMI) {
		/* IBA 13.5.3.2: QP0 does not check the Q_Key */
	} else if (qp->type == IB_QPT_GSI ? qkey != CNUAS_GSI_QKEY :
					    qkey != qp->attr.qkey) {
		/* IBTA 10.2.4: silently dropped by the receiver; counted here */
		cnuas_stat_inc(qp->dev, CNUAS_STAT_RCVD_QKEY_ERR);
		return;
	}
	if (!cnuas_ib_rq_take(qp, &wqe)) {
		cnuas_stat_inc(qp->dev, CNUAS_STAT_RCVD_NO_RECV);
		cnuas_stat_inc(qp->dev, CNUAS_STAT_RCVD_DROP);
		return;
	}
	if (!pkt->family) {
		/*
		 * Native IB: the GRH area holds the GRH when one arrived (else
		 * it is zero and IB_WC_GRH stays clear); the LRH's fields go
		 * into the completion.  LMC 0: no DLID path bits.
		 */
		if (pkt->grh)
			memcpy(grh, skb->data + pkt->net_off, sizeof(grh));
		cqe.net_type = CNUAS_IB_CQE_NET_IB;
		cqe.slid = pkt->slid;
		cqe.sl = pkt->sl;
		cqe.dlid_path_bits = 0;
	} else if (pkt->family == AF_INET) {
		memcpy(grh + CNUAS_GRH_BYTES - sizeof(struct iphdr),
		       skb->data + pkt->net_off, sizeof(struct iphdr));
		cqe.net_type = CNUAS_IB_CQE_NET_IPV4;
	} else {
		memcpy(grh, skb->data + pkt->net_off, sizeof(struct ipv6hdr));
		cqe.net_type = CNUAS_IB_CQE_NET_IPV6;
	}
	err = cnuas_ib_sge_copy(qp, wqe.sge, wqe.num_sge, 0, grh, sizeof(grh),
				true);
	if (!err)
		err = cnuas_ib_sge_copy(qp, wqe.sge, wqe.num_sge, sizeof(grh),
					cnuas_pkt_payload(skb), pkt->paylen,
					true);
	if (err) {
		cqe.status = err == -EACCES ? IB_WC_LOC_PROT_ERR :
					      IB_WC_LOC_LEN_ERR;
	} else {
		cqe.byte_len = sizeof(grh) + pkt->paylen;
		cqe.src_qp = src_qp;
		if (pkt->family || pkt->grh)
			cqe.flags = CNUAS_IB_CQE_GRH;
		if (pkt->mask & CNUAS_OP_IMMDT) {
			memcpy(&cqe.imm_data,
			       cnuas_pkt_hdr(skb, CNUAS_HDR_IMMDT), 4);
			cqe.flags |= CNUAS_IB_CQE_WITH_IMM;
		}
	}
	cnuas_ib_complete_rwqe(qp, &wqe, &cqe, pkt->se);
}

/**
 * cnuas_ib_responder - handle one request packet
 * @qp: qp->lock held; not generating read responses
 * @skb: the packet (consumed)
 */
void cnuas_ib_responder(struct cnuas_ib_qp *qp, struct sk_buff *skb)
{
	struct cnuas_pkt *pkt = cnuas_pkt(skb);
	int diff;

	if (qp->state < IB_QPS_RTR || qp->state > IB_QPS_SQE) {
		cnuas_stat_inc(qp->dev, CNUAS_STAT_RCVD_STATE_ERR);
		goto out;
	}
	if (!cnuas_qp_is_rc(qp)) {
		cnuas_ib_resp_ud(qp, skb);
		goto out;
	}
	if (!cnuas_ib_pkt_from_peer(qp, skb)) {
		cnuas_stat_inc(qp->dev, CNUAS_STAT_RCVD_SRC_ERR);
		goto out;
	}

	diff = cnuas_psn_cmp(pkt->psn, qp->resp.epsn);
	if (diff > 0) {
		cnuas_stat_inc(qp->dev, CNUAS_STAT_RCVD_PSN_ERR);
		/* a gap: ask once for what is missing */
		if (!qp->resp.nak_sent) {
			cnuas_stat_inc(qp->dev, CNUAS_STAT_SEQ_NAK_SENT);
			if (!cnuas_ib_resp_ack(qp, qp->resp.epsn,
					       CNUAS_AETH_NAK |
					       CNUAS_NAK_PSN_SEQ))
				qp->resp.nak_sent = true;
		}
		goto out;
	}
	if (diff < 0) {
		cnuas_ib_resp_duplicate(qp, skb);
		goto out;
	}
	qp->resp.nak_sent = false;

	if (!cnuas_ib_resp_valid(qp, pkt)) {
		cnuas_ib_resp_fatal(qp, pkt->psn, CNUAS_NAK_INV_REQ);
		goto out;
	}
	if (pkt->mask & CNUAS_OP_SEND)
		cnuas_ib_resp_send(qp, skb);
	else if (pkt->mask & CNUAS_OP_WRITE)
		cnuas_ib_resp_write(qp, skb);
	else if (pkt->mask & CNUAS_OP_READ)
		cnuas_ib_resp_read(qp, skb);
	else
		cnuas_ib_resp_atomic(qp, skb);
out:
	consume_skb(skb);
}

/* Send the coalesced ACK for everything executed so far. */
void cnuas_ib_resp_flush_ack(struct cnuas_ib_qp *qp)
{
	if (!qp->resp.ack_pending || READ_ONCE(qp->tx_blocked))
		return;
	if (!cnuas_ib_resp_ack(qp, cnuas_psn_add(qp->resp.epsn, CNUAS_PSN_MASK),
			       CNUAS_AETH_ACK | CNUAS_AETH_NO_CREDIT))
		qp->resp.ack_pending = false;
}
