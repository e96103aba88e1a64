// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * cnuas_ib: multicast groups.  attach_mcast/detach_mcast keep, per group
 * GID, the UD QPs attached to it; a received UD frame to the multicast QPN
 * (0xFFFFFF, IBTA 9.2.5 / 10.5.2) is copied to each of them
 * (docs/devices.md, "cnuas_ib multicast").  Members on the sending device
 * get a copy through the loopback path (cnuas_ib_net.c).
 *
 * Native IB mode keys groups the same way, by MGID (the MLID attach gives
 * is kept, not used to match): a received frame to a multicast DLID with a
 * GRH goes to the group of the GRH's DGID.  No netdev multicast list is
 * touched in either mode.
 *
 * Limits (datasheet table 4.1): max_mcast_grp groups per device,
 * max_mcast_qp_attach QPs per group.  A QP attached twice to one group is
 * one member, it gets one copy of each datagram (IBTA 11.3.1: attach is
 * idempotent), but every attach that succeeded counts and the QP leaves the
 * group with the detach that matches the last one: ib_core counts each
 * successful attach as a user of the QP (qp->usecnt) until a detach
 * succeeds for it, and uverbs keeps attachments with different MLIDs apart
 * although a RoCE port ignores the MLID.  A detach that could not succeed
 * for each would leave the QP impossible to destroy (the uverbs file's
 * teardown then warns and leaks it, its CQs and PD).  Detaching a QP that
 * is not attached is -EINVAL.  Groups live in a list under mcast_lock and
 * are freed after RCU: the receive path walks them under rcu_read_lock().
 */
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/rculist.h>
#include <net/ipv6.h>

#include "cnuas_ib.h"

/**
 * struct cnuas_ib_mcg - one multicast group and its members
 * @node: on dev->mcast_groups
 * @mgid: the group's GID (an IPv4-mapped or IPv6 multicast address)
 * @mlid: native IB: the MLID of the first attach (0 on RoCE)
 * @nqp: entries in @qpn
 * @qpn: attached QP numbers (not QP pointers: a QP is looked up at delivery,
 *	 so a destroyed QP is never touched)
 * @refs: for each entry of @qpn, the attaches that succeeded for it and
 *	  were not detached yet (under mcast_lock only; delivery ignores it)
 * @rcu: freed after a grace period
 */
struct cnuas_ib_mcg {
	struct list_head node;
	union ib_gid mgid;
	u16 mlid;
	u32 nqp;
	u32 qpn[CNUAS_IB_MAX_MCAST_QP_ATTACH];
	u32 refs[CNUAS_IB_MAX_MCAST_QP_ATTACH];
	struct rcu_head rcu;
};

/* Under mcast_lock or RCU. */
static struct cnuas_ib_mcg *cnuas_ib_mcg_find(struct cnuas_ib_dev *dev,
					      const union ib_gid *mgid)
{
	struct cnuas_ib_mcg *g;

	list_for_each_entry_rcu(g, &dev->mcast_groups, node,
				lockdep_is_held(&dev->mcast_lock))
		if (!memcmp(g->mgid.raw, mgid->raw, sizeof(mgid->raw)))
			return g;
	return NULL;
}

/* Is @gid a multicast address (IPv6, or IPv4-mapped IPv4)? */
static bool cnuas_ib_gid_is_mcast(const union ib_gid *gid)
{
	const struct in6_addr *a = (const struct in6_addr *)gid->raw;

	if (ipv6_addr_v4mapped(a))
		return ipv4_is_multicast(a->s6_addr32[3]);
	return ipv6_addr_is_multicast(a);
}

/*
 * Remove entry @i of @g, under mcast_lock.  The last entry moves into the
 * hole.  A receive walking the array at the same time may see the moved QP
 * twice or the removed one once more; both are harmless (a UD datagram, and
 * QPs are looked up by number).
 */
static void cnuas_ib_mcg_del(struct cnuas_ib_mcg *g, u32 i)
{
	g->refs[i] = g->refs[g->nqp - 1];
	WRITE_ONCE(g->qpn[i], g->qpn[g->nqp - 1]);
	/* pairs with smp_load_acquire() in cnuas_ib_mcast_rx() */
	smp_store_release(&g->nqp, g->nqp - 1);
}

int cnuas_ib_attach_mcast(struct ib_qp *ibqp, union ib_gid *mgid, u16 mlid)
{
	struct cnuas_ib_dev *dev = to_cdev(ibqp->device);
	struct cnuas_ib_mcg *g, *new;
	u32 qpn = ibqp->qp_num;
	int err = 0;
	u32 i;

	if (ibqp->qp_type != IB_QPT_UD || !cnuas_ib_gid_is_mcast(mgid))
		return -EINVAL;

	/* allocated before the lock: GFP_KERNEL, and freed if not needed */
	new = kzalloc(sizeof(*new), GFP_KERNEL);
	if (!new)
		return -ENOMEM;

	spin_lock_bh(&dev->mcast_lock);
	g = cnuas_ib_mcg_find(dev, mgid);
	if (!g) {
		if (dev->n_mcast_grp >= CNUAS_IB_MAX_MCAST_GRP) {
			err = -ENOMEM;
			goto unlock;
		}
		g = new;
		new = NULL;
		g->mgid = *mgid;
		g->mlid = cnuas_ib_is_ib(dev) ? mlid : 0;
		list_add_tail_rcu(&g->node, &dev->mcast_groups);
		dev->n_mcast_grp++;
	}
	for (i = 0; i < g->nqp; i++) {
		if (g->qpn[i] != qpn)
			continue;
		/* a member already: one more attach to be detached */
		if (g->refs[i] == U32_MAX)
			err = -ENOMEM;
		else
			g->refs[i]++;
		goto unlock;
	}
	if (g->nqp >= CNUAS_IB_MAX_MCAST_QP_ATTACH) {
		err = -ENOMEM;
		goto unlock;
	}
	g->refs[g->nqp] = 1;
	WRITE_ONCE(g->qpn[g->nqp], qpn);
	/* the entry before the count: cnuas_ib_mcast_rx() reads them so */
	smp_store_release(&g->nqp, g->nqp + 1);
unlock:
	spin_unlock_bh(&dev->mcast_lock);
	kfree(new);
	return err;
}

