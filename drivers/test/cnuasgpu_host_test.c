// SPDX-License-Identifier: GPL-2.0
/*
 * cnuasgpu_host_test [-d DEV] [-F FEATURES] [-m MODE] [-i IBDEV:GID_INDEX]:
 * guest-side checks of a cnuasgpu_host.ko node (default /dev/cnuasgpu_host0).
 *
 *   -F  the features the module was loaded with, comma-separated, from
 *       zerocopy,pinned,dmabuf,async (default all four; "none" for none).
 *       Each feature on runs its cases; each one off runs FEATURE_off,
 *       which expects EOPNOTSUPP from its calls and no bit in CAPS.
 *   -m  the devnode_mode the module was loaded with (default 0600).
 *   -i  also register an export with ibv_reg_dmabuf_mr on that RDMA device
 *       and move bytes through it by RDMA WRITE and READ over a loopback RC
 *       connection (dmabuf_ib_mr).
 *
 * With a second node (/dev/cnuasgpu_host1, or host0 when DEV is host1) the
 * case dmabuf_other_node runs too.
 *
 * Prints one line per case, "NAME: ok" or "NAME: FAIL why", then PASS or
 * FAIL; exits 1 when a case failed, 2 on usage errors.  Case names are
 * stable (rows parse them).  Must run as root for devnode_mode's
 * unprivileged half, with no other user of the node (it checks that the
 * node's counters come back to 0).
 */
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <linux/userfaultfd.h>

#include "cnuasgpu_host.h"
#include "case_report.h"
#include "rc_pair.h"

/* The ABI this program was built against; the kernel side has the same asserts. */
_Static_assert(sizeof(struct cnuasgpu_info) == 56, "cnuasgpu_info");
_Static_assert(sizeof(struct cnuasgpu_alloc) == 32, "cnuasgpu_alloc");
_Static_assert(sizeof(struct cnuasgpu_copy) == 32, "cnuasgpu_copy");
_Static_assert(sizeof(struct cnuasgpu_export) == 16, "cnuasgpu_export");
_Static_assert(sizeof(struct cnuasgpu_caps) == 64, "cnuasgpu_caps");
_Static_assert(offsetof(struct cnuasgpu_caps, devmem_size) == 16, "caps.devmem_size");
_Static_assert(offsetof(struct cnuasgpu_caps, queue_depth) == 32, "caps.queue_depth");
_Static_assert(offsetof(struct cnuasgpu_caps, reserved) == 44, "caps.reserved");
_Static_assert(sizeof(struct cnuasgpu_pin) == 32, "cnuasgpu_pin");
_Static_assert(offsetof(struct cnuasgpu_pin, handle) == 24, "pin.handle");
_Static_assert(sizeof(struct cnuasgpu_unpin) == 16, "cnuasgpu_unpin");
_Static_assert(sizeof(struct cnuasgpu_import) == 32, "cnuasgpu_import");
_Static_assert(offsetof(struct cnuasgpu_import, offset) == 16, "import.offset");
_Static_assert(sizeof(struct cnuasgpu_op) == 56, "cnuasgpu_op");
_Static_assert(offsetof(struct cnuasgpu_op, user_data) == 40, "op.user_data");
_Static_assert(sizeof(struct cnuasgpu_submit) == 40, "cnuasgpu_submit");
_Static_assert(offsetof(struct cnuasgpu_submit, first_seq) == 24, "submit.first_seq");
_Static_assert(sizeof(struct cnuasgpu_completion) == 24, "cnuasgpu_completion");
_Static_assert(sizeof(struct cnuasgpu_reap) == 64, "cnuasgpu_reap");
_Static_assert(offsetof(struct cnuasgpu_reap, count) == 32, "reap.count");
_Static_assert(offsetof(struct cnuasgpu_reap, reaped) == 56, "reap.reaped");

#define PG		4096u
#define MIB		(1u << 20)
#define FEATURES	(CNUASGPU_CAP_ZEROCOPY | CNUASGPU_CAP_PINNED | \
			 CNUASGPU_CAP_DMABUF | CNUASGPU_CAP_ASYNC)

static const char *dev_path = "/dev/cnuasgpu_host0";
static char sysdir[256];
static uint32_t features = FEATURES;
static unsigned int want_mode = 0600;
static const char *ib_dev;
static int ib_gid_index;
static struct cnuasgpu_caps caps;

/* ---- one case ------------------------------------------------------------ */

struct tc {
	const char *name;
	int bad;
	char why[256];
};

/* Check @cond; the first failure of a case is what its line says. */
#define T(cond, ...)							\
	do {								\
		if (!(cond) && !t->bad++) {				\
			int _n = snprintf(t->why, sizeof(t->why), "line %d: ", __LINE__); \
			snprintf(t->why + _n, sizeof(t->why) - _n, __VA_ARGS__); \
		}							\
	} while (0)

/* The call failed with errno @e. */
#define ERR(call, e)	((call) == -1 && errno == (e))

static void tc_end(struct tc *t)
{
	report(t->name, !t->bad, "%s", t->why);
}

/* ---- helpers -------------------------------------------------------------- */

static int open_node(void)
{
	int fd = open(dev_path, O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		fprintf(stderr, "open %s: %s\n", dev_path, strerror(errno));
		exit(1);
	}
	return fd;
}

static uint64_t sysfs_u64(const char *attr)
{
	char path[320];
	unsigned long long v = ~0ull;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", sysdir, attr);
	f = fopen(path, "r");
	if (!f || fscanf(f, "%lli", (long long *)&v) != 1)
		v = ~0ull;
	if (f)
		fclose(f);
	return v;
}

static void sysfs_str(const char *attr, char *buf, size_t len)
{
	char path[320];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", sysdir, attr);
	buf[0] = 0;
	f = fopen(path, "r");
	if (f) {
		if (!fgets(buf, len, f))
			buf[0] = 0;
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = 0;
}

/* Wait up to @ms for sysfs @attr to read @want; its last value. */
static uint64_t sysfs_wait(const char *attr, uint64_t want, int ms)
{
	uint64_t v = sysfs_u64(attr);

	for (int i = 0; i < ms / 10 && v != want; i++) {
		usleep(10000);
		v = sysfs_u64(attr);
	}
	return v;
}

/* References to the module (files, their state, DMA-BUFs), -1 unread. */
static long module_refcnt(void)
{
	FILE *f = fopen("/sys/module/cnuasgpu_host/refcnt", "r");
	long v = -1;

	if (f && fscanf(f, "%ld", &v) != 1)
		v = -1;
	if (f)
		fclose(f);
	return v;
}

static int get_caps(int fd, struct cnuasgpu_caps *c)
{
	memset(c, 0, sizeof(*c));
	c->size = sizeof(*c);
	return ioctl(fd, CNUASGPU_IOC_CAPS, c);
}

static int xalloc(int fd, uint64_t size, struct cnuasgpu_alloc *a)
{
	memset(a, 0, sizeof(*a));
	a->size = size;
	return ioctl(fd, CNUASGPU_IOC_ALLOC, a);
}

static int xfree(int fd, uint32_t handle)
{
	struct cnuasgpu_free f = { .handle = handle };

	return ioctl(fd, CNUASGPU_IOC_FREE, &f);
}

static int xcopy(int fd, int to_dev, uint32_t handle, uint64_t off, void *p,
		 uint64_t size)
{
	struct cnuasgpu_copy c = { .handle = handle, .offset = off,
				   .user_ptr = (uintptr_t)p, .size = size };

	return ioctl(fd, to_dev ? CNUASGPU_IOC_COPY_TO_DEV :
		     CNUASGPU_IOC_COPY_FROM_DEV, &c);
}

static int xpin(int fd, void *p, uint64_t len, uint32_t *handle)
{
	struct cnuasgpu_pin r = { .size = sizeof(r), .user_ptr = (uintptr_t)p,
				  .length = len };
	int ret = ioctl(fd, CNUASGPU_IOC_PIN, &r);

	if (!ret && handle)
		*handle = r.handle;
	return ret;
}

static int xunpin(int fd, uint32_t handle)
{
	struct cnuasgpu_unpin r = { .size = sizeof(r), .handle = handle };

	return ioctl(fd, CNUASGPU_IOC_UNPIN, &r);
}

static int xexport(int fd, uint32_t handle, int *dmafd)
{
	struct cnuasgpu_export x = { .handle = handle,
				     .flags = CNUASGPU_EXPORT_CLOEXEC };
	int ret = ioctl(fd, CNUASGPU_IOC_EXPORT_DMABUF, &x);

	if (!ret)
		*dmafd = x.fd;
	return ret;
}

static int ximport(int fd, int dmafd, struct cnuasgpu_import *r)
{
	memset(r, 0, sizeof(*r));
	r->size = sizeof(*r);
	r->fd = dmafd;
	return ioctl(fd, CNUASGPU_IOC_IMPORT_DMABUF, r);
}

static struct cnuasgpu_op op_fill(uint32_t handle, uint64_t off, uint64_t len,
				  uint8_t value, uint64_t ud)
{
	return (struct cnuasgpu_op){ .opcode = CNUASGPU_OP_FILL, .handle = handle,
				     .offset = off, .length = len, .value = value,
				     .user_data = ud };
}

static struct cnuasgpu_op op_copy(int to_dev, uint32_t handle, uint64_t off,
				  uint64_t host, uint64_t len, uint32_t pin,
				  uint64_t ud)
{
	return (struct cnuasgpu_op){
		.opcode = to_dev ? CNUASGPU_OP_COPY_TO_DEV : CNUASGPU_OP_COPY_FROM_DEV,
		.flags = pin ? CNUASGPU_OP_F_PINNED : 0, .handle = handle,
		.pin_handle = pin, .offset = off, .host = host, .length = len,
		.user_data = ud };
}

static int xsubmit(int fd, struct cnuasgpu_op *ops, uint32_t n, uint64_t *first)
{
	struct cnuasgpu_submit s = { .size = sizeof(s), .op_size = sizeof(*ops),
				     .ops_ptr = (uintptr_t)ops, .count = n };
	int ret = ioctl(fd, CNUASGPU_IOC_SUBMIT, &s);

	if (!ret && first)
		*first = s.first_seq;
	return ret;
}

/* SUBMIT @n ops in batches of at most batch_max; their sequence numbers follow on. */
static int submit_split(int fd, struct cnuasgpu_op *ops, uint32_t n, uint64_t *first)
{
	uint64_t seq;

	for (uint32_t i = 0; i < n; i += caps.batch_max) {
		uint32_t k = n - i < caps.batch_max ? n - i : caps.batch_max;

		if (xsubmit(fd, ops + i, k, &seq))
			return -1;
		if (!i)
			*first = seq;
	}
	return 0;
}

/* WAIT for @seq (0: POLL), taking up to @max completions into @c. */
static int xreap(int fd, uint64_t seq, uint32_t timeout_ms,
		 struct cnuasgpu_completion *c, uint32_t max,
		 struct cnuasgpu_reap *r)
{
	memset(r, 0, sizeof(*r));
	r->size = sizeof(*r);
	r->comp_size = sizeof(*c);
	r->comps_ptr = (uintptr_t)c;
	r->max = max;
	r->seq = seq;
	r->timeout_ms = timeout_ms;
	return ioctl(fd, seq ? CNUASGPU_IOC_WAIT : CNUASGPU_IOC_POLL, r);
}

/* WAIT for @seq and take every completion there is; their count, or -1. */
static int wait_all(int fd, uint64_t seq, struct cnuasgpu_completion *c)
{
	struct cnuasgpu_reap r;

	if (xreap(fd, seq, CNUASGPU_WAIT_MAX_TIMEOUT_MS, c, caps.queue_depth, &r))
		return -1;
	return (int)r.count;
}

static void pattern(uint8_t *p, size_t len, uint32_t salt)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 7 + salt * 131 + (i >> 8));
}

