// SPDX-License-Identifier: GPL-2.0
/*
 * cnuasgpu_host asynchronous queues: one per open file, a ring of
 * queue_depth ops.  SUBMIT checks a batch whole and queues it or nothing;
 * a kernel worker runs the ops one after another in sequence order (a user
 * host side through the submitter's address space, a pinned one through
 * the pinned pages); POLL and WAIT take completions oldest first; a slot is
 * free again once its completion is taken.  Closing the file cancels what
 * has not run and stops the running op at its next chunk, without waiting
 * for it: the work holds the file's state (cgh_file.ref) while it is queued
 * or running.
 */
#include <linux/kthread.h>
#include <linux/math64.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "cnuasgpu_host_priv.h"

/* The ring slot of op @seq (sequence numbers start at 1). */
static u32 cgh_slot(u64 seq)
{
	u32 rem;

	div_u64_rem(seq - 1, cgh_params.queue_depth, &rem);
	return rem;
}

static void cgh_queue_work(struct work_struct *work);

int cgh_queue_init(struct cgh_file *cf)
{
	spin_lock_init(&cf->qlock);
	mutex_init(&cf->submit_lock);
	mutex_init(&cf->reap_lock);
	init_waitqueue_head(&cf->wq);
	INIT_WORK(&cf->work, cgh_queue_work);
	if (!cgh_has(CNUASGPU_CAP_ASYNC))
		return 0;
	cf->ops = kvcalloc(cgh_params.queue_depth, sizeof(*cf->ops),
			   GFP_KERNEL_ACCOUNT);
	cf->comps = kvcalloc(cgh_params.queue_depth, sizeof(*cf->comps),
			     GFP_KERNEL_ACCOUNT);
	if (!cf->ops || !cf->comps) {
		kvfree(cf->ops);
		kvfree(cf->comps);
		return -ENOMEM;
	}
	return 0;
}

/* Let go of what a prepared op holds. */
static void cgh_op_drop(struct cgh_op *op)
{
	cgh_mem_put(op->a);
	if (op->pin)
		cgh_pin_put(op->pin);
	if (op->mm)
		mmdrop(op->mm);
	op->a = NULL;
	op->pin = NULL;
	op->mm = NULL;
}

/*
 * Check one op of a batch and take what it names: the allocation, the pin,
 * the submitter's address space for a user host side.
 */
static int cgh_op_prepare(struct cgh_file *cf, const struct cnuasgpu_op *u,
			  struct cgh_op *op)
{
	bool pinned = u->flags & CNUASGPU_OP_F_PINNED;
	struct cgh_dev *cdev = cf->cdev;
	struct cgh_pin *pin = NULL;
	struct cgh_mem *a;
	int ret = 0;

	if (pinned && !cgh_has(CNUASGPU_CAP_PINNED))
		return -EOPNOTSUPP;
	if (u->reserved || (u->flags & ~CNUASGPU_OP_F_PINNED) || !u->length)
		return -EINVAL;
	switch (u->opcode) {
	case CNUASGPU_OP_COPY_TO_DEV:
	case CNUASGPU_OP_COPY_FROM_DEV:
		if (u->value || (!pinned && u->pin_handle))
			return -EINVAL;
		if (u->host + u->length < u->host)
			return -EINVAL;
		break;
	case CNUASGPU_OP_FILL:
		if (u->flags || u->pin_handle || u->host || u->value > U8_MAX)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}

	mutex_lock(&cdev->lock);
	a = cgh_lookup_mem(cf, u->handle);
	if (pinned)
		pin = cgh_lookup_pin(cf, u->pin_handle);
	if (!a || (pinned && !pin))
		ret = -ENOENT;
	else if (u->offset >= a->size || u->length > a->size - u->offset)
		ret = -EINVAL;
	else if (pin && (u->host >= pin->length ||
			 u->length > pin->length - u->host))
		ret = -EINVAL;
	if (!ret) {
		a->users++;
		if (pin)
			pin->users++;
	}
	mutex_unlock(&cdev->lock);
	if (ret)
		return ret;

