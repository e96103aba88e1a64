// SPDX-License-Identifier: GPL-2.0
/*
 * cnuasgpu: driver for the cnuasgpu accelerator PCI function (1af4:10f1).
 *
 * The function executes no kernels; it has an identification block, device
 * memory in BAR1, interrupts and a peer link (CnuasLink).  This driver gives
 * each function a character device /dev/cnuasgpuN (class "cnuasgpu") with:
 *
 *  - a page-aligned bump allocator over BAR1, whose allocations belong to the
 *    open file that made them; space is reclaimed from the top once freed
 *    allocations are no longer mapped;
 *  - copies between user memory and allocations, and write-combining mmap()
 *    of allocations (the mmap offset is the allocation's BAR1 offset);
 *  - CnuasLink send and receive, interrupt driven, blocking with a timeout,
 *    with poll() support.  The top 128 KiB of BAR1 hold the transmit and
 *    receive frame buffers and are not handed to the allocator.
 *
 * The register contract is DEVICES.md (cnuasgpu); the user interface is
 * uapi/cnuasgpu.h.
 */
#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/interrupt.h>
#include <linux/iosys-map.h>
#include <linux/io.h>
#include <linux/jiffies.h>
#include <linux/list.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/poll.h>
#include <linux/rwsem.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include "uapi/cnuasgpu.h"

#define DRV_NAME		"cnuasgpu"
#define CNUASGPU_MAX_DEVICES	64

/* BAR0 registers (DEVICES.md, cnuasgpu). */
#define REG_VENDOR_ID		0x000
#define REG_DEVICE_ID		0x004
#define REG_REVISION		0x008
#define REG_FW_VERSION		0x00c
#define REG_GPU_ID		0x010
#define REG_SM_COUNT		0x014
#define REG_LANES_PER_SM	0x018
#define REG_TENSOR_SIZE		0x01c
#define REG_DEVMEM_SIZE_LO	0x020
#define REG_DEVMEM_SIZE_HI	0x024
#define REG_IRQ_STATUS		0x100
#define REG_IRQ_MASK		0x104
#define REG_LINK_STATUS		0x200
#define REG_LINK_TX_OFFSET_LO	0x204
#define REG_LINK_TX_OFFSET_HI	0x208
#define REG_LINK_TX_LEN		0x20c
#define REG_LINK_TX_DOORBELL	0x210
#define REG_LINK_RX_OFFSET_LO	0x214
#define REG_LINK_RX_OFFSET_HI	0x218
#define REG_LINK_RX_BUF_SIZE	0x21c
#define REG_LINK_RX_LEN		0x220
#define REG_LINK_RX_CONSUME	0x224

#define IRQ_LINK_TX_DONE	BIT(0)
#define IRQ_LINK_RX_READY	BIT(1)
#define LINK_STATUS_UP		BIT(0)
#define LINK_STATUS_RX_READY	BIT(1)

/* BAR1 needed before the link buffers are carved out of its top. */
#define CNUASGPU_LINK_MIN_DEVMEM	SZ_1M
/* Largest alignment an allocation may ask for. */
#define CNUASGPU_MAX_ALIGN		SZ_1G
/* Bounce buffer for copies, one chunk at a time. */
#define CNUASGPU_COPY_CHUNK		SZ_64K
/* How often a link wait re-reads LINK_STATUS (the device has no link IRQ). */
#define CNUASGPU_LINK_POLL_MS		10

struct cnuasgpu_file;

/* One allocation of device memory. */
struct cnuasgpu_mem {
	struct list_head node;		/* in cnuasgpu_dev.allocs, by offset */
	struct cnuasgpu_dev *gdev;
	struct cnuasgpu_file *owner;	/* NULL once freed */
	u64 offset;
	u64 size;
	unsigned int maps;		/* VMAs mapping it */
	unsigned int exports;		/* DMA-BUFs of it still open */
	u32 handle;
};

struct cnuasgpu_dev {
	struct device dev;		/* the class device; owns this struct */
	struct cdev cdev;
	struct pci_dev *pdev;
	void __iomem *regs;
	void __iomem *devmem;		/* BAR1, write-combining */
	resource_size_t devmem_phys;
	u64 devmem_size;
	u64 alloc_limit;		/* allocator region is [0, alloc_limit) */
	u64 link_tx_off;
	u64 link_rx_off;
	bool link_capable;
	int minor;
	int irq;

