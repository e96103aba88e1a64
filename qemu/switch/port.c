// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Ports: accepting device connections into slots, reading frames, and sending
 * them: straight to the socket when nothing holds a port back, else through
 * its bounded egress queues (qos.c), which keep one slow reader from blocking
 * the rest of the fabric.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sm.h"
#include "switch.h"

/*
 * 4 MiB is docs/switch.md's figure ("Ports").  READ_ROUNDS caps one port at 64
 * frames per wakeup before the loop serves the others.
 */
#define PORT_SOCKBUF	(4 << 20)	/* bytes; bursts of ~1000 MTU frames fit */
#define READ_ROUNDS	2		/* batches per wakeup, for fairness */

/*
 * (Re)register a port with epoll.  The tag carries the connection's
 * generation, so an event still queued for a closed connection is not
 * applied to the next device in the slot (main.c's dispatch checks it).
 */
static void port_epoll(struct sw *sw, unsigned int id, int op)
{
	struct port *p = &sw->ports[id];
	struct epoll_event ev = {
		.events = EPOLLIN | EPOLLRDHUP | (p->want_out ? EPOLLOUT : 0),
		.data.u64 = EV_TAG(EV_PORT, p->generation, id),
	};

	if (epoll_ctl(sw->epfd, op, p->fd, &ev))
		sw_log(sw, "port %u: epoll_ctl: %s", id, strerror(errno));
}

/* As root the FORCE variants lift the sysctl ceiling; otherwise take what we get. */
static void port_bufsize(int fd)
{
	int sz = PORT_SOCKBUF;

	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
}

/*
 * Fold @from into @to: a closing connection into sw->retired, or every
 * connection into the stats totals.
 */
static void counters_add(struct counters *to, const struct counters *from)
{
	to->rx_frames += from->rx_frames;
	to->rx_bytes += from->rx_bytes;
	to->tx_frames += from->tx_frames;
	to->tx_bytes += from->tx_bytes;
	for (int i = 0; i < DROP__COUNT; i++)
		to->drops[i] += from->drops[i];
	to->pfc_sent += from->pfc_sent;
}

/*
 * Accept every pending device into the lowest free slot, with fresh counters.
 * -1 only when the process is out of descriptors, which stops the switch:
 * it could not serve a device anyway.
 */
