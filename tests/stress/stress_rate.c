/* SPDX-License-Identifier: MIT */
/*
 * stress_rate.c - threads taking tokens from one rate budget on the real clock.
 *
 * Four threads try, reserve (with short deadlines), cancel some of their bookings and
 * wait, for about half a second. Each records when every grant may start: a try's return
 * time (an upper bound of when it was granted) or a booking's slot. Afterwards:
 *   - the rate is never exceeded: for every time t, the tokens whose start is at or before
 *     t are at most burst + rate × (t - creation), rounded up;
 *   - the counters agree with what the threads saw (granted, tokens, cancels, refusals).
 * The second scenario runs the same workers while a fifth thread keeps changing the burst
 * between BURST / 5 and BURST (band_rate_set(), the rate kept, in two units): a change
 * keeps only what has accrued and mints nothing, so the bound of (RATE, BURST) still holds.
 * Bounded by iterations and wall time; under TSan it also checks the locking.
 */
#include "test.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "band/rate.h"

#define THREADS   4
#define MAX_EVENT 20000
#define RATE      200000 /* tokens per second */
#define BURST     50

struct event {
    band_time at;
    uint64_t n;
};

struct worker {
    band_rate *r;
    band_time stop_at;
    uint64_t rng;
    struct event ev[MAX_EVENT];
    size_t nev;
    uint64_t granted, tokens, cancelled, refused_rate, refused_deadline;
};

static int worker_main(void *arg)
{
    struct worker *w = arg;
    band_rate_ticket held = BAND_RATE_TICKET_INIT;
    uint64_t held_n = 0;
    for (int i = 0; w->nev < MAX_EVENT - 1 && (i & 63 || band_now() < w->stop_at); i++) {
        uint64_t n = test_rng_range(&w->rng, 1, 4);
        uint64_t kind = test_rng_range(&w->rng, 0, 9);
        if (kind < 5) {
            int rc = band_rate_try_acquire(w->r, n, NULL);
            if (rc == 0) {
                w->ev[w->nev++] = (struct event){band_now(), n};
                w->granted++;
                w->tokens += n;
            } else if (rc == BAND_EAGAIN) {
                w->refused_rate++;
            } else {
                fail_msg("try returned %d", rc);
            }
        } else if (kind < 8 && held.rate == NULL) {
            band_time d = 0;
            int rc = band_rate_reserve(w->r, n, &held, &d, band_now() + 100 * BAND_USEC);
            if (rc == 0) {
                held_n = n;
                w->granted++;
                w->tokens += n;
            } else if (rc == BAND_ETIMEDOUT) {
                w->refused_deadline++;
            } else {
                fail_msg("reserve returned %d", rc);
            }
        } else if (held.rate != NULL) {
            band_time at = held.at;
            int rc = band_rate_ticket_cancel(&held);
            if (rc == 0) {
                w->cancelled++;
                w->granted--;
                w->tokens -= held_n;
            } else if (rc == BAND_EALREADY) {
                w->ev[w->nev++] = (struct event){at, held_n};
            } else {
                fail_msg("cancel returned %d", rc);
            }
        }
    }
    if (held.rate != NULL) /* keep it: it counts at its slot */
        w->ev[w->nev++] = (struct event){held.at, held_n};
    return 0;
}

static int by_time(const void *a, const void *b)
{
    const struct event *x = a, *y = b;
    return (x->at > y->at) - (x->at < y->at);
}

struct setter {
    band_rate *r;
    band_time stop_at;
    uint64_t sets;
};

/* Cycles through bursts of BURST / 5 up to BURST at the same rate, in two units: a raise of
 * the burst mints nothing, so the bound stays that of (RATE, BURST). */
