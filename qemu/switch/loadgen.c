// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * cnuas-loadgen: a load generator for cnuas-switch benchmarks.
 *
 *   cnuas-loadgen --socket PATH | --direct   --mode eth|link
 *                 --size BYTES --count N [--window N] [--latency N]
 *
 * It connects two ports A and B to the switch (or, with --direct, uses one
 * socketpair: the generator's own ceiling, no switch in the path), then
 *  - throughput: a sender thread pushes --count frames A -> B with sendmmsg,
 *    keeping at most --window frames in flight, a receiver thread drains B
 *    with recvmmsg; rate = frames received / (last receive - first send);
 *  - latency: --latency N single frames, send on A, blocking receive on B,
 *    one at a time; p50/p99 of that one-way time.
 * Prints one JSON object on stdout.  The switch must be otherwise idle and,
 * in eth mode, not have A and B's MACs on other ports.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/*
 * BATCH matches the switch's SW_BATCH, so the generator offers frames in the
 * batch size the switch reads.  MAX_FRAME is link mode's maximum, the largest
 * frame of any mode.
 */
#define BATCH		32
#define MAX_FRAME	65536

/*
 * Shared by the sender (main thread) and the receiver thread.  @received and
 * @lost_timeout are atomic because the sender reads them while the receiver
 * writes them: @received for the window, @lost_timeout to stop early.  @t_last
 * is read only after pthread_join(), which orders it.
 */
struct lg {
	int a, b;		/* sender and receiver sockets */
	size_t size;
	uint64_t count, window;
	bool link;
	_Atomic uint64_t received;
	uint64_t t_first, t_last;
	_Atomic uint64_t lost_timeout;
};

/*
 * CLOCK_MONOTONIC in both threads and both ends on one host, so a send time and
 * a receive time can be subtracted.
 */
static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Any socket failure ends the run with status 1: a benchmark whose setup broke
 * has no number worth printing.
 */
static void die(const char *what)
{
	fprintf(stderr, "cnuas-loadgen: %s: %s\n", what, strerror(errno));
	exit(1);
}

/*
 * The same 4 MiB as the switch's ports (PORT_SOCKBUF in port.c), so the
 * generator's sockets are never the narrower pipe.
 */
static void bufsize(int fd)
{
	int sz = 4 << 20;

	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
}

/*
 * A blocking socket: the threads block in sendmmsg/recvmmsg.  The switch puts
 * each connection into the lowest free slot, so on a switch with no other
 * device A takes port 1 and B port 2.
 */
static int connect_port(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	if (fd < 0)
		die("socket");
	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		die(path);
	}
	strcpy(sa.sun_path, path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		die(path);
	bufsize(fd);
	return fd;
}

/* A frame from @src to @dst: Ethernet (MACs 02:00:00:00:00:xx) or CnuasLink. */
static void make_frame(struct lg *lg, uint8_t *f, uint8_t src, uint8_t dst, bool bcast)
{
	/*
	 * The payload is zeros.  @lg->size is at least 14 (main() checks), so
	 * the Ethernet header always fits, and CnuasLink's 8 bytes too.
	 */
	memset(f, 0, lg->size);
	if (lg->link) {
		uint32_t d = bcast ? 0xffffffffu : dst, s = src;

		memcpy(f, &d, 4);
		memcpy(f + 4, &s, 4);
		return;
	}
	if (bcast) {
		memset(f, 0xff, 6);
	} else {
		/*
		 * 02:00:00:00:00:xx: unicast (bit 0 clear) and locally
		 * administered (bit 1 set), so it can clash with no real NIC.
		 */
		f[0] = 0x02;
		f[5] = dst;
	}
	f[6] = 0x02;
	f[11] = src;
	f[12] = 0x88;
	f[13] = 0xb5;	/* local experimental ethertype */
}

/*
 * The receiving thread of the throughput run: counts the frames that arrive on
 * B and when the last of them came, until all --count arrived or B stays silent
 * for a second.  Contents are not checked.
 */
static void *receiver(void *arg)
{
	struct lg *lg = arg;
	/* 2 MiB: static rather than on the thread's stack. */
	static uint8_t bufs[BATCH][MAX_FRAME];
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	struct timeval tv = { .tv_sec = 1 };

	setsockopt(lg->b, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	for (int i = 0; i < BATCH; i++) {
		iov[i].iov_base = bufs[i];
		iov[i].iov_len = MAX_FRAME;
		memset(&msgs[i], 0, sizeof(msgs[i]));
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	while (atomic_load(&lg->received) < lg->count) {
		/*
		 * MSG_WAITFORONE blocks for the first frame only, then takes
		 * what is already there, so a batch never waits to fill.
		 */
		int n = recvmmsg(lg->b, msgs, BATCH, MSG_WAITFORONE, NULL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {	/* a second of silence: the rest is lost */
				atomic_store(&lg->lost_timeout,
					     lg->count - atomic_load(&lg->received));
				break;
			}
			die("recvmmsg");
		}
		lg->t_last = now_ns();
		atomic_fetch_add(&lg->received, (uint64_t)n);
	}
	return NULL;
}

/*
 * Push --count frames A -> B.  Every message of a batch points at the same
 * iovec: the one frame is sent BATCH times per call.  The rate runs from just
 * before the first send to the last receive.
 */
static void throughput(struct lg *lg)
{
	static uint8_t frame[MAX_FRAME];
	struct mmsghdr msgs[BATCH];
	struct iovec iov;
	pthread_t rx;
	uint64_t sent = 0;

	make_frame(lg, frame, 1, 2, false);
	iov.iov_base = frame;
	iov.iov_len = lg->size;
	for (int i = 0; i < BATCH; i++) {
		memset(&msgs[i], 0, sizeof(msgs[i]));
		msgs[i].msg_hdr.msg_iov = &iov;
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	if (pthread_create(&rx, NULL, receiver, lg))
		die("pthread_create");
	lg->t_first = now_ns();
	while (sent < lg->count && !atomic_load(&lg->lost_timeout)) {
		uint64_t inflight = sent - atomic_load(&lg->received);
		uint64_t n = lg->count - sent;
		int k;

		/*
		 * The window keeps the sender from overrunning the switch's
		 * queues and socket buffers: without it the run would measure
		 * queue_full drops, not forwarding.
		 */
		if (inflight + BATCH > lg->window) {
			/* Sleep rather than spin: the switch needs the CPU. */
			struct timespec ts = { .tv_nsec = 20000 };

			nanosleep(&ts, NULL);
			continue;
		}
		if (n > BATCH)
			n = BATCH;
		k = sendmmsg(lg->a, msgs, (unsigned int)n, MSG_NOSIGNAL);
		if (k < 0) {
			/*
			 * Transient: the kernel is short of buffers or a signal
			 * came in.  Retry.
			 */
			if (errno == EINTR || errno == EAGAIN || errno == ENOBUFS)
				continue;
			die("sendmmsg");
		}
		sent += (uint64_t)k;
	}
	pthread_join(rx, NULL);
}

/*
 * Compare, do not subtract: the difference of two u64 need not fit in an int.
 */
static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/*
 * One frame at a time, each received before the next is sent, so the queues are
 * always empty: this is the unloaded one-way latency.  A frame that does not
 * come back within a second means the path loses frames, and the run dies
 * rather than report a skewed percentile.
 */
static void latency(struct lg *lg, uint64_t n, double *p50, double *p99)
{
	static uint8_t frame[MAX_FRAME], buf[MAX_FRAME];
	uint64_t *t = calloc(n, sizeof(*t));
	struct timeval tv = { .tv_sec = 1 };

	if (!t)
		die("calloc");
	setsockopt(lg->b, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	make_frame(lg, frame, 1, 2, false);
	for (uint64_t i = 0; i < n; i++) {
		uint64_t t0 = now_ns();

		if (send(lg->a, frame, lg->size, MSG_NOSIGNAL) < 0)
			die("send");
		if (recv(lg->b, buf, sizeof(buf), 0) < 0)
			die("recv (latency frame lost?)");
		t[i] = now_ns() - t0;
	}
	qsort(t, n, sizeof(*t), cmp_u64);
	*p50 = (double)t[n / 2] / 1000.0;
	/* Microseconds.  The index is clamped for small @n. */
	*p99 = (double)t[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1] / 1000.0;
	free(t);
}

/*
 * Make the switch learn both ends, then drop what the learning frames caused.
 *
 * Without this, eth frames to an unknown MAC would be flooded and link frames
 * to an unknown gpu_id dropped (unknown_gpu): the measured path would not be
 * the unicast one.  A broadcast from each end teaches the switch both sources;
 * the 200 ms drain then removes the flooded copies so they are not counted as
 * throughput.
 */
static void prime(struct lg *lg)
{
	static uint8_t f[MAX_FRAME];
	struct timeval tv = { .tv_usec = 200000 };

	make_frame(lg, f, 2, 1, true);
	if (send(lg->b, f, lg->size, MSG_NOSIGNAL) < 0)
		die("send");
	make_frame(lg, f, 1, 2, true);
	if (send(lg->a, f, lg->size, MSG_NOSIGNAL) < 0)
		die("send");
	setsockopt(lg->a, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(lg->b, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (recv(lg->a, f, sizeof(f), 0) > 0)
		;
	while (recv(lg->b, f, sizeof(f), 0) > 0)
		;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "direct", no_argument, NULL, 'd' },
		{ "mode", required_argument, NULL, 'm' },
		{ "size", required_argument, NULL, 'z' },
		{ "count", required_argument, NULL, 'n' },
		{ "window", required_argument, NULL, 'w' },
		{ "latency", required_argument, NULL, 'l' },
		{ 0 }
	};
	/*
	 * Defaults: one million 64-byte frames, 1024 in flight, 20000 latency
	 * samples.  The values are parsed without checks of their own; the
	 * range check after the loop catches what matters.  Any --mode but
	 * "link" means Ethernet: there is no InfiniBand frame builder.
	 */
	struct lg lg = { .size = 64, .count = 1000000, .window = 1024 };
	const char *path = NULL;
	bool direct = false;
	uint64_t lat_n = 20000;
	double p50 = 0, p99 = 0, secs, fps;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's': path = optarg; break;
		case 'd': direct = true; break;
		case 'm': lg.link = !strcmp(optarg, "link"); break;
		case 'z': lg.size = strtoull(optarg, NULL, 10); break;
		case 'n': lg.count = strtoull(optarg, NULL, 10); break;
		case 'w': lg.window = strtoull(optarg, NULL, 10); break;
		case 'l': lat_n = strtoull(optarg, NULL, 10); break;
		default:
			fprintf(stderr, "usage: cnuas-loadgen --socket PATH|--direct [--mode eth|link]"
					" [--size B] [--count N] [--window N] [--latency N]\n");
			return 2;
		}
	}
	/*
	 * A window below BATCH would never send: throughput() sends a batch
	 * only when a whole BATCH fits in the window.
	 */
	if ((!path && !direct) || lg.size < 14 || lg.size > MAX_FRAME || !lg.count ||
	    lg.window < BATCH) {
		fprintf(stderr, "cnuas-loadgen: need --socket or --direct, 14 <= size <= %d, "
				"count > 0, window >= %d\n", MAX_FRAME, BATCH);
		return 2;
	}
	if (direct) {
		int sv[2];

		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
			die("socketpair");
		bufsize(sv[0]);
		bufsize(sv[1]);
		lg.a = sv[0];
		lg.b = sv[1];
	} else {
		lg.a = connect_port(path);
		lg.b = connect_port(path);
		prime(&lg);
	}
	throughput(&lg);
	secs = (double)(lg.t_last - lg.t_first) / 1e9;
	fps = secs > 0 ? (double)atomic_load(&lg.received) / secs : 0;
	if (lat_n)
		latency(&lg, lat_n, &p50, &p99);
	/*
	 * One JSON object, read by harness/bench/switch.ts.  mbitPerSec counts
	 * frame bytes only, no per-frame overhead.
	 */
	printf("{\"direct\":%s,\"size\":%zu,\"sent\":%llu,\"received\":%llu,\"seconds\":%.6f,"
	       "\"framesPerSec\":%.0f,\"mbitPerSec\":%.1f,\"latencyP50Us\":%.3f,"
	       "\"latencyP99Us\":%.3f}\n",
	       direct ? "true" : "false", lg.size, (unsigned long long)lg.count,
	       (unsigned long long)atomic_load(&lg.received), secs, fps,
	       fps * (double)lg.size * 8 / 1e6, p50, p99);
	close(lg.a);
	close(lg.b);
	return 0;
}
