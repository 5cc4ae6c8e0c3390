/* SPDX-License-Identifier: MIT */
/**
 * @file band/sem.h
 * @brief The weighted FIFO semaphore.
 *
 * A band_sem is a budget of permits that work acquires before it consumes a resource and
 * releases when the resource is free again. Semantics (docs/semaphore.md has the long form):
 *
 *  - Strict FIFO hand-off. Waiters are served in arrival order. A release goes to the head
 *    waiter first; partial grants accumulate on it until it has all it asked for, so a large
 *    head holds back smaller waiters behind it. try_acquire never barges past a waiter.
 *  - Deficit, not revocation. band_sem_reduce(n) removes exactly n from the logical
 *    balance: available permits first, the rest as a debt that later releases repay before
 *    any queued waiter. band_sem_drain() takes only what is available now.
 *  - Close. After band_sem_close() every pending and future acquisition fails with
 *    BAND_ECLOSED; permits held at that moment can still be released.
 *  - Fast paths. Uncontended try_acquire is one compare-and-swap and release one atomic
 *    add on one word (a budget's release is a compare-and-swap, to check its capacity
 *    exactly); neither takes a lock or makes a system call. The value the add returns is
 *    the one load that tells release whether anybody waits. With GCC or Clang both fast
 *    paths are inlined into the caller ("Inline fast paths" at the end of this header).
 *  - Counters are readable at any time with band_sem_get_stats().
 *
 * Permits held as values (band_permit, the form to embed in the object a resource belongs
 * to) are in band/permit.h, which includes this header.
 *
 * Every band_sem_* function is MT-safe. Releases, closes and cancels may run wake
 * functions of completed waiters on the calling thread, after every band lock is released.
 */
#ifndef BAND_SEM_H
#define BAND_SEM_H

#include "band/cancel.h"
#include "band/core.h"
#include "band/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief A weighted FIFO semaphore (opaque): band_sem_create(), band_sem_destroy(). */
typedef struct band_sem band_sem;

struct band_histo;

/**
 * @brief Options for band_sem_create(). NULL, or a zero-initialised
 * struct, means the defaults; the options are fixed for the semaphore's lifetime.
 */
typedef struct band_sem_opts {
    /**
     * 1: an acquisition that would have to queue is refused at once with BAND_ETIMEDOUT
     * (holding nothing, no wake; counted in refused_deadline) when the measured pace of
     * grants to queued waiters (grant_pace_ns in the counters) predicts it would miss its
     * deadline: the blocking call's @p deadline, or @p w->deadline for band_sem_acquire_async(),
     * read once at submission. Until a pace has been measured nobody is refused, and a
     * deadline of BAND_FOREVER never is. Multi-budget admissions are not predicted.
     * 0 (the default): waiters queue whatever their deadline and @p w->deadline is never
     * read. Any other value is refused with BAND_EINVAL.
     */
    int deadline_aware;
    /**
     * When not NULL, how long each queued acquisition waited (ns, from queueing to its
     * grant, timeout, cancel or close) is recorded into it (band/histo.h; a metrics
     * registry renders it, band_metrics_add_sem()). Acquisitions that never queue record
     * nothing. It stays the caller's and must outlive the semaphore. Default: NULL, none.
     */
    struct band_histo *wait_histo;
} band_sem_opts;

/**
 * @brief Allocate a semaphore with @p permits available permits.
 *
 * @p opts may be NULL (the defaults, as a zero-initialised band_sem_opts). Returns 0 and
 * stores the semaphore in *@p out, BAND_EINVAL when @p out is NULL, @p permits exceeds
 * BAND_MAX_UNITS or @p opts->deadline_aware is neither 0 nor 1, or BAND_ENOMEM. On failure
 * *@p out is left unchanged and nothing is allocated. The caller owns the semaphore and frees
 * it with band_sem_destroy(). MT-safe.
 *
 * @param[out] out  Receives the new semaphore.
 * @param permits   Permits available at first, 0 to BAND_MAX_UNITS.
 * @param opts      Options, or NULL for the defaults.
 * @return 0, BAND_EINVAL or BAND_ENOMEM, as described above.
 */
BAND_API int band_sem_create(band_sem **out, uint64_t permits, const band_sem_opts *opts);

