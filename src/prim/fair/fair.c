/* SPDX-License-Identifier: MIT */
/*
 * fair.c - the life cycle of a band_fair: create, configure keys, close, destroy, and its
 * counters. The rules of who gets capacity are in fair_sched.c, the registry in
 * fair_keys.c, the requests in fair_acquire.c.
 *
 * Design notes
 * ------------
 * One mutex guards everything (fair_internal.h). Calls that can let requests in (key
 * configuration, close) collect completed requests on a local wake list and run their
 * wakes after unlocking, like every band primitive.
 */
#include <stdlib.h>
#include <string.h>

#include "core/name.h"
#include "prim/fair/fair_internal.h"

/* Check @capacity and *@o; 0 or BAND_EINVAL. */
static int fair_opts_check(uint64_t capacity, const band_fair_opts *o)
{
    if (capacity == 0 || capacity > BAND_FAIR_MAX_CAPACITY)
        return BAND_EINVAL;
    if (o->classes > BAND_FAIR_MAX_CLASSES || o->quantum > BAND_FAIR_MAX_QUANTUM)
        return BAND_EINVAL;
    if (o->default_weight > BAND_FAIR_MAX_WEIGHT || o->default_cap > capacity)
        return BAND_EINVAL;
    uint32_t classes = o->classes == 0 ? 1 : o->classes;
    if (o->headroom[0] != 0)
        return BAND_EINVAL; /* nothing is more urgent than class 0 */
    for (uint32_t c = 1; c < BAND_FAIR_MAX_CLASSES; c++) {
        uint64_t h = o->headroom[c];
        if (c >= classes) {
            if (h != 0)
                return BAND_EINVAL; /* a class the fair does not have */
        } else if (h >= capacity || h < o->headroom[c - 1]) {
            return BAND_EINVAL;
        }
    }
    return 0;
}

int band_fair_create(band_fair **out, uint64_t capacity, const band_fair_opts *opts)
{
    static const band_fair_opts defaults;
    if (opts == NULL)
        opts = &defaults;
    if (out == NULL || fair_opts_check(capacity, opts) != 0)
        return BAND_EINVAL;
    uint32_t classes = opts->classes == 0 ? 1 : opts->classes;
    band_fair *f = calloc(1, sizeof(*f) + classes * sizeof(struct fair_class));
    if (f == NULL)
        return BAND_ENOMEM;
    if (pthread_mutex_init(&f->lock, NULL) != 0) {
        free(f);
        return BAND_ENOMEM;
    }
    band__waitq_init(&f->q, &f->lock, &band__fair_waitq_ops);
    f->capacity = capacity;
    f->nclasses = classes;
    f->quantum = opts->quantum == 0 ? 1 : opts->quantum;
    f->default_weight = opts->default_weight == 0 ? 1 : opts->default_weight;
    f->default_cap = opts->default_cap == 0 ? capacity : opts->default_cap;
    band__list_init(&f->reserved);
    band__list_init(&f->handles);
    atomic_init(&f->state, 0);
#ifdef BAND_TESTING
    atomic_init(&f->t_fast_grants, 0);
    atomic_init(&f->t_fast_releases, 0);
    atomic_init(&f->t_slow_tries, 0);
#endif
    for (uint32_t c = 0; c < classes; c++) {
        struct fair_class *cl = &f->cls[c];
        band__list_init(&cl->ring);
        band__list_init(&cl->parked);
        cl->vround = FAIR_LAG;
        cl->limit = capacity - opts->headroom[c];
    }
    uint64_t max_keys = opts->max_keys == 0 ? BAND_FAIR_DEFAULT_MAX_KEYS : opts->max_keys;
    if (band__fair_keys_init(f, max_keys) != 0) {
        pthread_mutex_destroy(&f->lock);
        free(f);
        return BAND_ENOMEM;
    }
    *out = f;
    return 0;
}

