// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * cnuas-switch: the fabric daemon.  One epoll loop, no threads.
 *
 *   cnuas-switch --mode eth|ib|link --socket PATH --control PATH
 *                [--max-ports N] [--queue-depth N] [--aging-sec N]
 *                [--log PATH] [--exit-with PID]
 *                [--no-sm] [--sm-lid-start N] [--sm-sweep-ms N] [--subnet-prefix P]
 *
 * --exit-with makes the daemon exit when that process does (a pidfd in the
 * epoll set), so a crashed harness never leaves a fabric running.
 * SIGTERM/SIGINT flush a running capture and exit 0.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "sm.h"
#include "switch.h"

/*
 * pidfd_open(2) arrived in Linux 5.3 and has no glibc wrapper before 2.36; 434
 * is its number on every architecture that uses the common syscall table
 * (x86_64 and aarch64 among them), for headers that predate it.
 */
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/*
 * Keep in step with the synopsis in docs/switch.md; the limits come from
 * switch.h so the text cannot drift from what is enforced.
 */
static void usage(FILE *f)
{
	fprintf(f,
		"usage: cnuas-switch --mode eth|ib|link --socket PATH --control PATH\n"
		"                    [--max-ports N (64, max %d)] [--queue-depth N (256)]\n"
		"                    [--aging-sec N (300, 0 = never)] [--log PATH] [--exit-with PID]\n"
		"                    [--no-sm] [--sm-lid-start N (1)] [--sm-sweep-ms N (500)]\n"
		"                    [--subnet-prefix P (fe80:0000:0000:0000)]\n",
		SW_PORTS_LIMIT);
}

/*
 * A decimal option value in [min, max]; strtoul alone would accept "-1" and
 * "12x".
 *
 * Returns false for anything else, and main() answers with the usage text.
 */
static bool parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	if (!s || !*s || *s == '-')
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

/*
 * A subnet prefix as four groups of 1..4 hex digits separated by colons
 * ("fe80:0000:0000:0000" or "fe80:0:0:0"), the first 64 bits of every GID.
 */
static bool parse_prefix(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	for (int g = 0; g < 4; g++) {
		unsigned int digits = 0, x = 0;

		for (; *s && *s != ':'; s++, digits++) {
			char c = *s;
			unsigned int d;

			if (c >= '0' && c <= '9')
				d = (unsigned int)(c - '0');
			else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
				d = (unsigned int)((c | 0x20) - 'a' + 10);
			else
				return false;
			x = x << 4 | d;
			if (digits >= 4)
				return false;
		}
		if (!digits || (g < 3 && *s != ':') || (g == 3 && *s))
			return false;
		if (*s)
			s++;
		v = v << 16 | x;
	}
	*out = v;
	return true;
}

/*
 * Bind and listen on a unix socket at @path: SEQPACKET for devices, STREAM for
 * control.
 *
 * Returns the descriptor, or -1 after a message on stderr.
 */
