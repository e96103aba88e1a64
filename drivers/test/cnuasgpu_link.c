// SPDX-License-Identifier: GPL-2.0
/*
 * cnuasgpu_link: CnuasLink frames between accelerators, for the cnuaslink
 * row and the GPU bench.
 *
 *   cnuasgpu_link send DEV DST_GPU_ID COUNT [MAX_PAYLOAD]
 *   cnuasgpu_link recv DEV SRC_GPU_ID COUNT ioctl|poll [MAX_PAYLOAD]
 *       COUNT CnuasLink frames whose payload sizes cycle through 1 byte ..
 *       MAX_PAYLOAD; the receiver checks every byte, the order, that each
 *       frame came from SRC_GPU_ID to this device, and skips broadcast
 *       frames (the "hello" that teaches the switch a gpu_id).  It waits in
 *       a blocking receive (ioctl) or in poll() (POLLIN, then a non-blocking
 *       receive); afterwards an idle wait must time out.  recv_frames counts
 *       the frames that passed.
 *   cnuasgpu_link down DEV DST_GPU_ID
 *       a send must fail with ENOLINK.
 *   cnuasgpu_link bench TX_DEV RX_DEV DST_GPU_ID SIZE SECONDS
 *       frames/s and MiB/s of SIZE-byte payloads sent for about SECONDS
 *       from TX_DEV to DST_GPU_ID and received (length and order checked)
 *       on RX_DEV by a child process; one "bench NAME VALUE UNIT" line per
 *       number.
 *
 * Exits 0 when every check passed, 1 on a mismatch, 2 on usage errors.
 */
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cnuasgpu_test.h"

static const uint32_t link_sizes[] = {
	1, 2, 3, 4, 7, 8, 9, 63, 64, 100, 511, 1500, 4096, 4097, 9000,
	16384, 32768, 65000, CNUASGPU_LINK_MAX_PAYLOAD,
};
#define N_LINK_SIZES (sizeof(link_sizes) / sizeof(link_sizes[0]))

/* Sequence number of the frame that ends a timed run (never a real one). */
#define LINK_END_SEQ	0xffffffffu

/* Which payload sizes a run sends and how much of each frame is checked. */
struct link_plan {
	uint32_t fixed;		/* every payload this long; 0: cycle link_sizes */
	uint32_t max;		/* cap on the cycled sizes */
	int every_byte;		/* check the whole pattern, not just length and seq */
};

static uint32_t link_size(const struct link_plan *p, uint32_t seq)
{
	uint32_t s;

	if (p->fixed)
		return p->fixed;
	s = link_sizes[seq % N_LINK_SIZES];
	return s > p->max ? p->max : s;
}

/* Payload of frame @seq: its sequence number first, then a pattern. */
static void link_fill(uint8_t *p, uint32_t len, uint32_t seq)
{
	fill(p, len, seq);
	if (len >= 4)
		memcpy(p, &seq, 4);
}

static int link_send_frame(int fd, uint32_t dst, const void *buf, uint32_t len)
{
	struct cnuasgpu_link_send s = {
		.user_ptr = (uintptr_t)buf,
		.len = len,
		.dst_gpu_id = dst,
		.timeout_ms = 10000,
	};

	if (ioctl(fd, CNUASGPU_IOC_LINK_SEND, &s)) {
		fprintf(stderr, "FAIL send of %u bytes: %s\n", len, strerror(errno));
		return -1;
	}
	return 0;
}

/* How long a receive waits for the next frame before the run fails. */
#define LINK_RECV_WAIT_MS	30000
/* How long an idle receiver waits to show that nothing more arrives. */
#define LINK_IDLE_MS		300

/* How link-recv waits for a frame. */
enum link_wait {
	WAIT_IOCTL,	/* a blocking LINK_RECV */
	WAIT_POLL,	/* poll() for POLLIN, then a non-blocking LINK_RECV */
};

/* One LINK_RECV into @buf (room for any payload); 0, or -1 with errno. */
static int link_recv_ioctl(int fd, uint8_t *buf, uint32_t flags,
			   uint32_t timeout_ms, struct cnuasgpu_link_recv *r)
{
	memset(r, 0, sizeof(*r));
	r->user_ptr = (uintptr_t)buf;
	r->buf_size = CNUASGPU_LINK_MAX_PAYLOAD;
	r->timeout_ms = timeout_ms;
	r->flags = flags;
	return ioctl(fd, CNUASGPU_IOC_LINK_RECV, r);
}

