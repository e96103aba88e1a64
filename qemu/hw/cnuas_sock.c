/*
 * The fabric socket shared by cnuas-vnic and cnuasgpu; see cnuas_sock.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/cutils.h"
#include "qemu/log.h"
#include "qemu/units.h"
#include "qapi/error.h"
#include "sysemu/runstate.h"
#include "cnuas_sock.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <poll.h>

/* Socket buffers asked for at connect: a burst of maximum-size frames fits. */
#define CNUAS_SOCK_BUF_BYTES    (4 * MiB)

bool cnuas_sock_path_ok(const char *path, const char *what, Error **errp)
{
    struct sockaddr_un sa;

    if (path && strlen(path) >= sizeof(sa.sun_path)) {
        error_setg(errp, "%s is longer than %zu bytes", what,
                   sizeof(sa.sun_path) - 1);
        return false;
    }
    return true;
}

static void cnuas_sock_set_buffer(int fd, int force_opt, int opt)
{
    int size = CNUAS_SOCK_BUF_BYTES;

    /*
     * The FORCE variant (CAP_NET_ADMIN, i.e. QEMU run as root) lifts the
     * net.core.*mem_max ceiling; otherwise the plain option gets what that
     * ceiling allows. The switch sizes its end of the wire the same way.
     */
    if (setsockopt(fd, SOL_SOCKET, force_opt, &size, sizeof(size)) < 0) {
        setsockopt(fd, SOL_SOCKET, opt, &size, sizeof(size));
    }
}

/* One non-blocking connection attempt; true when the link came up. */
static bool cnuas_sock_connect(CnuasSock *sock)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd;

    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return false;
    }
    cnuas_sock_set_buffer(fd, SO_SNDBUFFORCE, SO_SNDBUF);
    cnuas_sock_set_buffer(fd, SO_RCVBUFFORCE, SO_RCVBUF);
    /* length checked at realize (cnuas_sock_path_ok) */
    pstrcpy(sa.sun_path, sizeof(sa.sun_path), sock->path);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        close(fd);
        return false;
    }
    sock->fd = fd;
    sock->reading = false;
    sock->up_since_ns = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    return true;
}

static void cnuas_sock_schedule_retry(CnuasSock *sock)
{
    timer_mod(&sock->retry_timer, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) +
              sock->retry_delay_ns);
}

static void cnuas_sock_backoff(CnuasSock *sock)
{
    sock->retry_delay_ns = MIN(sock->retry_delay_ns * 2,
                               CNUAS_SOCK_RETRY_MAX_NS);
}

static void cnuas_sock_retry(void *opaque)
{
    CnuasSock *sock = opaque;

    if (sock->fd >= 0) {
        return;
    }
    if (cnuas_sock_connect(sock)) {
        /* while held, the VM's first run tells the model */
        if (!sock->held) {
            sock->ops->reconnected(sock->opaque);
        }
        return;
    }
    cnuas_sock_backoff(sock);
    cnuas_sock_schedule_retry(sock);
}

static void cnuas_sock_apply_reading(CnuasSock *sock)
{
    bool on = sock->want_reading && !sock->held && sock->fd >= 0;

    if (on != sock->reading) {
        qemu_set_fd_handler(sock->fd, on ? sock->ops->readable : NULL, NULL,
                            sock->opaque);
        sock->reading = on;
    }
}

/*
 * The loaded VM runs: what was held is let go, and the model hears it as a
 * reconnect whether or not the link is up now (the guest's saved view of
 * the link may be the opposite: the change is the model's to signal; with
 * the link down, a later retry tells it again when it comes up).
 */
static void cnuas_sock_vm_state_change(void *opaque, bool running,
                                       RunState state)
{
    CnuasSock *sock = opaque;

    if (!running || !sock->held) {
        return;
    }
    sock->held = false;
    cnuas_sock_apply_reading(sock);
    sock->ops->reconnected(sock->opaque);
}

