// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * cnuasgpu_abi_fuzz DEVNODE CALLS SEED: at least CALLS calls against
 * /dev/cnuasgpuN (cnuasgpu.ko) or /dev/cnuasgpu_hostN (cnuasgpu_host.ko),
 * chosen by a PRNG seeded with SEED (the same seed makes the same main
 * sequence), in the style of uverbs_fuzz:
 *
 *   main   three open files issuing every ioctl of the uapi with valid,
 *          stale (freed), foreign (another file's) and garbage handles,
 *          sizes/offsets/counts at 0, 1, page-1, page, 2^31, 2^63, ~0,
 *          argument and user pointers that are NULL, unaligned, unmapped,
 *          read-only or in the kernel, wrong command numbers and sizes;
 *          mmap() at random offsets/lengths/prot (past the end, offset+len
 *          overflowing, MAP_PRIVATE); DMA-BUF exports: lseek/mmap/read,
 *          close and double close, kept past FREE and the file's close,
 *          imported (host) and non-DMA-BUF fds imported; PIN/UNPIN,
 *          SUBMIT/POLL/WAIT (host); files closed and reopened
 *   race   a thread closing the device fd while another is in ioctls and
 *          mmap() on it
 *   fork   children inheriting the fd using and freeing the parent's
 *          objects while the parent does; children exec'ing with the fd
 *          and exports inherited
 *
 * What must hold (checked; everything else only has to return):
 *   - a call naming a handle that is not a live object of this file
 *     (stale, foreign, garbage) fails, and a valid FREE succeeds once;
 *   - calls with a reserved/flags field set, size 0, ranges past the
 *     allocation or wrapping, unknown commands, bad argument pointers fail;
 *   - data read back by a successful COPY_FROM_DEV (or through a mapping,
 *     or another file's import) equals what a successful copy wrote;
 *   - a refused call changes nothing: device bytes, devmem_used, pinned
 *     bytes, the fd table (no leaked DMA-BUF fd), the next sequence number;
 *   - a shared FREE succeeds in at most one of parent and child;
 *   - at the end, with everything freed, the node's sysfs counters are
 *     back to their values before the run.
 *
 * Prints "seed N", "calls_total N", one "calls_KIND N" per kind, the
 * counters "baseline_X"/"final_X", then "violations N" and PASS or FAIL.
 * Exits 0 on PASS, 1 when a check failed, 2 on usage errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cnuasgpu.h"
#include "cnuasgpu_host.h"

#define NF		3	/* open files of the main sequence */
#define MAXA		24	/* live allocations per file we track */
#define MAXP		8	/* pins per file */
#define MAXX		32	/* export fds */
#define MAXM		32	/* mappings */
#define MAXSEQ_WAIT	10000

enum kind {
	K_INFO, K_ALLOC, K_FREE, K_COPY, K_MMAP, K_EXPORT, K_DMABUF, K_IMPORT,
	K_PIN, K_SUBMIT, K_REAP, K_GARBAGE, K_ARGPTR, K_FILE, K_RACE, K_FORK,
	K_KINDS
};

static const char *const kind_names[K_KINDS] = {
	"info", "alloc", "free", "copy", "mmap", "export", "dmabuf", "import",
	"pin", "submit", "reap", "garbage", "argptr", "file", "race", "fork",
};

/* shared with forked children (MAP_SHARED) */
struct shared {
	atomic_long calls[K_KINDS];
	atomic_long violations;
	atomic_int free_ok[MAXA];
};
static struct shared *sh;

static uint64_t rng_state;
static const char *devnode;
static char sysdir[256];
static int is_host;
static uint64_t page;
static struct cnuasgpu_caps caps;

/* the largest queue_depth: no more ops than that wait to be reaped, so seq % QSLOTS is unique */
#define QSLOTS	4096

struct alloc { uint32_t h; uint64_t off, size; };
struct pin { uint32_t h; uint8_t *p; uint64_t len; };
struct file {
	int fd;
	struct alloc a[MAXA];
	int na;
	struct pin p[MAXP];
	int np;
	uint64_t last_seq;	/* last op submitted */
	uint64_t reaped;	/* completions taken */
	uint8_t must_fault[QSLOTS];	/* by seq % QSLOTS: the op's user range is not accessible */
	uint32_t stale[8];	/* freed handles (not reused while no ALLOC since) */
	int nstale;
};
static struct file files[NF];

struct xport { int fd; uint64_t size; };
static struct xport xs[MAXX];
static int nx;

struct map { uint8_t *p; size_t len; };
static struct map ms[MAXM];
static int nm;

static uint8_t *buf, *buf2, *rdonly, *guard, *abuf;
#define BUFSZ	(256 * 1024)

static const uint64_t kaddrs[] = {
	0xffff888000000000ull, 0xffffffff81000000ull, 0xfffffffffffff000ull,
	0x8000000000000000ull,
};

/* ---- plumbing ------------------------------------------------------------ */

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static void violation(const char *fmt, ...)
{
	long n = atomic_fetch_add(&sh->violations, 1);
	va_list ap;

	if (n >= 40)
		return;
	va_start(ap, fmt);
	printf("violation: ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
}

#define MUST_FAIL(r, what, ...) do {					\
	if ((r) == 0)							\
		violation("%s succeeded: " what, __func__, ##__VA_ARGS__);\
} while (0)

static long total_calls(void)
{
	long t = 0;

	for (int i = 0; i < K_KINDS; i++)
		t += atomic_load(&sh->calls[i]);
	return t;
}

/* ioctl returning 0 or -errno, counted under @k */
static int xioctl(int k, int fd, unsigned long cmd, void *arg)
{
	atomic_fetch_add(&sh->calls[k], 1);
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

static void count(int k)
{
	atomic_fetch_add(&sh->calls[k], 1);
}

/* a boundary or random size */
static uint64_t bsize(uint64_t small)
{
	switch (below(12)) {
	case 0: return 0;
	case 1: return 1;
	case 2: return page - 1;
	case 3: return page;
	case 4: return page + 1;
	case 5: return 1ull << 31;
	case 6: return 1ull << 63;
	case 7: return ~0ull;
	case 8: return (1ull << 63) + page;
	default: return 1 + below(small);
	}
}

static long sysfs_num(const char *attr)
{
	char path[320], v[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", sysdir, attr);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(v, sizeof(v), f))
		v[0] = 0;
	fclose(f);
	return strtol(v, NULL, 0);
}

static const char *const host_counters[] = {
	"devmem_used", "allocations", "exports", "pinned_used", "pins", "inflight", NULL,
};
static const char *const pcie_counters[] = { "devmem_used", "exports", NULL };

static uint64_t devmem_used(int fd)
{
	struct cnuasgpu_info inf;

	memset(&inf, 0, sizeof(inf));
	if (xioctl(K_INFO, fd, CNUASGPU_IOC_INFO, &inf))
		return 0;
	return inf.devmem_used;
}

/* lowest free fd number now (to see whether a refused call left one open) */
static int lowest_free_fd(void)
{
	int d = dup(0);

	if (d >= 0)
		close(d);
	return d;
}

static void check_no_new_fd(int d, const char *what)
{
	if (d >= 0 && fcntl(d, F_GETFD) != -1) {
		violation("%s: refused but fd %d is open now", what, d);
		close(d);
	}
}

/* ---- tracking ------------------------------------------------------------ */

static struct alloc *pick_alloc(struct file *f)
{
	return f->na ? &f->a[below(f->na)] : NULL;
}

static int live_handle(struct file *f, uint32_t h)
{
	for (int i = 0; i < f->na; i++)
		if (f->a[i].h == h)
			return 1;
	for (int i = 0; i < f->np; i++)
		if (f->p[i].h == h)
			return 1;
	return 0;
}

/* a handle that is certainly not a live object of @f: stale, foreign or garbage */
static uint32_t bad_handle(struct file *f)
{
	uint32_t h;

	for (int tries = 0; tries < 8; tries++) {
		switch (below(4)) {
		case 0:
			h = f->nstale ? f->stale[below(f->nstale)] : (uint32_t)rnd();
			break;
		case 1: {
			struct file *o = &files[below(NF)];

			h = o->na ? o->a[below(o->na)].h : 0;
			break;
		}
		case 2:
			h = (uint32_t[]){ 0, 1, 2, 0x7fffffff, 0x80000000, ~0u }[below(6)];
			break;
		default:
			h = (uint32_t)rnd();
		}
		if (!live_handle(f, h))
			return h;
	}
	return 0xdeadbeef;
}

static void add_stale(struct file *f, uint32_t h)
{
	if (f->nstale < 8)
		f->stale[f->nstale++] = h;
	else
		f->stale[below(8)] = h;
}

static void drop_alloc(struct file *f, int i)
{
	add_stale(f, f->a[i].h);
	f->a[i] = f->a[--f->na];
}

static void add_export(int fd, uint64_t size)
{
	if (nx == MAXX) {
		count(K_DMABUF);
		close(xs[0].fd);
		xs[0] = xs[--nx];
	}
	xs[nx].fd = fd;
	xs[nx].size = size;
	nx++;
}

static void add_map(uint8_t *p, size_t len)
{
	if (nm == MAXM) {
		count(K_MMAP);
		munmap(ms[0].p, ms[0].len);
		ms[0] = ms[--nm];
	}
	ms[nm].p = p;
	ms[nm].len = len;
	nm++;
}

/*
 * Completions taken from @f: in sequence, each with the status its op must end in (docs/devices.md,
 * "Asynchronous queues": -EFAULT when the user side faults, else 0; -ECANCELED only on close).
 */
static void check_completions(struct file *f, const struct cnuasgpu_completion *c, uint32_t n,
			      uint32_t max)
{
	if (n > max) {
		violation("reap took %u of max %u", n, max);
		n = max;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint64_t seq = f->reaped + 1 + i;
		int want = f->must_fault[seq % QSLOTS] ? -EFAULT : 0;

		if (c[i].seq != seq)
			violation("completion %u seq %" PRIu64 ", want %" PRIu64, i, c[i].seq, seq);
		else if (c[i].status != want)
			violation("op %" PRIu64 " completed with status %d, want %d (%s)", seq,
				  c[i].status, want,
				  want ? "its user range is not accessible" : "a valid op");
	}
}

/* wait for every queued op of every file (data checks need a quiet device) */
static void drain(void)
{
	struct cnuasgpu_completion comps[64];

	if (!is_host || !(caps.caps & CNUASGPU_CAP_ASYNC))
		return;
	for (int i = 0; i < NF; i++) {
		struct file *f = &files[i];

		while (f->fd >= 0 && f->reaped < f->last_seq) {
			struct cnuasgpu_reap r = {
				.size = sizeof(r), .comp_size = sizeof(comps[0]),
				.comps_ptr = (uintptr_t)comps, .max = 64,
				.timeout_ms = MAXSEQ_WAIT, .seq = f->last_seq,
			};
			if (r.max > caps.queue_depth)
				r.max = caps.queue_depth;
			if (xioctl(K_REAP, f->fd, CNUASGPU_IOC_WAIT, &r))
				break;
			if (r.reaped <= f->reaped && r.count == 0)
				break;
			check_completions(f, comps, r.count, r.max);
			f->reaped = r.reaped;
		}
	}
}

/* ---- the calls ----------------------------------------------------------- */

static int do_alloc_call(struct file *f, uint64_t size, uint64_t align, struct alloc *out)
{
	struct cnuasgpu_alloc a = { .size = size, .align = align };
	int r = xioctl(K_ALLOC, f->fd, CNUASGPU_IOC_ALLOC, &a);

	if (!r) {
		out->h = a.handle;
		out->off = a.offset;
		out->size = (size + page - 1) & ~(uint64_t)(page - 1);
	}
	return r;
}

static void op_alloc(struct file *f)
{
	uint64_t size = bsize(is_host ? 512 * 1024 : 256 * 1024), align;
	uint64_t before = devmem_used(f->fd);
	struct cnuasgpu_alloc a;
	int r, bad = 0;

	static const uint64_t aligns[] = { 0, 0, 0, 4096, 8192, 65536, 3, 1, 2048,
					   1ull << 30, 1ull << 31, 1ull << 63, ~0ull };
	align = aligns[below(sizeof(aligns) / sizeof(aligns[0]))];
	memset(&a, 0, sizeof(a));
	a.size = size;
	a.align = align;
	switch (below(8)) {
	case 0: a.flags = 1u << below(32); bad = 1; break;
	case 1: a.handle = 1 + (uint32_t)below(100); bad = 1; break;
	case 2: a.offset = 1ull << below(64); bad = 1; break;
	default: break;
	}
	if (size == 0 || (align && (align & (align - 1)))) /* 0 or not a power of 2 */
		bad = 1;
	if (align && (align < 4096 || align > (1ull << 30)))
		bad = 1;
	if (f->na == MAXA)
		bad = 1, a.size = 0;
	r = xioctl(K_ALLOC, f->fd, CNUASGPU_IOC_ALLOC, &a);
	if (bad)
		MUST_FAIL(r, "ALLOC size %#" PRIx64 " align %#" PRIx64 " flags %#x", a.size,
			  align, a.flags);
	if (r) {
		if (devmem_used(f->fd) > before)
			violation("refused ALLOC (%d) grew devmem_used %" PRIu64 " -> %" PRIu64,
				  r, before, devmem_used(f->fd));
		return;
	}
	if (f->na == MAXA) {	/* only when a check above failed */
		struct cnuasgpu_free fr = { .handle = a.handle };

		xioctl(K_FREE, f->fd, CNUASGPU_IOC_FREE, &fr);
		return;
	}
	if (a.offset & (page - 1) || (align && (a.offset & (align - 1))))
		violation("ALLOC align %#" PRIx64 " gave offset %#" PRIx64, align, a.offset);
	if (live_handle(f, a.handle))
		violation("ALLOC returned handle %u which is live", a.handle);
	f->a[f->na].h = a.handle;
	f->a[f->na].off = a.offset;
	f->a[f->na].size = (size + page - 1) & ~(uint64_t)(page - 1);
	f->na++;
	/* a new allocation's handle may reuse a stale number */
	f->nstale = 0;
}

static void op_free(struct file *f)
{
	struct cnuasgpu_free fr = { 0 };
	int r;

	if (f->na && below(3)) {
		int i = below(f->na);

		fr.handle = f->a[i].h;
		if (!below(6)) {
			fr.reserved = 1 + (uint32_t)below(0xffffffffu);
			r = xioctl(K_FREE, f->fd, CNUASGPU_IOC_FREE, &fr);
			MUST_FAIL(r, "FREE with reserved %#x", fr.reserved);
			if (r)
				return;
		}
		r = xioctl(K_FREE, f->fd, CNUASGPU_IOC_FREE, &fr);
		if (r)
			violation("FREE of live handle %u: %s", fr.handle, strerror(-r));
		drop_alloc(f, i);
		r = xioctl(K_FREE, f->fd, CNUASGPU_IOC_FREE, &fr);
		MUST_FAIL(r, "second FREE of handle %u", fr.handle);
		return;
	}
	if (is_host && f->np && !below(3)) {	/* FREE of a pin: ENOENT */
		fr.handle = f->p[below(f->np)].h;
		r = xioctl(K_FREE, f->fd, CNUASGPU_IOC_FREE, &fr);
		MUST_FAIL(r, "FREE of pin handle %u", fr.handle);
		return;
	}
	fr.handle = bad_handle(f);
	r = xioctl(K_FREE, f->fd, CNUASGPU_IOC_FREE, &fr);
	MUST_FAIL(r, "FREE of handle %u not live in this file", fr.handle);
}

static int copy_call(int k, int fd, int to, uint32_t h, uint64_t off, uint64_t ptr, uint64_t size,
		     uint32_t reserved)
{
	struct cnuasgpu_copy c = { .handle = h, .reserved = reserved, .offset = off,
				   .user_ptr = ptr, .size = size };

	return xioctl(k, fd, to ? CNUASGPU_IOC_COPY_TO_DEV : CNUASGPU_IOC_COPY_FROM_DEV, &c);
}

static void pattern(uint8_t *p, size_t n)
{
	uint64_t s = rnd();

	for (size_t i = 0; i < n; i++) {
		if (!(i & 7))
			s = s * 6364136223846793005ull + 1442695040888963407ull;
		p[i] = (uint8_t)(s >> (8 * (i & 7)));
	}
}

static void op_copy(struct file *f)
{
	struct alloc *a = pick_alloc(f);
	uint64_t off, len, ptr;
	int r;

	if (!a || !below(5)) {	/* bad handle */
		r = copy_call(K_COPY, f->fd, below(2), bad_handle(f), 0, (uintptr_t)buf,
			      page, 0);
		MUST_FAIL(r, "COPY on a handle not live in this file");
		return;
	}
	switch (below(6)) {
	case 0: case 1: case 2: {	/* valid, data checked */
		uint64_t max = a->size < BUFSZ - 64 ? a->size : BUFSZ - 64;
		unsigned mis = below(4) ? 0 : 1 + below(63);

		len = 1 + below(max);
		off = below(a->size - len + 1);
		drain();
		pattern(buf + mis, len);
		r = copy_call(K_COPY, f->fd, 1, a->h, off, (uintptr_t)(buf + mis), len, 0);
		if (r) {
			violation("COPY_TO_DEV h %u off %" PRIu64 " len %" PRIu64 ": %s", a->h,
				  off, len, strerror(-r));
			return;
		}
		memset(buf2, 0xa5, len + 64);
		r = copy_call(K_COPY, f->fd, 0, a->h, off, (uintptr_t)(buf2 + 3), len, 0);
		if (r)
			violation("COPY_FROM_DEV h %u: %s", a->h, strerror(-r));
		else if (memcmp(buf + mis, buf2 + 3, len))
			violation("h %u off %" PRIu64 " len %" PRIu64 ": read back differs", a->h,
				  off, len);
		if (buf2[2] != 0xa5 || buf2[3 + len] != 0xa5)
			violation("COPY_FROM_DEV wrote outside its user range");
		return;
	}
	case 3: {	/* out of range / wrapping / size 0 / reserved: refused, nothing written */
		uint64_t chk = a->size < BUFSZ ? a->size : BUFSZ, roff = 0;
		uint32_t res = 0;

		switch (below(5)) {
		case 0: off = a->size - (below(2) ? 1 : 0); len = a->size; break;
		case 1: off = bsize(a->size) | (1ull << 40); len = page; break;
		case 2: off = 1ull << 63; len = 1ull << 63; break;
		case 3: off = below(a->size); len = 0; break;
		default: off = 0; len = chk; res = 1 + (uint32_t)below(1000); break;
		}
		if (off + len <= a->size && off + len >= off && len && !res)
			off = a->size; /* make sure it is out of range */
		drain();
		if (copy_call(K_COPY, f->fd, 0, a->h, roff, (uintptr_t)buf2, chk, 0))
			return;
		pattern(buf, BUFSZ);
		r = copy_call(K_COPY, f->fd, 1, a->h, off, (uintptr_t)buf,
			      len < BUFSZ ? len : BUFSZ, res);
		/* a len above BUFSZ is still out of range: only off + len matters */
		if (len >= BUFSZ && !res && off < a->size && len - BUFSZ < 1)
			return;
		if (len <= BUFSZ || res)
			MUST_FAIL(r, "COPY_TO_DEV h %u size %" PRIu64 " off %" PRIu64 " len %"
				  PRIu64 " res %u", a->h, a->size, off, len, res);
		if (r) {
			memset(buf, 0, chk);
			if (copy_call(K_COPY, f->fd, 0, a->h, roff, (uintptr_t)buf, chk, 0) == 0 &&
			    memcmp(buf, buf2, chk))
				violation("refused COPY_TO_DEV (%s) changed device bytes",
					  strerror(-r));
		}
		r = copy_call(K_COPY, f->fd, 0, a->h, off, (uintptr_t)buf2,
			      len < BUFSZ ? len : BUFSZ, res);
		if (len <= BUFSZ || res)
			MUST_FAIL(r, "COPY_FROM_DEV out of range");
		return;
	}
	default:	/* bad user pointers */
		len = 1 + below(a->size < 3 * page ? a->size : 3 * page);
		switch (below(5)) {
		case 0: ptr = 0; break;
		case 1: ptr = (uintptr_t)guard + below(page); break;
		case 2: ptr = kaddrs[below(4)]; break;
		case 3: ptr = ~0ull - below(page); break;
		default: ptr = (uintptr_t)rdonly; break;
		}
		r = copy_call(K_COPY, f->fd, 0, a->h, 0, ptr, len, 0);
		MUST_FAIL(r, "COPY_FROM_DEV to user %#" PRIx64, ptr);
		if (ptr != (uintptr_t)rdonly) {
			r = copy_call(K_COPY, f->fd, 1, a->h, 0, ptr, len, 0);
			MUST_FAIL(r, "COPY_TO_DEV from user %#" PRIx64, ptr);
		}
	}
}

static void op_mmap(struct file *f)
{
	struct alloc *a = pick_alloc(f);
	int prot = (int[]){ PROT_READ | PROT_WRITE, PROT_READ, PROT_WRITE, PROT_NONE,
			    PROT_READ | PROT_EXEC }[below(5)];
	int flags = below(8) ? MAP_SHARED : MAP_PRIVATE;
	uint64_t off, len;
	uint8_t *p;

	if (nm && !below(4)) {	/* unmap one, or part of one */
		int i = below(nm);

		count(K_MMAP);
		if (ms[i].len > (size_t)page && below(2)) {
			/* cnuasgpu.ko refuses to split a mapping (EINVAL) */
			if (munmap(ms[i].p + page, ms[i].len - page) == 0)
				ms[i].len = page;
			else if (is_host)
				violation("partial munmap of a mapping: %s", strerror(errno));
			return;
		}
		munmap(ms[i].p, ms[i].len);
		ms[i] = ms[--nm];
		return;
	}
	if (a && below(2)) {	/* inside an allocation of this file: maps */
		uint64_t pages = a->size / page;
		uint64_t first = below(pages), n = 1 + below(pages - first);

		off = a->off + first * page;
		len = n * page;
		count(K_MMAP);
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, off);
		if (p == MAP_FAILED) {
			if (!is_host || (caps.caps & CNUASGPU_CAP_ZEROCOPY))
				violation("mmap of h %u +%" PRIu64 " len %" PRIu64 ": %s", a->h,
					  first * page, len, strerror(errno));
			return;
		}
		if (is_host && !(caps.caps & CNUASGPU_CAP_ZEROCOPY))
			violation("mmap with zerocopy off succeeded");
		/* what a copy wrote reads back through the mapping, and the other way */
		if (len <= BUFSZ) {
			drain();
			pattern(buf, len);
			if (!copy_call(K_COPY, f->fd, 1, a->h, first * page, (uintptr_t)buf, len,
				       0)) {
				if (memcmp(p, buf, len))
					violation("mapping of h %u differs from COPY_TO_DEV", a->h);
				pattern(buf, len);
				memcpy(p, buf, len);
				__sync_synchronize();
				if (!copy_call(K_COPY, f->fd, 0, a->h, first * page,
					       (uintptr_t)buf2, len, 0) &&
				    memcmp(buf, buf2, len))
					violation("COPY_FROM_DEV of h %u differs from the mapping's "
						  "writes", a->h);
			}
		}
		add_map(p, len);
		return;
	}
	/* not inside one allocation of this file: refused */
	switch (below(6)) {
	case 0: off = 1ull << 62; len = page; break;
	case 1: off = ~0ull & ~(uint64_t)(page - 1); len = 2 * page; break;
	case 2:
		if (!a)
			return;
		off = a->off;
		len = a->size + page;
		break;
	case 3: {
		struct file *o = &files[below(NF)];
		struct alloc *oa = o == f ? NULL : pick_alloc(o);

		if (!oa)
			return;
		off = oa->off;
		len = page;
		for (int i = 0; i < f->na; i++)
			if (f->a[i].off <= off && off < f->a[i].off + f->a[i].size)
				return; /* (cannot overlap, but stay certain) */
		break;
	}
	case 4: off = caps.devmem_size + page * below(4); len = page; break;
	default: off = (uint64_t)below(1u << 20) * page; len = 1ull << (12 + below(40)); break;
	}
	for (int i = 0; i < f->na; i++)	/* certain: no allocation of ours covers it */
		if (f->a[i].off <= off && off + len <= f->a[i].off + f->a[i].size &&
		    off + len > off)
			return;
	/* (a private writable mapping would be charged to overcommit first: a kernel warning) */
	if (flags == MAP_PRIVATE)
		prot &= ~PROT_WRITE;
	count(K_MMAP);
	p = mmap(NULL, len, prot, flags, f->fd, (off_t)off);
	if (p != MAP_FAILED) {
		violation("mmap off %#" PRIx64 " len %#" PRIx64 " outside this file's "
			  "allocations succeeded", off, len);
		munmap(p, len);
	}
}

static void op_export(struct file *f)
{
	struct alloc *a = pick_alloc(f);
	struct cnuasgpu_export e = { 0 };
	int r, d, bad = 0;

	if (a)
		e.handle = a->h;
	switch (below(8)) {
	case 0: e.flags = 2u << below(31); bad = 1; break;
	case 1: e.reserved = 1 + (uint32_t)below(100); bad = 1; break;
	case 2: e.fd = 1 + (int)below(100); bad = 1; break;
	case 3: e.handle = bad_handle(f); bad = 1; break;
	case 4: e.flags = CNUASGPU_EXPORT_CLOEXEC; break;
	default: break;
	}
	if (!a)
		e.handle = bad_handle(f), bad = 1;
	if (is_host && !(caps.caps & CNUASGPU_CAP_DMABUF))
		bad = 1;
	d = lowest_free_fd();
	r = xioctl(K_EXPORT, f->fd, CNUASGPU_IOC_EXPORT_DMABUF, &e);
	if (bad) {
		MUST_FAIL(r, "EXPORT h %u flags %#x res %u fd %d", e.handle, e.flags,
			  e.reserved, e.fd);
		if (r)
			check_no_new_fd(d, "EXPORT_DMABUF");
	}
	if (r) {
		if (!bad)
			violation("EXPORT of live h %u: %s", e.handle, strerror(-r));
		return;
	}
	if (e.fd < 0 || fcntl(e.fd, F_GETFD) == -1) {
		violation("EXPORT returned fd %d which is not open", e.fd);
		return;
	}
	if (bad) {
		close(e.fd);
		return;
	}
	if (!!(fcntl(e.fd, F_GETFD) & FD_CLOEXEC) != !!(e.flags & CNUASGPU_EXPORT_CLOEXEC))
		violation("EXPORT flags %#x: FD_CLOEXEC is %d", e.flags,
			  fcntl(e.fd, F_GETFD) & FD_CLOEXEC);
	add_export(e.fd, a->size);
}

/* DMA-BUF fds: lseek, read, mmap, close, double close, import */
static void op_dmabuf(struct file *f)
{
	struct xport *x;
	int i;
	off_t end;
	void *p;
	char c[16];

	if (!nx)
		return;
	i = below(nx);
	x = &xs[i];
	switch (below(6)) {
	case 0:
		count(K_DMABUF);
		end = lseek(x->fd, 0, SEEK_END);
		if (end >= 0 && (uint64_t)end != x->size)
			violation("DMA-BUF of %" PRIu64 " bytes seeks to end %lld", x->size,
				  (long long)end);
		break;
	case 1:
		count(K_DMABUF);
		if (read(x->fd, c, sizeof(c)) < 0)
			break;
		break;
	case 2:
		count(K_DMABUF);
		p = mmap(NULL, x->size, PROT_READ | PROT_WRITE, MAP_SHARED, x->fd, 0);
		if (p != MAP_FAILED) {
			if (is_host)
				violation("mmap of a cnuasgpu_host DMA-BUF succeeded");
			add_map(p, x->size);
		}
		count(K_DMABUF);
		p = mmap(NULL, page, PROT_READ, MAP_SHARED, x->fd, (off_t)x->size);
		if (p != MAP_FAILED) {
			violation("mmap of a DMA-BUF past its end succeeded");
			munmap(p, page);
		}
		break;
	case 3: case 4: {	/* close, then double close */
		int fd = x->fd;

		count(K_DMABUF);
		if (close(fd))
			violation("close of DMA-BUF fd %d: %s", fd, strerror(errno));
		*x = xs[--nx];
		count(K_DMABUF);
		if (close(fd) == 0)
			violation("second close of DMA-BUF fd %d succeeded", fd);
		break;
	}
	default:	/* import into a file (host), even the exporting one */
		if (is_host) {
			struct cnuasgpu_import im = { .size = sizeof(im), .fd = x->fd };
			int r;

			if (!below(4))
				im.flags = 1, im.handle = (uint32_t)below(2);
			if (f->na == MAXA)
				return;
			r = xioctl(K_IMPORT, f->fd, CNUASGPU_IOC_IMPORT_DMABUF, &im);
			if (im.flags)
				MUST_FAIL(r, "IMPORT with flags/out fields set");
			if (r)
				return;
			if (live_handle(f, im.handle))
				violation("IMPORT returned handle %u which is live", im.handle);
			if (im.length != x->size)
				violation("IMPORT length %" PRIu64 " of a %" PRIu64 " byte DMA-BUF",
					  im.length, x->size);
			f->a[f->na].h = im.handle;
			f->a[f->na].off = im.offset;
			f->a[f->na].size = im.length;
			f->na++;
			f->nstale = 0;
		}
	}
}

static void op_import_bad(struct file *f)
{
	int pfd[2] = { -1, -1 }, fds[5], n = 0, r;

	if (!pipe(pfd)) {
		fds[n++] = pfd[0];
	}
	fds[n++] = f->fd;
	fds[n++] = files[below(NF)].fd;
	fds[n++] = -1 - (int)below(3);
	fds[n++] = 100000 + (int)below(1000);
	for (int i = 0; i < n; i++) {
		struct cnuasgpu_import im = { .size = sizeof(im), .fd = fds[i] };

		r = xioctl(K_IMPORT, f->fd, CNUASGPU_IOC_IMPORT_DMABUF, &im);
		if (fds[i] >= -3)	/* every one of them is no DMA-BUF */
			MUST_FAIL(r, "IMPORT of fd %d which is no DMA-BUF", fds[i]);
		if (!r && f->na < MAXA) {
			f->a[f->na].h = im.handle;
			f->a[f->na].off = im.offset;
			f->a[f->na].size = im.length;
			f->na++;
		}
	}
	if (pfd[0] >= 0) {
		close(pfd[0]);
		close(pfd[1]);
	}
}

static void op_pin(struct file *f)
{
	struct cnuasgpu_pin p = { .size = sizeof(p) };
	long before = sysfs_num("pinned_used");
	int r, bad = 0, which = below(10);
	uint8_t *mem = NULL;
	uint64_t len = page * (1 + below(8));

	if (f->np && !below(3)) {	/* UNPIN a live one, then again */
		int i = below(f->np);
		struct cnuasgpu_unpin u = { .size = sizeof(u), .handle = f->p[i].h };

		r = xioctl(K_PIN, f->fd, CNUASGPU_IOC_UNPIN, &u);
		if (r && (caps.caps & CNUASGPU_CAP_PINNED))
			violation("UNPIN of pin %u: %s", u.handle, strerror(-r));
		count(K_PIN);
		munmap(f->p[i].p, f->p[i].len);
		add_stale(f, f->p[i].h);
		f->p[i] = f->p[--f->np];
		r = xioctl(K_PIN, f->fd, CNUASGPU_IOC_UNPIN, &u);
		MUST_FAIL(r, "second UNPIN of %u", u.handle);
		return;
	}
	if (!below(4)) {	/* UNPIN of what is no pin here */
		struct cnuasgpu_unpin u = { .size = sizeof(u), .handle = bad_handle(f) };

		if (f->na && below(2))
			u.handle = f->a[below(f->na)].h;
		if (!below(5))
			u.size = (uint32_t)below(64);
		if (live_handle(f, u.handle) && u.size == sizeof(u)) {
			int is_pin = 0;

			for (int i = 0; i < f->np; i++)
				is_pin |= f->p[i].h == u.handle;
			if (is_pin)
				return;
		}
		r = xioctl(K_PIN, f->fd, CNUASGPU_IOC_UNPIN, &u);
		MUST_FAIL(r, "UNPIN of %u, no pin of this file", u.handle);
		return;
	}
	if (f->np == MAXP)
		return;
	count(K_PIN);
	mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return;
	memset(mem, 1, len);
	p.user_ptr = (uintptr_t)mem;
	p.length = len;
	switch (which) {
	case 0: p.user_ptr += 1 + below(page - 1); bad = 1; break;
	case 1: p.length = 0; bad = 1; break;
	case 2: p.length = len - 1; bad = 1; break;
	case 3: p.user_ptr = ~0ull & ~(uint64_t)(page - 1); p.length = 2 * page; bad = 1; break;
	case 4: p.user_ptr = kaddrs[below(2)]; bad = 1; break;
	case 5: p.user_ptr = (uintptr_t)rdonly; p.length = page; bad = 1; break;
	case 6:
		if (nm) {
			int i = below(nm);

			p.user_ptr = (uintptr_t)ms[i].p;
			p.length = page;
			bad = 1;
		} else {
			p.flags = 1;
			bad = 1;
		}
		break;
	case 7: p.reserved = 1; bad = 1; break;
	default: break;
	}
	if (!below(10))
		p.size = sizeof(p) + 8, bad = 1;
	if (!(caps.caps & CNUASGPU_CAP_PINNED))
		bad = 1;
	r = xioctl(K_PIN, f->fd, CNUASGPU_IOC_PIN, &p);
	if (bad)
		MUST_FAIL(r, "PIN ptr %#" PRIx64 " len %#" PRIx64 " case %d", p.user_ptr,
			  p.length, which);
	if (r) {
		long after = sysfs_num("pinned_used");

		if (after > before)
			violation("refused PIN (%s) grew pinned_used %ld -> %ld", strerror(-r),
				  before, after);
		count(K_PIN);
		munmap(mem, len);
		return;
	}
	if (bad) {
		struct cnuasgpu_unpin u = { .size = sizeof(u), .handle = p.handle };

		xioctl(K_PIN, f->fd, CNUASGPU_IOC_UNPIN, &u);
		munmap(mem, len);
		return;
	}
	if (live_handle(f, p.handle))
		violation("PIN returned handle %u which is live", p.handle);
	f->p[f->np].h = p.handle;
	f->p[f->np].p = mem;
	f->p[f->np].len = len;
	f->np++;
	f->nstale = 0;
}

static void op_submit(struct file *f)
{
	struct cnuasgpu_op ops[8];
	struct cnuasgpu_submit s = { .size = sizeof(s), .op_size = sizeof(ops[0]),
				     .ops_ptr = (uintptr_t)ops };
	uint32_t n = 1 + below(4);
	const char *bad = NULL;	/* why the kernel must refuse the batch */
	uint8_t fault[8] = { 0 };	/* taken, but the op must complete with -EFAULT */
	int count_bad = 0, r;

	memset(ops, 0, sizeof(ops));
	for (uint32_t i = 0; i < n; i++) {
		struct cnuasgpu_op *o = &ops[i];
		struct alloc *a = pick_alloc(f);
		uint64_t len;

		if (!a) {
			o->opcode = CNUASGPU_OP_FILL;
			o->handle = bad_handle(f);
			o->length = page;
			bad = "a handle this file lacks";
			continue;
		}
		len = 1 + below(a->size < 65536 ? a->size : 65536);
		o->handle = a->h;
		o->offset = below(a->size - len + 1);
		o->length = len;
		o->user_data = rnd();
		switch (below(4)) {
		case 0:
			o->opcode = CNUASGPU_OP_FILL;
			o->value = (uint32_t)below(256);
			break;
		case 1: {
			struct pin *p = f->np ? &f->p[below(f->np)] : NULL;

			o->opcode = below(2) ? CNUASGPU_OP_COPY_TO_DEV : CNUASGPU_OP_COPY_FROM_DEV;
			if (p && below(2)) {
				o->flags = CNUASGPU_OP_F_PINNED;
				o->pin_handle = p->h;
				if (len > p->len)
					o->length = len = p->len;
				o->host = below(p->len - len + 1);
				if (!(caps.caps & CNUASGPU_CAP_PINNED))
					bad = "a pinned op without the pinned cap";
			} else {
				o->host = (uintptr_t)abuf + below(BUFSZ - len);
			}
			break;
		}
		default:
			o->opcode = below(2) ? CNUASGPU_OP_COPY_TO_DEV : CNUASGPU_OP_COPY_FROM_DEV;
			o->host = (uintptr_t)abuf;
			switch (below(11)) {
			case 0: o->length = 0; bad = "length 0"; break;
			case 1: o->opcode = 4 + (uint32_t)below(100); bad = "unknown opcode"; break;
			case 2: o->handle = bad_handle(f); bad = "a handle this file lacks"; break;
			case 3: o->offset = a->size; bad = "offset at the end"; break;
			case 4: o->offset = ~0ull - below(page); bad = "offset near 2^64"; break;
			case 5: o->reserved = 1; bad = "reserved set"; break;
			case 6: o->opcode = CNUASGPU_OP_FILL; o->host = 0; o->value = 256 + (uint32_t)below(1000); bad = "FILL value above 255"; break;
			case 7: o->flags = 2u << below(30); bad = "unknown flag"; break;
			default:
				/* ends past 2^64: host + length wraps (a shorter one would not) */
				o->host = ~0ull - below(o->length < 16 ? o->length : 16);
				bad = "a user range that wraps";
				break;
			case 9:	/* PROT_NONE: the guard's 16 pages hold len <= 64 KiB */
				o->host = (uintptr_t)guard + below(16 * page - o->length + 1);
				fault[i] = 1;
				break;
			case 10:	/* kernel or non-canonical, short of 2^64 */
				o->host = kaddrs[(uint32_t[]){ 0, 1, 3 }[below(3)]] + below(page);
				fault[i] = 1;
				break;
			}
		}
	}
	s.count = n;
	switch (below(10)) {
	case 0: s.count = 0; bad = "count 0"; count_bad = 1; break;
	case 1:
		/* ops_ptr unreadable: reading batch_max + 1 ops would be EFAULT */
		s.count = caps.batch_max + 1;
		s.ops_ptr = (uintptr_t)guard;
		bad = "count above batch_max";
		count_bad = 1;
		break;
	case 2: s.op_size = sizeof(ops[0]) - 8; bad = "op_size"; break;
	case 3: s.first_seq = 1; bad = "first_seq set"; break;
	case 4: s.ops_ptr = below(2) ? 0 : kaddrs[0]; bad = "ops_ptr not user memory"; break;
	default: break;
	}
	if (!(caps.caps & CNUASGPU_CAP_ASYNC)) {
		bad = "no async cap";
		count_bad = 0;
	}
	r = xioctl(K_SUBMIT, f->fd, CNUASGPU_IOC_SUBMIT, &s);
	if (bad)
		MUST_FAIL(r, "SUBMIT of a bad batch (count %u): %s", s.count, bad);
	/* the count is checked before the ops are read (docs/devices.md) */
	if (count_bad && r != -EINVAL)
		violation("SUBMIT with count %u: %s, not EINVAL", s.count, r ? strerror(-r) : "taken");
	if (r)
		return;
	if (s.first_seq != f->last_seq + 1)
		violation("SUBMIT first_seq %" PRIu64 ", last submitted %" PRIu64 " (refused "
			  "batches take no number)", s.first_seq, f->last_seq);
	for (uint32_t i = 0; i < s.count && i < n; i++)	/* s.count > n: a violation above */
		f->must_fault[(s.first_seq + i) % QSLOTS] = fault[i];
	f->last_seq = s.first_seq + s.count - 1;
}

static void op_reap(struct file *f)
{
	struct cnuasgpu_completion comps[80];
	struct cnuasgpu_reap rp = { .size = sizeof(rp), .comp_size = sizeof(comps[0]),
				    .comps_ptr = (uintptr_t)comps };
	int wait = below(2), bad = 0, r;

	rp.max = below(caps.queue_depth + 1);
	if (rp.max > 80)
		rp.max = 80;
	if (wait) {
		rp.seq = f->last_seq ? 1 + below(f->last_seq) : 0;
		rp.timeout_ms = (uint32_t[]){ 0, 10, 5000 }[below(3)];
		if (!rp.seq)
			bad = 1;
	}
	switch (below(10)) {
	case 0: rp.comp_size = 16; bad = 1; break;
	case 1: rp.count = 1; bad = 1; break;
	case 2: rp.flags = 1; bad = 1; break;
	case 3: if (wait) { rp.seq = f->last_seq + 1 + below(3); bad = 1; } break;
	case 4: if (wait) { rp.timeout_ms = 60001 + (uint32_t)below(1000); bad = 1; } break;
	case 5: rp.comps_ptr = kaddrs[below(4)]; break;
	case 6: if (!wait) { rp.seq = 1; bad = 1; } break;
	case 7: rp.max = caps.queue_depth + 1; if (rp.max <= 80) bad = 1; else rp.max = 80; break;
	default: break;
	}
	if (!(caps.caps & CNUASGPU_CAP_ASYNC))
		bad = 1;
	r = xioctl(K_REAP, f->fd, wait ? CNUASGPU_IOC_WAIT : CNUASGPU_IOC_POLL, &rp);
	if (bad)
		MUST_FAIL(r, "%s of a bad request", wait ? "WAIT" : "POLL");
	if (r)
		return;
	if (rp.submitted != f->last_seq)
		violation("reap says submitted %" PRIu64 ", we submitted %" PRIu64,
			  rp.submitted, f->last_seq);
	if (rp.comps_ptr == (uintptr_t)comps)
		check_completions(f, comps, rp.count, rp.max);
	else if (rp.count > rp.max)
		violation("reap took %u of max %u", rp.count, rp.max);
	if (rp.reaped < f->reaped)
		violation("reaped went back %" PRIu64 " -> %" PRIu64, f->reaped, rp.reaped);
	f->reaped = rp.reaped;
}

/* CnuasLink (cnuasgpu.ko only): bad fields refused; valid ones may fail for the link */
static void op_link(struct file *f)
{
	int r, bad = 0;

	if (below(2)) {
		struct cnuasgpu_link_send ls = { .user_ptr = (uintptr_t)buf, .len = 1 + below(256),
						 .dst_gpu_id = CNUASGPU_LINK_BROADCAST,
						 .timeout_ms = (uint32_t)below(20) };

		switch (below(7)) {
		case 0: ls.len = 0; bad = 1; break;
		case 1: ls.len = CNUASGPU_LINK_MAX_PAYLOAD + 1 + (uint32_t)below(3); bad = 1; break;
		case 2: ls.len = ~0u; bad = 1; break;
		case 3: ls.timeout_ms = CNUASGPU_LINK_MAX_TIMEOUT_MS + 1 + (uint32_t)below(9); bad = 1; break;
		case 4: ls.flags = 1u << below(32); bad = 1; break;
		case 5: ls.user_ptr = kaddrs[below(4)]; bad = 1; break;
		default: ls.dst_gpu_id = (uint32_t)rnd(); break;
		}
		r = xioctl(K_COPY, f->fd, CNUASGPU_IOC_LINK_SEND, &ls);
		if (bad)
			MUST_FAIL(r, "LINK_SEND len %u timeout %u flags %#x", ls.len, ls.timeout_ms,
				  ls.flags);
	} else {
		struct cnuasgpu_link_recv lr = { .user_ptr = (uintptr_t)buf2, .buf_size = BUFSZ,
						 .flags = CNUASGPU_LINK_RECV_NONBLOCK };

		switch (below(6)) {
		case 0: lr.timeout_ms = CNUASGPU_LINK_MAX_TIMEOUT_MS + 1; bad = 1; break;
		case 1: lr.flags = 2u << below(31); bad = 1; break;
		case 2: lr.buf_size = (uint32_t)below(16); break;
		case 3: lr.user_ptr = 0; break;
		default: break;
		}
		r = xioctl(K_COPY, f->fd, CNUASGPU_IOC_LINK_RECV, &lr);
		if (bad)
			MUST_FAIL(r, "LINK_RECV timeout %u flags %#x", lr.timeout_ms, lr.flags);
	}
}

static int known_cmd(unsigned long cmd)
{
	static const unsigned long known[] = {
		CNUASGPU_IOC_INFO, CNUASGPU_IOC_ALLOC, CNUASGPU_IOC_FREE,
		CNUASGPU_IOC_COPY_TO_DEV, CNUASGPU_IOC_COPY_FROM_DEV, CNUASGPU_IOC_LINK_SEND,
		CNUASGPU_IOC_LINK_RECV, CNUASGPU_IOC_EXPORT_DMABUF, CNUASGPU_IOC_CAPS,
		CNUASGPU_IOC_PIN, CNUASGPU_IOC_UNPIN, CNUASGPU_IOC_IMPORT_DMABUF,
		CNUASGPU_IOC_SUBMIT, CNUASGPU_IOC_POLL, CNUASGPU_IOC_WAIT,
	};

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (cmd == known[i])
			return 1;
	return 0;
}

/* wrong numbers, sizes, directions: never a known command, always refused */
static void op_garbage(struct file *f)
{
	static const unsigned long nrs[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0x0f, 0x10, 0x11,
					     0x12, 0x13, 0x14, 0x15, 0x16, 0x1f, 0x20, 0xff };
	unsigned long dir = below(4), nr = nrs[below(sizeof(nrs) / sizeof(nrs[0]))];
	unsigned long size = (unsigned long[]){ 0, 4, 8, 16, 24, 32, 40, 48, 56, 64, 72,
						128, 0x3fff }[below(13)];
	unsigned long type = below(8) ? CNUASGPU_IOC_MAGIC : below(256);
	unsigned long cmd = _IOC(dir, type, nr, size);
	int r;

	if (!below(8))
		cmd = (unsigned long)rnd();
	cmd = (unsigned int)cmd;
	if (known_cmd(cmd))
		return;
	/* the VFS answers these itself (FIGETBSZ is _IO(0, 2)) */
	if (cmd == FIONCLEX || cmd == FIOCLEX || cmd == FIONBIO || cmd == FIOASYNC ||
	    cmd == FIOQSIZE || cmd == 2 || cmd == FIONREAD)
		return;
	memset(buf, 0, 4096);
	r = xioctl(K_GARBAGE, f->fd, cmd, buf);
	MUST_FAIL(r, "unknown command %#lx", cmd);
	/* LINK_* are ENOTTY on the host node */
	if (is_host && below(4)) {
		r = xioctl(K_GARBAGE, f->fd, below(2) ? CNUASGPU_IOC_LINK_SEND :
			   CNUASGPU_IOC_LINK_RECV, buf);
		MUST_FAIL(r, "LINK ioctl on cnuasgpu_host");
	}
	if (!is_host && below(4)) {
		r = xioctl(K_GARBAGE, f->fd, (unsigned long[]){ CNUASGPU_IOC_PIN,
			   CNUASGPU_IOC_UNPIN, CNUASGPU_IOC_IMPORT_DMABUF, CNUASGPU_IOC_SUBMIT,
			   CNUASGPU_IOC_POLL, CNUASGPU_IOC_WAIT }[below(6)], buf);
		MUST_FAIL(r, "host-only ioctl on cnuasgpu");
	}
}

/* argument pointers: NULL, unmapped, kernel, unaligned, read-only (response lost) */
static void op_argptr(struct file *f)
{
	static const unsigned long cmds[] = {
		CNUASGPU_IOC_INFO, CNUASGPU_IOC_ALLOC, CNUASGPU_IOC_FREE,
		CNUASGPU_IOC_COPY_TO_DEV, CNUASGPU_IOC_EXPORT_DMABUF, CNUASGPU_IOC_CAPS,
		CNUASGPU_IOC_LINK_SEND, CNUASGPU_IOC_LINK_RECV,
	};
	unsigned long cmd = cmds[below(sizeof(cmds) / sizeof(cmds[0]))];
	uint64_t before = devmem_used(f->fd);
	int r, d, which = below(5);
	void *arg;

	switch (which) {
	case 0: arg = NULL; break;
	case 1: arg = guard + below(page); break;
	case 2: arg = (void *)(uintptr_t)kaddrs[below(4)]; break;
	case 3: arg = (void *)(uintptr_t)(~0ull - below(64)); break;
	default: {	/* read-only: the kernel can read a valid request, not answer */
		struct alloc *a = pick_alloc(f);

		if (mprotect(rdonly, page, PROT_READ | PROT_WRITE))
			return;
		memset(rdonly, 0, page);
		if (cmd == CNUASGPU_IOC_ALLOC || cmd == CNUASGPU_IOC_INFO) {
			((struct cnuasgpu_alloc *)rdonly)->size = 1 + below(65536);
			cmd = CNUASGPU_IOC_ALLOC;
		} else if (cmd == CNUASGPU_IOC_CAPS) {
			((struct cnuasgpu_caps *)rdonly)->size = sizeof(struct cnuasgpu_caps);
		} else if (a) {
			cmd = CNUASGPU_IOC_EXPORT_DMABUF;
			((struct cnuasgpu_export *)rdonly)->handle = a->h;
		} else {
			cmd = CNUASGPU_IOC_ALLOC;
			((struct cnuasgpu_alloc *)rdonly)->size = page;
		}
		mprotect(rdonly, page, PROT_READ);
		arg = rdonly;
	}
	}
	if (which == 4 && cmd == CNUASGPU_IOC_FREE)
		return;
	d = lowest_free_fd();
	r = xioctl(K_ARGPTR, f->fd, cmd, arg);
	MUST_FAIL(r, "ioctl %#lx with argument %p", cmd, arg);
	if (r) {
		check_no_new_fd(d, "ioctl with a bad argument pointer");
		if (devmem_used(f->fd) > before)
			violation("ioctl %#lx refused (%s) with argument %p grew devmem_used",
				  cmd, strerror(-r), arg);
	}
}

static void op_info_caps(struct file *f)
{
	struct cnuasgpu_caps c;
	int r;

	memset(&c, 0, sizeof(c));
	c.size = sizeof(c);
	switch (below(4)) {
	case 0: c.size = (uint32_t)(below(2) ? below(64) : 65 + below(1000)); break;
	case 1: c.reserved[below(5)] = 1; break;
	case 2: c.version = 1; break;
	default:
		r = xioctl(K_INFO, f->fd, CNUASGPU_IOC_CAPS, &c);
		if (r)
			violation("CAPS: %s", strerror(-r));
		else if (memcmp(&c, &caps, sizeof(c)))
			violation("CAPS answered differently");
		devmem_used(f->fd);
		return;
	}
	r = xioctl(K_INFO, f->fd, CNUASGPU_IOC_CAPS, &c);
	MUST_FAIL(r, "CAPS with size %u / a byte set", c.size);
}

static void forget_file(struct file *f)
{
	for (int i = 0; i < f->np; i++)
		munmap(f->p[i].p, f->p[i].len);
	memset(f, 0, sizeof(*f));
	f->fd = -1;
}

static void op_reopen(struct file *f)
{
	count(K_FILE);
	close(f->fd);
	forget_file(f);
	count(K_FILE);
	f->fd = open(devnode, O_RDWR | O_CLOEXEC);
	if (f->fd < 0) {
		fprintf(stderr, "open %s: %s\n", devnode, strerror(errno));
		exit(2);
	}
}

/* ---- race: close the fd under a thread's ioctls and mmaps ---------------- */

struct racer { int fd; atomic_int stop; uint64_t seed; };

static void *race_user(void *p)
{
	struct racer *rc = p;
	uint64_t s = rc->seed;
	uint8_t local[4096];

	while (!atomic_load(&rc->stop)) {
		struct cnuasgpu_alloc a = { .size = 4096 * (1 + (s % 16)) };
		struct cnuasgpu_free fr;
		void *m;

		s = s * 6364136223846793005ull + 1;
		if (xioctl(K_RACE, rc->fd, CNUASGPU_IOC_ALLOC, &a))
			continue;
		copy_call(K_RACE, rc->fd, 1, a.handle, 0, (uintptr_t)local, sizeof(local), 0);
		count(K_RACE);
		m = mmap(NULL, a.size, PROT_READ | PROT_WRITE, MAP_SHARED, rc->fd, a.offset);
		if ((s >> 20) & 1) {
			struct cnuasgpu_export e = { .handle = a.handle };

			if (!xioctl(K_RACE, rc->fd, CNUASGPU_IOC_EXPORT_DMABUF, &e))
				close(e.fd);
		}
		if (m != MAP_FAILED) {
			((volatile uint8_t *)m)[0] = 1;
			munmap(m, a.size);
		}
		if ((s >> 24) & 3) {
			fr.handle = a.handle;
			fr.reserved = 0;
			xioctl(K_RACE, rc->fd, CNUASGPU_IOC_FREE, &fr);
		}
	}
	return NULL;
}

static void race_phase(int rounds)
{
	for (int i = 0; i < rounds; i++) {
		struct racer rc = { .seed = rnd() };
		pthread_t t[2];

		rc.fd = open(devnode, O_RDWR | O_CLOEXEC);
		count(K_RACE);
		if (rc.fd < 0)
			return;
		pthread_create(&t[0], NULL, race_user, &rc);
		pthread_create(&t[1], NULL, race_user, &rc);
		usleep(200 + below(5000));
		count(K_RACE);
		close(rc.fd);	/* while they are in ioctls, mmap */
		usleep(below(2000));
		atomic_store(&rc.stop, 1);
		pthread_join(t[0], NULL);
		pthread_join(t[1], NULL);
	}
}

/* ---- fork: a child using and freeing what it inherited ------------------- */

static void fork_child_work(int fd, struct alloc *a, int na, uint64_t seed)
{
	uint8_t local[8192];

	rng_state = seed;
	for (int i = 0; i < 200; i++) {
		int k = below(na);

		switch (below(5)) {
		case 0: {
			struct cnuasgpu_free fr = { .handle = a[k].h };

			if (!xioctl(K_FORK, fd, CNUASGPU_IOC_FREE, &fr))
				atomic_fetch_add(&sh->free_ok[k], 1);
			break;
		}
		case 1: {
			struct cnuasgpu_export e = { .handle = a[k].h };

			if (!xioctl(K_FORK, fd, CNUASGPU_IOC_EXPORT_DMABUF, &e))
				close(e.fd);
			break;
		}
		case 2: {
			void *m;

			count(K_FORK);
			m = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, a[k].off);
			if (m != MAP_FAILED) {
				((volatile uint8_t *)m)[1] = 2;
				munmap(m, page);
			}
			break;
		}
		default:
			copy_call(K_FORK, fd, below(2), a[k].h, 0, (uintptr_t)local,
				  a[k].size < sizeof(local) ? a[k].size : sizeof(local), 0);
		}
	}
}

static void fork_phase(int rounds)
{
	for (int round = 0; round < rounds; round++) {
		struct alloc a[MAXA];
		int na = 0, fd, xfd = -1;
		pid_t pid;
		uint64_t cseed = rnd();

		count(K_FORK);
		fd = open(devnode, O_RDWR);	/* inherited */
		if (fd < 0)
			return;
		for (int i = 0; i < 8; i++) {
			struct file tmp = { .fd = fd };

			if (!do_alloc_call(&tmp, page * (1 + below(8)), 0, &a[na]))
				na++;
		}
		if (!na) {
			close(fd);
			continue;
		}
		for (int i = 0; i < MAXA; i++)
			atomic_store(&sh->free_ok[i], 0);
		if (round % 3 == 2 && (!is_host || (caps.caps & CNUASGPU_CAP_DMABUF))) {
			struct cnuasgpu_export e = { .handle = a[0].h };

			if (!xioctl(K_FORK, fd, CNUASGPU_IOC_EXPORT_DMABUF, &e))
				xfd = e.fd;
		}
		count(K_FORK);
		pid = fork();
		if (pid == 0) {
			if (round % 3 == 2) {	/* exec with the fd and the export inherited */
				execl("/bin/true", "true", (char *)NULL);
				_exit(127);
			}
			fork_child_work(fd, a, na, cseed);
			if (round % 2)
				close(fd);
			_exit(0);
		}
		/* the parent too, at the same time */
		fork_child_work(fd, a, na, cseed ^ 0x5555);
		rng_state ^= cseed;
		if (pid > 0)
			waitpid(pid, NULL, 0);
		for (int i = 0; i < na; i++) {
			struct cnuasgpu_free fr = { .handle = a[i].h };

			if (!xioctl(K_FORK, fd, CNUASGPU_IOC_FREE, &fr))
				atomic_fetch_add(&sh->free_ok[i], 1);
			if (atomic_load(&sh->free_ok[i]) != 1)
				violation("fork: handle %u freed %d times (parent and child share "
					  "the file)", a[i].h, atomic_load(&sh->free_ok[i]));
		}
		if (xfd >= 0)
			close(xfd);
		count(K_FORK);
		close(fd);
	}
}

/* ---- setup and the end ---------------------------------------------------- */

static void read_counters(const char *prefix, long *v)
{
	const char *const *names = is_host ? host_counters : pcie_counters;

	for (int i = 0; names[i]; i++) {
		v[i] = sysfs_num(names[i]);
		if (prefix)
			printf("%s_%s %ld\n", prefix, names[i], v[i]);
	}
}

int main(int argc, char **argv)
{
	const char *const *names;
	long want, base[8], now[8];
	const char *slash;
	uint64_t seed;
	char *end;
	int fd0, ok;

	if (argc != 4) {
		fprintf(stderr, "usage: %s DEVNODE CALLS SEED\n", argv[0]);
		return 2;
	}
	devnode = argv[1];
	want = strtol(argv[2], &end, 0);
	if (*end || want < 1)
		return 2;
	seed = strtoull(argv[3], &end, 0);
	if (*end)
		return 2;
	rng_state = seed;
	setvbuf(stdout, NULL, _IOLBF, 0);
	page = sysconf(_SC_PAGESIZE);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	buf = mmap(NULL, BUFSZ + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	buf2 = mmap(NULL, BUFSZ + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	abuf = mmap(NULL, BUFSZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	rdonly = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	guard = mmap(NULL, 16 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED || buf == MAP_FAILED || buf2 == MAP_FAILED || abuf == MAP_FAILED ||
	    rdonly == MAP_FAILED || guard == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	slash = strrchr(devnode, '/');
	slash = slash ? slash + 1 : devnode;
	is_host = strncmp(slash, "cnuasgpu_host", 13) == 0;
	snprintf(sysdir, sizeof(sysdir), "/sys/class/%s/%s", is_host ? "cnuasgpu_host" : "cnuasgpu",
		 slash);
	names = is_host ? host_counters : pcie_counters;

	printf("seed %" PRIu64 "\n", seed);
	printf("node %s (%s)\n", devnode, is_host ? "cnuasgpu_host" : "cnuasgpu");
	read_counters("baseline", base);
	for (int i = 0; i < NF; i++) {
		files[i].fd = open(devnode, O_RDWR | O_CLOEXEC);
		if (files[i].fd < 0) {
			fprintf(stderr, "open %s: %s\n", devnode, strerror(errno));
			return 2;
		}
	}
	fd0 = files[0].fd;
	caps.size = sizeof(caps);
	if (xioctl(K_INFO, fd0, CNUASGPU_IOC_CAPS, &caps)) {
		fprintf(stderr, "CAPS: %s\n", strerror(errno));
		return 2;
	}
	printf("caps %#x queue_depth %u batch_max %u\n", caps.caps, caps.queue_depth,
	       caps.batch_max);
	if (caps.queue_depth > QSLOTS) {	/* the module allows 1 .. 4096 */
		violation("queue_depth %u above %u", caps.queue_depth, QSLOTS);
		return 1;
	}

	while (total_calls() < want) {
		struct file *f = &files[below(NF)];

		switch (below(is_host ? 32 : 23)) {
		case 0: case 1: case 2: case 3: op_alloc(f); break;
		case 4: case 5: case 6: op_free(f); break;
		case 7: case 8: case 9: case 10: op_copy(f); break;
		case 11: case 12: case 13: op_mmap(f); break;
		case 14: case 15: op_export(f); break;
		case 16: case 17: op_dmabuf(f); break;
		case 18: op_garbage(f); break;
		case 19: op_argptr(f); break;
		case 20: op_info_caps(f); break;
		case 21: if (!below(20)) op_reopen(f); else op_copy(f); break;
		case 22: if (is_host) op_import_bad(f); else op_link(f); break;
		case 23: case 24: case 25: op_pin(f); break;
		case 26: case 27: case 28: op_submit(f); break;
		default: op_reap(f); break;
		}
	}
	printf("main_sequence_calls %ld\n", total_calls());
	printf("main_sequence_rng %016" PRIx64 "\n", rng_state);

	/* free everything of the main sequence */
	drain();
	for (int i = 0; i < nm; i++)
		munmap(ms[i].p, ms[i].len);
	nm = 0;
	for (int i = 0; i < nx; i++)
		close(xs[i].fd);
	nx = 0;
	for (int i = 0; i < NF; i++) {
		struct file *f = &files[i];

		while (f->na) {
			struct cnuasgpu_free fr = { .handle = f->a[0].h };
			int r = xioctl(K_FREE, f->fd, CNUASGPU_IOC_FREE, &fr);

			if (r)
				violation("final FREE of h %u: %s", fr.handle, strerror(-r));
			drop_alloc(f, 0);
		}
		close(f->fd);
		forget_file(f);
	}

	race_phase(12);
	fork_phase(9);

	/* every counter back to its value before (queued ops may still be stopping) */
	for (int tries = 0; tries < 100; tries++) {
		read_counters(NULL, now);
		ok = 1;
		for (int i = 0; names[i]; i++)
			ok &= now[i] == base[i];
		if (ok)
			break;
		usleep(100000);
	}
	read_counters("final", now);
	for (int i = 0; names[i]; i++)
		if (now[i] != base[i])
			violation("%s is %ld after the run, %ld before", names[i], now[i], base[i]);

	printf("calls_total %ld\n", total_calls());
	for (int i = 0; i < K_KINDS; i++)
		printf("calls_%s %ld\n", kind_names[i], atomic_load(&sh->calls[i]));
	printf("violations %ld\n", atomic_load(&sh->violations));
	printf("%s\n", atomic_load(&sh->violations) ? "FAIL" : "PASS");
	return atomic_load(&sh->violations) ? 1 : 0;
}
