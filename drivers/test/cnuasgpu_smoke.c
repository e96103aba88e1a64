// SPDX-License-Identifier: GPL-2.0
/*
 * cnuasgpu_smoke: guest-side checks of /dev/cnuasgpuN for the matrix rows.
 *
 *   cnuasgpu_smoke smoke DEV
 *       info (printed as key=value lines), alloc, copy in/out with patterns
 *       verified, mmap read/write, free, devmem_used bookkeeping.
 *   cnuasgpu_smoke fuzz DEV CALLS SEED
 *       CALLS ioctls with wrong sizes, unaligned and out-of-range values,
 *       double frees of real allocations, huge allocations and garbage
 *       commands; each has to end as documented (the errno of uapi/cnuasgpu.h).
 *       CALLS counts the calls made; fuzz_calls_KIND says how many per kind.
 *   cnuasgpu_smoke link-send DEV DST_GPU_ID COUNT [MAX_PAYLOAD]
 *   cnuasgpu_smoke link-recv DEV SRC_GPU_ID COUNT ioctl|poll [MAX_PAYLOAD]
 *       COUNT CnuasLink frames whose payload sizes cycle through 1 byte ..
 *       MAX_PAYLOAD; the receiver checks every byte, the order, that each
 *       frame came from SRC_GPU_ID to this device, and skips broadcast
 *       frames (the "hello" that teaches the switch a gpu_id).  It waits in
 *       a blocking receive (ioctl) or in poll() (POLLIN, then a non-blocking
 *       receive); afterwards an idle wait must time out.  recv_frames counts
 *       the frames that passed.
 *   cnuasgpu_smoke link-down DEV DST_GPU_ID
 *       a send must fail with ENOLINK.
 *   cnuasgpu_smoke bench-copy DEV SECONDS
 *       MiB/s of copies to and from a 16 MiB allocation through the copy
 *       ioctls and through memcpy() on its mapping, at 4 KiB, 1 MiB and
 *       16 MiB, each point about SECONDS long.
 *   cnuasgpu_smoke bench-link TX_DEV RX_DEV DST_GPU_ID SIZE SECONDS
 *       frames/s and MiB/s of SIZE-byte payloads sent for about SECONDS
 *       from TX_DEV to DST_GPU_ID and received (length and order checked)
 *       on RX_DEV by a child process.
 *   cnuasgpu_smoke copy-loop DEV SECONDS
 *       copies to and from one allocation back to back until one fails (the
 *       device was unbound under them) or SECONDS pass.  Prints
 *       copy_loop_running=1 once copies are going, then copies_ok, the errno
 *       that ended them (copy_end) and what COPY, INFO, ALLOC and mmap()
 *       answer afterwards (after_*): with the device gone, ENODEV each.
 *   The bench modes print one "bench NAME VALUE UNIT" line per number.
 *
 * Exits 0 when every check passed, 1 on a mismatch, 2 on usage errors.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
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

static int failures;

#define CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "FAIL %s:%d: ", __func__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);			\
			fputc('\n', stderr);				\
			failures++;					\
		}							\
	} while (0)

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void fill(uint8_t *p, size_t len, uint32_t salt)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 7 + salt * 131 + (i >> 8));
}

static int open_dev(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		fprintf(stderr, "open %s: %s\n", path, strerror(errno));
		exit(1);
	}
	return fd;
}

static int info(int fd, struct cnuasgpu_info *inf)
{
	memset(inf, 0, sizeof(*inf));
	return ioctl(fd, CNUASGPU_IOC_INFO, inf);
}

static int alloc(int fd, uint64_t size, uint64_t align, struct cnuasgpu_alloc *a)
{
	memset(a, 0, sizeof(*a));
	a->size = size;
	a->align = align;
	return ioctl(fd, CNUASGPU_IOC_ALLOC, a);
}

static int free_handle(int fd, uint32_t handle)
{
	struct cnuasgpu_free f = { .handle = handle };

	return ioctl(fd, CNUASGPU_IOC_FREE, &f);
}

static int copy(int fd, int to_dev, uint32_t handle, uint64_t off, void *p,
		uint64_t size)
{
	struct cnuasgpu_copy c = {
		.handle = handle,
		.offset = off,
		.user_ptr = (uintptr_t)p,
		.size = size,
	};

	return ioctl(fd, to_dev ? CNUASGPU_IOC_COPY_TO_DEV :
			  CNUASGPU_IOC_COPY_FROM_DEV, &c);
}

/* ---- smoke ---------------------------------------------------------------- */

/*
 * With nothing else allocated, all of alloc_limit can be had and not a page
 * more, and its last page holds data: a driver that sized the allocator from
 * defaults instead of DEVMEM_SIZE fails here.  Prints alloc_full (bytes).
 */
static void smoke_full(int fd, const struct cnuasgpu_info *inf, uint8_t *src,
		       uint8_t *dst)
{
	struct cnuasgpu_alloc full, more;
	uint64_t last;

	CHECK(inf->alloc_limit % 4096 == 0 && inf->alloc_limit <= inf->devmem_size,
	      "alloc_limit %" PRIu64 " within devmem_size %" PRIu64,
	      (uint64_t)inf->alloc_limit, (uint64_t)inf->devmem_size);
	if (alloc(fd, inf->alloc_limit, 0, &full)) {
		CHECK(0, "ALLOC of alloc_limit (%" PRIu64 "): %s",
		      (uint64_t)inf->alloc_limit, strerror(errno));
		return;
	}
	printf("alloc_full=%" PRIu64 "\n", (uint64_t)full.size);
	CHECK(alloc(fd, 4096, 0, &more) == -1 && errno == ENOMEM,
	      "one page past alloc_limit: ENOMEM");
	last = full.size - 4096;
	fill(src, 4096, 4);
	memset(dst, 0, 4096);
	CHECK(copy(fd, 1, full.handle, last, src, 4096) == 0 &&
	      copy(fd, 0, full.handle, last, dst, 4096) == 0 &&
	      memcmp(src, dst, 4096) == 0, "the last page of alloc_limit holds data");
	CHECK(free_handle(fd, full.handle) == 0, "FREE of the full allocation");
}

