// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The control socket: a unix stream socket, one JSON object per line each
 * way.  Every request is {"id": <any JSON>, "op": "<name>", ...}; every reply
 * is {"id": <the same>, "ok": true, ...} or {"id": ..., "ok": false,
 * "error": "<what to fix>"}.  Replies come in request order.  Lines are at
 * most 1 MiB; anything malformed gets an error reply, never a crash.
 *
 * This file is the socket side: accepting up to CTL_MAX_CLIENTS clients,
 * cutting their byte streams into lines, the reply envelope, the op table,
 * and writing replies back without ever blocking the fabric's epoll loop.
 * The ops themselves are in control_ops.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "control.h"
#include "switch.h"

/*
 * The limits below are docs/switch.md's ("Control protocol"): 32 clients at
 * once, lines up to 1 MiB.  A line has to hold an inject of the largest frame,
 * 65536 bytes, which is 128 KiB as hex and about 85 KiB as base64, so 1 MiB
 * leaves room for anything legitimate while bounding the memory one client's
 * partial line can take.  The reply backlog is bounded separately by
 * CTL_MAX_OUT (see ctl_flush()).
 */
#define CTL_MAX_CLIENTS	32
#define CTL_MAX_LINE	(1 << 20)
#define CTL_MAX_OUT	(64 << 20)	/* a client that never reads is dropped */

/*
 * One connected control client.
 *
 * Owned by sw->clients[idx] from ctl_accept() to ctl_close().  @in is
 * allocated at CTL_MAX_LINE + 1 bytes the first time a line arrives split
 * across reads, then reused for every later line until the client goes.
 */
struct ctl_client {
	int fd;
	char *in;		/* the partial line carried over reads; allocated on first need */
	size_t in_len, in_cap;
	bool discarding;	/* inside an over-long line: skip to its newline */
	struct jbuf out;	/* replies not yet sent */
	size_t out_off;		/* how much of @out the socket took already */
	bool want_out;		/* EPOLLOUT armed: @out has unsent bytes */
};

/*
 * A message longer than r->err is cut by vsnprintf(); the reply stays valid
 * JSON even if the cut falls inside a UTF-8 sequence, because jb_str() escapes
 * the broken bytes.
 */
bool fail(struct req *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err, sizeof(r->err), fmt, ap);
	va_end(ap);
	return false;
}

/*
 * The op table: a request's "op" is looked up here by name.
 *
 * A linear search over a dozen names is fast enough for one request at a time.
 * A new op needs a line here, a handler in control_ops.c, its declaration in
 * control.h and its row in docs/switch.md's table.
 */
static const struct {
	const char *name;
	bool (*fn)(struct req *r);
} ops[] = {
	{ "ping", op_ping },
	{ "stats", op_stats },
	{ "ports", op_ports },
	{ "table", op_table },
	{ "set_lft", op_set_lft },
	{ "mcast_join", op_mcast_join },
	{ "mcast_leave", op_mcast_leave },
	{ "link_down", op_link_down },
	{ "link_up", op_link_up },
	{ "inject", op_inject },
	{ "capture_start", op_capture_start },
	{ "capture_stop", op_capture_stop },
	{ "advance_time", op_advance_time },
	{ "sm", op_sm },
	{ "qos_set", op_qos_set },
	{ "qos_get", op_qos_get },
	{ "qos_stats", op_qos_stats },
};

/*
 * Handle one request line; @out receives the whole reply line.  The handler
 * writes its fields into a separate object so that, whatever it wrote before
 * failing, an error reply carries only id, ok and error.
 */
static void ctl_handle(struct sw *sw, const char *line, size_t len, struct jbuf *out)
{
	const char *perr;
	struct jval *j = json_parse(line, len, &perr);
	struct jbuf body;
	struct req r = { .sw = sw, .j = j, .body = &body };
	const struct jval *op = NULL;
	bool ok = false;

	jb_init(&body);
	jb_obj(&body);
	if (!j) {
		fail(&r, "request is not valid JSON: %s", perr);
	} else if (j->t != J_OBJ) {
		fail(&r, "request must be a JSON object with an \"op\"");
	} else if (!(op = json_get(j, "op")) || op->t != J_STR) {
		fail(&r, "request needs \"op\" (a string); try {\"op\":\"stats\"}");
	} else {
		size_t i;

		for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
			if (!strcmp(ops[i].name, op->s))
				break;
		if (i == sizeof(ops) / sizeof(ops[0]))
			fail(&r, "unknown op \"%.64s\"", op->s);
		else
			ok = ops[i].fn(&r);
	}
	jb_end_obj(&body);

	jb_init(out);
	jb_obj(out);
	/*
	 * The envelope.  The id is echoed whenever the line parsed as JSON,
	 * even if the request failed; it is null when the line did not parse or
	 * had none.  @out belongs to the caller, who queues it with
	 * ctl_reply().
	 */
	jb_key(out, "id");
	jb_value(out, j ? json_get(j, "id") : NULL);
	jb_key(out, "ok");
	jb_bool(out, ok);
	if (!ok) {
		jb_key(out, "error");
		jb_str(out, r.err[0] ? r.err : "failed");
	} else if (body.len > 2 && !body.oom) {
		/* Splice the handler's fields (body minus its braces) into the reply. */
		jb_raw(out, ",", 1);
		jb_raw(out, body.p + 1, body.len - 2);
	}
	jb_raw(out, "}\n", 2);
	if (body.oom || out->oom) {
		jb_free(out);
		jb_init(out);
		/*
		 * A literal: building a reply is what just ran out of memory.
		 *
		 * 47 is the length of the literal, newline included.
		 */
		jb_raw(out, "{\"id\":null,\"ok\":false,\"error\":\"out of memory\"}\n", 47);
	}
	jb_free(&body);
	json_free(j);
}

