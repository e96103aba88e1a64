// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * mcast_fanout: RoCEv2 multicast fan-out between two guests.  The client
 * has one UD QP and sends @count datagrams of @size bytes to a multicast
 * group (QPN 0xFFFFFF, the group's Q_Key), as fast as its send queue takes
 * them; the server has @members UD QPs attached to the group, each with a
 * receive queue of its own on one shared CQ, and reposts each receive as
 * it completes.
 *
 * Every datagram carries its sequence number, the sender's QPN and bytes
 * derived from the sequence number: a member checks each one it receives
 * (success, IBV_WC_GRH, byte_len 40 + size, src_qp the sender, the bytes)
 * and marks the sequence number; a wrong datagram or the same one twice is
 * a failure, a datagram that never arrives is a drop (UD has no recovery:
 * a member whose receive queue is empty loses what comes), and one that
 * arrives after a later one is counted as out of order.
 *
 * The server stops when every member has every datagram, or when nothing
 * has arrived for QUIET_MS after the first; then the client tells what it
 * sent and how long it took.  Rates: the sender's is datagrams posted per
 * second from its first post to its last completion; a member's is the
 * datagrams it received per second of the receive window (the first
 * datagram any member received to the last), the total the sum of them.
 *
 *   server:  mcast_fanout -d dev -g gid_index -p tcp_port -s -m members
 *   client:  mcast_fanout -d dev -g gid_index -p tcp_port [-n count]
 *                         [-S size] [-b batch] SERVER_IP
 *   both:    [-G group_ipv4] (default 239.7.8.9)
 *
 * -J local_ipv4 (server) also joins the group as an IPv4 host on the
 * interface of that address (IP_ADD_MEMBERSHIP): rdma_rxe receives RoCEv2
 * through the kernel's UDP socket, and the IP layer drops a multicast
 * datagram of a group the host has not joined; rxe's attach only adds the
 * link-layer address.  cnuas_ib takes RoCEv2 frames in the driver and
 * needs no join.
 *
 * The server prints key=value lines and PASS; either end exits 1 on a
 * failure (a member that received nothing is one).
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <time.h>

#include "rc_pair.h"
#include "verbs_util.h"

#define GRH_LEN		40
#define MAX_MEMBERS	16
#define RQ_DEPTH	512
#define SQ_DEPTH	256
#define SIGNAL_EVERY	16
#define MC_QPN		0xFFFFFFU
#define MC_QKEY		0x4d430001U
#define QUIET_MS	3000
#define FIRST_WAIT_MS	60000
#define HDR		8	/* sequence number, sender QPN */

/* What the server tells the client at the start, and the client the server. */
struct hello {
	uint32_t members, size, count, qpn_s;
};

/* What the client tells the server at the end. */
struct tally {
	uint64_t sent, send_ns;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static unsigned char pattern(uint32_t seq, uint32_t i)
{
	return (unsigned char)(seq * 31 + i * 7 + 3);
}

static void fill(unsigned char *p, uint32_t seq, uint32_t qpn, uint32_t size)
{
	memcpy(p, &seq, 4);
	memcpy(p + 4, &qpn, 4);
	for (uint32_t i = HDR; i < size; i++)
		p[i] = pattern(seq, i);
}

/* A UD QP with the group's Q_Key, in RTS. */
static struct ibv_qp *ud_qp(struct ibv_pd *pd, struct ibv_cq *cq, int send_wr, int recv_wr)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = send_wr, .max_recv_wr = recv_wr, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &init);

	if (!qp)
		DIE("create UD QP (%d send, %d receive WRs): %s", send_wr, recv_wr,
		    strerror(errno));
	ud_qp_to_rts(qp, MC_QKEY);
	return qp;
}

/* ---- the client: one sender ---- */

/* Retire completions; returns the number of sends known complete. */
static uint64_t reap(struct ibv_cq *cq, uint64_t done)
{
	struct ibv_wc wc[16];
	int n = ibv_poll_cq(cq, 16, wc);

	if (n < 0)
		DIE("ibv_poll_cq: %d", n);
	for (int i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS)
			DIE("send %llu: %s", (unsigned long long)wc[i].wr_id,
			    ibv_wc_status_str(wc[i].status));
		/* a send queue completes in order: everything up to it is done */
		if (wc[i].wr_id + 1 > done)
			done = wc[i].wr_id + 1;
	}
	return done;
}

