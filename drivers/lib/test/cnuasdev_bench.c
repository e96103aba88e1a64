// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * cnuasdev_bench [SPEC [SECONDS]]: copy bandwidth and queue throughput of one
 * device, through libcnuasdev, so the same code measures every backend.
 * SPEC is a cnuasdev_open spec ("pcie:0", "host:0", "soft"; "" or absent:
 * the environment or automatic selection); SECONDS (default 1) is how long
 * each point repeats its operation.
 *
 * Points, each at 4 KiB, 64 KiB and 1 MiB, to and from the device:
 *   copy      cnuasdev_copy_to / cnuasdev_copy_from, one call per transfer
 *   zerocopy  memcpy() into / out of a cnuasdev_map of the allocation
 *             (needs zerocopy)
 *   pinned    asynchronous COPY_TO_DEV / COPY_FROM_DEV ops with
 *             CNUASDEV_OP_F_PINNED on a pinned buffer: batches of
 *             min(batch_max, 4 MiB / size) ops, one submit and one wait for
 *             the last (needs pinned and async)
 * and the asynchronous queue's ops/s with 4 KiB COPY_TO_DEV ops (unpinned),
 * one submit and one wait per batch, at batch 1 and at batch_max (needs async).
 *
 * Every point checks its data before it is printed: after a "to" point the
 * device's bytes (read with a copy) must have the digest of what was sent;
 * after a "from" point the buffer read into must have the digest of what the
 * device holds; every completion must be in order with status 0.
 *
 * Output, one line each:
 *   info KEY=VALUE ...                 the device
 *   bench NAME VALUE UNIT KEY=VALUE    a checked figure: NAME is
 *                                      copyToDev.64k, zerocopyFromDev.1M,
 *                                      pinnedToDev.4k, async.b32, ...;
 *                                      UNIT MiB/s or ops/s
 *   skip MODE needs=CAP,...            a mode the device lacks a capability for
 *   PASS                               last, when every check passed
 * A failed check prints "FAIL ..." on stderr and no figure for its point;
 * the exit code is then 1 (2: cannot run: usage, open, allocation).
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <time.h>

#include "cnuasdev_test.h"

#define MIB		(1024.0 * 1024.0)
#define MAX_SIZE	(1u << 20)
/* The bytes a pinned batch moves at most (fewer ops of a large size). */
#define PINNED_BATCH_BYTES	(4u << 20)
/* The size of one op of the queue-throughput points. */
#define ASYNC_OP	4096u
#define WAIT_MS		10000u

static const struct { size_t size; const char *name; } sizes[] = {
	{ 4096, "4k" }, { 65536, "64k" }, { MAX_SIZE, "1M" },
};

enum mode { COPY, ZEROCOPY, PINNED };
static const char *const mode_names[] = { "copy", "zerocopy", "pinned" };

static struct cnuasdev *dev;
static struct cnuasdev_props props;
static struct cnuasdev_mem mem;
static uint8_t *map;		/* the allocation, mapped (zerocopy) */
static uint8_t *pinbuf;		/* MAX_SIZE bytes, pinned as pin_handle (pinned) */
static uint32_t pin_handle;
static uint8_t *src, *dst;	/* MAX_SIZE bytes each, plain malloc */
static struct cnuasdev_completion *comps;	/* batch_max of them */
static struct cnuasdev_op *ops;			/* batch_max of them */
static double seconds = 1.0;
static uint64_t next_ud = 1;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Keep the compiler from dropping or merging memcpy()s into memory it cannot see read. */
static inline void barrier(void)
{
	__asm__ __volatile__("" ::: "memory");
}

/*
 * Submit @n ops (ops[0..n)), wait for the last, take and check the @n
 * completions.  Returns 0 or a negative code (a check failed: printed).
 */
