// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * srq_limit: shared receive queue limits and error paths, then (with a
 * peer) the SRQ limit event over real RC traffic.
 *
 * Local cases (one guest, no traffic): the device's SRQ attributes, an SRQ
 * of max_wr 16 queried back, the limit armed and read back, a limit above
 * max_wr, a resize (not supported), max_wr 4097 and max_sge 17 refused,
 * the 257th SRQ refused with ENOMEM and allowed once one is freed, a QP on
 * an SRQ (no receive queue: max_recv_wr 0, ibv_post_recv EINVAL), a QP on
 * an SRQ of another PD, post_srq_recv beyond the ring and beyond max_sge,
 * destroying an SRQ a QP still uses.
 *
 * Event cases (two guests): the server's two RC QPs receive from one SRQ
 * of 16 receives with the limit armed at 4.  The client sends 12 messages
 * (4 stay posted: no event), then one (3 left: IBV_EVENT_SRQ_LIMIT_REACHED,
 * the limit reads back 0), then one more (no second event).  The receives
 * complete in posting order, whichever QP took them, with the bytes sent.
 * Then a QP of the server moved to the error state raises
 * IBV_EVENT_QP_LAST_WQE_REACHED and flushes none of the SRQ's receives.
 *
 *   local:   srq_limit -d dev
 *   server:  srq_limit -d dev -g gid_index -p tcp_port -s
 *   client:  srq_limit -d dev -g gid_index -p tcp_port SERVER_IP
 *
 * Prints "name: ok" or "name: FAIL detail" per case; exits 1 on any FAIL.
 */
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdarg.h>

#include "case_report.h"
#include "rc_pair.h"

#define MAX_SRQ		256
#define MAX_SRQ_WR	4096
#define MAX_SRQ_SGE	16
#define SRQ_WR		16
#define SRQ_LIMIT	4
#define MSG_LEN		64
#define N_QP		2


static struct ibv_srq *srq_create(struct ibv_pd *pd, uint32_t max_wr, uint32_t max_sge)
{
	struct ibv_srq_init_attr init = { .attr = { .max_wr = max_wr, .max_sge = max_sge } };

	return ibv_create_srq(pd, &init);
}

static struct ibv_qp *srq_qp(struct ibv_pd *pd, struct ibv_cq *cq, struct ibv_srq *srq,
			     struct ibv_qp_init_attr *init)
{
	memset(init, 0, sizeof(*init));
	init->send_cq = cq;
	init->recv_cq = cq;
	init->srq = srq;
	init->qp_type = IBV_QPT_RC;
	init->cap.max_send_wr = 4;
	init->cap.max_send_sge = 1;
	init->cap.max_recv_wr = 4;	/* ignored with an SRQ */
	init->cap.max_recv_sge = 1;
	return ibv_create_qp(pd, init);
}

static int post_srq(struct ibv_srq *srq, void *buf, uint32_t lkey, uint64_t wr_id, int num_sge)
{
	struct ibv_sge sge[MAX_SRQ_SGE + 1];
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = sge, .num_sge = num_sge };
	struct ibv_recv_wr *bad = NULL;

	for (int i = 0; i < num_sge; i++)
		sge[i] = (struct ibv_sge){ .addr = (uintptr_t)buf, .length = MSG_LEN / num_sge + 1,
					   .lkey = lkey };
	return ibv_post_srq_recv(srq, &wr, &bad);
}

static void local_cases(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_pd *pd2,
			struct ibv_cq *cq, struct ibv_mr *mr)
{
	static struct ibv_srq *many[MAX_SRQ + 1];
	struct ibv_device_attr da;
	struct ibv_srq_attr sa;
	struct ibv_qp_init_attr qi;
	struct ibv_qp *qp;
	struct ibv_srq *srq, *other;
	int n, ret;

	ret = ibv_query_device(ctx, &da);
	report("device attributes", !ret && da.max_srq == MAX_SRQ &&
	       da.max_srq_wr == MAX_SRQ_WR && da.max_srq_sge == MAX_SRQ_SGE,
	       "ret %d max_srq %d max_srq_wr %d max_srq_sge %d", ret, da.max_srq,
	       da.max_srq_wr, da.max_srq_sge);

