/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * libcnuasdev: one API over the CnuasGPU accelerators a program can reach.
 *
 * Backends (enum cnuasdev_backend):
 *   pcie  /dev/cnuasgpuN, a cnuasgpu PCI function driven by cnuasgpu.ko
 *   host  /dev/cnuasgpu_hostN, a host-backed node of cnuasgpu_host.ko
 *   soft  Soft-GPU: in-process, no kernel module, no device node.  One node,
 *         "soft:0", per process, with the semantics of a host node in memory
 *         (see "Soft-GPU" below).
 *
 * Selection (cnuasdev_open): the first of these that is given decides.
 *   1. the @spec argument, when not NULL and not "";
 *   2. the environment variable CNUASDEV_DEVICE (a spec);
 *   3. the environment variable CNUASDEV_BACKEND: "pcie", "host" or "soft",
 *      meaning device 0 of that backend ("auto" or unset: go on);
 *   4. automatic: the devices in cnuasdev_enumerate's order - the pcie
 *      nodes, then the host nodes, each by number, then soft:0 - the first
 *      that opens (with CNUASDEV_OPEN_NO_SOFT, never soft).
 * A spec is "auto" (step 4, skipping the environment), a backend name
 * ("pcie", "host", "soft": its device 0), NAME:N ("pcie:1", "host:0",
 * "soft:0"), or a device path ("/dev/cnuasgpu0", "/dev/cnuasgpu_host1").
 * A soft spec may carry options after commas, with the names, ranges and
 * defaults of cnuasgpu_host.ko's module parameters:
 *   soft:0,devmem_mb=64,pinned_max_mb=32,queue_depth=64,batch_max=32,
 *          zerocopy=1,pinned=1,async=1
 * A malformed spec or environment value is -EINVAL; it never falls back.
 * CNUASDEV_DEVDIR (default "/dev") is where device nodes are looked for.
 *
 * Errors: every function that can fail returns 0 (or a count, where said)
 * on success and a negative errno on failure, never sets errno for the
 * caller to read, never aborts and never prints - unless the environment
 * variable CNUASDEV_DEBUG is "1", when selection and open failures are
 * explained on stderr, one line each.  The codes:
 *   -EINVAL     a bad argument: NULL where a pointer is needed, unknown
 *               flags, a size or range the call refuses, a malformed spec
 *   -ENOENT     no such allocation or pin handle in this open device
 *   -ENOMEM     no room: device memory, the pinned ceiling, the library's
 *               own memory
 *   -EFAULT     memory of the caller (a copy's buffer, an op's host side, a
 *               pinned range) cannot be read or written
 *   -EOPNOTSUPP the device does not have the capability the call needs
 *               (checked first, before any argument)
 *   -EAGAIN     the asynchronous queue has no room for the batch
 *   -ETIMEDOUT, -EINTR   cnuasdev_wait and the link calls
 *   -ENODEV     no such device, or it went away (PCI function removed)
 *   -EACCES     the device node is not open to this user
 *   -EBUSY      soft: the node is open with other options
 *   -ENOLINK, -EMSGSIZE  the link calls (pcie)
 *   -EXDEV, -EBADF       cnuasdev_import_dmabuf
 * and other negative errnos the kernel returns, passed through.  The checks
 * run in the order of uapi/cnuasgpu_host.h: capability (-EOPNOTSUPP), the
 * arguments themselves (-EINVAL), handles (-ENOENT), ranges against what a
 * handle names (-EINVAL), then resources (-ENOMEM, -EAGAIN) and memory
 * (-EFAULT).  cnuasdev_strerror() names a code.
 *
 * Pointers: the library's own arguments (devices, structs it fills in, op
 * arrays) must be valid or NULL (-EINVAL).  Data buffers - a copy's source
 * or destination, an op's host side, a range to pin - may be anything: bad
 * memory is -EFAULT (an op's completion status, for queued ops).
 *
 * Threads: every call may be made from any thread, on the same device from
 * several threads at once, except cnuasdev_close(), which must be the last
 * call on its device.  Ops of one device's queue complete in submission
 * order whichever thread submitted them.  Soft-GPU state does not survive
 * fork() in the child.
 *
 * Memory: allocations are page-aligned, their sizes rounded up to whole
 * pages, handed out by a bump allocator (a new allocation goes after the
 * last one; space comes back from the top as allocations are released) and
 * read as zeros when new on every backend (the library zeroes pcie memory,
 * which cnuasgpu.ko does not, unless CNUASDEV_ALLOC_NOZERO is given).
 * Allocations belong to the open device that made them; another open of
 * the same node sees -ENOENT for them.  Freed memory stays reserved (it
 * counts in devmem_used) while it is mapped, exported, or used by a queued
 * op; closing a device frees everything it holds in the same way.
 *
 * Soft-GPU: an arena of devmem_mb MiB of process memory; allocations,
 * copies, fill, mapping (the arena itself: zerocopy), pinned accounting
 * against pinned_max_mb (the pages are not locked; the range must be
 * writable process memory outside the arena, else -EFAULT), and an
 * asynchronous queue whose ops run during cnuasdev_submit, so they have
 * completed when it returns (sequence numbers, queue depth, batch limit,
 * completion order and status as the host node's).  It has no DMA-BUF, no
 * link and no poll fd: those calls are -EOPNOTSUPP and the capability bits
 * are off.  The caller's memory is reached through process_vm_readv/writev
 * on itself, which is how a bad buffer becomes -EFAULT; where those calls
 * are not permitted the library copies with memcpy and a bad buffer is the
 * caller's crash.
 */
#ifndef CNUASDEV_H
#define CNUASDEV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CNUASDEV_VERSION_MAJOR	1
#define CNUASDEV_VERSION_MINOR	0
#define CNUASDEV_VERSION_PATCH	0

#if defined(__GNUC__) && defined(CNUASDEV_BUILDING)
#define CNUASDEV_API __attribute__((visibility("default")))
#else
#define CNUASDEV_API
#endif

/* Backends; the numbers are the CNUASGPU_KIND_* of the CAPS ioctl. */
enum cnuasdev_backend {
	CNUASDEV_BACKEND_ANY = 0,	/* only as "not given" */
	CNUASDEV_BACKEND_PCIE = 1,
	CNUASDEV_BACKEND_HOST = 2,
	CNUASDEV_BACKEND_SOFT = 3,
};

/* Capability bits (struct cnuasdev_props.caps); the low six are CNUASGPU_CAP_*. */
#define CNUASDEV_CAP_ZEROCOPY		0x01u	/* cnuasdev_map */
#define CNUASDEV_CAP_PINNED		0x02u	/* cnuasdev_pin, CNUASDEV_OP_F_PINNED */
#define CNUASDEV_CAP_DMABUF		0x04u	/* cnuasdev_export_dmabuf */
#define CNUASDEV_CAP_ASYNC		0x08u	/* cnuasdev_submit, _poll, _wait */
#define CNUASDEV_CAP_LINK		0x10u	/* cnuasdev_link_send, _recv */
#define CNUASDEV_CAP_PEER_RDMA		0x20u	/* exports take ibv_reg_dmabuf_mr */
#define CNUASDEV_CAP_DMABUF_IMPORT	0x100u	/* cnuasdev_import_dmabuf (host) */
#define CNUASDEV_CAP_POLLFD		0x200u	/* cnuasdev_pollfd (host with async) */

struct cnuasdev;	/* an open device */

/* One device node present, as cnuasdev_enumerate lists it. */
struct cnuasdev_devinfo {
	uint32_t backend;	/* enum cnuasdev_backend */
	uint32_t index;		/* N of NAME:N */
	char name[32];		/* "pcie:0", the spec that opens it */
	char path[64];		/* "/dev/cnuasgpu0"; "" for soft */
};

/* What cnuasdev_query says about an open device. */
struct cnuasdev_props {
	uint32_t size;		/* in: sizeof(struct cnuasdev_props) */
	uint32_t backend;	/* enum cnuasdev_backend */
	uint32_t index;
	uint32_t caps;		/* CNUASDEV_CAP_* */
	char name[32];
	char path[64];
	uint64_t devmem_size;	/* bytes of device memory */
	uint64_t devmem_used;	/* bytes reserved by allocations, all opens */
	uint64_t alloc_limit;	/* bytes the allocator may hand out in total */
	uint64_t pinned_max;	/* pinned ceiling, bytes (0 without CAP_PINNED) */
	uint32_t queue_depth;	/* ops per queue (0 without CAP_ASYNC) */
	uint32_t batch_max;	/* ops per submit (0 without CAP_ASYNC) */
	uint32_t page_size;	/* alignment of allocations, maps and pins */
	uint32_t abi_version;	/* the kernel's CNUASGPU_ABI_VERSION; soft: 1 */
	uint32_t fw_version;	/* 0x00010000 = 0.1.0 */
	uint32_t gpu_id;
	uint32_t sm_count;	/* 0 on host and soft */
	uint32_t lanes_per_sm;
	uint32_t tensor_size;
	uint32_t link_up;	/* 1 while CnuasLink is up */
	uint32_t reserved[6];	/* out: 0 */
};

/* An allocation (or an import): what cnuasdev_alloc hands back. */
struct cnuasdev_mem {
	uint32_t handle;	/* names it in calls on this open device */
	uint32_t reserved;	/* 0 */
	uint64_t offset;	/* where it lies in device memory (and the mmap offset) */
	uint64_t size;		/* bytes, a multiple of the page size */
};

/* cnuasdev_alloc flags */
#define CNUASDEV_ALLOC_NOZERO	0x1u	/* pcie: skip zeroing (contents undefined) */

/* cnuasdev_open flags */
#define CNUASDEV_OPEN_NO_SOFT	0x1u	/* automatic selection never picks soft */

/* Asynchronous ops (struct cnuasdev_op.opcode), as uapi/cnuasgpu_host.h. */
#define CNUASDEV_OP_COPY_TO_DEV		1	/* host side -> allocation */
#define CNUASDEV_OP_COPY_FROM_DEV	2	/* allocation -> host side */
#define CNUASDEV_OP_FILL		3	/* allocation bytes = value */

/* struct cnuasdev_op.flags */
#define CNUASDEV_OP_F_PINNED		0x1u	/* host side is byte @host of pin @pin_handle */

/*
 * One op of a batch: @length bytes at @offset of allocation @handle, and
 * for a copy the host side: @length bytes at address @host, or with
 * CNUASDEV_OP_F_PINNED at byte @host of pin @pin_handle.  FILL has no host
 * side (@host, @pin_handle, @flags 0) and sets each byte to @value
 * (0..255; 0 for copies).  @user_data comes back in the completion.
 */
struct cnuasdev_op {
	uint32_t opcode;
	uint32_t flags;
	uint32_t handle;
	uint32_t pin_handle;
	uint64_t offset;
	uint64_t host;
	uint64_t length;
	uint64_t user_data;
	uint32_t value;
	uint32_t reserved;	/* 0 */
};

/* The completion of op @seq: @status 0 or -EFAULT (its host side faulted). */
struct cnuasdev_completion {
	uint64_t seq;
	uint64_t user_data;
	int32_t status;
	uint32_t opcode;
};

/* Where a queue stands: last sequence number submitted, completed, taken (0: none). */
struct cnuasdev_queue_state {
	uint64_t submitted;
	uint64_t completed;
	uint64_t reaped;
};

/* Largest timeout of cnuasdev_wait and the link calls, ms. */
#define CNUASDEV_MAX_TIMEOUT_MS		60000

/* cnuasdev_link_recv flags */
#define CNUASDEV_LINK_RECV_NONBLOCK	0x1u	/* -EAGAIN instead of waiting */
/* Largest link payload, bytes. */
#define CNUASDEV_LINK_MAX_PAYLOAD	(65536 - 8)

/* ---- library ------------------------------------------------------------ */

/* "1.0.0": the library's version (the header's may be older). */
CNUASDEV_API const char *cnuasdev_version(void);

/* The name of a code these functions return ("EINVAL", "OK" for 0; "E?" unknown). */
CNUASDEV_API const char *cnuasdev_strerror(int code);

/* "pcie", "host", "soft"; NULL for another value. */
CNUASDEV_API const char *cnuasdev_backend_name(uint32_t backend);

/*
 * List the devices present: every /dev/cnuasgpuN, then every
 * /dev/cnuasgpu_hostN (each by N), then soft:0, which is always there.
 * Writes up to @max entries to @list (NULL when @max is 0) and the number
 * present to *@count, which may be more than @max.  Nothing is opened: a
 * listed node may still refuse to open (-EACCES).
 * Returns 0, -EINVAL (@count NULL, @list NULL with @max > 0), -ENOMEM.
 */
CNUASDEV_API int cnuasdev_enumerate(struct cnuasdev_devinfo *list, uint32_t max,
				    uint32_t *count);

/* ---- devices ------------------------------------------------------------ */

/*
 * Open a device chosen as "Selection" above says; *@dev is set on success.
 * @flags: CNUASDEV_OPEN_*.
 * Returns 0, -EINVAL (bad spec, flags, options, NULL @dev), -ENODEV (no
 * such device; automatic selection found none), -EACCES, -EBUSY, -ENOMEM,
 * or the errno of open(2).
 */
CNUASDEV_API int cnuasdev_open(const char *spec, uint32_t flags, struct cnuasdev **dev);

/* Close: frees what the device holds (see "Memory"); NULL is allowed.  Returns 0. */
CNUASDEV_API int cnuasdev_close(struct cnuasdev *dev);

/*
 * Fill in @props; props->size must be sizeof(struct cnuasdev_props).
 * Returns 0, -EINVAL, -ENODEV.
 */
CNUASDEV_API int cnuasdev_query(struct cnuasdev *dev, struct cnuasdev_props *props);

/* The capability bits of @dev (CNUASDEV_CAP_*), or 0 for NULL. */
CNUASDEV_API uint32_t cnuasdev_caps(struct cnuasdev *dev);

/* ---- memory ------------------------------------------------------------- */

/*
 * Allocate @size bytes (rounded up to pages) aligned to @align (0: a page;
 * else a power of two from the page size to 1 GiB); zero-filled.
 * Returns 0, -EINVAL (size 0, bad align, unknown flags, NULL @mem),
 * -ENOMEM (no room).
 */
CNUASDEV_API int cnuasdev_alloc(struct cnuasdev *dev, uint64_t size, uint64_t align,
				uint32_t flags, struct cnuasdev_mem *mem);

/* Free allocation or import @handle.  Returns 0, -ENOENT. */
CNUASDEV_API int cnuasdev_free(struct cnuasdev *dev, uint32_t handle);

/*
 * Copy @size bytes from @src to allocation @handle at byte @offset, or from
 * there to @dst.  Returns 0, -EINVAL (size 0, the range passes the end),
 * -ENOENT, -EFAULT (the buffer; bytes before the fault may have moved).
 */
CNUASDEV_API int cnuasdev_copy_to(struct cnuasdev *dev, uint32_t handle, uint64_t offset,
				  const void *src, uint64_t size);
CNUASDEV_API int cnuasdev_copy_from(struct cnuasdev *dev, uint32_t handle, uint64_t offset,
				    void *dst, uint64_t size);

/* Set @size bytes of allocation @handle at @offset to @value.  Errors as the copies'. */
CNUASDEV_API int cnuasdev_fill(struct cnuasdev *dev, uint32_t handle, uint64_t offset,
			       uint8_t value, uint64_t size);

/*
 * Zerocopy: map @mem (all of it, as cnuasdev_alloc or cnuasdev_import_dmabuf
 * gave it) into this process, read-write and shared with copies and ops.
 * The mapping outlives cnuasdev_free and cnuasdev_close of the allocation
 * (which stays reserved) until cnuasdev_unmap.
 * Returns 0, -EOPNOTSUPP, -EINVAL (@mem is not an allocation of this open
 * device at that offset and size), -ENOMEM.
 */
CNUASDEV_API int cnuasdev_map(struct cnuasdev *dev, const struct cnuasdev_mem *mem,
			      void **ptr);

/*
 * Undo a cnuasdev_map: @ptr and @size as it gave them (size = mem->size).
 * Returns 0, -EINVAL (no such mapping).
 */
CNUASDEV_API int cnuasdev_unmap(void *ptr, uint64_t size);

/*
 * Pin @length bytes of this process's memory at @ptr (both page-aligned)
 * for ops with CNUASDEV_OP_F_PINNED, accounted against the node's pinned
 * ceiling.  Out: *@handle, for ops and cnuasdev_unpin.
 * Returns 0, -EOPNOTSUPP, -EINVAL (length 0, not page-aligned, wraps),
 * -ENOMEM (past the ceiling), -EFAULT (not writable memory that can be
 * pinned; a mapping of device memory cannot).
 */
CNUASDEV_API int cnuasdev_pin(struct cnuasdev *dev, void *ptr, uint64_t length,
			      uint32_t *handle);

/* Release pin @handle (when the last queued op using it is done).  Returns 0, -EOPNOTSUPP, -ENOENT. */
CNUASDEV_API int cnuasdev_unpin(struct cnuasdev *dev, uint32_t handle);

/*
 * Export allocation @handle as a DMA-BUF; *@fd is the new file descriptor
 * (close-on-exec), the caller's to close.  Returns 0, -EOPNOTSUPP, -ENOENT.
 */
CNUASDEV_API int cnuasdev_export_dmabuf(struct cnuasdev *dev, uint32_t handle, int *fd);

/*
 * Import DMA-BUF @fd, exported from the same node (by any open), as a handle
 * of this open device; *@mem as for an allocation.
 * Returns 0, -EOPNOTSUPP, -EBADF, -EINVAL (not one of this module's), -EXDEV
 * (another node's).
 */
CNUASDEV_API int cnuasdev_import_dmabuf(struct cnuasdev *dev, int fd, struct cnuasdev_mem *mem);

/* ---- asynchronous queue --------------------------------------------------- */

/*
 * Queue @count ops (1 .. batch_max), all or none; op i gets sequence
 * number *@first_seq + i.  Sequence numbers start at 1 for each open device.
 * A queue holds queue_depth ops from submission until their completions
 * are taken.
 * Returns 0, -EOPNOTSUPP (no CAP_ASYNC; an op with CNUASDEV_OP_F_PINNED
 * without CAP_PINNED), -EINVAL (count, a bad op), -ENOENT (an op's handle
 * or pin), -EAGAIN (fewer than @count slots free).  The first bad op decides.
 */
CNUASDEV_API int cnuasdev_submit(struct cnuasdev *dev, const struct cnuasdev_op *ops,
				 uint32_t count, uint64_t *first_seq);

/*
 * Take up to @max (0 .. queue_depth) completions that are ready, oldest
 * first, into @comps; *@count says how many.  @state (may be NULL) gets the
 * queue's position after the call.
 * Returns 0, -EOPNOTSUPP, -EINVAL.
 */
CNUASDEV_API int cnuasdev_poll(struct cnuasdev *dev, struct cnuasdev_completion *comps,
			       uint32_t max, uint32_t *count,
			       struct cnuasdev_queue_state *state);

/*
 * Wait up to @timeout_ms (0 .. CNUASDEV_MAX_TIMEOUT_MS; 0: do not wait) for
 * op @seq (1 .. last submitted) to complete, then take completions as
 * cnuasdev_poll.  Returns 0, -EOPNOTSUPP, -EINVAL, -ETIMEDOUT, -EINTR
 * (nothing is taken on an error).
 */
CNUASDEV_API int cnuasdev_wait(struct cnuasdev *dev, uint64_t seq, uint32_t timeout_ms,
			       struct cnuasdev_completion *comps, uint32_t max,
			       uint32_t *count, struct cnuasdev_queue_state *state);

/*
 * A file descriptor for poll(2): POLLIN while a completion waits, POLLOUT
 * while the queue has room.  It belongs to the device (do not close it).
 * Returns 0, -EOPNOTSUPP (no CAP_POLLFD).
 */
CNUASDEV_API int cnuasdev_pollfd(struct cnuasdev *dev, int *fd);

/* ---- CnuasLink (pcie) --------------------------------------------------- */

/*
 * Send @len payload bytes (1 .. CNUASDEV_LINK_MAX_PAYLOAD) to accelerator
 * @dst_gpu_id (0xffffffff: all), waiting up to @timeout_ms.
 * Returns 0, -EOPNOTSUPP, -EINVAL, -ENOLINK, -ETIMEDOUT, -EFAULT.
 */
CNUASDEV_API int cnuasdev_link_send(struct cnuasdev *dev, const void *buf, uint32_t len,
				    uint32_t dst_gpu_id, uint32_t timeout_ms);

/*
 * Receive a frame's payload into @buf (@size bytes); *@len, *@src_gpu_id
 * (either may be NULL) say what came.  @flags: CNUASDEV_LINK_RECV_NONBLOCK.
 * Returns 0, -EOPNOTSUPP, -EINVAL, -EMSGSIZE (*@len says how long; the frame
 * stays queued), -ETIMEDOUT, -EAGAIN, -EFAULT.
 */
CNUASDEV_API int cnuasdev_link_recv(struct cnuasdev *dev, void *buf, uint32_t size,
				    uint32_t *len, uint32_t *src_gpu_id,
				    uint32_t timeout_ms, uint32_t flags);

#ifdef __cplusplus
}
#endif

#endif /* CNUASDEV_H */
