/*
 * band/sem.h - the weighted FIFO semaphore and permits as values.
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
 *    the one load that tells release whether anybody waits.
 *  - Counters are readable at any time with band_sem_get_stats().
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

typedef struct band_sem band_sem;

/**
 * band_sem_create() - allocate a semaphore with @permits available permits.
 *
 * Returns 0 and stores the semaphore in *@out, BAND_EINVAL when @out is NULL or @permits
 * exceeds BAND_MAX_UNITS, or BAND_ENOMEM. On failure *@out is left unchanged.
 * The caller owns the semaphore and frees it with band_sem_destroy().
 */
BAND_API int band_sem_create(band_sem **out, uint64_t permits);

/**
 * band_sem_destroy() - free @s.
 *
 * Returns 0, or BAND_EBUSY (nothing is freed) while waiters are queued: close it first,
 * or let them finish, or BAND_EINVAL for the semaphore of a budget (use
 * band_budget_destroy()). Destroying NULL returns 0. Permits still held by callers become
 * dangling: nobody may use @s after this call.
 */
BAND_API int band_sem_destroy(band_sem *s);

/**
 * band_sem_set_name() - give @s a name that band_sem_get_stats() reports.
 *
 * The name is copied. NULL clears it. Returns 0, or BAND_EINVAL when @s is NULL or the
 * name does not fit in BAND_NAME_MAX bytes including its NUL (nothing changes). MT-safe.
 */
BAND_API int band_sem_set_name(band_sem *s, const char *name);

struct band_histo;

/**
 * band_sem_set_wait_histo() - record how long each queued acquisition waited (ns, from
 * queueing to its grant, timeout, cancel or close) into @h (band/histo.h), from now on;
 * NULL stops recording. Acquisitions that never queue record nothing. @h stays the
 * caller's and must outlive @s or the next call. Works for a budget's semaphore too
 * (band_budget_sem()). Returns 0 or BAND_EINVAL (NULL @s). MT-safe.
 */
BAND_API int band_sem_set_wait_histo(band_sem *s, struct band_histo *h);

/**
 * band_sem_set_deadline_aware() - @on 1: an acquisition that would have to queue is refused
 * at once with BAND_ETIMEDOUT (holding nothing, no wake; counted in refused_deadline) when
 * the measured pace of grants to queued waiters (grant_pace_ns in the counters) predicts it
 * would miss its deadline: the blocking call's @deadline, or @w->deadline for
 * band_sem_acquire_async(), read once at submission. Until a pace has been measured
 * nobody is refused, and a deadline of BAND_FOREVER never is. @on 0 (the default): waiters
 * queue whatever their deadline and @w->deadline is never read. Multi-budget admissions
 * are not predicted. Returns 0 or BAND_EINVAL (NULL @s, @on not 0 or 1). MT-safe.
 */
BAND_API int band_sem_set_deadline_aware(band_sem *s, int on);

/**
 * band_sem_try_acquire() - take @n permits now, or refuse without waiting.
 *
 * Returns 0 (the caller holds @n more permits; n == 0 always succeeds on an open
 * semaphore), BAND_EAGAIN when fewer than @n are available or another acquisition is
 * queued (try never barges past a waiter), BAND_ECLOSED after close, BAND_E2BIG when @s
 * is a budget and @n exceeds its capacity, or BAND_EINVAL (NULL @s, @n above
 * BAND_MAX_UNITS). Never waits; lock-free on its fast path. MT-safe.
 */
BAND_API int band_sem_try_acquire(band_sem *s, uint64_t n);

/**
 * band_sem_acquire() - take @n permits, blocking this thread until @deadline.
 *
 * Joins the FIFO queue when the permits are not available at once. Returns 0 (granted;
 * a grant that races with the deadline wins and is returned as 0), BAND_ETIMEDOUT when
 * @deadline passed first (whatever had been partially granted went back to the next
 * waiters; a deadline already in the past means "do not wait", and such a call never
 * queues, so it counts in no counter), BAND_ECLOSED, BAND_E2BIG, BAND_EINVAL as for
 * band_sem_try_acquire(), or BAND_EOVERFLOW as for band_sem_acquire_async(). Before it
 * queues it retries the lock-free path for about a microsecond while nobody is queued
 * (never past a waiter). MT-safe.
 *
 * @cancel (NULL for none): when it is requested the call stops waiting and returns
 * BAND_ECANCELED, holding nothing; a token requested before the call means "do not
 * wait", as a past deadline does (band/cancel.h).
 */
