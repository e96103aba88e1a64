// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * cnuasdev_suite [SPEC]: the libcnuasdev cases, the same on every backend.
 * SPEC is a cnuasdev_open spec ("pcie:0", "host:0", "soft"); without it the
 * environment (CNUASDEV_DEVICE, CNUASDEV_BACKEND) or automatic selection
 * decides.
 *
 * Output, one line each:
 *   info KEY=VALUE ...       about this device (differs across backends)
 *   case NAME KEY=VALUE ...  a case's observable results: sizes, offsets,
 *                            digests of contents, error names.  Two backends
 *                            that both ran NAME must print the same line.
 *   skip NAME needs=CAP,...  the device lacks a capability the case needs
 *   suite cases=N skipped=N failed=N
 * A check that fails prints "FAIL ..." on stderr; the exit code is then 1.
 * The device must be idle (no allocations): offsets are printed as they are.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cnuasdev_test.h"

static struct cnuasdev *dev;
static struct cnuasdev_props props;
static uint64_t page;
static int ncases, nskips;

/* The line of the case being run. */
static char line[2048];
static size_t line_len;

static void kv(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void kv(const char *key, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (line_len >= sizeof(line) - 2)
		return;
	n = snprintf(line + line_len, sizeof(line) - line_len, " %s=", key);
	if (n > 0)
		line_len += (size_t)n;
	va_start(ap, fmt);
	n = vsnprintf(line + line_len, sizeof(line) - line_len, fmt, ap);
	va_end(ap);
	if (n > 0)
		line_len += (size_t)n;
	if (line_len >= sizeof(line))
		line_len = sizeof(line) - 1;
}

/* Record error code @rc under @key and check it is @want. */
static void code(const char *key, int rc, int want)
{
	kv(key, "%s", E(rc));
	CHECK(rc == want, "%s: %s, expected %s", key, E(rc), E(want));
}

static void yes(const char *key, int cond)
{
	kv(key, "%s", cond ? "yes" : "no");
	CHECK(cond, "%s", key);
}

static const char *cap_names(uint32_t caps, char *buf, size_t len)
{
	static const struct { uint32_t bit; const char *name; } all[] = {
		{ CNUASDEV_CAP_ZEROCOPY, "zerocopy" }, { CNUASDEV_CAP_PINNED, "pinned" },
		{ CNUASDEV_CAP_DMABUF, "dmabuf" }, { CNUASDEV_CAP_ASYNC, "async" },
		{ CNUASDEV_CAP_LINK, "link" }, { CNUASDEV_CAP_PEER_RDMA, "peer_rdma" },
		{ CNUASDEV_CAP_DMABUF_IMPORT, "dmabuf_import" },
		{ CNUASDEV_CAP_POLLFD, "pollfd" },
	};
	size_t n = 0;

	buf[0] = 0;
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (caps & all[i].bit)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "," : "",
					      all[i].name);
	if (!n)
		snprintf(buf, len, "none");
	return buf;
}

/* Start case @name; 0 (after a skip line) when the device lacks @caps. */
static int begin(const char *name, uint32_t caps)
{
	char buf[128];

	line_len = 0;
	line[0] = 0;
	if ((props.caps & caps) != caps) {
		printf("skip %s needs=%s\n", name, cap_names(caps & ~props.caps, buf, sizeof(buf)));
		nskips++;
		return 0;
	}
	ncases++;
	return 1;
}

static void end(const char *name)
{
	printf("case %s%s\n", name, line);
	fflush(stdout);
}

static uint64_t used(struct cnuasdev *d)
{
	struct cnuasdev_props p = { .size = sizeof(p) };
	int rc = cnuasdev_query(d, &p);

	CHECK(rc == 0, "query: %s", E(rc));
	return p.devmem_used;
}

/*
 * devmem_used once it has come back to @want, or what it is after 5 s. Closing a file returns
 * without waiting for its running op (docs/devices.md, "Asynchronous queues"): what that op holds
 * comes back when it stops at its next 64 KiB, a moment after close on a busy guest.
 */
static uint64_t used_settled(struct cnuasdev *d, uint64_t want)
{
	uint64_t u = used(d);

	for (int i = 0; i < 500 && u != want; i++) {
		usleep(10 * 1000);
		u = used(d);
	}
	return u;
}

/* Digest of @len bytes of @handle at @off, read with a copy. */
static uint64_t dev_digest(struct cnuasdev *d, uint32_t handle, uint64_t off, size_t len)
{
	uint8_t *buf = malloc(len);
	uint64_t h;
	int rc;

	if (!buf)
		exit(2);
	memset(buf, 0xee, len);
	rc = cnuasdev_copy_from(d, handle, off, buf, len);
	CHECK(rc == 0, "copy_from for a digest: %s", E(rc));
	h = digest(buf, len);
	free(buf);
	return h;
}

static uint64_t zero_digest(size_t len)
{
	uint8_t *z = calloc(1, len);
	uint64_t h;

	if (!z)
		exit(2);
	h = digest(z, len);
	free(z);
	return h;
}

static struct cnuasdev_mem must_alloc(struct cnuasdev *d, uint64_t size, uint64_t align)
{
	struct cnuasdev_mem m;
	int rc = cnuasdev_alloc(d, size, align, 0, &m);

	if (rc) {
		fprintf(stderr, "FAIL alloc %" PRIu64 ": %s\n", size, E(rc));
		failures++;
		memset(&m, 0, sizeof(m));
		m.handle = 0x7ffffff0;
	}
	return m;
}

static void must_free(struct cnuasdev *d, uint32_t handle)
{
	int rc = cnuasdev_free(d, handle);

	CHECK(rc == 0, "free: %s", E(rc));
}

/* An allocation that must fail with @want; one that works anyway is freed again. */
static void alloc_fails(const char *key, uint64_t size, uint64_t align, uint32_t flags,
			int want)
{
	struct cnuasdev_mem m;
	int rc = cnuasdev_alloc(dev, size, align, flags, &m);

	code(key, rc, want);
	if (!rc)
		cnuasdev_free(dev, m.handle);
}

static struct cnuasdev *open_again(void)
{
	struct cnuasdev *d = NULL;
	int rc = cnuasdev_open(props.name, 0, &d);

	if (rc) {
		fprintf(stderr, "FAIL open %s again: %s\n", props.name, E(rc));
		exit(1);
	}
	return d;
}

/* Anonymous memory of @len bytes with protection @prot, or exit. */
static void *anon(size_t len, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	return p;
}

/* An address where nothing is mapped. */
static void *hole(void)
{
	void *p = anon(2 * page, PROT_READ);

	munmap(p, 2 * page);
	return p;
}

/* A handle no open device has. */
#define BAD_HANDLE	0x7ffffff0u

/* ---- identity, opens ---------------------------------------------------------------- */