static void *xmap_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (p == MAP_FAILED) {
		fprintf(stderr, "mmap %zu: %s\n", len, strerror(errno));
		exit(1);
	}
	return p;
}

/* ---- info and caps ------------------------------------------------------ */

static void case_info(int fd)
{
	struct tc t_ = { .name = "info" }, *t = &t_;
	struct cnuasgpu_info inf;

	memset(&inf, 0xff, sizeof(inf));
	T(ioctl(fd, CNUASGPU_IOC_INFO, &inf) == 0, "INFO: %s", strerror(errno));
	T(inf.abi_version == CNUASGPU_ABI_VERSION, "abi_version %u", inf.abi_version);
	T(inf.fw_version == 0x00010000, "fw_version 0x%x", inf.fw_version);
	T(inf.devmem_size == sysfs_u64("devmem_size"), "devmem_size %" PRIu64,
	  (uint64_t)inf.devmem_size);
	T(inf.alloc_limit == inf.devmem_size, "alloc_limit %" PRIu64,
	  (uint64_t)inf.alloc_limit);
	T(inf.devmem_used == sysfs_u64("devmem_used"), "devmem_used");
	T(!inf.sm_count && !inf.lanes_per_sm && !inf.tensor_size && !inf.link_up &&
	  !inf.reserved, "no compute units, no link, reserved 0");
	tc_end(t);
}

static void case_caps(int fd)
{
	struct tc t_ = { .name = "caps" }, *t = &t_;
	uint32_t want = features;
	char feat[128], expect[128] = "";

	if (features & CNUASGPU_CAP_DMABUF)
		want |= CNUASGPU_CAP_PEER_RDMA;
	T(get_caps(fd, &caps) == 0, "CAPS: %s", strerror(errno));
	T(caps.size == sizeof(caps) && caps.version == CNUASGPU_CAPS_VERSION,
	  "size %u version %u", caps.size, caps.version);
	T(caps.kind == CNUASGPU_KIND_HOST, "kind %u", caps.kind);
	T(caps.caps == want, "caps 0x%x, loaded with 0x%x", caps.caps, want);
	T(caps.caps == sysfs_u64("caps"), "sysfs caps");
	T(caps.devmem_size == sysfs_u64("devmem_size"), "devmem_size");
	T(caps.pinned_max == sysfs_u64("pinned_max"), "pinned_max");
	T(!!caps.pinned_max == !!(features & CNUASGPU_CAP_PINNED), "pinned_max %" PRIu64,
	  (uint64_t)caps.pinned_max);
	T(caps.queue_depth == sysfs_u64("queue_depth") &&
	  caps.batch_max == sysfs_u64("batch_max"), "queue_depth, batch_max");
	T(!!caps.queue_depth == !!(features & CNUASGPU_CAP_ASYNC) &&
	  caps.batch_max <= caps.queue_depth, "queue_depth %u batch_max %u",
	  caps.queue_depth, caps.batch_max);
	T(caps.page_size == PG, "page_size %u", caps.page_size);
	for (int i = 0; i < 5; i++)
		T(!caps.reserved[i], "reserved[%d]", i);
	static const char *const names[] = { "zerocopy", "pinned", "dmabuf", "async" };
	for (int i = 0; i < 4; i++)
		if (features & (1u << i))
			snprintf(expect + strlen(expect), sizeof(expect) - strlen(expect),
				 "%s%s", expect[0] ? " " : "", names[i]);
	sysfs_str("features", feat, sizeof(feat));
	T(!strcmp(feat, expect), "features \"%s\", expected \"%s\"", feat, expect);
	tc_end(t);
}

static void case_caps_errors(int fd)
{
	struct tc t_ = { .name = "caps_errors" }, *t = &t_;
	struct cnuasgpu_caps c;
	uint8_t *raw = (uint8_t *)&c;

	for (uint32_t sz = 0; sz < 80; sz += 8) {
		if (sz == sizeof(c))
			continue;
		memset(&c, 0, sizeof(c));
		c.size = sz;
		T(ERR(ioctl(fd, CNUASGPU_IOC_CAPS, &c), EINVAL), "size %u", sz);
	}
	for (size_t i = 4; i < sizeof(c); i++) {
		memset(&c, 0, sizeof(c));
		c.size = sizeof(c);
		raw[i] = 1;
		T(ERR(ioctl(fd, CNUASGPU_IOC_CAPS, &c), EINVAL), "byte %zu set", i);
	}
	T(ERR(ioctl(fd, CNUASGPU_IOC_CAPS, NULL), EFAULT), "NULL argument");
	/* the same number with another size is another command */
	T(ERR(ioctl(fd, _IOWR(CNUASGPU_IOC_MAGIC, 0x08, struct cnuasgpu_pin), &c), ENOTTY),
	  "truncated CAPS");
	tc_end(t);
}

static void case_unknown_ioctl(int fd)
{
	struct tc t_ = { .name = "unknown_ioctl" }, *t = &t_;
	uint8_t raw[256] = { 0 };

	T(ERR(ioctl(fd, CNUASGPU_IOC_LINK_SEND, raw), ENOTTY), "LINK_SEND");
	T(ERR(ioctl(fd, CNUASGPU_IOC_LINK_RECV, raw), ENOTTY), "LINK_RECV");
	T(ERR(ioctl(fd, _IOWR(CNUASGPU_IOC_MAGIC, 0x16, struct cnuasgpu_reap), raw), ENOTTY),
	  "0x16");
	T(ERR(ioctl(fd, _IOWR(CNUASGPU_IOC_MAGIC, 0x13, struct cnuasgpu_op), raw), ENOTTY),
	  "SUBMIT with another size");
	T(ERR(ioctl(fd, _IOR(CNUASGPU_IOC_MAGIC, 0x10, struct cnuasgpu_pin), raw), ENOTTY),
	  "PIN with another direction");
	T(ERR(ioctl(fd, _IOWR(CNUASGPU_IOC_MAGIC, 0x01, struct cnuasgpu_caps), raw), ENOTTY),
	  "ALLOC with another size");
	tc_end(t);
}

/* ---- allocations and copies -------------------------------------------- */

static void case_alloc_copy_free(int fd)
{
	struct tc t_ = { .name = "alloc_copy_free" }, *t = &t_;
	const size_t size = MIB + 1, rsize = MIB + PG;
	uint8_t *src = malloc(rsize), *dst = malloc(rsize);
	uint64_t used0 = sysfs_u64("devmem_used");
	struct cnuasgpu_alloc a, b;

	T(xalloc(fd, size, &a) == 0, "ALLOC: %s", strerror(errno));
	T(a.size == rsize && a.handle && a.offset % PG == 0, "size %" PRIu64 " handle %u",
	  (uint64_t)a.size, a.handle);
	T(sysfs_u64("devmem_used") == used0 + rsize, "devmem_used after ALLOC");
	memset(dst, 0xa5, rsize);
	T(xcopy(fd, 0, a.handle, 0, dst, rsize) == 0, "COPY_FROM_DEV: %s", strerror(errno));
	T(!dst[0] && !memcmp(dst, dst + 1, rsize - 1), "a new allocation reads as zeros");
	pattern(src, rsize, 1);
	T(xcopy(fd, 1, a.handle, 0, src, rsize) == 0, "COPY_TO_DEV: %s", strerror(errno));
	memset(dst, 0, rsize);
	T(xcopy(fd, 0, a.handle, 0, dst, rsize) == 0 && !memcmp(src, dst, rsize),
	  "whole allocation round trip");
	T(xcopy(fd, 1, a.handle, 12345, src, 777) == 0, "unaligned COPY_TO_DEV");
	T(xcopy(fd, 0, a.handle, 12345, dst, 777) == 0 && !memcmp(src, dst, 777),
	  "unaligned round trip");
	T(xcopy(fd, 0, a.handle, rsize - 1, dst, 1) == 0, "last byte");
	T(xalloc(fd, 3 * PG, &b) == 0 && b.offset >= a.offset + a.size,
	  "second ALLOC after the first");
	T(xfree(fd, a.handle) == 0, "FREE: %s", strerror(errno));
	T(ERR(xfree(fd, a.handle), ENOENT), "double FREE");
	T(ERR(xcopy(fd, 0, a.handle, 0, dst, 1), ENOENT), "copy after FREE");
	T(xfree(fd, b.handle) == 0, "FREE b");
	T(sysfs_u64("devmem_used") == used0, "devmem_used back");
	free(src);
	free(dst);
	tc_end(t);
}

