/* SPDX-License-Identifier: MIT */
/**
 * @file band/admit.h
 * @brief One atomic admission over several budgets, and capacity hierarchies.
 *
 * A request names up to BAND_ADMIT_MAX semaphores or budgets and an amount of each (cpu 1,
 * memory 48 MiB, fds 2). It is admitted all at once or not at all. docs/admit.md has the
 * long form; the rules:
 *
 *  - All or nothing. A waiting request holds nothing; when it is granted it takes every
 *    amount in one step, with all of its semaphores locked.
 *  - No deadlock, whatever order the budgets are named in. A request that must wait joins
 *    the queue of every budget it names in one atomic step, so all queues agree with one
 *    global arrival order; the oldest waiter is the head of each of its queues and is
 *    served as soon as every budget has enough.
 *  - FIFO. A request is never overtaken by a later request (or a later plain acquisition)
 *    that needs one of the same budgets. As with the semaphore, a large head holds back
 *    smaller waiters behind it: units released while the head waits for another budget
 *    stay free, set aside for it.
 *  - A request larger than a budget's capacity fails at once with BAND_E2BIG. Closing any
 *    named budget fails the request with BAND_ECLOSED.
 *  - The budgets stay ordinary band_sem / band_budget objects: code may use them directly
 *    beside multi-budget requests, in the same FIFO.
 *  - The grant is a value (band_admit_grant) that returns everything it holds, on every
 *    path with BAND_SCOPED_ADMIT.
 *
 * Capacity hierarchies (band/cap_tree.h): nodes with a cap and an optional guaranteed
 * reservation; band_admit_req_add_tree() makes a request at a leaf charge the leaf and
 * every ancestor in one admission.
 *
 * Every function is MT-safe with respect to the budgets. A request and a grant each have
 * one owner: their own functions are not synchronized against each other on the same
 * object (band_waiter_cancel() on a pending request is, as always).
 */
#ifndef BAND_ADMIT_H
#define BAND_ADMIT_H

#include "band/budget.h"
#include "band/cancel.h"
#include "band/cap_tree.h"
#include "band/core.h"
#include "band/permit.h"
#include "band/sem.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief The most budgets one request can name (a tree leaf counts with its ancestors). */
#define BAND_ADMIT_MAX 8

/** @brief One budget of a request. sem and amount are readable; the rest is private. */
typedef struct band_admit_entry {
    band_sem *sem;   /**< the semaphore (or budget's semaphore) charged */
    uint64_t amount; /**< the units of it the request takes */
    /** @privatesection */
    band_waiter _node; /* private: this request's node in sem's wait queue */
} band_admit_entry;

struct band__smart_ops; /* private */

/**
 * @brief One multi-budget request, owned by the caller.
 *
 * The waiter comes first: pass &req->w to band_waiter_cancel(), and recover the request
 * from it in a wake function. About 890 bytes on LP64; nothing is allocated on any admission
 * path.
 * Initialise with band_admit_req_init(), then add budgets with band_admit_req_add().
 */
typedef struct band_admit_req {
    band_waiter w; /**< the operation: wake, data, status, cancel */
    uint32_t n;    /**< entries in use */
    /** @privatesection */
    /* private */
    uint32_t _flags;
    uint8_t _order[BAND_ADMIT_MAX]; /* entries sorted by semaphore address (lock order) */
    uint8_t _stage[BAND_ADMIT_MAX]; /* queueing stage of each entry (tree level) */
    uint8_t _joined, _nstages;      /* stages whose queues it has joined, of how many */
    uint8_t _inbox;                 /* in the admission's inbox (atomic access only) */
    uint64_t _ticket;               /* its place in the global order of requests */
    band_cap_tree *_tenant[BAND_ADMIT_MAX];
    uint64_t _tenant_amt[BAND_ADMIT_MAX];
    uint32_t _ntenant;
    const struct band__smart_ops *_ops; /* how the budgets talk to its entries' nodes */
    band_admit_entry e[BAND_ADMIT_MAX];
} band_admit_req;