	srq = srq_create(pd, SRQ_WR, 1);
	if (!srq)
		DIE("create SRQ of %d: %s", SRQ_WR, strerror(errno));
	memset(&sa, 0xff, sizeof(sa));
	ret = ibv_query_srq(srq, &sa);
	report("query after create", !ret && sa.max_wr == SRQ_WR && sa.max_sge == 1 &&
	       sa.srq_limit == 0, "ret %d max_wr %u max_sge %u srq_limit %u", ret, sa.max_wr,
	       sa.max_sge, sa.srq_limit);

	sa = (struct ibv_srq_attr){ .srq_limit = SRQ_LIMIT };
	ret = ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT);
	memset(&sa, 0, sizeof(sa));
	if (!ret)
		ret = ibv_query_srq(srq, &sa);
	report("arm limit 4, query", !ret && sa.srq_limit == SRQ_LIMIT && sa.max_wr == SRQ_WR,
	       "ret %d srq_limit %u max_wr %u", ret, sa.srq_limit, sa.max_wr);

	sa = (struct ibv_srq_attr){ .srq_limit = SRQ_WR + 1 };
	ret = ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT);
	memset(&sa, 0, sizeof(sa));
	ibv_query_srq(srq, &sa);
	report("limit > max_wr: EINVAL", ret == EINVAL && sa.srq_limit == SRQ_LIMIT,
	       "ret %d (%s), limit now %u", ret, strerror(ret), sa.srq_limit);

	sa = (struct ibv_srq_attr){ .max_wr = 2 * SRQ_WR };
	ret = ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR);
	report("resize (IBV_SRQ_MAX_WR): EOPNOTSUPP", ret == EOPNOTSUPP, "ret %d (%s)", ret,
	       strerror(ret));

	errno = 0;
	other = srq_create(pd, MAX_SRQ_WR + 1, 1);
	report("max_wr 4097: EINVAL", !other && errno == EINVAL, "srq %p errno %d (%s)",
	       (void *)other, errno, strerror(errno));
	if (other)
		ibv_destroy_srq(other);
	errno = 0;
	other = srq_create(pd, SRQ_WR, MAX_SRQ_SGE + 1);
	report("max_sge 17: EINVAL", !other && errno == EINVAL, "srq %p errno %d (%s)",
	       (void *)other, errno, strerror(errno));
	if (other)
		ibv_destroy_srq(other);
	errno = 0;
	other = srq_create(pd, 0, 1);
	report("max_wr 0: EINVAL", !other && errno == EINVAL, "srq %p errno %d (%s)",
	       (void *)other, errno, strerror(errno));
	if (other)
		ibv_destroy_srq(other);
	other = srq_create(pd, MAX_SRQ_WR, MAX_SRQ_SGE);
	report("max_wr 4096, max_sge 16: accepted", other != NULL, "errno %d (%s)", errno,
	       strerror(errno));
	if (other)
		ibv_destroy_srq(other);

	/* @srq is one; 255 more reach the limit */
	for (n = 0; n < MAX_SRQ; n++) {
		many[n] = srq_create(pd, 1, 1);
		if (!many[n])
			break;
	}
	ret = errno;
	report("257th SRQ: ENOMEM", n == MAX_SRQ - 1 && ret == ENOMEM,
	       "%d created besides the first, then errno %d (%s)", n, ret, strerror(ret));
	if (n > 0) {
		ibv_destroy_srq(many[n - 1]);
		many[n - 1] = srq_create(pd, 1, 1);
		report("after freeing one, it works", many[n - 1] != NULL, "errno %d (%s)", errno,
		       strerror(errno));
		if (!many[n - 1])
			n--;
	}
	while (n > 0)
		ibv_destroy_srq(many[--n]);

	/* a QP on the SRQ has no receive queue */
	qp = srq_qp(pd, cq, srq, &qi);
	report("QP on an SRQ: max_recv_wr 0", qp && qi.cap.max_recv_wr == 0,
	       "qp %p errno %d max_recv_wr %u", (void *)qp, errno, qi.cap.max_recv_wr);
	if (qp) {
		struct ibv_sge sge = { .addr = (uintptr_t)mr->addr, .length = MSG_LEN,
				       .lkey = mr->lkey };
		struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad = NULL;
		struct ibv_qp_attr qa;
		struct ibv_qp_init_attr qqi;

		ret = ibv_post_recv(qp, &wr, &bad);
		report("ibv_post_recv on a QP with an SRQ: EINVAL", ret == EINVAL && bad == &wr,
		       "ret %d (%s)", ret, strerror(ret));
		ret = ibv_query_qp(qp, &qa, IBV_QP_CAP, &qqi);
		report("query_qp: the SRQ, no receive queue",
		       !ret && qqi.srq == srq && qa.cap.max_recv_wr == 0,
		       "ret %d srq %p (want %p) max_recv_wr %u", ret, (void *)qqi.srq,
		       (void *)srq, qa.cap.max_recv_wr);
		ret = ibv_destroy_srq(srq);
		report("destroy an SRQ a QP uses: EBUSY", ret == EBUSY, "ret %d (%s)", ret,
		       strerror(ret));
		ibv_destroy_qp(qp);
	}

	/* an SRQ of another PD */
	other = srq_create(pd2, SRQ_WR, 1);
	if (!other)
		DIE("create SRQ in the second PD: %s", strerror(errno));
	errno = 0;
	qp = srq_qp(pd, cq, other, &qi);
	report("QP on an SRQ of another PD: EINVAL", !qp && errno == EINVAL,
	       "qp %p errno %d (%s)", (void *)qp, errno, strerror(errno));
	if (qp)
		ibv_destroy_qp(qp);
	ibv_destroy_srq(other);

	/* posting: SGE count and ring room */
	ret = post_srq(srq, mr->addr, mr->lkey, 0, 2);
	report("post_srq_recv with 2 SGEs on max_sge 1: EINVAL", ret == EINVAL, "ret %d (%s)",
	       ret, strerror(ret));
	for (n = 0; n < SRQ_WR; n++) {
		ret = post_srq(srq, mr->addr, mr->lkey, n, 1);
		if (ret)
			break;
	}
	report("16 receives fit", n == SRQ_WR, "post %d failed: %d (%s)", n, ret, strerror(ret));
	ret = post_srq(srq, mr->addr, mr->lkey, n, 1);
	report("17th receive: ENOMEM", ret == ENOMEM, "ret %d (%s)", ret, strerror(ret));

	ret = ibv_destroy_srq(srq);
	report("destroy", !ret, "ret %d (%s)", ret, strerror(ret));
}

