// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * cnuas_net: PCI network driver for the cnuas-vnic function (1af4:10f0).
 *
 * The device has one transmit slot and one receive landing buffer, both
 * DMA-coherent and 9216 bytes.  Transmit (cnuas_net_tx.c): one queue per
 * traffic class, a scheduler (strict, ETS, PFC pauses) picks the frame that
 * is copied into the slot, ring the doorbell, wait for the TX-complete cause.
 * Receive (cnuas_net_rx.c): the NAPI poll copies the landed frame into an
 * skb and writes 0 to RX_STATUS, which lets the device land the next queued
 * frame at once.  The hard interrupt only masks the device and schedules
 * NAPI; every cause is handled in the poll.  The RDMA consumer (cnuas_ib)
 * attaches through the auxiliary bus (cnuas_net_rdma.c); cnuas_net.h is its
 * contract.  This file has the PCI function, the interrupt, the NAPI poll
 * and the net_device.
 */
#include <linux/etherdevice.h>
#include <linux/idr.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/iopoll.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/rcupdate.h>
#include <linux/unaligned.h>

#include "cnuas_net_priv.h"
#include "cnuas_regs.h"

#define CNUAS_TX_TIMEOUT	(5 * HZ)
/* How long remove waits for a frame the device is still sending. */
#define CNUAS_TX_DRAIN_US	100000

static DEFINE_IDA(cnuas_ida);

/* ---- statistics ---- */

void cnuas_net_read_stats(struct cnuas_net *net, u64 *rx, u64 *tx, u64 *misc)
{
	unsigned int start, i;

	do {
		start = u64_stats_fetch_begin(&net->rx_syncp);
		for (i = 0; i < CNUAS_RX_STAT_COUNT; i++)
			rx[i] = u64_stats_read(&net->rx_stats[i]);
	} while (u64_stats_fetch_retry(&net->rx_syncp, start));
	do {
		start = u64_stats_fetch_begin(&net->tx_syncp);
		for (i = 0; i < CNUAS_TX_STAT_COUNT; i++)
			tx[i] = u64_stats_read(&net->tx_stats[i]);
	} while (u64_stats_fetch_retry(&net->tx_syncp, start));
	for (i = 0; i < CNUAS_MISC_STAT_COUNT; i++)
		misc[i] = atomic64_read(&net->misc_stats[i]);
}

static void cnuas_get_stats64(struct net_device *dev,
			      struct rtnl_link_stats64 *s)
{
	struct cnuas_net *net = netdev_priv(dev);
	u64 rx[CNUAS_RX_STAT_COUNT], tx[CNUAS_TX_STAT_COUNT];
	u64 misc[CNUAS_MISC_STAT_COUNT];

	cnuas_net_read_stats(net, rx, tx, misc);
	s->rx_packets = rx[CNUAS_RX_PACKETS];
	s->rx_bytes = rx[CNUAS_RX_BYTES];
	s->tx_packets = tx[CNUAS_TX_PACKETS];
	s->tx_bytes = tx[CNUAS_TX_BYTES];
	s->rx_length_errors = rx[CNUAS_RX_DROP_RUNT] +
			      rx[CNUAS_RX_DROP_OVERSIZE] +
			      rx[CNUAS_RX_DROP_BAD_LEN];
	s->rx_frame_errors = rx[CNUAS_RX_DROP_BAD_SRC] +
			     rx[CNUAS_RX_DROP_BAD_MAC_CTRL];
	s->rx_errors = s->rx_length_errors + s->rx_frame_errors;
	s->rx_dropped = rx[CNUAS_RX_DROP_NOMEM] + rx[CNUAS_RX_DROP_DOWN];
	s->tx_dropped = tx[CNUAS_TX_DROP_LINK_DOWN] +
			tx[CNUAS_TX_DROP_OVERSIZE] +
			tx[CNUAS_TX_DROP_IB_MODE] +
			tx[CNUAS_TX_DROP_RDMA_FULL];
	s->tx_errors = tx[CNUAS_TX_TIMEOUTS];
}

/* ---- link, interrupt, NAPI ---- */