	u32 gpu_id;
	u32 sm_count;
	u32 lanes_per_sm;
	u32 tensor_size;
	u32 fw_version;

	/*
	 * Register and BAR access happens under remove_sem (read); remove sets
	 * @dead, wakes waiters, then takes it for write, after which nothing
	 * touches the hardware again.
	 */
	struct rw_semaphore remove_sem;
	bool dead;

	struct mutex alloc_lock;	/* allocs, handles, used, files */
	struct list_head allocs;
	struct xarray handles;
	u64 used;
	unsigned int exports;		/* DMA-BUFs open, all allocations */
	struct list_head files;

	struct mutex tx_lock;		/* one frame in flight */
	struct mutex rx_lock;		/* one reader of the landed frame */
	wait_queue_head_t wq;
	atomic_t tx_done;		/* TX-complete interrupts seen */
};

/* Per open file. */
struct cnuasgpu_file {
	struct cnuasgpu_dev *gdev;
	struct file *filp;
	struct list_head node;		/* in cnuasgpu_dev.files */
};

static dev_t cnuasgpu_devt;
static DEFINE_IDA(cnuasgpu_ida);

static u32 cnuasgpu_rd(struct cnuasgpu_dev *gdev, unsigned int reg)
{
	return ioread32(gdev->regs + reg);
}

static void cnuasgpu_wr(struct cnuasgpu_dev *gdev, unsigned int reg, u32 val)
{
	iowrite32(val, gdev->regs + reg);
}

static struct cnuasgpu_dev *to_gdev(struct device *dev)
{
	return container_of(dev, struct cnuasgpu_dev, dev);
}

/* Take remove_sem for reading; -ENODEV once the function is gone. */
static int cnuasgpu_enter(struct cnuasgpu_dev *gdev)
{
	down_read(&gdev->remove_sem);
	if (gdev->dead) {
		up_read(&gdev->remove_sem);
		return -ENODEV;
	}
	return 0;
}

static void cnuasgpu_leave(struct cnuasgpu_dev *gdev)
{
	up_read(&gdev->remove_sem);
}

/* ---- allocator ---------------------------------------------------------- */

/* Give the space back; the bump pointer is the end of the last allocation. */
static void cnuasgpu_alloc_release(struct cnuasgpu_dev *gdev,
				   struct cnuasgpu_mem *a)
{
	lockdep_assert_held(&gdev->alloc_lock);
	list_del(&a->node);
	gdev->used -= a->size;
	kfree(a);
}

/* Drop the owner's claim; the space stays reserved while mappings or exports remain. */
static void cnuasgpu_alloc_free(struct cnuasgpu_dev *gdev,
				struct cnuasgpu_mem *a)
{
	lockdep_assert_held(&gdev->alloc_lock);
	xa_erase(&gdev->handles, a->handle);
	a->owner = NULL;
	if (!a->maps && !a->exports)
		cnuasgpu_alloc_release(gdev, a);
}

static struct cnuasgpu_mem *cnuasgpu_lookup(struct cnuasgpu_file *cf,
					    u32 handle)
{
	struct cnuasgpu_mem *a;

	lockdep_assert_held(&cf->gdev->alloc_lock);
	a = xa_load(&cf->gdev->handles, handle);
	return a && a->owner == cf ? a : NULL;
}

static int cnuasgpu_ioc_alloc(struct cnuasgpu_file *cf, void __user *uarg)
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

static int cnuasgpu_ioc_free(struct cnuasgpu_file *cf, void __user *uarg)
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

static int cnuasgpu_ioc_copy(struct cnuasgpu_file *cf, void __user *uarg,
			     bool to_dev)
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

/* ---- CnuasLink ---------------------------------------------------------- */

static bool cnuasgpu_link_up(struct cnuasgpu_dev *gdev)
{
	return cnuasgpu_rd(gdev, REG_LINK_STATUS) & LINK_STATUS_UP;
}

static bool cnuasgpu_rx_ready(struct cnuasgpu_dev *gdev)
{
	return READ_ONCE(gdev->dead) ||
	       (cnuasgpu_rd(gdev, REG_LINK_STATUS) & LINK_STATUS_RX_READY);
}

