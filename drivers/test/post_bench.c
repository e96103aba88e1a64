// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * post_bench: what ibv_post_send, ibv_post_recv and ibv_post_srq_recv cost
 * per work request on one device, and how many system calls each call
 * makes, counted exactly.
 *
 * post_send: an RC QP connected to a second RC QP of the same device
 * through the device's own RoCEv2 GID (-g; the device delivers to itself).
 * A round is 64 RDMA WRITEs of 64 bytes, each into its own slot of a
 * registered buffer, posted as linked lists of 1, 16 or 64 WRs per call.
 * After each round (untimed) the 64 completions are drained, each must be
 * IBV_WC_SUCCESS with its wr_id in order, and every slot must hold the
 * bytes written.  Loopback through the device's own GID: the time of a
 * post includes whatever of the WRITE the device does inside the call.
 *
 * post_recv: an RC QP in INIT (no peer) whose receive queue is filled in
 * lists of 1 or 16; then (untimed) the QP goes to the error state and
 * every receive must complete as flushed, in order.  post_srq_recv: an SRQ
 * of 1024 receives filled the same way; one more must be refused with
 * ENOMEM (the posts were real), then the SRQ is destroyed.
 *
 * Each round's posts are timed together (one clock read before, one after,
 * nothing else between them); a figure is the median over the rounds of
 * ns per WR, after a warm-up round of each case.  Receive rounds use a new
 * QP or SRQ each: its ring is touched for the first time by the posts.
 *
 * The system calls are counted in a second pass, not timed, on a thread of
 * its own: it installs a seccomp filter (its own only, no TSYNC) that
 * turns every system call into a user notification, and the main thread,
 * unfiltered, receives each one, counts it against the verb being posted
 * at that moment, and lets it run (SECCOMP_USER_NOTIF_FLAG_CONTINUE).  The
 * posting thread is stopped in the system call while it is counted, so
 * the count is exact.  The counter checks itself first: 1000 getppid()
 * calls must count as 1000.
 *
 *   post_bench -d dev -g gid_index [-n send_rounds] [-r recv_rounds]
 *
 * Prints key=value lines and PASS; exits 1 on a failure.
 */
#include <getopt.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>

#include "rc_pair.h"
#include "verbs_util.h"

#define ROUND		64	/* WRITEs per send round */
#define SLOT		64	/* bytes per WRITE */
#define RECV_WR		1024	/* receives per receive round */
#define SELFTEST_CALLS	1000
#define MAX_NR		512
#define WAIT_NS		20000000000ull

/* What is being posted while a system call is counted. */
enum phase {
	PH_NONE,
	PH_SEND_B1, PH_SEND_B16, PH_SEND_B64,
	PH_RECV_B1, PH_RECV_B16,
	PH_SRQ_B1, PH_SRQ_B16,
	PH_SELFTEST,
	PH_COUNT
};

static const char *const phase_name[PH_COUNT] = {
	[PH_SEND_B1] = "post_send_b1", [PH_SEND_B16] = "post_send_b16",
	[PH_SEND_B64] = "post_send_b64", [PH_RECV_B1] = "post_recv_b1",
	[PH_RECV_B16] = "post_recv_b16", [PH_SRQ_B1] = "post_srq_recv_b1",
	[PH_SRQ_B16] = "post_srq_recv_b16", [PH_SELFTEST] = "selftest_getppid",
};

#define MAX_ROUNDS	1000

struct figures {
	double ns_per_wr[MAX_ROUNDS];	/* timing pass: each round's */
	int rounds;
	uint64_t calls;			/* counting pass: calls made */
};

static struct {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *sq, *dq;		/* sender, WRITE target */
	struct ibv_mr *mr;
	unsigned char *src, *dst, *rbuf;
	uint32_t seq;
	int counting;			/* this pass counts, it does not time */
	struct figures fig[PH_COUNT];
} b;