/* poll() @fd for POLLIN: 1 ready, 0 timed out, -1 error or other events. */
static int link_poll(int fd, int timeout_ms, short *revents)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n = poll(&p, 1, timeout_ms);

	*revents = p.revents;
	if (n <= 0)
		return n;
	return p.revents == POLLIN ? 1 : -1;
}

/*
 * Next frame not addressed to everyone: broadcast "hello" frames only teach
 * the switch a gpu_id.  Returns the payload length (the header fields in @r),
 * or -1.  With @polls the wait is poll(): POLLIN has to come, and then a
 * non-blocking receive has to find the frame (this is its only reader);
 * *polls counts the POLLINs.
 */
static int64_t link_recv_frame(int fd, uint8_t *buf,
			       struct cnuasgpu_link_recv *r, long *polls)
{
	short revents;
	int ready;

	do {
		if (polls) {
			ready = link_poll(fd, LINK_RECV_WAIT_MS, &revents);
			if (ready != 1) {
				fprintf(stderr, "FAIL poll: %s (revents 0x%x)\n",
					ready ? strerror(errno) : "no POLLIN in time",
					revents);
				return -1;
			}
			(*polls)++;
		}
		if (link_recv_ioctl(fd, buf, polls ? CNUASGPU_LINK_RECV_NONBLOCK : 0,
				    polls ? 0 : LINK_RECV_WAIT_MS, r)) {
			fprintf(stderr, "FAIL recv%s: %s\n",
				polls ? " after POLLIN" : "", strerror(errno));
			return -1;
		}
	} while (r->dst_gpu_id == CNUASGPU_LINK_BROADCAST);
	return r->len;
}

static uint32_t link_seq_of(const uint8_t *buf, uint32_t len)
{
	uint32_t seq = 0;

	if (len >= 4)
		memcpy(&seq, buf, 4);
	return seq;
}

/* 0 when @buf (@len bytes) is frame @seq of plan @p; @want is scratch. */
static int link_check(const struct link_plan *p, const uint8_t *buf,
		      uint32_t len, uint32_t seq, uint8_t *want)
{
	uint32_t expect = link_size(p, seq);
	int ok = len == expect;

	if (ok && p->every_byte) {
		link_fill(want, expect, seq);
		ok = !memcmp(buf, want, expect);
	} else if (ok) {
		ok = link_seq_of(buf, len) == seq;
	}
	if (!ok)
		fprintf(stderr, "FAIL frame %u: %u bytes (seq %u), expected %u bytes\n",
			seq, len, link_seq_of(buf, len), expect);
	return !ok;
}

static int link_send(const char *path, uint32_t dst, long count, uint32_t max)
{
	const struct link_plan plan = { .max = max, .every_byte = 1 };
	uint8_t *buf = malloc(CNUASGPU_LINK_MAX_PAYLOAD);
	double t0 = now_sec(), dt;
	uint64_t bytes = 0;
	int fd = open_dev(path);
	long i;

	if (!buf)
		return 1;
	for (i = 0; i < count; i++) {
		uint32_t len = link_size(&plan, i);

		link_fill(buf, len, i);
		if (link_send_frame(fd, dst, buf, len)) {
			fprintf(stderr, "FAIL send %ld\n", i);
			return 1;
		}
		bytes += len;
	}
	dt = now_sec() - t0;
	printf("sent_frames=%ld\nsent_bytes=%" PRIu64 "\nsend_sec=%.3f\n",
	       count, bytes, dt);
	free(buf);
	close(fd);
	return 0;
}

/* How an idle receive ended, as link_recv_idle prints it. */
static const char *idle_outcome(int ret, int err)
{
	static char other[32];

	if (!ret)
		return "frame";
	if (err == ETIMEDOUT)
		return "ETIMEDOUT";
	if (err == EAGAIN)
		return "EAGAIN";
	snprintf(other, sizeof(other), "errno-%d", err);
	return other;
}

