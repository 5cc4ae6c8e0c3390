/* SPDX-License-Identifier: MIT */
/*
 * stats.c - band-pipe's counters: budget state times integrated at every change, the
 * peaks, and the time series of samples (stats.h). Loop thread only.
 */
#include "stats.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define STATS_FIRST_SAMPLES 256

int stats_init(struct pipe_stats *s, size_t total, band_time t0)
{
    memset(s, 0, sizeof *s);
    s->samples = calloc(STATS_FIRST_SAMPLES, sizeof *s->samples);
    if (s->samples == NULL) {
        errno = ENOMEM;
        return -1;
    }
    s->samples_cap = STATS_FIRST_SAMPLES;
    s->t0 = t0;
    s->total = total;
    for (int b = 0; b < BUDGET_COUNT; b++) {
        s->budget[b].name = pipe_budget_name(b);
        s->budget[b].origin = "";
        s->budget[b].since = t0;
    }
    return 0;
}

void stats_free(struct pipe_stats *s)
{
    if (s == NULL)
        return;
    free(s->samples);
    memset(s, 0, sizeof *s);
}

/* a + b, stopping at 0 and at UINT64_MAX */
static uint64_t add_clamped(uint64_t a, int64_t d)
{
    if (d < 0) {
        uint64_t m = (uint64_t)(-(d + 1)) + 1;
        return m > a ? 0 : a - m;
    }
    uint64_t p = (uint64_t)d;
    return p > UINT64_MAX - a ? UINT64_MAX : a + p;
}

static void integrate(struct stats_budget *bu, band_time now)
{
    if (now <= bu->since)
        return;
    band_time dt = now - bu->since;
    if (bu->waiting > 0)
        bu->t_waiting += dt;
    else if (bu->in_use > 0)
        bu->t_busy += dt;
    else
        bu->t_idle += dt;
    bu->waited += (band_time)bu->waiting * dt;
    if (bu->in_use > 0) {
        /* in_use x dt / 1e6 without overflow (bytes x nanoseconds overflows 64 bits within
         * seconds): whole milliseconds first, then the sub-millisecond rest with its
         * remainder carried to the next interval. */
        uint64_t u = (uint64_t)dt;
        uint64_t ms = u / (uint64_t)BAND_MSEC, rest = u % (uint64_t)BAND_MSEC;
        uint64_t frac = bu->in_use_frac;
        uint64_t whole = bu->in_use * ms;
        /* in_use x rest fits while in_use < 1.8e13 (18 TB or 18 T units) */
        uint64_t part = bu->in_use * rest;
        whole += part / (uint64_t)BAND_MSEC;
        frac += part % (uint64_t)BAND_MSEC;
        whole += frac / (uint64_t)BAND_MSEC;
        bu->in_use_frac = frac % (uint64_t)BAND_MSEC;
        bu->in_use_integral += (band_time)whole;
    }
    bu->since = now;
}

void stats_budget_change(struct pipe_stats *s, int b, int64_t d_in_use, int64_t d_waiting,
                         band_time now)
{
    if (s == NULL || b < 0 || b >= BUDGET_COUNT)
        return;
    struct stats_budget *bu = &s->budget[b];
    integrate(bu, now);
    bu->in_use = add_clamped(bu->in_use, d_in_use);
    bu->waiting = add_clamped(bu->waiting, d_waiting);
    if (d_in_use > 0)
        bu->acquired++;
    if (bu->in_use > bu->peak_in_use)
        bu->peak_in_use = bu->in_use;
    if (bu->waiting > bu->peak_waiting)
        bu->peak_waiting = bu->waiting;
}

void stats_settle(struct pipe_stats *s, band_time now)
{
    if (s == NULL)
        return;
    for (int b = 0; b < BUDGET_COUNT; b++)
        integrate(&s->budget[b], now);
}

int stats_sample_add(struct pipe_stats *s, const struct stats_sample *row)
{
    if (s->nsamples == s->samples_cap) {
        size_t cap = s->samples_cap ? s->samples_cap * 2 : STATS_FIRST_SAMPLES;
        if (cap < s->samples_cap || cap > SIZE_MAX / sizeof *s->samples) {
            errno = ENOMEM;
            return -1;
        }
        struct stats_sample *p = realloc(s->samples, cap * sizeof *p);
        if (p == NULL) {
            errno = ENOMEM;
            return -1;
        }
        s->samples = p;
        s->samples_cap = cap;
    }
    struct stats_sample *r = &s->samples[s->nsamples++];
    *r = *row;
    r->t = band_now() - s->t0;
    if (row->open_fds > s->peak_fds)
        s->peak_fds = row->open_fds;
    if (row->rss > s->peak_rss)
        s->peak_rss = row->rss;
    return 0;
}
