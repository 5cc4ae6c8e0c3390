/* SPDX-License-Identifier: MIT */
/**
 * @file band/latch.h
 * @brief The count-down latch: a count fixed at creation that only goes down.
 *
 * A band_latch (Java's CountDownLatch, C++ std::latch) opens when its count reaches 0 and
 * stays open for good: every later wait completes at once. It has a try_wait that never
 * waits, a blocking wait (absolute deadline, cancellation token), an async wait on a
 * caller-owned band_waiter, and arrive_and_wait for a one-time rendezvous of N threads.
 * docs/coordination.md has the long form.
 *
 * Rules (band/core.h has the wake contract):
 *  - The count is a uint64_t and never goes below zero: a count-down past it fails with
 *    BAND_EINVAL and changes nothing.
 *  - The count-down that opens the latch runs the wakes of every waiter it released, on
 *    its own thread, after every band lock is released.
 *  - A wait on an open latch completes at once: 0, no wake. A blocking wait whose deadline
 *    is in the past does not wait: it returns 0 if the latch is open, else BAND_ETIMEDOUT,
 *    and then it never queued, so it counts in no counter.
 *  - band_waiter_cancel() withdraws a queued wait (0), or reports that it was already
 *    released (BAND_EALREADY; the wake has run or is running). A waiter holds nothing.
 *  - Every function is MT-safe. The count is read without a lock; try_wait and a
 *    count-down that does not open the latch take no lock.
 */
#ifndef BAND_LATCH_H
#define BAND_LATCH_H

#include "band/cancel.h"
#include "band/core.h"
#include "band/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief A count-down latch (opaque): band_latch_create(), band_latch_destroy(). */
typedef struct band_latch band_latch;

/**
 * @brief Allocate a latch that opens after @p count count-downs.
 *
 * Any uint64_t @p count is accepted; a latch created with 0 is open at once. Returns 0 and
 * stores it in *@p out, BAND_EINVAL when @p out is NULL, or BAND_ENOMEM (*@p out unchanged on
 * failure). Free it with band_latch_destroy().
 *
 * @param[out] out  Receives the new latch.
 * @param count     Count-downs until the latch opens; 0 for a latch open at once.
 * @return 0, BAND_EINVAL or BAND_ENOMEM, as described above.
 */
BAND_API int band_latch_create(band_latch **out, uint64_t count);

/**
 * @brief Free @p l. Returns 0, or BAND_EBUSY while waits are queued
 * (nothing is freed). Destroying NULL returns 0.
 *
 * @param l  The latch, or NULL.
 * @return 0 (also for NULL) or BAND_EBUSY, as described above.
 */
BAND_API int band_latch_destroy(band_latch *l);

/**
 * @brief Lower the count of @p l by @p n.
 *
 * Returns 0, or BAND_EINVAL when @p l is NULL or @p n exceeds the remaining count (including
 * any @p n > 0 on an open latch: a latch never counts below zero; nothing changes). A count
 * down of 0 returns 0. When the count reaches 0 the latch opens for good: every queued
 * wait is released with status 0, its wake running on the calling thread after the
 * latch's lock is released, before this call returns. Lock-free unless it opens the
 * latch. Memory written before a count-down is visible to a waiter after its wait
 * returned 0 (or its wake ran). MT-safe.
 *
 * @param l  The latch.
 * @param n  How much to count down, at most the remaining count.
 * @return 0 or BAND_EINVAL, as described above.
 */
BAND_API int band_latch_count_down(band_latch *l, uint64_t n);

/**
 * @brief 0 if @p l is open, BAND_EAGAIN if not, BAND_EINVAL for NULL.
 * Never waits; one atomic load. MT-safe.
 *
 * @param l  The latch.
 * @return 0, BAND_EAGAIN or BAND_EINVAL, as described above.
 */
BAND_API int band_latch_try_wait(const band_latch *l);