/* The counter: written by the supervisor, read after the posting thread ended. */
static _Atomic int cur_phase;
static _Atomic int listener = -1;
static _Atomic uint64_t nr_count[PH_COUNT][MAX_NR];
static _Atomic uint64_t other_count[PH_COUNT];

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Around the posts of one round: the clock, or the counter's phase. */
static uint64_t begin(enum phase p)
{
	if (b.counting) {
		atomic_store(&cur_phase, p);
		return 0;
	}
	return now_ns();
}

static void end(enum phase p, uint64_t t0, uint64_t wrs, uint64_t calls)
{
	if (b.counting) {
		atomic_store(&cur_phase, PH_NONE);
		b.fig[p].calls += calls;
	} else {
		struct figures *f = &b.fig[p];

		if (f->rounds < MAX_ROUNDS)
			f->ns_per_wr[f->rounds++] = (double)(now_ns() - t0) / (double)wrs;
	}
}

static int cmp_double(const void *a, const void *c)
{
	double x = *(const double *)a, y = *(const double *)c;

	return x < y ? -1 : x > y;
}

/* The median of the rounds of @p: a descheduled round does not move it. */
static double median_ns_per_wr(enum phase p)
{
	struct figures *f = &b.fig[p];

	qsort(f->ns_per_wr, f->rounds, sizeof(double), cmp_double);
	return f->rounds % 2 ? f->ns_per_wr[f->rounds / 2]
			     : (f->ns_per_wr[f->rounds / 2 - 1] + f->ns_per_wr[f->rounds / 2]) / 2;
}

/* ---- post_send ---- */

static void fill_slot(unsigned char *p, uint32_t seq)
{
	for (int i = 0; i < SLOT; i++)
		p[i] = (unsigned char)(seq * 13 + i * 7 + 1);
}

/* Wait for @n completions of @cq, each a success with wr_id @first on. */
static void drain_send(struct ibv_cq *cq, int n, uint64_t first)
{
	struct ibv_wc wc[16];
	uint64_t deadline = now_ns() + WAIT_NS;
	int got = 0, k, i;

	while (got < n) {
		k = ibv_poll_cq(cq, 16, wc);
		if (k < 0)
			DIE("ibv_poll_cq: %d", k);
		if (!k && now_ns() > deadline)
			DIE("%d of %d WRITE completions arrived", got, n);
		for (i = 0; i < k; i++, got++)
			if (wc[i].status != IBV_WC_SUCCESS || wc[i].wr_id != first + got ||
			    wc[i].opcode != IBV_WC_RDMA_WRITE)
				DIE("WRITE completion %d: %s wr_id %llu opcode %d; want success %llu",
				    got, ibv_wc_status_str(wc[i].status),
				    (unsigned long long)wc[i].wr_id, wc[i].opcode,
				    (unsigned long long)(first + got));
	}
}

/* One round: ROUND WRITEs in lists of @batch, then drained and checked. */
static void send_round(int batch, enum phase p)
{
	struct ibv_sge sge[ROUND];
	struct ibv_send_wr wr[ROUND], *bad;
	uint32_t first = b.seq;
	uint64_t t0;
	int i, ret = 0;

	memset(b.dst, 0, ROUND * SLOT);
	for (i = 0; i < ROUND; i++) {
		fill_slot(b.src + i * SLOT, first + i);
		sge[i] = (struct ibv_sge){ .addr = (uintptr_t)b.src + i * SLOT, .length = SLOT,
					   .lkey = b.mr->lkey };
		wr[i] = (struct ibv_send_wr){
			.wr_id = first + i, .sg_list = &sge[i], .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
			.next = (i + 1) % batch ? &wr[i + 1] : NULL,
			.wr.rdma = { .remote_addr = (uintptr_t)b.dst + i * SLOT,
				     .rkey = b.mr->rkey },
		};
	}
	t0 = begin(p);
	for (i = 0; i < ROUND; i += batch) {
		ret = ibv_post_send(b.sq, &wr[i], &bad);
		if (ret)
			break;
	}
	end(p, t0, ROUND, ROUND / batch);
	if (ret)
		DIE("ibv_post_send of %d WRs at %d: %s", batch, i, strerror(ret));
	b.seq += ROUND;
	drain_send(b.cq, ROUND, first);
	for (i = 0; i < ROUND; i++)
		if (memcmp(b.dst + i * SLOT, b.src + i * SLOT, SLOT))
			DIE("WRITE %u: the target slot does not hold the bytes sent", first + i);
}

