/* SPDX-License-Identifier: MIT */
/*
 * summary.c - the end-of-run summary and the verdict (summary.h).
 */
#include "summary.h"

#include <string.h>

#include "procfs.h"
#include "progress.h"

#define BOTTLENECK_FMT                                                                             \
    "%s is the bottleneck: it was at its limit %d%% of the run while tiles waited for it - "       \
    "raise it or shard"

static band_time state_time(const struct stats_budget *b)
{
    return b->t_waiting + b->t_busy + b->t_idle;
}

static double share(band_time part, band_time whole)
{
    return whole > 0 ? (double)part / (double)whole : 0.0;
}

static int percent(double x)
{
    return (int)(x * 100.0 + 0.5);
}

static int fds_climbing(const struct pipe_stats *s, uint64_t *peak_out, uint64_t *equiv_out)
{
    size_t m = 0;
    uint64_t peak = s->peak_fds;
    for (size_t i = 0; i < s->nsamples; i++) {
        if (s->samples[i].open_fds > 0) {
            m++;
            if (s->samples[i].open_fds > peak)
                peak = s->samples[i].open_fds;
        }
    }
    uint64_t equiv = s->fd_budget ? s->fd_budget : 2 * s->budget[BUDGET_DESCRIPTORS].limit;
    *peak_out = peak;
    *equiv_out = equiv;
    if (m < 9 || equiv == 0)
        return 0;
    size_t from = m - m / 3, k = 0, ups = 0, downs = 0;
    uint64_t first = 0, prev = 0;
    for (size_t i = 0; i < s->nsamples; i++) {
        uint64_t v = s->samples[i].open_fds;
        if (v == 0)
            continue;
        if (k == from)
            first = v;
        else if (k > from)
            ups += v > prev, downs += v < prev;
        prev = v;
        k++;
    }
    return prev > first && ups > 0 && downs * 4 <= ups &&
           (double)peak >= SUMMARY_FDS_NEAR_SHARE * (double)equiv;
}

int summary_verdict(const struct pipe_stats *s, char *buf, size_t len)
{
    char dummy[1];
    if (buf == NULL || len == 0)
        buf = dummy, len = sizeof dummy;

    double w[BUDGET_COUNT];
    int any = 0;
    for (int b = 0; b < BUDGET_COUNT; b++) {
        band_time tot = state_time(&s->budget[b]);
        w[b] = share(s->budget[b].t_waiting, tot);
        any |= tot > 0;
    }
    if (!any) {
        snprintf(buf, len, "no verdict: no budget recorded any time");
        return VERDICT_NO_DATA;
    }

    uint64_t peak, equiv;
    if (fds_climbing(s, &peak, &equiv)) {
        snprintf(buf, len,
                 "descriptors climbing: the unit bound is missing or too high (open "
                 "descriptors kept rising to %llu, the descriptor budget stands for %llu)",
                 (unsigned long long)peak, (unsigned long long)equiv);
        return VERDICT_FDS_CLIMBING;
    }

    int best = -1;
    for (int b = 0; b < BUDGET_COUNT; b++)
        if (b != BUDGET_DESCRIPTORS && (best < 0 || w[b] > w[best]))
            best = b;
    if (w[best] >= SUMMARY_BOTTLENECK_SHARE) {
        snprintf(buf, len, BOTTLENECK_FMT, s->budget[best].name, percent(w[best]));
        return VERDICT_BOTTLENECK;
    }
    if (w[best] <= SUMMARY_IDLE_SHARE) {
        const struct stats_budget *d = &s->budget[BUDGET_DESCRIPTORS];
        if (w[BUDGET_DESCRIPTORS] >= SUMMARY_BOTTLENECK_SHARE) {
            /* Tiles waited for units: were the units' holders at work (the unit bound is
             * too low) or stalled between the stages (something else serialises)? */
            double inside = (double)s->budget[BUDGET_CONNECTIONS].in_use_integral +
                            (double)s->budget[BUDGET_CPU].in_use_integral +
                            (double)s->budget[BUDGET_DISK].in_use_integral;
            for (int b = 0; b < BUDGET_COUNT; b++)
                if (b != BUDGET_DESCRIPTORS)
                    inside += (double)s->budget[b].waited / (double)BAND_MSEC;
            if (d->in_use_integral == 0 || 2.0 * inside >= (double)d->in_use_integral) {
                snprintf(buf, len, BOTTLENECK_FMT, d->name, percent(w[BUDGET_DESCRIPTORS]));
                return VERDICT_BOTTLENECK;
            }
        } else {
            uint64_t room = UINT64_MAX;
            static const int counted[] = {BUDGET_CONNECTIONS, BUDGET_CPU, BUDGET_DISK};
            for (size_t i = 0; i < sizeof counted / sizeof counted[0]; i++)
                if (s->budget[counted[i]].limit > 0 && s->budget[counted[i]].limit < room)
                    room = s->budget[counted[i]].limit;
            if (s->total > 0 && room != UINT64_MAX && (uint64_t)s->total <= room) {
                snprintf(buf, len,
                         "no budget was at its limit: the %zu tiles fit in every stage at "
                         "once (too few to load the pipeline)",
                         s->total);
                return VERDICT_UNDERLOADED;
            }
        }
        snprintf(buf, len,
                 "every budget was below its limit: something outside the budgets "
                 "serialises (look for a blocking call on the loop)");
        return VERDICT_OUTSIDE;
    }
    snprintf(buf, len,
             "no single budget dominates: %s had tiles waiting %d%% of the run, the most "
             "(a bound binds when tiles wait for it most of the run)",
             s->budget[best].name, percent(w[best]));
    return VERDICT_MIXED;
}

