// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * cnuas_ib: memory regions.  A key is (index << 8) | variant, lkey ==
 * rkey; every use looks the key up and checks the PD, the access flags and
 * the bounds before a byte moves (cnuas_ib_mr_get), and holds a reference
 * for the copy so deregistration waits for it.
 *
 * A DMA-BUF MR (ibv_reg_dmabuf_mr, e.g. over accelerator memory) is
 * imported as a pinned peer-to-peer attachment against the PCI function, as
 * a hardware HCA would; since this transport moves bytes with the CPU, the
 * DMA-BUF is also vmapped and copies go through that mapping.
 */
#include <linux/dma-buf.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/vmalloc.h>

#include "cnuas_ib.h"

#define CNUAS_IB_ACCESS_SUPPORTED (IB_ACCESS_LOCAL_WRITE |		\
				   IB_ACCESS_REMOTE_WRITE |		\
				   IB_ACCESS_REMOTE_READ |		\
				   IB_ACCESS_REMOTE_ATOMIC |		\
				   IB_ACCESS_RELAXED_ORDERING)

static struct cnuas_ib_mr *cnuas_ib_mr_alloc(struct ib_pd *pd, int access)
{
	struct cnuas_ib_dev *dev = to_cdev(pd->device);
	struct cnuas_ib_mr *mr;
	u32 index;
	int err;

	if (atomic_inc_return(&dev->n_mr) > CNUAS_IB_MAX_MR) {
		err = -ENOMEM;
		goto err_count;
	}
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr) {
		err = -ENOMEM;
		goto err_count;
	}
	/* ib_core sets these too, but only after we return */
	mr->ibmr.device = pd->device;
	mr->ibmr.pd = pd;
	mr->access = access;
	refcount_set(&mr->ref, 1);
	init_completion(&mr->done);
	/* not visible to lookups until published by cnuas_ib_mr_publish() */
	err = xa_alloc_cyclic(&dev->mrs, &index, NULL,
			      XA_LIMIT(1, CNUAS_QPN_MASK), &dev->next_mr,
			      GFP_KERNEL);
	if (err < 0)
		goto err_free;
	mr->ibmr.lkey = (index << 8) | dev->key_gen++;
	mr->ibmr.rkey = mr->ibmr.lkey;
	return mr;

err_free:
	kfree(mr);
err_count:
	atomic_dec(&dev->n_mr);
	return ERR_PTR(err);
}

static void cnuas_ib_mr_publish(struct cnuas_ib_dev *dev,
				struct cnuas_ib_mr *mr)
{
	xa_store(&dev->mrs, mr->ibmr.lkey >> 8, mr, GFP_KERNEL);
}

/* Undo cnuas_ib_mr_alloc (and publish): wait for lookups, free. */
static void cnuas_ib_mr_release(struct cnuas_ib_dev *dev,
				struct cnuas_ib_mr *mr)
{
	xa_erase(&dev->mrs, mr->ibmr.lkey >> 8);
	cnuas_ib_mr_put(mr);
	wait_for_completion(&mr->done);
	if (mr->type == CNUAS_MR_DMABUF && !iosys_map_is_null(&mr->map))
		dma_buf_vunmap_unlocked(to_ib_umem_dmabuf(mr->umem)->attach->dmabuf,
					&mr->map);
	if (mr->umem)
		ib_umem_release(mr->umem);
	kvfree(mr->pages);
	atomic_dec(&dev->n_mr);
	kfree_rcu(mr, rcu);
}

/*
 * Access flags a user or DMA-BUF MR may have: only the supported ones, and
 * anything that lets the transport write the memory (remote write, remote
 * atomic) only with LOCAL_WRITE, which is what makes the pages pinned
 * writable.  ib_core checks the second too; the copies rely on it.
 */
static int cnuas_ib_check_access(int access, int supported)
{
	if (access & ~supported)
		return -EOPNOTSUPP;
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IB_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	return 0;
}

/*
 * A user or DMA-BUF MR over [@iova, @iova + @length) of memory that starts
 * @start into its pages: range checked, not yet published.  @iova and
 * @start must share their offset in a page (ib_core asks the same), so an
 * aligned 8-byte atomic target never straddles two pages.
 */
static struct cnuas_ib_mr *cnuas_ib_mr_new(struct ib_pd *pd, int access,
					   enum cnuas_mr_type type, u64 start,
					   u64 iova, u64 length)
{
	struct cnuas_ib_mr *mr;
	u64 end;

	if (!length || length > U32_MAX ||
	    check_add_overflow(iova, length, &end) ||
	    check_add_overflow(start, length, &end) ||
	    ((start ^ iova) & ~PAGE_MASK))
		return ERR_PTR(-EINVAL);
	mr = cnuas_ib_mr_alloc(pd, access);
	if (IS_ERR(mr))
		return mr;
	mr->type = type;
	mr->iova = iova;
	mr->length = length;
	return mr;
}

