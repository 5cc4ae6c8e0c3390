/* SPDX-License-Identifier: MIT */
/*
 * time.c - monotonic time and absolute deadlines.
 */
#include <time.h>

#include "core/internal.h"

band_time band_now(void)
{
    struct timespec ts;
    /* CLOCK_MONOTONIC cannot fail with a valid pointer on any platform band supports. */
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (band_time)ts.tv_sec * BAND_SEC + (band_time)ts.tv_nsec;
}

band_time band_deadline_after(band_time ns)
{
    band_time now = band_now();
    if (ns > 0 && now > BAND_FOREVER - ns)
        return BAND_FOREVER;
    return now + ns;
}
