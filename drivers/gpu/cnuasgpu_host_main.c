// SPDX-License-Identifier: GPL-2.0
/*
 * cnuasgpu_host: host-backed CnuasGPU nodes, /dev/cnuasgpu_hostN.
 * This file: module parameters, the nodes and their character device,
 * ioctl dispatch, INFO and CAPS, module init.  What the driver offers:
 * cnuasgpu_host_priv.h.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "cnuasgpu_caps.h"
#include "cnuasgpu_host_priv.h"

#define DRV_NAME		"cnuasgpu_host"

/* INFO's fw_version: the module's version, 0.1.0. */
#define CGH_FW_VERSION		0x00010000

/* Module parameters, with the ranges cgh_check_params() enforces. */
#define CGH_MAX_DEVICES		16
#define CGH_MAX_DEVMEM_MB	4096
#define CGH_MAX_PINNED_MB	65536
#define CGH_MAX_QUEUE_DEPTH	4096
#define CGH_MAX_BATCH		1024
#define CGH_MODE_MASK		0777

static unsigned int devices = 1;
module_param(devices, uint, 0444);
MODULE_PARM_DESC(devices, "Number of /dev/cnuasgpu_hostN nodes (1..16, default 1)");

static unsigned int devmem_mb = 64;
module_param(devmem_mb, uint, 0444);
MODULE_PARM_DESC(devmem_mb, "Page-backed arena per node, MiB (1..4096, default 64)");

static unsigned int pinned_max_mb = 32;
module_param(pinned_max_mb, uint, 0444);
MODULE_PARM_DESC(pinned_max_mb, "Pinned-memory ceiling per node, MiB (1..65536, default 32)");

static bool zerocopy = true;
module_param(zerocopy, bool, 0444);
MODULE_PARM_DESC(zerocopy, "mmap() of the arena pages (default on)");

static bool pinned = true;
module_param(pinned, bool, 0444);
MODULE_PARM_DESC(pinned, "PIN/UNPIN of user memory (default on)");

static bool dmabuf = true;
module_param(dmabuf, bool, 0444);
MODULE_PARM_DESC(dmabuf, "DMA-BUF export and import (default on)");

static bool async = true;
module_param(async, bool, 0444);
MODULE_PARM_DESC(async, "Asynchronous op queues (default on)");

static unsigned int queue_depth = 64;
module_param(queue_depth, uint, 0444);
MODULE_PARM_DESC(queue_depth, "Ops per open queue (1..4096, default 64)");

static unsigned int batch_max = 32;
module_param(batch_max, uint, 0444);
MODULE_PARM_DESC(batch_max, "Ops per SUBMIT (1..1024 and <= queue_depth, default 32)");

static ushort devnode_mode = 0600;
module_param(devnode_mode, ushort, 0444);
MODULE_PARM_DESC(devnode_mode, "Permissions of /dev/cnuasgpu_hostN (0..0777, default 0600)");

struct cgh_params cgh_params;
struct workqueue_struct *cgh_wq;

static dev_t cgh_devt;
static struct cgh_dev *cgh_nodes[CGH_MAX_DEVICES];

static int __init cgh_check_range(const char *name, unsigned int val,
				  unsigned int min, unsigned int max)
{
	if (val >= min && val <= max)
		return 0;
	pr_err("%s=%u is out of range (%u..%u)\n", name, val, min, max);
	return -EINVAL;
}

/* Refuse bad values at load, naming the parameter. */
static int __init cgh_check_params(void)
{
	int ret;

	ret = cgh_check_range("devices", devices, 1, CGH_MAX_DEVICES);
	ret = ret ?: cgh_check_range("devmem_mb", devmem_mb, 1, CGH_MAX_DEVMEM_MB);
	ret = ret ?: cgh_check_range("pinned_max_mb", pinned_max_mb, 1,
				     CGH_MAX_PINNED_MB);
	ret = ret ?: cgh_check_range("queue_depth", queue_depth, 1,
				     CGH_MAX_QUEUE_DEPTH);
	ret = ret ?: cgh_check_range("batch_max", batch_max, 1, CGH_MAX_BATCH);
	if (ret)
		return ret;
	if (batch_max > queue_depth) {
		pr_err("batch_max=%u is above queue_depth=%u\n", batch_max,
		       queue_depth);
		return -EINVAL;
	}
	if (devnode_mode & ~CGH_MODE_MASK) {
		pr_err("devnode_mode=0%o is not a permission mask (0..0777)\n",
		       devnode_mode);
		return -EINVAL;
	}

	cgh_params.devmem_size = (u64)devmem_mb << 20;
	if (zerocopy)
		cgh_params.caps |= CNUASGPU_CAP_ZEROCOPY;
	if (pinned) {
		cgh_params.caps |= CNUASGPU_CAP_PINNED;
		cgh_params.pinned_max = (u64)pinned_max_mb << 20;
	}
	if (dmabuf)
		cgh_params.caps |= CNUASGPU_CAP_DMABUF | CNUASGPU_CAP_PEER_RDMA;
	if (async) {
		cgh_params.caps |= CNUASGPU_CAP_ASYNC;
		cgh_params.queue_depth = queue_depth;
		cgh_params.batch_max = batch_max;
	}
	return 0;
}

