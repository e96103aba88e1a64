// SPDX-License-Identifier: GPL-2.0
/*
 * cnuasgpu_host DMA-BUF export and import.  An export is an allocation's
 * arena pages: any importer attaches (a static exporter: the core maps a
 * dynamic importer such as ib_umem_dmabuf once, at attach), the sg_table is
 * the pages mapped for the importer's device, and vmap gives CPU importers
 * (cnuas_ib moves RDMA bytes with the CPU) a kernel mapping of them.  A
 * second open file of the same node imports the DMA-BUF as a handle.
 */
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/file.h>
#include <linux/iosys-map.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "cnuasgpu_host_priv.h"

/* One exported allocation; the DMA-BUF core holds the module for it. */
struct cgh_export {
	struct cgh_dev *cdev;		/* holds a reference to cdev->dev */
	struct cgh_mem *a;		/* holds a->exports */
};

static struct page **cgh_export_pages(struct cgh_export *x)
{
	return x->cdev->pages + (x->a->offset >> PAGE_SHIFT);
}

static struct sg_table *cgh_dmabuf_map(struct dma_buf_attachment *attach,
				       enum dma_data_direction dir)
{
	struct cgh_export *x = attach->dmabuf->priv;
	struct sg_table *sgt;
	int ret;

	sgt = kzalloc(sizeof(*sgt), GFP_KERNEL);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	ret = sg_alloc_table_from_pages(sgt, cgh_export_pages(x),
					x->a->size >> PAGE_SHIFT, 0, x->a->size,
					GFP_KERNEL);
	if (ret)
		goto err_free;
	ret = dma_map_sgtable(attach->dev, sgt, dir, 0);
	if (ret)
		goto err_table;
	return sgt;

err_table:
	sg_free_table(sgt);
err_free:
	kfree(sgt);
	return ERR_PTR(ret);
}

static void cgh_dmabuf_unmap(struct dma_buf_attachment *attach,
			     struct sg_table *sgt, enum dma_data_direction dir)
{
	dma_unmap_sgtable(attach->dev, sgt, dir, 0);
	sg_free_table(sgt);
	kfree(sgt);
}

/* A kernel mapping of the allocation's pages of its own (cacheable, like the arena's). */
static int cgh_dmabuf_vmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
	struct cgh_export *x = dmabuf->priv;
	void *p;

	p = vmap(cgh_export_pages(x), x->a->size >> PAGE_SHIFT, VM_MAP,
		 PAGE_KERNEL);
	if (!p)
		return -ENOMEM;
	iosys_map_set_vaddr(map, p);
	return 0;
}

static void cgh_dmabuf_vunmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
	vunmap(map->vaddr);
}

/* The last reference closed: the allocation may go now. */
static void cgh_dmabuf_release(struct dma_buf *dmabuf)
{
	struct cgh_export *x = dmabuf->priv;
	struct cgh_dev *cdev = x->cdev;
	struct cgh_mem *a = x->a;

	mutex_lock(&cdev->lock);
	cdev->exports--;
	a->exports--;
	cgh_mem_release_unused(a);
	mutex_unlock(&cdev->lock);
	put_device(&cdev->dev);
	kfree(x);
}

static const struct dma_buf_ops cgh_dmabuf_ops = {
	.map_dma_buf = cgh_dmabuf_map,
	.unmap_dma_buf = cgh_dmabuf_unmap,
	.vmap = cgh_dmabuf_vmap,
	.vunmap = cgh_dmabuf_vunmap,
	.release = cgh_dmabuf_release,
};

/* A new DMA-BUF of allocation @a (under cdev->lock). */
static struct dma_buf *cgh_export_new(struct cgh_dev *cdev, struct cgh_mem *a)
{
	DEFINE_DMA_BUF_EXPORT_INFO(exp_info);
	struct cgh_export *x;
	struct dma_buf *dmabuf;

