/* SPDX-License-Identifier: MIT */
/*
 * test_limit.c - the adaptive concurrency limit (limit.h): options, the semaphore it
 * sizes (release/reduce only, debt repaid by returns), each algorithm's step on a fake
 * clock, and a simulation against a synthetic server whose capacity changes over time.
 *
 * The simulation (sim_run) is deterministic and sleeps never: a discrete-event loop on a
 * fake clock. The server has C(t) parallel slots, each serving one request in S = 10 ms
 * (+-5 % deterministic jitter); a request that arrives when every slot is busy queues for
 * the earliest free slot, so latency is S while in-flight <= C and grows with the queue
 * beyond; a request that would wait more than 2 S is dropped (answered after S / 10 with
 * BAND_LIMIT_DROPPED). The client has unbounded demand: it keeps every permit the limit
 * gives it in use, and reports each request with band_limit_on_done().
 *
 * Capacity runs through four phases of 400 round trips each: 50 -> 20 -> 80 -> 10 (the last
 * cut is sharp enough that the server drops requests). In each phase the first 150 round
 * trips are allowed for convergence; over the remaining 250 the limit must stay within the
 * bounds below (the same figures are in docs/limit.md):
 *
 *   AIMD (rtt_limit 1.1 S, backoff 0.9, +1 per window):        0.85 C <= limit <= 1.10 C + 2
 *   GRADIENT (tolerance 1, queue sqrt(limit), smoothing 0.2): 0.90 C <= limit <= 1.20 C + 4
 *
 * "Never oscillates past them" is exactly that assertion: every limit value observed after
 * the convergence allowance (checked after every single sample) is inside the band.
 * Each algorithm runs with 8 jitter seeds and every run must keep the bounds.
 * The test also prints the measured range and the round trip at which each phase entered
 * its band for good, so a regression in tracking shows as numbers, not only as a failure.
 */
#include "test.h"

#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------------------------- */
/* options and plumbing                                                                */

static void test_opts_invalid(void **state)
{
    (void)state;
    band_limit *l = NULL;
    band_limit_opts o;
    memset(&o, 0, sizeof(o));
    assert_int_equal(band_limit_create(NULL, &o), BAND_EINVAL);
    assert_int_equal(band_limit_create(NULL, NULL), BAND_EINVAL);
    o.algorithm = 7;
    assert_int_equal(band_limit_create(&l, &o), BAND_EINVAL);
    o.algorithm = BAND_LIMIT_AIMD;
    o.min = 10;
    o.max = 5;
    assert_int_equal(band_limit_create(&l, &o), BAND_EINVAL);
    o.max = 20;
    o.initial = 30;
    assert_int_equal(band_limit_create(&l, &o), BAND_EINVAL);
    o.initial = 10;
    o.backoff = 1.0;
    assert_int_equal(band_limit_create(&l, &o), BAND_EINVAL);
    o.backoff = 0.5;
    o.smoothing = 1.5;
    assert_int_equal(band_limit_create(&l, &o), BAND_EINVAL);
    o.smoothing = 0;
    o.tolerance = 0.5;
    assert_int_equal(band_limit_create(&l, &o), BAND_EINVAL);
    o.tolerance = 0;
    o.max = BAND_MAX_UNITS + 1;
    assert_int_equal(band_limit_create(&l, &o), BAND_EINVAL);
    assert_null(l);

    /* Defaults: min 1, max 1000, initial min. */
    memset(&o, 0, sizeof(o));
    assert_int_equal(band_limit_create(&l, &o), 0);
    band_limit_stats st;
    assert_int_equal(band_limit_get_stats(l, &st), 0);
    assert_u64_equal(st.limit, 1);
    assert_u64_equal(st.min, 1);
    assert_u64_equal(st.max, 1000);
    assert_true(st.gradient == 1.0);
    assert_u64_equal(band_limit_current(l), 1);
    assert_u64_equal(band_sem_available(band_limit_sem(l)), 1);
    assert_int_equal(band_limit_destroy(l), 0);
    /* NULL options are the defaults too. */
    l = NULL;
    assert_int_equal(band_limit_create(&l, NULL), 0);
    assert_int_equal(band_limit_get_stats(l, &st), 0);
    assert_int_equal(st.algorithm, BAND_LIMIT_AIMD);
    assert_u64_equal(st.limit, 1);
    assert_u64_equal(st.min, 1);
    assert_u64_equal(st.max, 1000);
    assert_int_equal(band_limit_destroy(l), 0);
    assert_int_equal(band_limit_destroy(NULL), 0);
    assert_u64_equal(band_limit_current(NULL), 0);
    assert_null(band_limit_sem(NULL));
}

static band_limit *make(int algo, uint64_t initial, uint64_t min, uint64_t max)
{
    band_limit_opts o;
    memset(&o, 0, sizeof(o));
    o.algorithm = algo;
    o.initial = initial;
    o.min = min;
    o.max = max;
    band_limit *l = NULL;
    assert_int_equal(band_limit_create(&l, &o), 0);
    return l;
}

