/*
 * watch.c - the latest value with a version, for any number of receivers.
 *
 * Design notes
 * ------------
 * State. The lock guards the value, the queue of waiting receivers and the counters. The
 * version and the closed flag are atomics written under the lock (release), so that "has
 * anything changed for this cursor?" - the question a polling receiver asks again and
 * again - is answered by two acquire loads and no lock (band_watch_try_recv()'s
 * BAND_EAGAIN, band_watch_version()).
 *
 * Cursors. A band_watch_rx is caller memory that the watch does not know about. Its seen
 * version and its pending-op pointer are only written under the watch's lock, with atomic
 * stores, so the lock-free check may read them at any time without a data race. A cursor
 * has at most one pending wait (rx->_op != NULL), which keeps "one owner, one operation"
 * checkable: a second wait, a read or a mark on a cursor that waits answers BAND_EBUSY.
 *
 * Invariant: every queued op's cursor has seen the current version (otherwise the wait
 * would have completed at once). So a send completes every queued op - with the new value
 * copied in and the cursor advanced, under the lock - and close completes every queued op
 * with BAND_ECLOSED: none of them can have missed the last version.
 *
 * Skipping. A receiver always gets the value current when its wait completes; versions
 * sent while it was not waiting are never stored anywhere, so a slow receiver skips them
 * and memory stays one value whatever the rate of sends.
 *
 * Wakes. Completed ops go on a local wake list and are woken after unlocking; the next
 * pointer is read before each wake (a wake may free or resubmit its op).
 *
 * The blocking wait keeps its op and a parker on the caller's stack (struct
 * watch_blocker): the core's band__blocker has no room for the cursor and output buffer
 * every queued op here must carry, so this file pairs the op with a parker itself, with
 * the same timeout rule (cancel at the deadline; if the cancel loses, wait for the wake).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "band/watch.h"
#include "core/block.h"
#include "core/parker.h"
#include "core/waitq.h"

struct band_watch {
    pthread_mutex_t lock;     /* guards everything below except the atomics' reads */
    _Atomic uint64_t version; /* stored under the lock; read lock-free */
    atomic_int closed;        /* stored under the lock; read lock-free */
    struct band__waitq q;     /* waiting receivers (band_watch_recv_op) */
    size_t value_size;
    uint64_t sends, refused, delivered, queued, timeouts, cancels, closed_fails;
    unsigned char value[]; /* value_size bytes */
};

static void watch_cancel_locked(struct band__waitq *q, band_waiter *w, int reason,
                                struct band__wakelist *wl);

static const struct band__waitq_ops watch_waitq_ops = {watch_cancel_locked};

/* Cursor fields: written under the watch's lock, read anywhere. */
static uint64_t rx_seen(const band_watch_rx *rx)
{
    return __atomic_load_n(&rx->_seen, __ATOMIC_ACQUIRE);
}

static void rx_set_seen(band_watch_rx *rx, uint64_t v)
{
    __atomic_store_n(&rx->_seen, v, __ATOMIC_RELEASE);
}

static void *rx_op(const band_watch_rx *rx)
{
    return __atomic_load_n(&rx->_op, __ATOMIC_ACQUIRE);
}

static void rx_set_op(band_watch_rx *rx, void *op)
{
    __atomic_store_n(&rx->_op, op, __ATOMIC_RELEASE);
}

/* Copy @n bytes unless there are none or nowhere to put them. */
static void copy_value(void *dst, const void *src, size_t n)
{
    if (n > 0 && dst != NULL && src != NULL)
        memcpy(dst, src, n);
}

/* ---------------------------------------------------------------- lifecycle */

int band_watch_create(band_watch **out, size_t value_size, const void *initial)
{
    if (out == NULL)
        return BAND_EINVAL;
    if (value_size > SIZE_MAX - sizeof(band_watch))
        return BAND_ENOMEM;
    band_watch *w = malloc(sizeof(*w) + value_size);
    if (w == NULL)
        return BAND_ENOMEM;
    if (pthread_mutex_init(&w->lock, NULL) != 0) {
        free(w);
        return BAND_ENOMEM;
    }
    atomic_init(&w->version, 0);
    atomic_init(&w->closed, 0);
    band__waitq_init(&w->q, &w->lock, &watch_waitq_ops);
    w->value_size = value_size;
    w->sends = w->refused = w->delivered = w->queued = 0;
    w->timeouts = w->cancels = w->closed_fails = 0;
    if (value_size > 0) {
        if (initial != NULL)
            memcpy(w->value, initial, value_size);
        else
            memset(w->value, 0, value_size);
    }
    *out = w;
    return 0;
}

int band_watch_destroy(band_watch *w)
{
    if (w == NULL)
        return 0;
    pthread_mutex_lock(&w->lock);
    uint64_t waiting = w->q.len;
    pthread_mutex_unlock(&w->lock);
    if (waiting > 0)
        return BAND_EBUSY;
    pthread_mutex_destroy(&w->lock);
    free(w);
    return 0;
}

/* ---------------------------------------------------------------- helpers (lock held) */