/*
 * Once every frame is in, nothing more waits: poll() times out without
 * POLLIN (poll mode) or a blocking receive times out (ioctl mode), and a
 * non-blocking one finds nothing.  Prints idle_poll / idle_recv / idle_nonblock.
 */
static void link_recv_idle(int fd, uint8_t *buf, enum link_wait wait)
{
	struct cnuasgpu_link_recv r;
	short revents;
	int ret, err;

	if (wait == WAIT_POLL) {
		ret = link_poll(fd, LINK_IDLE_MS, &revents);
		CHECK(ret == 0, "idle poll: %d (revents 0x%x), expected a timeout",
		      ret, revents);
		printf("idle_poll=%s\n", ret == 0 ? "timeout" : "ready");
	} else {
		ret = link_recv_ioctl(fd, buf, 0, LINK_IDLE_MS, &r);
		err = errno;
		CHECK(ret == -1 && err == ETIMEDOUT, "idle recv: %s",
		      idle_outcome(ret, err));
		printf("idle_recv=%s\n", idle_outcome(ret, err));
	}
	ret = link_recv_ioctl(fd, buf, CNUASGPU_LINK_RECV_NONBLOCK, 0, &r);
	err = errno;
	CHECK(ret == -1 && err == EAGAIN, "idle non-blocking recv: %s",
	      idle_outcome(ret, err));
	printf("idle_nonblock=%s\n", idle_outcome(ret, err));
}

/*
 * COUNT frames from SRC, each checked: addressed to this device, from SRC,
 * the right length and every byte.  recv_frames counts the frames that
 * passed; the run stops at the first that did not.
 */
static int link_recv(const char *path, uint32_t src, long count,
		     enum link_wait wait, uint32_t max)
{
	const struct link_plan plan = { .max = max, .every_byte = 1 };
	uint8_t *buf = malloc(CNUASGPU_LINK_MAX_PAYLOAD);
	uint8_t *want = malloc(CNUASGPU_LINK_MAX_PAYLOAD);
	struct cnuasgpu_link_recv r;
	struct cnuasgpu_info inf;
	double t0 = 0, dt;
	uint64_t bytes = 0;
	uint32_t from = 0, to = 0;	/* header of the last frame that passed */
	long verified = 0, polls = 0;
	int fd = open_dev(path);

	if (!buf || !want || info(fd, &inf)) {
		fprintf(stderr, "setup: %s\n", strerror(errno));
		return 1;
	}
	while (verified < count) {
		int64_t len = link_recv_frame(fd, buf, &r,
					      wait == WAIT_POLL ? &polls : NULL);

		if (len < 0)
			break;
		if (verified == 0)
			t0 = now_sec();
		if (r.src_gpu_id != src || r.dst_gpu_id != inf.gpu_id) {
			fprintf(stderr, "FAIL frame %ld: from gpu_id %u to %u, expected %u to %u\n",
				verified, r.src_gpu_id, r.dst_gpu_id, src, inf.gpu_id);
			break;
		}
		if (link_check(&plan, buf, len, verified, want))
			break;
		verified++;
		bytes += len;
		from = r.src_gpu_id;
		to = r.dst_gpu_id;
	}
	dt = verified ? now_sec() - t0 : 0;
	printf("recv_frames=%ld\nrecv_bytes=%" PRIu64 "\nrecv_sec=%.3f\n",
	       verified, bytes, dt);
	if (verified)
		printf("recv_src_gpu_id=%u\nrecv_dst_gpu_id=%u\n", from, to);
	if (wait == WAIT_POLL)
		printf("poll_ready=%ld\n", polls);
	CHECK(verified == count, "%ld of %ld frames arrived intact", verified, count);
	if (verified == count)
		link_recv_idle(fd, buf, wait);
	free(buf);
	free(want);
	close(fd);
	return failures ? 1 : 0;
}

static int link_down(const char *path, uint32_t dst)
{
	uint8_t buf[64] = { 0 };
	struct cnuasgpu_link_send s = {
		.user_ptr = (uintptr_t)buf,
		.len = sizeof(buf),
		.dst_gpu_id = dst,
		.timeout_ms = 1000,
	};
	int fd = open_dev(path);
	int ret = ioctl(fd, CNUASGPU_IOC_LINK_SEND, &s);

	CHECK(ret == -1 && errno == ENOLINK, "send with the link down: ret %d (%s)",
	      ret, strerror(errno));
	close(fd);
	return failures ? 1 : 0;
}

