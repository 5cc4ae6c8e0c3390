/*
 * admit_eval.c - deciding multi-budget requests: grant, fail, cancel, and the kick that
 * semaphores send when a request may have become grantable.
 *
 * Design notes
 * ------------
 * Nodes. A pending request has one proxy waiter in the queue of each budget it names
 * (entry._node, wake = band__admit_proxy_wake, data = the request). The request's own
 * waiter sits on no list; its state points at band__admit_q, whose lock is the admission
 * mutex, so band_waiter_cancel() on it takes that mutex and calls admit_cancel_locked().
 *
 * Lock order. band__admit_mu, then semaphore locks in ascending address order (a request's
 * _order). Semaphore operations hold one semaphore lock and never wait for the admission
 * mutex while holding it; when they leave a proxy at the head of a queue with enough free
 * units (head_got), or must fail proxies (close, shrink), they set their wake list's post
 * hook and band__admit_kick() runs after they unlocked. No cycle, so no lock deadlock.
 *
 * One global order. A request joins all of its queues while holding the admission mutex
 * and all of their locks, i.e. at one instant; a plain acquisition joins its one queue at
 * one instant under that queue's lock. So the order of every queue agrees with one global
 * order of queueing instants (guaranteed-class requests of a hierarchy sort ahead of the
 * rest, by a class fixed for the request in all queues: the order is then lexicographic
 * (class, instant), still global). "X waits behind Y" therefore never forms a cycle, and
 * the globally first waiter is the head of each of its queues.
 *
 * Holds nothing, takes everything at once. A proxy is never granted by the semaphore. The
 * free units FIFO sets aside for the head of a queue (head_got) are not the request's:
 * if it is cancelled they go on to the next waiter. A request is granted only when, with
 * all of its locks held, it is the head of every queue it is in and every head_got covers
 * its amount; it then takes all amounts and leaves all queues in one step.
 *
 * No lost evaluation. A request becomes grantable only through an event on one of its
 * semaphores that makes "head with enough" true there (units released into head_got, the
 * request reaching the head with units), and every such event kicks that semaphore once
 * its lock is dropped. The kick re-reads everything under the locks, so a stale kick is
 * harmless. While the admission mutex is held a queued request cannot be cancelled or
 * completed by anybody else, so a request found at the head of a queue stays valid after
 * that queue's lock is dropped and before its locks are all taken.
 *
 * Cascades (a grant frees units that make the next head grantable) go through the dirty
 * list, an intrusive stack of semaphores guarded by the admission mutex: no recursion, no
 * allocation. It is empty whenever the mutex is free.
 */
#include "admit_internal.h"

static void admit_cancel_locked(struct band__waitq *q, band_waiter *w, int reason,
                                struct band__wakelist *wl);

static const struct band__waitq_ops admit_ops = {admit_cancel_locked};

pthread_mutex_t band__admit_mu = PTHREAD_MUTEX_INITIALIZER;

struct band__waitq band__admit_q = {
    {&band__admit_q.head, &band__admit_q.head}, 0, &band__admit_mu, &admit_ops};

/* Semaphores to evaluate (admission mutex). */
static band_sem *dirty_first;

/* The wake of proxy nodes: their identity mark. The semaphore never completes a proxy, so
 * it is never called. */
void band__admit_proxy_wake(band_waiter *w)
{
    (void)w;
}

void band__admit_lock_all(band_admit_req *r)
{
    for (uint32_t k = 0; k < r->n; k++)
        pthread_mutex_lock(&r->e[r->_order[k]].sem->lock);
}

void band__admit_unlock_all(band_admit_req *r)
{
    for (uint32_t k = r->n; k > 0; k--)
        pthread_mutex_unlock(&r->e[r->_order[k - 1]].sem->lock);
}

void band__admit_mark_dirty(band_sem *s)
{
    if (s->admit_dirty)
        return;
    s->admit_dirty = 1;
    s->admit_next = dirty_first;
    dirty_first = s;
}

/* Move @src's wakes to @dst and turn its post hook (a kick) into a dirty mark. */
static void admit_collect(struct band__wakelist *dst, struct band__wakelist *src)
{
    if (src->post_arg != NULL)
        band__admit_mark_dirty(src->post_arg);
    src->post = NULL;
    src->post_arg = NULL;
    band__wakelist_splice(dst, src);
}

void band__admit_remove_locked(band_admit_req *r, unsigned i, int granted, int status,
                               struct band__wakelist *wl)
{
    band_sem *s = r->e[i].sem;
    band_waiter *node = &r->e[i]._node;
    uint64_t pool = 0;
    if (band__waitq_first(&s->q) == node) {
        pool = s->head_got;
        s->head_got = 0;
        if (granted)
            pool -= node->_u.want;
    }
    band_time now = 0;
    band__sem_dequeue_locked(s, node, &now);
    band__waiter_set(node, NULL, BAND__W_IDLE);
    if (granted)
        s->grants++;
    else if (status == BAND_ETIMEDOUT)
        s->timeouts++;
    else if (status == BAND_ECLOSED)
        s->closed_fails++;
    else if (status == BAND_E2BIG)
        atomic_fetch_add_explicit(&s->too_big, 1, memory_order_relaxed);
    else
        s->cancels++;
    struct band__wakelist twl;
    band__wakelist_init(&twl);
    band__sem_publish_locked(s, band__sem_grant_locked(s, pool, &twl));
    admit_collect(wl, &twl);
}

