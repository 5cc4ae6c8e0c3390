/* SPDX-License-Identifier: MIT */
/*
 * shutdown.c - the shutdown scope: request, observe, its cancellation token, join/leave,
 * drain, and watch links.
 *
 * Design notes
 * ------------
 * State. One atomic word: participants << 1 | REQUESTED. The reason is stored before
 * REQUESTED is set (by a read-modify-write with release), so whoever sees the flag with
 * acquire sees the reason. The wait queues, the watch lists and the counters are guarded
 * by the lock; fired_cv (with the lock) lets band_shutdown_unwatch() wait for a cancel in
 * progress.
 *
 * The cancellation token. Each scope owns a band_cancel, created with it and requested by
 * the first request after the lock is released, before the released waits are woken and
 * before the links fire: threads blocked under the token stop as early as possible, and
 * the token's hooks (which may run in a signal-safe context) never run under the scope's
 * lock. A wait_requested blocked under the scope's own token still returns 0: the request
 * completes it under the lock before it requests the token, so the wait's cancel loses and
 * it waits for its wake.
 *
 * Invariant: REQUESTED is only set under the lock, and the word only becomes "drained"
 * (REQUESTED with no participant) under the lock: either the request sets the flag when
 * nobody is joined, or the last leave after the request takes the lock to make its step.
 * A wait decides under the same lock whether it is satisfied or queues, so a wait can
 * never queue after the event it waits for (it would wait forever), and the event never
 * misses a queued wait. join() is a lock-free CAS that refuses when the flag is set; a
 * join and a request race on the one word, so either the join is refused or the request
 * sees the participant and the drain waits for it.
 *
 * Watch links. band_shutdown_watch() puts a link on the watch list. The first request moves
 * the whole list to the firing list under the lock, then (lock released) fires one link
 * at a time: mark it FIRING under the lock, unlock, band_waiter_cancel(), relock, mark it
 * FIRED and broadcast fired_cv. When the cancel won (0) the waiter's primitive will never
 * wake it, so the scope calls the wake itself, after unlocking: the owner sees exactly one
 * wake in every case, with status = the reason when the scope won. unwatch() unlinks a
 * link that has not fired (0: the scope never touches it again), waits for a FIRING link
 * to become FIRED, and reports a fired link (BAND_EALREADY). A wake may unwatch its own
 * link at any time: when the scope's cancel wins, the link is FIRED before the wake runs;
 * when the primitive wins, the wake runs on another thread, and the scope's cancel it may
 * wait for only takes the primitive's lock, which no wake holds.
 *
 * Lifetime. Destroy refuses while waits are queued, participants are joined, links are
 * not unwatched, a request is still firing (the request touches the scope until its last
 * link is done), or the token is still in use (band_cancel_destroy() refuses first, so a
 * refusal frees nothing).
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "band/shutdown.h"
#include "core/block.h"
#include "core/waitq.h"

#define REQUESTED ((uint64_t)1)
#define ONE       ((uint64_t)2) /* one participant */
#define PARTS(st) ((st) >> 1)

enum link_state {
    LINK_IDLE = 0,
    LINK_WATCHED = 1, /* on the watch list, or taken by the request and not yet fired */
    LINK_FIRING = 2,  /* the request is cancelling its waiter */
    LINK_FIRED = 3,   /* the cancel returned */
};

struct band_shutdown {
    /* Hot: joins, leaves and band_shutdown_is_requested() polls. */
    _Alignas(BAND__CACHELINE) _Atomic uint64_t state;
    _Atomic int reason;
    _Atomic uint64_t join_refusals;
    band_cancel *cancel; /* set at create, requested by the first request */
    /* Everything below is guarded by lock. */
    _Alignas(BAND__CACHELINE) pthread_mutex_t lock;
    pthread_cond_t fired_cv;    /* a FIRING link became FIRED */
    struct band__waitq req_q;   /* band_shutdown_wait_requested waits */
    struct band__waitq drain_q; /* band_shutdown_wait_drained waits */
    struct band__node watch;    /* watched links, before the request */
    struct band__node firing;   /* links the request has still to fire */
    uint64_t links;             /* links watched and not yet unwatched */
    int requesting;             /* a request is releasing waits or firing links */
    uint64_t queued, released, timeouts, cancels, fired, fired_cancelled;
};