static void case_alloc_errors(int fd)
{
	struct tc t_ = { .name = "alloc_errors" }, *t = &t_;
	uint64_t total = caps.devmem_size;
	struct cnuasgpu_alloc a, full;

	T(ERR(xalloc(fd, 0, &a), EINVAL), "size 0");
	memset(&a, 0, sizeof(a));
	a.size = PG;
	a.align = 3 * PG;
	T(ERR(ioctl(fd, CNUASGPU_IOC_ALLOC, &a), EINVAL), "align not a power of two");
	a.align = 2048;
	T(ERR(ioctl(fd, CNUASGPU_IOC_ALLOC, &a), EINVAL), "align below a page");
	a.align = 1ull << 31;
	T(ERR(ioctl(fd, CNUASGPU_IOC_ALLOC, &a), EINVAL), "align above 1 GiB");
	memset(&a, 0, sizeof(a));
	a.size = PG;
	a.flags = 1;
	T(ERR(ioctl(fd, CNUASGPU_IOC_ALLOC, &a), EINVAL), "flags");
	memset(&a, 0, sizeof(a));
	a.size = PG;
	a.handle = 5;
	T(ERR(ioctl(fd, CNUASGPU_IOC_ALLOC, &a), EINVAL), "handle set");
	T(ERR(xalloc(fd, total + 1, &a), ENOMEM), "above devmem_size");
	T(ERR(xalloc(fd, UINT64_MAX, &a), ENOMEM), "UINT64_MAX");
	T(ERR(ioctl(fd, CNUASGPU_IOC_ALLOC, NULL), EFAULT), "NULL argument");
	/* an idle node gives all of it, and not a page more */
	if (!sysfs_u64("devmem_used")) {
		T(xalloc(fd, total, &full) == 0 && full.offset == 0, "the whole arena: %s",
		  strerror(errno));
		T(ERR(xalloc(fd, PG, &a), ENOMEM), "a page past the arena");
		T(xfree(fd, full.handle) == 0, "FREE of the whole arena");
	}
	memset(&a, 0, sizeof(a));
	a.size = PG;
	a.align = 1u << 20;
	T(ioctl(fd, CNUASGPU_IOC_ALLOC, &a) == 0 && a.offset % (1u << 20) == 0, "aligned");
	xfree(fd, a.handle);
	tc_end(t);
}

static void case_copy_errors(int fd)
{
	struct tc t_ = { .name = "copy_errors" }, *t = &t_;
	uint8_t buf[2 * PG];
	struct cnuasgpu_alloc a;
	struct cnuasgpu_copy c;

	T(xalloc(fd, 2 * PG, &a) == 0, "ALLOC");
	T(ERR(xcopy(fd, 1, a.handle, 0, buf, 0), EINVAL), "size 0");
	T(ERR(xcopy(fd, 1, a.handle, 1, buf, 2 * PG), EINVAL), "one byte past");
	T(ERR(xcopy(fd, 0, a.handle, 2 * PG, buf, 1), EINVAL), "offset at the end");
	T(ERR(xcopy(fd, 0, a.handle, UINT64_MAX, buf, 2), EINVAL), "offset wraps");
	T(ERR(xcopy(fd, 0, a.handle, 8, buf, UINT64_MAX), EINVAL), "size wraps");
	T(ERR(xcopy(fd, 1, a.handle + 1000, 0, buf, 1), ENOENT), "unknown handle");
	T(ERR(xcopy(fd, 1, 0, 0, buf, 1), ENOENT), "handle 0");
	T(ERR(xcopy(fd, 1, a.handle, 0, (void *)8, 16), EFAULT), "bad user pointer in");
	T(ERR(xcopy(fd, 0, a.handle, 0, (void *)8, 16), EFAULT), "bad user pointer out");
	memset(&c, 0, sizeof(c));
	c.handle = a.handle;
	c.size = 1;
	c.user_ptr = (uintptr_t)buf;
	c.reserved = 1;
	T(ERR(ioctl(fd, CNUASGPU_IOC_COPY_TO_DEV, &c), EINVAL), "reserved set");
	T(ERR(ioctl(fd, CNUASGPU_IOC_FREE, &(struct cnuasgpu_free){ .handle = a.handle,
								  .reserved = 1 }), EINVAL),
	  "FREE with reserved set");
	T(xfree(fd, a.handle) == 0, "FREE");
	tc_end(t);
}

/* Another open file's handles are not this one's. */
static void case_handles_per_file(int fd)
{
	struct tc t_ = { .name = "handles_per_file" }, *t = &t_;
	int fd2 = open_node();
	struct cnuasgpu_alloc a;
	uint8_t b = 0;

	T(xalloc(fd2, PG, &a) == 0, "ALLOC on a second open");
	T(ERR(xcopy(fd, 0, a.handle + 100, 0, &b, 1), ENOENT), "other file's handle");
	T(ERR(xfree(fd, a.handle + 100), ENOENT), "FREE of another file's handle");
	close(fd2);
	T(sysfs_wait("devmem_used", 0, 2000) == 0, "close frees the allocation");
	tc_end(t);
}

/* ---- zerocopy ------------------------------------------------------------ */

static void case_mmap_coherent(int fd)
{
	struct tc t_ = { .name = "mmap_coherent" }, *t = &t_;
	const size_t len = 256 * 1024;
	uint8_t *src = malloc(len), *dst = malloc(len), *m;
	struct cnuasgpu_alloc a;
	uint64_t used0 = sysfs_u64("devmem_used");

	T(xalloc(fd, len, &a) == 0, "ALLOC");
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, a.offset);
	T(m != MAP_FAILED, "mmap: %s", strerror(errno));
	if (m == MAP_FAILED)
		goto out;
	pattern(src, len, 7);
	T(xcopy(fd, 1, a.handle, 0, src, len) == 0 && !memcmp(m, src, len),
	  "COPY_TO_DEV seen through the mapping");
	pattern(m, len, 8);
	T(xcopy(fd, 0, a.handle, 0, dst, len) == 0 && !memcmp(m, dst, len),
	  "mapping writes seen by COPY_FROM_DEV");
	/* a part of the allocation, at its offset */
	uint8_t *m2 = mmap(NULL, PG, PROT_READ, MAP_SHARED, fd, a.offset + 2 * PG);
	T(m2 != MAP_FAILED && !memcmp(m2, m + 2 * PG, PG), "mapping of one page inside");
	if (m2 != MAP_FAILED)
		munmap(m2, PG);
	if (features & CNUASGPU_CAP_ASYNC) {
		struct cnuasgpu_op op = op_fill(a.handle, PG, PG, 0x3c, 1);
		struct cnuasgpu_completion c[1];
		uint64_t seq;

		T(xsubmit(fd, &op, 1, &seq) == 0 && wait_all(fd, seq, c) == 1 && !c[0].status,
		  "FILL op");
		T(m[PG] == 0x3c && m[2 * PG - 1] == 0x3c, "FILL seen through the mapping");
	}
	/* freed while mapped: reserved until the last mapping goes */
	T(xfree(fd, a.handle) == 0, "FREE while mapped");
	T(sysfs_u64("devmem_used") == used0 + len, "a mapped allocation stays reserved");
	m[0] = 1;	/* still ours to touch */
	munmap(m, len);
	T(sysfs_u64("devmem_used") == used0, "released by munmap");
out:
	free(src);
	free(dst);
	tc_end(t);
}

static void case_mmap_errors(int fd)
{
	struct tc t_ = { .name = "mmap_errors" }, *t = &t_;
	struct cnuasgpu_alloc a;
	int fd2 = open_node();
	void *m;

	T(xalloc(fd, 2 * PG, &a) == 0, "ALLOC");
	m = mmap(NULL, PG, PROT_READ, MAP_PRIVATE, fd, a.offset);
	T(m == MAP_FAILED && errno == EINVAL, "MAP_PRIVATE");
	m = mmap(NULL, 3 * PG, PROT_READ, MAP_SHARED, fd, a.offset);
	T(m == MAP_FAILED && errno == EINVAL, "longer than the allocation");
	m = mmap(NULL, PG, PROT_READ, MAP_SHARED, fd, a.offset + 2 * PG);
	T(m == MAP_FAILED && errno == EINVAL, "past the allocation");
	m = mmap(NULL, PG, PROT_READ, MAP_SHARED, fd, 1ull << 40);
	T(m == MAP_FAILED && errno == EINVAL, "far past the arena");
	m = mmap(NULL, PG, PROT_READ, MAP_SHARED, fd2, a.offset);
	T(m == MAP_FAILED && errno == EINVAL, "another file's allocation");
	m = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, a.offset);
	T(m != MAP_FAILED, "mmap: %s", strerror(errno));
	if (m != MAP_FAILED && (features & CNUASGPU_CAP_PINNED))
		T(ERR(xpin(fd, m, PG, NULL), EFAULT), "PIN of a zerocopy mapping");
	if (m != MAP_FAILED) {
		/* a short-term pin (a pipe's page reference) is refused too */
		struct iovec iov = { .iov_base = m, .iov_len = PG };
		int pp[2];

		memset(m, 0x5a, PG);	/* touched: its PTEs are in */
		T(pipe(pp) == 0, "pipe");
		T(ERR(syscall(SYS_vmsplice, pp[1], &iov, 1, 0), EFAULT),
		  "vmsplice of a zerocopy mapping");
		close(pp[0]);
		close(pp[1]);
	}
	if (m != MAP_FAILED)
		munmap(m, 2 * PG);
	T(xfree(fd, a.handle) == 0, "FREE");
	close(fd2);
	tc_end(t);
}