BAND_API int band_sem_acquire(band_sem *s, uint64_t n, band_time deadline, band_cancel *cancel);

/**
 * band_sem_acquire_async() - take @n permits now, or queue @w for them.
 *
 * Returns 0 when granted at once (no wake follows), BAND_PENDING when queued (from then on
 * exactly one of {wake called once, band_waiter_cancel() returns 0} ends the operation);
 * any other answer also ends it at once, and except for BAND_EINVAL (which leaves @w
 * untouched) band_waiter_status(@w) then reports it. Other answers:
 * BAND_ECLOSED, BAND_E2BIG, BAND_EINVAL (NULL @s or @w, @w already pending or with no
 * wake function, @n above BAND_MAX_UNITS), BAND_EOVERFLOW when the units asked
 * for by all queued waiters would exceed 2^64 - 1, or BAND_ETIMEDOUT only in deadline-aware
 * mode (band_sem_set_deadline_aware()), when the wait is predicted to miss @w->deadline.
 * Never calls wake itself. When the wake reports status 0 the owner holds @n permits. @w
 * must stay valid and untouched while pending. The semaphore never cancels @w at its
 * deadline: front ends that arm a timer do that with band_waiter_cancel(). MT-safe.
 */
BAND_API int band_sem_acquire_async(band_sem *s, uint64_t n, band_waiter *w);

/**
 * band_sem_release() - return @n permits.
 *
 * The permits repay the debt first, then go to queued waiters in order, then become
 * available. Wakes of waiters completed by this release run on the calling thread before
 * it returns. Returns 0, BAND_EOVERFLOW - nothing changes then - when the permits left
 * available afterwards would exceed BAND_MAX_UNITS or, for a budget, when @n is
 * more than callers hold (available + the head's partial grant + @n would exceed the
 * capacity + the debt), or BAND_EINVAL for a NULL @s. Works after close. MT-safe;
 * lock-free when nobody waits.
 * One corner near the maximum: a plain semaphore's release adds first and checks after,
 * so an acquisition that races with an overflowing release can take the excess before the
 * release undoes it; those permits are then charged as debt, leaving the balance as it was.
 * A budget's release that overlaps a capacity change is checked again under the lock, so
 * it meets the capacity before or after the change, never a mix; a release of units
 * callers hold is always accepted. The one gap: when a change lands between the release's
 * loads and its compare-and-swap and an acquisition takes the released units before the
 * recheck, a release of units never acquired can pass.
 */
BAND_API int band_sem_release(band_sem *s, uint64_t n);

/**
 * band_sem_reduce() - remove exactly @n permits from the logical balance.
 *
 * Takes available permits first and records the rest as a debt that later releases repay
 * before any queued waiter. Held permits are never revoked. On a budget's semaphore this
 * is band_budget_shrink(): the capacity drops by @n too. Returns 0, BAND_EOVERFLOW when
 * @n or the debt would exceed BAND_MAX_UNITS (nothing changes), or BAND_EINVAL (NULL
 * @s; for a budget, @n not below its capacity).
 * Serialize reductions in one controller so that each adjustment is applied once. MT-safe.
 */
BAND_API int band_sem_reduce(band_sem *s, uint64_t n);

/**
 * band_sem_drain() - take up to @up_to of the permits available now.
 *
 * Returns how many were taken (0 when none were available, or for a NULL @s); creates no
 * debt. Works after close (it retires capacity; it is not an acquisition). The caller
 * holds what it took and may release it later. MT-safe.
 */
BAND_API uint64_t band_sem_drain(band_sem *s, uint64_t up_to);

/** band_sem_available() - permits available now (0 for NULL). A snapshot. MT-safe. */
BAND_API uint64_t band_sem_available(const band_sem *s);

/**
 * band_sem_close() - fail every pending and future acquisition with BAND_ECLOSED.
 *
 * Queued waiters are woken on this thread with status BAND_ECLOSED; what the head had been
 * partially granted returns to the semaphore. Held permits can still be released. Closing
 * twice is harmless. Returns 0, or BAND_EINVAL for NULL. MT-safe.
 */
BAND_API int band_sem_close(band_sem *s);