int band_fair_destroy(band_fair *f)
{
    if (f == NULL)
        return 0;
    pthread_mutex_lock(&f->lock);
    uint64_t waiting = f->q.len, handles = f->nhandles;
    pthread_mutex_unlock(&f->lock);
    if (waiting > 0 || handles > 0)
        return BAND_EBUSY;
    band__fair_keys_free(f);
    pthread_mutex_destroy(&f->lock);
    free(f);
    return 0;
}

int band_fair_set_name(band_fair *f, const char *name)
{
    if (f == NULL)
        return BAND_EINVAL;
    return band__set_name(f->name, name, &f->lock);
}

/* ---------------------------------------------------------------- the gate */

void band__fair_gate_set_locked(band_fair *f, uint64_t want)
{
    if (want != 0) {
        atomic_fetch_or_explicit(&f->state, FAIR_SLOW, memory_order_acq_rel);
    } else {
        atomic_fetch_and_explicit(&f->state, ~FAIR_SLOW, memory_order_acq_rel);
    }
}

/* ---------------------------------------------------------------- keys */

/* Apply weight/cap/reserve and the reserved list to @k. */
static void fair_key_apply(band_fair *f, struct fair_key *k, uint32_t weight, uint64_t cap,
                           uint64_t reserve)
{
    uint64_t old = key_reserve(k);
    f->reserved_total = f->reserved_total - old + reserve;
    if (old == 0 && reserve > 0)
        band__list_add_tail(&f->reserved, &k->rlink);
    else if (old > 0 && reserve == 0)
        band__list_del_init(&k->rlink);
    k->weight = weight;
    /* the gate is shut (band__fair_gate_close_locked()): a handle grant that starts after
     * it opens again sees these */
    key_set_limits(f, k, cap, reserve);
}

int band_fair_key_set(band_fair *f, uint64_t key, const band_fair_key_opts *opts)
{
    if (f == NULL || opts == NULL)
        return BAND_EINVAL;
    uint64_t cap = opts->cap == 0 ? f->capacity : opts->cap;
    if (opts->weight == 0 || opts->weight > BAND_FAIR_MAX_WEIGHT || cap > f->capacity ||
        opts->reserve > cap)
        return BAND_EINVAL;
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    int rc = 0;
    pthread_mutex_lock(&f->lock);
    struct fair_key *k = band__fair_key_get(f, key, &rc);
    if (k != NULL) {
        if (f->reserved_total - key_reserve(k) + opts->reserve > f->capacity) {
            rc = BAND_EINVAL;
            band__fair_key_maybe_evict(f, k);
        } else {
            band__fair_gate_close_locked(f);
            if (!k->pinned) {
                k->pinned = true;
                f->npinned++;
            }
            fair_key_apply(f, k, opts->weight, cap, opts->reserve);
            band__fair_fail_too_big_locked(f, k, &wl);
            band__fair_dispatch_locked(f, &wl);
        }
    }
    pthread_mutex_unlock(&f->lock);
    band__wakelist_run(&wl);
    return rc;
}

int band_fair_key_unset(band_fair *f, uint64_t key)
{
    if (f == NULL)
        return BAND_EINVAL;
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&f->lock);
    struct fair_key *k = band__fair_key_find(f, key);
    if (k != NULL && k->pinned) {
        band__fair_gate_close_locked(f);
        k->pinned = false;
        f->npinned--;
        fair_key_apply(f, k, f->default_weight, f->default_cap, 0);
        band__fair_fail_too_big_locked(f, k, &wl);
        band__fair_dispatch_locked(f, &wl);
        band__fair_key_maybe_evict(f, k);
    }
    pthread_mutex_unlock(&f->lock);
    band__wakelist_run(&wl);
    return 0;
}

/* ---------------------------------------------------------------- close */

