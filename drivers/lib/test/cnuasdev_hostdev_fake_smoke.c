// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * cnuasdev_hostdev_fake_smoke: libcnuasdev with no device at all - the
 * datasheet's "userspace selection, capabilities and error paths" check.
 * Runs on any Linux host (no module, no node, no guest) and in a guest
 * before a module is loaded; with a /dev/cnuasgpu* node present it refuses
 * to run (exit 2).  Soft-GPU is the only backend that can answer.
 *
 * One line per group of checks: "NAME: ok" or "NAME: FAIL"; the details of
 * a failure on stderr; then "smoke=PASS checks=N" or "smoke=FAIL ...".
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cnuasdev_test.h"

#define SOFT_DEFAULT_CAPS (CNUASDEV_CAP_ZEROCOPY | CNUASDEV_CAP_PINNED | CNUASDEV_CAP_ASYNC)

static void group(const char *name, int failed_before)
{
	printf("%s: %s\n", name, failures > failed_before ? "FAIL" : "ok");
	fflush(stdout);
}

/* Open @spec; check the code and, when it opened, the backend; close. */
static void opens(const char *spec, uint32_t flags, int want, uint32_t backend)
{
	struct cnuasdev *d = (struct cnuasdev *)&d;	/* not NULL: open must set it */
	struct cnuasdev_props p = { .size = sizeof(p) };
	int rc = cnuasdev_open(spec, flags, &d);

	CHECK(rc == want, "open '%s' flags %u: %s, expected %s", spec ? spec : "(null)", flags,
	      E(rc), E(want));
	if (rc) {
		CHECK(d == NULL, "open '%s' failed but left *dev set", spec ? spec : "(null)");
		return;
	}
	CHECK(cnuasdev_query(d, &p) == 0 && p.backend == backend,
	      "open '%s' gave backend %s, expected %s", spec ? spec : "(null)",
	      cnuasdev_backend_name(p.backend), cnuasdev_backend_name(backend));
	cnuasdev_close(d);
}

static void clear_env(void)
{
	unsetenv("CNUASDEV_DEVICE");
	unsetenv("CNUASDEV_BACKEND");
	unsetenv("CNUASDEV_DEVDIR");
	unsetenv("CNUASDEV_DEBUG");
}

static void no_devices(void)
{
	struct cnuasdev_devinfo list[4];
	uint32_t n = 99;
	int f = failures;

	CHECK(cnuasdev_enumerate(list, 4, &n) == 0 && n == 1, "enumerate: %u devices", n);
	CHECK(n >= 1 && list[n - 1].backend == CNUASDEV_BACKEND_SOFT &&
	      !strcmp(list[n - 1].name, "soft:0") && !list[n - 1].path[0],
	      "the last device listed is soft:0 with no path");
	CHECK(cnuasdev_enumerate(NULL, 0, &n) == 0 && n == 1, "enumerate with no room: count");
	CHECK(cnuasdev_enumerate(NULL, 1, &n) == -EINVAL, "enumerate NULL list, max 1");
	CHECK(cnuasdev_enumerate(list, 4, NULL) == -EINVAL, "enumerate NULL count");
	group("enumerate", f);
}

static void library(void)
{
	int f = failures;

	CHECK(!strcmp(cnuasdev_version(), "1.0.0"), "version %s", cnuasdev_version());
	CHECK(!strcmp(cnuasdev_backend_name(CNUASDEV_BACKEND_PCIE), "pcie") &&
	      !strcmp(cnuasdev_backend_name(CNUASDEV_BACKEND_HOST), "host") &&
	      !strcmp(cnuasdev_backend_name(CNUASDEV_BACKEND_SOFT), "soft") &&
	      !cnuasdev_backend_name(0) && !cnuasdev_backend_name(7), "backend names");
	CHECK(!strcmp(E(0), "OK") && !strcmp(E(-EOPNOTSUPP), "EOPNOTSUPP") &&
	      !strcmp(E(-12345), "E?"), "error names");
	group("library", f);
}

