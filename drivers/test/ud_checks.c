// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * ud_checks: user UD QPs between two guests over RoCEv2 IPv4, against the
 * contract of docs/devices.md ("cnuas_ib multicast", "Q_Key").  The client
 * sends, the server receives and judges.
 *
 * 1. Unicast with the right Q_Key: byte_len is 40 + payload, IBV_WC_GRH is
 *    set, bytes 20..39 of the receive buffer are the IPv4 header (version
 *    4, protocol UDP, source the sender's address, destination the
 *    receiver's; the first 20 are undefined for IPv4), src_qp is the
 *    sender's QPN and the payload is exact.  A payload of exactly the path
 *    MTU arrives too.
 * 2. A wrong Q_Key: dropped (IBTA 10.2.4).  The client sends 3 with a wrong
 *    Q_Key and then one with the right one: the right one is the first
 *    completion, nothing follows it, and rcvd_qkey_err rose by 3.
 * 3. A payload above the path MTU (a UD message is one packet, IBTA 9.8),
 *    on a QP of its own.  When the path MTU is the port's largest (4096,
 *    the row's), ibv_post_send refuses it with EINVAL and the QP stays in
 *    RTS; below that, cnuas_ib takes the post and completes it with
 *    IBV_WC_LOC_LEN_ERR, the QP going to the error state.  Either way
 *    nothing reaches the server (a marker sent after it is the next
 *    completion).
 * 4. Multicast: two server QPs attached to a group receive all of the
 *    client's datagrams to QPN 0xFFFFFF (GRH destination: the group).  QP B
 *    detaches: A receives the next ones, B nothing, but B is alive (a
 *    unicast to it, sent after them, is its only completion).  Detaching B
 *    again and attaching an RC QP are EINVAL.  Completions of two QPs have
 *    no order between them; each QP's are in the order sent.
 *
 *   server:  ud_checks -d dev -g gid_index -p tcp_port -s
 *   client:  ud_checks -d dev -g gid_index -p tcp_port SERVER_IP
 *
 * The two ends step through the cases on the TCP connection; the only
 * timed waits are those that see that nothing arrives (QUIET_MS).  Prints
 * "name: ok" or "name: FAIL detail" per case; exits 1 on any FAIL.
 */
#include <getopt.h>
#include <stdarg.h>
#include <arpa/inet.h>

#include "case_report.h"
#include "rc_pair.h"

#define GRH_LEN		40
#define SLOT		8192		/* room for GRH_LEN + the path MTU + 1 */
#define N_SLOT		64
#define QUIET_MS	500		/* a wait in which nothing may arrive */
#define WAIT_MS		5000		/* a wait for something that must arrive */
#define UC_QKEY		0x11110001U
#define MC_QKEY		0x22220002U
#define BAD_QKEYS	3
#define MC_FIRST	8		/* datagrams to both members */
#define MC_AFTER	4		/* datagrams after B detached */
#define MC_QPN		0xFFFFFFU
#define UC_LEN		300
#define MC_LEN		200

/* The multicast group: IPv4-mapped 239.77.0.1 (::ffff:239.77.0.1). */
static const uint8_t group_gid[16] = { [10] = 0xff, [11] = 0xff, 239, 77, 0, 1 };


/* What the server tells the client, and the client the server. */
struct msg {
	uint8_t gid[16];
	uint32_t qpn_u, qpn_a, qpn_b;	/* server: unicast QP, group members */
	uint32_t qpn_s;			/* client: its sending QP */
	uint32_t mtu;			/* the path MTU in bytes */
};

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	unsigned char *buf;
	int gid_index, fd, slot;
	const char *dev_name;
};

static void step(int fd)
{
	char a = 0, b;

	tcp_xfer(fd, &a, &b, 1);
}