static int listen_unix(const char *path, int type)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd;

	/*
	 * sun_path is 108 bytes on Linux.  A longer path is refused rather than
	 * cut: the cut path would be a different file, and the devices would
	 * never find the socket.
	 */
	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "cnuas-switch: socket path longer than %zu bytes: %s\n",
			sizeof(sa.sun_path) - 1, path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	/*
	 * A stale socket from a killed run would make bind fail; remove only
	 * sockets.
	 *
	 * A path that names a regular file (a typo in --socket) makes bind()
	 * fail instead of costing the file.
	 */
	if (!lstat(path, &st) && S_ISSOCK(st.st_mode))
		unlink(path);
	/*
	 * Backlog 128: accept loops drain the queue at every wakeup, so it only
	 * has to absorb devices starting together.  A full backlog makes a
	 * connecting device wait (EAGAIN if its socket is non-blocking), it is
	 * not refused.
	 */
	fd = socket(AF_UNIX, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 128)) {
		fprintf(stderr, "cnuas-switch: cannot listen on %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/*
 * Level-triggered EPOLLIN: a handler may stop before it has read everything
 * (port_readable()'s READ_ROUNDS) and count on the next epoll_wait() to bring
 * it back.
 */
static int ep_add(struct sw *sw, int fd, uint64_t tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = tag };

	return epoll_ctl(sw->epfd, EPOLL_CTL_ADD, fd, &ev);
}

/*
 * Allocate the fabric's state and open every descriptor the loop waits on.
 * Everything is sized once here (ports, queues, batch buffers), so the
 * forwarding path never allocates except for frames it has to queue.
 */
static int setup(struct sw *sw, long exit_with)
{
	sigset_t set;

	/*
	 * Arrays indexed by port number are max_ports + 1 long; slot 0 (the
	 * switch itself) gets a queue like the others, so no path has to skip
	 * it.  The receive buffers hold SW_BATCH frames of the mode's maximum
	 * plus one byte (see port_readable()).  On failure setup() just
	 * returns: main() exits at once and the process's memory and
	 * descriptors go with it.
	 */
	sw->ports = calloc(sw->max_ports + 1, sizeof(*sw->ports));
	sw->rxbuf_size = sw_max_frame(sw) + 1;
	sw->rxbuf = malloc(sw->rxbuf_size * SW_BATCH);
	sw->touched = calloc(sw->max_ports + 1, sizeof(*sw->touched));
	if (!sw->ports || !sw->rxbuf || !sw->touched || !fwd_init(sw))
		return -1;
	for (unsigned int i = 0; i <= sw->max_ports; i++) {
		sw->ports[i].fd = -1;
		sw->ports[i].pend = calloc(SW_BATCH, sizeof(*sw->ports[i].pend));
		if (!sw->ports[i].pend)
			return -1;
	}
	sw->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (sw->epfd < 0)
		return -1;

	/*
	 * SIGHUP stops the switch like SIGTERM and SIGINT: a fabric started
	 * from a terminal goes when the terminal does.  The signals are blocked
	 * before the signalfd exists, so one arriving from here on waits for
	 * the loop instead of killing the process.
	 */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	/* Signals arrive as epoll events (signalfd), never in a handler. */
	sigprocmask(SIG_BLOCK, &set, NULL);
	/* A device or control client that closes mid-send must not kill the fabric. */
	signal(SIGPIPE, SIG_IGN);
	sw->sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sw->sig_fd < 0 || ep_add(sw, sw->sig_fd, EV_TAG(EV_SIGNAL, 0, 0)))
		return -1;

	/*
	 * A pidfd becomes readable when its process exits.  Failing to open it
	 * is fatal: the harness relies on --exit-with never leaving a daemon
	 * behind (docs/switch.md).
	 */
	sw->parent_fd = -1;
	if (exit_with > 0) {
		sw->parent_fd = (int)syscall(SYS_pidfd_open, (pid_t)exit_with, 0);
		if (sw->parent_fd < 0) {
			fprintf(stderr, "cnuas-switch: --exit-with %ld: %s\n", exit_with,
				strerror(errno));
			return -1;
		}
		if (ep_add(sw, sw->parent_fd, EV_TAG(EV_PARENT, 0, 0)))
			return -1;
	}

	sw->listen_fd = listen_unix(sw->socket_path, SOCK_SEQPACKET);
	if (sw->listen_fd < 0)
		return -1;
	sw->ctl_fd = listen_unix(sw->control_path, SOCK_STREAM);
	if (sw->ctl_fd < 0)
		return -1;
	if (ep_add(sw, sw->listen_fd, EV_TAG(EV_LISTEN, 0, 0)) ||
	    ep_add(sw, sw->ctl_fd, EV_TAG(EV_CTL_LISTEN, 0, 0)))
		return -1;
	/*
	 * The subnet manager starts last, when ports, tables and sockets exist
	 * for it to use; uptime counts from here.
	 */
	if (!qos_init(sw) || !sm_init(sw))
		return -1;
	sw->started_ns = sw_now(sw);
	return 0;
}

/* Route one epoll event by its tag (switch.h, EV_TAG). */
static void dispatch(struct sw *sw, const struct epoll_event *ev)
{
	uint64_t tag = ev->data.u64;
	unsigned int idx = EV_IDX(tag);
	struct signalfd_siginfo si;

	switch (EV_TYPE(tag)) {
	/*
	 * port_accept() fails only when the process is out of descriptors, and
	 * then no device can be served: stop.  A control accept failure is only
	 * logged, the fabric keeps forwarding.
	 */
	case EV_LISTEN:
		if (port_accept(sw))
			sw->stop = true;
		break;
	case EV_CTL_LISTEN:
		if (ctl_accept(sw))
			sw_log(sw, "control accept: %s", strerror(errno));
		break;
	/*
	 * Writable first: a reply backlog is sent before new requests add to
	 * it.  ctl_writable() may close the client, hence the check before
	 * reading.
	 */
	case EV_CTL:
		if (ev->events & EPOLLOUT)
			ctl_writable(sw, idx);
		if (ev->events & (EPOLLIN | EPOLLHUP | EPOLLRDHUP | EPOLLERR)) {
			if (sw->clients && sw->clients[idx])
				ctl_readable(sw, idx);
		}
		break;
	case EV_PORT:
		if (idx > sw->max_ports || sw->ports[idx].state != PORT_UP ||
		    (sw->ports[idx].generation & 0xffffff) != EV_GEN(tag))
			break;	/* stale: that connection is gone */
		if (ev->events & EPOLLOUT)
			port_writable(sw, idx);
		/*
		 * The queue was drained first, as for a control client;
		 * port_writable() may have closed the connection, so reading
		 * re-checks the state.
		 */
		if (sw->ports[idx].state == PORT_UP &&
		    (ev->events & (EPOLLIN | EPOLLHUP | EPOLLRDHUP | EPOLLERR)))
			port_readable(sw, idx, ev->events);
		break;
	case EV_SIGNAL:
		/*
		 * One event may stand for several signals; the signalfd is
		 * non-blocking, so the loop ends when they are all read.
		 */
		while (read(sw->sig_fd, &si, sizeof(si)) == sizeof(si)) {
			sw_log(sw, "signal %u: stopping", si.ssi_signo);
			sw->stop = true;
		}
		break;
	/*
	 * The pidfd stays readable after the exit; stop is set, so the loop
	 * does not see it again.
	 */
	case EV_PARENT:
		sw_log(sw, "the --exit-with process ended: stopping");
		sw->stop = true;
		break;
	case EV_TIMER:
		sm_timer(sw);
		break;
	case EV_QOS_TIMER:
		qos_timer(sw);
		break;
	}
}

/* SIGTERM/SIGINT/--exit-with: finish the capture file first, then close everything. */
static void teardown(struct sw *sw)
{
	/*
	 * A capture failure is logged but the exit status stays 0, as
	 * docs/switch.md promises for SIGTERM/SIGINT.  port_close() logs each
	 * port and tells the SM seam, as a device leaving would.  The sockets
	 * are unlinked so the next run finds clean paths.
	 */
	if (cap_active(&sw->cap) && cap_stop(&sw->cap, NULL, NULL))
		sw_log(sw, "capture: %s", sw->cap.error);
	for (unsigned int id = 1; id <= sw->max_ports; id++)
		port_close(sw, id, "switch stopping");
	ctl_close_all(sw);
	sm_fini(sw);
	qos_fini(sw);
	unlink(sw->socket_path);
	unlink(sw->control_path);
	/* Free the rest so a sanitizer build exits clean. */
	for (unsigned int id = 0; id <= sw->max_ports; id++)
		free(sw->ports[id].pend);
	for (unsigned int i = 0; i < IB_MCAST_COUNT; i++)
		free(sw->mcast[i]);
	free(sw->mcast);
	free(sw->lft);
	fdb_destroy(&sw->macs);
	fdb_destroy(&sw->gpus);
	free(sw->ports);
	free(sw->rxbuf);
	free(sw->touched);
	close(sw->listen_fd);
	close(sw->ctl_fd);
	close(sw->sig_fd);
	if (sw->parent_fd >= 0)
		close(sw->parent_fd);
	close(sw->epfd);
}

/*
 * Exit status: 0 after a normal stop (signal, --exit-with, fatal accept error),
 * 1 when setup fails, 2 for bad arguments.
 */
int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "socket", required_argument, NULL, 's' },
		{ "control", required_argument, NULL, 'c' },
		{ "max-ports", required_argument, NULL, 'p' },
		{ "queue-depth", required_argument, NULL, 'q' },
		{ "aging-sec", required_argument, NULL, 'a' },
		{ "log", required_argument, NULL, 'l' },
		{ "exit-with", required_argument, NULL, 'x' },
		{ "no-sm", no_argument, NULL, 'N' },
		{ "sm-lid-start", required_argument, NULL, 'L' },
		{ "sm-sweep-ms", required_argument, NULL, 'S' },
		{ "subnet-prefix", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	/*
	 * Defaults are docs/switch.md's: 64 ports, 256 queued frames, 300 s
	 * aging, log to stderr.
	 */
	struct sw sw = {
		.max_ports = SW_DEFAULT_PORTS,
		.queue_depth = SW_DEFAULT_QDEPTH,
		.aging_ns = SW_DEFAULT_AGING_SEC * 1000000000ull,
		.log = stderr,
		.sm_lid_start = SM_DEFAULT_LID,
		.sm_sweep_ms = SM_DEFAULT_SWEEP_MS,
		.subnet_prefix = SM_DEFAULT_PREFIX,
		.qos_tfd = -1,
	};
	const char *mode = NULL;
	unsigned long v, exit_with = 0;
	uint64_t last_busy;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			mode = optarg;
			break;
		case 's':
			sw.socket_path = optarg;
			break;
		case 'c':
			sw.control_path = optarg;
			break;
		case 'p':
			if (!parse_uint(optarg, 1, SW_PORTS_LIMIT, &v))
				goto bad;
			sw.max_ports = (unsigned int)v;
			break;
		case 'q':
			if (!parse_uint(optarg, 1, SW_QDEPTH_LIMIT, &v))
				goto bad;
			sw.queue_depth = (unsigned int)v;
			break;
		case 'a':
			/*
			 * At most 1e9 s, so the product in ns fits in 64 bits;
			 * 0 turns aging off.
			 */
			if (!parse_uint(optarg, 0, 1000000000ul, &v))
				goto bad;
			sw.aging_ns = v * 1000000000ull;
			break;
		case 'l':
			/*
			 * Append: a run logging to the path of an earlier one
			 * keeps its lines.
			 */
			sw.log = fopen(optarg, "a");
			if (!sw.log) {
				fprintf(stderr, "cnuas-switch: cannot open log %s: %s\n", optarg,
					strerror(errno));
				return 2;
			}
			break;
		case 'x':
			/* Any positive pid_t. */
			if (!parse_uint(optarg, 1, 0x7fffffff, &exit_with))
				goto bad;
			break;
		case 'N':
			sw.no_sm = true;
			break;
		case 'L':
			/* The SM's LID and at least one LID after it for an end port. */
			if (!parse_uint(optarg, 1, IB_LID_UNICAST_END - 2, &v))
				goto bad;
			sw.sm_lid_start = (unsigned int)v;
			break;
		case 'S':
			if (!parse_uint(optarg, SM_SWEEP_MS_MIN, SM_SWEEP_MS_MAX, &v))
				goto bad;
			sw.sm_sweep_ms = (unsigned int)v;
			break;
		case 'P':
			if (!parse_prefix(optarg, &sw.subnet_prefix))
				goto bad;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			goto bad;
		}
	}
	if (optind != argc || !mode || !sw.socket_path || !sw.control_path)
		goto bad;
	if (!strcmp(mode, "eth"))
		sw.mode = MODE_ETH;
	else if (!strcmp(mode, "ib"))
		sw.mode = MODE_IB;
	else if (!strcmp(mode, "link"))
		sw.mode = MODE_LINK;
	else
		goto bad;

	if (setup(&sw, (long)exit_with)) {
		fprintf(stderr, "cnuas-switch: setup failed: %s\n", strerror(errno));
		return 1;
	}
	sw_log(&sw, "%s fabric on %s (control %s), %u ports, queue %u", mode, sw.socket_path,
	       sw.control_path, sw.max_ports, sw.queue_depth);

	last_busy = sw_mono_ns();
	while (!sw.stop) {
		/*
		 * The 1 s timeout is docs/switch.md's "flushed whenever the
		 * switch is idle for a second" ("Capture"): epoll_wait()
		 * returns 0 only after a full second without events.  A busy
		 * switch needs no timer for it: the capture's stdio buffer
		 * fills and goes to disk on its own.
		 */
		struct epoll_event evs[64];
		int n = epoll_wait(sw.epfd, evs, 64, 1000);

		/*
		 * EINTR still happens with every signal blocked (a debugger's
		 * SIGSTOP and SIGCONT) and is not an error.  Anything else
		 * leaves the loop for a clean teardown.
		 */
		if (n < 0 && errno != EINTR) {
			sw_log(&sw, "epoll_wait: %s", strerror(errno));
			break;
		}
		bool busy = false;

		/*
		 * The SM's timer wakes the loop every sweep, so "idle" means no
		 * event but the timer for a second, not epoll_wait() timing out.
		 */
		for (int i = 0; i < n; i++) {
			unsigned int type = EV_TYPE(evs[i].data.u64);

			busy |= type != EV_TIMER && type != EV_QOS_TIMER;
			dispatch(&sw, &evs[i]);
		}
		qos_arm(&sw);
		if (busy) {
			last_busy = sw_mono_ns();
		} else if (sw_mono_ns() - last_busy >= 1000000000ull) {
			cap_flush(&sw.cap);	/* idle: put what the capture holds on disk */
			last_busy = sw_mono_ns();
		}
	}
	teardown(&sw);
	sw_log(&sw, "stopped");
	if (sw.log != stderr)
		fclose(sw.log);
	return 0;
bad:
	usage(stderr);
	return 2;
}