static void shutdown_req_cancel_locked(struct band__waitq *q, band_waiter *w, int reason,
                                       struct band__wakelist *wl);
static void shutdown_drain_cancel_locked(struct band__waitq *q, band_waiter *w, int reason,
                                         struct band__wakelist *wl);

/* One op per queue, so that a cancel finds the scope from the queue it was given. */
static const struct band__waitq_ops shutdown_req_ops = {shutdown_req_cancel_locked};
static const struct band__waitq_ops shutdown_drain_ops = {shutdown_drain_cancel_locked};

/* ---------------------------------------------------------------- lifecycle */

int band_shutdown_create(band_shutdown **out)
{
    if (out == NULL)
        return BAND_EINVAL;
    band_shutdown *t = aligned_alloc(BAND__CACHELINE, sizeof(*t));
    if (t == NULL)
        return BAND_ENOMEM;
    if (pthread_mutex_init(&t->lock, NULL) != 0) {
        free(t);
        return BAND_ENOMEM;
    }
    if (pthread_cond_init(&t->fired_cv, NULL) != 0) {
        pthread_mutex_destroy(&t->lock);
        free(t);
        return BAND_ENOMEM;
    }
    int rc = band_cancel_create(&t->cancel, NULL);
    if (rc != 0) {
        pthread_cond_destroy(&t->fired_cv);
        pthread_mutex_destroy(&t->lock);
        free(t);
        return rc;
    }
    atomic_init(&t->state, 0);
    atomic_init(&t->reason, 0);
    atomic_init(&t->join_refusals, 0);
    band__waitq_init(&t->req_q, &t->lock, &shutdown_req_ops);
    band__waitq_init(&t->drain_q, &t->lock, &shutdown_drain_ops);
    band__list_init(&t->watch);
    band__list_init(&t->firing);
    t->links = 0;
    t->requesting = 0;
    t->queued = t->released = t->timeouts = t->cancels = t->fired = t->fired_cancelled = 0;
    *out = t;
    return 0;
}

int band_shutdown_destroy(band_shutdown *t)
{
    if (t == NULL)
        return 0;
    pthread_mutex_lock(&t->lock);
    int busy = t->req_q.len > 0 || t->drain_q.len > 0 || t->links > 0 || t->requesting ||
               PARTS(atomic_load_explicit(&t->state, memory_order_relaxed)) > 0;
    pthread_mutex_unlock(&t->lock);
    if (busy)
        return BAND_EBUSY;
    if (band_cancel_destroy(t->cancel) != 0)
        return BAND_EBUSY; /* a thread blocked under it, a hook or a child: nothing freed */
    pthread_cond_destroy(&t->fired_cv);
    pthread_mutex_destroy(&t->lock);
    free(t);
    return 0;
}

/* ---------------------------------------------------------------- helpers (lock held) */

/* Complete every wait on @q with status 0. */
static void shutdown_release_all_locked(band_shutdown *t, struct band__waitq *q,
                                        struct band__wakelist *wl)
{
    band_waiter *w;
    while ((w = band__waitq_first(q)) != NULL) {
        band__waitq_unlink_locked(q, w);
        t->released++;
        band__waiter_complete_locked(w, 0, wl);
    }
}

static void shutdown_count_cancel_locked(band_shutdown *t, struct band__waitq *q, band_waiter *w,
                                         int reason)
{
    band__waitq_unlink_locked(q, w);
    if (reason == BAND_ETIMEDOUT)
        t->timeouts++;
    else
        t->cancels++;
}

/* Withdraw @w (queue ops, called by band_waiter_cancel() with the lock held). A wait holds
 * nothing, so its cancel completes nobody else and @wl stays empty. */
static void shutdown_req_cancel_locked(struct band__waitq *q, band_waiter *w, int reason,
                                       struct band__wakelist *wl)
{
    (void)wl;
    shutdown_count_cancel_locked(band__container_of(q, band_shutdown, req_q), q, w, reason);
}