static int smoke(const char *path)
{
	const size_t big = 1u << 20, small = 3 * 4096 + 1;
	struct cnuasgpu_alloc a, b;
	struct cnuasgpu_info inf;
	uint8_t *src, *dst, *map;
	uint64_t used0;
	int fd = open_dev(path);

	CHECK(info(fd, &inf) == 0, "INFO: %s", strerror(errno));
	printf("abi_version=%u\nfw_version=0x%08x\ngpu_id=%u\nsm_count=%u\n"
	       "lanes_per_sm=%u\ntensor_size=%u\ndevmem_size=%" PRIu64 "\n"
	       "devmem_used=%" PRIu64 "\nalloc_limit=%" PRIu64 "\nlink_up=%u\n",
	       inf.abi_version, inf.fw_version, inf.gpu_id, inf.sm_count,
	       inf.lanes_per_sm, inf.tensor_size,
	       (uint64_t)inf.devmem_size, (uint64_t)inf.devmem_used,
	       (uint64_t)inf.alloc_limit, inf.link_up);
	used0 = inf.devmem_used;

	CHECK(alloc(fd, big, 0, &a) == 0, "ALLOC 1 MiB: %s", strerror(errno));
	CHECK(alloc(fd, small, 1u << 16, &b) == 0, "ALLOC small: %s",
	      strerror(errno));
	CHECK(a.handle != b.handle, "handles differ");
	CHECK(a.offset % 4096 == 0 && b.offset % 65536 == 0, "alignment");
	CHECK(b.size == 4 * 4096, "size rounded to pages (got %" PRIu64 ")",
	      (uint64_t)b.size);
	CHECK(b.offset >= a.offset + a.size, "no overlap");
	CHECK(info(fd, &inf) == 0 && inf.devmem_used == used0 + a.size + b.size,
	      "devmem_used follows allocations");

	src = malloc(big);
	dst = malloc(big);
	if (!src || !dst)
		return 1;
	fill(src, big, 1);
	CHECK(copy(fd, 1, a.handle, 0, src, big) == 0, "COPY_TO_DEV");
	memset(dst, 0, big);
	CHECK(copy(fd, 0, a.handle, 0, dst, big) == 0, "COPY_FROM_DEV");
	CHECK(memcmp(src, dst, big) == 0, "pattern read back");
	fill(src, 4096, 2);
	CHECK(copy(fd, 1, a.handle, 12345, src, 4096) == 0, "copy at offset");
	CHECK(copy(fd, 0, a.handle, 12345, dst, 4096) == 0 &&
	      memcmp(src, dst, 4096) == 0, "offset pattern read back");

	map = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_SHARED, fd, a.offset);
	CHECK(map != MAP_FAILED, "mmap: %s", strerror(errno));
	if (map != MAP_FAILED) {
		CHECK(memcmp(map + 12345, src, 4096) == 0, "mmap sees copies");
		fill(map, 8192, 3);
		fill(src, 8192, 3);
		CHECK(copy(fd, 0, a.handle, 0, dst, 8192) == 0 &&
		      memcmp(src, dst, 8192) == 0, "copies see mmap writes");
		CHECK(munmap(map, big) == 0, "munmap");
	}
	CHECK(mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, a.offset) ==
	      MAP_FAILED, "private mappings are refused");
	CHECK(mmap(NULL, 2 * big, PROT_READ, MAP_SHARED, fd, a.offset) ==
	      MAP_FAILED, "mapping past an allocation is refused");

	CHECK(free_handle(fd, b.handle) == 0, "FREE b");
	CHECK(free_handle(fd, b.handle) == -1 && errno == ENOENT, "double free");
	CHECK(free_handle(fd, a.handle) == 0, "FREE a");
	CHECK(info(fd, &inf) == 0 && inf.devmem_used == used0,
	      "devmem_used back to %" PRIu64, used0);
	if (used0 == 0)
		smoke_full(fd, &inf, src, dst);
	free(src);
	free(dst);
	close(fd);
	printf("smoke=%s\n", failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}

/* ---- fuzz ----------------------------------------------------------------- */

/*
 * Every fuzz call has one documented outcome (uapi/cnuasgpu.h): an errno, or
 * success for the few valid calls a case needs (the allocation a double free
 * frees twice).  Only calls actually made count towards CALLS.
 */
enum fuzz_kind {
	FZ_GARBAGE,		/* unknown command numbers */
	FZ_ALLOC,		/* malformed or unsatisfiable allocations */
	FZ_FREE,		/* frees of handles this file does not own */
	FZ_DOUBLE_FREE,		/* alloc, free, free again, use after free */
	FZ_COPY_RANGE,		/* copies past the live allocation */
	FZ_COPY_FAULT,		/* copies with bad user pointers */
	FZ_COPY_HANDLE,		/* copies on handles that are not ours */
	FZ_LINK_SEND,		/* link sends with invalid fields */
	FZ_LINK_RECV,		/* link receives with invalid fields */
	FZ_MMAP,		/* mappings of offsets no allocation covers */
	FZ_EXPORT,		/* DMA-BUF exports: malformed, not ours, real */
	FZ_KINDS
};

static const char *const fuzz_names[FZ_KINDS] = {
	[FZ_GARBAGE] = "garbage",
	[FZ_ALLOC] = "alloc",
	[FZ_FREE] = "free",
	[FZ_DOUBLE_FREE] = "double_free",
	[FZ_COPY_RANGE] = "copy_range",
	[FZ_COPY_FAULT] = "copy_fault",
	[FZ_COPY_HANDLE] = "copy_handle",
	[FZ_LINK_SEND] = "link_send",
	[FZ_LINK_RECV] = "link_recv",
	[FZ_MMAP] = "mmap",
	[FZ_EXPORT] = "export",
};

/* Size of the allocation every range case aims past. */
#define FUZZ_LIVE_SIZE	(4 * 4096)
/* How many wrong outcomes are described on stderr. */
#define FUZZ_REPORT_MAX	10

struct fuzz {
	int fd;
	uint32_t live;			/* handle of a FUZZ_LIVE_SIZE allocation */
	void *buf;			/* 128 KiB of valid user memory */
	enum fuzz_kind kind;		/* the case being run */
	long calls;			/* ioctl and mmap calls made */
	long wrong;			/* calls with another outcome than documented */
	long kind_calls[FZ_KINDS];	/* calls made per case */
};

static int fz_ioctl(struct fuzz *z, unsigned long cmd, void *arg)
{
	z->calls++;
	z->kind_calls[z->kind]++;
	return ioctl(z->fd, cmd, arg);
}

/* 0 when the mapping was refused; the call counts like an ioctl. */
static int fz_mmap(struct fuzz *z, size_t len, off_t off)
{
	void *m;

	z->calls++;
	z->kind_calls[z->kind]++;
	m = mmap(NULL, len, PROT_READ, MAP_SHARED, z->fd, off);
	if (m == MAP_FAILED)
		return -1;
	munmap(m, len);
	return 0;
}

/*
 * Check the outcome of the call just made: @want 0 means it must succeed,
 * otherwise fail with errno @want.  Returns 1 when it did.
 */
static int fz_expect(struct fuzz *z, int ret, int want)
{
	int err = errno;

	if (want ? ret == -1 && err == want : ret == 0)
		return 1;
	if (++z->wrong <= FUZZ_REPORT_MAX)
		fprintf(stderr, "FAIL fuzz %s, call %ld: returned %d (%s), expected %s\n",
			fuzz_names[z->kind], z->calls, ret, ret ? strerror(err) : "success",
			want ? strerror(want) : "success");
	return 0;
}

