/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_rate.h - band_rate costs beside baselines, for band_bench (section j; every
 * function static).
 *
 *   R1  band_rate_try_acquire that takes a token (a bucket too deep to run dry)      ns per call
 *   R2  band_rate_try_acquire that is refused (an empty bucket at a tiny rate)       ns per call
 *   R3  band_rate_reserve + band_rate_ticket_cancel of a booking not yet due ns per pair
 *   beside, in the same rounds,
 *   B1  a naive token bucket: a pthread mutex around a refill computed in doubles from
 *       clock_gettime - what a hand-written limiter usually is              ns per take
 *   B2  one clock_gettime(CLOCK_MONOTONIC), the floor of any rate check that reads time
 * Each figure is the median of several rounds; the ratios are band / naive bucket and
 * band / clock read. Single-threaded: try_acquire is one compare-and-swap on the bucket's
 * word (a refusal none), so what is left above the clock read is that CAS and the
 * arithmetic. The target: R1 costs at most one clock read + 10 ns (the median over the
 * rounds of R1 - B2, each round measuring both).
 */
#ifndef BAND_BENCH_RATE_H
#define BAND_BENCH_RATE_H

#include "bench_util.h"

#include <band/rate.h>

#include <pthread.h>
#include <time.h>

#define BENCH_RATE_RUNS 5

struct bench_naive_bucket {
    pthread_mutex_t mu;
    double tokens, burst, per_ns;
    struct timespec last;
};

static int bench_naive_take(struct bench_naive_bucket *b, double n)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    pthread_mutex_lock(&b->mu);
    double dt =
        (double)(now.tv_sec - b->last.tv_sec) * 1e9 + (double)(now.tv_nsec - b->last.tv_nsec);
    b->last = now;
    b->tokens += dt * b->per_ns;
    if (b->tokens > b->burst)
        b->tokens = b->burst;
    int ok = b->tokens >= n;
    if (ok)
        b->tokens -= n;
    pthread_mutex_unlock(&b->mu);
    return ok;
}

static double bench_rate_try_ok(long iters, int *bad)
{
    band_rate *r = NULL;
    if (band_rate_create(&r, UINT64_C(1000000000), BAND_SEC, UINT64_C(1) << 32, NULL) != 0) {
        *bad = 1;
        return 0;
    }
    uint64_t t0 = bench_now();
    for (long i = 0; i < iters; i++)
        if (band_rate_try_acquire(r, 1, NULL) != 0)
            *bad = 1;
    uint64_t t1 = bench_now();
    band_rate_destroy(r);
    return (double)(t1 - t0) / (double)iters;
}

static double bench_rate_try_refused(long iters, int *bad)
{
    band_rate *r = NULL;
    if (band_rate_create(&r, 1, BAND_SEC, 1, NULL) != 0 || band_rate_try_acquire(r, 1, NULL) != 0) {
        *bad = 1;
        return 0;
    }
    band_time retry = 0;
    uint64_t t0 = bench_now();
    for (long i = 0; i < iters; i++)
        if (band_rate_try_acquire(r, 1, &retry) != BAND_EAGAIN)
            *bad = 1;
    uint64_t t1 = bench_now();
    band_rate_destroy(r);
    return (double)(t1 - t0) / (double)iters;
}

/* Bookings 1 s ahead (1 token per second), so none becomes due while the loop runs. */
static double bench_rate_reserve_cancel(long iters, int *bad)
{
    band_rate *r = NULL;
    if (band_rate_create(&r, 1, BAND_SEC, 1, NULL) != 0 || band_rate_try_acquire(r, 1, NULL) != 0) {
        *bad = 1;
        return 0;
    }
    uint64_t t0 = bench_now();
    for (long i = 0; i < iters; i++) {
        band_rate_ticket t = BAND_RATE_TICKET_INIT;
        if (band_rate_reserve(r, 1, &t, NULL, BAND_FOREVER) != 0 ||
            band_rate_ticket_cancel(&t) != 0)
            *bad = 1;
    }
    uint64_t t1 = bench_now();
    band_rate_destroy(r);
    return (double)(t1 - t0) / (double)iters;
}