/**
 * @brief Free @p s.
 *
 * Never waits and never closes: close it, let the waiters go, then destroy it. Returns 0
 * (also for NULL), BAND_EBUSY (nothing is freed) while acquisitions are queued on @p s
 * (multi-budget admissions included, band/admit.h), or BAND_EINVAL for the semaphore of a
 * budget or of a capacity tree node (destroy the budget or the node instead). Permits still
 * held are their holders' to return first: nobody may use @p s after this call. Not MT-safe
 * with other uses of @p s.
 *
 * @param s  The semaphore, or NULL.
 * @return 0 (also for NULL), BAND_EBUSY or BAND_EINVAL, as described above.
 */
BAND_API int band_sem_destroy(band_sem *s);

/**
 * @brief Give @p s a name that band_sem_get_stats() reports.
 *
 * The name is copied. NULL clears it. Returns 0, or BAND_EINVAL when @p s is NULL or the
 * name does not fit in BAND_NAME_MAX bytes including its NUL (nothing changes). MT-safe.
 *
 * @param s     The semaphore.
 * @param name  The name to copy, or NULL to clear it.
 * @return 0 or BAND_EINVAL, as described above.
 */
BAND_API int band_sem_set_name(band_sem *s, const char *name);

/**
 * @brief Take @p n permits now, or refuse without waiting.
 *
 * Returns 0 (the caller holds @p n more permits; n == 0 always succeeds on an open
 * semaphore), BAND_EAGAIN when fewer than @p n are available or another acquisition is
 * queued (try never barges past a waiter), BAND_ECLOSED after close, BAND_E2BIG when @p s
 * is a budget and @p n exceeds its capacity, or BAND_EINVAL (NULL @p s, @p n above
 * BAND_MAX_UNITS). Never waits; lock-free on its fast path. MT-safe.
 *
 * @param s  The semaphore.
 * @param n  Permits to take, 0 to BAND_MAX_UNITS.
 * @return 0, BAND_EAGAIN, BAND_ECLOSED, BAND_E2BIG or BAND_EINVAL, as described above.
 */
BAND_API int band_sem_try_acquire(band_sem *s, uint64_t n);

/**
 * @brief Take @p n permits, blocking this thread until @p deadline.
 *
 * Joins the FIFO queue when the permits are not available at once. Returns 0 (granted;
 * a grant that races with the deadline wins and is returned as 0), BAND_ETIMEDOUT when
 * @p deadline passed first (whatever had been partially granted went back to the next
 * waiters; a deadline already in the past means "do not wait", and such a call never
 * queues, so it counts in no counter), BAND_ECLOSED, BAND_E2BIG, BAND_EINVAL as for
 * band_sem_try_acquire(), or BAND_EOVERFLOW as for band_sem_acquire_async(). Before it
 * queues it retries the lock-free path while nobody is queued (never past a waiter), for
 * 1 to 50 microseconds: the semaphore adapts the spin to how long its queued
 * acquisitions recently waited, and the spin yields the processor after 2 microseconds.
 * A queued thread spins up to 4 microseconds (yielding after 1) before it sleeps, so a
 * hand-off to it needs no system call. MT-safe.
 *
 * @p cancel (NULL for none): when it is requested the call stops waiting and returns
 * BAND_ECANCELED, holding nothing; a token requested before the call means "do not
 * wait", as a past deadline does (band/cancel.h).
 *
 * @param s         The semaphore.
 * @param n         Permits to take, 0 to BAND_MAX_UNITS.
 * @param deadline  Absolute deadline (band_now() clock); BAND_FOREVER never expires, a past
 *                  one means "do not wait".
 * @param cancel    Cancellation token, or NULL for none.
 * @return 0, BAND_ETIMEDOUT, BAND_ECLOSED, BAND_E2BIG, BAND_EINVAL, BAND_EOVERFLOW or
 *         BAND_ECANCELED, as described above.
 */
BAND_API int band_sem_acquire(band_sem *s, uint64_t n, band_time deadline, band_cancel *cancel);

/**
 * @brief Take @p n permits now, or queue @p w for them.
 *
 * Returns 0 when granted at once (no wake follows), BAND_PENDING when queued (from then on
 * exactly one of {wake called once, band_waiter_cancel() returns 0} ends the operation);
 * any other answer also ends it at once, and except for BAND_EINVAL (which leaves @p w
 * untouched) band_waiter_status(@p w) then reports it. Other answers:
 * BAND_ECLOSED, BAND_E2BIG, BAND_EINVAL (NULL @p s or @p w, @p w already pending or with no
 * wake function, @p n above BAND_MAX_UNITS), BAND_EOVERFLOW when the units asked
 * for by all queued waiters would exceed 2^64 - 1, or BAND_ETIMEDOUT only in deadline-aware
 * mode (band_sem_opts.deadline_aware), when the wait is predicted to miss @p w->deadline.
 * Never calls wake itself. When the wake reports status 0 the owner holds @p n permits. @p w
 * must stay valid and untouched while pending. The semaphore never cancels @p w at its
 * deadline: front ends that arm a timer do that with band_waiter_cancel(). MT-safe.
 *
 * @param s  The semaphore.
 * @param n  Permits to take, 0 to BAND_MAX_UNITS.
 * @param w  The waiter, initialised with band_waiter_init() and not pending.
 * @return 0, BAND_PENDING, BAND_ECLOSED, BAND_E2BIG, BAND_EINVAL, BAND_EOVERFLOW or
 *         BAND_ETIMEDOUT, as described above.
 */