static void selection(void)
{
	int f = failures;

	opens(NULL, 0, 0, CNUASDEV_BACKEND_SOFT);
	opens("", 0, 0, CNUASDEV_BACKEND_SOFT);
	opens("auto", 0, 0, CNUASDEV_BACKEND_SOFT);
	opens("soft", 0, 0, CNUASDEV_BACKEND_SOFT);
	opens("soft:0", 0, 0, CNUASDEV_BACKEND_SOFT);
	opens("soft:1", 0, -ENODEV, 0);
	opens("pcie", 0, -ENODEV, 0);
	opens("pcie:0", 0, -ENODEV, 0);
	opens("pcie:3", 0, -ENODEV, 0);
	opens("host", 0, -ENODEV, 0);
	opens("host:0", 0, -ENODEV, 0);
	opens("/dev/cnuasgpu0", 0, -ENODEV, 0);
	opens("/dev/cnuasgpu_host0", 0, -ENODEV, 0);
	opens("/dev/null", 0, -ENODEV, 0);	/* opens, answers no cnuasgpu ioctl */
	opens(NULL, CNUASDEV_OPEN_NO_SOFT, -ENODEV, 0);
	opens("auto", CNUASDEV_OPEN_NO_SOFT, -ENODEV, 0);
	opens("bogus", 0, -EINVAL, 0);
	opens("pcie:", 0, -EINVAL, 0);
	opens("pcie:x", 0, -EINVAL, 0);
	opens("pcie:-1", 0, -EINVAL, 0);
	opens("soft:0:1", 0, -EINVAL, 0);
	opens("Soft", 0, -EINVAL, 0);
	opens("soft", 0x80, -EINVAL, 0);
	CHECK(cnuasdev_open("soft", 0, NULL) == -EINVAL, "open with NULL dev");
	group("selection.argument", f);

	f = failures;
	setenv("CNUASDEV_BACKEND", "soft", 1);
	opens(NULL, 0, 0, CNUASDEV_BACKEND_SOFT);
	setenv("CNUASDEV_BACKEND", "pcie", 1);
	opens(NULL, 0, -ENODEV, 0);		/* asked for: no falling back to soft */
	opens("soft", 0, 0, CNUASDEV_BACKEND_SOFT);	/* the argument wins */
	setenv("CNUASDEV_BACKEND", "host", 1);
	opens(NULL, 0, -ENODEV, 0);
	setenv("CNUASDEV_BACKEND", "auto", 1);
	opens(NULL, 0, 0, CNUASDEV_BACKEND_SOFT);
	setenv("CNUASDEV_BACKEND", "gpu", 1);
	opens(NULL, 0, -EINVAL, 0);
	setenv("CNUASDEV_DEVICE", "soft:0", 1);
	opens(NULL, 0, 0, CNUASDEV_BACKEND_SOFT);	/* DEVICE wins over BACKEND */
	setenv("CNUASDEV_DEVICE", "host:0", 1);
	setenv("CNUASDEV_BACKEND", "soft", 1);
	opens(NULL, 0, -ENODEV, 0);
	opens("auto", 0, 0, CNUASDEV_BACKEND_SOFT);	/* "auto" skips the environment */
	setenv("CNUASDEV_DEVICE", "soft,devmem_mb=x", 1);
	opens(NULL, 0, -EINVAL, 0);
	clear_env();
	group("selection.environment", f);
}

/* A device directory with files named like nodes that are not devices. */
static void fake_nodes(void)
{
	char dir[] = "/tmp/cnuasdev-fake-XXXXXX", path[128];
	static const char *names[] = {
		"cnuasgpu0", "cnuasgpu_host0", "cnuasgpu_host2", "cnuasgpu01", "cnuasgpux",
		"cnuasgpu_host",
	};
	struct cnuasdev_devinfo list[8];
	uint32_t n = 0;
	int f = failures;

	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp: %s", strerror(errno));
		return;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		close(open(path, O_CREAT | O_WRONLY, 0600));
	}
	setenv("CNUASDEV_DEVDIR", dir, 1);
	CHECK(cnuasdev_enumerate(list, 8, &n) == 0 && n == 4, "fake dir lists %u devices", n);
	if (n == 4) {
		CHECK(!strcmp(list[0].name, "pcie:0") && !strcmp(list[1].name, "host:0") &&
		      !strcmp(list[2].name, "host:2") && !strcmp(list[3].name, "soft:0"),
		      "fake dir order: %s %s %s %s", list[0].name, list[1].name, list[2].name,
		      list[3].name);
		snprintf(path, sizeof(path), "%s/cnuasgpu_host2", dir);
		CHECK(!strcmp(list[2].path, path), "path %s", list[2].path);
	}
	opens("pcie:0", 0, -ENODEV, 0);		/* a file, not a node: no INFO */
	opens("host:2", 0, -ENODEV, 0);
	opens("host:1", 0, -ENODEV, 0);
	opens(NULL, 0, 0, CNUASDEV_BACKEND_SOFT);	/* auto passes them by */
	opens(NULL, CNUASDEV_OPEN_NO_SOFT, -ENODEV, 0);
	setenv("CNUASDEV_DEVDIR", "/nonexistent-cnuasdev", 1);
	CHECK(cnuasdev_enumerate(list, 8, &n) == 0 && n == 1, "no device directory: soft only");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
	clear_env();
	group("selection.fake_nodes", f);
}