/* Two RC QPs of the device, the first connected to the second by its own GID. */
static void connect_loop(int gid_index)
{
	struct ibv_qp_init_attr init = {
		.send_cq = b.cq, .recv_cq = b.cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = ROUND, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
						    IBV_ACCESS_REMOTE_WRITE };
	struct ibv_port_attr pa;
	union ibv_gid gid;
	struct ibv_qp **qp;

	if (ibv_query_port(b.ctx, 1, &pa))
		DIE("ibv_query_port: %s", strerror(errno));
	if (ibv_query_gid(b.ctx, 1, gid_index, &gid))
		DIE("ibv_query_gid %d: %s", gid_index, strerror(errno));
	for (qp = &b.sq; qp <= &b.dq; qp++) {
		*qp = ibv_create_qp(b.pd, &init);
		if (!*qp)
			DIE("ibv_create_qp (RC, %d send WRs): %s", ROUND, strerror(errno));
		if (ibv_modify_qp(*qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_ACCESS_FLAGS))
			DIE("QP 0x%x to INIT: %s", (*qp)->qp_num, strerror(errno));
	}
	rc_connect(b.sq, 100, b.dq->qp_num, 200, gid.raw, 0, gid_index, pa.active_mtu, 7);
	rc_connect(b.dq, 200, b.sq->qp_num, 100, gid.raw, 0, gid_index, pa.active_mtu, 7);
}

/* ---- post_recv and post_srq_recv ---- */

/* Wait for @n flushed receives of @qp on b.cq, wr_id 0 on, in order. */
static void drain_flushed(struct ibv_qp *qp, int n)
{
	struct ibv_wc wc[16];
	uint64_t deadline = now_ns() + WAIT_NS;
	int got = 0, k, i;

	while (got < n) {
		k = ibv_poll_cq(b.cq, 16, wc);
		if (k < 0)
			DIE("ibv_poll_cq: %d", k);
		if (!k && now_ns() > deadline)
			DIE("%d of %d flushed receives arrived", got, n);
		for (i = 0; i < k; i++, got++)
			if (wc[i].status != IBV_WC_WR_FLUSH_ERR || wc[i].wr_id != (uint64_t)got ||
			    wc[i].qp_num != qp->qp_num)
				DIE("flushed receive %d: %s wr_id %llu qp 0x%x; want flushed %d 0x%x",
				    got, ibv_wc_status_str(wc[i].status),
				    (unsigned long long)wc[i].wr_id, wc[i].qp_num, got, qp->qp_num);
	}
}

/* @n receives of one SGE each, wr_id 0 on, linked in lists of @batch (the last may be short). */
static void recv_wrs(struct ibv_recv_wr *wr, struct ibv_sge *sge, int n, int batch)
{
	for (int i = 0; i < n; i++) {
		int last = (i + 1) % batch == 0 || i + 1 == n;

		sge[i] = (struct ibv_sge){ .addr = (uintptr_t)b.rbuf + (i % 64) * SLOT,
					   .length = SLOT, .lkey = b.mr->lkey };
		wr[i] = (struct ibv_recv_wr){ .wr_id = i, .sg_list = &sge[i], .num_sge = 1,
					      .next = last ? NULL : &wr[i + 1] };
	}
}

static struct ibv_recv_wr rwr[RECV_WR * 4];
static struct ibv_sge rsge[RECV_WR * 4];

