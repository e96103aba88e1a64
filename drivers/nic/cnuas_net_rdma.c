// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * cnuas_net's side of the RDMA consumer (cnuas_ib): the auxiliary device
 * it binds to and the (un)registration that routes frames to it.
 * cnuas_net.h is the contract; the consumer's transmit is cnuas_net_xmit()
 * in cnuas_net_tx.c.
 */
#include <linux/auxiliary_bus.h>
#include <linux/export.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/rcupdate.h>
#include <linux/skbuff.h>
#include <linux/slab.h>

#include "cnuas_net_priv.h"

/* ---- registration (cnuas_net.h) ---- */

int cnuas_net_register_rdma(struct cnuas_net *net,
			    const struct cnuas_net_rdma_ops *ops, void *ctx,
			    enum cnuas_link_layer layer)
{
	struct cnuas_rdma_consumer *c;

	if (!ops || !ops->rx ||
	    (layer != CNUAS_LL_ETH && layer != CNUAS_LL_IB))
		return -EINVAL;
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	c->ops = ops;
	c->ctx = ctx;

	mutex_lock(&net->rdma_mutex);
	if (rcu_access_pointer(net->rdma)) {
		mutex_unlock(&net->rdma_mutex);
		kfree(c);
		return -EBUSY;
	}
	/* Consumer first, then the layer that routes frames to it. */
	rcu_assign_pointer(net->rdma, c);
	WRITE_ONCE(net->layer, layer);
	mutex_unlock(&net->rdma_mutex);
	netdev_info(net->netdev, "RDMA consumer attached, link layer %s\n",
		    layer == CNUAS_LL_IB ? "InfiniBand" : "Ethernet (RoCEv2)");
	return 0;
}
EXPORT_SYMBOL_GPL(cnuas_net_register_rdma);

void cnuas_net_unregister_rdma(struct cnuas_net *net)
{
	struct cnuas_rdma_consumer *c;
	struct sk_buff_head purge;
	unsigned long flags;
	unsigned int tc;

	mutex_lock(&net->rdma_mutex);
	c = rcu_dereference_protected(net->rdma,
				      lockdep_is_held(&net->rdma_mutex));
	if (!c) {
		mutex_unlock(&net->rdma_mutex);
		return;
	}
	WRITE_ONCE(net->layer, CNUAS_LL_NONE);
	/* Under tx_lock so no cnuas_net_xmit() queues after the purge. */
	__skb_queue_head_init(&purge);
	spin_lock_irqsave(&net->tx_lock, flags);
	RCU_INIT_POINTER(net->rdma, NULL);
	for (tc = 0; tc < CNUAS_NUM_TC; tc++)
		skb_queue_splice_init(&net->rdma_txq[tc], &purge);
	net->rdma_txq_len = 0;
	net->tx_rdma_stopped = false;
	spin_unlock_irqrestore(&net->tx_lock, flags);
	mutex_unlock(&net->rdma_mutex);

	synchronize_rcu();
	__skb_queue_purge(&purge);
	kfree(c);
	netdev_info(net->netdev, "RDMA consumer detached\n");
}
EXPORT_SYMBOL_GPL(cnuas_net_unregister_rdma);

bool cnuas_net_link_up(struct cnuas_net *net)
{
	return READ_ONCE(net->link_up);
}
EXPORT_SYMBOL_GPL(cnuas_net_link_up);

enum cnuas_link_layer cnuas_net_link_layer(struct cnuas_net *net)
{
	return READ_ONCE(net->layer);
}
EXPORT_SYMBOL_GPL(cnuas_net_link_layer);

void cnuas_net_rdma_counters(struct cnuas_net *net,
			     struct cnuas_net_rdma_counters *c)
{
	u64 rx[CNUAS_RX_STAT_COUNT], tx[CNUAS_TX_STAT_COUNT];
	u64 misc[CNUAS_MISC_STAT_COUNT];

	cnuas_net_read_stats(net, rx, tx, misc);
	c->rx_packets = rx[CNUAS_RX_RDMA_PACKETS];
	c->rx_bytes = rx[CNUAS_RX_RDMA_BYTES];
	c->tx_packets = tx[CNUAS_TX_RDMA_PACKETS];
	c->tx_bytes = tx[CNUAS_TX_RDMA_BYTES];
}
EXPORT_SYMBOL_GPL(cnuas_net_rdma_counters);

/* ---- auxiliary device ---- */

static void cnuas_adev_release(struct device *dev)
{
	struct auxiliary_device *adev = to_auxiliary_dev(dev);

	kfree(to_cnuas_net_adev(adev));
}

int cnuas_adev_create(struct cnuas_net *net)
{
	struct cnuas_net_adev *a;
	int err;

	a = kzalloc(sizeof(*a), GFP_KERNEL);
	if (!a)
		return -ENOMEM;
	a->net = net;
	a->netdev = net->netdev;
	a->pdev = net->pdev;
	a->adev.name = CNUAS_NET_ADEV_NAME;
	a->adev.id = net->adev_id;
	a->adev.dev.parent = &net->pdev->dev;
	a->adev.dev.release = cnuas_adev_release;

	err = auxiliary_device_init(&a->adev);
	if (err) {
		kfree(a);
		return err;
	}
	err = auxiliary_device_add(&a->adev);
	if (err) {
		/* Drops the last reference: the release frees @a. */
		auxiliary_device_uninit(&a->adev);
		return err;
	}
	net->adev = a;
	return 0;
}

void cnuas_adev_destroy(struct cnuas_net *net)
{
	/* The consumer's remove() runs inside delete. */
	auxiliary_device_delete(&net->adev->adev);
	auxiliary_device_uninit(&net->adev->adev);
	net->adev = NULL;
	/* A consumer that forgot to unregister must not outlive its device. */
	cnuas_net_unregister_rdma(net);
}
