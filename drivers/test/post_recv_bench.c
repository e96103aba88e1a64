// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * post_recv_bench: what ibv_post_recv costs, and proof that it makes no
 * system call.  An RC QP (no peer) is moved to INIT; a thread then installs
 * a seccomp filter that kills the process on any system call but write(1|2),
 * the clocks and exit, and posts as many receives as the receive queue holds
 * (one SGE each), timing them; in the same filtered section it checks that
 * one more receive is refused with ENOMEM and one with too many SGEs with
 * EINVAL, both with bad_wr set.  A provider whose post_recv enters the
 * kernel dies with SIGSYS instead of printing results.
 *
 * The filter is per thread (no SECCOMP_FILTER_FLAG_TSYNC), so once the
 * filtered thread has ended (a raw exit system call) the main thread checks
 * that the receives are real: it moves the QP to the error state and every
 * one must complete with IBV_WC_WR_FLUSH_ERR, in order; then a receive
 * posted in the error state must be flushed too.
 *
 *   post_recv_bench -d dev [-n receives] [-x] [-S]
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
	struct ibv_mr *mr;
	char *buf;
	long receives;
	int no_filter, selftest;
	uint64_t post_ns;
	int failed;
} job;

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
		ret = ibv_post_recv(job.qp, &wr, &bad);
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
	ret = ibv_post_recv(job.qp, &wr, &bad);
	if (ret != ENOMEM || bad != &wr) {
		say("FAIL: a receive on a full queue: %d (bad_wr %s); want ENOMEM\n",
		    ret, bad == &wr ? "set" : "not set");
		job.failed = 1;
		goto out;
	}
	/* more SGEs than the QP was created with */
	wr.num_sge = MAX_SGE + 1;
	bad = NULL;
	ret = ibv_post_recv(job.qp, &wr, &bad);
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
	int opt;

	while ((opt = getopt(argc, argv, "d:n:xS")) != -1) {
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
		default:
			fprintf(stderr, "usage: %s -d dev [-n receives] [-x] [-S]\n", argv[0]);
			return 2;
		}
	}
	if (!devname)
		DIE("-d dev is required");
	if (want < 1 || want > 4096)
		DIE("-n must be 1..4096 (one receive queue)");

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
	{
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
	}
	qp_to_state(job.qp, IBV_QPS_INIT);

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
	usleep(100000);
	if (ibv_poll_cq(cq, 1, &wc) != 0)
		DIE("a completion too many");

	say("device=%s\n", devname);
	say("receives=%ld filter=%s\n", job.receives, job.no_filter ? "off" : "on");
	say("post_recv_ns=%.1f\n", (double)job.post_ns / job.receives);
	say("getppid_syscall_ns=%.1f\n", (double)syscall_ns / 100000);
	say("PASS\n");
	return 0;
}
