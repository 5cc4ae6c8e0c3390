/* SPDX-License-Identifier: MIT */
/**
 * @file band/group.h
 * @brief The wait group: wait until a count of outstanding tasks reaches 0.
 *
 * A band_group (Go's sync.WaitGroup) counts outstanding tasks: add(n) before a task
 * starts, done() when it ends; waiters are released each time the count reaches 0. The
 * group is reusable: a count that rises again after reaching 0 starts a new round, and
 * only waits submitted while the count is above 0 wait for that round to finish. It has a
 * try_wait that never waits, a blocking wait (absolute deadline, cancellation token) and
 * an async wait on a caller-owned band_waiter. docs/coordination.md has the long form;
 * band/latch.h is the one-shot form and band/shutdown.h the shutdown scope.
 *
 * Rules (band/core.h has the wake contract):
 *  - The count is a uint64_t and never wraps: an add past BAND_GROUP_MAX fails with
 *    BAND_EOVERFLOW and a done below zero fails with BAND_EINVAL; nothing changes then.
 *  - The done that brings the count to 0 runs the wakes of every waiter it released, on
 *    its own thread, after every band lock is released.
 *  - A wait on a count of 0 completes at once: 0, no wake. A blocking wait whose deadline
 *    is in the past does not wait: it returns 0 if the count is 0, else BAND_ETIMEDOUT,
 *    and then it never queued, so it counts in no counter.
 *  - band_waiter_cancel() withdraws a queued wait (0), or reports that it was already
 *    released (BAND_EALREADY; the wake has run or is running). Nothing is held by a
 *    waiter, so a cancel never returns anything to the group.
 *  - Every function is MT-safe. The count is read without a lock; add, try_wait and a
 *    done that does not bring the count to 0 take no lock.
 */
#ifndef BAND_GROUP_H
#define BAND_GROUP_H

#include "band/cancel.h"
#include "band/core.h"
#include "band/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief The largest count a wait group (or a latch) can hold. */
#define BAND_GROUP_MAX UINT64_MAX

/** @brief A wait group (opaque): band_group_create(), band_group_destroy(). */
typedef struct band_group band_group;

/**
 * @brief Allocate a wait group with a count of 0.
 *
 * Returns 0 and stores the group in *@p out, BAND_EINVAL when @p out is NULL, or BAND_ENOMEM
 * (*@p out unchanged on failure). The caller owns the group; free it with
 * band_group_destroy().
 *
 * @param[out] out  Receives the new wait group.
 * @return 0, BAND_EINVAL or BAND_ENOMEM, as described above.
 */
BAND_API int band_group_create(band_group **out);

/**
 * @brief Free @p g.
 *
 * Returns 0, or BAND_EBUSY while waits are queued (nothing is freed; cancel them or let
 * the count reach 0 first). A count above 0 does not stop destruction: nobody may call
 * band_group_done() on @p g afterwards. Destroying NULL returns 0.
 *
 * @param g  The wait group, or NULL.
 * @return 0 (also for NULL) or BAND_EBUSY, as described above.
 */
BAND_API int band_group_destroy(band_group *g);

/**
 * @brief Add @p n outstanding tasks to @p g.
 *
 * Call it before the task starts (before handing it to another thread), so that a waiter
 * cannot see the count at 0 in between. Returns 0 (adding 0 is a no-op), BAND_EOVERFLOW
 * when the count would exceed BAND_GROUP_MAX (nothing changes), or BAND_EINVAL for a NULL
 * @p g. Never wakes anybody. Lock-free. MT-safe.
 *
 * @param g  The wait group.
 * @param n  Tasks to add.
 * @return 0, BAND_EOVERFLOW or BAND_EINVAL, as described above.
 */
BAND_API int band_group_add(band_group *g, uint64_t n);

/**
 * @brief One outstanding task of @p g finished: band_group_done_n(@p g, 1).
 *
 * Returns what band_group_done_n() returns for one task.
 *
 * @param g  The wait group.
 * @return What band_group_done_n() returns for one task: 0 or BAND_EINVAL.
 */
BAND_API int band_group_done(band_group *g);