static void case_props(void)
{
	if (!begin("props", 0))
		return;
	kv("page_size", "%u", props.page_size);
	kv("abi", "%u", props.abi_version);
	kv("fw", "0x%08x", props.fw_version);
	yes("limit_in_size", props.alloc_limit <= props.devmem_size && props.alloc_limit > 0);
	yes("idle", props.devmem_used == 0);
	yes("pinned_max_iff_cap", !!props.pinned_max == !!(props.caps & CNUASDEV_CAP_PINNED));
	yes("queue_iff_cap", !!props.queue_depth == !!(props.caps & CNUASDEV_CAP_ASYNC) &&
	    props.batch_max <= props.queue_depth);
	end("props");
}

static void case_two_opens(void)
{
	struct cnuasdev_mem a, b;
	struct cnuasdev *other;
	uint8_t buf[16];

	if (!begin("open.second", 0))
		return;
	other = open_again();
	a = must_alloc(dev, 8192, 0);
	kv("used_seen_by_other", "%" PRIu64, used(other));
	code("copy_other_handle", cnuasdev_copy_to(other, a.handle, 0, buf, sizeof(buf)),
	     -ENOENT);
	code("free_other_handle", cnuasdev_free(other, a.handle), -ENOENT);
	b = must_alloc(other, 4096, 0);
	kv("other_offset", "%" PRIu64, b.offset);
	code("close_other", cnuasdev_close(other), 0);
	kv("used_after_close", "%" PRIu64, used(dev));
	must_free(dev, a.handle);
	kv("used_end", "%" PRIu64, used(dev));
	end("open.second");
}

/* ---- allocator ------------------------------------------------------------------------- */

static void case_alloc_round(void)
{
	static const uint64_t req[] = { 1, 4096, 4097, 3 * 4096 + 1, 65536 };
	struct cnuasdev_mem m[5];
	char key[16];

	if (!begin("alloc.round", 0))
		return;
	for (int i = 0; i < 5; i++) {
		m[i] = must_alloc(dev, req[i], 0);
		snprintf(key, sizeof(key), "r%" PRIu64, req[i]);
		kv(key, "%" PRIu64 "@%" PRIu64, m[i].size, m[i].offset);
	}
	CHECK(m[3].size == 4 * page, "3 pages + 1 rounds to 4 pages");
	kv("used", "%" PRIu64, used(dev));
	for (int i = 4; i >= 0; i--)
		must_free(dev, m[i].handle);
	kv("used_end", "%" PRIu64, used(dev));
	end("alloc.round");
}

static void case_alloc_align(void)
{
	struct cnuasdev_mem a, b, c, d;

	if (!begin("alloc.align", 0))
		return;
	a = must_alloc(dev, 4096, 0);
	b = must_alloc(dev, 4096, 65536);
	c = must_alloc(dev, 4096, 1 << 20);
	kv("offsets", "%" PRIu64 ",%" PRIu64 ",%" PRIu64, a.offset, b.offset, c.offset);
	CHECK(b.offset % 65536 == 0 && c.offset % (1 << 20) == 0, "aligned");
	kv("used", "%" PRIu64, used(dev));
	alloc_fails("align1g_behind", 1, 1ull << 30, 0, -ENOMEM);
	must_free(dev, c.handle);
	must_free(dev, b.handle);
	must_free(dev, a.handle);
	code("align1g_empty", cnuasdev_alloc(dev, 4096, 1ull << 30, 0, &d), 0);
	kv("align1g_offset", "%" PRIu64, d.offset);
	must_free(dev, d.handle);
	end("alloc.align");
}

static void case_alloc_bad(void)
{
	if (!begin("alloc.bad", 0))
		return;
	alloc_fails("size0", 0, 0, 0, -EINVAL);
	alloc_fails("align3", 4096, 3, 0, -EINVAL);
	alloc_fails("align_half_page", 4096, page / 2, 0, -EINVAL);
	alloc_fails("align2g", 4096, 2ull << 30, 0, -EINVAL);
	alloc_fails("flags", 4096, 0, 0x80, -EINVAL);
	code("null_mem", cnuasdev_alloc(dev, 4096, 0, 0, NULL), -EINVAL);
	alloc_fails("past_limit", props.alloc_limit + 1, 0, 0, -ENOMEM);
	alloc_fails("huge", UINT64_MAX, 0, 0, -ENOMEM);
	alloc_fails("huge_bad_align", UINT64_MAX, 3, 0, -EINVAL);
	alloc_fails("size0_bad_align", 0, 3, 0, -EINVAL);
	kv("used", "%" PRIu64, used(dev));
	end("alloc.bad");
}

static void case_alloc_zero(void)
{
	size_t len = 65536;
	struct cnuasdev_mem a, b;
	uint8_t *buf = malloc(len);

	if (!buf || !begin("alloc.zero", 0)) {
		free(buf);
		return;
	}
	a = must_alloc(dev, len, 0);
	yes("new_reads_zero", dev_digest(dev, a.handle, 0, len) == zero_digest(len));
	pattern(buf, len, 9);
	code("write", cnuasdev_copy_to(dev, a.handle, 0, buf, len), 0);
	must_free(dev, a.handle);
	b = must_alloc(dev, len, 0);
	yes("same_offset", a.offset == b.offset);
	yes("reused_reads_zero", dev_digest(dev, b.handle, 0, len) == zero_digest(len));
	must_free(dev, b.handle);
	free(buf);
	end("alloc.zero");
}

static void case_alloc_bump(void)
{
	struct cnuasdev_mem a, b, c, d, e;

	if (!begin("alloc.bump", 0))
		return;
	a = must_alloc(dev, 4096, 0);
	b = must_alloc(dev, 4096, 0);
	c = must_alloc(dev, 4096, 0);
	must_free(dev, b.handle);
	d = must_alloc(dev, 4096, 0);
	kv("after_hole", "%" PRIu64, d.offset);
	kv("used", "%" PRIu64, used(dev));
	must_free(dev, d.handle);
	must_free(dev, c.handle);
	e = must_alloc(dev, 4096, 0);
	kv("after_top_freed", "%" PRIu64, e.offset);
	must_free(dev, e.handle);
	must_free(dev, a.handle);
	kv("used_end", "%" PRIu64, used(dev));
	end("alloc.bump");
}

/* All of alloc_limit, and not a page more; its last page holds data. */
static void case_alloc_full(void)
{
	uint8_t src[4096], dst[4096];
	struct cnuasdev_mem all;
	int rc;

	if (!begin("alloc.full", 0))
		return;
	rc = cnuasdev_alloc(dev, props.alloc_limit, 0, CNUASDEV_ALLOC_NOZERO, &all);
	code("all", rc, 0);
	if (!rc) {
		yes("size_is_limit", all.size == props.alloc_limit);
		alloc_fails("one_more_page", 4096, 0, 0, -ENOMEM);
		pattern(src, sizeof(src), 4);
		memset(dst, 0, sizeof(dst));
		code("last_page_write",
		     cnuasdev_copy_to(dev, all.handle, all.size - 4096, src, 4096), 0);
		code("last_page_read",
		     cnuasdev_copy_from(dev, all.handle, all.size - 4096, dst, 4096), 0);
		yes("last_page_holds", !memcmp(src, dst, 4096));
		yes("used_is_limit", used(dev) == props.alloc_limit);
		must_free(dev, all.handle);
	}
	kv("used_end", "%" PRIu64, used(dev));
	end("alloc.full");
}