static void case_zerocopy_off(int fd)
{
	struct tc t_ = { .name = "zerocopy_off" }, *t = &t_;
	struct cnuasgpu_alloc a;
	void *m;

	T(xalloc(fd, PG, &a) == 0, "ALLOC");
	m = mmap(NULL, PG, PROT_READ, MAP_SHARED, fd, a.offset);
	T(m == MAP_FAILED && errno == EOPNOTSUPP, "mmap: %s",
	  m == MAP_FAILED ? strerror(errno) : "mapped");
	T(!(caps.caps & CNUASGPU_CAP_ZEROCOPY), "CAPS bit");
	xfree(fd, a.handle);
	tc_end(t);
}

/* ---- pinned ------------------------------------------------------------- */

static void case_pin_ceiling(int fd)
{
	struct tc t_ = { .name = "pin_ceiling" }, *t = &t_;
	uint64_t max = caps.pinned_max, done = 0, chunk = 4 * MIB;
	uint32_t handles[1024];
	int n = 0;

	T(sysfs_u64("pinned_used") == 0, "pinned_used 0 at the start");
	/* past the ceiling at once: refused before a page is touched */
	T(ERR(xpin(fd, (void *)(uintptr_t)(1ull << 30), max + PG, NULL), ENOMEM),
	  "one pin above the ceiling");
	if (max <= 256ull * MIB) {
		uint8_t *buf = xmap_anon(max + PG);

		while (done < max && n < 1024) {
			uint64_t len = max - done < chunk ? max - done : chunk;

			if (xpin(fd, buf + done, len, &handles[n])) {
				T(0, "PIN %d at %" PRIu64 ": %s", n, done, strerror(errno));
				break;
			}
			n++;
			done += len;
		}
		T(sysfs_u64("pinned_used") == max, "pinned_used at the ceiling");
		T(sysfs_u64("pins") == (uint64_t)n, "pins %d", n);
		T(ERR(xpin(fd, buf + max, PG, NULL), ENOMEM), "one page over the ceiling");
		T(xunpin(fd, handles[0]) == 0, "UNPIN");
		T(sysfs_u64("pinned_used") == max - (max < chunk ? max : chunk),
		  "UNPIN gives its bytes back");
		T(ERR(xunpin(fd, handles[0]), ENOENT), "double UNPIN");
		T(xpin(fd, buf, max < chunk ? max : chunk, &handles[0]) == 0, "PIN again");
		for (int i = 0; i < n; i++)
			T(xunpin(fd, handles[i]) == 0, "UNPIN %d", i);
		munmap(buf, max + PG);
	}
	T(sysfs_u64("pinned_used") == 0 && sysfs_u64("pins") == 0, "pinned_used back to 0");
	tc_end(t);
}

static void case_pin_errors(int fd)
{
	struct tc t_ = { .name = "pin_errors" }, *t = &t_;
	uint8_t *buf = xmap_anon(4 * PG);
	uint8_t *ro = mmap(NULL, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct cnuasgpu_pin p;
	struct cnuasgpu_alloc a;
	uint32_t h;

	T(ERR(xpin(fd, buf + 1, PG, NULL), EINVAL), "unaligned address");
	T(ERR(xpin(fd, buf, PG + 1, NULL), EINVAL), "unaligned length");
	T(ERR(xpin(fd, buf, 0, NULL), EINVAL), "length 0");
	T(ERR(xpin(fd, (void *)(uintptr_t)(UINT64_MAX & ~(uint64_t)(PG - 1)), 2 * PG, NULL),
	      EINVAL), "range wraps");
	memset(&p, 0, sizeof(p));
	p.size = sizeof(p) - 8;
	p.user_ptr = (uintptr_t)buf;
	p.length = PG;
	T(ERR(ioctl(fd, CNUASGPU_IOC_PIN, &p), EINVAL), "size");
	p.size = sizeof(p);
	p.flags = 1;
	T(ERR(ioctl(fd, CNUASGPU_IOC_PIN, &p), EINVAL), "flags");
	p.flags = 0;
	p.reserved = 1;
	T(ERR(ioctl(fd, CNUASGPU_IOC_PIN, &p), EINVAL), "reserved");
	p.reserved = 0;
	p.handle = 1;
	T(ERR(ioctl(fd, CNUASGPU_IOC_PIN, &p), EINVAL), "handle set");
	T(ERR(xpin(fd, (void *)(uintptr_t)(1ull << 46), PG, NULL), EFAULT), "unmapped");
	T(ERR(xpin(fd, ro, PG, NULL), EFAULT), "read-only memory");
	T(ERR(xunpin(fd, 12345), ENOENT), "UNPIN of no handle");
	T(ERR(ioctl(fd, CNUASGPU_IOC_UNPIN, &(struct cnuasgpu_unpin){ .size = 8 }), EINVAL),
	  "UNPIN size");
	T(ERR(ioctl(fd, CNUASGPU_IOC_UNPIN, &(struct cnuasgpu_unpin){
		.size = sizeof(struct cnuasgpu_unpin), .flags = 1 }), EINVAL), "UNPIN flags");
	/* one handle space: pins and allocations do not mix */
	T(xpin(fd, buf, 4 * PG, &h) == 0, "PIN");
	T(xalloc(fd, PG, &a) == 0 && a.handle != h, "ALLOC gets another number");
	T(ERR(xfree(fd, h), ENOENT), "FREE of a pin handle");
	T(ERR(xunpin(fd, a.handle), ENOENT), "UNPIN of an allocation handle");
	T(ERR(xcopy(fd, 0, h, 0, buf, 1), ENOENT), "COPY on a pin handle");
	T(xunpin(fd, h) == 0 && xfree(fd, a.handle) == 0, "UNPIN and FREE");
	T(sysfs_u64("pinned_used") == 0, "pinned_used back to 0");
	munmap(buf, 4 * PG);
	munmap(ro, PG);
	tc_end(t);
}

static void case_pin_close(void)
{
	struct tc t_ = { .name = "pin_release_on_close" }, *t = &t_;
	uint8_t *buf = xmap_anon(MIB);
	int fd2 = open_node();

	T(xpin(fd2, buf, MIB, NULL) == 0, "PIN: %s", strerror(errno));
	T(sysfs_u64("pinned_used") == MIB, "pinned_used");
	close(fd2);
	T(sysfs_u64("pinned_used") == 0 && sysfs_u64("pins") == 0, "close unpins");
	munmap(buf, MIB);
	tc_end(t);
}

/*
 * A child opens the node, does @what (pins; with @queue also submits ops
 * that take long), says so on a pipe and is killed: everything comes back.
 */
static void child_dies(struct tc *t, int queue)
{
	uint64_t used0 = sysfs_u64("devmem_used");
	int p[2];
	pid_t pid;
	char c;

	if (pipe(p))
		exit(1);
	pid = fork();
	if (!pid) {
		size_t len = caps.pinned_max < 8 * MIB ? caps.pinned_max : 8 * MIB;
		uint32_t pin = 0;
		int fd;

		prctl(PR_SET_PDEATHSIG, SIGKILL);	/* not left behind if we are killed */
		fd = open_node();
		if ((features & CNUASGPU_CAP_PINNED) && xpin(fd, xmap_anon(len), len, &pin))
			_exit(2);
		if (queue) {
			uint64_t big = caps.devmem_size / 2;
			struct cnuasgpu_op ops[1024];
			struct cnuasgpu_alloc a;
			uint32_t n = 0;

			if (xalloc(fd, big, &a))
				_exit(3);
			while (n < caps.queue_depth) {
				uint32_t k = caps.batch_max;

				if (k > caps.queue_depth - n)
					k = caps.queue_depth - n;
				for (uint32_t i = 0; i < k; i++)
					ops[i] = pin && i % 2 ?
						 op_copy(i % 4 == 1, a.handle, 0, 0, len, pin, i) :
						 op_fill(a.handle, 0, big, i, i);
				if (xsubmit(fd, ops, k, NULL))
					_exit(4);
				n += k;
			}
		}
		if (write(p[1], "x", 1) != 1)
			_exit(5);
		pause();
		_exit(0);
	}
	close(p[1]);
	T(read(p[0], &c, 1) == 1, "the child did not get ready");
	close(p[0]);
	if (features & CNUASGPU_CAP_PINNED)
		T(sysfs_u64("pinned_used") > 0, "the child pinned");
	if (queue)
		T(sysfs_u64("devmem_used") > used0, "the child allocated");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	T(sysfs_wait("pinned_used", 0, 30000) == 0, "pinned_used %" PRIu64 " after death",
	  sysfs_u64("pinned_used"));
	T(sysfs_wait("pins", 0, 1000) == 0, "pins after death");
	T(sysfs_wait("inflight", 0, 30000) == 0, "inflight %" PRIu64 " after death",
	  sysfs_u64("inflight"));
	T(sysfs_wait("devmem_used", used0, 30000) == used0, "devmem_used after death");
}

static void case_pin_death(void)
{
	struct tc t_ = { .name = "pin_release_on_death" }, *t = &t_;

	child_dies(t, 0);
	tc_end(t);
}

static void case_pinned_off(int fd)
{
	struct tc t_ = { .name = "pinned_off" }, *t = &t_;
	uint8_t *buf = xmap_anon(PG);

	T(ERR(xpin(fd, buf, PG, NULL), EOPNOTSUPP), "PIN");
	T(ERR(xunpin(fd, 1), EOPNOTSUPP), "UNPIN");
	T(ERR(ioctl(fd, CNUASGPU_IOC_PIN, NULL), EOPNOTSUPP), "PIN before its argument");
	if (features & CNUASGPU_CAP_ASYNC) {
		struct cnuasgpu_alloc a;
		struct cnuasgpu_op op;

		T(xalloc(fd, PG, &a) == 0, "ALLOC");
		op = op_copy(1, a.handle, 0, 0, PG, 1, 0);
		T(ERR(xsubmit(fd, &op, 1, NULL), EOPNOTSUPP), "a pinned op");
		xfree(fd, a.handle);
	}
	T(!(caps.caps & CNUASGPU_CAP_PINNED) && !caps.pinned_max, "CAPS");
	munmap(buf, PG);
	tc_end(t);
}

/* ---- DMA-BUF ------------------------------------------------------------ */

static void case_dmabuf_import(int fd)
{
	struct tc t_ = { .name = "dmabuf_export_import" }, *t = &t_;
	const size_t len = 64 * 1024;
	uint8_t *src = malloc(len), *dst = malloc(len);
	uint64_t used0 = sysfs_u64("devmem_used");
	struct cnuasgpu_import im;
	struct cnuasgpu_alloc a;
	int fd2 = open_node(), dfd = -1, dfd2 = -1;

	T(xalloc(fd, len, &a) == 0, "ALLOC");
	pattern(src, len, 3);
	T(xcopy(fd, 1, a.handle, 0, src, len) == 0, "COPY_TO_DEV");
	T(xexport(fd, a.handle, &dfd) == 0, "EXPORT: %s", strerror(errno));
	T(sysfs_u64("exports") == 1, "exports 1");
	T(ximport(fd2, dfd, &im) == 0, "IMPORT on a second open: %s", strerror(errno));
	T(im.handle && im.offset == a.offset && im.length == a.size,
	  "import names the allocation");
	T(xcopy(fd2, 0, im.handle, 0, dst, len) == 0 && !memcmp(src, dst, len),
	  "the second open reads the bytes");
	pattern(src, len, 4);
	T(xcopy(fd2, 1, im.handle, 0, src, len) == 0, "the second open writes");
	T(xcopy(fd, 0, a.handle, 0, dst, len) == 0 && !memcmp(src, dst, len),
	  "the first open sees them");
	if (features & CNUASGPU_CAP_ZEROCOPY) {
		uint8_t *m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd2, im.offset);

		T(m != MAP_FAILED && !memcmp(m, src, len), "mmap of the import");
		if (m != MAP_FAILED)
			munmap(m, len);
	}
	T(xexport(fd2, im.handle, &dfd2) == 0, "EXPORT of an import: %s", strerror(errno));
	T(sysfs_u64("exports") == 1, "an import's EXPORT is the same DMA-BUF");
	/* lifetime: the allocation stays until the last reference goes */
	T(xfree(fd, a.handle) == 0, "FREE of the exported allocation");
	close(dfd);
	close(dfd2);
	T(sysfs_u64("devmem_used") == used0 + len, "the import keeps it reserved");
	T(xcopy(fd2, 0, im.handle, 0, dst, len) == 0 && !memcmp(src, dst, len),
	  "and usable");
	T(xfree(fd2, im.handle) == 0, "FREE of the import");
	T(sysfs_wait("exports", 0, 2000) == 0, "exports back to 0");
	T(sysfs_wait("devmem_used", used0, 2000) == used0, "released with the last reference");
	close(fd2);
	free(src);
	free(dst);
	tc_end(t);
}

