/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/*
 * cnuas_ib <-> libcnuas (the libibverbs provider "cnuas"): the driver-private
 * parts of the uverbs commands and the completion queue ring both sides map.
 *
 * Every struct is a multiple of 8 bytes with explicit padding, so the layout
 * is the same for a 64-bit kernel and any user space.  Bump
 * CNUAS_IB_ABI_VERSION on any change; the provider refuses a kernel whose
 * version it does not know.
 */
#ifndef CNUAS_IB_ABI_H
#define CNUAS_IB_ABI_H

#include <linux/types.h>

#define CNUAS_IB_ABI_VERSION	1

/*
 * The completion queue ring.  The kernel writes entries and advances
 * @producer; the consumer (the provider's ibv_poll_cq, or the kernel's
 * poll_cq for a kernel CQ) reads entries and advances @consumer.  Both are
 * free-running u32 counters; the slot of counter c is c & (entries - 1).
 * The two counters sit on separate cache lines.  A consumer value the
 * kernel cannot make sense of (more than @entries behind) counts as a full
 * ring: the CQ overflows, nothing else.
 */
struct cnuas_ib_cq_ring_hdr {
	__u32 producer;
	__u32 pad0[15];
	__u32 consumer;
	__u32 pad1[15];
};

/* cnuas_ib_cqe.flags, the uverbs (user) values of ibv_wc_flags */
#define CNUAS_IB_CQE_GRH		0x1U
#define CNUAS_IB_CQE_WITH_IMM		0x2U
#define CNUAS_IB_CQE_WITH_INV		0x8U

/* cnuas_ib_cqe.net_type: what the 40-byte GRH area of a UD receive holds */
#define CNUAS_IB_CQE_NET_IB		0
#define CNUAS_IB_CQE_NET_IPV4		2
#define CNUAS_IB_CQE_NET_IPV6		3

/*
 * One completion, 48 bytes.  @status, @opcode and @flags carry the uverbs
 * values (enum ib_uverbs_wc_status / ib_uverbs_wc_opcode / the flags
 * above); @imm_data is in network byte order, as in struct ibv_wc.
 */
struct cnuas_ib_cqe {
	__aligned_u64 wr_id;
	__u32 status;
	__u32 opcode;
	__u32 vendor_err;
	__u32 byte_len;
	__u32 imm_data;
	__u32 qp_num;
	__u32 src_qp;
	__u32 flags;
	__u16 pkey_index;
	__u16 slid;
	__u8 sl;
	__u8 dlid_path_bits;
	__u8 net_type;
	__u8 reserved;
};

/* Response of ALLOC_UCONTEXT (ibv_get_context). */
struct cnuas_ib_alloc_ucontext_resp {
	__u32 abi_version;
	__u32 max_inline;
	__u32 cqe_size;
	__u32 reserved;
};

/*
 * Response of CREATE_CQ: mmap(@mmap_len bytes at offset @mmap_offset of the
 * uverbs file) gives the ring: a cnuas_ib_cq_ring_hdr followed by
 * @entries cnuas_ib_cqe.
 */
struct cnuas_ib_create_cq_resp {
	__aligned_u64 mmap_offset;
	__aligned_u64 mmap_len;
	__u32 entries;
	__u32 reserved;
};

/*
 * Response of CREATE_QP.  @max_inline is the inline room of each send
 * queue slot: a post_send with IBV_SEND_INLINE whose SGEs add up to more is
 * refused with EINVAL on every QP type, before anything is queued or sent.
 */
struct cnuas_ib_create_qp_resp {
	__u32 qpn;
	__u32 max_inline;
};

#endif /* CNUAS_IB_ABI_H */
