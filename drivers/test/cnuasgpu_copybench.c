// SPDX-License-Identifier: GPL-2.0
/*
 * cnuasgpu_copybench DEV SECONDS: MiB/s of copies to and from a 16 MiB
 * allocation on /dev/cnuasgpuN through the copy ioctls and through memcpy()
 * on its mapping, at 4 KiB, 1 MiB and 16 MiB, each point about SECONDS long;
 * one "bench NAME VALUE UNIT" line per number.
 *
 * Exits 0 when every check passed, 1 on a mismatch, 2 on usage errors.
 */
#include <sys/mman.h>
#include <unistd.h>

#include "cnuasgpu_test.h"

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

int main(int argc, char **argv)
{
	double sec = dev_seconds_args(argc, argv, 60);

	return sec ? bench_copy(argv[1], sec) : 2;
}