/* The port's hw counter @name, or -1. */
static long long hw_counter(const char *dev, const char *name)
{
	char path[256];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/hw_counters/%s", dev,
		 name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* Payload of message @tag: the tag, then bytes that depend on it. */
static void fill(unsigned char *p, uint32_t tag, uint32_t len)
{
	memcpy(p, &tag, sizeof(tag));
	for (uint32_t i = sizeof(tag); i < len; i++)
		p[i] = (unsigned char)(tag * 31 + i * 7);
}

/* Does @p hold message @tag of @len bytes?  The first wrong offset, or -1. */
static long check_fill(const unsigned char *p, uint32_t tag, uint32_t len)
{
	uint32_t t;

	memcpy(&t, p, sizeof(t));
	if (t != tag)
		return 0;
	for (uint32_t i = sizeof(tag); i < len; i++)
		if (p[i] != (unsigned char)(tag * 31 + i * 7))
			return i;
	return -1;
}

static uint32_t tag_of(const struct side *sd, const struct ibv_wc *wc)
{
	uint32_t t;

	memcpy(&t, sd->buf + wc->wr_id * SLOT + GRH_LEN, sizeof(t));
	return t;
}

/* A UD QP with @qkey, in RTS. */
static struct ibv_qp *ud_qp(struct side *sd, uint32_t qkey)
{
	struct ibv_qp_init_attr init = {
		.send_cq = sd->cq, .recv_cq = sd->cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 8, .max_recv_wr = 32, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(sd->pd, &init);

	if (!qp)
		DIE("create UD QP: %s", strerror(errno));
	ud_qp_to_rts(qp, qkey);
	return qp;
}

/* Post @n receives of a slot each on @qp. */
static void post_recvs(struct side *sd, struct ibv_qp *qp, int n)
{
	for (int i = 0; i < n; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)sd->buf + sd->slot * SLOT,
				       .length = SLOT, .lkey = sd->mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = sd->slot, .sg_list = &sge, .num_sge = 1 }, *bad;

		if (sd->slot >= N_SLOT || ibv_post_recv(qp, &wr, &bad))
			DIE("post_recv %d", sd->slot);
		memset(sd->buf + sd->slot * SLOT, 0, SLOT);
		sd->slot++;
	}
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr i;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &i))
		return -1;
	return a.qp_state;
}

/* ---- the client: it sends ---- */

/*
 * Send message @tag of @len bytes on @qp to @qpn with @qkey; wait for its
 * completion.  Returns the ibv_post_send error, else the completion status
 * (as -1 - status when not success), 0 for success.
 */
static int ud_send(struct side *sd, struct ibv_qp *qp, struct ibv_ah *ah, uint32_t qpn,
		   uint32_t qkey, uint32_t tag, uint32_t len, struct ibv_wc *wc)
{
	struct ibv_sge sge = { .addr = (uintptr_t)sd->buf, .length = len, .lkey = sd->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = tag, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.ud = { .ah = ah, .remote_qpn = qpn, .remote_qkey = qkey },
	}, *bad;
	int ret;

	fill(sd->buf, tag, len);
	ret = ibv_post_send(qp, &wr, &bad);
	if (ret)
		return ret;
	if (!poll_one(sd->cq, wc, WAIT_MS))
		DIE("send %u: no completion in %d ms", tag, WAIT_MS);
	if (wc->wr_id != tag)
		DIE("send %u: completion of wr_id %llu", tag, (unsigned long long)wc->wr_id);
	return wc->status == IBV_WC_SUCCESS ? 0 : -1 - (int)wc->status;
}

/* ud_send that must succeed. */
static void ud_send_ok(struct side *sd, struct ibv_qp *qp, struct ibv_ah *ah, uint32_t qpn,
		       uint32_t qkey, uint32_t tag, uint32_t len)
{
	struct ibv_wc wc;
	int ret = ud_send(sd, qp, ah, qpn, qkey, tag, len, &wc);

	if (ret > 0)
		DIE("send %u: ibv_post_send %d (%s)", tag, ret, strerror(ret));
	if (ret < 0)
		DIE("send %u: %s", tag, ibv_wc_status_str(wc.status));
}

static struct ibv_ah *make_ah(struct side *sd, const uint8_t *dgid)
{
	struct ibv_ah_attr a = { .is_global = 1, .port_num = 1,
				 .grh = { .sgid_index = sd->gid_index, .hop_limit = 64 } };
	struct ibv_ah *ah;

	memcpy(a.grh.dgid.raw, dgid, 16);
	ah = ibv_create_ah(sd->pd, &a);
	if (!ah)
		DIE("create AH: %s", strerror(errno));
	return ah;
}

