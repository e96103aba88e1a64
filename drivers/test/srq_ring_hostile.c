// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * srq_ring_hostile: the kernel takes a user SRQ's receives from
 * user-writable memory; this scribbles on the ring the way no provider
 * would and checks the answer the ABI promises (uapi/cnuas_ib_abi.h).
 * Receives are taken when something arrives, so a UD QP on the SRQ gets
 * sends from a second UD QP of the same device, addressed to the device's
 * own GID (delivered by the driver's loopback).  The ring is the one-page
 * uverbs mapping that appears when the SRQ is created.
 *
 *  1. a slot claiming 0xffffffff SGEs between two good ones, three sends:
 *     the first receive completes, the bad one completes with
 *     LOC_QP_OP_ERR on the QP that took it and that QP gets QP_FATAL; the
 *     third receive is still posted, and a new QP on the SRQ gets it.
 *  2. a producer index 100000 ahead of the consumer, a send: nothing
 *     completes and the SRQ gets SRQ_ERR; it stays in error once the index
 *     is put back (a receive posted after completes nothing either).
 *
 *   srq_ring_hostile -d dev -g gid_index    prints one line per case, PASS
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <cnuas_ib_abi.h>

#include "verbs_util.h"

#define QKEY	0x11111111
#define MSG	64

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_mr *mr;
static struct ibv_srq *srq;
static struct ibv_ah *ah;
static char buf[4096];

static struct ibv_qp *ud_qp(struct ibv_srq *with)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .srq = with, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 16, .max_recv_wr = with ? 0 : 1,
			 .max_send_sge = 1, .max_recv_sge = with ? 0 : 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &init);

	if (!qp)
		DIE("ibv_create_qp(UD): %s", strerror(errno));
	ud_qp_to_rts(qp, QKEY);
	return qp;
}

static void post_srq(uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)buf + 256 * (wr_id % 8), 40 + MSG, mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	if (ibv_post_srq_recv(srq, &wr, &bad))
		DIE("ibv_post_srq_recv %llu", (unsigned long long)wr_id);
}

/* One UD send from @from to @to_qpn; its own completion is checked too. */
static void send_to(struct ibv_qp *from, uint32_t to_qpn, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)buf + 3072, MSG, mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
		.wr.ud = { .ah = ah, .remote_qpn = to_qpn, .remote_qkey = QKEY },
	}, *bad;

	if (ibv_post_send(from, &wr, &bad))
		DIE("ibv_post_send: %s", strerror(errno));
}

/*
 * Expect exactly the receive completions @id with statuses @st (in order)
 * and the send completions of @sends sends, within 5 s, then 300 ms of
 * nothing more.
 */
static void expect(int n, const int *st, const uint64_t *id, int sends)
{
	struct ibv_wc wc;
	int got = 0, sent = 0, quiet = 0, waited = 0;

	while (waited < 5000) {
		int r = ibv_poll_cq(cq, 1, &wc);

		if (r < 0)
			DIE("poll_cq");
		if (!r) {
			if (got == n && sent == sends && ++quiet > 300)
				return;
			usleep(1000);
			waited++;
			continue;
		}
		if (wc.opcode == IBV_WC_SEND) {
			if (wc.status != IBV_WC_SUCCESS || ++sent > sends)
				DIE("send completion wr_id %llu status %d (%d of %d)",
				    (unsigned long long)wc.wr_id, wc.status, sent, sends);
			continue;
		}
		if (got >= n)
			DIE("receive completion %d too many: wr_id %llu status %d", got,
			    (unsigned long long)wc.wr_id, wc.status);
		if ((int)wc.status != st[got] || wc.wr_id != id[got])
			DIE("receive completion %d: wr_id %llu status %d; want %llu %d",
			    got, (unsigned long long)wc.wr_id, wc.status,
			    (unsigned long long)id[got], st[got]);
		got++;
	}
	DIE("%d of %d receive and %d of %d send completions", got, n, sent, sends);
}

/* The async events @want (@n of them, in any order), within 5 s; no other. */
static void expect_events(int n, const enum ibv_event_type *want)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	int seen[8] = { 0 }, got, i;

	for (got = 0; got < n; got++) {
		if (poll(&pfd, 1, 5000) != 1)
			DIE("%d of %d async events (first wanted: %s)", got, n,
			    ibv_event_type_str(want[0]));
		if (ibv_get_async_event(ctx, &ev))
			DIE("ibv_get_async_event: %s", strerror(errno));
		for (i = 0; i < n; i++)
			if (!seen[i] && ev.event_type == want[i])
				break;
		if (i == n)
			DIE("unexpected async event %s", ibv_event_type_str(ev.event_type));
		seen[i] = 1;
		ibv_ack_async_event(&ev);
	}
}

