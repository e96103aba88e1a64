// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * Soft-GPU: a cnuasgpu_host node in process memory, no kernel module and no
 * device node.  What cnuasgpu_host.ko does, this file does the same way:
 *
 *  - the arena is a memfd of devmem_mb MiB, mapped once for the library;
 *    cnuasdev_map maps the allocation's part of it again (zerocopy: the
 *    same pages, a real mapping that munmap takes away);
 *  - the page-aligned bump allocator of cnuasgpu.ko: a new allocation goes
 *    after the last one; space comes back from the top as allocations are
 *    released; a released range is punched out of the memfd, so new
 *    allocations read as zeros;
 *  - handles per open, never 0, the lowest free one first (an xarray's
 *    xa_alloc), one number space for allocations and pins;
 *  - an allocation stays reserved after FREE while it is mapped;
 *  - pins accounted against pinned_max_mb, checked ceiling first, then the
 *    memory (writable, not device memory) - the pages are not locked;
 *  - a queue per open: SUBMIT checks the batch op by op (the first bad op
 *    decides) and then, with room for it, runs the ops there and then, in
 *    order; their completions wait to be taken by POLL or WAIT and hold
 *    their slots until then.
 *
 * The caller's memory is read and written with process_vm_readv/writev on
 * this process, so a bad buffer is -EFAULT as in the kernel; if those
 * calls are refused (seccomp, an old kernel) memcpy does it.
 *
 * Locking: one mutex per node covers everything of the node and of its
 * opens, held across copies (a copy cannot race a FREE).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cnuasdev_priv.h"

/* The ranges of cnuasgpu_host.ko's module parameters. */
#define SOFT_MAX_DEVMEM_MB	4096
#define SOFT_MAX_PINNED_MB	65536
#define SOFT_MAX_QUEUE_DEPTH	4096
#define SOFT_MAX_BATCH		1024
#define SOFT_MAX_ALIGN		(1ull << 30)
#define SOFT_FW_VERSION		0x00010000u
#define SOFT_ABI_VERSION	1u
#define SOFT_HANDLE_MAX		0x7fffffffu

struct soft_params {
	uint64_t devmem_mb;
	uint64_t pinned_max_mb;
	uint64_t queue_depth;
	uint64_t batch_max;
	uint64_t zerocopy;
	uint64_t pinned;
	uint64_t async;
};

static const struct soft_params soft_defaults = {
	.devmem_mb = 64,
	.pinned_max_mb = 32,
	.queue_depth = 64,
	.batch_max = 32,
	.zerocopy = 1,
	.pinned = 1,
	.async = 1,
};

enum soft_obj_type { SOFT_ALLOC = 1, SOFT_PIN };

struct soft_alloc {
	enum soft_obj_type type;	/* SOFT_ALLOC */
	struct soft_alloc *prev, *next;	/* in the node's list, by offset */
	struct cnuasdev_soft_open *owner;	/* NULL once freed */
	uint64_t offset;
	uint64_t size;
	unsigned int maps;
};

struct soft_pin {
	enum soft_obj_type type;	/* SOFT_PIN */
	uintptr_t ptr;
	uint64_t length;
};

struct cnuasdev_soft_node {
	uint32_t index;
	unsigned int refs;		/* opens and mappings */
	struct soft_params params;
	uint64_t size;			/* arena bytes */
	uint32_t page;
	int memfd;
	uint8_t *arena;
	struct soft_alloc *head, *tail;
	uint64_t used;
	uint64_t pinned_used;
	pthread_mutex_t lock;
};

struct cnuasdev_soft_open {
	struct cnuasdev_soft_node *node;
	void **objs;			/* handle -> struct soft_alloc / soft_pin */
	uint32_t nobjs;			/* slots in objs (handle 0 unused) */
	struct cnuasdev_completion *comps;	/* ring, slot (seq - 1) % depth */
	uint64_t submitted, completed, reaped;
};

/* A cnuasdev_map of the soft arena (the registry's cookie). */
struct soft_mapping {
	struct cnuasdev_soft_node *node;
	struct soft_alloc *a;
	void *ptr;
	uint64_t size;
};

static pthread_mutex_t soft_nodes_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cnuasdev_soft_node *soft_nodes[CNUASDEV_SOFT_NODES];

static struct cnuasdev_soft_open *so(struct cnuasdev *dev)
{
	return dev->soft;
}

