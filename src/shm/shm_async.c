/* SPDX-License-Identifier: MIT */
/*
 * shm_async.c - asynchronous waits on a shared segment, completed through band_waiter.
 *
 * A grant may be made by any process, which cannot run this process's wake functions. It
 * marks the slot done and rings the doorbell of the handle's record: a futex word in the
 * segment. One thread per handle, started on the first asynchronous wait, sleeps on that
 * word, collects the slots that are done and runs their wakes, so every wait ends through
 * the same band_waiter contract as an in-process one (and so through libband-uv and
 * libband-fd). The thread also does the waiter's liveness look every 50 ms while
 * anything is pending.
 *
 * The handle's local waitq lets band_waiter_cancel() find the segment: cancel takes the
 * local lock, then the segment's (the order every path here uses), and withdraws the
 * slot. A cancel that finds the slot already granted but not yet collected returns the
 * units to the segment, so the waiter ends cancelled, holding nothing, and nothing is lost.
 */
#include <stdlib.h>
#include <string.h>

#include "shm/shm_internal.h"

static void band__shm_cancel_locked(struct band__waitq *q, band_waiter *w, int reason,
                                    struct band__wakelist *wl)
{
    (void)wl;
    struct band__shm_local *l = band__container_of(q, struct band__shm_local, q);
    band_shm *s = band__container_of(l, band_shm, local);
    uint32_t i = 0;
    while (i < s->nslots && l->by_slot[i] != w)
        i++;
    band__waitq_unlink_locked(q, w);
    if (i == s->nslots)
        return;
    l->by_slot[i] = NULL;
    l->pending--;
    struct band__shm_op op;
    if (band__shm_lock(&op, s) != 0)
        return;
    struct band__shm_slot *sl = &s->slot[i];
    if (sl->state == BAND__SLOT_WAITING) {
        band__shm_withdraw_locked(&op, i, reason);
        band__shm_grant_pass_locked(&op);
    } else if (sl->state == BAND__SLOT_DONE) {
        if (sl->status == 0) {
            /* Granted while the cancel was on its way: give it straight back. */
            band__shm_give_back_locked(&op, s->self, sl->want);
            band__shm_grant_pass_locked(&op);
        }
        band__shm_slot_free_locked(s, i);
    }
    band__shm_unlock(&op);
}

static const struct band__waitq_ops band__shm_waitq_ops = {
    .cancel_locked = band__shm_cancel_locked,
};

int band__shm_local_init(band_shm *s)
{
    struct band__shm_local *l = &s->local;
    if (pthread_mutex_init(&l->mu, NULL) != 0)
        return BAND_ENOMEM;
    band__waitq_init(&l->q, &l->mu, &band__shm_waitq_ops);
    l->by_slot = NULL;
    l->pending = 0;
    l->running = 0;
    l->stop = 0;
    return 0;
}

void band__shm_local_after_fork(band_shm *s)
{
    /* The parent's waiters and its doorbell thread do not exist in this process; its
     * copy of the local state is dropped, not completed. */
    free(s->local.by_slot);
    (void)band__shm_local_init(s);
}

int band__shm_local_fini(band_shm *s)
{
    struct band__shm_local *l = &s->local;
    if (__atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) != band__shm_generation()) {
        free(l->by_slot); /* a forked child's copy */
        l->by_slot = NULL;
        return 0;
    }
    pthread_mutex_lock(&l->mu);
    if (l->pending != 0) {
        pthread_mutex_unlock(&l->mu);
        return BAND_EBUSY;
    }
    int running = l->running;
    l->stop = 1;
    pthread_mutex_unlock(&l->mu);
    if (running) {
        band__shm_futex_wake(&s->rec[s->self].doorbell);
        (void)pthread_join(l->thread, NULL);
    }
    free(l->by_slot);
    l->by_slot = NULL;
    (void)pthread_mutex_destroy(&l->mu);
    return 0;
}

