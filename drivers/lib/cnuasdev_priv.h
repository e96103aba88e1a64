/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * What the files of libcnuasdev share:
 *   cnuasdev.c       the public entry points: argument and capability
 *                    checks common to every backend, selection, enumeration,
 *                    the mapping registry, error names
 *   cnuasdev_kdev.c  pcie and host: the cnuasgpu ioctls on a device node
 *   cnuasdev_soft.c  Soft-GPU: a host node's semantics in process memory
 *
 * A backend is a table of operations (struct cnuasdev_backend_ops).  The
 * entry points check what does not depend on the backend - NULL pointers,
 * the library's own flags, the capability a call needs - and hand the rest
 * over; the backend answers every other check, in the kernel's order.
 */
#ifndef CNUASDEV_PRIV_H
#define CNUASDEV_PRIV_H

#include <pthread.h>
#include <stdint.h>

#include "cnuasdev.h"

#define CNUASDEV_VERSION_STRING	"1.0.0"

struct cnuasdev_soft_node;
struct cnuasdev_soft_open;

/* A backend's operations; each returns 0 or a negative errno. */
struct cnuasdev_backend_ops {
	int (*query)(struct cnuasdev *dev, struct cnuasdev_props *props);
	int (*alloc)(struct cnuasdev *dev, uint64_t size, uint64_t align,
		     uint32_t flags, struct cnuasdev_mem *mem);
	int (*free)(struct cnuasdev *dev, uint32_t handle);
	int (*copy)(struct cnuasdev *dev, int to_dev, uint32_t handle,
		    uint64_t offset, void *buf, uint64_t size);
	int (*fill)(struct cnuasdev *dev, uint32_t handle, uint64_t offset,
		    uint8_t value, uint64_t size);
	/* map: *@ptr, and *@cookie for unmap (soft) */
	int (*map)(struct cnuasdev *dev, const struct cnuasdev_mem *mem,
		   void **ptr, void **cookie);
	int (*pin)(struct cnuasdev *dev, void *ptr, uint64_t length,
		   uint32_t *handle);
	int (*unpin)(struct cnuasdev *dev, uint32_t handle);
	int (*export_dmabuf)(struct cnuasdev *dev, uint32_t handle, int *fd);
	int (*import_dmabuf)(struct cnuasdev *dev, int fd, struct cnuasdev_mem *mem);
	int (*submit)(struct cnuasdev *dev, const struct cnuasdev_op *ops,
		      uint32_t count, uint64_t *first_seq);
	int (*reap)(struct cnuasdev *dev, int wait, uint64_t seq,
		    uint32_t timeout_ms, struct cnuasdev_completion *comps,
		    uint32_t max, uint32_t *count,
		    struct cnuasdev_queue_state *state);
	int (*link_send)(struct cnuasdev *dev, const void *buf, uint32_t len,
			 uint32_t dst, uint32_t timeout_ms);
	int (*link_recv)(struct cnuasdev *dev, void *buf, uint32_t size,
			 uint32_t *len, uint32_t *src, uint32_t timeout_ms,
			 uint32_t flags);
	void (*close)(struct cnuasdev *dev);
};

/* An open device. */
struct cnuasdev {
	const struct cnuasdev_backend_ops *ops;
	uint32_t backend;		/* enum cnuasdev_backend */
	uint32_t index;
	uint32_t caps;			/* CNUASDEV_CAP_*, fixed at open */
	uint32_t page_size;
	char name[32];
	char path[64];
	int fd;				/* pcie, host: the node; soft: -1 */
	struct cnuasdev_soft_open *soft;	/* soft only */
};

/* The mapping registry (cnuasdev.c): every live cnuasdev_map. */
int cnuasdev_map_register(void *ptr, uint64_t size, uint32_t backend,
			  void *cookie);

/* Whether [ptr, ptr + len) overlaps a registered mapping. */
int cnuasdev_map_overlaps(const void *ptr, uint64_t len);

/* Explain on stderr, only with CNUASDEV_DEBUG=1. */
void cnuasdev_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Parse a decimal uint64 exactly ("" and trailing text: -EINVAL). */
int cnuasdev_parse_u64(const char *s, uint64_t *out);

/* kdev: open @path as a pcie or host node (@backend, @index as named). */
int cnuasdev_kdev_open(struct cnuasdev *dev, const char *path);

/* soft: open node soft:@index with the comma-separated @options (may be NULL). */
int cnuasdev_soft_open(struct cnuasdev *dev, uint32_t index, const char *options);

/* soft: the mapping @cookie (from map) is gone. */
void cnuasdev_soft_unmap(void *cookie);

/* soft: how many nodes enumeration lists. */
#define CNUASDEV_SOFT_NODES	1

#endif /* CNUASDEV_PRIV_H */
