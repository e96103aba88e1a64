// SPDX-License-Identifier: GPL-2.0
/*
 * Attributes of the cnuasgpu_host class devices
 * (/sys/class/cnuasgpu_host/cnuasgpu_hostN): the node's sizes and features,
 * and live counters a test reads to see that nothing leaked.
 */
#include <linux/device.h>
#include <linux/sysfs.h>

#include "cnuasgpu_host_priv.h"

/* A counter of the node, read under its lock. */
static ssize_t cgh_show_u64_locked(struct device *dev, char *buf, u64 *p)
{
	struct cgh_dev *cdev = to_cgh_dev(dev);
	u64 v;

	mutex_lock(&cdev->lock);
	v = *p;
	mutex_unlock(&cdev->lock);
	return sysfs_emit(buf, "%llu\n", v);
}

static ssize_t cgh_show_uint_locked(struct device *dev, char *buf,
				    unsigned int *p)
{
	struct cgh_dev *cdev = to_cgh_dev(dev);
	unsigned int v;

	mutex_lock(&cdev->lock);
	v = *p;
	mutex_unlock(&cdev->lock);
	return sysfs_emit(buf, "%u\n", v);
}

static ssize_t devmem_size_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", cgh_params.devmem_size);
}
static DEVICE_ATTR_RO(devmem_size);

static ssize_t devmem_used_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return cgh_show_u64_locked(dev, buf, &to_cgh_dev(dev)->used);
}
static DEVICE_ATTR_RO(devmem_used);

/* Allocations still reserved, freed ones kept by mappings, exports or ops included. */
static ssize_t allocations_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return cgh_show_uint_locked(dev, buf, &to_cgh_dev(dev)->nallocs);
}
static DEVICE_ATTR_RO(allocations);

static ssize_t exports_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	return cgh_show_uint_locked(dev, buf, &to_cgh_dev(dev)->exports);
}
static DEVICE_ATTR_RO(exports);

static ssize_t pinned_max_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", cgh_params.pinned_max);
}
static DEVICE_ATTR_RO(pinned_max);

static ssize_t pinned_used_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return cgh_show_u64_locked(dev, buf, &to_cgh_dev(dev)->pinned_used);
}
static DEVICE_ATTR_RO(pinned_used);

static ssize_t pins_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	return cgh_show_uint_locked(dev, buf, &to_cgh_dev(dev)->pins);
}
static DEVICE_ATTR_RO(pins);

/* Ops submitted on any open file of the node and not run (or cancelled) yet. */
static ssize_t inflight_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&to_cgh_dev(dev)->inflight));
}
static DEVICE_ATTR_RO(inflight);

static ssize_t caps_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	return sysfs_emit(buf, "0x%x\n", cgh_params.caps);
}
static DEVICE_ATTR_RO(caps);

/* The features switched on, by parameter name, in a fixed order. */
static ssize_t features_show(struct device *dev,
			     struct device_attribute *attr, char *buf)
{
	static const struct {
		u32 cap;
		const char *name;
	} names[] = {
		{ CNUASGPU_CAP_ZEROCOPY, "zerocopy" },
		{ CNUASGPU_CAP_PINNED, "pinned" },
		{ CNUASGPU_CAP_DMABUF, "dmabuf" },
		{ CNUASGPU_CAP_ASYNC, "async" },
	};
	ssize_t n = 0;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(names); i++) {
		if (cgh_has(names[i].cap))
			n += sysfs_emit_at(buf, n, "%s%s", n ? " " : "",
					   names[i].name);
	}
	return n + sysfs_emit_at(buf, n, "\n");
}
static DEVICE_ATTR_RO(features);

static ssize_t queue_depth_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", cgh_params.queue_depth);
}
static DEVICE_ATTR_RO(queue_depth);

static ssize_t batch_max_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", cgh_params.batch_max);
}
static DEVICE_ATTR_RO(batch_max);

static struct attribute *cgh_attrs[] = {
	&dev_attr_devmem_size.attr,
	&dev_attr_devmem_used.attr,
	&dev_attr_allocations.attr,
	&dev_attr_exports.attr,
	&dev_attr_pinned_max.attr,
	&dev_attr_pinned_used.attr,
	&dev_attr_pins.attr,
	&dev_attr_inflight.attr,
	&dev_attr_caps.attr,
	&dev_attr_features.attr,
	&dev_attr_queue_depth.attr,
	&dev_attr_batch_max.attr,
	NULL,
};

static const struct attribute_group cgh_group = {
	.attrs = cgh_attrs,
};

const struct attribute_group *cgh_groups[] = {
	&cgh_group,
	NULL,
};
