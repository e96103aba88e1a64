// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * roce_security: the responder's memory protection and receive-not-ready
 * handling, seen from both ends.  The client aims RDMA operations at the
 * server's memory regions in ways the keys must refuse; each must complete
 * at the client with a remote access error and change no byte at the
 * server.  Control cases prove the setup itself works.  Two SEND cases
 * exercise RNR: a receive posted late (RNR NAKs, retried until it is
 * there) and none at all with rnr_retry 0 (the send fails with an RNR
 * retry error).  Every case uses a fresh pair of QPs (an error moves both
 * ends to the error state).
 *
 * Then the inline-length cases, on an RC and on a UD QP pair whose send
 * queues were given INLINE_ASK bytes of inline room, then none: an inline
 * SEND of exactly max_inline bytes is accepted and delivered; max_inline + 1
 * and INLINE_BIG bytes are refused by ibv_post_send with EINVAL and leave
 * no trace (no completion, no frame sent, nothing delivered); a SEND after
 * them still works.
 *
 *   server:  roce_security -d dev -g gid_index -p tcp_port
 *   client:  roce_security -d dev -g gid_index -p tcp_port SERVER_IP
 *
 * On a native InfiniBand port both ends connect by LID instead (each sends
 * its LID with its GID; -g is then 0, the port's one GID, and unused).
 *
 * Prints one line per case and PASS at the end; exits 1 on any mismatch.
 */
#include <getopt.h>
#include <rdma/ib_user_verbs.h>

#include "rc_pair.h"

#define MR_LEN 4096
#define NUM_CASES (sizeof(cases) / sizeof(cases[0]))

enum target { T_RW, T_RO, T_OTHER_PD };

struct test_case {
	const char *name;
	enum ibv_wr_opcode op;
	enum target target;
	int64_t offset;			/* from the start of the target MR */
	uint32_t len;
	int bad_rkey;
	enum ibv_wc_status want;
	int no_rnr_retry;	/* SEND: the client's rnr_retry is 0, not 7 */
	int recv_delay_ms;	/* SEND: server posts its receive this late; <0 never */
};

static const struct test_case cases[] = {
	{ "control: write inside a REMOTE_WRITE MR", IBV_WR_RDMA_WRITE, T_RW, 0, 64, 0,
	  IBV_WC_SUCCESS, 0, 0 },
	{ "write to an MR without REMOTE_WRITE", IBV_WR_RDMA_WRITE, T_RO, 0, 64, 0,
	  IBV_WC_REM_ACCESS_ERR, 0, 0 },
	{ "write with the rkey of an MR of another PD", IBV_WR_RDMA_WRITE, T_OTHER_PD, 0, 64, 0,
	  IBV_WC_REM_ACCESS_ERR, 0, 0 },
	{ "write past the end of the MR", IBV_WR_RDMA_WRITE, T_RW, MR_LEN - 8, 16, 0,
	  IBV_WC_REM_ACCESS_ERR, 0, 0 },
	{ "write before the start of the MR", IBV_WR_RDMA_WRITE, T_RW, -8, 16, 0,
	  IBV_WC_REM_ACCESS_ERR, 0, 0 },
	{ "read past the end of the MR", IBV_WR_RDMA_READ, T_RW, MR_LEN - 8, 16, 0,
	  IBV_WC_REM_ACCESS_ERR, 0, 0 },
	{ "atomic on an MR without REMOTE_ATOMIC", IBV_WR_ATOMIC_FETCH_AND_ADD, T_RW, 0, 8, 0,
	  IBV_WC_REM_ACCESS_ERR, 0, 0 },
	{ "write with an rkey that does not exist", IBV_WR_RDMA_WRITE, T_RW, 0, 64, 1,
	  IBV_WC_REM_ACCESS_ERR, 0, 0 },
	{ "control: read inside the MR", IBV_WR_RDMA_READ, T_RO, 0, 64, 0,
	  IBV_WC_SUCCESS, 0, 0 },
	{ "send before the receive is posted: RNR NAKs, then delivered", IBV_WR_SEND, T_RW, 0,
	  64, 0, IBV_WC_SUCCESS, 0, 300 },
	{ "send with no receive ever and rnr_retry 0", IBV_WR_SEND, T_RW, 0, 64, 0,
	  IBV_WC_RNR_RETRY_EXC_ERR, 1, -1 },
};

struct msg {
	uint32_t qpn, psn;
	uint8_t gid[16];
	uint16_t lid, pad;	/* native IB: the LID, and connections use it */
	uint64_t addr;
	uint32_t rkey, len;
	int32_t status;
};

static int pattern_intact(const unsigned char *p, unsigned char v)
{
	for (int i = 0; i < MR_LEN; i++)
		if (p[i] != v)
			return 0;
	return 1;
}

/* ---- inline lengths ---- */

#define INLINE_ASK	64	/* inline room the QPs ask for (then 0) */
#define INLINE_BIG	4096	/* far past any inline room: a page */
#define UD_QKEY		0x11111111u
#define GRH_BYTES	40	/* what a UD receive has before the payload */
#define N_RECV		4	/* receives the server posts, one per slot */
#define SLOT		(MR_LEN / N_RECV)
#define FILL_OK		0x11	/* the accepted message */
#define FILL_AFTER	0x22	/* the message after the refusals */
#define AFTER_PLAIN	64	/* its length when the QP has no inline room */

/* What one end of the inline cases works with. */
struct inline_env {
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr_rw, *mr_local;
	unsigned char *rw, *local;
	const char *ibdev;
	union ibv_gid gid;
	uint16_t lid;		/* native IB: ours (0 on RoCE) */
	int gid_index, fd, client;
	enum ibv_mtu mtu;
};

/* A UD QP on @cq, RTS with UD_QKEY; *@got is the inline room granted. */
static struct ibv_qp *ud_create_qp(struct ibv_pd *pd, struct ibv_cq *cq, uint32_t max_inline,
				   uint32_t *got)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 4, .max_recv_wr = N_RECV, .max_send_sge = 1,
			 .max_recv_sge = 1, .max_inline_data = max_inline },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &init);

	if (!qp)
		DIE("create UD QP: %s", strerror(errno));
	ud_qp_to_rts(qp, UD_QKEY);
	*got = init.cap.max_inline_data;
	return qp;
}