static void capabilities(void)
{
	struct cnuasdev_props p = { .size = sizeof(p) };
	struct cnuasdev_mem m = { 0, 0, 0, 4096 };
	struct cnuasdev_completion c;
	struct cnuasdev *d, *d2;
	uint32_t h, n;
	uint64_t s;
	int fd, f = failures;
	void *ptr;

	if (cnuasdev_open("soft", 0, &d)) {
		CHECK(0, "open soft");
		return;
	}
	CHECK(cnuasdev_query(d, &p) == 0, "query");
	CHECK(p.caps == SOFT_DEFAULT_CAPS && cnuasdev_caps(d) == SOFT_DEFAULT_CAPS,
	      "soft caps 0x%x", p.caps);
	CHECK(p.devmem_size == 64ull << 20 && p.alloc_limit == p.devmem_size &&
	      p.pinned_max == 32ull << 20 && p.queue_depth == 64 && p.batch_max == 32 &&
	      p.page_size == (uint32_t)sysconf(_SC_PAGESIZE) && p.devmem_used == 0,
	      "soft defaults: the module's");
	CHECK(!strcmp(p.name, "soft:0") && !p.path[0] && p.abi_version == 1 &&
	      p.fw_version == 0x00010000, "soft identity");
	CHECK(cnuasdev_export_dmabuf(d, 1, &fd) == -EOPNOTSUPP, "export");
	CHECK(cnuasdev_import_dmabuf(d, 0, &m) == -EOPNOTSUPP, "import");
	CHECK(cnuasdev_pollfd(d, &fd) == -EOPNOTSUPP, "pollfd");
	CHECK(cnuasdev_link_send(d, "x", 1, 0, 0) == -EOPNOTSUPP, "link_send");
	CHECK(cnuasdev_link_recv(d, &c, 8, &n, NULL, 0, 0) == -EOPNOTSUPP, "link_recv");
	/* one node, one set of options */
	CHECK(cnuasdev_open("soft,devmem_mb=4", 0, &d2) == -EBUSY, "other options while open");
	CHECK(cnuasdev_open("soft,devmem_mb=64", 0, &d2) == 0, "the same options join");
	cnuasdev_close(d2);
	cnuasdev_close(d);
	group("capabilities.defaults", f);

	f = failures;
	if (cnuasdev_open("soft:0,devmem_mb=4,pinned_max_mb=1,queue_depth=4,batch_max=2,"
			  "zerocopy=0,pinned=0,async=0,dmabuf=0", 0, &d)) {
		CHECK(0, "open soft with every feature off");
		return;
	}
	p.size = sizeof(p);
	CHECK(cnuasdev_query(d, &p) == 0 && p.caps == 0 && p.devmem_size == 4ull << 20 &&
	      p.pinned_max == 0 && p.queue_depth == 0 && p.batch_max == 0, "features off");
	CHECK(cnuasdev_open("soft", 0, &d2) == 0 && cnuasdev_caps(d2) == 0,
	      "no options: join the node as it is");
	cnuasdev_close(d2);
	/* off: EOPNOTSUPP before any argument is looked at, NULLs included */
	CHECK(cnuasdev_map(d, NULL, NULL) == -EOPNOTSUPP, "map");
	CHECK(cnuasdev_pin(d, NULL, 0, NULL) == -EOPNOTSUPP, "pin");
	CHECK(cnuasdev_unpin(d, 1) == -EOPNOTSUPP, "unpin");
	CHECK(cnuasdev_submit(d, NULL, 0, NULL) == -EOPNOTSUPP, "submit");
	CHECK(cnuasdev_poll(d, NULL, 0, NULL, NULL) == -EOPNOTSUPP, "poll");
	CHECK(cnuasdev_wait(d, 1, 0, &c, 1, &n, NULL) == -EOPNOTSUPP, "wait");
	CHECK(cnuasdev_alloc(d, 4ull << 20, 0, 0, &m) == 0, "all 4 MiB");
	CHECK(cnuasdev_alloc(d, 4096, 0, 0, &m) == -ENOMEM, "a page more");
	cnuasdev_close(d);
	(void)ptr, (void)h, (void)s;
	group("capabilities.switched_off", f);

	f = failures;
	static const char *bad[] = {
		"soft,devmem_mb=0", "soft,devmem_mb=4097", "soft,pinned_max_mb=0",
		"soft,queue_depth=0", "soft,queue_depth=4097", "soft,batch_max=1025",
		"soft,batch_max=65", "soft,queue_depth=8,batch_max=9", "soft,async=2",
		"soft,dmabuf=1", "soft,link=1", "soft,foo=1", "soft,devmem_mb", "soft,",
		"soft,,async=1", "soft,async=1,", "soft,devmem_mb=1x", "host,async=0",
		"pcie:0,zerocopy=0", "/dev/null,async=0",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int want = !strncmp(bad[i], "/dev/", 5) ? -ENODEV : -EINVAL;

		opens(bad[i], 0, want, 0);
	}
	group("capabilities.options", f);
}

