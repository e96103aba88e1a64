/* SPDX-License-Identifier: GPL-2.0 */
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
 *    receive frame buffers and are not handed to the allocator;
 *  - DMA-BUF export of allocations for peer-to-peer importers.
 *
 * The register contract is docs/devices.md (cnuasgpu; cnuasgpu_regs.h); the user
 * interface is uapi/cnuasgpu.h.
 *
 * Files by role:
 *   cnuasgpu_main.c    PCI probe/remove, character device, ioctl dispatch,
 *                      INFO, module init
 *   cnuasgpu_mem.c     BAR1 allocator, ALLOC/FREE, copies, mmap()
 *   cnuasgpu_link.c    CnuasLink send/receive, poll(), the interrupt
 *   cnuasgpu_dmabuf.c  DMA-BUF export
 *   cnuasgpu_sysfs.c   class device attributes
 */
#ifndef CNUASGPU_PRIV_H
#define CNUASGPU_PRIV_H

#include <linux/atomic.h>
#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/list.h>
#include <linux/mm_types.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/poll.h>
#include <linux/rwsem.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include "cnuasgpu_regs.h"
#include "uapi/cnuasgpu.h"

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

static inline u32 cnuasgpu_rd(struct cnuasgpu_dev *gdev, unsigned int reg)
{
	return ioread32(gdev->regs + reg);
}

static inline void cnuasgpu_wr(struct cnuasgpu_dev *gdev, unsigned int reg,
			       u32 val)
{
	iowrite32(val, gdev->regs + reg);
}

static inline struct cnuasgpu_dev *to_gdev(struct device *dev)
{
	return container_of(dev, struct cnuasgpu_dev, dev);
}

/* Take remove_sem for reading; -ENODEV once the function is gone. */
static inline int cnuasgpu_enter(struct cnuasgpu_dev *gdev)
{
	down_read(&gdev->remove_sem);
	if (gdev->dead) {
		up_read(&gdev->remove_sem);
		return -ENODEV;
	}
	return 0;
}

static inline void cnuasgpu_leave(struct cnuasgpu_dev *gdev)
{
	up_read(&gdev->remove_sem);
}

/* cnuasgpu_mem.c */
void cnuasgpu_alloc_release(struct cnuasgpu_dev *gdev, struct cnuasgpu_mem *a);
void cnuasgpu_alloc_free(struct cnuasgpu_dev *gdev, struct cnuasgpu_mem *a);
struct cnuasgpu_mem *cnuasgpu_lookup(struct cnuasgpu_file *cf, u32 handle);
int cnuasgpu_ioc_alloc(struct cnuasgpu_file *cf, void __user *uarg);
int cnuasgpu_ioc_free(struct cnuasgpu_file *cf, void __user *uarg);
int cnuasgpu_ioc_copy(struct cnuasgpu_file *cf, void __user *uarg, bool to_dev);
int cnuasgpu_mmap(struct file *filp, struct vm_area_struct *vma);

/* cnuasgpu_link.c */
bool cnuasgpu_link_up(struct cnuasgpu_dev *gdev);
void cnuasgpu_link_arm_rx(struct cnuasgpu_dev *gdev);
int cnuasgpu_ioc_link_send(struct cnuasgpu_file *cf, void __user *uarg);
int cnuasgpu_ioc_link_recv(struct cnuasgpu_file *cf, void __user *uarg);
__poll_t cnuasgpu_poll(struct file *filp, poll_table *wait);
irqreturn_t cnuasgpu_irq(int irq, void *data);

/* cnuasgpu_dmabuf.c */
int cnuasgpu_ioc_export(struct cnuasgpu_file *cf, void __user *uarg);

/* cnuasgpu_sysfs.c */
extern const struct attribute_group *cnuasgpu_groups[];

#endif /* CNUASGPU_PRIV_H */
