/* SPDX-License-Identifier: MIT */
/*
 * oneshot.c - one value from one producer to one consumer.
 *
 * Design notes
 * ------------
 * State. One atomic word (st) holds every flag; the lock guards only the (at most one)
 * queued receive, the pointer to its output buffer and the wait counters. Flags: SENT (a
 * value was accepted), TAKEN (the receiver has it), CLOSED (the sender closed: before a
 * send it gave up, after one it is merely done), RDROP (the receiver left), WAITING (a
 * receive is queued; mirrors q.len == 1), FILLING (a send claimed the slot and is copying
 * the value in). The value is in the slot exactly when SENT && !TAKEN; receives answer
 * BAND_ECLOSED when (CLOSED || RDROP) && !SENT && !FILLING.
 *
 * Lock-free paths. While WAITING is clear nobody is queued, and every operation is a CAS
 * on st, never the lock: a send claims the slot (FILLING), copies the value in and
 * publishes SENT with a second RMW (release); a try_recv claims the value (TAKEN, acquire)
 * and copies it out; close and drop set their flag. WAITING is set and cleared only under
 * the lock, by a CAS from the state the locked code examined, so a lock-free operation
 * that changed st meanwhile makes that CAS fail and the locked code looks again. An
 * operation that finds WAITING set takes the lock: a send hands its value straight to
 * the queued receive, a close or a drop ends it, a try_recv answers BAND_EBUSY without
 * the lock. A send that claimed FILLING and finds WAITING set when it publishes (the
 * receive queued while it copied) takes the lock and hands the slot's value over. While
 * FILLING is set a close or drop only sets its flag: the send in flight is ordered before
 * it, so a queued receive still gets the value.
 *
 * Ownership of the value. A send either copies it straight into the queued receive's buffer
 * and completes that receive (TAKEN), or copies it into the slot, or refuses without
 * copying (BAND_ECLOSED / BAND_EALREADY: the caller keeps it). A receive claims TAKEN by a
 * CAS (so of two racing receives one wins) and copies it out of the slot, which no one
 * writes again. A cancelled or timed-out receive never had it: a value that arrives later
 * stays in the slot. So the value has exactly one owner on every path.
 *
 * Wakes. Completed receives go on a local wake list and are woken after unlocking; the
 * unlock is the last access to the oneshot, so a receiver may destroy it in its wake. On a
 * lock-free send the publishing RMW is the last access.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "band/oneshot.h"
#include "core/block.h"
#include "prim/sync_internal.h"

enum {
    OS_SENT = 1u << 0,
    OS_TAKEN = 1u << 1,
    OS_CLOSED = 1u << 2,
    OS_RDROP = 1u << 3,
    OS_WAITING = 1u << 4,
    OS_FILLING = 1u << 5,
};

struct band_oneshot {
    atomic_uint st;       /* OS_*; WAITING changes only under the lock */
    pthread_mutex_t lock; /* guards q, rx_out, queued, timeouts, cancels */
    struct band__waitq q; /* the pending receive, if any (at most one) */
    void *rx_out;         /* its output buffer */
    size_t value_size;
    _Atomic uint64_t refused;
    uint64_t queued, timeouts, cancels;
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
    atomic_init(&o->st, 0);
    band__waitq_init(&o->q, &o->lock, &oneshot_waitq_ops);
    o->rx_out = NULL;
    o->value_size = value_size;
    atomic_init(&o->refused, 0);
    o->queued = o->timeouts = o->cancels = 0;
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

/* ---------------------------------------------------------------- helpers */

static unsigned os_load(band_oneshot *o)
{
    return atomic_load_explicit(&o->st, memory_order_acquire);
}

/* Replace the state *@f by @nf; on failure *@f holds the current state. */
static bool os_cas(band_oneshot *o, unsigned *f, unsigned nf)
{
    unsigned cur = *f;
    bool ok = atomic_compare_exchange_weak_explicit(&o->st, &cur, nf, memory_order_acq_rel,
                                                    memory_order_acquire);
    *f = cur;
    return ok;
}

/* Copy @n bytes unless there are none (the pointers may then be NULL). */
static void copy_value(void *dst, const void *src, size_t n)
{
    if (n > 0 && dst != NULL && src != NULL)
        memcpy(dst, src, n);
}