static int run_batch(uint32_t n, const char *what)
{
	struct cnuasdev_queue_state st;
	uint64_t first = 0;
	uint32_t got = 0;
	int rc;

	for (uint32_t i = 0; i < n; i++)
		ops[i].user_data = next_ud++;
	rc = cnuasdev_submit(dev, ops, n, &first);
	CHECK(rc == 0, "%s: submit %u: %s", what, n, E(rc));
	if (rc)
		return rc;
	rc = cnuasdev_wait(dev, first + n - 1, WAIT_MS, comps, n, &got, &st);
	CHECK(rc == 0 && got == n, "%s: wait %" PRIu64 ": %s, %u of %u completions", what,
	      first + n - 1, E(rc), got, n);
	if (rc)
		return rc;
	if (got != n)
		return -EIO;
	for (uint32_t i = 0; i < n; i++) {
		int ok = comps[i].seq == first + i && comps[i].status == 0 &&
			 comps[i].user_data == ops[i].user_data &&
			 comps[i].opcode == ops[i].opcode;

		CHECK(ok, "%s: completion %u: seq %" PRIu64 " (want %" PRIu64 ") status %s "
		      "user_data %" PRIu64 " (want %" PRIu64 ")", what, i, comps[i].seq,
		      first + i, E(comps[i].status), comps[i].user_data, ops[i].user_data);
		if (!ok)
			return -EIO;
	}
	return 0;
}

/* Ops per submit of a pinned point of @size bytes. */
static uint32_t pinned_batch(size_t size)
{
	uint32_t n = (uint32_t)(PINNED_BATCH_BYTES / size);

	if (n > props.batch_max)
		n = props.batch_max;
	return n ? n : 1;
}

/*
 * One repetition of point (@m, @to, @size): returns the bytes moved, or a
 * negative code (a check failed: printed).
 */
static int64_t once(enum mode m, int to, size_t size)
{
	uint32_t n;
	int rc;

	switch (m) {
	case COPY:
		rc = to ? cnuasdev_copy_to(dev, mem.handle, 0, src, size)
			: cnuasdev_copy_from(dev, mem.handle, 0, dst, size);
		CHECK(rc == 0, "copy_%s %zu: %s", to ? "to" : "from", size, E(rc));
		return rc ? rc : (int64_t)size;
	case ZEROCOPY:
		if (to)
			memcpy(map, src, size);
		else
			memcpy(dst, map, size);
		barrier();
		return (int64_t)size;
	case PINNED:
		n = pinned_batch(size);
		for (uint32_t i = 0; i < n; i++) {
			struct cnuasdev_op o = {
				.opcode = to ? CNUASDEV_OP_COPY_TO_DEV : CNUASDEV_OP_COPY_FROM_DEV,
				.flags = CNUASDEV_OP_F_PINNED,
				.handle = mem.handle,
				.pin_handle = pin_handle,
				.offset = 0,
				.host = 0,
				.length = size,
			};
			ops[i] = o;
		}
		rc = run_batch(n, to ? "pinnedToDev" : "pinnedFromDev");
		return rc ? rc : (int64_t)size * n;
	}
	return -EINVAL;
}

/* Device bytes [0, @size) read with a copy into @buf; 0 or the code. */
static int read_dev(void *buf, size_t size)
{
	int rc;

	memset(buf, 0xee, size);
	rc = cnuasdev_copy_from(dev, mem.handle, 0, buf, size);
	CHECK(rc == 0, "copy_from for a digest: %s", E(rc));
	return rc;
}