static void error_paths(void)
{
	struct cnuasdev_props p = { .size = sizeof(p) - 1 };
	struct cnuasdev_mem m, m2;
	struct cnuasdev *d;
	uint8_t buf[64];
	uint32_t h;
	uint64_t s;
	int f = failures;

	CHECK(cnuasdev_query(NULL, &p) == -EINVAL, "query NULL dev");
	CHECK(cnuasdev_caps(NULL) == 0, "caps NULL");
	CHECK(cnuasdev_close(NULL) == 0, "close NULL");
	CHECK(cnuasdev_alloc(NULL, 1, 0, 0, &m) == -EINVAL, "alloc NULL dev");
	CHECK(cnuasdev_free(NULL, 1) == -EINVAL, "free NULL dev");
	CHECK(cnuasdev_copy_to(NULL, 1, 0, buf, 1) == -EINVAL, "copy NULL dev");
	CHECK(cnuasdev_fill(NULL, 1, 0, 0, 1) == -EINVAL, "fill NULL dev");
	CHECK(cnuasdev_map(NULL, &m, NULL) == -EINVAL, "map NULL dev");
	CHECK(cnuasdev_pin(NULL, buf, 4096, &h) == -EINVAL, "pin NULL dev");
	CHECK(cnuasdev_submit(NULL, NULL, 0, &s) == -EINVAL, "submit NULL dev");
	CHECK(cnuasdev_unmap(buf, sizeof(buf)) == -EINVAL, "unmap of no mapping");
	if (cnuasdev_open(NULL, 0, &d)) {
		CHECK(0, "open");
		return;
	}
	CHECK(cnuasdev_query(d, &p) == -EINVAL, "query with a wrong size");
	p.size = 0;
	CHECK(cnuasdev_query(d, NULL) == -EINVAL, "query NULL props");
	CHECK(cnuasdev_alloc(d, 4096, 0, 0x2, &m) == -EINVAL, "alloc unknown flag");
	CHECK(cnuasdev_alloc(d, 0, 0, 0, &m) == -EINVAL, "alloc 0");
	CHECK(cnuasdev_alloc(d, (64ull << 20) + 1, 0, 0, &m) == -ENOMEM, "alloc past 64 MiB");
	CHECK(cnuasdev_free(d, 0) == -ENOENT && cnuasdev_free(d, 1) == -ENOENT, "free nothing");
	CHECK(cnuasdev_copy_to(d, 1, 0, buf, 1) == -ENOENT, "copy to nothing");
	CHECK(cnuasdev_alloc(d, 100, 0, CNUASDEV_ALLOC_NOZERO, &m) == 0 && m.size == 4096 &&
	      m.offset == 0 && m.handle == 1, "first allocation: handle 1, a page at 0");
	CHECK(cnuasdev_alloc(d, 1, 0, 0, &m2) == 0 && m2.handle == 2 && m2.offset == 4096,
	      "second: handle 2 at 4096");
	CHECK(cnuasdev_copy_to(d, m.handle, 4000, buf, 97) == -EINVAL, "copy past the end");
	CHECK(cnuasdev_copy_to(d, m.handle, 0, (void *)16, 8) == -EFAULT, "copy from page 0");
	CHECK(cnuasdev_pin(d, buf, 4096, NULL) == -EINVAL, "pin NULL handle");
	CHECK(cnuasdev_submit(d, NULL, 1, &s) == -EINVAL, "submit NULL ops");
	CHECK(cnuasdev_free(d, m.handle) == 0 && cnuasdev_free(d, m.handle) == -ENOENT,
	      "double free");
	CHECK(cnuasdev_alloc(d, 1, 0, 0, &m) == 0 && m.handle == 1 && m.offset == 8192,
	      "handle 1 again (the lowest free), behind the top");
	cnuasdev_close(d);
	group("error_paths", f);
}

