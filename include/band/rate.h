/* SPDX-License-Identifier: MIT */
/**
 * @file band/rate.h
 * @brief A rate budget: token bucket, computed as GCRA.
 *
 * A semaphore bounds how much work is in flight; a rate budget bounds how fast work may
 * start. Tokens flow in at @p tokens per @p period; the bucket holds at most @p burst. Taking
 * n tokens is allowed when n are in the bucket. The state is how long until the bucket is
 * full again (the "theoretical arrival time" of the generic cell rate algorithm), so
 * nothing ticks in the background and a bucket costs the same whether it is used once a
 * day or a million times a second.
 *
 *  - try_acquire takes tokens now or refuses, telling how long until it would succeed;
 *  - reserve books the next slot and reports the delay (the async form: an event loop
 *    arms its own timer for it); a booking can be cancelled before it is due, which gives
 *    its tokens back;
 *  - acquire books and sleeps until the slot; an acquisition whose slot lies past its
 *    deadline is refused at once, with the retry-after it would have needed, and takes
 *    nothing. A deadline at or before now means "only if the tokens are there now", as
 *    everywhere in band.
 *
 * All arithmetic is integer and exact: time is counted in 1/tokens of a nanosecond, so a
 * rate of 3 per second never drifts. A request that would leave the bucket full again only
 * after INT64_MAX, or more than INT64_MAX ns from now, is refused with BAND_EOVERFLOW and
 * changes nothing; the clock itself may read anything in the band_time range. Time comes
 * from a clock hook (default band_now()), so tests run on a fake clock. A clock that steps
 * back is read as no time elapsed: the bucket's time is the latest time the hook returned.
 *
 * Every function is MT-safe, with no allocation and no system call (except the sleep of
 * band_rate_acquire()). band_rate_try_acquire() takes no lock for the common settings:
 * one compare-and-swap of the bucket's state word when it grants, none when it refuses.
 * The other calls take the bucket's mutex for a few dozen instructions (docs/rate.md).
 */
#ifndef BAND_RATE_H
#define BAND_RATE_H

#include "band/cancel.h"
#include "band/core.h"
#include "band/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief A rate budget (opaque): created with band_rate_create(). */
typedef struct band_rate band_rate;

/**
 * @brief The clock hook: the current time in nanoseconds.
 *
 * It should be monotonic; a step back is read as no time elapsed (until the clock passes
 * the latest time it returned). Each call reads it once, except a band_rate_try_acquire()
 * refusal whose wait is longer than its tokens take to refill (bookings run ahead), which
 * reads it a second time.
 *
 * @param ctx  band_rate_opts.clock_ctx.
 * @return The current time in nanoseconds, any band_time.
 */
typedef band_time band_rate_clock_fn(void *ctx);
/**
 * @brief The sleep hook of band_rate_acquire(): return once the clock reads @p until or
 *        later.
 *
 * @param ctx    band_rate_opts.sleep_ctx.
 * @param until  The time on the clock hook's clock to sleep until.
 */
typedef void band_rate_sleep_fn(void *ctx, band_time until);

/** @brief Creation options; NULL or a zero-initialised struct means the real clock and sleep. */
typedef struct band_rate_opts {
    band_rate_clock_fn *clock; /**< NULL: band_now() */
    void *clock_ctx;           /**< passed to clock */
    band_rate_sleep_fn *sleep; /**< NULL: clock_nanosleep on CLOCK_MONOTONIC (needs clock
                                  NULL) */
    void *sleep_ctx;           /**< passed to sleep */
} band_rate_opts;