/**
 * @brief What a granted request holds: {semaphore, count} per budget.
 *
 * A plain value with one owner, like band_permit; initialise with BAND_ADMIT_GRANT_INIT.
 * Embed it in the object that owns the admitted work and release it when that ends.
 */
typedef struct band_admit_grant {
    uint32_t n;                    /**< entries in use */
    band_permit p[BAND_ADMIT_MAX]; /**< p[i].count may be 0 after a partial release */
} band_admit_grant;

/** @brief The initialiser of an empty band_admit_grant (nothing held). */
#define BAND_ADMIT_GRANT_INIT                                                                      \
    {                                                                                              \
        0,                                                                                         \
        {                                                                                          \
            {                                                                                      \
                NULL, 0                                                                            \
            }                                                                                      \
        }                                                                                          \
    }

/**
 * @brief Prepare @p r: no budgets, waiter initialised with @p wake and @p data.
 *
 * As band_waiter_init(); @p wake may be NULL when only band_admit_try_acquire() and
 * band_admit_acquire() are used. Must not be called on a pending request. Not MT-safe
 * with other uses of @p r.
 *
 * @param r     The request, owned by the caller; must not be NULL or pending.
 * @param wake  The wake function for band_admit_acquire_async(), or NULL when the request
 *              is only used with band_admit_try_acquire() and band_admit_acquire().
 * @param data  Stored in the request's waiter for @p wake; not dereferenced by band.
 */
BAND_API void band_admit_req_init(band_admit_req *r, band_wake_fn *wake, void *data);

/**
 * @brief Add @p amount units of @p s to @p r.
 *
 * Naming a semaphore that @p r already names merges the amounts (so each budget is charged
 * once). @p s may be a budget's semaphore (band_budget_sem()). Returns 0, BAND_EINVAL (NULL
 * @p r or @p s, @p r pending, @p amount above BAND_MAX_UNITS, or BAND_ADMIT_MAX budgets
 * already named), or BAND_EOVERFLOW when a merged amount would exceed BAND_MAX_UNITS
 * (nothing changes on failure). Capacity is checked at admission (BAND_E2BIG). Not
 * MT-safe with other uses of @p r.
 *
 * @param r       The request; must not be NULL or pending.
 * @param s       The semaphore or budget's semaphore to charge; must not be NULL and must
 *                outlive the request's use.
 * @param amount  Units of @p s, 0 to BAND_MAX_UNITS (merged with any amount already named).
 * @return 0, BAND_EINVAL or BAND_EOVERFLOW as described above.
 */
BAND_API int band_admit_req_add(band_admit_req *r, band_sem *s, uint64_t amount);

/**
 * @brief Admit @p r now or refuse without waiting.
 *
 * Returns 0 (*@p g, which must be empty, holds every amount), BAND_EAGAIN (some budget has
 * not enough available, or has a waiter queued: try never overtakes), BAND_ECLOSED,
 * BAND_E2BIG (an amount exceeds a budget's capacity; checked before anything else), or
 * BAND_EINVAL (NULL argument, no budgets, @p g not empty, @p r pending). Lock-free: it reads
 * every budget's state first and takes nothing unless all can give their amount now, then
 * takes each with one CAS. Only when another thread changes a budget in that short window
 * does it give back what it took of the earlier ones; a concurrent try on one of those
 * may then be refused, or an acquisition queue and be granted by the give-back, exactly
 * as if this thread had acquired and released it. MT-safe.
 *
 * @param r       The request, with at least one budget; must not be NULL or pending.
 * @param[out] g  An empty grant (as BAND_ADMIT_GRANT_INIT); receives every amount on 0,
 *                unchanged otherwise.
 * @return 0, BAND_EAGAIN, BAND_ECLOSED, BAND_E2BIG or BAND_EINVAL as described above.
 */