void cnuas_sock_init(CnuasSock *sock, const CnuasSockOps *ops, void *opaque,
                     const char *path, const char *label)
{
    sock->ops = ops;
    sock->opaque = opaque;
    sock->path = path;
    sock->label = g_strdup(label);
    sock->fd = -1;
    sock->want_reading = false;
    sock->reading = false;
    sock->held = runstate_check(RUN_STATE_INMIGRATE);
    sock->vmstate_change =
        qemu_add_vm_change_state_handler(cnuas_sock_vm_state_change, sock);
    sock->retry_delay_ns = CNUAS_SOCK_RETRY_MIN_NS;
    timer_init_ns(&sock->retry_timer, QEMU_CLOCK_VIRTUAL, cnuas_sock_retry,
                  sock);
    /* Not fatal: the device works with its link down and keeps trying. */
    if (path && !cnuas_sock_connect(sock)) {
        cnuas_sock_schedule_retry(sock);
    }
}

void cnuas_sock_cleanup(CnuasSock *sock)
{
    qemu_del_vm_change_state_handler(sock->vmstate_change);
    sock->vmstate_change = NULL;
    timer_del(&sock->retry_timer);
    if (sock->fd >= 0) {
        qemu_set_fd_handler(sock->fd, NULL, NULL, NULL);
        close(sock->fd);
        sock->fd = -1;
    }
    sock->reading = false;
    g_free(sock->label);
    sock->label = NULL;
}

void cnuas_sock_set_reading(CnuasSock *sock, bool on)
{
    sock->want_reading = on;
    cnuas_sock_apply_reading(sock);
}

bool cnuas_sock_drop(CnuasSock *sock)
{
    int64_t lived;

    if (sock->fd < 0) {
        return false;
    }
    cnuas_sock_set_reading(sock, false);    /* the model asks again once up */
    close(sock->fd);
    sock->fd = -1;
    /*
     * A switch that accepts and closes at once (its port is down) must not
     * make a device flap: a short-lived connection counts as a failed try.
     */
    lived = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) - sock->up_since_ns;
    if (lived >= sock->ops->stable_ns) {
        sock->retry_delay_ns = CNUAS_SOCK_RETRY_MIN_NS;
    } else {
        cnuas_sock_backoff(sock);
    }
    cnuas_sock_schedule_retry(sock);
    return true;
}

CnuasSockSent cnuas_sock_send(CnuasSock *sock, const void *buf, size_t len,
                              int wait_ms)
{
    for (;;) {
        ssize_t n = send(sock->fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
        struct pollfd pfd = { .fd = sock->fd, .events = POLLOUT };

        if (n == (ssize_t)len) {
            return CNUAS_SOCK_SENT;
        }
        if (n >= 0) {
            /* A SEQPACKET send is all or nothing; anything else is broken. */
            return CNUAS_SOCK_BROKEN;
        }
        if (errno == EINTR) {
            continue;
        }
        /* ENOBUFS is the kernel short of memory, not a dead peer. */
        if (errno == ENOBUFS) {
            return CNUAS_SOCK_FULL;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            return CNUAS_SOCK_BROKEN;
        }
        /* The peer is slow: wait a bounded time for room, if allowed. */
        if (wait_ms <= 0 || poll(&pfd, 1, wait_ms) <= 0) {
            return CNUAS_SOCK_FULL;
        }
    }
}

/*
 * SOCK_SEQPACKET reads 0 bytes both for an empty datagram and at end of
 * file; only a hang-up seen by poll tells them apart.
 */
static bool cnuas_sock_peer_hung_up(CnuasSock *sock)
{
    struct pollfd pfd = { .fd = sock->fd, .events = POLLIN | POLLRDHUP };

    return poll(&pfd, 1, 0) > 0 &&
           (pfd.revents & (POLLHUP | POLLRDHUP | POLLERR));
}

ssize_t cnuas_sock_recv(CnuasSock *sock, void *buf, size_t size)
{
    if (sock->held) {
        return CNUAS_SOCK_AGAIN;
    }
    for (;;) {
        /* MSG_TRUNC: the full length even when the datagram did not fit */
        ssize_t n = recv(sock->fd, buf, size, MSG_DONTWAIT | MSG_TRUNC);

        if (n > 0) {
            return n;
        }
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return errno == EAGAIN || errno == EWOULDBLOCK ?
                   CNUAS_SOCK_AGAIN : CNUAS_SOCK_GONE;
        }
        if (cnuas_sock_peer_hung_up(sock)) {
            return CNUAS_SOCK_GONE;
        }
        qemu_log_mask(LOG_GUEST_ERROR, "%s: empty frame received, dropped\n",
                      sock->label);
        return 0;
    }
}
