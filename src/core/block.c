/*
 * block.c - blocking waits built from a waiter and a parker.
 */
#include "core/block.h"

static void blocker_wake(band_waiter *w)
{
    struct band__blocker *b = band__container_of(w, struct band__blocker, w);
    band__parker_unpark(&b->parker);
}

void band__blocker_init(struct band__blocker *b)
{
    band_waiter_init(&b->w, blocker_wake, NULL);
    band__parker_init(&b->parker);
}

void band__blocker_done(struct band__blocker *b)
{
    band__parker_destroy(&b->parker);
}

int band__park_until(band_waiter *w, struct band__parker *p, band_time deadline)
{
    if (band__parker_park(p, deadline) != 0 && band_waiter_cancel(w, BAND_ETIMEDOUT) != 0) {
        /* The operation completed while we were timing out: its wake is imminent. */
        (void)band__parker_park(p, BAND_FOREVER);
    }
    return band_waiter_status(w);
}

int band__blocker_wait(struct band__blocker *b, band_time deadline)
{
    int rc = band__park_until(&b->w, &b->parker, deadline);
    band__blocker_done(b);
    return rc;
}