int port_accept(struct sw *sw)
{
	for (;;) {
		int fd = accept4(sw->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		unsigned int id;
		struct port *p;

		if (fd < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			if (errno == EMFILE || errno == ENFILE) {
				sw_log(sw, "accept: %s", strerror(errno));
				return -1;
			}
			continue;	/* ECONNABORTED and friends: that client is gone */
		}
		for (id = 1; id <= sw->max_ports; id++)
			if (sw->ports[id].state == PORT_FREE)
				break;
		if (id > sw->max_ports) {
			sw->refused++;
			sw_log(sw, "connection refused: all %u ports taken or down", sw->max_ports);
			close(fd);
			continue;
		}
		p = &sw->ports[id];
		/*
		 * A new connection starts clean: fresh counters
		 * (docs/switch.md, "Ports"), a new generation so events queued
		 * for the slot's previous connection are ignored, no gpu_id and
		 * an empty queue (port_close() emptied it).  During a capture
		 * the port gets its interface block before its first packet; a
		 * reconnect into the same slot keeps the one it has.
		 */
		port_bufsize(fd);
		memset(&p->c, 0, sizeof(p->c));
		p->fd = fd;
		p->state = PORT_UP;
		p->generation++;
		p->want_out = false;
		p->has_gpu = false;
		qos_port_up(sw, id);
		port_epoll(sw, id, EPOLL_CTL_ADD);
		sw->connections++;
		if (cap_active(&sw->cap))
			cap_add_port(&sw->cap, id);
		sw_log(sw, "port %u: up", id);
		sm_port_change(sw, id, true);
	}
}

/* End a port's connection: queued frames are dropped, learned state forgotten. */
void port_close(struct sw *sw, unsigned int id, const char *why)
{
	struct port *p = &sw->ports[id];
	struct counters *r = &sw->retired;

	if (p->state != PORT_UP)
		return;
	/*
	 * Unregister before closing.  Outputs collected for this port in the
	 * current read batch are forgotten (pend_n = 0); the port stays in
	 * sw->touched and port_flush() skips it because it is no longer up.
	 * Queued frames are freed without counting a drop: they were accepted
	 * for a device that has gone.
	 */
	epoll_ctl(sw->epfd, EPOLL_CTL_DEL, p->fd, NULL);
	close(p->fd);
	p->fd = -1;
	/* FREE here; port_link_down() turns it into DOWN right after. */
	p->state = PORT_FREE;
	p->pend_n = 0;
	qos_port_gone(sw, id);
	/* stats totals outlive the connection; its own counters do not */
	counters_add(r, &p->c);
	fwd_port_gone(sw, id);
	sw_log(sw, "port %u: down (%s)", id, why);
	sm_port_change(sw, id, false);
}

void port_link_down(struct sw *sw, unsigned int id)
{
	port_close(sw, id, "link_down");
	sw->ports[id].state = PORT_DOWN;
}

/*
 * Counters of ended connections plus those of the connected ports: the stats
 * totals (docs/switch.md: "stats keeps totals over every connection").
 */
void sw_totals(const struct sw *sw, struct counters *out)
{
	*out = sw->retired;
	for (unsigned int id = 1; id <= sw->max_ports; id++) {
		const struct port *p = &sw->ports[id];

		if (p->state != PORT_UP)
			continue;
		counters_add(out, &p->c);
	}
}

/* A full socket, or the kernel short of buffers: queue, do not close. */
static bool send_would_block(int err)
{
	return err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS;
}

/*
 * EPOLLOUT is armed only while a full socket holds frames back, so an idle
 * port, or one waiting for its drain rate or a pause, costs no wakeups.
 */
void port_want_out(struct sw *sw, unsigned int id, bool on)
{
	struct port *p = &sw->ports[id];

	if (p->want_out == on)
		return;
	p->want_out = on;
	port_epoll(sw, id, EPOLL_CTL_MOD);
}

/* Queue behind what waits (qos.c) and send what may leave now. */
static void enqueue(struct sw *sw, unsigned int id, const uint8_t *data, size_t len)
{
	qos_enqueue(sw, id, data, len);
	if (!sw->ports[id].want_out)
		qos_service(sw, id);
}

/*
 * Send a read batch's outputs for one port with as few sendmmsg calls as the
 * socket allows; what does not fit goes to the queue (behind anything already
 * queued, so per-port order holds).
 *
 * Each entry of p->pend points into sw->rxbuf, still valid because the batch
 * has not read again yet.  A hard send error (EPIPE, ECONNRESET: the device
 * went away) closes the port and the rest of its outputs are dropped with it.
 */
static void port_flush(struct sw *sw, unsigned int id)
{
	struct port *p = &sw->ports[id];
	struct mmsghdr msgs[SW_BATCH];
	unsigned int i = 0, n = p->pend_n;

	p->pend_n = 0;
	if (p->state != PORT_UP)
		return;
	/*
	 * Direct sends only while nothing is queued: once a frame waits, every
	 * later one queues behind it.  A short sendmmsg means the socket
	 * filled; the next call then returns EAGAIN and the rest is queued.
	 */
	while (!qos_holds(sw, id) && i < n) {
		int k;

		memset(msgs, 0, sizeof(msgs[0]) * (n - i));
		for (unsigned int j = i; j < n; j++) {
			msgs[j - i].msg_hdr.msg_iov = &p->pend[j];
			msgs[j - i].msg_hdr.msg_iovlen = 1;
		}
		k = sendmmsg(p->fd, msgs, n - i, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (k < 0) {
			if (send_would_block(errno) || errno == EINTR)
				break;
			port_close(sw, id, strerror(errno));
			return;
		}
		for (int j = 0; j < k; j++) {
			const struct iovec *v = &p->pend[i + (unsigned int)j];

			p->c.tx_frames++;
			p->c.tx_bytes += v->iov_len;
			qos_count_tx(sw, id, v->iov_base, v->iov_len);
		}
		i += (unsigned int)k;
	}
	for (; i < n; i++)
		enqueue(sw, id, p->pend[i].iov_base, p->pend[i].iov_len);
}

/* End of a read batch: send what each touched port collected. */
static void flush_all(struct sw *sw)
{
	for (unsigned int t = 0; t < sw->n_touched; t++) {
		unsigned int id = sw->touched[t];

		sw->ports[id].touched = false;
		port_flush(sw, id);
	}
	sw->n_touched = 0;
}

/*
 * @data belongs to the caller.  Inside a read batch it points into sw->rxbuf
 * and stays valid until flush_all() at the end of the batch, so only the
 * pointer is kept; otherwise it is sent at once or copied into the queue, and
 * the caller may free it on return.
 */
void port_output(struct sw *sw, unsigned int id, const uint8_t *data, size_t len)
{
	struct port *p = &sw->ports[id];

	if (p->state != PORT_UP)
		return;
	/*
	 * Inside a read batch the frame still lies in sw->rxbuf: collect a
	 * pointer and send the port's frames together with one sendmmsg.
	 */
	if (sw->batching && !qos_holds(sw, id)) {
		if (!p->touched) {
			p->touched = true;
			sw->touched[sw->n_touched++] = id;
		}
		/*
		 * A batch gives a port at most one output per frame, so this
		 * only triggers when something else (the SM seam) sends during
		 * a batch; it keeps p->pend within its SW_BATCH entries.
		 */
		if (p->pend_n == SW_BATCH)
			port_flush(sw, id);
		p->pend[p->pend_n].iov_base = (void *)data;
		p->pend[p->pend_n].iov_len = len;
		p->pend_n++;
		return;
	}
	/*
	 * Outside a batch: try the socket unless frames are already waiting,
	 * which would be overtaken.
	 */
	if (!qos_holds(sw, id)) {
		ssize_t n = send(p->fd, data, len, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n >= 0) {
			p->c.tx_frames++;
			p->c.tx_bytes += len;
			qos_count_tx(sw, id, data, len);
			return;
		}
		if (!send_would_block(errno)) {
			port_close(sw, id, strerror(errno));
			return;
		}
	}
	enqueue(sw, id, data, len);
}

void port_output_now(struct sw *sw, unsigned int id, const uint8_t *data, size_t len)
{
	struct port *p = &sw->ports[id];
	bool batching = sw->batching;

	unsigned int in = sw->cur_in;

	if (p->state != PORT_UP)
		return;
	if (batching && p->pend_n)
		port_flush(sw, id);
	sw->batching = false;
	sw->cur_in = 0;		/* the switch made it */
	port_output(sw, id, data, len);
	sw->cur_in = in;
	sw->batching = batching;
}

/* EPOLLOUT: the socket has room again; the scheduler decides what goes. */
void port_writable(struct sw *sw, unsigned int id)
{
	sw->ports[id].want_out = true;	/* still armed until qos_service() says */
	qos_service(sw, id);
}

/*
 * Every received frame is counted (rx_bytes at its original length) and
 * captured first, drops included, as docs/switch.md ("Forwarding") requires.  A
 * frame cut by the receive buffer is oversize and never reaches fwd_frame();
 * the capture records it truncated.
 */
void port_ingress(struct sw *sw, unsigned int id, const uint8_t *data, size_t len,
		  size_t orig_len)
{
	struct port *p = &sw->ports[id];

	p->c.rx_frames++;
	p->c.rx_bytes += orig_len;
	sw->cur_in = id;
	if (cap_active(&sw->cap))
		cap_packet(&sw->cap, id, sw_realtime(), data, (uint32_t)len, (uint32_t)orig_len,
			   CAP_INBOUND);
	if (orig_len != len)
		p->c.drops[DROP_OVERSIZE]++;	/* truncated by the receive buffer */
	else
		fwd_frame(sw, id, data, len);
}

/* True when the device has closed its end or the socket failed. */
static bool peer_gone(int fd, uint32_t events)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN | POLLRDHUP };

	if (events & (EPOLLHUP | EPOLLRDHUP | EPOLLERR))
		return true;
	/* The close may have happened after epoll_wait reported only EPOLLIN. */
	return poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLHUP | POLLRDHUP | POLLERR));
}

