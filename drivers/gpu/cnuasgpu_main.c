// SPDX-License-Identifier: GPL-2.0
/*
 * cnuasgpu: driver for the cnuasgpu accelerator PCI function (1af4:10f1).
 * This file: PCI probe and remove, the character device and its ioctl
 * dispatch, INFO and CAPS, module init.  What the driver offers:
 * cnuasgpu_priv.h.
 */
#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/interrupt.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "cnuasgpu_caps.h"
#include "cnuasgpu_priv.h"

#define DRV_NAME		"cnuasgpu"
#define CNUASGPU_MAX_DEVICES	64

/* BAR1 needed before the link buffers are carved out of its top. */
#define CNUASGPU_LINK_MIN_DEVMEM	SZ_1M

static dev_t cnuasgpu_devt;
static DEFINE_IDA(cnuasgpu_ida);

static int cnuasgpu_ioc_info(struct cnuasgpu_file *cf, void __user *uarg)
{
	struct cnuasgpu_dev *gdev = cf->gdev;
	struct cnuasgpu_info info = {
		.abi_version = CNUASGPU_ABI_VERSION,
		.fw_version = gdev->fw_version,
		.gpu_id = gdev->gpu_id,
		.sm_count = gdev->sm_count,
		.lanes_per_sm = gdev->lanes_per_sm,
		.tensor_size = gdev->tensor_size,
		.devmem_size = gdev->devmem_size,
		.alloc_limit = gdev->alloc_limit,
	};
	int ret;

	ret = cnuasgpu_enter(gdev);
	if (ret)
		return ret;
	info.link_up = cnuasgpu_link_up(gdev);
	cnuasgpu_leave(gdev);
	mutex_lock(&gdev->alloc_lock);
	info.devmem_used = gdev->used;
	mutex_unlock(&gdev->alloc_lock);
	return copy_to_user(uarg, &info, sizeof(info)) ? -EFAULT : 0;
}

/* A PCI function has no pinned memory and no queues; the link needs 1 MiB of BAR1. */
static int cnuasgpu_ioc_caps(struct cnuasgpu_file *cf, void __user *uarg)
{
	struct cnuasgpu_dev *gdev = cf->gdev;
	struct cnuasgpu_caps caps = {
		.kind = CNUASGPU_KIND_PCIE,
		.caps = CNUASGPU_CAP_ZEROCOPY | CNUASGPU_CAP_DMABUF |
			CNUASGPU_CAP_PEER_RDMA |
			(gdev->link_capable ? CNUASGPU_CAP_LINK : 0),
		.devmem_size = gdev->devmem_size,
	};

	return cnuasgpu_caps_reply(uarg, &caps);
}

static long cnuasgpu_ioctl(struct file *filp, unsigned int cmd,
			   unsigned long arg)
{
	struct cnuasgpu_file *cf = filp->private_data;
	void __user *uarg = (void __user *)arg;

	if (READ_ONCE(cf->gdev->dead))
		return -ENODEV;
	switch (cmd) {
	case CNUASGPU_IOC_INFO:
		return cnuasgpu_ioc_info(cf, uarg);
	case CNUASGPU_IOC_ALLOC:
		return cnuasgpu_ioc_alloc(cf, uarg);
	case CNUASGPU_IOC_FREE:
		return cnuasgpu_ioc_free(cf, uarg);
	case CNUASGPU_IOC_COPY_TO_DEV:
		return cnuasgpu_ioc_copy(cf, uarg, true);
	case CNUASGPU_IOC_COPY_FROM_DEV:
		return cnuasgpu_ioc_copy(cf, uarg, false);
	case CNUASGPU_IOC_LINK_SEND:
		return cnuasgpu_ioc_link_send(cf, uarg);
	case CNUASGPU_IOC_LINK_RECV:
		return cnuasgpu_ioc_link_recv(cf, uarg);
	case CNUASGPU_IOC_EXPORT_DMABUF:
		return cnuasgpu_ioc_export(cf, uarg);
	case CNUASGPU_IOC_CAPS:
		return cnuasgpu_ioc_caps(cf, uarg);
	default:
		return -ENOTTY;
	}
}

