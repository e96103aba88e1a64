/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cnuasgpu_host: host-backed CnuasGPU nodes, /dev/cnuasgpu_hostN (class
 * "cnuasgpu_host"), needing no PCI function.  Each node has:
 *
 *  - an arena of devmem_mb MiB of host pages, mapped once into the kernel,
 *    handed out by the page-aligned bump allocator of cnuasgpu.ko;
 *  - copies between user memory and allocations straight into the arena,
 *    and mmap() of the arena pages themselves (zerocopy);
 *  - pinned user memory, accounted against pinned_max_mb per node;
 *  - DMA-BUF export of allocations (pages, so any importer, vmap for CPU
 *    importers) and import by another open file of the node;
 *  - a queue per open file of copy and fill ops run by a kernel worker,
 *    with sequence numbers, completions and poll().
 *
 * The contract is docs/devices.md (cnuasgpu_host.ko); the user interface is
 * uapi/cnuasgpu.h and uapi/cnuasgpu_host.h.
 *
 * Files by role:
 *   cnuasgpu_host_main.c    module parameters, nodes, character device,
 *                           ioctl dispatch, INFO and CAPS, module init
 *   cnuasgpu_host_mem.c     arena, ALLOC/FREE, copies, mmap(), handles
 *   cnuasgpu_host_pin.c     PIN/UNPIN
 *   cnuasgpu_host_queue.c   SUBMIT, POLL, WAIT, the worker, poll()
 *   cnuasgpu_host_dmabuf.c  DMA-BUF export and import
 *   cnuasgpu_host_sysfs.c   class device attributes
 *
 * Locking: cgh_dev.lock (a mutex) covers the arena's allocation list and
 * counters, every file's handle table and the counts in allocations and
 * pins.  A file's queue indices are under cgh_file.qlock (a spinlock);
 * SUBMIT callers are serialized by submit_lock and completion takers by
 * reap_lock.  User memory is never touched with either lock held.
 *
 * Lifetime: a cgh_file is referenced (cgh_file.ref) by the open file and by
 * its queue's work while that is queued or running.  Closing the file never
 * waits for the worker, whose op may be blocked in a page fault of the
 * submitter's memory for as long as that fault takes; the last reference
 * lets go of the queue, the node and the module.
 */
#ifndef CNUASGPU_HOST_PRIV_H
#define CNUASGPU_HOST_PRIV_H

#include <linux/atomic.h>
#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mm_types.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/sizes.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "uapi/cnuasgpu.h"
#include "uapi/cnuasgpu_host.h"

/* Copies and fills go in chunks this big, checking for signals between. */
#define CGH_CHUNK		SZ_64K

/* What the module parameters switch on, as CAPS bits. */
struct cgh_params {
	u32 caps;
	u64 devmem_size;
	u64 pinned_max;
	u32 queue_depth;
	u32 batch_max;
};

extern struct cgh_params cgh_params;
extern struct workqueue_struct *cgh_wq;

static inline bool cgh_has(u32 cap)
{
	return cgh_params.caps & cap;
}

struct cgh_file;

/* What a handle names; handles are per open file. */
enum cgh_obj_type {
	CGH_OBJ_ALLOC = 1,
	CGH_OBJ_IMPORT,
	CGH_OBJ_PIN,
};

struct cgh_obj {
	enum cgh_obj_type type;
	u32 handle;
};

/*
 * One allocation of the arena.  It stays reserved while its owner holds
 * it, or VMAs map it, or DMA-BUFs of it are open, or copies and queued ops
 * use it.
 */
struct cgh_mem {
	struct cgh_obj obj;		/* CGH_OBJ_ALLOC, in owner->objs */
	struct list_head node;		/* in cgh_dev.allocs, by offset */
	struct cgh_dev *cdev;
	struct cgh_file *owner;		/* NULL once freed */
	u64 offset;
	u64 size;
	unsigned int maps;		/* VMAs mapping it */
	unsigned int exports;		/* DMA-BUFs of it still open */
	unsigned int users;		/* copies and ops under way */
};

/* Another file's export, imported here; holds the DMA-BUF. */
struct cgh_import {
	struct cgh_obj obj;		/* CGH_OBJ_IMPORT */
	struct cgh_mem *a;
	struct dma_buf *dmabuf;
};

/* Pinned user memory; pinned while its owner holds it or ops use it. */
struct cgh_pin {
	struct cgh_obj obj;		/* CGH_OBJ_PIN */
	struct cgh_dev *cdev;
	struct cgh_file *owner;		/* NULL once unpinned */
	struct page **pages;
	unsigned long npages;
	u64 length;
	unsigned int users;		/* queued ops */
};

struct cgh_dev {
	struct device dev;		/* the class device; owns this struct */
	struct cdev cdev;
	int index;

	struct page **pages;		/* the arena */
	unsigned long npages;
	void *vaddr;			/* its kernel mapping */

