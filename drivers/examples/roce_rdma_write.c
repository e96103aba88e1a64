// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * roce_rdma_write: one-sided RDMA.  The client writes straight into the
 * server's memory with RDMA WRITE over a reliable connected (RC) queue pair
 * on RoCEv2; the server posts nothing and sees no completion: its CPU takes
 * no part in the transfer.  It only learns over TCP that the data is there.
 *
 * Only standard libibverbs calls are used, so this runs on any RDMA device
 * (cnuas_ib, rdma_rxe, a real RoCE NIC).  Every verbs call is announced as
 * it is made, with a word on why it is needed.
 *
 *   server:  roce_rdma_write [-d dev] [-g gid_index] [-p tcp_port] [-s size]
 *   client:  roce_rdma_write [-d dev] [-g gid_index] [-p tcp_port] [-s size] SERVER_IP
 *
 * RDMA itself has no way to find a peer: before the queue pairs can talk,
 * each side must learn the other's QP number, first packet sequence number
 * and GID, and the writer must learn where to write: the server's buffer
 * address and the remote key (rkey) that grants access to it.  We swap
 * those over an ordinary TCP connection.
 */
#include <arpa/inet.h>
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
	uint8_t gid[16];	/* its GID: for RoCEv2, its IP address */
	uint64_t addr;		/* server: its buffer's address */
	uint32_t rkey;		/* server: the key that lets us write there */
	uint32_t len;		/* server: the buffer's length */
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