/* Nothing on stdout or stderr from failing calls, unless CNUASDEV_DEBUG=1 asks. */
static void quiet(void)
{
	char tmpl[] = "/tmp/cnuasdev-quiet-XXXXXX";
	int fd = mkstemp(tmpl), out, err, f = failures;
	struct cnuasdev *d;
	struct stat st;
	off_t before;

	if (fd < 0) {
		CHECK(0, "mkstemp");
		return;
	}
	unlink(tmpl);
	fflush(stdout);
	fflush(stderr);
	out = dup(1);
	err = dup(2);
	dup2(fd, 1);
	dup2(fd, 2);
	cnuasdev_open("pcie", 0, &d);
	cnuasdev_open("bogus", 0, &d);
	cnuasdev_open(NULL, CNUASDEV_OPEN_NO_SOFT, &d);
	cnuasdev_open("soft,foo=1", 0, &d);
	cnuasdev_free(NULL, 1);
	fflush(stdout);
	fstat(fd, &st);
	before = st.st_size;
	setenv("CNUASDEV_DEBUG", "1", 1);
	cnuasdev_open("pcie", 0, &d);
	unsetenv("CNUASDEV_DEBUG");
	fstat(fd, &st);
	dup2(out, 1);
	dup2(err, 2);
	close(out);
	close(err);
	close(fd);
	CHECK(before == 0, "%lld bytes printed without CNUASDEV_DEBUG", (long long)before);
	CHECK(st.st_size > before, "nothing explained with CNUASDEV_DEBUG=1");
	group("quiet", f);
}

/* Several threads on one soft device and on their own opens of the node. */
static struct cnuasdev *shared;
static int thread_errors;

static void *worker(void *arg)
{
	uint8_t in[4096], out[4096];
	uintptr_t id = (uintptr_t)arg;
	struct cnuasdev *own = NULL;
	struct cnuasdev_mem m;
	int bad = 0;

	if (cnuasdev_open("soft", 0, &own))
		bad++;
	for (int i = 0; i < 300 && !bad; i++) {
		struct cnuasdev *d = i % 2 ? shared : own;

		pattern(in, sizeof(in), (uint32_t)(id * 1000 + (uintptr_t)i));
		if (cnuasdev_alloc(d, 8192, 0, 0, &m) ||
		    cnuasdev_copy_to(d, m.handle, 4096, in, sizeof(in)) ||
		    cnuasdev_copy_from(d, m.handle, 4096, out, sizeof(out)) ||
		    memcmp(in, out, sizeof(in)) || cnuasdev_free(d, m.handle))
			bad++;
	}
	cnuasdev_close(own);
	__atomic_add_fetch(&thread_errors, bad, __ATOMIC_RELAXED);
	return NULL;
}

static void threads(void)
{
	struct cnuasdev_props p = { .size = sizeof(p) };
	pthread_t t[4];
	int f = failures;

	if (cnuasdev_open("soft", 0, &shared)) {
		CHECK(0, "open");
		return;
	}
	for (uintptr_t i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	CHECK(thread_errors == 0, "%d thread errors", thread_errors);
	CHECK(cnuasdev_query(shared, &p) == 0 && p.devmem_used == 0, "devmem_used after threads");
	cnuasdev_close(shared);
	group("threads", f);
}

int main(void)
{
	struct cnuasdev_devinfo list[8];
	uint32_t n = 0;

	clear_env();
	if (cnuasdev_enumerate(list, 8, &n) || n != 1) {
		fprintf(stderr, "cnuasdev_hostdev_fake_smoke: %u devices present (%s ...): "
			"this smoke is for a machine with none\n", n, n ? list[0].name : "-");
		return 2;
	}
	library();
	no_devices();
	selection();
	fake_nodes();
	capabilities();
	error_paths();
	quiet();
	threads();
	printf("smoke=%s checks=%lu failed=%d\n", failures ? "FAIL" : "PASS", checks, failures);
	return failures ? 1 : 0;
}