static band_watch_recv_op *op_of(band_waiter *wt)
{
    return band__container_of(wt, band_watch_recv_op, w);
}

/* Withdraw a waiting receiver (queue op, called by band_waiter_cancel() with the lock
 * held). Its cursor is unchanged: it saw nothing new. */
static void watch_cancel_locked(struct band__waitq *q, band_waiter *wt, int reason,
                                struct band__wakelist *wl)
{
    (void)wl;
    band_watch *w = band__container_of(q, band_watch, q);
    band_watch_recv_op *op = op_of(wt);
    band__waitq_unlink_locked(q, wt);
    rx_set_op(op->rx, NULL);
    if (reason == BAND_ETIMEDOUT)
        w->timeouts++;
    else
        w->cancels++;
}

/*
 * The attempt every receive shares: 0 (a newer version was copied to @out and marked seen;
 * *@version set when non-NULL), BAND_EAGAIN (nothing new: the caller may queue), or a final
 * code.
 */
static int watch_take_locked(band_watch *w, band_watch_rx *rx, void *out, uint64_t *version)
{
    if (rx_op(rx) != NULL)
        return BAND_EBUSY;
    uint64_t v = atomic_load_explicit(&w->version, memory_order_relaxed);
    if (v != rx_seen(rx)) {
        copy_value(out, w->value, w->value_size);
        rx_set_seen(rx, v);
        w->delivered++;
        if (version != NULL)
            *version = v;
        return 0;
    }
    if (atomic_load_explicit(&w->closed, memory_order_relaxed))
        return BAND_ECLOSED;
    return BAND_EAGAIN;
}

/* ---------------------------------------------------------------- sender side */

int band_watch_send(band_watch *w, const void *value)
{
    if (w == NULL || (value == NULL && w->value_size > 0))
        return BAND_EINVAL;
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    int rc = 0;
    pthread_mutex_lock(&w->lock);
    uint64_t v = atomic_load_explicit(&w->version, memory_order_relaxed);
    if (atomic_load_explicit(&w->closed, memory_order_relaxed)) {
        w->refused++;
        rc = BAND_ECLOSED;
    } else if (v == UINT64_MAX) {
        rc = BAND_EOVERFLOW;
    } else {
        copy_value(w->value, value, w->value_size);
        v++;
        atomic_store_explicit(&w->version, v, memory_order_release);
        w->sends++;
        band_waiter *wt;
        while ((wt = band__waitq_first(&w->q)) != NULL) {
            band_watch_recv_op *op = op_of(wt);
            band__waitq_unlink_locked(&w->q, wt);
            copy_value(op->out, w->value, w->value_size);
            op->version = v;
            rx_set_seen(op->rx, v);
            rx_set_op(op->rx, NULL);
            w->delivered++;
            band__waiter_complete_locked(wt, 0, &wl);
        }
    }
    pthread_mutex_unlock(&w->lock);
    band__wakelist_run(&wl);
    return rc;
}

int band_watch_close(band_watch *w)
{
    if (w == NULL)
        return BAND_EINVAL;
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&w->lock);
    if (!atomic_load_explicit(&w->closed, memory_order_relaxed)) {
        atomic_store_explicit(&w->closed, 1, memory_order_release);
        band_waiter *wt;
        while ((wt = band__waitq_first(&w->q)) != NULL) {
            band__waitq_unlink_locked(&w->q, wt);
            rx_set_op(op_of(wt)->rx, NULL);
            w->closed_fails++;
            band__waiter_complete_locked(wt, BAND_ECLOSED, &wl);
        }
    }
    pthread_mutex_unlock(&w->lock);
    band__wakelist_run(&wl);
    return 0;
}

int band_watch_is_closed(const band_watch *w)
{
    if (w == NULL)
        return 0;
    return atomic_load_explicit(&((band_watch *)w)->closed, memory_order_acquire) != 0;
}

/* ---------------------------------------------------------------- reading */

int band_watch_read(band_watch *w, void *out, uint64_t *version)
{
    if (w == NULL)
        return BAND_EINVAL;
    pthread_mutex_lock(&w->lock);
    copy_value(out, w->value, w->value_size);
    uint64_t v = atomic_load_explicit(&w->version, memory_order_relaxed);
    pthread_mutex_unlock(&w->lock);
    if (version != NULL)
        *version = v;
    return 0;
}

uint64_t band_watch_version(const band_watch *w)
{
    if (w == NULL)
        return 0;
    return atomic_load_explicit(&((band_watch *)w)->version, memory_order_acquire);
}

/* ---------------------------------------------------------------- cursors */

int band_watch_rx_init(band_watch_rx *rx, band_watch *w)
{
    if (rx == NULL || w == NULL)
        return BAND_EINVAL;
    rx->_watch = w;
    rx_set_op(rx, NULL);
    rx_set_seen(rx, band_watch_version(w));
    return 0;
}

uint64_t band_watch_rx_seen(const band_watch_rx *rx)
{
    return rx == NULL ? 0 : rx_seen(rx);
}

