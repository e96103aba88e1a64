// SPDX-License-Identifier: GPL-2.0
/*
 * cnuasgpu BAR1 memory: a page-aligned bump allocator whose allocations
 * belong to the open file that made them, copies between user memory and
 * allocations through a bounce buffer, and write-combining mmap() of
 * allocations.  An allocation's space stays reserved after FREE while VMAs
 * or DMA-BUF exports still reach it.
 */
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "cnuasgpu_priv.h"

/* Largest alignment an allocation may ask for. */
#define CNUASGPU_MAX_ALIGN		SZ_1G
/* Bounce buffer for copies, one chunk at a time. */
#define CNUASGPU_COPY_CHUNK		SZ_64K

/* Give the space back; the bump pointer is the end of the last allocation. */
void cnuasgpu_alloc_release(struct cnuasgpu_dev *gdev, struct cnuasgpu_mem *a)
{
	lockdep_assert_held(&gdev->alloc_lock);
	list_del(&a->node);
	gdev->used -= a->size;
	kfree(a);
}

/* Drop the owner's claim; the space stays reserved while mappings or exports remain. */
void cnuasgpu_alloc_free(struct cnuasgpu_dev *gdev, struct cnuasgpu_mem *a)
{
	lockdep_assert_held(&gdev->alloc_lock);
	xa_erase(&gdev->handles, a->handle);
	a->owner = NULL;
	if (!a->maps && !a->exports)
		cnuasgpu_alloc_release(gdev, a);
}

struct cnuasgpu_mem *cnuasgpu_lookup(struct cnuasgpu_file *cf, u32 handle)
{
	struct cnuasgpu_mem *a;

	lockdep_assert_held(&cf->gdev->alloc_lock);
	a = xa_load(&cf->gdev->handles, handle);
	return a && a->owner == cf ? a : NULL;
}

int cnuasgpu_ioc_alloc(struct cnuasgpu_file *cf, void __user *uarg)
{
	struct cnuasgpu_dev *gdev = cf->gdev;
	struct cnuasgpu_alloc req;
	struct cnuasgpu_mem *a, *last;
	u64 size, align, top, offset;
	u32 handle;
	int ret;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.flags || req.handle || req.offset || !req.size)
		return -EINVAL;
	align = req.align ? req.align : PAGE_SIZE;
	if (!is_power_of_2(align) || align < PAGE_SIZE ||
	    align > CNUASGPU_MAX_ALIGN)
		return -EINVAL;
	if (req.size > gdev->alloc_limit)
		return -ENOMEM;
	size = PAGE_ALIGN(req.size);

	a = kzalloc(sizeof(*a), GFP_KERNEL);
	if (!a)
		return -ENOMEM;

	mutex_lock(&gdev->alloc_lock);
	if (list_empty(&gdev->allocs)) {
		top = 0;
	} else {
		last = list_last_entry(&gdev->allocs, struct cnuasgpu_mem, node);
		top = last->offset + last->size;
	}
	offset = ALIGN(top, align);
	if (offset < top || offset > gdev->alloc_limit ||
	    size > gdev->alloc_limit - offset) {
		ret = -ENOMEM;
		goto err_unlock;
	}
	ret = xa_alloc(&gdev->handles, &handle, a, xa_limit_31b, GFP_KERNEL);
	if (ret)
		goto err_unlock;
	a->gdev = gdev;
	a->owner = cf;
	a->offset = offset;
	a->size = size;
	a->handle = handle;
	list_add_tail(&a->node, &gdev->allocs);
	gdev->used += size;
	mutex_unlock(&gdev->alloc_lock);

	req.handle = handle;
	req.offset = offset;
	req.size = size;
	if (copy_to_user(uarg, &req, sizeof(req))) {
		/*
		 * Another thread of this file may have freed the handle (it is
		 * guessable) since the lock was dropped: @a may be gone, so
		 * free only what the handle still names.
		 */
		mutex_lock(&gdev->alloc_lock);
		a = cnuasgpu_lookup(cf, handle);
		if (a)
			cnuasgpu_alloc_free(gdev, a);
		mutex_unlock(&gdev->alloc_lock);
		return -EFAULT;
	}
	return 0;

err_unlock:
	mutex_unlock(&gdev->alloc_lock);
	kfree(a);
	return ret;
}

int cnuasgpu_ioc_free(struct cnuasgpu_file *cf, void __user *uarg)
{
	struct cnuasgpu_dev *gdev = cf->gdev;
	struct cnuasgpu_free req;
	struct cnuasgpu_mem *a;
	int ret = 0;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.reserved)
		return -EINVAL;
	mutex_lock(&gdev->alloc_lock);
	a = cnuasgpu_lookup(cf, req.handle);
	if (a)
		cnuasgpu_alloc_free(gdev, a);
	else
		ret = -ENOENT;
	mutex_unlock(&gdev->alloc_lock);
	return ret;
}

/*
 * Copy one chunk between @buf and allocation @handle at @offset, re-checking
 * the allocation under the lock (another thread may have freed it).  BAR1
 * is touched under remove_sem, as every hardware access is: once remove has
 * begun the chunk fails with -ENODEV instead of writing to an unmapped BAR.
 */