/*
 * "bench" flow control.  The switch drops what a port's egress queue
 * cannot hold (queue_full), so a sender that outruns its receiver loses
 * frames.  The receiver grants credit with small acknowledgement frames back
 * over the link; the sender keeps at most link_window() frames unacknowledged,
 * well inside the switch's queue.  Each ack carries the run's nonce so a late
 * ack of an earlier run is not mistaken for credit.
 */
#define LINK_ACK_MAGIC	0x4b434121u	/* "!ACK" */

struct link_ack {
	uint32_t magic;
	uint32_t nonce;
	uint32_t frames;	/* received so far */
};

static uint32_t link_window(uint32_t size)
{
	uint32_t w = (1u << 20) / size;

	return w > 128 ? 128 : w < 8 ? 8 : w;
}

/* Wait for acks until fewer than @window of @sent frames are unacknowledged. */
static int link_await_credit(int fd, uint8_t *buf, uint32_t nonce, uint32_t sent,
			     uint32_t *acked, uint32_t window)
{
	while (sent - *acked >= window) {
		struct cnuasgpu_link_recv r;
		int64_t len = link_recv_frame(fd, buf, &r, NULL);
		struct link_ack ack;

		if (len < 0)
			return -1;
		if (len != sizeof(ack)) {
			fprintf(stderr, "FAIL a %" PRId64 "-byte frame where an ack was due\n", len);
			return -1;
		}
		memcpy(&ack, buf, sizeof(ack));
		if (ack.magic != LINK_ACK_MAGIC) {
			fprintf(stderr, "FAIL a frame that is no ack where an ack was due\n");
			return -1;
		}
		if (ack.nonce == nonce && ack.frames > *acked)
			*acked = ack.frames;
	}
	return 0;
}

/*
 * Receiving side of "bench": frames in order until the end frame, an ack
 * every half window; the clock runs from the first frame, in slices.
 */
static int bench_link_rx(const char *path, const struct link_plan *plan,
			 uint32_t nonce, double seconds)
{
	const uint32_t ack_every = link_window(plan->fixed) / 2;
	uint8_t *buf = malloc(CNUASGPU_LINK_MAX_PAYLOAD);
	double t0 = 0, dt, now, slice_t0 = 0, rates[4 * BENCH_TRIALS], fps;
	struct cnuasgpu_link_recv r;
	uint32_t i, slice_i0 = 0;
	int slices = 0;
	char label[32];
	int fd = open_dev(path);

	if (!buf)
		return 1;
	for (i = 0;; i++) {
		int64_t len = link_recv_frame(fd, buf, &r, NULL);

		if (len < 0)
			return 1;
		now = now_sec();
		if (i == 0)
			t0 = slice_t0 = now;
		if (len == plan->fixed && link_seq_of(buf, len) == LINK_END_SEQ)
			break;
		if (link_check(plan, buf, len, i, NULL))
			return 1;
		/* Frames 0..i arrived: i intervals since the first. */
		if (now - slice_t0 >= seconds / BENCH_TRIALS && slices < 4 * BENCH_TRIALS) {
			rates[slices++] = (i - slice_i0) / (now - slice_t0);
			slice_t0 = now;
			slice_i0 = i;
		}
		if ((i + 1) % ack_every == 0) {
			struct link_ack ack = { LINK_ACK_MAGIC, nonce, i + 1 };

			if (link_send_frame(fd, r.src_gpu_id, &ack, sizeof(ack)))
				return 1;
		}
	}
	dt = now_sec() - t0;
	printf("recv_frames=%u\nrecv_slices=%d\n", i, slices);
	if (i < 2 || dt <= 0) {
		fprintf(stderr, "FAIL only %u frames arrived: nothing to time\n", i);
		return 1;
	}
	/* i frames and the end frame arrived: i intervals after the first. */
	fps = slices ? median(rates, slices) : i / dt;
	snprintf(label, sizeof(label), "%uB", plan->fixed);
	bench_line("gpuLinkFramesPerSec", label, fps, "frames/s");
	bench_line("gpuLinkMiBPerSec", label, fps * plan->fixed / MIB, "MiB/s");
	free(buf);
	close(fd);
	return 0;
}