/* ---- copies and fill ------------------------------------------------------------------ */

static void case_copy_roundtrip(void)
{
	size_t len = 1 << 20;
	uint8_t *src = malloc(len), *dst = malloc(len);
	struct cnuasdev_mem a;

	if (!src || !dst || !begin("copy.roundtrip", 0)) {
		free(src);
		free(dst);
		return;
	}
	a = must_alloc(dev, len, 0);
	pattern(src, len, 1);
	code("to", cnuasdev_copy_to(dev, a.handle, 0, src, len), 0);
	memset(dst, 0, len);
	code("from", cnuasdev_copy_from(dev, a.handle, 0, dst, len), 0);
	yes("same", !memcmp(src, dst, len));
	kv("digest", "%016" PRIx64, digest(dst, len));
	pattern(src, 4096, 2);
	code("to_at_12345", cnuasdev_copy_to(dev, a.handle, 12345, src, 4096), 0);
	kv("digest_12000_5000", "%016" PRIx64, dev_digest(dev, a.handle, 12000, 5000));
	code("to_across_64k", cnuasdev_copy_to(dev, a.handle, 65535, "xyz", 3), 0);
	kv("digest_65530_16", "%016" PRIx64, dev_digest(dev, a.handle, 65530, 16));
	code("last_byte", cnuasdev_copy_to(dev, a.handle, len - 1, "!", 1), 0);
	kv("digest_all", "%016" PRIx64, dev_digest(dev, a.handle, 0, len));
	must_free(dev, a.handle);
	free(src);
	free(dst);
	end("copy.roundtrip");
}

static void case_copy_bad(void)
{
	uint8_t buf[8192 + 16];
	struct cnuasdev_mem a, f;
	uint8_t *ro;

	if (!begin("copy.bad", 0))
		return;
	a = must_alloc(dev, 8192, 0);
	memset(buf, 1, sizeof(buf));
	code("size0", cnuasdev_copy_to(dev, a.handle, 0, buf, 0), -EINVAL);
	code("at_end", cnuasdev_copy_to(dev, a.handle, 8192, buf, 1), -EINVAL);
	code("past_end", cnuasdev_copy_to(dev, a.handle, 8191, buf, 2), -EINVAL);
	code("too_long", cnuasdev_copy_from(dev, a.handle, 0, buf, 8193), -EINVAL);
	code("offset_max", cnuasdev_copy_to(dev, a.handle, UINT64_MAX, buf, 1), -EINVAL);
	code("size_max", cnuasdev_copy_from(dev, a.handle, 1, buf, UINT64_MAX), -EINVAL);
	code("bad_handle", cnuasdev_copy_to(dev, BAD_HANDLE, 0, buf, 1), -ENOENT);
	code("bad_handle_size0", cnuasdev_copy_to(dev, BAD_HANDLE, 0, buf, 0), -EINVAL);
	code("bad_handle_past_end", cnuasdev_copy_to(dev, BAD_HANDLE, 1 << 30, buf, 1),
	     -ENOENT);
	code("null_src", cnuasdev_copy_to(dev, a.handle, 0, NULL, 16), -EFAULT);
	code("null_dst", cnuasdev_copy_from(dev, a.handle, 0, NULL, 16), -EFAULT);
	code("unmapped_src", cnuasdev_copy_to(dev, a.handle, 0, hole(), 16), -EFAULT);
	ro = anon(page, PROT_READ);
	code("readonly_dst", cnuasdev_copy_from(dev, a.handle, 0, ro, 16), -EFAULT);
	code("readonly_src", cnuasdev_copy_to(dev, a.handle, 0, ro, 16), 0);
	munmap(ro, page);
	f = must_alloc(dev, 4096, 0);
	must_free(dev, f.handle);
	code("freed_handle", cnuasdev_copy_from(dev, f.handle, 0, buf, 1), -ENOENT);
	code("null_dev", cnuasdev_copy_to(NULL, a.handle, 0, buf, 1), -EINVAL);
	must_free(dev, a.handle);
	code("free_again", cnuasdev_free(dev, a.handle), -ENOENT);
	code("free_bad", cnuasdev_free(dev, BAD_HANDLE), -ENOENT);
	kv("used_end", "%" PRIu64, used(dev));
	end("copy.bad");
}

static void case_fill(void)
{
	size_t len = 131072;
	struct cnuasdev_mem a;

	if (!begin("fill", 0))
		return;
	a = must_alloc(dev, len, 0);
	code("fill_5a", cnuasdev_fill(dev, a.handle, 100, 0x5a, 70000), 0);
	kv("digest", "%016" PRIx64, dev_digest(dev, a.handle, 0, len));
	code("fill_all_ff", cnuasdev_fill(dev, a.handle, 0, 0xff, len), 0);
	kv("digest_ff", "%016" PRIx64, dev_digest(dev, a.handle, 0, len));
	code("size0", cnuasdev_fill(dev, a.handle, 0, 1, 0), -EINVAL);
	code("past_end", cnuasdev_fill(dev, a.handle, len - 1, 1, 2), -EINVAL);
	code("offset_wrap", cnuasdev_fill(dev, a.handle, UINT64_MAX, 1, 2), -EINVAL);
	code("bad_handle", cnuasdev_fill(dev, BAD_HANDLE, 0, 1, 1), -ENOENT);
	code("bad_handle_size0", cnuasdev_fill(dev, BAD_HANDLE, 0, 1, 0), -EINVAL);
	kv("digest_after_errors", "%016" PRIx64, dev_digest(dev, a.handle, 0, len));
	must_free(dev, a.handle);
	end("fill");
}

/* ---- zerocopy ----------------------------------------------------------------------------- */

static void case_map_basic(void)
{
	size_t len = 65536;
	uint8_t *buf = malloc(len), *map = NULL;
	struct cnuasdev_mem a;
	int rc;

	if (!buf || !begin("map.basic", CNUASDEV_CAP_ZEROCOPY)) {
		free(buf);
		return;
	}
	a = must_alloc(dev, len, 0);
	pattern(buf, len, 5);
	code("to", cnuasdev_copy_to(dev, a.handle, 0, buf, len), 0);
	rc = cnuasdev_map(dev, &a, (void **)&map);
	code("map", rc, 0);
	if (!rc) {
		yes("map_sees_copy", !memcmp(map, buf, len));
		memset(map + 100, 0x77, 100);
		kv("copy_sees_map", "%016" PRIx64, dev_digest(dev, a.handle, 0, len));
		code("unmap", cnuasdev_unmap(map, len), 0);
		code("unmap_again", cnuasdev_unmap(map, len), -EINVAL);
	}
	code("unmap_unknown", cnuasdev_unmap(buf, len), -EINVAL);
	code("null_ptr", cnuasdev_map(dev, &a, NULL), -EINVAL);
	must_free(dev, a.handle);
	kv("used_end", "%" PRIu64, used(dev));
	free(buf);
	end("map.basic");
}