static int setter_main(void *arg)
{
    struct setter *s = arg;
    static const struct {
        uint64_t tokens;
        band_time period;
        uint64_t burst;
    } settings[] = {{RATE, BAND_SEC, BURST / 5},
                    {2 * RATE, 2 * BAND_SEC, BURST},
                    {RATE, BAND_SEC, BURST / 2},
                    {RATE, BAND_SEC, BURST}};
    for (size_t i = 0; band_now() < s->stop_at; i++) {
        size_t k = i % (sizeof(settings) / sizeof(settings[0]));
        int rc = band_rate_set(s->r, settings[k].tokens, settings[k].period, settings[k].burst);
        if (rc != 0)
            fail_msg("set returned %d", rc);
        s->sets++;
        struct timespec ts = {0, 200000}; /* 200 us */
        nanosleep(&ts, NULL);
    }
    return 0;
}

static void run_scenario(int with_setter)
{
    band_rate *r = NULL;
    band_time t0 = band_now();
    assert_int_equal(band_rate_create(&r, RATE, BAND_SEC, BURST, NULL), 0);
    struct worker *w = calloc(THREADS, sizeof(*w));
    assert_non_null(w);
    struct test_thread th[THREADS + 1];
    struct setter setter = {r, band_now() + 500 * BAND_MSEC, 0};
    for (int i = 0; i < THREADS; i++) {
        w[i].r = r;
        w[i].stop_at = band_now() + 500 * BAND_MSEC;
        w[i].rng = (uint64_t)i * 7919 + 1 + (uint64_t)with_setter * 104729;
        assert_int_equal(test_thread_start(&th[i], worker_main, &w[i]), 0);
    }
    if (with_setter)
        assert_int_equal(test_thread_start(&th[THREADS], setter_main, &setter), 0);
    size_t total = 0;
    uint64_t granted = 0, tokens = 0, cancelled = 0, refused_rate = 0, refused_deadline = 0;
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(test_thread_join(&th[i]), 0);
        total += w[i].nev;
        granted += w[i].granted;
        tokens += w[i].tokens;
        cancelled += w[i].cancelled;
        refused_rate += w[i].refused_rate;
        refused_deadline += w[i].refused_deadline;
    }
    if (with_setter) {
        assert_int_equal(test_thread_join(&th[THREADS]), 0);
        assert_true(setter.sets > 10);
    }
    struct event *all = calloc(total + 1, sizeof(*all));
    assert_non_null(all);
    size_t k = 0;
    uint64_t event_tokens = 0;
    for (int i = 0; i < THREADS; i++)
        for (size_t j = 0; j < w[i].nev; j++) {
            all[k++] = w[i].ev[j];
            event_tokens += w[i].ev[j].n;
        }
    qsort(all, total, sizeof(*all), by_time);
    uint64_t sum = 0;
    for (size_t i = 0; i < total; i++) {
        sum += all[i].n;
        uint64_t allowed =
            BURST + (uint64_t)(((all[i].at - t0) * (int64_t)RATE + BAND_SEC - 1) / BAND_SEC);
        if (sum > allowed)
            fail_msg("%llu tokens by t0 + %lld ns; the rate allows %llu", (unsigned long long)sum,
                     (long long)(all[i].at - t0), (unsigned long long)allowed);
    }
    band_rate_stats st;
    assert_int_equal(band_rate_get_stats(r, &st), 0);
    assert_u64_equal(st.granted, granted);
    assert_u64_equal(st.granted_tokens, tokens);
    assert_u64_equal(st.granted_tokens, event_tokens);
    assert_u64_equal(st.cancelled, cancelled);
    assert_u64_equal(st.refused_rate, refused_rate);
    assert_u64_equal(st.refused_deadline, refused_deadline);
    assert_u64_equal(st.refused_too_big, 0);
    assert_true(granted > 100 && refused_rate > 0);
    free(all);
    free(w);
    assert_int_equal(band_rate_destroy(r), 0);
}

static void test_rate_is_never_exceeded(void **state)
{
    (void)state;
    run_scenario(0);
}

static void test_burst_changes_mint_nothing(void **state)
{
    (void)state;
    run_scenario(1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rate_is_never_exceeded),
        cmocka_unit_test(test_burst_changes_mint_nothing),
    };
    return cmocka_run_group_tests_name("stress_rate", tests, NULL, NULL);
}
