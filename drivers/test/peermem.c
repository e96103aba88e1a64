// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * peermem: RDMA straight into and out of accelerator memory.  Each end
 * allocates device memory on its cnuasgpu, exports it as a DMA-BUF
 * (CNUASGPU_IOC_EXPORT_DMABUF) and registers that with ibv_reg_dmabuf_mr;
 * the data then moves accelerator to accelerator, over RoCEv2 or native
 * InfiniBand, with no host buffer on either side.  Each end checks what landed through the cnuasgpu
 * copy ioctls, a path to BAR1 independent of the RDMA one:
 *
 *   1. READ:   the client reads the server's first half into its second half.
 *   2. WRITE:  the client writes its first half into the server's second half.
 *   3. SEND:   the server's receive, posted in device memory, gets 4 KiB.
 *   4. bounds: a WRITE past the end of the server's DMA-BUF MR completes
 *              with a remote access error and changes no byte.
 *
 * Then the server checks the DMA-BUF lifetime rule: freed while exported
 * and registered, the allocation stays reserved (sysfs devmem_used and
 * exports) until the MR is deregistered and the last fd is closed.
 *
 *   server:  peermem -d dev -g gid_index -p tcp_port [-G gpu_node] [-s bytes]
 *   client:  peermem -d dev -g gid_index -p tcp_port [-G gpu_node] [-s bytes] SERVER_IP
 *
 * On a native InfiniBand port both ends connect by LID instead (each sends
 * its LID with its GID; -g is then 0, the port's one GID, and unused).
 *
 * Prints one line per step and PASS at the end; exits 1 on any mismatch.
 */
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <sys/ioctl.h>
#include <time.h>

#include "cnuasgpu.h"
#include "rc_pair.h"

/* Where the MRs start in each end's RDMA address space (any value will do). */
#define IOVA 0x100000000ull
#define SEND_LEN 4096
#define MR_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

struct msg {
	uint32_t qpn, psn;
	uint8_t gid[16];
	uint16_t lid, pad;	/* native IB: the LID, and the connection uses it */
	uint64_t addr;
	uint32_t rkey, status;
};

struct gpu {
	int fd;
	char sysfs[128];
	uint32_t handle;
};

static void fill(uint8_t *p, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 131 + seed * 17 + (i >> 9));
}

static void gpu_copy(struct gpu *g, uint64_t off, void *buf, uint64_t len, int to_dev)
{
	struct cnuasgpu_copy c = { .handle = g->handle, .offset = off,
				   .user_ptr = (uintptr_t)buf, .size = len };

	if (ioctl(g->fd, to_dev ? CNUASGPU_IOC_COPY_TO_DEV : CNUASGPU_IOC_COPY_FROM_DEV, &c))
		DIE("cnuasgpu copy %s device: %s", to_dev ? "to" : "from", strerror(errno));
}

static uint64_t gpu_attr(const struct gpu *g, const char *attr)
{
	char path[192];
	unsigned long long v;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", g->sysfs, attr);
	f = fopen(path, "r");
	if (!f || fscanf(f, "%llu", &v) != 1)
		DIE("read %s", path);
	fclose(f);
	return v;
}

/* Allocate @size bytes of device memory, fill them, export them: the DMA-BUF fd. */
static int gpu_setup(struct gpu *g, const char *node, uint64_t size, unsigned int seed,
		     uint8_t *pattern)
{
	struct cnuasgpu_alloc a = { .size = size };
	struct cnuasgpu_export x = { .flags = CNUASGPU_EXPORT_CLOEXEC };
	char name[64];

	g->fd = open(node, O_RDWR | O_CLOEXEC);
	if (g->fd < 0)
		DIE("open %s: %s", node, strerror(errno));
	snprintf(name, sizeof(name), "%s", node);
	snprintf(g->sysfs, sizeof(g->sysfs), "/sys/class/cnuasgpu/%s", basename(name));
	if (ioctl(g->fd, CNUASGPU_IOC_ALLOC, &a))
		DIE("CNUASGPU_IOC_ALLOC %llu: %s", (unsigned long long)size, strerror(errno));
	g->handle = a.handle;
	fill(pattern, size, seed);
	gpu_copy(g, 0, pattern, size, 1);
	x.handle = g->handle;
	if (ioctl(g->fd, CNUASGPU_IOC_EXPORT_DMABUF, &x))
		DIE("CNUASGPU_IOC_EXPORT_DMABUF: %s", strerror(errno));
	return x.fd;
}

static struct ibv_wc wait_one(struct ibv_cq *cq)
{
	struct timespec t0, t;
	struct ibv_wc wc;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0)
			DIE("ibv_poll_cq");
		if (n)
			return wc;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 120)
			DIE("no completion in 120 s");
		usleep(100);
	}
}

