// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * wire_victim: the target of the wire fuzz (tests/matrix/fuzz.ts).  It sets
 * up RC QPs connected to a peer that does not exist (the fuzz speaks for it
 * from the switch), one MR for them, and a UD QP with no receive posted,
 * and then waits; when told to stop it reports what the frames did: each
 * QP's state, the MR's first half (the window the fuzz may write), and
 * whether its second half or the memory around the MR (canaries, never
 * registered) changed.
 *
 *   wire_victim -d DEV -g GIDX (-r PEER_IP | -l PEER_LID) -q PEER_QPN -n NQP -f STOPFILE
 *
 * -r: RoCEv2, the peer by its IPv4 address; -l: native InfiniBand, by LID.
 * Output, one line each: "mr va 0x.. rkey 0x.. len N", "qp I qpn 0x..
 * rq_psn 0x.. sq_psn 0x..", "ud qpn 0x.. qkey 0x..", "ready"; after
 * STOPFILE appears: "qp I state S", "ud state S", "cqes N",
 * "canary_outside_changed N", "canary_inside_changed N", "window HEX",
 * "done".  QP i expects PSN rq_psn and would send from sq_psn; its peer QPN
 * is PEER_QPN + i; path MTU 1024.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rc_pair.h"

#define MR_BYTES	8192	/* first half: the window; second half: canary */
#define GUARD_BYTES	4096	/* unregistered canary on each side */
#define CANARY		0xa5
#define MAX_QPS		64
#define UD_QKEY		0x11111111u

/* The window's initial bytes: what the fuzz model starts from. */
static uint8_t window_byte(size_t i)
{
	return (uint8_t)(i * 7 + 3);
}

/* A UD QP at RTS, nothing posted on it: every datagram for it finds no receive. */
static struct ibv_qp *ud_create(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &init);

	if (!qp)
		DIE("create UD QP");
	ud_qp_to_rts(qp, UD_QKEY);
	return qp;
}

static int qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr qa;

	if (ibv_query_qp(qp, &qa, IBV_QP_STATE, &init))
		DIE("ibv_query_qp");
	return qa.qp_state;
}

static size_t changed(const uint8_t *p, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += p[i] != CANARY;
	return n;
}

int main(int argc, char **argv)
{
	const char *dev_name = NULL, *peer_ip = NULL, *stop = NULL;
	int gid_index = 0, port = 0, opt, nqp = 1, peer_lid = 0;
	uint32_t peer_qpn = 0;
	struct ibv_qp *qp[MAX_QPS], *ud;
	uint8_t peer_gid[16] = {0};
	struct ibv_context *ctx;
	struct ibv_wc wc;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct in_addr a;
	uint8_t *mem, *buf;
	int acc, cqes = 0;

	while ((opt = getopt(argc, argv, "d:g:p:r:l:q:n:f:")) != -1) {
		if (rc_pair_opt(opt, optarg, &dev_name, &gid_index, &port))
			continue;
		if (opt == 'r')
			peer_ip = optarg;
		else if (opt == 'l')
			peer_lid = atoi(optarg);
		else if (opt == 'q')
			peer_qpn = strtoul(optarg, NULL, 0);
		else if (opt == 'n')
			nqp = atoi(optarg);
		else if (opt == 'f')
			stop = optarg;
		else
			DIE("usage: wire_victim -d DEV -g GIDX (-r PEER_IP | -l PEER_LID) "
			    "-q PEER_QPN -n NQP -f STOPFILE");
	}
	if (!stop || nqp < 1 || nqp > MAX_QPS || !peer_ip == !peer_lid)
		DIE("need -r PEER_IP or -l PEER_LID, -f STOPFILE and 1 <= -n <= %d", MAX_QPS);
	if (peer_lid < 0 || peer_lid >= 0xc000)
		DIE("-l %d: not a unicast LID", peer_lid);
	if (peer_ip) {
		if (inet_pton(AF_INET, peer_ip, &a) != 1)
			DIE("-r %s: not an IPv4 address", peer_ip);
		/* the IPv4-mapped GID of the peer */
		peer_gid[10] = 0xff;
		peer_gid[11] = 0xff;
		memcpy(peer_gid + 12, &a, 4);
	}

	mem = mmap(NULL, GUARD_BYTES * 2 + MR_BYTES, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		DIE("mmap");
	memset(mem, CANARY, GUARD_BYTES * 2 + MR_BYTES);
	buf = mem + GUARD_BYTES;
	for (size_t i = 0; i < MR_BYTES / 2; i++)
		buf[i] = window_byte(i);

	ctx = open_device_by_name(dev_name);
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	if (!cq)
		DIE("PD/CQ");
	acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	mr = ibv_reg_mr(pd, buf, MR_BYTES, acc);
	if (!mr)
		DIE("ibv_reg_mr");
	printf("mr va 0x%llx rkey 0x%x len %d\n", (unsigned long long)(uintptr_t)buf,
	       mr->rkey, MR_BYTES);
	for (int i = 0; i < nqp; i++) {
		uint32_t rq_psn = (0x100000u + 0x1000u * i) & 0xffffff;
		uint32_t sq_psn = (0x700000u + 0x1000u * i) & 0xffffff;

		qp[i] = rc_create_qp(pd, cq, acc);
		rc_connect(qp[i], sq_psn, peer_qpn + i, rq_psn, peer_gid, peer_lid, gid_index,
			   IBV_MTU_1024, 7);
		printf("qp %d qpn 0x%x rq_psn 0x%x sq_psn 0x%x\n", i, qp[i]->qp_num,
		       rq_psn, sq_psn);
	}
	ud = ud_create(pd, cq);
	printf("ud qpn 0x%x qkey 0x%x\n", ud->qp_num, UD_QKEY);
	printf("ready\n");
	fflush(stdout);

	while (access(stop, F_OK))
		usleep(100000);

	for (int i = 0; i < nqp; i++)
		printf("qp %d state %d\n", i, qp_state(qp[i]));
	printf("ud state %d\n", qp_state(ud));
	while (ibv_poll_cq(cq, 1, &wc) > 0)
		cqes++;
	printf("cqes %d\n", cqes);
	printf("canary_outside_changed %zu\n",
	       changed(mem, GUARD_BYTES) + changed(buf + MR_BYTES, GUARD_BYTES));
	printf("canary_inside_changed %zu\n", changed(buf + MR_BYTES / 2, MR_BYTES / 2));
	printf("window ");
	for (size_t i = 0; i < MR_BYTES / 2; i++)
		printf("%02x", buf[i]);
	printf("\ndone\n");
	fflush(stdout);
	for (int i = 0; i < nqp; i++)
		ibv_destroy_qp(qp[i]);
	ibv_destroy_qp(ud);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}
