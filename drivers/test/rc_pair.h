/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * rc_pair.h: what the two-guest RDMA test programs share.  A TCP rendezvous
 * on which the two ends swap their connection details (and later use to
 * step through a test together), an RC QP in INIT, and its move from INIT
 * to RTS: over RoCEv2 by GID (global routing, as every RoCE connection
 * needs), over native InfiniBand by LID (a subnet-local peer, no GRH).
 */
#ifndef RC_PAIR_H
#define RC_PAIR_H

#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_util.h"

/*
 * The options both ends of every pair take: -d device, -g GID index, -p TCP
 * port.  Stores @arg when @opt is one of them and returns true; false for
 * an option the program handles itself (or refuses).
 */
static inline bool rc_pair_opt(int opt, const char *arg, const char **dev_name,
			       int *gid_index, int *port)
{
	if (opt == 'd')
		*dev_name = arg;
	else if (opt == 'g')
		*gid_index = atoi(arg);
	else if (opt == 'p')
		*port = atoi(arg);
	else
		return false;
	return true;
}

/* The client connects to @server; the server (@server NULL) accepts one. */
static inline int tcp_rendezvous(const char *server, int port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res;
	char service[16];
	int fd, lfd, one = 1;

	snprintf(service, sizeof(service), "%d", port);
	if (!server)
		hints.ai_flags = AI_PASSIVE;
	if (getaddrinfo(server, service, &hints, &res))
		DIE("getaddrinfo");
	if (server) {
		fd = socket(res->ai_family, res->ai_socktype, 0);
		if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen))
			DIE("connect: %s", strerror(errno));
	} else {
		lfd = socket(res->ai_family, res->ai_socktype, 0);
		if (lfd < 0)
			DIE("socket: %s", strerror(errno));
		setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(lfd, res->ai_addr, res->ai_addrlen) || listen(lfd, 1))
			DIE("listen: %s", strerror(errno));
		fd = accept(lfd, NULL, NULL);
		close(lfd);
		if (fd < 0)
			DIE("accept: %s", strerror(errno));
	}
	freeaddrinfo(res);
	return fd;
}

/* Send @len bytes and receive as many: a swap, and a step both ends reach. */
static inline void tcp_xfer(int fd, const void *out, void *in, size_t len)
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

/*
 * An RC QP on @cq (send and receive), a few WRs and one SGE each, room for
 * @max_inline bytes of inline data, in INIT with @access.  *@got_inline
 * (if not NULL) is the inline room the device granted.
 */
static inline struct ibv_qp *rc_create_qp_inline(struct ibv_pd *pd, struct ibv_cq *cq,
						 int access, uint32_t max_inline,
						 uint32_t *got_inline)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = max_inline },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = access };
	struct ibv_qp *qp = ibv_create_qp(pd, &init);

	if (!qp || ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				 IBV_QP_ACCESS_FLAGS))
		DIE("create QP");
	if (got_inline)
		*got_inline = init.cap.max_inline_data;
	return qp;
}

/* An RC QP on @cq (send and receive), a few WRs and one SGE each, in INIT with @access. */
static inline struct ibv_qp *rc_create_qp(struct ibv_pd *pd, struct ibv_cq *cq, int access)
{
	return rc_create_qp_inline(pd, cq, access, 0, NULL);
}

/*
 * The port's LID when it is native InfiniBand, 0 on RoCE: what an end sends
 * its peer beside its GID, and what rc_peer_av() takes.
 */
static inline uint16_t rc_local_lid(struct ibv_context *ctx)
{
	struct ibv_port_attr pa;

	if (ibv_query_port(ctx, 1, &pa))
		DIE("ibv_query_port");
	return pa.link_layer == IBV_LINK_LAYER_INFINIBAND ? pa.lid : 0;
}

/*
 * The address of a peer: by LID alone when it has one (native IB), else by
 * GID with a GRH from our @gid_index (RoCE).
 */
static inline void rc_peer_av(struct ibv_ah_attr *aa, const uint8_t *peer_gid,
			      uint16_t peer_lid, int gid_index)
{
	memset(aa, 0, sizeof(*aa));
	aa->port_num = 1;
	if (peer_lid) {
		aa->dlid = peer_lid;
		return;
	}
	aa->is_global = 1;
	aa->grh.sgid_index = gid_index;
	aa->grh.hop_limit = 64;
	memcpy(aa->grh.dgid.raw, peer_gid, 16);
}

/*
 * INIT -> RTR -> RTS towards the peer's QP (@peer_lid 0: by GID).  min_rnr_timer 20: a sender told
 * "receiver not ready" waits 10.24 ms; timeout 14 (67 ms), retry_cnt 7.
 */
static inline void rc_connect(struct ibv_qp *qp, uint32_t my_psn, uint32_t peer_qpn,
			      uint32_t peer_psn, const uint8_t *peer_gid, uint16_t peer_lid,
			      int gid_index, enum ibv_mtu mtu, int rnr_retry)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = mtu, .dest_qp_num = peer_qpn,
		.rq_psn = peer_psn, .max_dest_rd_atomic = 4, .min_rnr_timer = 20,
	};

	rc_peer_av(&a.ah_attr, peer_gid, peer_lid, gid_index);
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		DIE("RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = my_psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = rnr_retry;
	a.max_rd_atomic = 4;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
		DIE("RTS");
}

/* Poll @cq for up to about @ms milliseconds: 1 with *@wc, or 0. */
static inline int poll_one(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
{
	for (int i = 0; i <= ms; i++) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n < 0)
			DIE("ibv_poll_cq");
		if (n)
			return 1;
		usleep(1000);
	}
	return 0;
}

#endif /* RC_PAIR_H */