static void cnuas_link_update(struct cnuas_net *net)
{
	bool up = cnuas_rd(net, CNUAS_REG_LINK_STATUS) & CNUAS_LINK_UP;
	struct cnuas_rdma_consumer *c;

	if (up == net->link_up)
		return;
	WRITE_ONCE(net->link_up, up);
	atomic64_inc(&net->misc_stats[CNUAS_LINK_CHANGES]);
	if (up)
		netif_carrier_on(net->netdev);
	else
		netif_carrier_off(net->netdev);
	netif_info(net, link, net->netdev, "link %s\n", up ? "up" : "down");

	rcu_read_lock();
	c = rcu_dereference(net->rdma);
	if (c && c->ops->link_change)
		c->ops->link_change(c->ctx, up);
	rcu_read_unlock();
}

/*
 * The device has one transmit slot, freed by the TX cause.  Seen only at the
 * start of a poll, a receive flood would let one frame out per budget of
 * received ones, and the replies they ask for (ACKs, READ responses) would
 * wait behind it: their QPs stall while their receive queues fill.  So
 * while a frame is out, the cause is checked between received frames.
 */
static void cnuas_poll_tx_slot(struct cnuas_net *net)
{
	if (!READ_ONCE(net->tx_busy) ||
	    !(cnuas_rd(net, CNUAS_REG_IRQ_STATUS) & CNUAS_IRQ_TX))
		return;
	cnuas_wr(net, CNUAS_REG_IRQ_STATUS, CNUAS_IRQ_TX);
	cnuas_tx_complete(net);
}

static int cnuas_poll(struct napi_struct *napi, int budget)
{
	struct cnuas_net *net = container_of(napi, struct cnuas_net, napi);
	u32 status;
	int done = 0;

	/* Acknowledge first: a cause that recurs while we work stays set. */
	status = cnuas_rd(net, CNUAS_REG_IRQ_STATUS) & CNUAS_IRQ_ALL;
	if (status)
		cnuas_wr(net, CNUAS_REG_IRQ_STATUS, status);
	if (status & CNUAS_IRQ_LINK)
		cnuas_link_update(net);
	if (status & CNUAS_IRQ_TX)
		cnuas_tx_complete(net);
	/* RX_STATUS, not the cause bit, says whether a frame waits. */
	while (done < budget && cnuas_rx_one(net)) {
		done++;
		cnuas_poll_tx_slot(net);
	}
	/* A full budget: frames kept waiting for the landing buffer. */
	cnuas_pfc_rx_pressure(net, done == budget);
	cnuas_pfc_poll_done(net);
	if (done == budget)
		return budget;
	if (napi_complete_done(napi, done)) {
		/* Causes raised meanwhile re-assert on unmask (MSI or INTx). */
		WRITE_ONCE(net->irq_enabled, CNUAS_IRQ_ALL);
		cnuas_wr(net, CNUAS_REG_IRQ_MASK, CNUAS_IRQ_ALL);
	}
	return done;
}

static irqreturn_t cnuas_irq(int irq, void *data)
{
	struct cnuas_net *net = data;
	u32 enabled = READ_ONCE(net->irq_enabled);

	if (!enabled)
		return IRQ_NONE;
	/* INTx may be shared: only claim it when one of our causes is up. */
	if (!net->msi && !(cnuas_rd(net, CNUAS_REG_IRQ_STATUS) & enabled))
		return IRQ_NONE;
	WRITE_ONCE(net->irq_enabled, 0);
	cnuas_wr(net, CNUAS_REG_IRQ_MASK, 0);
	napi_schedule(&net->napi);
	return IRQ_HANDLED;
}

/* ---- net_device ---- */

static int cnuas_open(struct net_device *dev)
{
	struct cnuas_net *net = netdev_priv(dev);
	unsigned long flags;

	unsigned int tc;

	/* The hardware runs from probe to remove; open only admits the stack. */
	spin_lock_irqsave(&net->tx_lock, flags);
	for (tc = 0; tc < CNUAS_NUM_TC; tc++)
		if (skb_queue_len(&net->stack_txq[tc]) < CNUAS_TX_TC_DEPTH)
			netif_tx_start_queue(netdev_get_tx_queue(dev, tc));
	spin_unlock_irqrestore(&net->tx_lock, flags);
	return 0;
}

