// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * uverbs_fuzz DEV CALLS SEED: at least CALLS verbs calls against the RDMA
 * device DEV, chosen by a PRNG seeded with SEED (the same seed makes the
 * same sequence of calls in the main phase), each of which must end in an
 * error or, where the call is valid, in success:
 *
 *   verbs      PD, CQ, QP (RC, UD, UC), MR, SRQ and AH created and
 *              destroyed through libibverbs with random and boundary
 *              attributes (0, 1, max, max + 1, huge; unmapped, NULL,
 *              read-only, kernel and wrapping MR ranges; invalid access
 *              bits), modify_qp with random masks, states and values,
 *              query_*, post_send/post_recv/post_srq_recv with bad SGE
 *              counts, keys and lengths, RC QPs connected to themselves so
 *              RDMA WRITE/READ/atomics with random keys and addresses run
 *              through the responder; ibv_reg_dmabuf_mr on a udmabuf and on
 *              fds that are none; a multicast group attached under several
 *              MLIDs
 *   raw        the same commands written straight to the context's
 *              command fd (the uverbs write ABI), past libibverbs' checks:
 *              stale handles (destroyed objects), garbage handles, handles
 *              of the wrong object type, in/out sizes too short, too long
 *              and 0, garbage driver data, response pointers that are
 *              NULL, unaligned, read-only, unmapped or in the kernel, and
 *              unknown command numbers; GET_CONTEXT on fresh fds; the
 *              destroy methods of RDMA_VERBS_IOCTL with the same handles
 *              and garbage header fields and attributes
 *   mmap       mmap of the command fd at random offsets and lengths, and
 *              of real rings with scribbles on their indices
 *   race       threads destroying a QP, its CQs, MR, AH and PD while
 *              others post to it, poll, modify and map its rings
 *   fork       children that use and destroy objects they inherited while
 *              the parent uses them too (uverbs refuses a child's write()
 *              on the parent's file; its ioctls go through)
 *
 * What must hold (checked; anything else only has to return):
 *   - a call naming a handle that is not a live object of the right type in
 *     this context (stale, garbage, wrong type) fails;
 *   - a create whose response cannot be written fails (the object must not
 *     exist without the caller knowing its handle);
 *   - destroying a PD, CQ or SRQ that objects still use fails;
 *   - capabilities past the device's (max_cqe, max_qp_wr, max_sge,
 *     max_srq_wr, huge max_inline_data) are refused;
 *   - MRs over NULL, unmapped, kernel or wrapping ranges, and remote write
 *     without local write, are refused;
 *   - invalid QP states, transitions from RESET other than to INIT/RESET/
 *     ERR, port numbers other than 1 are refused; ports other than 1 are
 *     refused by query_port and create_ah;
 *   - post_send with more SGEs than the device has is refused;
 *   - reg_dmabuf_mr of an fd that is no DMA-BUF, or past its end, fails;
 *   - every multicast attach that succeeded can be detached.
 *
 * Prints "seed N", "calls_total N", one "calls_KIND N" per kind, then
 * "violations N" and PASS or FAIL.  Exits 0 on PASS, 1 when a check failed,
 * 2 on usage errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/udmabuf.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#include "cnuas_ib_abi.h"
#include "verbs_util.h"

#define PAGE		4096UL
#define MAX_OBJ		96	/* live objects of one context we keep track of */
#define STALE_RING	64	/* destroyed handles remembered */
#define BUF_PAGES	16	/* the buffer MRs and SGEs point into */
#define SPILL_PAGES	8	/* read-write after buf: what MRs running past it cover */
#define GUARD_PAGES	16	/* PROT_NONE after the spill: no MR can be pinned across it */
#define KERNEL_ADDR	0xffffffff81000000ULL

#ifndef offsetofend
#define offsetofend(T, m) (offsetof(T, m) + sizeof(((T *)0)->m))
#endif

/* ---- the PRNG: xorshift64*, seeded with splitmix64(SEED) ---- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

static void seed_rng(uint64_t *state, uint64_t seed)
{
	uint64_t z = seed + 0x9e3779b97f4a7c15ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	*state = (z ^ (z >> 31)) | 1;
}

static uint32_t below(uint32_t n)
{
	return n ? (uint32_t)(rnd() % n) : 0;
}

static int chance(int pct)
{
	return (int)below(100) < pct;
}

/* ---- counting ---- */

enum kind {
	K_PD, K_CQ, K_QP, K_MR, K_SRQ, K_AH, K_MODIFY_QP, K_QUERY, K_POST_SEND,
	K_POST_RECV, K_POST_SRQ_RECV, K_POLL, K_CONNECT, K_RAW_CREATE,
	K_RAW_DESTROY, K_RAW_USE, K_RAW_SIZE, K_RAW_GARBAGE, K_RAW_CONTEXT,
	K_MMAP, K_RACE, K_FORK, K_DMABUF_MR, K_MCAST, K_IOCTL, K_KINDS
};

static const char *const kind_names[K_KINDS] = {
	[K_PD] = "pd", [K_CQ] = "cq", [K_QP] = "qp", [K_MR] = "mr",
	[K_SRQ] = "srq", [K_AH] = "ah", [K_MODIFY_QP] = "modify_qp",
	[K_QUERY] = "query", [K_POST_SEND] = "post_send",
	[K_POST_RECV] = "post_recv", [K_POST_SRQ_RECV] = "post_srq_recv",
	[K_POLL] = "poll", [K_CONNECT] = "connect",
	[K_RAW_CREATE] = "raw_create", [K_RAW_DESTROY] = "raw_destroy",
	[K_RAW_USE] = "raw_use", [K_RAW_SIZE] = "raw_size",
	[K_RAW_GARBAGE] = "raw_garbage", [K_RAW_CONTEXT] = "raw_context",
	[K_MMAP] = "mmap", [K_RACE] = "race", [K_FORK] = "fork",
	[K_DMABUF_MR] = "dmabuf_mr", [K_MCAST] = "mcast", [K_IOCTL] = "ioctl",
};

static atomic_long calls[K_KINDS];
static atomic_long oks[K_KINDS];	/* calls of the kind that succeeded */
static atomic_long violations;

static void count(enum kind k)
{
	atomic_fetch_add(&calls[k], 1);
}

static void ok(enum kind k)
{
	atomic_fetch_add(&oks[k], 1);
}

static long total_calls(void)
{
	long n = 0;
	int i;

	for (i = 0; i < K_KINDS; i++)
		n += atomic_load(&calls[i]);
	return n;
}

/* A call that had to fail succeeded, or something else impossible. */
static void violation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void violation(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stdout, "VIOLATION after %ld calls: ", total_calls());
	vfprintf(stdout, fmt, ap);
	fprintf(stdout, "\n");
	fflush(stdout);
	va_end(ap);
	atomic_fetch_add(&violations, 1);
}

#define MUST_FAIL(ok, ...) do { if (ok) violation(__VA_ARGS__); } while (0)

/* ---- memory the fuzz points at ---- */

static char *buf;		/* BUF_PAGES read-write pages, then the spill */
static char *ro_page;		/* one read-only page */
static char *none_page;		/* one PROT_NONE page: never readable */

/*
 * buf is followed by SPILL_PAGES of our own and then a guard: an MR that
 * starts in buf and runs past its end (accepted: that memory is mapped)
 * covers only the spill, and a longer one fails to pin at the guard.
 * Without them, what followed buf was whatever the loader had mapped there
 * (its own data among it), and RDMA WRITEs and receives through such an MR,
 * legal for the device, overwrote this process: seed 1899891213 crashed in
 * ld.so.
 */