static uint64_t pick_u64(void)
{
	static const uint64_t edge[] = {
		0, 1, 4095, 4096, 4097, 1ull << 31, 1ull << 32, 1ull << 40,
		UINT64_MAX, UINT64_MAX - 4095, (uint64_t)INT64_MAX,
	};

	return rnd() % 3 ? edge[rnd() % (sizeof(edge) / sizeof(edge[0]))] : rnd();
}

static int is_cnuasgpu_cmd(unsigned int cmd)
{
	return cmd == CNUASGPU_IOC_INFO || cmd == CNUASGPU_IOC_ALLOC ||
	       cmd == CNUASGPU_IOC_FREE || cmd == CNUASGPU_IOC_COPY_TO_DEV ||
	       cmd == CNUASGPU_IOC_COPY_FROM_DEV ||
	       cmd == CNUASGPU_IOC_LINK_SEND || cmd == CNUASGPU_IOC_LINK_RECV ||
	       cmd == CNUASGPU_IOC_EXPORT_DMABUF;
}

/*
 * Command types the VFS answers itself before the driver sees the call
 * (FIGETBSZ, FS_IOC_GETFSUUID, FIONBIO/FIOCLEX, FIFREEZE, FS_IOC_*FLAGS,
 * FICLONE...): their outcome is not the driver's, so garbage avoids them.
 */
static int is_vfs_cmd(unsigned int cmd)
{
	switch (_IOC_TYPE(cmd)) {
	case 0x00: case 0x15: case 'T': case 'X': case 'f': case 0x94:
		return 1;
	default:
		return 0;
	}
}

static void fuzz_garbage(struct fuzz *z)
{
	uint8_t raw[256] = { 0 };
	unsigned int cmd;

	do {	/* random numbers, and our magic with other numbers or sizes */
		cmd = rnd() % 2 ? (uint32_t)rnd() :
		      _IOC(rnd() % 4, CNUASGPU_IOC_MAGIC, rnd() % 16, rnd() % 200);
	} while (is_cnuasgpu_cmd(cmd) || is_vfs_cmd(cmd));
	fz_expect(z, fz_ioctl(z, cmd, raw), ENOTTY);
}

static int align_ok(uint64_t align)
{
	return !align || (!(align & (align - 1)) && align >= 4096 && align <= (1u << 30));
}

static void fuzz_alloc(struct fuzz *z)
{
	struct cnuasgpu_alloc a = { 0 };
	struct cnuasgpu_free f = { 0 };
	int want;

	a.size = rnd() % 2 ? 0 : pick_u64() | (1ull << 62);
	a.align = rnd() % 2 ? 0 : pick_u64();
	if (rnd() % 3 == 0) {
		a.size = 4096;
		a.align = 4096 + 1 + rnd() % 4094;
	}
	if (rnd() % 4 == 0) {
		a.size = 4096;
		a.flags = 1 + rnd() % 0xffff;
	}
	/* Malformed first; a well-formed request of 2^62 bytes and more has no room. */
	want = a.flags || !a.size || !align_ok(a.align) ? EINVAL : ENOMEM;
	if (!fz_expect(z, fz_ioctl(z, CNUASGPU_IOC_ALLOC, &a), want) &&
	    a.handle) {
		f.handle = a.handle;
		fz_ioctl(z, CNUASGPU_IOC_FREE, &f);
	}
}

static void fuzz_free(struct fuzz *z)
{
	struct cnuasgpu_free f = { 0 };

	f.handle = rnd() % 2 ? (uint32_t)rnd() : 0;
	if (f.handle == z->live)
		f.handle++;
	if (rnd() % 4 == 0) {
		f.handle = z->live;
		f.reserved = 1;
	}
	fz_expect(z, fz_ioctl(z, CNUASGPU_IOC_FREE, &f), f.reserved ? EINVAL : ENOENT);
}

/* A real allocation freed twice, then used: only the first free succeeds. */
static void fuzz_double_free(struct fuzz *z)
{
	struct cnuasgpu_alloc a = { .size = 4096 * (1 + rnd() % 4) };
	struct cnuasgpu_copy c = { .size = 16, .user_ptr = (uintptr_t)z->buf };
	struct cnuasgpu_free f = { 0 };

	if (!fz_expect(z, fz_ioctl(z, CNUASGPU_IOC_ALLOC, &a), 0))
		return;
	f.handle = a.handle;
	if (!fz_expect(z, fz_ioctl(z, CNUASGPU_IOC_FREE, &f), 0))
		return;
	fz_expect(z, fz_ioctl(z, CNUASGPU_IOC_FREE, &f), ENOENT);
	switch (rnd() % 3) {
	case 0:
		c.handle = a.handle;
		fz_expect(z, fz_ioctl(z, rnd() % 2 ? CNUASGPU_IOC_COPY_TO_DEV :
				      CNUASGPU_IOC_COPY_FROM_DEV, &c), ENOENT);
		break;
	case 1:
		fz_expect(z, fz_mmap(z, 4096, (off_t)a.offset), EINVAL);
		break;
	default:
		break;
	}
}

static void fuzz_copy_range(struct fuzz *z)
{
	struct cnuasgpu_copy c = { .handle = z->live, .user_ptr = (uintptr_t)z->buf };

	c.offset = FUZZ_LIVE_SIZE + (rnd() % 3 ? 0 : pick_u64() >> 2);
	c.size = rnd() % 2 ? 1 + rnd() % 8192 : pick_u64();
	if (rnd() % 5 == 0) {
		c.offset = 0;
		c.size = rnd() % 2 ? 0 : FUZZ_LIVE_SIZE + 1 + rnd() % 4096;
	}
	fz_expect(z, fz_ioctl(z, rnd() % 2 ? CNUASGPU_IOC_COPY_TO_DEV :
			      CNUASGPU_IOC_COPY_FROM_DEV, &c), EINVAL);
}

static void fuzz_copy_fault(struct fuzz *z)
{
	struct cnuasgpu_copy c = { .handle = z->live };

	c.size = 1 + rnd() % 4096;
	c.user_ptr = rnd() % 2 ? 0 : 0xffff800000000000ull + rnd() % 4096;
	fz_expect(z, fz_ioctl(z, rnd() % 2 ? CNUASGPU_IOC_COPY_TO_DEV :
			      CNUASGPU_IOC_COPY_FROM_DEV, &c), EFAULT);
}

static void fuzz_copy_handle(struct fuzz *z)
{
	struct cnuasgpu_copy c = { .size = 16, .user_ptr = (uintptr_t)z->buf };

	c.handle = (uint32_t)rnd();
	if (c.handle == z->live)
		c.handle ^= 0x80000000u;
	fz_expect(z, fz_ioctl(z, CNUASGPU_IOC_COPY_FROM_DEV, &c), ENOENT);
}

