/*
 * oneshot.c - one value from one producer to one consumer.
 *
 * Design notes
 * ------------
 * State. The lock guards everything: the flags, the value slot, the (at most one) queued
 * receive and the pointer to its output buffer, and the counters. The flags are also
 * published in an atomic word (release, under the lock) so that band_oneshot_try_recv()
 * can answer "nothing yet" (BAND_EAGAIN) from one acquire load, without the lock: polling
 * is the one repeated call on a oneshot. Every answer that moves the value takes the lock.
 *
 * Flags: SENT (a value was accepted), TAKEN (the receiver has it), CLOSED (the sender
 * closed: before a send it gave up, after one it is merely done), RDROP (the receiver
 * left), WAITING (a receive is queued; mirrors q.len == 1). The value is in the slot
 * exactly when SENT && !TAKEN; receives answer BAND_ECLOSED when CLOSED && !SENT.
 *
 * Ownership of the value. A send either copies it straight into the queued receive's buffer
 * and completes that receive (TAKEN), or copies it into the slot, or refuses without
 * copying (BAND_ECLOSED / BAND_EALREADY: the caller keeps it). A receive copies it out of
 * the slot and sets TAKEN. A cancelled or timed-out receive never had it: a value that
 * arrives later stays in the slot. So the value has exactly one owner on every path.
 *
 * Wakes. Completed receives go on a local wake list and are woken after unlocking; the
 * unlock is the last access to the oneshot, so a receiver may destroy it in its wake.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "band/oneshot.h"
#include "core/block.h"

enum {
    OS_SENT = 1u << 0,
    OS_TAKEN = 1u << 1,
    OS_CLOSED = 1u << 2,
    OS_RDROP = 1u << 3,
    OS_WAITING = 1u << 4,
};

struct band_oneshot {
    pthread_mutex_t lock; /* guards every field below except pub */
    atomic_uint pub;      /* copy of flags, stored under the lock, read by try_recv */
    unsigned flags;       /* OS_* */
    struct band__waitq q; /* the pending receive, if any (at most one) */
    void *rx_out;         /* its output buffer */
    size_t value_size;
    uint64_t refused, queued, timeouts, cancels;
    unsigned char slot[]; /* value_size bytes: the value while SENT && !TAKEN */
};

static void oneshot_cancel_locked(struct band__waitq *q, band_waiter *w, int reason,
                                  struct band__wakelist *wl);

static const struct band__waitq_ops oneshot_waitq_ops = {oneshot_cancel_locked};

/* ---------------------------------------------------------------- lifecycle */

int band_oneshot_create(band_oneshot **out, size_t value_size)
{
    if (out == NULL)
        return BAND_EINVAL;
    if (value_size > SIZE_MAX - sizeof(band_oneshot))
        return BAND_ENOMEM;
    band_oneshot *o = malloc(sizeof(*o) + value_size);
    if (o == NULL)
        return BAND_ENOMEM;
    if (pthread_mutex_init(&o->lock, NULL) != 0) {
        free(o);
        return BAND_ENOMEM;
    }
    atomic_init(&o->pub, 0);
    o->flags = 0;
    band__waitq_init(&o->q, &o->lock, &oneshot_waitq_ops);
    o->rx_out = NULL;
    o->value_size = value_size;
    o->refused = o->queued = o->timeouts = o->cancels = 0;
    *out = o;
    return 0;
}

int band_oneshot_destroy(band_oneshot *o)
{
    if (o == NULL)
        return 0;
    pthread_mutex_lock(&o->lock);
    uint64_t waiting = o->q.len;
    pthread_mutex_unlock(&o->lock);
    if (waiting > 0)
        return BAND_EBUSY;
    pthread_mutex_destroy(&o->lock);
    free(o);
    return 0;
}

/* ---------------------------------------------------------------- helpers (lock held) */

static void oneshot_set_locked(band_oneshot *o, unsigned flags)
{
    o->flags = flags;
    atomic_store_explicit(&o->pub, flags, memory_order_release);
}

