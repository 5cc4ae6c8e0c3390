/* SPDX-License-Identifier: MIT */
/*
 * test_histo.c - the log-bucketed histogram (histo.h): bucket boundaries over the whole
 * uint64_t range, recording, snapshots, percentiles within 12.5 %, merge, reset, and
 * concurrent recording from several threads (counts never lost).
 */
#include "test.h"

#include <string.h>

static void test_buckets(void **state)
{
    (void)state;
    /* Small values have exact buckets. */
    for (unsigned v = 0; v < 8; v++) {
        assert_int_equal(band_histo_bucket_of(v), v);
        assert_u64_equal(band_histo_bucket_low(v), v);
        assert_u64_equal(band_histo_bucket_high(v), v);
    }
    assert_int_equal(band_histo_bucket_of(8), 8);
    assert_int_equal(band_histo_bucket_of(15), 15);
    assert_int_equal(band_histo_bucket_of(16), 16);
    assert_int_equal(band_histo_bucket_of(17), 16);
    assert_int_equal(band_histo_bucket_of(UINT64_MAX), BAND_HISTO_BUCKETS - 1);
    assert_u64_equal(band_histo_bucket_high(BAND_HISTO_BUCKETS - 1), UINT64_MAX);
    /* Buckets tile the range: each starts right after the previous one ends, each holds
     * its own bounds, and each is at most 1/8 of its lower bound wide. */
    for (unsigned i = 0; i < BAND_HISTO_BUCKETS; i++) {
        uint64_t lo = band_histo_bucket_low(i), hi = band_histo_bucket_high(i);
        assert_true(lo <= hi);
        assert_int_equal(band_histo_bucket_of(lo), i);
        assert_int_equal(band_histo_bucket_of(hi), i);
        if (i > 0)
            assert_u64_equal(band_histo_bucket_high(i - 1) + 1, lo);
        if (i >= 8)
            assert_true(hi - lo + 1 <= lo / 8);
    }
    /* Random values land in a bucket that holds them. */
    uint64_t rng = 7;
    for (int k = 0; k < 10000; k++) {
        uint64_t v = test_rng_next(&rng) >> (test_rng_next(&rng) % 64);
        unsigned i = band_histo_bucket_of(v);
        assert_true(band_histo_bucket_low(i) <= v && v <= band_histo_bucket_high(i));
    }
}

static void test_record_and_percentiles(void **state)
{
    (void)state;
    band_histo *h = malloc(sizeof(*h));
    band_histo_snapshot *s = malloc(sizeof(*s));
    assert_non_null(h);
    assert_non_null(s);
    band_histo_init(h);
    assert_int_equal(band_histo_read(h, s), 0);
    assert_u64_equal(s->count, 0);
    assert_u64_equal(s->min, 0);
    assert_u64_equal(s->max, 0);
    assert_u64_equal(band_histo_percentile(s, 0.5), 0);
    assert_true(band_histo_mean(s) == 0.0);

    /* 1..10000: the true p-th percentile is p * 10000. */
    for (uint64_t v = 1; v <= 10000; v++)
        band_histo_record(h, v);
    assert_int_equal(band_histo_read(h, s), 0);
    assert_u64_equal(s->count, 10000);
    assert_u64_equal(s->sum, 10000ull * 10001ull / 2);
    assert_u64_equal(s->min, 1);
    assert_u64_equal(s->max, 10000);
    assert_true(band_histo_mean(s) == 5000.5);
    const double ps[] = {0.01, 0.1, 0.5, 0.9, 0.99, 0.999};
    for (unsigned i = 0; i < TEST_COUNTOF(ps); i++) {
        double truth = ps[i] * 10000;
        uint64_t got = band_histo_percentile(s, ps[i]);
        assert_true((double)got >= truth);
        assert_true((double)got <= truth * 1.125 + 1);
    }
    assert_u64_equal(band_histo_percentile(s, 0), 1);
    assert_u64_equal(band_histo_percentile(s, 1), 10000);
    assert_u64_equal(band_histo_percentile(s, -3), 1);
    assert_u64_equal(band_histo_percentile(s, 7), 10000);

    /* A single value: every percentile is that value (clamped to min and max). */
    band_histo_reset(h);
    band_histo_record(h, 123456789);
    assert_int_equal(band_histo_read(h, s), 0);
    assert_u64_equal(s->count, 1);
    assert_u64_equal(band_histo_percentile(s, 0.5), 123456789);
    assert_u64_equal(band_histo_percentile(s, 0.99), 123456789);

    /* The sum saturates instead of wrapping. */
    band_histo_record(h, UINT64_MAX);
    band_histo_record(h, UINT64_MAX);
    assert_int_equal(band_histo_read(h, s), 0);
    assert_u64_equal(s->sum, UINT64_MAX);
    assert_u64_equal(s->max, UINT64_MAX);

    /* NULLs. */
    band_histo_record(NULL, 1);
    band_histo_init(NULL);
    band_histo_reset(NULL);
    assert_int_equal(band_histo_read(NULL, s), BAND_EINVAL);
    assert_int_equal(band_histo_read(h, NULL), BAND_EINVAL);
    assert_u64_equal(band_histo_percentile(NULL, 0.5), 0);
    assert_true(band_histo_mean(NULL) == 0.0);
    free(h);
    free(s);
}