static void fuzz_link_send(struct fuzz *z)
{
	struct cnuasgpu_link_send s = { .user_ptr = (uintptr_t)z->buf };

	s.len = rnd() % 2 ? 0 : CNUASGPU_LINK_MAX_PAYLOAD + 1 + rnd() % 100000;
	if (rnd() % 3 == 0) {
		s.len = 16;
		if (rnd() % 2)
			s.flags = 1 + rnd() % 7;
		else
			s.timeout_ms = CNUASGPU_LINK_MAX_TIMEOUT_MS + 1 + rnd() % 1000;
	}
	fz_expect(z, fz_ioctl(z, CNUASGPU_IOC_LINK_SEND, &s), EINVAL);
}

static void fuzz_link_recv(struct fuzz *z)
{
	struct cnuasgpu_link_recv r = { .user_ptr = (uintptr_t)z->buf, .buf_size = 4096 };

	switch (rnd() % 3) {
	case 0:
		r.flags = 2 + rnd() % 100;
		break;
	case 1:
		r.len = 1 + rnd() % 100;
		break;
	default:
		r.timeout_ms = CNUASGPU_LINK_MAX_TIMEOUT_MS + 1;
		break;
	}
	fz_expect(z, fz_ioctl(z, CNUASGPU_IOC_LINK_RECV, &r), EINVAL);
}

static void fuzz_mmap(struct fuzz *z)
{
	/* Far past BAR1, page aligned or not (mmap takes a page offset). */
	off_t off = (off_t)((rnd() % 4096) * 4096 + (1ull << 40));

	fz_expect(z, fz_mmap(z, 4096 * (1 + rnd() % 4), off), EINVAL);
}

/* A real export's fd is closed at once: the allocation is then the file's alone again. */
static void fuzz_export(struct fuzz *z)
{
	struct cnuasgpu_export x = { .handle = z->live };
	int want = EINVAL;

	switch (rnd() % 4) {
	case 0:
		x.flags = 2u << (rnd() % 30);	/* any flag but CLOEXEC */
		break;
	case 1:
		if (rnd() % 2)
			x.reserved = 1 + rnd() % 0xffff;
		else
			x.fd = 1 + rnd() % 1000;	/* out only */
		break;
	case 2:
		x.handle = (uint32_t)rnd();
		if (x.handle == z->live)
			x.handle ^= 0x80000000u;
		want = ENOENT;
		break;
	default:
		x.flags = rnd() % 2 ? CNUASGPU_EXPORT_CLOEXEC : 0;
		want = 0;
		break;
	}
	if (fz_expect(z, fz_ioctl(z, CNUASGPU_IOC_EXPORT_DMABUF, &x), want) && !want)
		close(x.fd);
}

static void (*const fuzz_cases[FZ_KINDS])(struct fuzz *) = {
	[FZ_GARBAGE] = fuzz_garbage,
	[FZ_ALLOC] = fuzz_alloc,
	[FZ_FREE] = fuzz_free,
	[FZ_DOUBLE_FREE] = fuzz_double_free,
	[FZ_COPY_RANGE] = fuzz_copy_range,
	[FZ_COPY_FAULT] = fuzz_copy_fault,
	[FZ_COPY_HANDLE] = fuzz_copy_handle,
	[FZ_LINK_SEND] = fuzz_link_send,
	[FZ_LINK_RECV] = fuzz_link_recv,
	[FZ_MMAP] = fuzz_mmap,
	[FZ_EXPORT] = fuzz_export,
};

static int fuzz(const char *path, long calls, uint64_t seed)
{
	struct fuzz z = { .fd = open_dev(path), .buf = calloc(1, 1 << 17) };
	struct cnuasgpu_alloc live;
	struct cnuasgpu_info inf;

	rng_state ^= seed * 0x2545f4914f6cdd1dull;
	if (!z.buf || alloc(z.fd, FUZZ_LIVE_SIZE, 0, &live) || live.size != FUZZ_LIVE_SIZE) {
		fprintf(stderr, "setup: %s\n", strerror(errno));
		return 1;
	}
	z.live = live.handle;
	while (z.calls < calls) {
		z.kind = rnd() % FZ_KINDS;
		fuzz_cases[z.kind](&z);
	}
	CHECK(z.wrong == 0, "%ld of %ld calls had another outcome than documented",
	      z.wrong, z.calls);
	CHECK(free_handle(z.fd, z.live) == 0, "the live allocation survived");
	CHECK(info(z.fd, &inf) == 0, "INFO after the fuzz");
	printf("fuzz_calls=%ld\nfuzz_wrong=%ld\ndevmem_used=%" PRIu64 "\n",
	       z.calls, z.wrong, (uint64_t)inf.devmem_used);
	for (int k = 0; k < FZ_KINDS; k++)
		printf("fuzz_calls_%s=%ld\n", fuzz_names[k], z.kind_calls[k]);
	free(z.buf);
	close(z.fd);
	return failures ? 1 : 0;
}

/* ---- CnuasLink -------------------------------------------------------------- */

static const uint32_t link_sizes[] = {
	1, 2, 3, 4, 7, 8, 9, 63, 64, 100, 511, 1500, 4096, 4097, 9000,
	16384, 32768, 65000, CNUASGPU_LINK_MAX_PAYLOAD,
};
#define N_LINK_SIZES (sizeof(link_sizes) / sizeof(link_sizes[0]))

/* Sequence number of the frame that ends a timed run (never a real one). */
#define LINK_END_SEQ	0xffffffffu

/* Which payload sizes a run sends and how much of each frame is checked. */
struct link_plan {
	uint32_t fixed;		/* every payload this long; 0: cycle link_sizes */
	uint32_t max;		/* cap on the cycled sizes */
	int every_byte;		/* check the whole pattern, not just length and seq */
};

static uint32_t link_size(const struct link_plan *p, uint32_t seq)
{
	uint32_t s;

	if (p->fixed)
		return p->fixed;
	s = link_sizes[seq % N_LINK_SIZES];
	return s > p->max ? p->max : s;
}

/* Payload of frame @seq: its sequence number first, then a pattern. */
static void link_fill(uint8_t *p, uint32_t len, uint32_t seq)
{
	fill(p, len, seq);
	if (len >= 4)
		memcpy(p, &seq, 4);
}

static double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int link_send_frame(int fd, uint32_t dst, const void *buf, uint32_t len)
{
	struct cnuasgpu_link_send s = {
		.user_ptr = (uintptr_t)buf,
		.len = len,
		.dst_gpu_id = dst,
		.timeout_ms = 10000,
	};

	if (ioctl(fd, CNUASGPU_IOC_LINK_SEND, &s)) {
		fprintf(stderr, "FAIL send of %u bytes: %s\n", len, strerror(errno));
		return -1;
	}
	return 0;
}