	op->uop = *u;
	op->a = a;
	op->pin = pin;
	op->mm = NULL;
	if (u->opcode != CNUASGPU_OP_FILL && !pinned) {
		op->mm = current->mm;
		mmgrab(op->mm);
	}
	return 0;
}

int cgh_ioc_submit(struct cgh_file *cf, void __user *uarg)
{
	u32 depth = cgh_params.queue_depth;
	struct cnuasgpu_submit req;
	struct cnuasgpu_op *uops;
	struct cgh_op *prep;
	u32 i, n = 0;
	u64 last;
	int ret;

	BUILD_BUG_ON(sizeof(struct cnuasgpu_op) != 56);
	BUILD_BUG_ON(offsetof(struct cnuasgpu_op, user_data) != 40);
	BUILD_BUG_ON(sizeof(struct cnuasgpu_submit) != 40);
	BUILD_BUG_ON(offsetof(struct cnuasgpu_submit, first_seq) != 24);
	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.size != sizeof(req) || req.op_size != sizeof(*uops) ||
	    !req.count || req.count > cgh_params.batch_max || req.flags ||
	    req.first_seq || req.reserved)
		return -EINVAL;

	/* count <= batch_max <= 1024: both arrays are small */
	uops = kvmalloc_array(req.count, sizeof(*uops), GFP_KERNEL);
	prep = kvcalloc(req.count, sizeof(*prep), GFP_KERNEL);
	if (!uops || !prep) {
		ret = -ENOMEM;
		goto out_free;
	}
	if (copy_from_user(uops, u64_to_user_ptr(req.ops_ptr),
			   array_size(req.count, sizeof(*uops)))) {
		ret = -EFAULT;
		goto out_free;
	}

	/* one submitter at a time: @submitted moves only here */
	mutex_lock(&cf->submit_lock);
	for (n = 0; n < req.count; n++) {
		ret = cgh_op_prepare(cf, &uops[n], &prep[n]);
		if (ret)
			goto out_unwind;
	}
	spin_lock(&cf->qlock);
	last = cf->submitted;
	ret = req.count > depth - (u32)(last - cf->reaped) ? -EAGAIN : 0;
	spin_unlock(&cf->qlock);
	if (ret)
		goto out_unwind;
	req.first_seq = last + 1;
	if (copy_to_user(uarg, &req, sizeof(req))) {
		ret = -EFAULT;
		goto out_unwind;
	}
	/* these slots were taken (reaped) and no one else writes them */
	for (i = 0; i < req.count; i++)
		cf->ops[cgh_slot(last + 1 + i)] = prep[i];
	atomic_add(req.count, &cf->cdev->inflight);
	spin_lock(&cf->qlock);
	cf->submitted = last + req.count;
	spin_unlock(&cf->qlock);
	cgh_file_get(cf);		/* the work's, while queued */
	if (!queue_work(cgh_wq, &cf->work))
		cgh_file_put(cf);	/* already queued: that one holds one */
	mutex_unlock(&cf->submit_lock);
	goto out_free;

out_unwind:
	while (n--)
		cgh_op_drop(&prep[n]);
	mutex_unlock(&cf->submit_lock);
out_free:
	kvfree(prep);
	kvfree(uops);
	return ret;
}

/* The user side of a copy, in chunks, through the submitter's address space. */
static int cgh_op_copy_user(struct cgh_op *op, u8 *dev, u64 done, size_t len)
{
	u8 __user *uptr = u64_to_user_ptr(op->uop.host + done);
	unsigned long left;

	if (op->uop.opcode == CNUASGPU_OP_COPY_TO_DEV)
		left = cgh_copy_from_user(dev + done, uptr, len);
	else
		left = copy_to_user(uptr, dev + done, len);
	return left ? -EFAULT : 0;
}