int band_fair_close(band_fair *f)
{
    if (f == NULL)
        return BAND_EINVAL;
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&f->lock);
    f->closed = true;
    band__fair_gate_sync_locked(f); /* shut for good: handles take the lock from now on */
    for (uint32_t c = f->nclasses; c-- > 0;) { /* the least urgent class first */
        struct fair_class *cl = &f->cls[c];
        struct band__node *fn;
        /* the ring first, then the parked flows; each list in its order */
        while ((fn = band__list_first(&cl->ring)) != NULL ||
               (fn = band__list_first(&cl->parked)) != NULL) {
            struct fair_flow *fl = band__container_of(fn, struct fair_flow, ring);
            struct fair_key *k = fl->key;
            struct band__node *n;
            while ((n = band__list_first(&fl->reqs)) != NULL) {
                band_fair_acquire_op *r = band__fair_op_of(band__waiter_of(n));
                band__fair_unlink_locked(f, r); /* the last one takes fl off its list */
                r->_k = NULL;
                f->closed_fails++;
                band__waiter_complete_locked(&r->w, BAND_ECLOSED, &wl);
            }
            band__fair_key_maybe_evict(f, k);
        }
        cl->stalled = false;
    }
    pthread_mutex_unlock(&f->lock);
    band__wakelist_run(&wl);
    return 0;
}

int band_fair_is_closed(const band_fair *cf)
{
    if (cf == NULL)
        return 0;
    band_fair *f = (band_fair *)cf; /* the lock is logically const */
    pthread_mutex_lock(&f->lock);
    int closed = f->closed;
    pthread_mutex_unlock(&f->lock);
    return closed;
}

/* ---------------------------------------------------------------- observability */

/* The grants @h made on the lock-free path, in class @c (lock held). */
static uint64_t handle_granted(const struct band_fair_handle *h, uint32_t c, uint64_t *units)
{
    *units += atomic_load_explicit(&h->cnt[c].units, memory_order_relaxed);
    return atomic_load_explicit(&h->cnt[c].granted, memory_order_relaxed);
}

static void fair_key_stats_of(const band_fair *f, const struct fair_key *k,
                              band_fair_key_stats *out)
{
    memset(out, 0, sizeof(*out));
    out->key = k->id;
    out->live = 1;
    out->pinned = k->pinned;
    out->weight = k->weight;
    out->cap = key_cap(k);
    out->reserve = key_reserve(k);
    out->held = key_held(k);
    out->waiters = k->nreq;
    out->waiting_units = k->waiting_units;
    out->granted = k->granted;
    out->granted_units = k->granted_units;
    if (k->refs > 0) {
        const struct band__node *n;
        band__list_foreach (n, &f->handles) {
            const struct band_fair_handle *h = band__container_of(n, struct band_fair_handle, link);
            if (h->k == k)
                for (uint32_t c = 0; c < f->nclasses; c++)
                    out->granted += handle_granted(h, c, &out->granted_units);
        }
    }
    out->queued = k->queued;
    out->timeouts = k->timeouts;
    out->cancels = k->cancels;
    out->wait_ns_total = k->wait_ns_total;
    out->wait_ns_max = k->wait_ns_max;
}