/* ---- the caller's memory ------------------------------------------------------ */

/* 1: process_vm_* work here; 0: they were refused, memcpy instead; -1: not tried. */
static int vm_ok = -1;

static int vm_mode(void)
{
	return __atomic_load_n(&vm_ok, __ATOMIC_RELAXED);
}

static void vm_set(int v)
{
	__atomic_store_n(&vm_ok, v, __ATOMIC_RELAXED);
}

/* Copy @len bytes into @local from the caller's @remote (@read) or out of @local to it. */
static int user_copy(void *local, uintptr_t remote, uint64_t len, int read)
{
	uint64_t done = 0;

	if (remote + len < remote)
		return -EFAULT;
	while (done < len && vm_mode() != 0) {
		struct iovec l = { (uint8_t *)local + done, (size_t)(len - done) };
		struct iovec r = { (void *)(remote + done), (size_t)(len - done) };
		ssize_t n = read ? process_vm_readv(getpid(), &l, 1, &r, 1, 0) :
				   process_vm_writev(getpid(), &l, 1, &r, 1, 0);

		if (n > 0) {
			vm_set(1);
			done += (uint64_t)n;
			continue;
		}
		if (n < 0 && (errno == ENOSYS || errno == EPERM) && vm_mode() < 0) {
			vm_set(0);	/* refused before it ever worked: memcpy from now on */
			break;
		}
		return -EFAULT;		/* EFAULT, or no progress */
	}
	if (done < len) {
		if (read)
			memcpy((uint8_t *)local + done, (const void *)(remote + done), len - done);
		else
			memcpy((void *)(remote + done), (uint8_t *)local + done, len - done);
	}
	return 0;
}

/* A path of a shared mapping whose pages may be pinned long-term (shmem). */
static int shmem_path(const char *path)
{
	return !*path || !strncmp(path, "/memfd:", 7) || !strncmp(path, "/dev/shm/", 9) ||
	       !strncmp(path, "/SYSV", 5) || !strncmp(path, "/dev/zero", 9);
}

/*
 * Whether [start, start + len) is process memory pin_user_pages(FOLL_WRITE |
 * FOLL_LONGTERM) would take: writable mappings with no gap, none of them
 * device memory (the arena, a cnuasdev_map, another node's mapping).
 * Without /proc/self/maps the range is taken as it is.
 */
static int pinnable(struct cnuasdev_soft_node *n, uintptr_t start, uint64_t len)
{
	uintptr_t need = start, end = start + len, a = (uintptr_t)n->arena;
	char *line = NULL, perms[8], path[512];
	size_t cap = 0;
	int ok = 0;
	FILE *f;

	if ((start < a + n->size && a < end) || cnuasdev_map_overlaps((void *)start, len))
		return 0;
	f = fopen("/proc/self/maps", "re");
	if (!f)
		return 1;
	while (getline(&line, &cap, f) > 0) {
		unsigned long lo, hi;

		path[0] = 0;
		if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %511s", &lo, &hi, perms, path) < 3)
			break;
		if (hi <= need)
			continue;
		if (lo > need || perms[1] != 'w' || (perms[3] == 's' && !shmem_path(path)))
			break;
		need = hi;
		if (need >= end) {
			ok = 1;
			break;
		}
	}
	free(line);
	fclose(f);
	return ok;
}

/* ---- handles -------------------------------------------------------------------- */

/* The lowest free handle (>= 1) now names @obj; 0 or -ENOMEM. */
static int handle_add(struct cnuasdev_soft_open *o, void *obj, uint32_t *handle)
{
	uint32_t h;

	for (h = 1; h < o->nobjs && o->objs[h]; h++)
		;
	if (h >= o->nobjs) {
		uint32_t n = o->nobjs ? o->nobjs * 2 : 16;
		void **v;

		if (h >= SOFT_HANDLE_MAX)
			return -ENOMEM;
		v = realloc(o->objs, n * sizeof(*v));
		if (!v)
			return -ENOMEM;
		memset(v + o->nobjs, 0, (n - o->nobjs) * sizeof(*v));
		o->objs = v;
		o->nobjs = n;
	}
	o->objs[h] = obj;
	*handle = h;
	return 0;
}

static void *handle_get(struct cnuasdev_soft_open *o, uint32_t h, enum soft_obj_type type)
{
	void *obj = h < o->nobjs ? o->objs[h] : NULL;

	return obj && *(enum soft_obj_type *)obj == type ? obj : NULL;
}