static int post_rdma(struct ibv_qp *qp, struct ibv_mr *mr, enum ibv_wr_opcode op,
		     uint64_t local, uint32_t len, uint64_t remote, uint32_t rkey)
{
	struct ibv_sge sge = { .addr = local, .length = len, .lkey = mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	if (op != IBV_WR_SEND) {
		wr.wr.rdma.remote_addr = remote;
		wr.wr.rdma.rkey = rkey;
	}
	if (ibv_post_send(qp, &wr, &bad))
		DIE("ibv_post_send: %s", strerror(errno));
	wc = wait_one(qp->send_cq);
	return wc.status;
}

static int check(const char *what, int ok)
{
	printf("%s: %s\n", what, ok ? "ok" : "MISMATCH");
	fflush(stdout);
	return !ok;
}

/*
 * Like check() for a step that moved data: on a mismatch say why (the work
 * completion's status, or where the bytes first differ and how many do), so
 * a failure that happens once in a while explains itself.
 */
static int check_data(const char *what, int status, const uint8_t *seen, const uint8_t *want,
		      size_t len)
{
	size_t first = len, diff = 0;

	for (size_t i = 0; i < len; i++) {
		if (seen[i] == want[i])
			continue;
		if (first == len)
			first = i;
		diff++;
	}
	if (status == IBV_WC_SUCCESS && !diff)
		return check(what, 1);
	printf("%s: MISMATCH (status %d: %s", what, status, ibv_wc_status_str(status));
	if (diff)
		printf("; %zu of %zu bytes differ, the first at %zu: 0x%02x, want 0x%02x",
		       diff, len, first, seen[first], want[first]);
	printf(")\n");
	fflush(stdout);
	return 1;
}

int main(int argc, char **argv)
{
	const char *dev_name = NULL, *server = NULL, *node = "/dev/cnuasgpu0";
	int gid_index = 0, port = 18870, opt, failures = 0, sock, dfd, st;
	uint64_t size = 1 << 20, half;
	struct ibv_context *ctx;
	struct ibv_port_attr pa;
	union ibv_gid gid;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr, *atomic_mr;
	struct msg me = { .psn = 0x1234 }, peer;
	uint8_t *mine, *theirs, *seen;
	struct gpu g;

	while ((opt = getopt(argc, argv, "d:g:p:G:s:")) != -1) {
		if (rc_pair_opt(opt, optarg, &dev_name, &gid_index, &port))
			continue;
		if (opt == 'G')
			node = optarg;
		else if (opt == 's')
			size = strtoull(optarg, NULL, 0);
		else
			return 2;
	}
	if (optind < argc)
		server = argv[optind];
	if (size < 2 * SEND_LEN || size > (1ull << 30) || size % 4096)
		DIE("-s must be a multiple of 4096 from 8 KiB to 1 GiB");
	half = size / 2;

	ctx = open_device_by_name(dev_name);
	if (ibv_query_port(ctx, 1, &pa) || ibv_query_gid(ctx, 1, gid_index, &gid))
		DIE("open/query %s", dev_name);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	mine = malloc(size);
	theirs = malloc(size);
	seen = malloc(size);
	if (!pd || !cq || !mine || !theirs || !seen)
		DIE("resources");

	/* device memory with this end's pattern, exported, registered */
	dfd = gpu_setup(&g, node, size, server ? 2 : 1, mine);
	fill(theirs, size, server ? 1 : 2);
	mr = ibv_reg_dmabuf_mr(pd, 0, size, IOVA, dfd, MR_ACCESS);
	if (!mr)
		DIE("ibv_reg_dmabuf_mr(%llu bytes): %s", (unsigned long long)size,
		    strerror(errno));
	printf("registered %llu bytes of %s as a DMA-BUF MR: lkey 0x%x\n",
	       (unsigned long long)size, node, mr->lkey);
	atomic_mr = ibv_reg_dmabuf_mr(pd, 0, size, IOVA, dfd,
				      MR_ACCESS | IBV_ACCESS_REMOTE_ATOMIC);
	printf("remote atomics on a DMA-BUF MR: %s\n",
	       atomic_mr ? "accepted" : errno == EOPNOTSUPP ? "refused (EOPNOTSUPP)" :
	       strerror(errno));
	if (atomic_mr)
		ibv_dereg_mr(atomic_mr);

	qp = rc_create_qp(pd, cq, MR_ACCESS);
	me.qpn = qp->qp_num;
	memcpy(me.gid, gid.raw, 16);
	me.lid = rc_local_lid(ctx);
	me.addr = IOVA;
	me.rkey = mr->rkey;
	sock = tcp_rendezvous(server, port);
	tcp_xfer(sock, &me, &peer, sizeof(me));
	rc_connect(qp, me.psn, peer.qpn, peer.psn, peer.gid, peer.lid, gid_index,
		   pa.active_mtu, 7);

	/*
	 * Lock step over TCP: after each step that touches the server's memory
	 * the client reports it is done, then the server reports what it found.
	 */
	if (server) {
		/* the client */
		tcp_xfer(sock, &me, &peer, sizeof(me));		/* both at RTS */
		st = post_rdma(qp, mr, IBV_WR_RDMA_READ, IOVA + half, half, peer.addr, peer.rkey);
		gpu_copy(&g, half, seen, half, 0);
		failures += check_data("READ: the server's device memory into ours", st, seen,
				       theirs, half);

		st = post_rdma(qp, mr, IBV_WR_RDMA_WRITE, IOVA, half, peer.addr + half, peer.rkey);
		tcp_xfer(sock, &me, &peer, sizeof(me));		/* done */
		tcp_xfer(sock, &me, &peer, sizeof(me));		/* its verdict */
		if (st != IBV_WC_SUCCESS)
			printf("WRITE: status %d: %s\n", st, ibv_wc_status_str(st));
		failures += check("WRITE: ours into the server's device memory",
				  st == IBV_WC_SUCCESS && peer.status == 0);

		tcp_xfer(sock, &me, &peer, sizeof(me));		/* its receive is posted */
		st = post_rdma(qp, mr, IBV_WR_SEND, IOVA, SEND_LEN, 0, 0);
		tcp_xfer(sock, &me, &peer, sizeof(me));
		tcp_xfer(sock, &me, &peer, sizeof(me));
		failures += check("SEND: into a receive posted in the server's device memory",
				  st == IBV_WC_SUCCESS && peer.status == 0);

		st = post_rdma(qp, mr, IBV_WR_RDMA_WRITE, IOVA, 16, peer.addr + size - 8,
			       peer.rkey);
		tcp_xfer(sock, &me, &peer, sizeof(me));
		tcp_xfer(sock, &me, &peer, sizeof(me));
		failures += check("WRITE past the end of the server's DMA-BUF MR: remote "
				  "access error, no byte changed",
				  st == IBV_WC_REM_ACCESS_ERR && peer.status == 0);
		tcp_xfer(sock, &me, &peer, sizeof(me));		/* its lifetime checks */
		failures += check("the server's DMA-BUF lifetime checks", peer.status == 0);
	} else {
		/* the server: what each step should have left in device memory */
		struct ibv_sge sge = { .addr = IOVA, .length = SEND_LEN, .lkey = mr->lkey };
		struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *bad;
		uint64_t used;
		struct ibv_wc wc;
		int before;

		tcp_xfer(sock, &me, &peer, sizeof(me));		/* both at RTS */
		/* step 1 only reads; step 2 puts the client's first half in our second */
		tcp_xfer(sock, &me, &peer, sizeof(me));
		memcpy(mine + half, theirs, half);
		gpu_copy(&g, 0, seen, size, 0);
		me.status = check_data("device memory after the client's READ and WRITE",
				       IBV_WC_SUCCESS, seen, mine, size);
		failures += me.status;
		tcp_xfer(sock, &me, &peer, sizeof(me));

		if (ibv_post_recv(qp, &rwr, &bad))
			DIE("ibv_post_recv");
		tcp_xfer(sock, &me, &peer, sizeof(me));
		wc = wait_one(cq);
		tcp_xfer(sock, &me, &peer, sizeof(me));
		memcpy(mine, theirs, SEND_LEN);
		gpu_copy(&g, 0, seen, size, 0);
		me.status = wc.status != IBV_WC_SUCCESS || wc.byte_len != SEND_LEN ||
			    memcmp(seen, mine, size) != 0;
		failures += check("device memory after the client's SEND", !me.status);
		tcp_xfer(sock, &me, &peer, sizeof(me));

		tcp_xfer(sock, &me, &peer, sizeof(me));		/* the refused WRITE is done */
		gpu_copy(&g, 0, seen, size, 0);
		me.status = memcmp(seen, mine, size) != 0;
		failures += check("device memory after the refused WRITE", !me.status);
		tcp_xfer(sock, &me, &peer, sizeof(me));

		/* lifetime: the allocation stays until the last DMA-BUF reference goes */
		before = failures;
		used = gpu_attr(&g, "devmem_used");
		failures += check("one export while registered", gpu_attr(&g, "exports") == 1);
		{
			struct cnuasgpu_free f = { .handle = g.handle };

			if (ioctl(g.fd, CNUASGPU_IOC_FREE, &f))
				DIE("CNUASGPU_IOC_FREE: %s", strerror(errno));
		}
		failures += check("freed while exported and registered: still reserved",
				  gpu_attr(&g, "devmem_used") == used &&
				  gpu_attr(&g, "exports") == 1);
		close(dfd);
		failures += check("fd closed, MR still registered: still reserved",
				  gpu_attr(&g, "devmem_used") == used &&
				  gpu_attr(&g, "exports") == 1);
		if (ibv_destroy_qp(qp) || ibv_dereg_mr(mr))
			DIE("destroy QP / deregister MR");
		failures += check("MR deregistered, last reference gone: released",
				  gpu_attr(&g, "devmem_used") == used - size &&
				  gpu_attr(&g, "exports") == 0);
		me.status = failures != before;
		tcp_xfer(sock, &me, &peer, sizeof(me));
	}
	close(sock);
	if (failures) {
		printf("%d checks failed\n", failures);
		return 1;
	}
	printf("PASS\n");
	return 0;
}