BAND_API int band_admit_try_acquire(band_admit_req *r, band_admit_grant *g);

/**
 * @brief Admit @p r, blocking this thread until @p deadline.
 *
 * Returns 0 (*@p g holds every amount), BAND_ETIMEDOUT (a past @p deadline means "do not
 * wait"; a grant that races with the deadline wins), or the other codes of
 * band_admit_try_acquire() and band_admit_acquire_async() except BAND_EAGAIN and
 * BAND_PENDING. Before it queues it retries the lock-free take while the budgets are only
 * held, with band_sem_acquire()'s adaptive spin (as long as the longest spin budget of the
 * named semaphores, 1 microsecond to 1 millisecond of spinning, yielding after 2
 * microseconds; band/sem.h); it takes nothing while a waiter is queued on one of them,
 * so it never overtakes one. A past deadline or a
 * requested @p cancel does not retry, and one that passes or is requested while it spins
 * stops the spin at its next clock check. While it
 * blocks it holds nothing. @p r's wake and data are used internally for the duration of the
 * call and are restored before it returns. MT-safe.
 *
 * @p cancel (NULL for none): when it is requested the call stops waiting and returns
 * BAND_ECANCELED, holding nothing; a token requested before the call means "do not
 * wait", as a past deadline does (band/cancel.h).
 *
 * @param r         The request, with at least one budget; must not be NULL or pending.
 * @param[out] g    An empty grant; receives every amount on 0, unchanged otherwise.
 * @param deadline  Absolute time on band's clock (band_now()) to stop waiting at; a past
 *                  one means "do not wait".
 * @param cancel    Cancellation token, or NULL for none.
 * @return 0, BAND_ETIMEDOUT, BAND_ECANCELED, BAND_ECLOSED, BAND_E2BIG, BAND_EOVERFLOW or
 *         BAND_EINVAL as described above.
 */
BAND_API int band_admit_acquire(band_admit_req *r, band_admit_grant *g, band_time deadline,
                                band_cancel *cancel);

/**
 * @brief Admit @p r now, or queue it in every budget it names at once.
 *
 * The request is its own op: it names several budgets, so it is built first with
 * band_admit_req_init() and band_admit_req_add(), and its waiter is @p r->w.
 *
 * Returns 0 when admitted at once (no wake follows; take the grant with
 * band_admit_req_grant()), BAND_PENDING when queued, or a negative code that also ends it:
 * BAND_ECLOSED, BAND_E2BIG, BAND_EOVERFLOW (a queue's unit total would pass 2^64 - 1),
 * BAND_EINVAL (NULL @p r, no budgets or no wake function, @p r already pending; @p r
 * untouched).
 * Once queued exactly one of {wake called once, band_waiter_cancel(&r->w) returns 0} ends
 * it. The wake runs on the thread that completed the request (a release, close, cancel or
 * capacity change on one of its budgets, or another admission), with no band lock held;
 * band_waiter_status(&r->w) is 0 when granted (then call band_admit_req_grant()),
 * BAND_ECLOSED when a named budget closed, BAND_E2BIG when a shrink made an amount too
 * big. A cancel that returns 0 leaves nothing held. MT-safe.
 *
 * @param r  The request, with at least one budget and a wake function; must not be NULL
 *           or pending. It stays the caller's and must stay valid until it ends.
 * @return 0, BAND_PENDING, BAND_ECLOSED, BAND_E2BIG, BAND_EOVERFLOW or BAND_EINVAL as
 *         described above.
 */
BAND_API int band_admit_acquire_async(band_admit_req *r);

/**
 * @brief Move the units of a granted @p r (band_admit_acquire_async() returned 0, or its
 *        wake reported status 0) into the empty grant @p g.
 *
 * Returns 0, or BAND_EINVAL (NULL argument, @p g not empty, @p r pending or not granted).
 * Call it once per grant: a second call would duplicate the units. Not MT-safe with other
 * uses of @p r or @p g.
 *
 * @param r       The granted request; must not be NULL.
 * @param[out] g  An empty grant; receives every amount on 0, unchanged otherwise.
 * @return 0, or BAND_EINVAL as described above.
 */
