// SPDX-License-Identifier: GPL-2.0
/*
 * cnuasgpu_smoke: guest-side checks of /dev/cnuasgpuN for the matrix rows.
 *
 *   cnuasgpu_smoke smoke DEV
 *       info (printed as key=value lines), alloc, copy in/out with patterns
 *       verified, mmap read/write, free, devmem_used bookkeeping.
 *   cnuasgpu_smoke fuzz DEV CALLS SEED
 *       CALLS ioctls with wrong sizes, unaligned and out-of-range values,
 *       double frees, huge allocations and garbage commands; every one that
 *       must fail has to fail.
 *   cnuasgpu_smoke link-send DEV DST_GPU_ID COUNT [MAX_PAYLOAD]
 *   cnuasgpu_smoke link-recv DEV COUNT [MAX_PAYLOAD]
 *       COUNT CnuasLink frames whose payload sizes cycle through 1 byte ..
 *       MAX_PAYLOAD; the receiver checks every byte and the order, and
 *       skips broadcast frames (the "hello" that teaches the switch a gpu_id).
 *   cnuasgpu_smoke link-down DEV DST_GPU_ID
 *       a send must fail with ENOLINK.
 *
 * Exits 0 when every check passed, 1 on a mismatch, 2 on usage errors.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
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
	free(src);
	free(dst);
	close(fd);
	printf("smoke=%s\n", failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}

/* ---- fuzz ----------------------------------------------------------------- */

static uint64_t pick_u64(void)
{
	static const uint64_t edge[] = {
		0, 1, 4095, 4096, 4097, 1ull << 31, 1ull << 32, 1ull << 40,
		UINT64_MAX, UINT64_MAX - 4095, (uint64_t)INT64_MAX,
	};

	return rnd() % 3 ? edge[rnd() % (sizeof(edge) / sizeof(edge[0]))] : rnd();
}

