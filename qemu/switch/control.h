/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Between the control socket (control.c: clients, line framing, the reply
 * envelope, the op table) and the op handlers (control_ops.c).  A handler
 * reads its request through @j, appends its reply fields to @body (the
 * envelope adds "id" and "ok" around them) and returns true, or returns
 * fail(), whose message becomes the reply's "error".
 */
#ifndef CNUAS_CONTROL_H
#define CNUAS_CONTROL_H

#include <stdbool.h>

#include "json.h"

struct sw;

struct req {
	struct sw *sw;
	const struct jval *j;	/* the request object */
	struct jbuf *body;	/* reply fields, emitted inside an object */
	char err[256];		/* set by fail() */
};

/* Record why the request failed; returns false so a handler can `return fail(...)`. */
bool fail(struct req *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The ops, one per protocol name (docs/switch.md, "Control protocol"). */
bool op_ping(struct req *r);
bool op_stats(struct req *r);
bool op_ports(struct req *r);
bool op_table(struct req *r);
bool op_set_lft(struct req *r);
bool op_mcast_join(struct req *r);
bool op_mcast_leave(struct req *r);
bool op_link_down(struct req *r);
bool op_link_up(struct req *r);
bool op_inject(struct req *r);
bool op_capture_start(struct req *r);
bool op_capture_stop(struct req *r);
bool op_advance_time(struct req *r);
bool op_sm(struct req *r);

#endif
