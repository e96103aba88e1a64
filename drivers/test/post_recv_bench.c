// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * post_recv_bench: what ibv_post_recv (or, with -s, ibv_post_srq_recv)
 * costs, and proof that it makes no system call.  An RC QP (no peer) is
 * moved to INIT, or an SRQ is created; a thread then installs a seccomp
 * filter that kills the process on any system call but write(1|2), the
 * clocks and exit, and posts as many receives as the queue holds (one SGE
 * each), timing them; in the same filtered section it checks that one
 * more receive is refused with ENOMEM and one with too many SGEs with
 * EINVAL, both with bad_wr set.  A provider whose post_recv enters the
 * kernel dies with SIGSYS instead of printing results.
 *
 * The filter is per thread (no SECCOMP_FILTER_FLAG_TSYNC), so once the
 * filtered thread has ended (a raw exit system call) the main thread checks
 * that the receives are real.  A QP's: it moves the QP to the error state
 * and every one must complete with IBV_WC_WR_FLUSH_ERR, in order; then a
 * receive posted in the error state must be flushed too.  An SRQ's (which
 * never flush): a UD QP on the SRQ takes every one of them, in order, for
 * datagrams a second UD QP sends to the device's own GID (-g), delivered
 * by the device's loopback.
 *
 *   post_recv_bench -d dev [-n receives] [-x] [-S] [-s -g gid_index]
 *
 * -x makes one getppid() call inside the filtered section: the process must
 * then die with SIGSYS (the filter's own test).  -S installs no filter (to
 * measure a provider whose post_recv is a system call).  Prints key=value
 * lines and PASS; exits 1 on a failure.
 */
#include <errno.h>
#include <getopt.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "no_syscall.h"

#define MAX_SGE 2

/* What the filtered thread works on and what it found. */
static struct {
	struct ibv_qp *qp;
	struct ibv_srq *srq;	/* -s: post here instead */
	struct ibv_mr *mr;
	char *buf;
	long receives;
	int no_filter, selftest;
	uint64_t post_ns;
	int failed;
} job;

static int post(struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return job.srq ? ibv_post_srq_recv(job.srq, wr, bad) :
			 ibv_post_recv(job.qp, wr, bad);
}

static void *filtered(void *arg)
{
	struct ibv_sge sge[MAX_SGE + 1];
	struct ibv_recv_wr wr, *bad;
	uint64_t t0;
	long i;
	int ret;

	(void)arg;
	for (i = 0; i <= MAX_SGE; i++) {
		sge[i].addr = (uintptr_t)job.buf + 64 * i;
		sge[i].length = 64;
		sge[i].lkey = job.mr->lkey;
	}
	if (!job.no_filter)
		forbid_system_calls();
	if (job.selftest)
		syscall(SYS_getppid);

	t0 = now_ns();
	for (i = 0; i < job.receives; i++) {
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 1000 + i;
		wr.sg_list = sge;
		wr.num_sge = 1;
		ret = post(&wr, &bad);
		if (ret) {
			say("FAIL: ibv_post_recv #%ld: %d\n", i, ret);
			job.failed = 1;
			goto out;
		}
	}
	job.post_ns = now_ns() - t0;

	/* the queue is full: one more is refused, nothing posted */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.sg_list = sge;
	wr.num_sge = 1;
	bad = NULL;
	ret = post(&wr, &bad);
	if (ret != ENOMEM || bad != &wr) {
		say("FAIL: a receive on a full queue: %d (bad_wr %s); want ENOMEM\n",
		    ret, bad == &wr ? "set" : "not set");
		job.failed = 1;
		goto out;
	}
	/* more SGEs than the QP was created with */
	wr.num_sge = MAX_SGE + 1;
	bad = NULL;
	ret = post(&wr, &bad);
	if (ret != EINVAL || bad != &wr) {
		say("FAIL: a receive with %d SGEs: %d (bad_wr %s); want EINVAL\n",
		    MAX_SGE + 1, ret, bad == &wr ? "set" : "not set");
		job.failed = 1;
	}
out:
	/* a raw exit: glibc's thread teardown may make calls the filter kills */
	syscall(SYS_exit, 0);
	return NULL;
}