int band_fair_get_stats(const band_fair *cf, band_fair_stats *out)
{
    if (cf == NULL || out == NULL)
        return BAND_EINVAL;
    band_fair *f = (band_fair *)cf; /* the lock is logically const */
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&f->lock);
    memcpy(out->name, f->name, sizeof(out->name));
    out->capacity = f->capacity;
    out->in_use = fair_in_use(f);
    out->reserved = f->reserved_total;
    out->closed = f->closed;
    out->classes = f->nclasses;
    out->keys = f->nkeys;
    out->keys_pinned = f->npinned;
    out->max_keys = f->max_keys;
    out->keys_created = f->keys_created;
    out->keys_evicted = f->keys_evicted;
    out->key_refusals = f->key_refusals;
    out->waiters = f->q.len;
    out->try_refusals = f->try_refusals;
    out->too_big = f->too_big;
    out->closed_fails = f->closed_fails;
    out->evicted_granted = f->ev_granted;
    out->evicted_granted_units = f->ev_granted_units;
    out->evicted_queued = f->ev_queued;
    out->evicted_timeouts = f->ev_timeouts;
    out->evicted_cancels = f->ev_cancels;
    out->evicted_wait_ns_total = f->ev_wait_ns;
    for (uint32_t c = 0; c < f->nclasses; c++) {
        const struct fair_class *cl = &f->cls[c];
        band_fair_class_stats *o = &out->cls[c];
        o->headroom = f->capacity - cl->limit;
        o->stalled = cl->stalled;
        o->waiters = cl->nreq;
        o->waiting_units = cl->waiting_units;
        o->granted = cl->granted;
        o->granted_units = cl->granted_units;
        const struct band__node *n;
        band__list_foreach (n, &f->handles) {
            o->granted += handle_granted(band__container_of(n, struct band_fair_handle, link), c,
                                         &o->granted_units);
        }
        o->queued = cl->queued;
        o->timeouts = cl->timeouts;
        o->cancels = cl->cancels;
        o->wait_ns_total = cl->wait_ns_total;
        o->wait_ns_max = cl->wait_ns_max;
    }
    pthread_mutex_unlock(&f->lock);
    return 0;
}

int band_fair_key_get_stats(const band_fair *cf, uint64_t key, band_fair_key_stats *out)
{
    if (cf == NULL || out == NULL)
        return BAND_EINVAL;
    band_fair *f = (band_fair *)cf;
    pthread_mutex_lock(&f->lock);
    const struct fair_key *k = band__fair_key_find(f, key);
    if (k != NULL) {
        fair_key_stats_of(f, k, out);
    } else {
        memset(out, 0, sizeof(*out));
        out->key = key;
    }
    pthread_mutex_unlock(&f->lock);
    return 0;
}

int band_fair_list_keys(const band_fair *cf, band_fair_key_stats *out, size_t max, size_t *count)
{
    if (cf == NULL || count == NULL || (out == NULL && max > 0))
        return BAND_EINVAL;
    band_fair *f = (band_fair *)cf;
    size_t n = 0;
    pthread_mutex_lock(&f->lock);
    for (uint64_t b = 0; b <= f->tab_mask && n < max; b++)
        for (const struct fair_key *k = f->tab[b]; k != NULL && n < max; k = k->hnext)
            fair_key_stats_of(f, k, &out[n++]);
    pthread_mutex_unlock(&f->lock);
    *count = n;
    return 0;
}

/* ---------------------------------------------------------------- invariants */

#ifdef BAND_TESTING
#define FAIR_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            rc = -__LINE__;                                                                        \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