/* One round: a new QP's receive queue filled in lists of @batch, then flushed. */
static void recv_round(int batch, enum phase p)
{
	struct ibv_qp_init_attr init = {
		.send_cq = b.cq, .recv_cq = b.cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = RECV_WR, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_recv_wr *bad;
	struct ibv_qp *qp = ibv_create_qp(b.pd, &init);
	int n, i, ret = 0;
	uint64_t t0;

	if (!qp)
		DIE("ibv_create_qp (RC, %d receives): %s", RECV_WR, strerror(errno));
	qp_to_state(qp, IBV_QPS_INIT);
	/* the queue as created */
	n = init.cap.max_recv_wr;
	if (n < RECV_WR || n > RECV_WR * 4)
		DIE("a QP of %d receives was created with max_recv_wr %d", RECV_WR, n);
	recv_wrs(rwr, rsge, n, batch);
	t0 = begin(p);
	for (i = 0; i < n; i += batch) {
		ret = ibv_post_recv(qp, &rwr[i], &bad);
		if (ret)
			break;
	}
	end(p, t0, n, (n + batch - 1) / batch);
	if (ret)
		DIE("ibv_post_recv of %d at %d: %s", batch, i, strerror(ret));
	qp_to_state(qp, IBV_QPS_ERR);
	drain_flushed(qp, n);
	if (ibv_destroy_qp(qp))
		DIE("ibv_destroy_qp: %s", strerror(errno));
}

/* One round: a new SRQ filled in lists of @batch; one more refused; destroyed. */
static void srq_round(int batch, enum phase p)
{
	struct ibv_srq_init_attr init = { .attr = { .max_wr = RECV_WR, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(b.pd, &init);
	struct ibv_recv_wr *bad, extra;
	int n, i, ret = 0;
	uint64_t t0;

	if (!srq)
		DIE("ibv_create_srq (%d receives): %s", RECV_WR, strerror(errno));
	n = init.attr.max_wr;
	if (n < RECV_WR || n > RECV_WR * 4)
		DIE("an SRQ of %d receives was created with max_wr %d", RECV_WR, n);
	recv_wrs(rwr, rsge, n, batch);
	t0 = begin(p);
	for (i = 0; i < n; i += batch) {
		ret = ibv_post_srq_recv(srq, &rwr[i], &bad);
		if (ret)
			break;
	}
	end(p, t0, n, (n + batch - 1) / batch);
	if (ret)
		DIE("ibv_post_srq_recv of %d at %d (max_wr %d): %s", batch, i, n, strerror(ret));
	/* the posts were real: the SRQ is full */
	extra = (struct ibv_recv_wr){ .wr_id = n, .sg_list = rsge, .num_sge = 1 };
	bad = NULL;
	ret = ibv_post_srq_recv(srq, &extra, &bad);
	if (ret != ENOMEM || bad != &extra)
		DIE("a receive on a full SRQ of %d: %d (bad_wr %s); want ENOMEM", n, ret,
		    bad == &extra ? "set" : "not set");
	if (ibv_destroy_srq(srq))
		DIE("ibv_destroy_srq: %s", strerror(errno));
}

/* Every case: @send_rounds rounds of each post_send batch, @recv_rounds of the rest. */
static void all_cases(int send_rounds, int recv_rounds)
{
	static const int send_batch[] = { 1, 16, 64 };
	int i, r;

	for (i = 0; i < 3; i++)
		for (r = 0; r < send_rounds; r++)
			send_round(send_batch[i], PH_SEND_B1 + i);
	for (i = 0; i < 2; i++)
		for (r = 0; r < recv_rounds; r++)
			recv_round(i ? 16 : 1, PH_RECV_B1 + i);
	for (i = 0; i < 2; i++)
		for (r = 0; r < recv_rounds; r++)
			srq_round(i ? 16 : 1, PH_SRQ_B1 + i);
}

/* ---- the system call counter ---- */

/* The posting thread of the counting pass: filtered, then every case once. */
static void *counted(void *arg)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
	};
	struct sock_fprog prog = { .len = sizeof(filter) / sizeof(filter[0]), .filter = filter };
	int fd, i;

	(void)arg;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		DIE("PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
	fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
		     &prog);
	if (fd < 0)
		DIE("seccomp(NEW_LISTENER): %s", strerror(errno));
	/* from here on, each system call waits for the main thread */
	atomic_store(&listener, fd);

	begin(PH_SELFTEST);
	for (i = 0; i < SELFTEST_CALLS; i++)
		syscall(SYS_getppid);
	end(PH_SELFTEST, 0, 0, SELFTEST_CALLS);

	all_cases(2, 1);
	return NULL;
}

/* Receive, count and continue each system call of the posting thread until it is gone. */
static void supervise(void)
{
	struct seccomp_notif_sizes sizes;
	struct seccomp_notif *req;
	struct seccomp_notif_resp *resp;
	struct pollfd pfd;
	int fd, p;

	while ((fd = atomic_load(&listener)) < 0)
		sched_yield();
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes))
		DIE("SECCOMP_GET_NOTIF_SIZES: %s", strerror(errno));
	req = malloc(sizes.seccomp_notif);
	resp = malloc(sizes.seccomp_notif_resp);
	if (!req || !resp)
		DIE("malloc");
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	for (;;) {
		if (poll(&pfd, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			DIE("poll on the seccomp listener: %s", strerror(errno));
		}
		if (!(pfd.revents & POLLIN)) {
			if (pfd.revents & POLLHUP)
				break;	/* the posting thread has ended */
			continue;
		}
		memset(req, 0, sizes.seccomp_notif);
		if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, req)) {
			if (errno == EINTR || errno == ENOENT)
				continue;
			DIE("SECCOMP_IOCTL_NOTIF_RECV: %s", strerror(errno));
		}
		p = atomic_load(&cur_phase);
		if (p != PH_NONE) {
			if (req->data.nr >= 0 && req->data.nr < MAX_NR)
				atomic_fetch_add(&nr_count[p][req->data.nr], 1);
			else
				atomic_fetch_add(&other_count[p], 1);
		}
		memset(resp, 0, sizes.seccomp_notif_resp);
		resp->id = req->id;
		resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		if (ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, resp) && errno != ENOENT)
			DIE("SECCOMP_IOCTL_NOTIF_SEND: %s", strerror(errno));
	}
	close(fd);
	free(req);
	free(resp);
}