/* ---- the limit event, between two guests ---- */

struct msg {
	uint32_t qpn[N_QP], psn;
	uint8_t gid[16];
};

/* Wait up to @ms for an async event: 1 with *@ev (acknowledged), or 0. */
static int async_event(struct ibv_context *ctx, struct ibv_async_event *ev, int ms)
{
	struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };

	if (poll(&p, 1, ms) <= 0)
		return 0;
	if (ibv_get_async_event(ctx, ev))
		return 0;
	ibv_ack_async_event(ev);
	return 1;
}


static void step(int fd)
{
	char a = 0, b;

	tcp_xfer(fd, &a, &b, 1);
}

/* Client: send @n messages of MSG_LEN, message i holding byte @first + i, alternating QPs. */
static void client_send(struct ibv_qp **qp, struct ibv_cq *cq, struct ibv_mr *mr, int first,
			int n)
{
	for (int i = 0; i < n; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)mr->addr, .length = MSG_LEN,
				       .lkey = mr->lkey };
		struct ibv_send_wr wr = { .wr_id = first + i, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;
		struct ibv_wc wc;

		memset(mr->addr, first + i, MSG_LEN);
		if (ibv_post_send(qp[(first + i) % N_QP], &wr, &bad))
			DIE("post_send");
		if (!poll_one(cq, &wc, 5000))
			DIE("send %d: no completion in 5 s", first + i);
		if (wc.status != IBV_WC_SUCCESS)
			DIE("send %d: %s", first + i, ibv_wc_status_str(wc.status));
	}
}