static void case_map_lifetime(void)
{
	struct cnuasdev_mem a, b, sub, bad, mo;
	struct cnuasdev *other;
	uint8_t *map = NULL, *smap = NULL, *omap = NULL, buf[16];
	int rc;

	if (!begin("map.lifetime", CNUASDEV_CAP_ZEROCOPY))
		return;
	a = must_alloc(dev, 16384, 0);
	rc = cnuasdev_map(dev, &a, (void **)&map);
	code("map", rc, 0);
	sub = a;
	sub.offset += 4096;
	sub.size = 4096;
	rc = cnuasdev_map(dev, &sub, (void **)&smap);
	code("map_subrange", rc, 0);
	if (!rc)
		code("unmap_subrange", cnuasdev_unmap(smap, 4096), 0);
	bad = a;
	bad.size = 2 * a.size;
	code("map_past_end", cnuasdev_map(dev, &bad, (void **)&smap), -EINVAL);
	bad = a;
	bad.size = 0;
	code("map_size0", cnuasdev_map(dev, &bad, (void **)&smap), -EINVAL);
	bad = a;
	bad.offset = a.offset + 1;
	code("map_unaligned", cnuasdev_map(dev, &bad, (void **)&smap), -EINVAL);
	bad = a;
	bad.offset = a.offset + (64ull << 20);
	bad.size = 4096;
	code("map_nothing_there", cnuasdev_map(dev, &bad, (void **)&smap), -EINVAL);

	must_free(dev, a.handle);
	kv("used_freed_mapped", "%" PRIu64, used(dev));
	code("copy_freed", cnuasdev_copy_from(dev, a.handle, 0, buf, 1), -ENOENT);
	code("map_freed", cnuasdev_map(dev, &a, (void **)&smap), -EINVAL);
	b = must_alloc(dev, 4096, 0);
	kv("next_offset", "%" PRIu64, b.offset);
	if (map) {
		map[5] = 42;	/* still mapped, still memory */
		code("unmap", cnuasdev_unmap(map, a.size), 0);
	}
	kv("used_unmapped", "%" PRIu64, used(dev));
	must_free(dev, b.handle);

	/* another open's allocation cannot be mapped here; its own mapping outlives it */
	other = open_again();
	mo = must_alloc(other, 8192, 0);
	code("map_other_open", cnuasdev_map(dev, &mo, (void **)&smap), -EINVAL);
	rc = cnuasdev_map(other, &mo, (void **)&omap);
	code("map_in_other", rc, 0);
	code("close_other", cnuasdev_close(other), 0);
	kv("used_closed_mapped", "%" PRIu64, used(dev));
	if (!rc) {
		omap[8191] = 7;
		yes("mapping_outlives_close", omap[8191] == 7);
		code("unmap_after_close", cnuasdev_unmap(omap, 8192), 0);
	}
	kv("used_end", "%" PRIu64, used(dev));
	end("map.lifetime");
}

/* ---- pinned -------------------------------------------------------------------------------- */

static void case_pin_basic(void)
{
	uint8_t *buf = anon(16 * page, PROT_READ | PROT_WRITE);
	struct cnuasdev_mem a;
	uint32_t h = 0, h2;

	if (!begin("pin.basic", CNUASDEV_CAP_PINNED)) {
		munmap(buf, 16 * page);
		return;
	}
	code("pin", cnuasdev_pin(dev, buf, 16 * page, &h), 0);
	code("unaligned_ptr", cnuasdev_pin(dev, buf + 1, page, &h2), -EINVAL);
	code("unaligned_len", cnuasdev_pin(dev, buf, page + 1, &h2), -EINVAL);
	code("len0", cnuasdev_pin(dev, buf, 0, &h2), -EINVAL);
	code("wraps", cnuasdev_pin(dev, (void *)(UINTPTR_MAX & ~(uintptr_t)(page - 1)),
				   2 * page, &h2), -EINVAL);
	code("null_handle", cnuasdev_pin(dev, buf, page, NULL), -EINVAL);
	code("free_pin", cnuasdev_free(dev, h), -ENOENT);
	code("copy_to_pin", cnuasdev_copy_to(dev, h, 0, buf, 1), -ENOENT);
	a = must_alloc(dev, 4096, 0);
	code("unpin_alloc", cnuasdev_unpin(dev, a.handle), -ENOENT);
	must_free(dev, a.handle);
	code("unpin", cnuasdev_unpin(dev, h), 0);
	code("unpin_again", cnuasdev_unpin(dev, h), -ENOENT);
	code("pin_twice_a", cnuasdev_pin(dev, buf, 4 * page, &h), 0);
	code("pin_twice_b", cnuasdev_pin(dev, buf, 4 * page, &h2), 0);
	code("unpin_a", cnuasdev_unpin(dev, h), 0);
	code("unpin_b", cnuasdev_unpin(dev, h2), 0);
	munmap(buf, 16 * page);
	end("pin.basic");
}

static void case_pin_ceiling(void)
{
	uint64_t max = props.pinned_max;
	uint8_t *big;
	uint32_t h1 = 0, h2 = 0, h3;
	int rc;

	if (!begin("pin.ceiling", CNUASDEV_CAP_PINNED))
		return;
	big = anon(max + page, PROT_READ | PROT_WRITE);
	rc = cnuasdev_pin(dev, big, max, &h1);
	code("all", rc, 0);
	code("one_page_more", cnuasdev_pin(dev, big, page, &h3), -ENOMEM);
	if (!rc)
		code("unpin_all", cnuasdev_unpin(dev, h1), 0);
	code("past_ceiling", cnuasdev_pin(dev, big, max + page, &h3), -ENOMEM);
	code("half_a", cnuasdev_pin(dev, big, max / 2, &h1), 0);
	code("half_b", cnuasdev_pin(dev, big + max / 2, max / 2, &h2), 0);
	code("third", cnuasdev_pin(dev, big, page, &h3), -ENOMEM);
	code("unpin_a", cnuasdev_unpin(dev, h1), 0);
	code("after_unpin", cnuasdev_pin(dev, big, page, &h3), 0);
	code("unpin_b", cnuasdev_unpin(dev, h2), 0);
	code("unpin_c", cnuasdev_unpin(dev, h3), 0);
	munmap(big, max + page);
	end("pin.ceiling");
}