/* No async event within 300 ms. */
static void expect_no_event(void)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;

	if (poll(&pfd, 1, 300) == 1 && !ibv_get_async_event(ctx, &ev))
		DIE("unexpected async event %s", ibv_event_type_str(ev.event_type));
}

int main(int argc, char **argv)
{
	struct ibv_srq_init_attr sattr = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct cnuas_ib_rq_ring_hdr *hdr;
	struct cnuas_ib_rq_slot *slot;
	struct ibv_qp *rx, *rx2, *tx;
	const char *dev = NULL;
	union ibv_gid gid;
	int gid_index = -1, opt;
	uint32_t prod;

	while ((opt = getopt(argc, argv, "d:g:")) != -1) {
		if (opt == 'd')
			dev = optarg;
		else if (opt == 'g')
			gid_index = atoi(optarg);
		else
			DIE("usage: %s -d dev -g gid_index", argv[0]);
	}
	if (!dev || gid_index < 0)
		DIE("usage: %s -d dev -g gid_index", argv[0]);
	ctx = open_device_by_name(dev);
	pd = ibv_alloc_pd(ctx);
	mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	cq = ibv_create_cq(ctx, 4096, NULL, NULL, 0);
	if (!mr || !cq)
		DIE("setup: %s", strerror(errno));
	if (ibv_query_gid(ctx, 1, gid_index, &gid))
		DIE("ibv_query_gid(%d): %s", gid_index, strerror(errno));
	{
		struct ibv_ah_attr aattr = {
			.is_global = 1, .port_num = 1,
			.grh = { .dgid = gid, .sgid_index = gid_index, .hop_limit = 64 },
		};

		ah = ibv_create_ah(pd, &aattr);
		if (!ah)
			DIE("ibv_create_ah(own GID): %s", strerror(errno));
	}

	/* 1: a slot with 0xffffffff SGEs */
	srq = ibv_create_srq(pd, &sattr);
	if (!srq)
		DIE("ibv_create_srq: %s", strerror(errno));
	hdr = one_page_uverbs_mapping();
	if (!hdr)
		DIE("no SRQ ring mapped (provider without the ring?)");
	rx = ud_qp(srq);
	tx = ud_qp(NULL);
	post_srq(11);
	post_srq(12);
	post_srq(13);
	slot = (struct cnuas_ib_rq_slot *)((char *)(hdr + 1) +
		(size_t)1 * (sizeof(*slot) + sizeof(struct cnuas_ib_rq_sge)));
	if (slot->wr_id != 12)
		DIE("slot 1 holds wr_id %llu, not 12: layout?", (unsigned long long)slot->wr_id);
	slot->num_sge = 0xffffffffU;
	send_to(tx, rx->qp_num, 1);
	send_to(tx, rx->qp_num, 2);
	{
		int st[] = { IBV_WC_SUCCESS, IBV_WC_LOC_QP_OP_ERR };
		uint64_t id[] = { 11, 12 };

		enum ibv_event_type ev[] = { IBV_EVENT_QP_FATAL,
					     IBV_EVENT_QP_LAST_WQE_REACHED };

		expect(2, st, id, 2);
		/* the QP in error takes no more from the SRQ: the last WQE too */
		expect_events(2, ev);
	}
	/* the QP in error takes nothing; the third receive stays for another */
	send_to(tx, rx->qp_num, 3);
	expect(0, NULL, NULL, 1);
	rx2 = ud_qp(srq);
	send_to(tx, rx2->qp_num, 4);
	{
		int st[] = { IBV_WC_SUCCESS };
		uint64_t id[] = { 13 };

		expect(1, st, id, 1);
	}
	printf("case SRQ slot with 0xffffffff SGEs: LOC_QP_OP_ERR and QP_FATAL on the taker, the next receive kept for another QP: ok\n");
	if (ibv_destroy_qp(rx) || ibv_destroy_qp(rx2))
		DIE("destroy_qp");

	/* 2: a bogus producer index */
	post_srq(21);
	prod = __atomic_load_n(&hdr->producer, __ATOMIC_RELAXED);
	__atomic_store_n(&hdr->producer, hdr->consumer + 100000, __ATOMIC_RELEASE);
	rx = ud_qp(srq);
	send_to(tx, rx->qp_num, 5);
	expect(0, NULL, NULL, 1);
	{
		enum ibv_event_type ev[] = { IBV_EVENT_SRQ_ERR };

		expect_events(1, ev);
	}
	__atomic_store_n(&hdr->producer, prod, __ATOMIC_RELEASE);
	post_srq(22);
	send_to(tx, rx->qp_num, 6);
	expect(0, NULL, NULL, 1);
	expect_no_event();
	printf("case SRQ producer 100000 ahead: nothing taken, SRQ_ERR once, the SRQ stays in error: ok\n");
	if (ibv_destroy_qp(rx) || ibv_destroy_qp(tx) || ibv_destroy_srq(srq))
		DIE("destroy");
	printf("PASS\n");
	return 0;
}