/*
 * Read up to READ_ROUNDS batches of SW_BATCH frames with recvmmsg, then
 * return to the loop so one busy port cannot starve the others.  MSG_TRUNC
 * reports each datagram's real length: a buffer one byte larger than the
 * mode's maximum tells an oversize frame from a maximum-size one.
 */
void port_readable(struct sw *sw, unsigned int id, uint32_t events)
{
	struct port *p = &sw->ports[id];
	struct mmsghdr msgs[SW_BATCH];
	struct iovec iov[SW_BATCH];

	for (int round = 0; round < READ_ROUNDS && p->state == PORT_UP; round++) {
		int n;

		memset(msgs, 0, sizeof(msgs));
		for (int i = 0; i < SW_BATCH; i++) {
			iov[i].iov_base = sw->rxbuf + (size_t)i * sw->rxbuf_size;
			iov[i].iov_len = sw->rxbuf_size;
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
		}
		n = recvmmsg(p->fd, msgs, SW_BATCH, MSG_DONTWAIT | MSG_TRUNC, NULL);
		if (n < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				port_close(sw, id, strerror(errno));
			return;
		}
		/*
		 * From here until flush_all(), port_output() only collects
		 * pointers into sw->rxbuf; reading again would overwrite them,
		 * so the batch is flushed before the next recvmmsg.
		 */
		sw->batching = true;
		for (int i = 0; i < n && p->state == PORT_UP; i++) {
			size_t len = msgs[i].msg_len;

			/*
			 * SEQPACKET reports both an empty datagram and the peer's
			 * close as 0 (recvmmsg then fills the rest of the batch
			 * with zeros); the hang-up state tells them apart.
			 */
			if (len == 0 && peer_gone(p->fd, events)) {
				port_close(sw, id, "peer closed");
				break;
			}
			port_ingress(sw, id, iov[i].iov_base,
				     len < sw->rxbuf_size ? len : sw->rxbuf_size, len);
		}
		flush_all(sw);
		sw->batching = false;
		/* A short batch means the socket is empty: no second round. */
		if (n < SW_BATCH)
			return;
	}
}