static void test_acquire_release_inflight(void **state)
{
    (void)state;
    band_limit *l = make(BAND_LIMIT_AIMD, 2, 1, 10);
    assert_int_equal(band_limit_try_acquire(l), 0);
    assert_int_equal(band_limit_acquire(l, BAND_FOREVER, NULL), 0);
    assert_int_equal(band_limit_try_acquire(l), BAND_EAGAIN);
    assert_int_equal(band_limit_acquire(l, 0, NULL), BAND_ETIMEDOUT);
    band_limit_stats st;
    assert_int_equal(band_limit_get_stats(l, &st), 0);
    assert_u64_equal(st.inflight, 2);
    /* An ignored outcome returns the permit without sampling. */
    assert_int_equal(band_limit_on_done(l, 0, 5, BAND_LIMIT_IGNORE), 0);
    assert_int_equal(band_limit_get_stats(l, &st), 0);
    assert_u64_equal(st.inflight, 1);
    assert_u64_equal(st.ignored, 1);
    assert_u64_equal(st.samples, 0);
    assert_u64_equal(band_sem_available(band_limit_sem(l)), 1);
    /* Bad arguments change nothing (the permit is not returned). */
    assert_int_equal(band_limit_on_done(l, 10, 5, BAND_LIMIT_OK), BAND_EINVAL);
    assert_int_equal(band_limit_on_done(l, 0, 5, 9), BAND_EINVAL);
    assert_int_equal(band_limit_on_done(NULL, 0, 5, BAND_LIMIT_OK), BAND_EINVAL);
    assert_int_equal(band_limit_sample(NULL, 0, 5, BAND_LIMIT_OK), BAND_EINVAL);
    assert_int_equal(band_limit_try_acquire(NULL), BAND_EINVAL);
    assert_int_equal(band_limit_acquire(NULL, 0, NULL), BAND_EINVAL);
    assert_int_equal(band_limit_adopt(NULL), BAND_EINVAL);
    assert_int_equal(band_limit_close(NULL), BAND_EINVAL);
    assert_int_equal(band_limit_get_stats(NULL, &st), BAND_EINVAL);
    assert_u64_equal(band_sem_available(band_limit_sem(l)), 1);
    assert_int_equal(band_limit_on_done(l, 0, 5, BAND_LIMIT_OK), 0);
    assert_u64_equal(band_sem_available(band_limit_sem(l)), 2);

    /* Async acquisition through the semaphore, then adopt. */
    band_waiter w;
    band_waiter_init(&w, NULL, NULL);
    assert_int_equal(band_sem_try_acquire(band_limit_sem(l), 1), 0);
    assert_int_equal(band_limit_adopt(l), 0);
    assert_int_equal(band_limit_get_stats(l, &st), 0);
    assert_u64_equal(st.inflight, 1);
    assert_int_equal(band_limit_on_done(l, 0, 5, BAND_LIMIT_OK), 0);

    /* Close: acquisitions fail, on_done still returns permits. */
    assert_int_equal(band_limit_try_acquire(l), 0);
    assert_int_equal(band_limit_is_closed(l), 0);
    assert_int_equal(band_limit_get_stats(l, &st), 0);
    assert_int_equal(st.closed, 0);
    assert_int_equal(band_limit_close(l), 0);
    assert_int_equal(band_limit_is_closed(l), 1);
    assert_int_equal(band_limit_is_closed(NULL), 0);
    assert_int_equal(band_limit_get_stats(l, &st), 0);
    assert_int_equal(st.closed, 1);
    assert_int_equal(band_limit_try_acquire(l), BAND_ECLOSED);
    assert_int_equal(band_limit_acquire(l, BAND_FOREVER, NULL), BAND_ECLOSED);
    assert_int_equal(band_limit_on_done(l, 0, 5, BAND_LIMIT_OK), 0);
    assert_int_equal(band_limit_destroy(l), 0);
}

/* A name is copied, reported by the stats, replaced and cleared; one that does not fit is
 * refused and changes nothing. */
static void test_set_name(void **state)
{
    (void)state;
    band_limit *l = NULL;
    assert_int_equal(band_limit_create(&l, NULL), 0);
    band_limit_stats st;
    assert_int_equal(band_limit_get_stats(l, &st), 0);
    assert_string_equal(st.name, "");
    char name[] = "upstream";
    assert_int_equal(band_limit_set_name(l, name), 0);
    name[0] = 'X'; /* copied, not kept */
    assert_int_equal(band_limit_get_stats(l, &st), 0);
    assert_string_equal(st.name, "upstream");
    char too_long[BAND_NAME_MAX + 1];
    memset(too_long, 'x', sizeof(too_long) - 1);
    too_long[sizeof(too_long) - 1] = '\0';
    assert_int_equal(band_limit_set_name(l, too_long), BAND_EINVAL);
    assert_int_equal(band_limit_get_stats(l, &st), 0);
    assert_string_equal(st.name, "upstream");
    too_long[BAND_NAME_MAX - 1] = '\0'; /* the longest that fits */
    assert_int_equal(band_limit_set_name(l, too_long), 0);
    assert_int_equal(band_limit_get_stats(l, &st), 0);
    assert_string_equal(st.name, too_long);
    assert_int_equal(band_limit_set_name(l, NULL), 0);
    assert_int_equal(band_limit_get_stats(l, &st), 0);
    assert_string_equal(st.name, "");
    assert_int_equal(band_limit_set_name(NULL, "x"), BAND_EINVAL);
    assert_int_equal(band_limit_destroy(l), 0);
}