/* A DMA-BUF shared between two processes: the child imports and writes. */
static void case_dmabuf_two_processes(int fd)
{
	struct tc t_ = { .name = "dmabuf_two_processes" }, *t = &t_;
	const size_t len = 16 * 1024;
	uint8_t *src = malloc(len), *dst = malloc(len);
	struct cnuasgpu_alloc a;
	int dfd = -1, status = -1;
	pid_t pid;

	T(xalloc(fd, len, &a) == 0 && xexport(fd, a.handle, &dfd) == 0, "ALLOC, EXPORT");
	pattern(src, len, 9);
	pid = fork();
	if (!pid) {
		int cfd = open(dev_path, O_RDWR);
		struct cnuasgpu_import im;
		int dup_fd = dup(dfd);	/* CLOEXEC does not stop fork */

		if (cfd < 0 || dup_fd < 0 || ximport(cfd, dup_fd, &im) ||
		    xcopy(cfd, 1, im.handle, 0, src, len))
			_exit(1);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	T(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's import and copy");
	T(xcopy(fd, 0, a.handle, 0, dst, len) == 0 && !memcmp(src, dst, len),
	  "the parent sees the child's bytes");
	close(dfd);
	T(xfree(fd, a.handle) == 0, "FREE");
	T(sysfs_wait("exports", 0, 2000) == 0, "exports back to 0");
	free(src);
	free(dst);
	tc_end(t);
}

static void case_dmabuf_errors(int fd)
{
	struct tc t_ = { .name = "dmabuf_errors" }, *t = &t_;
	struct cnuasgpu_import im;
	struct cnuasgpu_export x;
	struct cnuasgpu_alloc a;
	int dfd, nfd = open("/dev/null", O_RDWR);

	T(ERR(ximport(fd, -1, &im), EBADF), "IMPORT of fd -1");
	T(ERR(ximport(fd, nfd, &im), EINVAL), "IMPORT of /dev/null");
	T(ERR(ximport(fd, fd, &im), EINVAL), "IMPORT of the node itself");
	T(xalloc(fd, PG, &a) == 0 && xexport(fd, a.handle, &dfd) == 0, "ALLOC, EXPORT");
	memset(&im, 0, sizeof(im));
	im.size = sizeof(im) + 8;
	im.fd = dfd;
	T(ERR(ioctl(fd, CNUASGPU_IOC_IMPORT_DMABUF, &im), EINVAL), "IMPORT size");
	im.size = sizeof(im);
	im.flags = 1;
	T(ERR(ioctl(fd, CNUASGPU_IOC_IMPORT_DMABUF, &im), EINVAL), "IMPORT flags");
	im.flags = 0;
	im.length = 1;
	T(ERR(ioctl(fd, CNUASGPU_IOC_IMPORT_DMABUF, &im), EINVAL), "IMPORT out field set");
	memset(&x, 0, sizeof(x));
	x.handle = a.handle;
	x.flags = 2;
	T(ERR(ioctl(fd, CNUASGPU_IOC_EXPORT_DMABUF, &x), EINVAL), "EXPORT flags");
	x.flags = 0;
	x.reserved = 1;
	T(ERR(ioctl(fd, CNUASGPU_IOC_EXPORT_DMABUF, &x), EINVAL), "EXPORT reserved");
	x.reserved = 0;
	x.fd = 3;
	T(ERR(ioctl(fd, CNUASGPU_IOC_EXPORT_DMABUF, &x), EINVAL), "EXPORT fd set");
	T(ERR(xexport(fd, a.handle + 77, &dfd), ENOENT), "EXPORT of no handle");
	if (features & CNUASGPU_CAP_PINNED) {
		uint8_t *buf = xmap_anon(PG);
		uint32_t h;

		T(xpin(fd, buf, PG, &h) == 0, "PIN");
		T(ERR(xexport(fd, h, &dfd), ENOENT), "EXPORT of a pin");
		xunpin(fd, h);
		munmap(buf, PG);
	}
	close(dfd);
	xfree(fd, a.handle);
	close(nfd);
	T(sysfs_wait("exports", 0, 2000) == 0 && sysfs_wait("devmem_used", 0, 2000) == 0,
	  "all released");
	tc_end(t);
}

/* With a second node loaded: its DMA-BUFs are not this node's to import. */
static void case_dmabuf_other_node(int fd)
{
	struct tc t_ = { .name = "dmabuf_other_node" }, *t = &t_;
	const char *other = strcmp(dev_path, "/dev/cnuasgpu_host1") ?
			    "/dev/cnuasgpu_host1" : "/dev/cnuasgpu_host0";
	struct cnuasgpu_import im;
	struct cnuasgpu_alloc a;
	int ofd = open(other, O_RDWR | O_CLOEXEC), dfd = -1;

	if (ofd < 0)
		return;		/* one node: no case */
	T(xalloc(fd, PG, &a) == 0 && xexport(fd, a.handle, &dfd) == 0, "ALLOC, EXPORT");
	T(ERR(ximport(ofd, dfd, &im), EXDEV), "IMPORT on %s", other);
	close(dfd);
	xfree(fd, a.handle);
	close(ofd);
	tc_end(t);
}

/*
 * ibv_reg_dmabuf_mr of an export on cnuas_ib, and RDMA into and out of it
 * over a loopback RC connection: WRITE from a host MR into the export, READ
 * back into another host MR; the node's copy ioctls check each.
 */
static void case_dmabuf_ib(int fd)
{
	struct tc t_ = { .name = "dmabuf_ib_mr" }, *t = &t_;
	const size_t len = 64 * 1024;
	uint8_t *src = malloc(len), *dst = calloc(1, len), *back = calloc(1, len);
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	uint64_t used0 = sysfs_u64("devmem_used");
	struct ibv_context *ctx = NULL;
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_mr *dmr = NULL, *smr = NULL, *bmr = NULL;
	struct ibv_qp *qa = NULL, *qb = NULL;
	struct ibv_cq *cq = NULL;
	struct ibv_pd *pd = NULL;
	union ibv_gid gid;
	struct cnuasgpu_alloc a;
	struct ibv_wc wc;
	int dfd = -1;

	for (int i = 0; list && list[i] && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), ib_dev))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	T(ctx != NULL, "no RDMA device %s", ib_dev);
	if (!ctx)
		goto out;
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	T(pd && cq && !ibv_query_gid(ctx, 1, ib_gid_index, &gid), "PD, CQ, GID");
	if (!pd || !cq)
		goto out;
	T(xalloc(fd, len, &a) == 0 && xexport(fd, a.handle, &dfd) == 0, "ALLOC, EXPORT");
	dmr = ibv_reg_dmabuf_mr(pd, 0, len, 0x10000000, dfd, acc);
	T(dmr != NULL, "ibv_reg_dmabuf_mr: %s", strerror(errno));
	pattern(src, len, 5);
	smr = ibv_reg_mr(pd, src, len, acc);
	bmr = ibv_reg_mr(pd, back, len, acc);
	if (!dmr || !smr || !bmr)
		goto out;
	qa = rc_create_qp(pd, cq, acc);
	qb = rc_create_qp(pd, cq, acc);
	rc_connect(qa, 1, qb->qp_num, 2, gid.raw, 0, ib_gid_index, IBV_MTU_1024, 7);
	rc_connect(qb, 2, qa->qp_num, 1, gid.raw, 0, ib_gid_index, IBV_MTU_1024, 7);

	struct ibv_sge sge = { .addr = (uintptr_t)src, .length = len, .lkey = smr->lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { .remote_addr = 0x10000000, .rkey = dmr->rkey } };
	struct ibv_send_wr *bad;

	T(!ibv_post_send(qa, &wr, &bad) && poll_one(cq, &wc, 20000) &&
	  wc.status == IBV_WC_SUCCESS, "RDMA WRITE into the export");
	T(xcopy(fd, 0, a.handle, 0, dst, len) == 0 && !memcmp(src, dst, len),
	  "the WRITE landed in the allocation");
	sge.addr = (uintptr_t)back;
	sge.lkey = bmr->lkey;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.wr_id = 2;
	T(!ibv_post_send(qa, &wr, &bad) && poll_one(cq, &wc, 20000) &&
	  wc.status == IBV_WC_SUCCESS && !memcmp(back, src, len), "RDMA READ out of it");
	/* the MR holds the DMA-BUF: freed and closed, the allocation stays */
	T(xfree(fd, a.handle) == 0, "FREE");
	close(dfd);
	dfd = -1;
	T(sysfs_u64("devmem_used") == used0 + len && sysfs_u64("exports") == 1,
	  "the MR keeps the allocation reserved");
	ibv_dereg_mr(dmr);
	dmr = NULL;
	T(sysfs_wait("exports", 0, 5000) == 0 &&
	  sysfs_wait("devmem_used", used0, 5000) == used0, "deregistration releases it");
out:
	if (qa)
		ibv_destroy_qp(qa);
	if (qb)
		ibv_destroy_qp(qb);
	if (dmr)
		ibv_dereg_mr(dmr);
	if (smr)
		ibv_dereg_mr(smr);
	if (bmr)
		ibv_dereg_mr(bmr);
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	if (ctx)
		ibv_close_device(ctx);
	if (dfd >= 0)
		close(dfd);
	free(src);
	free(dst);
	free(back);
	tc_end(t);
}