/* One call that must fail; returns 1 when it wrongly succeeded. */
static int fuzz_one(int fd, uint32_t live_handle, void *buf)
{
	union {
		struct cnuasgpu_alloc a;
		struct cnuasgpu_copy c;
		struct cnuasgpu_free f;
		struct cnuasgpu_link_send s;
		struct cnuasgpu_link_recv r;
		uint8_t raw[256];
	} u;
	unsigned long cmd;
	int ret;

	memset(&u, 0, sizeof(u));
	switch (rnd() % 9) {
	case 0:	/* garbage command numbers, including our magic with wrong sizes */
		cmd = rnd() % 2 ? (unsigned long)rnd() :
		      _IOC(rnd() % 4, CNUASGPU_IOC_MAGIC, rnd() % 16, rnd() % 200);
		if (cmd == CNUASGPU_IOC_INFO || cmd == CNUASGPU_IOC_ALLOC ||
		    cmd == CNUASGPU_IOC_FREE || cmd == CNUASGPU_IOC_COPY_TO_DEV ||
		    cmd == CNUASGPU_IOC_COPY_FROM_DEV ||
		    cmd == CNUASGPU_IOC_LINK_SEND || cmd == CNUASGPU_IOC_LINK_RECV)
			return 0;
		ret = ioctl(fd, cmd, u.raw);
		return ret != -1 || errno != ENOTTY;
	case 1:	/* allocations that cannot be satisfied or are malformed */
		u.a.size = rnd() % 2 ? 0 : pick_u64() | (1ull << 62);
		u.a.align = rnd() % 2 ? 0 : pick_u64();
		if (rnd() % 3 == 0) {
			u.a.size = 4096;
			u.a.align = 4096 + 1 + rnd() % 4094;
		}
		if (rnd() % 4 == 0) {
			u.a.size = 4096;
			u.a.flags = 1 + rnd() % 0xffff;
		}
		ret = ioctl(fd, CNUASGPU_IOC_ALLOC, &u.a);
		if (ret == 0)
			free_handle(fd, u.a.handle);
		return ret == 0;
	case 2:	/* frees of handles this file does not own (incl. double frees) */
		u.f.handle = rnd() % 2 ? (uint32_t)rnd() : 0;
		if (u.f.handle == live_handle)
			u.f.handle++;
		if (rnd() % 4 == 0) {
			u.f.handle = live_handle;
			u.f.reserved = 1;
		}
		return ioctl(fd, CNUASGPU_IOC_FREE, &u.f) == 0;
	case 3:	/* out-of-range copies on the live allocation */
		u.c.handle = live_handle;
		u.c.offset = 4096 * 4 + (rnd() % 3 ? 0 : pick_u64() >> 2);
		u.c.size = rnd() % 2 ? 1 + rnd() % 8192 : pick_u64();
		if (rnd() % 5 == 0) {
			u.c.offset = 0;
			u.c.size = 0;
		}
		u.c.user_ptr = (uintptr_t)buf;
		return ioctl(fd, rnd() % 2 ? CNUASGPU_IOC_COPY_TO_DEV :
			     CNUASGPU_IOC_COPY_FROM_DEV, &u.c) == 0;
	case 4:	/* copies with bad user pointers */
		u.c.handle = live_handle;
		u.c.size = 1 + rnd() % 4096;
		u.c.user_ptr = rnd() % 2 ? 0 : 0xffff800000000000ull + rnd() % 4096;
		return ioctl(fd, rnd() % 2 ? CNUASGPU_IOC_COPY_TO_DEV :
			     CNUASGPU_IOC_COPY_FROM_DEV, &u.c) == 0;
	case 5:	/* copies on handles that are not ours */
		u.c.handle = (uint32_t)rnd();
		if (u.c.handle == live_handle)
			u.c.handle ^= 0x80000000u;
		u.c.size = 16;
		u.c.user_ptr = (uintptr_t)buf;
		return ioctl(fd, CNUASGPU_IOC_COPY_FROM_DEV, &u.c) == 0;
	case 6:	/* link sends with invalid lengths, flags or timeouts */
		u.s.user_ptr = (uintptr_t)buf;
		u.s.len = rnd() % 2 ? 0 : CNUASGPU_LINK_MAX_PAYLOAD + 1 + rnd() % 100000;
		if (rnd() % 3 == 0) {
			u.s.len = 16;
			if (rnd() % 2)
				u.s.flags = 1 + rnd() % 7;
			else
				u.s.timeout_ms = CNUASGPU_LINK_MAX_TIMEOUT_MS + 1 + rnd() % 1000;
		}
		return ioctl(fd, CNUASGPU_IOC_LINK_SEND, &u.s) == 0;
	case 7:	/* link receives with invalid flags, out fields or timeouts */
		u.r.user_ptr = (uintptr_t)buf;
		u.r.buf_size = 4096;
		switch (rnd() % 3) {
		case 0:
			u.r.flags = 2 + rnd() % 100;
			break;
		case 1:
			u.r.len = 1 + rnd() % 100;
			break;
		default:
			u.r.timeout_ms = CNUASGPU_LINK_MAX_TIMEOUT_MS + 1;
			break;
		}
		return ioctl(fd, CNUASGPU_IOC_LINK_RECV, &u.r) == 0;
	default: /* unaligned / foreign mmap offsets */
	{
		void *m = mmap(NULL, 4096 * (1 + rnd() % 4), PROT_READ,
			       MAP_SHARED, fd, (off_t)((rnd() % 4096) * 4096 +
			       (1ull << 40)));

		if (m != MAP_FAILED) {
			munmap(m, 4096);
			return 1;
		}
		return 0;
	}
	}
}

static int fuzz(const char *path, long calls, uint64_t seed)
{
	struct cnuasgpu_alloc live;
	struct cnuasgpu_info inf;
	long wrong = 0, i;
	void *buf = calloc(1, 1 << 17);
	int fd = open_dev(path);

	rng_state ^= seed * 0x2545f4914f6cdd1dull;
	if (!buf || alloc(fd, 4 * 4096, 0, &live)) {
		fprintf(stderr, "setup: %s\n", strerror(errno));
		return 1;
	}
	for (i = 0; i < calls; i++)
		wrong += fuzz_one(fd, live.handle, buf);
	CHECK(wrong == 0, "%ld of %ld invalid calls succeeded", wrong, calls);
	CHECK(free_handle(fd, live.handle) == 0, "the live allocation survived");
	CHECK(info(fd, &inf) == 0, "INFO after the fuzz");
	printf("fuzz_calls=%ld\nfuzz_wrong=%ld\ndevmem_used=%" PRIu64 "\n",
	       calls, wrong, (uint64_t)inf.devmem_used);
	free(buf);
	close(fd);
	return failures ? 1 : 0;
}

