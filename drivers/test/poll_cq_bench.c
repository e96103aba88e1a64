// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * poll_cq_bench: what ibv_poll_cq costs, and proof that it makes no system
 * call.  It fills a CQ with completions without any peer (receives posted
 * on an RC QP, then the QP moved to the error state: each receive completes
 * with IBV_WC_WR_FLUSH_ERR), then installs a seccomp filter that kills the
 * process on any system call but write(1|2), the clocks and exit, and only
 * then polls: first draining the completions in batches (checked: status,
 * wr_id order, qp_num), then polling the empty CQ.  A provider whose
 * poll_cq enters the kernel dies with SIGSYS instead of printing results.
 * For scale it measures one cheap system call (getppid) before the filter.
 *
 *   poll_cq_bench -d dev [-n completions] [-b batch] [-e empty_polls] [-x]
 *
 * -x makes one getppid() call inside the filtered section: the process must
 * then die with SIGSYS (the filter's own test).  Prints key=value lines and
 * PASS; exits 1 on a wrong completion.  It does not count system calls: the
 * filter kills the process at the first one, so reaching PASS is the proof.
 */
#include <errno.h>
#include <getopt.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
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

#define MAX_BATCH 64

int main(int argc, char **argv)
{
	const char *devname = NULL;
	int completions = 4096, batch = 16, selftest = 0;
	long empty_polls = 1000000;
	struct ibv_context *ctx;
	struct ibv_wc wc[MAX_BATCH];
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint64_t t0, drain_ns, empty_ns, syscall_ns;
	long got = 0, empty_during_drain = 0, i;
	int opt, n;

	while ((opt = getopt(argc, argv, "d:n:b:e:x")) != -1) {
		switch (opt) {
		case 'd':
			devname = optarg;
			break;
		case 'n':
			completions = atoi(optarg);
			break;
		case 'b':
			batch = atoi(optarg);
			break;
		case 'e':
			empty_polls = atol(optarg);
			break;
		case 'x':
			selftest = 1;
			break;
		default:
			fprintf(stderr, "usage: %s -d dev [-n completions] [-b batch] [-e empty_polls] [-x]\n",
				argv[0]);
			return 2;
		}
	}
	if (!devname)
		DIE("-d dev is required");
	if (completions < 1 || completions > 4096)
		DIE("-n must be 1..4096 (one CQ, one receive queue)");
	if (batch < 1 || batch > MAX_BATCH)
		DIE("-b must be 1..%d", MAX_BATCH);
	if (empty_polls < 1)
		DIE("-e must be at least 1");

	ctx = open_device_by_name(devname);

	pd = ibv_alloc_pd(ctx);
	if (!pd)
		DIE("ibv_alloc_pd: %s", strerror(errno));
	cq = ibv_create_cq(ctx, completions, NULL, NULL, 0);
	if (!cq)
		DIE("ibv_create_cq(%d): %s", completions, strerror(errno));
	{
		struct ibv_qp_init_attr init = {
			.send_cq = cq,
			.recv_cq = cq,
			.qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 1, .max_recv_wr = completions,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};

		qp = ibv_create_qp(pd, &init);
		if (!qp)
			DIE("ibv_create_qp(%d receives): %s", completions, strerror(errno));
	}
	qp_to_state(qp, IBV_QPS_INIT);
	for (i = 0; i < completions; i++) {
		struct ibv_recv_wr wr = { .wr_id = 1000 + i, .num_sge = 0 }, *bad;

		if (ibv_post_recv(qp, &wr, &bad))
			DIE("ibv_post_recv #%ld: %s", i, strerror(errno));
	}
	/* the error state flushes every receive into the CQ */
	qp_to_state(qp, IBV_QPS_ERR);
	usleep(200000);

	/* one cheap system call, for scale */
	t0 = now_ns();
	for (i = 0; i < 100000; i++)
		syscall(SYS_getppid);
	syscall_ns = now_ns() - t0;

	forbid_system_calls();
	if (selftest)
		syscall(SYS_getppid);

	t0 = now_ns();
	while (got < completions) {
		n = ibv_poll_cq(cq, batch, wc);
		if (n < 0)
			DIE("ibv_poll_cq: %d", n);
		if (n == 0) {
			if (++empty_during_drain > 100000000L) {
				say("FAIL: %ld of %d flushed completions arrived\n", got, completions);
				_exit(1);
			}
			continue;
		}
		for (i = 0; i < n; i++, got++) {
			if (wc[i].status != IBV_WC_WR_FLUSH_ERR || wc[i].wr_id != (uint64_t)(1000 + got) ||
			    wc[i].qp_num != qp->qp_num) {
				say("FAIL: completion %ld: status %d wr_id %llu qp 0x%x; want %d %ld 0x%x\n",
				    got, wc[i].status, (unsigned long long)wc[i].wr_id, wc[i].qp_num,
				    IBV_WC_WR_FLUSH_ERR, 1000 + got, qp->qp_num);
				_exit(1);
			}
		}
	}
	drain_ns = now_ns() - t0;

	t0 = now_ns();
	for (i = 0; i < empty_polls; i++) {
		n = ibv_poll_cq(cq, batch, wc);
		if (n != 0) {
			say("FAIL: an empty CQ returned %d\n", n);
			_exit(1);
		}
	}
	empty_ns = now_ns() - t0;

	say("device=%s\n", devname);
	say("completions=%d batch=%d\n", completions, batch);
	say("drain_ns_per_completion=%.1f\n", (double)drain_ns / completions);
	say("empty_polls_during_drain=%ld\n", empty_during_drain);
	say("empty_poll_ns=%.1f\n", (double)empty_ns / empty_polls);
	say("getppid_syscall_ns=%.1f\n", (double)syscall_ns / 100000);
	say("PASS\n");
	/* the filter forbids the unmap and close calls a tidy teardown makes */
	_exit(0);
}