/**
 * @brief A bucket that starts full: @p tokens per @p period nanoseconds (BAND_SEC for
 *        "per second"), holding at most @p burst (the most tokens one request can take).
 *
 * @p opts may be NULL (the real clock). The hooks are read once, here.
 *
 * Returns 0 and stores it in *@p out; BAND_EINVAL (NULL @p out, @p tokens, @p period or @p burst 0,
 * a negative @p period, @p tokens above INT64_MAX, a sleep hook without a clock hook);
 * BAND_EOVERFLOW (@p burst x @p period does not fit in 63 bits: the bucket's depth in time must
 * be representable); BAND_ENOMEM. On error *@p out is untouched. MT-safe. Free it with
 * band_rate_destroy().
 *
 * @param[out] out  Receives the bucket; must not be NULL. The caller owns it.
 * @param tokens    Tokens that flow in per @p period, 1 to INT64_MAX.
 * @param period    The period in nanoseconds, above 0.
 * @param burst     The most tokens the bucket holds, at least 1; @p burst x @p period must
 *                  fit in 63 bits.
 * @param opts      The hooks, or NULL for the real clock and sleep; read during the call
 *                  only.
 * @return 0, BAND_EINVAL, BAND_EOVERFLOW or BAND_ENOMEM as described above.
 */
BAND_API int band_rate_create(band_rate **out, uint64_t tokens, band_time period, uint64_t burst,
                              const band_rate_opts *opts);

/**
 * @brief Free @p r (NULL is a no-op).
 *
 * A rate budget never queues a waiter, so there is nothing to refuse for: bookings still
 * held become dangling (do not cancel them afterwards), and a front door that refers to
 * @p r must be destroyed first. Not MT-safe against other calls on @p r. Returns 0.
 *
 * @param r  The bucket, or NULL.
 * @return 0.
 */
BAND_API int band_rate_destroy(band_rate *r);

/**
 * @brief Give @p r a name that band_rate_get_stats() reports.
 *
 * The name is copied. NULL clears it. Returns 0, or BAND_EINVAL when @p r is NULL or the
 * name does not fit in BAND_NAME_MAX bytes including its NUL (nothing changes). MT-safe.
 *
 * @param r     The bucket; must not be NULL.
 * @param name  The name, copied; NULL clears it.
 * @return 0, or BAND_EINVAL as described above.
 */
BAND_API int band_rate_set_name(band_rate *r, const char *name);

/**
 * @brief Change the rate and the burst at run time.
 *
 * A change keeps what has accrued: the bucket is first brought to now under the old rate,
 * and the tokens it then holds (a fraction included, fewer than none while bookings run
 * ahead) stay in it, clamped to the new burst when that is lower. From then on it refills
 * at the new rate up to the new burst, and tokens taken cost the new interval. A change of
 * burst alone mints nothing: an empty bucket of 3 raised to 20 is still empty. Bookings
 * already made keep their slots (a booking is never moved). The tokens held are re-counted
 * in the new units rounding down, by less than 1/@p period of a token.
 *
 * Returns 0, BAND_EINVAL (also for a NULL @p r) or BAND_EOVERFLOW as band_rate_create(),
 * or BAND_EOVERFLOW when the tokens owed, at the new rate, would take the bucket past
 * INT64_MAX (or more than INT64_MAX ns) to refill. Nothing changes on error. MT-safe.
 *
 * @param r       The bucket; must not be NULL.
 * @param tokens  Tokens that flow in per @p period, 1 to INT64_MAX.
 * @param period  The period in nanoseconds, above 0.
 * @param burst   The most tokens the bucket holds, at least 1; @p burst x @p period must
 *                fit in 63 bits.
 * @return 0, BAND_EINVAL or BAND_EOVERFLOW as described above.
 */
BAND_API int band_rate_set(band_rate *r, uint64_t tokens, band_time period, uint64_t burst);

/**
 * @brief Take @p n tokens now, or refuse; never waits.
 *
 * Returns 0 (taken); BAND_EAGAIN (not enough tokens, bookings ahead included; nothing
 * taken; *@p retry_after, when not NULL, is the wait in nanoseconds after which the same
 * request would succeed if nobody else took tokens meanwhile); BAND_E2BIG (@p n > burst: it
 * can never succeed); BAND_ECLOSED; BAND_EINVAL (NULL @p r, @p n 0); BAND_EOVERFLOW (the bucket
 * would be full again only after INT64_MAX; nothing taken). *@p retry_after is 0 for every
 * answer but BAND_EAGAIN. MT-safe and, for settings whose state fits the bucket's word,
 * lock-free while no other call on @p r holds its mutex; between threads it may apply a
 * clock reading slightly older than another thread's, which only grants less and reports
 * a longer retry-after.
 *
 * @param r                 The bucket; must not be NULL.
 * @param n                 Tokens to take, 1 to the burst.
 * @param[out] retry_after  Receives the wait in nanoseconds after BAND_EAGAIN (0 for every
 *                          other answer), or NULL.
 * @return 0, BAND_EAGAIN, BAND_E2BIG, BAND_ECLOSED, BAND_EINVAL or BAND_EOVERFLOW as
 *         described above.
 */
