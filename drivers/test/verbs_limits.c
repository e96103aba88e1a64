// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * verbs_limits: the device's limits, reached and then exceeded by one,
 * through nothing but verbs.  The limits come from ibv_query_device; each
 * case allocates up to one, then one past it, and checks what is refused
 * and with which errno:
 *
 *   max_pd, max_cq, max_mr, max_qp   objects of the device: the one that
 *       brings the device to the limit is created, the next is refused
 *       with ENOMEM, and after freeing one another can be created.  The
 *       device's count includes what others hold: -k says how many of
 *       each exist before we start (on a RoCE port the kernel's MAD layer
 *       holds QP1, its CQ, its PD and that PD's DMA MR).
 *   max_cqe     a CQ of max_cqe entries is created, of max_cqe + 1 refused
 *               with EINVAL
 *   max_sge     a QP of max_sge send and receive SGEs is created; one more
 *               send SGE is refused with EINVAL, and one more receive SGE
 *   max_qp_wr   the same with work requests
 *   max_inline  not a device attribute: the largest max_inline_data a QP
 *               can be created with is searched for; one byte more is
 *               refused with EINVAL
 *
 * ENOMEM and EINVAL are what siw (and our driver) return from the verbs
 * for too many objects and for capabilities past the device's; ib_core
 * and uverbs pass them through unchanged, libibverbs leaves them in errno.
 *
 *   verbs_limits -d dev [-k pd=N,cq=N,qp=N,mr=N]
 *
 * Prints one line per case, e.g.
 *   max_pd: 64 ok (1 held by the kernel), 65th ENOMEM, after free ok
 *   max_cqe: 4096 ok, 4097 EINVAL
 * and PASS, or FAIL and the failed cases; exits 1 on any failure.
 * Everything it allocates is freed before it exits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "verbs_util.h"

/* Largest max_inline_data the search tries; a device taking it has no limit. */
#define INLINE_CEILING 65536

struct env {
	struct ibv_context *ctx;
	struct ibv_pd *pd;	/* for the MRs and QPs */
	struct ibv_cq *cq;	/* for the QPs */
	char buf[4096];		/* what every MR registers */
};

/* What exists on the device before we start, by object. */
struct held {
	int pd, cq, qp, mr;
};

static int failed;

/* "ENOMEM", "ok" for 0. */
static const char *err_name(int err)
{
	static char other[32];
	const char *n;

	if (!err)
		return "ok";
	n = strerrorname_np(err);
	if (n)
		return n;
	snprintf(other, sizeof(other), "errno %d", err);
	return other;
}

/* 1st, 2nd, 3rd, 4th, ..., 11th, ..., 21st, ... */
static const char *ordinal(long n)
{
	static char buf[32];
	const char *sfx = "th";

	if (n % 100 < 11 || n % 100 > 13) {
		switch (n % 10) {
		case 1:
			sfx = "st";
			break;
		case 2:
			sfx = "nd";
			break;
		case 3:
			sfx = "rd";
			break;
		}
	}
	snprintf(buf, sizeof(buf), "%ld%s", n, sfx);
	return buf;
}

/*
 * An outcome and what was wanted: "ENOMEM" when they agree, else
 * "ok (want ENOMEM)", which also marks the run failed.
 */
static const char *outcome(int got, int want)
{
	static char buf[4][64];
	static int next;
	char *b = buf[next++ % 4];

	if (got == want) {
		snprintf(b, 64, "%s", err_name(got));
	} else {
		failed = 1;
		snprintf(b, 64, "%s (want %s)", err_name(got), err_name(want));
	}
	return b;
}

static void *make_pd(struct env *e)
{
	return ibv_alloc_pd(e->ctx);
}

static int drop_pd(void *o)
{
	return ibv_dealloc_pd(o);
}

static void *make_cq(struct env *e)
{
	return ibv_create_cq(e->ctx, 1, NULL, NULL, 0);
}

static int drop_cq(void *o)
{
	return ibv_destroy_cq(o);
}

static void *make_mr(struct env *e)
{
	return ibv_reg_mr(e->pd, e->buf, sizeof(e->buf), IBV_ACCESS_LOCAL_WRITE);
}

static int drop_mr(void *o)
{
	return ibv_dereg_mr(o);
}

static struct ibv_qp *qp_with(struct env *e, struct ibv_qp_cap cap)
{
	struct ibv_qp_init_attr init = {
		.send_cq = e->cq,
		.recv_cq = e->cq,
		.qp_type = IBV_QPT_RC,
		.cap = cap,
	};
	struct ibv_qp *qp = ibv_create_qp(e->pd, &init);

	if (!qp)
		return NULL;
	/* what the QP got must be at least what was asked for */
	if (init.cap.max_send_wr < cap.max_send_wr ||
	    init.cap.max_recv_wr < cap.max_recv_wr ||
	    init.cap.max_send_sge < cap.max_send_sge ||
	    init.cap.max_recv_sge < cap.max_recv_sge ||
	    init.cap.max_inline_data < cap.max_inline_data) {
		fprintf(stderr, "FAIL: QP %#x got caps wr %u/%u sge %u/%u inline %u, asked for %u/%u %u/%u %u\n",
			qp->qp_num, init.cap.max_send_wr, init.cap.max_recv_wr,
			init.cap.max_send_sge, init.cap.max_recv_sge,
			init.cap.max_inline_data, cap.max_send_wr, cap.max_recv_wr,
			cap.max_send_sge, cap.max_recv_sge, cap.max_inline_data);
		failed = 1;
	}
	return qp;
}

static const struct ibv_qp_cap small_cap = {
	.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1,
};

static void *make_qp(struct env *e)
{
	return qp_with(e, small_cap);
}

static int drop_qp(void *o)
{
	return ibv_destroy_qp(o);
}

/* 0, or the errno of the call that returned NULL. */
static int try_make(void *(*make)(struct env *), struct env *e, void **o)
{
	errno = 0;
	*o = make(e);
	if (*o)
		return 0;
	return errno ? errno : -1;
}

static void drop(int (*fn)(void *), void *o, const char *name)
{
	int err = fn(o);

	if (err) {
		fprintf(stderr, "FAIL: %s: freeing one: %s\n", name, strerror(err));
		failed = 1;
	}
}

/*
 * Create objects until the device holds @limit of them (@held exist
 * already), then one more (refused with ENOMEM), then free one and create
 * one again.
 */
static void count_case(const char *name, int limit, int held, struct env *e,
		       void *(*make)(struct env *), int (*free_fn)(void *))
{
	int n = limit - held, i, err, made = 0;
	void **objs, *extra;

	if (n < 1) {
		printf("%s: %d (want more than the %d held by the kernel)\n", name, limit, held);
		failed = 1;
		return;
	}
	objs = calloc(n, sizeof(*objs));
	if (!objs)
		DIE("calloc");
	for (; made < n; made++) {
		err = try_make(make, e, &objs[made]);
		if (err) {
			printf("%s: %d ok (%d held by the kernel), %s %s (want ok, limit %d)\n",
			       name, held + made, held, ordinal(held + made + 1),
			       err_name(err), limit);
			failed = 1;
			goto out;
		}
	}
	err = try_make(make, e, &extra);
	if (!err)
		drop(free_fn, extra, name);
	printf("%s: %d ok (%d held by the kernel), %s %s", name, limit, held,
	       ordinal(limit + 1), outcome(err, ENOMEM));
	drop(free_fn, objs[--made], name);
	err = try_make(make, e, &objs[made]);
	if (!err)
		made++;
	printf(", after free %s\n", outcome(err, 0));
out:
	for (i = 0; i < made; i++)
		drop(free_fn, objs[i], name);
	free(objs);
}

/* 0 or the errno of creating a CQ of @cqe entries (destroyed again). */
static int try_cq(struct env *e, int cqe)
{
	struct ibv_cq *cq;

	errno = 0;
	cq = ibv_create_cq(e->ctx, cqe, NULL, NULL, 0);
	if (!cq)
		return errno ? errno : -1;
	if (cq->cqe < cqe) {
		fprintf(stderr, "FAIL: CQ of %d entries has %d\n", cqe, cq->cqe);
		failed = 1;
	}
	drop(drop_cq, cq, "max_cqe");
	return 0;
}

/* 0 or the errno of creating a QP with @cap (destroyed again). */
static int try_qp(struct env *e, struct ibv_qp_cap cap)
{
	struct ibv_qp *qp;

	errno = 0;
	qp = qp_with(e, cap);
	if (!qp)
		return errno ? errno : -1;
	drop(drop_qp, qp, "QP");
	return 0;
}

static void cqe_case(struct env *e, int max_cqe)
{
	int at = try_cq(e, max_cqe), over = try_cq(e, max_cqe + 1);

	printf("max_cqe: %d %s, %d %s\n", max_cqe, outcome(at, 0), max_cqe + 1,
	       outcome(over, EINVAL));
}

static void sge_case(struct env *e, int max_sge)
{
	struct ibv_qp_cap at = small_cap, send = small_cap, recv = small_cap;
	int a, s, r;

	at.max_send_sge = at.max_recv_sge = max_sge;
	send.max_send_sge = max_sge + 1;
	recv.max_recv_sge = max_sge + 1;
	a = try_qp(e, at);
	s = try_qp(e, send);
	r = try_qp(e, recv);
	printf("max_sge: %d %s, %d send %s, %d receive %s\n", max_sge, outcome(a, 0),
	       max_sge + 1, outcome(s, EINVAL), max_sge + 1, outcome(r, EINVAL));
}

static void wr_case(struct env *e, int max_wr)
{
	struct ibv_qp_cap at = small_cap, send = small_cap, recv = small_cap;
	int a, s, r;

	at.max_send_wr = at.max_recv_wr = max_wr;
	send.max_send_wr = max_wr + 1;
	recv.max_recv_wr = max_wr + 1;
	a = try_qp(e, at);
	s = try_qp(e, send);
	r = try_qp(e, recv);
	printf("max_qp_wr: %d %s, %d send %s, %d receive %s\n", max_wr, outcome(a, 0),
	       max_wr + 1, outcome(s, EINVAL), max_wr + 1, outcome(r, EINVAL));
}

/* 0 or the errno of a QP with @len bytes of inline room. */
static int try_inline(struct env *e, unsigned int len)
{
	struct ibv_qp_cap cap = small_cap;

	cap.max_inline_data = len;
	return try_qp(e, cap);
}

/*
 * ibv_query_device does not report the inline limit: find the largest
 * max_inline_data a QP is created with (0 always is; refusals from there
 * on), then check that one more is refused with EINVAL.
 */
static void inline_case(struct env *e)
{
	unsigned int ok = 0, bad = INLINE_CEILING, mid;

	if (!try_inline(e, bad)) {
		printf("max_inline: %u ok (want a limit)\n", bad);
		failed = 1;
		return;
	}
	while (bad - ok > 1) {
		mid = ok + (bad - ok) / 2;
		if (try_inline(e, mid))
			bad = mid;
		else
			ok = mid;
	}
	if (!ok) {
		printf("max_inline: %s (want some inline room)\n",
		       err_name(try_inline(e, 1)));
		failed = 1;
		return;
	}
	printf("max_inline: %u %s, %u %s\n", ok, outcome(try_inline(e, ok), 0), ok + 1,
	       outcome(try_inline(e, ok + 1), EINVAL));
}

static void parse_held(char *s, struct held *h)
{
	char *tok, *save = NULL;

	for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char what[8];
		int n;

		if (sscanf(tok, "%7[a-z]=%d", what, &n) != 2 || n < 0)
			DIE("-k wants pd=N,cq=N,qp=N,mr=N, got %s", tok);
		if (!strcmp(what, "pd"))
			h->pd = n;
		else if (!strcmp(what, "cq"))
			h->cq = n;
		else if (!strcmp(what, "qp"))
			h->qp = n;
		else if (!strcmp(what, "mr"))
			h->mr = n;
		else
			DIE("-k: no object %s (pd, cq, qp, mr)", what);
	}
}