/* One point: set up, warm up once, repeat for `seconds`, check, print. */
static void point(enum mode m, int to, size_t size, const char *size_name, uint32_t salt)
{
	/* The host side: where a "to" point reads, a "from" point writes. */
	uint8_t *host = m == PINNED ? pinbuf : to ? src : dst;
	uint8_t *check = malloc(size);
	uint64_t iters = 0, bytes = 0, want, got;
	char name[64];
	double t0, t;
	int64_t r;
	int rc;

	if (!check)
		exit(2);
	snprintf(name, sizeof(name), "%s%s.%s", mode_names[m], to ? "ToDev" : "FromDev",
		 size_name);
	/* what the device holds before: zeros before a "to", the pattern before a "from" */
	pattern(check, size, salt);
	if (to) {
		pattern(host, size, salt);
		rc = cnuasdev_fill(dev, mem.handle, 0, 0, size);
	} else {
		memset(host, 0xee, size);
		rc = cnuasdev_copy_to(dev, mem.handle, 0, check, size);
	}
	CHECK(rc == 0, "%s: setting the device up: %s", name, E(rc));
	if (rc)
		goto out;
	want = digest(check, size);
	r = once(m, to, size);		/* warm-up, not timed */
	if (r < 0)
		goto out;
	t0 = now();
	do {
		r = once(m, to, size);
		if (r < 0)
			goto out;
		bytes += (uint64_t)r;
		iters++;
		t = now() - t0;
	} while (t < seconds || iters < 2);
	if (to) {
		if (read_dev(check, size))
			goto out;
		got = digest(check, size);
	} else {
		got = digest(host, size);
	}
	CHECK(got == want, "%s: digest %016" PRIx64 ", expected %016" PRIx64
	      " (the data did not arrive)", name, got, want);
	if (got != want)
		goto out;
	printf("bench %s %.1f MiB/s iters=%" PRIu64 " bytes=%" PRIu64 " sec=%.3f digest=%016"
	       PRIx64 "\n", name, (double)bytes / MIB / t, iters, bytes, t, got);
	fflush(stdout);
out:
	free(check);
}

/*
 * Queue throughput at batch @b: 4 KiB COPY_TO_DEV ops, op k to chunk k of
 * the allocation (round robin) from the same chunk of src.  The chunks
 * written must then hold src's bytes.
 */
static void async_point(uint32_t b)
{
	uint32_t chunks = MAX_SIZE / ASYNC_OP, k = 0;
	uint64_t nops = 0, want, got;
	size_t touched;
	char name[32];
	double t0, t;
	int rc;

	snprintf(name, sizeof(name), "async.b%u", b);
	pattern(src, MAX_SIZE, 99);
	rc = cnuasdev_fill(dev, mem.handle, 0, 0, MAX_SIZE);
	CHECK(rc == 0, "%s: zeroing the device: %s", name, E(rc));
	if (rc)
		return;
	t0 = now();
	do {
		for (uint32_t i = 0; i < b; i++, k = (k + 1) % chunks) {
			struct cnuasdev_op o = {
				.opcode = CNUASDEV_OP_COPY_TO_DEV,
				.handle = mem.handle,
				.offset = (uint64_t)k * ASYNC_OP,
				.host = (uintptr_t)(src + (size_t)k * ASYNC_OP),
				.length = ASYNC_OP,
			};
			ops[i] = o;
		}
		if (run_batch(b, name))
			return;
		nops += b;
		t = now() - t0;
	} while (t < seconds || nops < 2 * (uint64_t)b);
	touched = (size_t)(nops < chunks ? nops : chunks) * ASYNC_OP;
	want = digest(src, touched);
	if (read_dev(dst, touched))
		return;
	got = digest(dst, touched);
	CHECK(got == want, "%s: digest of the %zu bytes written %016" PRIx64 ", expected %016"
	      PRIx64, name, touched, got, want);
	if (got != want)
		return;
	printf("bench %s %.1f ops/s ops=%" PRIu64 " op_bytes=%u sec=%.3f digest=%016" PRIx64
	       "\n", name, (double)nops / t, nops, ASYNC_OP, t, got);
	fflush(stdout);
}

/* "skip MODE needs=..." when @caps are not all there; 1 when they are. */
static int have(const char *mode, uint32_t caps)
{
	static const struct { uint32_t bit; const char *name; } all[] = {
		{ CNUASDEV_CAP_ZEROCOPY, "zerocopy" }, { CNUASDEV_CAP_PINNED, "pinned" },
		{ CNUASDEV_CAP_ASYNC, "async" },
	};
	uint32_t missing = caps & ~props.caps;
	const char *sep = "";

	if (!missing)
		return 1;
	printf("skip %s needs=", mode);
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		if (missing & all[i].bit) {
			printf("%s%s", sep, all[i].name);
			sep = ",";
		}
	}
	printf("\n");
	return 0;
}