static void map_memory(void)
{
	size_t usable = (BUF_PAGES + SPILL_PAGES) * PAGE;

	buf = mmap(NULL, usable + GUARD_PAGES * PAGE, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (buf != MAP_FAILED && mprotect(buf, usable, PROT_READ | PROT_WRITE))
		DIE("mprotect: %s", strerror(errno));
	ro_page = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	none_page = mmap(NULL, 4 * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED || ro_page == MAP_FAILED || none_page == MAP_FAILED)
		DIE("mmap: %s", strerror(errno));
	memset(buf, 0x5a, BUF_PAGES * PAGE);
}

/* An address somewhere in the read-write buffer, unaligned at times. */
static uint64_t buf_addr(void)
{
	uint64_t off = chance(50) ? below(BUF_PAGES) * PAGE : below(BUF_PAGES * PAGE);

	return (uintptr_t)buf + off;
}

/* Where a response goes: writable or not, aligned or not. */
enum resp_where { RW_OK, RW_UNALIGNED, RW_NULL, RW_RO, RW_NONE, RW_KERNEL, RW_WHERE };

static void *resp_ptr(enum resp_where w, void *good)
{
	switch (w) {
	case RW_OK:
		return good;
	case RW_UNALIGNED:
		return (char *)good + 1;
	case RW_NULL:
		return NULL;
	case RW_RO:
		return ro_page;
	case RW_NONE:
		return none_page + PAGE;
	default:
		return (void *)(uintptr_t)KERNEL_ADDR;
	}
}

static int resp_writable(enum resp_where w)
{
	return w == RW_OK || w == RW_UNALIGNED;
}

/* ---- objects of a context ---- */

enum otype { T_PD, T_CQ, T_QP, T_MR, T_SRQ, T_AH, T_TYPES };

static const char *const type_names[T_TYPES] = {
	"PD", "CQ", "QP", "MR", "SRQ", "AH",
};

struct obj {
	int type;
	uint32_t handle;
	int raw;		/* made by a raw command: no libibverbs object */
	void *v;		/* the libibverbs object otherwise */
	uint32_t pd, scq, rcq, srq;	/* handles it holds (~0U: none) */
	uint32_t qpn, lkey, rkey, max_sge;
	uint64_t addr, len;	/* an MR's range */
	int qp_type;
	int pinned;		/* something may still hold it (mcast attach) */
	uint64_t mmap_off, mmap_len;	/* its ring, when it has one */
};

struct fctx {
	struct ibv_context *ctx;
	struct obj o[MAX_OBJ];
	int n;
	uint32_t stale[STALE_RING];
	int nstale;
	int untracked;		/* a handle may be live that we do not know */
	int gid_index;		/* a GID of port 1 that is set, or -1 */
	union ibv_gid gid;
	struct ibv_device_attr attr;
	char name[64];		/* the device's */
};

static struct fctx main_ctx;

static struct obj *find(struct fctx *f, uint32_t h)
{
	int i;

	for (i = 0; i < f->n; i++)
		if (f->o[i].handle == h)
			return &f->o[i];
	return NULL;
}

/* Is @h a live object of @type in @f, as far as we know? */
static int live_as(struct fctx *f, uint32_t h, int type)
{
	struct obj *o = find(f, h);

	return f->untracked || (o && o->type == type);
}

static struct obj *add_obj(struct fctx *f, int type, uint32_t handle, int raw, void *v)
{
	struct obj *o;

	if (f->n == MAX_OBJ)
		DIE("object table full");
	o = &f->o[f->n++];
	memset(o, 0, sizeof(*o));
	o->type = type;
	o->handle = handle;
	o->raw = raw;
	o->v = v;
	o->pd = o->scq = o->rcq = o->srq = ~0U;
	return o;
}

static void del_obj(struct fctx *f, struct obj *o)
{
	f->stale[f->nstale++ % STALE_RING] = o->handle;
	*o = f->o[--f->n];
}

/* Objects that hold @o: MRs/QPs/SRQs/AHs of a PD, QPs of a CQ or an SRQ. */
static int users(struct fctx *f, const struct obj *o)
{
	int i, n = 0;

	for (i = 0; i < f->n; i++) {
		const struct obj *u = &f->o[i];

		if ((o->type == T_PD && u->pd == o->handle) ||
		    (o->type == T_CQ && (u->scq == o->handle || u->rcq == o->handle)) ||
		    (o->type == T_SRQ && u->srq == o->handle))
			n++;
	}
	return n;
}

/* A random live object of @type (@raw: -1 any, 0 verbs only, 1 raw only). */
static struct obj *pick(struct fctx *f, int type, int raw)
{
	struct obj *cand[MAX_OBJ];
	int i, n = 0;

	for (i = 0; i < f->n; i++)
		if (f->o[i].type == type && (raw < 0 || f->o[i].raw == raw))
			cand[n++] = &f->o[i];
	return n ? cand[below(n)] : NULL;
}

/* A random live object of @type on PD @pd, or NULL. */
static struct obj *pick_on(struct fctx *f, int type, uint32_t pd)
{
	struct obj *cand[MAX_OBJ];
	int i, n = 0;

	for (i = 0; i < f->n; i++)
		if (f->o[i].type == type && f->o[i].pd == pd)
			cand[n++] = &f->o[i];
	return n ? cand[below(n)] : NULL;
}

static int count_type(struct fctx *f, int type)
{
	int i, n = 0;

	for (i = 0; i < f->n; i++)
		n += f->o[i].type == type;
	return n;
}

/* At most this many of each type live in one context: others fuzz too. */
static const int type_cap[T_TYPES] = { 8, 16, 16, 24, 8, 8 };

static int full(struct fctx *f, int type)
{
	return count_type(f, type) >= type_cap[type] || f->n > MAX_OBJ - 8;
}

/*
 * A handle for a command that wants a @type: mostly a live one, else a
 * stale one, one of another type, a small number or a random 32-bit value.
 */
static uint32_t pick_handle(struct fctx *f, int type)
{
	uint32_t r = below(100);
	struct obj *o;

	if (r < 55 && (o = pick(f, type, -1)))
		return o->handle;
	if (r < 70 && f->nstale)
		return f->stale[below(f->nstale < STALE_RING ? f->nstale : STALE_RING)];
	if (r < 85 && f->n)
		return f->o[below(f->n)].handle;
	if (r < 93)
		return below(64);
	return (uint32_t)rnd();
}

/* ---- the raw write interface ---- */

struct raw_cmd {
	struct ib_uverbs_cmd_hdr hdr;
	union {
		uint64_t words[512];
		unsigned char bytes[4096];
	} u;
};

/* Response room: big enough for any core response and its driver part. */
static uint64_t respbuf[64];

/*
 * Write command @cmd with @req_size bytes of request (without the header)
 * to @fd, the sizes mangled at times.  @resp_size is what the command's
 * core response plus our driver's part take.  Return 0 or -errno.
 */
static int raw_write(int fd, uint32_t cmd, struct raw_cmd *c, size_t req_size,
		     size_t resp_size, int mangle)
{
	size_t in = sizeof(c->hdr) + req_size, count;
	size_t out = resp_size;
	ssize_t n;

	if (mangle) {
		switch (below(8)) {
		case 0:
			in = sizeof(c->hdr) + below(req_size + 1);	/* short */
			break;
		case 1:
			in += 8 * below(32);				/* udata */
			break;
		case 2:
			out = below(resp_size + 1);			/* short */
			break;
		case 3:
			out = resp_size + 4 * below(64);		/* long */
			break;
		case 4:
			out = 0;
			break;
		case 5:
			in = sizeof(c->hdr);
			break;
		default:
			in += 4 * below(4);
			out = 4 * below(128);
			break;
		}
	}
	if (in > sizeof(*c))
		in = sizeof(*c);
	if (out > sizeof(respbuf))
		out = sizeof(respbuf);
	c->hdr.command = cmd;
	c->hdr.in_words = in / 4;
	c->hdr.out_words = out / 4;
	count = in;
	if (mangle && chance(10))
		count = below(in + 16);		/* count and in_words disagree */
	n = write(fd, c, count);
	return n < 0 ? -errno : 0;
}

/* Fill @c's request with garbage after the fields a case sets. */
static void garbage(struct raw_cmd *c)
{
	size_t i;

	for (i = 0; i < sizeof(c->u.words) / sizeof(c->u.words[0]); i++)
		c->u.words[i] = chance(50) ? 0 : rnd();
}

/* ---- verbs: PD, CQ, MR, SRQ, AH ---- */

/* An MR over all of buf with every access, on @pd; NULL when refused. */
static struct obj *home_mr(struct fctx *f, struct ibv_pd *pd)
{
	struct ibv_mr *mr;
	struct obj *o;

	count(K_MR);
	mr = ibv_reg_mr(pd, buf, BUF_PAGES * PAGE, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC);
	if (!mr)
		return NULL;
	ok(K_MR);
	o = add_obj(f, T_MR, mr->handle, 0, mr);
	o->pd = pd->handle;
	o->lkey = mr->lkey;
	o->rkey = mr->rkey;
	o->addr = (uintptr_t)buf;
	o->len = BUF_PAGES * PAGE;
	return o;
}

static void do_pd(struct fctx *f)
{
	struct obj *o = pick(f, T_PD, 0);
	struct ibv_pd *pd;

	count(K_PD);
	if (o && (chance(50) || full(f, T_PD))) {
		int busy = users(f, o), err = ibv_dealloc_pd(o->v);

		MUST_FAIL(busy && !err, "dealloc_pd of a PD with %d users succeeded", busy);
		if (!err)
			del_obj(f, o);
		return;
	}
	if (full(f, T_PD))
		return;
	pd = ibv_alloc_pd(f->ctx);
	if (pd) {
		ok(K_PD);
		add_obj(f, T_PD, pd->handle, 0, pd);
		/* most PDs get an MR over all of buf: the valid posts use it */
		if (chance(70) && !full(f, T_MR))
			home_mr(f, pd);
	}
}

/* A CQ size: 0, 1, max, max + 1, huge, negative or random. */
static int cq_size(struct fctx *f)
{
	switch (below(8)) {
	case 0: return 0;
	case 1: return 1;
	case 2: return f->attr.max_cqe;
	case 3: return f->attr.max_cqe + 1;
	case 4: return INT32_MAX;
	case 5: return -1 - (int)below(1000);
	case 6: return f->attr.max_cqe * 2 + (int)below(1000);
	default: return 1 + (int)below(f->attr.max_cqe);
	}
}

static void do_cq(struct fctx *f)
{
	struct obj *o = pick(f, T_CQ, 0);
	struct ibv_cq *cq;
	int cqe;

	count(K_CQ);
	if (o && (chance(50) || full(f, T_CQ))) {
		int busy = users(f, o), err = ibv_destroy_cq(o->v);

		MUST_FAIL(busy && !err, "destroy_cq of a CQ with %d QPs succeeded", busy);
		if (!err)
			del_obj(f, o);
		return;
	}
	if (full(f, T_CQ))
		return;
	cqe = cq_size(f);
	cq = ibv_create_cq(f->ctx, cqe, NULL, NULL, chance(90) ? 0 : (int)below(4) - 1);
	MUST_FAIL(cq && cqe > f->attr.max_cqe, "create_cq with %d > max_cqe %d entries succeeded",
		  cqe, f->attr.max_cqe);
	if (cq) {
		ok(K_CQ);
		add_obj(f, T_CQ, cq->handle, 0, cq);
	}
}

enum mr_where { M_BUF, M_NULL, M_RO, M_NONE, M_KERNEL, M_WRAP, M_PAST, M_WHERE };

static void do_mr(struct fctx *f)
{
	struct obj *o = pick(f, T_MR, 0), *pd = pick(f, T_PD, 0);
	enum mr_where where = below(M_WHERE);
	uint64_t addr = 0, len;
	unsigned int access;
	struct ibv_mr *mr;
	int must_fail = 0;

	count(K_MR);
	if (o && (chance(45) || full(f, T_MR))) {
		if (!ibv_dereg_mr(o->v))
			del_obj(f, o);
		return;
	}
	if (!pd || full(f, T_MR))
		return;
	switch (below(6)) {
	case 0: len = 0; break;
	case 1: len = 1; break;
	case 2: len = PAGE; break;
	case 3: len = 1ULL << (32 + below(20)); break;
	case 4: len = 0x100000000ULL; break;
	default: len = 1 + below(4 * PAGE); break;
	}
	switch (where) {
	case M_BUF:
		addr = buf_addr();
		/* the spill follows buf, then the guard: only a length past max_mr_size must fail */
		must_fail = len > f->attr.max_mr_size;
		break;
	case M_NULL:
		addr = below(64);
		must_fail = len != 0;
		break;
	case M_RO:
		addr = (uintptr_t)ro_page + below(64);
		must_fail = len > f->attr.max_mr_size;
		break;
	case M_NONE:
		addr = (uintptr_t)none_page + PAGE + below(PAGE);
		must_fail = len != 0;
		break;
	case M_KERNEL:
		addr = KERNEL_ADDR + below(PAGE);
		must_fail = len != 0;
		break;
	case M_WRAP:
		addr = UINT64_MAX - below(2 * PAGE);
		if (len < 2 * PAGE)
			len = 2 * PAGE + below(PAGE);
		must_fail = 1;
		break;
	default:
		addr = (uintptr_t)buf + BUF_PAGES * PAGE - below(64);
		if (len < 128)
			len = 128 + below(PAGE);
		/* buf's end is followed by the spill: accepted */
		break;
	}
	switch (below(5)) {
	case 0: access = (unsigned int)rnd(); break;
	case 1: access = IBV_ACCESS_REMOTE_WRITE; must_fail = 1; break;
	case 2: access = IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_REMOTE_READ; must_fail = 1; break;
	case 3: access = 0; break;
	default:
		access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
		break;
	}
	if (where == M_RO && (access & IBV_ACCESS_LOCAL_WRITE))
		must_fail = len != 0;
	mr = ibv_reg_mr(pd->v, (void *)(uintptr_t)addr, len, access);
	MUST_FAIL(mr && must_fail, "reg_mr(0x%" PRIx64 ", %" PRIu64 ", access 0x%x) succeeded",
		  addr, len, access);
	if (mr) {
		ok(K_MR);
		o = add_obj(f, T_MR, mr->handle, 0, mr);
		o->pd = pd->handle;
		o->lkey = mr->lkey;
		o->rkey = mr->rkey;
		o->addr = addr;
		o->len = len;
	}
}

/* A real DMA-BUF (udmabuf over a memfd) of DMABUF_SIZE bytes, or -1. */
#define DMABUF_SIZE	(16 * PAGE)
static int dmabuf_fd = -1;
static int memfd = -1;

static void make_dmabuf(void)
{
	struct udmabuf_create c = { .flags = UDMABUF_FLAGS_CLOEXEC, .size = DMABUF_SIZE };
	int ufd = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);

	memfd = memfd_create("uverbs_fuzz", MFD_ALLOW_SEALING | MFD_CLOEXEC);
	if (memfd < 0 || ftruncate(memfd, DMABUF_SIZE) ||
	    fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK) || ufd < 0) {
		if (ufd >= 0)
			close(ufd);
		return;
	}
	c.memfd = memfd;
	dmabuf_fd = ioctl(ufd, UDMABUF_CREATE, &c);
	close(ufd);
}

/*
 * ibv_reg_dmabuf_mr: the real DMA-BUF with ranges in, at and past its end,
 * and fds that are no DMA-BUF (memfd, the command fd, closed, -1).  Must
 * fail: an fd that is no DMA-BUF, a range past the DMA-BUF's end.
 */
static void do_dmabuf_mr(struct fctx *f)
{
	struct obj *pd = pick(f, T_PD, 0), *o;
	uint64_t off, len, end;
	unsigned int access;
	struct ibv_mr *mr;
	int fd, must_fail;

	if (!pd || full(f, T_MR))
		return;
	count(K_DMABUF_MR);
	switch (dmabuf_fd >= 0 ? below(8) : 4 + below(4)) {
	case 0: case 1: case 2: case 3: fd = dmabuf_fd; break;
	case 4: fd = memfd; break;
	case 5: fd = f->ctx->cmd_fd; break;
	case 6: fd = 1000 + below(1000); break;
	default: fd = -1; break;
	}
	switch (below(6)) {
	case 0: off = 0; break;
	case 1: off = below(4) * PAGE; break;
	case 2: off = below(DMABUF_SIZE); break;
	case 3: off = DMABUF_SIZE - below(2); break;
	case 4: off = rnd(); break;
	default: off = UINT64_MAX - below(PAGE); break;
	}
	switch (below(6)) {
	case 0: len = 0; break;
	case 1: len = PAGE; break;
	case 2: len = DMABUF_SIZE - off % DMABUF_SIZE; break;
	case 3: len = DMABUF_SIZE + 1; break;
	case 4: len = rnd(); break;
	default: len = 1 + below(2 * PAGE); break;
	}
	access = chance(70) ? IBV_ACCESS_LOCAL_WRITE | below(8) : (unsigned int)rnd();
	must_fail = fd != dmabuf_fd || __builtin_add_overflow(off, len, &end) ||
		    end > DMABUF_SIZE;
	mr = ibv_reg_dmabuf_mr(pd->v, off, len, chance(70) ? off : rnd(), fd, (int)access);
	MUST_FAIL(mr && must_fail, "reg_dmabuf_mr(fd %d%s, offset %" PRIu64 ", length %" PRIu64
		  ") succeeded", fd, fd == dmabuf_fd ? " (the DMA-BUF)" : "", off, len);
	if (!mr)
		return;
	ok(K_DMABUF_MR);
	o = add_obj(f, T_MR, mr->handle, 0, mr);
	o->pd = pd->handle;
	o->lkey = mr->lkey;
	o->rkey = mr->rkey;
	o->addr = mr->addr ? (uintptr_t)mr->addr : 0;
	o->len = 0;	/* not buf's memory: no SGE of the valid sends points here */
}

static void do_srq(struct fctx *f)
{
	struct obj *o = pick(f, T_SRQ, 0), *pd = pick(f, T_PD, 0);
	struct ibv_srq_init_attr ia = {};
	struct ibv_srq *srq;
	int too_big;

	count(K_SRQ);
	if (o && (chance(45) || full(f, T_SRQ))) {
		int busy = users(f, o), err = ibv_destroy_srq(o->v);

		MUST_FAIL(busy && !err, "destroy_srq of an SRQ with %d QPs succeeded", busy);
		if (!err)
			del_obj(f, o);
		return;
	}
	if (!pd || full(f, T_SRQ))
		return;
	switch (below(4)) {
	case 0: ia.attr.max_wr = below(3); break;
	case 1: ia.attr.max_wr = f->attr.max_srq_wr + below(2); break;
	case 2: ia.attr.max_wr = (uint32_t)rnd(); break;
	default: ia.attr.max_wr = 1 + below(64); break;
	}
	ia.attr.max_sge = chance(70) ? 1 + below(f->attr.max_srq_sge) :
				       (chance(50) ? 0 : (uint32_t)rnd());
	ia.attr.srq_limit = chance(70) ? below(ia.attr.max_wr + 1) : (uint32_t)rnd();
	too_big = ia.attr.max_wr > (uint32_t)f->attr.max_srq_wr ||
		  ia.attr.max_sge > (uint32_t)f->attr.max_srq_sge;
	srq = ibv_create_srq(pd->v, &ia);
	MUST_FAIL(srq && too_big, "create_srq(max_wr %u, max_sge %u) past the device's succeeded",
		  ia.attr.max_wr, ia.attr.max_sge);
	if (srq) {
		ok(K_SRQ);
		o = add_obj(f, T_SRQ, srq->handle, 0, srq);
		o->pd = pd->handle;
	}
}

static void random_gid(struct fctx *f, uint8_t *gid)
{
	size_t i;

	if (f->gid_index >= 0 && chance(60)) {
		memcpy(gid, f->gid.raw, 16);
		return;
	}
	for (i = 0; i < 16; i++)
		gid[i] = chance(50) ? 0 : (uint8_t)rnd();
	if (chance(30)) {	/* multicast */
		gid[0] = 0xff;
		gid[1] = 0x0e;
	}
}

static void do_ah(struct fctx *f)
{
	struct obj *o = pick(f, T_AH, 0), *pd = pick(f, T_PD, 0);
	struct ibv_ah_attr aa = {};
	struct ibv_ah *ah;

	count(K_AH);
	if (o && (chance(45) || full(f, T_AH))) {
		if (!ibv_destroy_ah(o->v))
			del_obj(f, o);
		return;
	}
	if (!pd || full(f, T_AH))
		return;
	aa.port_num = chance(80) ? 1 : (uint8_t)below(256);
	aa.is_global = chance(85);
	aa.dlid = (uint16_t)rnd();
	aa.sl = (uint8_t)rnd();
	aa.src_path_bits = (uint8_t)rnd();
	aa.static_rate = chance(80) ? 0 : (uint8_t)rnd();
	random_gid(f, aa.grh.dgid.raw);
	aa.grh.sgid_index = chance(70) && f->gid_index >= 0 ? f->gid_index : (uint8_t)rnd();
	aa.grh.hop_limit = (uint8_t)rnd();
	aa.grh.flow_label = (uint32_t)rnd();
	aa.grh.traffic_class = (uint8_t)rnd();
	ah = ibv_create_ah(pd->v, &aa);
	MUST_FAIL(ah && aa.port_num != 1, "create_ah on port %u succeeded", aa.port_num);
	if (ah) {
		ok(K_AH);
		o = add_obj(f, T_AH, ah->handle, 0, ah);
		o->pd = pd->handle;
	}
}

/* ---- verbs: QPs ---- */

static uint32_t cap_value(uint32_t max)
{
	switch (below(7)) {
	case 0: return 0;
	case 1: return 1;
	case 2: return max;
	case 3: return max + 1;
	case 4: return (uint32_t)rnd();
	case 5: return UINT32_MAX;
	default: return 1 + below(max ? max : 1);
	}
}