static int cnuasgpu_check_timeout(u32 timeout_ms)
{
	return timeout_ms > CNUASGPU_LINK_MAX_TIMEOUT_MS ? -EINVAL : 0;
}

static void cnuasgpu_link_arm_rx(struct cnuasgpu_dev *gdev)
{
	cnuasgpu_wr(gdev, REG_LINK_RX_OFFSET_LO, lower_32_bits(gdev->link_rx_off));
	cnuasgpu_wr(gdev, REG_LINK_RX_OFFSET_HI, upper_32_bits(gdev->link_rx_off));
	cnuasgpu_wr(gdev, REG_LINK_RX_BUF_SIZE, CNUASGPU_LINK_MTU);
}

static bool cnuasgpu_tx_settled(struct cnuasgpu_dev *gdev, int seq)
{
	return atomic_read(&gdev->tx_done) != seq || READ_ONCE(gdev->dead);
}

/* Ring the doorbell for a frame already in the TX buffer and wait for it. */
static int cnuasgpu_link_xmit(struct cnuasgpu_dev *gdev, u32 frame_len,
			      u32 timeout_ms)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(timeout_ms);
	int seq = atomic_read(&gdev->tx_done);
	unsigned long slice = msecs_to_jiffies(CNUASGPU_LINK_POLL_MS);
	long ret;

	cnuasgpu_wr(gdev, REG_LINK_TX_OFFSET_LO, lower_32_bits(gdev->link_tx_off));
	cnuasgpu_wr(gdev, REG_LINK_TX_OFFSET_HI, upper_32_bits(gdev->link_tx_off));
	cnuasgpu_wr(gdev, REG_LINK_TX_LEN, frame_len);
	cnuasgpu_wr(gdev, REG_LINK_TX_DOORBELL, 1);

	for (;;) {
		ret = wait_event_interruptible_timeout(gdev->wq,
						       cnuasgpu_tx_settled(gdev, seq),
						       slice);
		if (ret < 0)
			return -EINTR;
		if (atomic_read(&gdev->tx_done) != seq)
			return 0;
		if (READ_ONCE(gdev->dead))
			return -ENODEV;
		/* A send the device could not complete takes the link down. */
		if (!cnuasgpu_link_up(gdev))
			return -ENOLINK;
		if (time_after(jiffies, deadline))
			return -ETIMEDOUT;
	}
}

static int cnuasgpu_ioc_link_send(struct cnuasgpu_file *cf, void __user *uarg)
{
	struct cnuasgpu_dev *gdev = cf->gdev;
	struct cnuasgpu_link_send req;
	__le32 hdr[2];
	void *buf;
	int ret;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.flags || !req.len || req.len > CNUASGPU_LINK_MAX_PAYLOAD)
		return -EINVAL;
	ret = cnuasgpu_check_timeout(req.timeout_ms);
	if (ret)
		return ret;
	if (!gdev->link_capable)
		return -EOPNOTSUPP;

	buf = kvmalloc(req.len, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	if (copy_from_user(buf, u64_to_user_ptr(req.user_ptr), req.len)) {
		ret = -EFAULT;
		goto out_free;
	}
	hdr[0] = cpu_to_le32(req.dst_gpu_id);
	hdr[1] = cpu_to_le32(gdev->gpu_id);

	ret = cnuasgpu_enter(gdev);
	if (ret)
		goto out_free;
	if (mutex_lock_interruptible(&gdev->tx_lock)) {
		ret = -EINTR;
		goto out_leave;
	}
	/* With the link down the doorbell would do nothing at all. */
	if (!cnuasgpu_link_up(gdev)) {
		ret = -ENOLINK;
		goto out_unlock;
	}
	memcpy_toio(gdev->devmem + gdev->link_tx_off, hdr, sizeof(hdr));
	memcpy_toio(gdev->devmem + gdev->link_tx_off + sizeof(hdr), buf,
		    req.len);
	wmb();	/* the frame is in BAR1 before the doorbell */
	ret = cnuasgpu_link_xmit(gdev, req.len + sizeof(hdr), req.timeout_ms);
out_unlock:
	mutex_unlock(&gdev->tx_lock);
out_leave:
	cnuasgpu_leave(gdev);
out_free:
	kvfree(buf);
	return ret;
}