/* How long a receive waits for the next frame before the run fails. */
#define LINK_RECV_WAIT_MS	30000
/* How long an idle receiver waits to show that nothing more arrives. */
#define LINK_IDLE_MS		300

/* How link-recv waits for a frame. */
enum link_wait {
	WAIT_IOCTL,	/* a blocking LINK_RECV */
	WAIT_POLL,	/* poll() for POLLIN, then a non-blocking LINK_RECV */
};

/* One LINK_RECV into @buf (room for any payload); 0, or -1 with errno. */
static int link_recv_ioctl(int fd, uint8_t *buf, uint32_t flags,
			   uint32_t timeout_ms, struct cnuasgpu_link_recv *r)
{
	memset(r, 0, sizeof(*r));
	r->user_ptr = (uintptr_t)buf;
	r->buf_size = CNUASGPU_LINK_MAX_PAYLOAD;
	r->timeout_ms = timeout_ms;
	r->flags = flags;
	return ioctl(fd, CNUASGPU_IOC_LINK_RECV, r);
}

/* poll() @fd for POLLIN: 1 ready, 0 timed out, -1 error or other events. */
static int link_poll(int fd, int timeout_ms, short *revents)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n = poll(&p, 1, timeout_ms);

	*revents = p.revents;
	if (n <= 0)
		return n;
	return p.revents == POLLIN ? 1 : -1;
}

/*
 * Next frame not addressed to everyone: broadcast "hello" frames only teach
 * the switch a gpu_id.  Returns the payload length (the header fields in @r),
 * or -1.  With @polls the wait is poll(): POLLIN has to come, and then a
 * non-blocking receive has to find the frame (this is its only reader);
 * *polls counts the POLLINs.
 */
static int64_t link_recv_frame(int fd, uint8_t *buf,
			       struct cnuasgpu_link_recv *r, long *polls)
{
	short revents;
	int ready;

	do {
		if (polls) {
			ready = link_poll(fd, LINK_RECV_WAIT_MS, &revents);
			if (ready != 1) {
				fprintf(stderr, "FAIL poll: %s (revents 0x%x)\n",
					ready ? strerror(errno) : "no POLLIN in time",
					revents);
				return -1;
			}
			(*polls)++;
		}
		if (link_recv_ioctl(fd, buf, polls ? CNUASGPU_LINK_RECV_NONBLOCK : 0,
				    polls ? 0 : LINK_RECV_WAIT_MS, r)) {
			fprintf(stderr, "FAIL recv%s: %s\n",
				polls ? " after POLLIN" : "", strerror(errno));
			return -1;
		}
	} while (r->dst_gpu_id == CNUASGPU_LINK_BROADCAST);
	return r->len;
}

static uint32_t link_seq_of(const uint8_t *buf, uint32_t len)
{
	uint32_t seq = 0;

	if (len >= 4)
		memcpy(&seq, buf, 4);
	return seq;
}

/* 0 when @buf (@len bytes) is frame @seq of plan @p; @want is scratch. */
static int link_check(const struct link_plan *p, const uint8_t *buf,
		      uint32_t len, uint32_t seq, uint8_t *want)
{
	uint32_t expect = link_size(p, seq);
	int ok = len == expect;

	if (ok && p->every_byte) {
		link_fill(want, expect, seq);
		ok = !memcmp(buf, want, expect);
	} else if (ok) {
		ok = link_seq_of(buf, len) == seq;
	}
	if (!ok)
		fprintf(stderr, "FAIL frame %u: %u bytes (seq %u), expected %u bytes\n",
			seq, len, link_seq_of(buf, len), expect);
	return !ok;
}

static int link_send(const char *path, uint32_t dst, long count, uint32_t max)
{
	const struct link_plan plan = { .max = max, .every_byte = 1 };
	uint8_t *buf = malloc(CNUASGPU_LINK_MAX_PAYLOAD);
	double t0 = now_sec(), dt;
	uint64_t bytes = 0;
	int fd = open_dev(path);
	long i;

	if (!buf)
		return 1;
	for (i = 0; i < count; i++) {
		uint32_t len = link_size(&plan, i);

		link_fill(buf, len, i);
		if (link_send_frame(fd, dst, buf, len)) {
			fprintf(stderr, "FAIL send %ld\n", i);
			return 1;
		}
		bytes += len;
	}
	dt = now_sec() - t0;
	printf("sent_frames=%ld\nsent_bytes=%" PRIu64 "\nsend_sec=%.3f\n",
	       count, bytes, dt);
	free(buf);
	close(fd);
	return 0;
}

/*
 * Once every frame is in, nothing more waits: poll() times out without
 * POLLIN (poll mode) or a blocking receive times out (ioctl mode), and a
 * non-blocking one finds nothing.  Prints idle_poll / idle_recv / idle_nonblock.
 */
/* How an idle receive ended, as link_recv_idle prints it. */
static const char *idle_outcome(int ret, int err)
{
	static char other[32];

	if (!ret)
		return "frame";
	if (err == ETIMEDOUT)
		return "ETIMEDOUT";
	if (err == EAGAIN)
		return "EAGAIN";
	snprintf(other, sizeof(other), "errno-%d", err);
	return other;
}

static void link_recv_idle(int fd, uint8_t *buf, enum link_wait wait)
{
	struct cnuasgpu_link_recv r;
	short revents;
	int ret, err;

	if (wait == WAIT_POLL) {
		ret = link_poll(fd, LINK_IDLE_MS, &revents);
		CHECK(ret == 0, "idle poll: %d (revents 0x%x), expected a timeout",
		      ret, revents);
		printf("idle_poll=%s\n", ret == 0 ? "timeout" : "ready");
	} else {
		ret = link_recv_ioctl(fd, buf, 0, LINK_IDLE_MS, &r);
		err = errno;
		CHECK(ret == -1 && err == ETIMEDOUT, "idle recv: %s",
		      idle_outcome(ret, err));
		printf("idle_recv=%s\n", idle_outcome(ret, err));
	}
	ret = link_recv_ioctl(fd, buf, CNUASGPU_LINK_RECV_NONBLOCK, 0, &r);
	err = errno;
	CHECK(ret == -1 && err == EAGAIN, "idle non-blocking recv: %s",
	      idle_outcome(ret, err));
	printf("idle_nonblock=%s\n", idle_outcome(ret, err));
}

/*
 * COUNT frames from SRC, each checked: addressed to this device, from SRC,
 * the right length and every byte.  recv_frames counts the frames that
 * passed; the run stops at the first that did not.
 */
static int link_recv(const char *path, uint32_t src, long count,
		     enum link_wait wait, uint32_t max)
{
	const struct link_plan plan = { .max = max, .every_byte = 1 };
	uint8_t *buf = malloc(CNUASGPU_LINK_MAX_PAYLOAD);
	uint8_t *want = malloc(CNUASGPU_LINK_MAX_PAYLOAD);
	struct cnuasgpu_link_recv r;
	struct cnuasgpu_info inf;
	double t0 = 0, dt;
	uint64_t bytes = 0;
	uint32_t from = 0, to = 0;	/* header of the last frame that passed */
	long verified = 0, polls = 0;
	int fd = open_dev(path);