static void test_merge(void **state)
{
    (void)state;
    band_histo *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
    band_histo_snapshot *sa = malloc(sizeof(*sa)), *sb = malloc(sizeof(*sb));
    band_histo_snapshot *sz = calloc(1, sizeof(*sz));
    assert_true(a && b && sa && sb && sz);
    band_histo_init(a);
    band_histo_init(b);
    for (uint64_t v = 100; v < 200; v++)
        band_histo_record(a, v);
    for (uint64_t v = 1000; v < 1100; v++)
        band_histo_record(b, v);
    assert_int_equal(band_histo_read(a, sa), 0);
    assert_int_equal(band_histo_read(b, sb), 0);
    /* Into an empty snapshot: takes min and max from the source. */
    assert_int_equal(band_histo_merge(sz, sa), 0);
    assert_u64_equal(sz->count, 100);
    assert_u64_equal(sz->min, 100);
    assert_int_equal(band_histo_merge(sa, sb), 0);
    assert_u64_equal(sa->count, 200);
    assert_u64_equal(sa->min, 100);
    assert_u64_equal(sa->max, 1099);
    assert_u64_equal(sa->sum, 14950 + 104950);
    uint64_t med = band_histo_percentile(sa, 0.5);
    assert_true(med >= 199 && med <= 224);
    assert_int_equal(band_histo_merge(NULL, sa), BAND_EINVAL);
    assert_int_equal(band_histo_merge(sa, NULL), BAND_EINVAL);
    free(a);
    free(b);
    free(sa);
    free(sb);
    free(sz);
}

#define CONC_THREADS 4
#define CONC_EACH    20000

struct conc {
    band_histo *h;
    int id;
};

static int conc_fn(void *arg)
{
    struct conc *c = arg;
    for (uint64_t i = 0; i < CONC_EACH; i++)
        band_histo_record(c->h, (uint64_t)c->id * 1000 + (i % 1000));
    return 0;
}

/* Concurrent recorders lose nothing; a reader snapshots while they run. */
static void test_concurrent(void **state)
{
    (void)state;
    band_histo *h = malloc(sizeof(*h));
    band_histo_snapshot *s = malloc(sizeof(*s));
    assert_true(h && s);
    band_histo_init(h);
    struct test_thread th[CONC_THREADS];
    struct conc c[CONC_THREADS];
    for (int i = 0; i < CONC_THREADS; i++) {
        c[i].h = h;
        c[i].id = i;
        assert_int_equal(test_thread_start(&th[i], conc_fn, &c[i]), 0);
    }
    for (int k = 0; k < 20; k++) {
        assert_int_equal(band_histo_read(h, s), 0);
        assert_true(s->count <= (uint64_t)CONC_THREADS * CONC_EACH);
        if (s->count > 0)
            assert_true(s->min <= s->max);
    }
    for (int i = 0; i < CONC_THREADS; i++)
        assert_int_equal(test_thread_join(&th[i]), 0);
    assert_int_equal(band_histo_read(h, s), 0);
    assert_u64_equal(s->count, (uint64_t)CONC_THREADS * CONC_EACH);
    assert_u64_equal(s->min, 0);
    assert_u64_equal(s->max, (CONC_THREADS - 1) * 1000 + 999);
    uint64_t want = 0;
    for (int i = 0; i < CONC_THREADS; i++)
        want += (uint64_t)(CONC_EACH / 1000) * ((uint64_t)i * 1000 * 1000 + 999 * 1000 / 2);
    assert_u64_equal(s->sum, want);
    free(h);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buckets),
        cmocka_unit_test(test_record_and_percentiles),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_concurrent),
    };
    return cmocka_run_group_tests_name("histo", tests, NULL, NULL);
}
