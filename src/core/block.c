/* SPDX-License-Identifier: MIT */
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

static void interrupt_parker(band_cancel_hook *h)
{
    band__parker_interrupt(h->data);
}

int band__block(band_waiter *w, struct band__parker *p, band_time deadline, band_cancel *cancel)
{
    band_cancel_hook hook;
    int hooked = 0;
    int rc;
    if (cancel != NULL) {
        band_cancel_hook_init(&hook, interrupt_parker, p);
        rc = band_cancel_hook_add(cancel, &hook);
        hooked = rc == 0;
        if (rc != 0)
            goto withdraw; /* requested before we could listen */
    }
    rc = band__parker_park(p, deadline);
    if (rc == 0)
        goto done;
withdraw:
    if (band_waiter_cancel(w, rc) != 0) {
        /* The operation completed while we were withdrawing it: its wake is imminent.
         * The token's hook fires at most once, so this park ends with the wake. */
        while (band__parker_park(p, BAND_FOREVER) != 0)
            ;
    }
done:
    if (hooked)
        (void)band_cancel_hook_remove(&hook);
    return band_waiter_status(w);
}

int band__sleep_until(band_time until, band_cancel *cancel)
{
    struct band__parker p;
    band__parker_init(&p);
    band_cancel_hook hook;
    band_cancel_hook_init(&hook, interrupt_parker, &p);
    int rc = cancel != NULL ? band_cancel_hook_add(cancel, &hook) : 0;
    int hooked = cancel != NULL && rc == 0;
    while (rc == 0) {
        rc = band__parker_park(&p, until);
        if (rc == BAND_ETIMEDOUT) {
            rc = 0;
            break;
        }
    }
    if (hooked)
        (void)band_cancel_hook_remove(&hook);
    band__parker_destroy(&p);
    return rc;
}

int band__park_until(band_waiter *w, struct band__parker *p, band_time deadline)
{
    return band__block(w, p, deadline, NULL);
}

int band__blocker_wait_cancel(struct band__blocker *b, band_time deadline, band_cancel *cancel)
{
    int rc = band__block(&b->w, &b->parker, deadline, cancel);
    band__blocker_done(b);
    return rc;
}

int band__blocker_wait(struct band__blocker *b, band_time deadline)
{
    return band__blocker_wait_cancel(b, deadline, NULL);
}