/* ---- the arena and its allocator --------------------------------------------------- */

/* Give the space back once nothing holds it; its pages read as zeros again. */
static void release_unused(struct cnuasdev_soft_node *n, struct soft_alloc *a)
{
	if (a->owner || a->maps)
		return;
	if (a->prev)
		a->prev->next = a->next;
	else
		n->head = a->next;
	if (a->next)
		a->next->prev = a->prev;
	else
		n->tail = a->prev;
	n->used -= a->size;
	if (fallocate(n->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)a->offset, (off_t)a->size))
		memset(n->arena + a->offset, 0, a->size);
	free(a);
}

static int soft_alloc(struct cnuasdev *dev, uint64_t size, uint64_t align, uint32_t flags,
		      struct cnuasdev_mem *mem)
{
	struct cnuasdev_soft_open *o = so(dev);
	struct cnuasdev_soft_node *n = o->node;
	uint64_t top, offset;
	struct soft_alloc *a;
	uint32_t handle;
	int ret;

	(void)flags;	/* NOZERO: soft memory is zero anyway */
	if (!size)
		return -EINVAL;
	if (!align)
		align = n->page;
	if (align & (align - 1) || align < n->page || align > SOFT_MAX_ALIGN)
		return -EINVAL;
	if (size > n->size)
		return -ENOMEM;
	size = (size + n->page - 1) & ~(uint64_t)(n->page - 1);

	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	pthread_mutex_lock(&n->lock);
	top = n->tail ? n->tail->offset + n->tail->size : 0;
	offset = (top + align - 1) & ~(align - 1);
	if (offset < top || offset > n->size || size > n->size - offset) {
		ret = -ENOMEM;
		goto err;
	}
	ret = handle_add(o, a, &handle);
	if (ret)
		goto err;
	a->type = SOFT_ALLOC;
	a->owner = o;
	a->offset = offset;
	a->size = size;
	a->prev = n->tail;
	if (n->tail)
		n->tail->next = a;
	else
		n->head = a;
	n->tail = a;
	n->used += size;
	pthread_mutex_unlock(&n->lock);
	mem->handle = handle;
	mem->offset = offset;
	mem->size = size;
	return 0;
err:
	pthread_mutex_unlock(&n->lock);
	free(a);
	return ret;
}

static int soft_free(struct cnuasdev *dev, uint32_t handle)
{
	struct cnuasdev_soft_open *o = so(dev);
	struct cnuasdev_soft_node *n = o->node;
	struct soft_alloc *a;

	pthread_mutex_lock(&n->lock);
	a = handle_get(o, handle, SOFT_ALLOC);
	if (a) {
		o->objs[handle] = NULL;
		a->owner = NULL;
		release_unused(n, a);
	}
	pthread_mutex_unlock(&n->lock);
	return a ? 0 : -ENOENT;
}

/* Under the lock: allocation @handle, and [offset, offset + size) inside it. */
static int lookup_range(struct cnuasdev_soft_open *o, uint32_t handle, uint64_t offset,
			uint64_t size, struct soft_alloc **out)
{
	struct soft_alloc *a = handle_get(o, handle, SOFT_ALLOC);

	if (!a)
		return -ENOENT;
	if (offset >= a->size || size > a->size - offset)
		return -EINVAL;
	*out = a;
	return 0;
}

static int soft_copy(struct cnuasdev *dev, int to_dev, uint32_t handle, uint64_t offset,
		     void *buf, uint64_t size)
{
	struct cnuasdev_soft_open *o = so(dev);
	struct cnuasdev_soft_node *n = o->node;
	struct soft_alloc *a;
	int ret;

	if (!size)
		return -EINVAL;
	pthread_mutex_lock(&n->lock);
	ret = lookup_range(o, handle, offset, size, &a);
	if (!ret)
		ret = user_copy(n->arena + a->offset + offset, (uintptr_t)buf, size, to_dev);
	pthread_mutex_unlock(&n->lock);
	return ret;
}

static int soft_fill(struct cnuasdev *dev, uint32_t handle, uint64_t offset, uint8_t value,
		     uint64_t size)
{
	struct cnuasdev_soft_open *o = so(dev);
	struct cnuasdev_soft_node *n = o->node;
	struct soft_alloc *a;
	int ret;

	if (!size)
		return -EINVAL;
	pthread_mutex_lock(&n->lock);
	ret = lookup_range(o, handle, offset, size, &a);
	if (!ret)
		memset(n->arena + a->offset + offset, value, size);
	pthread_mutex_unlock(&n->lock);
	return ret;
}