/* One of the port's hw_counters; -1 unreadable. */
static long hw_counter(const char *ibdev, const char *name)
{
	char path[256];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/hw_counters/%s",
		 ibdev, name);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/*
 * Frames user QPs made the device send: on native IB the kernel sends
 * meanwhile (the SMA's answers to the SM's sweeps, IPoIB carrying this
 * program's own TCP side channel), which says nothing about this QP.
 * The two files are read one after the other, so a kernel frame sent
 * between the reads would count as this QP's: the kernel count is read on
 * both sides of the total and the pair taken only when it did not move
 * (a consistent read, not a retry of the check).  -1 unreadable, or the
 * kernel never quiet for 100 reads.
 */
static long sent_pkts(const char *ibdev)
{
	for (int i = 0; i < 100; i++) {
		long kernel = hw_counter(ibdev, "sent_kernel_pkts");
		long all = hw_counter(ibdev, "sent_pkts");
		long again = hw_counter(ibdev, "sent_kernel_pkts");

		if (all < 0 || kernel < 0 || again < 0)
			return -1;
		if (kernel == again)
			return all - kernel;
	}
	return -1;
}

/*
 * Post one signalled SEND of @len bytes of @fill from the client's buffer,
 * inline or from its MR; to @ah / @qpn on a UD QP.  Returns ibv_post_send's
 * result; *@bad_ok says whether bad_wr named this request (or stayed NULL on
 * success).
 */
static int post_one(struct ibv_qp *qp, const struct inline_env *e, struct ibv_ah *ah,
		    uint32_t qpn, uint32_t len, unsigned char fill, int inl, int *bad_ok)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->local, .length = len,
			       .lkey = inl ? 0 : e->mr_local->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED |
						(inl ? IBV_SEND_INLINE : 0) };
	struct ibv_send_wr *bad = NULL;
	int ret;

	memset(e->local, fill, len);
	if (ah) {
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = qpn;
		wr.wr.ud.remote_qkey = UD_QKEY;
	}
	ret = ibv_post_send(qp, &wr, &bad);
	*bad_ok = ret ? bad == &wr : bad == NULL;
	return ret;
}

/* Client: append "; <what>" to @why (the case then fails). */
static void why_add(char *why, size_t size, const char *what)
{
	size_t n = strlen(why);

	snprintf(why + n, size - n, "%s%s", n ? "; " : "", what);
}