/* Hold @n permits of @l (counted in flight). */
static void hold(band_limit *l, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        assert_int_equal(band_limit_try_acquire(l), 0);
}

/* AIMD: a window of good samples adds 1; a drop multiplies by the backoff; a second
 * congestion signal from a request started before that decrease is ignored; the limit
 * never leaves [min, max]. */
static void test_aimd_steps(void **state)
{
    (void)state;
    band_limit *l = make(BAND_LIMIT_AIMD, 10, 5, 12);
    band_sem *s = band_limit_sem(l);
    band_time t = 1000;
    hold(l, 10);
    /* 10 samples (the window is the limit) of requests that started at t. */
    for (int i = 0; i < 10; i++)
        assert_int_equal(band_limit_on_done(l, t, t + 100, BAND_LIMIT_OK), 0);
    t += 100;
    assert_u64_equal(band_limit_current(l), 11);
    assert_u64_equal(band_sem_available(s), 11); /* 10 returned + 1 released */

    hold(l, 11);
    for (int i = 0; i < 11; i++)
        assert_int_equal(band_limit_on_done(l, t, t + 100, BAND_LIMIT_OK), 0);
    t += 100;
    assert_u64_equal(band_limit_current(l), 12);
    hold(l, 12);
    for (int i = 0; i < 12; i++)
        assert_int_equal(band_limit_on_done(l, t, t + 100, BAND_LIMIT_OK), 0);
    t += 100;
    assert_u64_equal(band_limit_current(l), 12); /* max */

    /* A drop while all 12 are in flight: 12 * 0.9 = 10.8 -> 11, one permit of debt. */
    hold(l, 12);
    band_time started = t;
    t += 50;
    assert_int_equal(band_limit_on_done(l, started, t, BAND_LIMIT_DROPPED), 0);
    assert_u64_equal(band_limit_current(l), 11);
    band_sem_stats ss;
    assert_int_equal(band_sem_get_stats(s, &ss), 0);
    assert_u64_equal(ss.available, 0);
    assert_u64_equal(ss.debt, 0); /* 12 - 1 returned = 11 in flight = the limit */
    /* More drops from requests started before the decrease: ignored. */
    for (int i = 0; i < 5; i++)
        assert_int_equal(band_limit_on_done(l, started, t + 1, BAND_LIMIT_DROPPED), 0);
    assert_u64_equal(band_limit_current(l), 11);
    assert_u64_equal(band_sem_available(s), 5);
    /* A drop from a request that started after it: decreases again (11*.9 = 9.9 -> 10). */
    assert_int_equal(band_limit_try_acquire(l), 0);
    assert_int_equal(band_limit_on_done(l, t + 2, t + 3, BAND_LIMIT_DROPPED), 0);
    assert_u64_equal(band_limit_current(l), 10);

    band_limit_stats st;
    assert_int_equal(band_limit_get_stats(l, &st), 0);
    assert_u64_equal(st.drops, 7);
    assert_u64_equal(st.decreases, 2);
    assert_u64_equal(st.increases, 2);
    assert_int_equal(band_limit_destroy(l), 0);
}

/* Shrinking below what is in flight creates debt that returns repay; nothing is revoked,
 * and the balance ends at the limit. The limit never goes below min. */