/* Wait for @want completions of status FLUSH_ERR, wr_id @first on. */
static void drain(struct ibv_cq *cq, struct ibv_qp *qp, long want, uint64_t first)
{
	struct ibv_wc wc[16];
	uint64_t deadline = now_ns() + 20000000000ull;
	long got = 0;
	int n, i;

	while (got < want) {
		n = ibv_poll_cq(cq, 16, wc);
		if (n < 0)
			DIE("ibv_poll_cq: %d", n);
		if (n == 0) {
			if (now_ns() > deadline)
				DIE("%ld of %ld flushed completions arrived", got, want);
			usleep(1000);
			continue;
		}
		for (i = 0; i < n; i++, got++) {
			if (wc[i].status != IBV_WC_WR_FLUSH_ERR ||
			    wc[i].wr_id != first + got || wc[i].qp_num != qp->qp_num)
				DIE("completion %ld: status %d wr_id %llu qp 0x%x; want %d %llu 0x%x",
				    got, wc[i].status, (unsigned long long)wc[i].wr_id,
				    wc[i].qp_num, IBV_WC_WR_FLUSH_ERR,
				    (unsigned long long)(first + got), qp->qp_num);
		}
	}
}

/*
 * The SRQ's receives are real: a UD QP on the SRQ takes every one, in
 * order, for 16-byte datagrams (40 bytes of GRH + 16 fit the 64-byte
 * receives) that a second UD QP sends to the device's own GID.
 */
static void srq_check(struct ibv_context *ctx, struct ibv_pd *pd,
		      struct ibv_cq *cq, int gid_index)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 16, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_ah_attr aattr = { .is_global = 1, .port_num = 1 };
	struct ibv_sge sge = { (uintptr_t)job.buf + 2048, 16, job.mr->lkey };
	struct ibv_send_wr swr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	uint64_t deadline = now_ns() + 60000000000ull;
	long sent = 0, sends_done = 0, got = 0;
	struct ibv_qp *tx, *rx;
	struct ibv_wc wc[16];
	int n, i;

	if (ibv_query_gid(ctx, 1, gid_index, &aattr.grh.dgid))
		DIE("ibv_query_gid(%d): %s", gid_index, strerror(errno));
	aattr.grh.sgid_index = gid_index;
	aattr.grh.hop_limit = 64;
	swr.wr.ud.ah = ibv_create_ah(pd, &aattr);
	if (!swr.wr.ud.ah)
		DIE("ibv_create_ah(own GID): %s", strerror(errno));
	tx = ibv_create_qp(pd, &init);
	init.srq = job.srq;
	init.cap.max_recv_wr = 0;
	init.cap.max_recv_sge = 0;
	rx = ibv_create_qp(pd, &init);
	if (!tx || !rx)
		DIE("ibv_create_qp(UD): %s", strerror(errno));
	ud_qp_to_rts(tx, 0x1234);
	ud_qp_to_rts(rx, 0x1234);
	swr.wr.ud.remote_qpn = rx->qp_num;
	swr.wr.ud.remote_qkey = 0x1234;

	while (got < job.receives) {
		/* at most 16 sends in flight: the send queue's depth */
		while (sent < job.receives && sent - sends_done < 16) {
			swr.wr_id = sent++;
			if (ibv_post_send(tx, &swr, &bad))
				DIE("ibv_post_send #%ld: %s", sent, strerror(errno));
		}
		n = ibv_poll_cq(cq, 16, wc);
		if (n < 0)
			DIE("ibv_poll_cq: %d", n);
		if (!n && now_ns() > deadline)
			DIE("%ld of %ld SRQ receives completed", got, job.receives);
		for (i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS)
				DIE("completion wr_id %llu: status %d",
				    (unsigned long long)wc[i].wr_id, wc[i].status);
			if (wc[i].opcode == IBV_WC_SEND) {
				sends_done++;
				continue;
			}
			if (wc[i].wr_id != (uint64_t)(1000 + got) ||
			    wc[i].byte_len != 40 + 16)
				DIE("SRQ receive %ld: wr_id %llu, %u bytes; want %ld, 56",
				    got, (unsigned long long)wc[i].wr_id,
				    wc[i].byte_len, 1000 + got);
			got++;
		}
	}
	if (ibv_destroy_qp(rx) || ibv_destroy_qp(tx))
		DIE("ibv_destroy_qp: %s", strerror(errno));
}