static int cgh_ioc_info(struct cgh_file *cf, void __user *uarg)
{
	struct cgh_dev *cdev = cf->cdev;
	struct cnuasgpu_info info = {
		.abi_version = CNUASGPU_ABI_VERSION,
		.fw_version = CGH_FW_VERSION,
		.gpu_id = cdev->index,
		.devmem_size = cgh_params.devmem_size,
		.alloc_limit = cgh_params.devmem_size,
	};

	mutex_lock(&cdev->lock);
	info.devmem_used = cdev->used;
	mutex_unlock(&cdev->lock);
	return copy_to_user(uarg, &info, sizeof(info)) ? -EFAULT : 0;
}

static int cgh_ioc_caps(void __user *uarg)
{
	struct cnuasgpu_caps caps = {
		.kind = CNUASGPU_KIND_HOST,
		.caps = cgh_params.caps,
		.devmem_size = cgh_params.devmem_size,
		.pinned_max = cgh_params.pinned_max,
		.queue_depth = cgh_params.queue_depth,
		.batch_max = cgh_params.batch_max,
	};

	return cnuasgpu_caps_reply(uarg, &caps);
}

/* A feature switched off answers EOPNOTSUPP before its argument is read. */
static long cgh_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	struct cgh_file *cf = filp->private_data;
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case CNUASGPU_IOC_INFO:
		return cgh_ioc_info(cf, uarg);
	case CNUASGPU_IOC_CAPS:
		return cgh_ioc_caps(uarg);
	case CNUASGPU_IOC_ALLOC:
		return cgh_ioc_alloc(cf, uarg);
	case CNUASGPU_IOC_FREE:
		return cgh_ioc_free(cf, uarg);
	case CNUASGPU_IOC_COPY_TO_DEV:
		return cgh_ioc_copy(cf, uarg, true);
	case CNUASGPU_IOC_COPY_FROM_DEV:
		return cgh_ioc_copy(cf, uarg, false);
	case CNUASGPU_IOC_EXPORT_DMABUF:
		if (!cgh_has(CNUASGPU_CAP_DMABUF))
			return -EOPNOTSUPP;
		return cgh_ioc_export(cf, uarg);
	case CNUASGPU_IOC_IMPORT_DMABUF:
		if (!cgh_has(CNUASGPU_CAP_DMABUF))
			return -EOPNOTSUPP;
		return cgh_ioc_import(cf, uarg);
	case CNUASGPU_IOC_PIN:
		if (!cgh_has(CNUASGPU_CAP_PINNED))
			return -EOPNOTSUPP;
		return cgh_ioc_pin(cf, uarg);
	case CNUASGPU_IOC_UNPIN:
		if (!cgh_has(CNUASGPU_CAP_PINNED))
			return -EOPNOTSUPP;
		return cgh_ioc_unpin(cf, uarg);
	case CNUASGPU_IOC_SUBMIT:
		if (!cgh_has(CNUASGPU_CAP_ASYNC))
			return -EOPNOTSUPP;
		return cgh_ioc_submit(cf, uarg);
	case CNUASGPU_IOC_POLL:
	case CNUASGPU_IOC_WAIT:
		if (!cgh_has(CNUASGPU_CAP_ASYNC))
			return -EOPNOTSUPP;
		return cgh_ioc_reap(cf, uarg, cmd == CNUASGPU_IOC_WAIT);
	default:
		return -ENOTTY;
	}
}

static int cgh_open(struct inode *inode, struct file *filp)
{
	struct cgh_dev *cdev = container_of(inode->i_cdev, struct cgh_dev,
					    cdev);
	struct cgh_file *cf;
	int ret;

	cf = kzalloc(sizeof(*cf), GFP_KERNEL);
	if (!cf)
		return -ENOMEM;
	cf->cdev = cdev;
	xa_init_flags(&cf->objs, XA_FLAGS_ALLOC1);
	ret = cgh_queue_init(cf);
	if (ret) {
		kfree(cf);
		return ret;
	}
	get_device(&cdev->dev);
	filp->private_data = cf;
	return nonseekable_open(inode, filp);
}