BAND_API int band_sem_acquire_async(band_sem *s, uint64_t n, band_waiter *w);

/**
 * @brief Return @p n permits.
 *
 * The permits repay the debt first, then go to queued waiters in order, then become
 * available. Wakes of waiters completed by this release run on the calling thread before
 * it returns. Returns 0, BAND_EOVERFLOW - nothing changes then - when the permits left
 * available afterwards would exceed BAND_MAX_UNITS or, for a budget, when @p n is
 * more than callers hold (available + the head's partial grant + @p n would exceed the
 * capacity + the debt), or BAND_EINVAL for a NULL @p s. Works after close. MT-safe;
 * lock-free when nobody waits.
 * One corner near the maximum: a plain semaphore's release adds first and checks after,
 * so an acquisition that races with an overflowing release can take the excess before the
 * release undoes it; those permits are then charged as debt, leaving the balance as it was.
 * A budget's release that overlaps a capacity change is checked again under the lock, so
 * it meets the capacity before or after the change, never a mix; a release of units
 * callers hold is always accepted. The one gap: when a change lands between the release's
 * loads and its compare-and-swap and an acquisition takes the released units before the
 * recheck, a release of units never acquired can pass.
 *
 * @param s  The semaphore.
 * @param n  Permits to return.
 * @return 0, BAND_EOVERFLOW or BAND_EINVAL, as described above.
 */
BAND_API int band_sem_release(band_sem *s, uint64_t n);

/**
 * @brief Remove exactly @p n permits from the logical balance.
 *
 * Takes available permits first and records the rest as a debt that later releases repay
 * before any queued waiter. Held permits are never revoked. On a budget's semaphore this
 * is band_budget_shrink(): the capacity drops by @p n too. Returns 0, BAND_EOVERFLOW when
 * @p n or the debt would exceed BAND_MAX_UNITS (nothing changes), or BAND_EINVAL (NULL
 * @p s; for a budget, @p n not below its capacity).
 * Serialize reductions in one controller so that each adjustment is applied once. MT-safe.
 *
 * @param s  The semaphore.
 * @param n  Permits to remove from the balance.
 * @return 0, BAND_EOVERFLOW or BAND_EINVAL, as described above.
 */
BAND_API int band_sem_reduce(band_sem *s, uint64_t n);

/**
 * @brief Take up to @p up_to of the permits available now.
 *
 * Returns how many were taken (0 when none were available, or for a NULL @p s); creates no
 * debt. Works after close (it retires capacity; it is not an acquisition). The caller
 * holds what it took and may release it later. MT-safe.
 *
 * @param s      The semaphore, or NULL.
 * @param up_to  The most permits to take.
 * @return The number of permits taken, 0 to @p up_to.
 */
BAND_API uint64_t band_sem_drain(band_sem *s, uint64_t up_to);

/**
 * @brief Permits available now (0 for NULL). A snapshot. MT-safe.
 *
 * @param s  The semaphore, or NULL.
 * @return The permits available now.
 */
BAND_API uint64_t band_sem_available(const band_sem *s);

/**
 * @brief Fail every pending and future acquisition with BAND_ECLOSED.
 *
 * Queued waiters are woken on this thread with status BAND_ECLOSED; what the head had been
 * partially granted returns to the semaphore. Held permits can still be released. Closing
 * twice is harmless. Returns 0, or BAND_EINVAL for NULL. MT-safe.
 *
 * @param s  The semaphore.
 * @return 0, or BAND_EINVAL for NULL.
 */
BAND_API int band_sem_close(band_sem *s);

/**
 * @brief 1 after band_sem_close(), 0 before (and for NULL). MT-safe.
 *
 * @param s  The semaphore, or NULL.
 * @return 1 after close, 0 before and for NULL.
 */
BAND_API int band_sem_is_closed(const band_sem *s);