BAND_API int band_admit_req_grant(band_admit_req *r, band_admit_grant *g);

/**
 * @brief Return everything @p g holds and empty it.
 *
 * Idempotent (an empty grant returns 0). An emptied grant is as BAND_ADMIT_GRANT_INIT left
 * it: the next admission may take it as is. Wakes of waiters this completes run on the
 * calling thread. Returns 0, BAND_EINVAL for a NULL @p g, or the first error of
 * band_sem_release() (BAND_EOVERFLOW: the units of that budget stay in @p g, the others are
 * returned). MT-safe for the budgets; not MT-safe with other uses of @p g.
 *
 * @param g  The grant; must not be NULL.
 * @return 0, BAND_EINVAL or BAND_EOVERFLOW as described above.
 */
BAND_API int band_admit_release(band_admit_grant *g);

/**
 * @brief Give back @p n units of @p s early, keeping the rest.
 *
 * Returns 0, or BAND_EINVAL when @p g is NULL, does not hold @p s or holds fewer than @p n
 * of it; or the error of band_sem_release() (BAND_EOVERFLOW: nothing is returned). The
 * budget stays named in @p g (with count 0 when all is returned) so band_admit_adjust()
 * can take it again. MT-safe for the budget; not MT-safe with other uses of @p g.
 *
 * @param g  The grant; must not be NULL.
 * @param s  The semaphore to give units of, one that @p g names.
 * @param n  Units to return, 0 (a no-op) to what @p g holds of @p s.
 * @return 0, BAND_EINVAL or BAND_EOVERFLOW as described above.
 */
BAND_API int band_admit_release_part(band_admit_grant *g, band_sem *s, uint64_t n);

/**
 * @brief Set what @p g holds of @p s to @p amount, before the work uses it.
 *
 * For units the work has already consumed use band_admit_reconcile(), which never waits.
 * A surplus is returned at once (0). A shortfall is taken without losing the request's
 * place: it ranks ahead of every waiter queued on @p s (all of them arrived after this
 * request was admitted, since FIFO granted it before them): it takes free units set aside
 * for the head, or waits at the very front of @p s's queue until @p deadline. Returns 0,
 * BAND_ETIMEDOUT (nothing changed; a past @p deadline means "only if free now"), BAND_E2BIG
 * (@p amount above a budget's capacity), BAND_ECLOSED, BAND_EOVERFLOW (the queue's unit
 * total would pass 2^64 - 1, or returning a surplus fails as band_sem_release() does), or
 * BAND_EINVAL (@p g or @p s NULL, @p g does not name @p s, or @p amount above
 * BAND_MAX_UNITS).
 * Waiting for a shortfall while holding the rest of the grant is incremental acquisition:
 * two grants that each wait for what the other holds wait until their deadlines. Prefer a
 * generous estimate and return the surplus, or a short deadline. MT-safe for the budget.
 *
 * @p cancel (NULL for none): when it is requested the call stops waiting and returns
 * BAND_ECANCELED (the grant is unchanged); a token requested before the call means "do not
 * wait", as a past deadline does (band/cancel.h).
 *
 * @param g         The grant; must not be NULL. Not MT-safe with other uses of it.
 * @param s         A semaphore that @p g names (possibly with count 0).
 * @param amount    The units of @p s to hold from now on, 0 to BAND_MAX_UNITS.
 * @param deadline  Absolute time on band's clock to stop waiting for a shortfall at.
 * @param cancel    Cancellation token, or NULL for none.
 * @return 0, BAND_ETIMEDOUT, BAND_ECANCELED, BAND_E2BIG, BAND_ECLOSED, BAND_EOVERFLOW or
 *         BAND_EINVAL as described above.
 */