static void case_pin_fault(void)
{
	uint8_t *ro = anon(2 * page, PROT_READ), *gap = anon(3 * page, PROT_READ | PROT_WRITE);
	uint8_t *ro_big = anon(props.pinned_max + page, PROT_READ);
	uint32_t h;

	if (!begin("pin.fault", CNUASDEV_CAP_PINNED))
		goto out;
	munmap(gap + page, page);
	code("readonly", cnuasdev_pin(dev, ro, 2 * page, &h), -EFAULT);
	code("gap", cnuasdev_pin(dev, gap, 3 * page, &h), -EFAULT);
	code("unmapped", cnuasdev_pin(dev, hole(), page, &h), -EFAULT);
	code("readonly_past_ceiling", cnuasdev_pin(dev, ro_big, props.pinned_max + page, &h),
	     -ENOMEM);
	if (props.caps & CNUASDEV_CAP_ZEROCOPY) {
		struct cnuasdev_mem a = must_alloc(dev, 8192, 0);
		void *map = NULL;

		if (!cnuasdev_map(dev, &a, &map)) {
			code("device_mapping", cnuasdev_pin(dev, map, 8192, &h), -EFAULT);
			cnuasdev_unmap(map, 8192);
		}
		must_free(dev, a.handle);
	}
	end("pin.fault");
out:
	munmap(ro, 2 * page);
	munmap(gap, 3 * page);
	munmap(ro_big, props.pinned_max + page);
}

/* ---- asynchronous queue ---------------------------------------------------------------------- */

static struct cnuasdev_op op_fill(uint32_t handle, uint64_t off, uint64_t len, uint32_t value,
				  uint64_t ud)
{
	struct cnuasdev_op o = {
		.opcode = CNUASDEV_OP_FILL, .handle = handle, .offset = off, .length = len,
		.value = value, .user_data = ud,
	};
	return o;
}

static struct cnuasdev_op op_copy(uint32_t opcode, uint32_t handle, uint64_t off, void *host,
				  uint64_t len, uint64_t ud)
{
	struct cnuasdev_op o = {
		.opcode = opcode, .handle = handle, .offset = off, .host = (uintptr_t)host,
		.length = len, .user_data = ud,
	};
	return o;
}

/* Wait for @seq and print every completion taken as seq:user_data:status:opcode. */
static void wait_print(struct cnuasdev *q, const char *key, uint64_t seq, uint32_t max)
{
	struct cnuasdev_completion c[64];
	struct cnuasdev_queue_state st = { 0, 0, 0 };
	uint32_t n = 0;
	char val[1024];
	size_t len = 0;
	int rc;

	rc = cnuasdev_wait(q, seq, 10000, c, max > 64 ? 64 : max, &n, &st);
	CHECK(rc == 0, "%s: wait %" PRIu64 ": %s", key, seq, E(rc));
	val[0] = 0;
	for (uint32_t i = 0; i < n && len < sizeof(val) - 64; i++)
		len += (size_t)snprintf(val + len, sizeof(val) - len, "%s%" PRIu64 ":%" PRIu64
					":%s:%u", i ? "," : "", c[i].seq, c[i].user_data,
					E(c[i].status), c[i].opcode);
	kv(key, "%s", n ? val : "none");
	kv("state", "%" PRIu64 "/%" PRIu64 "/%" PRIu64, st.submitted, st.completed, st.reaped);
}

static void case_async_basic(void)
{
	size_t len = 65536;
	uint8_t *src = malloc(len), *dst = malloc(len), *dst2 = malloc(len);
	struct cnuasdev_completion c[4];
	struct cnuasdev_queue_state st;
	struct cnuasdev_op ops[4];
	struct cnuasdev_mem a;
	struct cnuasdev *q;
	uint64_t first = 0;
	uint32_t n = 9;

	if (!src || !dst || !dst2 || !begin("async.basic", CNUASDEV_CAP_ASYNC))
		goto out;
	q = open_again();
	a = must_alloc(q, 4 * len, 0);
	pattern(src, len, 7);
	memset(dst, 0, len);
	memset(dst2, 0, len);
	ops[0] = op_copy(CNUASDEV_OP_COPY_TO_DEV, a.handle, 0, src, len, 11);
	ops[1] = op_fill(a.handle, len, len, 0xab, 12);
	ops[2] = op_copy(CNUASDEV_OP_COPY_FROM_DEV, a.handle, 0, dst, len, 13);
	ops[3] = op_copy(CNUASDEV_OP_COPY_FROM_DEV, a.handle, len, dst2, len, 14);
	code("submit", cnuasdev_submit(q, ops, 4, &first), 0);
	kv("first_seq", "%" PRIu64, first);
	wait_print(q, "done", first + 3, 8);
	yes("copied", !memcmp(src, dst, len));
	kv("digest_fill", "%016" PRIx64, digest(dst2, len));
	code("poll_empty", cnuasdev_poll(q, c, 4, &n, &st), 0);
	kv("poll", "%u,%" PRIu64 "/%" PRIu64 "/%" PRIu64, n, st.submitted, st.completed,
	   st.reaped);
	kv("digest_dev", "%016" PRIx64, dev_digest(q, a.handle, 0, 4 * len));
	code("close", cnuasdev_close(q), 0);
	kv("used_end", "%" PRIu64, used(dev));
	end("async.basic");
out:
	free(src);
	free(dst);
	free(dst2);
}