static void do_qp(struct fctx *f)
{
	static const enum ibv_qp_type types[] = { IBV_QPT_RC, IBV_QPT_UD, IBV_QPT_UC };
	struct obj *o = pick(f, T_QP, 0), *pd = pick(f, T_PD, 0);
	struct obj *scq = pick(f, T_CQ, 0), *rcq = pick(f, T_CQ, 0), *srq = NULL;
	struct ibv_qp_init_attr ia = {};
	struct ibv_qp *qp;
	int too_big;

	count(K_QP);
	if (o && (chance(45) || full(f, T_QP))) {
		if (!ibv_destroy_qp(o->v))
			del_obj(f, o);
		return;
	}
	if (!pd || !scq || !rcq || full(f, T_QP))
		return;
	if (chance(25))
		srq = pick(f, T_SRQ, 0);
	ia.qp_type = types[below(3)];
	ia.send_cq = scq->v;
	ia.recv_cq = rcq->v;
	ia.srq = srq ? srq->v : NULL;
	ia.sq_sig_all = chance(50);
	if (chance(60)) {
		ia.cap.max_send_wr = 1 + below(64);
		ia.cap.max_recv_wr = 1 + below(64);
		ia.cap.max_send_sge = 1 + below(f->attr.max_sge);
		ia.cap.max_recv_sge = 1 + below(f->attr.max_sge);
		ia.cap.max_inline_data = below(3) == 0 ? below(512) : 0;
	} else {
		ia.cap.max_send_wr = cap_value(f->attr.max_qp_wr);
		ia.cap.max_recv_wr = cap_value(f->attr.max_qp_wr);
		ia.cap.max_send_sge = cap_value(f->attr.max_sge);
		ia.cap.max_recv_sge = cap_value(f->attr.max_sge);
		ia.cap.max_inline_data = chance(50) ? cap_value(256) : (uint32_t)rnd();
	}
	too_big = ia.cap.max_send_wr > (uint32_t)f->attr.max_qp_wr ||
		  ia.cap.max_send_sge > (uint32_t)f->attr.max_sge ||
		  ia.cap.max_inline_data > (1U << 20);
	qp = ibv_create_qp(pd->v, &ia);
	MUST_FAIL(qp && too_big,
		  "create_qp(send wr %u, sge %u, inline %u) past the device's succeeded",
		  ia.cap.max_send_wr, ia.cap.max_send_sge, ia.cap.max_inline_data);
	if (qp) {
		ok(K_QP);
		o = add_obj(f, T_QP, qp->handle, 0, qp);
		o->pd = pd->handle;
		o->scq = scq->handle;
		o->rcq = rcq->handle;
		o->srq = srq ? srq->handle : ~0U;
		o->qpn = qp->qp_num;
		o->qp_type = ia.qp_type;
		o->max_sge = ia.cap.max_send_sge;
	}
}

static int current_state(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return -1;
	return a.qp_state;
}

/* Random attributes for modify_qp: mostly sane, at times out of range. */
static void random_qp_attr(struct fctx *f, struct ibv_qp_attr *a, uint32_t own_qpn)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = chance(90) ? below(7) : (uint8_t)rnd();
	a->cur_qp_state = chance(90) ? below(7) : (uint8_t)rnd();
	a->path_mtu = chance(80) ? 1 + below(5) : (uint8_t)rnd();
	a->qkey = chance(50) ? 0x11111111 : (uint32_t)rnd();
	a->rq_psn = (uint32_t)rnd();
	a->sq_psn = (uint32_t)rnd();
	a->dest_qp_num = chance(50) ? own_qpn :
			 (chance(50) ? (uint32_t)rnd() : 0xffffff + below(4));
	a->qp_access_flags = chance(70) ? below(16) : (unsigned int)rnd();
	a->pkey_index = chance(80) ? 0 : (uint16_t)rnd();
	a->port_num = chance(80) ? 1 : (uint8_t)rnd();
	a->max_rd_atomic = chance(80) ? below(17) : (uint8_t)rnd();
	a->max_dest_rd_atomic = chance(80) ? below(17) : (uint8_t)rnd();
	a->min_rnr_timer = (uint8_t)rnd();
	a->timeout = (uint8_t)rnd();
	a->retry_cnt = (uint8_t)rnd();
	a->rnr_retry = (uint8_t)rnd();
	a->ah_attr.port_num = chance(85) ? 1 : (uint8_t)rnd();
	a->ah_attr.is_global = chance(85);
	a->ah_attr.dlid = (uint16_t)rnd();
	random_gid(f, a->ah_attr.grh.dgid.raw);
	a->ah_attr.grh.sgid_index = chance(80) && f->gid_index >= 0 ? f->gid_index :
								   (uint8_t)rnd();
	a->ah_attr.grh.hop_limit = 64;
}

/*
 * The next step of @o's way to RTS from @cur (or to ERR/RESET), with the
 * right mask, and at times one field made invalid: a port other than 1, a
 * P_Key index past the table, a path MTU that is no MTU must be refused.
 */
static void sane_modify(struct fctx *f, struct obj *o, int cur)
{
	struct ibv_qp_attr a = {};
	int mask = IBV_QP_STATE, must_fail = 0, err;
	struct obj *peer = pick(f, T_QP, -1);

	switch (cur) {
	case IBV_QPS_RESET:
		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (o->qp_type == IBV_QPT_UD) {
			a.qkey = 0x11111111;
			mask |= IBV_QP_QKEY;
		} else {
			a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
			mask |= IBV_QP_ACCESS_FLAGS;
		}
		break;
	case IBV_QPS_INIT:
		a.qp_state = IBV_QPS_RTR;
		if (o->qp_type == IBV_QPT_UD || f->gid_index < 0)
			break;
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = peer && chance(70) ? peer->qpn : o->qpn;
		a.max_dest_rd_atomic = below(17);
		a.min_rnr_timer = below(32);
		a.ah_attr.is_global = 1;
		a.ah_attr.port_num = 1;
		a.ah_attr.grh.dgid = f->gid;
		a.ah_attr.grh.sgid_index = f->gid_index;
		a.ah_attr.grh.hop_limit = 64;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		if (o->qp_type == IBV_QPT_RC)
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		break;
	case IBV_QPS_RTR:
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = (uint32_t)rnd() & 0xffffff;
		mask |= IBV_QP_SQ_PSN;
		if (o->qp_type == IBV_QPT_RC) {
			a.timeout = below(32);
			a.retry_cnt = below(8);
			a.rnr_retry = below(8);
			a.max_rd_atomic = below(17);
			mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				IBV_QP_MAX_QP_RD_ATOMIC;
		}
		break;
	default:
		a.qp_state = chance(50) ? IBV_QPS_ERR : IBV_QPS_RESET;
		break;
	}
	switch (below(8)) {
	case 0:
		if (mask & IBV_QP_PORT) {
			a.port_num = chance(50) ? 0 : 2 + below(254);
			must_fail = 1;
		}
		break;
	case 1:
		if (mask & IBV_QP_PKEY_INDEX) {
			a.pkey_index = 1 + below(0xffff);
			must_fail = 1;
		}
		break;
	case 2:
		if (mask & IBV_QP_PATH_MTU) {
			a.path_mtu = chance(50) ? 0 : 6 + below(250);
			must_fail = 1;
		}
		break;
	case 3:
		a.dest_qp_num = 0x1000000U | (uint32_t)rnd();	/* past 24 bits */
		break;
	case 4:
		a.ah_attr.grh.sgid_index = (uint8_t)rnd();
		break;
	default:
		break;
	}
	err = ibv_modify_qp(o->v, &a, mask);
	if (!err)
		ok(K_MODIFY_QP);
	MUST_FAIL(!err && must_fail,
		  "modify_qp %d -> %d with port %u, pkey index %u, path MTU %u succeeded",
		  cur, a.qp_state, a.port_num, a.pkey_index, a.path_mtu);
}

static void do_modify_qp(struct fctx *f)
{
	struct obj *o = pick(f, T_QP, 0);
	struct ibv_qp_attr a;
	int mask, cur, err;

	if (!o)
		return;
	count(K_MODIFY_QP);
	cur = current_state(o->v);
	count(K_QUERY);
	if (cur >= 0 && chance(60)) {
		sane_modify(f, o, cur);
		return;
	}
	random_qp_attr(f, &a, o->qpn);
	mask = chance(60) ? (int)(rnd() & 0x1fffff) : (int)(rnd() & 0x7fffffff);
	if (chance(80))
		mask |= IBV_QP_STATE;
	if (chance(85))
		mask &= ~IBV_QP_CUR_STATE;
	err = ibv_modify_qp(o->v, &a, mask);
	if (!err)
		ok(K_MODIFY_QP);
	if (!err && (mask & IBV_QP_STATE) && a.qp_state > IBV_QPS_ERR)
		violation("modify_qp to state %u succeeded", a.qp_state);
	if (!err && (mask & IBV_QP_CUR_STATE) && a.cur_qp_state > IBV_QPS_ERR)
		violation("modify_qp from claimed state %u succeeded", a.cur_qp_state);
	if (!err && (mask & IBV_QP_PORT) && a.port_num != 1)
		violation("modify_qp to port %u succeeded", a.port_num);
	if (!err && cur == IBV_QPS_RESET && !(mask & IBV_QP_CUR_STATE) && (mask & IBV_QP_STATE) &&
	    a.qp_state != IBV_QPS_RESET && a.qp_state != IBV_QPS_INIT && a.qp_state != IBV_QPS_ERR)
		violation("modify_qp RESET -> %u succeeded", a.qp_state);
}

/*
 * Connect an RC QP to itself (or a UD QP to RTS) with valid attributes, so
 * the posts that follow run through the transport.
 */
