// SPDX-License-Identifier: GPL-2.0
/*
 * cnuasgpu_host device memory: the arena of host pages, its page-aligned
 * bump allocator (cnuasgpu.ko's: a new allocation goes after the last one;
 * space comes back from the top as allocations are released), the
 * per-file handle table, copies straight between user memory and the
 * arena, and mmap() of the arena pages themselves.
 */
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "cnuasgpu_host_priv.h"

/* Largest alignment an allocation may ask for (cnuasgpu.ko's). */
#define CGH_MAX_ALIGN		SZ_1G

int cgh_arena_init(struct cgh_dev *cdev, u64 size)
{
	unsigned long i, n = size >> PAGE_SHIFT;

	cdev->pages = kvcalloc(n, sizeof(*cdev->pages), GFP_KERNEL);
	if (!cdev->pages)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		/* an absurd devmem_mb fails the load, it does not wake the OOM killer */
		cdev->pages[i] = alloc_page(GFP_KERNEL | __GFP_ZERO |
					    __GFP_NOWARN | __GFP_RETRY_MAYFAIL);
		if (!cdev->pages[i])
			return -ENOMEM;	/* cgh_arena_free() takes what there is */
		cond_resched();
	}
	cdev->npages = n;
	cdev->vaddr = vmap(cdev->pages, n, VM_MAP, PAGE_KERNEL);
	return cdev->vaddr ? 0 : -ENOMEM;
}

void cgh_arena_free(struct cgh_dev *cdev)
{
	unsigned long i;

	if (cdev->vaddr)
		vunmap(cdev->vaddr);
	for (i = 0; cdev->pages && i < (cgh_params.devmem_size >> PAGE_SHIFT); i++) {
		if (!cdev->pages[i])
			break;
		__free_page(cdev->pages[i]);
	}
	kvfree(cdev->pages);
}

/* ---- handles ------------------------------------------------------------ */

/*
 * A handle is reserved (it names nothing yet, lookups miss it) before the
 * ioctl copies it out, and published once that worked: a failed copy-out
 * then undoes an object no other thread can have reached.
 */
int cgh_handle_reserve(struct cgh_file *cf, u32 *handle)
{
	int ret;

	ret = xa_alloc(&cf->objs, handle, NULL, XA_LIMIT(1, INT_MAX), GFP_KERNEL);
	return ret == -EBUSY ? -ENOMEM : ret;
}

void cgh_handle_publish(struct cgh_file *cf, u32 handle, struct cgh_obj *obj)
{
	lockdep_assert_held(&cf->cdev->lock);
	obj->handle = handle;
	/* the slot is reserved: the store allocates nothing and cannot fail */
	WARN_ON_ONCE(xa_err(xa_store(&cf->objs, handle, obj, GFP_KERNEL)));
}

void cgh_handle_unreserve(struct cgh_file *cf, u32 handle)
{
	xa_release(&cf->objs, handle);
}

/* The allocation an allocation's or an import's handle object names, or NULL. */
static struct cgh_mem *cgh_obj_mem(struct cgh_obj *obj)
{
	switch (obj->type) {
	case CGH_OBJ_ALLOC:
		return container_of(obj, struct cgh_mem, obj);
	case CGH_OBJ_IMPORT:
		return container_of(obj, struct cgh_import, obj)->a;
	default:
		return NULL;
	}
}

/* The allocation (own or imported) @handle names in this file, or NULL. */
struct cgh_mem *cgh_lookup_mem(struct cgh_file *cf, u32 handle)
{
	struct cgh_obj *obj;

	lockdep_assert_held(&cf->cdev->lock);
	obj = xa_load(&cf->objs, handle);
	return obj ? cgh_obj_mem(obj) : NULL;
}

/* ---- allocations ---------------------------------------------------------- */

/* Give the space back once nothing holds the allocation any more. */
void cgh_mem_release_unused(struct cgh_mem *a)
{
	struct cgh_dev *cdev = a->cdev;

	lockdep_assert_held(&cdev->lock);
	if (a->owner || a->maps || a->exports || a->users)
		return;
	list_del(&a->node);
	cdev->used -= a->size;
	cdev->nallocs--;
	kfree(a);
}

/* A copy or an op is done with @a. */
void cgh_mem_put(struct cgh_mem *a)
{
	struct cgh_dev *cdev = a->cdev;

	mutex_lock(&cdev->lock);
	a->users--;
	cgh_mem_release_unused(a);
	mutex_unlock(&cdev->lock);
}

/* Reserve @size bytes at the bump pointer, aligned; the allocation has no handle yet. */
static struct cgh_mem *cgh_mem_reserve(struct cgh_file *cf, u64 size, u64 align)
{
	struct cgh_dev *cdev = cf->cdev;
	u64 limit = cgh_params.devmem_size;
	struct cgh_mem *a, *last;
	u64 top, offset;