static const char *syscall_name(int nr)
{
	switch (nr) {
	case SYS_read: return "read";
	case SYS_write: return "write";
	case SYS_ioctl: return "ioctl";
	case SYS_futex: return "futex";
	case SYS_mmap: return "mmap";
	case SYS_munmap: return "munmap";
	case SYS_madvise: return "madvise";
	case SYS_brk: return "brk";
	case SYS_getppid: return "getppid";
	case SYS_sched_yield: return "sched_yield";
	case SYS_clock_gettime: return "clock_gettime";
	default: return NULL;
	}
}

/* The counting pass's figures of phase @p: calls, system calls, and which. */
static uint64_t report_count(enum phase p)
{
	uint64_t total = atomic_load(&other_count[p]), c;
	char nrs[256] = "";
	size_t len = 0;
	const char *name;

	for (int nr = 0; nr < MAX_NR; nr++) {
		c = atomic_load(&nr_count[p][nr]);
		if (!c)
			continue;
		total += c;
		name = syscall_name(nr);
		if (len < sizeof(nrs) - 32)
			len += name ? snprintf(nrs + len, sizeof(nrs) - len, "%s%s:%llu",
					       len ? "," : "", name, (unsigned long long)c)
				    : snprintf(nrs + len, sizeof(nrs) - len, "%s%d:%llu",
					       len ? "," : "", nr, (unsigned long long)c);
	}
	printf("%s_calls=%llu\n", phase_name[p], (unsigned long long)b.fig[p].calls);
	printf("%s_syscalls=%llu\n", phase_name[p], (unsigned long long)total);
	printf("%s_syscall_list=%s\n", phase_name[p], len ? nrs : "none");
	return total;
}

