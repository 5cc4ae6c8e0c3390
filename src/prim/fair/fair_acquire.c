/*
 * fair_acquire.c - requests on a band_fair: try, async, blocking, release and cancel.
 *
 * Design notes
 * ------------
 * Every request decides under the fair's lock. A new request is granted at once when
 * band__fair_can_grant_now() says it overtakes nobody; otherwise it is queued on its key's
 * flow and the dispatch runs (it cannot grant anything new, but it records whether the
 * request's class now stalls, so that later requests do not barge past it). After a grant
 * at once the dispatch runs too when anything is queued: the grant can end a stall (the
 * stalled turn's key reached its cap through another class, or a reserved key's grant
 * lifted its protection), and then the requests behind it are granted on this thread. So
 * even try_acquire may run wakes of other requests, after unlocking.
 *
 * Queued requests are not on the fair's band__waitq list: the queue only lets
 * band_waiter_cancel() find the lock and fair_cancel_locked(). The waiter's state word
 * points at that queue, which lives as long as the fair, so a cancel that races with a
 * grant and the eviction of the key never touches freed memory: it locks the fair's lock,
 * sees the state changed, and answers BAND_EALREADY.
 *
 * A request holds nothing until it is granted whole, so a cancel returns no units; it may
 * still let others in (the cancelled request may have had the turn, or protected a
 * reservation), so it runs the dispatch and the wakes of what that granted.
 */
#include "core/block.h"
#include "prim/fair/fair_internal.h"

static void fair_cancel_locked(struct band__waitq *q, band_waiter *w, int reason,
                               struct band__wakelist *wl);

const struct band__waitq_ops band__fair_waitq_ops = {fair_cancel_locked};

/* Withdraw @w (queue op, called by band_waiter_cancel() with the lock held). */
static void fair_cancel_locked(struct band__waitq *q, band_waiter *w, int reason,
                               struct band__wakelist *wl)
{
    band_fair *f = band__container_of(q, band_fair, q);
    band_fair_acquire_op *r = band__fair_op_of(w);
    struct fair_key *k = r->_k;
    band__fair_unlink_locked(f, r);
    if (reason == BAND_ETIMEDOUT) {
        k->timeouts++;
        f->cls[r->_cls].timeouts++;
    } else {
        k->cancels++;
        f->cls[r->_cls].cancels++;
    }
    r->_k = NULL;
    band__fair_key_refresh_locked(f, k); /* it may have been the head of its flow */
    band__fair_dispatch_locked(f, wl);
    band__fair_key_maybe_evict(f, k);
}

void band__fair_fail_too_big_locked(band_fair *f, struct fair_key *k, struct band__wakelist *wl)
{
    for (uint32_t c = f->nclasses; c-- > 0;) { /* the least urgent class first */
        struct fair_flow *fl = &k->flow[c];
        struct band__node *n = fl->reqs.next;
        while (n != &fl->reqs) {
            struct band__node *next = n->next;
            band_fair_acquire_op *r = band__fair_op_of(band__waiter_of(n));
            if (r->_n > k->cap) {
                band__fair_unlink_locked(f, r);
                r->_k = NULL;
                f->too_big++;
                band__waiter_complete_locked(&r->w, BAND_E2BIG, wl);
            }
            n = next;
        }
    }
    band__fair_key_refresh_locked(f, k); /* the cap changed, and heads may have gone */
}

/*
 * The decision shared by every front end, under the lock: grant now (0), refuse
 * (negative), or, when @r is not NULL, queue it (BAND_PENDING). With @r NULL a request
 * that would wait answers BAND_EAGAIN.
 */
static int fair_submit_locked(band_fair *f, uint64_t key, uint32_t cls, uint64_t n,
                              band_fair_acquire_op *r, band_time now, struct band__wakelist *wl)
{
    if (f->closed)
        return BAND_ECLOSED;
    if (n > f->cls[cls].limit) {
        f->too_big++;
        return BAND_E2BIG;
    }
    int rc = 0;
    struct fair_key *k = band__fair_key_get(f, key, &rc);
    if (k == NULL)
        return rc;
    if (n > k->cap) {
        f->too_big++;
        band__fair_key_maybe_evict(f, k);
        return BAND_E2BIG;
    }
    if (band__fair_can_grant_now(f, k, cls, n)) {
        band__fair_charge(f, k, cls, n);
        /* The grant may end a stall it did not overtake: the key may now be at its cap
         * where it has the turn, or its reservation may no longer be protected. */
        if (f->q.len > 0)
            band__fair_dispatch_locked(f, wl);
        return 0;
    }
    if (r == NULL) {
        f->try_refusals++;
        band__fair_key_maybe_evict(f, k);
        return BAND_EAGAIN;
    }
    if (f->cls[cls].waiting_units > UINT64_MAX - n) { /* the class total bounds the key's */
        band__fair_key_maybe_evict(f, k);
        return BAND_EOVERFLOW;
    }
    band__fair_enqueue_locked(f, k, r, now);
    band__fair_dispatch_locked(f, wl);
    return BAND_PENDING;
}