static void case_async_bad(void)
{
	uint32_t bm = props.batch_max;
	struct cnuasdev_op *many = calloc(bm + 1, sizeof(*many)), o[2];
	struct cnuasdev_completion c[1];
	struct cnuasdev_queue_state st;
	struct cnuasdev_mem a;
	struct cnuasdev *q;
	uint64_t first = 0;
	uint32_t n;
	uint8_t buf[64];

	if (!many || !begin("async.bad", CNUASDEV_CAP_ASYNC)) {
		free(many);
		return;
	}
	q = open_again();
	a = must_alloc(q, 8192, 0);
	for (uint32_t i = 0; i <= bm; i++)
		many[i] = op_fill(a.handle, 0, 1, 1, i);
	code("count0", cnuasdev_submit(q, many, 0, &first), -EINVAL);
	code("count_past_batch", cnuasdev_submit(q, many, bm + 1, &first), -EINVAL);
	code("null_seq", cnuasdev_submit(q, many, 1, NULL), -EINVAL);
#define BAD(key, field_expr, want)					\
	do {								\
		o[0] = op_copy(CNUASDEV_OP_COPY_TO_DEV, a.handle, 0, buf, 16, 1); \
		field_expr;						\
		code(key, cnuasdev_submit(q, o, 1, &first), want);	\
	} while (0)
	BAD("opcode0", o[0].opcode = 0, -EINVAL);
	BAD("opcode4", o[0].opcode = 4, -EINVAL);
	BAD("flags", o[0].flags = 0x2, -EINVAL);
	BAD("len0", o[0].length = 0, -EINVAL);
	BAD("reserved", o[0].reserved = 1, -EINVAL);
	BAD("copy_value", o[0].value = 1, -EINVAL);
	BAD("pin_handle_no_flag", o[0].pin_handle = 1, -EINVAL);
	BAD("host_wraps", (o[0].host = UINT64_MAX - 8, o[0].length = 64), -EINVAL);
	BAD("fill_value256", o[0] = op_fill(a.handle, 0, 1, 256, 1), -EINVAL);
	BAD("fill_host", (o[0] = op_fill(a.handle, 0, 1, 1, 1), o[0].host = 8), -EINVAL);
	BAD("at_end", o[0].offset = 8192, -EINVAL);
	BAD("past_end", (o[0].offset = 8000, o[0].length = 193), -EINVAL);
	BAD("bad_handle", o[0].handle = BAD_HANDLE, -ENOENT);
	BAD("bad_handle_past_end", (o[0].handle = BAD_HANDLE, o[0].offset = 1 << 30), -ENOENT);
	BAD("bad_handle_len0", (o[0].handle = BAD_HANDLE, o[0].length = 0), -EINVAL);
#undef BAD
	o[0] = op_fill(BAD_HANDLE, 0, 1, 1, 1);
	o[1] = op_fill(a.handle, 0, 1, 1, 1);
	o[1].opcode = 9;
	code("first_bad_decides_enoent", cnuasdev_submit(q, o, 2, &first), -ENOENT);
	o[0].handle = a.handle;
	o[0].opcode = 9;
	o[1] = op_fill(BAD_HANDLE, 0, 1, 1, 1);
	code("first_bad_decides_einval", cnuasdev_submit(q, o, 2, &first), -EINVAL);
	o[0] = op_fill(a.handle, 0, 1, 1, 1);
	code("good_then_bad", cnuasdev_submit(q, o, 2, &first), -ENOENT);
	code("poll", cnuasdev_poll(q, c, 1, &n, &st), 0);
	kv("nothing_queued", "%u,%" PRIu64 "/%" PRIu64 "/%" PRIu64, n, st.submitted,
	   st.completed, st.reaped);
	code("wait_seq0", cnuasdev_wait(q, 0, 0, c, 1, &n, &st), -EINVAL);
	code("wait_unsubmitted", cnuasdev_wait(q, 1, 0, c, 1, &n, &st), -EINVAL);
	code("poll_past_depth", cnuasdev_poll(q, c, props.queue_depth + 1, &n, &st), -EINVAL);
	code("poll_null_count", cnuasdev_poll(q, c, 1, NULL, &st), -EINVAL);
	code("submit", cnuasdev_submit(q, o, 1, &first), 0);
	kv("first_seq", "%" PRIu64, first);
	code("wait_past_last", cnuasdev_wait(q, 2, 0, c, 1, &n, &st), -EINVAL);
	code("wait_timeout_too_long",
	     cnuasdev_wait(q, 1, CNUASDEV_MAX_TIMEOUT_MS + 1, c, 1, &n, &st), -EINVAL);
	wait_print(q, "done", 1, 1);
	code("close", cnuasdev_close(q), 0);
	free(many);
	end("async.bad");
}

static void case_async_pinned(void)
{
	size_t len = 16 * page;
	uint8_t *buf = anon(len, PROT_READ | PROT_WRITE), ref[8192];
	struct cnuasdev_op o[2];
	struct cnuasdev_mem a;
	struct cnuasdev *q;
	uint64_t first = 0;
	uint32_t pin = 0;

	if (!begin("async.pinned", CNUASDEV_CAP_ASYNC | CNUASDEV_CAP_PINNED)) {
		munmap(buf, len);
		return;
	}
	q = open_again();
	a = must_alloc(q, 65536, 0);
	pattern(buf, len, 3);
	code("pin", cnuasdev_pin(q, buf, len, &pin), 0);
	o[0] = op_copy(CNUASDEV_OP_COPY_TO_DEV, a.handle, 0, NULL, 8192, 21);
	o[0].flags = CNUASDEV_OP_F_PINNED;
	o[0].pin_handle = pin;
	o[0].host = 4096;
	o[1] = op_copy(CNUASDEV_OP_COPY_FROM_DEV, a.handle, 0, NULL, 8192, 22);
	o[1].flags = CNUASDEV_OP_F_PINNED;
	o[1].pin_handle = pin;
	o[1].host = 32768;
	memcpy(ref, buf + 4096, 8192);
	code("submit", cnuasdev_submit(q, o, 2, &first), 0);
	wait_print(q, "done", first + 1, 2);
	yes("through_pin", !memcmp(buf + 32768, ref, 8192));
	kv("digest_dev", "%016" PRIx64, dev_digest(q, a.handle, 0, 8192));
	o[1].pin_handle = BAD_HANDLE;
	code("bad_pin", cnuasdev_submit(q, &o[1], 1, &first), -ENOENT);
	o[1].pin_handle = a.handle;
	code("alloc_as_pin", cnuasdev_submit(q, &o[1], 1, &first), -ENOENT);
	o[1].pin_handle = pin;
	o[1].host = len - 4096;
	code("past_pin", cnuasdev_submit(q, &o[1], 1, &first), -EINVAL);
	o[1] = op_fill(a.handle, 0, 1, 1, 1);
	o[1].flags = CNUASDEV_OP_F_PINNED;
	o[1].pin_handle = pin;
	code("fill_pinned", cnuasdev_submit(q, &o[1], 1, &first), -EINVAL);
	code("unpin", cnuasdev_unpin(q, pin), 0);
	o[0].pin_handle = pin;
	code("unpinned", cnuasdev_submit(q, o, 1, &first), -ENOENT);
	code("close", cnuasdev_close(q), 0);
	munmap(buf, len);
	end("async.pinned");
}

static void case_async_full(void)
{
	uint32_t depth = props.queue_depth, bm = props.batch_max, k, total = 0;
	struct cnuasdev_op *ops = calloc(bm, sizeof(*ops));
	struct cnuasdev_completion *c = calloc(depth, sizeof(*c));
	struct cnuasdev_queue_state st;
	struct cnuasdev_mem a;
	struct cnuasdev *q;
	uint64_t first = 0;
	uint32_t n = 0;
	int rc = 0;

	if (!ops || !c || !begin("async.full", CNUASDEV_CAP_ASYNC))
		goto out;
	q = open_again();
	a = must_alloc(q, 4096, 0);
	for (k = 0; k < bm; k++)
		ops[k] = op_fill(a.handle, k % 4096, 1, k & 0xff, k);
	while (!rc && total < depth) {
		k = depth - total < bm ? depth - total : bm;
		rc = cnuasdev_submit(q, ops, k, &first);
		total += rc ? 0 : k;
	}
	code("fill_to_depth", rc, 0);
	code("one_more", cnuasdev_submit(q, ops, 1, &first), -EAGAIN);
	code("take_one", cnuasdev_wait(q, depth, 10000, c, 1, &n, &st), 0);
	kv("took", "%u", n);
	code("room_for_one", cnuasdev_submit(q, ops, 1, &first), 0);
	yes("seq_continues", first == (uint64_t)depth + 1);
	code("full_again", cnuasdev_submit(q, ops, 1, &first), -EAGAIN);
	code("drain", cnuasdev_wait(q, depth + 1, 10000, c, depth, &n, &st), 0);
	yes("drained_all", n == depth);
	yes("in_order", n && c[0].seq == 2 && c[n - 1].seq == (uint64_t)depth + 1);
	kv("state_is_all", "%s", st.submitted == depth + 1 && st.reaped == depth + 1 ? "yes" : "no");
	code("close", cnuasdev_close(q), 0);
	end("async.full");
out:
	free(ops);
	free(c);
}