/** band_sem_is_closed() - 1 after band_sem_close(), 0 before (and for NULL). MT-safe. */
BAND_API int band_sem_is_closed(const band_sem *s);

/**
 * struct band_sem_stats - a snapshot of a semaphore's counters.
 *
 * Gauges describe the moment of the snapshot; counters count since creation. Acquisitions
 * granted on the fast path are not counted one by one (that would cost the fast path a
 * second atomic operation): "grants" counts acquisitions that had to queue.
 */
typedef struct band_sem_stats {
    char name[BAND_NAME_MAX];  /* "" when unnamed */
    int closed;                /* 1 after close */
    int is_budget;             /* 1 for a band_budget; capacity and in_use are then set */
    uint64_t capacity;         /* budgets: current capacity; semaphores: 0 */
    uint64_t in_use;           /* budgets: units held by callers; semaphores: 0 */
    uint64_t available;        /* permits available now */
    uint64_t debt;             /* permits that releases must repay before waiters */
    uint64_t waiters;          /* queued acquisitions */
    uint64_t waiting_units;    /* units the queued acquisitions asked for, in total */
    uint64_t head_granted;     /* units already handed to the head waiter (partial grant) */
    uint64_t queued;           /* acquisitions that had to queue, since creation */
    uint64_t grants;           /* queued acquisitions that were granted */
    uint64_t timeouts;         /* queued acquisitions that ended with BAND_ETIMEDOUT */
    uint64_t cancels;          /* queued acquisitions cancelled for any other reason */
    uint64_t closed_fails;     /* queued acquisitions failed by close */
    uint64_t try_refusals;     /* try_acquire calls that answered BAND_EAGAIN */
    uint64_t too_big;          /* requests refused with BAND_E2BIG */
    uint64_t wait_ns_total;    /* time queued acquisitions spent waiting, summed */
    uint64_t wait_ns_max;      /* the longest any queued acquisition waited */
    uint64_t refused_deadline; /* deadline-aware: refused at once, predicted to miss */
    uint64_t grant_pace_ns;    /* the measured time per unit granted to queued waiters
                                  (moving average; 0: not measured yet) */
} band_sem_stats;

/**
 * band_sem_get_stats() - copy @s's counters into *@out.
 *
 * Takes the semaphore's lock briefly; the fast paths never wait for it. Returns 0 or
 * BAND_EINVAL (NULL argument). MT-safe.
 */
BAND_API int band_sem_get_stats(const band_sem *s, band_sem_stats *out);

/*
 * Permits as values.
 *
 * A band_permit is {semaphore, count}: the permits one owner holds. Embed it in the object
 * that owns the charged resource (a buffer, a response stream, a queued job), move it with
 * that object, and release it when the resource is freed. A permit is a plain value with
 * one owner: its functions are not synchronized against each other on the same permit, but
 * they are MT-safe with respect to the semaphore. Initialise with BAND_PERMIT_INIT.
 */
typedef struct band_permit {
    band_sem *sem;  /* NULL when empty */
    uint64_t count; /* permits held */
} band_permit;

#define BAND_PERMIT_INIT                                                                           \
    {                                                                                              \
        NULL, 0                                                                                    \
    }

/**
 * band_permit_try_acquire() - band_sem_try_acquire() into an empty permit.
 *
 * On success *@p holds @n permits of @s. Returns the codes of band_sem_try_acquire(), or
 * BAND_EINVAL when @p is NULL or not empty (so held permits are never overwritten).
 */
BAND_API int band_permit_try_acquire(band_permit *p, band_sem *s, uint64_t n);

/** band_permit_acquire() - band_sem_acquire() into an empty permit; codes as that, plus
 *  BAND_EINVAL when @p is NULL or not empty. */
BAND_API int band_permit_acquire(band_permit *p, band_sem *s, uint64_t n, band_time deadline,
                                 band_cancel *cancel);

/**
 * band_permit_adopt() - wrap @n permits of @s that the caller already holds (for example
 * after an async acquisition's wake reported 0) in the empty permit @p.
 *
 * Returns 0, BAND_EINVAL when @p or @s is NULL, @p is not empty, or @n exceeds
 * BAND_MAX_UNITS, or, when @s is a budget's semaphore, BAND_E2BIG (counted in
 * too_big) when @n exceeds what its callers can hold: its capacity plus any debt a shrink
 * left. @p is untouched on failure.
 */