static double bench_rate_naive(long iters, int *bad)
{
    struct bench_naive_bucket b;
    pthread_mutex_init(&b.mu, NULL);
    b.burst = b.tokens = (double)(UINT64_C(1) << 40);
    b.per_ns = 1.0;
    clock_gettime(CLOCK_MONOTONIC, &b.last);
    uint64_t t0 = bench_now();
    for (long i = 0; i < iters; i++)
        if (!bench_naive_take(&b, 1.0))
            *bad = 1;
    uint64_t t1 = bench_now();
    pthread_mutex_destroy(&b.mu);
    return (double)(t1 - t0) / (double)iters;
}

static double bench_rate_clock(long iters)
{
    struct timespec ts;
    volatile long sink = 0;
    uint64_t t0 = bench_now();
    for (long i = 0; i < iters; i++) {
        clock_gettime(CLOCK_MONOTONIC, &ts);
        sink += ts.tv_nsec;
    }
    uint64_t t1 = bench_now();
    (void)sink;
    return (double)(t1 - t0) / (double)iters;
}

static long bench_rate_section(int quick)
{
    int bad = 0;
    long iters = quick ? 20000 : 2000000;
    double ok[BENCH_RATE_RUNS], no[BENCH_RATE_RUNS], rc[BENCH_RATE_RUNS];
    double naive[BENCH_RATE_RUNS], clk[BENCH_RATE_RUNS];
    double x_naive[BENCH_RATE_RUNS], x_clock[BENCH_RATE_RUNS];
    double over_ok[BENCH_RATE_RUNS], over_no[BENCH_RATE_RUNS];
    for (int r = 0; r < BENCH_RATE_RUNS; r++) {
        /* One round runs every variant, so noise hits them alike. */
        clk[r] = bench_rate_clock(iters);
        naive[r] = bench_rate_naive(iters, &bad);
        ok[r] = bench_rate_try_ok(iters, &bad);
        no[r] = bench_rate_try_refused(iters, &bad);
        rc[r] = bench_rate_reserve_cancel(iters, &bad);
        x_naive[r] = naive[r] > 0 ? ok[r] / naive[r] : 0;
        x_clock[r] = clk[r] > 0 ? ok[r] / clk[r] : 0;
        over_ok[r] = ok[r] - clk[r];
        over_no[r] = no[r] - clk[r];
    }
    printf("\n(j) rate budget (band_rate), one thread, medians of %d rounds\n", BENCH_RATE_RUNS);
    printf("  R1 band_rate_try_acquire, token taken:              %7.1f ns\n",
           bench_median(ok, BENCH_RATE_RUNS));
    printf("  R2 band_rate_try_acquire, refused (+retry-after):   %7.1f ns\n",
           bench_median(no, BENCH_RATE_RUNS));
    printf("  R3 band_rate_reserve + ticket_cancel:       %7.1f ns\n",
           bench_median(rc, BENCH_RATE_RUNS));
    printf("  B1 naive mutex+double token bucket, take:   %7.1f ns\n",
           bench_median(naive, BENCH_RATE_RUNS));
    printf("  B2 clock_gettime(CLOCK_MONOTONIC):          %7.1f ns\n",
           bench_median(clk, BENCH_RATE_RUNS));
    printf("  R1 / B1: %.2fx   R1 / B2: %.2fx (exact integer GCRA vs a hand-written bucket)\n",
           bench_median(x_naive, BENCH_RATE_RUNS), bench_median(x_clock, BENCH_RATE_RUNS));
    double over = bench_median(over_ok, BENCH_RATE_RUNS);
    printf("  R1 - B2: %.1f ns, R2 - B2: %.1f ns\n", over, bench_median(over_no, BENCH_RATE_RUNS));
    bench_target('j', over <= 10.0, over, "ns", "<= 10",
                 "rate try_acquire (token taken) beyond one clock read");
    printf("  R1 / B1 (band vs the naive mutex bucket): %.2fx\n",
           bench_median(x_naive, BENCH_RATE_RUNS));
    if (bad)
        printf("  (j): a band_rate call gave an unexpected result\n");
    return bad;
}

#endif /* BAND_BENCH_RATE_H */
