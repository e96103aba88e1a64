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
 *   server:  roce_security -d dev -g gid_index -p tcp_port
 *   client:  roce_security -d dev -g gid_index -p tcp_port SERVER_IP
 *
 * Prints one line per case and PASS at the end; exits 1 on any mismatch.
 */
#include <getopt.h>

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

int main(int argc, char **argv)
{
	const char *dev_name = NULL, *server = NULL;
	int gid_index = 0, port = 18800, opt, failures = 0;

	while ((opt = getopt(argc, argv, "d:g:p:")) != -1) {
		if (opt == 'd')
			dev_name = optarg;
		else if (opt == 'g')
			gid_index = atoi(optarg);
		else if (opt == 'p')
			port = atoi(optarg);
		else
			return 2;
	}
	if (optind < argc)
		server = argv[optind];
	int client = server != NULL;

	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device *dev = NULL;

	for (int i = 0; list && list[i]; i++)
		if (!dev_name || !strcmp(ibv_get_device_name(list[i]), dev_name))
			dev = list[i];
	if (!dev)
		DIE("no device %s", dev_name ? dev_name : "");
	struct ibv_context *ctx = ibv_open_device(dev);
	struct ibv_port_attr pa;
	union ibv_gid gid;

	if (!ctx || ibv_query_port(ctx, 1, &pa) || ibv_query_gid(ctx, 1, gid_index, &gid))
		DIE("open/query");
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
		if (!client) {
			struct ibv_mr *m = t->target == T_RW ? mr_rw :
					   t->target == T_RO ? mr_ro : mr_other;

			me.addr = (uintptr_t)m->addr + t->offset;
			me.rkey = t->bad_rkey ? m->rkey ^ 0x5a5a00 : m->rkey;
		}
		tcp_xfer(fd, &me, &peer, sizeof(me));
		rc_connect(qp, me.psn, peer.qpn, peer.psn, peer.gid, gid_index, pa.active_mtu,
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
	close(fd);
	ibv_dereg_mr(mr_rw);
	ibv_dereg_mr(mr_ro);
	ibv_dereg_mr(mr_other);
	ibv_dereg_mr(mr_local);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd2);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	if (failures) {
		printf("FAIL: %d case(s)\n", failures);
		return 1;
	}
	printf("PASS: %zu cases\n", NUM_CASES);
	return 0;
}
