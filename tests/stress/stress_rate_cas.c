/* SPDX-License-Identifier: MIT */
/*
 * stress_rate_cas.c - the lock-free try_acquire under compare-and-swap races: more threads
 * than cores take tokens from one bucket, and the accounting must stay exact.
 *
 * Fake clock, in phases. The main thread sets the clock (forward by what refills a few
 * tokens, sometimes up to twice the burst, sometimes by 2^46 ns, past the window of the
 * base the bucket's lock-free word counts from, so the locked path moves the base while
 * the threads race, and sometimes back, which the bucket reads as no time elapsed), then
 * THREADS workers race try_acquire at that frozen time, with retry-afters. Most phases
 * refill a few tokens, so the threads that run first race for them. With time frozen the
 * bucket is a plain counter, so once a phase is over, against an integer reference of the
 * level (tokens x period units, refilled by dt x tokens, capped at the burst):
 *   - the tokens granted in the phase are at most the level (never beyond
 *     burst + elapsed x rate, fractions included) and what is left is less than every
 *     refused request (a refusal was honest: the tokens were not there);
 *   - every retry-after is what the refused request needed from some level between what is
 *     left and what the phase started with: never shorter than the level at the start
 *     allows (waiting it out would succeed if nobody else took tokens), never longer than
 *     the level left at the end needs;
 *   - band_rate_available() is the reference's whole tokens and the stats count every grant,
 *     token and refusal the workers saw.
 * Two settings: 3 tokens per us (a unit of 1/3 ns, 1000 units a token) and 1 per ns.
 *
 * Real clock: THREADS threads take tokens with try_acquire only (the fast path) and stamp
 * each grant with the time it returned; for every time t the tokens stamped at or before t
 * are at most burst + rate x (t - creation), rounded up, and the counters agree.
 *
 * Bounded by phases, attempts and wall time; meant for TSan and ASan too.
 */
#include "test.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "band/rate.h"

#define THREADS  8 /* more than the cores CI has */
#define PHASES   800
#define ATTEMPTS 24 /* per worker and phase */

static _Atomic band_time fake_now;
static _Atomic int phase_go, phase_done;

static band_time fake_clock(void *ctx)
{
    (void)ctx;
    return atomic_load(&fake_now);
}

static void fake_sleep(void *ctx, band_time until)
{
    (void)ctx;
    (void)until;
}

struct fake_worker {
    band_rate *r;
    uint64_t rng;
    int phases;
    /* per phase, read by the main thread between the barriers */
    uint64_t granted_tokens, grants, refusals;
    uint64_t min_refused_n;            /* smallest n refused (UINT64_MAX: none) */
    uint64_t refused_n[ATTEMPTS];      /* each refusal's n ... */
    band_time refused_after[ATTEMPTS]; /* ... and its retry-after */
    uint64_t total_grants, total_tokens, total_refusals;
    int bad; /* an answer outside the contract */
};

static int fake_worker_main(void *arg)
{
    struct fake_worker *w = arg;
    for (int p = 0; p < w->phases; p++) {
        while (atomic_load(&phase_go) <= p)
            sched_yield(); /* spin, so the threads that run start together */
        w->granted_tokens = w->grants = w->refusals = 0;
        w->min_refused_n = UINT64_MAX;
        for (int i = 0; i < ATTEMPTS; i++) {
            uint64_t n = test_rng_range(&w->rng, 1, 4);
            band_time ra = -1;
            int rc = band_rate_try_acquire(w->r, n, &ra);
            if (rc == 0 && ra == 0) {
                w->granted_tokens += n;
                w->grants++;
            } else if (rc == BAND_EAGAIN && ra > 0) {
                w->refused_n[w->refusals] = n;
                w->refused_after[w->refusals] = ra;
                w->refusals++;
                if (n < w->min_refused_n)
                    w->min_refused_n = n;
            } else {
                w->bad = 1;
            }
        }
        w->total_grants += w->grants;
        w->total_tokens += w->granted_tokens;
        w->total_refusals += w->refusals;
        atomic_fetch_add(&phase_done, 1);
    }
    return 0;
}