/**
 * @brief A snapshot of a semaphore's counters.
 *
 * Gauges describe the moment of the snapshot; counters count since creation. Acquisitions
 * granted on the fast path are not counted one by one (that would cost the fast path a
 * second atomic operation): "grants" counts acquisitions that had to queue.
 */
typedef struct band_sem_stats {
    char name[BAND_NAME_MAX];  /**< "" when unnamed */
    int closed;                /**< 1 after close */
    int is_budget;             /**< 1 for a band_budget */
    uint64_t capacity;         /**< budgets: the current capacity; semaphores: the permits
                                  given at creation, less those band_sem_reduce() and
                                  band_permit_forget() removed, plus releases of permits
                                  that were never acquired once a snapshot sees more
                                  permits free than that (a release handed straight to a
                                  waiter is not seen: a semaphore grown that way reports
                                  too little) */
    uint64_t in_use;           /**< units held by callers: capacity + debt - free */
    uint64_t available;        /**< permits available now */
    uint64_t debt;             /**< permits that releases must repay before waiters */
    uint64_t waiters;          /**< queued acquisitions */
    uint64_t waiting_units;    /**< units the queued acquisitions asked for, in total */
    uint64_t head_granted;     /**< units already handed to the head waiter (partial grant) */
    uint64_t queued;           /**< acquisitions that had to queue, since creation */
    uint64_t grants;           /**< queued acquisitions that were granted */
    uint64_t timeouts;         /**< queued acquisitions that ended with BAND_ETIMEDOUT */
    uint64_t cancels;          /**< queued acquisitions cancelled for any other reason */
    uint64_t closed_fails;     /**< queued acquisitions failed by close */
    uint64_t try_refusals;     /**< try_acquire calls that answered BAND_EAGAIN */
    uint64_t too_big;          /**< requests refused with BAND_E2BIG */
    uint64_t wait_ns_total;    /**< time queued acquisitions spent waiting, summed */
    uint64_t wait_ns_max;      /**< the longest any queued acquisition waited */
    uint64_t refused_deadline; /**< deadline-aware: refused at once, predicted to miss */
    uint64_t grant_pace_ns;    /**< the measured time per unit granted to queued waiters
                                  (moving average; 0: not measured yet) */
} band_sem_stats;

/**
 * @brief Copy @p s's counters into *@p out.
 *
 * Takes the semaphore's lock briefly; the fast paths never wait for it. Returns 0 or
 * BAND_EINVAL (NULL argument). MT-safe.
 *
 * @param s         The semaphore.
 * @param[out] out  Receives the snapshot.
 * @return 0 or BAND_EINVAL, as described above.
 */
BAND_API int band_sem_get_stats(const band_sem *s, band_sem_stats *out);

/**
 * @brief Complete a release whose atomic add was done inline.
 *
 * Called only by the inline band_sem_release() below, never directly: after it added
 * @p n << BAND_SEM_PREFIX_SHIFT to the state word and the value @p old it found there had
 * BAND_SEM_PREFIX_SLOW set (somebody waits or a debt is owed) or left more than
 * BAND_MAX_UNITS available. It hands the permits to the waiters, or takes them back when
 * they overflow. Returns 0, BAND_EOVERFLOW (the permits were taken back; the balance is as
 * before the release) or BAND_EINVAL - nothing done - for a NULL @p s, @p n outside
 * 1..BAND_SEM_PREFIX_ADD_MAX, or a semaphore whose releases may not add first
 * (BAND_SEM_PREFIX_F_OUTOFLINE set: a budget's). MT-safe.
 *
 * @param s    The semaphore.
 * @param n    The permits the inline release added, 1 to BAND_SEM_PREFIX_ADD_MAX.
 * @param old  The state word the inline atomic add returned.
 * @return 0, BAND_EOVERFLOW or BAND_EINVAL, as described above.
 */
BAND_API int band_sem_release_finish(band_sem *s, uint64_t n, uint64_t old);