static void case_async_fault(void)
{
	uint8_t *ro = anon(page, PROT_READ);
	struct cnuasdev_op o[3];
	struct cnuasdev_mem a;
	struct cnuasdev *q;
	uint64_t first = 0;

	if (!begin("async.fault", CNUASDEV_CAP_ASYNC)) {
		munmap(ro, page);
		return;
	}
	q = open_again();
	a = must_alloc(q, 8192, 0);
	o[0] = op_copy(CNUASDEV_OP_COPY_TO_DEV, a.handle, 0, hole(), 64, 31);
	o[1] = op_copy(CNUASDEV_OP_COPY_FROM_DEV, a.handle, 0, ro, 64, 32);
	o[2] = op_fill(a.handle, 0, 8192, 0x11, 33);
	code("submit", cnuasdev_submit(q, o, 3, &first), 0);
	wait_print(q, "done", first + 2, 3);
	kv("digest_dev", "%016" PRIx64, dev_digest(q, a.handle, 0, 8192));
	code("close", cnuasdev_close(q), 0);
	munmap(ro, page);
	end("async.fault");
}

/* 40 fills in batches of up to 8, taken 3 at a time: sequence order throughout. */
static void case_async_order(void)
{
	uint32_t bm = props.batch_max < 8 ? props.batch_max : 8, done = 0, sent = 0, n;
	struct cnuasdev_completion c[3];
	struct cnuasdev_queue_state st;
	struct cnuasdev_op ops[8];
	struct cnuasdev_mem a;
	struct cnuasdev *q;
	uint64_t first = 0, expect = 1;
	int in_order = 1;

	if (!begin("async.order", CNUASDEV_CAP_ASYNC))
		return;
	q = open_again();
	a = must_alloc(q, 40 * 4096, 0);
	while (sent < 40) {
		uint32_t k = 40 - sent < bm ? 40 - sent : bm, i;
		int rc;

		for (i = 0; i < k; i++)
			ops[i] = op_fill(a.handle, (uint64_t)(sent + i) * 4096, 4096,
					 (sent + i) * 5 + 1, 1000 + sent + i);
		rc = cnuasdev_submit(q, ops, k, &first);
		if (rc == -EAGAIN && done < sent) {
			/* the queue is smaller than 40: take what is ready, then go on */
			rc = cnuasdev_wait(q, done + 1, 10000, c, 3, &n, &st);
			for (i = 0; !rc && i < n; i++, done++, expect++)
				in_order &= c[i].seq == expect && c[i].user_data == 999 + expect;
			continue;
		}
		CHECK(rc == 0, "submit: %s", E(rc));
		if (rc)
			break;
		sent += k;
	}
	while (done < sent) {
		int rc = cnuasdev_wait(q, done + 1, 10000, c, 3, &n, &st);

		CHECK(rc == 0, "wait: %s", E(rc));
		if (rc)
			break;
		for (uint32_t i = 0; i < n; i++, done++, expect++)
			in_order &= c[i].seq == expect && c[i].user_data == 999 + expect;
	}
	kv("taken", "%u", done);
	yes("in_order", in_order);
	kv("digest_dev", "%016" PRIx64, dev_digest(q, a.handle, 0, 40 * 4096));
	code("close", cnuasdev_close(q), 0);
	end("async.order");
}

/* FREE while an op on the allocation is queued; close with ops not taken. */
static void case_async_lifetime(void)
{
	struct cnuasdev_op o;
	struct cnuasdev_mem a;
	struct cnuasdev *q;
	uint64_t first = 0, before;

	if (!begin("async.lifetime", CNUASDEV_CAP_ASYNC))
		return;
	before = used(dev);
	q = open_again();
	a = must_alloc(q, 1 << 20, 0);
	o = op_fill(a.handle, 0, 1 << 20, 0x42, 41);
	code("submit", cnuasdev_submit(q, &o, 1, &first), 0);
	code("free_while_queued", cnuasdev_free(q, a.handle), 0);
	wait_print(q, "done", first, 1);
	kv("used_after", "%" PRIu64, used(dev));
	a = must_alloc(q, 1 << 20, 0);
	o = op_fill(a.handle, 0, 1 << 20, 0x43, 42);
	code("submit_more", cnuasdev_submit(q, &o, 1, &first), 0);
	code("submit_more2", cnuasdev_submit(q, &o, 1, &first), 0);
	code("close_not_taken", cnuasdev_close(q), 0);
	kv("used_end", "%" PRIu64, used_settled(dev, before));
	end("async.lifetime");
}

/* ---- DMA-BUF ------------------------------------------------------------------------------- */

static void case_dmabuf_export(void)
{
	struct cnuasdev_mem a;
	int fd = -1, rc;

	if (!begin("dmabuf.export", CNUASDEV_CAP_DMABUF))
		return;
	a = must_alloc(dev, 65536, 0);
	rc = cnuasdev_export_dmabuf(dev, a.handle, &fd);
	code("export", rc, 0);
	yes("cloexec", !rc && (fcntl(fd, F_GETFD) & FD_CLOEXEC));
	code("bad_handle", cnuasdev_export_dmabuf(dev, BAD_HANDLE, &fd), -ENOENT);
	code("null_fd", cnuasdev_export_dmabuf(dev, a.handle, NULL), -EINVAL);
	must_free(dev, a.handle);
	kv("used_freed_exported", "%" PRIu64, used(dev));
	if (!rc)
		close(fd);
	kv("used_closed", "%" PRIu64, used(dev));
	end("dmabuf.export");
}