static uint64_t ceil_div_u(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

static void run_fake(uint64_t tokens, band_time period, uint64_t burst, uint64_t seed)
{
    int phases = test_under_sanitizer() ? PHASES / 2 : PHASES;
    band_time t = INT64_C(1) << 40;
    atomic_store(&fake_now, t);
    band_rate_opts o = {fake_clock, NULL, fake_sleep, NULL};
    band_rate *r = NULL;
    assert_int_equal(band_rate_create(&r, tokens, period, burst, &o), 0);
    atomic_store(&phase_go, 0);
    atomic_store(&phase_done, 0);
    struct fake_worker *w = calloc(THREADS, sizeof(*w));
    assert_non_null(w);
    struct test_thread th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i].r = r;
        w[i].rng = seed * 1000003 + (uint64_t)i * 7919 + 1;
        w[i].phases = phases;
        assert_int_equal(test_thread_start(&th[i], fake_worker_main, &w[i]), 0);
    }
    /* The reference: the level in tokens x period units (one ns refills @tokens units, a
     * token is @period units), at the bucket's time @bt (the latest clock reading). */
    const uint64_t cap = burst * (uint64_t)period;
    const uint64_t refill_max = 2 * cap / tokens; /* up to twice the time to fill up */
    uint64_t level = cap;
    band_time bt = t;
    uint64_t rng = seed;
    uint64_t grants = 0, granted = 0, refusals = 0;
    for (int p = 0; p < phases; p++) {
        uint64_t k = test_rng_range(&rng, 0, 15);
        if (p > 0) {
            band_time dt;
            if (k == 0)
                dt = -(band_time)test_rng_range(&rng, 1, 5000); /* a step back */
            else if (k == 1)
                dt = (INT64_C(1) << 46) + (band_time)test_rng_range(&rng, 0, 1 << 20);
            else if (k == 2)
                dt = (band_time)test_rng_range(&rng, 1, refill_max); /* up to full */
            else
                dt = (band_time)test_rng_range(&rng, 1, 3 * (uint64_t)period / tokens + 1);
            t += dt;
            atomic_store(&fake_now, t);
            if (t > bt) {
                uint64_t refill = (uint64_t)(t - bt) * tokens;
                level = refill >= cap - level ? cap : level + refill;
                bt = t;
            }
        }
        const uint64_t start_level = level;
        atomic_store(&phase_go, p + 1);
        while (atomic_load(&phase_done) < THREADS * (p + 1))
            sched_yield();
        uint64_t phase_tokens = 0, min_refused = UINT64_MAX;
        for (int i = 0; i < THREADS; i++) {
            assert_false(w[i].bad);
            phase_tokens += w[i].granted_tokens;
            grants += w[i].grants;
            refusals += w[i].refusals;
            if (w[i].min_refused_n < min_refused)
                min_refused = w[i].min_refused_n;
        }
        granted += phase_tokens;
        if (phase_tokens * (uint64_t)period > start_level)
            fail_msg("phase %d: %llu tokens granted from a level of %llu units (period %lld)", p,
                     (unsigned long long)phase_tokens, (unsigned long long)start_level,
                     (long long)period);
        level -= phase_tokens * (uint64_t)period;
        if (min_refused != UINT64_MAX && level >= min_refused * (uint64_t)period)
            fail_msg("phase %d: %llu tokens refused with %llu units left", p,
                     (unsigned long long)min_refused, (unsigned long long)level);
        for (int i = 0; i < THREADS; i++)
            for (uint64_t j = 0; j < w[i].refusals; j++) {
                uint64_t need = w[i].refused_n[j] * (uint64_t)period;
                uint64_t ra = (uint64_t)w[i].refused_after[j];
                uint64_t lo = need > start_level ? ceil_div_u(need - start_level, tokens) : 0;
                uint64_t hi = ceil_div_u(need - level, tokens);
                if (ra < lo || ra > hi)
                    fail_msg("phase %d: retry-after %llu for %llu tokens, not in [%llu, %llu]", p,
                             (unsigned long long)ra, (unsigned long long)w[i].refused_n[j],
                             (unsigned long long)lo, (unsigned long long)hi);
            }
        assert_u64_equal(band_rate_available(r), level / (uint64_t)period);
    }
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(test_thread_join(&th[i]), 0);
    band_rate_stats st;
    assert_int_equal(band_rate_get_stats(r, &st), 0);
    assert_u64_equal(st.granted, grants);
    assert_u64_equal(st.granted_tokens, granted);
    assert_u64_equal(st.refused_rate, refusals);
    assert_true(grants > 100 && refusals > 100);
    free(w);
    assert_int_equal(band_rate_destroy(r), 0);
}

static void test_fake_clock_third_ns(void **state)
{
    (void)state;
    run_fake(3, 1000, 256, 11); /* 3 tokens per us: 1000 units a token, 3 a ns */
}