BAND_API int band_permit_adopt(band_permit *p, band_sem *s, uint64_t n);

/**
 * band_permit_release() - return what @p holds and empty it.
 *
 * Idempotent: releasing an empty permit returns 0 and does nothing. Returns BAND_EINVAL
 * for a NULL @p, otherwise the code of band_sem_release(); on BAND_EOVERFLOW @p keeps its
 * permits.
 */
BAND_API int band_permit_release(band_permit *p);

/**
 * band_permit_split() - move @n of @p's permits into the empty permit @out.
 *
 * Returns 0, or BAND_EINVAL (NULL argument, @out not empty, @p empty, or @n more than @p
 * holds); nothing changes on failure.
 */
BAND_API int band_permit_split(band_permit *p, uint64_t n, band_permit *out);

/**
 * band_permit_merge() - move everything @other holds into @p, leaving @other empty.
 *
 * Both must belong to the same semaphore (an empty permit belongs to none and merges with
 * any). Returns 0, BAND_EINVAL for different semaphores or a NULL argument, or
 * BAND_EOVERFLOW when the sum would exceed BAND_MAX_UNITS. Nothing changes on
 * failure, so no permit is lost.
 */
BAND_API int band_permit_merge(band_permit *p, band_permit *other);

/**
 * band_permit_forget() - empty @p without returning its permits; returns how many it held.
 *
 * The permits leave the semaphore for good (the form of reducing capacity by consuming
 * held permits). For a budget's permit the forgotten units first settle any debt a shrink
 * left (they were owed anyway), and the capacity drops by the rest - possibly to 0, after
 * which every non-empty request is refused with BAND_E2BIG until band_budget_grow(). Queued
 * requests that no longer fit end with BAND_E2BIG. 0 for NULL.
 */
BAND_API uint64_t band_permit_forget(band_permit *p);

/**
 * band_permit_reconcile() - set what @p holds to @used, the units the work it stood for
 * has actually consumed (estimate, then reconcile).
 *
 * A surplus (@used below the count) is returned as band_sem_release() would return it,
 * waking waiters it completes on this thread; @used 0 returns everything and empties @p.
 * A shortfall (@used above the count) is charged at once and never waits, because the
 * resource is already consumed: the missing units are taken from the available units
 * first, and the rest becomes debt that later releases repay before any waiter, as
 * band_sem_reduce()'s deficit is (a queued head's partial grant is never taken). A
 * budget's capacity does not change, and a shortfall is not refused for size or for a
 * closed semaphore: `in_use` may then exceed the capacity until the permit is released,
 * and the debt shows the excess. Either way @p then holds @used, and releasing it later
 * returns all of them (settling the debt first).
 *
 * Returns 0; BAND_EINVAL when @p is NULL or empty (it names no semaphore) or @used exceeds
 * BAND_MAX_UNITS; BAND_EOVERFLOW when the debt would pass BAND_MAX_UNITS, or
 * when returning the surplus fails as band_sem_release() does with it. Nothing changes on
 * failure. MT-safe with respect to the semaphore.
 */
BAND_API int band_permit_reconcile(band_permit *p, uint64_t used);

/**
 * band_permit_release_scoped() - cleanup handler behind BAND_SCOPED_PERMIT.
 *
 * Releases @p. If the release fails with BAND_EOVERFLOW (only possible when extra permits
 * were released into the semaphore by other code) the permits are forgotten, since they
 * could not be returned by anyone.
 */
BAND_API void band_permit_release_scoped(band_permit *p);

#if defined(__GNUC__) || defined(__clang__)
/**
 * BAND_SCOPED_PERMIT - declare a band_permit that is released on every path out of its
 * block (GCC/Clang cleanup attribute):
 *
 *     BAND_SCOPED_PERMIT band_permit p = BAND_PERMIT_INIT;
 *     if (band_permit_acquire(&p, sem, 1, deadline, NULL) != 0)
 *         return -1;           // p is empty: nothing to release
 *     ...                      // every return below releases p
 *
 * Move the permit out (assign it elsewhere, then set p to BAND_PERMIT_INIT, or use
 * band_permit_split()/merge()) to keep it alive past the block.
 */
#define BAND_SCOPED_PERMIT __attribute__((cleanup(band_permit_release_scoped)))
#endif

#ifdef __cplusplus
}
#endif
#endif /* BAND_SEM_H */