/* Collect every done slot of this handle's pending waits onto @wl. Local lock held. */
static void band__shm_collect(band_shm *s, struct band__wakelist *wl)
{
    struct band__shm_local *l = &s->local;
    for (uint32_t i = 0; i < s->nslots && l->pending != 0; i++) {
        band_waiter *w = l->by_slot[i];
        if (w == NULL || band__shm_load(&s->slot[i].state) != BAND__SLOT_DONE)
            continue;
        struct band__shm_op op;
        if (band__shm_lock(&op, s) != 0)
            return;
        int status = (int)s->slot[i].status;
        band__shm_slot_free_locked(s, i);
        band__shm_unlock(&op);
        l->by_slot[i] = NULL;
        l->pending--;
        band__waitq_unlink_locked(&l->q, w);
        band__waiter_complete_locked(w, status, wl);
    }
}

static void *band__shm_doorbell(void *arg)
{
    band_shm *s = arg;
    struct band__shm_local *l = &s->local;
    uint32_t *bell = &s->rec[s->self].doorbell;
    for (;;) {
        uint32_t seen = __atomic_load_n(bell, __ATOMIC_ACQUIRE);
        struct band__wakelist wl;
        band__wakelist_init(&wl);
        pthread_mutex_lock(&l->mu);
        if (l->stop) {
            pthread_mutex_unlock(&l->mu);
            break;
        }
        band__shm_collect(s, &wl);
        uint32_t pending = l->pending;
        pthread_mutex_unlock(&l->mu);
        band__wakelist_run(&wl);
        if (band__shm_futex_sleep(bell, seen, BAND__SHM_CHECK_NS) == BAND_ETIMEDOUT &&
            pending != 0) {
            struct band__shm_op op;
            if (band__shm_lock(&op, s) == 0) {
                (void)band__shm_sweep_locked(&op, 0);
                band__shm_unlock(&op);
            }
        }
    }
    return NULL;
}

int band__shm_async_submit(band_shm *s, const struct band__shm_want *want, band_waiter *w,
                           uint32_t *slot_out)
{
    if (band__waiter_check_submit(w) != 0)
        return BAND_EINVAL;
    int rc = band__shm_ensure_self(s);
    if (rc != 0) {
        band__waiter_finish_now(w, rc);
        return rc;
    }
    struct band__shm_local *l = &s->local;
    pthread_mutex_lock(&l->mu);
    if (l->by_slot == NULL) {
        l->by_slot = calloc(s->nslots, sizeof(band_waiter *));
        if (l->by_slot == NULL) {
            pthread_mutex_unlock(&l->mu);
            band__waiter_finish_now(w, BAND_ENOMEM);
            return BAND_ENOMEM;
        }
    }
    struct band__shm_op op;
    rc = band__shm_lock(&op, s);
    if (rc == 0) {
        rc = band__shm_try_locked(&op, want);
        if (rc == BAND_EAGAIN && !l->running) {
            /* Start the doorbell before anything can ring it. */
            if (pthread_create(&l->thread, NULL, band__shm_doorbell, s) == 0)
                l->running = 1;
            else
                rc = BAND_ENOMEM;
        }
        if (rc == BAND_EAGAIN) {
            uint32_t i;
            rc = band__shm_enqueue_locked(&op, want, BAND__SLOT_ASYNC, &i);
            if (rc == 0) {
                l->by_slot[i] = w;
                l->pending++;
                *slot_out = i;
                uint64_t first = 0;
                for (uint32_t b = 0; b < s->nbounds && first == 0; b++)
                    first = want->units[b];
                band__waitq_push_locked(&l->q, w, first, band_now());
                rc = BAND_PENDING;
            }
        }
        band__shm_unlock(&op);
    }
    pthread_mutex_unlock(&l->mu);
    if (rc != BAND_PENDING)
        band__waiter_finish_now(w, rc);
    return rc;
}
