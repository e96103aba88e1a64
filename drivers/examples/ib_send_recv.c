// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * ib_send_recv: two processes exchange a message with RDMA SEND/RECV over a
 * reliable connected (RC) queue pair on native InfiniBand, addressed by LID.
 *
 * Only standard libibverbs calls are used, so this runs on any InfiniBand
 * device (cnuas_ib in link_layer=ib mode, a real HCA).  Every verbs call is
 * announced as it is made, with a word on why it is needed.
 *
 *   server:  ib_send_recv [-d dev] [-p tcp_port] [-s size]
 *   client:  ib_send_recv [-d dev] [-p tcp_port] [-s size] SERVER_IP
 *
 * The port must be ACTIVE: the subnet manager has given it a LID.  Before
 * the queue pairs can talk each side must learn the other's LID, QP number
 * and first packet sequence number; we swap those over an ordinary TCP
 * connection (the management network, or loopback).  Inside one subnet no
 * GRH is needed: the address handle names the peer by LID alone.
 */
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define STEP(...) do { printf("-> " __VA_ARGS__); printf("\n"); fflush(stdout); } while (0)
#define DIE(...) do { fprintf(stderr, "FAIL: " __VA_ARGS__); fprintf(stderr, "\n"); exit(1); } while (0)

/* What each side tells the other about its queue pair. */
struct qp_info {
	uint32_t qpn;		/* queue pair number */
	uint32_t psn;		/* first packet sequence number it will send */
	uint16_t lid;		/* its port's LID, assigned by the subnet manager */
	uint16_t pad;
};

/* One TCP connection: the server listens, the client connects. */
static int tcp_connect(const char *server, int port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res;
	char service[16];
	int fd, one = 1;

	snprintf(service, sizeof(service), "%d", port);
	if (server) {
		if (getaddrinfo(server, service, &hints, &res))
			DIE("cannot resolve %s", server);
		fd = socket(res->ai_family, res->ai_socktype, 0);
		if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen))
			DIE("connect to %s:%d: %s", server, port, strerror(errno));
		freeaddrinfo(res);
		return fd;
	}
	hints.ai_flags = AI_PASSIVE;
	if (getaddrinfo(NULL, service, &hints, &res))
		DIE("getaddrinfo");
	int lfd = socket(res->ai_family, res->ai_socktype, 0);

	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (lfd < 0 || bind(lfd, res->ai_addr, res->ai_addrlen) || listen(lfd, 1))
		DIE("listen on port %d: %s", port, strerror(errno));
	freeaddrinfo(res);
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		DIE("accept: %s", strerror(errno));
	close(lfd);
	return fd;
}

static void xfer(int fd, void *out, void *in, size_t len)
{
	if (write(fd, out, len) != (ssize_t)len)
		DIE("tcp write");
	for (size_t got = 0; got < len;) {
		ssize_t n = read(fd, (char *)in + got, len - got);

		if (n <= 0)
			DIE("tcp read");
		got += n;
	}
}

/* Wait for one completion on @cq and check it is what we expect. */
static void wait_completion(struct ibv_cq *cq, enum ibv_wc_opcode want,
			    struct ibv_wc *wc)
{
	int n;

	do {
		n = ibv_poll_cq(cq, 1, wc);
	} while (n == 0);
	if (n < 0)
		DIE("ibv_poll_cq failed");
	if (wc->status != IBV_WC_SUCCESS)
		DIE("completion with status %s", ibv_wc_status_str(wc->status));
	if (wc->opcode != want)
		DIE("completion opcode %d, expected %d", wc->opcode, want);
}