	if (!buf || !want || info(fd, &inf)) {
		fprintf(stderr, "setup: %s\n", strerror(errno));
		return 1;
	}
	while (verified < count) {
		int64_t len = link_recv_frame(fd, buf, &r,
					      wait == WAIT_POLL ? &polls : NULL);

		if (len < 0)
			break;
		if (verified == 0)
			t0 = now_sec();
		if (r.src_gpu_id != src || r.dst_gpu_id != inf.gpu_id) {
			fprintf(stderr, "FAIL frame %ld: from gpu_id %u to %u, expected %u to %u\n",
				verified, r.src_gpu_id, r.dst_gpu_id, src, inf.gpu_id);
			break;
		}
		if (link_check(&plan, buf, len, verified, want))
			break;
		verified++;
		bytes += len;
		from = r.src_gpu_id;
		to = r.dst_gpu_id;
	}
	dt = verified ? now_sec() - t0 : 0;
	printf("recv_frames=%ld\nrecv_bytes=%" PRIu64 "\nrecv_sec=%.3f\n",
	       verified, bytes, dt);
	if (verified)
		printf("recv_src_gpu_id=%u\nrecv_dst_gpu_id=%u\n", from, to);
	if (wait == WAIT_POLL)
		printf("poll_ready=%ld\n", polls);
	CHECK(verified == count, "%ld of %ld frames arrived intact", verified, count);
	if (verified == count)
		link_recv_idle(fd, buf, wait);
	free(buf);
	free(want);
	close(fd);
	return failures ? 1 : 0;
}

static int link_down(const char *path, uint32_t dst)
{
	uint8_t buf[64] = { 0 };
	struct cnuasgpu_link_send s = {
		.user_ptr = (uintptr_t)buf,
		.len = sizeof(buf),
		.dst_gpu_id = dst,
		.timeout_ms = 1000,
	};
	int fd = open_dev(path);
	int ret = ioctl(fd, CNUASGPU_IOC_LINK_SEND, &s);

	CHECK(ret == -1 && errno == ENOLINK, "send with the link down: ret %d (%s)",
	      ret, strerror(errno));
	close(fd);
	return failures ? 1 : 0;
}

/* ---- bench ------------------------------------------------------------------ */

/*
 * Numbers for `deno task bench`, one "bench NAME VALUE UNIT" line each.
 * Every point runs for about SECONDS after one untimed warm-up (page faults,
 * first touch of the BAR), split into BENCH_TRIALS slices; the number is the
 * median slice, so a host stall of the guest (a shared, busy host under TCG
 * stalls it for seconds) spoils one slice instead of the number.
 */
#define BENCH_TRIALS	5
#define MIB		1048576.0

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void bench_line(const char *what, const char *label, double value,
		       const char *unit)
{
	printf("bench %s%s %.3f %s\n", what, label, value, unit);
}

static const struct {
	uint64_t size;
	const char *label;
} copy_sizes[] = {
	{ 4096, "4KiB" }, { 1u << 20, "1MiB" }, { 16u << 20, "16MiB" },
};
#define N_COPY_SIZES (sizeof(copy_sizes) / sizeof(copy_sizes[0]))
#define COPY_MAX (16u << 20)

enum copy_path { TO_DEV_IOCTL, FROM_DEV_IOCTL, TO_DEV_MMAP, FROM_DEV_MMAP, N_PATHS };

static const char *const copy_names[N_PATHS] = {
	[TO_DEV_IOCTL] = "gpuCopyToDevIoctlMiBPerSec",
	[FROM_DEV_IOCTL] = "gpuCopyFromDevIoctlMiBPerSec",
	[TO_DEV_MMAP] = "gpuCopyToDevMmapMiBPerSec",
	[FROM_DEV_MMAP] = "gpuCopyFromDevMmapMiBPerSec",
};

/* One allocation of COPY_MAX bytes, its mapping and a host buffer. */
struct copy_rig {
	int fd;
	uint32_t handle;
	uint8_t *map;
	uint8_t *host;
};

static int copy_once(const struct copy_rig *r, enum copy_path path, uint64_t size)
{
	switch (path) {
	case TO_DEV_IOCTL:
		return copy(r->fd, 1, r->handle, 0, r->host, size);
	case FROM_DEV_IOCTL:
		return copy(r->fd, 0, r->handle, 0, r->host, size);
	case TO_DEV_MMAP:
		memcpy(r->map, r->host, size);
		return 0;
	default:
		memcpy(r->host, r->map, size);
		return 0;
	}
}

/* MiB/s of @path at @size over about @seconds, or -1 when a copy failed. */
static double copy_rate(const struct copy_rig *r, enum copy_path path,
			uint64_t size, double seconds)
{
	double rates[BENCH_TRIALS];

	if (copy_once(r, path, size))
		return -1;
	for (int t = 0; t < BENCH_TRIALS; t++) {
		double t0 = now_sec(), dt;
		long n = 0;

		do {
			if (copy_once(r, path, size))
				return -1;
			n++;
			dt = now_sec() - t0;
		} while (dt < seconds / BENCH_TRIALS);
		rates[t] = n * size / MIB / dt;
	}
	return median(rates, BENCH_TRIALS);
}

/* Both paths move the right bytes, so the numbers below mean something. */
static void copy_verify(const struct copy_rig *r, uint8_t *check)
{
	fill(r->host, COPY_MAX, 5);
	CHECK(copy_once(r, TO_DEV_IOCTL, COPY_MAX) == 0, "COPY_TO_DEV: %s",
	      strerror(errno));
	CHECK(memcmp(r->map, r->host, COPY_MAX) == 0, "the mapping sees the ioctl copy");
	fill(r->host, COPY_MAX, 6);
	copy_once(r, TO_DEV_MMAP, COPY_MAX);
	memset(check, 0, COPY_MAX);
	CHECK(copy(r->fd, 0, r->handle, 0, check, COPY_MAX) == 0 &&
	      memcmp(check, r->host, COPY_MAX) == 0, "the ioctl sees the mmap writes");
}

