/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * verbs_util.h: what every test program in drivers/test needs before its
 * own work starts: DIE(), opening an RDMA device by name, and moving a QP
 * through the states that need no peer (an RC QP to INIT and to ERR, a UD
 * QP all the way to RTS).
 */
#ifndef VERBS_UTIL_H
#define VERBS_UTIL_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#define DIE(...) do { fprintf(stderr, "FAIL: " __VA_ARGS__); fprintf(stderr, "\n"); exit(1); } while (0)

/* Open the RDMA device called @name (NULL: the first one), or die. */
static inline struct ibv_context *open_device_by_name(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	int i;

	if (!list)
		DIE("ibv_get_device_list: %s", strerror(errno));
	for (i = 0; list[i] && !ctx; i++)
		if (!name || !strcmp(ibv_get_device_name(list[i]), name)) {
			ctx = ibv_open_device(list[i]);
			if (!ctx)
				DIE("ibv_open_device(%s): %s",
				    ibv_get_device_name(list[i]), strerror(errno));
		}
	ibv_free_device_list(list);
	if (!ctx)
		DIE("no RDMA device %s", name ? name : "at all");
	return ctx;
}

/*
 * Move RC @qp to @state, or die.  INIT gets port 1, P_Key index 0 and local
 * write access (what a QP that only receives or only loops needs); other
 * states get only the state.
 */
static inline void qp_to_state(struct ibv_qp *qp, enum ibv_qp_state state)
{
	struct ibv_qp_attr attr = { .qp_state = state };
	int mask = IBV_QP_STATE;

	if (state == IBV_QPS_INIT) {
		attr.pkey_index = 0;
		attr.port_num = 1;
		attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE;
		mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	}
	if (ibv_modify_qp(qp, &attr, mask))
		DIE("modify QP 0x%x to state %d: %s", qp->qp_num, state, strerror(errno));
}

/*
 * Move UD @qp from RESET to RTS, or die: INIT with port 1, P_Key index 0
 * and Q_Key @qkey (what its receives accept), RTR, RTS with send PSN 0.
 */
static inline void ud_qp_to_rts(struct ibv_qp *qp, uint32_t qkey)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = qkey };

	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_QKEY))
		DIE("UD QP 0x%x to INIT: %s", qp->qp_num, strerror(errno));
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE))
		DIE("UD QP 0x%x to RTR: %s", qp->qp_num, strerror(errno));
	attr.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN))
		DIE("UD QP 0x%x to RTS: %s", qp->qp_num, strerror(errno));
}

/*
 * The one mapping of the uverbs device that is one page long, or NULL: a
 * small receive ring (a QP's or an SRQ's) of cnuas_ib, for the programs
 * that scribble on one.  CQ rings are larger; a second one-page mapping
 * dies (the caller must look before it maps another).
 */
static inline void *one_page_uverbs_mapping(void)
{
	void *found = NULL;
	unsigned long lo, hi;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		DIE("/proc/self/maps: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "/dev/infiniband/uverbs") &&
		    sscanf(line, "%lx-%lx", &lo, &hi) == 2 && hi - lo == 4096) {
			if (found)
				DIE("two one-page uverbs mappings");
			found = (void *)lo;
		}
	fclose(f);
	return found;
}

#endif /* VERBS_UTIL_H */