/*
 * The uverbs POLL_CQ command (a write() on the context's command fd, which
 * ibv_poll_cq never uses here: it reads the mapped ring) aimed at @cq while
 * it holds a completion.  The device does not take that command, as ib_core
 * would look at the QP of each entry, which a user CQ does not keep: it
 * must fail with EOPNOTSUPP and leave the completion where it is.
 */
static void poll_cmd_refused(struct ibv_cq *cq, char *why, size_t size)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_poll_cq cmd;
	} req = { 0 };
	struct {
		struct ib_uverbs_poll_cq_resp head;
		struct ib_uverbs_wc wc;
	} resp = { 0 };
	char buf[160];
	ssize_t n;

	req.hdr.command = IB_USER_VERBS_CMD_POLL_CQ;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = (uintptr_t)&resp;
	req.cmd.cq_handle = cq->handle;
	req.cmd.ne = 1;
	n = write(cq->context->cmd_fd, &req, sizeof(req));
	if (n >= 0 || errno != EOPNOTSUPP) {
		snprintf(buf, sizeof(buf), "the uverbs POLL_CQ command: %s (%u entries)",
			 n >= 0 ? "taken" : strerror(errno), resp.head.count);
		why_add(why, size, buf);
	}
}

/* Client side of one inline case: post, check, report into @why. */
static void inline_client(const struct inline_env *e, struct ibv_qp *qp, struct ibv_ah *ah,
			  uint32_t qpn, uint32_t max_inline, char *why, size_t size)
{
	const uint32_t bad_len[2] = { max_inline + 1, INLINE_BIG };
	uint32_t after_len = max_inline ? max_inline : AFTER_PLAIN;
	char buf[160];
	struct ibv_wc wc;
	long before, after;
	int ret, bad_ok;

	ret = post_one(qp, e, ah, qpn, max_inline, FILL_OK, 1, &bad_ok);
	if (ret || !bad_ok) {
		snprintf(buf, sizeof(buf), "exactly %u bytes inline: ibv_post_send %s", max_inline,
			 strerror(ret));
		why_add(why, size, buf);
	} else if (ah && max_inline) {
		/* a UD send completes once sent: the CQ holds its entry by now */
		usleep(200000);
		poll_cmd_refused(e->cq, why, size);
	}
	if (!ret && (!poll_one(e->cq, &wc, 5000) || wc.status != IBV_WC_SUCCESS)) {
		why_add(why, size, "exactly max_inline: no successful completion");
	}
	before = sent_pkts(e->ibdev);
	for (int i = 0; i < 2; i++) {
		ret = post_one(qp, e, ah, qpn, bad_len[i], 0x33 + i, 1, &bad_ok);
		if (ret != EINVAL || !bad_ok) {
			snprintf(buf, sizeof(buf), "%u bytes inline: ibv_post_send %s (%d), bad_wr %s",
				 bad_len[i], ret ? strerror(ret) : "accepted it", ret,
				 bad_ok ? "ok" : "wrong");
			why_add(why, size, buf);
		}
	}
	if (poll_one(e->cq, &wc, 200)) {
		snprintf(buf, sizeof(buf), "a refused post completed (%s, %u bytes)",
			 ibv_wc_status_str(wc.status), wc.byte_len);
		why_add(why, size, buf);
	}
	after = sent_pkts(e->ibdev);
	if (before < 0 || after != before) {
		snprintf(buf, sizeof(buf), "refused posts sent frames (sent_pkts %ld -> %ld)",
			 before, after);
		why_add(why, size, buf);
	}
	ret = post_one(qp, e, ah, qpn, after_len, FILL_AFTER, max_inline != 0, &bad_ok);
	if (ret || !bad_ok || !poll_one(e->cq, &wc, 5000) || wc.status != IBV_WC_SUCCESS)
		why_add(why, size, "the SEND after the refusals failed");
}

/* Server: did receive @i land @len bytes of @fill after the UD GRH area? */
static int slot_holds(const struct inline_env *e, const struct ibv_wc *wc, int i, int ud,
		      uint32_t len, unsigned char fill)
{
	const unsigned char *p = e->rw + i * SLOT + (ud ? GRH_BYTES : 0);

	if (wc->status != IBV_WC_SUCCESS || wc->wr_id != (uint64_t)i ||
	    wc->byte_len != len + (ud ? GRH_BYTES : 0))
		return 0;
	for (uint32_t k = 0; k < len; k++)
		if (p[k] != fill)
			return 0;
	return 1;
}