static int bench_copy(const char *path, double seconds)
{
	struct cnuasgpu_alloc a;
	struct copy_rig r = { .fd = open_dev(path) };
	uint8_t *check = malloc(COPY_MAX);

	r.host = malloc(COPY_MAX);
	if (!r.host || !check)
		return 1;
	if (alloc(r.fd, COPY_MAX, 0, &a)) {
		fprintf(stderr, "ALLOC %u bytes: %s\n", COPY_MAX, strerror(errno));
		return 1;
	}
	r.handle = a.handle;
	r.map = mmap(NULL, COPY_MAX, PROT_READ | PROT_WRITE, MAP_SHARED, r.fd, a.offset);
	if (r.map == MAP_FAILED) {
		fprintf(stderr, "mmap: %s\n", strerror(errno));
		return 1;
	}
	copy_verify(&r, check);
	for (int p = 0; p < N_PATHS && !failures; p++) {
		for (size_t s = 0; s < N_COPY_SIZES; s++) {
			double mibps = copy_rate(&r, p, copy_sizes[s].size, seconds);

			CHECK(mibps >= 0, "%s%s: %s", copy_names[p],
			      copy_sizes[s].label, strerror(errno));
			if (mibps >= 0)
				bench_line(copy_names[p], copy_sizes[s].label, mibps, "MiB/s");
			fflush(stdout);
		}
	}
	munmap(r.map, COPY_MAX);
	free_handle(r.fd, r.handle);
	close(r.fd);
	free(r.host);
	free(check);
	return failures ? 1 : 0;
}

/*
 * bench-link flow control.  The switch drops what a port's egress queue
 * cannot hold (queue_full), so a sender that outruns its receiver loses
 * frames.  The receiver grants credit with small acknowledgement frames back
 * over the link; the sender keeps at most link_window() frames unacknowledged,
 * well inside the switch's queue.  Each ack carries the run's nonce so a late
 * ack of an earlier run is not mistaken for credit.
 */
#define LINK_ACK_MAGIC	0x4b434121u	/* "!ACK" */

struct link_ack {
	uint32_t magic;
	uint32_t nonce;
	uint32_t frames;	/* received so far */
};

static uint32_t link_window(uint32_t size)
{
	uint32_t w = (1u << 20) / size;

	return w > 128 ? 128 : w < 8 ? 8 : w;
}

/* Wait for acks until fewer than @window of @sent frames are unacknowledged. */
static int link_await_credit(int fd, uint8_t *buf, uint32_t nonce, uint32_t sent,
			     uint32_t *acked, uint32_t window)
{
	while (sent - *acked >= window) {
		struct cnuasgpu_link_recv r;
		int64_t len = link_recv_frame(fd, buf, &r, NULL);
		struct link_ack ack;

		if (len < 0)
			return -1;
		if (len != sizeof(ack)) {
			fprintf(stderr, "FAIL a %" PRId64 "-byte frame where an ack was due\n", len);
			return -1;
		}
		memcpy(&ack, buf, sizeof(ack));
		if (ack.magic != LINK_ACK_MAGIC) {
			fprintf(stderr, "FAIL a frame that is no ack where an ack was due\n");
			return -1;
		}
		if (ack.nonce == nonce && ack.frames > *acked)
			*acked = ack.frames;
	}
	return 0;
}

/*
 * Receiving side of bench-link: frames in order until the end frame, an ack
 * every half window; the clock runs from the first frame, in slices.
 */
static int bench_link_rx(const char *path, const struct link_plan *plan,
			 uint32_t nonce, double seconds)
{
	const uint32_t ack_every = link_window(plan->fixed) / 2;
	uint8_t *buf = malloc(CNUASGPU_LINK_MAX_PAYLOAD);
	double t0 = 0, dt, now, slice_t0 = 0, rates[4 * BENCH_TRIALS], fps;
	struct cnuasgpu_link_recv r;
	uint32_t i, slice_i0 = 0;
	int slices = 0;
	char label[32];
	int fd = open_dev(path);

	if (!buf)
		return 1;
	for (i = 0;; i++) {
		int64_t len = link_recv_frame(fd, buf, &r, NULL);

		if (len < 0)
			return 1;
		now = now_sec();
		if (i == 0)
			t0 = slice_t0 = now;
		if (len == plan->fixed && link_seq_of(buf, len) == LINK_END_SEQ)
			break;
		if (link_check(plan, buf, len, i, NULL))
			return 1;
		/* Frames 0..i arrived: i intervals since the first. */
		if (now - slice_t0 >= seconds / BENCH_TRIALS && slices < 4 * BENCH_TRIALS) {
			rates[slices++] = (i - slice_i0) / (now - slice_t0);
			slice_t0 = now;
			slice_i0 = i;
		}
		if ((i + 1) % ack_every == 0) {
			struct link_ack ack = { LINK_ACK_MAGIC, nonce, i + 1 };

			if (link_send_frame(fd, r.src_gpu_id, &ack, sizeof(ack)))
				return 1;
		}
	}
	dt = now_sec() - t0;
	printf("recv_frames=%u\nrecv_slices=%d\n", i, slices);
	if (i < 2 || dt <= 0) {
		fprintf(stderr, "FAIL only %u frames arrived: nothing to time\n", i);
		return 1;
	}
	/* i frames and the end frame arrived: i intervals after the first. */
	fps = slices ? median(rates, slices) : i / dt;
	snprintf(label, sizeof(label), "%uB", plan->fixed);
	bench_line("gpuLinkFramesPerSec", label, fps, "frames/s");
	bench_line("gpuLinkMiBPerSec", label, fps * plan->fixed / MIB, "MiB/s");
	free(buf);
	close(fd);
	return 0;
}

/*
 * SIZE-byte frames from TX_DEV to DST for about SECONDS, received on RX_DEV
 * by a child process; the end frame tells the receiver to stop.  The switch
 * must already know both ports (a broadcast from each device beforehand).
 */
static int bench_link(const char *tx_path, const char *rx_path, uint32_t dst,
		      uint32_t size, double seconds)
{
	const struct link_plan plan = { .fixed = size };
	const uint32_t window = link_window(size), nonce = (uint32_t)getpid();
	uint8_t *buf = malloc(size), *ackbuf = malloc(CNUASGPU_LINK_MAX_PAYLOAD);
	uint32_t i, acked = 0, end = LINK_END_SEQ;
	int fd, status, ret = 0;
	double t0;
	pid_t rx;

	if (!buf || !ackbuf)
		return 1;
	fd = open_dev(tx_path);
	fflush(stdout);
	rx = fork();
	if (rx < 0) {
		fprintf(stderr, "fork: %s\n", strerror(errno));
		return 1;
	}
	if (rx == 0) {
		ret = bench_link_rx(rx_path, &plan, nonce, seconds);
		fflush(stdout);	/* _exit() leaves stdio buffers alone */
		_exit(ret);
	}
	fill(buf, size, 0);
	t0 = now_sec();
	for (i = 0; now_sec() - t0 < seconds; i++) {
		memcpy(buf, &i, 4);
		if (link_await_credit(fd, ackbuf, nonce, i, &acked, window) ||
		    link_send_frame(fd, dst, buf, size)) {
			ret = 1;
			break;
		}
	}
	memcpy(buf, &end, 4);
	if (ret || link_await_credit(fd, ackbuf, nonce, i, &acked, window) ||
	    link_send_frame(fd, dst, buf, size)) {
		kill(rx, SIGTERM);
		ret = 1;
	}
	if (waitpid(rx, &status, 0) != rx || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0) {
		fprintf(stderr, "FAIL the receiver on %s did not finish cleanly\n", rx_path);
		ret = 1;
	}
	printf("sent_frames=%u\nwindow_frames=%u\n", i, window);
	free(buf);
	free(ackbuf);
	close(fd);
	return ret;
}

