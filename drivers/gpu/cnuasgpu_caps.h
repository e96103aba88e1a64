/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CNUASGPU_IOC_CAPS, answered the same way by cnuasgpu.ko and
 * cnuasgpu_host.ko.  Static inline on purpose: each module gets its own
 * copy, so neither depends on a symbol of the other and they load and
 * unload in any order.
 */
#ifndef CNUASGPU_CAPS_H
#define CNUASGPU_CAPS_H

#include <linux/build_bug.h>
#include <linux/mm.h>
#include <linux/stddef.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "uapi/cnuasgpu.h"

/**
 * cnuasgpu_caps_reply - check a CAPS argument and answer it
 * @uarg: the user's struct cnuasgpu_caps
 * @out: the answer; size, version and reserved are filled in here
 *
 * Return: 0, -EFAULT, or -EINVAL when the size is not this struct's or any
 * other byte of the argument is not 0.
 */
static inline int cnuasgpu_caps_reply(void __user *uarg,
				      struct cnuasgpu_caps *out)
{
	struct cnuasgpu_caps in;

	BUILD_BUG_ON(sizeof(struct cnuasgpu_caps) != 64);
	BUILD_BUG_ON(offsetof(struct cnuasgpu_caps, devmem_size) != 16);
	BUILD_BUG_ON(offsetof(struct cnuasgpu_caps, queue_depth) != 32);
	BUILD_BUG_ON(offsetof(struct cnuasgpu_caps, reserved) != 44);
	if (copy_from_user(&in, uarg, sizeof(in)))
		return -EFAULT;
	if (in.size != sizeof(in) ||
	    memchr_inv((u8 *)&in + sizeof(in.size), 0,
		       sizeof(in) - sizeof(in.size)))
		return -EINVAL;
	out->size = sizeof(*out);
	out->version = CNUASGPU_CAPS_VERSION;
	out->page_size = PAGE_SIZE;
	memset(out->reserved, 0, sizeof(out->reserved));
	return copy_to_user(uarg, out, sizeof(*out)) ? -EFAULT : 0;
}

#endif /* CNUASGPU_CAPS_H */