/*
 * Wait for a landed frame; with rx_lock held and the frame waiting, returns
 * its length.  Malformed frames (shorter than the header) are released and
 * skipped.
 */
static int cnuasgpu_link_wait_frame(struct cnuasgpu_dev *gdev,
				    const struct cnuasgpu_link_recv *req)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(req->timeout_ms);
	long left;
	u32 len;

	for (;;) {
		if (READ_ONCE(gdev->dead))
			return -ENODEV;
		if (cnuasgpu_rd(gdev, REG_LINK_STATUS) & LINK_STATUS_RX_READY) {
			rmb();	/* LINK_RX_LEN and the bytes after the status */
			len = cnuasgpu_rd(gdev, REG_LINK_RX_LEN);
			if (len >= CNUASGPU_LINK_HDR_LEN &&
			    len <= CNUASGPU_LINK_MTU)
				return len;
			dev_dbg(&gdev->dev, "dropping malformed %u-byte frame\n",
				len);
			cnuasgpu_wr(gdev, REG_LINK_RX_CONSUME, 1);
			continue;
		}
		if (req->flags & CNUASGPU_LINK_RECV_NONBLOCK)
			return -EAGAIN;
		left = (long)deadline - (long)jiffies;
		if (left <= 0)
			return -ETIMEDOUT;
		left = wait_event_interruptible_timeout(gdev->wq,
							cnuasgpu_rx_ready(gdev),
							left);
		if (left < 0)
			return -EINTR;
	}
}

static int cnuasgpu_ioc_link_recv(struct cnuasgpu_file *cf, void __user *uarg)
{
	struct cnuasgpu_dev *gdev = cf->gdev;
	struct cnuasgpu_link_recv req;
	__le32 hdr[2];
	void *buf;
	int len, ret;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if ((req.flags & ~CNUASGPU_LINK_RECV_NONBLOCK) || req.len ||
	    req.src_gpu_id || req.dst_gpu_id)
		return -EINVAL;
	ret = cnuasgpu_check_timeout(req.timeout_ms);
	if (ret)
		return ret;
	if (!gdev->link_capable)
		return -EOPNOTSUPP;

	buf = kvmalloc(CNUASGPU_LINK_MAX_PAYLOAD, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	ret = cnuasgpu_enter(gdev);
	if (ret)
		goto out_free;
	if (mutex_lock_interruptible(&gdev->rx_lock)) {
		ret = -EINTR;
		goto out_leave;
	}
	len = cnuasgpu_link_wait_frame(gdev, &req);
	if (len < 0) {
		ret = len;
		goto out_unlock;
	}
	memcpy_fromio(hdr, gdev->devmem + gdev->link_rx_off, sizeof(hdr));
	req.dst_gpu_id = le32_to_cpu(hdr[0]);
	req.src_gpu_id = le32_to_cpu(hdr[1]);
	req.len = len - sizeof(hdr);
	if (req.len > req.buf_size) {
		/* Too small: say how much is needed, keep the frame queued. */
		ret = -EMSGSIZE;
	} else {
		memcpy_fromio(buf, gdev->devmem + gdev->link_rx_off +
			      sizeof(hdr), req.len);
		if (copy_to_user(u64_to_user_ptr(req.user_ptr), buf, req.len))
			ret = -EFAULT;	/* the frame stays for a retry */
		else
			cnuasgpu_wr(gdev, REG_LINK_RX_CONSUME, 1);
	}
out_unlock:
	mutex_unlock(&gdev->rx_lock);
out_leave:
	cnuasgpu_leave(gdev);
out_free:
	kvfree(buf);
	if (ret == 0 || ret == -EMSGSIZE) {
		if (copy_to_user(uarg, &req, sizeof(req)))
			return -EFAULT;
	}
	return ret;
}

static irqreturn_t cnuasgpu_irq(int irq, void *data)
{
	struct cnuasgpu_dev *gdev = data;
	u32 status = cnuasgpu_rd(gdev, REG_IRQ_STATUS);

	/* Not ours (shared INTx), or the function is gone (all ones). */
	if (!status || status == ~0u)
		return IRQ_NONE;
	cnuasgpu_wr(gdev, REG_IRQ_STATUS, status);
	if (status & IRQ_LINK_TX_DONE)
		atomic_inc(&gdev->tx_done);
	wake_up_interruptible_all(&gdev->wq);
	return IRQ_HANDLED;
}

/* ---- file operations ---------------------------------------------------- */

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

/* ---- DMA-BUF export ------------------------------------------------------ */

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

static int cnuasgpu_ioc_export(struct cnuasgpu_file *cf, void __user *uarg)
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
	default:
		return -ENOTTY;
	}
}

