/* SPDX-License-Identifier: MIT */
/*
 * waitq.c - waiter life cycle, the wait queue, and the one cancel that serves every
 * primitive.
 *
 * Design notes
 * ------------
 * Ownership. A band_waiter belongs to its owner. While it is queued, its private fields
 * belong to the primitive and are only touched under the primitive's lock. The waiter's
 * state word (_qstate: queue pointer | state) is written under that lock with release
 * ordering and may be read without it (acquire), which is how band_waiter_cancel() finds
 * the queue and how a double submission is refused.
 *
 * Exactly once. A queued waiter leaves the queue in exactly one of two ways, both under
 * the primitive's lock: the primitive completes it (state DONE, onto a wake list), or
 * band_waiter_cancel() withdraws it (state IDLE, cancel returns 0). Whichever takes the
 * lock first wins; the other sees the state and says so (cancel answers BAND_EALREADY).
 * So a grant is never dropped: either the waiter's owner receives it through the wake, or
 * the canceller returns it to the primitive before it unlocks.
 *
 * Wakes outside locks. Completed waiters are chained through _link.next on a local wake
 * list and woken after the lock is released; the next pointer is read before each wake,
 * because the wake may free the waiter. The wake is band's last access to the waiter.
 *
 * Lifetime. Cancel dereferences the queue it read from the waiter, so the primitive must
 * outlive every cancel of its waiters (documented on band_waiter_cancel()). A wake may
 * destroy the primitive that completed it, so after the first wake band__wakelist_run()
 * touches only the wake list (and its post, which takes no argument).
 */
#include "core/waitq.h"

void band_waiter_init(band_waiter *w, band_wake_fn *wake, void *data)
{
    if (w == NULL)
        return;
    w->wake = wake;
    w->data = data;
    w->deadline = BAND_FOREVER;
    w->_since = 0;
    band__list_init(&w->_link);
    w->_u.status = 0;
    __atomic_store_n(&w->_qstate, (uintptr_t)BAND__W_IDLE, __ATOMIC_RELAXED);
}

int band_waiter_status(const band_waiter *w)
{
    if (w == NULL)
        return BAND_EINVAL;
    if (band__waiter_state(w) == BAND__W_QUEUED)
        return BAND_PENDING;
    return (int)w->_u.status;
}

int band_waiter_is_pending(const band_waiter *w)
{
    return w != NULL && band__waiter_state(w) == BAND__W_QUEUED;
}

int band__waiter_check_submit(const band_waiter *w)
{
    if (w == NULL || w->wake == NULL)
        return BAND_EINVAL;
    if (band__waiter_state(w) == BAND__W_QUEUED)
        return BAND_EINVAL;
    return 0;
}

void band__waitq_init(struct band__waitq *q, pthread_mutex_t *lock,
                      const struct band__waitq_ops *ops)
{
    band__list_init(&q->head);
    q->len = 0;
    q->lock = lock;
    q->ops = ops;
}

void band__waitq_insert_locked(struct band__waitq *q, band_waiter *w, struct band__node *before,
                               uint64_t want, band_time now)
{
    w->_u.want = want;
    w->_since = now;
    band__list_add_tail(before, &w->_link); /* before @before, i.e. at the tail of the part
                                               of the circular list ending there */
    q->len++;
    band__waiter_set(w, q, BAND__W_QUEUED);
}

void band__waitq_push_locked(struct band__waitq *q, band_waiter *w, uint64_t want, band_time now)
{
    band__waitq_insert_locked(q, w, &q->head, want, now);
}

void band__waitq_push_front_locked(struct band__waitq *q, band_waiter *w, uint64_t want,
                                   band_time now)
{
    band__waitq_insert_locked(q, w, q->head.next, want, now);
}

void band__waitq_unlink_locked(struct band__waitq *q, band_waiter *w)
{
    band__list_del_init(&w->_link);
    q->len--;
}

void band__waiter_complete_locked(band_waiter *w, int status, struct band__wakelist *wl)
{
    w->_u.status = status;
    band__waiter_set(w, NULL, BAND__W_DONE);
    w->_link.next = NULL;
    w->_link.prev = NULL;
    *wl->tail = &w->_link;
    wl->tail = &w->_link.next;
}

void band__wakelist_run(struct band__wakelist *wl)
{
    struct band__node *n = wl->first;
    while (n != NULL) {
        struct band__node *next = n->next; /* the wake may free or reuse the waiter */
        band_waiter *w = band__waiter_of(n);
        w->wake(w);
        n = next;
    }
    void (*post)(void) = wl->post;
    band__wakelist_init(wl);
    if (post != NULL)
        post();
}

void band__smart_wake(band_waiter *w)
{
    (void)w;
}

int band_waiter_cancel(band_waiter *w, int reason)
{
    /* The primitives count a cancel as a timeout or as a cancel; any other code would
     * tell the owner something that did not happen (a close, a shrink). */
    if (reason != BAND_ECANCELED && reason != BAND_ETIMEDOUT)
        return BAND_EINVAL;
    return band__waiter_cancel_as(w, reason);
}

int band__waiter_cancel_as(band_waiter *w, int reason)
{
    if (w == NULL || reason >= 0)
        return BAND_EINVAL;
    uintptr_t qs = __atomic_load_n(&w->_qstate, __ATOMIC_ACQUIRE);
    switch ((enum band__wstate)(qs & BAND__W_STATE_MASK)) {
    case BAND__W_IDLE:
        return BAND_EINVAL;
    case BAND__W_DONE:
        return BAND_EALREADY;
    case BAND__W_QUEUED:
        break;
    }
    struct band__waitq *q = (struct band__waitq *)(qs & ~BAND__W_STATE_MASK);
    struct band__wakelist wl;
    band__wakelist_init(&wl);

    pthread_mutex_lock(q->lock);
    /* Completion may have won the race for the lock. */
    if (__atomic_load_n(&w->_qstate, __ATOMIC_RELAXED) != qs) {
        pthread_mutex_unlock(q->lock);
        return BAND_EALREADY;
    }
    q->ops->cancel_locked(q, w, reason, &wl);
    w->_u.status = reason;
    band__waiter_set(w, NULL, BAND__W_IDLE);
    pthread_mutex_unlock(q->lock);

    band__wakelist_run(&wl);
    return 0;
}