static void client(struct ibv_context *ctx, int gid_index, int fd, const uint8_t *group,
		   uint32_t count, uint32_t size, int batch)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, SQ_DEPTH * 2, NULL, NULL, 0);
	unsigned char *buf = aligned_alloc(4096, (size_t)SQ_DEPTH * size + 4096);
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1,
				  .grh = { .sgid_index = gid_index, .hop_limit = 64 } };
	struct ibv_send_wr wr[16], *bad;
	struct ibv_sge sge[16];
	struct hello me = { .size = size, .count = count }, peer;
	struct tally t = { 0 }, ack;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	uint64_t posted = 0, done = 0, t0, deadline;
	int n, i, ret;

	if (!pd || !cq || !buf)
		DIE("PD, CQ or buffer: %s", strerror(errno));
	mr = ibv_reg_mr(pd, buf, (size_t)SQ_DEPTH * size, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		DIE("ibv_reg_mr: %s", strerror(errno));
	qp = ud_qp(pd, cq, SQ_DEPTH, 1);
	memcpy(aa.grh.dgid.raw, group, 16);
	ah = ibv_create_ah(pd, &aa);
	if (!ah)
		DIE("ibv_create_ah to the group: %s", strerror(errno));
	me.qpn_s = qp->qp_num;
	tcp_xfer(fd, &me, &peer, sizeof(me));
	/* the members are attached and their receives posted */
	tcp_xfer(fd, &me, &peer, sizeof(me));

	t0 = now_ns();
	while (posted < count) {
		done = reap(cq, done);
		n = SQ_DEPTH - (int)(posted - done);
		if (n > batch)
			n = batch;
		if ((uint64_t)n > count - posted)
			n = count - posted;
		if (n <= 0)
			continue;
		for (i = 0; i < n; i++) {
			uint64_t seq = posted + i;
			unsigned char *p = buf + (seq % SQ_DEPTH) * size;

			fill(p, seq, qp->qp_num, size);
			sge[i] = (struct ibv_sge){ .addr = (uintptr_t)p, .length = size,
						   .lkey = mr->lkey };
			wr[i] = (struct ibv_send_wr){
				.wr_id = seq, .sg_list = &sge[i], .num_sge = 1,
				.opcode = IBV_WR_SEND, .next = i + 1 < n ? &wr[i + 1] : NULL,
				.send_flags = (seq + 1) % SIGNAL_EVERY == 0 || seq + 1 == count ?
					      IBV_SEND_SIGNALED : 0,
				.wr.ud = { .ah = ah, .remote_qpn = MC_QPN, .remote_qkey = MC_QKEY },
			};
		}
		ret = ibv_post_send(qp, wr, &bad);
		if (ret)
			DIE("ibv_post_send at %llu: %s", (unsigned long long)posted, strerror(ret));
		posted += n;
	}
	deadline = now_ns() + 20000000000ull;
	while (done < count) {
		done = reap(cq, done);
		if (now_ns() > deadline)
			DIE("%llu of %u sends completed", (unsigned long long)done, count);
	}
	t.sent = posted;
	t.send_ns = now_ns() - t0;
	/* the tally, once the members are done */
	tcp_xfer(fd, &t, &ack, sizeof(t));
	printf("sent=%llu send_ns=%llu\n", (unsigned long long)t.sent,
	       (unsigned long long)t.send_ns);
	ibv_destroy_ah(ah);
	ibv_destroy_qp(qp);
}

/* ---- the server: the members ---- */

struct member {
	struct ibv_qp *qp;
	uint8_t *seen;			/* one byte per sequence number */
	uint64_t received, out_of_order, last_ns;
	int64_t last_seq;
};

static void post_slot(struct member *m, int k, int slot, unsigned char *buf, uint32_t len,
		      uint32_t lkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len, .lkey = lkey };
	struct ibv_recv_wr wr = { .wr_id = (uint64_t)k << 16 | slot, .sg_list = &sge,
				  .num_sge = 1 }, *bad;
	int ret = ibv_post_recv(m->qp, &wr, &bad);

	if (ret)
		DIE("member %d: ibv_post_recv: %s", k, strerror(ret));
}