/**
 * @brief @p n outstanding tasks of @p g finished.
 *
 * Returns 0, or BAND_EINVAL when @p g is NULL or @p n exceeds the count (the count never goes
 * below 0; nothing changes). Done of 0 returns 0 and changes nothing. When the count
 * reaches 0, every queued wait is released with status 0 and its wake runs on the calling
 * thread before this call returns, after the group's lock is released (a wake may call
 * back into @p g). Lock-free unless the count reaches 0. Memory written by a task before
 * its done is visible to a waiter after its wait returned 0 (or its wake ran). MT-safe.
 *
 * @param g  The wait group.
 * @param n  Tasks that finished, at most the count.
 * @return 0 or BAND_EINVAL, as described above.
 */
BAND_API int band_group_done_n(band_group *g, uint64_t n);

/**
 * @brief The current count of @p g (0 for NULL). A snapshot. MT-safe.
 *
 * @param g  The wait group, or NULL.
 * @return The number of outstanding tasks.
 */
BAND_API uint64_t band_group_count(const band_group *g);

/**
 * @brief 0 if the count of @p g is 0, BAND_EAGAIN if not, BAND_EINVAL for
 * NULL.
 *
 * Never waits and never queues; one atomic load with acquire ordering, no lock. Memory
 * written by the tasks before their done is visible after it returned 0. MT-safe.
 *
 * @param g  The wait group.
 * @return 0, BAND_EAGAIN or BAND_EINVAL, as described above.
 */
BAND_API int band_group_try_wait(const band_group *g);

/**
 * @brief Block this thread until the count of @p g is 0, or until @p deadline.
 *
 * Returns 0 when the count was 0 or reached 0 (a release that races with the deadline
 * wins and is returned as 0), BAND_ETIMEDOUT when @p deadline passed first (a deadline at
 * or before band_now() means "do not wait": 0 if the count is 0 now, else BAND_ETIMEDOUT),
 * or BAND_EINVAL for a NULL @p g. MT-safe.
 *
 * @p cancel (NULL for none): when it is requested the call stops waiting and returns
 * BAND_ECANCELED, holding nothing; a token requested before the call means "do not
 * wait", as a past deadline does (band/cancel.h).
 *
 * @param g         The wait group.
 * @param deadline  Absolute deadline (band_now() clock); BAND_FOREVER never expires, a past
 *                  one means "do not wait".
 * @param cancel    Cancellation token, or NULL for none.
 * @return 0, BAND_ETIMEDOUT, BAND_EINVAL or BAND_ECANCELED, as described above.
 */
BAND_API int band_group_wait(band_group *g, band_time deadline, band_cancel *cancel);

/**
 * @brief Complete now if the count of @p g is 0, or queue @p w until it is.
 *
 * Returns 0 when the count is 0 (no wake follows; band_waiter_status(@p w) is 0),
 * BAND_PENDING when queued (from then on exactly one of {wake called once with status 0
 * by the thread whose done brought the count to 0, band_waiter_cancel() returns 0} ends
 * the wait), or BAND_EINVAL (NULL @p g or @p w, @p w already pending or without a wake
 * function; @p w is left untouched). Never calls wake itself. @p w must stay valid and
 * untouched while pending; the group must outlive it. MT-safe.
 *
 * @param g  The wait group.
 * @param w  The waiter, initialised with band_waiter_init() and not pending.
 * @return 0, BAND_PENDING or BAND_EINVAL, as described above.
 */
BAND_API int band_group_wait_async(band_group *g, band_waiter *w);

/** @brief A snapshot of a wait group's counters. */
typedef struct band_group_stats {
    uint64_t count;    /**< outstanding tasks now */
    uint64_t waiters;  /**< waits queued now */
    uint64_t queued;   /**< waits that had to queue, since creation */
    uint64_t released; /**< queued waits released by the count reaching 0 */
    uint64_t timeouts; /**< queued waits that ended with BAND_ETIMEDOUT */
    uint64_t cancels;  /**< queued waits cancelled for any other reason */
    uint64_t zeroes;   /**< times a done brought the count to 0 */
    uint64_t misuse;   /**< done calls refused with BAND_EINVAL (below zero) */
} band_group_stats;

/**
 * @brief Copy @p g's counters into *@p out.
 *
 * Takes the group's lock briefly. Returns 0 or BAND_EINVAL (NULL argument). MT-safe.
 *
 * @param g         The wait group.
 * @param[out] out  Receives the snapshot.
 * @return 0 or BAND_EINVAL, as described above.
 */
BAND_API int band_group_get_stats(const band_group *g, band_group_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* BAND_GROUP_H */