static int cnuas_stop(struct net_device *dev)
{
	netif_tx_stop_all_queues(dev);
	return 0;
}

static int cnuas_change_mtu(struct net_device *dev, int new_mtu)
{
	/* min_mtu/max_mtu were checked by the core; receive follows the MTU. */
	WRITE_ONCE(dev->mtu, new_mtu);
	return 0;
}

static const struct net_device_ops cnuas_netdev_ops = {
	.ndo_open		= cnuas_open,
	.ndo_stop		= cnuas_stop,
	.ndo_start_xmit		= cnuas_start_xmit,
	.ndo_select_queue	= cnuas_select_queue,
	.ndo_get_stats64	= cnuas_get_stats64,
	.ndo_set_mac_address	= eth_mac_addr,
	.ndo_validate_addr	= eth_validate_addr,
	.ndo_change_mtu		= cnuas_change_mtu,
	.ndo_tx_timeout		= cnuas_tx_timeout,
};

/* ---- PCI ---- */

static void cnuas_hw_quiesce(struct cnuas_net *net)
{
	cnuas_wr(net, CNUAS_REG_IRQ_MASK, 0);
	cnuas_wr(net, CNUAS_REG_RX_ADDR_LO, 0);
	cnuas_wr(net, CNUAS_REG_RX_ADDR_HI, 0);
	cnuas_wr(net, CNUAS_REG_IRQ_STATUS, CNUAS_IRQ_ALL);
}

/* Point the device at our buffers and drop a frame left by a former driver. */
static void cnuas_hw_arm(struct cnuas_net *net)
{
	cnuas_wr(net, CNUAS_REG_TX_ADDR_LO, lower_32_bits(net->tx_dma));
	cnuas_wr(net, CNUAS_REG_TX_ADDR_HI, upper_32_bits(net->tx_dma));
	cnuas_wr(net, CNUAS_REG_RX_ADDR_LO, lower_32_bits(net->rx_dma));
	cnuas_wr(net, CNUAS_REG_RX_ADDR_HI, upper_32_bits(net->rx_dma));
	cnuas_wr(net, CNUAS_REG_RX_STATUS, 0);
}

static void cnuas_read_mac(struct cnuas_net *net)
{
	u32 lo = cnuas_rd(net, CNUAS_REG_MAC_LO);
	u32 hi = cnuas_rd(net, CNUAS_REG_MAC_HI);
	u8 mac[ETH_ALEN];

	put_unaligned_le32(lo, mac);
	put_unaligned_le16(hi, mac + 4);
	if (is_valid_ether_addr(mac)) {
		eth_hw_addr_set(net->netdev, mac);
		return;
	}
	eth_hw_addr_random(net->netdev);
	dev_info(&net->pdev->dev, "device MAC %pM is not usable, using %pM\n",
		 mac, net->netdev->dev_addr);
}

static int cnuas_alloc_buffers(struct cnuas_net *net)
{
	struct device *d = &net->pdev->dev;

	net->tx_buf = dma_alloc_coherent(d, CNUAS_VNIC_MAX_FRAME, &net->tx_dma,
					 GFP_KERNEL);
	if (!net->tx_buf)
		return -ENOMEM;
	net->rx_buf = dma_alloc_coherent(d, CNUAS_VNIC_MAX_FRAME, &net->rx_dma,
					 GFP_KERNEL);
	if (!net->rx_buf) {
		dma_free_coherent(d, CNUAS_VNIC_MAX_FRAME, net->tx_buf,
				  net->tx_dma);
		return -ENOMEM;
	}
	return 0;
}

static void cnuas_free_buffers(struct cnuas_net *net)
{
	struct device *d = &net->pdev->dev;

	dma_free_coherent(d, CNUAS_VNIC_MAX_FRAME, net->rx_buf, net->rx_dma);
	dma_free_coherent(d, CNUAS_VNIC_MAX_FRAME, net->tx_buf, net->tx_dma);
}