BAND_API int band_rate_try_acquire(band_rate *r, uint64_t n, band_time *retry_after);

/** @brief A booked slot: a value with one owner. Initialise with BAND_RATE_TICKET_INIT. */
typedef struct band_rate_ticket {
    band_rate *rate; /**< the bucket booked, NULL when empty */
    band_time at;    /**< when the booked work may start (clock of the bucket) */
    /** @privatesection */
    uint64_t _n; /* private: its tokens */
} band_rate_ticket;

/** @brief The initialiser of an empty band_rate_ticket. */
#define BAND_RATE_TICKET_INIT                                                                      \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }

/**
 * @brief Book @p n tokens at the earliest slot; the async form of band_rate_acquire().
 *
 * It never waits and never queues a waiter.
 *
 * On 0 the tokens are taken and *@p t says when the work may start (t->at; *@p delay, when not
 * NULL, is t->at - now, 0 when it may start at once). The ticket is the caller's: it ends
 * when its slot comes (nothing to do) or with band_rate_ticket_cancel(). An event loop
 * arms its own timer for
 * the delay. BAND_ETIMEDOUT: the slot lies in the future and after @p deadline; nothing is
 * booked and *@p delay is the retry-after the request would have needed. Tokens that are in
 * the bucket now are taken whatever the deadline, so a deadline at or before now means
 * "only if it can start now". BAND_EOVERFLOW: the bucket would be full again only after
 * INT64_MAX, or more than INT64_MAX ns from now; nothing is booked. Also BAND_E2BIG,
 * BAND_ECLOSED, BAND_EINVAL (NULL @p r or @p t, @p n 0, @p t not empty); on every error @p t stays
 * empty. MT-safe.
 *
 * @param r           The bucket; must not be NULL.
 * @param n           Tokens to book, 1 to the burst.
 * @param[out] t      An empty ticket (BAND_RATE_TICKET_INIT) that receives the booking on
 *                    0; it stays empty on every error.
 * @param[out] delay  Receives t->at - now on 0, the retry-after on BAND_ETIMEDOUT; or NULL.
 * @param deadline    The latest start, on the bucket's clock, the caller accepts.
 * @return 0, BAND_ETIMEDOUT, BAND_EOVERFLOW, BAND_E2BIG, BAND_ECLOSED or BAND_EINVAL as
 *         described above.
 */
BAND_API int band_rate_reserve(band_rate *r, uint64_t n, band_rate_ticket *t, band_time *delay,
                               band_time deadline);

/**
 * @brief Give a booking that is not due yet back.
 *
 * Returns 0 (its tokens are returned: later bookings may start earlier; @p t is emptied),
 * BAND_EALREADY (it is due: the work may start, the tokens stay spent; @p t is emptied), or
 * BAND_EINVAL (NULL or empty @p t). The tokens go back as tokens, never more than fills the
 * bucket: after band_rate_set(), a booking made before it returns its tokens at the
 * current rate. "Due" is judged on the bucket's time (see the clock hook). MT-safe against
 * calls on the bucket; one owner per ticket.
 *
 * @param t  The ticket band_rate_reserve() filled; its bucket must still exist.
 * @return 0, BAND_EALREADY or BAND_EINVAL as described above.
 */
BAND_API int band_rate_ticket_cancel(band_rate_ticket *t);