static void case_dmabuf_off(int fd)
{
	struct tc t_ = { .name = "dmabuf_off" }, *t = &t_;
	struct cnuasgpu_import im;
	struct cnuasgpu_alloc a;
	int dfd;

	T(xalloc(fd, PG, &a) == 0, "ALLOC");
	T(ERR(xexport(fd, a.handle, &dfd), EOPNOTSUPP), "EXPORT");
	T(ERR(ximport(fd, 0, &im), EOPNOTSUPP), "IMPORT");
	T(!(caps.caps & (CNUASGPU_CAP_DMABUF | CNUASGPU_CAP_PEER_RDMA)), "CAPS");
	xfree(fd, a.handle);
	tc_end(t);
}

/* ---- asynchronous queues ------------------------------------------------ */

static void case_async_ops(int fd)
{
	struct tc t_ = { .name = "async_ops" }, *t = &t_;
	const size_t len = 128 * 1024;
	uint8_t *src = xmap_anon(len), *dst = xmap_anon(len), *pdst = xmap_anon(len);
	struct cnuasgpu_completion c[8];
	struct cnuasgpu_op ops[8];
	struct cnuasgpu_alloc a;
	struct cnuasgpu_reap r;
	uint32_t pin = 0, n = 0;
	uint64_t seq;
	int got;

	T(caps.queue_depth >= 4, "queue_depth %u below 4: case needs 4", caps.queue_depth);
	if (caps.queue_depth < 4)
		goto out;
	T(xalloc(fd, len, &a) == 0, "ALLOC");
	pattern(src, len, 11);
	ops[n++] = op_fill(a.handle, 0, len, 0x77, 100);
	ops[n++] = op_copy(1, a.handle, PG, (uintptr_t)src, len - 2 * PG, 0, 101);
	ops[n++] = op_copy(0, a.handle, 0, (uintptr_t)dst, len, 0, 102);
	if ((features & CNUASGPU_CAP_PINNED) && !xpin(fd, pdst, len, &pin))
		ops[n++] = op_copy(0, a.handle, 0, 0, len, pin, 103);
	T(submit_split(fd, ops, n, &seq) == 0, "SUBMIT: %s", strerror(errno));
	got = xreap(fd, seq + n - 1, 30000, c, n, &r) ? -1 : (int)r.count;
	T(got == (int)n, "WAIT took %d of %u", got, n);
	T(r.submitted == seq + n - 1 && r.completed == r.submitted && r.reaped == r.submitted,
	  "submitted %llu completed %llu reaped %llu", (unsigned long long)r.submitted,
	  (unsigned long long)r.completed, (unsigned long long)r.reaped);
	for (int i = 0; i < got; i++)
		T(c[i].seq == seq + i && c[i].status == 0 && c[i].user_data == 100u + i &&
		  c[i].opcode == ops[i].opcode, "completion %d: seq %llu status %d", i,
		  (unsigned long long)c[i].seq, c[i].status);
	T(dst[0] == 0x77 && dst[PG - 1] == 0x77 && dst[len - 1] == 0x77 &&
	  !memcmp(dst + PG, src, len - 2 * PG), "ops ran in order");
	if (pin)
		T(!memcmp(pdst, dst, len), "the pinned copy");
	if (pin) {
		/* pinned to device, then read back */
		pattern(pdst, len, 12);
		ops[0] = op_copy(1, a.handle, 0, 0, len, pin, 1);
		T(xsubmit(fd, ops, 1, &seq) == 0 && wait_all(fd, seq, c) == 1 && !c[0].status,
		  "pinned COPY_TO_DEV");
		T(xcopy(fd, 0, a.handle, 0, dst, len) == 0 && !memcmp(pdst, dst, len),
		  "pinned COPY_TO_DEV landed");
		T(xunpin(fd, pin) == 0, "UNPIN");
	}
	T(xfree(fd, a.handle) == 0, "FREE");
out:
	munmap(src, len);
	munmap(dst, len);
	munmap(pdst, len);
	tc_end(t);
}

/* A user host side that faults is the op's status, not SUBMIT's errno. */
static void case_async_fault(int fd)
{
	struct tc t_ = { .name = "async_fault" }, *t = &t_;
	struct cnuasgpu_completion c[2];
	struct cnuasgpu_op ops[2];
	struct cnuasgpu_alloc a;
	uint64_t seq;

	T(xalloc(fd, PG, &a) == 0, "ALLOC");
	ops[0] = op_copy(1, a.handle, 0, 1ull << 46, PG, 0, 1);
	ops[1] = op_copy(0, a.handle, 0, 8, PG, 0, 2);
	if (caps.batch_max < 2) {
		T(xsubmit(fd, ops, 1, &seq) == 0 && wait_all(fd, seq, c) == 1 &&
		  c[0].status == -EFAULT, "status %d", c[0].status);
	} else {
		T(xsubmit(fd, ops, 2, &seq) == 0 && wait_all(fd, seq + 1, c) == 2 &&
		  c[0].status == -EFAULT && c[1].status == -EFAULT, "status %d %d",
		  c[0].status, c[1].status);
	}
	xfree(fd, a.handle);
	tc_end(t);
}

/* queue_depth ops are taken without a completion taken: the next is EAGAIN. */
static void case_async_depth(int fd)
{
	struct tc t_ = { .name = "async_depth" }, *t = &t_;
	uint32_t depth = caps.queue_depth, n = 0;
	struct cnuasgpu_completion *c = calloc(depth, sizeof(*c));
	struct cnuasgpu_op *ops = calloc(caps.batch_max, sizeof(*ops));
	struct cnuasgpu_alloc a;
	struct cnuasgpu_reap r;
	uint64_t seq, first = 0, last = 0;

	T(xalloc(fd, PG, &a) == 0, "ALLOC");
	while (n < depth) {
		uint32_t k = depth - n < caps.batch_max ? depth - n : caps.batch_max;

		for (uint32_t i = 0; i < k; i++)
			ops[i] = op_fill(a.handle, 0, PG, (n + i) & 0xff, n + i);
		if (xsubmit(fd, ops, k, &seq)) {
			T(0, "SUBMIT at %u: %s", n, strerror(errno));
			break;
		}
		if (!first)
			first = seq;
		T(seq == first + n, "first_seq %llu", (unsigned long long)seq);
		n += k;
		last = seq + k - 1;
	}
	T(ERR(xsubmit(fd, ops, 1, NULL), EAGAIN), "one op over queue_depth");
	T(xreap(fd, last, 30000, c, 1, &r) == 0 && r.count == 1 && c[0].seq == first,
	  "WAIT for the last, take the oldest");
	T(xsubmit(fd, ops, 1, &seq) == 0 && seq == last + 1, "one slot free again");
	T(ERR(xsubmit(fd, ops, 1, NULL), EAGAIN), "full again");
	T(xreap(fd, seq, 30000, c, depth, &r) == 0 && r.count == depth &&
	  c[depth - 1].seq == seq && r.reaped == seq, "take all %u", depth);
	T(xreap(fd, 0, 0, c, depth, &r) == 0 && r.count == 0, "nothing left");
	xfree(fd, a.handle);
	free(c);
	free(ops);
	tc_end(t);
}