static int cnuasgpu_open(struct inode *inode, struct file *filp)
{
	struct cnuasgpu_dev *gdev = container_of(inode->i_cdev,
						 struct cnuasgpu_dev, cdev);
	struct cnuasgpu_file *cf;

	cf = kzalloc(sizeof(*cf), GFP_KERNEL);
	if (!cf)
		return -ENOMEM;
	mutex_lock(&gdev->alloc_lock);
	if (READ_ONCE(gdev->dead)) {
		mutex_unlock(&gdev->alloc_lock);
		kfree(cf);
		return -ENODEV;
	}
	get_device(&gdev->dev);
	cf->gdev = gdev;
	cf->filp = filp;
	list_add(&cf->node, &gdev->files);
	mutex_unlock(&gdev->alloc_lock);
	filp->private_data = cf;
	return nonseekable_open(inode, filp);
}

static int cnuasgpu_release(struct inode *inode, struct file *filp)
{
	struct cnuasgpu_file *cf = filp->private_data;
	struct cnuasgpu_dev *gdev = cf->gdev;
	struct cnuasgpu_mem *a, *tmp;

	mutex_lock(&gdev->alloc_lock);
	list_del(&cf->node);
	list_for_each_entry_safe(a, tmp, &gdev->allocs, node) {
		if (a->owner == cf)
			cnuasgpu_alloc_free(gdev, a);
	}
	mutex_unlock(&gdev->alloc_lock);
	kfree(cf);
	put_device(&gdev->dev);
	return 0;
}

static const struct file_operations cnuasgpu_fops = {
	.owner = THIS_MODULE,
	.open = cnuasgpu_open,
	.release = cnuasgpu_release,
	.unlocked_ioctl = cnuasgpu_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = cnuasgpu_mmap,
	.poll = cnuasgpu_poll,
	.llseek = noop_llseek,
};

static const struct class cnuasgpu_class = {
	.name = DRV_NAME,
};

/* ---- PCI ---------------------------------------------------------------- */

static void cnuasgpu_dev_release(struct device *dev)
{
	struct cnuasgpu_dev *gdev = to_gdev(dev);

	xa_destroy(&gdev->handles);
	kfree(gdev);
}

/* Read the identification block and check it against the BARs. */
static int cnuasgpu_identify(struct cnuasgpu_dev *gdev, u64 bar1_len)
{
	struct pci_dev *pdev = gdev->pdev;

	if (cnuasgpu_rd(gdev, CNUASGPU_REG_VENDOR_ID) !=
	    PCI_VENDOR_ID_REDHAT_QUMRANET ||
	    cnuasgpu_rd(gdev, CNUASGPU_REG_DEVICE_ID) != pdev->device) {
		dev_err(&pdev->dev, "identification registers do not match\n");
		return -ENODEV;
	}
	gdev->fw_version = cnuasgpu_rd(gdev, CNUASGPU_REG_FW_VERSION);
	gdev->gpu_id = cnuasgpu_rd(gdev, CNUASGPU_REG_GPU_ID);
	gdev->sm_count = cnuasgpu_rd(gdev, CNUASGPU_REG_SM_COUNT);
	gdev->lanes_per_sm = cnuasgpu_rd(gdev, CNUASGPU_REG_LANES_PER_SM);
	gdev->tensor_size = cnuasgpu_rd(gdev, CNUASGPU_REG_TENSOR_SIZE);
	gdev->devmem_size = cnuasgpu_rd(gdev, CNUASGPU_REG_DEVMEM_SIZE_LO) |
			    (u64)cnuasgpu_rd(gdev, CNUASGPU_REG_DEVMEM_SIZE_HI) << 32;
	if (gdev->devmem_size != bar1_len || gdev->devmem_size < PAGE_SIZE) {
		dev_err(&pdev->dev, "DEVMEM_SIZE %llu does not match BAR1 (%llu)\n",
			gdev->devmem_size, bar1_len);
		return -ENODEV;
	}
	if (gdev->devmem_size >= CNUASGPU_LINK_MIN_DEVMEM) {
		gdev->link_capable = true;
		gdev->link_tx_off = gdev->devmem_size - 2 * CNUASGPU_LINK_MTU;
		gdev->link_rx_off = gdev->devmem_size - CNUASGPU_LINK_MTU;
		gdev->alloc_limit = gdev->link_tx_off;
	} else {
		gdev->alloc_limit = gdev->devmem_size;
	}
	return 0;
}