/* ---- CnuasLink -------------------------------------------------------------- */

static const uint32_t link_sizes[] = {
	1, 2, 3, 4, 7, 8, 9, 63, 64, 100, 511, 1500, 4096, 4097, 9000,
	16384, 32768, 65000, CNUASGPU_LINK_MAX_PAYLOAD,
};
#define N_LINK_SIZES (sizeof(link_sizes) / sizeof(link_sizes[0]))

static uint32_t link_size(uint32_t seq, uint32_t max)
{
	uint32_t s = link_sizes[seq % N_LINK_SIZES];

	return s > max ? max : s;
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

static int link_send(const char *path, uint32_t dst, long count, uint32_t max)
{
	uint8_t *buf = malloc(CNUASGPU_LINK_MAX_PAYLOAD);
	double t0 = now_sec(), dt;
	uint64_t bytes = 0;
	int fd = open_dev(path);
	long i;

	if (!buf)
		return 1;
	for (i = 0; i < count; i++) {
		struct cnuasgpu_link_send s = {
			.user_ptr = (uintptr_t)buf,
			.len = link_size(i, max),
			.dst_gpu_id = dst,
			.timeout_ms = 10000,
		};

		link_fill(buf, s.len, i);
		if (ioctl(fd, CNUASGPU_IOC_LINK_SEND, &s)) {
			fprintf(stderr, "FAIL send %ld (%u bytes): %s\n", i, s.len,
				strerror(errno));
			return 1;
		}
		bytes += s.len;
	}
	dt = now_sec() - t0;
	printf("sent_frames=%ld\nsent_bytes=%" PRIu64 "\nsend_sec=%.3f\n",
	       count, bytes, dt);
	free(buf);
	close(fd);
	return 0;
}

static int link_recv(const char *path, long count, uint32_t max)
{
	uint8_t *buf = malloc(CNUASGPU_LINK_MAX_PAYLOAD);
	uint8_t *want = malloc(CNUASGPU_LINK_MAX_PAYLOAD);
	double t0 = 0, dt;
	uint64_t bytes = 0;
	int fd = open_dev(path);
	long i;

	if (!buf || !want)
		return 1;
	for (i = 0; i < count; i++) {
		struct cnuasgpu_link_recv r = {
			.user_ptr = (uintptr_t)buf,
			.buf_size = CNUASGPU_LINK_MAX_PAYLOAD,
			.timeout_ms = 30000,
		};
		uint32_t len = link_size(i, max);

		if (ioctl(fd, CNUASGPU_IOC_LINK_RECV, &r)) {
			fprintf(stderr, "FAIL recv %ld: %s\n", i, strerror(errno));
			return 1;
		}
		/* Broadcast "hello" frames only teach the switch a gpu_id. */
		if (r.dst_gpu_id == CNUASGPU_LINK_BROADCAST) {
			i--;
			continue;
		}
		if (i == 0)
			t0 = now_sec();
		link_fill(want, len, i);
		if (r.len != len || memcmp(buf, want, len)) {
			uint32_t got_seq = 0;

			if (r.len >= 4)
				memcpy(&got_seq, buf, 4);
			fprintf(stderr, "FAIL frame %ld: %u bytes (seq %u), expected %u bytes\n",
				i, r.len, got_seq, len);
			return 1;
		}
		bytes += r.len;
	}
	dt = now_sec() - t0;
	printf("recv_frames=%ld\nrecv_bytes=%" PRIu64 "\nrecv_sec=%.3f\n",
	       count, bytes, dt);
	free(buf);
	free(want);
	close(fd);
	return 0;
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

static int usage(void)
{
	fprintf(stderr,
		"usage: cnuasgpu_smoke smoke DEV | fuzz DEV CALLS SEED |\n"
		"       link-send DEV DST COUNT [MAX] | link-recv DEV COUNT [MAX] |\n"
		"       link-down DEV DST\n");
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
	if (!strcmp(argv[1], "link-recv") && argc >= 4) {
		if (argc > 4)
			max = strtoul(argv[4], NULL, 0);
		return link_recv(argv[2], strtol(argv[3], NULL, 0), max);
	}
	if (!strcmp(argv[1], "link-down") && argc == 4)
		return link_down(argv[2], strtoul(argv[3], NULL, 0));
	return usage();
}
