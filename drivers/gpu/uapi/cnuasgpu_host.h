/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * cnuasgpu_host.ko user interface: /dev/cnuasgpu_hostN, host-backed
 * CnuasGPU nodes that need no PCI function.  The contract, with module
 * parameters, errnos and lifetime rules, is docs/devices.md (cnuasgpu_host.ko).
 *
 * The cnuasgpu ioctls of uapi/cnuasgpu.h apply with the same numbers and
 * structs: INFO, CAPS, ALLOC, FREE, COPY_TO_DEV, COPY_FROM_DEV,
 * EXPORT_DMABUF and mmap().  LINK_SEND and LINK_RECV are ENOTTY (no link).
 * Device memory is an arena of host pages per node (module parameter
 * devmem_mb), handed out by the same page-aligned bump allocator as
 * cnuasgpu.ko; an allocation's offset in the arena is its mmap() offset.
 * Differences from cnuasgpu.ko:
 *  - handles (allocations, imports, pins) are per open file, never 0, and
 *    one number space: FREE of a pin handle or UNPIN of an allocation is
 *    ENOENT;
 *  - new allocations read as zeros;
 *  - mmap() maps the arena pages themselves (cacheable, coherent with the
 *    copy ioctls and with queued ops); the mapping cannot be pinned
 *    (PIN or ibv_reg_mr of it: EFAULT) - export a DMA-BUF instead;
 *  - an export's DMA-BUF is ordinary memory: any importer may attach, and
 *    a second open of the node imports it with CNUASGPU_IOC_IMPORT_DMABUF.
 *
 * Feature switches (module parameters zerocopy, pinned, dmabuf, async): a
 * feature switched off has no bit in CNUASGPU_IOC_CAPS and its calls
 * answer EOPNOTSUPP before anything else is looked at: mmap() (zerocopy);
 * PIN, UNPIN and ops with CNUASGPU_OP_F_PINNED (pinned); EXPORT_DMABUF and
 * IMPORT_DMABUF (dmabuf); SUBMIT, POLL and WAIT (async; poll() on the fd
 * then reports EPOLLERR).
 *
 * Every new struct starts with its own size (and SUBMIT/POLL/WAIT name the
 * size of their array elements): a size other than this header's is
 * EINVAL.  Fields marked "must be 0" include out fields on the way in.
 * Checks run in this order and the first failure decides the errno:
 * feature (EOPNOTSUPP), reading the argument (EFAULT), sizes, flags,
 * reserved fields and ranges of the argument itself (EINVAL), handles
 * (ENOENT), ranges against what the handles name (EINVAL), resources
 * (ENOMEM, EAGAIN).  A command number this driver does not know, including
 * a known one with another size or direction, is ENOTTY.
 */
#ifndef _UAPI_CNUASGPU_HOST_H
#define _UAPI_CNUASGPU_HOST_H

#include <linux/ioctl.h>
#include <linux/types.h>

#include "cnuasgpu.h"

/* Longest CNUASGPU_IOC_WAIT may wait (timeout_ms above this: EINVAL). */
#define CNUASGPU_WAIT_MAX_TIMEOUT_MS	60000

/*
 * CNUASGPU_IOC_PIN: pin @length bytes of this process's memory at
 * @user_ptr (pin_user_pages, long term, writable) and account them against
 * the node's ceiling (module parameter pinned_max_mb, CAPS pinned_max).
 * Out: @handle, for ops with CNUASGPU_OP_F_PINNED and for UNPIN.  The pages
 * stay pinned until UNPIN, or until the file is closed (the process dying
 * closes it), or until the last queued op using them completes, whichever
 * is last.
 * EINVAL: size, flags, handle or reserved set, length 0, user_ptr or length
 * not page-aligned, the range wraps.  ENOMEM: the node's pinned bytes would
 * pass the ceiling.  EFAULT: the range is not writable user memory that can
 * be pinned.
 */
struct cnuasgpu_pin {
	__u32 size;		/* sizeof(struct cnuasgpu_pin) */
	__u32 flags;		/* must be 0 */
	__u64 user_ptr;		/* page-aligned */
	__u64 length;		/* bytes, a multiple of the page size */
	__u32 handle;		/* out */
	__u32 reserved;		/* must be 0 */
};