static int cnuasgpu_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct cnuasgpu_dev *gdev;
	u64 bar1_len;
	int ret;

	gdev = kzalloc(sizeof(*gdev), GFP_KERNEL);
	if (!gdev)
		return -ENOMEM;
	gdev->pdev = pdev;
	gdev->minor = -1;
	init_rwsem(&gdev->remove_sem);
	mutex_init(&gdev->alloc_lock);
	mutex_init(&gdev->tx_lock);
	mutex_init(&gdev->rx_lock);
	INIT_LIST_HEAD(&gdev->allocs);
	INIT_LIST_HEAD(&gdev->files);
	xa_init_flags(&gdev->handles, XA_FLAGS_ALLOC1);
	init_waitqueue_head(&gdev->wq);
	atomic_set(&gdev->tx_done, 0);
	/* From here on the struct is freed by put_device(). */
	device_initialize(&gdev->dev);
	gdev->dev.class = &cnuasgpu_class;
	gdev->dev.parent = &pdev->dev;
	gdev->dev.groups = cnuasgpu_groups;
	gdev->dev.release = cnuasgpu_dev_release;

	ret = pcim_enable_device(pdev);
	if (ret)
		goto err_put;
	gdev->regs = pcim_iomap_region(pdev, 0, DRV_NAME);
	if (IS_ERR(gdev->regs)) {
		ret = PTR_ERR(gdev->regs);
		goto err_put;
	}
	if (!(pci_resource_flags(pdev, 1) & IORESOURCE_MEM)) {
		dev_err(&pdev->dev, "BAR1 is not a memory BAR\n");
		ret = -ENODEV;
		goto err_put;
	}
	ret = pcim_request_region(pdev, 1, DRV_NAME);
	if (ret)
		goto err_put;
	bar1_len = pci_resource_len(pdev, 1);
	gdev->devmem_phys = pci_resource_start(pdev, 1);
	gdev->devmem = devm_ioremap_wc(&pdev->dev, gdev->devmem_phys, bar1_len);
	if (!gdev->devmem) {
		ret = -ENOMEM;
		goto err_put;
	}
	ret = cnuasgpu_identify(gdev, bar1_len);
	if (ret)
		goto err_put;

	/* MSI writes are memory writes of the function: it must master. */
	pci_set_master(pdev);
	ret = pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_MSI | PCI_IRQ_INTX);
	if (ret < 0)
		goto err_put;
	gdev->irq = pci_irq_vector(pdev, 0);
	cnuasgpu_wr(gdev, CNUASGPU_REG_IRQ_MASK, 0);
	cnuasgpu_wr(gdev, CNUASGPU_REG_IRQ_STATUS, ~0u);
	ret = request_irq(gdev->irq, cnuasgpu_irq, IRQF_SHARED, DRV_NAME, gdev);
	if (ret)
		goto err_vectors;

	ret = ida_alloc_max(&cnuasgpu_ida, CNUASGPU_MAX_DEVICES - 1, GFP_KERNEL);
	if (ret < 0)
		goto err_irq;
	gdev->minor = ret;
	gdev->dev.devt = MKDEV(MAJOR(cnuasgpu_devt), gdev->minor);
	ret = dev_set_name(&gdev->dev, DRV_NAME "%d", gdev->minor);
	if (ret)
		goto err_ida;

	if (gdev->link_capable)
		cnuasgpu_link_arm_rx(gdev);
	cnuasgpu_wr(gdev, CNUASGPU_REG_IRQ_MASK,
		    CNUASGPU_IRQ_LINK_TX_DONE | CNUASGPU_IRQ_LINK_RX_READY);

	cdev_init(&gdev->cdev, &cnuasgpu_fops);
	gdev->cdev.owner = THIS_MODULE;
	ret = cdev_device_add(&gdev->cdev, &gdev->dev);
	if (ret)
		goto err_mask;
	pci_set_drvdata(pdev, gdev);
	dev_info(&pdev->dev, "%s: gpu_id %u, %u SMs, %llu MiB device memory, link %s\n",
		 dev_name(&gdev->dev), gdev->gpu_id, gdev->sm_count,
		 gdev->devmem_size >> 20,
		 gdev->link_capable ? "enabled" : "unavailable");
	return 0;

