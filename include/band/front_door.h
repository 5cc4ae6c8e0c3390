/* SPDX-License-Identifier: MIT */
/**
 * @file band/front_door.h
 * @brief The front door: every request gets an overload answer before its work starts.
 *
 * A band_front_door sits in front of an optional concurrency semaphore, an optional rate
 * budget and an optional backlog channel. It sheds lower-priority work first (each class
 * keeps headroom for the more urgent classes; class 0 is the most urgent), takes the
 * permit and the tokens only when both are there, queues for later when a backlog has
 * room, and counts every answer by kind and class. Every outcome is a band_answer
 * (band/answer.h): accept, later, busy, over quota, shed, too big or gone.
 *
 * Every function is MT-safe.
 */
#ifndef BAND_FRONT_DOOR_H
#define BAND_FRONT_DOOR_H

#include "band/answer.h"
#include "band/cancel.h"
#include "band/chan.h"
#include "band/core.h"
#include "band/error.h"
#include "band/permit.h"
#include "band/rate.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief The most priority classes a front door can have. */
#define BAND_FRONT_DOOR_CLASSES 8

/** @brief A front door (opaque): created with band_front_door_create(). */
typedef struct band_front_door band_front_door;
struct band_histo;

/**
 * @brief Options; NULL or a zero-initialised struct is a door with no bounds and one class.
 *
 * Every bound is optional and is not owned by the door (it must outlive the door).
 */
typedef struct band_front_door_opts {
    band_sem *sem;      /**< concurrency: a request takes `n` permits */
    band_rate *rate;    /**< rate: a request takes `n` tokens */
    band_chan *backlog; /**< accepted-for-later: band_front_door_admit()'s `job` goes here when
                           the semaphore has no room (try_send: never waits) */
    int classes;        /**< priority classes, 1..BAND_FRONT_DOOR_CLASSES (0 means 1); class 0
                           is the most urgent */
    /** Class c is shed while fewer than headroom[c] permits would stay available after it;
     * must not decrease with c, at most BAND_MAX_UNITS; headroom[0] is usually 0. A class
     * with headroom never waits for permits. */
    uint64_t headroom[BAND_FRONT_DOOR_CLASSES];
    band_time wait;          /**< the longest a request of a class without headroom may wait
                                for permits (0: never wait) */
    struct band_histo *hold; /**< optional, the caller's: band_front_door_done() records each
                                hold time (ns) into it (band/histo.h) */
} band_front_door_opts;

/**
 * @brief A front door over the bounds of @p opts (NULL: none).
 *
 * Returns 0 and stores it in *@p out, BAND_EINVAL (NULL @p out, classes out of range, headroom
 * decreasing or above BAND_MAX_UNITS, a negative wait, a backlog without a semaphore), or
 * BAND_ENOMEM; on error *@p out is untouched and nothing is allocated. MT-safe.
 *
 * @param[out] out  Receives the door; must not be NULL. The caller owns it.
 * @param opts      The bounds and classes, or NULL for none; read during the call only
 *                  (the bounds it names are not copied and must outlive the door).
 * @return 0, BAND_EINVAL or BAND_ENOMEM as described above.
 */
BAND_API int band_front_door_create(band_front_door **out, const band_front_door_opts *opts);

/**
 * @brief Free @p d (NULL is a no-op).
 *
 * Returns 0, or BAND_EBUSY while an admission is waiting for permits inside
 * band_front_door_admit() (nothing freed: let it end, for example by closing the
 * semaphore or requesting its cancellation token, then destroy). Permits it handed out
 * stay valid and go back to their semaphore with band_permit_release() once the door is
 * gone. The bounds are the caller's and stay as they are. Nobody may use @p d after it
 * returned 0: not MT-safe with other uses of @p d.
 *
 * @param d  The door, or NULL (a no-op).
 * @return 0, or BAND_EBUSY as described above.
 */
BAND_API int band_front_door_destroy(band_front_door *d);

/**
 * @brief Give @p d a name that band_front_door_get_stats() reports.
 *
 * The name is copied. NULL clears it. Returns 0, or BAND_EINVAL when @p d is NULL or the
 * name does not fit in BAND_NAME_MAX bytes including its NUL (nothing changes). MT-safe.
 *
 * @param d     The door; must not be NULL.
 * @param name  The name, copied; NULL clears it.
 * @return 0, or BAND_EINVAL as described above.
 */
BAND_API int band_front_door_set_name(band_front_door *d, const char *name);

