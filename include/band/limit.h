/* SPDX-License-Identifier: MIT */
/**
 * @file band/limit.h
 * @brief An adaptive concurrency limit: a semaphore sized from what it measures.
 *
 * A band_limit owns one band_sem (created and destroyed with it; band_limit_sem() exposes
 * it for async acquisitions) whose balance is the current limit. Requests take one permit
 * each; when a request finishes the caller reports its round-trip time and whether it was
 * dropped (band_limit_on_done()), and the controller moves the limit:
 *
 *  - BAND_LIMIT_AIMD: additive increase, multiplicative decrease. Every "window" of samples
 *    without congestion adds @p increase; a drop, or a round trip slower than @p rtt_limit
 *    (0: drops only), multiplies the limit by @p backoff - at most once per round trip: a
 *    congestion signal from a request that started before the last decrease is ignored.
 *  - BAND_LIMIT_GRADIENT (Netflix's gradient, a Vegas relative): once per window,
 *    gradient = clamp(@p tolerance * min_rtt / window_rtt, 0.5, 1), and the limit moves a
 *    fraction @p smoothing of the way to limit * gradient + queue, where queue is @p queue or
 *    sqrt(limit). With no queueing the gradient is 1 and the limit grows by about
 *    smoothing * queue per window; once latency rises with the limit it settles near
 *    tolerance * capacity + queue. Drops cut it by @p backoff as in AIMD.
 *  - Both: the limit stays within [@p min, @p max]; it never grows in a window where fewer than
 *    half of the permits were in use (an idle client learns nothing about capacity);
 *    samples from requests started before the last change are not used to judge it.
 *
 * Changes reach the semaphore only through band_sem_release() (growth) and
 * band_sem_reduce() (shrink): permits in use are never revoked, and a shrink below what is
 * in flight becomes debt that returning permits repay before anybody else gets one. The
 * estimator and the limit are updated under one mutex, so adjustments are serialized; the
 * resulting release or reduce is applied after the mutex is released (wakes of waiting
 * acquirers run then, on the reporting thread, under no lock). Deltas commute, so the
 * semaphore's balance always converges to the reported limit minus what is in flight.
 *
 * Time is passed in by the caller (start and finish of each request), so the controller
 * runs on a fake clock in tests. Any origin works, negative included; a round trip is
 * now - start and must fit in a band_time (a report whose difference overflows is refused
 * with BAND_EINVAL). Round trips up to INT64_MAX are valid and saturate the estimates
 * (smoothed, window and minimum RTT) at INT64_MAX; no estimate ever wraps.
 * docs/limit.md has the simulation bounds and the tuning. Every function is MT-safe.
 */
#ifndef BAND_LIMIT_H
#define BAND_LIMIT_H

#include "band/cancel.h"
#include "band/core.h"
#include "band/error.h"
#include "band/sem.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief An adaptive concurrency limit (opaque): created with band_limit_create(). */
typedef struct band_limit band_limit;

/** @brief The algorithms. */
enum band_limit_algorithm {
    BAND_LIMIT_AIMD = 0,     /**< additive increase, multiplicative decrease */
    BAND_LIMIT_GRADIENT = 1, /**< the latency gradient (a Vegas relative) */
};

/** @brief How a request ended, for band_limit_on_done() / band_limit_sample(). */
enum band_limit_outcome {
    BAND_LIMIT_OK = 0,      /**< served: its round-trip time is a latency sample */
    BAND_LIMIT_DROPPED = 1, /**< rejected or timed out by the server: a congestion signal */
    BAND_LIMIT_IGNORE = 2,  /**< says nothing about capacity (a client error): not sampled */
};

/**
 * @brief Creation options; NULL means every default. Zero-initialise, then set what you need:
 * zero fields take the default shown. Invalid values (min > max, initial outside
 * [min, max], a factor out of range, NaN or infinite) are refused with BAND_EINVAL.
 */
typedef struct band_limit_opts {
    int algorithm;           /**< enum band_limit_algorithm (AIMD) */
    uint64_t initial;        /**< starting limit (min) */
    uint64_t min;            /**< lowest limit, >= 1 (1) */
    uint64_t max;            /**< highest limit, <= BAND_MAX_UNITS (1000) */
    double backoff;          /**< multiplicative decrease on congestion, in (0, 1) (0.9) */
    double increase;         /**< AIMD: additive increase per window, > 0 (1) */
    band_time rtt_limit;     /**< AIMD: a round trip above this is congestion (0: drops only) */
    double smoothing;        /**< GRADIENT: fraction of the way to the new estimate per window,
                                in (0, 1] (0.2) */
    double tolerance;        /**< GRADIENT: tolerated window_rtt / min_rtt before shrinking,
                                >= 1 (1.0) */
    double queue;            /**< GRADIENT: headroom added to the estimate (0: sqrt(limit)) */
    double rtt_smoothing;    /**< weight of a sample in the smoothed RTT, in (0, 1] (0.125) */
    uint64_t window;         /**< samples per window (0: the current limit, about one round
                                trip's worth when the limit is in use) */
    band_time min_rtt_reset; /**< forget min_rtt this often, so a lasting change of the
                                no-load latency is learned (0: never) */
} band_limit_opts;

