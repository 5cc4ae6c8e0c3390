/* SPDX-License-Identifier: MIT */
/**
 * @file band/answer.h
 * @brief Turning band's results into the answer a server gives.
 *
 * Overload is a product contract: a request that cannot be served now gets a fast,
 * honest answer (busy, over quota, accepted for later, shed), decided before any
 * expensive allocation or side effect, never an unbounded wait. band_answer_from() maps
 * one result of a band call (0, BAND_EAGAIN, BAND_ETIMEDOUT, BAND_E2BIG, BAND_ECLOSED, ...)
 * and the bound it came from to an answer with its HTTP status and a Retry-After. The
 * front door (band/front_door.h) gives one of these answers to every request it decides.
 *
 * An answer is a plain value: every function here is pure and MT-safe.
 */
#ifndef BAND_ANSWER_H
#define BAND_ANSWER_H

#include "band/core.h"
#include "band/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief What the server answers. */
enum band_answer_kind {
    BAND_ANSWER_ACCEPT = 0,     /**< do the work now (HTTP: proceed) */
    BAND_ANSWER_LATER = 1,      /**< accepted for later: queued in the backlog (202) */
    BAND_ANSWER_BUSY = 2,       /**< no capacity now (503, Retry-After) */
    BAND_ANSWER_OVER_QUOTA = 3, /**< the rate budget refused (429, Retry-After) */
    BAND_ANSWER_SHED = 4,       /**< shed by priority to keep room for urgent work (503) */
    BAND_ANSWER_TOO_BIG = 5,    /**< can never fit (413) */
    BAND_ANSWER_GONE = 6,       /**< closed or shutting down (503, no Retry-After) */
};
/** @brief The number of answer kinds: every enum band_answer_kind is below it. */
#define BAND_ANSWER_KINDS 7

/** @brief Which bound a result came from (it decides 429 versus 503). */
enum band_answer_source {
    BAND_ANSWER_FROM_CAPACITY = 0, /**< a semaphore, budget or admission */
    BAND_ANSWER_FROM_RATE = 1,     /**< a rate budget */
    BAND_ANSWER_FROM_QUEUE = 2,    /**< a channel or backlog */
};

/** @brief An answer: a value the caller owns. */
typedef struct band_answer {
    int kind;              /**< enum band_answer_kind */
    int http_status;       /**< 200, 202, 503, 429, 413 */
    band_time retry_after; /**< nanoseconds; 0 when there is nothing to suggest */
    int reason;            /**< the band result it came from (0 when accepted) */
} band_answer;

/**
 * @brief The answer for result @p rc of a call on a bound of kind @p source, with
 *        @p retry_after as that bound estimated it.
 *
 * 0 → ACCEPT; BAND_EAGAIN / BAND_ETIMEDOUT → OVER_QUOTA from a rate budget, BUSY otherwise;
 * BAND_E2BIG → TOO_BIG; BAND_ECLOSED / BAND_ECANCELED → GONE; any other code → BUSY with
 * that reason. A negative @p retry_after counts as 0; ACCEPT, TOO_BIG and GONE carry none.
 * Returns the answer, never a code. Pure and MT-safe.
 *
 * @param rc           The result of the band call: 0 or any band code; a code this
 *                     function does not list gives BUSY. It becomes the answer's reason.
 * @param source       The bound it came from, an enum band_answer_source; any value but
 *                     BAND_ANSWER_FROM_RATE counts as a capacity bound.
 * @param retry_after  When a retry may succeed, in nanoseconds, as the bound estimated it
 *                     (0 for no estimate; negative counts as 0).
 * @return The answer (a value), never a code.
 */
BAND_API band_answer band_answer_from(int rc, int source, band_time retry_after);

/**
 * @brief Retry-After in whole seconds.
 *
 * Rounded up and capped at UINT32_MAX; at least 1 for BUSY, OVER_QUOTA and SHED; 0
 * otherwise (and for NULL). Pure and MT-safe.
 *
 * @param a  The answer; NULL is allowed (gives 0).
 * @return The seconds to send in a Retry-After header, 0 for none.
 */
BAND_API uint32_t band_answer_retry_after_s(const band_answer *a);

/**
 * @brief The name of an answer kind.
 *
 * "accept", "later", "busy", "over_quota", "shed", "too_big", "gone", or "?" for an
 * unknown kind. Static string. Pure and MT-safe.
 *
 * @param kind  An enum band_answer_kind; any other value gives "?".
 * @return A static string; never NULL, never to be freed.
 */
BAND_API const char *band_answer_name(int kind);

#ifdef __cplusplus
}
#endif
#endif /* BAND_ANSWER_H */