/*
 * CNUASGPU_IOC_UNPIN: release pin @handle (the pages are unpinned now, or
 * when the last queued op using them completes).
 * EINVAL: size, flags or reserved set.  ENOENT: no pin @handle in this file.
 */
struct cnuasgpu_unpin {
	__u32 size;		/* sizeof(struct cnuasgpu_unpin) */
	__u32 handle;
	__u32 flags;		/* must be 0 */
	__u32 reserved;		/* must be 0 */
};

/*
 * CNUASGPU_IOC_IMPORT_DMABUF: take a DMA-BUF that CNUASGPU_IOC_EXPORT_DMABUF
 * made on this node (from any open file, passed by fork or SCM_RIGHTS) and
 * give it a handle in this file.  The handle works like an allocation's
 * handle for COPY_TO_DEV, COPY_FROM_DEV, mmap() (at @offset), ops and
 * EXPORT_DMABUF (a new fd of the same DMA-BUF); FREE drops the import.  The
 * import holds a reference to the DMA-BUF, so the allocation stays reserved
 * while it exists.  Out: @handle, @offset (the allocation's arena and mmap
 * offset) and @length (its size).
 * EINVAL: size, flags or out fields set; @fd is a DMA-BUF this module did
 * not make.  EBADF: @fd is not an open file.  EXDEV: it was made on another
 * node of this module.
 */
struct cnuasgpu_import {
	__u32 size;		/* sizeof(struct cnuasgpu_import) */
	__s32 fd;		/* the DMA-BUF */
	__u32 flags;		/* must be 0 */
	__u32 handle;		/* out */
	__u64 offset;		/* out */
	__u64 length;		/* out */
};

/* Asynchronous ops (struct cnuasgpu_op.opcode). */
#define CNUASGPU_OP_COPY_TO_DEV		1	/* host -> allocation */
#define CNUASGPU_OP_COPY_FROM_DEV	2	/* allocation -> host */
#define CNUASGPU_OP_FILL		3	/* allocation bytes = value */

/* struct cnuasgpu_op.flags */
#define CNUASGPU_OP_F_PINNED		0x1u	/* host side is pin @pin_handle */

/*
 * One op of a SUBMIT batch.  The device side is @length bytes at @offset
 * in allocation (or import) @handle.  The host side of a copy is @length
 * bytes at user address @host in the submitting process, or with
 * CNUASGPU_OP_F_PINNED at byte @host of pin @pin_handle.  FILL has no host
 * side (@host, @pin_handle and flags 0) and sets every byte to @value.
 * Checked at SUBMIT, the first bad op deciding the errno: EINVAL for an
 * unknown opcode or flag, length 0, value above 255 (or not 0 for a copy),
 * reserved set, pin_handle set without the flag, a range past the
 * allocation or the pin, a user range that wraps; ENOENT for a handle or
 * pin_handle this file does not have; EOPNOTSUPP for CNUASGPU_OP_F_PINNED
 * with the pinned feature off.  User memory is read or written when the op
 * runs: a fault then is the op's status (-EFAULT), not SUBMIT's errno.
 * An op holds what it names: FREE or UNPIN of them while it is queued
 * takes the handle away but the memory stays until the op completes.
 */
struct cnuasgpu_op {
	__u32 opcode;		/* CNUASGPU_OP_* */
	__u32 flags;		/* CNUASGPU_OP_F_* */
	__u32 handle;		/* allocation or import */
	__u32 pin_handle;	/* with CNUASGPU_OP_F_PINNED, else 0 */
	__u64 offset;		/* bytes into the allocation */
	__u64 host;		/* user address, or bytes into the pin; FILL: 0 */
	__u64 length;		/* bytes, > 0 */
	__u64 user_data;	/* returned in the op's completion */
	__u32 value;		/* FILL: the byte, 0..255; copies: 0 */
	__u32 reserved;		/* must be 0 */
};