/* Common argument checks; 0 or BAND_EINVAL. */
static int fair_check_args(const band_fair *f, uint32_t cls)
{
    if (f == NULL || cls >= f->nclasses)
        return BAND_EINVAL;
    return 0;
}

/* 0 when @f is open (a request of 0 units), else BAND_ECLOSED. */
static int fair_zero_request(band_fair *f)
{
    pthread_mutex_lock(&f->lock);
    int rc = f->closed ? BAND_ECLOSED : 0;
    pthread_mutex_unlock(&f->lock);
    return rc;
}

int band_fair_try_acquire(band_fair *f, uint64_t key, uint32_t cls, uint64_t n)
{
    int rc = fair_check_args(f, cls);
    if (rc != 0)
        return rc;
    if (n == 0)
        return fair_zero_request(f);
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&f->lock);
    rc = fair_submit_locked(f, key, cls, n, NULL, 0, &wl);
    pthread_mutex_unlock(&f->lock);
    band__wakelist_run(&wl);
    return rc;
}

/*
 * If the dispatch after queuing @r granted @r itself (it cannot, by the rules, but the
 * submission must never call wake), take it off @wl. Returns true when it did.
 */
static bool fair_take_back(struct band__wakelist *wl, band_fair_acquire_op *r)
{
    for (struct band__node **pp = &wl->first; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == &r->w._link) {
            *pp = r->w._link.next;
            if (wl->tail == &r->w._link.next)
                wl->tail = pp;
            return true;
        }
    }
    return false;
}

int band_fair_acquire_async(band_fair *f, uint64_t key, uint32_t cls, uint64_t n,
                            band_fair_acquire_op *op)
{
    if (op == NULL)
        return BAND_EINVAL;
    int rc = fair_check_args(f, cls);
    if (rc == 0)
        rc = band__waiter_check_submit(&op->w);
    if (rc != 0)
        return rc;
    op->_key = key;
    op->_n = n;
    op->_cls = cls;
    op->_pad = 0;
    op->_k = NULL;
    if (n == 0) {
        rc = fair_zero_request(f);
        band__waiter_finish_now(&op->w, rc);
        return rc;
    }
    band_time now = band_now();
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&f->lock);
    rc = fair_submit_locked(f, key, cls, n, op, now, &wl);
    if (rc == BAND_PENDING && band__waiter_state(&op->w) == BAND__W_DONE && fair_take_back(&wl, op))
        rc = (int)op->w._u.status;
    pthread_mutex_unlock(&f->lock);
    band__wakelist_run(&wl);
    if (rc != BAND_PENDING)
        band__waiter_finish_now(&op->w, rc);
    return rc;
}

struct fair_blocker {
    band_fair_acquire_op op;
    struct band__parker parker;
};

static void fair_blocker_wake(band_waiter *w)
{
    struct fair_blocker *b = band__container_of(w, struct fair_blocker, op.w);
    band__parker_unpark(&b->parker);
}

int band_fair_acquire(band_fair *f, uint64_t key, uint32_t cls, uint64_t n, band_time deadline,
                      band_cancel *cancel)
{
    int rc = fair_check_args(f, cls);
    if (rc != 0)
        return rc;
    int refusal = band__wait_refusal(deadline, cancel);
    if (refusal != 0) {
        rc = band_fair_try_acquire(f, key, cls, n);
        return rc == BAND_EAGAIN ? refusal : rc;
    }
    struct fair_blocker b;
    band_waiter_init(&b.op.w, fair_blocker_wake, NULL);
    b.op.w.deadline = deadline;
    band__parker_init(&b.parker);
    rc = band_fair_acquire_async(f, key, cls, n, &b.op);
    if (rc == BAND_PENDING)
        rc = band__block(&b.op.w, &b.parker, deadline, cancel);
    band__parker_destroy(&b.parker);
    return rc;
}

int band_fair_release(band_fair *f, uint64_t key, uint64_t n)
{
    if (f == NULL)
        return BAND_EINVAL;
    if (n == 0)
        return 0;
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&f->lock);
    struct fair_key *k = band__fair_key_find(f, key);
    if (k == NULL || k->held < n) {
        pthread_mutex_unlock(&f->lock);
        return BAND_EINVAL;
    }
    k->held -= n;
    f->in_use -= n;
    band__fair_key_refresh_locked(f, k); /* a flow parked at the cap goes back in place */
    band__fair_dispatch_locked(f, &wl);
    band__fair_key_maybe_evict(f, k);
    pthread_mutex_unlock(&f->lock);
    band__wakelist_run(&wl);
    return 0;
}