static void connect_qp(struct fctx *f, struct obj *o)
{
	struct ibv_qp_attr a = {};

	if (f->gid_index < 0 || o->qp_type == IBV_QPT_UC)
		return;
	count(K_CONNECT);
	a.qp_state = IBV_QPS_RESET;
	ibv_modify_qp(o->v, &a, IBV_QP_STATE);
	if (o->qp_type == IBV_QPT_UD) {
		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		a.qkey = 0x11111111;
		if (ibv_modify_qp(o->v, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_QKEY))
			return;
		a.qp_state = IBV_QPS_RTR;
		if (ibv_modify_qp(o->v, &a, IBV_QP_STATE))
			return;
		a.qp_state = IBV_QPS_RTS;
		if (!ibv_modify_qp(o->v, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
			ok(K_CONNECT);
		return;
	}
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	if (ibv_modify_qp(o->v, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		return;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = o->qpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = f->gid;
	a.ah_attr.grh.sgid_index = f->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	if (ibv_modify_qp(o->v, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			  IBV_QP_MIN_RNR_TIMER))
		return;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 1;
	a.retry_cnt = 1;
	a.rnr_retry = 1;
	a.max_rd_atomic = 4;
	if (!ibv_modify_qp(o->v, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			   IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		ok(K_CONNECT);
}

static void do_connect(struct fctx *f)
{
	struct obj *o = pick(f, T_QP, 0);

	if (o)
		connect_qp(f, o);
}

static void do_query(struct fctx *f)
{
	struct ibv_port_attr pa;
	struct ibv_qp_init_attr qia;
	struct ibv_qp_attr qa;
	struct ibv_srq_attr sa;
	union ibv_gid gid;
	struct ibv_device_attr da;
	struct obj *o;
	uint16_t pkey;
	uint8_t port;

	count(K_QUERY);
	switch (below(6)) {
	case 0:
		ibv_query_device(f->ctx, &da);
		break;
	case 1:
		port = chance(70) ? 1 : (uint8_t)rnd();
		MUST_FAIL(!ibv_query_port(f->ctx, port, &pa) && port != 1,
			  "query_port(%u) succeeded", port);
		break;
	case 2:
		ibv_query_gid(f->ctx, chance(80) ? 1 : (uint8_t)rnd(),
			      chance(50) ? (int)below(8) : (int)rnd(), &gid);
		break;
	case 3:
		ibv_query_pkey(f->ctx, chance(80) ? 1 : (uint8_t)rnd(),
			       chance(50) ? 0 : (int)rnd(), &pkey);
		break;
	case 4:
		o = pick(f, T_QP, 0);
		if (o)
			ibv_query_qp(o->v, &qa, (int)rnd(), &qia);
		break;
	default:
		o = pick(f, T_SRQ, 0);
		if (o)
			ibv_query_srq(o->v, &sa);
		break;
	}
}

/* SGEs pointing at the buffer or anywhere, with live, stale or random keys. */
static void random_sges(struct fctx *f, struct ibv_sge *sge, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		struct obj *mr = pick(f, T_MR, -1);

		switch (below(5)) {
		case 0: sge[i].addr = rnd(); break;
		case 1: sge[i].addr = (uintptr_t)none_page + PAGE; break;
		default: sge[i].addr = buf_addr(); break;
		}
		switch (below(6)) {
		case 0: sge[i].length = (uint32_t)rnd(); break;
		case 1: sge[i].length = UINT32_MAX - below(8); break;
		case 2: sge[i].length = 0; break;
		default: sge[i].length = below(2 * PAGE); break;
		}
		sge[i].lkey = mr && chance(70) ? mr->lkey : (uint32_t)rnd();
	}
}

/*
 * Make @wr (and nothing after it) a request the QP can carry, with its
 * buffers in an MR of the QP's PD, the remote side in an MR's range or a
 * little past it, and the key the MR's or another's.
 */
static int valid_send(struct fctx *f, struct obj *qp, struct ibv_send_wr *wr,
		      struct ibv_sge *sge, struct obj *ah)
{
	static const enum ibv_wr_opcode rc_ops[] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
		IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD,
	};
	struct obj *mr = pick_on(f, T_MR, qp->pd), *rmr = pick(f, T_MR, -1);
	struct obj *ah_pd = pick_on(f, T_AH, qp->pd);

	if (ah_pd && ah_pd->raw)
		ah_pd = NULL;	/* libibverbs wants its own AH object */
	if (!ah_pd && qp->qp_type == IBV_QPT_UD && f->gid_index >= 0 && f->n < MAX_OBJ - 8) {
		/* an AH to our own GID on the QP's PD */
		struct obj *pd = find(f, qp->pd);
		struct ibv_ah_attr aa = {
			.is_global = 1, .port_num = 1,
			.grh = { .dgid = f->gid, .sgid_index = f->gid_index, .hop_limit = 64 },
		};
		struct ibv_ah *a;

		count(K_AH);
		a = pd && !pd->raw ? ibv_create_ah(pd->v, &aa) : NULL;
		if (a) {
			ok(K_AH);
			ah_pd = add_obj(f, T_AH, a->handle, 0, a);
			ah_pd->pd = qp->pd;
		}
	}
	uint64_t len;

	if (!mr && f->n < MAX_OBJ - 8) {
		struct obj *pd = find(f, qp->pd);

		if (pd && !pd->raw)
			mr = home_mr(f, pd->v);
		rmr = rmr ? rmr : mr;
	}
	if (!mr || !mr->len)
		return 0;
	wr->next = NULL;
	wr->num_sge = 1;
	wr->sg_list = sge;
	wr->send_flags = IBV_SEND_SIGNALED;
	wr->opcode = qp->qp_type == IBV_QPT_RC ? rc_ops[below(7)] :
		     (chance(50) ? IBV_WR_SEND : IBV_WR_SEND_WITH_IMM);
	len = 1 + below(qp->qp_type == IBV_QPT_RC ? 8192 : 1024);
	if (len > mr->len)
		len = mr->len;
	if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
		len = 8;
	sge->addr = mr->addr + (mr->len > len ? below(mr->len - len + 1) & ~7ULL : 0);
	sge->length = len + (chance(10) ? below(64) : 0);	/* past the MR at times */
	sge->lkey = mr->lkey;
	if (rmr && rmr->len) {
		uint64_t ra = rmr->addr + (rmr->len > len ? below(rmr->len - len + 1) : 0);

		if (chance(15))
			ra = rmr->addr + rmr->len - below(16);	/* runs off the end */
		if (chance(5))
			ra = rmr->addr - 1 - below(64);		/* starts before it */
		wr->wr.rdma.remote_addr = ra;
		wr->wr.rdma.rkey = rmr->rkey;
		if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		    wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			wr->wr.atomic.remote_addr = chance(90) ? ra & ~7ULL : ra;
			wr->wr.atomic.rkey = rmr->rkey;
			wr->wr.atomic.compare_add = rnd();
			wr->wr.atomic.swap = rnd();
		}
	}
	if (qp->qp_type == IBV_QPT_UD) {
		wr->wr.ud.ah = (ah_pd ? ah_pd : ah)->v;
		wr->wr.ud.remote_qpn = qp->qpn;
		wr->wr.ud.remote_qkey = 0x11111111;
	}
	return 1;
}

/* How the valid-looking sends ended, by errno (0: posted). */
static long valid_send_err[128];

static void do_post_send(struct fctx *f)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
		IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD,
		IBV_WR_SEND_WITH_INV, IBV_WR_LOCAL_INV,
	};
	struct obj *o = pick(f, T_QP, 0), *ah = pick(f, T_AH, 0), *mr;
	struct ibv_send_wr wr[4], *bad;
	struct ibv_sge sge[4][20];
	int nwr = 1 + below(4), i, err, too_many = 0, inl_big = 0, valid = 0;

	if (!o || (o->qp_type == IBV_QPT_UD && !ah))
		return;
	if (chance(30) && current_state(o->v) != IBV_QPS_RTS) {
		count(K_QUERY);
		connect_qp(f, o);
	}
	count(K_POST_SEND);
	memset(wr, 0, sizeof(wr));
	for (i = 0; i < nwr; i++) {
		uint32_t tot = 0;
		int s;

		wr[i].wr_id = rnd();
		wr[i].next = i + 1 < nwr ? &wr[i + 1] : NULL;
		wr[i].num_sge = chance(80) ? (int)below(4) : (int)below(20);
		random_sges(f, sge[i], wr[i].num_sge);
		wr[i].sg_list = sge[i];
		wr[i].opcode = chance(90) ? ops[below(9)] : (enum ibv_wr_opcode)below(64);
		wr[i].send_flags = chance(80) ? (below(16) & ~IBV_SEND_INLINE) :
						(unsigned int)rnd();
		if (chance(10))
			wr[i].send_flags |= IBV_SEND_INLINE;
		wr[i].imm_data = (uint32_t)rnd();
		mr = pick(f, T_MR, -1);
		wr[i].wr.rdma.remote_addr = chance(60) ? buf_addr() : rnd();
		if (wr[i].opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		    wr[i].opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			wr[i].wr.atomic.remote_addr = wr[i].wr.rdma.remote_addr;
			wr[i].wr.atomic.rkey = mr && chance(70) ? mr->rkey : (uint32_t)rnd();
			wr[i].wr.atomic.compare_add = rnd();
			wr[i].wr.atomic.swap = rnd();
		} else {
			wr[i].wr.rdma.rkey = mr && chance(70) ? mr->rkey : (uint32_t)rnd();
		}
		if (o->qp_type == IBV_QPT_UD) {
			wr[i].wr.ud.ah = ah->v;
			wr[i].wr.ud.remote_qpn = chance(60) ? o->qpn : (uint32_t)rnd();
			wr[i].wr.ud.remote_qkey = chance(60) ? 0x11111111 : (uint32_t)rnd();
		}
		if (wr[i].num_sge > f->attr.max_sge)
			too_many = 1;
		for (s = 0; s < wr[i].num_sge; s++)
			tot += sge[i][s].length;
		if ((wr[i].send_flags & IBV_SEND_INLINE) && tot > 65536 &&
		    wr[i].num_sge <= f->attr.max_sge)
			inl_big = 1;
		(void)inl_big;
	}
	if (chance(50) && valid_send(f, o, &wr[0], sge[0], ah)) {
		too_many = 0;	/* the chain is that one request now */
		valid = 1;
	}
	err = ibv_post_send(o->v, wr, &bad);
	if (valid)
		valid_send_err[err > 0 && err < 128 ? err : 0]++;
	if (!err)
		ok(K_POST_SEND);
	MUST_FAIL(!err && too_many, "post_send with more than %d SGEs succeeded",
		  f->attr.max_sge);
}

static void do_post_recv(struct fctx *f)
{
	struct ibv_recv_wr wr[4], *bad;
	struct ibv_sge sge[4][20];
	struct obj *o;
	int nwr = 1 + below(4), i;
	int srq = chance(30);

	o = pick(f, srq ? T_SRQ : T_QP, 0);
	if (!o)
		return;
	count(srq ? K_POST_SRQ_RECV : K_POST_RECV);
	memset(wr, 0, sizeof(wr));
	for (i = 0; i < nwr; i++) {
		wr[i].wr_id = rnd();
		wr[i].next = i + 1 < nwr ? &wr[i + 1] : NULL;
		wr[i].num_sge = chance(80) ? (int)below(4) : (int)below(20);
		random_sges(f, sge[i], wr[i].num_sge);
		wr[i].sg_list = sge[i];
		if (chance(50)) {
			struct obj *mr = pick_on(f, T_MR, o->pd);

			if (mr && mr->len) {
				wr[i].num_sge = 1;
				sge[i][0].addr = mr->addr;
				sge[i][0].length = mr->len < 8192 ? mr->len : 8192;
				sge[i][0].lkey = mr->lkey;
			}
		}
	}
	if (srq ? !ibv_post_srq_recv(o->v, wr, &bad) : !ibv_post_recv(o->v, wr, &bad))
		ok(srq ? K_POST_SRQ_RECV : K_POST_RECV);
}

static void do_poll(struct fctx *f)
{
	struct obj *o = pick(f, T_CQ, 0);
	struct ibv_wc wc[8];

	if (!o)
		return;
	count(K_POLL);
	if (chance(20)) {
		if (!ibv_req_notify_cq(o->v, chance(50)))
			ok(K_POLL);
	} else {
		int n = ibv_poll_cq(o->v, 8, wc);

		if (n > 0)
			atomic_fetch_add(&oks[K_POLL], n);	/* completions */
	}
}

/* ---- raw commands ---- */

/* Remember a raw create's object; the handle is the response's first u32. */
static struct obj *raw_created(struct fctx *f, int type, enum resp_where w, void *good,
			       const char *what)
{
	uint32_t h;

	if (!resp_writable(w)) {
		violation("raw %s succeeded with an unwritable response (%d)", what, w);
		f->untracked = 1;
		return NULL;
	}
	memcpy(&h, resp_ptr(w, good), sizeof(h));
	if (!f->untracked && find(f, h)) {
		violation("raw %s returned handle %u, already live", what, h);
		f->untracked = 1;
		return NULL;
	}
	if (f->n == MAX_OBJ) {
		f->untracked = 1;	/* cannot keep track: stop asserting */
		return NULL;
	}
	return add_obj(f, type, h, 1, NULL);
}

static enum resp_where pick_where(void)
{
	return chance(75) ? RW_OK : (enum resp_where)below(RW_WHERE);
}

static void raw_create(struct fctx *f, int fd)
{
	struct raw_cmd c;
	enum resp_where w = pick_where();
	void *rp;
	int type = below(T_TYPES), mangle = chance(30), err;
	uint32_t pdh = pick_handle(f, T_PD), cmd;
	size_t req, resp;
	struct obj *o;

	if (full(f, type))
		return;
	count(K_RAW_CREATE);
	memset(respbuf, 0, sizeof(respbuf));
	garbage(&c);
	rp = resp_ptr(w, respbuf);
	switch (type) {
	case T_PD: {
		struct ib_uverbs_alloc_pd *r = (void *)&c.u;

		cmd = IB_USER_VERBS_CMD_ALLOC_PD;
		r->response = (uintptr_t)rp;
		req = sizeof(*r);
		resp = sizeof(struct ib_uverbs_alloc_pd_resp);
		break;
	}
	case T_CQ: {
		struct ib_uverbs_create_cq *r = (void *)&c.u;

		cmd = IB_USER_VERBS_CMD_CREATE_CQ;
		r->response = (uintptr_t)rp;
		r->cqe = cq_size(f);
		r->comp_vector = chance(90) ? 0 : (uint32_t)rnd();
		r->comp_channel = chance(90) ? -1 : (int32_t)rnd();
		req = sizeof(*r);
		resp = sizeof(struct ib_uverbs_create_cq_resp) +
		       sizeof(struct cnuas_ib_create_cq_resp);
		break;
	}
	case T_QP: {
		struct ib_uverbs_create_qp *r = (void *)&c.u;

		cmd = IB_USER_VERBS_CMD_CREATE_QP;
		r->response = (uintptr_t)rp;
		r->pd_handle = pdh;
		r->send_cq_handle = pick_handle(f, T_CQ);
		r->recv_cq_handle = pick_handle(f, T_CQ);
		r->srq_handle = pick_handle(f, T_SRQ);
		r->is_srq = chance(20) ? (chance(80) ? 1 : (uint8_t)rnd()) : 0;
		r->qp_type = chance(85) ? (chance(50) ? IBV_QPT_RC : IBV_QPT_UD) : (uint8_t)rnd();
		r->max_send_wr = chance(70) ? 1 + below(64) : cap_value(f->attr.max_qp_wr);
		r->max_recv_wr = chance(70) ? 1 + below(64) : cap_value(f->attr.max_qp_wr);
		r->max_send_sge = chance(70) ? 1 + below(4) : cap_value(f->attr.max_sge);
		r->max_recv_sge = chance(70) ? 1 + below(4) : cap_value(f->attr.max_sge);
		r->max_inline_data = chance(70) ? below(300) : (uint32_t)rnd();
		r->sq_sig_all = (uint8_t)rnd();
		req = sizeof(*r);
		/* the short driver response at times: the kernel-side receive queue */
		resp = sizeof(struct ib_uverbs_create_qp_resp) +
		       (chance(50) ? sizeof(struct cnuas_ib_create_qp_resp) :
				     offsetofend(struct cnuas_ib_create_qp_resp, max_inline));
		break;
	}
	case T_MR: {
		struct ib_uverbs_reg_mr *r = (void *)&c.u;

		cmd = IB_USER_VERBS_CMD_REG_MR;
		r->response = (uintptr_t)rp;
		r->start = chance(70) ? buf_addr() : (chance(50) ? rnd() : KERNEL_ADDR);
		r->length = chance(70) ? 1 + below(2 * PAGE) : rnd() >> below(64);
		r->hca_va = chance(70) ? r->start : rnd();
		r->pd_handle = pdh;
		r->access_flags = chance(70) ? below(16) : (uint32_t)rnd();
		req = sizeof(*r);
		resp = sizeof(struct ib_uverbs_reg_mr_resp);
		break;
	}
	case T_SRQ: {
		struct ib_uverbs_create_srq *r = (void *)&c.u;

		cmd = IB_USER_VERBS_CMD_CREATE_SRQ;
		r->response = (uintptr_t)rp;
		r->pd_handle = pdh;
		r->max_wr = chance(70) ? 1 + below(64) : cap_value(f->attr.max_srq_wr);
		r->max_sge = chance(70) ? 1 + below(4) : cap_value(f->attr.max_srq_sge);
		r->srq_limit = chance(70) ? 0 : (uint32_t)rnd();
		req = sizeof(*r);
		resp = sizeof(struct ib_uverbs_create_srq_resp) +
		       (chance(50) ? sizeof(struct cnuas_ib_create_srq_resp) : 0);
		break;
	}
	default: {
		struct ib_uverbs_create_ah *r = (void *)&c.u;

		cmd = IB_USER_VERBS_CMD_CREATE_AH;
		r->response = (uintptr_t)rp;
		r->pd_handle = pdh;
		r->attr.port_num = chance(85) ? 1 : (uint8_t)rnd();
		r->attr.is_global = chance(85) ? 1 : (uint8_t)rnd();
		r->attr.dlid = (uint16_t)rnd();
		random_gid(f, r->attr.grh.dgid);
		r->attr.grh.sgid_index = chance(80) && f->gid_index >= 0 ? f->gid_index :
									  (uint8_t)rnd();
		r->attr.grh.hop_limit = 64;
		req = sizeof(*r);
		resp = sizeof(struct ib_uverbs_create_ah_resp);
		break;
	}
	}
	err = raw_write(fd, cmd, &c, req, resp, mangle);
	if (err)
		return;
	ok(K_RAW_CREATE);
	if (type != T_CQ && type != T_PD)
		MUST_FAIL(!live_as(f, pdh, T_PD),
			  "raw create %s on PD handle %u (not a PD) succeeded",
			  type_names[type], pdh);
	o = raw_created(f, type, w, respbuf, type_names[type]);
	if (!o)
		return;
	if (type != T_CQ && type != T_PD)
		o->pd = pdh;
	if (type == T_CQ) {
		struct cnuas_ib_create_cq_resp *d = (void *)((char *)resp_ptr(w, respbuf) +
				sizeof(struct ib_uverbs_create_cq_resp));

		o->mmap_off = d->mmap_offset;
		o->mmap_len = d->mmap_len;
	}
	if (type == T_QP) {
		struct ib_uverbs_create_qp *r = (void *)&c.u;
		struct ib_uverbs_create_qp_resp *cr = resp_ptr(w, respbuf);

		o->scq = r->send_cq_handle;
		o->rcq = r->recv_cq_handle;
		o->srq = r->is_srq ? r->srq_handle : ~0U;
		o->qpn = cr->qpn;
		o->qp_type = r->qp_type;
		o->max_sge = cr->max_send_sge;
		if (r->qp_type == IBV_QPT_RC || r->qp_type == IBV_QPT_UC ||
		    r->qp_type == IBV_QPT_UD)
			MUST_FAIL(!live_as(f, r->send_cq_handle, T_CQ) ||
				  !live_as(f, r->recv_cq_handle, T_CQ),
				  "raw create QP with CQ handles %u/%u (not CQs) succeeded",
				  r->send_cq_handle, r->recv_cq_handle);
	}
	if (type == T_MR) {
		struct ib_uverbs_reg_mr_resp *mr = resp_ptr(w, respbuf);
		struct ib_uverbs_reg_mr *rq = (void *)&c.u;

		o->lkey = mr->lkey;
		o->rkey = mr->rkey;
		o->addr = rq->hca_va;
		o->len = rq->length;
	}
}

/*
 * Does a destroy of @type answer with a response (the events reported)?
 * Only these can fail after the object is gone: the kernel destroys first
 * and then writes the response.  A PD, MR or AH destroy that fails did not
 * destroy.
 */
static int has_destroy_resp(int type)
{
	return type == T_CQ || type == T_QP || type == T_SRQ;
}

/*
 * Is raw @h of @type (CQ, QP, SRQ) still there?  A destroy whose response
 * cannot be written destroys and then fails with EFAULT.
 */
static int raw_alive(int fd, int type, uint32_t h)
{
	uint64_t resp[32];
	struct raw_cmd c;

	if (!has_destroy_resp(type))
		DIE("raw_alive: cannot probe a %s", type_names[type]);
	memset(&c, 0, 64);
	if (type == T_CQ) {
		struct ib_uverbs_req_notify_cq *r = (void *)&c.u;

		r->cq_handle = h;
		return !raw_write(fd, IB_USER_VERBS_CMD_REQ_NOTIFY_CQ, &c, sizeof(*r), 0, 0);
	}
	if (type == T_QP) {
		struct ib_uverbs_query_qp *r = (void *)&c.u;

		r->response = (uintptr_t)resp;
		r->qp_handle = h;
		return !raw_write(fd, IB_USER_VERBS_CMD_QUERY_QP, &c, sizeof(*r),
				  sizeof(struct ib_uverbs_query_qp_resp), 0);
	}
	{
		struct ib_uverbs_query_srq *r = (void *)&c.u;

		r->response = (uintptr_t)resp;
		r->srq_handle = h;
		return !raw_write(fd, IB_USER_VERBS_CMD_QUERY_SRQ, &c, sizeof(*r),
				  sizeof(struct ib_uverbs_query_srq_resp), 0);
	}
}

/* Destroy commands: a raw object of ours, or a handle that is not one. */
static void raw_destroy(struct fctx *f, int fd)
{
	static const uint32_t cmds[T_TYPES] = {
		IB_USER_VERBS_CMD_DEALLOC_PD, IB_USER_VERBS_CMD_DESTROY_CQ,
		IB_USER_VERBS_CMD_DESTROY_QP, IB_USER_VERBS_CMD_DEREG_MR,
		IB_USER_VERBS_CMD_DESTROY_SRQ, IB_USER_VERBS_CMD_DESTROY_AH,
	};
	static const size_t resps[T_TYPES] = {
		0, sizeof(struct ib_uverbs_destroy_cq_resp),
		sizeof(struct ib_uverbs_destroy_qp_resp), 0,
		sizeof(struct ib_uverbs_destroy_srq_resp), 0,
	};
	int type = below(T_TYPES), mangle = chance(20), err, busy = 0;
	enum resp_where w = pick_where();
	struct obj *o = pick(f, type, 1);
	struct raw_cmd c;
	uint32_t h;
	size_t req;

	count(K_RAW_DESTROY);
	/* verbs-made objects are destroyed through verbs only */
	if (o && chance(60)) {
		h = o->handle;
	} else {
		h = pick_handle(f, type);
		if (find(f, h) && !find(f, h)->raw)
			h = ~h;
		o = find(f, h);
		if (o && o->type != type)
			o = NULL;
	}
	if (o)
		busy = users(f, o) || o->pinned;
	memset(&c, 0, sizeof(c));
	switch (type) {
	case T_PD:
		((struct ib_uverbs_dealloc_pd *)&c.u)->pd_handle = h;
		req = sizeof(struct ib_uverbs_dealloc_pd);
		break;
	case T_MR:
		((struct ib_uverbs_dereg_mr *)&c.u)->mr_handle = h;
		req = sizeof(struct ib_uverbs_dereg_mr);
		break;
	case T_AH:
		((struct ib_uverbs_destroy_ah *)&c.u)->ah_handle = h;
		req = sizeof(struct ib_uverbs_destroy_ah);
		break;
	default: {
		/* destroy_cq/qp/srq: response, handle, reserved */
		struct ib_uverbs_destroy_cq *r = (void *)&c.u;

		r->response = (uintptr_t)resp_ptr(w, respbuf);
		r->cq_handle = h;
		req = sizeof(*r);
		break;
	}
	}
	err = raw_write(fd, cmds[type], &c, req, resps[type], mangle);
	if (err && o && has_destroy_resp(type) && !resp_writable(w) && !raw_alive(fd, type, h))
		del_obj(f, o);	/* destroyed, only the response failed */
	if (err)
		return;
	ok(K_RAW_DESTROY);
	if (!live_as(f, h, type)) {
		violation("raw destroy of %s handle %u (not one) succeeded", type_names[type], h);
		return;
	}
	if (!o)
		return;		/* untracked */
	/* untracked: another process may have destroyed the users */
	MUST_FAIL(busy && !o->pinned && !f->untracked, "raw destroy of %s %u with users succeeded",
		  type_names[type], h);
	del_obj(f, o);
}

/* Commands that use an object: each must fail on a handle that is not one. */
static void raw_use(struct fctx *f, int fd)
{
	int mangle = chance(20), err, type, which = below(11);
	enum resp_where w = pick_where();
	void *rp = resp_ptr(w, respbuf);
	struct raw_cmd c;
	uint32_t h, cmd;
	size_t req, resp = 0;

	count(K_RAW_USE);
	garbage(&c);
	switch (which) {
	case 0: {
		struct ib_uverbs_modify_qp *r = (void *)&c.u;

		type = T_QP;
		h = pick_handle(f, T_QP);
		cmd = IB_USER_VERBS_CMD_MODIFY_QP;
		r->qp_handle = h;
		r->attr_mask = chance(60) ? (uint32_t)(rnd() & 0x1fffff) : (uint32_t)rnd();
		r->qp_state = chance(80) ? below(7) : (uint8_t)rnd();
		r->port_num = chance(80) ? 1 : (uint8_t)rnd();
		r->dest.port_num = chance(80) ? 1 : (uint8_t)rnd();
		r->pkey_index = chance(80) ? 0 : (uint16_t)rnd();
		r->path_mtu = chance(80) ? 1 + below(5) : (uint8_t)rnd();
		r->dest.is_global = chance(80);
		r->dest.sgid_index = f->gid_index >= 0 && chance(80) ? f->gid_index :
								       (uint8_t)rnd();
		random_gid(f, r->dest.dgid);
		req = sizeof(*r);
		break;
	}
	case 1: {
		struct ib_uverbs_query_qp *r = (void *)&c.u;

		type = T_QP;
		h = pick_handle(f, T_QP);
		cmd = IB_USER_VERBS_CMD_QUERY_QP;
		r->response = (uintptr_t)rp;
		r->qp_handle = h;
		r->attr_mask = (uint32_t)rnd();
		req = sizeof(*r);
		resp = sizeof(struct ib_uverbs_query_qp_resp);
		break;
	}
	case 2:
	case 3: {
		struct ib_uverbs_post_send *r = (void *)&c.u;
		struct ib_uverbs_send_wr *wr = (void *)(r + 1);
		struct ib_uverbs_sge *sge;
		uint32_t i, nsge;

		type = T_QP;
		h = pick_handle(f, T_QP);
		cmd = IB_USER_VERBS_CMD_POST_SEND;
		r->response = (uintptr_t)rp;
		r->qp_handle = h;
		r->wr_count = chance(80) ? 1 + below(3) : (uint32_t)rnd();
		nsge = chance(80) ? below(8) : (uint32_t)rnd();
		r->sge_count = chance(80) ? nsge : (uint32_t)rnd();
		r->wqe_size = chance(80) ? sizeof(*wr) :
					   (uint32_t)(chance(50) ? below(256) : rnd());
		for (i = 0; i < 3; i++) {
			wr[i].num_sge = chance(80) ? nsge / 3 : (uint32_t)rnd();
			wr[i].opcode = chance(80) ? below(12) : (uint32_t)rnd();
			wr[i].send_flags = chance(80) ? below(16) : (uint32_t)rnd();
			wr[i].wr.ud.ah = pick_handle(f, T_AH);
			wr[i].wr.ud.remote_qpn = (uint32_t)rnd() & 0xffffff;
		}
		sge = (void *)(wr + 3);
		for (i = 0; i < 8; i++) {
			struct obj *mr = pick(f, T_MR, -1);

			sge[i].addr = chance(70) ? buf_addr() : rnd();
			sge[i].length = chance(70) ? below(PAGE) : (uint32_t)rnd();
			sge[i].lkey = mr && chance(70) ? mr->lkey : (uint32_t)rnd();
		}
		req = sizeof(*r) + 3 * sizeof(*wr) + 8 * sizeof(*sge);
		resp = sizeof(struct ib_uverbs_post_send_resp);
		break;
	}
	case 4:
	case 5: {
		struct ib_uverbs_post_recv *r = (void *)&c.u;
		struct ib_uverbs_recv_wr *wr = (void *)(r + 1);
		struct ib_uverbs_sge *sge;
		uint32_t i, nsge;
		int srq = which == 5;

		type = srq ? T_SRQ : T_QP;
		h = pick_handle(f, type);
		cmd = srq ? IB_USER_VERBS_CMD_POST_SRQ_RECV : IB_USER_VERBS_CMD_POST_RECV;
		r->response = (uintptr_t)rp;
		r->qp_handle = h;
		r->wr_count = chance(80) ? 1 + below(3) : (uint32_t)rnd();
		nsge = chance(80) ? below(8) : (uint32_t)rnd();
		r->sge_count = chance(80) ? nsge : (uint32_t)rnd();
		r->wqe_size = chance(80) ? sizeof(*wr) : (uint32_t)(chance(50) ? below(64) : rnd());
		for (i = 0; i < 3; i++)
			wr[i].num_sge = chance(80) ? nsge / 3 : (uint32_t)rnd();
		sge = (void *)(wr + 3);
		for (i = 0; i < 8; i++) {
			struct obj *mr = pick(f, T_MR, -1);

			sge[i].addr = chance(70) ? buf_addr() : rnd();
			sge[i].length = chance(70) ? below(PAGE) : (uint32_t)rnd();
			sge[i].lkey = mr && chance(70) ? mr->lkey : (uint32_t)rnd();
		}
		req = sizeof(*r) + 3 * sizeof(*wr) + 8 * sizeof(*sge);
		resp = sizeof(struct ib_uverbs_post_recv_resp);
		break;
	}
	case 6: {
		struct ib_uverbs_req_notify_cq *r = (void *)&c.u;

		type = T_CQ;
		h = pick_handle(f, T_CQ);
		cmd = IB_USER_VERBS_CMD_REQ_NOTIFY_CQ;
		r->cq_handle = h;
		r->solicited_only = chance(80) ? below(2) : (uint32_t)rnd();
		req = sizeof(*r);
		break;
	}
	case 7: {
		struct ib_uverbs_modify_srq *r = (void *)&c.u;

		type = T_SRQ;
		h = pick_handle(f, T_SRQ);
		cmd = IB_USER_VERBS_CMD_MODIFY_SRQ;
		r->srq_handle = h;
		r->attr_mask = chance(80) ? below(4) : (uint32_t)rnd();
		r->max_wr = chance(50) ? below(128) : (uint32_t)rnd();
		r->srq_limit = chance(50) ? below(128) : (uint32_t)rnd();
		req = sizeof(*r);
		break;
	}
	case 8: {
		struct ib_uverbs_query_srq *r = (void *)&c.u;

		type = T_SRQ;
		h = pick_handle(f, T_SRQ);
		cmd = IB_USER_VERBS_CMD_QUERY_SRQ;
		r->response = (uintptr_t)rp;
		r->srq_handle = h;
		req = sizeof(*r);
		resp = sizeof(struct ib_uverbs_query_srq_resp);
		break;
	}
	case 9: {
		/* attach, and at times detach again if that worked */
		struct ib_uverbs_attach_mcast *r = (void *)&c.u;

		type = T_QP;
		h = pick_handle(f, T_QP);
		cmd = IB_USER_VERBS_CMD_ATTACH_MCAST;
		random_gid(f, r->gid);
		if (chance(70)) {
			r->gid[0] = 0xff;
			r->gid[1] = 0x0e;
		}
		r->qp_handle = h;
		r->mlid = (uint16_t)rnd();
		req = sizeof(*r);
		err = raw_write(fd, cmd, &c, req, 0, mangle);
		if (!err) {
			struct obj *o = find(f, h);

			MUST_FAIL(!live_as(f, h, T_QP), "raw attach_mcast on handle %u succeeded",
				  h);
			/* half stay attached: destroy refuses them, the close detaches */
			if ((chance(50) ||
			     raw_write(fd, IB_USER_VERBS_CMD_DETACH_MCAST, &c, req, 0, 0)) && o)
				o->pinned = 1;
		}
		return;
	}
	default: {
		/* resize_cq and rereg_mr: not implemented, or not on this handle */
		struct ib_uverbs_resize_cq *r = (void *)&c.u;

		type = T_CQ;
		h = pick_handle(f, T_CQ);
		cmd = IB_USER_VERBS_CMD_RESIZE_CQ;
		r->response = (uintptr_t)rp;
		r->cq_handle = h;
		r->cqe = cq_size(f);
		req = sizeof(*r);
		resp = sizeof(struct ib_uverbs_resize_cq_resp);
		break;
	}
	}
	err = raw_write(fd, cmd, &c, req, resp, mangle);
	if (!err)
		ok(K_RAW_USE);
	if (!err)
		MUST_FAIL(!live_as(f, h, type),
			  "raw command %u on %s handle %u (not one) succeeded",
			  cmd, type_names[type], h);
}

/* ATTACH_MCAST / DETACH_MCAST of @gid, @mlid on QP @h: 0 or -errno. */
static int mcast_cmd(int fd, uint32_t cmd, uint32_t h, const uint8_t *gid, uint16_t mlid)
{
	struct raw_cmd c;
	struct ib_uverbs_attach_mcast *r = (void *)&c.u;

	memset(&c, 0, 64);
	memcpy(r->gid, gid, 16);
	r->qp_handle = h;
	r->mlid = mlid;
	return raw_write(fd, cmd, &c, sizeof(*r), 0, 0);
}

/*
 * One multicast group attached to a UD QP under two MLIDs (a RoCE port
 * ignores the MLID; uverbs keeps the two attachments apart): every
 * attachment that succeeded must detach, or the QP can never be destroyed
 * (ib_core counts each attachment as a user of the QP).
 */
static void do_mcast_twice(struct fctx *f, int fd)
{
	struct obj *o = pick(f, T_QP, -1);
	uint16_t mlid[3] = { 0xc000 + below(0x3ffe), 0, 0 };
	int attached[3], i, n = 1 + below(3);
	uint8_t gid[16];

	if (!o || o->qp_type != IBV_QPT_UD || o->pinned)
		return;
	random_gid(f, gid);
	gid[0] = 0xff;
	gid[1] = 0x0e;
	for (i = 1; i < 3; i++)
		mlid[i] = mlid[i - 1] + 1 + below(16);
	for (i = 0; i < n; i++) {
		count(K_MCAST);
		attached[i] = !mcast_cmd(fd, IB_USER_VERBS_CMD_ATTACH_MCAST, o->handle, gid,
					 mlid[i]);
	}
	for (i = 0; i < n; i++) {
		int err;

		if (!attached[i])
			continue;
		ok(K_MCAST);
		count(K_MCAST);
		err = mcast_cmd(fd, IB_USER_VERBS_CMD_DETACH_MCAST, o->handle, gid, mlid[i]);
		if (err) {
			violation("detach_mcast of attachment %d of %d (MLID 0x%x) of QP %u: %s",
				  i + 1, n, mlid[i], o->handle, strerror(-err));
			o->pinned = 1;
		}
	}
}

/* A request of RDMA_VERBS_IOCTL: the header and up to 8 attributes. */
struct ioctl_req {
	struct ib_uverbs_ioctl_hdr hdr;
	struct ib_uverbs_attr attrs[8];
};

/*
 * A destroy of @type through RDMA_VERBS_IOCTL, built in @req: attribute 0
 * names @h, attribute 1 (CQ, QP, SRQ) is the response at @w, anything
 * after those is garbage.  @o is our object with that handle and type, or
 * NULL; @other_method: the header's ids were garbled, so some other method
 * (or none) ran.  Send it, keep the table right and check what must hold.
 * Return 0 or -errno.
 */
static int ioctl_destroy(struct fctx *f, int fd, struct ioctl_req *req, int type, uint32_t h,
			 struct obj *o, enum resp_where w, int other_method)
{
	int err, busy = o ? users(f, o) || o->pinned : 0;

	err = ioctl(fd, RDMA_VERBS_IOCTL, req) ? -errno : 0;
	if (!err)
		ok(K_IOCTL);
	if (other_method) {
		/* another method took it: what it did is not known */
		if (!err)
			f->untracked = 1;
		return err;
	}
	/*
	 * A failed destroy that carried an unwritable response may have
	 * destroyed (the response is written after the destroy), whatever
	 * attributes follow it; one without a response did not.  A PD, MR or
	 * AH has no response: attribute 1 is garbage there, and a failure
	 * means the object is still there.
	 */
	if (err && o && has_destroy_resp(type) && req->hdr.num_attrs >= 2 && !resp_writable(w) &&
	    !raw_alive(fd, type, h))
		del_obj(f, o);	/* destroyed, only the response failed */
	if (err)
		return err;
	if (!live_as(f, h, type)) {
		violation("ioctl destroy of %s handle %u (not one) succeeded", type_names[type], h);
		return 0;
	}
	if (!o)
		return 0;
	MUST_FAIL(busy && !o->pinned && !f->untracked,
		  "ioctl destroy of %s %u with users succeeded",
		  type_names[type], h);
	del_obj(f, o);
	return 0;
}

/* The plain destroy request of @type naming @h, its response (if any) at @w. */
static void ioctl_destroy_req(struct ioctl_req *req, int type, uint32_t h, enum resp_where w)
{
	static const uint16_t objs[T_TYPES] = {
		UVERBS_OBJECT_PD, UVERBS_OBJECT_CQ, UVERBS_OBJECT_QP, UVERBS_OBJECT_MR,
		UVERBS_OBJECT_SRQ, UVERBS_OBJECT_AH,
	};
	static const uint16_t methods[T_TYPES] = {
		UVERBS_METHOD_PD_DESTROY, UVERBS_METHOD_CQ_DESTROY, UVERBS_METHOD_QP_DESTROY,
		UVERBS_METHOD_MR_DESTROY, UVERBS_METHOD_SRQ_DESTROY, UVERBS_METHOD_AH_DESTROY,
	};

	memset(req, 0, sizeof(*req));
	req->hdr.object_id = objs[type];
	req->hdr.method_id = methods[type];
	req->hdr.num_attrs = 1;
	req->attrs[0].attr_id = 0;	/* UVERBS_ATTR_DESTROY_*_HANDLE */
	req->attrs[0].data = h;
	if (has_destroy_resp(type)) {
		req->hdr.num_attrs = 2;
		req->attrs[1].attr_id = 1;	/* UVERBS_ATTR_DESTROY_*_RESP */
		req->attrs[1].len = type == T_CQ ? sizeof(struct ib_uverbs_destroy_cq_resp) :
						   sizeof(struct ib_uverbs_destroy_qp_resp);
		req->attrs[1].data = (uintptr_t)resp_ptr(w, respbuf);
	}
	req->hdr.length = sizeof(req->hdr) + req->hdr.num_attrs * sizeof(req->attrs[0]);
}

/*
 * RDMA_VERBS_IOCTL: the destroy methods of each object type with a handle
 * as raw_destroy() picks them (and a response pointer as pick_where()
 * does), or garbage: random object and method ids, attributes, lengths,
 * flags and header fields.  A destroy naming no live object of its type
 * must fail.
 */
static void raw_ioctl(struct fctx *f, int fd)
{
	struct ioctl_req req;
	int type = below(T_TYPES), garbage_req = chance(40), other_method = 0;
	enum resp_where w = pick_where();
	struct obj *o = pick(f, type, 1);
	unsigned int i;
	uint32_t h;

	count(K_IOCTL);
	if (o && chance(60)) {
		h = o->handle;
	} else {
		h = pick_handle(f, type);
		if (find(f, h) && !find(f, h)->raw)
			h = ~h;		/* verbs-made objects go through verbs only */
		o = find(f, h);
		if (o && o->type != type)
			o = NULL;
	}
	ioctl_destroy_req(&req, type, h, w);
	if (garbage_req) {
		/* the handle and response stay; extra attributes follow them */
		unsigned int first = req.hdr.num_attrs;

		req.hdr.num_attrs = first + below(9 - first);
		switch (below(6)) {
		case 0: req.hdr.object_id = (uint16_t)rnd(); other_method = 1; break;
		case 1: req.hdr.method_id = (uint16_t)rnd(); other_method = 1; break;
		case 2: req.hdr.num_attrs = below(9); break;
		case 3: req.hdr.reserved1 = rnd(); break;
		case 4: req.hdr.driver_id = (uint32_t)rnd(); break;
		default: break;
		}
		for (i = first; i < 8; i++) {
			req.attrs[i].attr_id = chance(70) ? below(8) : (uint16_t)rnd();
			req.attrs[i].len = chance(50) ? below(64) : (uint16_t)rnd();
			req.attrs[i].flags = chance(70) ? below(4) : (uint16_t)rnd();
			req.attrs[i].attr_data.reserved = chance(80) ? 0 : (uint16_t)rnd();
			req.attrs[i].data = chance(50) ? pick_handle(f, below(T_TYPES)) :
				(chance(50) ? (uintptr_t)resp_ptr(pick_where(), respbuf) : rnd());
		}
	}
	req.hdr.length = sizeof(req.hdr) + req.hdr.num_attrs * sizeof(req.attrs[0]);
	if (garbage_req && chance(20))
		req.hdr.length = (uint16_t)rnd();
	ioctl_destroy(f, fd, &req, type, h, o, w, other_method);
}

/* A raw PD or CQ (16 entries) on @f, tracked; NULL when refused (limits). */
static struct obj *raw_make(struct fctx *f, int type)
{
	struct raw_cmd c;
	uint32_t h;
	int err;

	memset(&c, 0, sizeof(c));
	memset(respbuf, 0, sizeof(respbuf));
	if (type == T_PD) {
		((struct ib_uverbs_alloc_pd *)&c.u)->response = (uintptr_t)respbuf;
		err = raw_write(f->ctx->cmd_fd, IB_USER_VERBS_CMD_ALLOC_PD, &c,
				sizeof(struct ib_uverbs_alloc_pd),
				sizeof(struct ib_uverbs_alloc_pd_resp), 0);
	} else {
		struct ib_uverbs_create_cq *r = (void *)&c.u;

		r->response = (uintptr_t)respbuf;
		r->cqe = 16;
		r->comp_channel = -1;
		err = raw_write(f->ctx->cmd_fd, IB_USER_VERBS_CMD_CREATE_CQ, &c, sizeof(*r),
				sizeof(struct ib_uverbs_create_cq_resp) +
				sizeof(struct cnuas_ib_create_cq_resp), 0);
	}
	if (err)
		return NULL;
	memcpy(&h, respbuf, sizeof(h));	/* pd_handle, cq_handle: the first u32 */
	return add_obj(f, type, h, 1, NULL);
}

/*
 * The two destroys through RDMA_VERBS_IOCTL whose outcome the table once
 * got wrong, sent through ioctl_destroy() on a context of their own before
 * the main sequence (no PRNG draws: the main sequence of a seed stays the
 * same).  Afterwards the table must agree with the kernel:
 *   - a PD destroy with a second attribute the kernel refuses (unknown and
 *     mandatory) beside a response pointer that cannot be written: fails
 *     before destroying, so the PD stays (the table dropped it, taking the
 *     failure for a destroy whose response failed; seed 451355903 then saw
 *     a raw create AH on that handle succeed, "not a PD");
 *   - a CQ destroy with its response unwritable and a garbage attribute
 *     after it: destroys, then fails with EFAULT writing the response, so
 *     the CQ leaves the table (it stayed, as only a request of exactly two
 *     attributes was checked; seed 451355904 then had the handle handed out
 *     again to an MR, and a PD with that "user" destroyed).
 * Prints "directed_ioctl ok", or "skipped" when the objects were refused.
 */
static void ioctl_directed(const struct fctx *m)
{
	struct fctx *f = calloc(1, sizeof(*f));
	struct ioctl_req req;
	struct obj *pd, *cq;
	uint32_t pdh, cqh;
	int err, alive;
	long before = atomic_load(&violations);

	if (!f)
		DIE("calloc");
	f->ctx = open_device_by_name(m->name);
	pd = raw_make(f, T_PD);
	cq = pd ? raw_make(f, T_CQ) : NULL;
	if (!pd || !cq) {
		printf("directed_ioctl skipped\n");
		goto out;
	}
	pdh = pd->handle;
	cqh = cq->handle;

	ioctl_destroy_req(&req, T_PD, pdh, RW_RO);
	req.hdr.num_attrs = 2;
	req.attrs[1].attr_id = 0x7f;		/* no attribute of PD_DESTROY */
	req.attrs[1].flags = UVERBS_ATTR_F_MANDATORY;
	req.attrs[1].len = sizeof(uint32_t);
	req.attrs[1].data = (uintptr_t)resp_ptr(RW_RO, respbuf);
	req.hdr.length = sizeof(req.hdr) + req.hdr.num_attrs * sizeof(req.attrs[0]);
	err = ioctl_destroy(f, f->ctx->cmd_fd, &req, T_PD, pdh, pd, RW_RO, 0);
	MUST_FAIL(!err, "directed: ioctl destroy of PD %u with an unknown mandatory attribute "
		  "succeeded", pdh);
	if (err) {
		MUST_FAIL(!live_as(f, pdh, T_PD), "directed: PD %u left the table after its "
			  "destroy failed (%s)", pdh, strerror(-err));
		/* and the kernel still has it: a plain destroy takes it */
		ioctl_destroy_req(&req, T_PD, pdh, RW_OK);
		err = ioctl_destroy(f, f->ctx->cmd_fd, &req, T_PD, pdh, find(f, pdh), RW_OK, 0);
		MUST_FAIL(err, "directed: PD %u was gone after a destroy that failed (%s)", pdh,
			  strerror(-err));
	}

	ioctl_destroy_req(&req, T_CQ, cqh, RW_RO);
	req.hdr.num_attrs = 3;
	req.attrs[2].attr_id = 0x7f;		/* unknown, not mandatory: ignored */
	req.hdr.length = sizeof(req.hdr) + req.hdr.num_attrs * sizeof(req.attrs[0]);
	/* find() again: a destroy above moved the table's entries */
	err = ioctl_destroy(f, f->ctx->cmd_fd, &req, T_CQ, cqh, find(f, cqh), RW_RO, 0);
	MUST_FAIL(!err, "directed: ioctl destroy of CQ %u with an unwritable response succeeded",
		  cqh);
	alive = raw_alive(f->ctx->cmd_fd, T_CQ, cqh);
	MUST_FAIL(alive != live_as(f, cqh, T_CQ), "directed: CQ %u is %s, the table has it %s",
		  cqh, alive ? "there" : "gone", alive ? "gone" : "live");
	printf("directed_ioctl %s\n", atomic_load(&violations) == before ? "ok" : "FAIL");
out:
	ibv_close_device(f->ctx);	/* what is left goes with the context */
	free(f);
}

/* Commands with right handles and wrong sizes: only have to return. */
static void raw_size(struct fctx *f, int fd)
{
	struct raw_cmd c;
	uint32_t cmd = below(IB_USER_VERBS_CMD_OPEN_QP + 1);
	int err;

	count(K_RAW_SIZE);
	garbage(&c);
	/* the handle fields of most commands sit after response and user_handle */
	c.u.words[0] = chance(70) ? (uintptr_t)resp_ptr(pick_where(), respbuf) : rnd();
	((uint32_t *)&c.u)[0] = chance(50) ? pick_handle(f, below(T_TYPES)) : ((uint32_t *)&c.u)[0];
	((uint32_t *)&c.u)[4] = pick_handle(f, below(T_TYPES));
	((uint32_t *)&c.u)[5] = pick_handle(f, below(T_TYPES));
	if (cmd == IB_USER_VERBS_CMD_GET_CONTEXT || cmd == IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL ||
	    cmd == IB_USER_VERBS_CMD_OPEN_XRCD || cmd == IB_USER_VERBS_CMD_OPEN_QP)
		cmd = IB_USER_VERBS_CMD_QUERY_DEVICE;
	/* creates of this kind would leave objects we do not know of */
	if (cmd == IB_USER_VERBS_CMD_ALLOC_PD || cmd == IB_USER_VERBS_CMD_CREATE_CQ ||
	    cmd == IB_USER_VERBS_CMD_CREATE_QP || cmd == IB_USER_VERBS_CMD_REG_MR ||
	    cmd == IB_USER_VERBS_CMD_CREATE_SRQ || cmd == IB_USER_VERBS_CMD_CREATE_AH ||
	    cmd == IB_USER_VERBS_CMD_CREATE_XSRQ || cmd == IB_USER_VERBS_CMD_REG_MR ||
	    cmd == IB_USER_VERBS_CMD_ALLOC_MW || cmd == IB_USER_VERBS_CMD_REREG_MR)
		cmd = IB_USER_VERBS_CMD_QUERY_PORT;
	/* ... and destroys, objects we think live */
	if (cmd == IB_USER_VERBS_CMD_DEALLOC_PD || cmd == IB_USER_VERBS_CMD_DESTROY_CQ ||
	    cmd == IB_USER_VERBS_CMD_DESTROY_QP || cmd == IB_USER_VERBS_CMD_DEREG_MR ||
	    cmd == IB_USER_VERBS_CMD_DESTROY_SRQ || cmd == IB_USER_VERBS_CMD_DESTROY_AH ||
	    cmd == IB_USER_VERBS_CMD_DEALLOC_MW || cmd == IB_USER_VERBS_CMD_CLOSE_XRCD)
		cmd = IB_USER_VERBS_CMD_QUERY_PORT;
	err = raw_write(fd, cmd, &c, 8 * below(24), 4 * below(64), 1);
	if (!err && cmd == IB_USER_VERBS_CMD_ATTACH_MCAST)
		raw_write(fd, IB_USER_VERBS_CMD_DETACH_MCAST, &c,
			  sizeof(struct ib_uverbs_attach_mcast),
			  0, 0);
}

/*
 * Unknown and extended command numbers with garbage bodies.  Only
 * commands that cannot create or destroy anything are sent with a known
 * number; everything else has a number the kernel does not know.
 */
static void raw_garbage(struct fctx *f, int fd)
{
	struct raw_cmd c;
	uint32_t cmd;
	ssize_t n;

	(void)f;
	count(K_RAW_GARBAGE);
	garbage(&c);
	switch (below(4)) {
	case 0:
		cmd = 0x80000100U | (uint32_t)rnd();	/* junk flags */
		break;
	case 1:
		/* extended commands without a valid ex header */
		cmd = IB_USER_VERBS_CMD_FLAG_EXTENDED | (IB_USER_VERBS_EX_CMD_QUERY_DEVICE +
							 below(2) * 100);
		break;
	case 2:
		cmd = IB_USER_VERBS_CMD_OPEN_QP + 1 + below(200);
		break;
	default:
		cmd = (uint32_t)rnd();
		if ((cmd & 0xff) <= 60)
			cmd |= 0x7f000000;
		break;
	}
	c.hdr.command = cmd;
	c.hdr.in_words = (uint16_t)rnd();
	c.hdr.out_words = (uint16_t)rnd();
	if (cmd == (IB_USER_VERBS_CMD_FLAG_EXTENDED | IB_USER_VERBS_EX_CMD_QUERY_DEVICE)) {
		struct ib_uverbs_ex_cmd_hdr *ex = (void *)&c.u;

		ex->response = (uintptr_t)resp_ptr(pick_where(), respbuf);
		ex->provider_in_words = chance(50) ? 0 : (uint16_t)rnd();
		ex->provider_out_words = chance(50) ? 0 : (uint16_t)rnd();
		ex->cmd_hdr_reserved = chance(70) ? 0 : (uint32_t)rnd();
		c.hdr.in_words = chance(50) ? 1 : below(16);
		c.hdr.out_words = chance(50) ? sizeof(struct ib_uverbs_ex_query_device_resp) / 8 :
					       below(64);
	}
	n = write(fd, &c, chance(70) ? 8 + 8 * below(32) : below(sizeof(c)));
	(void)n;
}

/* GET_CONTEXT on fresh command fds, with bad sizes and response pointers. */
static void raw_context(struct fctx *f)
{
	char path[128];
	struct raw_cmd c;
	int fd, err, i;

	count(K_RAW_CONTEXT);
	snprintf(path, sizeof(path), "/dev/infiniband/%s", f->ctx->device->dev_name);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return;
	for (i = 0; i < 3; i++) {
		enum resp_where w = pick_where();
		struct ib_uverbs_get_context *r = (void *)&c.u;

		count(K_RAW_CONTEXT);
		garbage(&c);
		r->response = (uintptr_t)resp_ptr(w, respbuf);
		err = raw_write(fd, IB_USER_VERBS_CMD_GET_CONTEXT, &c, sizeof(*r),
				sizeof(struct ib_uverbs_get_context_resp) +
				sizeof(struct cnuas_ib_alloc_ucontext_resp), chance(50));
		if (!err && !resp_writable(w))
			violation("GET_CONTEXT succeeded with an unwritable response (%d)", w);
		if (!err && chance(50))
			break;
		/* a command on a context that is not there, or on the new one */
		garbage(&c);
		((struct ib_uverbs_alloc_pd *)&c.u)->response = (uintptr_t)respbuf;
		count(K_RAW_CONTEXT);
		raw_write(fd, IB_USER_VERBS_CMD_ALLOC_PD, &c, sizeof(struct ib_uverbs_alloc_pd),
			  sizeof(struct ib_uverbs_alloc_pd_resp), 0);
	}
	close(fd);
}

/* mmap of the command fd: random offsets and lengths, and real rings. */
static void do_mmap(struct fctx *f)
{
	struct obj *o = pick(f, T_CQ, 1);
	uint64_t off, len;
	void *p;
	int prot = chance(80) ? PROT_READ | PROT_WRITE : (int)below(8);
	int flags = chance(85) ? MAP_SHARED : MAP_PRIVATE;

	count(K_MMAP);
	if (o && o->mmap_len && chance(60)) {
		off = o->mmap_off + (chance(70) ? 0 : below(4) * PAGE);
		len = chance(70) ? o->mmap_len : o->mmap_len + ((int64_t)below(5) - 2) * PAGE;
	} else {
		off = chance(50) ? below(64) * PAGE : (chance(50) ? rnd() : below(1 << 20));
		len = chance(50) ? PAGE * (1 + below(64)) : rnd() >> below(64);
	}
	p = mmap(NULL, len, prot, flags, f->ctx->cmd_fd, (off_t)off);
	if (p == MAP_FAILED)
		return;
	ok(K_MMAP);
	if ((prot & PROT_WRITE) && len >= sizeof(struct cnuas_ib_cq_ring_hdr) && chance(50)) {
		/* scribble on whatever indices the ring has */
		volatile uint32_t *w = p;

		w[below(32)] = (uint32_t)rnd();
	}
	munmap(p, len);
}

/* ---- the race phase ---- */

struct race {
	struct fctx *f;
	int fd;
	atomic_uint qp, scq, rcq, mr, ah, pd, rc;	/* handles in play */
	atomic_ulong cq_off, cq_len;
	atomic_int stop;
	uint32_t qpn, lkey, rkey, rc_qpn;
	uint64_t seed;
};

static int race_write(int fd, uint32_t cmd, struct raw_cmd *c, size_t req, size_t resp)
{
	c->hdr.command = cmd;
	c->hdr.in_words = (sizeof(c->hdr) + req) / 4;
	c->hdr.out_words = resp / 4;
	return write(fd, c, sizeof(c->hdr) + req) < 0 ? -errno : 0;
}

/* The u32 @off bytes into a response. */
static uint32_t u32_at(const void *resp, size_t off)
{
	uint32_t v;

	memcpy(&v, (const char *)resp + off, sizeof(v));
	return v;
}

/* An RC QP on the round's CQs, connected to itself (RDMA into the round's MR). */
static void race_rc_setup(struct race *r)
{
	uint64_t resp[32];
	struct raw_cmd c;
	struct ib_uverbs_create_qp *q = (void *)&c.u;
	struct ib_uverbs_create_qp_resp *qr = (void *)resp;
	struct ib_uverbs_modify_qp *m = (void *)&c.u;

	memset(&c, 0, sizeof(c));
	q->response = (uintptr_t)resp;
	q->pd_handle = atomic_load(&r->pd);
	q->send_cq_handle = atomic_load(&r->scq);
	q->recv_cq_handle = atomic_load(&r->rcq);
	q->max_send_wr = 64;
	q->max_recv_wr = 64;
	q->max_send_sge = 2;
	q->max_recv_sge = 2;
	q->qp_type = IBV_QPT_RC;
	if (race_write(r->fd, IB_USER_VERBS_CMD_CREATE_QP, &c, sizeof(*q),
		       sizeof(*qr) + offsetofend(struct cnuas_ib_create_qp_resp, max_inline)))
		return;
	atomic_store(&r->rc, qr->qp_handle);
	r->rc_qpn = qr->qpn;

	memset(&c, 0, sizeof(c));
	m->qp_handle = atomic_load(&r->rc);
	m->qp_state = IBV_QPS_INIT;
	m->port_num = 1;
	m->qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	m->attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	race_write(r->fd, IB_USER_VERBS_CMD_MODIFY_QP, &c, sizeof(*m), 0);

	memset(&c, 0, sizeof(c));
	m->qp_handle = atomic_load(&r->rc);
	m->qp_state = IBV_QPS_RTR;
	m->path_mtu = IBV_MTU_1024;
	m->dest_qp_num = r->rc_qpn;
	m->max_dest_rd_atomic = 4;
	m->min_rnr_timer = 1;
	m->dest.is_global = 1;
	m->dest.port_num = 1;
	memcpy(m->dest.dgid, r->f->gid.raw, 16);
	m->dest.sgid_index = r->f->gid_index;
	m->dest.hop_limit = 64;
	m->attr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
		       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	race_write(r->fd, IB_USER_VERBS_CMD_MODIFY_QP, &c, sizeof(*m), 0);

	memset(&c, 0, sizeof(c));
	m->qp_handle = atomic_load(&r->rc);
	m->qp_state = IBV_QPS_RTS;
	m->timeout = 1;
	m->retry_cnt = 1;
	m->rnr_retry = 1;
	m->max_rd_atomic = 4;
	m->attr_mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		       IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
	race_write(r->fd, IB_USER_VERBS_CMD_MODIFY_QP, &c, sizeof(*m), 0);
}

/* Create the objects of one round: PD, 2 CQs, UD QP in RTS, MR, AH. */
static int race_setup(struct race *r)
{
	uint64_t resp[32];
	struct raw_cmd c;

	memset(&c, 0, sizeof(c));
	((struct ib_uverbs_alloc_pd *)&c.u)->response = (uintptr_t)resp;
	if (race_write(r->fd, IB_USER_VERBS_CMD_ALLOC_PD, &c, sizeof(struct ib_uverbs_alloc_pd),
		       sizeof(struct ib_uverbs_alloc_pd_resp)))
		return -1;
	atomic_store(&r->pd, u32_at(resp, 0));
	for (int i = 0; i < 2; i++) {
		struct ib_uverbs_create_cq *cc = (void *)&c.u;

		memset(&c, 0, sizeof(c));
		cc->response = (uintptr_t)resp;
		cc->cqe = 16;
		cc->comp_channel = -1;
		if (race_write(r->fd, IB_USER_VERBS_CMD_CREATE_CQ, &c, sizeof(*cc),
			       sizeof(struct ib_uverbs_create_cq_resp) +
			       sizeof(struct cnuas_ib_create_cq_resp)))
			return -1;
		if (i == 0) {
			struct cnuas_ib_create_cq_resp *d = (void *)((char *)resp +
				sizeof(struct ib_uverbs_create_cq_resp));

			atomic_store(&r->scq, resp[0] & 0xffffffff);
			atomic_store(&r->cq_off, d->mmap_offset);
			atomic_store(&r->cq_len, d->mmap_len);
		} else {
			atomic_store(&r->rcq, resp[0] & 0xffffffff);
		}
	}
	{
		struct ib_uverbs_create_qp *q = (void *)&c.u;
		struct ib_uverbs_create_qp_resp *qr = (void *)resp;

		memset(&c, 0, sizeof(c));
		q->response = (uintptr_t)resp;
		q->pd_handle = atomic_load(&r->pd);
		q->send_cq_handle = atomic_load(&r->scq);
		q->recv_cq_handle = atomic_load(&r->rcq);
		q->max_send_wr = 64;
		q->max_recv_wr = 64;
		q->max_send_sge = 2;
		q->max_recv_sge = 2;
		q->qp_type = IBV_QPT_UD;
		/* the short driver response: the kernel-side receive queue */
		if (race_write(r->fd, IB_USER_VERBS_CMD_CREATE_QP, &c, sizeof(*q),
			       sizeof(*qr) + offsetofend(struct cnuas_ib_create_qp_resp,
							 max_inline)))
			return -1;
		atomic_store(&r->qp, qr->qp_handle);
		r->qpn = qr->qpn;
	}
	{
		static const uint8_t states[3] = { IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS };
		struct ib_uverbs_modify_qp *m = (void *)&c.u;

		for (int i = 0; i < 3; i++) {
			memset(&c, 0, sizeof(c));
			m->qp_handle = atomic_load(&r->qp);
			m->qp_state = states[i];
			m->attr_mask = IBV_QP_STATE;
			if (i == 0) {
				m->attr_mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
				m->port_num = 1;
				m->qkey = 0x11111111;
			}
			if (i == 2)
				m->attr_mask |= IBV_QP_SQ_PSN;
			race_write(r->fd, IB_USER_VERBS_CMD_MODIFY_QP, &c, sizeof(*m), 0);
		}
	}
	{
		struct ib_uverbs_reg_mr *m = (void *)&c.u;

		memset(&c, 0, sizeof(c));
		m->response = (uintptr_t)resp;
		m->start = (uintptr_t)buf;
		m->length = BUF_PAGES * PAGE;
		m->hca_va = m->start;
		m->pd_handle = atomic_load(&r->pd);
		m->access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
		if (!race_write(r->fd, IB_USER_VERBS_CMD_REG_MR, &c, sizeof(*m),
				sizeof(struct ib_uverbs_reg_mr_resp))) {
			atomic_store(&r->mr, u32_at(resp, offsetof(struct ib_uverbs_reg_mr_resp,
								   mr_handle)));
			r->lkey = u32_at(resp, offsetof(struct ib_uverbs_reg_mr_resp, lkey));
			r->rkey = u32_at(resp, offsetof(struct ib_uverbs_reg_mr_resp, rkey));
		}
	}
	if (r->f->gid_index >= 0) {
		struct ib_uverbs_create_ah *a = (void *)&c.u;

		memset(&c, 0, sizeof(c));
		a->response = (uintptr_t)resp;
		a->pd_handle = atomic_load(&r->pd);
		a->attr.port_num = 1;
		a->attr.is_global = 1;
		memcpy(a->attr.grh.dgid, r->f->gid.raw, 16);
		a->attr.grh.sgid_index = r->f->gid_index;
		a->attr.grh.hop_limit = 64;
		if (!race_write(r->fd, IB_USER_VERBS_CMD_CREATE_AH, &c, sizeof(*a),
				sizeof(struct ib_uverbs_create_ah_resp)))
			atomic_store(&r->ah, u32_at(resp, 0));
	}
	if (r->f->gid_index >= 0)
		race_rc_setup(r);
	return 0;
}

/* Post sends and receives, arm the CQ, modify the QP: until told to stop. */
static void *race_user(void *arg)
{
	struct race *r = arg;
	uint64_t st;
	struct raw_cmd c;
	uint64_t resp[8];

	seed_rng(&st, r->seed ^ (uintptr_t)pthread_self());
	while (!atomic_load(&r->stop)) {
		struct ib_uverbs_post_send *ps = (void *)&c.u;
		struct ib_uverbs_send_wr *wr = (void *)(ps + 1);
		struct ib_uverbs_sge *sge = (void *)(wr + 1);
		uint32_t pick = (uint32_t)(st = st * 6364136223846793005ULL + 1) >> 24;

		memset(&c, 0, 256);
		count(K_RACE);
		switch (pick % 6) {
		case 4:
		case 5: {
			static const uint32_t ops[4] = {
				IB_UVERBS_WR_RDMA_WRITE, IB_UVERBS_WR_RDMA_READ,
				IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD, IB_UVERBS_WR_SEND,
			};

			ps->response = (uintptr_t)resp;
			ps->qp_handle = atomic_load(&r->rc);
			ps->wr_count = 1;
			ps->sge_count = 1;
			ps->wqe_size = sizeof(*wr);
			wr->num_sge = 1;
			wr->opcode = ops[(pick >> 3) % 4];
			wr->send_flags = IBV_SEND_SIGNALED;
			sge->addr = (uintptr_t)buf + 2 * PAGE;
			sge->length = wr->opcode == IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD ? 8 :
				      64 + pick % 4096;
			sge->lkey = r->lkey;
			if (wr->opcode == IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD) {
				wr->wr.atomic.remote_addr = (uintptr_t)buf + 8 * (pick % 512);
				wr->wr.atomic.rkey = r->rkey;
				wr->wr.atomic.compare_add = 1;
			} else {
				wr->wr.rdma.remote_addr = (uintptr_t)buf + 8 * PAGE + pick % 4096;
				wr->wr.rdma.rkey = r->rkey;
			}
			race_write(r->fd, IB_USER_VERBS_CMD_POST_SEND, &c,
				   sizeof(*ps) + sizeof(*wr) + sizeof(*sge),
				   sizeof(struct ib_uverbs_post_send_resp));
			break;
		}
		case 0:
			ps->response = (uintptr_t)resp;
			ps->qp_handle = atomic_load(&r->qp);
			ps->wr_count = 1;
			ps->sge_count = 1;
			ps->wqe_size = sizeof(*wr);
			wr->num_sge = 1;
			wr->opcode = IBV_WR_SEND;
			wr->send_flags = IBV_SEND_SIGNALED;
			wr->wr.ud.ah = atomic_load(&r->ah);
			wr->wr.ud.remote_qpn = r->qpn;
			wr->wr.ud.remote_qkey = 0x11111111;
			sge->addr = (uintptr_t)buf;
			sge->length = 64 + pick % 512;
			sge->lkey = r->lkey;
			race_write(r->fd, IB_USER_VERBS_CMD_POST_SEND, &c,
				   sizeof(*ps) + sizeof(*wr) + sizeof(*sge),
				   sizeof(struct ib_uverbs_post_send_resp));
			break;
		case 1: {
			struct ib_uverbs_post_recv *pr = (void *)&c.u;
			struct ib_uverbs_recv_wr *rw = (void *)(pr + 1);
			struct ib_uverbs_sge *rs = (void *)(rw + 1);

			pr->response = (uintptr_t)resp;
			pr->qp_handle = pick & 16 ? atomic_load(&r->rc) : atomic_load(&r->qp);
			pr->wr_count = 1;
			pr->sge_count = 1;
			pr->wqe_size = sizeof(*rw);
			rw->num_sge = 1;
			rs->addr = (uintptr_t)buf + PAGE;
			rs->length = 2048;
			rs->lkey = r->lkey;
			race_write(r->fd, IB_USER_VERBS_CMD_POST_RECV, &c,
				   sizeof(*pr) + sizeof(*rw) + sizeof(*rs),
				   sizeof(struct ib_uverbs_post_recv_resp));
			break;
		}
		case 2: {
			struct ib_uverbs_req_notify_cq *n = (void *)&c.u;

			n->cq_handle = pick & 1 ? atomic_load(&r->scq) : atomic_load(&r->rcq);
			race_write(r->fd, IB_USER_VERBS_CMD_REQ_NOTIFY_CQ, &c, sizeof(*n), 0);
			break;
		}
		default: {
			struct ib_uverbs_modify_qp *m = (void *)&c.u;

			m->qp_handle = atomic_load(&r->qp);
			m->attr_mask = IBV_QP_STATE;
			m->qp_state = pick & 8 ? IBV_QPS_ERR : IBV_QPS_RTS;
			m->cur_qp_state = IBV_QPS_RTS;
			race_write(r->fd, IB_USER_VERBS_CMD_MODIFY_QP, &c, sizeof(*m), 0);
			break;
		}
		}
	}
	return NULL;
}

/* Map and unmap the send CQ's ring, reading and scribbling on it. */
static void *race_mapper(void *arg)
{
	struct race *r = arg;

	while (!atomic_load(&r->stop)) {
		unsigned long len = atomic_load(&r->cq_len);
		volatile uint32_t *p;

		count(K_RACE);
		if (!len) {
			sched_yield();
			continue;
		}
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd,
			 (off_t)atomic_load(&r->cq_off));
		if (p == MAP_FAILED)
			continue;
		p[16] = p[0] + (p[1] & 3);	/* consumer: near the producer */
		munmap((void *)p, len);
	}
	return NULL;
}

