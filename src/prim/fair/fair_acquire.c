/* SPDX-License-Identifier: MIT */
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
 *
 * Key handles and the gate
 * ------------------------
 * A handle's try and release may skip the lock. band_fair.state holds the units in use and
 * FAIR_SLOW, the gate. The gate is shut while anything is queued or the fair is closed
 * (band__fair_gate_sync_locked() before every unlock), and, while handles exist, for the
 * span of every locked decision that can grant (band__fair_gate_close_locked() in the
 * submission and in key changes). With the gate open nothing is queued, so no class is
 * stalled and no reservation is protected: a request fits when the key stays within its
 * cap and in_use + n stays within the class's limit (capacity - headroom), which is what
 * the lock-free try checks; keys with a reservation of their own always take the lock.
 *
 * Where a key's units are counted. A key whose cap binds no grant (it is at least every
 * class limit: every grant keeps in_use + n within its class's limit, and the key's units
 * are part of in_use) and that has no reservation is FAIR_SPLIT: its handles count the
 * units they take in counts of their own, and its units held are its shared word (a_held)
 * plus taken - given of every handle on its list (key_held()). Any other key keeps all its
 * units in the shared word, and its handles' counts stay 0.
 *
 *  - try: one CAS on state (gate open, in_use + n <= limit, and for a key whose cap binds
 *    held + n <= cap as read before it, so that a key at its cap does not take units in use
 *    that others might want) takes the units in use. Then the key's fast cap, read again
 *    after that CAS: FAIR_SPLIT, and the owner adds n to the handle's taken with a plain
 *    store (only the owner writes it); otherwise a CAS on the shared word (held + n <= cap)
 *    charges the key, and if that finds the key at its cap (a
 *    racing grant of the same key) the units go back and the lock decides, after a
 *    dispatch in case the short-lived excess held a request back. So a lock holder can see
 *    in_use ahead of the keys' sum, never behind it: it may refuse or wait a little early,
 *    never grant past the capacity, a headroom or a reservation; its own grants of a key
 *    with handles CAS against the cap too (key_take()).
 *  - busy: the owner sets the handle's busy flag before its CAS on state and clears it
 *    after its store to taken (or after a failed CAS, and before anything that may take the
 *    lock). A lock holder that shut the gate waits for 0 before it reads the count
 *    (handle_held(), handle_fold()): the gate's read-modify-write follows every CAS on state
 *    that went through, so it sees each such try's busy flag, and every later try fails its
 *    CAS. The counts it reads are then exact, and a fast cap it changed is read by every try
 *    that goes through after. Two plain stores per try; no locked instruction.
 *  - release: the owner's CAS on the handle's given (given + n <= taken) takes the units
 *    off its own count, then a fetch_sub on state returns them. given only ever changes by
 *    read-modify-writes (the owner's release, lock holders that release or fold the
 *    handle's units), so when several releasers race for the same units each unit goes to
 *    one of them and the others find too few: a release by id or through another handle
 *    that finds too few in its own places takes the lock, and key_give() gathers the units
 *    from the shared word and every handle's count with read-modify-writes, putting back
 *    what it took when they do not add up (any release that meanwhile found too few takes
 *    the lock after it and decides again). So each unit is released exactly once and the
 *    other attempts answer BAND_EINVAL. If the gate was shut at the release's fetch_sub
 *    someone may wait for the units: the release takes the lock and runs the dispatch. A
 *    request that queues shuts the gate before it decides (or finds it shut), so either
 *    the release's fetch_sub comes first and the decision sees the units free, or the
 *    release sees the gate shut and dispatches after the request is queued: no hand-off is
 *    lost, and no lock-free grant passes a queued request.
 *  - fold: when a key stops being FAIR_SPLIT (a cap below a class limit, or a
 *    reservation; band_fair_key_set() shuts the gate first) each handle's taken - given
 *    moves into the shared word (given is set to taken by a CAS, then the shared word
 *    grows), so the cap binds the shared word alone again; band_fair_handle_put() folds
 *    the handle's units likewise, and they stay the key's.
 *  - A grant that lands while a lock holder decides can only be one whose CAS on state
 *    came before the gate shut; the decision then sees its units in use, and its count once
 *    busy is 0.
 *
 * While the fair has no handle nothing moves state or held units without the lock, and
 * the lock holders write them with plain stores (fair_in_use_add(), key_take()), so the
 * calls by key id pay nothing for the handles' path. A handle's own grant counters, busy
 * flag and taken count are written by its owner only, so calls on one handle must not
 * overlap.
 *
 * Cost: a lock-free pair on a FAIR_SPLIT key has three locked instructions (the try's CAS
 * on state; the release's CAS on given and fetch_sub on state), where a semaphore's pair
 * has two; a key whose cap binds keeps four (a CAS on the shared word in the try and in
 * the release). A count written with plain stores by its owner alone would save the
 * release's CAS only by losing exact answers: a release by id or through another handle,
 * checked against it while the owner releases the same units, could succeed as well.
 */
#include <stddef.h>
#include <stdlib.h>

#include "core/block.h"
#include "prim/fair/fair_internal.h"

/* The inline fast paths of band/fair.h read a handle's start as its public prefix. */
#define FAIR_PREFIX_AT(field, pfield)                                                              \
    _Static_assert(offsetof(struct band_fair_handle, field) ==                                     \
                       offsetof(struct band_fair_handle_prefix, pfield),                           \
                   "band_fair_handle_prefix." #pfield)
FAIR_PREFIX_AT(state, state);
FAIR_PREFIX_AT(kw, key);
FAIR_PREFIX_AT(nclasses, nclasses);
FAIR_PREFIX_AT(limit, limit);
FAIR_PREFIX_AT(cnt, count);
FAIR_PREFIX_AT(cnt[1].units, count[1].units);
FAIR_PREFIX_AT(busy, busy);
FAIR_PREFIX_AT(taken, taken);
FAIR_PREFIX_AT(given, given);
_Static_assert(sizeof(((struct band_fair_handle *)0)->cnt) ==
                   sizeof(((struct band_fair_handle_prefix *)0)->count),
               "band_fair_handle_prefix.count");
_Static_assert(sizeof(_Atomic uint64_t) == sizeof(uint64_t) &&
                   sizeof(_Atomic uint64_t *) == sizeof(uint64_t *),
               "atomic words");
_Static_assert(offsetof(struct fair_key, a_fast_cap) == offsetof(struct fair_key, a_held) + 8,
               "the key's two words");
_Static_assert(FAIR_SLOW == BAND_FAIR_PREFIX_SLOW && BAND_FAIR_MAX_CAPACITY < FAIR_SLOW,
               "the gate bit lies above every capacity");

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
            if (r->_n > key_cap(k)) {
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
static int fair_submit_key_locked(band_fair *f, struct fair_key *k, uint32_t cls, uint64_t n,
                                  band_fair_acquire_op *r, band_time now, struct band__wakelist *wl)
{
    if (n > key_cap(k)) {
        f->too_big++;
        band__fair_key_maybe_evict(f, k);
        return BAND_E2BIG;
    }
    if (band__fair_can_grant_now(f, k, cls, n) && band__fair_charge(f, k, cls, n, key_cap(k))) {
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

/* fair_submit_key_locked() after the checks that come before the key: closed, too big
 * for the class, the key (looked up, or created). */
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
    band__fair_gate_close_locked(f); /* no handle grant lands while this decides */
    rc = fair_submit_key_locked(f, k, cls, n, r, now, wl);
    band__fair_gate_sync_locked(f);
    return rc;
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
    if (k == NULL || !key_give(k, n)) {
        pthread_mutex_unlock(&f->lock);
        return BAND_EINVAL;
    }
    fair_in_use_sub(f, n);
    if (f->q.len > 0) { /* with nothing queued no class is stalled: nothing to do */
        band__fair_key_refresh_locked(f, k); /* a flow parked at the cap goes back in place */
        band__fair_dispatch_locked(f, &wl);
    }
    band__fair_key_maybe_evict(f, k);
    pthread_mutex_unlock(&f->lock);
    band__wakelist_run(&wl);
    return 0;
}

/* ---------------------------------------------------------------- key handles */

int band_fair_handle_get(band_fair *f, uint64_t key, band_fair_handle **out)
{
    if (f == NULL || out == NULL)
        return BAND_EINVAL;
    struct band_fair_handle *h = malloc(sizeof(*h));
    if (h == NULL)
        return BAND_ENOMEM;
    for (uint32_t c = 0; c < BAND_FAIR_MAX_CLASSES; c++) {
        h->limit[c] = 0;
        atomic_init(&h->cnt[c].granted, 0);
        atomic_init(&h->cnt[c].units, 0);
    }
    atomic_init(&h->busy, 0);
    atomic_init(&h->taken, 0);
    atomic_init(&h->given, 0);
    int rc = 0;
    pthread_mutex_lock(&f->lock);
    struct fair_key *k = band__fair_key_get(f, key, &rc);
    if (k != NULL) {
        h->state = &f->state;
        h->kw = &k->a_held;
        h->f = f;
        h->k = k;
        h->nclasses = f->nclasses;
        for (uint32_t c = 0; c < f->nclasses; c++)
            h->limit[c] = f->cls[c].limit; /* fixed at create */
        band__list_add_tail(&f->handles, &h->link);
        band__list_add_tail(&k->handles, &h->klink);
        k->refs++;
        /* From here on the lock holders write state, and k's held units, with atomic
         * read-modify-writes; the unlock publishes that before the handle is used. */
        f->nhandles++;
        band__fair_gate_sync_locked(f); /* left as it was while there were no handles */
    }
    pthread_mutex_unlock(&f->lock);
    if (k == NULL) {
        free(h);
        return rc;
    }
    *out = h;
    return 0;
}

int band_fair_handle_put(band_fair_handle *h)
{
    if (h == NULL)
        return 0;
    band_fair *f = h->f;
    struct fair_key *k = h->k;
    pthread_mutex_lock(&f->lock);
    for (uint32_t c = 0; c < f->nclasses; c++) { /* its grants stay counted */
        uint64_t g = atomic_load_explicit(&h->cnt[c].granted, memory_order_relaxed);
        uint64_t u = atomic_load_explicit(&h->cnt[c].units, memory_order_relaxed);
        k->granted += g;
        k->granted_units += u;
        f->cls[c].granted += g;
        f->cls[c].granted_units += u;
    }
    handle_fold(k, h); /* units it still holds stay the key's */
    band__list_del_init(&h->link);
    band__list_del_init(&h->klink);
    k->refs--;
    f->nhandles--;
    band__fair_key_maybe_evict(f, k);
    pthread_mutex_unlock(&f->lock);
    free(h);
    return 0;
}

/* Count a grant of the lock-free path (only the owner writes these). */
static inline void handle_count(struct band_fair_handle *h, uint32_t c, uint64_t n)
{
    atomic_store_explicit(&h->cnt[c].granted,
                          atomic_load_explicit(&h->cnt[c].granted, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    atomic_store_explicit(&h->cnt[c].units,
                          atomic_load_explicit(&h->cnt[c].units, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

/*
 * The locked path of a handle's try. @undo: the lock-free path took @n units in use and
 * then found the key at its cap (a racing grant of the same key): give them back first,
 * and run the dispatch, since a request may have been held back by them.
 */
static FAIR_COLD int handle_try_locked(struct band_fair_handle *h, uint32_t cls, uint64_t n,
                                       bool undo)
{
    band_fair *f = h->f;
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    FAIR_TEST_COUNT(f, t_slow_tries);
    if (undo)
        atomic_fetch_sub_explicit(&f->state, n, memory_order_acq_rel);
    pthread_mutex_lock(&f->lock);
    if (undo) {
        band__fair_key_refresh_locked(f, h->k);
        band__fair_dispatch_locked(f, &wl);
    }
    int rc;
    if (f->closed) {
        rc = BAND_ECLOSED;
    } else if (n > f->cls[cls].limit) {
        f->too_big++;
        rc = BAND_E2BIG;
    } else { /* as fair_submit_locked(), the key known */
        band__fair_gate_close_locked(f);
        rc = fair_submit_key_locked(f, h->k, cls, n, NULL, 0, &wl);
        band__fair_gate_sync_locked(f);
    }
    pthread_mutex_unlock(&f->lock);
    band__wakelist_run(&wl);
    return rc;
}

/* A grant of the lock-free path to a FAIR_SPLIT key, in @h's own count (the owner's
 * store; @busy goes back to 0 after it). */
static inline void handle_take_split(struct band_fair_handle *h, uint32_t c, uint64_t n)
{
    atomic_store_explicit(&h->taken, atomic_load_explicit(&h->taken, memory_order_relaxed) + n,
                          memory_order_release);
    handle_count(h, c, n);
    atomic_store_explicit(&h->busy, 0, memory_order_release);
}

/*
 * The rest of a handle's try once the first attempt of band_fair_handle_try_acquire() did
 * not go through: the arguments (checked here), the retries of the compare-and-swaps, and
 * the locked path. @state_taken: the units in use were taken, the key was not FAIR_SPLIT,
 * and its cap check or CAS failed, with @held the key's shared units it found.
 */
static FAIR_COLD int handle_try_rest(struct band_fair_handle *h, uint32_t cls, uint64_t n,
                                     bool state_taken, uint64_t held)
{
    band_fair *f = h->f;
    struct fair_key *k = h->k;
    if (!state_taken) {
        if (cls >= h->nclasses)
            return BAND_EINVAL;
        if (n == 0)
            return fair_zero_request(f);
        const uint64_t limit = h->limit[cls];
        uint64_t s = atomic_load_explicit(&f->state, memory_order_acquire);
        for (;;) {
            /* With the gate shut s exceeds every limit (capacities stay below FAIR_SLOW). */
            uint64_t cap0 = atomic_load_explicit(&k->a_fast_cap, memory_order_relaxed);
            uint64_t held0 = key_held_shared(k);
            if (n > limit || s > limit - n || n > cap0 || held0 > cap0 - n)
                return handle_try_locked(h, cls, n, false); /* it counts the refusal */
            atomic_store_explicit(&h->busy, 1, memory_order_relaxed);
            if (atomic_compare_exchange_weak_explicit(&f->state, &s, s + n, memory_order_acq_rel,
                                                      memory_order_acquire))
                break;
            atomic_store_explicit(&h->busy, 0, memory_order_release);
        }
        if (atomic_load_explicit(&k->a_fast_cap, memory_order_relaxed) == FAIR_SPLIT) {
            handle_take_split(h, cls, n);
            FAIR_TEST_COUNT(f, t_fast_grants);
            return 0;
        }
        atomic_store_explicit(&h->busy, 0, memory_order_release);
        held = atomic_load_explicit(&k->a_held, memory_order_relaxed);
    }
    /* Units in use are taken; charge the key's shared word unless a racing grant brought
     * it to its cap. @held may be the value a failed CAS found (the inline path's), never
     * checked against the cap yet: check before every CAS. (Should the key have become
     * FAIR_SPLIT meanwhile, its shared word is as good a place as any, and no cap binds.) */
    for (;;) {
        uint64_t cap = atomic_load_explicit(&k->a_fast_cap, memory_order_relaxed);
        if (n > cap || held > cap - n)
            return handle_try_locked(h, cls, n, true);
        if (atomic_compare_exchange_weak_explicit(&k->a_held, &held, held + n, memory_order_relaxed,
                                                  memory_order_relaxed))
            break;
    }
    handle_count(h, cls, n);
    FAIR_TEST_COUNT(f, t_fast_grants);
    return 0;
}

/*
 * The lock-free path is one attempt with everything read from the handle and the words it
 * changes; anything else (a bad or zero argument, a shut gate, a limit or cap reached, a
 * reservation, a lost compare-and-swap) goes to handle_try_rest().
 *
 * The gate is open: nothing queued, not closed, no lock holder deciding. Then the only
 * rules are the cap and the class's headroom (no class stalls, no reservation is
 * protected), and a key with a reservation of its own takes the lock (its fast cap is 0).
 * With the gate shut the state exceeds every limit, so one comparison checks both. The
 * key's fast cap is read after the compare-and-swap on the state word: a lock holder that
 * changes it shuts the gate first, so the try either went through before (and the lock
 * holder waits on @busy for its count) or sees the new value.
 */
int band_fair_handle_try_acquire(band_fair_handle *h, uint32_t cls, uint64_t n)
{
    if (h == NULL)
        return BAND_EINVAL;
    if (cls >= h->nclasses || n == 0)
        return handle_try_rest(h, cls, n, false, 0);
    band_fair *f = h->f;
    struct fair_key *k = h->k;
    const uint64_t limit = h->limit[cls];
    uint64_t s = atomic_load_explicit(&f->state, memory_order_acquire);
    /* a key whose cap binds and is reached is refused before it takes units in use that
     * others might want */
    uint64_t cap0 = atomic_load_explicit(&k->a_fast_cap, memory_order_relaxed);
    if (n > limit || s > limit - n ||
        (cap0 != FAIR_SPLIT && (n > cap0 || key_held_shared(k) > cap0 - n)))
        return handle_try_rest(h, cls, n, false, 0);
    atomic_store_explicit(&h->busy, 1, memory_order_relaxed);
    if (!atomic_compare_exchange_strong_explicit(&f->state, &s, s + n, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        atomic_store_explicit(&h->busy, 0, memory_order_release);
        return handle_try_rest(h, cls, n, false, 0);
    }
    uint64_t cap = atomic_load_explicit(&k->a_fast_cap, memory_order_relaxed);
    if (cap == FAIR_SPLIT) {
        handle_take_split(h, cls, n);
        FAIR_TEST_COUNT(f, t_fast_grants);
        return 0;
    }
    atomic_store_explicit(&h->busy, 0, memory_order_release);
    /* Units in use first, then the key's: a lock holder then never sees the key's units
     * without the fair's, and its own grants of this key compare-and-swap against the cap
     * (key_take()), so neither can push the key past it. */
    uint64_t held = atomic_load_explicit(&k->a_held, memory_order_relaxed);
    if (n > cap || held > cap - n ||
        !atomic_compare_exchange_strong_explicit(&k->a_held, &held, held + n, memory_order_relaxed,
                                                 memory_order_relaxed))
        return handle_try_rest(h, cls, n, true, held);
    handle_count(h, cls, n);
    FAIR_TEST_COUNT(f, t_fast_grants);
    return 0;
}

int band_fair_handle_try_finish(band_fair_handle *h, uint32_t cls, uint64_t n, uint64_t held)
{
    if (h == NULL || cls >= h->nclasses || n == 0)
        return BAND_EINVAL;
    return handle_try_rest(h, cls, n, true, held);
}

/* Take @n of @h's own units off it if it has that many (any thread: a read-modify-write). */
static inline bool handle_give_own(struct band_fair_handle *h, uint64_t n)
{
    uint64_t g = atomic_load_explicit(&h->given, memory_order_acquire);
    for (;;) {
        uint64_t t = atomic_load_explicit(&h->taken, memory_order_acquire);
        if (t - g < n)
            return false;
        if (atomic_compare_exchange_weak_explicit(&h->given, &g, g + n, memory_order_acq_rel,
                                                  memory_order_acquire))
            return true;
    }
}

/* Take @n units off @k's shared word if it has that many. */
static inline bool key_give_shared(struct fair_key *k, uint64_t n)
{
    uint64_t held = key_held_shared(k);
    do {
        if (held < n)
            return false;
    } while (!atomic_compare_exchange_weak_explicit(&k->a_held, &held, held - n,
                                                    memory_order_relaxed, memory_order_relaxed));
    return true;
}

/*
 * A handle's release once its first attempt did not finish. Unless @key_done: the units
 * come off the handle's own count, or else the key's shared word; when neither has them
 * all the lock decides (key_give() gathers them from every part of the key, or answers
 * BAND_EINVAL); then the units in use go back, and with the gate shut the dispatch runs.
 */
static FAIR_COLD int handle_release_rest(struct band_fair_handle *h, uint64_t n, bool key_done)
{
    band_fair *f = h->f;
    struct fair_key *k = h->k;
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    if (!key_done) {
        if (n == 0)
            return 0;
        if (!handle_give_own(h, n) && !key_give_shared(k, n)) {
            pthread_mutex_lock(&f->lock);
            if (!key_give(k, n)) {
                pthread_mutex_unlock(&f->lock);
                return BAND_EINVAL;
            }
            fair_in_use_sub(f, n);
            if (f->q.len > 0) { /* as band_fair_release() */
                band__fair_key_refresh_locked(f, k);
                band__fair_dispatch_locked(f, &wl);
            }
            pthread_mutex_unlock(&f->lock);
            band__wakelist_run(&wl);
            return 0;
        }
        uint64_t old = atomic_fetch_sub_explicit(&f->state, n, memory_order_acq_rel);
        if ((old & FAIR_SLOW) == 0) {
            FAIR_TEST_COUNT(f, t_fast_releases);
            return 0;
        }
    }
    pthread_mutex_lock(&f->lock);
    band__fair_key_refresh_locked(f, k); /* a flow parked at the cap goes back in place */
    band__fair_dispatch_locked(f, &wl);
    pthread_mutex_unlock(&f->lock);
    band__wakelist_run(&wl);
    return 0;
}

int band_fair_handle_release(band_fair_handle *h, uint64_t n)
{
    if (h == NULL)
        return BAND_EINVAL;
    if (n == 0)
        return 0;
    uint64_t g = atomic_load_explicit(&h->given, memory_order_acquire);
    uint64_t t = atomic_load_explicit(&h->taken, memory_order_relaxed);
    bool took;
    if (t - g >= n) { /* the handle's own units */
        took = atomic_compare_exchange_strong_explicit(&h->given, &g, g + n, memory_order_acq_rel,
                                                       memory_order_relaxed);
    } else { /* the key's shared word */
        uint64_t held = key_held_shared(h->k);
        took = held >= n &&
               atomic_compare_exchange_strong_explicit(&h->k->a_held, &held, held - n,
                                                       memory_order_relaxed, memory_order_relaxed);
    }
    if (!took)
        return handle_release_rest(h, n, false);
    /* The key's units first, then the fair's: a lock holder never counts them free while
     * the key still holds them. A shut gate means someone may wait for them. */
    uint64_t old = atomic_fetch_sub_explicit(&h->f->state, n, memory_order_acq_rel);
    if ((old & FAIR_SLOW) != 0)
        return handle_release_rest(h, n, true);
    FAIR_TEST_COUNT(h->f, t_fast_releases);
    return 0;
}

int band_fair_handle_release_finish(band_fair_handle *h)
{
    if (h == NULL)
        return BAND_EINVAL;
    return handle_release_rest(h, 0, true);
}
