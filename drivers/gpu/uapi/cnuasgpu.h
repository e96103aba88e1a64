/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * cnuasgpu.ko user interface: /dev/cnuasgpuN, one per cnuasgpu PCI function.
 *
 * Device memory (BAR1) is handed out by a page-aligned bump allocator; an
 * allocation is identified by its handle and lives at a BAR1 offset, which is
 * also the mmap() offset of the allocation (write-combining mapping).
 * Allocations belong to the open file that made them: only it can copy to,
 * copy from, map, export or free them, and closing it frees them all (an
 * allocation still mapped or exported stays reserved until that ends).
 *
 * CnuasLink frames carry an 8-byte header the driver writes: destination
 * gpu_id, then source gpu_id, both little-endian; 0xffffffff as destination
 * addresses every accelerator on the link.  Senders pass and receivers get
 * only the payload (1 .. CNUASGPU_LINK_MAX_PAYLOAD bytes).
 *
 * Every ioctl checks its reserved fields (must be zero), sizes, alignment,
 * ranges and ownership and fails with EINVAL, ENOMEM, ENOENT, EFAULT,
 * ENOLINK, ETIMEDOUT, EMSGSIZE or EAGAIN as documented per command; an
 * unknown command fails with ENOTTY.
 *
 * A file stays open when its PCI function is removed (unbound, hot-unplugged):
 * from then on every ioctl and mmap() on it fails with ENODEV, including a
 * copy already under way (it stops at the next 64 KiB chunk; the bytes
 * before it were copied), and its mappings are torn down.  close() still
 * works.
 */
#ifndef _UAPI_CNUASGPU_H
#define _UAPI_CNUASGPU_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define CNUASGPU_ABI_VERSION		1

/* Largest CnuasLink frame on the wire, and the header the driver adds. */
#define CNUASGPU_LINK_MTU		65536
#define CNUASGPU_LINK_HDR_LEN		8
#define CNUASGPU_LINK_MAX_PAYLOAD	(CNUASGPU_LINK_MTU - CNUASGPU_LINK_HDR_LEN)
#define CNUASGPU_LINK_BROADCAST		0xffffffffu

/* Longest a link ioctl may wait (timeout_ms above this: EINVAL). */
#define CNUASGPU_LINK_MAX_TIMEOUT_MS	60000

/* CNUASGPU_IOC_INFO: identity and state of the device (all out). */
struct cnuasgpu_info {
	__u32 abi_version;	/* CNUASGPU_ABI_VERSION */
	__u32 fw_version;	/* 0x00010000 = 0.1.0 */
	__u32 gpu_id;
	__u32 sm_count;
	__u32 lanes_per_sm;
	__u32 tensor_size;
	__u64 devmem_size;	/* BAR1 bytes */
	__u64 devmem_used;	/* bytes reserved by allocations */
	__u64 alloc_limit;	/* bytes the allocator may hand out in total */
	__u32 link_up;		/* 1 while CnuasLink is up */
	__u32 reserved;
};

/*
 * CNUASGPU_IOC_ALLOC: reserve @size bytes (rounded up to pages) of device
 * memory aligned to @align (0 = page; else a power of two, page to 1 GiB).
 * Out: @handle and the BAR1 @offset (the mmap offset).
 * EINVAL: size 0, bad align, flags or reserved set.  ENOMEM: no room.
 */
struct cnuasgpu_alloc {
	__u64 size;
	__u64 align;
	__u32 flags;		/* must be 0 */
	__u32 handle;		/* out */
	__u64 offset;		/* out */
};

/* CNUASGPU_IOC_FREE: release an allocation of this file.  ENOENT: no such handle here. */
struct cnuasgpu_free {
	__u32 handle;
	__u32 reserved;
};

/*
 * CNUASGPU_IOC_COPY_TO_DEV / CNUASGPU_IOC_COPY_FROM_DEV: copy @size bytes
 * between user memory at @user_ptr and allocation @handle at byte @offset.
 * EINVAL: size 0, range past the allocation, reserved set.  ENOENT: handle.
 * EFAULT: user memory.
 */
struct cnuasgpu_copy {
	__u32 handle;
	__u32 reserved;
	__u64 offset;
	__u64 user_ptr;
	__u64 size;
};

/*
 * CNUASGPU_IOC_LINK_SEND: send @len payload bytes from @user_ptr to
 * accelerator @dst_gpu_id, waiting up to @timeout_ms for the device to
 * complete it.  ENOLINK: link down.  EINVAL: len 0 or above
 * CNUASGPU_LINK_MAX_PAYLOAD, timeout too long, flags or reserved set.
 * ETIMEDOUT: no completion.
 */
struct cnuasgpu_link_send {
	__u64 user_ptr;
	__u32 len;
	__u32 dst_gpu_id;
	__u32 timeout_ms;
	__u32 flags;		/* must be 0 */
};

/* CNUASGPU_LINK_RECV flags */
#define CNUASGPU_LINK_RECV_NONBLOCK	0x1u	/* EAGAIN instead of waiting */

/*
 * CNUASGPU_IOC_LINK_RECV: wait up to @timeout_ms for a frame and copy its
 * payload to @user_ptr (@buf_size bytes available).  Out: @len, the source
 * and destination gpu_id.  EMSGSIZE: the payload is longer than @buf_size
 * (@len says how long; the frame stays queued).  ETIMEDOUT / EAGAIN: nothing
 * arrived.  poll() reports POLLIN while a frame waits.
 */