/**
 * @brief Take @p n tokens, sleeping until their slot if needed (this thread).
 *
 * A request whose slot lies in the future and after @p deadline is refused at once with
 * BAND_ETIMEDOUT, takes nothing, and stores the retry-after in *@p retry_after (when not
 * NULL); with a deadline at or before now it succeeds, without sleeping, exactly when the
 * tokens are in the bucket now. Returns 0 once the slot has come; also BAND_E2BIG,
 * BAND_ECLOSED, BAND_EOVERFLOW, BAND_EINVAL (as band_rate_reserve(), or a custom clock
 * without a sleep hook). A close while sleeping does not cut the sleep short: the booking
 * stands.
 *
 * @p cancel (NULL for none): when it is requested the call stops waiting and returns
 * BAND_ECANCELED (a booking made before the request is returned); a token requested
 * before the call means "do not wait", as a past deadline does (band/cancel.h). MT-safe.
 *
 * @param r                 The bucket; must not be NULL.
 * @param n                 Tokens to take, 1 to the burst.
 * @param[out] retry_after  Receives the retry-after on BAND_ETIMEDOUT, or NULL.
 * @param deadline          The latest start, on the bucket's clock, the caller accepts.
 * @param cancel            Cancellation token, or NULL for none.
 * @return 0, BAND_ETIMEDOUT, BAND_ECANCELED, BAND_E2BIG, BAND_ECLOSED, BAND_EOVERFLOW or
 *         BAND_EINVAL as described above.
 */
BAND_API int band_rate_acquire(band_rate *r, uint64_t n, band_time *retry_after, band_time deadline,
                               band_cancel *cancel);

/**
 * @brief Whole tokens in the bucket now.
 *
 * MT-safe.
 *
 * @param r  The bucket, or NULL.
 * @return The whole tokens available now, 0 for NULL.
 */
BAND_API uint64_t band_rate_available(const band_rate *r);

/**
 * @brief Refuse every later request with BAND_ECLOSED; bookings stand and can still be
 *        cancelled.
 *
 * A second close changes nothing. Returns 0 or BAND_EINVAL (NULL). MT-safe.
 *
 * @param r  The bucket; must not be NULL.
 * @return 0, or BAND_EINVAL for NULL.
 */
BAND_API int band_rate_close(band_rate *r);

/**
 * @brief Whether band_rate_close() was called.
 *
 * MT-safe.
 *
 * @param r  The bucket, or NULL.
 * @return 1 once band_rate_close() was called, 0 otherwise (0 for NULL).
 */
BAND_API int band_rate_is_closed(const band_rate *r);

/** @brief Counters; see band_rate_get_stats(). */
typedef struct band_rate_stats {
    char name[BAND_NAME_MAX]; /**< "" when unnamed */
    /** the current settings: tokens per period */
    uint64_t tokens, burst;    /**< the current settings: the burst */
    band_time period;          /**< the current settings: the period in nanoseconds */
    uint64_t available;        /**< whole tokens in the bucket now */
    uint64_t granted;          /**< requests that took tokens (try_acquire, reserve, acquire) */
    uint64_t granted_tokens;   /**< their tokens, cancelled bookings excluded; saturates at
                                  UINT64_MAX (and then stays there) instead of wrapping */
    uint64_t delayed;          /**< bookings that had to wait for their slot */
    uint64_t refused_rate;     /**< try_acquire refused: BAND_EAGAIN */
    uint64_t refused_deadline; /**< reserve/acquire refused at once: BAND_ETIMEDOUT */
    uint64_t refused_too_big;  /**< BAND_E2BIG */
    uint64_t refused_closed;   /**< BAND_ECLOSED */
    uint64_t cancelled;        /**< bookings given back before they were due */
    int closed;                /**< 1 after band_rate_close() */
} band_rate_stats;

/**
 * @brief A snapshot, taken under the bucket's mutex (a try_acquire that has updated the
 *        bucket but not yet its counts may be missing from it).
 *
 * MT-safe.
 *
 * @param r         The bucket; must not be NULL.
 * @param[out] out  Receives the snapshot; must not be NULL.
 * @return 0 or BAND_EINVAL (NULL argument).
 */
BAND_API int band_rate_get_stats(const band_rate *r, band_rate_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* BAND_RATE_H */
