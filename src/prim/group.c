/* SPDX-License-Identifier: MIT */
/*
 * group.c - the wait group (and, through latch.c, the latch).
 *
 * Design notes
 * ------------
 * State. One atomic word holds the count. Everything else (the queue of waits, the
 * counters) is guarded by the lock.
 *
 * Invariant: the count only reaches 0 under the lock. add() never releases anybody, so it
 * is one lock-free CAS. done() is a lock-free CAS as long as the count stays above 0; a
 * done that would bring it to 0 takes the lock and makes that final step there. A wait
 * decides under the same lock: if it reads 0 it completes at once, else it queues, and
 * the only way to 0 then passes through the lock, where the queue is emptied. So no wait
 * can queue behind a count that already reached 0 (it would wait for a round that is
 * over), and no done that reaches 0 can miss a queued wait.
 *
 * Rounds. Reaching 0 completes every wait queued at that moment. An add() afterwards
 * starts a new round: a wait that queues then waits for the count to come back to 0. A
 * wait that reads 0 under the lock completes at once, even if an add() follows a moment
 * later; this is the same "add before the task starts" rule as Go's WaitGroup.
 *
 * Ordering. done() publishes with release (its CAS is a read-modify-write, so every done
 * before it stays in the release sequence) and the 0-reading wait loads with acquire:
 * what tasks wrote before done() is visible to a waiter after its wait returned 0.
 *
 * Wakes run after the lock is released, from a local wake list, and a waiter holds
 * nothing, so a cancel only unlinks it.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "band/group.h"
#include "core/block.h"
#include "core/waitq.h"

struct band_group {
    /* The count: on its own cache line (done/add are the hot paths). */
    _Alignas(BAND__CACHELINE) _Atomic uint64_t count;
    /* Everything below is guarded by lock. */
    _Alignas(BAND__CACHELINE) pthread_mutex_t lock;
    struct band__waitq q; /* waits, in arrival order */
    uint64_t queued, released, timeouts, cancels, zeroes;
    _Atomic uint64_t misuse; /* counted on the refusal path, outside the lock */
};

static void group_cancel_locked(struct band__waitq *q, band_waiter *w, int reason,
                                struct band__wakelist *wl);

static const struct band__waitq_ops group_waitq_ops = {group_cancel_locked};

/* ---------------------------------------------------------------- lifecycle */

int band_group_create(band_group **out)
{
    if (out == NULL)
        return BAND_EINVAL;
    band_group *g = aligned_alloc(BAND__CACHELINE, sizeof(*g));
    if (g == NULL)
        return BAND_ENOMEM;
    if (pthread_mutex_init(&g->lock, NULL) != 0) {
        free(g);
        return BAND_ENOMEM;
    }
    atomic_init(&g->count, 0);
    atomic_init(&g->misuse, 0);
    band__waitq_init(&g->q, &g->lock, &group_waitq_ops);
    g->queued = g->released = g->timeouts = g->cancels = g->zeroes = 0;
    *out = g;
    return 0;
}

int band_group_destroy(band_group *g)
{
    if (g == NULL)
        return 0;
    pthread_mutex_lock(&g->lock);
    uint64_t waiting = g->q.len;
    pthread_mutex_unlock(&g->lock);
    if (waiting > 0)
        return BAND_EBUSY;
    pthread_mutex_destroy(&g->lock);
    free(g);
    return 0;
}

/* ---------------------------------------------------------------- count */

int band_group_add(band_group *g, uint64_t n)
{
    if (g == NULL)
        return BAND_EINVAL;
    uint64_t c = atomic_load_explicit(&g->count, memory_order_relaxed);
    do {
        if (n > BAND_GROUP_MAX - c)
            return BAND_EOVERFLOW;
    } while (!atomic_compare_exchange_weak_explicit(&g->count, &c, c + n, memory_order_relaxed,
                                                    memory_order_relaxed));
    return 0;
}

/* Withdraw @w (queue op, called by band_waiter_cancel() with the lock held). */
static void group_cancel_locked(struct band__waitq *q, band_waiter *w, int reason,
                                struct band__wakelist *wl)
{
    (void)wl; /* a wait holds nothing: its cancel completes nobody else */
    band_group *g = band__container_of(q, band_group, q);
    band__waitq_unlink_locked(q, w);
    if (reason == BAND_ETIMEDOUT)
        g->timeouts++;
    else
        g->cancels++;
}

static int group_refuse(band_group *g)
{
    atomic_fetch_add_explicit(&g->misuse, 1, memory_order_relaxed);
    return BAND_EINVAL;
}