static int server(struct ibv_context *ctx, int fd, const uint8_t *group, int members)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, members * RQ_DEPTH, NULL, NULL, 0);
	struct member m[MAX_MEMBERS] = { 0 };
	struct hello me = { .members = members }, peer;
	struct ibv_wc wc[32];
	struct tally t, none = { 0 };
	uint64_t first_ns = 0, last_any = 0, bad = 0, dup = 0, total = 0, start, now, slot_len;
	unsigned char *buf;
	struct ibv_mr *mr;
	int k, i, n, failed = 0;

	if (!pd || !cq)
		DIE("PD or CQ: %s", strerror(errno));
	for (k = 0; k < members; k++)
		m[k].qp = ud_qp(pd, cq, 1, RQ_DEPTH);
	tcp_xfer(fd, &me, &peer, sizeof(me));
	if (peer.size < HDR || peer.count == 0)
		DIE("the client sends %u datagrams of %u bytes", peer.count, peer.size);
	slot_len = GRH_LEN + peer.size;
	buf = aligned_alloc(4096, (members * RQ_DEPTH * slot_len + 4095) / 4096 * 4096);
	mr = buf ? ibv_reg_mr(pd, buf, members * RQ_DEPTH * slot_len,
			      IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!mr)
		DIE("receive buffers: %s", strerror(errno));
	for (k = 0; k < members; k++) {
		m[k].seen = calloc(peer.count, 1);
		m[k].last_seq = -1;
		if (!m[k].seen)
			DIE("calloc");
		for (i = 0; i < RQ_DEPTH; i++)
			post_slot(&m[k], k, i, buf + (k * RQ_DEPTH + i) * slot_len, slot_len,
				  mr->lkey);
		if (ibv_attach_mcast(m[k].qp, (const union ibv_gid *)group, 0))
			DIE("member %d: ibv_attach_mcast: %s", k, strerror(errno));
	}
	/* the members are ready: the client may send */
	tcp_xfer(fd, &me, &peer, sizeof(me));

	start = now_ns();
	while (total < (uint64_t)members * peer.count) {
		n = ibv_poll_cq(cq, 32, wc);
		if (n < 0)
			DIE("ibv_poll_cq: %d", n);
		if (!n) {
			now = now_ns();
			if (first_ns ? now - last_any > QUIET_MS * 1000000ull
				     : now - start > FIRST_WAIT_MS * 1000000ull)
				break;
			continue;
		}
		now = now_ns();
		if (!first_ns)
			first_ns = now;
		last_any = now;
		for (i = 0; i < n; i++) {
			int kk = wc[i].wr_id >> 16, slot = wc[i].wr_id & 0xffff;
			unsigned char *p = buf + (kk * RQ_DEPTH + slot) * slot_len;
			unsigned char *d = p + GRH_LEN;
			struct member *mm = &m[kk];
			uint32_t seq, qpn, j;

			memcpy(&seq, d, 4);
			memcpy(&qpn, d + 4, 4);
			if (wc[i].status != IBV_WC_SUCCESS || !(wc[i].wc_flags & IBV_WC_GRH) ||
			    wc[i].byte_len != slot_len || wc[i].src_qp != peer.qpn_s ||
			    qpn != peer.qpn_s || seq >= peer.count) {
				if (bad++ < 5)
					fprintf(stderr, "member %d: %s flags 0x%x byte_len %u "
						"src_qp 0x%x seq %u qpn 0x%x\n", kk,
						ibv_wc_status_str(wc[i].status), wc[i].wc_flags,
						wc[i].byte_len, wc[i].src_qp, seq, qpn);
				if (wc[i].status != IBV_WC_SUCCESS)
					DIE("member %d: receive failed", kk);
			} else {
				for (j = HDR; j < peer.size && d[j] == pattern(seq, j); j++)
					;
				if (j < peer.size) {
					if (bad++ < 5)
						fprintf(stderr, "member %d: datagram %u wrong at "
							"byte %u\n", kk, seq, j);
				} else if (mm->seen[seq]) {
					dup++;
				} else {
					mm->seen[seq] = 1;
					mm->received++;
					total++;
					if ((int64_t)seq < mm->last_seq)
						mm->out_of_order++;
					else
						mm->last_seq = seq;
					mm->last_ns = now;
				}
			}
			memset(p, 0, slot_len);
			post_slot(mm, kk, slot, p, slot_len, mr->lkey);
		}
	}
	/* what the client sent */
	tcp_xfer(fd, &none, &t, sizeof(t));

	double window = last_any > first_ns ? (double)(last_any - first_ns) / 1e9 : 0;

	printf("members=%d size=%u count=%u\n", members, peer.size, peer.count);
	printf("sender_sent=%llu sender_ns=%llu\n", (unsigned long long)t.sent,
	       (unsigned long long)t.send_ns);
	printf("sender_frames_per_sec=%.0f\n", t.send_ns ? t.sent * 1e9 / t.send_ns : 0);
	printf("window_ns=%llu\n", (unsigned long long)(last_any - first_ns));
	for (k = 0; k < members; k++) {
		printf("member%d_received=%llu member%d_dropped=%llu member%d_out_of_order=%llu\n",
		       k, (unsigned long long)m[k].received, k,
		       (unsigned long long)(peer.count - m[k].received), k,
		       (unsigned long long)m[k].out_of_order);
		printf("member%d_frames_per_sec=%.0f\n", k,
		       window > 0 ? m[k].received / window : 0);
		if (!m[k].received) {
			fprintf(stderr, "FAIL: member %d received nothing\n", k);
			failed = 1;
		}
		ibv_detach_mcast(m[k].qp, (const union ibv_gid *)group, 0);
		ibv_destroy_qp(m[k].qp);
	}
	printf("total_received=%llu total_dropped=%llu\n", (unsigned long long)total,
	       (unsigned long long)((uint64_t)members * peer.count - total));
	printf("total_frames_per_sec=%.0f\n", window > 0 ? total / window : 0);
	printf("bad=%llu duplicates=%llu\n", (unsigned long long)bad, (unsigned long long)dup);
	if (t.sent != peer.count) {
		fprintf(stderr, "FAIL: the client sent %llu of %u\n", (unsigned long long)t.sent,
			peer.count);
		failed = 1;
	}
	if (bad || dup) {
		fprintf(stderr, "FAIL: %llu wrong datagrams, %llu duplicates\n",
			(unsigned long long)bad, (unsigned long long)dup);
		failed = 1;
	}
	if (!failed)
		printf("PASS\n");
	return failed;
}