static __poll_t cnuasgpu_poll(struct file *filp, poll_table *wait)
{
	struct cnuasgpu_file *cf = filp->private_data;
	struct cnuasgpu_dev *gdev = cf->gdev;
	__poll_t mask = 0;
	u32 status;

	poll_wait(filp, &gdev->wq, wait);
	if (cnuasgpu_enter(gdev))
		return EPOLLERR | EPOLLHUP;
	status = cnuasgpu_rd(gdev, REG_LINK_STATUS);
	cnuasgpu_leave(gdev);
	if (status & LINK_STATUS_RX_READY)
		mask |= EPOLLIN | EPOLLRDNORM;
	if (status & LINK_STATUS_UP)
		mask |= EPOLLOUT | EPOLLWRNORM;
	return mask;
}

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

static const struct vm_operations_struct cnuasgpu_vm_ops = {
	.open = cnuasgpu_vm_open,
	.close = cnuasgpu_vm_close,
};

static int cnuasgpu_mmap(struct file *filp, struct vm_area_struct *vma)
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

/* ---- sysfs -------------------------------------------------------------- */

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
	status = cnuasgpu_rd(gdev, REG_LINK_STATUS);
	cnuasgpu_leave(gdev);
	return sysfs_emit(buf, "%u\n", !!(status & bit));
}

static ssize_t link_up_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	return cnuasgpu_show_link_bit(dev, buf, LINK_STATUS_UP);
}
static DEVICE_ATTR_RO(link_up);

static ssize_t link_rx_ready_show(struct device *dev,
				  struct device_attribute *attr, char *buf)
{
	return cnuasgpu_show_link_bit(dev, buf, LINK_STATUS_RX_READY);
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
ATTRIBUTE_GROUPS(cnuasgpu);

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

	if (cnuasgpu_rd(gdev, REG_VENDOR_ID) != PCI_VENDOR_ID_REDHAT_QUMRANET ||
	    cnuasgpu_rd(gdev, REG_DEVICE_ID) != pdev->device) {
		dev_err(&pdev->dev, "identification registers do not match\n");
		return -ENODEV;
	}
	gdev->fw_version = cnuasgpu_rd(gdev, REG_FW_VERSION);
	gdev->gpu_id = cnuasgpu_rd(gdev, REG_GPU_ID);
	gdev->sm_count = cnuasgpu_rd(gdev, REG_SM_COUNT);
	gdev->lanes_per_sm = cnuasgpu_rd(gdev, REG_LANES_PER_SM);
	gdev->tensor_size = cnuasgpu_rd(gdev, REG_TENSOR_SIZE);
	gdev->devmem_size = cnuasgpu_rd(gdev, REG_DEVMEM_SIZE_LO) |
			    (u64)cnuasgpu_rd(gdev, REG_DEVMEM_SIZE_HI) << 32;
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
	cnuasgpu_wr(gdev, REG_IRQ_MASK, 0);
	cnuasgpu_wr(gdev, REG_IRQ_STATUS, ~0u);
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
	cnuasgpu_wr(gdev, REG_IRQ_MASK, IRQ_LINK_TX_DONE | IRQ_LINK_RX_READY);

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
	cnuasgpu_wr(gdev, REG_IRQ_MASK, 0);
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

	cnuasgpu_wr(gdev, REG_IRQ_MASK, 0);
	free_irq(gdev->irq, gdev);
	pci_free_irq_vectors(pdev);
	ida_free(&cnuasgpu_ida, gdev->minor);
	/* Open files keep the struct (not the hardware) until they close. */
	put_device(&gdev->dev);
}

static const struct pci_device_id cnuasgpu_ids[] = {
	{ PCI_DEVICE(PCI_VENDOR_ID_REDHAT_QUMRANET, 0x10f1) },
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
