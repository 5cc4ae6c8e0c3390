/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_fair.h - band_fair costs, for band_bench to call (one section; every function
 * static, so including this file adds nothing that is unused).
 *
 *   bench_fair_section(quick) prints these rows, each the median of 5 runs:
 *     F0  band_sem try_acquire(1) + release(1), uncontended: the baseline, measured in
 *         the same runs as F1 and F1h                                   (ns per pair)
 *     F1  try_acquire + release of one live key by id, uncontended      (ns per pair)
 *     F1h the same through a key handle (band_fair_handle_get()), lock-free while nothing
 *         is queued, and the target line F1h / F0 <= 2x                 (ns per pair)
 *     F2  release that hands the unit to a queued async request, with
 *         K keys backlogged, K = 10, 1000, 100000                       (ns per hand-off)
 *     F3  first use of a new key: try_acquire + release of distinct keys
 *         (state created, then evicted to the cache)                   (ns per pair)
 *   and checks that every run left the fair empty (in_use 0, no waiters). Returns 0, or 1
 *   when a band call failed or a check did not hold.
 *
 * To call it from bench/band_bench.c:  #include "bench_fair.h"  and, in main(),
 *   if (want('h')) failed |= bench_fair_section(quick);   (or any free letter)
 * The async requests of F2 are caller-owned (no allocation per request): K * 4 requests of
 * 96 bytes are allocated up front.
 */
#ifndef BAND_BENCH_FAIR_H
#define BAND_BENCH_FAIR_H

#include "bench_util.h"

#include <band/fair.h>
#include <band/sem.h>

#define BENCH_FAIR_RUNS 5

static void bench_fair_nop_wake(band_waiter *w)
{
    (void)w;
}

static band_fair *bench_fair_new(uint64_t capacity, uint32_t max_keys)
{
    band_fair_opts opts = {0};
    opts.max_keys = max_keys;
    band_fair *f = NULL;
    if (band_fair_create(&f, capacity, &opts) != 0)
        return NULL;
    return f;
}

/* 1 when @f is empty (nothing held, nothing queued), else 0. */
static int bench_fair_empty(const band_fair *f)
{
    band_fair_stats st;
    return band_fair_get_stats(f, &st) == 0 && st.in_use == 0 && st.waiters == 0;
}

/* F1: ns per try_acquire + release on one live key (pinned, so it stays live). */
static double bench_fair_try_pair(long iters, int *bad)
{
    band_fair *f = bench_fair_new(1000, 16);
    if (f == NULL) {
        *bad = 1;
        return 0;
    }
    band_fair_key_opts o = {1, 0, 0};
    if (band_fair_key_set(f, 7, &o) != 0)
        *bad = 1;
    uint64_t t0 = bench_now();
    for (long i = 0; i < iters; i++) {
        if (band_fair_try_acquire(f, 7, 0, 1) != 0 || band_fair_release(f, 7, 1) != 0)
            *bad = 1;
    }
    uint64_t t1 = bench_now();
    if (!bench_fair_empty(f))
        *bad = 1;
    band_fair_close(f);
    band_fair_destroy(f);
    return (double)(t1 - t0) / (double)iters;
}

/* F1h: ns per try_acquire + release through a key handle (the lock-free path). */
static double bench_fair_handle_pair(long iters, int *bad)
{
    band_fair *f = bench_fair_new(1000, 16);
    band_fair_handle *h = NULL;
    if (f == NULL || band_fair_handle_get(f, 7, &h) != 0) {
        *bad = 1;
        if (f != NULL)
            band_fair_destroy(f);
        return 0;
    }
    uint64_t t0 = bench_now();
    for (long i = 0; i < iters; i++) {
        if (band_fair_handle_try_acquire(h, 0, 1) != 0 || band_fair_handle_release(h, 1) != 0)
            *bad = 1;
    }
    uint64_t t1 = bench_now();
    if (!bench_fair_empty(f))
        *bad = 1;
    band_fair_handle_put(h);
    band_fair_close(f);
    if (band_fair_destroy(f) != 0)
        *bad = 1;
    return (double)(t1 - t0) / (double)iters;
}

/* The same-run baseline of F1: ns per band_sem try_acquire(1) + release(1), uncontended. */
static double bench_fair_sem_pair(long iters, int *bad)
{
    band_sem *s = NULL;
    if (band_sem_create(&s, 1000, NULL) != 0) {
        *bad = 1;
        return 0;
    }
    uint64_t t0 = bench_now();
    for (long i = 0; i < iters; i++) {
        if (band_sem_try_acquire(s, 1) != 0 || band_sem_release(s, 1) != 0)
            *bad = 1;
    }
    uint64_t t1 = bench_now();
    band_sem_close(s);
    band_sem_destroy(s);
    return (double)(t1 - t0) / (double)iters;
}

/*
 * F2: @keys keys each queue 4 requests of 1 unit behind a fair of capacity 1; then every
 * release hands the unit to the next request chosen by the round robin. ns per hand-off.
 */
