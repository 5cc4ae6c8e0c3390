/* SPDX-License-Identifier: MIT */
/*
 * latch.c - the latch: a wait group whose count is fixed at creation and only goes down.
 *
 * Design notes
 * ------------
 * A latch is a band_group that nobody can add() to. Its count starts at the creation
 * value and every count-down is a band_group_done_n(), so once it reaches 0 it stays
 * there: the latch is open for good. Waits, cancels, wake rules and counters are the
 * group's (group.c explains them); the latch only hides add() and reports the group's
 * counters in its own stats type.
 */
#include <stdlib.h>

#include "band/group.h"
#include "band/latch.h"
#include "core/internal.h"

struct band_latch {
    band_group *g;
};

int band_latch_create(band_latch **out, uint64_t count)
{
    if (out == NULL)
        return BAND_EINVAL;
    band_latch *l = malloc(sizeof(*l));
    if (l == NULL)
        return BAND_ENOMEM;
    int rc = band_group_create(&l->g);
    if (rc == 0)
        rc = band_group_add(l->g, count); /* cannot overflow a fresh group */
    if (rc != 0) {
        (void)band_group_destroy(l->g);
        free(l);
        return rc;
    }
    *out = l;
    return 0;
}

int band_latch_destroy(band_latch *l)
{
    if (l == NULL)
        return 0;
    int rc = band_group_destroy(l->g);
    if (rc == 0)
        free(l);
    return rc;
}

int band_latch_count_down(band_latch *l, uint64_t n)
{
    if (l == NULL)
        return BAND_EINVAL;
    return band_group_done_n(l->g, n);
}

int band_latch_try_wait(const band_latch *l)
{
    if (l == NULL)
        return BAND_EINVAL;
    return band_group_count(l->g) == 0 ? 0 : BAND_EAGAIN;
}

int band_latch_wait(band_latch *l, band_time deadline, band_cancel *cancel)
{
    if (l == NULL)
        return BAND_EINVAL;
    return band_group_wait(l->g, deadline, cancel);
}

int band_latch_wait_async(band_latch *l, band_waiter *w)
{
    if (l == NULL)
        return BAND_EINVAL;
    return band_group_wait_async(l->g, w);
}

int band_latch_arrive_and_wait(band_latch *l, uint64_t n, band_time deadline, band_cancel *cancel)
{
    int rc = band_latch_count_down(l, n);
    if (rc != 0)
        return rc;
    return band_group_wait(l->g, deadline, cancel);
}

uint64_t band_latch_count(const band_latch *l)
{
    if (l == NULL)
        return 0;
    return band_group_count(l->g);
}

int band_latch_get_stats(const band_latch *l, band_latch_stats *out)
{
    if (l == NULL || out == NULL)
        return BAND_EINVAL;
    band_group_stats gs;
    int rc = band_group_get_stats(l->g, &gs);
    if (rc != 0)
        return rc;
    out->count = gs.count;
    out->waiters = gs.waiters;
    out->queued = gs.queued;
    out->released = gs.released;
    out->timeouts = gs.timeouts;
    out->cancels = gs.cancels;
    out->opened = gs.zeroes; /* the count reaches 0 once: a latch never goes back up */
    out->misuse = gs.misuse;
    return 0;
}
