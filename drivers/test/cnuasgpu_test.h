/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the guest programs for /dev/cnuasgpuN share: the CHECK macro and its
 * failure count, a byte pattern, opening the device, thin wrappers of the
 * INFO, ALLOC, FREE and COPY ioctls, a monotonic clock, DEV SECONDS
 * arguments, and the "bench NAME VALUE UNIT" lines of the bench programs.
 *
 * The programs (each exits 0 when every check passed, 1 on a mismatch, 2 on
 * usage errors):
 *   cnuasgpu_smoke DEV               info, alloc, copies, mmap, free
 *   cnuasgpu_fuzz DEV CALLS SEED     ioctls that must fail as documented
 *   cnuasgpu_link send|recv|down|bench ...   CnuasLink frames
 *   cnuasgpu_copybench DEV SECONDS   copy bandwidth, ioctl and mmap
 *   cnuasgpu_copyloop DEV SECONDS    copies until the device is unbound
 */
#ifndef CNUASGPU_TEST_H
#define CNUASGPU_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include "cnuasgpu.h"

/* Checks that failed; every program exits 1 when there were any. */
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

static inline void fill(uint8_t *p, size_t len, uint32_t salt)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 7 + salt * 131 + (i >> 8));
}

static inline int open_dev(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		fprintf(stderr, "open %s: %s\n", path, strerror(errno));
		exit(1);
	}
	return fd;
}

static inline int info(int fd, struct cnuasgpu_info *inf)
{
	memset(inf, 0, sizeof(*inf));
	return ioctl(fd, CNUASGPU_IOC_INFO, inf);
}

static inline int alloc(int fd, uint64_t size, uint64_t align,
			struct cnuasgpu_alloc *a)
{
	memset(a, 0, sizeof(*a));
	a->size = size;
	a->align = align;
	return ioctl(fd, CNUASGPU_IOC_ALLOC, a);
}

static inline int free_handle(int fd, uint32_t handle)
{
	struct cnuasgpu_free f = { .handle = handle };

	return ioctl(fd, CNUASGPU_IOC_FREE, &f);
}

static inline int copy(int fd, int to_dev, uint32_t handle, uint64_t off,
		       void *p, uint64_t size)
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

static inline double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Arguments of a program called as PROGRAM DEV SECONDS, SECONDS in
 * (0, @max]: the seconds, or 0 after the usage line (the program exits 2).
 */
static inline double dev_seconds_args(int argc, char **argv, double max)
{
	double sec = argc == 3 ? strtod(argv[2], NULL) : 0;

	if (sec > 0 && sec <= max)
		return sec;
	fprintf(stderr, "usage: %s DEV SECONDS (0 < SECONDS <= %g)\n", argv[0], max);
	return 0;
}

/*
 * Numbers for `deno task bench`, one "bench NAME VALUE UNIT" line each.
 * Every point runs for about SECONDS after one untimed warm-up (page faults,
 * first touch of the BAR), split into BENCH_TRIALS slices; the number is the
 * median slice, so a host stall of the guest (a shared, busy host under TCG
 * stalls it for seconds) spoils one slice instead of the number.
 */
#define BENCH_TRIALS	5
#define MIB		1048576.0

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static inline double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static inline void bench_line(const char *what, const char *label,
			      double value, const char *unit)
{
	printf("bench %s%s %.3f %s\n", what, label, value, unit);
}

#endif /* CNUASGPU_TEST_H */
