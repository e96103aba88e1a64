// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * rq_ring_hostile: the kernel reads a QP's receive ring from user-writable
 * memory; this scribbles on it the way no provider would and checks the
 * kernel neither crashes nor reads garbage.  The ring is found in
 * /proc/self/maps: the one-page mapping of the uverbs device (the CQ's ring
 * is larger).  Needs a provider that maps the receive ring (cnuas).
 *
 *  1. a producer index 1000 ahead of the consumer, then the error state:
 *     nothing completes (the ring cannot be trusted); the index put back
 *     and a receive posted, all three receives flush.
 *  2. a slot claiming 0xffffffff SGEs between two good ones, then the
 *     error state: FLUSH_ERR, LOC_QP_OP_ERR, FLUSH_ERR, in order.
 *
 *   rq_ring_hostile -d dev      prints one line per case and PASS
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <cnuas_ib_abi.h>

#include "verbs_util.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_mr *mr;
static char buf[4096];

static void post(struct ibv_qp *qp, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)buf, 64, mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	if (ibv_post_recv(qp, &wr, &bad))
		DIE("ibv_post_recv %llu", (unsigned long long)wr_id);
}

static struct ibv_qp *new_qp(void)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &init);

	if (!qp)
		DIE("ibv_create_qp: %s", strerror(errno));
	qp_to_state(qp, IBV_QPS_INIT);
	return qp;
}

/* Expect exactly @n completions, statuses @st and wr_ids @id, within 5 s. */
static void expect(int n, const int *st, const uint64_t *id)
{
	struct ibv_wc wc;
	int got = 0, tries = 0;

	while (tries < 5000) {
		int r = ibv_poll_cq(cq, 1, &wc);

		if (r < 0)
			DIE("poll_cq");
		if (!r) {
			if (got == n && tries > 300)
				return;
			usleep(1000);
			tries++;
			continue;
		}
		if (got >= n)
			DIE("completion %d too many: wr_id %llu status %d", got,
			    (unsigned long long)wc.wr_id, wc.status);
		if ((int)wc.status != st[got] || wc.wr_id != id[got])
			DIE("completion %d: wr_id %llu status %d; want %llu %d", got,
			    (unsigned long long)wc.wr_id, wc.status,
			    (unsigned long long)id[got], st[got]);
		got++;
	}
	DIE("%d of %d completions", got, n);
}

int main(int argc, char **argv)
{
	struct cnuas_ib_rq_ring_hdr *hdr;
	struct cnuas_ib_rq_slot *slot;
	struct ibv_qp *qp;
	uint32_t prod;

	if (argc != 3 || strcmp(argv[1], "-d"))
		DIE("usage: %s -d dev", argv[0]);
	ctx = open_device_by_name(argv[2]);
	pd = ibv_alloc_pd(ctx);
	mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	cq = ibv_create_cq(ctx, 4096, NULL, NULL, 0);
	if (!mr || !cq)
		DIE("setup: %s", strerror(errno));

	/* 1: a bogus producer index */
	qp = new_qp();
	hdr = one_page_uverbs_mapping();
	if (!hdr)
		DIE("no receive ring mapped (provider without the ring?)");
	post(qp, 1);
	post(qp, 2);
	prod = __atomic_load_n(&hdr->producer, __ATOMIC_RELAXED);
	__atomic_store_n(&hdr->producer, hdr->consumer + 1000, __ATOMIC_RELEASE);
	qp_to_state(qp, IBV_QPS_ERR);
	expect(0, NULL, NULL);
	__atomic_store_n(&hdr->producer, prod, __ATOMIC_RELEASE);
	post(qp, 3);
	{
		int st[] = { IBV_WC_WR_FLUSH_ERR, IBV_WC_WR_FLUSH_ERR, IBV_WC_WR_FLUSH_ERR };
		uint64_t id[] = { 1, 2, 3 };

		expect(3, st, id);
	}
	printf("case bogus producer: nothing taken while bogus, all flushed once put back: ok\n");
	if (ibv_destroy_qp(qp))
		DIE("destroy_qp");

	/* 2: a slot with 0xffffffff SGEs */
	qp = new_qp();
	hdr = one_page_uverbs_mapping();
	if (!hdr)
		DIE("no receive ring mapped");
	post(qp, 11);
	post(qp, 12);
	post(qp, 13);
	slot = (struct cnuas_ib_rq_slot *)((char *)(hdr + 1) +
		(size_t)1 * (sizeof(*slot) + sizeof(struct cnuas_ib_rq_sge)));
	if (slot->wr_id != 12)
		DIE("slot 1 holds wr_id %llu, not 12: layout?", (unsigned long long)slot->wr_id);
	slot->num_sge = 0xffffffffU;
	qp_to_state(qp, IBV_QPS_ERR);
	{
		int st[] = { IBV_WC_WR_FLUSH_ERR, IBV_WC_LOC_QP_OP_ERR, IBV_WC_WR_FLUSH_ERR };
		uint64_t id[] = { 11, 12, 13 };

		expect(3, st, id);
	}
	printf("case slot with 0xffffffff SGEs: flush, local QP operation error, flush: ok\n");
	if (ibv_destroy_qp(qp))
		DIE("destroy_qp");
	printf("PASS\n");
	return 0;
}