/* End the queued receive with @status (lock held); @value (when status is 0) is copied to
 * its buffer. The caller clears WAITING. */
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
    atomic_fetch_and_explicit(&o->st, ~(unsigned)OS_WAITING, memory_order_acq_rel);
}

/*
 * The receive attempt every entry point shares, from the state *@f (refreshed as it goes).
 * Returns 0 (value copied to @out), BAND_EAGAIN (nothing yet: the caller may queue, and
 * *@f is the state that answer was read from), or a final code. Lock-free.
 */
static int oneshot_take(band_oneshot *o, void *out, unsigned *f)
{
    for (;;) {
        unsigned s = *f;
        if (s & OS_WAITING)
            return BAND_EBUSY;
        if (s & OS_TAKEN)
            return BAND_EALREADY;
        if (s & OS_SENT) {
            if (!os_cas(o, f, s | OS_TAKEN))
                continue;
            /* The slot is never written again once SENT is published. */
            copy_value(out, o->slot, o->value_size);
            return 0;
        }
        if ((s & (OS_CLOSED | OS_RDROP)) && !(s & OS_FILLING))
            return BAND_ECLOSED;
        return BAND_EAGAIN;
    }
}

/* ---------------------------------------------------------------- sender */

/*
 * A send found a queued receive (lock taken here). Returns 0 after handing @value over,
 * a refusal, or 1 when the receive left meanwhile (the caller retries without the lock).
 */
static int oneshot_send_locked(band_oneshot *o, const void *value)
{
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&o->lock);
    unsigned f = os_load(o);
    int rc;
    for (;;) {
        if (f & (OS_SENT | OS_CLOSED | OS_FILLING)) {
            rc = BAND_EALREADY;
            break;
        }
        if (f & OS_RDROP) {
            rc = BAND_ECLOSED;
            break;
        }
        if (!(f & OS_WAITING)) {
            rc = 1;
            break;
        }
        /* While WAITING is set every other party takes the lock: the state is stable. */
        if (os_cas(o, &f, (f & ~(unsigned)OS_WAITING) | OS_SENT | OS_TAKEN)) {
            oneshot_complete_locked(o, 0, value, &wl);
            rc = 0;
            break;
        }
    }
    pthread_mutex_unlock(&o->lock);
    band__wakelist_run(&wl);
    return rc;
}

/* The value is in the slot and FILLING is ours: publish SENT, or hand the slot's value to a
 * receive that queued meanwhile. */
static void oneshot_publish(band_oneshot *o)
{
    unsigned f = os_load(o);
    while (!(f & OS_WAITING)) {
        if (os_cas(o, &f, (f & ~(unsigned)OS_FILLING) | OS_SENT))
            return; /* the last access: a receiver may take the value and destroy @o */
    }
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&o->lock);
    f = os_load(o);
    for (;;) {
        if (!(f & OS_WAITING)) { /* the receive was cancelled before we got the lock */
            if (os_cas(o, &f, (f & ~(unsigned)OS_FILLING) | OS_SENT))
                break;
            continue;
        }
        if (os_cas(o, &f, (f & ~(unsigned)(OS_WAITING | OS_FILLING)) | OS_SENT | OS_TAKEN)) {
            oneshot_complete_locked(o, 0, o->slot, &wl);
            break;
        }
    }
    pthread_mutex_unlock(&o->lock);
    band__wakelist_run(&wl);
}

int band_oneshot_send(band_oneshot *o, const void *value)
{
    if (o == NULL || (value == NULL && o->value_size > 0))
        return BAND_EINVAL;
    int rc;
    unsigned f = os_load(o);
    for (;;) {
        if (f & (OS_SENT | OS_CLOSED | OS_FILLING)) {
            rc = BAND_EALREADY;
            break;
        }
        if (f & OS_RDROP) {
            rc = BAND_ECLOSED;
            break;
        }
        if (f & OS_WAITING) {
            rc = oneshot_send_locked(o, value);
            if (rc != 1)
                break;
            f = os_load(o);
            continue;
        }
        if (os_cas(o, &f, f | OS_FILLING)) {
            copy_value(o->slot, value, o->value_size);
            oneshot_publish(o);
            return 0;
        }
    }
    if (rc != 0)
        atomic_fetch_add_explicit(&o->refused, 1, memory_order_relaxed);
    return rc;
}

