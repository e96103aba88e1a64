// SPDX-License-Identifier: GPL-2.0
/*
 * cnuasgpu_fuzz DEV CALLS SEED: CALLS ioctls on /dev/cnuasgpuN with wrong
 * sizes, unaligned and out-of-range values, double frees of real
 * allocations, huge allocations and garbage commands; each has to end as
 * documented (the errno of uapi/cnuasgpu.h).  CALLS counts the calls made;
 * fuzz_calls_KIND says how many per kind.  The same SEED makes the same
 * calls.
 *
 * Exits 0 when every check passed, 1 on a mismatch, 2 on usage errors.
 */
#include <inttypes.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cnuasgpu_test.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

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
	       cmd == CNUASGPU_IOC_EXPORT_DMABUF || cmd == CNUASGPU_IOC_CAPS;
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

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: cnuasgpu_fuzz DEV CALLS SEED\n");
		return 2;
	}
	return fuzz(argv[1], strtol(argv[2], NULL, 0), strtoull(argv[3], NULL, 0));
}