static void case_dmabuf_import(void)
{
	size_t len = 65536;
	uint8_t *buf = malloc(len);
	struct cnuasdev_mem a, im;
	struct cnuasdev *other;
	int fd = -1, nul;

	if (!buf || !begin("dmabuf.import", CNUASDEV_CAP_DMABUF | CNUASDEV_CAP_DMABUF_IMPORT)) {
		free(buf);
		return;
	}
	other = open_again();
	a = must_alloc(dev, len, 0);
	pattern(buf, len, 8);
	code("write", cnuasdev_copy_to(dev, a.handle, 0, buf, len), 0);
	code("export", cnuasdev_export_dmabuf(dev, a.handle, &fd), 0);
	code("import", cnuasdev_import_dmabuf(other, fd, &im), 0);
	yes("same_place", im.offset == a.offset && im.size == a.size);
	yes("same_bytes", dev_digest(other, im.handle, 0, len) == digest(buf, len));
	must_free(dev, a.handle);
	close(fd);
	kv("used_imported", "%" PRIu64, used(dev));
	code("write_through_import", cnuasdev_fill(other, im.handle, 0, 0x3c, 4096), 0);
	code("free_import", cnuasdev_free(other, im.handle), 0);
	kv("used_released", "%" PRIu64, used(dev));
	code("bad_fd", cnuasdev_import_dmabuf(other, -1, &im), -EBADF);
	nul = open("/dev/null", O_RDWR);
	code("not_dmabuf", cnuasdev_import_dmabuf(other, nul, &im), -EINVAL);
	close(nul);
	code("close_other", cnuasdev_close(other), 0);
	free(buf);
	end("dmabuf.import");
}

/* ---- CnuasLink (pcie), and what is not there ------------------------------------------------- */

static void case_link(void)
{
	uint8_t buf[64] = { 1 };
	uint32_t n = 0;

	if (!begin("link.down", CNUASDEV_CAP_LINK))
		return;
	if (props.link_up) {
		kv("skipped", "link_up");
		end("link.down");
		return;
	}
	code("send", cnuasdev_link_send(dev, buf, sizeof(buf), 0xffffffffu, 100), -ENOLINK);
	code("send_len0", cnuasdev_link_send(dev, buf, 0, 0, 100), -EINVAL);
	code("recv_nonblock", cnuasdev_link_recv(dev, buf, sizeof(buf), &n, NULL, 0,
						 CNUASDEV_LINK_RECV_NONBLOCK), -EAGAIN);
	end("link.down");
}

/* Every capability the device lacks: its calls are EOPNOTSUPP (an info line). */
static void unsupported(void)
{
	struct cnuasdev_mem m = { 0, 0, 0, 4096 };
	struct cnuasdev_completion c;
	uint32_t h, n;
	uint64_t s;
	void *p;
	int fd;
	char out[512];
	size_t len = 0;

#define NOT(cap, key, call)						\
	do {								\
		if (!(props.caps & (cap))) {				\
			int rc_ = (call);				\
			CHECK(rc_ == -EOPNOTSUPP, "%s: %s", key, E(rc_)); \
			len += (size_t)snprintf(out + len, sizeof(out) - len, " %s=%s", \
						key, E(rc_));		\
		}							\
	} while (0)
	out[0] = 0;
	NOT(CNUASDEV_CAP_ZEROCOPY, "map", cnuasdev_map(dev, &m, &p));
	NOT(CNUASDEV_CAP_PINNED, "pin", cnuasdev_pin(dev, NULL, 0, &h));
	NOT(CNUASDEV_CAP_PINNED, "unpin", cnuasdev_unpin(dev, 1));
	NOT(CNUASDEV_CAP_DMABUF, "export", cnuasdev_export_dmabuf(dev, 1, &fd));
	NOT(CNUASDEV_CAP_DMABUF_IMPORT, "import", cnuasdev_import_dmabuf(dev, -1, &m));
	NOT(CNUASDEV_CAP_ASYNC, "submit", cnuasdev_submit(dev, NULL, 0, &s));
	NOT(CNUASDEV_CAP_ASYNC, "poll", cnuasdev_poll(dev, &c, 1, &n, NULL));
	NOT(CNUASDEV_CAP_ASYNC, "wait", cnuasdev_wait(dev, 1, 0, &c, 1, &n, NULL));
	NOT(CNUASDEV_CAP_POLLFD, "pollfd", cnuasdev_pollfd(dev, &fd));
	NOT(CNUASDEV_CAP_LINK, "link_send", cnuasdev_link_send(dev, NULL, 0, 0, 0));
	NOT(CNUASDEV_CAP_LINK, "link_recv", cnuasdev_link_recv(dev, NULL, 0, NULL, NULL, 0, 0));
#undef NOT
	printf("info unsupported%s\n", len ? out : " none");
}

int main(int argc, char **argv)
{
	char caps[128];
	int rc;

	if (argc > 2) {
		fprintf(stderr, "usage: cnuasdev_suite [SPEC]\n");
		return 2;
	}
	rc = cnuasdev_open(argc == 2 ? argv[1] : NULL, 0, &dev);
	if (rc) {
		fprintf(stderr, "cnuasdev_open %s: %s\n", argc == 2 ? argv[1] : "(env/auto)", E(rc));
		return 2;
	}
	props.size = sizeof(props);
	rc = cnuasdev_query(dev, &props);
	if (rc) {
		fprintf(stderr, "cnuasdev_query: %s\n", E(rc));
		return 2;
	}
	page = props.page_size;
	printf("info backend=%s name=%s path=%s version=%s caps=%s\n",
	       cnuasdev_backend_name(props.backend), props.name, props.path[0] ? props.path : "-",
	       cnuasdev_version(), cap_names(props.caps, caps, sizeof(caps)));
	printf("info devmem_size=%" PRIu64 " alloc_limit=%" PRIu64 " pinned_max=%" PRIu64
	       " queue_depth=%u batch_max=%u gpu_id=%u link_up=%u\n",
	       props.devmem_size, props.alloc_limit, props.pinned_max, props.queue_depth,
	       props.batch_max, props.gpu_id, props.link_up);
	if (props.devmem_used) {
		fprintf(stderr, "%s is not idle (devmem_used %" PRIu64 "): offsets would differ\n",
			props.name, props.devmem_used);
		return 2;
	}
	case_props();
	case_two_opens();
	case_alloc_round();
	case_alloc_align();
	case_alloc_bad();
	case_alloc_zero();
	case_alloc_bump();
	case_alloc_full();
	case_copy_roundtrip();
	case_copy_bad();
	case_fill();
	case_map_basic();
	case_map_lifetime();
	case_pin_basic();
	case_pin_ceiling();
	case_pin_fault();
	case_async_basic();
	case_async_bad();
	case_async_pinned();
	case_async_full();
	case_async_fault();
	case_async_order();
	case_async_lifetime();
	case_dmabuf_export();
	case_dmabuf_import();
	case_link();
	unsupported();
	CHECK(used(dev) == 0, "devmem_used back to 0 at the end");
	cnuasdev_close(dev);
	printf("suite backend=%s cases=%d skipped=%d checks=%lu failed=%d\n",
	       cnuasdev_backend_name(props.backend), ncases, nskips, checks, failures);
	return failures ? 1 : 0;
}
