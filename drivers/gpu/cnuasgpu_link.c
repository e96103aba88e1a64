// SPDX-License-Identifier: GPL-2.0
/*
 * CnuasLink on cnuasgpu: one frame buffer each way at the top of BAR1, a
 * doorbell and a TX-complete interrupt for sending, RX-ready (interrupt and
 * LINK_STATUS) for receiving.  Sends and receives block with a timeout;
 * poll() reports a landed frame.
 */
#include <linux/jiffies.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "cnuasgpu_priv.h"

/* How often a link wait re-reads LINK_STATUS (the device has no link IRQ). */
#define CNUASGPU_LINK_POLL_MS		10

bool cnuasgpu_link_up(struct cnuasgpu_dev *gdev)
{
	return cnuasgpu_rd(gdev, CNUASGPU_REG_LINK_STATUS) &
	       CNUASGPU_LINK_STATUS_UP;
}

static bool cnuasgpu_rx_ready(struct cnuasgpu_dev *gdev)
{
	return READ_ONCE(gdev->dead) ||
	       (cnuasgpu_rd(gdev, CNUASGPU_REG_LINK_STATUS) &
		CNUASGPU_LINK_STATUS_RX_READY);
}

/* What both link ioctls check after their own fields: timeout, then link. */
static int cnuasgpu_link_check(struct cnuasgpu_dev *gdev, u32 timeout_ms)
{
	if (timeout_ms > CNUASGPU_LINK_MAX_TIMEOUT_MS)
		return -EINVAL;
	if (!gdev->link_capable)
		return -EOPNOTSUPP;
	return 0;
}

/* Enter the device and take one direction's @lock: cnuasgpu_link_unlock(). */
static int cnuasgpu_link_lock(struct cnuasgpu_dev *gdev, struct mutex *lock)
{
	int ret;

	ret = cnuasgpu_enter(gdev);
	if (ret)
		return ret;
	if (mutex_lock_interruptible(lock)) {
		cnuasgpu_leave(gdev);
		return -EINTR;
	}
	return 0;
}

static void cnuasgpu_link_unlock(struct cnuasgpu_dev *gdev,
				 struct mutex *lock)
{
	mutex_unlock(lock);
	cnuasgpu_leave(gdev);
}

void cnuasgpu_link_arm_rx(struct cnuasgpu_dev *gdev)
{
	cnuasgpu_wr(gdev, CNUASGPU_REG_LINK_RX_OFFSET_LO,
		    lower_32_bits(gdev->link_rx_off));
	cnuasgpu_wr(gdev, CNUASGPU_REG_LINK_RX_OFFSET_HI,
		    upper_32_bits(gdev->link_rx_off));
	cnuasgpu_wr(gdev, CNUASGPU_REG_LINK_RX_BUF_SIZE, CNUASGPU_LINK_MTU);
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

	cnuasgpu_wr(gdev, CNUASGPU_REG_LINK_TX_OFFSET_LO,
		    lower_32_bits(gdev->link_tx_off));
	cnuasgpu_wr(gdev, CNUASGPU_REG_LINK_TX_OFFSET_HI,
		    upper_32_bits(gdev->link_tx_off));
	cnuasgpu_wr(gdev, CNUASGPU_REG_LINK_TX_LEN, frame_len);
	cnuasgpu_wr(gdev, CNUASGPU_REG_LINK_TX_DOORBELL, 1);

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

int cnuasgpu_ioc_link_send(struct cnuasgpu_file *cf, void __user *uarg)
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
	ret = cnuasgpu_link_check(gdev, req.timeout_ms);
	if (ret)
		return ret;

	buf = kvmalloc(req.len, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	if (copy_from_user(buf, u64_to_user_ptr(req.user_ptr), req.len)) {
		ret = -EFAULT;
		goto out_free;
	}
	hdr[0] = cpu_to_le32(req.dst_gpu_id);
	hdr[1] = cpu_to_le32(gdev->gpu_id);

	ret = cnuasgpu_link_lock(gdev, &gdev->tx_lock);
	if (ret)
		goto out_free;
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
	cnuasgpu_link_unlock(gdev, &gdev->tx_lock);
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
		if (cnuasgpu_rd(gdev, CNUASGPU_REG_LINK_STATUS) &
		    CNUASGPU_LINK_STATUS_RX_READY) {
			rmb();	/* LINK_RX_LEN and the bytes after the status */
			len = cnuasgpu_rd(gdev, CNUASGPU_REG_LINK_RX_LEN);
			if (len >= CNUASGPU_LINK_HDR_LEN &&
			    len <= CNUASGPU_LINK_MTU)
				return len;
			dev_dbg(&gdev->dev, "dropping malformed %u-byte frame\n",
				len);
			cnuasgpu_wr(gdev, CNUASGPU_REG_LINK_RX_CONSUME, 1);
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

int cnuasgpu_ioc_link_recv(struct cnuasgpu_file *cf, void __user *uarg)
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
	ret = cnuasgpu_link_check(gdev, req.timeout_ms);
	if (ret)
		return ret;

	buf = kvmalloc(CNUASGPU_LINK_MAX_PAYLOAD, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	ret = cnuasgpu_link_lock(gdev, &gdev->rx_lock);
	if (ret)
		goto out_free;
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
			cnuasgpu_wr(gdev, CNUASGPU_REG_LINK_RX_CONSUME, 1);
	}
out_unlock:
	cnuasgpu_link_unlock(gdev, &gdev->rx_lock);
out_free:
	kvfree(buf);
	if (ret == 0 || ret == -EMSGSIZE) {
		if (copy_to_user(uarg, &req, sizeof(req)))
			return -EFAULT;
	}
	return ret;
}

irqreturn_t cnuasgpu_irq(int irq, void *data)
{
	struct cnuasgpu_dev *gdev = data;
	u32 status = cnuasgpu_rd(gdev, CNUASGPU_REG_IRQ_STATUS);

	/* Not ours (shared INTx), or the function is gone (all ones). */
	if (!status || status == ~0u)
		return IRQ_NONE;
	cnuasgpu_wr(gdev, CNUASGPU_REG_IRQ_STATUS, status);
	if (status & CNUASGPU_IRQ_LINK_TX_DONE)
		atomic_inc(&gdev->tx_done);
	wake_up_interruptible_all(&gdev->wq);
	return IRQ_HANDLED;
}

__poll_t cnuasgpu_poll(struct file *filp, poll_table *wait)
{
	struct cnuasgpu_file *cf = filp->private_data;
	struct cnuasgpu_dev *gdev = cf->gdev;
	__poll_t mask = 0;
	u32 status;

	poll_wait(filp, &gdev->wq, wait);
	if (cnuasgpu_enter(gdev))
		return EPOLLERR | EPOLLHUP;
	status = cnuasgpu_rd(gdev, CNUASGPU_REG_LINK_STATUS);
	cnuasgpu_leave(gdev);
	if (status & CNUASGPU_LINK_STATUS_RX_READY)
		mask |= EPOLLIN | EPOLLRDNORM;
	if (status & CNUASGPU_LINK_STATUS_UP)
		mask |= EPOLLOUT | EPOLLWRNORM;
	return mask;
}
