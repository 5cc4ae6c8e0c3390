/* SPDX-License-Identifier: MIT */
/*
 * cancel.c - the cancellation token: a flag, a list of hooks, and a lock a signal handler
 * never waits for.
 *
 * Design notes
 * ------------
 * A request must work from a signal handler, which may have interrupted a thread that is
 * adding or removing a hook of the same token. So the request never blocks on the lock:
 * it sets the flag, raises `pending`, and tries the lock once. If the lock is busy, its
 * holder delivers the request when it unlocks (it checks `pending` after releasing the
 * lock, and tries again). One of the two always sees the other: the requester raises
 * `pending` before trying the lock, the holder releases the lock before reading
 * `pending` (both sequentially consistent).
 *
 * Delivery pops the hooks one at a time and calls each hook's fn under the lock, so that
 * band_cancel_hook_remove(), which takes the lock, returns only once the fn has returned:
 * a blocked thread may then free the stack frame its hook lives in.
 *
 * Threads in normal context take the lock by spinning; critical sections are a few list
 * operations, and a signal handler never holds the lock across an interruption of its
 * own thread's holder (it only tries it).
 *
 * A child token is a hook on its parent whose fn requests the child.
 */
#include "core/cancel.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "core/list.h"

enum hook_state { HOOK_IDLE = 0, HOOK_ADDED = 1, HOOK_FIRED = 2 };

struct band_cancel {
    atomic_int requested;
    atomic_int lock;
    atomic_int pending;      /* a request waits for delivery */
    struct band__node hooks; /* added hooks (lock) */
    uint64_t nhooks;         /* hooks added and not yet removed, fired or not (lock) */
    band_cancel *parent;
    band_cancel_hook parent_hook;  /* this token's hook on its parent */
    atomic_uint_fast64_t children; /* children not yet destroyed, requested or not */
};

static int try_lock(band_cancel *c)
{
    int expected = 0;
    return atomic_compare_exchange_strong(&c->lock, &expected, 1);
}

static void deliver(band_cancel *c);

static void lock(band_cancel *c)
{
    for (unsigned spins = 0; !try_lock(c); spins++) {
        if (spins < 64)
            band__cpu_relax();
        else
            sched_yield(); /* the holder may be preempted */
    }
}

static void unlock(band_cancel *c)
{
    atomic_store(&c->lock, 0);
    if (atomic_load(&c->pending))
        deliver(c);
}

/* Fire every hook; lock held. */
static void fire_locked(band_cancel *c)
{
    struct band__node *n;
    while ((n = band__list_first(&c->hooks)) != NULL) {
        band__list_del_init(n);
        band_cancel_hook *h = band__container_of(n, band_cancel_hook, _node);
        h->fn(h); /* still counted in nhooks: it refers to @c until removed */
        h->_state = HOOK_FIRED;
    }
}

/* Deliver a request: fire the hooks now, or leave them to the lock's holder. */
static void deliver(band_cancel *c)
{
    atomic_store(&c->pending, 1);
    while (atomic_load(&c->pending)) {
        if (!try_lock(c))
            return; /* the holder delivers when it unlocks */
        atomic_store(&c->pending, 0);
        fire_locked(c);
        atomic_store(&c->lock, 0);
    }
}

static void request_child(band_cancel_hook *h)
{
    (void)band_cancel_request((band_cancel *)h->data);
}

int band_cancel_create(band_cancel **out, const band_cancel_opts *opts)
{
    if (out == NULL)
        return BAND_EINVAL;
    band_cancel *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return BAND_ENOMEM;
    band__list_init(&c->hooks);
    if (opts != NULL && opts->parent != NULL) {
        c->parent = opts->parent;
        /* Counted apart from the hook: a child made under a requested parent has none. */
        atomic_fetch_add(&c->parent->children, 1);
        band_cancel_hook_init(&c->parent_hook, request_child, c);
        if (band_cancel_hook_add(c->parent, &c->parent_hook) != 0)
            atomic_store(&c->requested, 1); /* the parent was requested already */
    }
    *out = c;
    return 0;
}

int band_cancel_destroy(band_cancel *c)
{
    if (c == NULL)
        return 0;
    lock(c);
    uint64_t n = c->nhooks;
    unlock(c);
    if (n != 0 || atomic_load(&c->children) != 0)
        return BAND_EBUSY;
    if (c->parent != NULL && c->parent_hook._token != NULL)
        (void)band_cancel_hook_remove(&c->parent_hook);
    if (c->parent != NULL)
        atomic_fetch_sub(&c->parent->children, 1);
    /* A request that started on this token before destroy (the parent firing it, or a
     * concurrent caller) is the caller's misuse; the parent's has finished by now,
     * since the hook removal waited for it. */
    free(c);
    return 0;
}

int band_cancel_request(band_cancel *c)
{
    if (c == NULL)
        return BAND_EINVAL;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&c->requested, &expected, 1))
        return BAND_EALREADY;
    deliver(c);
    return 0;
}

int band_cancel_is_requested(const band_cancel *c)
{
    return c != NULL && atomic_load_explicit(&((band_cancel *)c)->requested, memory_order_acquire);
}

void band_cancel_hook_init(band_cancel_hook *h, band_cancel_fn *fn, void *data)
{
    h->fn = fn;
    h->data = data;
    band__list_init(&h->_node);
    h->_token = NULL;
    h->_state = HOOK_IDLE;
}

int band_cancel_hook_add(band_cancel *c, band_cancel_hook *h)
{
    if (c == NULL || h == NULL || h->fn == NULL || h->_token != NULL)
        return BAND_EINVAL;
    lock(c);
    if (atomic_load(&c->requested)) {
        unlock(c);
        return BAND_ECANCELED;
    }
    h->_token = c;
    h->_state = HOOK_ADDED;
    band__list_add_tail(&c->hooks, &h->_node);
    c->nhooks++;
    unlock(c);
    return 0;
}

int band_cancel_hook_remove(band_cancel_hook *h)
{
    if (h == NULL || h->_token == NULL)
        return BAND_EINVAL;
    band_cancel *c = h->_token;
    lock(c);
    int rc;
    if (h->_state == HOOK_ADDED) {
        band__list_del_init(&h->_node);
        rc = 0;
    } else {
        rc = BAND_EALREADY; /* fired; its fn returned before we got the lock */
    }
    c->nhooks--;
    h->_state = HOOK_IDLE;
    h->_token = NULL;
    unlock(c);
    return rc;
}