static void case_async_batch(int fd)
{
	struct tc t_ = { .name = "async_batch" }, *t = &t_;
	uint32_t bmax = caps.batch_max;
	struct cnuasgpu_op *ops = calloc(bmax + 1, sizeof(*ops));
	struct cnuasgpu_completion c[1];
	struct cnuasgpu_submit s;
	struct cnuasgpu_alloc a;
	struct cnuasgpu_reap r;
	uint8_t buf[64];
	uint64_t seq;

	T(xalloc(fd, PG, &a) == 0, "ALLOC");
	for (uint32_t i = 0; i <= bmax; i++)
		ops[i] = op_fill(a.handle, 0, 64, 1, i);
	T(ERR(xsubmit(fd, ops, bmax + 1, NULL), EINVAL), "batch_max + 1 ops");
	T(ERR(xsubmit(fd, ops, 0, NULL), EINVAL), "0 ops");
	memset(&s, 0, sizeof(s));
	s.size = sizeof(s);
	s.op_size = sizeof(*ops) - 8;
	s.ops_ptr = (uintptr_t)ops;
	s.count = 1;
	T(ERR(ioctl(fd, CNUASGPU_IOC_SUBMIT, &s), EINVAL), "op_size");
	s.op_size = sizeof(*ops);
	s.size = sizeof(s) + 8;
	T(ERR(ioctl(fd, CNUASGPU_IOC_SUBMIT, &s), EINVAL), "size");
	s.size = sizeof(s);
	s.flags = 1;
	T(ERR(ioctl(fd, CNUASGPU_IOC_SUBMIT, &s), EINVAL), "flags");
	s.flags = 0;
	s.first_seq = 1;
	T(ERR(ioctl(fd, CNUASGPU_IOC_SUBMIT, &s), EINVAL), "first_seq set");
	s.first_seq = 0;
	s.ops_ptr = 8;
	T(ERR(ioctl(fd, CNUASGPU_IOC_SUBMIT, &s), EFAULT), "ops array");
	/* bad ops; the last op of a batch bad: nothing of it is queued */
	struct { struct cnuasgpu_op op; int err; const char *what; } bad[] = {
		{ { .opcode = 9, .handle = a.handle, .length = 1 }, EINVAL, "opcode" },
		{ { .opcode = CNUASGPU_OP_FILL, .handle = a.handle, .length = 0 }, EINVAL,
		  "length 0" },
		{ { .opcode = CNUASGPU_OP_FILL, .handle = a.handle, .length = 1, .value = 256 },
		  EINVAL, "value 256" },
		{ { .opcode = CNUASGPU_OP_FILL, .handle = a.handle, .length = 1, .host = 1 },
		  EINVAL, "FILL with host" },
		{ { .opcode = CNUASGPU_OP_FILL, .handle = a.handle, .length = 1, .reserved = 1 },
		  EINVAL, "reserved" },
		{ { .opcode = CNUASGPU_OP_FILL, .handle = a.handle, .length = 1, .flags = 2 },
		  EINVAL, "flags" },
		{ { .opcode = CNUASGPU_OP_COPY_TO_DEV, .handle = a.handle, .length = 1,
		    .host = (uintptr_t)buf, .value = 1 }, EINVAL, "copy with value" },
		{ { .opcode = CNUASGPU_OP_COPY_TO_DEV, .handle = a.handle, .length = 1,
		    .host = (uintptr_t)buf, .pin_handle = 3 }, EINVAL, "pin_handle unflagged" },
		{ { .opcode = CNUASGPU_OP_COPY_TO_DEV, .handle = a.handle, .length = 16,
		    .host = UINT64_MAX - 8 }, EINVAL, "host range wraps" },
		{ { .opcode = CNUASGPU_OP_FILL, .handle = a.handle, .offset = PG - 1,
		    .length = 2 }, EINVAL, "past the allocation" },
		{ { .opcode = CNUASGPU_OP_FILL, .handle = a.handle, .offset = UINT64_MAX,
		    .length = 2 }, EINVAL, "offset wraps" },
		{ { .opcode = CNUASGPU_OP_FILL, .handle = a.handle + 50, .length = 1 }, ENOENT,
		  "unknown handle" },
	};
	T(xreap(fd, 0, 0, c, 0, &r) == 0, "POLL");
	seq = r.submitted;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint32_t k = bmax >= 2 ? 2 : 1;

		ops[k - 1] = bad[i].op;
		T(ERR(xsubmit(fd, ops, k, NULL), bad[i].err), "bad op: %s", bad[i].what);
	}
	T(xreap(fd, 0, 0, c, 0, &r) == 0 && r.submitted == seq, "nothing was queued");
	free(ops);
	xfree(fd, a.handle);
	tc_end(t);
}

static void case_async_reap_errors(int fd)
{
	struct tc t_ = { .name = "async_reap_errors" }, *t = &t_;
	struct cnuasgpu_completion c[1];
	struct cnuasgpu_reap r;
	struct cnuasgpu_op op;
	struct cnuasgpu_alloc a;
	uint64_t seq;

	T(xalloc(fd, PG, &a) == 0, "ALLOC");
	op = op_fill(a.handle, 0, PG, 0, 0);
	T(xsubmit(fd, &op, 1, &seq) == 0, "SUBMIT");
	T(ERR(xreap(fd, seq + 1, 10, c, 1, &r), EINVAL), "WAIT past the last op");
	memset(&r, 0, sizeof(r));
	r.size = sizeof(r);
	r.comp_size = sizeof(c[0]);
	T(ERR(ioctl(fd, CNUASGPU_IOC_WAIT, &r), EINVAL), "WAIT for seq 0");
	r.seq = seq;
	r.timeout_ms = CNUASGPU_WAIT_MAX_TIMEOUT_MS + 1;
	T(ERR(ioctl(fd, CNUASGPU_IOC_WAIT, &r), EINVAL), "timeout too long");
	r.timeout_ms = 0;
	r.seq = 1;
	T(ERR(ioctl(fd, CNUASGPU_IOC_POLL, &r), EINVAL), "POLL with seq");
	r.seq = 0;
	r.timeout_ms = 5;
	T(ERR(ioctl(fd, CNUASGPU_IOC_POLL, &r), EINVAL), "POLL with timeout");
	r.timeout_ms = 0;
	r.max = caps.queue_depth + 1;
	T(ERR(ioctl(fd, CNUASGPU_IOC_POLL, &r), EINVAL), "max above queue_depth");
	r.max = 1;
	r.comp_size = 16;
	T(ERR(ioctl(fd, CNUASGPU_IOC_POLL, &r), EINVAL), "comp_size");
	r.comp_size = sizeof(c[0]);
	r.count = 1;
	T(ERR(ioctl(fd, CNUASGPU_IOC_POLL, &r), EINVAL), "out field set");
	r.count = 0;
	r.flags = 1;
	T(ERR(ioctl(fd, CNUASGPU_IOC_POLL, &r), EINVAL), "flags");
	r.flags = 0;
	r.size = 32;
	T(ERR(ioctl(fd, CNUASGPU_IOC_POLL, &r), EINVAL), "size");
	/* a bad array takes nothing */
	T(xreap(fd, seq, 30000, c, 0, &r) == 0 && r.count == 0 && r.completed == seq,
	  "WAIT with max 0");
	T(ERR(xreap(fd, 0, 0, (void *)8, 1, &r), EFAULT), "bad completion array");
	T(xreap(fd, 0, 0, c, 1, &r) == 0 && r.count == 1 && c[0].seq == seq,
	  "the completion is still there");
	xfree(fd, a.handle);
	tc_end(t);
}

static void case_async_poll(int fd)
{
	struct tc t_ = { .name = "async_poll" }, *t = &t_;
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLOUT };
	struct cnuasgpu_completion c[1];
	struct cnuasgpu_reap r;
	struct cnuasgpu_op op;
	struct cnuasgpu_alloc a;
	uint64_t seq;

	T(poll(&p, 1, 0) == 1 && p.revents == POLLOUT, "idle: POLLOUT only (0x%x)",
	  p.revents);
	T(xalloc(fd, 4 * MIB, &a) == 0, "ALLOC");
	op = op_fill(a.handle, 0, 4 * MIB, 5, 0);
	T(xsubmit(fd, &op, 1, &seq) == 0, "SUBMIT");
	p.events = POLLIN;
	T(poll(&p, 1, 30000) == 1 && (p.revents & POLLIN), "POLLIN once it completed");
	T(xreap(fd, 0, 0, c, 1, &r) == 0 && r.count == 1 && c[0].seq == seq, "POLL takes it");
	p.events = POLLIN | POLLOUT;
	T(poll(&p, 1, 0) == 1 && p.revents == POLLOUT, "taken: POLLOUT only (0x%x)",
	  p.revents);
	xfree(fd, a.handle);
	tc_end(t);
}

/* FREE of an allocation a queued op uses: the space stays until the op is done. */
static void case_async_free_queued(int fd)
{
	struct tc t_ = { .name = "async_free_queued" }, *t = &t_;
	uint64_t used0 = sysfs_u64("devmem_used"), len = 8 * MIB, seq;
	struct cnuasgpu_completion c[2];
	struct cnuasgpu_op ops[2];
	struct cnuasgpu_alloc a;
	uint32_t k = caps.batch_max >= 2 ? 2 : 1;

	T(xalloc(fd, len, &a) == 0, "ALLOC");
	ops[0] = op_fill(a.handle, 0, len, 1, 0);
	ops[1] = op_fill(a.handle, 0, len, 2, 1);
	T(xsubmit(fd, ops, k, &seq) == 0, "SUBMIT");
	T(xfree(fd, a.handle) == 0, "FREE with ops queued");
	T(wait_all(fd, seq + k - 1, c) == (int)k && !c[k - 1].status, "the ops complete");
	T(sysfs_wait("devmem_used", used0, 2000) == used0, "released after the ops");
	tc_end(t);
}

/* Close with ops in flight: cancelled, nothing held afterwards. */
static void case_async_close_inflight(void)
{
	struct tc t_ = { .name = "async_close_inflight" }, *t = &t_;
	uint64_t used0 = sysfs_u64("devmem_used"), big = caps.devmem_size / 2;
	struct cnuasgpu_op *ops = calloc(caps.batch_max, sizeof(*ops));
	struct cnuasgpu_alloc a;
	int fd2 = open_node();

	T(xalloc(fd2, big, &a) == 0, "ALLOC");
	for (uint32_t i = 0; i < caps.batch_max; i++)
		ops[i] = op_fill(a.handle, 0, big, i, i);
	T(xsubmit(fd2, ops, caps.batch_max, NULL) == 0, "SUBMIT");
	close(fd2);
	T(sysfs_wait("inflight", 0, 30000) == 0, "inflight back to 0");
	T(sysfs_wait("devmem_used", used0, 2000) == used0, "devmem_used back");
	free(ops);
	tc_end(t);
}