/**
 * @brief The version of the inline fast paths' ABI, described here.
 *
 * Inline fast paths: with GCC or Clang, band_sem_try_acquire() and band_sem_release() are macros
 * over the static inline functions below, so that an uncontended acquire and release cost the
 * caller one compare-and-swap and one atomic add, with no call. Anything but the plain
 * uncontended case - a NULL semaphore, n == 0 or above the limits, waiters queued, a debt,
 * close, a failed compare-and-swap, a budget's release - goes to the exported functions
 * of the same names, which give every answer and count every refusal as documented above;
 * so the inline path and the exported functions have identical outcomes, and taking the
 * address of band_sem_try_acquire or band_sem_release yields the exported function.
 * Define BAND_NO_INLINE before including this header to call the exported functions
 * always (the library itself is built so).
 *
 * The ABI promise. The inline code reads the first 68 bytes of every band_sem (a budget's
 * and a capacity tree node's included) as struct band_sem_prefix: the state word at
 * offset 0 (available permits << BAND_SEM_PREFIX_SHIFT | SLOW | CLOSED, accessed only
 * with atomic operations) and a constant flags word at offset 64. That layout, the
 * encoding, BAND_SEM_PREFIX_ADD_MAX and band_sem_release_finish() are frozen for inline
 * ABI BAND_SEM_INLINE_ABI, which holds for every library release with the same symbol
 * version node as the headers a program was built with (BAND_0.MINOR before 1.0, so
 * all 0.2.x releases; BAND_MAJOR from 1.0 on). A release that changes any of them
 * changes BAND_SEM_INLINE_ABI and the node, so a program built against older headers
 * fails to load instead of misreading the word. The rest of struct band_sem is private.
 */
#define BAND_SEM_INLINE_ABI 1

/* The state word: available permits above BAND_SEM_PREFIX_SHIFT, two flags below. */
/** @brief State word flag: waiters queued or a debt owed: take the lock. */
#define BAND_SEM_PREFIX_SLOW UINT64_C(1)
/** @brief State word flag: closed: acquisitions fail. */
#define BAND_SEM_PREFIX_CLOSED UINT64_C(2)
/** @brief The state word holds the available permits above this many flag bits. */
#define BAND_SEM_PREFIX_SHIFT 2
/** @brief Flags word: releases must not add first (a budget: they check the capacity). */
#define BAND_SEM_PREFIX_F_OUTOFLINE 1u
/**
 * @brief The largest release that may add first and check after (headroom above
 * BAND_MAX_UNITS for releases in flight).
 */
#define BAND_SEM_PREFIX_ADD_MAX (UINT64_C(1) << 32)

/** @brief The frozen start of every band_sem (see the ABI promise). */
struct band_sem_prefix {
    uint64_t state;         /**< offset 0, on its own 64-byte line; atomic access only */
    unsigned char _pad[56]; /* private */
    uint32_t flags;         /**< offset 64; BAND_SEM_PREFIX_F_*; constant after create */
};

#if !defined(BAND_NO_INLINE) && !defined(BAND_BUILDING) && (defined(__GNUC__) || defined(__clang__))
#define BAND_SEM_HAVE_INLINE 1

static inline int band__sem_try_acquire_inline(band_sem *s, uint64_t n)
{
    if (__builtin_expect(s != NULL && n - 1 < BAND_MAX_UNITS, 1)) { /* 1 <= n <= max */
        uint64_t *word = &((struct band_sem_prefix *)(void *)s)->state;
        uint64_t st = __atomic_load_n(word, __ATOMIC_RELAXED);
        if (__builtin_expect((st & (BAND_SEM_PREFIX_SLOW | BAND_SEM_PREFIX_CLOSED)) == 0 &&
                                 (st >> BAND_SEM_PREFIX_SHIFT) >= n &&
                                 __atomic_compare_exchange_n(word, &st,
                                                             st - (n << BAND_SEM_PREFIX_SHIFT), 1,
                                                             __ATOMIC_ACQUIRE, __ATOMIC_RELAXED),
                             1))
            return 0;
    }
    return (band_sem_try_acquire)(s, n);
}

static inline int band__sem_release_inline(band_sem *s, uint64_t n)
{
    struct band_sem_prefix *p = (struct band_sem_prefix *)(void *)s;
    if (__builtin_expect(s != NULL && n - 1 < BAND_SEM_PREFIX_ADD_MAX &&
                             (p->flags & BAND_SEM_PREFIX_F_OUTOFLINE) == 0,
                         1)) {
        uint64_t old = __atomic_fetch_add(&p->state, n << BAND_SEM_PREFIX_SHIFT, __ATOMIC_RELEASE);
        if (__builtin_expect((old & BAND_SEM_PREFIX_SLOW) == 0 &&
                                 (old >> BAND_SEM_PREFIX_SHIFT) <= BAND_MAX_UNITS - n,
                             1))
            return 0;
        return band_sem_release_finish(s, n, old);
    }
    return (band_sem_release)(s, n);
}

#define band_sem_try_acquire(s, n) band__sem_try_acquire_inline((s), (n))
#define band_sem_release(s, n)     band__sem_release_inline((s), (n))
#endif

#ifdef __cplusplus
}
#endif
#endif /* BAND_SEM_H */