static void race_destroy(struct race *r, int what)
{
	struct raw_cmd c;
	uint64_t resp[4];

	memset(&c, 0, 64);
	count(K_RACE);
	switch (what) {
	case 0:
		((struct ib_uverbs_destroy_ah *)&c.u)->ah_handle = atomic_load(&r->ah);
		race_write(r->fd, IB_USER_VERBS_CMD_DESTROY_AH, &c,
			   sizeof(struct ib_uverbs_destroy_ah), 0);
		break;
	case 1:
		((struct ib_uverbs_dereg_mr *)&c.u)->mr_handle = atomic_load(&r->mr);
		race_write(r->fd, IB_USER_VERBS_CMD_DEREG_MR, &c,
			   sizeof(struct ib_uverbs_dereg_mr), 0);
		break;
	case 2:
	case 3:
	case 4: {
		struct ib_uverbs_destroy_cq *d = (void *)&c.u;
		static const uint32_t cmds[3] = {
			IB_USER_VERBS_CMD_DESTROY_QP, IB_USER_VERBS_CMD_DESTROY_CQ,
			IB_USER_VERBS_CMD_DESTROY_CQ,
		};

		d->response = (uintptr_t)resp;
		d->cq_handle = what == 2 ? atomic_load(&r->qp) :
			       what == 3 ? atomic_load(&r->scq) : atomic_load(&r->rcq);
		race_write(r->fd, cmds[what - 2], &c, sizeof(*d),
			   sizeof(struct ib_uverbs_destroy_cq_resp));
		break;
	}
	case 6: {
		struct ib_uverbs_destroy_qp *d = (void *)&c.u;

		d->response = (uintptr_t)resp;
		d->qp_handle = atomic_load(&r->rc);
		race_write(r->fd, IB_USER_VERBS_CMD_DESTROY_QP, &c, sizeof(*d),
			   sizeof(struct ib_uverbs_destroy_qp_resp));
		break;
	}
	default:
		((struct ib_uverbs_dealloc_pd *)&c.u)->pd_handle = atomic_load(&r->pd);
		race_write(r->fd, IB_USER_VERBS_CMD_DEALLOC_PD, &c,
			   sizeof(struct ib_uverbs_dealloc_pd), 0);
		break;
	}
}

