/* SPDX-License-Identifier: MIT */
/**
 * @file band/permit.h
 * @brief Permits as values: the permits of a semaphore that one owner holds.
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
 * @brief The permits one owner holds: @p count permits of @p sem.
 *
 * Empty when @p count is 0 (then @p sem is NULL). Read the fields; change them only through
 * the functions below (or move the whole value to a new owner).
 */
typedef struct band_permit {
    band_sem *sem;  /**< NULL when empty */
    uint64_t count; /**< permits held */
} band_permit;

/** @brief The initialiser of an empty band_permit: `band_permit p = BAND_PERMIT_INIT;`. */
#define BAND_PERMIT_INIT                                                                           \
    {                                                                                              \
        NULL, 0                                                                                    \
    }

/**
 * @brief band_sem_try_acquire() into an empty permit.
 *
 * On success *@p p holds @p n permits of @p s. Returns the codes of band_sem_try_acquire(), or
 * BAND_EINVAL when @p p is NULL or not empty (so held permits are never overwritten).
 *
 * @param[out] p  An empty permit; receives the permits.
 * @param s       The semaphore.
 * @param n       Permits to take, 0 to BAND_MAX_UNITS.
 * @return 0, a code of band_sem_try_acquire(), or BAND_EINVAL, as described above.
 */
BAND_API int band_permit_try_acquire(band_permit *p, band_sem *s, uint64_t n);

/**
 * @brief band_sem_acquire() into an empty permit; codes as that, plus
 * BAND_EINVAL when @p p is NULL or not empty.
 *
 * @param[out] p    An empty permit; receives the permits.
 * @param s         The semaphore.
 * @param n         Permits to take, 0 to BAND_MAX_UNITS.
 * @param deadline  Absolute deadline (band_now() clock); BAND_FOREVER never expires, a past
 *                  one means "do not wait".
 * @param cancel    Cancellation token, or NULL for none.
 * @return 0, a code of band_sem_acquire(), or BAND_EINVAL, as described above.
 */
BAND_API int band_permit_acquire(band_permit *p, band_sem *s, uint64_t n, band_time deadline,
                                 band_cancel *cancel);

/**
 * @brief Wrap @p n permits of @p s that the caller already holds (for example
 * after an async acquisition's wake reported 0) in the empty permit @p p.
 *
 * Returns 0, BAND_EINVAL when @p p or @p s is NULL, @p p is not empty, or @p n exceeds
 * BAND_MAX_UNITS, or, when @p s is a budget's semaphore, BAND_E2BIG (counted in
 * too_big) when @p n exceeds what its callers can hold: its capacity plus any debt a shrink
 * left. @p p is untouched on failure.
 *
 * @param[out] p  An empty permit; receives the permits.
 * @param s       The semaphore.
 * @param n       Permits of @p s the caller holds, 0 to BAND_MAX_UNITS.
 * @return 0, BAND_EINVAL or BAND_E2BIG, as described above.
 */
BAND_API int band_permit_adopt(band_permit *p, band_sem *s, uint64_t n);

/**
 * @brief Return what @p p holds and empty it.
 *
 * Idempotent: releasing an empty permit returns 0 and does nothing. Returns BAND_EINVAL
 * for a NULL @p p, otherwise the code of band_sem_release(); on BAND_EOVERFLOW @p p keeps its
 * permits.
 *
 * @param[in,out] p  The permit; empty afterwards unless the release failed.
 * @return 0, BAND_EINVAL, or a code of band_sem_release() such as BAND_EOVERFLOW, as
 *         described above.
 */
BAND_API int band_permit_release(band_permit *p);

/**
 * @brief Move @p n of @p p's permits into the empty permit @p out.
 *
 * Returns 0, or BAND_EINVAL (NULL argument, @p out not empty, @p p empty, or @p n more than @p p
 * holds); nothing changes on failure.
 *
 * @param[in,out] p  The permit to take permits from.
 * @param n          Permits to move, at most what @p p holds.
 * @param[out] out   An empty permit; receives the @p n permits.
 * @return 0 or BAND_EINVAL, as described above.
 */
BAND_API int band_permit_split(band_permit *p, uint64_t n, band_permit *out);

/**
 * @brief Move everything @p other holds into @p p, leaving @p other empty.
 *
 * Both must belong to the same semaphore (an empty permit belongs to none and merges with
 * any). Returns 0, BAND_EINVAL for different semaphores or a NULL argument, or
 * BAND_EOVERFLOW when the sum would exceed BAND_MAX_UNITS. Nothing changes on
 * failure, so no permit is lost.
 *
 * @param[in,out] p      The permit that receives everything.
 * @param[in,out] other  The permit to empty into @p p.
 * @return 0, BAND_EINVAL or BAND_EOVERFLOW, as described above.
 */
BAND_API int band_permit_merge(band_permit *p, band_permit *other);

/**
 * @brief Empty @p p without returning its permits; returns how many it held.
 *
 * The permits leave the semaphore for good (the form of reducing capacity by consuming
 * held permits). For a budget's permit the forgotten units first settle any debt a shrink
 * left (they were owed anyway), and the capacity drops by the rest - possibly to 0, after
 * which every non-empty request is refused with BAND_E2BIG until band_budget_grow(). Queued
 * requests that no longer fit end with BAND_E2BIG. 0 for NULL.
 *
 * @param[in,out] p  The permit, or NULL.
 * @return The number of permits @p p held (0 for NULL).
 */
BAND_API uint64_t band_permit_forget(band_permit *p);

/**
 * @brief Set what @p p holds to @p used, the units the work it stood for
 * has actually consumed (estimate, then reconcile).
 *
 * A surplus (@p used below the count) is returned as band_sem_release() would return it,
 * waking waiters it completes on this thread; @p used 0 returns everything and empties @p p.
 * A shortfall (@p used above the count) is charged at once and never waits, because the
 * resource is already consumed: the missing units are taken from the available units
 * first, and the rest becomes debt that later releases repay before any waiter, as
 * band_sem_reduce()'s deficit is (a queued head's partial grant is never taken). A
 * budget's capacity does not change, and a shortfall is not refused for size or for a
 * closed semaphore: `in_use` may then exceed the capacity until the permit is released,
 * and the debt shows the excess. Either way @p p then holds @p used, and releasing it later
 * returns all of them (settling the debt first).
 *
 * Returns 0; BAND_EINVAL when @p p is NULL or empty (it names no semaphore) or @p used exceeds
 * BAND_MAX_UNITS; BAND_EOVERFLOW when the debt would pass BAND_MAX_UNITS, or
 * when returning the surplus fails as band_sem_release() does with it. Nothing changes on
 * failure. MT-safe with respect to the semaphore.
 *
 * @param[in,out] p  A permit that is not empty.
 * @param used       The units actually consumed, 0 to BAND_MAX_UNITS.
 * @return 0, BAND_EINVAL or BAND_EOVERFLOW, as described above.
 */
BAND_API int band_permit_reconcile(band_permit *p, uint64_t used);

/**
 * @brief Cleanup handler behind BAND_SCOPED_PERMIT.
 *
 * Releases @p p. If the release fails with BAND_EOVERFLOW (only possible when extra permits
 * were released into the semaphore by other code) the permits are forgotten, since they
 * could not be returned by anyone.
 *
 * @param p  The permit going out of scope.
 */
BAND_API void band_permit_release_scoped(band_permit *p);

#if defined(__GNUC__) || defined(__clang__)
/**
 * @brief Declare a band_permit that is released on every path out of its
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
