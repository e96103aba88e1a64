// SPDX-License-Identifier: GPL-2.0
/* Attributes of the cnuasgpu class devices (/sys/class/cnuasgpu/cnuasgpuN). */
#include <linux/device.h>
#include <linux/sysfs.h>

#include "cnuasgpu_priv.h"

static ssize_t gpu_id_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	return sysfs_emit(buf, "%u\n", to_gdev(dev)->gpu_id);
}
static DEVICE_ATTR_RO(gpu_id);

static ssize_t sm_count_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	return sysfs_emit(buf, "%u\n", to_gdev(dev)->sm_count);
}
static DEVICE_ATTR_RO(sm_count);

static ssize_t devmem_size_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", to_gdev(dev)->devmem_size);
}
static DEVICE_ATTR_RO(devmem_size);

static ssize_t devmem_used_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	struct cnuasgpu_dev *gdev = to_gdev(dev);
	u64 used;

	mutex_lock(&gdev->alloc_lock);
	used = gdev->used;
	mutex_unlock(&gdev->alloc_lock);
	return sysfs_emit(buf, "%llu\n", used);
}
static DEVICE_ATTR_RO(devmem_used);

static ssize_t cnuasgpu_show_link_bit(struct device *dev, char *buf, u32 bit)
{
	struct cnuasgpu_dev *gdev = to_gdev(dev);
	u32 status;
	int ret;

	ret = cnuasgpu_enter(gdev);
	if (ret)
		return ret;
	status = cnuasgpu_rd(gdev, CNUASGPU_REG_LINK_STATUS);
	cnuasgpu_leave(gdev);
	return sysfs_emit(buf, "%u\n", !!(status & bit));
}

static ssize_t link_up_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	return cnuasgpu_show_link_bit(dev, buf, CNUASGPU_LINK_STATUS_UP);
}
static DEVICE_ATTR_RO(link_up);

static ssize_t link_rx_ready_show(struct device *dev,
				  struct device_attribute *attr, char *buf)
{
	return cnuasgpu_show_link_bit(dev, buf, CNUASGPU_LINK_STATUS_RX_READY);
}
static DEVICE_ATTR_RO(link_rx_ready);

/* Allocations can be exported as DMA-BUFs for peer-to-peer importers. */
static ssize_t peer_rdma_show(struct device *dev, struct device_attribute *attr,
			      char *buf)
{
	return sysfs_emit(buf, "1\n");
}
static DEVICE_ATTR_RO(peer_rdma);

static ssize_t export_align_show(struct device *dev,
				 struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lu\n", PAGE_SIZE);
}
static DEVICE_ATTR_RO(export_align);

static ssize_t exports_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	struct cnuasgpu_dev *gdev = to_gdev(dev);
	unsigned int n;

	mutex_lock(&gdev->alloc_lock);
	n = gdev->exports;
	mutex_unlock(&gdev->alloc_lock);
	return sysfs_emit(buf, "%u\n", n);
}
static DEVICE_ATTR_RO(exports);

static struct attribute *cnuasgpu_attrs[] = {
	&dev_attr_gpu_id.attr,
	&dev_attr_sm_count.attr,
	&dev_attr_devmem_size.attr,
	&dev_attr_devmem_used.attr,
	&dev_attr_link_up.attr,
	&dev_attr_link_rx_ready.attr,
	&dev_attr_peer_rdma.attr,
	&dev_attr_export_align.attr,
	&dev_attr_exports.attr,
	NULL,
};

static const struct attribute_group cnuasgpu_group = {
	.attrs = cnuasgpu_attrs,
};

const struct attribute_group *cnuasgpu_groups[] = {
	&cnuasgpu_group,
	NULL,
};