/*
 * Rounds of: objects created on a context of their own, two threads using
 * them and one mapping the CQ ring while this one destroys them in a
 * random order (what is still in use fails, and is retried in the end).
 */
static void race_phase(struct fctx *f, int rounds)
{
	struct ibv_context *ctx = open_device_by_name(f->name);
	struct race r = { .f = f, .fd = ctx->cmd_fd };
	pthread_t t[3];
	int i, k;

	for (i = 0; i < rounds; i++) {
		uint8_t order[7] = { 0, 1, 2, 3, 4, 5, 6 };

		r.seed = rnd();
		atomic_store(&r.stop, 0);
		atomic_store(&r.cq_len, 0);
		atomic_store(&r.rc, ~0U);
		if (race_setup(&r))
			continue;
		pthread_create(&t[0], NULL, race_user, &r);
		pthread_create(&t[1], NULL, race_user, &r);
		pthread_create(&t[2], NULL, race_mapper, &r);
		usleep(below(20000));
		for (k = 6; k > 0; k--) {
			uint32_t j = below(k + 1);
			uint8_t x = order[k];

			order[k] = order[j];
			order[j] = x;
		}
		for (k = 0; k < 7; k++) {
			race_destroy(&r, order[k]);
			usleep(below(3000));
		}
		atomic_store(&r.stop, 1);
		for (k = 0; k < 3; k++)
			pthread_join(t[k], NULL);
		/* what failed as busy goes now: leaves first */
		for (k = 0; k < 7; k++)
			race_destroy(&r, "\0\1\2\6\3\4\5"[k]);
	}
	ibv_close_device(ctx);
}