struct ib_mr *cnuas_ib_get_dma_mr(struct ib_pd *pd, int access)
{
	struct cnuas_ib_dev *dev = to_cdev(pd->device);
	struct cnuas_ib_mr *mr;

	mr = cnuas_ib_mr_alloc(pd, access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->type = CNUAS_MR_DMA;
	mr->length = U64_MAX;
	cnuas_ib_mr_publish(dev, mr);
	return &mr->ibmr;
}

struct ib_mr *cnuas_ib_reg_user_mr(struct ib_pd *pd, u64 start, u64 length,
				   u64 iova, int access,
				   struct ib_udata *udata)
{
	struct cnuas_ib_dev *dev = to_cdev(pd->device);
	struct sg_page_iter iter;
	struct cnuas_ib_mr *mr;
	struct ib_umem *umem;
	unsigned long i = 0;
	int err;

	err = cnuas_ib_check_access(access, CNUAS_IB_ACCESS_SUPPORTED);
	if (err)
		return ERR_PTR(err);
	mr = cnuas_ib_mr_new(pd, access, CNUAS_MR_USER, start, iova, length);
	if (IS_ERR(mr))
		return ERR_CAST(mr);

	umem = ib_umem_get(pd->device, start, length, access);
	if (IS_ERR(umem)) {
		err = PTR_ERR(umem);
		goto err_mr;
	}
	mr->umem = umem;
	mr->page_off = ib_umem_offset(umem);
	mr->npages = DIV_ROUND_UP(mr->page_off + length, PAGE_SIZE);
	mr->pages = kvcalloc(mr->npages, sizeof(*mr->pages), GFP_KERNEL);
	if (!mr->pages) {
		err = -ENOMEM;
		goto err_mr;
	}
	for_each_sgtable_page(&umem->sgt_append.sgt, &iter, 0) {
		if (i == mr->npages)
			break;
		mr->pages[i++] = sg_page_iter_page(&iter);
	}
	if (i != mr->npages) {
		err = -EFAULT;
		goto err_mr;
	}
	cnuas_ib_mr_publish(dev, mr);
	return &mr->ibmr;

err_mr:
	cnuas_ib_mr_release(dev, mr);
	return ERR_PTR(err);
}

/*
 * Atomics are refused on DMA-BUF MRs: the responder's compare-and-swap is
 * a locked read-modify-write of cacheable memory, which device memory
 * behind a write-combining mapping is not.
 */
#define CNUAS_IB_DMABUF_ACCESS (CNUAS_IB_ACCESS_SUPPORTED & ~IB_ACCESS_REMOTE_ATOMIC)

struct ib_mr *cnuas_ib_reg_user_mr_dmabuf(struct ib_pd *pd, u64 offset,
					  u64 length, u64 iova, int fd,
					  int access,
					  struct uverbs_attr_bundle *attrs)
{
	struct cnuas_ib_dev *dev = to_cdev(pd->device);
	struct ib_umem_dmabuf *umem_dmabuf;
	struct cnuas_ib_mr *mr;
	int err;

	err = cnuas_ib_check_access(access, CNUAS_IB_DMABUF_ACCESS);
	if (err)
		return ERR_PTR(err);
	mr = cnuas_ib_mr_new(pd, access, CNUAS_MR_DMABUF, offset, iova, length);
	if (IS_ERR(mr))
		return ERR_CAST(mr);

	/* ib_core checks the range against the DMA-BUF's size */
	umem_dmabuf = ib_umem_dmabuf_get_pinned_with_dma_device(pd->device,
								dev->ibdev.dev.parent,
								offset, length,
								fd, access);
	if (IS_ERR(umem_dmabuf)) {
		err = PTR_ERR(umem_dmabuf);
		goto err_mr;
	}
	mr->umem = &umem_dmabuf->umem;
	err = dma_buf_vmap_unlocked(umem_dmabuf->attach->dmabuf, &mr->map);
	if (err) {
		iosys_map_clear(&mr->map);
		goto err_mr;
	}
	/* the map covers the whole DMA-BUF; the MR starts @offset into it */
	mr->page_off = offset;
	cnuas_ib_mr_publish(dev, mr);
	return &mr->ibmr;

err_mr:
	cnuas_ib_mr_release(dev, mr);
	return ERR_PTR(err);
}

int cnuas_ib_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	cnuas_ib_mr_release(to_cdev(ibmr->device), to_cmr(ibmr));
	return 0;
}

/**
 * cnuas_ib_mr_get - look up a key for an access
 * @dev: the device
 * @key: lkey or rkey
 * @pd: the PD the MR must belong to
 * @access: IB_ACCESS_* the access needs (0 for a local read)
 * @va: first byte
 * @len: bytes
 *
 * Return: the MR with a reference (cnuas_ib_mr_put() it), or NULL when the
 * key is unknown, of another PD, lacks @access or [@va, @va + @len) is not
 * inside it.
 */