/* ---- zerocopy ----------------------------------------------------------------------- */

/* As cgh_mmap: the allocation of this open that holds all of [offset, offset + size). */
static int soft_map(struct cnuasdev *dev, const struct cnuasdev_mem *mem, void **ptr,
		    void **cookie)
{
	struct cnuasdev_soft_open *o = so(dev);
	struct cnuasdev_soft_node *n = o->node;
	uint64_t off = mem->offset, len = mem->size;
	struct soft_alloc *a, *found = NULL;
	struct soft_mapping *m;
	void *p;
	int ret = 0;

	if (!len || off % n->page || off >= n->size)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	pthread_mutex_lock(&n->lock);
	for (a = n->head; a; a = a->next) {
		if (a->owner == o && off >= a->offset && off - a->offset < a->size &&
		    len <= a->size - (off - a->offset)) {
			found = a;
			break;
		}
	}
	if (!found) {
		ret = -EINVAL;
		goto out;
	}
	p = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, MAP_SHARED, n->memfd, (off_t)off);
	if (p == MAP_FAILED) {
		ret = -ENOMEM;
		goto out;
	}
	found->maps++;
	n->refs++;
	m->node = n;
	m->a = found;
	m->ptr = p;
	m->size = len;
	*ptr = p;
	*cookie = m;
	m = NULL;
out:
	pthread_mutex_unlock(&n->lock);
	free(m);
	return ret;
}

static void node_put_locked(struct cnuasdev_soft_node *n);

void cnuasdev_soft_unmap(void *cookie)
{
	struct soft_mapping *m = cookie;
	struct cnuasdev_soft_node *n = m->node;

	munmap(m->ptr, m->size);
	pthread_mutex_lock(&soft_nodes_lock);
	pthread_mutex_lock(&n->lock);
	m->a->maps--;
	release_unused(n, m->a);
	pthread_mutex_unlock(&n->lock);
	node_put_locked(n);
	pthread_mutex_unlock(&soft_nodes_lock);
	free(m);
}

/* ---- pins ------------------------------------------------------------------------------- */

static int soft_pin(struct cnuasdev *dev, void *ptr, uint64_t length, uint32_t *handle)
{
	struct cnuasdev_soft_open *o = so(dev);
	struct cnuasdev_soft_node *n = o->node;
	uintptr_t p = (uintptr_t)ptr;
	uint64_t max = n->params.pinned_max_mb << 20;
	struct soft_pin *pin;
	int ret;

	if (!length || p % n->page || length % n->page || p + length < p)
		return -EINVAL;
	pin = calloc(1, sizeof(*pin));
	if (!pin)
		return -ENOMEM;
	pthread_mutex_lock(&n->lock);
	if (length > max - n->pinned_used)
		ret = -ENOMEM;		/* the ceiling first, as the module */
	else if (!pinnable(n, p, length))
		ret = -EFAULT;
	else
		ret = handle_add(o, pin, handle);
	if (!ret) {
		pin->type = SOFT_PIN;
		pin->ptr = p;
		pin->length = length;
		n->pinned_used += length;
	}
	pthread_mutex_unlock(&n->lock);
	if (ret)
		free(pin);
	return ret;
}

static int soft_unpin(struct cnuasdev *dev, uint32_t handle)
{
	struct cnuasdev_soft_open *o = so(dev);
	struct cnuasdev_soft_node *n = o->node;
	struct soft_pin *pin;

	pthread_mutex_lock(&n->lock);
	pin = handle_get(o, handle, SOFT_PIN);
	if (pin) {
		o->objs[handle] = NULL;
		n->pinned_used -= pin->length;
	}
	pthread_mutex_unlock(&n->lock);
	free(pin);
	return pin ? 0 : -ENOENT;
}

/* ---- the queue ------------------------------------------------------------------------ */