static void client(struct side *sd, struct msg *me, struct msg *peer, uint32_t max_mtu)
{
	struct ibv_qp *qp_s = ud_qp(sd, UC_QKEY), *qp_big;
	struct ibv_ah *ah, *mah;
	struct ibv_wc wc;
	int ret;

	me->qpn_s = qp_s->qp_num;
	tcp_xfer(sd->fd, me, peer, sizeof(*me));
	ah = make_ah(sd, peer->gid);

	/* 1: right Q_Key, a small payload and one of the path MTU */
	ud_send_ok(sd, qp_s, ah, peer->qpn_u, UC_QKEY, 1, UC_LEN);
	ud_send_ok(sd, qp_s, ah, peer->qpn_u, UC_QKEY, 2, me->mtu);
	step(sd->fd);

	/* 2: wrong Q_Keys, then a right one */
	step(sd->fd);
	for (int i = 0; i < BAD_QKEYS; i++)
		ud_send_ok(sd, qp_s, ah, peer->qpn_u, UC_QKEY ^ (0x100U << i), 100 + i, UC_LEN);
	ud_send_ok(sd, qp_s, ah, peer->qpn_u, UC_QKEY, 3, UC_LEN);
	step(sd->fd);

	/* 3: above the path MTU, on a QP of its own; then a marker */
	step(sd->fd);
	qp_big = ud_qp(sd, UC_QKEY);
	memset(&wc, 0, sizeof(wc));
	ret = ud_send(sd, qp_big, ah, peer->qpn_u, UC_QKEY, 200, me->mtu + 1, &wc);
	if (me->mtu == max_mtu) {
		/* above any MTU of the port: the post refuses it, nothing queued */
		report("UD of path MTU + 1 (the largest MTU): ibv_post_send EINVAL", ret == EINVAL,
		       "post %d (%s), completion %s", ret > 0 ? ret : 0, ret > 0 ? strerror(ret) : "-",
		       ret > 0 ? "-" : ibv_wc_status_str(wc.status));
		report("UD of path MTU + 1: the QP stays in RTS", qp_state(qp_big) == IBV_QPS_RTS,
		       "state %d", qp_state(qp_big));
	} else {
		/* within the port's largest MTU: the requester fails it */
		report("UD of path MTU + 1: posted, IBV_WC_LOC_LEN_ERR",
		       ret == -1 - IBV_WC_LOC_LEN_ERR, "post %d (%s), completion %s",
		       ret > 0 ? ret : 0, ret > 0 ? strerror(ret) : "-",
		       ret > 0 ? "-" : ibv_wc_status_str(wc.status));
		report("UD of path MTU + 1: the QP is in the error state",
		       qp_state(qp_big) == IBV_QPS_ERR, "state %d", qp_state(qp_big));
	}
	ud_send_ok(sd, qp_s, ah, peer->qpn_u, UC_QKEY, 4, UC_LEN);
	step(sd->fd);
	ibv_destroy_qp(qp_big);

	/* 4: multicast to both members, then after B detached */
	step(sd->fd);
	mah = make_ah(sd, group_gid);
	for (int i = 0; i < MC_FIRST; i++)
		ud_send_ok(sd, qp_s, mah, MC_QPN, MC_QKEY, 300 + i, MC_LEN);
	step(sd->fd);
	step(sd->fd);
	for (int i = 0; i < MC_AFTER; i++)
		ud_send_ok(sd, qp_s, mah, MC_QPN, MC_QKEY, 400 + i, MC_LEN);
	ud_send_ok(sd, qp_s, ah, peer->qpn_b, MC_QKEY, 5, UC_LEN);
	step(sd->fd);
	step(sd->fd);

	ibv_destroy_ah(mah);
	ibv_destroy_ah(ah);
	ibv_destroy_qp(qp_s);
}

/* ---- the server: it receives and judges ---- */

/*
 * Check completion @wc of message @tag of @len bytes from QPN @src_qp, with
 * the GRH of an IPv4 packet from @sgid to @dgid.  "" or what is wrong.
 */