/**
 * @brief A limit with its own semaphore holding @p opts->initial permits (@p opts may be
 *        NULL: the defaults).
 *
 * Returns 0 and stores it in *@p out, BAND_EINVAL (NULL @p out, an invalid option), or
 * BAND_ENOMEM; on error *@p out is untouched and nothing is allocated. Free it with
 * band_limit_destroy(). MT-safe.
 *
 * @param[out] out  Receives the limit; must not be NULL. The caller owns it.
 * @param opts      The options, or NULL for every default; read during the call only.
 * @return 0, BAND_EINVAL or BAND_ENOMEM as described above.
 */
BAND_API int band_limit_create(band_limit **out, const band_limit_opts *opts);

/**
 * @brief Free @p l and its semaphore.
 *
 * Returns 0 (NULL too), or BAND_EBUSY while acquisitions are queued on the semaphore
 * (nothing freed; close it first). Not MT-safe against other calls on @p l. Nobody may use
 * @p l or its semaphore after it returned 0.
 *
 * @param l  The limit, or NULL (a no-op).
 * @return 0, or BAND_EBUSY as described above.
 */
BAND_API int band_limit_destroy(band_limit *l);

/**
 * @brief Give @p l a name that band_limit_get_stats() reports.
 *
 * The name is copied. NULL clears it. Returns 0, or BAND_EINVAL when @p l is NULL or the
 * name does not fit in BAND_NAME_MAX bytes including its NUL (nothing changes). MT-safe.
 *
 * @param l     The limit; must not be NULL.
 * @param name  The name, copied; NULL clears it.
 * @return 0, or BAND_EINVAL as described above.
 */
BAND_API int band_limit_set_name(band_limit *l, const char *name);

/**
 * @brief Close the semaphore: queued and later acquisitions fail with BAND_ECLOSED.
 *
 * on_done still releases. Returns 0 or BAND_EINVAL (NULL). MT-safe.
 *
 * @param l  The limit; must not be NULL.
 * @return 0, or BAND_EINVAL for NULL.
 */
BAND_API int band_limit_close(band_limit *l);

/**
 * @brief Whether the limit is closed.
 *
 * MT-safe.
 *
 * @param l  The limit, or NULL.
 * @return 1 once band_limit_close() was called (or the semaphore was closed), 0 otherwise
 *         (0 for NULL).
 */
BAND_API int band_limit_is_closed(const band_limit *l);

/**
 * @brief The semaphore the limit sizes (NULL for NULL @p l).
 *
 * Use it for async acquisitions (band_sem_acquire_async(sem, 1, w)); after a grant call
 * band_limit_adopt() so the in-flight count includes the request, and band_limit_on_done()
 * when it ends. Never release or reduce it directly: that would skew the limit. The
 * semaphore belongs to the limit and is freed with it. MT-safe.
 *
 * @param l  The limit, or NULL.
 * @return The semaphore, or NULL for NULL @p l.
 */
BAND_API band_sem *band_limit_sem(band_limit *l);

/**
 * @brief Take one permit now, never waiting.
 *
 * Returns 0 (counted in flight), BAND_EAGAIN (none available, or acquisitions queued
 * ahead), BAND_ECLOSED, BAND_EINVAL (NULL). MT-safe.
 *
 * @param l  The limit; must not be NULL.
 * @return 0, BAND_EAGAIN, BAND_ECLOSED or BAND_EINVAL as described above.
 */
BAND_API int band_limit_try_acquire(band_limit *l);

/**
 * @brief Take one permit, blocking until @p deadline.
 *
 * Returns 0 (counted in flight), BAND_ETIMEDOUT, BAND_ECLOSED, BAND_EINVAL (NULL).
 * @p cancel (NULL for none): when it is requested the wait ends with BAND_ECANCELED,
 * nothing taken; a token requested before the call means "do not wait" (band/cancel.h).
 * MT-safe.
 *
 * @param l         The limit; must not be NULL.
 * @param deadline  Absolute time on band's clock to stop waiting at; a past one means "do
 *                  not wait".
 * @param cancel    Cancellation token, or NULL for none.
 * @return 0, BAND_ETIMEDOUT, BAND_ECANCELED, BAND_ECLOSED or BAND_EINVAL as described
 *         above.
 */