	a = kzalloc(sizeof(*a), GFP_KERNEL_ACCOUNT);
	if (!a)
		return ERR_PTR(-ENOMEM);
	mutex_lock(&cdev->lock);
	if (list_empty(&cdev->allocs)) {
		top = 0;
	} else {
		last = list_last_entry(&cdev->allocs, struct cgh_mem, node);
		top = last->offset + last->size;
	}
	offset = ALIGN(top, align);
	if (offset < top || offset > limit || size > limit - offset) {
		mutex_unlock(&cdev->lock);
		kfree(a);
		return ERR_PTR(-ENOMEM);
	}
	a->obj.type = CGH_OBJ_ALLOC;
	a->cdev = cdev;
	a->owner = cf;
	a->offset = offset;
	a->size = size;
	list_add_tail(&a->node, &cdev->allocs);
	cdev->used += size;
	cdev->nallocs++;
	mutex_unlock(&cdev->lock);
	return a;
}

/*
 * Zero a new allocation 64 KiB at a time (up to 4 GiB: not in one go); a
 * fatal signal stops it, EINTR.
 */
static int cgh_mem_zero(struct cgh_mem *a)
{
	u8 *p = a->cdev->vaddr + a->offset;
	u64 done;

	for (done = 0; done < a->size; done += CGH_CHUNK) {
		if (fatal_signal_pending(current))
			return -EINTR;
		memset(p + done, 0, min_t(u64, a->size - done, CGH_CHUNK));
		cond_resched();
	}
	return 0;
}

int cgh_ioc_alloc(struct cgh_file *cf, void __user *uarg)
{
	struct cgh_dev *cdev = cf->cdev;
	struct cnuasgpu_alloc req;
	struct cgh_mem *a;
	u64 size, align;
	u32 handle;
	int ret;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.flags || req.handle || req.offset || !req.size)
		return -EINVAL;
	align = req.align ? req.align : PAGE_SIZE;
	if (!is_power_of_2(align) || align < PAGE_SIZE || align > CGH_MAX_ALIGN)
		return -EINVAL;
	if (req.size > cgh_params.devmem_size)
		return -ENOMEM;
	size = PAGE_ALIGN(req.size);

	a = cgh_mem_reserve(cf, size, align);
	if (IS_ERR(a))
		return PTR_ERR(a);
	/* no handle names it yet: nobody else sees the bytes before they are zero */
	ret = cgh_mem_zero(a);
	if (ret)
		goto err_release;
	ret = cgh_handle_reserve(cf, &handle);
	if (ret)
		goto err_release;
	req.handle = handle;
	req.offset = a->offset;
	req.size = size;
	if (copy_to_user(uarg, &req, sizeof(req))) {
		cgh_handle_unreserve(cf, handle);
		ret = -EFAULT;
		goto err_release;
	}
	mutex_lock(&cdev->lock);
	cgh_handle_publish(cf, handle, &a->obj);
	mutex_unlock(&cdev->lock);
	return 0;

err_release:
	mutex_lock(&cdev->lock);
	a->owner = NULL;
	cgh_mem_release_unused(a);
	mutex_unlock(&cdev->lock);
	return ret;
}

/* FREE: an allocation's handle (the space stays while used) or an import's. */
int cgh_ioc_free(struct cgh_file *cf, void __user *uarg)
{
	struct cgh_dev *cdev = cf->cdev;
	struct cgh_import *imp = NULL;
	struct cnuasgpu_free req;
	struct cgh_obj *obj;
	struct cgh_mem *a;
	int ret = 0;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.reserved)
		return -EINVAL;
	mutex_lock(&cdev->lock);
	obj = xa_load(&cf->objs, req.handle);
	if (!obj || obj->type == CGH_OBJ_PIN) {
		ret = -ENOENT;
	} else if (obj->type == CGH_OBJ_IMPORT) {
		xa_erase(&cf->objs, req.handle);
		imp = container_of(obj, struct cgh_import, obj);
	} else {
		xa_erase(&cf->objs, req.handle);
		a = container_of(obj, struct cgh_mem, obj);
		a->owner = NULL;
		cgh_mem_release_unused(a);
	}
	mutex_unlock(&cdev->lock);
	if (imp)
		cgh_import_drop(imp);
	return ret;
}

/*
 * Close: every handle of the file lets go; what the queue's ops still use
 * (they hold users counts) stays until they complete or are let go.
 */
void cgh_file_drop_objs(struct cgh_file *cf)
{
	struct cgh_dev *cdev = cf->cdev;
	struct cgh_obj *obj;
	unsigned long idx;

	xa_for_each(&cf->objs, idx, obj) {
		xa_erase(&cf->objs, idx);
		switch (obj->type) {
		case CGH_OBJ_ALLOC: {
			struct cgh_mem *a = container_of(obj, struct cgh_mem, obj);

			mutex_lock(&cdev->lock);
			a->owner = NULL;
			cgh_mem_release_unused(a);
			mutex_unlock(&cdev->lock);
			break;
		}
		case CGH_OBJ_IMPORT:
			cgh_import_drop(container_of(obj, struct cgh_import, obj));
			break;
		case CGH_OBJ_PIN:
			cgh_pin_drop(container_of(obj, struct cgh_pin, obj));
			break;
		}
	}
	xa_destroy(&cf->objs);
}