BAND_API int band_admit_adjust(band_admit_grant *g, band_sem *s, uint64_t amount,
                               band_time deadline, band_cancel *cancel);

/**
 * @brief Set what @p g holds of @p s to @p used, the units the admitted work has actually
 *        consumed (estimate, then reconcile).
 *
 * A surplus (@p used below what @p g holds) is returned at once, as band_admit_release_part()
 * returns it (@p s stays named in @p g, with count 0 when @p used is 0). A shortfall (@p used
 * above) is charged at once and never waits, since the resource is already consumed:
 * the missing units are taken from @p s's available units first, and the rest becomes debt
 * that later releases repay before any waiter, exactly as band_sem_reduce()'s deficit (a
 * queued head's set-aside or partial grant is never taken; waiters queued on @p s then wait
 * for the debt to be repaid). A budget's capacity does not change, and a shortfall is not
 * refused for size or for a closed budget: `in_use` may exceed the capacity until @p g is
 * released, and the debt shows the excess. Either way @p g then holds @p used of @p s, and
 * releasing it returns all of them (settling the debt first).
 *
 * Returns 0; BAND_EINVAL when @p g or @p s is NULL, @p g does not name @p s, or @p used
 * exceeds BAND_MAX_UNITS; BAND_EOVERFLOW when the debt would pass BAND_MAX_UNITS, or
 * when returning the surplus fails as band_sem_release() does with it. Nothing changes on
 * failure. MT-safe for the budget; not MT-safe with other uses of @p g.
 *
 * @param g     The grant; must not be NULL.
 * @param s     A semaphore that @p g names (possibly with count 0).
 * @param used  The units of @p s the work consumed, 0 to BAND_MAX_UNITS.
 * @return 0, BAND_EINVAL or BAND_EOVERFLOW as described above.
 */
BAND_API int band_admit_reconcile(band_admit_grant *g, band_sem *s, uint64_t used);

/**
 * @brief How many units of @p s @p g holds.
 *
 * Not MT-safe with changes to @p g.
 *
 * @param g  The grant, or NULL (gives 0).
 * @param s  The semaphore to look up.
 * @return The units held, 0 when @p g names no such budget.
 */
BAND_API uint64_t band_admit_held(const band_admit_grant *g, const band_sem *s);

/**
 * @brief Cleanup handler behind BAND_SCOPED_ADMIT: releases @p g.
 *
 * Units that cannot be returned (BAND_EOVERFLOW, only after foreign releases) are
 * forgotten.
 *
 * @param g  The grant going out of scope; NULL is allowed (a no-op).
 */
BAND_API void band_admit_release_scoped(band_admit_grant *g);

/*
 * Inline fast paths
 * -----------------
 * With GCC or Clang (and the semaphore's inline fast paths, band/sem.h),
 * band_admit_try_acquire() and band_admit_release() are macros over the static inline
 * functions below for the common single budget: the admission is the semaphore's one
 * compare-and-swap on its state word and the release its one atomic add, with no call.
 * Anything else - several budgets, a NULL or non-empty argument, a pending request, a
 * zero amount, waiters queued, a debt, close, a failed compare-and-swap, a budget's
 * release - goes to the exported functions of the same names, so outcomes are identical;
 * taking the address of either name yields the exported function. BAND_NO_INLINE turns
 * them off, as for the semaphore.
 *
 * Besides the semaphore's prefix (BAND_SEM_INLINE_ABI), the inline code reads a request's
 * n, e[0].sem and e[0].amount, and the state of its waiter: the low two bits of
 * w._qstate, BAND_ADMIT_W_QUEUED while the request is queued. That encoding is frozen
 * with the semaphore's inline ABI (the library checks it at compile time).
 */
#define BAND_ADMIT_W_STATE_MASK ((uintptr_t)3) /**< inline ABI: w._qstate's state bits */
#define BAND_ADMIT_W_QUEUED     ((uintptr_t)1) /**< inline ABI: the state of a queued request */