/* Copy @n bytes unless there are none (the pointers may then be NULL). */
static void copy_value(void *dst, const void *src, size_t n)
{
    if (n > 0 && dst != NULL && src != NULL)
        memcpy(dst, src, n);
}

/* End the queued receive with @status; @value (when status is 0) is copied to its buffer. */
static void oneshot_complete_locked(band_oneshot *o, int status, const void *value,
                                    struct band__wakelist *wl)
{
    band_waiter *w = band__waitq_first(&o->q);
    if (status == 0)
        copy_value(o->rx_out, value, o->value_size);
    band__waitq_unlink_locked(&o->q, w);
    o->rx_out = NULL;
    band__waiter_complete_locked(w, status, wl);
}

/* Withdraw the queued receive (queue op, called by band_waiter_cancel() with the lock
 * held). It never held the value: nothing goes back. */
static void oneshot_cancel_locked(struct band__waitq *q, band_waiter *w, int reason,
                                  struct band__wakelist *wl)
{
    (void)wl;
    band_oneshot *o = band__container_of(q, band_oneshot, q);
    band__waitq_unlink_locked(q, w);
    o->rx_out = NULL;
    if (reason == BAND_ETIMEDOUT)
        o->timeouts++;
    else
        o->cancels++;
    oneshot_set_locked(o, o->flags & ~(unsigned)OS_WAITING);
}

/*
 * The receive attempt every entry point shares. Returns 0 (value copied to @out),
 * BAND_EAGAIN (nothing yet: the caller may queue), or a final code.
 */
static int oneshot_take_locked(band_oneshot *o, void *out)
{
    unsigned f = o->flags;
    if (f & OS_WAITING)
        return BAND_EBUSY;
    if (f & OS_TAKEN)
        return BAND_EALREADY;
    if (f & OS_SENT) {
        copy_value(out, o->slot, o->value_size);
        oneshot_set_locked(o, f | OS_TAKEN);
        return 0;
    }
    if (f & (OS_CLOSED | OS_RDROP))
        return BAND_ECLOSED;
    return BAND_EAGAIN;
}

/* ---------------------------------------------------------------- sender */

int band_oneshot_send(band_oneshot *o, const void *value)
{
    if (o == NULL || (value == NULL && o->value_size > 0))
        return BAND_EINVAL;
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    int rc = 0;
    pthread_mutex_lock(&o->lock);
    unsigned f = o->flags;
    if (f & (OS_SENT | OS_CLOSED)) {
        rc = BAND_EALREADY;
    } else if (f & OS_RDROP) {
        rc = BAND_ECLOSED;
    } else if (f & OS_WAITING) {
        oneshot_complete_locked(o, 0, value, &wl);
        oneshot_set_locked(o, (f & ~(unsigned)OS_WAITING) | OS_SENT | OS_TAKEN);
    } else {
        copy_value(o->slot, value, o->value_size);
        oneshot_set_locked(o, f | OS_SENT);
    }
    if (rc != 0)
        o->refused++;
    pthread_mutex_unlock(&o->lock);
    band__wakelist_run(&wl);
    return rc;
}

int band_oneshot_close(band_oneshot *o)
{
    if (o == NULL)
        return BAND_EINVAL;
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&o->lock);
    unsigned f = o->flags;
    if (!(f & OS_CLOSED)) {
        /* A queued receive means nothing was sent (a send would have completed it). */
        if (f & OS_WAITING)
            oneshot_complete_locked(o, BAND_ECLOSED, NULL, &wl);
        oneshot_set_locked(o, (f & ~(unsigned)OS_WAITING) | OS_CLOSED);
    }
    pthread_mutex_unlock(&o->lock);
    band__wakelist_run(&wl);
    return 0;
}

int band_oneshot_is_closed(const band_oneshot *o)
{
    if (o == NULL)
        return 0;
    unsigned f = atomic_load_explicit(&((band_oneshot *)o)->pub, memory_order_acquire);
    return (f & OS_CLOSED) != 0;
}

/* ---------------------------------------------------------------- receiver */

