/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * libcnuas: the libibverbs provider of cnuas_ib.  Every verb but one goes
 * through the kernel's uverbs commands (ibv_cmd_*); the exceptions are the
 * fast paths the design asks for: a completion queue's ring is mapped from
 * the kernel, so ibv_poll_cq reads completions with no system call, and so
 * are the receive queue of a user RC or UD QP without an SRQ and the ring
 * of a user SRQ, so ibv_post_recv and ibv_post_srq_recv post with no
 * system call.
 */
#ifndef CNUAS_PROVIDER_H
#define CNUAS_PROVIDER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/driver.h>
#include <infiniband/kern-abi.h>
#include <infiniband/verbs.h>

#include "uapi/cnuas_ib_abi.h"

struct cnuas_device {
	struct verbs_device ibv_dev;
};

struct cnuas_context {
	struct verbs_context ibv_ctx;
	uint32_t max_inline;
	int no_rq_ring;		/* CNUAS_NO_RQ_RING=1: the old receive path */
};

/* A CQ and its mapping of the kernel's completion ring. */
struct cnuas_cq {
	struct verbs_cq vcq;
	pthread_spinlock_t lock;	/* serialises pollers of this CQ */
	struct cnuas_ib_cq_ring_hdr *ring;
	struct cnuas_ib_cqe *cqe;
	uint32_t entries;
	size_t map_len;
};

/* A mapped receive ring, a QP's or an SRQ's (ring NULL: posting is a command). */
struct cnuas_rq {
	pthread_spinlock_t lock;	/* serialises posters of this queue */
	struct cnuas_ib_rq_ring_hdr *ring;
	uint8_t *slots;
	uint32_t head;			/* our copy of ring->producer */
	uint32_t entries;
	uint32_t max_sge;
	uint32_t slot_size;
	size_t map_len;
};

struct cnuas_qp {
	struct verbs_qp vqp;
	struct cnuas_rq rq;
};

/* An SRQ and its mapped receive ring (ring NULL: posting is a command). */
struct cnuas_srq {
	struct verbs_srq vsrq;
	struct cnuas_rq rq;
};

/* Driver-private parts of the commands, after the core structs. */
struct cnuas_get_context_resp {
	struct ib_uverbs_get_context_resp ibv_resp;
	struct cnuas_ib_alloc_ucontext_resp drv;
};

struct cnuas_create_cq_resp {
	struct ib_uverbs_create_cq_resp ibv_resp;
	struct cnuas_ib_create_cq_resp drv;
};

struct cnuas_create_qp_resp {
	struct ib_uverbs_create_qp_resp ibv_resp;
	struct cnuas_ib_create_qp_resp drv;
};

struct cnuas_create_srq_resp {
	struct ib_uverbs_create_srq_resp ibv_resp;
	struct cnuas_ib_create_srq_resp drv;
};

static inline struct cnuas_context *to_cctx(struct ibv_context *ctx)
{
	return container_of(ctx, struct cnuas_context, ibv_ctx.context);
}

static inline struct cnuas_cq *to_ccq(struct ibv_cq *cq)
{
	return container_of(cq, struct cnuas_cq, vcq.cq);
}

static inline struct cnuas_qp *to_cqp(struct ibv_qp *qp)
{
	return container_of(qp, struct cnuas_qp, vqp.qp);
}

static inline struct cnuas_srq *to_csrq(struct ibv_srq *srq)
{
	return container_of(srq, struct cnuas_srq, vsrq.srq);
}

#endif /* CNUAS_PROVIDER_H */
