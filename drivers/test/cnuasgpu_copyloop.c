// SPDX-License-Identifier: GPL-2.0
/*
 * cnuasgpu_copyloop DEV SECONDS: copies to and from one allocation on
 * /dev/cnuasgpuN back to back until one fails (the device was unbound under
 * them) or SECONDS pass.  Prints copy_loop_running=1 once copies are going,
 * then copies_ok, the errno that ended them (copy_end) and what COPY, INFO,
 * ALLOC and mmap() answer afterwards (after_*): with the device gone, ENODEV
 * each.
 *
 * Exits 0 when every check passed, 1 on a mismatch, 2 on usage errors.
 */
#include <sys/mman.h>
#include <unistd.h>

#include "cnuasgpu_test.h"

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

int main(int argc, char **argv)
{
	double sec = dev_seconds_args(argc, argv, 600);

	return sec ? copy_loop(argv[1], sec) : 2;
}