static int cnuas_setup_irq(struct cnuas_net *net)
{
	struct pci_dev *pdev = net->pdev;
	int err;

	err = pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_MSI | PCI_IRQ_INTX);
	if (err < 0)
		return err;
	net->msi = pdev->msi_enabled;
	net->irq = pci_irq_vector(pdev, 0);
	err = request_irq(net->irq, cnuas_irq, net->msi ? 0 : IRQF_SHARED,
			  pci_name(pdev), net);
	if (err) {
		pci_free_irq_vectors(pdev);
		return err;
	}
	return 0;
}

static void cnuas_teardown_irq(struct cnuas_net *net)
{
	free_irq(net->irq, net);
	pci_free_irq_vectors(net->pdev);
}

/* Start the hardware path: NAPI, carrier, interrupts. */
static void cnuas_hw_start(struct cnuas_net *net)
{
	napi_enable(&net->napi);
	net->link_up = cnuas_rd(net, CNUAS_REG_LINK_STATUS) & CNUAS_LINK_UP;
	if (net->link_up)
		netif_carrier_on(net->netdev);
	WRITE_ONCE(net->irq_enabled, CNUAS_IRQ_ALL);
	cnuas_wr(net, CNUAS_REG_IRQ_MASK, CNUAS_IRQ_ALL);
}

static void cnuas_hw_stop(struct cnuas_net *net)
{
	napi_disable(&net->napi);
	WRITE_ONCE(net->irq_enabled, 0);
	cnuas_wr(net, CNUAS_REG_IRQ_MASK, 0);
	synchronize_irq(net->irq);
}

/* After the last sender is gone: let a frame in the slot leave, disarm RX. */
static void cnuas_hw_drain(struct cnuas_net *net)
{
	u32 status;

	/* No timer (PFC, shaper) may hand the slot a frame any more. */
	cnuas_tx_purge(net);
	if (net->tx_busy &&
	    readx_poll_timeout(ioread32, net->regs + CNUAS_REG_IRQ_STATUS,
			       status, status & CNUAS_IRQ_TX, 10,
			       CNUAS_TX_DRAIN_US))
		dev_info(&net->pdev->dev, "device kept the last frame; reset pending\n");
	cnuas_hw_quiesce(net);
	/* A read flushes the posted writes before the buffers are freed. */
	cnuas_rd(net, CNUAS_REG_IRQ_MASK);
}

static void cnuas_setup_netdev(struct net_device *dev)
{
	dev->netdev_ops = &cnuas_netdev_ops;
	dev->ethtool_ops = &cnuas_ethtool_ops;
	dev->dcbnl_ops = &cnuas_dcbnl_ops;
	dev->watchdog_timeo = CNUAS_TX_TIMEOUT;
	dev->min_mtu = ETH_MIN_MTU;
	dev->max_mtu = CNUAS_NET_MAX_MTU;
	/* The registers are read-only: the address lives in the driver. */
	dev->priv_flags |= IFF_LIVE_ADDR_CHANGE;
}