static int cnuasgpu_copy_chunk(struct cnuasgpu_file *cf, u32 handle,
			       u64 offset, void *buf, size_t len, bool to_dev)
{
	struct cnuasgpu_dev *gdev = cf->gdev;
	struct cnuasgpu_mem *a;
	int ret;

	ret = cnuasgpu_enter(gdev);
	if (ret)
		return ret;
	mutex_lock(&gdev->alloc_lock);
	a = cnuasgpu_lookup(cf, handle);
	if (!a) {
		ret = -ENOENT;
	} else if (offset >= a->size || len > a->size - offset) {
		ret = -EINVAL;
	} else if (to_dev) {
		memcpy_toio(gdev->devmem + a->offset + offset, buf, len);
		wmb();	/* drain write-combining buffers before anyone looks */
	} else {
		memcpy_fromio(buf, gdev->devmem + a->offset + offset, len);
	}
	mutex_unlock(&gdev->alloc_lock);
	cnuasgpu_leave(gdev);
	return ret;
}

int cnuasgpu_ioc_copy(struct cnuasgpu_file *cf, void __user *uarg, bool to_dev)
{
	struct cnuasgpu_dev *gdev = cf->gdev;
	struct cnuasgpu_copy req;
	struct cnuasgpu_mem *a;
	u8 __user *uptr;
	u64 done = 0;
	void *buf;
	int ret;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.reserved || !req.size)
		return -EINVAL;

	mutex_lock(&gdev->alloc_lock);
	a = cnuasgpu_lookup(cf, req.handle);
	if (!a)
		ret = -ENOENT;
	else if (req.offset >= a->size || req.size > a->size - req.offset)
		ret = -EINVAL;
	else
		ret = 0;
	mutex_unlock(&gdev->alloc_lock);
	if (ret)
		return ret;

	buf = kvmalloc(CNUASGPU_COPY_CHUNK, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	uptr = u64_to_user_ptr(req.user_ptr);
	while (done < req.size) {
		size_t len = min_t(u64, req.size - done, CNUASGPU_COPY_CHUNK);

		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			break;
		}
		/* User memory is touched only with no lock held. */
		if (to_dev && copy_from_user(buf, uptr + done, len)) {
			ret = -EFAULT;
			break;
		}
		ret = cnuasgpu_copy_chunk(cf, req.handle, req.offset + done,
					  buf, len, to_dev);
		if (ret)
			break;
		if (!to_dev && copy_to_user(uptr + done, buf, len)) {
			ret = -EFAULT;
			break;
		}
		done += len;
		cond_resched();
	}
	kvfree(buf);
	return ret;
}

/* ---- mmap ------------------------------------------------------------- */

static void cnuasgpu_vm_open(struct vm_area_struct *vma)
{
	struct cnuasgpu_mem *a = vma->vm_private_data;

	mutex_lock(&a->gdev->alloc_lock);
	a->maps++;
	mutex_unlock(&a->gdev->alloc_lock);
}

static void cnuasgpu_vm_close(struct vm_area_struct *vma)
{
	struct cnuasgpu_mem *a = vma->vm_private_data;
	struct cnuasgpu_dev *gdev = a->gdev;

	mutex_lock(&gdev->alloc_lock);
	if (!--a->maps && !a->owner && !a->exports)
		cnuasgpu_alloc_release(gdev, a);
	mutex_unlock(&gdev->alloc_lock);
}

/*
 * A mapping is unmapped whole: io_remap_pfn_range() tracks the PAT memtype
 * of the whole range under the VMA's first pfn, and a partial munmap() or
 * mprotect() that split it made x86 free a memtype it never reserved
 * ("x86/PAT: ... freeing invalid memtype") and leak the real one.
 */
static int cnuasgpu_vm_may_split(struct vm_area_struct *vma, unsigned long addr)
{
	return -EINVAL;
}

static const struct vm_operations_struct cnuasgpu_vm_ops = {
	.open = cnuasgpu_vm_open,
	.close = cnuasgpu_vm_close,
	.may_split = cnuasgpu_vm_may_split,
};

int cnuasgpu_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct cnuasgpu_file *cf = filp->private_data;
	struct cnuasgpu_dev *gdev = cf->gdev;
	u64 len = vma->vm_end - vma->vm_start;
	struct cnuasgpu_mem *a, *found = NULL;
	u64 off;
	int ret;

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (vma->vm_pgoff > (gdev->devmem_size >> PAGE_SHIFT))
		return -EINVAL;
	off = (u64)vma->vm_pgoff << PAGE_SHIFT;

	ret = cnuasgpu_enter(gdev);
	if (ret)
		return ret;
	mutex_lock(&gdev->alloc_lock);
	list_for_each_entry(a, &gdev->allocs, node) {
		if (a->owner == cf && off >= a->offset &&
		    off - a->offset < a->size &&
		    len <= a->size - (off - a->offset)) {
			found = a;
			break;
		}
	}
	if (!found) {
		ret = -EINVAL;
		goto out;
	}
	vma->vm_page_prot = pgprot_writecombine(vma->vm_page_prot);
	vm_flags_set(vma, VM_IO | VM_DONTEXPAND | VM_DONTDUMP);
	ret = io_remap_pfn_range(vma, vma->vm_start,
				 (gdev->devmem_phys + off) >> PAGE_SHIFT, len,
				 vma->vm_page_prot);
	if (ret)
		goto out;
	vma->vm_private_data = found;
	vma->vm_ops = &cnuasgpu_vm_ops;
	found->maps++;
out:
	mutex_unlock(&gdev->alloc_lock);
	cnuasgpu_leave(gdev);
	return ret;
}