int band_watch_rx_read(band_watch_rx *rx, void *out, uint64_t *version)
{
    if (rx == NULL || rx->_watch == NULL)
        return BAND_EINVAL;
    band_watch *w = rx->_watch;
    int rc = 0;
    pthread_mutex_lock(&w->lock);
    uint64_t v = atomic_load_explicit(&w->version, memory_order_relaxed);
    if (rx_op(rx) != NULL) {
        rc = BAND_EBUSY;
    } else {
        copy_value(out, w->value, w->value_size);
        rx_set_seen(rx, v);
    }
    pthread_mutex_unlock(&w->lock);
    if (rc == 0 && version != NULL)
        *version = v;
    return rc;
}

int band_watch_mark_seen(band_watch_rx *rx)
{
    return band_watch_rx_read(rx, NULL, NULL);
}

/* ---------------------------------------------------------------- waiting for a change */

int band_watch_try_recv(band_watch_rx *rx, void *out)
{
    if (rx == NULL || rx->_watch == NULL)
        return BAND_EINVAL;
    band_watch *w = rx->_watch;
    /* Nothing new, open, no wait pending: "not yet", without the lock. */
    if (rx_op(rx) == NULL &&
        atomic_load_explicit(&w->version, memory_order_acquire) == rx_seen(rx) &&
        !atomic_load_explicit(&w->closed, memory_order_acquire))
        return BAND_EAGAIN;
    pthread_mutex_lock(&w->lock);
    int rc = watch_take_locked(w, rx, out, NULL);
    pthread_mutex_unlock(&w->lock);
    return rc;
}

/* Take a newer version now, or queue @op (whose rx and out are set). */
static int watch_enqueue(band_watch *w, band_watch_recv_op *op)
{
    pthread_mutex_lock(&w->lock);
    int rc = watch_take_locked(w, op->rx, op->out, &op->version);
    if (rc == BAND_EAGAIN) {
        band__waitq_push_locked(&w->q, &op->w, 1, 0);
        rx_set_op(op->rx, op);
        w->queued++;
        rc = BAND_PENDING;
    }
    pthread_mutex_unlock(&w->lock);
    if (rc != BAND_PENDING)
        band__waiter_finish_now(&op->w, rc);
    return rc;
}

int band_watch_recv_async(band_watch_rx *rx, void *out, band_watch_recv_op *op)
{
    if (rx == NULL || rx->_watch == NULL || op == NULL)
        return BAND_EINVAL;
    int rc = band__waiter_check_submit(&op->w);
    if (rc != 0)
        return rc; /* @op may be someone's pending operation: leave it alone */
    op->rx = rx;
    op->out = out;
    return watch_enqueue(rx->_watch, op);
}

/* A blocking wait: the op and the parker that its wake unparks, on the caller's stack. */
struct watch_blocker {
    band_watch_recv_op op;
    struct band__parker parker;
};

static void watch_blocker_wake(band_waiter *wt)
{
    struct watch_blocker *b = band__container_of(wt, struct watch_blocker, op.w);
    band__parker_unpark(&b->parker);
}

int band_watch_recv(band_watch_rx *rx, void *out, band_time deadline, band_cancel *cancel)
{
    int rc = band_watch_try_recv(rx, out);
    if (rc != BAND_EAGAIN)
        return rc;
    int refusal = band__wait_refusal(deadline, cancel);
    if (refusal != 0)
        return refusal;

    struct watch_blocker b;
    band_waiter_init(&b.op.w, watch_blocker_wake, NULL);
    b.op.w.deadline = deadline;
    b.op.rx = rx;
    b.op.out = out;
    b.op.version = 0;
    band__parker_init(&b.parker);
    rc = watch_enqueue(rx->_watch, &b.op);
    if (rc == BAND_PENDING)
        rc = band__block(&b.op.w, &b.parker, deadline, cancel);
    band__parker_destroy(&b.parker);
    return rc;
}

/* ---------------------------------------------------------------- observability */

int band_watch_get_stats(const band_watch *cw, band_watch_stats *out)
{
    if (cw == NULL || out == NULL)
        return BAND_EINVAL;
    band_watch *w = (band_watch *)cw; /* the lock is logically const */
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&w->lock);
    out->value_size = w->value_size;
    out->closed = atomic_load_explicit(&w->closed, memory_order_relaxed);
    out->version = atomic_load_explicit(&w->version, memory_order_relaxed);
    out->waiters = w->q.len;
    out->sends = w->sends;
    out->refused = w->refused;
    out->delivered = w->delivered;
    out->queued = w->queued;
    out->timeouts = w->timeouts;
    out->cancels = w->cancels;
    out->closed_fails = w->closed_fails;
    pthread_mutex_unlock(&w->lock);
    return 0;
}

#ifdef BAND_TESTING
/* Tests only: set the version (to reach UINT64_MAX without 2^64 sends). */
void band__watch_set_version(band_watch *w, uint64_t v);

void band__watch_set_version(band_watch *w, uint64_t v)
{
    pthread_mutex_lock(&w->lock);
    atomic_store_explicit(&w->version, v, memory_order_release);
    pthread_mutex_unlock(&w->lock);
}
#endif