	lockdep_assert_held(&cdev->lock);
	x = kzalloc(sizeof(*x), GFP_KERNEL);
	if (!x)
		return ERR_PTR(-ENOMEM);
	x->cdev = cdev;
	x->a = a;
	exp_info.ops = &cgh_dmabuf_ops;
	exp_info.size = a->size;
	exp_info.flags = O_RDWR;
	exp_info.priv = x;
	dmabuf = dma_buf_export(&exp_info);
	if (IS_ERR(dmabuf)) {
		kfree(x);
		return dmabuf;
	}
	/* from here on, the DMA-BUF's release undoes these */
	a->exports++;
	cdev->exports++;
	get_device(&cdev->dev);
	return dmabuf;
}

/*
 * EXPORT_DMABUF: an allocation's handle gives a new DMA-BUF of it, an
 * import's handle a new fd of the DMA-BUF it holds.
 */
int cgh_ioc_export(struct cgh_file *cf, void __user *uarg)
{
	struct cgh_dev *cdev = cf->cdev;
	struct cnuasgpu_export req;
	struct dma_buf *dmabuf;
	struct cgh_obj *obj;
	int fd;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if ((req.flags & ~CNUASGPU_EXPORT_CLOEXEC) || req.fd || req.reserved)
		return -EINVAL;
	fd = get_unused_fd_flags(O_RDWR | ((req.flags & CNUASGPU_EXPORT_CLOEXEC) ?
					   O_CLOEXEC : 0));
	if (fd < 0)
		return fd;

	mutex_lock(&cdev->lock);
	obj = xa_load(&cf->objs, req.handle);
	if (!obj || obj->type == CGH_OBJ_PIN) {
		dmabuf = ERR_PTR(-ENOENT);
	} else if (obj->type == CGH_OBJ_IMPORT) {
		dmabuf = container_of(obj, struct cgh_import, obj)->dmabuf;
		get_dma_buf(dmabuf);
	} else {
		dmabuf = cgh_export_new(cdev, container_of(obj, struct cgh_mem, obj));
	}
	mutex_unlock(&cdev->lock);
	if (IS_ERR(dmabuf)) {
		put_unused_fd(fd);
		return PTR_ERR(dmabuf);
	}

	req.fd = fd;
	if (copy_to_user(uarg, &req, sizeof(req))) {
		put_unused_fd(fd);
		dma_buf_put(dmabuf);
		return -EFAULT;
	}
	fd_install(fd, dmabuf->file);
	return 0;
}

/* An import lets go: its DMA-BUF reference, maybe the last one. */
void cgh_import_drop(struct cgh_import *imp)
{
	dma_buf_put(imp->dmabuf);
	kfree(imp);
}

int cgh_ioc_import(struct cgh_file *cf, void __user *uarg)
{
	struct cgh_dev *cdev = cf->cdev;
	struct cnuasgpu_import req;
	struct cgh_import *imp;
	struct dma_buf *dmabuf;
	struct cgh_export *x;
	u32 handle;
	int ret;

	BUILD_BUG_ON(sizeof(struct cnuasgpu_import) != 32);
	BUILD_BUG_ON(offsetof(struct cnuasgpu_import, offset) != 16);
	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.size != sizeof(req) || req.flags || req.handle || req.offset ||
	    req.length)
		return -EINVAL;
	dmabuf = dma_buf_get(req.fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	if (dmabuf->ops != &cgh_dmabuf_ops) {
		ret = -EINVAL;
		goto err_put;
	}
	x = dmabuf->priv;
	if (x->cdev != cdev) {
		ret = -EXDEV;
		goto err_put;
	}
	imp = kzalloc(sizeof(*imp), GFP_KERNEL);
	if (!imp) {
		ret = -ENOMEM;
		goto err_put;
	}
	imp->obj.type = CGH_OBJ_IMPORT;
	imp->a = x->a;
	imp->dmabuf = dmabuf;

	ret = cgh_handle_reserve(cf, &handle);
	if (ret)
		goto err_free;
	req.handle = handle;
	req.offset = x->a->offset;
	req.length = x->a->size;
	if (copy_to_user(uarg, &req, sizeof(req))) {
		cgh_handle_unreserve(cf, handle);
		ret = -EFAULT;
		goto err_free;
	}
	mutex_lock(&cdev->lock);
	cgh_handle_publish(cf, handle, &imp->obj);
	mutex_unlock(&cdev->lock);
	return 0;

err_free:
	kfree(imp);
err_put:
	dma_buf_put(dmabuf);
	return ret;
}