/* Server side: exactly the two good messages arrive, nothing else. */
static int inline_server(const struct inline_env *e, int ud, uint32_t max_inline)
{
	uint32_t after_len = max_inline ? max_inline : AFTER_PLAIN;
	struct ibv_wc wc[3];
	int n = 0, good;
	struct msg me = { 0 }, peer;

	while (n < 2 && poll_one(e->cq, &wc[n], 20000))
		n++;
	/* the client has finished posting: anything more would be extra */
	tcp_xfer(e->fd, &me, &peer, sizeof(me));
	if (n == 2 && poll_one(e->cq, &wc[2], 300))
		n++;
	good = n == 2 && slot_holds(e, &wc[0], 0, ud, max_inline, FILL_OK) &&
	       slot_holds(e, &wc[1], 1, ud, after_len, FILL_AFTER);
	if (!good) {
		printf("  server: %d receive completion(s):", n);
		for (int i = 0; i < n; i++)
			printf(" [wr %llu %s %u bytes]", (unsigned long long)wc[i].wr_id,
			       ibv_wc_status_str(wc[i].status), wc[i].byte_len);
		printf("\n");
	}
	return good;
}

/* One inline case, both ends in step; returns 1 on a mismatch. */
static int inline_case(struct inline_env *e, enum ibv_qp_type type, uint32_t ask)
{
	int ud = type == IBV_QPT_UD;
	struct msg me = { .psn = 0x4242 + ask }, peer;
	char why[1024] = "";
	struct ibv_ah *ah = NULL;
	struct ibv_qp *qp;
	uint32_t got;
	struct ibv_wc wc;
	int ok;

	memset(e->rw, 0, MR_LEN);
	qp = ud ? ud_create_qp(e->pd, e->cq, ask, &got) :
		  rc_create_qp_inline(e->pd, e->cq, 0, ask, &got);
	if (!e->client) {
		for (int i = 0; i < N_RECV; i++) {
			struct ibv_sge sge = { .addr = (uintptr_t)(e->rw + i * SLOT),
					       .length = SLOT, .lkey = e->mr_rw->lkey };
			struct ibv_recv_wr rwr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 };
			struct ibv_recv_wr *bad;

			if (ibv_post_recv(qp, &rwr, &bad))
				DIE("ibv_post_recv");
		}
	}
	me.qpn = qp->qp_num;
	me.len = got;
	memcpy(me.gid, e->gid.raw, 16);
	me.lid = e->lid;
	tcp_xfer(e->fd, &me, &peer, sizeof(me));
	if (ud && e->client) {
		struct ibv_ah_attr aa;

		rc_peer_av(&aa, peer.gid, peer.lid, e->gid_index);
		ah = ibv_create_ah(e->pd, &aa);
		if (!ah)
			DIE("ibv_create_ah: %s", strerror(errno));
	} else if (!ud) {
		rc_connect(qp, me.psn, peer.qpn, peer.psn, peer.gid, peer.lid, e->gid_index,
			   e->mtu, 7);
	}
	if (got > INLINE_BIG - 1)
		DIE("inline room %u leaves no oversize case below %u", got, INLINE_BIG);
	tcp_xfer(e->fd, &me, &peer, sizeof(me));	/* both ready */

	if (e->client) {
		inline_client(e, qp, ah, peer.qpn, got, why, sizeof(why));
		me.status = why[0] ? 1 : 0;
		tcp_xfer(e->fd, &me, &peer, sizeof(me));	/* done posting */
		tcp_xfer(e->fd, &me, &peer, sizeof(me));	/* the server's verdict */
		if (peer.status)
			why_add(why, sizeof(why), "the server saw other receives than the two good ones");
		ok = !why[0];
		printf("case inline %s max_inline %u (asked %u): %u accepted, %u and %u refused with EINVAL, nothing sent, the QP works after: %s%s%s\n",
		       ud ? "UD" : "RC", got, ask, got, got + 1, INLINE_BIG,
		       ok ? "ok" : "MISMATCH", ok ? "" : ": ", why);
	} else {
		ok = inline_server(e, ud, got);
		me.status = ok ? 0 : 1;
		tcp_xfer(e->fd, &me, &peer, sizeof(me));
		printf("case inline %s max_inline %u: receives %s\n", ud ? "UD" : "RC", got,
		       ok ? "as expected" : "WRONG");
	}
	while (ibv_poll_cq(e->cq, 1, &wc) > 0)
		;
	if (ibv_destroy_qp(qp))
		DIE("ibv_destroy_qp");
	if (ah && ibv_destroy_ah(ah))
		DIE("ibv_destroy_ah");
	return !ok;
}