static int cnuas_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct net_device *dev;
	struct cnuas_net *net;
	int err;

	err = pci_enable_device_mem(pdev);
	if (err)
		return err;
	err = pci_request_region(pdev, CNUAS_VNIC_BAR, CNUAS_NET_DRV_NAME);
	if (err)
		goto err_disable;
	if (!(pci_resource_flags(pdev, CNUAS_VNIC_BAR) & IORESOURCE_MEM) ||
	    pci_resource_len(pdev, CNUAS_VNIC_BAR) < CNUAS_VNIC_BAR_SIZE) {
		dev_err(&pdev->dev, "BAR0 is not a %u-byte memory BAR\n",
			CNUAS_VNIC_BAR_SIZE);
		err = -ENODEV;
		goto err_release;
	}
	err = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (err)
		err = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(32));
	if (err)
		goto err_release;
	pci_set_master(pdev);

	/* One transmit queue per traffic class (cnuas_net_tx.c). */
	dev = alloc_etherdev_mqs(sizeof(*net), CNUAS_NUM_TC, 1);
	if (!dev) {
		err = -ENOMEM;
		goto err_clear_master;
	}
	SET_NETDEV_DEV(dev, &pdev->dev);
	net = netdev_priv(dev);
	net->pdev = pdev;
	net->netdev = dev;
	net->msg_enable = netif_msg_init(-1, NETIF_MSG_LINK | NETIF_MSG_PROBE);
	cnuas_tx_init(net);
	u64_stats_init(&net->rx_syncp);
	u64_stats_init(&net->tx_syncp);
	mutex_init(&net->rdma_mutex);
	pci_set_drvdata(pdev, net);
	cnuas_setup_netdev(dev);
	cnuas_dcb_init(net);
	cnuas_tx_sched_update(net);

	net->regs = pci_iomap(pdev, CNUAS_VNIC_BAR, CNUAS_VNIC_BAR_SIZE);
	if (!net->regs) {
		err = -ENOMEM;
		goto err_free_netdev;
	}
	/* Silence a device a former driver left running before DMA is set. */
	cnuas_hw_quiesce(net);
	cnuas_read_mac(net);

	err = cnuas_alloc_buffers(net);
	if (err)
		goto err_unmap;
	netif_napi_add(dev, &net->napi, cnuas_poll);
	err = cnuas_setup_irq(net);
	if (err)
		goto err_napi_del;
	cnuas_hw_arm(net);

	net->adev_id = ida_alloc(&cnuas_ida, GFP_KERNEL);
	if (net->adev_id < 0) {
		err = net->adev_id;
		goto err_irq;
	}
	netif_carrier_off(dev);
	err = register_netdev(dev);
	if (err)
		goto err_ida;
	cnuas_hw_start(net);
	err = cnuas_adev_create(net);
	if (err)
		goto err_stop;

	netif_info(net, probe, dev, "cnuas-vnic up: MAC %pM, %s, link %s\n",
		   dev->dev_addr, net->msi ? "MSI" : "INTx",
		   net->link_up ? "up" : "down");
	return 0;

err_stop:
	cnuas_hw_stop(net);
	unregister_netdev(dev);
err_ida:
	ida_free(&cnuas_ida, net->adev_id);
err_irq:
	cnuas_hw_drain(net);
	cnuas_teardown_irq(net);
err_napi_del:
	netif_napi_del(&net->napi);
	cnuas_free_buffers(net);
err_unmap:
	pci_iounmap(pdev, net->regs);
err_free_netdev:
	free_netdev(dev);
err_clear_master:
	pci_clear_master(pdev);
err_release:
	pci_release_region(pdev, CNUAS_VNIC_BAR);
err_disable:
	pci_disable_device(pdev);
	return err;
}

static void cnuas_remove(struct pci_dev *pdev)
{
	struct cnuas_net *net = pci_get_drvdata(pdev);
	struct net_device *dev = net->netdev;

	cnuas_adev_destroy(net);
	/* Before unregister: the poll touches the carrier of a live netdev. */
	cnuas_hw_stop(net);
	unregister_netdev(dev);
	ida_free(&cnuas_ida, net->adev_id);
	cnuas_hw_drain(net);
	cnuas_teardown_irq(net);
	netif_napi_del(&net->napi);
	cnuas_free_buffers(net);
	pci_iounmap(pdev, net->regs);
	free_netdev(dev);
	pci_clear_master(pdev);
	pci_release_region(pdev, CNUAS_VNIC_BAR);
	pci_disable_device(pdev);
}

static const struct pci_device_id cnuas_pci_ids[] = {
	{ PCI_DEVICE(CNUAS_VNIC_VENDOR_ID, CNUAS_VNIC_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, cnuas_pci_ids);

static struct pci_driver cnuas_pci_driver = {
	.name		= CNUAS_NET_DRV_NAME,
	.id_table	= cnuas_pci_ids,
	.probe		= cnuas_probe,
	.remove		= cnuas_remove,
};
module_pci_driver(cnuas_pci_driver);

MODULE_DESCRIPTION("Cnuas virtual NIC (cnuas-vnic) network driver");
MODULE_AUTHOR("Cnuas HIL");
MODULE_LICENSE("Dual MIT/GPL");
MODULE_VERSION(CNUAS_NET_DRV_VERSION);