int main(int argc, char **argv)
{
	const char *devname = NULL;
	int gid_index = -1, send_rounds = 100, recv_rounds = 8, opt, p;
	uint64_t t0, syscall_ns, counted_getppid;
	pthread_t th;

	while ((opt = getopt(argc, argv, "d:g:n:r:")) != -1) {
		switch (opt) {
		case 'd':
			devname = optarg;
			break;
		case 'g':
			gid_index = atoi(optarg);
			break;
		case 'n':
			send_rounds = atoi(optarg);
			break;
		case 'r':
			recv_rounds = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: %s -d dev -g gid_index [-n send_rounds] "
				"[-r recv_rounds]\n", argv[0]);
			return 2;
		}
	}
	if (!devname || gid_index < 0)
		DIE("-d dev and -g gid_index (the RoCEv2 GID of an address) are required");
	if (send_rounds < 1 || recv_rounds < 1 || send_rounds > MAX_ROUNDS ||
	    recv_rounds > MAX_ROUNDS)
		DIE("-n and -r must be 1..%d", MAX_ROUNDS);

	b.ctx = open_device_by_name(devname);
	b.pd = ibv_alloc_pd(b.ctx);
	if (!b.pd)
		DIE("ibv_alloc_pd: %s", strerror(errno));
	b.src = aligned_alloc(4096, 3 * ROUND * SLOT);
	if (!b.src)
		DIE("aligned_alloc");
	memset(b.src, 0, 3 * ROUND * SLOT);
	b.dst = b.src + ROUND * SLOT;
	b.rbuf = b.dst + ROUND * SLOT;
	b.mr = ibv_reg_mr(b.pd, b.src, 3 * ROUND * SLOT, IBV_ACCESS_LOCAL_WRITE |
			  IBV_ACCESS_REMOTE_WRITE);
	if (!b.mr)
		DIE("ibv_reg_mr: %s", strerror(errno));
	b.cq = ibv_create_cq(b.ctx, RECV_WR * 4, NULL, NULL, 0);
	if (!b.cq)
		DIE("ibv_create_cq(%d): %s", RECV_WR * 4, strerror(errno));
	connect_loop(gid_index);

	/* one cheap system call, for scale */
	t0 = now_ns();
	for (int i = 0; i < 100000; i++)
		syscall(SYS_getppid);
	syscall_ns = now_ns() - t0;

	/* the timing pass: a warm-up round of each, then the timed rounds */
	all_cases(1, 1);
	memset(b.fig, 0, sizeof(b.fig));
	all_cases(send_rounds, recv_rounds);

	/* the counting pass */
	b.counting = 1;
	if (pthread_create(&th, NULL, counted, NULL))
		DIE("pthread_create");
	supervise();
	if (pthread_join(th, NULL))
		DIE("pthread_join");

	printf("device=%s gid_index=%d\n", devname, gid_index);
	printf("send_round_wrs=%d send_rounds=%d recv_round_wrs=%d recv_rounds=%d\n", ROUND,
	       send_rounds, RECV_WR, recv_rounds);
	for (p = PH_SEND_B1; p <= PH_SRQ_B16; p++)
		printf("%s_ns_per_wr=%.1f\n", phase_name[p], median_ns_per_wr(p));
	printf("getppid_syscall_ns=%.1f\n", (double)syscall_ns / 100000);
	counted_getppid = report_count(PH_SELFTEST);
	if (counted_getppid != SELFTEST_CALLS ||
	    atomic_load(&nr_count[PH_SELFTEST][SYS_getppid]) != SELFTEST_CALLS)
		DIE("the counter is wrong: %d getppid() calls counted as %llu system calls",
		    SELFTEST_CALLS, (unsigned long long)counted_getppid);
	for (p = PH_SEND_B1; p <= PH_SRQ_B16; p++)
		report_count(p);
	printf("PASS\n");
	return 0;
}