/* Run one op on the worker; its status. */
static int cgh_op_run(struct cgh_file *cf, struct cgh_op *op)
{
	const struct cnuasgpu_op *u = &op->uop;
	u8 *dev = cf->cdev->vaddr + op->a->offset + u->offset;
	u64 done = 0;
	int ret = 0;

	/* the submitter may be gone: its memory with it */
	if (op->mm) {
		if (!mmget_not_zero(op->mm))
			return -EFAULT;
		kthread_use_mm(op->mm);
	}
	while (done < u->length) {
		size_t len = min_t(u64, u->length - done, CGH_CHUNK);

		if (READ_ONCE(cf->closing)) {
			ret = -ECANCELED;
			break;
		}
		if (u->opcode == CNUASGPU_OP_FILL)
			memset(dev + done, u->value, len);
		else if (op->pin)
			cgh_pin_copy(op->pin, u->host + done, dev + done, len,
				     u->opcode == CNUASGPU_OP_COPY_TO_DEV);
		else
			ret = cgh_op_copy_user(op, dev, done, len);
		if (ret)
			break;
		done += len;
		cond_resched();
	}
	if (op->mm) {
		kthread_unuse_mm(op->mm);
		mmput(op->mm);
	}
	return ret;
}

/*
 * Run (or, once the file is closed, cancel) every op submitted, in order;
 * then drop the work's reference, maybe the last one.
 */
static void cgh_queue_work(struct work_struct *work)
{
	struct cgh_file *cf = container_of(work, struct cgh_file, work);

	for (;;) {
		struct cnuasgpu_completion *c;
		struct cgh_op *op;
		bool cancel;
		u64 seq;
		int status;

		spin_lock(&cf->qlock);
		if (cf->completed == cf->submitted) {
			spin_unlock(&cf->qlock);
			break;
		}
		seq = cf->completed + 1;
		cancel = cf->closing;
		spin_unlock(&cf->qlock);

		op = &cf->ops[cgh_slot(seq)];
		c = &cf->comps[cgh_slot(seq)];
		status = cancel ? -ECANCELED : cgh_op_run(cf, op);
		c->seq = seq;
		c->user_data = op->uop.user_data;
		c->status = status;
		c->opcode = op->uop.opcode;
		cgh_op_drop(op);
		atomic_dec(&cf->cdev->inflight);
		spin_lock(&cf->qlock);
		cf->completed = seq;
		spin_unlock(&cf->qlock);
		wake_up_interruptible(&cf->wq);
		cond_resched();
	}
	cgh_file_put(cf);	/* @cf may be gone from here on */
}

/*
 * Close: nothing more is submitted.  Work not started yet is cancelled (its
 * ops are let go with the last reference, cgh_queue_free()); a running
 * worker cancels what follows its op itself.  Never waits for the worker:
 * the running op may be blocked in a page fault of the submitter's memory
 * (a FUSE server that does not answer, a userfaultfd range nobody serves)
 * for as long as that fault takes.
 */
void cgh_queue_release(struct cgh_file *cf)
{
	if (!cf->ops)
		return;
	spin_lock(&cf->qlock);
	WRITE_ONCE(cf->closing, true);
	spin_unlock(&cf->qlock);
	if (cancel_work(&cf->work))
		cgh_file_put(cf);	/* the queued work's: the file still holds one */
}

/* The last reference: ops never run (their work was cancelled) let go. */
void cgh_queue_free(struct cgh_file *cf)
{
	u64 seq;

	if (!cf->ops)
		return;
	for (seq = cf->completed + 1; seq <= cf->submitted; seq++) {
		cgh_op_drop(&cf->ops[cgh_slot(seq)]);
		atomic_dec(&cf->cdev->inflight);
	}
	kvfree(cf->ops);
	kvfree(cf->comps);
}

static bool cgh_completed(struct cgh_file *cf, u64 seq)
{
	bool done;

	spin_lock(&cf->qlock);
	done = cf->completed >= seq;
	spin_unlock(&cf->qlock);
	return done;
}