struct cnuas_ib_mr *cnuas_ib_mr_get(struct cnuas_ib_dev *dev, u32 key,
				    struct ib_pd *pd, int access, u64 va,
				    u64 len)
{
	struct cnuas_ib_mr *mr;

	rcu_read_lock();
	mr = xa_load(&dev->mrs, key >> 8);
	if (mr && (mr->ibmr.lkey != key || !refcount_inc_not_zero(&mr->ref)))
		mr = NULL;
	rcu_read_unlock();
	if (!mr)
		return NULL;

	if (mr->ibmr.pd != pd || (access & ~mr->access))
		goto err;
	if (mr->type != CNUAS_MR_DMA &&
	    (va < mr->iova || len > mr->length ||
	     va - mr->iova > mr->length - len))
		goto err;
	return mr;

err:
	cnuas_ib_mr_put(mr);
	return NULL;
}

void cnuas_ib_mr_put(struct cnuas_ib_mr *mr)
{
	if (refcount_dec_and_test(&mr->ref))
		complete(&mr->done);
}

/* Copy between @buf and [@va, @va + @len) of @mr (checked by mr_get). */
void cnuas_ib_mr_copy(struct cnuas_ib_mr *mr, u64 va, void *buf, u32 len,
		      bool to_mr)
{
	u64 off;

	if (mr->type == CNUAS_MR_DMA) {
		void *p = (void *)(uintptr_t)va;

		if (to_mr)
			memcpy(p, buf, len);
		else
			memcpy(buf, p, len);
		return;
	}
	off = va - mr->iova + mr->page_off;
	if (mr->type == CNUAS_MR_DMABUF) {
		if (to_mr)
			iosys_map_memcpy_to(&mr->map, off, buf, len);
		else
			iosys_map_memcpy_from(buf, &mr->map, off, len);
		return;
	}

	while (len) {
		struct page *page = mr->pages[off >> PAGE_SHIFT];
		unsigned int in = off & ~PAGE_MASK;
		unsigned int n = min_t(u64, len, PAGE_SIZE - in);
		void *p = kmap_local_page(page);

		if (to_mr) {
			memcpy(p + in, buf, n);
			flush_dcache_page(page);
		} else {
			memcpy(buf, p + in, n);
		}
		kunmap_local(p);
		buf += n;
		off += n;
		len -= n;
	}
}

/*
 * The 8 bytes at @va for an atomic (aligned, so inside one page).  The
 * caller kunmap_local()s the result; *@page is for flush_dcache_page().
 * Never a DMA-BUF MR: those are registered without REMOTE_ATOMIC, which
 * cnuas_ib_mr_get() demands for an atomic.
 */
void *cnuas_ib_mr_atomic_ptr(struct cnuas_ib_mr *mr, u64 va,
			     struct page **page)
{
	u64 off;

	if (mr->type == CNUAS_MR_DMA) {
		*page = NULL;
		return (void *)(uintptr_t)va;
	}
	off = va - mr->iova + mr->page_off;
	*page = mr->pages[off >> PAGE_SHIFT];
	return kmap_local_page(*page) + (off & ~PAGE_MASK);
}

/**
 * cnuas_ib_sge_copy - copy between a buffer and a list of local SGEs
 * @qp: whose PD the keys must belong to
 * @sge: the list
 * @num_sge: its length
 * @off: byte offset into the list where the copy starts
 * @buf: the other side
 * @len: bytes
 * @to_mr: direction (into the SGEs needs IB_ACCESS_LOCAL_WRITE)
 *
 * Return: 0; -EINVAL when the list is shorter than @off + @len (a length
 * error); -EACCES when a key fails its checks (a protection error).
 */
int cnuas_ib_sge_copy(struct cnuas_ib_qp *qp, const struct cnuas_ib_sge *sge,
		      u32 num_sge, u32 off, void *buf, u32 len, bool to_mr)
{
	u32 i;

	for (i = 0; i < num_sge && len; i++) {
		struct cnuas_ib_mr *mr;
		u32 n;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		n = min(len, sge[i].length - off);
		mr = cnuas_ib_mr_get(qp->dev, sge[i].lkey, qp->ibqp.pd,
				     to_mr ? IB_ACCESS_LOCAL_WRITE : 0,
				     sge[i].addr + off, n);
		if (!mr)
			return -EACCES;
		cnuas_ib_mr_copy(mr, sge[i].addr + off, buf, n, to_mr);
		cnuas_ib_mr_put(mr);
		buf += n;
		len -= n;
		off = 0;
	}
	return len ? -EINVAL : 0;
}