/* Take every queued node of @r out of its queue (all of @r's locks held). */
static void admit_remove_all_locked(band_admit_req *r, int granted, int status,
                                    struct band__wakelist *wl)
{
    for (uint32_t i = 0; i < r->n; i++) {
        if (band__waiter_state(&r->e[i]._node) == BAND__W_QUEUED)
            band__admit_remove_locked(r, i, granted, status, wl);
    }
}

void band__admit_fail_locked(band_admit_req *r, int status, struct band__wakelist *wl)
{
    band__admit_lock_all(r);
    admit_remove_all_locked(r, 0, status, wl);
    band__admit_unlock_all(r);
    band__admit_tree_leave_locked(r);
    band__waiter_complete_locked(&r->w, status, wl);
}

/* Move @r on: join its next stage, grant it, or fail it (a stage it joins is closed or
 * too small). Returns 1 when it ended (its wake joins @wl), 0 while it waits. Admission
 * mutex held, no lock held. */
static int admit_try_grant_locked(band_admit_req *r, struct band__wakelist *wl)
{
    band__admit_lock_all(r);
    int rc = band__admit_advance_locked(r, wl);
    if (rc < 0)
        admit_remove_all_locked(r, 0, rc, wl);
    band__admit_unlock_all(r);
    if (rc == 0)
        return 0;
    band__admit_tree_leave_locked(r);
    if (rc == 1)
        r->_flags |= BAND__ADMIT_GRANTED;
    band__waiter_complete_locked(&r->w, rc == 1 ? 0 : rc, wl);
    return 1;
}

/* The first proxy of @s that must fail, and why (lock held), or NULL. */
static band_admit_req *admit_sweep_victim_locked(band_sem *s, int *status)
{
    int closed = (atomic_load_explicit(&s->state, memory_order_relaxed) & BAND__SEM_CLOSED) != 0;
    uint64_t limit = atomic_load_explicit(&s->limit, memory_order_relaxed);
    struct band__node *node;
    band__list_foreach (node, &s->q.head) {
        band_waiter *w = band__waiter_of(node);
        if (!band__is_proxy(w))
            continue;
        if (closed) {
            *status = BAND_ECLOSED;
            return w->data;
        }
        if (w->_u.want > limit) {
            *status = BAND_E2BIG;
            return w->data;
        }
    }
    return NULL;
}

/* Fail what @s's close or shrink left behind, then grant its head while it can be. */
static void admit_eval_sem_locked(band_sem *s, struct band__wakelist *wl)
{
    for (;;) {
        pthread_mutex_lock(&s->lock);
        if (s->admit_sweep) {
            int status = 0;
            band_admit_req *victim = admit_sweep_victim_locked(s, &status);
            if (victim != NULL) {
                pthread_mutex_unlock(&s->lock);
                band__admit_fail_locked(victim, status, wl);
                continue;
            }
            s->admit_sweep = 0;
            /* Requests that have not reached @s yet but name it fail now too. */
            pthread_mutex_unlock(&s->lock);
            band__admit_staged_sweep_locked(s, wl);
            continue;
        }
        band_waiter *head = band__waitq_first(&s->q);
        if (head == NULL || !band__is_proxy(head) || s->head_got < head->_u.want) {
            pthread_mutex_unlock(&s->lock);
            return;
        }
        band_admit_req *r = head->data; /* a proxy's data is its request, never NULL */
        pthread_mutex_unlock(&s->lock);
        if (r == NULL || !admit_try_grant_locked(r, wl))
            return; /* it waits for another budget, whose events will kick it */
    }
}

void band__admit_process_locked(struct band__wakelist *wl)
{
    band_sem *s;
    while ((s = dirty_first) != NULL) {
        dirty_first = s->admit_next;
        s->admit_next = NULL;
        s->admit_dirty = 0;
        admit_eval_sem_locked(s, wl);
    }
}

void band__admit_kick(void *sem)
{
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&band__admit_mu);
    band__admit_mark_dirty(sem);
    band__admit_process_locked(&wl);
    pthread_mutex_unlock(&band__admit_mu);
    band__wakelist_run(&wl);
}

/* band_waiter_cancel() on a pending request (admission mutex held). */
static void admit_cancel_locked(struct band__waitq *q, band_waiter *w, int reason,
                                struct band__wakelist *wl)
{
    (void)q;
    band_admit_req *r = band__container_of(w, band_admit_req, w);
    band__admit_lock_all(r);
    admit_remove_all_locked(r, 0, reason, wl);
    band__admit_unlock_all(r);
    band__admit_tree_leave_locked(r);
    band__admit_process_locked(wl);
}
