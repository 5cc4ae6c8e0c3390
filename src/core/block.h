/* SPDX-License-Identifier: MIT */
/*
 * block.h - the blocking front end: a plain thread waits on a band_waiter.
 *
 * Every blocking call (band_sem_acquire(), budget allocation, ...) submits a waiter that
 * lives on its own stack, whose wake unparks the thread, and then calls
 * band__block_wait(). Timeouts are cancels with BAND_ETIMEDOUT, so a grant that races
 * with the deadline is never lost: if the cancel loses, the thread waits for the wake,
 * which is imminent, and returns the grant.
 */
#ifndef BAND_CORE_BLOCK_H
#define BAND_CORE_BLOCK_H

#include <stdbool.h>

#include "core/cancel.h"
#include "core/parker.h"
#include "core/waitq.h"

/* True when @deadline is not BAND_FOREVER and is at or before band_now(). */
static inline bool band__deadline_passed(band_time deadline)
{
    return deadline != BAND_FOREVER && deadline <= band_now();
}

/*
 * Whether a blocking call may wait: 0 when it may, otherwise what it returns when it
 * cannot complete at once: BAND_ECANCELED when @cancel was requested, BAND_ETIMEDOUT when
 * @deadline has passed. Every blocking front end asks this one question the same way.
 */
static inline int band__wait_refusal(band_time deadline, const band_cancel *cancel)
{
    if (band_cancel_is_requested(cancel))
        return BAND_ECANCELED;
    return band__deadline_passed(deadline) ? BAND_ETIMEDOUT : 0;
}

/*
 * The one blocking wait. @w is queued (its submit returned BAND_PENDING) and its wake
 * unparks @p. Waits for the wake; at @deadline cancels @w with BAND_ETIMEDOUT, and when
 * @cancel (may be NULL) is requested cancels it with BAND_ECANCELED. When such a cancel
 * loses to a completion, waits for the imminent wake and returns the completion's result,
 * so nothing granted is ever lost. Returns @w's status. Does not destroy @p.
 */
int band__block(band_waiter *w, struct band__parker *p, band_time deadline, band_cancel *cancel);

struct band__blocker {
    band_waiter w;
    struct band__parker parker;
};

/* Prepare @b; its waiter is ready to submit. */
void band__blocker_init(struct band__blocker *b);

/*
 * Wait for the operation submitted with @b->w (which returned BAND_PENDING) to end, or
 * cancel it at @deadline. Returns its status: 0, or a negative code (BAND_ETIMEDOUT when
 * the cancel won). Releases @b's resources.
 */
int band__blocker_wait(struct band__blocker *b, band_time deadline);

/* band__blocker_wait() that also ends with BAND_ECANCELED when @cancel is requested. */
int band__blocker_wait_cancel(struct band__blocker *b, band_time deadline, band_cancel *cancel);

/* Release @b's resources when its waiter was never queued. */
void band__blocker_done(struct band__blocker *b);

/*
 * Sleep until @until (CLOCK_MONOTONIC) or until @cancel (may be NULL) is requested.
 * Returns 0 once @until has passed, BAND_ECANCELED when cancelled first.
 */
int band__sleep_until(band_time until, band_cancel *cancel);

/* band__block() without a cancellation token. */
int band__park_until(band_waiter *w, struct band__parker *p, band_time deadline);

#endif /* BAND_CORE_BLOCK_H */