static int oneshot_check_out(const band_oneshot *o, const void *out)
{
    return (o == NULL || (out == NULL && o->value_size > 0)) ? BAND_EINVAL : 0;
}

int band_oneshot_try_recv(band_oneshot *o, void *out)
{
    int rc = oneshot_check_out(o, out);
    if (rc != 0)
        return rc;
    /* Nothing sent, nobody closed or dropped, nothing queued: "not yet", without the lock. */
    if (atomic_load_explicit(&o->pub, memory_order_acquire) == 0)
        return BAND_EAGAIN;
    pthread_mutex_lock(&o->lock);
    rc = oneshot_take_locked(o, out);
    pthread_mutex_unlock(&o->lock);
    return rc;
}

/* Take the value now or queue @w (whose output buffer is @out). */
static int oneshot_enqueue(band_oneshot *o, band_waiter *w, void *out)
{
    pthread_mutex_lock(&o->lock);
    int rc = oneshot_take_locked(o, out);
    if (rc == BAND_EAGAIN) {
        band__waitq_push_locked(&o->q, w, 1, 0);
        o->rx_out = out;
        o->queued++;
        oneshot_set_locked(o, o->flags | OS_WAITING);
        rc = BAND_PENDING;
    }
    pthread_mutex_unlock(&o->lock);
    if (rc != BAND_PENDING)
        band__waiter_finish_now(w, rc);
    return rc;
}

int band_oneshot_recv_async(band_oneshot *o, void *out, band_oneshot_recv_op *op)
{
    int rc = oneshot_check_out(o, out);
    if (rc != 0 || op == NULL)
        return BAND_EINVAL;
    rc = band__waiter_check_submit(&op->w);
    if (rc != 0)
        return rc; /* @op may be someone's pending operation: leave it alone */
    op->out = out;
    return oneshot_enqueue(o, &op->w, out);
}

int band_oneshot_recv(band_oneshot *o, void *out, band_time deadline, band_cancel *cancel)
{
    int rc = band_oneshot_try_recv(o, out);
    if (rc != BAND_EAGAIN)
        return rc;
    int refusal = band__wait_refusal(deadline, cancel);
    if (refusal != 0)
        return refusal;
    struct band__blocker b;
    band__blocker_init(&b);
    b.w.deadline = deadline;
    rc = oneshot_enqueue(o, &b.w, out);
    if (rc != BAND_PENDING) {
        band__blocker_done(&b);
        return rc;
    }
    return band__blocker_wait_cancel(&b, deadline, cancel);
}

int band_oneshot_receiver_drop(band_oneshot *o)
{
    if (o == NULL)
        return BAND_EINVAL;
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&o->lock);
    unsigned f = o->flags;
    if (f & OS_WAITING) {
        oneshot_complete_locked(o, BAND_ECANCELED, NULL, &wl);
        o->cancels++;
    }
    oneshot_set_locked(o, (f & ~(unsigned)OS_WAITING) | OS_RDROP);
    pthread_mutex_unlock(&o->lock);
    band__wakelist_run(&wl);
    return 0;
}

/* ---------------------------------------------------------------- observability */

int band_oneshot_get_stats(const band_oneshot *co, band_oneshot_stats *out)
{
    if (co == NULL || out == NULL)
        return BAND_EINVAL;
    band_oneshot *o = (band_oneshot *)co; /* the lock is logically const */
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&o->lock);
    unsigned f = o->flags;
    out->value_size = o->value_size;
    out->sent = (f & OS_SENT) != 0;
    out->received = (f & OS_TAKEN) != 0;
    out->closed = (f & OS_CLOSED) != 0;
    out->receiver_dropped = (f & OS_RDROP) != 0;
    out->waiting = (f & OS_WAITING) != 0;
    out->holds_value = (f & OS_SENT) && !(f & OS_TAKEN);
    out->refused = o->refused;
    out->queued = o->queued;
    out->timeouts = o->timeouts;
    out->cancels = o->cancels;
    pthread_mutex_unlock(&o->lock);
    return 0;
}