static const char *check_recv(struct side *sd, const struct ibv_wc *wc, uint32_t tag,
			      uint32_t len, uint32_t src_qp, const uint8_t *sgid,
			      const uint8_t *dgid)
{
	static char why[200];
	const unsigned char *p = sd->buf + wc->wr_id * SLOT, *ip = p + 20;
	long bad;

	why[0] = 0;
	if (wc->status != IBV_WC_SUCCESS)
		snprintf(why, sizeof(why), "status %s", ibv_wc_status_str(wc->status));
	else if (wc->opcode != IBV_WC_RECV || wc->byte_len != GRH_LEN + len)
		snprintf(why, sizeof(why), "opcode %d byte_len %u (want %u)", wc->opcode,
			 wc->byte_len, GRH_LEN + len);
	else if (!(wc->wc_flags & IBV_WC_GRH))
		snprintf(why, sizeof(why), "no IBV_WC_GRH (wc_flags 0x%x)", wc->wc_flags);
	else if (wc->src_qp != src_qp)
		snprintf(why, sizeof(why), "src_qp 0x%x (want 0x%x)", wc->src_qp, src_qp);
	else if (ip[0] != 0x45 || ip[9] != IPPROTO_UDP || memcmp(ip + 12, sgid + 12, 4) ||
		 memcmp(ip + 16, dgid + 12, 4))
		snprintf(why, sizeof(why),
			 "GRH bytes 20..39 not the IPv4 header: ver/ihl 0x%02x proto %u src %u.%u.%u.%u (want %u.%u.%u.%u) dst %u.%u.%u.%u (want %u.%u.%u.%u)",
			 ip[0], ip[9], ip[12], ip[13], ip[14], ip[15], sgid[12], sgid[13],
			 sgid[14], sgid[15], ip[16], ip[17], ip[18], ip[19], dgid[12], dgid[13],
			 dgid[14], dgid[15]);
	else if ((bad = check_fill(p + GRH_LEN, tag, len)) >= 0)
		snprintf(why, sizeof(why), "payload of message %u wrong at byte %ld (tag %u)", tag,
			 bad, tag_of(sd, wc));
	return why;
}

/* The next completion, within WAIT_MS, is message @tag on @qp: "" or why not. */
static const char *expect_recv(struct side *sd, struct ibv_qp *qp, uint32_t tag, uint32_t len,
			       const struct msg *peer, const uint8_t *dgid)
{
	static char why[240];
	struct ibv_wc wc;

	if (!poll_one(sd->cq, &wc, WAIT_MS)) {
		snprintf(why, sizeof(why), "message %u: no completion in %d ms", tag, WAIT_MS);
		return why;
	}
	if (wc.qp_num != qp->qp_num) {
		snprintf(why, sizeof(why), "message %u: a completion on QP 0x%x (want 0x%x), tag %u",
			 tag, wc.qp_num, qp->qp_num, tag_of(sd, &wc));
		return why;
	}
	if (wc.status == IBV_WC_SUCCESS && tag_of(sd, &wc) != tag) {
		snprintf(why, sizeof(why), "message %u: got message %u first", tag, tag_of(sd, &wc));
		return why;
	}
	snprintf(why, sizeof(why), "%s", check_recv(sd, &wc, tag, len, peer->qpn_s, peer->gid,
						    dgid));
	return why;
}

/* Nothing more completes within QUIET_MS: "" or what did. */
static const char *expect_quiet(struct side *sd)
{
	static char why[120];
	struct ibv_wc wc;

	why[0] = 0;
	if (poll_one(sd->cq, &wc, QUIET_MS))
		snprintf(why, sizeof(why), "then a completion on QP 0x%x, status %s, tag %u",
			 wc.qp_num, ibv_wc_status_str(wc.status), tag_of(sd, &wc));
	return why;
}

/* A message a QP is to receive. */
struct want {
	uint32_t tag, len;
	const uint8_t *dgid;	/* the GRH destination */
};

/*
 * The completions of @qp[0] and @qp[1] are @want[0][0..@n[0]) and
 * @want[1][0..@n[1]), each QP's in order (completions of two QPs have no
 * order between them), and then nothing within QUIET_MS.  "" or why not.
 */