/* Check one op as cgh_op_prepare does; under the lock. */
static int op_check(struct cnuasdev *dev, const struct cnuasdev_op *u)
{
	struct cnuasdev_soft_open *o = so(dev);
	int pinned = u->flags & CNUASDEV_OP_F_PINNED;
	struct soft_alloc *a;
	struct soft_pin *pin = NULL;

	if (pinned && !(dev->caps & CNUASDEV_CAP_PINNED))
		return -EOPNOTSUPP;
	if (u->reserved || (u->flags & ~CNUASDEV_OP_F_PINNED) || !u->length)
		return -EINVAL;
	switch (u->opcode) {
	case CNUASDEV_OP_COPY_TO_DEV:
	case CNUASDEV_OP_COPY_FROM_DEV:
		if (u->value || (!pinned && u->pin_handle))
			return -EINVAL;
		if (u->host + u->length < u->host)
			return -EINVAL;
		break;
	case CNUASDEV_OP_FILL:
		if (u->flags || u->pin_handle || u->host || u->value > 255)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	a = handle_get(o, u->handle, SOFT_ALLOC);
	if (pinned)
		pin = handle_get(o, u->pin_handle, SOFT_PIN);
	if (!a || (pinned && !pin))
		return -ENOENT;
	if (u->offset >= a->size || u->length > a->size - u->offset)
		return -EINVAL;
	if (pin && (u->host >= pin->length || u->length > pin->length - u->host))
		return -EINVAL;
	return 0;
}

/* Run a checked op; its completion status. */
static int op_run(struct cnuasdev_soft_open *o, const struct cnuasdev_op *u)
{
	struct soft_alloc *a = handle_get(o, u->handle, SOFT_ALLOC);
	uint8_t *d = o->node->arena + a->offset + u->offset;
	uintptr_t host = (uintptr_t)u->host;

	if (u->opcode == CNUASDEV_OP_FILL) {
		memset(d, (int)u->value, u->length);
		return 0;
	}
	if (u->flags & CNUASDEV_OP_F_PINNED)
		host += ((struct soft_pin *)handle_get(o, u->pin_handle, SOFT_PIN))->ptr;
	return user_copy(d, host, u->length, u->opcode == CNUASDEV_OP_COPY_TO_DEV);
}

static int soft_submit(struct cnuasdev *dev, const struct cnuasdev_op *ops, uint32_t count,
		       uint64_t *first_seq)
{
	struct cnuasdev_soft_open *o = so(dev);
	struct cnuasdev_soft_node *n = o->node;
	uint64_t depth = n->params.queue_depth;
	uint32_t i;
	int ret = 0;

	if (!count || count > n->params.batch_max)
		return -EINVAL;
	pthread_mutex_lock(&n->lock);
	for (i = 0; i < count && !ret; i++)
		ret = op_check(dev, &ops[i]);
	if (!ret && count > depth - (o->submitted - o->reaped))
		ret = -EAGAIN;
	if (!ret) {
		*first_seq = o->submitted + 1;
		for (i = 0; i < count; i++) {
			uint64_t seq = o->submitted + 1;
			struct cnuasdev_completion *c = &o->comps[(seq - 1) % depth];

			c->seq = seq;
			c->user_data = ops[i].user_data;
			c->status = op_run(o, &ops[i]);
			c->opcode = ops[i].opcode;
			o->submitted = o->completed = seq;
		}
	}
	pthread_mutex_unlock(&n->lock);
	return ret;
}

static int soft_reap(struct cnuasdev *dev, int wait, uint64_t seq, uint32_t timeout_ms,
		     struct cnuasdev_completion *comps, uint32_t max, uint32_t *count,
		     struct cnuasdev_queue_state *st)
{
	struct cnuasdev_soft_open *o = so(dev);
	struct cnuasdev_soft_node *n = o->node;
	uint64_t depth = n->params.queue_depth;
	uint32_t i, k;
	int ret = 0;

	if (max > depth)
		return -EINVAL;
	if (!wait && (seq || timeout_ms))
		return -EINVAL;
	pthread_mutex_lock(&n->lock);
	if (wait && (!seq || seq > o->submitted || timeout_ms > CNUASDEV_MAX_TIMEOUT_MS))
		ret = -EINVAL;
	/* every op has run by the time SUBMIT returned: op @seq has completed */
	if (!ret) {
		k = (uint32_t)(o->completed - o->reaped < max ? o->completed - o->reaped : max);
		for (i = 0; i < k; i++)
			comps[i] = o->comps[(o->reaped + i) % depth];
		o->reaped += k;
		*count = k;
		st->submitted = o->submitted;
		st->completed = o->completed;
		st->reaped = o->reaped;
	}
	pthread_mutex_unlock(&n->lock);
	return ret;
}

/* ---- what soft does not have ---------------------------------------------------------- */

static int soft_export(struct cnuasdev *dev, uint32_t handle, int *fd)
{
	(void)dev, (void)handle, (void)fd;
	return -EOPNOTSUPP;
}

static int soft_import(struct cnuasdev *dev, int fd, struct cnuasdev_mem *mem)
{
	(void)dev, (void)fd, (void)mem;
	return -EOPNOTSUPP;
}

static int soft_link_send(struct cnuasdev *dev, const void *buf, uint32_t len, uint32_t dst,
			  uint32_t timeout_ms)
{
	(void)dev, (void)buf, (void)len, (void)dst, (void)timeout_ms;
	return -EOPNOTSUPP;
}

static int soft_link_recv(struct cnuasdev *dev, void *buf, uint32_t size, uint32_t *len,
			  uint32_t *src, uint32_t timeout_ms, uint32_t flags)
{
	(void)dev, (void)buf, (void)size, (void)len, (void)src, (void)timeout_ms, (void)flags;
	return -EOPNOTSUPP;
}

/* ---- the node and its opens -------------------------------------------------------------- */

static int soft_query(struct cnuasdev *dev, struct cnuasdev_props *p)
{
	struct cnuasdev_soft_node *n = so(dev)->node;

	pthread_mutex_lock(&n->lock);
	p->devmem_used = n->used;
	pthread_mutex_unlock(&n->lock);
	p->devmem_size = n->size;
	p->alloc_limit = n->size;
	p->pinned_max = n->params.pinned ? n->params.pinned_max_mb << 20 : 0;
	p->queue_depth = n->params.async ? (uint32_t)n->params.queue_depth : 0;
	p->batch_max = n->params.async ? (uint32_t)n->params.batch_max : 0;
	p->abi_version = SOFT_ABI_VERSION;
	p->fw_version = SOFT_FW_VERSION;
	p->gpu_id = n->index;
	return 0;
}

/* Drop a reference (an open or a mapping); the last one frees the node.  soft_nodes_lock held. */
static void node_put_locked(struct cnuasdev_soft_node *n)
{
	if (--n->refs)
		return;
	soft_nodes[n->index] = NULL;
	munmap(n->arena, n->size);
	close(n->memfd);
	pthread_mutex_destroy(&n->lock);
	free(n);
}

static void soft_close(struct cnuasdev *dev)
{
	struct cnuasdev_soft_open *o = so(dev);
	struct cnuasdev_soft_node *n = o->node;
	uint32_t h;

	pthread_mutex_lock(&soft_nodes_lock);
	pthread_mutex_lock(&n->lock);
	for (h = 1; h < o->nobjs; h++) {
		struct soft_alloc *a = handle_get(o, h, SOFT_ALLOC);
		struct soft_pin *pin = handle_get(o, h, SOFT_PIN);

		if (a) {
			a->owner = NULL;
			release_unused(n, a);
		} else if (pin) {
			n->pinned_used -= pin->length;
			free(pin);
		}
	}
	pthread_mutex_unlock(&n->lock);
	node_put_locked(n);
	pthread_mutex_unlock(&soft_nodes_lock);
	free(o->objs);
	free(o->comps);
	free(o);
}

static const struct cnuasdev_backend_ops soft_ops = {
	.query = soft_query,
	.alloc = soft_alloc,
	.free = soft_free,
	.copy = soft_copy,
	.fill = soft_fill,
	.map = soft_map,
	.pin = soft_pin,
	.unpin = soft_unpin,
	.export_dmabuf = soft_export,
	.import_dmabuf = soft_import,
	.submit = soft_submit,
	.reap = soft_reap,
	.link_send = soft_link_send,
	.link_recv = soft_link_recv,
	.close = soft_close,
};

/* "key=value,..." over @p; the ranges are the module's.  0 or -EINVAL. */
static int parse_options(const char *options, struct soft_params *p)
{
	static const struct {
		const char *key;
		size_t off;
		uint64_t min, max;
	} keys[] = {
		{ "devmem_mb", offsetof(struct soft_params, devmem_mb), 1, SOFT_MAX_DEVMEM_MB },
		{ "pinned_max_mb", offsetof(struct soft_params, pinned_max_mb), 1,
		  SOFT_MAX_PINNED_MB },
		{ "queue_depth", offsetof(struct soft_params, queue_depth), 1,
		  SOFT_MAX_QUEUE_DEPTH },
		{ "batch_max", offsetof(struct soft_params, batch_max), 1, SOFT_MAX_BATCH },
		{ "zerocopy", offsetof(struct soft_params, zerocopy), 0, 1 },
		{ "pinned", offsetof(struct soft_params, pinned), 0, 1 },
		{ "async", offsetof(struct soft_params, async), 0, 1 },
	};
	char *copy, *tok, *save = NULL;
	int ret = 0;

	*p = soft_defaults;
	if (!options)
		return 0;
	copy = strdup(options);
	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok && !ret; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		uint64_t v;
		size_t i;

		ret = -EINVAL;
		if (!eq)
			break;
		*eq = 0;
		if (!strcmp(tok, "dmabuf")) {
			/* no DMA-BUF in a process: only "off" can be had */
			ret = strcmp(eq + 1, "0") ? -EINVAL : 0;
			continue;
		}
		for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			if (strcmp(tok, keys[i].key))
				continue;
			if (!cnuasdev_parse_u64(eq + 1, &v) && v >= keys[i].min && v <= keys[i].max) {
				*(uint64_t *)((char *)p + keys[i].off) = v;
				ret = 0;
			}
			break;
		}
	}
	/* empty options ("soft,", ",,", a comma at either end) are skipped by strtok: refuse them */
	if (!ret && (!*options || options[0] == ',' || strstr(options, ",,") ||
		     options[strlen(options) - 1] == ','))
		ret = -EINVAL;
	if (!ret && p->batch_max > p->queue_depth)
		ret = -EINVAL;
	free(copy);
	return ret;
}