/* ---- the fork phase ---- */

/*
 * A context of its own with raw objects; the child inherits it, uses and
 * destroys its objects, makes some of its own (an MR of its memory
 * included) and exits with or without cleaning up, while the parent does
 * the same to the same objects.  Neither may crash.
 */
static void fork_phase(struct fctx *f, int rounds)
{
	int i;

	for (i = 0; i < rounds; i++) {
		struct ibv_context *ctx = open_device_by_name(f->name);
		struct fctx *fk = calloc(1, sizeof(*fk));
		uint64_t child_seed = rnd();
		int status, j;
		pid_t pid;

		if (!fk)
			DIE("calloc");
		fk->ctx = ctx;
		memcpy(fk->name, f->name, sizeof(fk->name));
		fk->attr = f->attr;
		fk->gid_index = f->gid_index;
		fk->gid = f->gid;
		for (j = 0; j < 12; j++)
			raw_create(fk, ctx->cmd_fd);
		fk->untracked = 1;	/* two processes: no handle is known dead */
		count(K_FORK);
		fflush(stdout);
		pid = fork();
		if (pid < 0)
			DIE("fork: %s", strerror(errno));
		if (pid == 0) {
			long inherited = atomic_load(&violations);

			seed_rng(&rng_state, child_seed);
			/* uverbs refuses our writes (another process's file): ioctl is taken */
			for (j = 0; j < 60; j++) {
				switch (below(5)) {
				case 0: raw_create(fk, ctx->cmd_fd); break;
				case 1: raw_destroy(fk, ctx->cmd_fd); break;
				case 2: raw_use(fk, ctx->cmd_fd); break;
				case 3: raw_ioctl(fk, ctx->cmd_fd); break;
				default: do_mmap(fk); break;
				}
			}
			if (chance(50))
				ibv_close_device(ctx);
			_exit(atomic_load(&violations) != inherited ? 1 : 0);
		}
		for (j = 0; j < 60; j++) {
			switch (below(5)) {
			case 0: raw_create(fk, ctx->cmd_fd); break;
			case 1: raw_destroy(fk, ctx->cmd_fd); break;
			case 2: raw_use(fk, ctx->cmd_fd); break;
			case 3: raw_ioctl(fk, ctx->cmd_fd); break;
			default: do_mmap(fk); break;
			}
		}
		if (waitpid(pid, &status, 0) != pid)
			DIE("waitpid: %s", strerror(errno));
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			violation("fork child: %s %d", WIFEXITED(status) ? "exit" : "signal",
				  WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		/* everything of the context goes with its close */
		ibv_close_device(ctx);
		free(fk);
	}
}

/* ---- setup, the main sequence, cleanup ---- */

static void find_gid(struct fctx *f)
{
	int i;

	f->gid_index = -1;
	for (i = 0; i < 16; i++) {
		union ibv_gid g;

		if (ibv_query_gid(f->ctx, 1, i, &g))
			break;
		if (g.global.subnet_prefix || g.global.interface_id) {
			f->gid_index = i;
			f->gid = g;
			/* prefer an IPv4-mapped GID: what RoCEv2 loopback uses */
			if (!g.raw[0] && g.raw[10] == 0xff && g.raw[11] == 0xff)
				return;
		}
	}
}

/* Destroy what is left, leaves before what they hold. */
static void cleanup(struct fctx *f)
{
	static const int order[T_TYPES] = { T_QP, T_AH, T_MR, T_SRQ, T_CQ, T_PD };
	int t, i;

	for (t = 0; t < T_TYPES; t++)
		for (i = f->n - 1; i >= 0; i--) {
			struct obj *o = &f->o[i];
			int err = -1;

			if (o->type != order[t] || o->raw)
				continue;
			switch (o->type) {
			case T_QP: err = ibv_destroy_qp(o->v); break;
			case T_AH: err = ibv_destroy_ah(o->v); break;
			case T_MR: err = ibv_dereg_mr(o->v); break;
			case T_SRQ: err = ibv_destroy_srq(o->v); break;
			case T_CQ: err = ibv_destroy_cq(o->v); break;
			default: err = ibv_dealloc_pd(o->v); break;
			}
			/* in use by a raw object, or pinned: goes with the context */
			(void)err;
		}
	/* raw objects go with the context */
}

int main(int argc, char **argv)
{
	struct fctx *f = &main_ctx;
	long want, i;
	uint64_t seed;
	char *end;

	if (argc != 4) {
		fprintf(stderr, "usage: %s DEV CALLS SEED\n", argv[0]);
		return 2;
	}
	want = strtol(argv[2], &end, 0);
	if (*end || want < 1)
		return 2;
	seed = strtoull(argv[3], &end, 0);
	if (*end)
		return 2;
	seed_rng(&rng_state, seed);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("seed %" PRIu64 "\n", seed);
	map_memory();
	make_dmabuf();
	printf("dmabuf %s\n", dmabuf_fd >= 0 ? "udmabuf" : "none");
	f->ctx = open_device_by_name(argv[1]);
	snprintf(f->name, sizeof(f->name), "%s", ibv_get_device_name(f->ctx->device));
	if (ibv_query_device(f->ctx, &f->attr))
		DIE("query_device: %s", strerror(errno));
	find_gid(f);
	printf("gid_index %d\n", f->gid_index);
	ioctl_directed(f);

	/* the main sequence: the calls asked for, the same for the same seed */
	for (i = 0; total_calls() < want; i++) {
		int fd = f->ctx->cmd_fd;

		switch (below(40)) {
		case 0: case 1: do_pd(f); break;
		case 2: case 3: do_cq(f); break;
		case 4: case 5: case 6: do_mr(f); break;
		case 7: case 8: do_qp(f); break;
		case 9: do_srq(f); break;
		case 10: do_ah(f); break;
		case 11: case 12: do_modify_qp(f); break;
		case 13: do_connect(f); break;
		case 14: do_query(f); break;
		case 15: case 16: case 17: do_post_send(f); break;
		case 18: case 19: do_post_recv(f); break;
		case 20: do_poll(f); break;
		case 21: case 22: case 23: raw_create(f, fd); break;
		case 24: case 25: case 26: raw_destroy(f, fd); break;
		case 27: case 28: case 29: case 30: raw_use(f, fd); break;
		case 31: case 32: raw_size(f, fd); break;
		case 33: case 34: raw_garbage(f, fd); break;
		case 35: raw_context(f); break;
		case 36: do_dmabuf_mr(f); break;
		case 37: do_mcast_twice(f, fd); break;
		case 38: raw_ioctl(f, fd); break;
		default: do_mmap(f); break;
		}
	}
	printf("main_sequence_calls %ld\n", total_calls());
	/* the same for two runs of one seed when the sequence was the same */
	printf("main_sequence_rng %016" PRIx64 "\n", rng_state);
	/* the device's objects are shared: free ours for the phases that follow */
	cleanup(f);
	ibv_close_device(f->ctx);
	f->ctx = NULL;
	/* they open contexts of their own; f lends them the device's attributes */
	race_phase(f, 6);
	fork_phase(f, 4);

	printf("calls_total %ld\n", total_calls());
	for (i = 0; i < K_KINDS; i++)
		printf("calls_%s %ld\n", kind_names[i], atomic_load(&calls[i]));
	for (i = 0; i < K_KINDS; i++)
		printf("ok_%s %ld\n", kind_names[i], atomic_load(&oks[i]));
	for (i = 0; i < 128; i++)
		if (valid_send_err[i])
			printf("valid_send_%s %ld\n", i ? strerrorname_np(i) : "posted",
			       valid_send_err[i]);
	printf("violations %ld\n", atomic_load(&violations));
	printf("%s\n", atomic_load(&violations) ? "FAIL" : "PASS");
	return atomic_load(&violations) ? 1 : 0;
}