static const char *collect(struct side *sd, struct ibv_qp **qp, struct want **want,
			   const int *n, const struct msg *peer)
{
	static char why[300];
	int next[2] = { 0, 0 };
	struct ibv_wc wc;

	for (int i = 0; i < n[0] + n[1]; i++) {
		const struct want *w;
		const char *bad;
		int k;

		if (!poll_one(sd->cq, &wc, WAIT_MS)) {
			snprintf(why, sizeof(why), "A got %d of %d, B %d of %d: no completion in %d ms",
				 next[0], n[0], next[1], n[1], WAIT_MS);
			return why;
		}
		k = wc.qp_num == qp[0]->qp_num ? 0 : wc.qp_num == qp[1]->qp_num ? 1 : -1;
		if (k < 0 || next[k] == n[k]) {
			snprintf(why, sizeof(why), "%s%c: a completion too many (A %d/%d, B %d/%d), tag %u",
				 k < 0 ? "a QP not A or B" : "QP ", k < 0 ? ' ' : 'A' + k,
				 next[0], n[0], next[1], n[1], tag_of(sd, &wc));
			return why;
		}
		w = &want[k][next[k]];
		if (wc.status == IBV_WC_SUCCESS && tag_of(sd, &wc) != w->tag) {
			snprintf(why, sizeof(why), "QP %c: message %u where %u was due", 'A' + k,
				 tag_of(sd, &wc), w->tag);
			return why;
		}
		bad = check_recv(sd, &wc, w->tag, w->len, peer->qpn_s, peer->gid, w->dgid);
		if (bad[0]) {
			snprintf(why, sizeof(why), "QP %c: %s", 'A' + k, bad);
			return why;
		}
		next[k]++;
	}
	return expect_quiet(sd);
}

static void server(struct side *sd, struct msg *me, struct msg *peer)
{
	struct ibv_qp *qp_u = ud_qp(sd, UC_QKEY), *mc[2], *rc;
	struct want first[MC_FIRST], after[MC_AFTER], uni;
	long long before, after_n;
	const char *w;
	char why[300];
	int ret;

	mc[0] = ud_qp(sd, MC_QKEY);
	mc[1] = ud_qp(sd, MC_QKEY);
	post_recvs(sd, qp_u, 8);
	post_recvs(sd, mc[0], MC_FIRST + MC_AFTER + 2);
	post_recvs(sd, mc[1], MC_FIRST + MC_AFTER + 2);
	me->qpn_u = qp_u->qp_num;
	me->qpn_a = mc[0]->qp_num;
	me->qpn_b = mc[1]->qp_num;
	tcp_xfer(sd->fd, me, peer, sizeof(*me));

	/* 1 */
	step(sd->fd);
	w = expect_recv(sd, qp_u, 1, UC_LEN, peer, me->gid);
	report("UD unicast: GRH (IPv4 header at 20..39), byte_len, src_qp, payload", !w[0], "%s",
	       w);
	w = expect_recv(sd, qp_u, 2, me->mtu, peer, me->gid);
	report("UD unicast of the path MTU: received", !w[0], "%s", w);

	/* 2 */
	before = hw_counter(sd->dev_name, "rcvd_qkey_err");
	step(sd->fd);
	step(sd->fd);
	w = expect_recv(sd, qp_u, 3, UC_LEN, peer, me->gid);
	snprintf(why, sizeof(why), "%s", w);
	if (!why[0])
		snprintf(why, sizeof(why), "%s", expect_quiet(sd));
	report("wrong Q_Key x3: dropped, the right one after them arrives", !why[0], "%s", why);
	after_n = hw_counter(sd->dev_name, "rcvd_qkey_err");
	report("wrong Q_Key x3: rcvd_qkey_err +3", before >= 0 && after_n - before == BAD_QKEYS,
	       "%lld -> %lld", before, after_n);

	/* 3 */
	step(sd->fd);
	step(sd->fd);
	w = expect_recv(sd, qp_u, 4, UC_LEN, peer, me->gid);
	snprintf(why, sizeof(why), "%s", w);
	if (!why[0])
		snprintf(why, sizeof(why), "%s", expect_quiet(sd));
	report("UD of path MTU + 1: nothing delivered", !why[0], "%s", why);

	/* 4 */
	for (int i = 0; i < 2; i++) {
		ret = ibv_attach_mcast(mc[i], (const union ibv_gid *)group_gid, 0);
		if (ret)
			DIE("attach QP %c: %s", 'A' + i, strerror(ret));
	}
	step(sd->fd);
	step(sd->fd);
	for (int i = 0; i < MC_FIRST; i++)
		first[i] = (struct want){ 300 + i, MC_LEN, group_gid };
	w = collect(sd, mc, (struct want *[]){ first, first }, (int []){ MC_FIRST, MC_FIRST },
		    peer);
	report("multicast: both members receive every datagram (GRH dst the group)", !w[0],
	       "%s", w);

	ret = ibv_detach_mcast(mc[1], (const union ibv_gid *)group_gid, 0);
	report("detach B", !ret, "%d (%s)", ret, strerror(ret));
	ret = ibv_detach_mcast(mc[1], (const union ibv_gid *)group_gid, 0);
	report("detach B again: EINVAL", ret == EINVAL, "%d (%s)", ret, strerror(ret));
	rc = rc_create_qp(sd->pd, sd->cq, 0);
	ret = ibv_attach_mcast(rc, (const union ibv_gid *)group_gid, 0);
	report("attach an RC QP: EINVAL", ret == EINVAL, "%d (%s)", ret, strerror(ret));
	if (!ret)
		ibv_detach_mcast(rc, (const union ibv_gid *)group_gid, 0);
	ibv_destroy_qp(rc);
	step(sd->fd);
	step(sd->fd);
	/* B's unicast went after the multicast ones: had they reached B, they came first */
	for (int i = 0; i < MC_AFTER; i++)
		after[i] = (struct want){ 400 + i, MC_LEN, group_gid };
	uni = (struct want){ 5, UC_LEN, me->gid };
	w = collect(sd, mc, (struct want *[]){ after, &uni }, (int []){ MC_AFTER, 1 }, peer);
	report("after B detached: A receives, B does not (but its unicast)", !w[0], "%s", w);
	report("after B detached: B still in RTS", qp_state(mc[1]) == IBV_QPS_RTS, "state %d",
	       qp_state(mc[1]));
	step(sd->fd);

	ibv_detach_mcast(mc[0], (const union ibv_gid *)group_gid, 0);
	for (int i = 0; i < 2; i++)
		ibv_destroy_qp(mc[i]);
	ibv_destroy_qp(qp_u);
}