/*
 * SIZE-byte frames from TX_DEV to DST for about SECONDS, received on RX_DEV
 * by a child process; the end frame tells the receiver to stop.  The switch
 * must already know both ports (a broadcast from each device beforehand).
 */
static int bench_link(const char *tx_path, const char *rx_path, uint32_t dst,
		      uint32_t size, double seconds)
{
	const struct link_plan plan = { .fixed = size };
	const uint32_t window = link_window(size), nonce = (uint32_t)getpid();
	uint8_t *buf = malloc(size), *ackbuf = malloc(CNUASGPU_LINK_MAX_PAYLOAD);
	uint32_t i, acked = 0, end = LINK_END_SEQ;
	int fd, status, ret = 0;
	double t0;
	pid_t rx;

	if (!buf || !ackbuf)
		return 1;
	fd = open_dev(tx_path);
	fflush(stdout);
	rx = fork();
	if (rx < 0) {
		fprintf(stderr, "fork: %s\n", strerror(errno));
		return 1;
	}
	if (rx == 0) {
		ret = bench_link_rx(rx_path, &plan, nonce, seconds);
		fflush(stdout);	/* _exit() leaves stdio buffers alone */
		_exit(ret);
	}
	fill(buf, size, 0);
	t0 = now_sec();
	for (i = 0; now_sec() - t0 < seconds; i++) {
		memcpy(buf, &i, 4);
		if (link_await_credit(fd, ackbuf, nonce, i, &acked, window) ||
		    link_send_frame(fd, dst, buf, size)) {
			ret = 1;
			break;
		}
	}
	memcpy(buf, &end, 4);
	if (ret || link_await_credit(fd, ackbuf, nonce, i, &acked, window) ||
	    link_send_frame(fd, dst, buf, size)) {
		kill(rx, SIGTERM);
		ret = 1;
	}
	if (waitpid(rx, &status, 0) != rx || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0) {
		fprintf(stderr, "FAIL the receiver on %s did not finish cleanly\n", rx_path);
		ret = 1;
	}
	printf("sent_frames=%u\nwindow_frames=%u\n", i, window);
	free(buf);
	free(ackbuf);
	close(fd);
	return ret;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: cnuasgpu_link send DEV DST COUNT [MAX] |\n"
		"       recv DEV SRC COUNT ioctl|poll [MAX] | down DEV DST |\n"
		"       bench TX_DEV RX_DEV DST SIZE SECONDS\n");
	return 2;
}

int main(int argc, char **argv)
{
	uint32_t max = CNUASGPU_LINK_MAX_PAYLOAD;

	if (argc < 3)
		return usage();
	if (!strcmp(argv[1], "send") && argc >= 5) {
		if (argc > 5)
			max = strtoul(argv[5], NULL, 0);
		return link_send(argv[2], strtoul(argv[3], NULL, 0),
				 strtol(argv[4], NULL, 0), max);
	}
	if (!strcmp(argv[1], "recv") && argc >= 6) {
		enum link_wait wait;

		if (!strcmp(argv[5], "poll"))
			wait = WAIT_POLL;
		else if (!strcmp(argv[5], "ioctl"))
			wait = WAIT_IOCTL;
		else
			return usage();
		if (argc > 6)
			max = strtoul(argv[6], NULL, 0);
		return link_recv(argv[2], strtoul(argv[3], NULL, 0),
				 strtol(argv[4], NULL, 0), wait, max);
	}
	if (!strcmp(argv[1], "down") && argc == 4)
		return link_down(argv[2], strtoul(argv[3], NULL, 0));
	if (!strcmp(argv[1], "bench") && argc == 7) {
		unsigned long size = strtoul(argv[5], NULL, 0);
		double sec = strtod(argv[6], NULL);

		/* The sequence number takes the first 4 bytes of every payload. */
		if (size < 4 || size > CNUASGPU_LINK_MAX_PAYLOAD || !(sec > 0 && sec <= 60))
			return usage();
		return bench_link(argv[2], argv[3], strtoul(argv[4], NULL, 0), size, sec);
	}
	return usage();
}