/*
 * (Re)register client @idx with epoll.  Unlike a port's, the tag carries no
 * generation: a stale event of a closed client reaching the next one in its
 * slot only makes it read or flush early, which finds nothing to do.
 */
static void ctl_epoll(struct sw *sw, unsigned int idx, int op)
{
	struct ctl_client *c = sw->clients[idx];
	struct epoll_event ev = {
		.events = EPOLLIN | EPOLLRDHUP | (c->want_out ? EPOLLOUT : 0),
		.data.u64 = EV_TAG(EV_CTL, 0, idx),
	};

	epoll_ctl(sw->epfd, op, c->fd, &ev);
}

/*
 * Unregister, close and free client @idx; harmless on an empty slot.  Replies
 * still queued are lost: the client is gone, or is being dropped for not
 * reading them.
 */
static void ctl_close(struct sw *sw, unsigned int idx)
{
	struct ctl_client *c = sw->clients[idx];

	if (!c)
		return;
	epoll_ctl(sw->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c->in);
	jb_free(&c->out);
	free(c);
	sw->clients[idx] = NULL;
}

/*
 * At teardown.  The table itself goes too; ctl_accept() would allocate it again
 * on the next client.
 */
void ctl_close_all(struct sw *sw)
{
	for (unsigned int i = 0; i < CTL_MAX_CLIENTS; i++)
		ctl_close(sw, i);
	free(sw->clients);
	sw->clients = NULL;
}

