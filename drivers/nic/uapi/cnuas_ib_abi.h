/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/*
 * cnuas_ib <-> libcnuas (the libibverbs provider "cnuas"): the driver-private
 * parts of the uverbs commands and the rings both sides map (completion
 * queues; receive queues of user QPs and SRQs).
 *
 * Every struct is a multiple of 8 bytes with explicit padding, so the layout
 * is the same for a 64-bit kernel and any user space.  Bump
 * CNUAS_IB_ABI_VERSION on any incompatible change; the provider refuses a
 * kernel whose version it does not know.  A response may grow at its end
 * without a bump: the kernel writes no more than the provider asked for
 * and the provider zero-fills what an older kernel did not write.
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
 * The receive queue ring of a user RC or UD QP without an SRQ, and of a
 * user SRQ (same header and slots).  The
 * provider's ibv_post_recv fills slots and advances @producer (release);
 * the kernel takes receives from the ring and advances @consumer (release)
 * once it has copied a slot out, so the slot is free again.  Free-running
 * u32 counters; the slot of counter c is c & (entries - 1).  The kernel
 * trusts nothing here: it copies a slot once before looking at it, a slot
 * with more than max_sge SGEs completes with IBV_WC_LOC_QP_OP_ERR, and a
 * @producer more than @entries ahead of what the kernel consumed moves the
 * QP to the error state (IBV_EVENT_QP_FATAL).
 *
 * @error is written by the kernel: nonzero from the moment the QP enters
 * the error state until it is reset.  A receive posted in the error state
 * must complete as flushed, but the kernel flushes only when something
 * runs the QP; so the provider, after publishing @producer, issues a full
 * barrier and reads @error, and if it is set makes a POST_RECV command
 * with no work request, which runs the flush.  The kernel sets @error,
 * issues a full barrier, then reads @producer to flush: one of the two
 * sides always sees the other's write.
 *
 * An SRQ's ring has no @error (always 0): an SRQ has no error state of its
 * own that flushes, its receives stay posted for the other QPs.  What
 * differs is the answer to a ring the provider cannot have written: a bad
 * slot completes with IBV_WC_LOC_QP_OP_ERR on the QP that took it, which
 * moves to the error state (IBV_EVENT_QP_FATAL); a bad @producer puts the
 * SRQ in error (IBV_EVENT_SRQ_ERR, once): it gives no receive any more.
 */
struct cnuas_ib_rq_ring_hdr {
	__u32 producer;
	__u32 pad0[15];
	__u32 consumer;
	__u32 error;
	__u32 pad1[14];
};

struct cnuas_ib_rq_sge {
	__aligned_u64 addr;
	__u32 length;
	__u32 lkey;
};

/* One receive: 16 bytes, then rq_max_sge SGEs (rq_slot_size bytes in all) */
struct cnuas_ib_rq_slot {
	__aligned_u64 wr_id;
	__u32 num_sge;
	__u32 reserved;
	struct cnuas_ib_rq_sge sge[];
};

/* cnuas_ib_create_qp_resp.flags */
#define CNUAS_IB_QP_RQ_RING		0x1U

/*
 * Response of CREATE_QP.  @max_inline is the inline room of each send
 * queue slot: a post_send with IBV_SEND_INLINE whose SGEs add up to more is
 * refused with EINVAL on every QP type, before anything is queued or sent.
 *
 * The fields after @max_inline were added later: a provider that asks for
 * the shorter response gets the kernel-side receive queue (POST_RECV
 * commands), as before.  With CNUAS_IB_QP_RQ_RING in @flags the receive
 * queue is the ring at @rq_mmap_offset (@rq_mmap_len bytes): a
 * cnuas_ib_rq_ring_hdr, then @rq_entries slots of @rq_slot_size bytes
 * holding up to @rq_max_sge SGEs each.
 */
struct cnuas_ib_create_qp_resp {
	__u32 qpn;
	__u32 max_inline;
	__u32 flags;
	__u32 rq_entries;
	__u32 rq_max_sge;
	__u32 rq_slot_size;
	__aligned_u64 rq_mmap_offset;
	__aligned_u64 rq_mmap_len;
};

/* cnuas_ib_create_srq_resp.flags */
#define CNUAS_IB_SRQ_RING		0x1U

/*
 * Response of CREATE_SRQ (a provider that asks for none gets the
 * kernel-side ring: POST_SRQ_RECV commands).  With CNUAS_IB_SRQ_RING in
 * @flags the SRQ's receives are posted into the ring at @mmap_offset
 * (@mmap_len bytes): a cnuas_ib_rq_ring_hdr, then @entries slots of
 * @slot_size bytes holding up to @max_sge SGEs each.
 */
struct cnuas_ib_create_srq_resp {
	__u32 flags;
	__u32 entries;
	__u32 max_sge;
	__u32 slot_size;
	__aligned_u64 mmap_offset;
	__aligned_u64 mmap_len;
};

#endif /* CNUAS_IB_ABI_H */