int band_group_done_n(band_group *g, uint64_t n)
{
    if (g == NULL)
        return BAND_EINVAL;
    if (n == 0)
        return 0;
    /* Fast path: the count stays above 0, nobody is released. */
    uint64_t c = atomic_load_explicit(&g->count, memory_order_relaxed);
    for (;;) {
        if (n > c)
            return group_refuse(g);
        if (c == n)
            break; /* this done would reach 0: only under the lock */
        if (atomic_compare_exchange_weak_explicit(&g->count, &c, c - n, memory_order_release,
                                                  memory_order_relaxed))
            return 0;
    }

    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&g->lock);
    c = atomic_load_explicit(&g->count, memory_order_relaxed);
    do {
        if (n > c) {
            pthread_mutex_unlock(&g->lock);
            return group_refuse(g);
        }
    } while (!atomic_compare_exchange_weak_explicit(&g->count, &c, c - n, memory_order_acq_rel,
                                                    memory_order_relaxed));
    if (c == n) {
        g->zeroes++;
        band_waiter *w;
        while ((w = band__waitq_first(&g->q)) != NULL) {
            band__waitq_unlink_locked(&g->q, w);
            g->released++;
            band__waiter_complete_locked(w, 0, &wl);
        }
    }
    pthread_mutex_unlock(&g->lock);
    band__wakelist_run(&wl);
    return 0;
}

int band_group_done(band_group *g)
{
    return band_group_done_n(g, 1);
}

uint64_t band_group_count(const band_group *g)
{
    if (g == NULL)
        return 0;
    return atomic_load_explicit(&((band_group *)g)->count, memory_order_acquire);
}

/* ---------------------------------------------------------------- waits */

int band_group_try_wait(const band_group *g)
{
    if (g == NULL)
        return BAND_EINVAL;
    /* Acquire pairs with the release of every done: their tasks' writes are visible. */
    return atomic_load_explicit(&((band_group *)g)->count, memory_order_acquire) == 0 ? 0
                                                                                      : BAND_EAGAIN;
}

/* 0 when the count is 0 now (nothing queued), else queue @w: BAND_PENDING. */
static int group_enqueue(band_group *g, band_waiter *w)
{
    int rc = BAND_PENDING;
    pthread_mutex_lock(&g->lock);
    if (atomic_load_explicit(&g->count, memory_order_acquire) == 0) {
        rc = 0;
    } else {
        band__waitq_push_locked(&g->q, w, 0, 0);
        g->queued++;
    }
    pthread_mutex_unlock(&g->lock);
    if (rc == 0)
        band__waiter_finish_now(w, 0);
    return rc;
}

int band_group_wait_async(band_group *g, band_waiter *w)
{
    if (g == NULL)
        return BAND_EINVAL;
    int rc = band__waiter_check_submit(w);
    if (rc != 0)
        return rc;
    if (atomic_load_explicit(&g->count, memory_order_acquire) == 0) {
        band__waiter_finish_now(w, 0);
        return 0;
    }
    return group_enqueue(g, w);
}

int band_group_wait(band_group *g, band_time deadline, band_cancel *cancel)
{
    if (g == NULL)
        return BAND_EINVAL;
    if (atomic_load_explicit(&g->count, memory_order_acquire) == 0)
        return 0;
    int refusal = band__wait_refusal(deadline, cancel);
    if (refusal != 0)
        return refusal;
    struct band__blocker b;
    band__blocker_init(&b);
    b.w.deadline = deadline;
    int rc = group_enqueue(g, &b.w);
    if (rc != BAND_PENDING) {
        band__blocker_done(&b);
        return rc;
    }
    return band__blocker_wait_cancel(&b, deadline, cancel);
}

/* ---------------------------------------------------------------- observability */

int band_group_get_stats(const band_group *cg, band_group_stats *out)
{
    if (cg == NULL || out == NULL)
        return BAND_EINVAL;
    band_group *g = (band_group *)cg; /* the lock is logically const */
    pthread_mutex_lock(&g->lock);
    out->count = atomic_load_explicit(&g->count, memory_order_acquire);
    out->waiters = g->q.len;
    out->queued = g->queued;
    out->released = g->released;
    out->timeouts = g->timeouts;
    out->cancels = g->cancels;
    out->zeroes = g->zeroes;
    pthread_mutex_unlock(&g->lock);
    out->misuse = atomic_load_explicit(&g->misuse, memory_order_relaxed);
    return 0;
}