/* Accept every pending client; 0, or -1 when accepting itself fails. */
int ctl_accept(struct sw *sw)
{
	if (!sw->clients) {
		sw->clients = calloc(CTL_MAX_CLIENTS, sizeof(*sw->clients));
		if (!sw->clients)
			return -1;
	}
	for (;;) {
		int fd = accept4(sw->ctl_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		unsigned int i;
		struct ctl_client *c;

		if (fd < 0)
			/*
			 * EAGAIN: no more pending clients.  ECONNABORTED: a
			 * client gave up before we accepted it, not our
			 * failure.  Anything else is returned; dispatch() only
			 * logs it, since a control problem must not stop the
			 * forwarding.
			 */
			return errno == EAGAIN || errno == EINTR || errno == ECONNABORTED ? 0 : -1;
		for (i = 0; i < CTL_MAX_CLIENTS && sw->clients[i]; i++)
			;
		c = i < CTL_MAX_CLIENTS ? calloc(1, sizeof(*c)) : NULL;
		if (!c) {
			/* Tell the client why before closing, best effort. */
			static const char msg[] =
				"{\"id\":null,\"ok\":false,\"error\":\"too many control clients\"}\n";

			if (send(fd, msg, sizeof(msg) - 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
				sw_log(sw, "control: refusing a client: %s", strerror(errno));
			close(fd);
			continue;
		}
		c->fd = fd;
		jb_init(&c->out);
		sw->clients[i] = c;
		ctl_epoll(sw, i, EPOLL_CTL_ADD);
	}
}

/*
 * Send what the socket takes of @idx's pending replies, without blocking:
 * the rest waits for EPOLLOUT.  A client whose backlog passes CTL_MAX_OUT
 * never reads, and is closed rather than let it hold memory without bound.
 */
static void ctl_flush(struct sw *sw, unsigned int idx)
{
	struct ctl_client *c = sw->clients[idx];
	bool want;

	while (c->out_off < c->out.len) {
		ssize_t n = send(c->fd, c->out.p + c->out_off, c->out.len - c->out_off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			ctl_close(sw, idx);
			return;
		}
		c->out_off += (size_t)n;
	}
	if (c->out_off == c->out.len) {
		/*
		 * Everything sent: start the buffer over.  A partly sent
		 * backlog is not compacted, only appended to, which is why its
		 * size is bounded below.
		 */
		c->out.len = 0;
		c->out_off = 0;
	}
	if (c->out.len - c->out_off > CTL_MAX_OUT) {
		sw_log(sw, "control: client does not read its replies; closing it");
		ctl_close(sw, idx);
		return;
	}
	want = c->out_off < c->out.len;
	if (want != c->want_out) {
		c->want_out = want;
		ctl_epoll(sw, idx, EPOLL_CTL_MOD);
	}
}

/*
 * Queue a finished reply line on client @c and free @reply.  Sending waits for
 * ctl_flush(), after every complete line of the read was answered, so pipelined
 * requests leave in as few sends as the socket allows.  If c->out once ran out
 * of memory, its latch drops this and every later reply and the client times
 * out: acceptable for a process that is out of memory anyway.
 */
static void ctl_reply(struct ctl_client *c, struct jbuf *reply)
{
	jb_raw(&c->out, reply->p, reply->len);
	jb_free(reply);
}

/*
 * An error reply to a line with no readable id (id null).
 *
 * Used for over-long lines, whose id cannot be read without keeping the whole
 * line in memory.
 */
static void ctl_error_line(struct ctl_client *c, const char *msg)
{
	struct jbuf b;

	jb_init(&b);
	jb_obj(&b);
	jb_key(&b, "id");
	jb_null(&b);
	jb_key(&b, "ok");
	jb_bool(&b, false);
	jb_key(&b, "error");
	jb_str(&b, msg);
	jb_end_obj(&b);
	jb_raw(&b, "\n", 1);
	ctl_reply(c, &b);
}

/*
 * Read everything the client sent and answer each complete line.  A line
 * that arrived whole in @buf is handled in place; only a line split across
 * reads is assembled in c->in.  A line longer than CTL_MAX_LINE gets one error
 * reply and is skipped up to its newline (c->discarding), so one bad client
 * line never costs more than CTL_MAX_LINE of memory.
 */
void ctl_readable(struct sw *sw, unsigned int idx)
{
	struct ctl_client *c = sw->clients[idx];
	/*
	 * One read's worth; the loop below reads until EAGAIN, so every line a
	 * client pipelined is answered before the single ctl_flush() at the
	 * end.
	 */
	char buf[65536];

	for (;;) {
		ssize_t n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
		size_t start = 0;

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			ctl_close(sw, idx);
			return;
		}
		if (n < 0)
			break;
		for (size_t i = 0; i < (size_t)n; i++) {
			size_t chunk;

			/*
			 * Lines end at '\n'.  A '\r' before it stays in the
			 * line and is JSON whitespace, so a client sending CRLF
			 * works too.
			 */
			if (buf[i] != '\n')
				continue;
			chunk = i - start;
			/*
			 * A line end.  If it ends a line that already got its
			 * too-long reply (c->discarding), skip it without a
			 * second one.  A complete line over the limit gets its
			 * reply here and needs no discarding: its newline has
			 * come.
			 */
			if (c->discarding) {
				c->discarding = false;
			} else if (c->in_len + chunk > CTL_MAX_LINE) {
				ctl_error_line(c, "request line longer than 1 MiB; split it");
			} else {
				struct jbuf reply;

				/*
				 * c->in exists whenever in_len is non-zero, and
				 * in_len + chunk was checked against
				 * CTL_MAX_LINE above, so the copy fits.
				 */
				if (c->in_len) {
					memcpy(c->in + c->in_len, buf + start, chunk);
					ctl_handle(sw, c->in, c->in_len + chunk, &reply);
				} else {
					ctl_handle(sw, buf + start, chunk, &reply);
				}
				ctl_reply(c, &reply);
			}
			c->in_len = 0;
			start = i + 1;
		}
		/* A partial line at the end of the read waits for the rest. */
		if (start < (size_t)n && !c->discarding) {
			size_t rest = (size_t)n - start;

			if (c->in_len + rest > CTL_MAX_LINE) {
				ctl_error_line(c, "request line longer than 1 MiB; split it");
				c->discarding = true;
				c->in_len = 0;
			} else {
				if (!c->in) {
					c->in = malloc(CTL_MAX_LINE + 1);
					if (!c->in) {
						ctl_close(sw, idx);
						return;
					}
				}
				memcpy(c->in + c->in_len, buf + start, rest);
				c->in_len += rest;
			}
		}
	}
	ctl_flush(sw, idx);
}

/*
 * EPOLLOUT for client @idx.  An earlier event of the same epoll batch may have
 * closed it, hence the check.
 */
void ctl_writable(struct sw *sw, unsigned int idx)
{
	if (sw->clients && sw->clients[idx])
		ctl_flush(sw, idx);
}