/* Server: @n receives complete in order from @*next, each with its bytes. */
static void server_recv(struct ibv_cq *cq, unsigned char *buf, int *next, int n,
			const char *name)
{
	char why[160] = "";

	for (int i = 0; i < n; i++, (*next)++) {
		struct ibv_wc wc;
		unsigned char *p = buf + *next * MSG_LEN;

		if (!poll_one(cq, &wc, 5000)) {
			snprintf(why, sizeof(why), "receive %d: no completion", *next);
			break;
		}
		if (wc.status != IBV_WC_SUCCESS || wc.wr_id != (uint64_t)*next ||
		    wc.byte_len != MSG_LEN || p[0] != *next || p[MSG_LEN - 1] != *next) {
			snprintf(why, sizeof(why), "receive %d: status %s wr_id %llu len %u data %u",
				 *next, ibv_wc_status_str(wc.status),
				 (unsigned long long)wc.wr_id, wc.byte_len, p[0]);
			break;
		}
	}
	report(name, !why[0], "%s", why);
}

static void event_cases(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq,
			int gid_index, const char *server, int port)
{
	int client = server != NULL, next = 0;
	unsigned char *buf = aligned_alloc(4096, SRQ_WR * MSG_LEN);
	struct ibv_srq *srq = NULL;
	struct ibv_qp *qp[N_QP];
	struct ibv_port_attr pa;
	union ibv_gid gid;
	struct msg me = { .psn = 0x1234 }, peer;
	struct ibv_async_event ev;
	struct ibv_srq_attr sa;
	struct ibv_qp_init_attr qi;
	struct ibv_mr *mr;
	int fd, got;

	if (!buf || ibv_query_port(ctx, 1, &pa) || ibv_query_gid(ctx, 1, gid_index, &gid))
		DIE("query port/gid");
	memset(buf, 0, SRQ_WR * MSG_LEN);
	mr = ibv_reg_mr(pd, buf, SRQ_WR * MSG_LEN, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		DIE("reg_mr");
	/* the async events are waited for with poll() */
	if (fcntl(ctx->async_fd, F_SETFL, fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK))
		DIE("async_fd");
	if (!client) {
		srq = srq_create(pd, SRQ_WR, 1);
		if (!srq)
			DIE("create SRQ: %s", strerror(errno));
		for (int i = 0; i < SRQ_WR; i++) {
			struct ibv_sge sge = { .addr = (uintptr_t)buf + i * MSG_LEN,
					       .length = MSG_LEN, .lkey = mr->lkey };
			struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

			if (ibv_post_srq_recv(srq, &wr, &bad))
				DIE("post_srq_recv %d", i);
		}
		sa = (struct ibv_srq_attr){ .srq_limit = SRQ_LIMIT };
		if (ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT))
			DIE("arm the limit");
	}
	for (int i = 0; i < N_QP; i++) {
		qp[i] = client ? rc_create_qp(pd, cq, 0) : srq_qp(pd, cq, srq, &qi);
		if (!qp[i])
			DIE("QP %d", i);
		if (!client)
			qp_to_state(qp[i], IBV_QPS_INIT);
		me.qpn[i] = qp[i]->qp_num;
	}
	memcpy(me.gid, gid.raw, 16);
	fd = tcp_rendezvous(server, port);
	tcp_xfer(fd, &me, &peer, sizeof(me));
	for (int i = 0; i < N_QP; i++)
		rc_connect(qp[i], me.psn, peer.qpn[i], peer.psn, peer.gid, 0, gid_index,
			   pa.active_mtu, 7);
	step(fd);

	/* 12 of 16 taken: 4 posted, not below the limit */
	if (client)
		client_send(qp, cq, mr, 0, SRQ_WR - SRQ_LIMIT);
	step(fd);
	if (!client) {
		server_recv(cq, buf, &next, SRQ_WR - SRQ_LIMIT, "12 receives over 2 QPs, in order");
		got = async_event(ctx, &ev, 300);
		memset(&sa, 0, sizeof(sa));
		ibv_query_srq(srq, &sa);
		report("4 left: no event, still armed", !got && sa.srq_limit == SRQ_LIMIT,
		       "event %s, srq_limit %u", got ? ibv_event_type_str(ev.event_type) : "none",
		       sa.srq_limit);
	}
	step(fd);

	/* one more: 3 left, below the limit */
	if (client)
		client_send(qp, cq, mr, SRQ_WR - SRQ_LIMIT, 1);
	step(fd);
	if (!client) {
		server_recv(cq, buf, &next, 1, "13th receive");
		got = async_event(ctx, &ev, 2000);
		memset(&sa, 0xff, sizeof(sa));
		ibv_query_srq(srq, &sa);
		report("3 left: IBV_EVENT_SRQ_LIMIT_REACHED, disarmed",
		       got && ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED &&
		       ev.element.srq == srq && sa.srq_limit == 0,
		       "event %s, srq_limit %u", got ? ibv_event_type_str(ev.event_type) : "none",
		       sa.srq_limit);
	}
	step(fd);

	/* and one more: no second event */
	if (client)
		client_send(qp, cq, mr, SRQ_WR - SRQ_LIMIT + 1, 1);
	step(fd);
	if (!client) {
		server_recv(cq, buf, &next, 1, "14th receive");
		got = async_event(ctx, &ev, 300);
		report("2 left: no second event", !got, "event %s",
		       got ? ibv_event_type_str(ev.event_type) : "none");

		/* a QP to the error state: LAST_WQE_REACHED, the SRQ's 2 stay */
		struct ibv_wc wc;

		qp_to_state(qp[0], IBV_QPS_ERR);
		got = async_event(ctx, &ev, 2000);
		report("QP to error: IBV_EVENT_QP_LAST_WQE_REACHED",
		       got && ev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED &&
		       ev.element.qp == qp[0], "event %s",
		       got ? ibv_event_type_str(ev.event_type) : "none");
		got = poll_one(cq, &wc, 300);
		report("QP to error: no SRQ receive flushed", !got,
		       "completion wr_id %llu status %s", (unsigned long long)wc.wr_id,
		       ibv_wc_status_str(wc.status));
	}
	step(fd);

	/* the other QP still receives the SRQ's next receive */
	if (client)
		client_send(qp, cq, mr, SRQ_WR - SRQ_LIMIT + 3, 1);	/* odd: qp[1] */
	step(fd);
	if (!client) {
		/* receive 14 of the SRQ holds message 15 (the client skipped one) */
		struct ibv_wc wc;
		unsigned char *p = buf + next * MSG_LEN;

		got = poll_one(cq, &wc, 5000);
		report("other QP takes the next SRQ receive",
		       got && wc.status == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)next &&
		       wc.qp_num == qp[1]->qp_num && p[0] == SRQ_WR - SRQ_LIMIT + 3,
		       "got %d status %s wr_id %llu qp %u data %u", got,
		       got ? ibv_wc_status_str(wc.status) : "-", (unsigned long long)wc.wr_id,
		       wc.qp_num, p[0]);
	}
	step(fd);
	close(fd);
	for (int i = 0; i < N_QP; i++)
		ibv_destroy_qp(qp[i]);
	if (srq)
		ibv_destroy_srq(srq);
	ibv_dereg_mr(mr);
	free(buf);
}

int main(int argc, char **argv)
{
	const char *dev_name = NULL, *server = NULL;
	int gid_index = 0, port = 18810, opt, listen_mode = 0;

	while ((opt = getopt(argc, argv, "d:g:p:s")) != -1) {
		if (opt == 's')
			listen_mode = 1;
		else if (!rc_pair_opt(opt, optarg, &dev_name, &gid_index, &port))
			return 2;
	}
	if (optind < argc)
		server = argv[optind];
	setvbuf(stdout, NULL, _IOLBF, 0);

	struct ibv_context *ctx = open_device_by_name(dev_name);
	struct ibv_pd *pd = ibv_alloc_pd(ctx), *pd2 = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	void *buf = aligned_alloc(4096, 4096);
	struct ibv_mr *mr = pd && buf ? ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE) : NULL;

	if (!mr || !pd2 || !cq)
		DIE("open device / resources");
	if (!server)
		local_cases(ctx, pd, pd2, cq, mr);
	if (server || listen_mode)
		event_cases(ctx, pd, cq, gid_index, server, port);
	printf("%s\n", case_failures ? "FAIL" : "PASS");
	return case_failures ? 1 : 0;
}