/**
 * @brief Block this thread until @p l is open, or until @p deadline.
 *
 * Returns 0 when the latch was open or opened (an opening that races with the deadline
 * wins and is returned as 0), BAND_ETIMEDOUT when @p deadline passed first (a deadline at
 * or before band_now() means "do not wait": 0 if open now, else BAND_ETIMEDOUT), or
 * BAND_EINVAL for NULL. MT-safe.
 *
 * @p cancel (NULL for none): when it is requested the call stops waiting and returns
 * BAND_ECANCELED, holding nothing; a token requested before the call means "do not
 * wait", as a past deadline does (band/cancel.h).
 *
 * @param l         The latch.
 * @param deadline  Absolute deadline (band_now() clock); BAND_FOREVER never expires, a past
 *                  one means "do not wait".
 * @param cancel    Cancellation token, or NULL for none.
 * @return 0, BAND_ETIMEDOUT, BAND_EINVAL or BAND_ECANCELED, as described above.
 */
BAND_API int band_latch_wait(band_latch *l, band_time deadline, band_cancel *cancel);

/**
 * @brief Complete now if @p l is open, or queue @p w until it opens.
 *
 * Returns 0 when open (no wake follows; band_waiter_status(@p w) is 0), BAND_PENDING when
 * queued (from then on exactly one of {wake called once with status 0 by the thread whose
 * count-down opened the latch, band_waiter_cancel() returns 0} ends the wait), or
 * BAND_EINVAL (NULL @p l or @p w, @p w already pending or without a wake function; @p w is left
 * untouched). Never calls wake itself. @p w must stay valid and untouched while pending;
 * the latch must outlive it. MT-safe.
 *
 * @param l  The latch.
 * @param w  The waiter, initialised with band_waiter_init() and not pending.
 * @return 0, BAND_PENDING or BAND_EINVAL, as described above.
 */
BAND_API int band_latch_wait_async(band_latch *l, band_waiter *w);

/**
 * @brief band_latch_count_down(@p l, @p n), then band_latch_wait(@p l,
 * @p deadline, @p cancel) (std::latch::arrive_and_wait with a deadline).
 *
 * Returns the count-down's error (then it did not wait), else the wait's result. MT-safe.
 *
 * @p cancel (NULL for none): when it is requested the call stops waiting and returns
 * BAND_ECANCELED, holding nothing (the count-down stays done); a token requested before
 * the call means "do not wait", as a past deadline does (band/cancel.h).
 *
 * @param l         The latch.
 * @param n         How much to count down, at most the remaining count.
 * @param deadline  Absolute deadline (band_now() clock); BAND_FOREVER never expires, a past
 *                  one means "do not wait".
 * @param cancel    Cancellation token, or NULL for none.
 * @return The count-down's BAND_EINVAL, else the result of band_latch_wait(): 0,
 *         BAND_ETIMEDOUT, BAND_EINVAL or BAND_ECANCELED.
 */
BAND_API int band_latch_arrive_and_wait(band_latch *l, uint64_t n, band_time deadline,
                                        band_cancel *cancel);

/**
 * @brief The remaining count of @p l (0 when open, and for NULL). MT-safe.
 *
 * @param l  The latch, or NULL.
 * @return The remaining count.
 */
BAND_API uint64_t band_latch_count(const band_latch *l);

/** @brief A snapshot of a latch's counters. */
typedef struct band_latch_stats {
    uint64_t count;    /**< the remaining count now (0: open) */
    uint64_t waiters;  /**< waits queued now */
    uint64_t queued;   /**< waits that had to queue, since creation */
    uint64_t released; /**< queued waits released by the opening */
    uint64_t timeouts; /**< queued waits that ended with BAND_ETIMEDOUT */
    uint64_t cancels;  /**< queued waits cancelled for any other reason */
    uint64_t opened;   /**< 1 once a count-down opened the latch (0 for one created open) */
    uint64_t misuse;   /**< count-downs refused with BAND_EINVAL (below zero) */
} band_latch_stats;

/**
 * @brief Copy @p l's counters into *@p out.
 *
 * Takes the latch's lock briefly. Returns 0 or BAND_EINVAL (NULL argument). MT-safe.
 *
 * @param l         The latch.
 * @param[out] out  Receives the snapshot.
 * @return 0 or BAND_EINVAL, as described above.
 */
BAND_API int band_latch_get_stats(const band_latch *l, band_latch_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* BAND_LATCH_H */
