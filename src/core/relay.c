/* SPDX-License-Identifier: MIT */
/*
 * relay.c - waiters parked by code outside band and completed by it.
 *
 * A parked waiter sits on the relay's wait queue like any primitive's waiter, so
 * band_waiter_cancel() withdraws it through the queue's ops under the relay's lock, and
 * the completion takes the same lock: whichever gets the lock first ends the waiter, and
 * the other learns it (cancel answers BAND_EALREADY, complete answers BAND_EALREADY).
 * A completion finds its waiter by address in the queue, so it never reads a waiter that
 * a cancel already handed back to its owner.
 */
#include <stdlib.h>

#include "band/relay.h"
#include "core/waitq.h"

struct band_relay {
    pthread_mutex_t lock;
    struct band__waitq q;
    band_relay_cancel_fn *on_cancel;
    void *data;
};

static void relay_cancel_locked(struct band__waitq *q, band_waiter *w, int reason,
                                struct band__wakelist *wl)
{
    (void)wl;
    band_relay *r = band__container_of(q, band_relay, q);
    band__waitq_unlink_locked(q, w);
    /* The hook may look at the waiter's status: set it before the hook, as the cancel
     * will after it. */
    w->_u.status = reason;
    band__waiter_set(w, NULL, BAND__W_IDLE);
    if (r->on_cancel != NULL)
        r->on_cancel(r, w, reason, r->data);
}

static const struct band__waitq_ops relay_waitq_ops = {
    .cancel_locked = relay_cancel_locked,
};

int band_relay_create(band_relay **out, band_relay_cancel_fn *on_cancel, void *data)
{
    if (out == NULL)
        return BAND_EINVAL;
    band_relay *r = malloc(sizeof(*r));
    if (r == NULL)
        return BAND_ENOMEM;
    if (pthread_mutex_init(&r->lock, NULL) != 0) {
        free(r);
        return BAND_ENOMEM;
    }
    band__waitq_init(&r->q, &r->lock, &relay_waitq_ops);
    r->on_cancel = on_cancel;
    r->data = data;
    *out = r;
    return 0;
}

int band_relay_destroy(band_relay *r)
{
    if (r == NULL)
        return 0;
    pthread_mutex_lock(&r->lock);
    uint64_t n = r->q.len;
    pthread_mutex_unlock(&r->lock);
    if (n != 0)
        return BAND_EBUSY;
    pthread_mutex_destroy(&r->lock);
    free(r);
    return 0;
}

int band_relay_park(band_relay *r, band_waiter *w)
{
    if (r == NULL || band__waiter_check_submit(w) != 0)
        return BAND_EINVAL;
    pthread_mutex_lock(&r->lock);
    band__waitq_push_locked(&r->q, w, 0, band_now());
    pthread_mutex_unlock(&r->lock);
    return 0;
}

int band_relay_complete(band_relay *r, band_waiter *w, int status)
{
    if (r == NULL || w == NULL || status > 0)
        return BAND_EINVAL;
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&r->lock);
    /* @w is found by its address among the parked waiters, never read first: once a
     * cancel returned, its owner may have freed it, and the source cannot know that
     * without this lock. Completions mostly come in parking order, near the head. */
    struct band__node *n = r->q.head.next;
    while (n != &r->q.head && n != &w->_link)
        n = n->next;
    if (n == &r->q.head) {
        pthread_mutex_unlock(&r->lock);
        return BAND_EALREADY;
    }
    band__waitq_unlink_locked(&r->q, w);
    band__waiter_complete_locked(w, status, &wl);
    pthread_mutex_unlock(&r->lock);
    band__wakelist_run(&wl);
    return 0;
}

size_t band_relay_count(const band_relay *r)
{
    if (r == NULL)
        return 0;
    band_relay *m = (band_relay *)r; /* the lock is not part of the value */
    pthread_mutex_lock(&m->lock);
    size_t n = (size_t)m->q.len;
    pthread_mutex_unlock(&m->lock);
    return n;
}