/* ---- copy-loop ------------------------------------------------------------ */

/* Largest allocation copy-loop copies: long ioctls widen the race it is for. */
#define COPY_LOOP_MAX	(8u << 20)

/* The errno names copy-loop reports; anything else as its number. */
static const char *errno_name(int err)
{
	static char other[24];

	switch (err) {
	case 0:
		return "none";
	case ENODEV:
		return "ENODEV";
	case ENOENT:
		return "ENOENT";
	case EINVAL:
		return "EINVAL";
	case EFAULT:
		return "EFAULT";
	case EINTR:
		return "EINTR";
	case ENOMEM:
		return "ENOMEM";
	default:
		snprintf(other, sizeof(other), "errno%d", err);
		return other;
	}
}

/* After the copies failed: each call on the gone device must fail with ENODEV. */
static void copy_loop_after(int fd, const struct cnuasgpu_alloc *a, uint8_t *buf)
{
	struct cnuasgpu_info inf;
	struct cnuasgpu_alloc b;
	void *m;
	int err;

	err = copy(fd, 1, a->handle, 0, buf, 4096) ? errno : 0;
	printf("after_copy=%s\n", errno_name(err));
	CHECK(err == ENODEV, "a copy after the first failure: %s", errno_name(err));
	err = info(fd, &inf) ? errno : 0;
	printf("after_info=%s\n", errno_name(err));
	CHECK(err == ENODEV, "INFO of the gone device: %s", errno_name(err));
	err = alloc(fd, 4096, 0, &b) ? errno : 0;
	printf("after_alloc=%s\n", errno_name(err));
	CHECK(err == ENODEV, "ALLOC on the gone device: %s", errno_name(err));
	m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, a->offset);
	err = m == MAP_FAILED ? errno : 0;
	printf("after_mmap=%s\n", errno_name(err));
	CHECK(err == ENODEV, "mmap of the gone device: %s", errno_name(err));
	if (m != MAP_FAILED)
		munmap(m, 4096);
}

static int copy_loop(const char *path, double seconds)
{
	int fd = open_dev(path);
	struct cnuasgpu_info inf;
	struct cnuasgpu_alloc a;
	double end = now_sec() + seconds;
	uint64_t size;
	long ok = 0;
	uint8_t *buf;
	int err = 0;

	if (info(fd, &inf) || !inf.alloc_limit) {
		fprintf(stderr, "INFO: %s\n", strerror(errno));
		return 1;
	}
	size = (inf.alloc_limit / 2) & ~4095ull;
	if (size > COPY_LOOP_MAX)
		size = COPY_LOOP_MAX;
	buf = malloc(size);
	if (!buf || alloc(fd, size, 0, &a)) {
		fprintf(stderr, "%llu-byte allocation: %s\n", (unsigned long long)size,
			strerror(errno));
		return 1;
	}
	fill(buf, size, 5);
	while (now_sec() < end) {
		/* alternate directions: both paths meet the unbind */
		if (copy(fd, !(ok & 1), a.handle, 0, buf, size)) {
			err = errno;
			break;
		}
		if (++ok == 2) {
			printf("copy_loop_running=1\n");
			fflush(stdout);
		}
	}
	printf("copy_bytes=%llu\ncopies_ok=%ld\ncopy_end=%s\n", (unsigned long long)size, ok,
	       errno_name(err));
	CHECK(err == ENODEV, "the copies ended with %s after %ld successes, not ENODEV",
	      errno_name(err), ok);
	if (err)
		copy_loop_after(fd, &a, buf);
	fflush(stdout);
	free(buf);
	close(fd);
	return failures ? 1 : 0;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: cnuasgpu_smoke smoke DEV | fuzz DEV CALLS SEED |\n"
		"       link-send DEV DST COUNT [MAX] |\n"
		"       link-recv DEV SRC COUNT ioctl|poll [MAX] |\n"
		"       link-down DEV DST | bench-copy DEV SECONDS |\n"
		"       bench-link TX_DEV RX_DEV DST SIZE SECONDS |\n"
		"       copy-loop DEV SECONDS\n");
	return 2;
}

int main(int argc, char **argv)
{
	uint32_t max = CNUASGPU_LINK_MAX_PAYLOAD;

	if (argc < 3)
		return usage();
	if (!strcmp(argv[1], "smoke"))
		return smoke(argv[2]);
	if (!strcmp(argv[1], "fuzz") && argc == 5)
		return fuzz(argv[2], strtol(argv[3], NULL, 0),
			    strtoull(argv[4], NULL, 0));
	if (!strcmp(argv[1], "link-send") && argc >= 5) {
		if (argc > 5)
			max = strtoul(argv[5], NULL, 0);
		return link_send(argv[2], strtoul(argv[3], NULL, 0),
				 strtol(argv[4], NULL, 0), max);
	}
	if (!strcmp(argv[1], "link-recv") && argc >= 6) {
		enum link_wait wait;

		if (!strcmp(argv[5], "poll"))
			wait = WAIT_POLL;
		else if (!strcmp(argv[5], "ioctl"))
			wait = WAIT_IOCTL;
		else
			return usage();
		if (argc > 6)
			max = strtoul(argv[6], NULL, 0);
		return link_recv(argv[2], strtoul(argv[3], NULL, 0),
				 strtol(argv[4], NULL, 0), wait, max);
	}
	if (!strcmp(argv[1], "link-down") && argc == 4)
		return link_down(argv[2], strtoul(argv[3], NULL, 0));
	if (!strcmp(argv[1], "bench-copy") && argc == 4) {
		double sec = strtod(argv[3], NULL);

		return sec > 0 && sec <= 60 ? bench_copy(argv[2], sec) : usage();
	}
	if (!strcmp(argv[1], "copy-loop") && argc == 4) {
		double sec = strtod(argv[3], NULL);

		return sec > 0 && sec <= 600 ? copy_loop(argv[2], sec) : usage();
	}
	if (!strcmp(argv[1], "bench-link") && argc == 7) {
		unsigned long size = strtoul(argv[5], NULL, 0);
		double sec = strtod(argv[6], NULL);

		/* The sequence number takes the first 4 bytes of every payload. */
		if (size < 4 || size > CNUASGPU_LINK_MAX_PAYLOAD || !(sec > 0 && sec <= 60))
			return usage();
		return bench_link(argv[2], argv[3], strtoul(argv[4], NULL, 0), size, sec);
	}
	return usage();
}