int main(int argc, char **argv)
{
	const char *dev_name = NULL, *server = NULL;
	int gid_index = 0, port = 18600, opt;
	size_t size = 4096;

	while ((opt = getopt(argc, argv, "d:g:p:s:")) != -1) {
		switch (opt) {
		case 'd':
			dev_name = optarg;
			break;
		case 'g':
			gid_index = atoi(optarg);
			break;
		case 'p':
			port = atoi(optarg);
			break;
		case 's':
			size = strtoul(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr, "usage: %s [-d dev] [-g gid] [-p port] [-s size] [server]\n",
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
	printf("roce_rdma_write as %s\n", client ? "client" : "server");

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

	/* 3. The port: its MTU bounds the path MTU we may use. */
	struct ibv_port_attr port_attr;

	STEP("ibv_query_port(1): state, link layer, active MTU");
	if (ibv_query_port(ctx, 1, &port_attr))
		DIE("ibv_query_port");
	printf("   link layer %s, active MTU %d\n",
	       port_attr.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand",
	       128 << port_attr.active_mtu);

	/* 4. Our GID: on RoCEv2 it is our IP address, and the peer needs it. */
	union ibv_gid gid;

	STEP("ibv_query_gid(port 1, index %d): our address on the fabric", gid_index);
	if (ibv_query_gid(ctx, 1, gid_index, &gid))
		DIE("ibv_query_gid");

	/* 5. A protection domain groups the objects allowed to work together. */
	STEP("ibv_alloc_pd: a protection domain for the MR and the QP");
	struct ibv_pd *pd = ibv_alloc_pd(ctx);

	if (!pd)
		DIE("ibv_alloc_pd");

	/*
	 * 6. Register the buffer: pins it and gives it keys.  The server's
	 * buffer is the target of the peer's writes, so it needs
	 * REMOTE_WRITE (which in turn needs LOCAL_WRITE); the client's is
	 * only read by its own device.
	 */
	char *buf = calloc(1, size);
	int access = client ? 0 : IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;

	STEP("ibv_reg_mr(%zu bytes, %s)", size,
	     client ? "local read only" : "LOCAL_WRITE | REMOTE_WRITE");
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, size, access);

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
		/* the server's QP must let the peer write; the client's none */
		.qp_access_flags = client ? 0 : IBV_ACCESS_REMOTE_WRITE,
	};

	STEP("ibv_modify_qp(INIT)");
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		DIE("modify to INIT");

	/* 10. No receive to post: an RDMA WRITE consumes none. */
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = size, .lkey = mr->lkey };

	/*
	 * 11. Swap QP number, first PSN and GID with the peer over TCP; the
	 * server adds where to write (address, rkey, length).
	 */
	struct qp_info me = { .qpn = qp->qp_num, .psn = (uint32_t)getpid() & 0xffffff }, peer;

	memcpy(me.gid, gid.raw, 16);
	if (!client) {
		me.addr = (uintptr_t)buf;
		me.rkey = mr->rkey;
		me.len = size;
	}
	STEP("exchange QP number, PSN, GID (and the server's address and rkey) over TCP port %d",
	     port);
	int fd = tcp_connect(server, port);

	xfer(fd, &me, &peer, sizeof(me));
	char gid_text[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET6, peer.gid, gid_text, sizeof(gid_text));
	printf("   local QP %u, remote QP %u at %s\n", me.qpn, peer.qpn, gid_text);

	/*
	 * 12. INIT -> RTR (ready to receive): where the peer is.  On RoCE the
	 * address is global: a GRH with the peer's GID, our GID index as the
	 * source.  The driver resolves the peer's MAC from its IP.
	 */
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	attr.path_mtu = port_attr.active_mtu;
	attr.dest_qp_num = peer.qpn;
	attr.rq_psn = peer.psn;
	attr.max_dest_rd_atomic = 1;
	attr.min_rnr_timer = 12;
	attr.ah_attr.is_global = 1;
	memcpy(attr.ah_attr.grh.dgid.raw, peer.gid, 16);
	attr.ah_attr.grh.sgid_index = gid_index;
	attr.ah_attr.grh.hop_limit = 64;
	attr.ah_attr.port_num = 1;
	STEP("ibv_modify_qp(RTR): path MTU, remote QP, remote GID");
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

	/* Both sides are connected: go. */
	char sync = 'r', peer_sync;

	xfer(fd, &sync, &peer_sync, 1);

	struct ibv_wc wc;
	int n;

	if (client) {
		/* 14. Fill our buffer and write it into the server's, one-sided. */
		struct ibv_send_wr wr = {
			.wr_id = 2, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = peer.addr, .rkey = peer.rkey },
		}, *bad_wr;

		if (peer.len < size)
			DIE("server buffer of %u bytes is smaller than %zu", peer.len, size);
		for (size_t i = 0; i < size; i++)
			buf[i] = (char)(i * 11 + 3);
		STEP("ibv_post_send(RDMA_WRITE, %zu bytes to 0x%llx, rkey 0x%x)", size,
		     (unsigned long long)peer.addr, peer.rkey);
		if (ibv_post_send(qp, &wr, &bad_wr))
			DIE("ibv_post_send");
		/* The completion means the server's device acknowledged every byte. */
		STEP("ibv_poll_cq: the write is complete");
		do {
			n = ibv_poll_cq(cq, 1, &wc);
		} while (n == 0);
		if (n < 0 || wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RDMA_WRITE)
			DIE("write completion: %s", ibv_wc_status_str(wc.status));
		STEP("tell the server over TCP that the data is in place");
		xfer(fd, &sync, &peer_sync, 1);
	} else {
		STEP("wait on TCP: the client writes into our buffer by itself");
		xfer(fd, &sync, &peer_sync, 1);
		/* Nothing was posted here, so nothing completes here. */
		if (ibv_poll_cq(cq, 1, &wc) != 0)
			DIE("a completion on the passive side of an RDMA WRITE");
		for (size_t i = 0; i < size; i++)
			if (buf[i] != (char)(i * 11 + 3))
				DIE("byte %zu is %d", i, buf[i]);
		printf("   %zu bytes arrived with no receive posted and no completion\n", size);
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
	printf("PASS: %zu bytes by one-sided RDMA WRITE\n", size);
	return 0;
}