/**
 * @brief Decide one request of @p n units at priority @p cls, cheapest checks first,
 *        before the caller does any expensive work.
 *
 * Order: closed → GONE; a request the door can never admit → TOO_BIG (more than
 * BAND_MAX_UNITS with a semaphore, more than a budget's capacity minus
 * headroom[@p cls], more tokens than the rate budget's burst; no Retry-After, the job is not
 * queued); shedding (class @p cls would leave less than headroom[@p cls], also when the room
 * vanished between the check and the try) → SHED; permits (try; then, for a class without
 * headroom, wait up to opts.wait, capped by @p deadline) and then tokens, both or neither →
 * ACCEPT with the permits in *@p permit; no permits but @p job and a backlog with room → LATER
 * (the element *@p job was sent); otherwise BUSY, OVER_QUOTA or GONE (the semaphore or the
 * rate budget closed, or the door closed while the request waited).
 *
 * Both or neither holds on every path: tokens are taken only once the permits are held,
 * and a rate refusal gives the permits back at once, so a request that is refused (a wait
 * that timed out, a close, a shed, a rate refusal) holds no permit and spent no token.
 * Before waiting, the door reads the rate budget's counters without taking anything: with
 * too few tokens now it answers OVER_QUOTA at once instead of waiting for permits it would
 * have to give back.
 *
 * Returns 0 with *@p ans filled (the kind says what to do; only ACCEPT hands permits over,
 * and they go back with band_front_door_done()), or BAND_EINVAL (NULL @p d/@p ans, @p n 0, @p cls
 * out of range, @p permit NULL while the door has a semaphore or not empty) with *@p ans
 * untouched.
 * Retry-After: a rate budget's exact retry-after for OVER_QUOTA after the permits were
 * taken; for OVER_QUOTA found before a wait, the time for the missing whole tokens to flow
 * in (at most one token interval above the exact figure); for BUSY and SHED, the measured
 * mean hold time × ceil((waiters + @p n) / capacity), saturating at INT64_MAX, or 1 s before
 * any measurement; 0 for TOO_BIG and GONE. The never-fits checks read the semaphore's and
 * the rate budget's counters (each takes its lock briefly) and run only on paths that are
 * refusing or about to wait. MT-safe.
 *
 * @p cancel (NULL for none): when it is requested the call stops waiting and answers GONE
 * with reason BAND_ECANCELED, nothing taken; a token requested before the call means
 * "do not wait", as a past deadline does (band/cancel.h).
 *
 * @param d           The door; must not be NULL.
 * @param cls         The priority class, 0 (the most urgent) to the door's classes - 1.
 * @param n           Permits and tokens the request takes, at least 1.
 * @param job         The element to send to the backlog for a LATER answer (a channel
 *                    element of the backlog's size, copied), or NULL to never queue.
 * @param[out] permit An empty permit that receives the permits on ACCEPT; NULL only for a
 *                    door without a semaphore.
 * @param[out] ans    Receives the answer on 0; must not be NULL.
 * @param deadline    Absolute time on band's clock that caps the wait for permits.
 * @param cancel      Cancellation token, or NULL for none.
 * @return 0 with *@p ans filled, or BAND_EINVAL as described above.
 */
BAND_API int band_front_door_admit(band_front_door *d, int cls, uint64_t n, const void *job,
                                   band_permit *permit, band_answer *ans, band_time deadline,
                                   band_cancel *cancel);

/**
 * @brief The admitted work finished: releases *@p permit (like band_permit_release())
 *        and feeds its hold time into the Retry-After estimate.
 *
 * @p admitted_at is the band_now() of the admission, 0 to skip the measurement. For a door
 * without a semaphore @p permit may be NULL (or empty): done() only measures.
 *
 * Returns 0, BAND_EOVERFLOW as band_permit_release() (the permit keeps its permits), or
 * BAND_EINVAL with nothing changed (nothing released, nothing measured): NULL @p d; a
 * negative @p admitted_at or one after band_now(); for a door with a semaphore, @p permit NULL,
 * empty (a second done() for one admission) or of another semaphore, or holding more
 * permits than the door has handed out and not yet taken back; for a door without one, a
 * non-empty @p permit. MT-safe.
 *
 * @param d            The door; must not be NULL.
 * @param permit       The permit band_front_door_admit() filled; NULL or empty for a door
 *                     without a semaphore. It is empty after 0.
 * @param admitted_at  The band_now() of the admission, 0 to skip the measurement.
 * @return 0, BAND_EOVERFLOW or BAND_EINVAL as described above.
 */
BAND_API int band_front_door_done(band_front_door *d, band_permit *permit, band_time admitted_at);

/**
 * @brief Every later admission answers GONE, and one that is waiting for permits answers
 *        GONE once it gets them (giving them back).
 *
 * The bounds stay open. Returns 0 or BAND_EINVAL (NULL). MT-safe.
 *
 * @param d  The door; must not be NULL.
 * @return 0, or BAND_EINVAL for NULL.
 */
BAND_API int band_front_door_close(band_front_door *d);

/**
 * @brief Whether band_front_door_close() was called.
 *
 * MT-safe.
 *
 * @param d  The door, or NULL.
 * @return 1 once band_front_door_close() was called, 0 otherwise (0 for NULL).
 */
BAND_API int band_front_door_is_closed(const band_front_door *d);

/** @brief Counters; see band_front_door_get_stats(). */
typedef struct band_front_door_stats {
    char name[BAND_NAME_MAX];                   /**< "" when unnamed */
    int closed;                                 /**< 1 after band_front_door_close() */
    uint64_t answers[BAND_ANSWER_KINDS];        /**< by kind: accepted, later, busy, ... */
    uint64_t admitted[BAND_FRONT_DOOR_CLASSES]; /**< ACCEPT by class */
    uint64_t refused[BAND_FRONT_DOOR_CLASSES];  /**< every other answer but LATER, by class */
    uint64_t waited;                            /**< admissions that had to wait for permits */
    band_time mean_hold;                        /**< the hold time estimate (ns; 0: none yet) */
} band_front_door_stats;

/**
 * @brief A snapshot of the counters (relaxed loads: each counter is exact, the set is not
 *        one instant).
 *
 * Returns 0 or BAND_EINVAL (NULL argument). MT-safe.
 *
 * @param d         The door; must not be NULL.
 * @param[out] out  Receives the snapshot; must not be NULL.
 * @return 0, or BAND_EINVAL for a NULL argument.
 */
BAND_API int band_front_door_get_stats(const band_front_door *d, band_front_door_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* BAND_FRONT_DOOR_H */