int main(int argc, char **argv)
{
	const char *server_ip = NULL;
	struct side sd = { .gid_index = 0 };
	struct msg me = {}, peer;
	struct ibv_port_attr pa;
	union ibv_gid gid;
	int port = 18823, opt, listen_mode = 0;

	while ((opt = getopt(argc, argv, "d:g:p:s")) != -1) {
		if (opt == 's')
			listen_mode = 1;
		else if (!rc_pair_opt(opt, optarg, &sd.dev_name, &sd.gid_index, &port))
			return 2;
	}
	if (optind < argc)
		server_ip = argv[optind];
	if (!server_ip == !listen_mode) {
		fprintf(stderr, "usage: ud_checks -d dev -g gid_index -p port (-s | SERVER_IP)\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	sd.ctx = open_device_by_name(sd.dev_name);
	sd.dev_name = ibv_get_device_name(sd.ctx->device);
	sd.pd = ibv_alloc_pd(sd.ctx);
	sd.cq = ibv_create_cq(sd.ctx, 128, NULL, NULL, 0);
	sd.buf = aligned_alloc(4096, N_SLOT * SLOT);
	sd.mr = sd.pd && sd.buf ? ibv_reg_mr(sd.pd, sd.buf, N_SLOT * SLOT,
					     IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!sd.mr || !sd.cq)
		DIE("open device / resources");
	if (ibv_query_port(sd.ctx, 1, &pa) || ibv_query_gid(sd.ctx, 1, sd.gid_index, &gid))
		DIE("query port/gid");
	if (memcmp(gid.raw, group_gid, 10) || gid.raw[10] != 0xff || gid.raw[11] != 0xff)
		DIE("GID index %d is not an IPv4-mapped (RoCEv2 IPv4) GID", sd.gid_index);
	memcpy(me.gid, gid.raw, 16);
	me.mtu = 128U << pa.active_mtu;
	if (me.mtu + 1 > SLOT - GRH_LEN)
		DIE("path MTU %u: too large for the buffers", me.mtu);

	sd.fd = tcp_rendezvous(server_ip, port);
	if (server_ip)
		client(&sd, &me, &peer, 128U << pa.max_mtu);
	else
		server(&sd, &me, &peer);
	if (peer.mtu != me.mtu)
		report("both ends have one path MTU", 0, "%u here, %u there", me.mtu, peer.mtu);
	close(sd.fd);
	ibv_dereg_mr(sd.mr);
	ibv_destroy_cq(sd.cq);
	ibv_dealloc_pd(sd.pd);
	ibv_close_device(sd.ctx);
	free(sd.buf);
	printf("%s\n", case_failures ? "FAIL" : "PASS");
	return case_failures ? 1 : 0;
}