/* Print the input positions of the tiles for which @want(result) holds, as ranges. */
static void print_ranges(FILE *out, const char *label, const struct tile *tiles, size_t n,
                         int result_a, int result_b)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        count += tiles[i].result == result_a || tiles[i].result == result_b;
    if (count == 0)
        return;
    fprintf(out, "  %s (%zu, input positions from 0):", label, count);
    int first = 1;
    for (size_t i = 0; i < n;) {
        if (tiles[i].result != result_a && tiles[i].result != result_b) {
            i++;
            continue;
        }
        size_t j = i;
        while (j + 1 < n && (tiles[j + 1].result == result_a || tiles[j + 1].result == result_b) &&
               tiles[j + 1].index == tiles[j].index + 1)
            j++;
        if (j == i)
            fprintf(out, "%s %zu", first ? "" : ",", tiles[i].index);
        else
            fprintf(out, "%s %zu-%zu", first ? "" : ",", tiles[i].index, tiles[j].index);
        first = 0;
        i = j + 1;
    }
    fputc('\n', out);
}

static void fmt_ms(char *buf, size_t len, band_time ns)
{
    double sec = (double)ns / (double)BAND_SEC;
    if (sec >= 1.0)
        snprintf(buf, len, "%.1f s", sec);
    else
        snprintf(buf, len, "%.1f ms", (double)ns / (double)BAND_MSEC);
}