/*
 * COPY_TO_DEV / COPY_FROM_DEV: straight between user memory and the arena,
 * no bounce buffer, with no lock held; the allocation is held (users) so a
 * FREE meanwhile leaves the space reserved until the copy is done.
 */
int cgh_ioc_copy(struct cgh_file *cf, void __user *uarg, bool to_dev)
{
	struct cgh_dev *cdev = cf->cdev;
	struct cnuasgpu_copy req;
	struct cgh_mem *a;
	u8 __user *uptr;
	u64 done = 0;
	u8 *dev;
	int ret = 0;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.reserved || !req.size)
		return -EINVAL;
	mutex_lock(&cdev->lock);
	a = cgh_lookup_mem(cf, req.handle);
	if (!a)
		ret = -ENOENT;
	else if (req.offset >= a->size || req.size > a->size - req.offset)
		ret = -EINVAL;
	else
		a->users++;
	mutex_unlock(&cdev->lock);
	if (ret)
		return ret;

	dev = cdev->vaddr + a->offset + req.offset;
	uptr = u64_to_user_ptr(req.user_ptr);
	while (done < req.size) {
		size_t len = min_t(u64, req.size - done, CGH_CHUNK);
		unsigned long left;

		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			break;
		}
		if (to_dev)
			left = cgh_copy_from_user(dev + done, uptr + done, len);
		else
			left = copy_to_user(uptr + done, dev + done, len);
		if (left) {
			ret = -EFAULT;
			break;
		}
		done += len;
		cond_resched();
	}
	cgh_mem_put(a);
	return ret;
}

/* ---- mmap --------------------------------------------------------------- */

static void cgh_vm_open(struct vm_area_struct *vma)
{
	struct cgh_mem *a = vma->vm_private_data;

	mutex_lock(&a->cdev->lock);
	a->maps++;
	mutex_unlock(&a->cdev->lock);
}

static void cgh_vm_close(struct vm_area_struct *vma)
{
	struct cgh_mem *a = vma->vm_private_data;
	struct cgh_dev *cdev = a->cdev;

	mutex_lock(&cdev->lock);
	a->maps--;
	cgh_mem_release_unused(a);
	mutex_unlock(&cdev->lock);
}

/*
 * A page of a mapping: the arena page's frame, as a raw PFN (a special PTE,
 * no reference to the page), so get_user_pages never finds a page here.
 */
static vm_fault_t cgh_vm_fault(struct vm_fault *vmf)
{
	struct cgh_mem *a = vmf->vma->vm_private_data;
	u64 off = (u64)vmf->pgoff << PAGE_SHIFT;

	/* cgh_mmap() checked the range and VM_DONTEXPAND keeps it there */
	if (off < a->offset || off - a->offset >= a->size)
		return VM_FAULT_SIGBUS;
	return vmf_insert_pfn(vmf->vma, vmf->address,
			      page_to_pfn(a->cdev->pages[vmf->pgoff]));
}

static const struct vm_operations_struct cgh_vm_ops = {
	.open = cgh_vm_open,
	.close = cgh_vm_close,
	.fault = cgh_vm_fault,
};

/*
 * Zerocopy: the arena pages of one allocation (or import) of this file go
 * into the VMA as they are, cacheable, so the mapping, the copy ioctls and
 * the queue's ops all see the same bytes.  They go in at fault time as raw
 * page frames (VM_PFNMAP): get_user_pages of any kind, long-term (PIN,
 * ibv_reg_mr) or short-term (O_DIRECT, vmsplice), refuses the range, as a
 * pin of arena pages would outlive the allocation.  The node's lock is held
 * only to find the allocation and count the mapping.
 */
int cgh_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct cgh_file *cf = filp->private_data;
	struct cgh_dev *cdev = cf->cdev;
	u64 len = vma->vm_end - vma->vm_start;
	struct cgh_mem *a, *found = NULL;
	struct cgh_obj *obj;
	unsigned long idx;
	u64 off;

	if (!cgh_has(CNUASGPU_CAP_ZEROCOPY))
		return -EOPNOTSUPP;
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (vma->vm_pgoff >= cdev->npages)
		return -EINVAL;
	off = (u64)vma->vm_pgoff << PAGE_SHIFT;

	mutex_lock(&cdev->lock);
	xa_for_each(&cf->objs, idx, obj) {
		a = cgh_obj_mem(obj);
		if (a && off >= a->offset && off - a->offset < a->size &&
		    len <= a->size - (off - a->offset)) {
			found = a;
			found->maps++;
			break;
		}
	}
	mutex_unlock(&cdev->lock);
	if (!found)
		return -EINVAL;
	vm_flags_set(vma, VM_PFNMAP | VM_IO | VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_private_data = found;
	vma->vm_ops = &cgh_vm_ops;
	return 0;
}