int main(int argc, char **argv)
{
	const char *dev_name = NULL, *server = NULL;
	int port = 18610, opt;
	size_t size = 4096;

	while ((opt = getopt(argc, argv, "d:p:s:")) != -1) {
		switch (opt) {
		case 'd':
			dev_name = optarg;
			break;
		case 'p':
			port = atoi(optarg);
			break;
		case 's':
			size = strtoul(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr, "usage: %s [-d dev] [-p port] [-s size] [server]\n",
				argv[0]);
			return 2;
		}
	}
	if (optind < argc)
		server = argv[optind];
	/* given a server address we connect to it, else we wait for a peer */
	int client = server != NULL;

	if (size < 16)
		size = 16;
	printf("ib_send_recv as %s\n", client ? "client" : "server");

	/* 1. Find the device.  Every RDMA device in the system is listed. */
	STEP("ibv_get_device_list: which RDMA devices exist");
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device *device = NULL;

	if (!list || !list[0])
		DIE("no RDMA devices");
	for (int i = 0; list[i]; i++)
		if (!dev_name || !strcmp(ibv_get_device_name(list[i]), dev_name)) {
			device = list[i];
			break;
		}
	if (!device)
		DIE("device %s not found", dev_name);

	/* 2. Open it: a context is our handle on the device. */
	STEP("ibv_open_device(%s): a context for all further calls", ibv_get_device_name(device));
	struct ibv_context *ctx = ibv_open_device(device);

	if (!ctx)
		DIE("ibv_open_device");

	/*
	 * 3. The port: on InfiniBand it must be ACTIVE, which means the subnet
	 * manager found it and gave it a LID, our address on the fabric.
	 */
	struct ibv_port_attr port_attr;

	STEP("ibv_query_port(1): state, link layer, LID, active MTU");
	if (ibv_query_port(ctx, 1, &port_attr))
		DIE("ibv_query_port");
	printf("   link layer %s, state %s, LID %u, SM LID %u, active MTU %d\n",
	       port_attr.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand",
	       ibv_port_state_str(port_attr.state), port_attr.lid, port_attr.sm_lid,
	       128 << port_attr.active_mtu);
	if (port_attr.link_layer == IBV_LINK_LAYER_ETHERNET)
		DIE("port 1 is Ethernet (RoCE): use roce_send_recv");
	if (port_attr.state != IBV_PORT_ACTIVE || port_attr.lid == 0)
		DIE("port 1 is not ACTIVE with a LID: is a subnet manager running?");

	/* 5. A protection domain groups the objects allowed to work together. */
	STEP("ibv_alloc_pd: a protection domain for the MR and the QP");
	struct ibv_pd *pd = ibv_alloc_pd(ctx);

	if (!pd)
		DIE("ibv_alloc_pd");

	/*
	 * 6. Register the buffer: pins it and gives it a local key.  RECV
	 * writes into it, so it needs local write access.
	 */
	char *buf = calloc(1, size);

	STEP("ibv_reg_mr(%zu bytes, LOCAL_WRITE): the device may use this memory", size);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, size, IBV_ACCESS_LOCAL_WRITE);

	if (!buf || !mr)
		DIE("ibv_reg_mr");

	/* 7. A completion queue: where finished work requests are reported. */
	STEP("ibv_create_cq(16 entries)");
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);

	if (!cq)
		DIE("ibv_create_cq");

	/* 8. The queue pair: a send queue and a receive queue, connected (RC). */
	struct ibv_qp_init_attr qp_init = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	STEP("ibv_create_qp(RC)");
	struct ibv_qp *qp = ibv_create_qp(pd, &qp_init);

	if (!qp)
		DIE("ibv_create_qp");

	/* 9. RESET -> INIT: bind the QP to port 1 and say what peers may do. */
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = 1,
		.qp_access_flags = 0,	/* SEND/RECV needs no remote access */
	};

	STEP("ibv_modify_qp(INIT)");
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		DIE("modify to INIT");

	/*
	 * 10. Post the receive now, before the peer can send: a SEND that
	 * finds no receive waiting gets an RNR NAK and must be retried.
	 */
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = size, .lkey = mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *bad_rwr;

	STEP("ibv_post_recv: a buffer for the message we will receive");
	if (ibv_post_recv(qp, &rwr, &bad_rwr))
		DIE("ibv_post_recv");

	/* 11. Swap LID, QP number and first PSN with the peer over TCP. */
	struct qp_info me = { .qpn = qp->qp_num, .psn = (uint32_t)getpid() & 0xffffff,
			      .lid = port_attr.lid }, peer;

	STEP("exchange LID, QP number and PSN over TCP port %d", port);
	int fd = tcp_connect(server, port);

	xfer(fd, &me, &peer, sizeof(me));
	if (peer.lid == 0 || peer.lid >= 0xc000)
		DIE("peer sent LID %u, which is no unicast LID", peer.lid);
	printf("   local LID %u QP %u, remote LID %u QP %u\n", me.lid, me.qpn, peer.lid, peer.qpn);

	/*
	 * 12. INIT -> RTR (ready to receive): where the peer is.  Inside one
	 * subnet the address is local: the peer's LID, service level 0, no GRH
	 * (is_global 0); the switches forward on the LID.
	 */
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	attr.path_mtu = port_attr.active_mtu;
	attr.dest_qp_num = peer.qpn;
	attr.rq_psn = peer.psn;
	attr.max_dest_rd_atomic = 1;
	attr.min_rnr_timer = 12;
	attr.ah_attr.is_global = 0;
	attr.ah_attr.dlid = peer.lid;
	attr.ah_attr.sl = 0;
	attr.ah_attr.src_path_bits = 0;
	attr.ah_attr.port_num = 1;
	STEP("ibv_modify_qp(RTR): path MTU, remote QP, remote LID %u", peer.lid);
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		DIE("modify to RTR");

	/* 13. RTR -> RTS (ready to send): timeouts and retries for our sends. */
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = me.psn;
	attr.timeout = 14;	/* 4.096 us * 2^14 = 67 ms before a retry */
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;	/* 7: retry for ever after an RNR NAK */
	attr.max_rd_atomic = 1;
	STEP("ibv_modify_qp(RTS): timeout 14, retry_cnt 7, rnr_retry 7");
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
		DIE("modify to RTS");

	/* Both sides are connected and have a receive posted: go. */
	char sync = 'r', peer_sync;

	xfer(fd, &sync, &peer_sync, 1);

	struct ibv_wc wc;
	struct ibv_send_wr swr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad_swr;

	if (client) {
		/* 14. The client sends first: fill the buffer, post the SEND. */
		for (size_t i = 0; i < size; i++)
			buf[i] = (char)(i * 7 + 1);
		STEP("ibv_post_send(SEND, %zu bytes)", size);
		if (ibv_post_send(qp, &swr, &bad_swr))
			DIE("ibv_post_send");
		STEP("ibv_poll_cq: the SEND completes once the server acknowledged it");
		wait_completion(cq, IBV_WC_SEND, &wc);
		STEP("ibv_poll_cq: the server's reply lands in our receive");
		wait_completion(cq, IBV_WC_RECV, &wc);
		for (size_t i = 0; i < size; i++)
			if (buf[i] != (char)(i * 3 + 5))
				DIE("reply byte %zu is %d", i, buf[i]);
	} else {
		STEP("ibv_poll_cq: wait for the client's message");
		wait_completion(cq, IBV_WC_RECV, &wc);
		if (wc.byte_len != size)
			DIE("received %u bytes, expected %zu", wc.byte_len, size);
		for (size_t i = 0; i < size; i++)
			if (buf[i] != (char)(i * 7 + 1))
				DIE("byte %zu is %d", i, buf[i]);
		printf("   %u bytes from QP %u, content checked\n", wc.byte_len, wc.src_qp);
		/* The receive was used up: the reply's buffer is the same memory. */
		for (size_t i = 0; i < size; i++)
			buf[i] = (char)(i * 3 + 5);
		STEP("ibv_post_send(SEND): the reply");
		if (ibv_post_send(qp, &swr, &bad_swr))
			DIE("ibv_post_send");
		wait_completion(cq, IBV_WC_SEND, &wc);
	}
	xfer(fd, &sync, &peer_sync, 1);

	/* 15. Tear down in reverse order of creation. */
	STEP("ibv_destroy_qp, ibv_destroy_cq, ibv_dereg_mr, ibv_dealloc_pd, ibv_close_device");
	if (ibv_destroy_qp(qp) || ibv_destroy_cq(cq) || ibv_dereg_mr(mr) ||
	    ibv_dealloc_pd(pd) || ibv_close_device(ctx))
		DIE("teardown");
	ibv_free_device_list(list);
	free(buf);
	close(fd);
	printf("PASS: %zu bytes each way over RC SEND/RECV, LID %u <-> LID %u\n", size, me.lid,
	       peer.lid);
	return 0;
}