static void test_fake_clock_one_per_ns(void **state)
{
    (void)state;
    run_fake(1, 1, 200, 29);
}

#define REAL_RATE  400000 /* tokens per second */
#define REAL_BURST 40
#define REAL_MAX   40000

struct real_worker {
    band_rate *r;
    band_time stop_at;
    uint64_t rng;
    band_time *at;
    uint64_t *n;
    size_t nev;
    uint64_t tokens, refusals;
};

static int real_worker_main(void *arg)
{
    struct real_worker *w = arg;
    for (int i = 0; w->nev < REAL_MAX && (i & 63 || band_now() < w->stop_at); i++) {
        uint64_t n = test_rng_range(&w->rng, 1, 3);
        band_time ra = 0;
        band_time called = band_now();
        int rc = band_rate_try_acquire(w->r, n, &ra);
        band_time back = band_now();
        if (rc == 0) {
            w->at[w->nev] = back;
            w->n[w->nev++] = n;
            w->tokens += n;
        } else if (rc == BAND_EAGAIN && ra > 0 &&
                   ra <= BAND_SEC * (band_time)n / REAL_RATE + 1 + (back - called)) {
            /* Never longer than n tokens take to refill from empty, give or take how long
             * the call took (nobody books ahead here). */
            w->refusals++;
        } else {
            fail_msg("try returned %d, retry-after %lld", rc, (long long)ra);
        }
    }
    return 0;
}

struct stamp {
    band_time at;
    uint64_t n;
};

static int by_time(const void *a, const void *b)
{
    const struct stamp *x = a, *y = b;
    return (x->at > y->at) - (x->at < y->at);
}

static void test_real_clock_never_exceeded(void **state)
{
    (void)state;
    band_time t0 = band_now();
    band_rate *r = NULL;
    assert_int_equal(band_rate_create(&r, REAL_RATE, BAND_SEC, REAL_BURST, NULL), 0);
    struct real_worker *w = calloc(THREADS, sizeof(*w));
    assert_non_null(w);
    struct test_thread th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i].r = r;
        w[i].stop_at = band_now() + 300 * BAND_MSEC;
        w[i].rng = (uint64_t)i * 104729 + 3;
        w[i].at = calloc(REAL_MAX, sizeof(band_time));
        w[i].n = calloc(REAL_MAX, sizeof(uint64_t));
        assert_true(w[i].at != NULL && w[i].n != NULL);
        assert_int_equal(test_thread_start(&th[i], real_worker_main, &w[i]), 0);
    }
    size_t total = 0;
    uint64_t tokens = 0, refusals = 0;
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(test_thread_join(&th[i]), 0);
        total += w[i].nev;
        tokens += w[i].tokens;
        refusals += w[i].refusals;
    }
    struct stamp *all = calloc(total + 1, sizeof(*all));
    assert_non_null(all);
    size_t k = 0;
    for (int i = 0; i < THREADS; i++)
        for (size_t j = 0; j < w[i].nev; j++)
            all[k++] = (struct stamp){w[i].at[j], w[i].n[j]};
    qsort(all, total, sizeof(*all), by_time);
    uint64_t sum = 0;
    for (size_t i = 0; i < total; i++) {
        sum += all[i].n;
        uint64_t allowed =
            REAL_BURST +
            (uint64_t)(((all[i].at - t0) * (int64_t)REAL_RATE + BAND_SEC - 1) / BAND_SEC);
        if (sum > allowed)
            fail_msg("%llu tokens by t0 + %lld ns; the rate allows %llu", (unsigned long long)sum,
                     (long long)(all[i].at - t0), (unsigned long long)allowed);
    }
    band_rate_stats st;
    assert_int_equal(band_rate_get_stats(r, &st), 0);
    assert_u64_equal(st.granted, total);
    assert_u64_equal(st.granted_tokens, tokens);
    assert_u64_equal(st.refused_rate, refusals);
    assert_true(total > 100 && refusals > 0);
    for (int i = 0; i < THREADS; i++) {
        free(w[i].at);
        free(w[i].n);
    }
    free(all);
    free(w);
    assert_int_equal(band_rate_destroy(r), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fake_clock_third_ns),
        cmocka_unit_test(test_fake_clock_one_per_ns),
        cmocka_unit_test(test_real_clock_never_exceeded),
    };
    return cmocka_run_group_tests_name("stress_rate_cas", tests, NULL, NULL);
}