/*
 * Set @flag (CLOSED or RDROP); a queued receive ends with @status, unless a send is
 * copying its value in (FILLING: that send is ordered first and hands the value over), or
 * for CLOSED when a value was sent. Lock-free unless a receive is queued.
 */
static void oneshot_end_side(band_oneshot *o, unsigned flag, int status)
{
    unsigned f = os_load(o);
    for (;;) {
        if (f & flag)
            return;
        if (f & OS_WAITING)
            break;
        if (os_cas(o, &f, f | flag))
            return;
    }
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&o->lock);
    f = os_load(o);
    for (;;) {
        if (f & flag)
            break;
        /* WAITING implies !SENT: a send would have completed the receive. */
        if ((f & OS_WAITING) && !(f & OS_FILLING)) {
            if (os_cas(o, &f, (f & ~(unsigned)OS_WAITING) | flag)) {
                oneshot_complete_locked(o, status, NULL, &wl);
                if (flag == OS_RDROP)
                    o->cancels++;
                break;
            }
        } else if (os_cas(o, &f, f | flag)) {
            break;
        }
    }
    pthread_mutex_unlock(&o->lock);
    band__wakelist_run(&wl);
}

int band_oneshot_close(band_oneshot *o)
{
    if (o == NULL)
        return BAND_EINVAL;
    oneshot_end_side(o, OS_CLOSED, BAND_ECLOSED);
    return 0;
}

int band_oneshot_is_closed(const band_oneshot *o)
{
    if (o == NULL)
        return 0;
    unsigned f = atomic_load_explicit(&((band_oneshot *)o)->st, memory_order_acquire);
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
    unsigned f = os_load(o);
    return oneshot_take(o, out, &f);
}

/* Take the value now or queue @w (whose output buffer is @out). */
static int oneshot_enqueue(band_oneshot *o, band_waiter *w, void *out)
{
    pthread_mutex_lock(&o->lock);
    unsigned f = os_load(o);
    int rc;
    for (;;) {
        rc = oneshot_take(o, out, &f);
        if (rc != BAND_EAGAIN)
            break;
        /* Fails when a lock-free call changed the state since: look again. */
        if (os_cas(o, &f, f | OS_WAITING)) {
            band__waitq_push_locked(&o->q, w, 1, 0);
            o->rx_out = out;
            o->queued++;
            rc = BAND_PENDING;
            break;
        }
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
    oneshot_end_side(o, OS_RDROP, BAND_ECANCELED);
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
    unsigned f = os_load(o);
    out->value_size = o->value_size;
    out->sent = (f & OS_SENT) != 0;
    out->received = (f & OS_TAKEN) != 0;
    out->closed = (f & OS_CLOSED) != 0;
    out->receiver_dropped = (f & OS_RDROP) != 0;
    out->waiting = (f & OS_WAITING) != 0;
    out->holds_value = (f & OS_SENT) && !(f & OS_TAKEN);
    out->refused = atomic_load_explicit(&o->refused, memory_order_relaxed);
    out->queued = o->queued;
    out->timeouts = o->timeouts;
    out->cancels = o->cancels;
    pthread_mutex_unlock(&o->lock);
    return 0;
}

#ifdef BAND_TESTING
int band__oneshot_check(band_oneshot *o)
{
    int bad = 0;
    pthread_mutex_lock(&o->lock);
    unsigned f = os_load(o);
    if (f & OS_FILLING)
        bad = -__LINE__;
    else if (((f & OS_WAITING) != 0) != (o->q.len == 1) || o->q.len > 1)
        bad = -__LINE__;
    else if ((f & OS_WAITING) && (f & (OS_SENT | OS_TAKEN)))
        bad = -__LINE__;
    else if ((f & OS_TAKEN) && !(f & OS_SENT))
        bad = -__LINE__;
    else if (!(f & OS_WAITING) && o->rx_out != NULL)
        bad = -__LINE__;
    pthread_mutex_unlock(&o->lock);
    return bad;
}

pthread_mutex_t *band__oneshot_lock(band_oneshot *o)
{
    return &o->lock;
}
#endif