static void shutdown_drain_cancel_locked(struct band__waitq *q, band_waiter *w, int reason,
                                         struct band__wakelist *wl)
{
    (void)wl;
    shutdown_count_cancel_locked(band__container_of(q, band_shutdown, drain_q), q, w, reason);
}

static struct band_shutdown_link *link_of(struct band__node *n)
{
    return band__container_of(n, struct band_shutdown_link, _node);
}

/* ---------------------------------------------------------------- request */

/*
 * Fire the links the request took, one at a time (called by the first request, lock not
 * held). Each cancel runs without the scope's lock: it takes the primitive's lock and may
 * run wakes of other waiters, which may call back into the scope.
 */
static void shutdown_fire_links(band_shutdown *t, int reason)
{
    pthread_mutex_lock(&t->lock);
    struct band__node *n;
    while ((n = band__list_first(&t->firing)) != NULL) {
        struct band_shutdown_link *link = link_of(n);
        band__list_del_init(n);
        link->_state = LINK_FIRING;
        band_waiter *w = link->_w;
        pthread_mutex_unlock(&t->lock);

        int rc = band__waiter_cancel_as(w, reason); /* the scope's reason, any code */

        pthread_mutex_lock(&t->lock);
        link->_state = LINK_FIRED; /* unwatch may return now; the owner waits for the wake */
        t->fired++;
        if (rc == 0)
            t->fired_cancelled++;
        pthread_cond_broadcast(&t->fired_cv);
        pthread_mutex_unlock(&t->lock);

        if (rc == 0)
            w->wake(w); /* the primitive will not wake it: the scope does, once */

        pthread_mutex_lock(&t->lock);
    }
    t->requesting = 0; /* the last access: destroy may succeed from here on */
    pthread_mutex_unlock(&t->lock);
}

int band_shutdown_request(band_shutdown *t, int reason)
{
    if (t == NULL || reason >= 0)
        return BAND_EINVAL;
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&t->lock);
    uint64_t st = atomic_load_explicit(&t->state, memory_order_relaxed);
    if (st & REQUESTED) {
        pthread_mutex_unlock(&t->lock);
        return BAND_EALREADY;
    }
    atomic_store_explicit(&t->reason, reason, memory_order_relaxed);
    /* Release: the reason is published with the flag. Joins may race: they CAS. */
    st = atomic_fetch_or_explicit(&t->state, REQUESTED, memory_order_acq_rel);
    shutdown_release_all_locked(t, &t->req_q, &wl);
    if (PARTS(st) == 0)
        shutdown_release_all_locked(t, &t->drain_q, &wl);
    struct band__node *n;
    while ((n = band__list_first(&t->watch)) != NULL) {
        band__list_del_init(n);
        band__list_add_tail(&t->firing, n);
    }
    t->requesting = 1;
    pthread_mutex_unlock(&t->lock);

    (void)band_cancel_request(t->cancel); /* BAND_EALREADY if requested directly */
    band__wakelist_run(&wl);
    shutdown_fire_links(t, reason);
    return 0;
}

band_cancel *band_shutdown_cancel(band_shutdown *t)
{
    return t == NULL ? NULL : t->cancel;
}

int band_shutdown_is_requested(const band_shutdown *t)
{
    if (t == NULL)
        return 0;
    return (atomic_load_explicit(&((band_shutdown *)t)->state, memory_order_acquire) & REQUESTED) !=
           0;
}

int band_shutdown_reason(const band_shutdown *t)
{
    if (!band_shutdown_is_requested(t))
        return 0;
    return atomic_load_explicit(&((band_shutdown *)t)->reason, memory_order_relaxed);
}

/* ---------------------------------------------------------------- participants */