int main(int argc, char **argv)
{
	const char *devname = NULL;
	struct ibv_context *ctx;
	struct ibv_recv_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_wc wc;
	pthread_t th;
	uint64_t t0, syscall_ns;
	long want = 4096, i;
	int opt, gid_index = -1, use_srq = 0;

	while ((opt = getopt(argc, argv, "d:n:xSsg:")) != -1) {
		switch (opt) {
		case 'd':
			devname = optarg;
			break;
		case 'n':
			want = atol(optarg);
			break;
		case 'x':
			job.selftest = 1;
			break;
		case 'S':
			job.no_filter = 1;
			break;
		case 's':
			use_srq = 1;
			break;
		case 'g':
			gid_index = atoi(optarg);
			break;
		default:
			fprintf(stderr,
				"usage: %s -d dev [-n receives] [-x] [-S] [-s -g gid_index]\n",
				argv[0]);
			return 2;
		}
	}
	if (!devname)
		DIE("-d dev is required");
	if (want < 1 || want > 4096)
		DIE("-n must be 1..4096 (one receive queue)");
	if (use_srq && gid_index < 0)
		DIE("-s needs -g gid_index (the SRQ's receives are taken over loopback)");

	ctx = open_device_by_name(devname);

	pd = ibv_alloc_pd(ctx);
	if (!pd)
		DIE("ibv_alloc_pd: %s", strerror(errno));
	job.buf = calloc(1, 4096);
	job.mr = job.buf ? ibv_reg_mr(pd, job.buf, 4096, IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!job.mr)
		DIE("ibv_reg_mr: %s", strerror(errno));
	cq = ibv_create_cq(ctx, 4096, NULL, NULL, 0);
	if (!cq)
		DIE("ibv_create_cq: %s", strerror(errno));
	if (use_srq) {
		struct ibv_srq_init_attr sinit = {
			.attr = { .max_wr = want, .max_sge = MAX_SGE },
		};

		job.srq = ibv_create_srq(pd, &sinit);
		if (!job.srq)
			DIE("ibv_create_srq(%ld receives): %s", want, strerror(errno));
		if (sinit.attr.max_sge != MAX_SGE)
			DIE("SRQ max_sge %u, want %d", sinit.attr.max_sge, MAX_SGE);
		job.receives = sinit.attr.max_wr;
	} else {
		struct ibv_qp_init_attr init = {
			.send_cq = cq,
			.recv_cq = cq,
			.qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 1, .max_recv_wr = want,
				 .max_send_sge = 1, .max_recv_sge = MAX_SGE },
		};

		job.qp = ibv_create_qp(pd, &init);
		if (!job.qp)
			DIE("ibv_create_qp(%ld receives): %s", want, strerror(errno));
		if (init.cap.max_recv_sge != MAX_SGE)
			DIE("max_recv_sge %u, want %d", init.cap.max_recv_sge, MAX_SGE);
		/* the queue as created: rounded up to a power of two */
		job.receives = init.cap.max_recv_wr;
		qp_to_state(job.qp, IBV_QPS_INIT);
	}

	/* one cheap system call, for scale */
	t0 = now_ns();
	for (i = 0; i < 100000; i++)
		syscall(SYS_getppid);
	syscall_ns = now_ns() - t0;

	if (pthread_create(&th, NULL, filtered, NULL))
		DIE("pthread_create");
	if (pthread_join(th, NULL))
		DIE("pthread_join");
	if (job.failed)
		return 1;

	if (job.srq) {
		srq_check(ctx, pd, cq, gid_index);
	} else {
		/* the receives are real: the error state flushes each, in order */
		qp_to_state(job.qp, IBV_QPS_ERR);
		drain(cq, job.qp, job.receives, 1000);
		/* IBTA: a receive posted in the error state completes as flushed */
		memset(&wr, 0, sizeof(wr));
		sge.addr = (uintptr_t)job.buf;
		sge.length = 64;
		sge.lkey = job.mr->lkey;
		wr.wr_id = 1000 + job.receives;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		if (ibv_post_recv(job.qp, &wr, &bad))
			DIE("ibv_post_recv in the error state: %s", strerror(errno));
		drain(cq, job.qp, 1, 1000 + job.receives);
	}
	usleep(100000);
	if (ibv_poll_cq(cq, 1, &wc) != 0)
		DIE("a completion too many");

	say("device=%s\n", devname);
	say("receives=%ld filter=%s\n", job.receives, job.no_filter ? "off" : "on");
	say("queue=%s\n", job.srq ? "srq" : "qp");
	say("post_recv_ns=%.1f\n", (double)job.post_ns / job.receives);
	say("getppid_syscall_ns=%.1f\n", (double)syscall_ns / 100000);
	say("PASS\n");
	return 0;
}