	struct mutex lock;		/* see the top of this file */
	struct list_head allocs;
	unsigned int nallocs;
	u64 used;
	unsigned int exports;		/* DMA-BUFs open, all allocations */
	u64 pinned_used;
	unsigned int pins;
	atomic_t inflight;		/* ops submitted, not completed */
};

/* One queued op. */
struct cgh_op {
	struct cnuasgpu_op uop;
	struct cgh_mem *a;		/* holds a->users */
	struct cgh_pin *pin;		/* holds pin->users, or NULL */
	struct mm_struct *mm;		/* mmgrab()ed, for a user host side */
};

/* Per open file; freed with its last reference (see the top of this file). */
struct cgh_file {
	struct kref ref;		/* the open file; the work, queued or running */
	struct cgh_dev *cdev;		/* holds a reference to cdev->dev */
	struct xarray objs;		/* handle -> struct cgh_obj */

	/* The queue: a ring of queue_depth ops, indexed by (seq - 1) % depth. */
	struct cgh_op *ops;
	struct cnuasgpu_completion *comps;
	spinlock_t qlock;		/* the three indices, closing */
	u64 submitted;			/* last sequence number given */
	u64 completed;			/* last op run */
	u64 reaped;			/* last completion taken */
	bool closing;			/* closed: cancel what has not run */
	struct mutex submit_lock;	/* one SUBMIT at a time */
	struct mutex reap_lock;		/* one POLL/WAIT taker at a time */
	struct work_struct work;
	wait_queue_head_t wq;
};

static inline struct cgh_dev *to_cgh_dev(struct device *dev)
{
	return container_of(dev, struct cgh_dev, dev);
}

/* cnuasgpu_host_main.c */
void cgh_file_get(struct cgh_file *cf);
void cgh_file_put(struct cgh_file *cf);

/* cnuasgpu_host_mem.c */
int cgh_arena_init(struct cgh_dev *cdev, u64 size);
void cgh_arena_free(struct cgh_dev *cdev);
int cgh_handle_reserve(struct cgh_file *cf, u32 *handle);
void cgh_handle_publish(struct cgh_file *cf, u32 handle, struct cgh_obj *obj);
void cgh_handle_unreserve(struct cgh_file *cf, u32 handle);
struct cgh_mem *cgh_lookup_mem(struct cgh_file *cf, u32 handle);
void cgh_mem_release_unused(struct cgh_mem *a);
void cgh_mem_put(struct cgh_mem *a);
int cgh_ioc_alloc(struct cgh_file *cf, void __user *uarg);
int cgh_ioc_free(struct cgh_file *cf, void __user *uarg);
int cgh_ioc_copy(struct cgh_file *cf, void __user *uarg, bool to_dev);
int cgh_mmap(struct file *filp, struct vm_area_struct *vma);
void cgh_file_drop_objs(struct cgh_file *cf);

/* cnuasgpu_host_pin.c */
struct cgh_pin *cgh_lookup_pin(struct cgh_file *cf, u32 handle);
void cgh_pin_put(struct cgh_pin *pin);
void cgh_pin_drop(struct cgh_pin *pin);
void cgh_pin_copy(struct cgh_pin *pin, u64 off, void *buf, size_t len,
		  bool to_dev);
int cgh_ioc_pin(struct cgh_file *cf, void __user *uarg);
int cgh_ioc_unpin(struct cgh_file *cf, void __user *uarg);

/* cnuasgpu_host_queue.c */
int cgh_queue_init(struct cgh_file *cf);
void cgh_queue_release(struct cgh_file *cf);
void cgh_queue_free(struct cgh_file *cf);
int cgh_ioc_submit(struct cgh_file *cf, void __user *uarg);
int cgh_ioc_reap(struct cgh_file *cf, void __user *uarg, bool wait);
__poll_t cgh_poll(struct file *filp, poll_table *wait);

/* cnuasgpu_host_dmabuf.c */
int cgh_ioc_export(struct cgh_file *cf, void __user *uarg);
int cgh_ioc_import(struct cgh_file *cf, void __user *uarg);
void cgh_import_drop(struct cgh_import *imp);

/* cnuasgpu_host_sysfs.c */
extern const struct attribute_group *cgh_groups[];

/*
 * Copy @len bytes of user memory at @src into the arena at @dst; returns
 * the bytes not copied.  copy_from_user() zero-fills the part it could not
 * copy, which here would write zeros over device memory past a fault; the
 * contract leaves every byte from the fault on as it was, so the
 * non-padding __copy_from_user(), after the access_ok() it needs.
 */
static inline unsigned long cgh_copy_from_user(u8 *dst, const u8 __user *src,
					       size_t len)
{
	if (!access_ok(src, len))
		return len;
	return __copy_from_user(dst, src, len);
}

#endif /* CNUASGPU_HOST_PRIV_H */