static int node_new(uint32_t index, const struct soft_params *p, struct cnuasdev_soft_node **out)
{
	struct cnuasdev_soft_node *n = calloc(1, sizeof(*n));
	char name[32];

	if (!n)
		return -ENOMEM;
	n->index = index;
	n->params = *p;
	n->size = p->devmem_mb << 20;
	n->page = (uint32_t)sysconf(_SC_PAGESIZE);
	snprintf(name, sizeof(name), "cnuasdev-soft%u", index);
	n->memfd = memfd_create(name, MFD_CLOEXEC);
	if (n->memfd < 0 || ftruncate(n->memfd, (off_t)n->size)) {
		if (n->memfd >= 0)
			close(n->memfd);
		free(n);
		return -ENOMEM;
	}
	n->arena = mmap(NULL, n->size, PROT_READ | PROT_WRITE, MAP_SHARED, n->memfd, 0);
	if (n->arena == MAP_FAILED) {
		close(n->memfd);
		free(n);
		return -ENOMEM;
	}
	pthread_mutex_init(&n->lock, NULL);
	*out = n;
	return 0;
}

int cnuasdev_soft_open(struct cnuasdev *dev, uint32_t index, const char *options)
{
	struct cnuasdev_soft_open *o;
	struct cnuasdev_soft_node *n;
	struct soft_params p;
	int ret;

	if (index >= CNUASDEV_SOFT_NODES)
		return -ENODEV;
	ret = parse_options(options, &p);
	if (ret)
		return ret;
	o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	pthread_mutex_lock(&soft_nodes_lock);
	n = soft_nodes[index];
	if (n && options && memcmp(&n->params, &p, sizeof(p)))
		ret = -EBUSY;	/* one node, one set of options */
	else if (!n)
		ret = node_new(index, &p, &n);
	if (!ret) {
		soft_nodes[index] = n;
		n->refs++;
		/* the ring follows the node's options, whoever made it */
		if (n->params.async) {
			o->comps = calloc(n->params.queue_depth, sizeof(*o->comps));
			if (!o->comps) {
				node_put_locked(n);
				ret = -ENOMEM;
			}
		}
	}
	pthread_mutex_unlock(&soft_nodes_lock);
	if (ret) {
		free(o);
		return ret;
	}
	o->node = n;
	dev->soft = o;
	dev->ops = &soft_ops;
	dev->backend = CNUASDEV_BACKEND_SOFT;
	dev->page_size = n->page;
	dev->caps = (n->params.zerocopy ? CNUASDEV_CAP_ZEROCOPY : 0) |
		    (n->params.pinned ? CNUASDEV_CAP_PINNED : 0) |
		    (n->params.async ? CNUASDEV_CAP_ASYNC : 0);
	return 0;
}
