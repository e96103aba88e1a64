// SPDX-License-Identifier: GPL-2.0
/*
 * cnuasgpu_host pinned memory: PIN takes user pages long-term
 * (pin_user_pages_fast) and accounts them against the node's ceiling;
 * UNPIN, closing the file (a dying process closes it) or the last queued
 * op using them gives them back.  Ops reach the pages through the kernel's
 * own mapping of each page, never through the user's page tables.
 */
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "cnuasgpu_host_priv.h"

struct cgh_pin *cgh_lookup_pin(struct cgh_file *cf, u32 handle)
{
	struct cgh_obj *obj;

	lockdep_assert_held(&cf->cdev->lock);
	obj = xa_load(&cf->objs, handle);
	return obj && obj->type == CGH_OBJ_PIN ?
	       container_of(obj, struct cgh_pin, obj) : NULL;
}

/* Unaccount @length bytes; the caller unpins the pages (or never pinned them). */
static void cgh_pin_unaccount(struct cgh_dev *cdev, u64 length)
{
	lockdep_assert_held(&cdev->lock);
	cdev->pinned_used -= length;
	cdev->pins--;
}

static void cgh_pin_free(struct cgh_pin *pin)
{
	/* ops may have written the pages through the kernel's mapping */
	unpin_user_pages_dirty_lock(pin->pages, pin->npages, true);
	kvfree(pin->pages);
	kfree(pin);
}

/* The owner lets go (UNPIN, close); the pages go once no op uses them. */
void cgh_pin_drop(struct cgh_pin *pin)
{
	struct cgh_dev *cdev = pin->cdev;
	bool last;

	mutex_lock(&cdev->lock);
	pin->owner = NULL;
	last = !pin->users;
	if (last)
		cgh_pin_unaccount(cdev, pin->length);
	mutex_unlock(&cdev->lock);
	if (last)
		cgh_pin_free(pin);
}

/* An op is done with @pin. */
void cgh_pin_put(struct cgh_pin *pin)
{
	struct cgh_dev *cdev = pin->cdev;
	bool last;

	mutex_lock(&cdev->lock);
	last = !--pin->users && !pin->owner;
	if (last)
		cgh_pin_unaccount(cdev, pin->length);
	mutex_unlock(&cdev->lock);
	if (last)
		cgh_pin_free(pin);
}

/* Copy @len bytes between @buf and byte @off of the pinned range (checked by the caller). */
void cgh_pin_copy(struct cgh_pin *pin, u64 off, void *buf, size_t len,
		  bool to_dev)
{
	u8 *b = buf;

	while (len) {
		struct page *page = pin->pages[off >> PAGE_SHIFT];
		size_t in = offset_in_page(off);
		size_t n = min_t(size_t, len, PAGE_SIZE - in);
		u8 *p = kmap_local_page(page);

		if (to_dev) {
			memcpy(b, p + in, n);
		} else {
			memcpy(p + in, b, n);
			flush_dcache_page(page);
		}
		kunmap_local(p);
		off += n;
		b += n;
		len -= n;
	}
}

int cgh_ioc_pin(struct cgh_file *cf, void __user *uarg)
{
	struct cgh_dev *cdev = cf->cdev;
	struct cnuasgpu_pin req;
	struct cgh_pin *pin;
	unsigned long npages;
	u32 handle;
	long got;
	int ret;

	BUILD_BUG_ON(sizeof(struct cnuasgpu_pin) != 32);
	BUILD_BUG_ON(offsetof(struct cnuasgpu_pin, handle) != 24);
	BUILD_BUG_ON(sizeof(struct cnuasgpu_unpin) != 16);
	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.size != sizeof(req) || req.flags || req.handle ||
	    req.reserved || !req.length || !PAGE_ALIGNED(req.user_ptr) ||
	    !PAGE_ALIGNED(req.length) || req.user_ptr + req.length < req.user_ptr)
		return -EINVAL;

	/* the ceiling first: what passes it is never pinned, not even briefly */
	mutex_lock(&cdev->lock);
	if (req.length > cgh_params.pinned_max - cdev->pinned_used) {
		mutex_unlock(&cdev->lock);
		return -ENOMEM;
	}
	cdev->pinned_used += req.length;
	cdev->pins++;
	mutex_unlock(&cdev->lock);

	/* below the ceiling (at most 64 GiB), so npages fits an int */
	npages = req.length >> PAGE_SHIFT;
	pin = kzalloc(sizeof(*pin), GFP_KERNEL);
	if (!pin) {
		ret = -ENOMEM;
		goto err_unaccount;
	}
	pin->pages = kvmalloc_array(npages, sizeof(*pin->pages), GFP_KERNEL);
	if (!pin->pages) {
		ret = -ENOMEM;
		goto err_free;
	}
	got = pin_user_pages_fast(req.user_ptr, npages,
				  FOLL_WRITE | FOLL_LONGTERM, pin->pages);
	if (got != (long)npages) {
		if (got > 0)
			unpin_user_pages(pin->pages, got);
		ret = got < 0 ? got : -EFAULT;
		goto err_free;
	}
	pin->obj.type = CGH_OBJ_PIN;
	pin->cdev = cdev;
	pin->owner = cf;
	pin->npages = npages;
	pin->length = req.length;

	ret = cgh_handle_reserve(cf, &handle);
	if (ret)
		goto err_unpin;
	req.handle = handle;
	if (copy_to_user(uarg, &req, sizeof(req))) {
		cgh_handle_unreserve(cf, handle);
		ret = -EFAULT;
		goto err_unpin;
	}
	mutex_lock(&cdev->lock);
	cgh_handle_publish(cf, handle, &pin->obj);
	mutex_unlock(&cdev->lock);
	return 0;

err_unpin:
	unpin_user_pages(pin->pages, npages);
err_free:
	if (pin)
		kvfree(pin->pages);
	kfree(pin);
err_unaccount:
	mutex_lock(&cdev->lock);
	cgh_pin_unaccount(cdev, req.length);
	mutex_unlock(&cdev->lock);
	return ret;
}

int cgh_ioc_unpin(struct cgh_file *cf, void __user *uarg)
{
	struct cgh_dev *cdev = cf->cdev;
	struct cnuasgpu_unpin req;
	struct cgh_pin *pin;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.size != sizeof(req) || req.flags || req.reserved)
		return -EINVAL;
	mutex_lock(&cdev->lock);
	pin = cgh_lookup_pin(cf, req.handle);
	if (pin)
		xa_erase(&cf->objs, req.handle);
	mutex_unlock(&cdev->lock);
	if (!pin)
		return -ENOENT;
	cgh_pin_drop(pin);
	return 0;
}