int band_shutdown_join(band_shutdown *t)
{
    if (t == NULL)
        return BAND_EINVAL;
    uint64_t st = atomic_load_explicit(&t->state, memory_order_acquire);
    do {
        if (st & REQUESTED) {
            atomic_fetch_add_explicit(&t->join_refusals, 1, memory_order_relaxed);
            return atomic_load_explicit(&t->reason, memory_order_relaxed);
        }
        if (PARTS(st) >= BAND_SHUTDOWN_MAX_PARTICIPANTS)
            return BAND_EOVERFLOW;
    } while (!atomic_compare_exchange_weak_explicit(&t->state, &st, st + ONE, memory_order_acquire,
                                                    memory_order_acquire));
    return 0;
}

int band_shutdown_leave(band_shutdown *t)
{
    if (t == NULL)
        return BAND_EINVAL;
    /* Fast path: this leave does not drain the scope. */
    uint64_t st = atomic_load_explicit(&t->state, memory_order_relaxed);
    for (;;) {
        if (PARTS(st) == 0)
            return BAND_EINVAL;
        if (st == (REQUESTED | ONE))
            break; /* the last participant after the request: drain under the lock */
        if (atomic_compare_exchange_weak_explicit(&t->state, &st, st - ONE, memory_order_release,
                                                  memory_order_relaxed))
            return 0;
    }

    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&t->lock);
    st = atomic_load_explicit(&t->state, memory_order_relaxed);
    do {
        if (PARTS(st) == 0) {
            pthread_mutex_unlock(&t->lock);
            return BAND_EINVAL;
        }
    } while (!atomic_compare_exchange_weak_explicit(&t->state, &st, st - ONE, memory_order_acq_rel,
                                                    memory_order_relaxed));
    if (st - ONE == REQUESTED)
        shutdown_release_all_locked(t, &t->drain_q, &wl);
    pthread_mutex_unlock(&t->lock);
    band__wakelist_run(&wl);
    return 0;
}

uint64_t band_shutdown_participants(const band_shutdown *t)
{
    if (t == NULL)
        return 0;
    return PARTS(atomic_load_explicit(&((band_shutdown *)t)->state, memory_order_acquire));
}

/* ---------------------------------------------------------------- waits */

static bool shutdown_is_drained(uint64_t st)
{
    return st == REQUESTED;
}

/* Is what a wait on @q waits for true in @st? */
static bool shutdown_satisfied(const band_shutdown *t, const struct band__waitq *q, uint64_t st)
{
    return q == &t->req_q ? (st & REQUESTED) != 0 : shutdown_is_drained(st);
}

/* 0 when the wait on @q is satisfied now (nothing queued), else queue @w: BAND_PENDING. */
static int shutdown_enqueue(band_shutdown *t, struct band__waitq *q, band_waiter *w)
{
    int rc = BAND_PENDING;
    pthread_mutex_lock(&t->lock);
    if (shutdown_satisfied(t, q, atomic_load_explicit(&t->state, memory_order_acquire))) {
        rc = 0;
    } else {
        band__waitq_push_locked(q, w, 0, 0);
        t->queued++;
    }
    pthread_mutex_unlock(&t->lock);
    if (rc == 0)
        band__waiter_finish_now(w, 0);
    return rc;
}

static int shutdown_wait_async(band_shutdown *t, struct band__waitq *q, band_waiter *w)
{
    int rc = band__waiter_check_submit(w);
    if (rc != 0)
        return rc;
    if (shutdown_satisfied(t, q, atomic_load_explicit(&t->state, memory_order_acquire))) {
        band__waiter_finish_now(w, 0);
        return 0;
    }
    return shutdown_enqueue(t, q, w);
}

static int shutdown_wait(band_shutdown *t, struct band__waitq *q, band_time deadline,
                         band_cancel *cancel)
{
    if (shutdown_satisfied(t, q, atomic_load_explicit(&t->state, memory_order_acquire)))
        return 0;
    int refusal = band__wait_refusal(deadline, cancel);
    if (refusal != 0)
        return refusal;
    struct band__blocker b;
    band__blocker_init(&b);
    b.w.deadline = deadline;
    int rc = shutdown_enqueue(t, q, &b.w);
    if (rc != BAND_PENDING) {
        band__blocker_done(&b);
        return rc;
    }
    return band__blocker_wait_cancel(&b, deadline, cancel);
}

