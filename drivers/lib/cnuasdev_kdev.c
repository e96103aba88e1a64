// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * The pcie and host backends: the cnuasgpu ioctls of uapi/cnuasgpu.h and
 * uapi/cnuasgpu_host.h on /dev/cnuasgpuN or /dev/cnuasgpu_hostN.  The
 * kernel makes every check; this file adds only what the library promises
 * beyond cnuasgpu.ko: zero-filled new allocations and a synchronous fill,
 * both made of copy ioctls.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cnuasgpu.h"
#include "cnuasgpu_host.h"
#include "cnuasdev_priv.h"

/* The public op and completion are the uapi's, byte for byte: arrays go to the kernel as they are. */
#define SAME_FIELD(a, b, f)							\
	_Static_assert(offsetof(struct a, f) == offsetof(struct b, f) &&	\
		       sizeof(((struct a *)0)->f) == sizeof(((struct b *)0)->f), \
		       #a "." #f)
_Static_assert(sizeof(struct cnuasdev_op) == sizeof(struct cnuasgpu_op), "op size");
SAME_FIELD(cnuasdev_op, cnuasgpu_op, opcode);
SAME_FIELD(cnuasdev_op, cnuasgpu_op, flags);
SAME_FIELD(cnuasdev_op, cnuasgpu_op, handle);
SAME_FIELD(cnuasdev_op, cnuasgpu_op, pin_handle);
SAME_FIELD(cnuasdev_op, cnuasgpu_op, offset);
SAME_FIELD(cnuasdev_op, cnuasgpu_op, host);
SAME_FIELD(cnuasdev_op, cnuasgpu_op, length);
SAME_FIELD(cnuasdev_op, cnuasgpu_op, user_data);
SAME_FIELD(cnuasdev_op, cnuasgpu_op, value);
SAME_FIELD(cnuasdev_op, cnuasgpu_op, reserved);
_Static_assert(sizeof(struct cnuasdev_completion) == sizeof(struct cnuasgpu_completion),
	       "completion size");
SAME_FIELD(cnuasdev_completion, cnuasgpu_completion, seq);
SAME_FIELD(cnuasdev_completion, cnuasgpu_completion, user_data);
SAME_FIELD(cnuasdev_completion, cnuasgpu_completion, status);
SAME_FIELD(cnuasdev_completion, cnuasgpu_completion, opcode);
_Static_assert(CNUASDEV_OP_F_PINNED == CNUASGPU_OP_F_PINNED &&
	       CNUASDEV_OP_FILL == CNUASGPU_OP_FILL &&
	       CNUASDEV_CAP_PEER_RDMA == CNUASGPU_CAP_PEER_RDMA &&
	       CNUASDEV_LINK_RECV_NONBLOCK == CNUASGPU_LINK_RECV_NONBLOCK &&
	       CNUASDEV_LINK_MAX_PAYLOAD == CNUASGPU_LINK_MAX_PAYLOAD &&
	       CNUASDEV_MAX_TIMEOUT_MS == CNUASGPU_WAIT_MAX_TIMEOUT_MS &&
	       CNUASDEV_BACKEND_HOST == CNUASGPU_KIND_HOST, "uapi numbers");

/* Copies that zero or fill go in pieces of at most this. */
#define KDEV_CHUNK	(1u << 20)

/* What a cnuasgpu.ko without CNUASGPU_IOC_CAPS offers (uapi/cnuasgpu.h). */
#define KDEV_OLD_PCIE_CAPS						\
	(CNUASGPU_CAP_ZEROCOPY | CNUASGPU_CAP_DMABUF | CNUASGPU_CAP_PEER_RDMA)

static int kioctl(struct cnuasdev *dev, unsigned long cmd, void *arg)
{
	return ioctl(dev->fd, cmd, arg) ? -errno : 0;
}

/* CAPS, or what an older cnuasgpu.ko means by ENOTTY; *@have says which. */
static int kdev_caps(struct cnuasdev *dev, struct cnuasgpu_caps *c, int *have)
{
	int ret;

	memset(c, 0, sizeof(*c));
	c->size = sizeof(*c);
	ret = kioctl(dev, CNUASGPU_IOC_CAPS, c);
	*have = !ret;
	if (ret != -ENOTTY)
		return ret;
	memset(c, 0, sizeof(*c));
	c->kind = CNUASGPU_KIND_PCIE;
	c->caps = KDEV_OLD_PCIE_CAPS;
	c->page_size = (uint32_t)sysconf(_SC_PAGESIZE);
	return 0;
}

static int kdev_query(struct cnuasdev *dev, struct cnuasdev_props *p)
{
	struct cnuasgpu_info inf;
	struct cnuasgpu_caps c;
	int have, ret;

	memset(&inf, 0, sizeof(inf));
	ret = kioctl(dev, CNUASGPU_IOC_INFO, &inf);
	if (!ret)
		ret = kdev_caps(dev, &c, &have);
	if (ret)
		return ret;
	p->devmem_size = inf.devmem_size;
	p->devmem_used = inf.devmem_used;
	p->alloc_limit = inf.alloc_limit;
	p->pinned_max = c.pinned_max;
	p->queue_depth = c.queue_depth;
	p->batch_max = c.batch_max;
	p->abi_version = inf.abi_version;
	p->fw_version = inf.fw_version;
	p->gpu_id = inf.gpu_id;
	p->sm_count = inf.sm_count;
	p->lanes_per_sm = inf.lanes_per_sm;
	p->tensor_size = inf.tensor_size;
	p->link_up = inf.link_up;
	return 0;
}

static int kdev_free(struct cnuasdev *dev, uint32_t handle)
{
	struct cnuasgpu_free f = { .handle = handle };

	return kioctl(dev, CNUASGPU_IOC_FREE, &f);
}

static int kdev_copy(struct cnuasdev *dev, int to_dev, uint32_t handle,
		     uint64_t offset, void *buf, uint64_t size)
{
	struct cnuasgpu_copy c = {
		.handle = handle,
		.offset = offset,
		.user_ptr = (uintptr_t)buf,
		.size = size,
	};

	return kioctl(dev, to_dev ? CNUASGPU_IOC_COPY_TO_DEV : CNUASGPU_IOC_COPY_FROM_DEV, &c);
}

/* Write @value to [@offset, @offset + @size) of @handle, range already checked. */
static int kdev_write_value(struct cnuasdev *dev, uint32_t handle, uint64_t offset,
			    uint8_t value, uint64_t size)
{
	size_t chunk = size < KDEV_CHUNK ? (size_t)size : KDEV_CHUNK;
	uint8_t *buf = value ? malloc(chunk) : calloc(1, chunk);
	uint64_t done = 0;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	if (value)
		memset(buf, value, chunk);
	while (!ret && done < size) {
		uint64_t n = size - done < chunk ? size - done : chunk;

		ret = kdev_copy(dev, 1, handle, offset + done, buf, n);
		done += n;
	}
	free(buf);
	return ret;
}

static int kdev_alloc(struct cnuasdev *dev, uint64_t size, uint64_t align,
		      uint32_t flags, struct cnuasdev_mem *mem)
{
	struct cnuasgpu_alloc a = { .size = size, .align = align };
	int ret;

	ret = kioctl(dev, CNUASGPU_IOC_ALLOC, &a);
	if (ret)
		return ret;
	/* cnuasgpu_host.ko zeroes new allocations itself; cnuasgpu.ko does not */
	if (dev->backend == CNUASDEV_BACKEND_PCIE && !(flags & CNUASDEV_ALLOC_NOZERO)) {
		ret = kdev_write_value(dev, a.handle, 0, 0, a.size);
		if (ret) {
			kdev_free(dev, a.handle);
			return ret;
		}
	}
	mem->handle = a.handle;
	mem->offset = a.offset;
	mem->size = a.size;
	return 0;
}

/*
 * Fill, checked as a copy is: size, handle (a byte at 0 exists in any
 * allocation), then the range (its last byte).  The probes read one byte.
 */
static int kdev_fill(struct cnuasdev *dev, uint32_t handle, uint64_t offset,
		     uint8_t value, uint64_t size)
{
	uint8_t probe;
	int ret;

	if (!size)
		return -EINVAL;
	ret = kdev_copy(dev, 0, handle, 0, &probe, 1);
	if (ret)
		return ret;
	if (offset + size < offset)
		return -EINVAL;
	ret = kdev_copy(dev, 0, handle, offset + size - 1, &probe, 1);
	if (ret)
		return ret;
	return kdev_write_value(dev, handle, offset, value, size);
}

static int kdev_map(struct cnuasdev *dev, const struct cnuasdev_mem *mem, void **ptr,
		    void **cookie)
{
	void *p;

	*cookie = NULL;
	if (!mem->size || mem->offset > (uint64_t)INT64_MAX || mem->size > SIZE_MAX)
		return -EINVAL;
	p = mmap(NULL, (size_t)mem->size, PROT_READ | PROT_WRITE, MAP_SHARED, dev->fd,
		 (off_t)mem->offset);
	if (p == MAP_FAILED)
		return -errno;
	*ptr = p;
	return 0;
}

static int kdev_pin(struct cnuasdev *dev, void *ptr, uint64_t length, uint32_t *handle)
{
	struct cnuasgpu_pin p = {
		.size = sizeof(p),
		.user_ptr = (uintptr_t)ptr,
		.length = length,
	};
	int ret = kioctl(dev, CNUASGPU_IOC_PIN, &p);

	if (!ret)
		*handle = p.handle;
	return ret;
}

static int kdev_unpin(struct cnuasdev *dev, uint32_t handle)
{
	struct cnuasgpu_unpin u = { .size = sizeof(u), .handle = handle };

	return kioctl(dev, CNUASGPU_IOC_UNPIN, &u);
}

static int kdev_export(struct cnuasdev *dev, uint32_t handle, int *fd)
{
	struct cnuasgpu_export e = { .handle = handle, .flags = CNUASGPU_EXPORT_CLOEXEC };
	int ret = kioctl(dev, CNUASGPU_IOC_EXPORT_DMABUF, &e);

	if (!ret)
		*fd = e.fd;
	return ret;
}

static int kdev_import(struct cnuasdev *dev, int fd, struct cnuasdev_mem *mem)
{
	struct cnuasgpu_import im = { .size = sizeof(im), .fd = fd };
	int ret = kioctl(dev, CNUASGPU_IOC_IMPORT_DMABUF, &im);

	if (!ret) {
		mem->handle = im.handle;
		mem->offset = im.offset;
		mem->size = im.length;
	}
	return ret;
}

static int kdev_submit(struct cnuasdev *dev, const struct cnuasdev_op *ops, uint32_t count,
		       uint64_t *first_seq)
{
	struct cnuasgpu_submit s = {
		.size = sizeof(s),
		.op_size = sizeof(struct cnuasgpu_op),
		.ops_ptr = (uintptr_t)ops,
		.count = count,
	};
	int ret = kioctl(dev, CNUASGPU_IOC_SUBMIT, &s);

	if (!ret)
		*first_seq = s.first_seq;
	return ret;
}

static int kdev_reap(struct cnuasdev *dev, int wait, uint64_t seq, uint32_t timeout_ms,
		     struct cnuasdev_completion *comps, uint32_t max, uint32_t *count,
		     struct cnuasdev_queue_state *st)
{
	struct cnuasgpu_reap r = {
		.size = sizeof(r),
		.comp_size = sizeof(struct cnuasgpu_completion),
		.comps_ptr = (uintptr_t)comps,
		.max = max,
		.timeout_ms = timeout_ms,
		.seq = seq,
	};
	int ret = kioctl(dev, wait ? CNUASGPU_IOC_WAIT : CNUASGPU_IOC_POLL, &r);

	if (ret)
		return ret;
	*count = r.count;
	st->submitted = r.submitted;
	st->completed = r.completed;
	st->reaped = r.reaped;
	return 0;
}

static int kdev_link_send(struct cnuasdev *dev, const void *buf, uint32_t len, uint32_t dst,
			  uint32_t timeout_ms)
{
	struct cnuasgpu_link_send s = {
		.user_ptr = (uintptr_t)buf,
		.len = len,
		.dst_gpu_id = dst,
		.timeout_ms = timeout_ms,
	};

	return kioctl(dev, CNUASGPU_IOC_LINK_SEND, &s);
}

static int kdev_link_recv(struct cnuasdev *dev, void *buf, uint32_t size, uint32_t *len,
			  uint32_t *src, uint32_t timeout_ms, uint32_t flags)
{
	struct cnuasgpu_link_recv r = {
		.user_ptr = (uintptr_t)buf,
		.buf_size = size,
		.timeout_ms = timeout_ms,
		.flags = flags,
	};
	int ret = kioctl(dev, CNUASGPU_IOC_LINK_RECV, &r);

	if ((!ret || ret == -EMSGSIZE) && len)
		*len = r.len;
	if (!ret && src)
		*src = r.src_gpu_id;
	return ret;
}

static void kdev_close(struct cnuasdev *dev)
{
	close(dev->fd);
}

static const struct cnuasdev_backend_ops kdev_ops = {
	.query = kdev_query,
	.alloc = kdev_alloc,
	.free = kdev_free,
	.copy = kdev_copy,
	.fill = kdev_fill,
	.map = kdev_map,
	.pin = kdev_pin,
	.unpin = kdev_unpin,
	.export_dmabuf = kdev_export,
	.import_dmabuf = kdev_import,
	.submit = kdev_submit,
	.reap = kdev_reap,
	.link_send = kdev_link_send,
	.link_recv = kdev_link_recv,
	.close = kdev_close,
};

/*
 * Open @path; dev->backend is what its name says (or ANY), and CAPS has the
 * last word.  A file that answers neither INFO nor CAPS is no cnuasgpu node.
 */
int cnuasdev_kdev_open(struct cnuasdev *dev, const char *path)
{
	struct cnuasgpu_info inf;
	struct cnuasgpu_caps c;
	int have, ret;

	dev->fd = open(path, O_RDWR | O_CLOEXEC);
	if (dev->fd < 0) {
		ret = -errno;
		return ret == -ENOENT || ret == -ENXIO ? -ENODEV : ret;
	}
	dev->ops = &kdev_ops;
	memset(&inf, 0, sizeof(inf));
	ret = kioctl(dev, CNUASGPU_IOC_INFO, &inf);
	if (!ret)
		ret = kdev_caps(dev, &c, &have);
	if (!ret && !have && dev->backend == CNUASDEV_BACKEND_HOST)
		ret = -ENODEV;	/* every cnuasgpu_host.ko answers CAPS */
	if (!ret && c.kind != CNUASGPU_KIND_PCIE && c.kind != CNUASGPU_KIND_HOST)
		ret = -ENODEV;
	if (ret) {
		close(dev->fd);
		dev->fd = -1;
		return ret == -ENOTTY || ret == -EINVAL ? -ENODEV : ret;
	}
	dev->backend = c.kind;
	dev->page_size = c.page_size;
	dev->caps = c.caps & (CNUASDEV_CAP_ZEROCOPY | CNUASDEV_CAP_PINNED | CNUASDEV_CAP_DMABUF |
			      CNUASDEV_CAP_ASYNC | CNUASDEV_CAP_LINK | CNUASDEV_CAP_PEER_RDMA);
	if (dev->backend == CNUASDEV_BACKEND_HOST && (dev->caps & CNUASDEV_CAP_DMABUF))
		dev->caps |= CNUASDEV_CAP_DMABUF_IMPORT;
	if (dev->backend == CNUASDEV_BACKEND_HOST && (dev->caps & CNUASDEV_CAP_ASYNC))
		dev->caps |= CNUASDEV_CAP_POLLFD;
	strncpy(dev->path, path, sizeof(dev->path) - 1);
	return 0;
}
