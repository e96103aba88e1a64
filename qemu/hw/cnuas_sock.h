/*
 * The wire both Cnuas device models share: a connection to the fabric
 * daemon's AF_UNIX SOCK_SEQPACKET socket (one datagram = one frame), with
 * enlarged socket buffers, end-of-connection detection, and reconnection with
 * back-off on QEMU_CLOCK_VIRTUAL (deterministic under qtest).
 *
 * What a model does with a frame, and what a link change means to its
 * registers, stays in the model; docs/devices.md ("Both devices": the
 * fabric socket, reconnect, saved state) is the behaviour this implements.
 *
 * A socket set up while an incoming saved state is pending (-incoming) is
 * held: nothing is read from it (cnuas_sock_recv answers AGAIN, reading
 * stays off whatever the model asks) until the loaded VM first runs; then
 * the model hears ops->reconnected, as after a switch restart. Frames queued
 * meanwhile wait in the socket and meet the registers the guest had, not
 * the reset state the load starts from.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_CNUAS_SOCK_H
#define HW_CNUAS_SOCK_H

#include "qemu/main-loop.h"
#include "qemu/timer.h"

/* Retry delays after a loss: the first, then doubling up to the last. */
#define CNUAS_SOCK_RETRY_MIN_NS     (100 * SCALE_MS)
#define CNUAS_SOCK_RETRY_MAX_NS     (2000 * SCALE_MS)

/* cnuas_sock_recv() results besides a datagram length (0 = empty datagram). */
#define CNUAS_SOCK_AGAIN    (-1)    /* nothing to read now */
#define CNUAS_SOCK_GONE     (-2)    /* the connection ended: drop the link */

typedef enum CnuasSockSent {
    CNUAS_SOCK_SENT,        /* the whole datagram is queued to the peer */
    CNUAS_SOCK_FULL,        /* no room in the socket (after any wait) */
    CNUAS_SOCK_BROKEN,      /* the peer is gone: drop the link */
} CnuasSockSent;

typedef struct CnuasSockOps {
    /* The socket has data; called only while reading is on. */
    IOHandler *readable;
    /*
     * A retry brought the link back, or the VM first runs after a saved
     * state was loaded — then with the link up or down (cnuas_sock_is_up).
     * Not called for the first attempt otherwise.
     */
    void (*reconnected)(void *opaque);
    /*
     * A connection that ends after living at least this long is retried
     * after CNUAS_SOCK_RETRY_MIN_NS; one that ends sooner counts as a failed
     * attempt and doubles the delay. 0: every loss restarts at the minimum.
     */
    int64_t stable_ns;
} CnuasSockOps;

typedef struct CnuasSock {
    const CnuasSockOps *ops;
    void *opaque;               /* handed to the ops */
    const char *path;           /* NULL: no wire, the link stays down */
    char *label;                /* log prefix, e.g. "cnuasgpu 3" */

    int fd;                     /* -1 while the link is down */
    bool want_reading;          /* what the model last asked for */
    bool reading;               /* ops->readable is installed on fd */
    bool held;                  /* an incoming state is pending: no reading */
    VMChangeStateEntry *vmstate_change;
    QEMUTimer retry_timer;
    int64_t retry_delay_ns;
    int64_t up_since_ns;
} CnuasSock;

/*
 * Check a socket path property at realize, before anything is set up;
 * @what names the property in the error ("cnuas-vnic: socket_path").
 */
bool cnuas_sock_path_ok(const char *path, const char *what, Error **errp);

/*
 * Set @sock up and make the first connection attempt; when it fails the
 * retries start. The caller turns reading on (cnuas_sock_set_reading) when
 * it is ready for frames. @label is copied.
 */
void cnuas_sock_init(CnuasSock *sock, const CnuasSockOps *ops, void *opaque,
                     const char *path, const char *label);
/* Close the connection and stop retrying (unrealize). */
void cnuas_sock_cleanup(CnuasSock *sock);

static inline bool cnuas_sock_is_up(const CnuasSock *sock)
{
    return sock->fd >= 0;
}

/*
 * Read the socket or not (back-pressure while a frame waits for the guest);
 * held sockets start reading when the loaded VM runs, if still asked to.
 */
void cnuas_sock_set_reading(CnuasSock *sock, bool on);

/*
 * The link is lost: close the connection and schedule the next attempt.
 * False when it was already down.
 */
bool cnuas_sock_drop(CnuasSock *sock);

/*
 * Send one datagram. With no room, wait up to @wait_ms for some (0: do not
 * wait). The caller decides what FULL and BROKEN mean for its link.
 */
CnuasSockSent cnuas_sock_send(CnuasSock *sock, const void *buf, size_t len,
                              int wait_ms);

/*
 * Receive one datagram into @buf. Returns its full length, which is larger
 * than @size when it did not fit (it is consumed and must be dropped); 0 for
 * an empty datagram (logged, dropped); CNUAS_SOCK_AGAIN or CNUAS_SOCK_GONE.
 */
ssize_t cnuas_sock_recv(CnuasSock *sock, void *buf, size_t size);

#endif