/*
 * Close while the running op's user side is blocked in a page fault (a
 * userfaultfd range nobody serves): close returns at once and lets go of
 * the handles; the op keeps its allocation, its slot in inflight and the
 * module until the fault returns (here the userfaultfd goes, as when its
 * server exits), then everything goes.
 */
static void case_async_close_blocked_fault(void)
{
	struct tc t_ = { .name = "async_close_blocked_fault" }, *t = &t_;
	uint64_t used0 = sysfs_u64("devmem_used");
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct pollfd p = { .events = POLLIN };
	struct timespec t0, t1;
	struct cnuasgpu_alloc a;
	struct cnuasgpu_op op;
	struct uffd_msg msg;
	uint8_t *buf = xmap_anon(PG), *host;
	uint32_t pin = 0;
	long ref0, ms;
	int uffd, fd2;

	uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	T(uffd >= 0, "userfaultfd: %s (root, or vm.unprivileged_userfaultfd=1)",
	  strerror(errno));
	if (uffd < 0)
		goto out;
	host = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	reg.range.start = (uintptr_t)host;
	reg.range.len = 2 * PG;
	if (host == MAP_FAILED || ioctl(uffd, UFFDIO_API, &api) ||
	    ioctl(uffd, UFFDIO_REGISTER, &reg)) {
		T(0, "userfaultfd set-up: %s", strerror(errno));
		close(uffd);
		goto out;
	}
	ref0 = module_refcnt();
	fd2 = open_node();
	T(xalloc(fd2, PG, &a) == 0, "ALLOC");
	if (features & CNUASGPU_CAP_PINNED)
		T(xpin(fd2, buf, PG, &pin) == 0, "PIN: %s", strerror(errno));
	op = op_copy(1, a.handle, 0, (uintptr_t)host, PG, 0, 1);
	T(xsubmit(fd2, &op, 1, NULL) == 0, "SUBMIT: %s", strerror(errno));
	p.fd = uffd;
	T(poll(&p, 1, 10000) == 1 && read(uffd, &msg, sizeof(msg)) == sizeof(msg) &&
	  msg.event == UFFD_EVENT_PAGEFAULT && msg.arg.pagefault.address == (uintptr_t)host,
	  "the worker's fault never reached the userfaultfd");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	close(fd2);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	T(ms < 1000, "close took %ld ms", ms);
	T(sysfs_u64("inflight") == 1, "inflight %" PRIu64 " while the fault blocks",
	  sysfs_u64("inflight"));
	T(sysfs_u64("devmem_used") == used0 + PG, "the blocked op keeps its allocation");
	T(sysfs_u64("pinned_used") == 0 && sysfs_u64("pins") == 0, "close unpins at once");
	T(ref0 < 0 || module_refcnt() == ref0 + 1, "module refcnt %ld while blocked, %ld before",
	  module_refcnt(), ref0);
	close(uffd);	/* its server is gone: the fault goes on, the op completes */
	T(sysfs_wait("inflight", 0, 10000) == 0, "inflight %" PRIu64 " after the fault",
	  sysfs_u64("inflight"));
	T(sysfs_wait("devmem_used", used0, 2000) == used0, "devmem_used after the fault");
	for (int i = 0; i < 200 && module_refcnt() != ref0; i++)
		usleep(10000);
	T(module_refcnt() == ref0, "module refcnt %ld after the fault, %ld before",
	  module_refcnt(), ref0);
	munmap(host, 2 * PG);
out:
	munmap(buf, PG);
	tc_end(t);
}

static void case_async_death(void)
{
	struct tc t_ = { .name = "async_killed_mid_queue" }, *t = &t_;

	child_dies(t, 1);
	tc_end(t);
}

static void case_async_off(int fd)
{
	struct tc t_ = { .name = "async_off" }, *t = &t_;
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLOUT };
	struct cnuasgpu_completion c[1];
	struct cnuasgpu_reap r;
	struct cnuasgpu_op op = { 0 };

	T(ERR(xsubmit(fd, &op, 1, NULL), EOPNOTSUPP), "SUBMIT");
	T(ERR(xreap(fd, 0, 0, c, 1, &r), EOPNOTSUPP), "POLL");
	T(ERR(xreap(fd, 1, 0, c, 1, &r), EOPNOTSUPP), "WAIT");
	T(poll(&p, 1, 0) == 1 && p.revents == POLLERR, "poll(): 0x%x", p.revents);
	T(!(caps.caps & CNUASGPU_CAP_ASYNC) && !caps.queue_depth && !caps.batch_max, "CAPS");
	tc_end(t);
}

/* ---- the node ---------------------------------------------------------- */

static void case_devnode_mode(void)
{
	struct tc t_ = { .name = "devnode_mode" }, *t = &t_;
	struct stat st;
	int status = -1;
	pid_t pid;

	T(stat(dev_path, &st) == 0 && S_ISCHR(st.st_mode), "stat");
	T((st.st_mode & 07777) == want_mode, "mode 0%o, loaded with 0%o",
	  st.st_mode & 07777, want_mode);
	if (!geteuid()) {
		pid = fork();
		if (!pid) {
			int fd;

			if (setgid(65534) || setuid(65534))
				_exit(3);
			fd = open(dev_path, O_RDWR);
			if (fd >= 0)
				_exit(0);
			_exit(errno == EACCES ? 1 : 2);
		}
		waitpid(pid, &status, 0);
		T(WIFEXITED(status) && WEXITSTATUS(status) ==
		  ((want_mode & 06) == 06 ? 0 : 1), "an unprivileged open: exit %d",
		  WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	}
	tc_end(t);
}

/* Everything this program did is gone from the node. */
static void case_no_leaks(void)
{
	struct tc t_ = { .name = "no_leaks" }, *t = &t_;
	static const char *const attrs[] = {
		"devmem_used", "allocations", "exports", "pinned_used", "pins", "inflight",
	};

	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++)
		T(sysfs_wait(attrs[i], 0, 5000) == 0, "%s %" PRIu64, attrs[i],
		  sysfs_u64(attrs[i]));
	tc_end(t);
}

/* ---- main ---------------------------------------------------------------- */

static int parse_features(const char *s, uint32_t *out)
{
	static const char *const names[] = { "zerocopy", "pinned", "dmabuf", "async" };
	char *copy = strdup(s), *save = NULL;
	uint32_t f = 0;

	if (strcmp(s, "none")) {
		for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
			int i;

			for (i = 0; i < 4 && strcmp(w, names[i]); i++)
				;
			if (i == 4) {
				free(copy);
				return -1;
			}
			f |= 1u << i;
		}
	}
	free(copy);
	*out = f;
	return 0;
}

int main(int argc, char **argv)
{
	const char *base;
	char *colon;
	int opt, fd;

	while ((opt = getopt(argc, argv, "d:F:m:i:")) != -1) {
		switch (opt) {
		case 'd':
			dev_path = optarg;
			break;
		case 'F':
			if (parse_features(optarg, &features))
				goto usage;
			break;
		case 'm':
			want_mode = strtoul(optarg, NULL, 8);
			break;
		case 'i':
			ib_dev = optarg;
			colon = strchr(optarg, ':');
			if (!colon)
				goto usage;
			*colon = 0;
			ib_gid_index = atoi(colon + 1);
			break;
		default:
			goto usage;
		}
	}
	if (optind != argc)
		goto usage;
	base = strrchr(dev_path, '/');
	snprintf(sysdir, sizeof(sysdir), "/sys/class/cnuasgpu_host/%s",
		 base ? base + 1 : dev_path);
	setvbuf(stdout, NULL, _IOLBF, 0);

	fd = open_node();
	case_caps(fd);		/* first: the others read caps */
	case_info(fd);
	case_caps_errors(fd);
	case_unknown_ioctl(fd);
	case_alloc_copy_free(fd);
	case_alloc_errors(fd);
	case_copy_errors(fd);
	case_handles_per_file(fd);
	if (features & CNUASGPU_CAP_ZEROCOPY) {
		case_mmap_coherent(fd);
		case_mmap_errors(fd);
	} else {
		case_zerocopy_off(fd);
	}
	if (features & CNUASGPU_CAP_PINNED) {
		case_pin_ceiling(fd);
		case_pin_errors(fd);
		case_pin_close();
		case_pin_death();
	} else {
		case_pinned_off(fd);
	}
	if (features & CNUASGPU_CAP_DMABUF) {
		case_dmabuf_import(fd);
		case_dmabuf_two_processes(fd);
		case_dmabuf_errors(fd);
		case_dmabuf_other_node(fd);
		if (ib_dev)
			case_dmabuf_ib(fd);
	} else {
		case_dmabuf_off(fd);
	}
	if (features & CNUASGPU_CAP_ASYNC) {
		case_async_ops(fd);
		case_async_fault(fd);
		case_async_depth(fd);
		case_async_batch(fd);
		case_async_reap_errors(fd);
		case_async_poll(fd);
		case_async_free_queued(fd);
		case_async_close_inflight();
		case_async_close_blocked_fault();
		case_async_death();
	} else {
		case_async_off(fd);
	}
	case_devnode_mode();
	close(fd);
	case_no_leaks();
	printf("%s\n", case_failures ? "FAIL" : "PASS");
	return case_failures ? 1 : 0;

usage:
	fprintf(stderr, "usage: cnuasgpu_host_test [-d DEV] [-F zerocopy,pinned,dmabuf,async|none] "
		"[-m MODE] [-i IBDEV:GID_INDEX]\n");
	return 2;
}
