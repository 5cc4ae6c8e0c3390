/* SPDX-License-Identifier: MIT */
/*
 * summary.h - the end-of-run summary and the verdict that reads the symptoms back to the
 * bound responsible: which budget bound the run, or that nothing did, or that descriptors
 * climbed. Loop thread (it reads struct pipe_stats and the tiles); call stats_settle()
 * first so the state times are closed.
 */
#ifndef PIPE_SUMMARY_H
#define PIPE_SUMMARY_H

#include <stddef.h>
#include <stdio.h>

#include "stats.h"
#include "tile.h"

/* A budget binds when tiles waited for it at least this share of the run... */
#define SUMMARY_BOTTLENECK_SHARE 0.5
/* ...and nothing binds when no budget had tiles waiting more than this share. */
#define SUMMARY_IDLE_SHARE 0.2
/* Descriptors climb when the peak reaches this share of the descriptor budget's fds. */
#define SUMMARY_FDS_NEAR_SHARE 0.8

enum summary_verdict_code {
    VERDICT_NO_DATA = 0,      /* no budget has any time integrated: nothing to read */
    VERDICT_BOTTLENECK = 1,   /* one budget had tiles waiting most of the run (the most) */
    VERDICT_OUTSIDE = 2,      /* every budget below its limit while tiles were in flight:
                                 something outside the budgets serialises */
    VERDICT_FDS_CLIMBING = 3, /* open descriptors kept rising to the descriptor budget */
    VERDICT_MIXED = 4,        /* some waiting, none most of the run: near balance */
    VERDICT_UNDERLOADED = 5,  /* nothing waited and every stage had room for every tile */
};

/* Write the verdict sentence into @buf (always NUL-terminated when @len > 0; cut to fit)
 * and return its code. The rules, in order:
 *  1. VERDICT_FDS_CLIMBING: over the last third of the samples with a known descriptor
 *     count (at least 9 samples in all), the count ends higher than it began and rose at
 *     least 4 times as often as it fell, and the peak (samples and peak_fds) reaches
 *     SUMMARY_FDS_NEAR_SHARE of fd_budget (2 per descriptor unit when fd_budget is 0):
 *     "descriptors climbing: the unit bound is missing or too high ...".
 *  2. VERDICT_BOTTLENECK: the budget other than descriptors with the highest waiting share
 *     (t_waiting over its time integrated), when that share is >= SUMMARY_BOTTLENECK_SHARE:
 *     "<name> is the bottleneck: it was at its limit N% of the run while tiles waited for
 *     it - raise it or shard".
 *  3. When no budget but descriptors had a waiting share above SUMMARY_IDLE_SHARE:
 *     - descriptors waited >= SUMMARY_BOTTLENECK_SHARE and the tiles holding descriptor
 *       units spent at least half that time inside a stage or waiting for a budget (the
 *       integrals of connections, cpu and disk in use plus every other budget's waited,
 *       against the descriptors' in-use integral; assumed when that integral is 0):
 *       VERDICT_BOTTLENECK for descriptors;
 *     - descriptors waited less and the input had no more tiles than the smallest of the
 *       connections, cpu and disk limits: VERDICT_UNDERLOADED;
 *     - otherwise VERDICT_OUTSIDE: "every budget was below its limit: something outside the
 *       budgets serialises (look for a blocking call on the loop)".
 *  4. Otherwise VERDICT_MIXED (the budget waited for most, and its share).
 * VERDICT_NO_DATA when no budget has time integrated. Descriptors are a candidate only in
 * rule 3 because tiles wait for descriptor units whenever any later bound binds. */
int summary_verdict(const struct pipe_stats *s, char *buf, size_t len);

/* Print the summary on @out: tiles done / skipped / failed with the failures by reason and
 * one line per failed tile (name, reason, detail); when interrupted, how many were
 * abandoned and pending and exactly which completed (input positions, as ranges) and which
 * were abandoned; throughput (tiles/s, MB/s in and out); peak RSS (the larger of the
 * samples' and the process's VmHWM); peak open descriptors; peak reserved bytes against the
 * memory budget; peak allocated bytes (with --memory-by-count: its factor over the byte
 * budget); 429/503 answers and how many came after the first Retry-After; a table per
 * budget (limit and origin, peak in use, mean utilisation, shares of time waiting / busy /
 * idle, total waited); then the verdict. The counts come from @tiles when @n > 0, else from
 * @s's counters. The duration is t_end - t0 (band_now() - t0 while t_end is 0).
 * Returns 0, or -1 when writing to @out failed. */
int summary_print(FILE *out, const struct pipe_stats *s, const struct tile *tiles, size_t n);

#endif /* PIPE_SUMMARY_H */