int band__fair_check(const band_fair *cf)
{
    band_fair *f = (band_fair *)cf;
    int rc = 0;
    pthread_mutex_lock(&f->lock);
    uint64_t held = 0, nreq = 0, nkeys = 0, npinned = 0, reserved = 0, refs = 0;
    uint64_t cls_nreq[BAND_FAIR_MAX_CLASSES] = {0}, cls_units[BAND_FAIR_MAX_CLASSES] = {0};
    uint64_t cls_active[BAND_FAIR_MAX_CLASSES] = {0};
    FAIR_CHECK(fair_in_use(f) <= f->capacity);
    FAIR_CHECK(f->nhandles == 0 ||
               ((atomic_load(&f->state) & FAIR_SLOW) != 0) == (f->closed || f->q.len > 0));
    for (uint64_t b = 0; b <= f->tab_mask; b++) {
        for (const struct fair_key *k = f->tab[b]; k != NULL; k = k->hnext) {
            nkeys++;
            FAIR_CHECK(band__fair_key_find(f, k->id) == k);
            FAIR_CHECK(k->pinned || k->refs > 0 || key_held(k) > 0 ||
                       k->nreq > 0); /* idle keys are evicted */
            FAIR_CHECK(key_reserve(k) <= key_cap(k) && key_cap(k) <= f->capacity);
            FAIR_CHECK(k->weight >= 1 && k->weight <= BAND_FAIR_MAX_WEIGHT);
            FAIR_CHECK((key_reserve(k) > 0) == !band__list_empty(&k->rlink));
            /* a key whose cap binds keeps all its units in its shared word */
            uint64_t khandles = 0;
            const struct band__node *hn;
            band__list_foreach (hn, &k->handles) {
                const struct band_fair_handle *h =
                    band__container_of(hn, struct band_fair_handle, klink);
                FAIR_CHECK(h->k == k);
                FAIR_CHECK(atomic_load(&k->a_fast_cap) == FAIR_SPLIT ||
                           atomic_load(&h->taken) == atomic_load(&h->given));
                khandles++;
            }
            FAIR_CHECK(khandles == k->refs);
            FAIR_CHECK(atomic_load(&k->a_fast_cap) == fair_fast_cap(f, key_cap(k), key_reserve(k)));
            held += key_held(k);
            npinned += k->pinned;
            refs += k->refs;
            reserved += key_reserve(k);
            uint64_t kreq = 0, kunits = 0;
            for (uint32_t c = 0; c < f->nclasses; c++) {
                const struct fair_flow *fl = &k->flow[c];
                uint64_t freq = 0;
                const struct band__node *n;
                band__list_foreach (n, &fl->reqs) {
                    band_fair_acquire_op *r =
                        band__fair_op_of(band__waiter_of((struct band__node *)n));
                    FAIR_CHECK(r->_k == k && r->_cls == c && r->_n > 0 && r->_n <= key_cap(k));
                    FAIR_CHECK(band__waiter_state(&r->w) == BAND__W_QUEUED);
                    freq++;
                    kunits += r->_n;
                    cls_units[c] += r->_n;
                }
                FAIR_CHECK(freq == fl->nreq);
                FAIR_CHECK((freq > 0) == !band__list_empty(&fl->ring));
                FAIR_CHECK(freq > 0 || (fl->deficit == 0 && !fl->parked));
                kreq += freq;
                cls_nreq[c] += freq;
                cls_active[c] += freq > 0;
            }
            FAIR_CHECK(kreq == k->nreq && kunits == k->waiting_units);
            nreq += kreq;
        }
    }
    FAIR_CHECK(held == fair_in_use(f));
    FAIR_CHECK(refs == f->nhandles);
    FAIR_CHECK(nreq == f->q.len);
    FAIR_CHECK(nkeys == f->nkeys && nkeys <= f->max_keys);
    FAIR_CHECK(npinned == f->npinned);
    FAIR_CHECK(reserved == f->reserved_total && reserved <= f->capacity);
    FAIR_CHECK(f->nfree <= FAIR_FREE_CACHE);
    FAIR_CHECK(!f->closed || nreq == 0);
    for (uint32_t c = 0; c < f->nclasses; c++) {
        const struct fair_class *cl = &f->cls[c];
        FAIR_CHECK(cl->nreq == cls_nreq[c] && cl->waiting_units == cls_units[c]);
        FAIR_CHECK(cl->active == cls_active[c]);
        uint64_t listed = 0;
        const struct band__node *n;
        band__list_foreach (n, &cl->ring) {
            listed++;
        }
        band__list_foreach (n, &cl->parked) {
            listed++;
        }
        FAIR_CHECK(listed == cl->active);
        FAIR_CHECK(cl->limit >= 1 && cl->limit <= f->capacity);
        FAIR_CHECK(c > 0 ? cl->limit <= f->cls[c - 1].limit : cl->limit == f->capacity);
    }
    rc = band__fair_check_sched_locked(f);
out:
    pthread_mutex_unlock(&f->lock);
    return rc;
}
#endif /* BAND_TESTING */
