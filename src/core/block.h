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

#include "core/parker.h"
#include "core/waitq.h"

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

/* Release @b's resources when its waiter was never queued. */
void band__blocker_done(struct band__blocker *b);

/*
 * The wait behind band__blocker_wait(), for primitives whose blocking calls need a larger
 * op struct: @w (queued, BAND_PENDING) has a wake that unparks @p. Waits for the wake, or
 * cancels @w at @deadline; if the cancel loses, waits for the imminent wake. Returns @w's
 * status. Does not destroy @p.
 */
int band__park_until(band_waiter *w, struct band__parker *p, band_time deadline);

#endif /* BAND_CORE_BLOCK_H */