static void modes(enum mode m)
{
	uint32_t salt = (uint32_t)m * 16;

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		point(m, 1, sizes[s].size, sizes[s].name, salt + (uint32_t)s);
		point(m, 0, sizes[s].size, sizes[s].name, salt + 8 + (uint32_t)s);
	}
}

int main(int argc, char **argv)
{
	const char *spec = argc > 1 && argv[1][0] ? argv[1] : NULL;
	char *end;
	int rc;

	if (argc > 3 || (argc == 3 && ((seconds = strtod(argv[2], &end)) <= 0 || *end ||
				       seconds > 60))) {
		fprintf(stderr, "usage: cnuasdev_bench [SPEC [SECONDS (0..60]]]\n");
		return 2;
	}
	rc = cnuasdev_open(spec, 0, &dev);
	if (rc) {
		fprintf(stderr, "cnuasdev_open %s: %s\n", spec ? spec : "(env/auto)", E(rc));
		return 2;
	}
	props.size = sizeof(props);
	rc = cnuasdev_query(dev, &props);
	if (rc) {
		fprintf(stderr, "cnuasdev_query: %s\n", E(rc));
		return 2;
	}
	printf("info backend=%s name=%s version=%s caps=0x%x queue_depth=%u batch_max=%u "
	       "pinned_max=%" PRIu64 " seconds=%.3f\n", cnuasdev_backend_name(props.backend),
	       props.name, cnuasdev_version(), props.caps, props.queue_depth, props.batch_max,
	       props.pinned_max, seconds);
	src = malloc(MAX_SIZE);
	dst = malloc(MAX_SIZE);
	rc = cnuasdev_alloc(dev, MAX_SIZE, 0, 0, &mem);
	if (!src || !dst || rc) {
		fprintf(stderr, "allocating %u bytes: %s\n", MAX_SIZE, E(rc));
		return 2;
	}
	if (props.caps & CNUASDEV_CAP_ASYNC) {
		ops = calloc(props.batch_max, sizeof(*ops));
		comps = calloc(props.batch_max, sizeof(*comps));
		if (!ops || !comps || !props.batch_max) {
			fprintf(stderr, "batch_max %u: no memory for a batch\n", props.batch_max);
			return 2;
		}
	}

	modes(COPY);

	if (have("zerocopy", CNUASDEV_CAP_ZEROCOPY)) {
		void *p = NULL;

		rc = cnuasdev_map(dev, &mem, &p);
		CHECK(rc == 0, "map: %s", E(rc));
		if (!rc) {
			map = p;
			modes(ZEROCOPY);
			rc = cnuasdev_unmap(map, mem.size);
			CHECK(rc == 0, "unmap: %s", E(rc));
		}
	}

	if (have("pinned", CNUASDEV_CAP_PINNED | CNUASDEV_CAP_ASYNC)) {
		pinbuf = mmap(NULL, MAX_SIZE, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (pinbuf == MAP_FAILED) {
			fprintf(stderr, "mmap %u bytes for the pinned buffer failed\n", MAX_SIZE);
			return 2;
		}
		rc = cnuasdev_pin(dev, pinbuf, MAX_SIZE, &pin_handle);
		CHECK(rc == 0, "pin %u bytes (pinned_max %" PRIu64 "): %s", MAX_SIZE,
		      props.pinned_max, E(rc));
		if (!rc) {
			modes(PINNED);
			rc = cnuasdev_unpin(dev, pin_handle);
			CHECK(rc == 0, "unpin: %s", E(rc));
		}
		munmap(pinbuf, MAX_SIZE);
	}

	if (have("async", CNUASDEV_CAP_ASYNC)) {
		async_point(1);
		if (props.batch_max > 1)
			async_point(props.batch_max);
	}

	rc = cnuasdev_free(dev, mem.handle);
	CHECK(rc == 0, "free: %s", E(rc));
	rc = cnuasdev_close(dev);
	CHECK(rc == 0, "close: %s", E(rc));
	free(src);
	free(dst);
	free(ops);
	free(comps);
	if (failures) {
		fprintf(stderr, "FAIL %d of %lu checks\n", failures, checks);
		return 1;
	}
	printf("PASS\n");
	return 0;
}
