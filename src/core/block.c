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

int band__blocker_wait(struct band__blocker *b, band_time deadline)
{
    if (band__parker_park(&b->parker, deadline) != 0 &&
        band_waiter_cancel(&b->w, BAND_ETIMEDOUT) != 0) {
        /* The operation completed while we were timing out: its wake is imminent. */
        (void)band__parker_park(&b->parker, BAND_FOREVER);
    }
    band__blocker_done(b);
    return band_waiter_status(&b->w);
}