/*
 * CNUASGPU_IOC_SUBMIT: queue @count ops (1 .. CAPS batch_max) from the
 * array at @ops_ptr on this file's queue.  Ops run one after another in
 * submission order, on a kernel worker; op ops[i] gets sequence number
 * @first_seq + i (out).  Sequence numbers start at 1 for each open file and
 * never repeat.  The queue holds CAPS queue_depth ops, counted from SUBMIT
 * until their completion is taken by POLL or WAIT.  All or nothing: on any
 * error no op is queued.
 * EINVAL: size or op_size not this header's, count 0 or above batch_max,
 * flags, reserved or first_seq set, a bad op (above).  EFAULT: the array.
 * ENOENT, EOPNOTSUPP: a bad op.  EAGAIN: fewer than @count slots free.
 */
struct cnuasgpu_submit {
	__u32 size;		/* sizeof(struct cnuasgpu_submit) */
	__u32 op_size;		/* sizeof(struct cnuasgpu_op) */
	__u64 ops_ptr;		/* struct cnuasgpu_op[count] */
	__u32 count;
	__u32 flags;		/* must be 0 */
	__u64 first_seq;	/* out */
	__u64 reserved;		/* must be 0 */
};

/*
 * The completion of op @seq: @status 0, -EFAULT (user memory of the host
 * side faulted; bytes before the fault may have been copied), or -ECANCELED
 * (the file was closed first; seen by no one, documented for the model).
 */
struct cnuasgpu_completion {
	__u64 seq;
	__u64 user_data;	/* the op's */
	__s32 status;
	__u32 opcode;		/* the op's */
};

/*
 * CNUASGPU_IOC_POLL: take up to @max completions (0 .. queue_depth) that
 * are ready, oldest first, into the array at @comps_ptr; never waits.
 * CNUASGPU_IOC_WAIT: first wait until op @seq (1 .. last submitted) has
 * completed, up to @timeout_ms (0: do not wait), then take completions as
 * POLL does.  Ops complete in sequence order, so when op @seq has, every
 * earlier one has too.
 * Out, both: @count completions written; @submitted, @completed and
 * @reaped, the sequence numbers of the last op submitted, the last op
 * completed and the last completion taken (this call's included), 0 for
 * none.  poll() on the fd: EPOLLIN while a completion waits to be taken,
 * EPOLLOUT while the queue has room for one more op.
 * EINVAL: size or comp_size not this header's, max above queue_depth,
 * flags or out fields set; POLL with seq or timeout_ms set; WAIT with seq 0
 * or past the last op submitted, timeout_ms above
 * CNUASGPU_WAIT_MAX_TIMEOUT_MS.  EFAULT: the array (nothing is taken).
 * ETIMEDOUT: op @seq did not complete in time (nothing is taken).  EINTR: a
 * signal came first (nothing is taken).
 */
struct cnuasgpu_reap {
	__u32 size;		/* sizeof(struct cnuasgpu_reap) */
	__u32 comp_size;	/* sizeof(struct cnuasgpu_completion) */
	__u64 comps_ptr;	/* struct cnuasgpu_completion[max] */
	__u32 max;
	__u32 timeout_ms;	/* WAIT only */
	__u64 seq;		/* WAIT only */
	__u32 count;		/* out */
	__u32 flags;		/* must be 0 */
	__u64 submitted;	/* out */
	__u64 completed;	/* out */
	__u64 reaped;		/* out */
};

#define CNUASGPU_IOC_PIN	_IOWR(CNUASGPU_IOC_MAGIC, 0x10, struct cnuasgpu_pin)
#define CNUASGPU_IOC_UNPIN	_IOW(CNUASGPU_IOC_MAGIC, 0x11, struct cnuasgpu_unpin)
#define CNUASGPU_IOC_IMPORT_DMABUF	_IOWR(CNUASGPU_IOC_MAGIC, 0x12, struct cnuasgpu_import)
#define CNUASGPU_IOC_SUBMIT	_IOWR(CNUASGPU_IOC_MAGIC, 0x13, struct cnuasgpu_submit)
#define CNUASGPU_IOC_POLL	_IOWR(CNUASGPU_IOC_MAGIC, 0x14, struct cnuasgpu_reap)
#define CNUASGPU_IOC_WAIT	_IOWR(CNUASGPU_IOC_MAGIC, 0x15, struct cnuasgpu_reap)

#endif /* _UAPI_CNUASGPU_HOST_H */