int band_shutdown_wait_requested(band_shutdown *t, band_time deadline, band_cancel *cancel)
{
    if (t == NULL)
        return BAND_EINVAL;
    return shutdown_wait(t, &t->req_q, deadline, cancel);
}

int band_shutdown_wait_requested_async(band_shutdown *t, band_waiter *w)
{
    if (t == NULL)
        return BAND_EINVAL;
    return shutdown_wait_async(t, &t->req_q, w);
}

int band_shutdown_wait_drained(band_shutdown *t, band_time deadline, band_cancel *cancel)
{
    if (t == NULL)
        return BAND_EINVAL;
    return shutdown_wait(t, &t->drain_q, deadline, cancel);
}

int band_shutdown_wait_drained_async(band_shutdown *t, band_waiter *w)
{
    if (t == NULL)
        return BAND_EINVAL;
    return shutdown_wait_async(t, &t->drain_q, w);
}

/* ---------------------------------------------------------------- watch links */

void band_shutdown_link_init(struct band_shutdown_link *link)
{
    if (link == NULL)
        return;
    band__list_init(&link->_node);
    link->_w = NULL;
    link->_t = NULL;
    link->_state = LINK_IDLE;
}

int band_shutdown_watch(band_shutdown *t, struct band_shutdown_link *link, band_waiter *w)
{
    if (t == NULL || link == NULL || w == NULL || link->_t != NULL)
        return BAND_EINVAL;
    switch (band__waiter_state(w)) {
    case BAND__W_IDLE:
        return BAND_EINVAL; /* never submitted, completed at once, or cancelled */
    case BAND__W_DONE:
        return BAND_EALREADY;
    case BAND__W_QUEUED:
        break;
    }
    pthread_mutex_lock(&t->lock);
    if (atomic_load_explicit(&t->state, memory_order_relaxed) & REQUESTED) {
        int reason = atomic_load_explicit(&t->reason, memory_order_relaxed);
        pthread_mutex_unlock(&t->lock);
        return reason;
    }
    link->_w = w;
    link->_t = t;
    link->_state = LINK_WATCHED;
    band__list_add_tail(&t->watch, &link->_node);
    t->links++;
    pthread_mutex_unlock(&t->lock);
    return 0;
}

int band_shutdown_unwatch(struct band_shutdown_link *link)
{
    if (link == NULL || link->_t == NULL)
        return BAND_EINVAL;
    band_shutdown *t = link->_t;
    int rc = 0;
    pthread_mutex_lock(&t->lock);
    if (link->_state == LINK_WATCHED) {
        band__list_del_init(&link->_node); /* from the watch or the firing list */
    } else {
        while (link->_state == LINK_FIRING)
            pthread_cond_wait(&t->fired_cv, &t->lock);
        rc = BAND_EALREADY;
    }
    t->links--;
    link->_state = LINK_IDLE;
    link->_w = NULL;
    link->_t = NULL;
    pthread_mutex_unlock(&t->lock);
    return rc;
}

/* ---------------------------------------------------------------- observability */

int band_shutdown_get_stats(const band_shutdown *ct, band_shutdown_stats *out)
{
    if (ct == NULL || out == NULL)
        return BAND_EINVAL;
    band_shutdown *t = (band_shutdown *)ct; /* the lock is logically const */
    pthread_mutex_lock(&t->lock);
    uint64_t st = atomic_load_explicit(&t->state, memory_order_acquire);
    out->requested = (st & REQUESTED) != 0;
    out->reason = out->requested ? atomic_load_explicit(&t->reason, memory_order_relaxed) : 0;
    out->participants = PARTS(st);
    out->waiting_requested = t->req_q.len;
    out->waiting_drained = t->drain_q.len;
    out->watched = t->links;
    out->queued = t->queued;
    out->released = t->released;
    out->timeouts = t->timeouts;
    out->cancels = t->cancels;
    out->fired = t->fired;
    out->fired_cancelled = t->fired_cancelled;
    pthread_mutex_unlock(&t->lock);
    out->join_refusals = atomic_load_explicit(&t->join_refusals, memory_order_relaxed);
    return 0;
}