struct cnuasgpu_link_recv {
	__u64 user_ptr;
	__u32 buf_size;
	__u32 len;		/* out */
	__u32 src_gpu_id;	/* out */
	__u32 dst_gpu_id;	/* out */
	__u32 timeout_ms;
	__u32 flags;
};

/* CNUASGPU_IOC_EXPORT_DMABUF flags */
#define CNUASGPU_EXPORT_CLOEXEC		0x1u	/* the new fd is close-on-exec */

/*
 * CNUASGPU_IOC_EXPORT_DMABUF: export allocation @handle, whole, as a DMA-BUF.
 * Out: @fd.  The allocation stays reserved (devmem_used, the BAR1 range)
 * until the last reference to the DMA-BUF closes, even when it is freed or
 * its file closed first.  Importers must accept peer-to-peer memory (it is
 * BAR1, with no struct pages): an importer that does not is refused at
 * attach with EOPNOTSUPP.  The DMA-BUF supports vmap (write-combining) for
 * importers that copy with the CPU, like a software RDMA transport.
 * EINVAL: unknown flags, reserved or fd set.  ENOENT: no such handle here.
 */
struct cnuasgpu_export {
	__u32 handle;
	__u32 flags;
	__s32 fd;		/* out */
	__u32 reserved;
};

/*
 * CNUASGPU_IOC_CAPS: what this device offers, answered by both cnuasgpu.ko
 * (/dev/cnuasgpuN) and cnuasgpu_host.ko (/dev/cnuasgpu_hostN), so one
 * library can drive either.  In: @size = sizeof(struct cnuasgpu_caps), every
 * other byte 0.  Out: the whole struct, @size unchanged, reserved 0.
 * EINVAL: @size is not this struct's size, or another byte is not 0.
 * A kernel without this command answers ENOTTY: treat that as a cnuasgpu.ko
 * with CNUASGPU_CAP_ZEROCOPY | CNUASGPU_CAP_DMABUF | CNUASGPU_CAP_PEER_RDMA.
 */
#define CNUASGPU_CAPS_VERSION		1

#define CNUASGPU_KIND_PCIE		1	/* cnuasgpu.ko, a PCI function */
#define CNUASGPU_KIND_HOST		2	/* cnuasgpu_host.ko, host pages */
/* 3 is kept for in-process (Soft-GPU) backends; no kernel answers it. */

/* Capability bits; a feature without its bit answers EOPNOTSUPP. */
#define CNUASGPU_CAP_ZEROCOPY		0x01u	/* mmap() of allocations */
#define CNUASGPU_CAP_PINNED		0x02u	/* PIN / UNPIN of user memory */
#define CNUASGPU_CAP_DMABUF		0x04u	/* EXPORT_DMABUF (host: and IMPORT) */
#define CNUASGPU_CAP_ASYNC		0x08u	/* SUBMIT / POLL / WAIT, poll() */
#define CNUASGPU_CAP_LINK		0x10u	/* LINK_SEND / LINK_RECV */
#define CNUASGPU_CAP_PEER_RDMA		0x20u	/* exports take ibv_reg_dmabuf_mr */

struct cnuasgpu_caps {
	__u32 size;		/* in: sizeof(struct cnuasgpu_caps) */
	__u32 version;		/* out: CNUASGPU_CAPS_VERSION */
	__u32 kind;		/* out: CNUASGPU_KIND_* */
	__u32 caps;		/* out: CNUASGPU_CAP_* */
	__u64 devmem_size;	/* out: device memory, bytes */
	__u64 pinned_max;	/* out: pinned ceiling, bytes (0 without CAP_PINNED) */
	__u32 queue_depth;	/* out: ops per open queue (0 without CAP_ASYNC) */
	__u32 batch_max;	/* out: ops per SUBMIT (0 without CAP_ASYNC) */
	__u32 page_size;	/* out: alignment of allocations, mmap and PIN */
	__u32 reserved[5];	/* in and out: 0 */
};

#define CNUASGPU_IOC_MAGIC	0xC7

#define CNUASGPU_IOC_INFO	_IOR(CNUASGPU_IOC_MAGIC, 0x00, struct cnuasgpu_info)
#define CNUASGPU_IOC_ALLOC	_IOWR(CNUASGPU_IOC_MAGIC, 0x01, struct cnuasgpu_alloc)
#define CNUASGPU_IOC_FREE	_IOW(CNUASGPU_IOC_MAGIC, 0x02, struct cnuasgpu_free)
#define CNUASGPU_IOC_COPY_TO_DEV	_IOW(CNUASGPU_IOC_MAGIC, 0x03, struct cnuasgpu_copy)
#define CNUASGPU_IOC_COPY_FROM_DEV	_IOW(CNUASGPU_IOC_MAGIC, 0x04, struct cnuasgpu_copy)
#define CNUASGPU_IOC_LINK_SEND	_IOW(CNUASGPU_IOC_MAGIC, 0x05, struct cnuasgpu_link_send)
#define CNUASGPU_IOC_LINK_RECV	_IOWR(CNUASGPU_IOC_MAGIC, 0x06, struct cnuasgpu_link_recv)
#define CNUASGPU_IOC_EXPORT_DMABUF	_IOWR(CNUASGPU_IOC_MAGIC, 0x07, struct cnuasgpu_export)
#define CNUASGPU_IOC_CAPS	_IOWR(CNUASGPU_IOC_MAGIC, 0x08, struct cnuasgpu_caps)

/* 0x10 .. 0x1f: cnuasgpu_host.ko only, uapi/cnuasgpu_host.h. */

#endif /* _UAPI_CNUASGPU_H */