#if defined(BAND_SEM_HAVE_INLINE)
#define BAND_ADMIT_HAVE_INLINE 1

static inline int band__admit_try_acquire_inline(band_admit_req *r, band_admit_grant *g)
{
    if (__builtin_expect(r != NULL && g != NULL && r->n == 1 && g->n == 0, 1)) {
        band_sem *s = r->e[0].sem;
        uint64_t n = r->e[0].amount;
        uint64_t *word = &((struct band_sem_prefix *)(void *)s)->state;
        if (__builtin_expect(n - 1 < BAND_MAX_UNITS &&
                                 (__atomic_load_n(&r->w._qstate, __ATOMIC_ACQUIRE) &
                                  BAND_ADMIT_W_STATE_MASK) != BAND_ADMIT_W_QUEUED,
                             1)) {
            uint64_t st = __atomic_load_n(word, __ATOMIC_RELAXED);
            if (__builtin_expect(
                    (st & (BAND_SEM_PREFIX_SLOW | BAND_SEM_PREFIX_CLOSED)) == 0 &&
                        (st >> BAND_SEM_PREFIX_SHIFT) >= n &&
                        __atomic_compare_exchange_n(word, &st, st - (n << BAND_SEM_PREFIX_SHIFT), 1,
                                                    __ATOMIC_ACQUIRE, __ATOMIC_RELAXED),
                    1)) {
                g->p[0].sem = s;
                g->p[0].count = n;
                g->n = 1;
                return 0;
            }
        }
    }
    return (band_admit_try_acquire)(r, g);
}

static inline int band__admit_release_inline(band_admit_grant *g)
{
    if (__builtin_expect(g != NULL && g->n == 1 && g->p[0].count > 0, 1)) {
        int rc = band__sem_release_inline(g->p[0].sem, g->p[0].count);
        if (__builtin_expect(rc == 0, 1)) {
            g->p[0].count = 0;
            g->p[0].sem = NULL;
            g->n = 0;
        }
        return rc;
    }
    return (band_admit_release)(g);
}

#define band_admit_try_acquire(r, g) band__admit_try_acquire_inline((r), (g))
#define band_admit_release(g)        band__admit_release_inline((g))
#endif

#if defined(__GNUC__) || defined(__clang__)
/**
 * @brief Declare a band_admit_grant released on every path out of its block:
 *
 *     BAND_SCOPED_ADMIT band_admit_grant g = BAND_ADMIT_GRANT_INIT;
 *     if (band_admit_acquire(&req, &g, deadline, NULL) != 0)
 *         return -1;
 */
#define BAND_SCOPED_ADMIT __attribute__((cleanup(band_admit_release_scoped)))
#endif

/**
 * @brief Add @p amount units of @p leaf and of every ancestor to @p r.
 *
 * One admission then charges the whole path, with the staged queueing and guaranteed
 * reservations that band/cap_tree.h describes. Returns 0, or the codes of
 * band_admit_req_add() (BAND_EINVAL also for a NULL @p leaf, or when the path does not fit
 * in BAND_ADMIT_MAX budgets; BAND_EOVERFLOW when a merged amount would exceed
 * BAND_MAX_UNITS; nothing changes on failure). Not MT-safe with other uses of @p r.
 *
 * @param r       The request; must not be NULL or pending.
 * @param leaf    The node the work runs under; must not be NULL. It and its ancestors
 *                must outlive the request's use.
 * @param amount  Units charged at the leaf and at every ancestor, 0 to BAND_MAX_UNITS.
 * @return 0, BAND_EINVAL or BAND_EOVERFLOW as described above.
 */
BAND_API int band_admit_req_add_tree(band_admit_req *r, band_cap_tree *leaf, uint64_t amount);

#ifdef __cplusplus
}
#endif
#endif /* BAND_ADMIT_H */