int summary_print(FILE *out, const struct pipe_stats *s, const struct tile *tiles, size_t n)
{
    size_t done = s->done, skipped = s->skipped, failed = s->failed, abandoned = s->abandoned;
    size_t pending = s->pending, total = s->total;
    size_t by_reason[REASON_COUNT];
    memcpy(by_reason, s->failed_by_reason, sizeof by_reason);
    if (tiles != NULL && n > 0) {
        done = skipped = failed = abandoned = pending = 0;
        memset(by_reason, 0, sizeof by_reason);
        for (size_t i = 0; i < n; i++) {
            switch (tiles[i].result) {
            case TILE_DONE:
                done++;
                break;
            case TILE_SKIPPED:
                skipped++;
                break;
            case TILE_FAILED:
                failed++;
                if (tiles[i].reason >= 0 && tiles[i].reason < REASON_COUNT)
                    by_reason[tiles[i].reason]++;
                break;
            case TILE_ABANDONED:
                abandoned++;
                break;
            default:
                pending++;
            }
        }
        total = n;
    }
    band_time end = s->t_end > s->t0 ? s->t_end : band_now();
    band_time dur = end > s->t0 ? end - s->t0 : 0;
    double secs = (double)dur / (double)BAND_SEC;
    char a[16], b[16], c[16];

    fprintf(out, "band-pipe: %zu tiles in %.1f s: %zu done, %zu skipped, %zu failed", total, secs,
            done, skipped, failed);
    if (abandoned + pending > 0)
        fprintf(out, ", %zu abandoned, %zu pending", abandoned, pending);
    fputc('\n', out);
    if (failed > 0) {
        fprintf(out, "  failed by reason:");
        int first = 1;
        for (int r = 0; r < REASON_COUNT; r++)
            if (by_reason[r] > 0) {
                fprintf(out, "%s %s %zu", first ? "" : ",", tile_reason_name(r), by_reason[r]);
                first = 0;
            }
        fputc('\n', out);
        for (size_t i = 0; tiles != NULL && i < n; i++)
            if (tiles[i].result == TILE_FAILED)
                fprintf(out, "  failed: %s  %s  %.*s\n", tiles[i].name ? tiles[i].name : "?",
                        tile_reason_name(tiles[i].reason), (int)sizeof tiles[i].detail,
                        tiles[i].detail);
    }
    if (s->interrupted || abandoned + pending > 0) {
        fprintf(out, "interrupted%s: %zu abandoned, %zu pending\n",
                s->interrupted >= 2   ? " twice (in-flight tiles abandoned)"
                : s->interrupted == 1 ? " (stopped admitting, finished the tiles in flight)"
                                      : "",
                abandoned, pending);
        if (tiles != NULL && n > 0) {
            print_ranges(out, "completed", tiles, n, TILE_DONE, TILE_SKIPPED);
            print_ranges(out, "pending", tiles, n, TILE_PENDING, TILE_PENDING);
            for (size_t i = 0; i < n; i++)
                if (tiles[i].result == TILE_ABANDONED)
                    fprintf(out, "  abandoned: %s\n", tiles[i].name ? tiles[i].name : "?");
        }
    }

    double mb = 1e6;
    fprintf(out, "throughput: %.2f tiles/s, %.2f MB/s in, %.2f MB/s out (%s in, %s out)\n",
            secs > 0 ? (double)(done) / secs : 0.0,
            secs > 0 ? (double)s->bytes_in / mb / secs : 0.0,
            secs > 0 ? (double)s->bytes_out / mb / secs : 0.0,
            progress_human_bytes(a, sizeof a, s->bytes_in),
            progress_human_bytes(b, sizeof b, s->bytes_out));

    uint64_t rss = s->peak_rss, hwm = procfs_peak_rss();
    if (hwm > rss)
        rss = hwm;
    fprintf(out, "peak RSS %s, peak open descriptors %llu", progress_human_bytes(a, sizeof a, rss),
            (unsigned long long)s->peak_fds);
    if (s->fd_budget)
        fprintf(out, " (descriptor budget: %llu)", (unsigned long long)s->fd_budget);
    fputc('\n', out);

    const struct stats_budget *mem = &s->budget[BUDGET_MEMORY];
    /* By count, the budget's limit is its slots: the overshoot is against the bytes. */
    uint64_t mem_bytes = s->memory_bytes ? s->memory_bytes : mem->limit;
    uint64_t reserved = s->peak_reserved;
    if (reserved == 0 && !s->memory_by_count)
        reserved = mem->peak_in_use;
    fprintf(out, "memory: peak reserved %s of the %s budget, peak allocated %s",
            progress_human_bytes(a, sizeof a, reserved),
            progress_human_bytes(b, sizeof b, mem_bytes),
            progress_human_bytes(c, sizeof c, s->peak_allocated));
    if (s->memory_by_count && mem_bytes > 0)
        fprintf(out, "\n  --memory-by-count (%llu slots): allocated reached %.2fx the byte budget",
                (unsigned long long)s->memory_by_count,
                (double)s->peak_allocated / (double)mem_bytes);
    fputc('\n', out);
    fprintf(out, "requests: %llu started, %llu throttled (429/503)",
            (unsigned long long)s->requests, (unsigned long long)s->throttled);
    if (s->first_retry_after)
        fprintf(out, ", %llu of them after the first Retry-After (at %.1f s)",
                (unsigned long long)s->throttled_after_first_retry_after,
                (double)(s->first_retry_after - s->t0) / (double)BAND_SEC);
    fputc('\n', out);

    fprintf(out, "%-12s %10s %10s %6s %8s %6s %6s %10s  %s\n", "budget", "limit", "peak", "mean",
            "waiting", "busy", "idle", "waited", "origin");
    for (int bi = 0; bi < BUDGET_COUNT; bi++) {
        const struct stats_budget *bu = &s->budget[bi];
        band_time tot = state_time(bu);
        double tot_ms = (double)tot / (double)BAND_MSEC;
        char lim[24], pk[24], mean[16], waited[24];
        if (bi == BUDGET_MEMORY && !s->memory_by_count) {
            progress_human_bytes(lim, sizeof lim, bu->limit);
            progress_human_bytes(pk, sizeof pk, bu->peak_in_use);
        } else if (bi == BUDGET_REQUESTS) {
            if (bu->limit)
                snprintf(lim, sizeof lim, "%llu/s", (unsigned long long)bu->limit);
            else
                snprintf(lim, sizeof lim, "unlimited");
            snprintf(pk, sizeof pk, "-");
        } else {
            snprintf(lim, sizeof lim, "%llu", (unsigned long long)bu->limit);
            snprintf(pk, sizeof pk, "%llu", (unsigned long long)bu->peak_in_use);
        }
        if (bi == BUDGET_REQUESTS && bu->limit > 0 && tot > 0)
            snprintf(mean, sizeof mean, "%d%%",
                     percent((double)s->requests /
                             ((double)bu->limit * (double)tot / (double)BAND_SEC)));
        else if (bi != BUDGET_REQUESTS && bu->limit > 0 && tot > 0)
            snprintf(mean, sizeof mean, "%d%%",
                     percent((double)bu->in_use_integral / ((double)bu->limit * tot_ms)));
        else
            snprintf(mean, sizeof mean, "-");
        fmt_ms(waited, sizeof waited, bu->waited);
        fprintf(out, "%-12s %10s %10s %6s %7d%% %5d%% %5d%% %10s", bu->name ? bu->name : "?", lim,
                pk, mean, percent(share(bu->t_waiting, tot)), percent(share(bu->t_busy, tot)),
                percent(share(bu->t_idle, tot)), waited);
        if (bu->origin != NULL && bu->origin[0] != '\0')
            fprintf(out, "  %s", bu->origin);
        fputc('\n', out);
    }
    char verdict[512];
    summary_verdict(s, verdict, sizeof verdict);
    fprintf(out, "verdict: %s\n", verdict);
    return ferror(out) ? -1 : 0;
}
