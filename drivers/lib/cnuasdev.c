// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * libcnuasdev entry points: selection and enumeration of devices, the
 * checks every backend shares (NULL pointers, the library's flags, the
 * capability a call needs, in that order after the device itself), the
 * registry of mappings, and error names.  cnuasdev.h is the contract.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cnuasdev_priv.h"

/* ---- small things ---------------------------------------------------------- */

void cnuasdev_debug(const char *fmt, ...)
{
	const char *env = getenv("CNUASDEV_DEBUG");
	va_list ap;

	if (!env || strcmp(env, "1"))
		return;
	fputs("cnuasdev: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int cnuasdev_parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!s || !*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

CNUASDEV_API const char *cnuasdev_version(void)
{
	return CNUASDEV_VERSION_STRING;
}

CNUASDEV_API const char *cnuasdev_strerror(int code)
{
	switch (code) {
	case 0: return "OK";
	case -EINVAL: return "EINVAL";
	case -ENOENT: return "ENOENT";
	case -ENOMEM: return "ENOMEM";
	case -EFAULT: return "EFAULT";
	case -EOPNOTSUPP: return "EOPNOTSUPP";
	case -EAGAIN: return "EAGAIN";
	case -ETIMEDOUT: return "ETIMEDOUT";
	case -EINTR: return "EINTR";
	case -ENODEV: return "ENODEV";
	case -EACCES: return "EACCES";
	case -EPERM: return "EPERM";
	case -EBUSY: return "EBUSY";
	case -ENOLINK: return "ENOLINK";
	case -EMSGSIZE: return "EMSGSIZE";
	case -EXDEV: return "EXDEV";
	case -EBADF: return "EBADF";
	case -ENOTTY: return "ENOTTY";
	case -ECANCELED: return "ECANCELED";
	case -ENXIO: return "ENXIO";
	default: return "E?";
	}
}

CNUASDEV_API const char *cnuasdev_backend_name(uint32_t backend)
{
	switch (backend) {
	case CNUASDEV_BACKEND_PCIE: return "pcie";
	case CNUASDEV_BACKEND_HOST: return "host";
	case CNUASDEV_BACKEND_SOFT: return "soft";
	default: return NULL;
	}
}

static const char *devdir(void)
{
	const char *d = getenv("CNUASDEV_DEVDIR");

	return d && *d ? d : "/dev";
}

/* ---- enumeration ------------------------------------------------------------ */

/* The node prefix of a kernel backend. */
static const char *node_prefix(uint32_t backend)
{
	return backend == CNUASDEV_BACKEND_HOST ? "cnuasgpu_host" : "cnuasgpu";
}

/* If @name is PREFIX followed by digits only, its number in *@index. */
static int node_index(const char *name, const char *prefix, uint32_t *index)
{
	size_t n = strlen(prefix);
	uint64_t v;

	if (strncmp(name, prefix, n) || cnuasdev_parse_u64(name + n, &v) ||
	    v > 1000000 || (name[n] == '0' && name[n + 1]))
		return 0;
	*index = (uint32_t)v;
	return 1;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* The indices of @backend's nodes in the device directory, sorted; *@out is malloc'd. */
static int list_nodes(uint32_t backend, uint32_t **out, uint32_t *n)
{
	uint32_t *v = NULL, cap = 0, idx;
	struct dirent *e;
	DIR *d;

	*out = NULL;
	*n = 0;
	d = opendir(devdir());
	if (!d)
		return 0;	/* no directory: no nodes */
	while ((e = readdir(d))) {
		if (!node_index(e->d_name, node_prefix(backend), &idx))
			continue;
		if (*n == cap) {
			uint32_t *nv = realloc(v, (cap ? cap * 2 : 8) * sizeof(*v));

			if (!nv) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = nv;
			cap = cap ? cap * 2 : 8;
		}
		v[(*n)++] = idx;
	}
	closedir(d);
	qsort(v, *n, sizeof(*v), cmp_u32);
	*out = v;
	return 0;
}

static void devinfo_fill(struct cnuasdev_devinfo *di, uint32_t backend, uint32_t index)
{
	memset(di, 0, sizeof(*di));
	di->backend = backend;
	di->index = index;
	snprintf(di->name, sizeof(di->name), "%s:%u", cnuasdev_backend_name(backend), index);
	if (backend != CNUASDEV_BACKEND_SOFT)
		snprintf(di->path, sizeof(di->path), "%s/%s%u", devdir(),
			 node_prefix(backend), index);
}

CNUASDEV_API int cnuasdev_enumerate(struct cnuasdev_devinfo *list, uint32_t max,
				    uint32_t *count)
{
	static const uint32_t kinds[] = { CNUASDEV_BACKEND_PCIE, CNUASDEV_BACKEND_HOST };
	uint32_t total = 0, i, k, n, *v;
	int ret;

	if (!count || (!list && max))
		return -EINVAL;
	for (k = 0; k < 2; k++) {
		ret = list_nodes(kinds[k], &v, &n);
		if (ret)
			return ret;
		for (i = 0; i < n; i++, total++)
			if (total < max)
				devinfo_fill(&list[total], kinds[k], v[i]);
		free(v);
	}
	for (i = 0; i < CNUASDEV_SOFT_NODES; i++, total++)
		if (total < max)
			devinfo_fill(&list[total], CNUASDEV_BACKEND_SOFT, i);
	*count = total;
	return 0;
}

/* ---- selection -------------------------------------------------------------- */

static uint32_t backend_by_name(const char *s, size_t len)
{
	static const uint32_t all[] = {
		CNUASDEV_BACKEND_PCIE, CNUASDEV_BACKEND_HOST, CNUASDEV_BACKEND_SOFT,
	};

	for (size_t i = 0; i < 3; i++) {
		const char *name = cnuasdev_backend_name(all[i]);

		if (strlen(name) == len && !strncmp(s, name, len))
			return all[i];
	}
	return CNUASDEV_BACKEND_ANY;
}

static struct cnuasdev *dev_new(uint32_t backend, uint32_t index)
{
	struct cnuasdev *dev = calloc(1, sizeof(*dev));

	if (!dev)
		return NULL;
	dev->backend = backend;
	dev->index = index;
	dev->fd = -1;
	if (backend)
		snprintf(dev->name, sizeof(dev->name), "%s:%u",
			 cnuasdev_backend_name(backend), index);
	return dev;
}

/* Open NAME:N (kernel backends by their node, soft with @options). */
static int open_named(uint32_t backend, uint32_t index, const char *options,
		      struct cnuasdev **out)
{
	struct cnuasdev *dev;
	char path[64];
	int ret;

	if (options && backend != CNUASDEV_BACKEND_SOFT)
		return -EINVAL;
	dev = dev_new(backend, index);
	if (!dev)
		return -ENOMEM;
	if (backend == CNUASDEV_BACKEND_SOFT) {
		ret = cnuasdev_soft_open(dev, index, options);
	} else {
		snprintf(path, sizeof(path), "%s/%s%u", devdir(), node_prefix(backend), index);
		ret = cnuasdev_kdev_open(dev, path);
	}
	if (ret) {
		cnuasdev_debug("%s: %s", dev->name, cnuasdev_strerror(ret));
		free(dev);
		return ret;
	}
	*out = dev;
	return 0;
}

/* Open a node by path; its name says the backend, or CAPS does. */
static int open_path(const char *path, struct cnuasdev **out)
{
	const char *base = strrchr(path, '/') + 1;
	struct cnuasdev *dev;
	uint32_t idx = 0;
	int ret;

	if (strlen(path) >= sizeof(dev->path))
		return -EINVAL;
	dev = dev_new(CNUASDEV_BACKEND_ANY, 0);
	if (!dev)
		return -ENOMEM;
	if (node_index(base, "cnuasgpu_host", &idx))
		dev->backend = CNUASDEV_BACKEND_HOST;
	else if (node_index(base, "cnuasgpu", &idx))
		dev->backend = CNUASDEV_BACKEND_PCIE;
	dev->index = idx;
	ret = cnuasdev_kdev_open(dev, path);
	if (ret) {
		cnuasdev_debug("%s: %s", path, cnuasdev_strerror(ret));
		free(dev);
		return ret;
	}
	snprintf(dev->name, sizeof(dev->name), "%s:%u",
		 cnuasdev_backend_name(dev->backend), dev->index);
	*out = dev;
	return 0;
}

/* The first device, in enumeration order, that opens. */
static int open_auto(uint32_t flags, struct cnuasdev **out)
{
	static const uint32_t kinds[] = { CNUASDEV_BACKEND_PCIE, CNUASDEV_BACKEND_HOST };
	uint32_t i, k, n, *v;
	int ret;

	for (k = 0; k < 2; k++) {
		ret = list_nodes(kinds[k], &v, &n);
		if (ret)
			return ret;
		for (i = 0; i < n; i++) {
			ret = open_named(kinds[k], v[i], NULL, out);
			if (!ret || ret == -ENOMEM) {
				free(v);
				if (!ret)
					cnuasdev_debug("auto: %s", (*out)->name);
				return ret;
			}
		}
		free(v);
	}
	if (flags & CNUASDEV_OPEN_NO_SOFT) {
		cnuasdev_debug("auto: no pcie or host device opens, soft not allowed");
		return -ENODEV;
	}
	cnuasdev_debug("auto: soft:0");
	return open_named(CNUASDEV_BACKEND_SOFT, 0, NULL, out);
}

/* Open by spec (see cnuasdev.h); @from names where it came from, for CNUASDEV_DEBUG. */
static int open_spec(const char *spec, uint32_t flags, struct cnuasdev **out,
		     const char *from)
{
	const char *comma, *colon, *end;
	uint32_t backend;
	uint64_t index = 0;
	char num[24];
	size_t len;

	cnuasdev_debug("selecting '%s' (%s)", spec, from);
	if (!strcmp(spec, "auto"))
		return open_auto(flags, out);
	if (spec[0] == '/')
		return open_path(spec, out);
	comma = strchr(spec, ',');
	end = comma ? comma : spec + strlen(spec);
	colon = memchr(spec, ':', (size_t)(end - spec));
	backend = backend_by_name(spec, (size_t)((colon ? colon : end) - spec));
	if (!backend)
		return -EINVAL;
	if (colon) {
		len = (size_t)(end - colon - 1);
		if (!len || len >= sizeof(num))
			return -EINVAL;
		memcpy(num, colon + 1, len);
		num[len] = 0;
		if (cnuasdev_parse_u64(num, &index) || index > 1000000)
			return -EINVAL;
	}
	return open_named(backend, (uint32_t)index, comma ? comma + 1 : NULL, out);
}

CNUASDEV_API int cnuasdev_open(const char *spec, uint32_t flags, struct cnuasdev **dev)
{
	const char *env;

	if (!dev)
		return -EINVAL;
	*dev = NULL;
	if (flags & ~CNUASDEV_OPEN_NO_SOFT)
		return -EINVAL;
	if (spec && *spec)
		return open_spec(spec, flags, dev, "argument");
	env = getenv("CNUASDEV_DEVICE");
	if (env && *env)
		return open_spec(env, flags, dev, "CNUASDEV_DEVICE");
	env = getenv("CNUASDEV_BACKEND");
	if (env && *env && strcmp(env, "auto")) {
		if (!backend_by_name(env, strlen(env))) {
			cnuasdev_debug("CNUASDEV_BACKEND='%s' is not pcie, host, soft or auto", env);
			return -EINVAL;
		}
		return open_spec(env, flags, dev, "CNUASDEV_BACKEND");
	}
	return open_auto(flags, dev);
}

CNUASDEV_API int cnuasdev_close(struct cnuasdev *dev)
{
	if (!dev)
		return 0;
	dev->ops->close(dev);
	free(dev);
	return 0;
}

CNUASDEV_API uint32_t cnuasdev_caps(struct cnuasdev *dev)
{
	return dev ? dev->caps : 0;
}

CNUASDEV_API int cnuasdev_query(struct cnuasdev *dev, struct cnuasdev_props *props)
{
	int ret;

	if (!dev || !props || props->size != sizeof(*props))
		return -EINVAL;
	memset(props, 0, sizeof(*props));
	props->size = sizeof(*props);
	props->backend = dev->backend;
	props->index = dev->index;
	props->caps = dev->caps;
	props->page_size = dev->page_size;
	memcpy(props->name, dev->name, sizeof(props->name));
	memcpy(props->path, dev->path, sizeof(props->path));
	ret = dev->ops->query(dev, props);
	if (ret) {
		memset(props, 0, sizeof(*props));
		props->size = sizeof(*props);
	}
	return ret;
}

/* ---- memory ----------------------------------------------------------------- */

CNUASDEV_API int cnuasdev_alloc(struct cnuasdev *dev, uint64_t size, uint64_t align,
				uint32_t flags, struct cnuasdev_mem *mem)
{
	if (!dev || !mem || (flags & ~CNUASDEV_ALLOC_NOZERO))
		return -EINVAL;
	memset(mem, 0, sizeof(*mem));
	return dev->ops->alloc(dev, size, align, flags, mem);
}

CNUASDEV_API int cnuasdev_free(struct cnuasdev *dev, uint32_t handle)
{
	if (!dev)
		return -EINVAL;
	return dev->ops->free(dev, handle);
}

CNUASDEV_API int cnuasdev_copy_to(struct cnuasdev *dev, uint32_t handle, uint64_t offset,
				  const void *src, uint64_t size)
{
	if (!dev)
		return -EINVAL;
	return dev->ops->copy(dev, 1, handle, offset, (void *)src, size);
}

CNUASDEV_API int cnuasdev_copy_from(struct cnuasdev *dev, uint32_t handle, uint64_t offset,
				    void *dst, uint64_t size)
{
	if (!dev)
		return -EINVAL;
	return dev->ops->copy(dev, 0, handle, offset, dst, size);
}

CNUASDEV_API int cnuasdev_fill(struct cnuasdev *dev, uint32_t handle, uint64_t offset,
			       uint8_t value, uint64_t size)
{
	if (!dev)
		return -EINVAL;
	return dev->ops->fill(dev, handle, offset, value, size);
}

/* ---- the mapping registry ---------------------------------------------------- */

struct map_entry {
	struct map_entry *next;
	void *ptr;
	uint64_t size;
	uint32_t backend;
	void *cookie;		/* soft: its mapping */
};

static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;
static struct map_entry *maps;

int cnuasdev_map_register(void *ptr, uint64_t size, uint32_t backend, void *cookie)
{
	struct map_entry *e = malloc(sizeof(*e));

	if (!e)
		return -ENOMEM;
	e->ptr = ptr;
	e->size = size;
	e->backend = backend;
	e->cookie = cookie;
	pthread_mutex_lock(&maps_lock);
	e->next = maps;
	maps = e;
	pthread_mutex_unlock(&maps_lock);
	return 0;
}

int cnuasdev_map_overlaps(const void *ptr, uint64_t len)
{
	uintptr_t a = (uintptr_t)ptr;
	struct map_entry *e;
	int hit = 0;

	pthread_mutex_lock(&maps_lock);
	for (e = maps; e && !hit; e = e->next) {
		uintptr_t b = (uintptr_t)e->ptr;

		hit = a < b + e->size && b < a + len;
	}
	pthread_mutex_unlock(&maps_lock);
	return hit;
}

CNUASDEV_API int cnuasdev_map(struct cnuasdev *dev, const struct cnuasdev_mem *mem,
			      void **ptr)
{
	void *p = NULL, *cookie = NULL;
	int ret;

	if (!dev)
		return -EINVAL;
	if (!(dev->caps & CNUASDEV_CAP_ZEROCOPY))
		return -EOPNOTSUPP;
	if (!mem || !ptr)
		return -EINVAL;
	ret = dev->ops->map(dev, mem, &p, &cookie);
	if (ret)
		return ret;
	ret = cnuasdev_map_register(p, mem->size, dev->backend, cookie);
	if (ret) {
		if (cookie)
			cnuasdev_soft_unmap(cookie);
		else
			munmap(p, mem->size);
		return ret;
	}
	*ptr = p;
	return 0;
}

CNUASDEV_API int cnuasdev_unmap(void *ptr, uint64_t size)
{
	struct map_entry **pp, *e = NULL;

	pthread_mutex_lock(&maps_lock);
	for (pp = &maps; *pp; pp = &(*pp)->next) {
		if ((*pp)->ptr == ptr && (*pp)->size == size) {
			e = *pp;
			*pp = e->next;
			break;
		}
	}
	pthread_mutex_unlock(&maps_lock);
	if (!e)
		return -EINVAL;
	if (e->backend == CNUASDEV_BACKEND_SOFT)
		cnuasdev_soft_unmap(e->cookie);
	else
		munmap(e->ptr, e->size);
	free(e);
	return 0;
}

/* ---- pins and DMA-BUF ----------------------------------------------------------- */

CNUASDEV_API int cnuasdev_pin(struct cnuasdev *dev, void *ptr, uint64_t length,
			      uint32_t *handle)
{
	if (!dev)
		return -EINVAL;
	if (!(dev->caps & CNUASDEV_CAP_PINNED))
		return -EOPNOTSUPP;
	if (!handle)
		return -EINVAL;
	return dev->ops->pin(dev, ptr, length, handle);
}

CNUASDEV_API int cnuasdev_unpin(struct cnuasdev *dev, uint32_t handle)
{
	if (!dev)
		return -EINVAL;
	if (!(dev->caps & CNUASDEV_CAP_PINNED))
		return -EOPNOTSUPP;
	return dev->ops->unpin(dev, handle);
}

CNUASDEV_API int cnuasdev_export_dmabuf(struct cnuasdev *dev, uint32_t handle, int *fd)
{
	if (!dev)
		return -EINVAL;
	if (!(dev->caps & CNUASDEV_CAP_DMABUF))
		return -EOPNOTSUPP;
	if (!fd)
		return -EINVAL;
	return dev->ops->export_dmabuf(dev, handle, fd);
}

CNUASDEV_API int cnuasdev_import_dmabuf(struct cnuasdev *dev, int fd, struct cnuasdev_mem *mem)
{
	if (!dev)
		return -EINVAL;
	if (!(dev->caps & CNUASDEV_CAP_DMABUF_IMPORT))
		return -EOPNOTSUPP;
	if (!mem)
		return -EINVAL;
	memset(mem, 0, sizeof(*mem));
	return dev->ops->import_dmabuf(dev, fd, mem);
}

/* ---- the asynchronous queue --------------------------------------------------- */

CNUASDEV_API int cnuasdev_submit(struct cnuasdev *dev, const struct cnuasdev_op *ops,
				 uint32_t count, uint64_t *first_seq)
{
	if (!dev)
		return -EINVAL;
	if (!(dev->caps & CNUASDEV_CAP_ASYNC))
		return -EOPNOTSUPP;
	if ((!ops && count) || !first_seq)
		return -EINVAL;
	return dev->ops->submit(dev, ops, count, first_seq);
}

static int reap(struct cnuasdev *dev, int wait, uint64_t seq, uint32_t timeout_ms,
		struct cnuasdev_completion *comps, uint32_t max, uint32_t *count,
		struct cnuasdev_queue_state *state)
{
	struct cnuasdev_queue_state st;
	int ret;

	if (!dev)
		return -EINVAL;
	if (!(dev->caps & CNUASDEV_CAP_ASYNC))
		return -EOPNOTSUPP;
	if (!count || (!comps && max))
		return -EINVAL;
	ret = dev->ops->reap(dev, wait, seq, timeout_ms, comps, max, count, &st);
	if (!ret && state)
		*state = st;
	return ret;
}

CNUASDEV_API int cnuasdev_poll(struct cnuasdev *dev, struct cnuasdev_completion *comps,
			       uint32_t max, uint32_t *count,
			       struct cnuasdev_queue_state *state)
{
	return reap(dev, 0, 0, 0, comps, max, count, state);
}

CNUASDEV_API int cnuasdev_wait(struct cnuasdev *dev, uint64_t seq, uint32_t timeout_ms,
			       struct cnuasdev_completion *comps, uint32_t max,
			       uint32_t *count, struct cnuasdev_queue_state *state)
{
	return reap(dev, 1, seq, timeout_ms, comps, max, count, state);
}

CNUASDEV_API int cnuasdev_pollfd(struct cnuasdev *dev, int *fd)
{
	if (!dev)
		return -EINVAL;
	if (!(dev->caps & CNUASDEV_CAP_POLLFD))
		return -EOPNOTSUPP;
	if (!fd)
		return -EINVAL;
	*fd = dev->fd;
	return 0;
}

/* ---- CnuasLink ----------------------------------------------------------------- */

CNUASDEV_API int cnuasdev_link_send(struct cnuasdev *dev, const void *buf, uint32_t len,
				    uint32_t dst_gpu_id, uint32_t timeout_ms)
{
	if (!dev)
		return -EINVAL;
	if (!(dev->caps & CNUASDEV_CAP_LINK))
		return -EOPNOTSUPP;
	return dev->ops->link_send(dev, buf, len, dst_gpu_id, timeout_ms);
}

CNUASDEV_API int cnuasdev_link_recv(struct cnuasdev *dev, void *buf, uint32_t size,
				    uint32_t *len, uint32_t *src_gpu_id,
				    uint32_t timeout_ms, uint32_t flags)
{
	if (!dev)
		return -EINVAL;
	if (!(dev->caps & CNUASDEV_CAP_LINK))
		return -EOPNOTSUPP;
	return dev->ops->link_recv(dev, buf, size, len, src_gpu_id, timeout_ms, flags);
}