/* Stop the queue first (its ops hold allocations and pins), then let go of every handle. */
static int cgh_release(struct inode *inode, struct file *filp)
{
	struct cgh_file *cf = filp->private_data;
	struct cgh_dev *cdev = cf->cdev;

	cgh_queue_release(cf);
	cgh_file_drop_objs(cf);
	kfree(cf);
	put_device(&cdev->dev);
	return 0;
}

static const struct file_operations cgh_fops = {
	.owner = THIS_MODULE,
	.open = cgh_open,
	.release = cgh_release,
	.unlocked_ioctl = cgh_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = cgh_mmap,
	.poll = cgh_poll,
	.llseek = noop_llseek,
};

static char *cgh_devnode(const struct device *dev, umode_t *mode)
{
	if (mode)
		*mode = devnode_mode;
	return NULL;
}

static const struct class cgh_class = {
	.name = DRV_NAME,
	.devnode = cgh_devnode,
};

/* ---- nodes -------------------------------------------------------------- */

static void cgh_dev_release(struct device *dev)
{
	struct cgh_dev *cdev = to_cgh_dev(dev);

	cgh_arena_free(cdev);
	kfree(cdev);
}

static int __init cgh_node_add(int index)
{
	struct cgh_dev *cdev;
	int ret;

	cdev = kzalloc(sizeof(*cdev), GFP_KERNEL);
	if (!cdev)
		return -ENOMEM;
	cdev->index = index;
	mutex_init(&cdev->lock);
	INIT_LIST_HEAD(&cdev->allocs);
	atomic_set(&cdev->inflight, 0);
	/* From here on the struct is freed by put_device(). */
	device_initialize(&cdev->dev);
	cdev->dev.class = &cgh_class;
	cdev->dev.groups = cgh_groups;
	cdev->dev.release = cgh_dev_release;
	cdev->dev.devt = MKDEV(MAJOR(cgh_devt), index);
	ret = dev_set_name(&cdev->dev, DRV_NAME "%d", index);
	if (ret)
		goto err_put;
	ret = cgh_arena_init(cdev, cgh_params.devmem_size);
	if (ret) {
		pr_err("%s: no memory for a %u MiB arena\n",
		       dev_name(&cdev->dev), devmem_mb);
		goto err_put;
	}
	cdev_init(&cdev->cdev, &cgh_fops);
	cdev->cdev.owner = THIS_MODULE;
	ret = cdev_device_add(&cdev->cdev, &cdev->dev);
	if (ret)
		goto err_put;
	cgh_nodes[index] = cdev;
	return 0;

err_put:
	put_device(&cdev->dev);
	return ret;
}

/* Files, mappings and DMA-BUFs hold the module: nothing of a node is in use here. */
static void cgh_nodes_del(void)
{
	int i;

	for (i = CGH_MAX_DEVICES - 1; i >= 0; i--) {
		if (!cgh_nodes[i])
			continue;
		cdev_device_del(&cgh_nodes[i]->cdev, &cgh_nodes[i]->dev);
		put_device(&cgh_nodes[i]->dev);
		cgh_nodes[i] = NULL;
	}
}

static int __init cgh_init(void)
{
	unsigned int i;
	int ret;

	ret = cgh_check_params();
	if (ret)
		return ret;
	cgh_wq = alloc_workqueue(DRV_NAME, WQ_UNBOUND, 0);
	if (!cgh_wq)
		return -ENOMEM;
	ret = alloc_chrdev_region(&cgh_devt, 0, devices, DRV_NAME);
	if (ret)
		goto err_wq;
	ret = class_register(&cgh_class);
	if (ret)
		goto err_region;
	for (i = 0; i < devices; i++) {
		ret = cgh_node_add(i);
		if (ret)
			goto err_nodes;
	}
	pr_info("%u node%s, %u MiB arena each, features 0x%x\n", devices,
		devices == 1 ? "" : "s", devmem_mb, cgh_params.caps);
	return 0;

err_nodes:
	cgh_nodes_del();
	class_unregister(&cgh_class);
err_region:
	unregister_chrdev_region(cgh_devt, devices);
err_wq:
	destroy_workqueue(cgh_wq);
	return ret;
}

static void __exit cgh_exit(void)
{
	cgh_nodes_del();
	class_unregister(&cgh_class);
	unregister_chrdev_region(cgh_devt, devices);
	destroy_workqueue(cgh_wq);
}

module_init(cgh_init);
module_exit(cgh_exit);

MODULE_DESCRIPTION("Cnuas host-backed accelerator (cnuasgpu_host) character devices");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(DMA_BUF);
MODULE_VERSION("0.1.0");
