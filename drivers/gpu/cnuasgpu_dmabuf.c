// SPDX-License-Identifier: GPL-2.0
/*
 * DMA-BUF export of cnuasgpu allocations.  BAR1 has no struct pages, so only
 * peer-to-peer importers attach; they get the bus address of the range.
 */
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/file.h>
#include <linux/iosys-map.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "cnuasgpu_priv.h"

/*
 * One exported allocation.  It keeps its own copy of the BAR1 range so the
 * importer's mappings never go through gdev->devmem, which goes away with
 * the PCI function; the module stays loaded while the DMA-BUF exists (the
 * DMA-BUF core holds a module reference for it).
 */
struct cnuasgpu_export_priv {
	struct cnuasgpu_dev *gdev;	/* holds a reference to gdev->dev */
	struct cnuasgpu_mem *a;		/* holds a->exports */
	phys_addr_t phys;
	u64 size;
};

/* BAR1 is device memory without struct pages: only peer-to-peer importers. */
static int cnuasgpu_dmabuf_attach(struct dma_buf *dmabuf,
				  struct dma_buf_attachment *attach)
{
	return attach->peer2peer ? 0 : -EOPNOTSUPP;
}

static struct sg_table *cnuasgpu_dmabuf_map(struct dma_buf_attachment *attach,
					    enum dma_data_direction dir)
{
	struct cnuasgpu_export_priv *x = attach->dmabuf->priv;
	struct sg_table *sgt;
	dma_addr_t addr;
	int ret;

	/* the function is gone: its BAR1 range is no one's to map */
	if (READ_ONCE(x->gdev->dead))
		return ERR_PTR(-ENODEV);
	sgt = kzalloc(sizeof(*sgt), GFP_KERNEL);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	ret = sg_alloc_table(sgt, 1, GFP_KERNEL);
	if (ret)
		goto err_free;
	addr = dma_map_resource(attach->dev, x->phys, x->size, dir,
				DMA_ATTR_SKIP_CPU_SYNC);
	ret = dma_mapping_error(attach->dev, addr);
	if (ret)
		goto err_table;
	/* no page behind it: importers use the DMA address and length only */
	sg_set_page(sgt->sgl, NULL, 0, 0);
	sg_dma_address(sgt->sgl) = addr;
	sg_dma_len(sgt->sgl) = x->size;
	return sgt;

err_table:
	sg_free_table(sgt);
err_free:
	kfree(sgt);
	return ERR_PTR(ret);
}

static void cnuasgpu_dmabuf_unmap(struct dma_buf_attachment *attach,
				  struct sg_table *sgt,
				  enum dma_data_direction dir)
{
	dma_unmap_resource(attach->dev, sg_dma_address(sgt->sgl),
			   sg_dma_len(sgt->sgl), dir, DMA_ATTR_SKIP_CPU_SYNC);
	sg_free_table(sgt);
	kfree(sgt);
}

/* For importers that move the bytes with the CPU. */
static int cnuasgpu_dmabuf_vmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
	struct cnuasgpu_export_priv *x = dmabuf->priv;
	void __iomem *p;

	if (READ_ONCE(x->gdev->dead))
		return -ENODEV;
	p = ioremap_wc(x->phys, x->size);
	if (!p)
		return -ENOMEM;
	iosys_map_set_vaddr_iomem(map, p);
	return 0;
}

static void cnuasgpu_dmabuf_vunmap(struct dma_buf *dmabuf,
				   struct iosys_map *map)
{
	iounmap(map->vaddr_iomem);
}

/* The last reference closed: the allocation may go now. */
static void cnuasgpu_dmabuf_release(struct dma_buf *dmabuf)
{
	struct cnuasgpu_export_priv *x = dmabuf->priv;
	struct cnuasgpu_dev *gdev = x->gdev;
	struct cnuasgpu_mem *a = x->a;

	mutex_lock(&gdev->alloc_lock);
	gdev->exports--;
	if (!--a->exports && !a->owner && !a->maps)
		cnuasgpu_alloc_release(gdev, a);
	mutex_unlock(&gdev->alloc_lock);
	put_device(&gdev->dev);
	kfree(x);
}

static const struct dma_buf_ops cnuasgpu_dmabuf_ops = {
	.attach = cnuasgpu_dmabuf_attach,
	.map_dma_buf = cnuasgpu_dmabuf_map,
	.unmap_dma_buf = cnuasgpu_dmabuf_unmap,
	.vmap = cnuasgpu_dmabuf_vmap,
	.vunmap = cnuasgpu_dmabuf_vunmap,
	.release = cnuasgpu_dmabuf_release,
};

int cnuasgpu_ioc_export(struct cnuasgpu_file *cf, void __user *uarg)
{
	DEFINE_DMA_BUF_EXPORT_INFO(exp_info);
	struct cnuasgpu_dev *gdev = cf->gdev;
	struct cnuasgpu_export_priv *x;
	struct cnuasgpu_export req;
	struct cnuasgpu_mem *a;
	struct dma_buf *dmabuf;
	int fd, ret;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if ((req.flags & ~CNUASGPU_EXPORT_CLOEXEC) || req.fd || req.reserved)
		return -EINVAL;
	x = kzalloc(sizeof(*x), GFP_KERNEL);
	if (!x)
		return -ENOMEM;
	fd = get_unused_fd_flags(O_RDWR | ((req.flags & CNUASGPU_EXPORT_CLOEXEC) ?
					   O_CLOEXEC : 0));
	if (fd < 0) {
		ret = fd;
		goto err_free;
	}

	/* the DMA-BUF names BAR1: none is made once remove has begun */
	ret = cnuasgpu_enter(gdev);
	if (ret)
		goto err_fd;
	mutex_lock(&gdev->alloc_lock);
	a = cnuasgpu_lookup(cf, req.handle);
	if (!a) {
		mutex_unlock(&gdev->alloc_lock);
		cnuasgpu_leave(gdev);
		ret = -ENOENT;
		goto err_fd;
	}
	x->gdev = gdev;
	x->a = a;
	x->phys = gdev->devmem_phys + a->offset;
	x->size = a->size;
	exp_info.ops = &cnuasgpu_dmabuf_ops;
	exp_info.size = a->size;
	exp_info.flags = O_RDWR;
	exp_info.priv = x;
	dmabuf = dma_buf_export(&exp_info);
	if (IS_ERR(dmabuf)) {
		mutex_unlock(&gdev->alloc_lock);
		cnuasgpu_leave(gdev);
		ret = PTR_ERR(dmabuf);
		goto err_fd;
	}
	/* from here on, the DMA-BUF's release undoes these */
	a->exports++;
	gdev->exports++;
	get_device(&gdev->dev);
	mutex_unlock(&gdev->alloc_lock);
	cnuasgpu_leave(gdev);

	req.fd = fd;
	if (copy_to_user(uarg, &req, sizeof(req))) {
		put_unused_fd(fd);
		dma_buf_put(dmabuf);
		return -EFAULT;
	}
	fd_install(fd, dmabuf->file);
	return 0;

err_fd:
	put_unused_fd(fd);
err_free:
	kfree(x);
	return ret;
}