int main(int argc, char **argv)
{
	const char *dev_name = NULL, *server = NULL;
	int gid_index = 0, port = 18800, opt, failures = 0;

	while ((opt = getopt(argc, argv, "d:g:p:")) != -1)
		if (!rc_pair_opt(opt, optarg, &dev_name, &gid_index, &port))
			return 2;
	if (optind < argc)
		server = argv[optind];
	int client = server != NULL;

	struct ibv_context *ctx = open_device_by_name(dev_name);
	struct ibv_port_attr pa;
	union ibv_gid gid;

	if (ibv_query_port(ctx, 1, &pa) || ibv_query_gid(ctx, 1, gid_index, &gid))
		DIE("open/query");
	uint16_t lid = rc_local_lid(ctx);
	struct ibv_pd *pd = ibv_alloc_pd(ctx), *pd2 = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	unsigned char *rw = aligned_alloc(4096, MR_LEN), *ro = aligned_alloc(4096, MR_LEN);
	unsigned char *other = aligned_alloc(4096, MR_LEN), *local = aligned_alloc(4096, MR_LEN);

	if (!pd || !pd2 || !cq || !rw || !ro || !other || !local)
		DIE("resources");
	/* server: three targets; client: one local buffer */
	struct ibv_mr *mr_rw = ibv_reg_mr(pd, rw, MR_LEN, IBV_ACCESS_LOCAL_WRITE |
					  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	struct ibv_mr *mr_ro = ibv_reg_mr(pd, ro, MR_LEN, IBV_ACCESS_LOCAL_WRITE |
					  IBV_ACCESS_REMOTE_READ);
	struct ibv_mr *mr_other = ibv_reg_mr(pd2, other, MR_LEN, IBV_ACCESS_LOCAL_WRITE |
					     IBV_ACCESS_REMOTE_WRITE);
	struct ibv_mr *mr_local = ibv_reg_mr(pd, local, MR_LEN, IBV_ACCESS_LOCAL_WRITE);

	if (!mr_rw || !mr_ro || !mr_other || !mr_local)
		DIE("ibv_reg_mr");
	int fd = tcp_rendezvous(server, port);

	for (unsigned int c = 0; c < NUM_CASES; c++) {
		const struct test_case *t = &cases[c];
		struct msg me = { .psn = (c * 0x10101 + 7) & 0xffffff }, peer;
		struct ibv_qp *qp;

		memset(rw, 0xaa, MR_LEN);
		memset(ro, 0xbb, MR_LEN);
		memset(other, 0xcc, MR_LEN);
		memset(local, 0x5a, MR_LEN);
		qp = rc_create_qp(pd, cq, client ? 0 : IBV_ACCESS_REMOTE_WRITE |
			     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
		me.qpn = qp->qp_num;
		memcpy(me.gid, gid.raw, 16);
		me.lid = lid;
		if (!client) {
			struct ibv_mr *m = t->target == T_RW ? mr_rw :
					   t->target == T_RO ? mr_ro : mr_other;

			me.addr = (uintptr_t)m->addr + t->offset;
			me.rkey = t->bad_rkey ? m->rkey ^ 0x5a5a00 : m->rkey;
		}
		tcp_xfer(fd, &me, &peer, sizeof(me));
		rc_connect(qp, me.psn, peer.qpn, peer.psn, peer.gid, peer.lid, gid_index,
			   pa.active_mtu,
			   client && t->no_rnr_retry ? 0 : 7);
		tcp_xfer(fd, &me, &peer, sizeof(me));	/* both ready */

		if (client) {
			struct ibv_sge sge = { .addr = (uintptr_t)local, .length = t->len,
					       .lkey = mr_local->lkey };
			struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = t->op,
						  .send_flags = IBV_SEND_SIGNALED }, *bad;
			struct ibv_wc wc;
			int n;

			if (t->op == IBV_WR_SEND) {
				/* nothing remote to name */
			} else if (t->op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
				wr.wr.atomic.remote_addr = peer.addr;
				wr.wr.atomic.rkey = peer.rkey;
				wr.wr.atomic.compare_add = 1;
			} else {
				wr.wr.rdma.remote_addr = peer.addr;
				wr.wr.rdma.rkey = peer.rkey;
			}
			if (ibv_post_send(qp, &wr, &bad))
				DIE("ibv_post_send");
			do {
				n = ibv_poll_cq(cq, 1, &wc);
			} while (n == 0);
			me.status = n < 0 ? -1 : (int32_t)wc.status;
			if (t->op == IBV_WR_RDMA_READ && wc.status == IBV_WC_SUCCESS &&
			    local[0] != 0xbb)
				me.status = -2;	/* read returned the wrong bytes */
			/* our completion to the server, then its look at memory */
			tcp_xfer(fd, &me, &peer, sizeof(me));
			tcp_xfer(fd, &me, &peer, sizeof(me));
			int ok = me.status == (int32_t)t->want && peer.status == 0;

			printf("case %u %s: completion %s, server memory %s: %s\n", c, t->name,
			       me.status >= 0 ? ibv_wc_status_str(me.status) : "bad",
			       peer.status == 0 ? "as expected" : "WRONG", ok ? "ok" : "MISMATCH");
			failures += !ok;
		} else {
			if (t->op == IBV_WR_SEND && t->recv_delay_ms >= 0) {
				struct ibv_sge sge = { .addr = (uintptr_t)rw, .length = MR_LEN,
						       .lkey = mr_rw->lkey };
				struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *bad;
				struct ibv_wc wc;
				int n, spins = 0;

				usleep(t->recv_delay_ms * 1000);
				if (ibv_post_recv(qp, &rwr, &bad))
					DIE("ibv_post_recv");
				do {
					n = ibv_poll_cq(cq, 1, &wc);
					if (!n)
						usleep(1000);
				} while (n == 0 && ++spins < 10000);
				if (n != 1 || wc.status != IBV_WC_SUCCESS || wc.byte_len != t->len)
					DIE("the late receive did not complete with the message");
			}
			/* the client's completion is in: the responder is done */
			tcp_xfer(fd, &me, &peer, sizeof(me));
			int intact_rw = pattern_intact(rw, 0xaa);
			int good = pattern_intact(ro, 0xbb) && pattern_intact(other, 0xcc);

			if (t->want == IBV_WC_SUCCESS &&
			    (t->op == IBV_WR_RDMA_WRITE || t->op == IBV_WR_SEND))
				good = good && rw[0] == 0x5a && rw[63] == 0x5a && rw[64] == 0xaa;
			else
				good = good && intact_rw;
			me.status = good ? 0 : 1;
			tcp_xfer(fd, &me, &peer, sizeof(me));
			printf("case %u %s: memory %s\n", c, t->name, good ? "as expected" : "WRONG");
			failures += !good;
		}
		/* drain anything the error flushed, then start afresh */
		struct ibv_wc wc;

		while (ibv_poll_cq(cq, 1, &wc) > 0)
			;
		if (ibv_destroy_qp(qp))
			DIE("ibv_destroy_qp");
	}
	struct inline_env env = {
		.pd = pd, .cq = cq, .mr_rw = mr_rw, .mr_local = mr_local, .rw = rw,
		.local = local, .ibdev = ibv_get_device_name(ctx->device), .gid = gid,
		.gid_index = gid_index, .fd = fd, .client = client, .mtu = pa.active_mtu,
		.lid = lid,
	};
	const enum ibv_qp_type types[] = { IBV_QPT_RC, IBV_QPT_UD };
	const uint32_t asks[] = { INLINE_ASK, 0 };
	unsigned int n_inline = 0;

	for (unsigned int t = 0; t < 2; t++) {
		for (unsigned int a = 0; a < 2; a++) {
			failures += inline_case(&env, types[t], asks[a]);
			n_inline++;
		}
	}
	close(fd);
	ibv_dereg_mr(mr_rw);
	ibv_dereg_mr(mr_ro);
	ibv_dereg_mr(mr_other);
	ibv_dereg_mr(mr_local);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd2);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	if (failures) {
		printf("FAIL: %d case(s)\n", failures);
		return 1;
	}
	printf("PASS: %zu cases\n", NUM_CASES + n_inline);
	return 0;
}