static double bench_fair_handoff(uint32_t keys, int *bad)
{
    const uint32_t per_key = 4;
    uint64_t n = (uint64_t)keys * per_key;
    band_fair *f = bench_fair_new(1, keys + 1);
    band_fair_acquire_op *reqs = calloc((size_t)n, sizeof(*reqs));
    if (f == NULL || reqs == NULL) {
        *bad = 1;
        free(reqs);
        if (f != NULL)
            band_fair_destroy(f);
        return 0;
    }
    if (band_fair_try_acquire(f, UINT64_MAX, 0, 1) != 0)
        *bad = 1;
    for (uint64_t i = 0; i < n; i++) {
        band_waiter_init(&reqs[i].w, bench_fair_nop_wake, NULL);
        if (band_fair_acquire_async(f, i % keys, 0, 1, &reqs[i]) != BAND_PENDING)
            *bad = 1;
    }
    /* release the placeholder; then each grant's holder releases in turn */
    uint64_t t0 = bench_now();
    uint64_t holder = UINT64_MAX;
    for (uint64_t i = 0; i < n; i++) {
        if (band_fair_release(f, holder, 1) != 0)
            *bad = 1;
        /* the round robin serves keys 0, 1, 2, ... in order, 4 rounds */
        holder = i % keys;
    }
    uint64_t t1 = bench_now();
    if (band_fair_release(f, holder, 1) != 0 || !bench_fair_empty(f))
        *bad = 1;
    for (uint64_t i = 0; i < n; i++)
        if (band_waiter_status(&reqs[i].w) != 0)
            *bad = 1;
    band_fair_close(f);
    band_fair_destroy(f);
    free(reqs);
    return (double)(t1 - t0) / (double)n;
}

/* F3: ns per try_acquire + release of a key never seen before. */
static double bench_fair_new_keys(long iters, int *bad)
{
    band_fair *f = bench_fair_new(1000, 1024);
    if (f == NULL) {
        *bad = 1;
        return 0;
    }
    uint64_t t0 = bench_now();
    for (long i = 0; i < iters; i++) {
        uint64_t key = (uint64_t)i * UINT64_C(0x9E3779B97F4A7C15);
        if (band_fair_try_acquire(f, key, 0, 1) != 0 || band_fair_release(f, key, 1) != 0)
            *bad = 1;
    }
    uint64_t t1 = bench_now();
    if (!bench_fair_empty(f))
        *bad = 1;
    band_fair_close(f);
    band_fair_destroy(f);
    return (double)(t1 - t0) / (double)iters;
}

static int bench_fair_section(int quick)
{
    int bad = 0;
    long iters = quick ? 20000 : 2000000;
    double v[BENCH_FAIR_RUNS], sem[BENCH_FAIR_RUNS], f1[BENCH_FAIR_RUNS], f1h[BENCH_FAIR_RUNS];
    printf("\n== band_fair: per-key fair share (medians of %d runs) ==\n", BENCH_FAIR_RUNS);
    /* F1 and its baseline alternate within each run, so both see the same machine */
    for (int r = 0; r < BENCH_FAIR_RUNS; r++) {
        sem[r] = bench_fair_sem_pair(iters, &bad);
        f1[r] = bench_fair_try_pair(iters, &bad);
        f1h[r] = bench_fair_handle_pair(iters, &bad);
    }
    double sem_med = bench_median(sem, BENCH_FAIR_RUNS);
    double f1_med = bench_median(f1, BENCH_FAIR_RUNS);
    double f1h_med = bench_median(f1h, BENCH_FAIR_RUNS);
    double ratio = sem_med > 0 ? f1h_med / sem_med : 0;
    printf("F0 band_sem try_acquire(1) + release(1):        %8.1f ns/pair (baseline)\n", sem_med);
    printf("F1 try_acquire + release, one live key:        %8.1f ns/pair (%.2fx the sem pair)\n",
           f1_med, sem_med > 0 ? f1_med / sem_med : 0);
    printf("F1h the same through a key handle (lock-free): %8.1f ns/pair (%.2fx the sem pair)\n",
           f1h_med, ratio);
    bench_target('i', ratio <= 2.0, ratio, "x", "<= 2.00",
                 "fair share try + release through a key handle / band_sem pair");
    static const uint32_t ks[] = {10, 1000, 100000};
    for (size_t k = 0; k < sizeof(ks) / sizeof(ks[0]); k++) {
        if (quick && ks[k] > 1000)
            continue;
        for (int r = 0; r < BENCH_FAIR_RUNS; r++)
            v[r] = bench_fair_handoff(ks[k], &bad);
        printf("F2 hand-off to a queued request, %6u keys:  %8.1f ns/hand-off\n", ks[k],
               bench_median(v, BENCH_FAIR_RUNS));
    }
    for (int r = 0; r < BENCH_FAIR_RUNS; r++)
        v[r] = bench_fair_new_keys(iters / 4, &bad);
    printf("F3 first use of a new key (create + evict):    %8.1f ns/pair\n",
           bench_median(v, BENCH_FAIR_RUNS));
    if (bad)
        printf("F: a band_fair call failed or left the fair non-empty\n");
    return bad;
}

#endif /* BAND_BENCH_FAIR_H */
