/* SPDX-License-Identifier: MIT */
/*
 * stats.h - what the pipeline counts while it runs, for the progress line, the summary,
 * the plot and the verdict.
 *
 * Everything here is written and read on the loop thread only (workers report back to the
 * loop before anything is counted), so nothing is atomic. Time shares are integrated at
 * every change, not sampled: stats_budget_change() closes the interval since the last
 * change in the budget's current state before applying the change.
 *
 * A budget's state at any instant is exactly one of:
 *   waiting  - at least one tile waits for it (demand exceeds the budget: it binds),
 *   busy     - nobody waits and at least one unit is in use,
 *   idle     - nothing in use and nobody waiting.
 */
#ifndef PIPE_STATS_H
#define PIPE_STATS_H

#include <stddef.h>
#include <stdint.h>

#include <band/band.h>

#include "tile.h"

struct stats_budget {
    const char *name;   /* pipe_budget_name() */
    const char *origin; /* where its size came from ("RLIMIT_NOFILE 1024 - 16 reserved, / 2") */
    uint64_t limit;     /* its size now (connections move with --connections auto; requests:
                           requests per second, 0 = unlimited) */
    uint64_t in_use;    /* units held now (memory: bytes reserved; requests: unused) */
    uint64_t waiting;   /* tiles waiting for it now */
    uint64_t peak_in_use;
    uint64_t peak_waiting;
    uint64_t acquired;                   /* grants so far */
    band_time waited;                    /* total time tiles waited for it */
    band_time t_waiting, t_busy, t_idle; /* time in each state since the run began */
    band_time in_use_integral;           /* integral of in_use over time, in unit-nanoseconds / 1e6
                                            (unit-milliseconds), for the mean utilisation */
    band_time since;                     /* when the current state began */
    uint64_t in_use_frac;                /* the integral's remainder below one unit-millisecond, in
                                            unit-nanoseconds (kept so short intervals are not lost) */
};

/* One row of the time series, taken every STATS_SAMPLE_NS by the loop's timer. */
struct stats_sample {
    band_time t;                   /* since the run began */
    uint64_t in_use[BUDGET_COUNT]; /* as stats_budget.in_use */
    uint64_t limit[BUDGET_COUNT];  /* as stats_budget.limit */
    uint64_t stage_in_flight[STAGE_COUNT];
    uint64_t done;       /* tiles finished so far (any result) */
    double request_rate; /* requests started per second over the last second */
    uint64_t open_fds;   /* entries of /proc/self/fd, 0 when unknown */
    uint64_t rss;        /* resident set size in bytes, 0 when unknown */
    uint64_t allocated;  /* as pipe_stats.allocated */
};

#define STATS_SAMPLE_NS (100 * BAND_MSEC)

struct pipe_stats {
    char requests_origin[200]; /* where the request rate came from once the server set it
                                  (budget[BUDGET_REQUESTS].origin points here then) */
    band_time t0;              /* band_now() when the run began */
    band_time t_end;           /* when it ended (0 while running) */
    size_t total;              /* tiles in the input */
    size_t done, failed, skipped, abandoned, pending;
    size_t failed_by_reason[REASON_COUNT];
    uint64_t bytes_in;                          /* body bytes fetched */
    uint64_t bytes_out;                         /* output bytes written */
    uint64_t requests;                          /* HTTP requests started (retries included) */
    uint64_t throttled;                         /* 429/503 answers received */
    uint64_t throttled_after_first_retry_after; /* 429/503 received for a request started
                                                   after the first Retry-After was seen */
    band_time first_retry_after;                /* when the first Retry-After arrived, 0: never */
    uint64_t stage_in_flight[STAGE_COUNT];      /* tiles inside each stage now */
    uint64_t stage_peak[STAGE_COUNT];
    struct stats_budget budget[BUDGET_COUNT];
    uint64_t memory_by_count; /* --memory-by-count: the count semaphore's slots, else 0 */
    uint64_t memory_bytes;    /* the memory budget in bytes (--memory or sized), also with
                                 --memory-by-count, where budget[BUDGET_MEMORY].limit is the
                                 slot count; 0: take budget[BUDGET_MEMORY].limit */
    uint64_t peak_reserved;   /* peak bytes reserved from the memory budget */
    uint64_t peak_allocated;  /* peak bytes really held in tile buffers (bodies, rasters):
                                 with --memory-by-count this overshoots the byte budget */
    uint64_t allocated;       /* bytes held in tile buffers now */
    uint64_t peak_fds, peak_rss;
    uint64_t fd_budget; /* open descriptors the descriptor budget stands for in all
                           (what --verify checks), 0: unknown (then 2 per unit) */
    int interrupted;    /* 0, 1 (stopped admitting) or 2 (abandoned in-flight tiles) */

    struct stats_sample *samples; /* the time series; grows by doubling */
    size_t nsamples, samples_cap;
};

/* Set up @s for @total tiles at time @t0 (zeroes it; names the budgets; every budget's
 * state begins, idle, at @t0; origin is "" until the caller sets it). Reserves room for
 * the first samples. 0, or -1 with errno ENOMEM (then @s is zeroed and holds nothing). */
int stats_init(struct pipe_stats *s, size_t total, band_time t0);
/* Free the samples and zero @s. NULL or a zeroed @s is fine; safe to call twice. */
void stats_free(struct pipe_stats *s);

/* Apply a change to budget @b at @now: @d_in_use units more (negative: fewer) held and
 * @d_waiting tiles more (negative: fewer) waiting. Integrates first, over [since, now) in
 * the state the budget was in: that state's time (t_waiting / t_busy / t_idle), waited
 * (+= waiting x dt: the caller must not add tiles' waits to it) and in_use_integral
 * (+= in_use x dt, in unit-milliseconds, exact across calls). Then applies the change,
 * counts a grant (acquired) when @d_in_use > 0, and keeps peak_in_use and peak_waiting.
 * A @now before `since` integrates nothing (the clock is monotonic: a caller bug). A change
 * that would take in_use or waiting below zero is a caller bug: it stops at 0. A @b out of
 * range is ignored. */
void stats_budget_change(struct pipe_stats *s, int b, int64_t d_in_use, int64_t d_waiting,
                         band_time now);

/* Close the state intervals of every budget at @now (call before reading the shares):
 * the same integration as stats_budget_change() with no change. */
void stats_settle(struct pipe_stats *s, band_time now);

/* Append a time-series row (the caller fills everything but t, which becomes
 * band_now() - t0). Raises peak_fds and peak_rss to the row's open_fds and rss. The array
 * grows by doubling. 0, or -1 with errno ENOMEM (nothing appended, the earlier rows kept). */
int stats_sample_add(struct pipe_stats *s, const struct stats_sample *row);

#endif /* PIPE_STATS_H */