int main(int argc, char **argv)
{
	static struct env e;
	const char *devname = NULL;
	struct ibv_device_attr attr;
	struct held held = {};
	int opt;

	while ((opt = getopt(argc, argv, "d:k:")) != -1) {
		switch (opt) {
		case 'd':
			devname = optarg;
			break;
		case 'k':
			parse_held(optarg, &held);
			break;
		default:
			fprintf(stderr, "usage: %s -d dev [-k pd=N,cq=N,qp=N,mr=N]\n", argv[0]);
			return 2;
		}
	}
	if (!devname)
		DIE("-d dev is required");

	e.ctx = open_device_by_name(devname);
	if (ibv_query_device(e.ctx, &attr))
		DIE("ibv_query_device: %s", strerror(errno));

	/* first, while we hold nothing */
	count_case("max_pd", attr.max_pd, held.pd, &e, make_pd, drop_pd);
	count_case("max_cq", attr.max_cq, held.cq, &e, make_cq, drop_cq);

	/* the MRs and QPs need a PD, the QPs a CQ: ours do not count there */
	e.pd = ibv_alloc_pd(e.ctx);
	if (!e.pd)
		DIE("ibv_alloc_pd: %s", strerror(errno));
	e.cq = ibv_create_cq(e.ctx, 1, NULL, NULL, 0);
	if (!e.cq)
		DIE("ibv_create_cq: %s", strerror(errno));
	count_case("max_mr", attr.max_mr, held.mr, &e, make_mr, drop_mr);
	count_case("max_qp", attr.max_qp, held.qp, &e, make_qp, drop_qp);

	cqe_case(&e, attr.max_cqe);
	sge_case(&e, attr.max_sge);
	wr_case(&e, attr.max_qp_wr);
	inline_case(&e);

	if (ibv_destroy_cq(e.cq))
		DIE("ibv_destroy_cq: %s", strerror(errno));
	if (ibv_dealloc_pd(e.pd))
		DIE("ibv_dealloc_pd: %s", strerror(errno));
	if (ibv_close_device(e.ctx))
		DIE("ibv_close_device: %s", strerror(errno));
	printf("%s\n", failed ? "FAIL" : "PASS");
	return failed;
}