/* WAIT: until op @seq has completed; 0, -ETIMEDOUT or -EINTR. */
static int cgh_wait_seq(struct cgh_file *cf, u64 seq, u32 timeout_ms)
{
	long left;

	if (cgh_completed(cf, seq))
		return 0;
	if (!timeout_ms)
		return -ETIMEDOUT;
	left = wait_event_interruptible_timeout(cf->wq, cgh_completed(cf, seq),
						msecs_to_jiffies(timeout_ms));
	if (left < 0)
		return -EINTR;
	return left ? 0 : -ETIMEDOUT;
}

/* POLL (@wait false) and WAIT: take up to max completions, oldest first. */
int cgh_ioc_reap(struct cgh_file *cf, void __user *uarg, bool wait)
{
	u32 depth = cgh_params.queue_depth;
	struct cnuasgpu_completion __user *ucomps;
	size_t csz = sizeof(struct cnuasgpu_completion);
	struct cnuasgpu_reap req;
	u64 submitted, completed, reaped;
	u32 n, first, part;
	int ret;

	BUILD_BUG_ON(sizeof(struct cnuasgpu_completion) != 24);
	BUILD_BUG_ON(sizeof(struct cnuasgpu_reap) != 64);
	BUILD_BUG_ON(offsetof(struct cnuasgpu_reap, count) != 32);
	BUILD_BUG_ON(offsetof(struct cnuasgpu_reap, reaped) != 56);
	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.size != sizeof(req) || req.comp_size != csz ||
	    req.max > depth || req.flags || req.count || req.submitted ||
	    req.completed || req.reaped)
		return -EINVAL;
	if (!wait && (req.seq || req.timeout_ms))
		return -EINVAL;
	if (wait) {
		spin_lock(&cf->qlock);
		submitted = cf->submitted;
		spin_unlock(&cf->qlock);
		if (!req.seq || req.seq > submitted ||
		    req.timeout_ms > CNUASGPU_WAIT_MAX_TIMEOUT_MS)
			return -EINVAL;
		ret = cgh_wait_seq(cf, req.seq, req.timeout_ms);
		if (ret)
			return ret;
	}

	/* one taker at a time: @reaped moves only here */
	mutex_lock(&cf->reap_lock);
	spin_lock(&cf->qlock);
	submitted = cf->submitted;
	completed = cf->completed;
	reaped = cf->reaped;
	spin_unlock(&cf->qlock);
	n = min_t(u64, req.max, completed - reaped);
	ucomps = u64_to_user_ptr(req.comps_ptr);
	ret = 0;
	if (n) {
		/* completions reaped+1 .. reaped+n, in at most two runs of the ring */
		first = cgh_slot(reaped + 1);
		part = min(n, depth - first);
		if (copy_to_user(ucomps, &cf->comps[first], part * csz) ||
		    copy_to_user(ucomps + part, &cf->comps[0], (n - part) * csz))
			ret = -EFAULT;
	}
	if (!ret) {
		req.count = n;
		req.submitted = submitted;
		req.completed = completed;
		req.reaped = reaped + n;
		if (copy_to_user(uarg, &req, sizeof(req)))
			ret = -EFAULT;
	}
	if (!ret && n) {
		spin_lock(&cf->qlock);
		cf->reaped = reaped + n;
		spin_unlock(&cf->qlock);
	}
	mutex_unlock(&cf->reap_lock);
	if (!ret && n)
		wake_up_interruptible(&cf->wq);	/* room: EPOLLOUT */
	return ret;
}

/* EPOLLIN: a completion waits to be taken; EPOLLOUT: room for an op. */
__poll_t cgh_poll(struct file *filp, poll_table *wait)
{
	struct cgh_file *cf = filp->private_data;
	__poll_t mask = 0;

	if (!cgh_has(CNUASGPU_CAP_ASYNC))
		return EPOLLERR;
	poll_wait(filp, &cf->wq, wait);
	spin_lock(&cf->qlock);
	if (cf->completed > cf->reaped)
		mask |= EPOLLIN | EPOLLRDNORM;
	if (cf->submitted - cf->reaped < cgh_params.queue_depth)
		mask |= EPOLLOUT | EPOLLWRNORM;
	spin_unlock(&cf->qlock);
	return mask;
}