int cnuas_ib_detach_mcast(struct ib_qp *ibqp, union ib_gid *mgid, u16 mlid)
{
	struct cnuas_ib_dev *dev = to_cdev(ibqp->device);
	struct cnuas_ib_mcg *g, *dead = NULL;
	u32 qpn = ibqp->qp_num;
	int err = -EINVAL;
	u32 i;

	spin_lock_bh(&dev->mcast_lock);
	g = cnuas_ib_mcg_find(dev, mgid);
	if (!g)
		goto unlock;
	for (i = 0; i < g->nqp; i++) {
		if (g->qpn[i] != qpn)
			continue;
		/* the QP stays a member until its last attach is detached */
		if (!--g->refs[i])
			cnuas_ib_mcg_del(g, i);
		err = 0;
		break;
	}
	if (!err && !g->nqp) {
		list_del_rcu(&g->node);
		dev->n_mcast_grp--;
		dead = g;
	}
unlock:
	spin_unlock_bh(&dev->mcast_lock);
	if (dead)
		kfree_rcu(dead, rcu);
	return err;
}

/**
 * cnuas_ib_mcast_rx - deliver a multicast UD frame to its group's QPs
 * @dev: the device
 * @skb: a parsed UD frame to QPN 0xFFFFFF, consumed
 * @mgid: the destination address as a GID
 *
 * Return: the number of QPs it was queued on (0: no member, dropped).
 */
u32 cnuas_ib_mcast_rx(struct cnuas_ib_dev *dev, struct sk_buff *skb,
		      const union ib_gid *mgid)
{
	struct cnuas_ib_mcg *g;
	u32 i, n, delivered = 0;

	rcu_read_lock();
	g = cnuas_ib_mcg_find(dev, mgid);
	/* the count, then the entries below it (written in that order) */
	n = g ? smp_load_acquire(&g->nqp) : 0;
	for (i = 0; i < n; i++) {
		struct cnuas_ib_qp *qp = xa_load(&dev->qps, READ_ONCE(g->qpn[i]));
		struct sk_buff *copy;

		if (!qp || READ_ONCE(qp->dying) || qp->type != IB_QPT_UD)
			continue;
		if (skb_queue_len(&qp->req_q) >= CNUAS_IB_RXQ_MAX)
			continue;
		copy = skb_clone(skb, GFP_ATOMIC);
		if (!copy)
			break;
		skb_queue_tail(&qp->req_q, copy);
		cnuas_ib_qp_kick(qp);
		delivered++;
	}
	rcu_read_unlock();
	consume_skb(skb);
	return delivered;
}

/*
 * Does the group @mgid, which a frame of ours is sent to, have members on
 * this device?  (RoCE: the destination IP as a GID; IB: the GRH's DGID.)
 */
bool cnuas_ib_mcast_has_members(struct cnuas_ib_dev *dev,
				const union ib_gid *mgid)
{
	struct cnuas_ib_mcg *g;
	bool any;

	rcu_read_lock();
	g = cnuas_ib_mcg_find(dev, mgid);
	any = g && READ_ONCE(g->nqp);
	rcu_read_unlock();
	return any;
}

/*
 * A QP is being destroyed: take it out of every group, so that its number,
 * reused by a later QP, does not inherit its memberships.  Kernel consumers
 * detach before destroying; uverbs does too, but a driver cannot rely on it.
 */
void cnuas_ib_mcast_qp_gone(struct cnuas_ib_dev *dev, u32 qpn)
{
	struct cnuas_ib_mcg *g, *tmp;
	u32 i;

	spin_lock_bh(&dev->mcast_lock);
	list_for_each_entry_safe(g, tmp, &dev->mcast_groups, node) {
		for (i = 0; i < g->nqp; i++) {
			if (g->qpn[i] != qpn)
				continue;
			cnuas_ib_mcg_del(g, i);
			break;
		}
		if (!g->nqp) {
			list_del_rcu(&g->node);
			dev->n_mcast_grp--;
			kfree_rcu(g, rcu);
		}
	}
	spin_unlock_bh(&dev->mcast_lock);
}

/* Free what is left at device removal (every QP, hence attachment, is gone). */
void cnuas_ib_mcast_cleanup(struct cnuas_ib_dev *dev)
{
	struct cnuas_ib_mcg *g, *tmp;

	list_for_each_entry_safe(g, tmp, &dev->mcast_groups, node) {
		list_del(&g->node);
		kfree(g);
	}
	dev->n_mcast_grp = 0;
}