BAND_API int band_limit_acquire(band_limit *l, band_time deadline, band_cancel *cancel);

/**
 * @brief Count a permit acquired through band_limit_sem() as in flight.
 *
 * Returns 0, or BAND_EINVAL (NULL @p l, or max permits are already counted in flight: no
 * caller can hold more than the highest limit, so this permit was never handed out;
 * nothing changes). MT-safe.
 *
 * @param l  The limit; must not be NULL.
 * @return 0, or BAND_EINVAL as described above.
 */
BAND_API int band_limit_adopt(band_limit *l);

/**
 * @brief A request that holds one permit finished: record it as a sample
 *        (band_limit_sample()), then return its permit and count it out of flight.
 *
 * @p start and @p now are the request's start and end (same clock, any origin). Returns 0,
 * or BAND_EINVAL with nothing changed (no sample recorded, no permit returned, the
 * in-flight count as it was): NULL @p l, @p now before @p start, @p now - @p start not
 * representable in a band_time, an unknown @p outcome, or no permit counted in flight (a
 * report for a request that took no permit, or a second report for one request; returning
 * a permit anyway would raise the semaphore above the limit). Wakes of acquirers that the
 * returned permit or a raised limit completed run on this thread, under no lock. Never
 * waits. MT-safe.
 *
 * @param l        The limit; must not be NULL.
 * @param start    When the request started, on the caller's clock.
 * @param now      When it ended, on the same clock; at or after @p start.
 * @param outcome  How it ended: an enum band_limit_outcome.
 * @return 0, or BAND_EINVAL as described above.
 */
BAND_API int band_limit_on_done(band_limit *l, band_time start, band_time now, int outcome);

/**
 * @brief Feed one measurement without touching permits or the in-flight count (for
 *        callers that hold permits some other way).
 *
 * Returns 0, or BAND_EINVAL (nothing recorded) for NULL @p l, @p now before @p start, @p now -
 * @p start not representable in a band_time, or an unknown @p outcome. May change the limit
 * (wakes as band_limit_on_done()). MT-safe.
 *
 * @param l        The limit; must not be NULL.
 * @param start    When the request started, on the caller's clock.
 * @param now      When it ended, on the same clock; at or after @p start.
 * @param outcome  How it ended: an enum band_limit_outcome.
 * @return 0, or BAND_EINVAL as described above.
 */
BAND_API int band_limit_sample(band_limit *l, band_time start, band_time now, int outcome);

/**
 * @brief The current limit.
 *
 * One atomic load. MT-safe.
 *
 * @param l  The limit, or NULL.
 * @return The current limit, 0 for NULL.
 */
BAND_API uint64_t band_limit_current(const band_limit *l);

/** @brief The limit and the estimates behind it. */
typedef struct band_limit_stats {
    char name[BAND_NAME_MAX]; /**< "" when unnamed */
    int closed;               /**< 1 after band_limit_close() */
    int algorithm;            /**< enum band_limit_algorithm */
    uint64_t limit;           /**< current limit (what the semaphore converges to) */
    double limit_exact;       /**< the controller's unrounded limit */
    /** bounds: min, the lowest limit (opts.min) */
    uint64_t min, max;      /**< bounds: max, the highest limit (opts.max) */
    uint64_t inflight;      /**< permits counted in flight */
    band_time min_rtt;      /**< smallest round trip seen (since the last reset), 0: none yet */
    band_time smoothed_rtt; /**< exponentially smoothed round trip, 0: none yet (or only
                               round trips of 0) */
    band_time window_rtt;   /**< mean round trip of the last closed window, 0: none yet */
    double gradient;        /**< GRADIENT: last gradient (1 before the first window) */
    uint64_t samples;       /**< samples recorded (not ignored ones) */
    uint64_t drops;         /**< samples reported dropped */
    uint64_t ignored;       /**< samples reported BAND_LIMIT_IGNORE */
    uint64_t windows;       /**< windows closed */
    uint64_t increases;     /**< adjustments that raised the limit */
    uint64_t decreases;     /**< adjustments that lowered it */
} band_limit_stats;

/**
 * @brief Copy the estimates into *@p out.
 *
 * Takes the limit's mutex briefly. MT-safe.
 *
 * @param l         The limit; must not be NULL.
 * @param[out] out  Receives the snapshot; must not be NULL.
 * @return 0 or BAND_EINVAL (NULL argument).
 */
BAND_API int band_limit_get_stats(const band_limit *l, band_limit_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* BAND_LIMIT_H */