err_mask:
	cnuasgpu_wr(gdev, CNUASGPU_REG_IRQ_MASK, 0);
err_ida:
	ida_free(&cnuasgpu_ida, gdev->minor);
err_irq:
	free_irq(gdev->irq, gdev);
err_vectors:
	pci_free_irq_vectors(pdev);
err_put:
	put_device(&gdev->dev);
	return ret;
}

static void cnuasgpu_remove(struct pci_dev *pdev)
{
	struct cnuasgpu_dev *gdev = pci_get_drvdata(pdev);
	struct cnuasgpu_file *cf;

	/* Stop waiters and new opens, then wait out every hardware access. */
	WRITE_ONCE(gdev->dead, true);
	wake_up_all(&gdev->wq);
	cdev_device_del(&gdev->cdev, &gdev->dev);
	down_write(&gdev->remove_sem);
	up_write(&gdev->remove_sem);
	/*
	 * User mappings point at BAR1, which goes away with the function.
	 * Zapped only now: an mmap() that was already past its check has
	 * finished (it holds remove_sem), and new ones see @dead.
	 */
	mutex_lock(&gdev->alloc_lock);
	list_for_each_entry(cf, &gdev->files, node)
		unmap_mapping_range(cf->filp->f_mapping, 0, 0, 1);
	mutex_unlock(&gdev->alloc_lock);

	cnuasgpu_wr(gdev, CNUASGPU_REG_IRQ_MASK, 0);
	free_irq(gdev->irq, gdev);
	pci_free_irq_vectors(pdev);
	ida_free(&cnuasgpu_ida, gdev->minor);
	/* Open files keep the struct (not the hardware) until they close. */
	put_device(&gdev->dev);
}

static const struct pci_device_id cnuasgpu_ids[] = {
	{ PCI_DEVICE(PCI_VENDOR_ID_REDHAT_QUMRANET, CNUASGPU_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, cnuasgpu_ids);

static struct pci_driver cnuasgpu_driver = {
	.name = DRV_NAME,
	.id_table = cnuasgpu_ids,
	.probe = cnuasgpu_probe,
	.remove = cnuasgpu_remove,
};

static int __init cnuasgpu_init(void)
{
	int ret;

	ret = alloc_chrdev_region(&cnuasgpu_devt, 0, CNUASGPU_MAX_DEVICES,
				  DRV_NAME);
	if (ret)
		return ret;
	ret = class_register(&cnuasgpu_class);
	if (ret)
		goto err_region;
	ret = pci_register_driver(&cnuasgpu_driver);
	if (ret)
		goto err_class;
	return 0;

err_class:
	class_unregister(&cnuasgpu_class);
err_region:
	unregister_chrdev_region(cnuasgpu_devt, CNUASGPU_MAX_DEVICES);
	return ret;
}

static void __exit cnuasgpu_exit(void)
{
	pci_unregister_driver(&cnuasgpu_driver);
	class_unregister(&cnuasgpu_class);
	unregister_chrdev_region(cnuasgpu_devt, CNUASGPU_MAX_DEVICES);
	ida_destroy(&cnuasgpu_ida);
}

module_init(cnuasgpu_init);
module_exit(cnuasgpu_exit);

MODULE_DESCRIPTION("Cnuas accelerator (cnuasgpu) PCI driver");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(DMA_BUF);
MODULE_VERSION("0.1.0");