int main(int argc, char **argv)
{
	const char *dev_name = NULL, *group_ip = "239.7.8.9", *server_ip = NULL, *join = NULL;
	int gid_index = 0, port = 18840, opt, listen_mode = 0, members = 1, batch = 16;
	uint32_t count = 20000, size = 64;
	uint8_t group[16] = { [10] = 0xff, [11] = 0xff };
	struct ibv_port_attr pa;
	struct ibv_context *ctx;
	struct in_addr ip;
	int fd, ret = 0, ipfd = -1;

	while ((opt = getopt(argc, argv, "d:g:p:sm:n:S:b:G:J:")) != -1) {
		if (opt == 's')
			listen_mode = 1;
		else if (opt == 'm')
			members = atoi(optarg);
		else if (opt == 'n')
			count = strtoul(optarg, NULL, 0);
		else if (opt == 'S')
			size = strtoul(optarg, NULL, 0);
		else if (opt == 'b')
			batch = atoi(optarg);
		else if (opt == 'G')
			group_ip = optarg;
		else if (opt == 'J')
			join = optarg;
		else if (!rc_pair_opt(opt, optarg, &dev_name, &gid_index, &port))
			return 2;
	}
	if (optind < argc)
		server_ip = argv[optind];
	if (!server_ip == !listen_mode) {
		fprintf(stderr, "usage: mcast_fanout -d dev -g gid_index -p port "
			"(-s -m members [-J local_ip] | [-n count] [-S size] [-b batch] SERVER_IP) "
			"[-G group]\n");
		return 2;
	}
	if (members < 1 || members > MAX_MEMBERS)
		DIE("-m must be 1..%d", MAX_MEMBERS);
	if (batch < 1 || batch > 16)
		DIE("-b must be 1..16");
	if (inet_pton(AF_INET, group_ip, &ip) != 1 || (ntohl(ip.s_addr) >> 28) != 0xe)
		DIE("-G %s is not an IPv4 multicast address", group_ip);
	memcpy(group + 12, &ip.s_addr, 4);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (join) {
		struct ip_mreq mr = { .imr_multiaddr = ip };

		if (inet_pton(AF_INET, join, &mr.imr_interface) != 1)
			DIE("-J %s is not an IPv4 address", join);
		ipfd = socket(AF_INET, SOCK_DGRAM, 0);
		if (ipfd < 0 || setsockopt(ipfd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof(mr)))
			DIE("join %s on %s: %s", group_ip, join, strerror(errno));
	}

	ctx = open_device_by_name(dev_name);
	if (ibv_query_port(ctx, 1, &pa))
		DIE("ibv_query_port: %s", strerror(errno));
	if (size < HDR || size > (128u << pa.active_mtu))
		DIE("-S must be %d..%u (the path MTU)", HDR, 128u << pa.active_mtu);
	fd = tcp_rendezvous(server_ip, port);
	if (listen_mode)
		ret = server(ctx, fd, group, members);
	else
		client(ctx, gid_index, fd, group, count, size, batch);
	close(fd);
	if (ipfd >= 0)
		close(ipfd);
	ibv_close_device(ctx);
	return ret;
}
