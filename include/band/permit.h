/* SPDX-License-Identifier: MIT */
/*
 * band/permit.h - permits as values: the permits of a semaphore that one owner holds.
 *
 * A band_permit is {semaphore, count}: the permits one owner holds. Embed it in the object
 * that owns the charged resource (a buffer, a response stream, a queued job), move it with
 * that object, and release it when the resource is freed. A permit is a plain value with
 * one owner: its functions are not synchronized against each other on the same permit, but
 * they are MT-safe with respect to the semaphore. Initialise with BAND_PERMIT_INIT.
 *
 * A permit works on any band_sem, including a budget's (band_budget_sem(), band/budget.h),
 * whose capacity rules its acquisitions keep. This header includes band/sem.h, since every
 * permit names a semaphore.
 */
#ifndef BAND_PERMIT_H
#define BAND_PERMIT_H

#include "band/cancel.h"
#include "band/core.h"
#include "band/error.h"
#include "band/sem.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * struct band_permit - the permits one owner holds: @count permits of @sem.
 *
 * Empty when @count is 0 (then @sem is NULL). Read the fields; change them only through
 * the functions below (or move the whole value to a new owner).
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
#endif /* BAND_PERMIT_H */