static void test_shrink_is_debt(void **state)
{
    (void)state;
    band_limit *l = make(BAND_LIMIT_AIMD, 20, 4, 20);
    band_sem *s = band_limit_sem(l);
    hold(l, 20);
    band_time t = 100;
    /* Each drop from a newer request cuts by 0.9: 18, 16.2, ... down to min 4. */
    for (int i = 0; i < 30; i++) {
        assert_int_equal(band_limit_sample(l, t, t + 1, BAND_LIMIT_DROPPED), 0);
        t += 2;
    }
    assert_u64_equal(band_limit_current(l), 4);
    band_sem_stats ss;
    assert_int_equal(band_sem_get_stats(s, &ss), 0);
    assert_u64_equal(ss.available, 0);
    assert_u64_equal(ss.debt, 16); /* 20 in flight, limit 4 */
    /* Returns repay the debt first: the first 16 give nothing back. */
    for (int i = 0; i < 16; i++)
        assert_int_equal(band_limit_on_done(l, t, t, BAND_LIMIT_IGNORE), 0);
    assert_u64_equal(band_sem_available(s), 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(band_limit_on_done(l, t, t, BAND_LIMIT_IGNORE), 0);
    assert_u64_equal(band_sem_available(s), 4);
    assert_int_equal(band_sem_get_stats(s, &ss), 0);
    assert_u64_equal(ss.debt, 0);
    assert_int_equal(band_limit_destroy(l), 0);
}

/* AIMD's latency signal: a round trip above rtt_limit counts as congestion. */
static void test_aimd_rtt_limit(void **state)
{
    (void)state;
    band_limit_opts o;
    memset(&o, 0, sizeof(o));
    o.algorithm = BAND_LIMIT_AIMD;
    o.initial = 10;
    o.max = 100;
    o.rtt_limit = 150;
    o.backoff = 0.5;
    band_limit *l = NULL;
    assert_int_equal(band_limit_create(&l, &o), 0);
    hold(l, 1);
    assert_int_equal(band_limit_on_done(l, 0, 150, BAND_LIMIT_OK), 0);
    assert_u64_equal(band_limit_current(l), 10);
    hold(l, 1);
    assert_int_equal(band_limit_on_done(l, 0, 151, BAND_LIMIT_OK), 0);
    assert_u64_equal(band_limit_current(l), 5);
    assert_int_equal(band_limit_destroy(l), 0);
}

/* An idle client (fewer than half the permits in use) never raises the limit. */
static void test_app_limited(void **state)
{
    (void)state;
    for (int algo = 0; algo < 2; algo++) {
        band_limit *l = make(algo, 10, 1, 100);
        band_time t = 0;
        for (int i = 0; i < 200; i++) {
            hold(l, 1); /* one request at a time */
            assert_int_equal(band_limit_on_done(l, t, t + 100, BAND_LIMIT_OK), 0);
            t += 100;
        }
        assert_u64_equal(band_limit_current(l), 10);
        band_limit_stats st;
        assert_int_equal(band_limit_get_stats(l, &st), 0);
        assert_true(st.windows >= 19);
        assert_int_equal(band_limit_destroy(l), 0);
    }
}

/* GRADIENT: with latency at its minimum the gradient is 1 and the limit grows by
 * smoothing * sqrt(limit); when latency doubles the gradient is 0.5 and it shrinks. */
static void test_gradient_steps(void **state)
{
    (void)state;
    band_limit *l = make(BAND_LIMIT_GRADIENT, 16, 1, 1000);
    band_time t = 0;
    hold(l, 16);
    for (int i = 0; i < 16; i++)
        assert_int_equal(band_limit_on_done(l, t, t + 100, BAND_LIMIT_OK), 0);
    t += 100;
    band_limit_stats st;
    assert_int_equal(band_limit_get_stats(l, &st), 0);
    /* 16 * 0.8 + (16 * 1 + 4) * 0.2 = 16.8 -> 17 */
    assert_true(st.limit_exact > 16.79 && st.limit_exact < 16.81);
    assert_u64_equal(st.limit, 17);
    assert_true(st.gradient == 1.0);
    assert_int_equal(st.min_rtt, 100);
    assert_int_equal(st.window_rtt, 100);
    assert_u64_equal(band_sem_available(band_limit_sem(l)), 17);

    /* A window at twice the minimum: gradient 0.5; 16.8*.8 + (16.8*.5 + sqrt(16.8))*.2 */
    hold(l, 17);
    for (int i = 0; i < 17; i++)
        assert_int_equal(band_limit_on_done(l, t, t + 200, BAND_LIMIT_OK), 0);
    assert_int_equal(band_limit_get_stats(l, &st), 0);
    assert_true(st.gradient == 0.5);
    double expect = 16.8 * 0.8 + (16.8 * 0.5 + 4.0987803) * 0.2;
    assert_true(st.limit_exact > expect - 0.001 && st.limit_exact < expect + 0.001);
    assert_u64_equal(st.limit, 16);
    assert_int_equal(st.window_rtt, 200);
    assert_true(st.smoothed_rtt > 100 && st.smoothed_rtt < 200);
    assert_int_equal(band_limit_destroy(l), 0);
}

/* min_rtt_reset lets the no-load latency be relearned. */
static void test_min_rtt_reset(void **state)
{
    (void)state;
    band_limit_opts o;
    memset(&o, 0, sizeof(o));
    o.algorithm = BAND_LIMIT_GRADIENT;
    o.initial = 4;
    o.min_rtt_reset = 1000;
    band_limit *l = NULL;
    assert_int_equal(band_limit_create(&l, &o), 0);
    band_limit_stats st;
    assert_int_equal(band_limit_sample(l, 0, 100, BAND_LIMIT_OK), 0);
    assert_int_equal(band_limit_sample(l, 100, 400, BAND_LIMIT_OK), 0);
    assert_int_equal(band_limit_get_stats(l, &st), 0);
    assert_int_equal(st.min_rtt, 100);
    assert_int_equal(band_limit_sample(l, 1000, 1300, BAND_LIMIT_OK), 0);
    assert_int_equal(band_limit_get_stats(l, &st), 0);
    assert_int_equal(st.min_rtt, 300);
    assert_int_equal(band_limit_destroy(l), 0);
}

/* on_done() returns exactly the permits the limit counted in flight: a report without one
 * is refused and changes nothing (no permit appears, no sample is taken). */
static void test_on_done_needs_inflight(void **state)
{
    (void)state;
    band_limit *l = make(BAND_LIMIT_AIMD, 2, 1, 10);
    band_sem *s = band_limit_sem(l);
    band_limit_stats st;
    for (int outcome = 0; outcome < 3; outcome++)
        assert_int_equal(band_limit_on_done(l, 0, 5, outcome), BAND_EINVAL);
    assert_u64_equal(band_sem_available(s), 2);
    assert_int_equal(band_limit_get_stats(l, &st), 0);
    assert_u64_equal(st.samples, 0);
    assert_u64_equal(st.ignored, 0);
    assert_u64_equal(st.inflight, 0);
    assert_u64_equal(st.limit, 2);
    /* One permit, one report: the second report of the same request is refused. */
    assert_int_equal(band_limit_try_acquire(l), 0);
    assert_int_equal(band_limit_on_done(l, 0, 5, BAND_LIMIT_OK), 0);
    assert_int_equal(band_limit_on_done(l, 0, 5, BAND_LIMIT_OK), BAND_EINVAL);
    assert_u64_equal(band_sem_available(s), 2);
    assert_int_equal(band_limit_get_stats(l, &st), 0);
    assert_u64_equal(st.samples, 1);
    assert_u64_equal(st.inflight, 0);
    /* Invalid times with a permit in flight keep the permit counted. */
    assert_int_equal(band_limit_try_acquire(l), 0);
    assert_int_equal(band_limit_on_done(l, INT64_MIN, INT64_MAX, BAND_LIMIT_OK), BAND_EINVAL);
    assert_int_equal(band_limit_get_stats(l, &st), 0);
    assert_u64_equal(st.inflight, 1);
    assert_u64_equal(st.samples, 1);
    assert_u64_equal(band_sem_available(s), 1);
    assert_int_equal(band_limit_on_done(l, 0, 5, BAND_LIMIT_IGNORE), 0);
    assert_u64_equal(band_sem_available(s), 2);
    /* adopt() counts at most what the semaphore could ever have handed out (max). */
    for (int i = 0; i < 10; i++)
        assert_int_equal(band_limit_adopt(l), 0);
    assert_int_equal(band_limit_adopt(l), BAND_EINVAL);
    assert_int_equal(band_limit_get_stats(l, &st), 0);
    assert_u64_equal(st.inflight, 10);
    assert_int_equal(band_limit_destroy(l), 0);
}

/* Times at the ends of the clock: a round trip that does not fit in band_time is
 * refused, one that does (up to INT64_MAX ns) is used, and every estimate stays a
 * valid, non-negative band_time. */
static void test_extreme_times(void **state)
{
    (void)state;
    band_limit_opts o;
    memset(&o, 0, sizeof(o));
    o.algorithm = BAND_LIMIT_GRADIENT;
    o.initial = 4;
    o.window = 1;
    o.rtt_smoothing = 1.0;
    band_limit *l = NULL;
    assert_int_equal(band_limit_create(&l, &o), 0);
    band_limit_stats st;
    /* now - start overflows: nonsense, refused, nothing recorded. */
    assert_int_equal(band_limit_sample(l, INT64_MIN, INT64_MAX, BAND_LIMIT_OK), BAND_EINVAL);
    assert_int_equal(band_limit_sample(l, -1, INT64_MAX, BAND_LIMIT_DROPPED), BAND_EINVAL);
    assert_int_equal(band_limit_sample(l, INT64_MIN, 1, BAND_LIMIT_IGNORE), BAND_EINVAL);
    assert_int_equal(band_limit_get_stats(l, &st), 0);
    assert_u64_equal(st.samples, 0);
    assert_u64_equal(st.ignored, 0);
    assert_u64_equal(st.windows, 0);
    /* The longest representable round trips are fine (negative origins too). */
    assert_int_equal(band_limit_sample(l, INT64_MIN, -1, BAND_LIMIT_OK), 0);
    assert_int_equal(band_limit_get_stats(l, &st), 0);
    assert_int_equal(st.min_rtt, INT64_MAX);
    assert_int_equal(st.smoothed_rtt, INT64_MAX);
    assert_int_equal(st.window_rtt, INT64_MAX);
    assert_u64_equal(st.windows, 1);
    /* A short sample, then the longest again: the smoothed RTT (weight 1) follows
     * exactly and never wraps. */
    assert_int_equal(band_limit_sample(l, 0, 1, BAND_LIMIT_OK), 0);
    assert_int_equal(band_limit_get_stats(l, &st), 0);
    assert_int_equal(st.smoothed_rtt, 1);
    assert_int_equal(st.min_rtt, 1);
    /* (It starts at 1, when that window closed, so it counts in the next window; the
     * window's mean is a double, saturated back to INT64_MAX.) */
    assert_int_equal(band_limit_sample(l, 1, INT64_MAX, BAND_LIMIT_OK), 0);
    assert_int_equal(band_limit_get_stats(l, &st), 0);
    assert_int_equal(st.smoothed_rtt, INT64_MAX - 1);
    assert_int_equal(st.window_rtt, INT64_MAX);
    assert_u64_equal(st.windows, 3);
    assert_int_equal(st.min_rtt, 1);
    assert_true(st.gradient >= 0.5 && st.gradient <= 1.0);
    assert_true(st.limit >= 1 && st.limit <= 1000);
    assert_int_equal(band_limit_destroy(l), 0);

    /* AIMD with the default weight: the smoothed RTT moves 1/8 of the way, saturating. */
    memset(&o, 0, sizeof(o));
    o.initial = 4;
    o.rtt_limit = 100;
    assert_int_equal(band_limit_create(&l, &o), 0);
    assert_int_equal(band_limit_sample(l, 0, 1, BAND_LIMIT_OK), 0);
    for (int i = 0; i < 100; i++)
        assert_int_equal(band_limit_sample(l, 0, INT64_MAX, BAND_LIMIT_OK), 0);
    assert_int_equal(band_limit_get_stats(l, &st), 0);
    assert_true(st.smoothed_rtt > INT64_MAX / 2);
    assert_u64_equal(st.samples, 101);
    /* Every long one was congestion, but all started before the first cut: one cut. */
    assert_u64_equal(st.decreases, 1);
    assert_u64_equal(st.limit, 4); /* 4 * 0.9 = 3.6 */
    assert_int_equal(band_limit_destroy(l), 0);
}

/* min_rtt_reset on a clock near its ends: the elapsed time is computed without overflow,
 * and a report from far in the past does not count as "a reset period elapsed". */
static void test_min_rtt_reset_extreme(void **state)
{
    (void)state;
    band_limit_opts o;
    memset(&o, 0, sizeof(o));
    o.algorithm = BAND_LIMIT_GRADIENT;
    o.initial = 4;
    o.min_rtt_reset = 1000;
    band_limit *l = NULL;
    assert_int_equal(band_limit_create(&l, &o), 0);
    band_limit_stats st;
    assert_int_equal(band_limit_sample(l, INT64_MAX - 20, INT64_MAX - 10, BAND_LIMIT_OK), 0);
    assert_int_equal(band_limit_sample(l, -200, -100, BAND_LIMIT_OK), 0);
    assert_int_equal(band_limit_get_stats(l, &st), 0);
    assert_int_equal(st.min_rtt, 10);
    assert_int_equal(band_limit_destroy(l), 0);

    /* A clock that starts at a negative origin still resets after min_rtt_reset. */
    assert_int_equal(band_limit_create(&l, &o), 0);
    band_time t0 = INT64_MIN + 5;
    assert_int_equal(band_limit_sample(l, t0, t0 + 100, BAND_LIMIT_OK), 0);
    assert_int_equal(band_limit_sample(l, t0 + 1200, t0 + 1500, BAND_LIMIT_OK), 0);
    assert_int_equal(band_limit_get_stats(l, &st), 0);
    assert_int_equal(st.min_rtt, 300);
    assert_int_equal(band_limit_destroy(l), 0);
}

/* Infinite factors are out of range like any other: refused at creation. */
static void test_opts_not_finite(void **state)
{
    (void)state;
    band_limit_opts o;
    band_limit *l = NULL;
    double inf = 1.0 / 0.0;
    memset(&o, 0, sizeof(o));
    o.increase = inf;
    assert_int_equal(band_limit_create(&l, &o), BAND_EINVAL);
    memset(&o, 0, sizeof(o));
    o.tolerance = inf;
    assert_int_equal(band_limit_create(&l, &o), BAND_EINVAL);
    memset(&o, 0, sizeof(o));
    o.queue = inf;
    assert_int_equal(band_limit_create(&l, &o), BAND_EINVAL);
    memset(&o, 0, sizeof(o));
    o.increase = -inf;
    assert_int_equal(band_limit_create(&l, &o), BAND_EINVAL);
    memset(&o, 0, sizeof(o));
    o.backoff = 0.0 / 0.0;
    assert_int_equal(band_limit_create(&l, &o), BAND_EINVAL);
    assert_null(l);
}

/* ---------------------------------------------------------------------------------- */
/* the simulation                                                                      */

#define SIM_S         (10 * BAND_MSEC) /* service time */
#define SIM_MAX_C     128
#define SIM_MAX_FLY   4096
#define SIM_PHASE_RTT 400 /* round trips per phase */
#define SIM_SETTLE    150 /* round trips allowed for convergence */
#define SIM_SEEDS     8   /* jitter seeds; every one must keep the bounds */

static int g_trace; /* BAND_LIMIT_TRACE set: print every seed's phases */

struct sim_req {
    band_time end, start;
    uint64_t seq;
    int dropped;
};

struct sim {
    band_limit *l;
    unsigned cap;
    band_time free_at[SIM_MAX_C];
    struct sim_req heap[SIM_MAX_FLY];
    size_t n;
    uint64_t seq, rng;
    uint64_t drops, served;
};

static int req_less(const struct sim_req *a, const struct sim_req *b)
{
    return a->end < b->end || (a->end == b->end && a->seq < b->seq);
}

static void heap_push(struct sim *s, struct sim_req r)
{
    size_t i = s->n++;
    s->heap[i] = r;
    while (i > 0 && req_less(&s->heap[i], &s->heap[(i - 1) / 2])) {
        struct sim_req x = s->heap[i];
        s->heap[i] = s->heap[(i - 1) / 2];
        s->heap[(i - 1) / 2] = x;
        i = (i - 1) / 2;
    }
}

static struct sim_req heap_pop(struct sim *s)
{
    struct sim_req top = s->heap[0];
    s->heap[0] = s->heap[--s->n];
    size_t i = 0;
    for (;;) {
        size_t a = 2 * i + 1, b = a + 1, m = i;
        if (a < s->n && req_less(&s->heap[a], &s->heap[m]))
            m = a;
        if (b < s->n && req_less(&s->heap[b], &s->heap[m]))
            m = b;
        if (m == i)
            break;
        struct sim_req x = s->heap[i];
        s->heap[i] = s->heap[m];
        s->heap[m] = x;
        i = m;
    }
    return top;
}

/* The server receives a request at @t. */
static void sim_issue(struct sim *s, band_time t)
{
    unsigned k = 0;
    for (unsigned i = 1; i < s->cap; i++)
        if (s->free_at[i] < s->free_at[k])
            k = i;
    band_time begin = s->free_at[k] > t ? s->free_at[k] : t;
    struct sim_req r = {0, t, s->seq++, 0};
    if (begin - t > 2 * SIM_S) {
        r.dropped = 1;
        r.end = t + SIM_S / 10;
        s->drops++;
    } else {
        /* +-5 % jitter, deterministic */
        band_time svc = SIM_S - SIM_S / 20 + (band_time)(test_rng_next(&s->rng) % (SIM_S / 10));
        s->free_at[k] = begin + svc;
        r.end = s->free_at[k];
        s->served++;
    }
    heap_push(s, r);
}

/* Use every permit the limit gives. */
static void sim_fill(struct sim *s, band_time t)
{
    while (s->n < SIM_MAX_FLY && band_limit_try_acquire(s->l) == 0)
        sim_issue(s, t);
}

struct phase_result {
    unsigned cap;
    uint64_t lo, hi;      /* limit range after the settle allowance */
    long settled_rtt;     /* round trip from which the limit stayed in the band; -1 never */
    uint64_t out_of_band; /* samples after the allowance with the limit outside the band */
    uint64_t drops;
};

/* Run the phases of @caps with options @o; the band for capacity C is
 * [lo_f * C, hi_f * C + hi_add]. */
static void sim_run(const band_limit_opts *o, uint64_t seed, const unsigned *caps, int nphase,
                    double lo_f, double hi_f, double hi_add, struct phase_result *res)
{
    struct sim *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    assert_int_equal(band_limit_create(&s->l, o), 0);
    s->rng = seed;
    band_time t = 0;
    for (int p = 0; p < nphase; p++) {
        unsigned cap = caps[p];
        /* Capacity changes: a slot that disappears keeps its work; new slots are free. */
        if (cap > s->cap)
            for (unsigned i = s->cap; i < cap; i++)
                s->free_at[i] = t;
        s->cap = cap;
        struct phase_result *r = &res[p];
        memset(r, 0, sizeof(*r));
        r->cap = cap;
        r->lo = UINT64_MAX;
        r->settled_rtt = 0;
        uint64_t drops0 = s->drops;
        double blo = lo_f * cap, bhi = hi_f * cap + hi_add;
        band_time phase_start = t, phase_end = t + SIM_PHASE_RTT * SIM_S;
        band_time settle = phase_start + SIM_SETTLE * SIM_S;
        band_time last_out = phase_start;
        sim_fill(s, t);
        while (t < phase_end) {
            assert_true(s->n > 0);
            struct sim_req q = heap_pop(s);
            t = q.end;
            assert_int_equal(band_limit_on_done(s->l, q.start, t,
                                                q.dropped ? BAND_LIMIT_DROPPED : BAND_LIMIT_OK),
                             0);
            uint64_t lim = band_limit_current(s->l);
            int in = (double)lim >= blo && (double)lim <= bhi;
            if (!in)
                last_out = t;
            if (t >= settle) {
                if (lim < r->lo)
                    r->lo = lim;
                if (lim > r->hi)
                    r->hi = lim;
                if (!in)
                    r->out_of_band++;
            }
            sim_fill(s, t);
        }
        r->settled_rtt = (long)((last_out - phase_start) / SIM_S);
        r->drops = s->drops - drops0;
        if (g_trace)
            (void)fprintf(stderr, "  phase C=%u: limit %llu..%llu, band %.1f..%.1f\n", cap,
                          (unsigned long long)r->lo, (unsigned long long)r->hi, blo, bhi);
    }
    /* Drain what is in flight and check the semaphore's balance equals the limit. */
    while (s->n > 0) {
        struct sim_req q = heap_pop(s);
        assert_int_equal(band_limit_on_done(s->l, q.start, q.end, BAND_LIMIT_IGNORE), 0);
    }
    band_sem_stats ss;
    assert_int_equal(band_sem_get_stats(band_limit_sem(s->l), &ss), 0);
    assert_u64_equal(ss.available, band_limit_current(s->l));
    assert_u64_equal(ss.debt, 0);
    assert_int_equal(band_limit_destroy(s->l), 0);
    free(s);
}

static const unsigned k_caps[] = {50, 20, 80, 10};

static void check_tracking(const char *name, uint64_t seed, const struct phase_result *res, int n,
                           double lo_f, double hi_f, double hi_add)
{
    for (int p = 0; p < n && (seed == 1 || g_trace); p++) {
        printf("[ SIM      ] %s C=%-3u limit after settling %llu..%llu (band %.0f..%.0f), in band "
               "from round trip %ld of %d, %llu drops\n",
               name, res[p].cap, (unsigned long long)res[p].lo, (unsigned long long)res[p].hi,
               lo_f * res[p].cap, hi_f * res[p].cap + hi_add, res[p].settled_rtt, SIM_PHASE_RTT,
               (unsigned long long)res[p].drops);
    }
    for (int p = 0; p < n; p++) {
        assert_u64_equal(res[p].out_of_band, 0);
        assert_true(res[p].settled_rtt <= SIM_SETTLE);
    }
}

/* The bands (also in docs/limit.md and the header comment): [LO * C, HI * C + ADD]. */
#define AIMD_LO  0.85
#define AIMD_HI  1.10
#define AIMD_ADD 2.0
#define GRAD_LO  0.90
#define GRAD_HI  1.20
#define GRAD_ADD 4.0

static void test_sim_aimd(void **state)
{
    (void)state;
    band_limit_opts o;
    memset(&o, 0, sizeof(o));
    o.algorithm = BAND_LIMIT_AIMD;
    o.initial = 10;
    o.min = 1;
    o.max = 1000;
    o.rtt_limit = SIM_S * 11 / 10;
    for (uint64_t seed = 1; seed <= SIM_SEEDS; seed++) {
        struct phase_result res[4];
        sim_run(&o, seed, k_caps, 4, AIMD_LO, AIMD_HI, AIMD_ADD, res);
        check_tracking("AIMD    ", seed, res, 4, AIMD_LO, AIMD_HI, AIMD_ADD);
    }
}

static void test_sim_gradient(void **state)
{
    (void)state;
    band_limit_opts o;
    memset(&o, 0, sizeof(o));
    o.algorithm = BAND_LIMIT_GRADIENT;
    o.initial = 10;
    o.min = 1;
    o.max = 1000;
    for (uint64_t seed = 1; seed <= SIM_SEEDS; seed++) {
        struct phase_result res[4];
        sim_run(&o, seed, k_caps, 4, GRAD_LO, GRAD_HI, GRAD_ADD, res);
        check_tracking("GRADIENT", seed, res, 4, GRAD_LO, GRAD_HI, GRAD_ADD);
    }
}

int main(void)
{
    g_trace = getenv("BAND_LIMIT_TRACE") != NULL; /* NOLINT(concurrency-mt-unsafe): one thread */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_opts_invalid),    cmocka_unit_test(test_acquire_release_inflight),
        cmocka_unit_test(test_set_name),        cmocka_unit_test(test_aimd_steps),
        cmocka_unit_test(test_shrink_is_debt),  cmocka_unit_test(test_aimd_rtt_limit),
        cmocka_unit_test(test_app_limited),     cmocka_unit_test(test_gradient_steps),
        cmocka_unit_test(test_min_rtt_reset),   cmocka_unit_test(test_on_done_needs_inflight),
        cmocka_unit_test(test_extreme_times),   cmocka_unit_test(test_min_rtt_reset_extreme),
        cmocka_unit_test(test_opts_not_finite), cmocka_unit_test(test_sim_aimd),
        cmocka_unit_test(test_sim_gradient),
    };
    return cmocka_run_group_tests_name("limit", tests, NULL, NULL);
}
